// The SIMD GEMM micro-kernel, an xsimd functor templated on the architecture and the register
// tile (MR rows x NV vectors), defined out of class and instantiated by
// matmul/gemm_kernel_<tile>_<isa>.cpp. Contract: GemmUkernel in dispatch/kernels.hpp.
// Per k step: NV vector loads of B, MR broadcasts of A (SSE2: vector loads from panels of copies;
// NEON: FMAs by lane), MR * NV FMAs into MR * NV accumulators that stay in registers (ref: Goto &
// van de Geijn 2008; BLIS's haswell 6x16 kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "matmul/l1_alias.hpp"
#include "matmul/l2_prefetch.hpp"
#include "simd/simd.hpp"

#if defined(__AVX512F__) && defined(__x86_64__)
#include "matmul/gemm_loop_6x64_avx512.hpp"
#define ATTN_GEMM_LOOP_6X64 1
#endif

namespace attn::detail {
namespace ATTN_ISA_NS {

// The register tile: MR x NV vectors of accumulators, set to -0, then rank-1 updates
// acc[i][:] += a(i) * bv[:] per k step. -0 is the additive identity (x + -0 == x for every x,
// +0 included), so a sum whose products all round to -0 stays -0, as in the float64 reference.
template <class A, int MR, int NV>
inline void zero_tile(vfloat<A> (&acc)[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[i][j] = vfloat<A>(-0.0f);
  }
}

template <class A, int MR, int NV, class RowValue>
inline void rank1_update(vfloat<A> (&acc)[MR][NV], const vfloat<A> (&bv)[NV],
                         const RowValue& a_of_row) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const vfloat<A> ai(a_of_row(i));
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[i][j] = fmadd<A>(ai, bv[j], acc[i][j]);
  }
}

// rank1_update for a packed A panel (a[i] for i < MR, contiguous). On AArch64, A's values are
// loaded 4 to a vector and each row takes FMAs by lane (fmla v.4s, v.4s, v.s[l]; the same fused
// operation as fmadd): a broadcast per row holds one register per row of A, and GCC 12 then kept
// 8 scalars beside the 8 x 12 tile's 24 accumulators and 3 B vectors and spilled an accumulator to
// the stack, a load and a store in every k step (seen in the compiled loop; there is no AArch64
// hardware here to time either version).
#if defined(__aarch64__)
inline float32x4_t fma_lane(float32x4_t c, float32x4_t b, float32x4_t a, int lane) {
  switch (lane) {  // lane is a constant once unrolled; the switch also compiles at -O0
    case 0:
      return vfmaq_laneq_f32(c, b, a, 0);
    case 1:
      return vfmaq_laneq_f32(c, b, a, 1);
    case 2:
      return vfmaq_laneq_f32(c, b, a, 2);
    default:
      return vfmaq_laneq_f32(c, b, a, 3);
  }
}
#endif

// With C == lanes<A> copies (Kernels::gemm_a_copies), a[i * C] holds row i's value as a whole
// vector: a load where the other ISAs broadcast. SSE2 broadcasts with a shuffle, which shares the
// floating-point pipes with the multiplies and adds (4 shuffles per 16 of them in the 4 x 8
// tile). Zen 5, 1024^3: 46-47 GFLOP/s with the shuffles; 56 with loads that read 16 floats of
// the plain panel (a wrong result: the bound without shuffles, A all but in L1); 49-51 with the
// panels of copies, 4 times the bytes of A per k (bench/ab, 4 rounds: 0.909x the time).
template <class A, int MR, int NV, int C = 1>
inline void rank1_update_packed(vfloat<A> (&acc)[MR][NV], const vfloat<A> (&bv)[NV],
                                const float* a) {
  if constexpr (C > 1) {
    static_assert(C == static_cast<int>(lanes<A>), "a packed value fills one vector");
    rank1_update<A, MR, NV>(acc, bv, [a](int i) { return vfloat<A>::load_unaligned(a + i * C); });
    return;
  }
#if defined(__aarch64__)
  if constexpr (MR % 4 == 0) {
    float32x4_t av[MR / 4];
#pragma GCC unroll 4
    for (int g = 0; g < MR / 4; ++g)
      av[g] = vld1q_f32(a + 4 * g);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[i][j] = fma_lane(acc[i][j], bv[j], av[i / 4], i % 4);
    }
    return;
  }
#endif
  rank1_update<A, MR, NV>(acc, bv, [a](int i) { return a[i]; });
}

// Starts fetching the first m rows of the tile of C, for writing: a large GEMM finds C in L3 or
// memory at each KC pass, and the k loop then hides the misses (BLIS's kernels do the same).
// Every line a row touches: one per 64 bytes from its start, and the line of its last byte, which
// is one more where the row does not start on a line (a C from malloc starts 16 bytes past one).
// Always inlined, as simd.hpp's prefetch_rows: GCC may delete calls to it otherwise.
template <class A, int MR, int NV>
__attribute__((always_inline)) inline void prefetch_tile(const float* c, std::size_t ldc,
                                                         std::size_t m) {
  constexpr int kRowBytes = NV * static_cast<int>(lanes<A> * sizeof(float));
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (static_cast<std::size_t>(i) >= m) break;
    const char* row = reinterpret_cast<const char*>(c + static_cast<std::size_t>(i) * ldc);
#pragma GCC unroll 4
    for (int b = 0; b < kRowBytes; b += 64)
      __builtin_prefetch(row + b, 1);
    __builtin_prefetch(row + kRowBytes - 1, 1);
  }
}

// C = alpha * acc + beta * C (+ bias[j] when bias != nullptr) for the first m rows and n columns
// of an MR x (NV lanes) tile; beta == 0 never reads C. Edge tiles use masked loads and stores.
template <class A, int MR, int NV>
__attribute__((always_inline)) inline void store_tile(const vfloat<A> (&acc)[MR][NV], float* c,
                                                      std::size_t ldc, float alpha, float beta,
                                                      std::size_t m, std::size_t n,
                                                      const float* bias) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  constexpr std::size_t NR = NV * L;
  const V va(alpha), vb(beta);
  V vbias[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) {
    const std::size_t c0 = static_cast<std::size_t>(j) * L;
    const std::size_t w = c0 < n ? (n - c0 < L ? n - c0 : L) : 0;
    vbias[j] = bias == nullptr || w == 0 ? V(-0.0f)  // alpha * acc + -0 == alpha * acc
               : w == L                  ? V::load_unaligned(bias + c0)
                                         : load_partial<A>(bias + c0, w, 0.0f);
  }
  // alpha = 1 and no bias: the accumulators as they are (the same bits as 1 * acc + -0), without
  // the 1.6% of a k = 64 tile's FMAs that the multiply would add.
  const bool plain = alpha == 1.0f && bias == nullptr;
  const auto scaled = [&](int i, int j) {
    return plain ? acc[i][j] : fmadd<A>(va, acc[i][j], vbias[j]);
  };
  if (m == MR && n == NR) {
    if (plain && beta == 0.0f) {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j)
          acc[i][j].store_unaligned(c + static_cast<std::size_t>(i) * ldc + j * L);
      }
      return;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* row = c + static_cast<std::size_t>(i) * ldc;
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        const V r = beta == 0.0f ? scaled(i, j)
                                 : fmadd<A>(vb, V::load_unaligned(row + j * L), scaled(i, j));
        r.store_unaligned(row + j * L);
      }
    }
    return;
  }
  // Edge tile: m rows, n columns (masked loads and stores where the ISA has them).
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (static_cast<std::size_t>(i) >= m) break;
    float* row = c + static_cast<std::size_t>(i) * ldc;
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const std::size_t c0 = static_cast<std::size_t>(j) * L;
      if (c0 >= n) break;
      const std::size_t w = n - c0 < L ? n - c0 : L;
      const V r = beta == 0.0f ? scaled(i, j)
                               : fmadd<A>(vb, load_partial<A>(row + c0, w, 0.0f), scaled(i, j));
      if (w == L) {
        r.store_unaligned(row + c0);
      } else {
        store_partial<A>(row + c0, w, r);
      }
    }
  }
}

// The KC x NR sliver of B that a packed tile's k loop streams (128 KiB for the AVX-512 6 x 64
// tile) passes through L1 and evicts the tile of C fetched at the start, which then still sits in
// L2: the tile fetches it again kCTailSteps k steps before the end (where the sliver fits L1 this
// is a hit). 2048^3 on Zen 5: 0.986x the time (bench/ab, 8 rounds, range 0.969-0.998); 512^3 and
// 1024^3 unchanged.
constexpr std::size_t kCTailSteps = 32;

#if defined(ATTN_GEMM_LOOP_6X64)
// How a 6 x 64 assembly loop writes its tile: a whole tile with alpha 1 and no bias goes to C
// from the registers (beta 0 or 1: the KC passes of a large GEMM, the wide tile's k chunks); any
// other through its sums and store_loop_sums.
inline std::size_t loop_6x64_mode(float alpha, float beta, const float* bias, bool whole) {
  if (!whole || alpha != 1.0f || bias != nullptr) return kLoopSums;
  return beta == 0.0f ? kLoopSetC : beta == 1.0f ? kLoopAddC : kLoopSums;
}

// C = alpha * sums + beta * C (+ bias) from a 6 x 64 loop's kLoopSums output.
template <class A>
inline void store_loop_sums(const float* sums, float* c, std::size_t ldc, float alpha, float beta,
                            std::size_t m, std::size_t n, const float* bias) {
  constexpr int MR = 6, NV = 4;
  constexpr std::size_t L = lanes<A>;
  static_assert(NV * L == 64, "the 6 x 64 tile");
  vfloat<A> acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[i][j] = vfloat<A>::load_aligned(sums + (i * NV + j) * L);
  }
  store_tile<A, MR, NV>(acc, c, ldc, alpha, beta, m, n, bias);
}
#endif

// MR rows of an A panel packed AS rows wide (AS >= MR), C copies of each value (see
// rank1_update_packed): the full tile (AS == MR) or, for the first m <= MR rows of a wider panel,
// a shorter tile that does only their FMAs. PF: prefetch the tile of C (see the k loop) and
// follow the L2Prefetch hint; a tile whose C is in L1 and that gets no hints (the fused
// attention's score tile) skips both: AVX-512 attention 1x12x512x64 0.988x the time without the
// C prefetch (bench/ab, 5 rounds, 0.976-0.989; 128 to 2048 tokens, bidirectional and causal,
// 0.988-0.998x). BS: B's packed rows are BS >= NV vectors apart (the first NV vectors of wider
// panels: the fused attention's one-vector scores tile).
template <int MR, int NV, int AS = MR, int C = 1, bool PF = true, int BS = NV>
struct gemm_kernel {
  template <class A>
  void operator()(A, std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                  float alpha, float beta, std::size_t m, std::size_t n, const float* bias,
                  const L2Prefetch& next) const;
};

template <int MR, int NV, int AS, int C, bool PF, int BS>
template <class A>
void gemm_kernel<MR, NV, AS, C, PF, BS>::operator()(A, std::size_t k, const float* a,
                                                    const float* b, float* c, std::size_t ldc,
                                                    float alpha, float beta, std::size_t m,
                                                    std::size_t n, const float* bias,
                                                    const L2Prefetch& next) const {
  static_assert(MR <= AS, "a tile cannot have more rows than its packed panel");
  static_assert(NV <= BS, "a tile cannot have more vectors than B's packed rows");
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  [[maybe_unused]] constexpr std::size_t NR = NV * L;
  if constexpr (PF) prefetch_tile<A, MR, NV>(c, ldc, m);
  V acc[MR][NV];
  const auto step = [&]() {
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = V::load_unaligned(b + j * L);
    rank1_update_packed<A, MR, NV, C>(acc, bv, a);
    a += AS * C;
    b += BS * L;
  };
  constexpr std::size_t kTail = kCTailSteps;
  const std::size_t tail = k < kTail ? k : kTail;
  std::size_t done = tail;  // k steps issued, counting the tail's
  const std::size_t groups = (k - tail) / L2Prefetch::kSteps;  // 0 for k < kTail + kSteps
  std::size_t left = PF && groups != 0 ? next.lines : 0;
#if defined(ATTN_GEMM_LOOP_6X64)
  if constexpr (MR == 6 && NV == 4 && AS == 6 && C == 1 && PF && BS == NV) {
    // The same steps in assembly (gemm_loop_6x64_avx512.hpp): lines beyond one per group first,
    // then one per group; with no hint, each group repeats the first line of this sliver.
    const char* line = reinterpret_cast<const char*>(left != 0 ? next.p : b);
    for (; left > groups; --left, line += L2Prefetch::kLineBytes)
      __builtin_prefetch(line, 0, 2);
    const char* last = left != 0 ? line + (left - 1) * L2Prefetch::kLineBytes : line;
    const std::size_t mode = loop_6x64_mode(alpha, beta, bias, m == MR && n == NR);
    alignas(64) float sums[MR * NV * L];
    gemm_loop_6x64(a, b, groups, (k - tail) % L2Prefetch::kSteps, tail, line, last, c,
                   ldc * sizeof(float), k > kTail ? m : 0, mode == kLoopSums ? sums : c, mode);
    if (mode == kLoopSums) store_loop_sums<A>(sums, c, ldc, alpha, beta, m, n, bias);
    return;
  }
#endif
  zero_tile<A, MR, NV>(acc);
  if (left != 0) {  // the hint: `burst` lines per group of kSteps steps, spread over the loop
    // One line per group where the share allows (no division: 59 lines in 60 groups at 2048^3).
    const std::size_t burst = left <= groups ? 1 : (left + groups - 1) / groups;
    const char* line = reinterpret_cast<const char*>(next.p);
    for (std::size_t g = 0; g < groups; ++g) {
      for (std::size_t i = 0; i < burst && left != 0; ++i, --left) {
        __builtin_prefetch(line, 0, 2);  // to L2 (prefetcht1, PRFM PLDL2KEEP)
        line += L2Prefetch::kLineBytes;
      }
#pragma GCC unroll 1  // unrolled, GCC 12 interleaves the steps' loads and spills accumulators
      for (int s = 0; s < L2Prefetch::kSteps; ++s)
        step();
    }
    done += groups * L2Prefetch::kSteps;
  }
  for (; done < k; ++done)
    step();
  if (PF && k > kTail) prefetch_tile<A, MR, NV>(c, ldc, m);
  for (std::size_t p = 0; p < tail; ++p)
    step();
  store_tile<A, MR, NV>(acc, c, ldc, alpha, beta, m, n, bias);
}

// GemmUkernel for an MR-row panel: tiles of SMALL and MID rows (SMALL <= MID <= MR) serve edge
// tiles of at most that many rows, so a tile of 1-4 rows (a decoding step's queries, the last rows
// of a matrix) costs its own FMAs, not MR rows' worth. Each row's result is the same either way.
template <int MR, int NV, int SMALL, int MID, int C = 1, bool PF = true, int BS = NV>
struct gemm_kernel_by_rows {
  template <class A>
  void operator()(A arch, std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                  float alpha, float beta, std::size_t m, std::size_t n, const float* bias,
                  const L2Prefetch& next) const {
    static_assert(SMALL <= MID && MID <= MR, "row tiles must grow");
    if constexpr (SMALL < MR) {
      if (m <= SMALL) {
        gemm_kernel<SMALL, NV, MR, C, PF, BS>{}(arch, k, a, b, c, ldc, alpha, beta, m, n, bias,
                                                next);
        return;
      }
    }
    if constexpr (SMALL < MID && MID < MR) {
      if (m <= MID) {
        gemm_kernel<MID, NV, MR, C, PF, BS>{}(arch, k, a, b, c, ldc, alpha, beta, m, n, bias, next);
        return;
      }
    }
    gemm_kernel<MR, NV, MR, C, PF, BS>{}(arch, k, a, b, c, ldc, alpha, beta, m, n, bias, next);
  }
};

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

namespace attn::detail {
namespace ATTN_ISA_NS {

// The rows of a no-packing tile: rows past m repeat row 0 (valid memory; their results are
// never stored).
template <int MR>
inline void direct_row_ptrs(const float* a, std::size_t lda, std::size_t m,
                            const float* (&rows)[MR]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    rows[i] = a + (static_cast<std::size_t>(i) < m ? static_cast<std::size_t>(i) * lda : 0);
}

// The small-matrix micro-kernel: the same register tile, reading A and B where they are, with
// no packing. A is row-major (row i of the tile at a + i * lda, m <= MR rows), B is row-major
// (row p at b + p * ldb, n <= NR columns, masked loads past n). Contract otherwise as
// GemmUkernel. Worth it when packing would cost more than the reuse it buys (small m, n, k).
// With PF > 0, each k step p also prefetches (into L1) the lines of B's row p + PF that the tile
// will read: B's rows lie a whole row apart, a stride the hardware prefetchers do not follow
// across pages, so a B in L3 or memory would otherwise arrive one miss at a time. Addresses past
// the matrix are computed as integers (a prefetch does not fault). PF_FAR steps instead of PF
// where B's rows do not share L1 sets (matmul/l1_alias.hpp), whose lines a longer distance
// would evict before their step.
template <int MR, int NV, std::size_t PF = 0, std::size_t PF_FAR = PF>
struct gemm_direct_kernel {
  template <class A>
  void operator()(A, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                  std::size_t m, std::size_t n, const float* bias) const {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    constexpr std::size_t NR = NV * L;
    V acc[MR][NV];
    zero_tile<A, MR, NV>(acc);
    const float* rows[MR];
    direct_row_ptrs<MR>(a, lda, m, rows);
    // The width of each vector, fixed for the whole k loop (an edge panel loads masked).
    std::size_t width[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const std::size_t c0 = static_cast<std::size_t>(j) * L;
      width[j] = c0 < n ? (n - c0 < L ? n - c0 : L) : 0;
    }
    [[maybe_unused]] const std::size_t ahead_bytes =
        (PF_FAR != PF && !rows_share_l1_sets(ldb) ? PF_FAR : PF) * ldb * sizeof(float);
    // `full` is a std::bool_constant: whole-vector loads, or masked loads of an edge panel.
    const auto step = [&](std::size_t p, auto full) {
      const float* bp = b + p * ldb;
      if constexpr (PF > 0) {
        constexpr std::size_t kLine = 64, kBytes = NR * sizeof(float);
        const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(bp) + ahead_bytes;
#pragma GCC unroll 8
        for (std::size_t l = 0; l < kBytes; l += kLine)
          __builtin_prefetch(reinterpret_cast<const void*>(ahead + l), 0, 3);
        // The last byte's line: the one past the others when the row is not line-aligned.
        __builtin_prefetch(reinterpret_cast<const void*>(ahead + kBytes - 1), 0, 3);
      }
      V bv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        if constexpr (decltype(full)::value) {
          bv[j] = V::load_unaligned(bp + j * L);
        } else {
          bv[j] = load_partial<A>(bp + static_cast<std::size_t>(j) * L, width[j], 0.0f);
        }
      }
      rank1_update<A, MR, NV>(acc, bv, [&rows, p](int i) { return rows[i][p]; });
    };
    const auto k_loop = [&](auto full) {
      for (std::size_t p = 0; p < k; ++p)
        step(p, full);
    };
    if (n == NR) {
      k_loop(std::true_type{});
    } else {
      k_loop(std::false_type{});
    }
    store_tile<A, MR, NV>(acc, c, ldc, alpha, beta, m, n, bias);
  }
};

// Calls f(std::integral_constant<int, R>) with R = SMALL when m <= SMALL, else R = MR: a no-packing
// kernel of up to MR rows serves small calls with a tile of SMALL rows (as gemm_kernel_by_rows
// does for the packed kernel).
template <int SMALL, int MR, class F>
inline void with_direct_rows(std::size_t m, const F& f) {
  if constexpr (SMALL < MR) {
    if (m <= SMALL) {
      f(std::integral_constant<int, SMALL>{});
      return;
    }
  }
  f(std::integral_constant<int, MR>{});
}

template <int MR, int NV, int SMALL>
struct gemm_direct_by_rows {
  template <class A>
  void operator()(A arch, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                  std::size_t m, std::size_t n, const float* bias) const {
    with_direct_rows<SMALL, MR>(m, [&](auto rows) {
      gemm_direct_kernel<decltype(rows)::value, NV>{}(arch, k, a, lda, b, ldb, c, ldc, alpha, beta,
                                                      m, n, bias);
    });
  }
};

// Whole MR x NR no-packing tiles (gemm_direct_kernel's full tiles, the same sums bit for bit)
// over m rows and n columns, m a multiple of MR and n of NR: row blocks, each against one
// NR-column panel of B after another (panel jp at b + jp * panel_stride, rows ldb apart: a
// row-major B in place, or panels packed by gemm_direct_pack_b_cols), in one call. Per tile it
// keeps only the k loop and the stores: gemm_direct_kernel serves any m <= MR and n <= NR, and its
// compiled code tests the edge cases, alpha, beta and the bias again at every tile (GCC 12 keeps
// them between the k loop and the stores), where here alpha 1, beta 0 and no bias (a plain
// product) choose straight stores once per call. Zen 5, bench/ab-lib against one gemm_direct call
// per tile, 11 pairs, inputs 16 bytes past a line (on lines): AVX-512 64^3 0.991x the time
// (0.998x), 256^3 0.986x (0.984x), 100^3 0.988x (0.989x); AVX2 64^3 0.980x, SSE2 0.992x. While
// the host was loaded (both at about 0.8x their usual rates) 64^3 read 0.937-0.961x. On B^T's
// packed panels (A B^T, 9-11 pairs): 512 x 512 x 64 0.983x, 100^3 0.965x, 128 x 128 x 64
// 0.983-0.987x, 256 x 256 x 64 0.982-0.997x, 64 x 64 x 128 0.985x, 64 x 128 x 64 0.990x; but
// with C 64 columns wide and 16 bytes past a line 1.006-1.018x (64^3 once 1.040x; on lines
// 0.991x). Taking the panels one after another over all row blocks instead (each panel in L1,
// A from L2) took 1.014x the time at 512 x 512 x 64 and 1.027x at 64^3.
template <int MR, int NV, int PANEL_NV = NV>
struct gemm_direct_tiles_kernel {
  template <class A>
  void operator()(A arch, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, std::size_t panel_stride, float* c, std::size_t ldc, float alpha,
                  float beta, std::size_t m, std::size_t n, const float* bias) const {
    if (alpha == 1.0f && beta == 0.0f && bias == nullptr) {
      run<true>(arch, k, a, lda, b, ldb, panel_stride, c, ldc, alpha, beta, m, n, bias);
    } else {
      run<false>(arch, k, a, lda, b, ldb, panel_stride, c, ldc, alpha, beta, m, n, bias);
    }
  }

 private:
  template <bool PLAIN, class A>
  static void run(A, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, std::size_t panel_stride, float* c, std::size_t ldc, float alpha,
                  float beta, std::size_t m, std::size_t n, const float* bias) {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    constexpr std::size_t NR = NV * L;
    for (std::size_t i0 = 0; i0 < m; i0 += MR) {
      const float* rows[MR];
      direct_row_ptrs<MR>(a + i0 * lda, lda, MR, rows);
      static_assert(NV % PANEL_NV == 0, "a tile spans whole panels");
      for (std::size_t j0 = 0, jp = 0; j0 < n; j0 += NR, jp += NV / PANEL_NV) {
        V acc[MR][NV];
        zero_tile<A, MR, NV>(acc);
        const float* bj = b + jp * panel_stride;
        for (std::size_t p = 0; p < k; ++p) {
          V bv[NV];
#pragma GCC unroll 4
          for (int j = 0; j < NV; ++j)
            bv[j] = V::load_unaligned(bj + (j / PANEL_NV) * panel_stride + p * ldb +
                                      (j % PANEL_NV) * L);
          rank1_update<A, MR, NV>(acc, bv, [&rows, p](int i) { return rows[i][p]; });
        }
        // PLAIN: constants, so that store_tile folds to its plain case's straight stores.
        float* cij = c + i0 * ldc + j0;
        if constexpr (PLAIN) {
          store_tile<A, MR, NV>(acc, cij, ldc, 1.0f, 0.0f, MR, NR, nullptr);
        } else {
          store_tile<A, MR, NV>(acc, cij, ldc, alpha, beta, MR, NR, bias ? bias + j0 : nullptr);
        }
      }
    }
  }
};

// The wide tile over m rows, MR at a time: gemm_direct_by_rows, but with LOOP a whole 6 x 64
// AVX-512 tile whose B rows are contiguous (ldb == 64: a packed panel) runs gemm_loop_6x64_rows,
// the packed tile's assembly loop with A's rows read in place (the same sums, bit for bit).
// Intel Xeon of the README, bench/ab-lib (21 pairs), the intrinsics tile against this loop:
// over GemmPath::wide_panels' panels A B^T 512 x 512 x 64 1.028x the time, 256^3 1.038x; but in
// the wide no-packing path (k in chunks of 128, B in place or copied) 128 x 64 x 512 0.948x,
// 512 x 64 x 512 1.004x, 64 x 64 x 256 and 256 x 64 x 256 0.995x, so that path (gemm_direct_wide)
// keeps the intrinsics and only gemm_wide_panel takes the loop. A last block of 1 or 2 rows takes
// a 2-row tile (with NV = 4, 8 accumulators: as many FMA chains as 2 pipes of 4-cycle latency
// keep busy) rather than the SMALL-row one, which spends SMALL rows' FMAs on it: Zen 5,
// bench/ab-lib 15 pairs, 512 x 64 x 512 (its last 2 rows) 0.992x the time with the inputs 16
// bytes past a line (13 of 15 pairs faster), 0.998x on lines; 128 x 64 x 512 0.992x on lines.
// The whole row blocks of the intrinsics path run as gemm_direct_tiles_kernel's tiles (the same
// sums; its tile tests no edge case, alpha, beta or bias per tile): bench/ab-lib, 11 pairs, 16
// bytes past a line (on lines), 512 x 64 x 512 0.994x the time (0.996x; two threads 0.992x),
// 128 x 64 x 512 0.986x, 64 x 64 x 256 1.001x, 256 x 64 x 256 (on lines) 1.003x.
template <int MR, int NV, int SMALL, bool LOOP>
struct gemm_direct_wide_by_rows {
  template <class A>
  void operator()(A arch, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                  std::size_t m, std::size_t n, const float* bias) const {
    std::size_t i0 = 0;
#if defined(ATTN_GEMM_LOOP_6X64)
    if constexpr (LOOP && MR == 6 && NV == 4) {
      constexpr std::size_t NR = NV * lanes<A>;
      if (n == NR && ldb == NR) {
        const std::size_t tail = k < kCTailSteps ? k : kCTailSteps, body = k - tail;
        const std::size_t mode = loop_6x64_mode(alpha, beta, bias, true);
        alignas(64) float sums[MR * NR];
        for (; i0 + MR <= m; i0 += MR) {
          float* ci = c + i0 * ldc;
          gemm_loop_6x64_rows(a + i0 * lda, lda * sizeof(float), b, body / 8, body % 8, tail, ci,
                              ldc * sizeof(float), k > kCTailSteps ? MR : 0,
                              mode == kLoopSums ? sums : ci, mode);
          if (mode == kLoopSums) store_loop_sums<A>(sums, ci, ldc, alpha, beta, MR, n, bias);
        }
      }
    }
#endif
    if (constexpr std::size_t NR = NV * lanes<A>; n == NR && m - i0 >= MR) {
      const std::size_t whole = (m - i0) / MR * MR;
      gemm_direct_tiles_kernel<MR, NV>{}(arch, k, a + i0 * lda, lda, b, ldb, NR, c + i0 * ldc, ldc,
                                         alpha, beta, whole, NR, bias);
      i0 += whole;
    }
    for (; i0 < m; i0 += MR) {
      const std::size_t rows = m - i0 < MR ? m - i0 : MR;
      if constexpr (SMALL > 2) {
        if (rows <= 2) {
          gemm_direct_kernel<2, NV>{}(arch, k, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc, alpha,
                                      beta, rows, n, bias);
          continue;
        }
      }
      gemm_direct_by_rows<MR, NV, SMALL>{}(arch, k, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc,
                                           alpha, beta, rows, n, bias);
    }
  }
};

// Calls f(load_b), where load_b(p) returns row p of a B one vector wide (row stride ldb): whole
// vectors when n >= lanes, else n floats and zeros (an edge panel); f is instantiated for both.
template <class A, class F>
inline void with_narrow_b(const float* b, std::size_t ldb, std::size_t n, const F& f) {
  using V = vfloat<A>;
  if (n >= lanes<A>) {
    f([b, ldb](std::size_t p) { return V::load_unaligned(b + p * ldb); });
  } else {
    f([b, ldb, n](std::size_t p) { return load_partial<A>(b + p * ldb, n, 0.0f); });
  }
}

// The one-vector-wide no-packing kernels, two accumulators per row (two independent chains,
// summed at the end: the seed's 6 x 16 x 64 would otherwise be a chain of 64 dependent FMAs per
// accumulator), in one of two ways that compute the same bits (each column is the sum of its
// even k steps' chain and its odd k steps' chain, added last):
// - PAIRS, two k steps per FMA: each row's A pair (a[p], a[p+1]) is one 8-byte broadcast, B rows
//   p and p+1 are interleaved by zip_lo/zip_hi, and add_pairs sums the two halves at the end.
//   Against one broadcast per k step this halves the loads per FMA (a narrow tile does one load
//   per FMA otherwise; 6 x 16 x 64 ran at 75% of the FMA rate on Zen 5).
// - SPLIT, one broadcast per FMA: even k steps into one accumulator, odd steps into the other
//   (-0 + -0 stays -0). More loads and no shuffles, which on AVX-512 Intel cores share ports 0
//   and 5 with the FMAs: Kernels::gemm_direct_narrow_split, taken where
//   CpuInfo::narrow_tile_split (measurements in dispatch/kernels_avx512.cpp).
template <int MR, bool SPLIT>
struct gemm_direct_narrow_kernel {
  template <class A>
  void operator()(A, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                  std::size_t m, std::size_t n, const float* bias) const {
    using V = vfloat<A>;
    V lo[MR], hi[MR];  // SPLIT: even and odd k steps
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
      lo[i] = hi[i] = V(-0.0f);  // see zero_tile
    const float* rows[MR];
    direct_row_ptrs<MR>(a, lda, m, rows);
    with_narrow_b<A>(b, ldb, n, [&](const auto& load_b) {
      std::size_t p = 0;
      for (; p + 2 <= k; p += 2) {
        const V r0 = load_b(p), r1 = load_b(p + 1);
        if constexpr (SPLIT) {
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) {
            lo[i] = fmadd<A>(V(rows[i][p]), r0, lo[i]);
            hi[i] = fmadd<A>(V(rows[i][p + 1]), r1, hi[i]);
          }
        } else {
          const V zl = zip_lo<A>(r0, r1), zh = zip_hi<A>(r0, r1);
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) {
            const V av = broadcast_pair<A>(rows[i] + p);
            lo[i] = fmadd<A>(av, zl, lo[i]);
            hi[i] = fmadd<A>(av, zh, hi[i]);
          }
        }
      }
      if (p == k) return;
      const V r0 = load_b(p);
      if constexpr (SPLIT) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
          lo[i] = fmadd<A>(V(rows[i][p]), r0, lo[i]);
      } else {  // an odd k: the pair (a[p], -0) against rows p and a zero row (-0 * 0, never
                // a[p] * 0, which is NaN for an infinite a[p]; a[p + 1] is not read)
        const V zero(0.0f);
        const V zl = zip_lo<A>(r0, zero), zh = zip_hi<A>(r0, zero);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const float pair[2] = {rows[i][p], -0.0f};  // -0 keeps a -0 sum -0
          const V av = broadcast_pair<A>(pair);
          lo[i] = fmadd<A>(av, zl, lo[i]);
          hi[i] = fmadd<A>(av, zh, hi[i]);
        }
      }
    });
    V acc[MR][1];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
      acc[i][0] = SPLIT ? lo[i] + hi[i] : add_pairs<A>(lo[i], hi[i]);
    store_tile<A, MR, 1>(acc, c, ldc, alpha, beta, m, n, bias);
  }
};

// The narrow kernel by rows: in pairs of k steps, or split into even and odd steps for at most
// SMALL rows where SPLIT_SMALL is set.
template <int MR, int SMALL, bool SPLIT_SMALL = false>
struct gemm_direct_narrow_by_rows {
  template <class A>
  void operator()(A arch, std::size_t k, const float* a, std::size_t lda, const float* b,
                  std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                  std::size_t m, std::size_t n, const float* bias) const {
    with_direct_rows<SMALL, MR>(m, [&](auto rows) {
      constexpr int R = decltype(rows)::value;
      gemm_direct_narrow_kernel<R, SPLIT_SMALL && R == SMALL>{}(arch, k, a, lda, b, ldb, c, ldc,
                                                                alpha, beta, m, n, bias);
    });
  }
};

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

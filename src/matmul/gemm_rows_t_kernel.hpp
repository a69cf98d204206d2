// The rows kernel against op(B) = B^T (Kernels::gemm_rows_t, GemmPath::rows in
// matmul/gemm_path.cpp): B^T given as n rows of k contiguous floats (row stride ldbt), as a weight
// matrix stored [out, in] (PyTorch's Linear) is. Each C[i][j] is the dot product of A's row i and
// B^T's row j, read in memory order, so B is read once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "matmul/vector_phase.hpp"
#include "simd/simd.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

// With kPrefetch, B^T is prefetched kPrefetchBytes ahead of the loads (addresses past the matrix
// are computed as integers: a prefetch does not fault); the sums are the same either way
// (CpuInfo::rows_t_prefetch_min_rows says where it pays).
constexpr std::uintptr_t kPrefetchBytes = 4096;

// The first t < lanes floats of a row of A (the rest 0) and of a row of B^T (the rest -0): the
// products past t are -0, which leave the sums as they were, so a sum of -0 products stays -0.
template <class A>
inline vfloat<A> a_part(const float* p, std::size_t t) {
  return load_n<A>(p, t, 0.0f);
}
template <class A>
inline vfloat<A> bt_part(const float* p, std::size_t t) {
  return load_n<A>(p, t, -0.0f);
}

// The floats of k that the dot products take first, as one partial vector: those before B^T's
// rows reach a vector boundary (rows_vector_phase), so that every later vector load of B^T lies
// within one vector-aligned block. 0 where the rows start on one or do not share a phase. The
// sums then group k from the boundary on, so the same B^T at another phase gives other last bits
// (within the same bound). A standalone loop of 8 dot products at a time over a 2304 x 768 B^T in
// L3 (Zen 5, AVX-512) read it at 87-91 GB/s on lines and 70-72 GB/s 16 bytes past one. Zen 5,
// A and B^T 16 bytes past a line (AB_LIB_OFFSET=16 bench/ab-lib, 11 pairs, time with the head
// over without): AVX-512 A B^T 1 x 2304 x 768 0.940x, 1 x 768 x 3072 0.914x, 1 x 4096 x 1024
// 0.738x, 8 x 2304 x 768 0.576x, 2 and 4 rows 0.829x and 0.871x (two threads 0.780x), 1 row
// with B^T from memory 0.963x; AVX2 1 x 2304 x 768 0.966x, 8 rows 0.753x, 2 rows 1.028-1.112x,
// 4 rows 1.014-1.021x. The same builds on lines (no head, the same instructions elsewhere in
// the library) read 0.998x at one row but 0.78-1.15x at 2-8 rows (AVX2 2 rows 1.153x): the
// several-row kernel's time moves that much with where its loop lands, so 2-4 rows are within
// that noise, 1 and 8 rows beyond it.
template <class A>
inline std::size_t rows_t_head(const float* bt, std::size_t ldbt, std::size_t k) {
  constexpr std::size_t L = lanes<A>;
  const std::size_t phase = rows_vector_phase(bt, ldbt, L);
  if (phase == 0) return 0;
  return L - phase < k ? L - phase : k;
}

// One row of A against G consecutive rows of B^T: one accumulator per dot product, the first
// `head` floats of k (rows_t_head) as one partial vector (a_part, bt_part), then vector after
// vector, A's vector loaded once for the G rows, then the last partial vector. Each dot product's
// sum does not depend on G.
template <class A, int G, bool kPrefetch>
inline void rows_t_group(std::size_t k, const float* a, const float* bt, std::size_t ldbt,
                         std::size_t head, vfloat<A> (&dots)[G]) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  V acc[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
    acc[g] = V(-0.0f);
  std::size_t p = 0;
  if (head != 0) {
    const V av = a_part<A>(a, head);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const float* bp = bt + static_cast<std::size_t>(g) * ldbt;
      if constexpr (kPrefetch) {  // the head's line, which the steps may not reach
        const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(bp) + kPrefetchBytes;
        __builtin_prefetch(reinterpret_cast<const void*>(ahead), 0, 3);
      }
      acc[g] = fmadd<A>(av, bt_part<A>(bp, head), acc[g]);
    }
    p = head;
  }
  for (; p + L <= k; p += L) {
    const V av = V::load_unaligned(a + p);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const float* bp = bt + static_cast<std::size_t>(g) * ldbt + p;
      // One prefetch per 64 bytes of the row (every step for 16 lanes, every 2nd or 4th for 8
      // or 4): each line gets one of the addresses 64 bytes apart.
      if constexpr (kPrefetch) {
        if (L * sizeof(float) >= 64 || (p - head) % (64 / sizeof(float)) == 0) {
          const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(bp) + kPrefetchBytes;
          __builtin_prefetch(reinterpret_cast<const void*>(ahead), 0, 3);
        }
      }
      acc[g] = fmadd<A>(av, V::load_unaligned(bp), acc[g]);
    }
  }
  if (p < k) {
    const std::size_t t = k - p;
    const V av = a_part<A>(a + p, t);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
      acc[g] = fmadd<A>(av, bt_part<A>(bt + static_cast<std::size_t>(g) * ldbt + p, t), acc[g]);
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
    dots[g] = acc[g];
}

// Rows j0 + jj .. of B^T in one group of G, each dot product written to its sum_each slot.
template <class A, int G, bool kPrefetch>
inline void rows_t_group_to_slots(std::size_t k, const float* a, const float* bt, std::size_t ldbt,
                                  std::size_t head, std::size_t jj, vfloat<A>* dots) {
  vfloat<A> part[G];
  rows_t_group<A, G, kPrefetch>(k, a, bt + jj * ldbt, ldbt, head, part);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
    dots[sum_each_slot<A>(jj + static_cast<std::size_t>(g))] = part[g];
}

// A whole vector of outputs (lanes<A> rows of B^T) in groups of G, the group offsets constants so
// that the dot products can stay in registers until sum_each_slotted.
template <class A, int G, bool kPrefetch, std::size_t... Q>
inline void rows_t_block(std::size_t k, const float* a, const float* bt, std::size_t ldbt,
                         std::size_t head, vfloat<A>* dots, std::index_sequence<Q...>) {
  (rows_t_group_to_slots<A, G, kPrefetch>(k, a, bt, ldbt, head, Q * G, dots), ...);
}

// Rows jj.. of B^T up to nj in groups of G, then of G / 2, ..., 1 for what is left.
template <class A, int G, bool kPrefetch>
inline void rows_t_groups_down(std::size_t k, const float* a, const float* bt, std::size_t ldbt,
                               std::size_t head, std::size_t nj, std::size_t& jj, vfloat<A>* dots) {
  for (; jj + G <= nj; jj += G)
    rows_t_group_to_slots<A, G, kPrefetch>(k, a, bt, ldbt, head, jj, dots);
  if constexpr (G > 1) {
    rows_t_groups_down<A, G / 2, kPrefetch>(k, a, bt, ldbt, head, nj, jj, dots);
  }
}

// C's nj <= lanes<A> outputs from j0 on: alpha * sums + bias (beta * C added where beta != 0).
template <class A>
inline void rows_t_store(vfloat<A> sums, vfloat<A> va, vfloat<A> vb, float beta, const float* bias,
                         float* c, std::size_t j0, std::size_t nj) {
  using V = vfloat<A>;
  const V add = bias == nullptr ? V(-0.0f) : load_n<A>(bias + j0, nj, 0.0f);
  V r = fmadd<A>(va, sums, add);
  if (beta != 0.0f) r = fmadd<A>(vb, load_n<A>(c + j0, nj, 0.0f), r);
  store_n<A>(c + j0, nj, r);
}

// One row of A (GemmPath::rows' decoding step): the dot products in groups of up to 8 rows of
// B^T (kRowsTGroup; fewer where a vector holds fewer lanes, and 4, 2, 1 for the last ones), then
// the lanes of one vector's worth of outputs at once (sum_each), then alpha, bias and beta.
// Until 2026-12-04 each dot product ran alone in 4 accumulators (vector v of k into v % 4): at
// 1 x 2304 x 768 every vector of B^T 16 bytes past a line then cost two loads, and A's vector was
// loaded again for each row of B^T. Zen 4, AVX-512, bench/ab-lib (AB_LIB_OFFSET=16, 11 pairs;
// the sums differ) against that: 1 x 2304 x 768 0.888x the time (two threads 0.887x; B^T on a
// line 0.968x), 1 x 768 x 3072 0.949x, 1 x 3000 x 1000 0.864x, 1 x 2048 x 2048 0.801x, 1 x 4096
// x 1024 0.905x, 1 x 1024 x 1024 0.980x; AVX2 1 x 2304 x 768 0.950x, SSE2 0.984x. Groups of 4
// took 1.033x the time of groups of 8, groups of 16 1.396x (16 streams of B^T). Writing each
// dot product straight to its sum_each slot (no copy of the vector of outputs through memory)
// alone took 0.959x the time. Not measured on Intel (where the prefetch runs) nor NEON.
constexpr int kRowsTGroup = 8;

template <class A, bool kPrefetch>
void gemm_rows_t_one(std::size_t k, const float* a, const float* bt, std::size_t ldbt, float* c,
                     float alpha, float beta, std::size_t n, const float* bias) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  constexpr int G = static_cast<int>(L) < kRowsTGroup ? static_cast<int>(L) : kRowsTGroup;
  static_assert(L % G == 0, "whole groups in a vector of outputs");
  const V va(alpha), vb(beta);
  const std::size_t head = rows_t_head<A>(bt, ldbt, k);
  std::size_t j0 = 0;
  for (; j0 + L <= n; j0 += L) {
    V dots[L];
    rows_t_block<A, G, kPrefetch>(k, a, bt + j0 * ldbt, ldbt, head, dots,
                                  std::make_index_sequence<L / G>{});
    rows_t_store<A>(sum_each_slotted<A>(dots), va, vb, beta, bias, c, j0, L);
  }
  if (j0 == n) return;
  const std::size_t nj = n - j0;
  const float* bt0 = bt + j0 * ldbt;
  V dots[L];
  std::size_t jj = 0;
  rows_t_groups_down<A, G, kPrefetch>(k, a, bt0, ldbt, head, nj, jj, dots);
  for (; jj < L; ++jj)
    dots[sum_each_slot<A>(jj)] = V(-0.0f);
  rows_t_store<A>(sum_each_slotted<A>(dots), va, vb, beta, bias, c, j0, nj);
}

// 2 to Kernels::gemm_rows_t_max rows of A, row by row of B^T: the products into CH vector
// accumulators per row of A (the head, as rows_t_group's, into accumulator 0, then vector v after
// it into accumulator v % CH), summed (0 + 1), then the lanes of one vector's worth of outputs at
// once (sum_each), the last partial vector as rows_t_group's. Then alpha, bias and beta.
template <class A, int R, bool kPrefetch>
void gemm_rows_t_many(std::size_t k, const float* a, std::size_t lda, const float* bt,
                      std::size_t ldbt, float* c, std::size_t ldc, float alpha, float beta,
                      std::size_t n, const float* bias) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  constexpr int CH = R == 2 ? 2 : 1;  // independent FMA chains per row
  // With kPrefetch, a step of whole lines (AVX-512; AVX2 with 2 chains) prefetches its lines
  // kPrefetchBytes ahead, one prefetch per 64 bytes from the step's first float (the steps lie
  // whole lines apart, so each line after the head's gets one; the head prefetches its own).
  // Shorter steps track the next line to prefetch, a loop inside each step; whole-line steps did
  // too until 2026-12-06 (Zen 5, AB_LIB_OFFSET=16 bench/ab-lib, 11-15 pairs, bit-identical, time
  // without that loop over with it: AVX-512 A B^T 2 x 2304 x 768 0.955x and 0.913x, 3 rows
  // 0.909x, 4 rows 0.914x and 0.838x, 8 rows 1.006x (on lines 1.029x); AVX2 2 rows 0.704x).
  constexpr std::size_t kStepBytes = CH * L * sizeof(float);
  const V va(alpha), vb(beta);
  const std::size_t head = rows_t_head<A>(bt, ldbt, k);
  for (std::size_t j0 = 0; j0 < n; j0 += L) {
    const std::size_t nj = n - j0 < L ? n - j0 : L;
    V dots[R][L];
    for (std::size_t jj = 0; jj < L; ++jj) {
      if (jj >= nj) {
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i)
          dots[i][jj] = V(-0.0f);
        continue;
      }
      const float* bj = bt + (j0 + jj) * ldbt;
      V acc[R][CH];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int h = 0; h < CH; ++h)
          acc[i][h] = V(-0.0f);
      }
      std::size_t p = 0;
      const std::uintptr_t row = reinterpret_cast<std::uintptr_t>(bj);
      if (head != 0) {
        // The head's line, which whole-line steps (from the next line on) do not prefetch.
        if constexpr (kPrefetch && kStepBytes % 64 == 0) {
          __builtin_prefetch(reinterpret_cast<const void*>(row + kPrefetchBytes), 0, 3);
        }
        const V bv = bt_part<A>(bj, head);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i)
          acc[i][0] =
              fmadd<A>(a_part<A>(a + static_cast<std::size_t>(i) * lda, head), bv, acc[i][0]);
        p = head;
      }
      std::uintptr_t fetched = row + kPrefetchBytes;  // lines before it have been prefetched
      for (; p + CH * L <= k; p += CH * L) {
        if constexpr (kPrefetch && kStepBytes % 64 == 0) {
#pragma GCC unroll 2
          for (std::size_t b = 0; b < kStepBytes; b += 64) {
            const std::uintptr_t ahead = row + p * sizeof(float) + kPrefetchBytes + b;
            __builtin_prefetch(reinterpret_cast<const void*>(ahead), 0, 3);
          }
        } else if constexpr (kPrefetch) {
          for (; fetched < row + (p + CH * L) * sizeof(float) + kPrefetchBytes; fetched += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(fetched), 0, 3);
        }
#pragma GCC unroll 4
        for (int h = 0; h < CH; ++h) {
          const V bv = V::load_unaligned(bj + p + static_cast<std::size_t>(h) * L);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const float* ai = a + static_cast<std::size_t>(i) * lda + p + h * L;
            acc[i][h] = fmadd<A>(V::load_unaligned(ai), bv, acc[i][h]);
          }
        }
      }
      for (int h = 0; p < k; p += L, h = (h + 1) % CH) {
        const std::size_t t = k - p < L ? k - p : L;
        const V bv = bt_part<A>(bj + p, t);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const V av = a_part<A>(a + static_cast<std::size_t>(i) * lda + p, t);
          acc[i][h] = fmadd<A>(av, bv, acc[i][h]);
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        if constexpr (CH == 2) {
          dots[i][jj] = acc[i][0] + acc[i][1];
        } else {
          dots[i][jj] = acc[i][0];
        }
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      rows_t_store<A>(sum_each<A>(dots[i]), va, vb, beta, bias,
                      c + static_cast<std::size_t>(i) * ldc, j0, nj);
  }
}

// R rows of A (1 to Kernels::gemm_rows_t_max) against B^T: gemm_rows_t_one or gemm_rows_t_many.
template <class A, int R, bool kPrefetch>
void gemm_rows_t_kernel(A, std::size_t k, const float* a, std::size_t lda, const float* bt,
                        std::size_t ldbt, float* c, std::size_t ldc, float alpha, float beta,
                        std::size_t n, const float* bias) {
  if constexpr (R == 1) {
    gemm_rows_t_one<A, kPrefetch>(k, a, bt, ldbt, c, alpha, beta, n, bias);
  } else {
    gemm_rows_t_many<A, R, kPrefetch>(k, a, lda, bt, ldbt, c, ldc, alpha, beta, n, bias);
  }
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// The SIMD kernels of the fused attention, xsimd functors templated on the architecture and
// instantiated by attention/attention_kernels_<isa>.cpp. Contracts: PvUkernel and
// SoftmaxTileKernel in dispatch/kernels.hpp.
#pragma once

#include <cmath>

#include "dispatch/kernels.hpp"
#include "matmul/gemm_kernel.hpp"
#include "simd/simd.hpp"
#include "vmath/vmath_kernels.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

// P*V with P row-major (row stride LDA, a compile-time constant, so the MR rows are fixed
// offsets from one pointer) and C scaled per row by the online-softmax correction.
template <int MR, int NV, int LDA>
struct pv_kernel {
  template <class A>
  void operator()(A, std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, const float* row_scale, std::size_t m) const;
};

// PvUkernel for MR rows: tiles of SMALL and MID rows serve calls with at most that many rows (a
// decoding step's few query rows), as gemm_kernel_by_rows does for the GEMM.
template <int MR, int NV, int LDA, int SMALL, int MID>
struct pv_kernel_by_rows {
  template <class A>
  void operator()(A arch, std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, const float* row_scale, std::size_t m) const {
    static_assert(SMALL <= MID && MID <= MR, "row tiles must grow");
    if constexpr (SMALL < MR) {
      if (m <= SMALL) {
        pv_kernel<SMALL, NV, LDA>{}(arch, k, p, b, ldb, c, ldc, row_scale, m);
        return;
      }
    }
    if constexpr (SMALL < MID && MID < MR) {
      if (m <= MID) {
        pv_kernel<MID, NV, LDA>{}(arch, k, p, b, ldb, c, ldc, row_scale, m);
        return;
      }
    }
    pv_kernel<MR, NV, LDA>{}(arch, k, p, b, ldb, c, ldc, row_scale, m);
  }
};

// PvUkernel for one row (a multi-head decoding step): the keys alternate between S sets of
// accumulators, summed at the end, so S * NV FMA chains run at once (a one-row pv_kernel has NV
// chains, each one FMA per key and 4 cycles of latency; the 4-row tile issues 4 times the FMAs,
// 3 rows of them padding). Measured, S = 4, NV = 4 on AVX-512 instead of the 4 x 64 tile:
// attention_decode 1x12x12x1x1024x64 0.914x the time (bench/ab, 6 rounds, 0.874-0.924).
template <int NV, int S>
struct pv_kernel_row {
  template <class A>
  void operator()(A, std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                  const float* row_scale) const {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    V acc[S][NV];
#pragma GCC unroll 16
    for (int s = 0; s < S; ++s) {
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j)
        acc[s][j] = V(0.0f);
    }
    std::size_t q = 0;
    for (; q + S <= k; q += S) {
#pragma GCC unroll 16
      for (int s = 0; s < S; ++s) {
        const V w(p[q + s]);
        const float* row = b + (q + s) * ldb;
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j)
          acc[s][j] = fmadd<A>(w, V::load_unaligned(row + j * L), acc[s][j]);
      }
    }
    for (; q < k; ++q) {
      const V w(p[q]);
      const float* row = b + q * ldb;
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j)
        acc[0][j] = fmadd<A>(w, V::load_unaligned(row + j * L), acc[0][j]);
    }
    const V scale(row_scale[0]);
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      V sum = acc[0][j];
#pragma GCC unroll 16
      for (int s = 1; s < S; ++s)
        sum += acc[s][j];
      fmadd<A>(scale, V::load_unaligned(c + j * L), sum).store_unaligned(c + j * L);
    }
  }
};

struct online_softmax_kernel {
  template <class A>
  void operator()(A, float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,
                  float* l, float* alpha) const;
};

template <int MR, int NV, int LDA>
template <class A>
void pv_kernel<MR, NV, LDA>::operator()(A, std::size_t k, const float* p, const float* b,
                                        std::size_t ldb, float* c, std::size_t ldc,
                                        const float* row_scale, std::size_t m) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  V acc[MR][NV];
  zero_tile<A, MR, NV>(acc);
  for (std::size_t q = 0; q < k; ++q, ++p, b += ldb) {
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = V::load_unaligned(b + j * L);
    rank1_update<A, MR, NV>(acc, bv, [p](int i) { return p[i * LDA]; });
  }
  if (row_scale == nullptr) {  // C = P B: C is not read
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      if (static_cast<std::size_t>(i) >= m) break;
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[i][j].store_unaligned(c + static_cast<std::size_t>(i) * ldc + j * L);
    }
    return;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (static_cast<std::size_t>(i) >= m) break;
    float* row = c + static_cast<std::size_t>(i) * ldc;
    const V scale(row_scale[i]);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      fmadd<A>(scale, V::load_unaligned(row + j * L), acc[i][j]).store_unaligned(row + j * L);
    }
  }
}

// The rows run in groups of L: the row maxima of a group first (independent reductions, each
// row's vector of lane maxima folded into one lane of a vector by max_each), then its new maxima
// and correction factors alpha as one vector (one exp for L rows), then the exponentials and
// their row sums (vectors folded by sum_each), then l as one vector. Per row, only the
// exponentials remain on a dependency chain, and (AVX-512's max_each; elsewhere max_each still
// reduces row by row) no row ends in a horizontal reduction of its own
// (perf: the softmax's share of the samples of attention 1x12x512x64, 13.1% -> 11.3%).
template <class A>
void online_softmax_kernel::operator()(A, float* s, std::size_t ld, std::size_t rows,
                                       std::size_t cols, float* m, float* l, float* alpha) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  alignas(64) float m_new[L];
  V part[L];  // per row of the group: lane maxima, then lane sums
  for (std::size_t i0 = 0; i0 < rows; i0 += L) {
    const std::size_t g = rows - i0 < L ? rows - i0 : L;
    for (std::size_t r = 0; r < L; ++r) {
      V vm(-INFINITY);
      if (r < g) {
        const float* row = s + (i0 + r) * ld;
        std::size_t j = 0;
        for (; j + L <= cols; j += L)
          vm = xsimd::max(vm, V::load_unaligned(row + j));
        if (j < cols) vm = xsimd::max(vm, load_partial<A>(row + j, cols - j, -INFINITY));
      }
      part[r] = vm;
    }
    // A NaN row max compares false and keeps the old max; the NaN reaches l through the sum.
    const V mo = load_n<A>(m + i0, g, -INFINITY), rm = max_each<A>(part);
    const V mn = xsimd::select(rm > mo, rm, mo);
    const V inf(INFINITY);
    const V a = xsimd::select(
        mn == -inf, V(1.0f),
        xsimd::select(mo == -inf, V(0.0f), expf_impl::exp_nonpositive_flush<A>(mo - mn)));
    mn.store_aligned(m_new);
    for (std::size_t r = 0; r < L; ++r) {
      if (r >= g) {
        part[r] = V(0.0f);
        continue;
      }
      float* row = s + (i0 + r) * ld;
      if (m_new[r] == -INFINITY) {  // nothing attended yet: zeros, and NaN in l if the row held one
        bool nan = false;
        for (std::size_t t = 0; t < cols; ++t) {
          nan = nan || row[t] != row[t];  // not std::isnan: no shared inline code in ISA objects
          row[t] = 0.0f;
        }
        part[r] = V(nan ? NAN : 0.0f);
        continue;
      }
      const expf_impl::ShiftedExp<A> e_minus_m(m_new[r]);
      V sum0(0.0f), sum1(0.0f);
      std::size_t j = 0;
      for (; j + 2 * L <= cols; j += 2 * L) {
        const V e0 = e_minus_m(V::load_unaligned(row + j));
        const V e1 = e_minus_m(V::load_unaligned(row + j + L));
        e0.store_unaligned(row + j);
        e1.store_unaligned(row + j + L);
        sum0 += e0;
        sum1 += e1;
      }
      for (; j + L <= cols; j += L) {
        const V e = e_minus_m(V::load_unaligned(row + j));
        e.store_unaligned(row + j);
        sum0 += e;
      }
      if (j < cols) {
        // Pad with m' (e^0 = 1, no careful path for padding) and drop the padding from the sum.
        const std::size_t n = cols - j;
        V e = e_minus_m(load_partial<A>(row + j, n, m_new[r]));
        store_partial<A>(row + j, n, e);
        sum1 += xsimd::select(lane_index<A>() < V(static_cast<float>(n)), e, V(0.0f));
      }
      part[r] = sum0 + sum1;
    }
    const V lo = load_n<A>(l + i0, g, 0.0f);
    store_n<A>(alpha + i0, g, a);
    store_n<A>(l + i0, g, fmadd<A>(a, lo, sum_each<A>(part)));
    store_n<A>(m + i0, g, mn);
  }
}

// ScoresDirectKernel: T = max(L, 8) dot products at a time (R rows x T / R keys, R in 1, 2, 4),
// each an FMA chain over dk; sum_each reduces L chains at once (lane i of sum_each(acc) is the
// sum of the lanes of acc[i]), so the reduction costs about one shuffle and add per chain.
struct scores_direct_kernel {
  // The prefetch helpers are always inlined: GCC 12 finds a function whose only effects are
  // prefetches "const" (no side effects) and deletes every call to it that it did not inline;
  // as plain static functions, prefetch_group's calls vanished from all three ISAs' objects.
  // DirectPrefetch::to_l2: prefetcht1 (L2) rather than prefetcht0 (L1 and L2).
  __attribute__((always_inline)) static void prefetch_line(const char* p, bool to_l2) {
    if (to_l2) {
      __builtin_prefetch(p, 0, 2);
    } else {
      __builtin_prefetch(p);
    }
  }

  template <class A>
  void operator()(A, const float* q, std::size_t ldq, std::size_t rows, const float* k,
                  std::size_t ldk, std::size_t keys, std::size_t dk, float scale, float* s,
                  std::size_t lds, const DirectPrefetch& pf) const {
    if (dk == 0) {  // q and k may be null
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t j = 0; j < keys; ++j)
          s[r * lds + j] = scale * 0.0f;
      }
      return;
    }
    const DirectPrefetch none;
    for (std::size_t r0 = 0; r0 < rows; r0 += 4) {  // one group when rows <= kDirectRows
      const std::size_t n = rows - r0 < 4 ? rows - r0 : 4;
      const float* qr = q + r0 * ldq;
      float* sr = s + r0 * lds;
      const DirectPrefetch& p = r0 == 0 ? pf : none;  // the first group of rows prefetches
      if (n == 1) {
        tile<A, 1>(qr, ldq, n, k, ldk, keys, dk, scale, sr, lds, p);
      } else if (n == 2) {
        tile<A, 2>(qr, ldq, n, k, ldk, keys, dk, scale, sr, lds, p);
      } else {
        tile<A, 4>(qr, ldq, n, k, ldk, keys, dk, scale, sr, lds, p);
      }
    }
  }

  // Key rows [first, last) of k, each line of a row's dk floats.
  template <bool kToL2>
  __attribute__((always_inline)) static void prefetch_rows(const float* k, std::size_t ldk,
                                                           std::size_t first, std::size_t last,
                                                           std::size_t bytes) {
    for (std::size_t u = first; u < last; ++u) {
      const char* row = reinterpret_cast<const char*>(k + u * ldk);
      for (std::size_t b = 0; b < bytes; b += 64)
        prefetch_line(row + b, kToL2);
    }
  }

  // Keys [j, j + nk): their rows pf.k_ahead_bytes ahead (in this tile or the next), and their
  // V rows.
  __attribute__((always_inline)) static void prefetch_group(const float* k, std::size_t ldk,
                                                            std::size_t j, std::size_t nk,
                                                            std::size_t ahead, std::size_t dk,
                                                            const DirectPrefetch& pf) {
    const std::size_t first = j + ahead,
                      last = j + nk + ahead < pf.k_rows ? j + nk + ahead : pf.k_rows;
    if (pf.to_l2) {
      prefetch_rows<true>(k, ldk, first, last, dk * sizeof(float));
      if (pf.v != nullptr) prefetch_rows<true>(pf.v, pf.ldv, j, j + nk, pf.v_bytes);
    } else {
      prefetch_rows<false>(k, ldk, first, last, dk * sizeof(float));
      if (pf.v != nullptr) prefetch_rows<false>(pf.v, pf.ldv, j, j + nk, pf.v_bytes);
    }
  }

  // s[r][j + u] = scale * (lane sums of acc[r * U + u]), u < nk.
  template <class A, int R, int U>
  static void store_dots(const vfloat<A>* acc, std::size_t rows, std::size_t j, std::size_t nk,
                         float scale, float* s, std::size_t lds) {
    constexpr std::size_t L = lanes<A>;
    constexpr int T = R * U;
    alignas(64) float dots[T];
#pragma GCC unroll 4
    for (int g = 0; g < T; g += static_cast<int>(L))
      sum_each<A>(acc + g).store_aligned(dots + g);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t u = 0; u < nk; ++u)
        s[r * lds + j + u] = scale * dots[r * U + u];
    }
  }

  // The dot products of R query rows with nk <= U key rows from `base`, ldk apart, into acc
  // (acc[r * U + u]: query row r, key u). The rows step from one to the next by ldk (one register
  // for all U rows: with an array of U row pointers GCC kept 5 of 16 on the stack and reloaded
  // them every step); past nk (a partial last group, !kWhole) the last key row repeats, whose
  // sums the caller drops. R == 1 reads each key's row 4 vectors at a time, in order. Each sum
  // runs over dk in order.
  template <class A, int R, bool kWhole>
  static void dots(const float* const* qr, const float* base, std::size_t ldk, std::size_t nk,
                   std::size_t dk, vfloat<A>* acc) {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    constexpr int U = (L >= 8 ? static_cast<int>(L) : 8) / R;
    // Never a pointer past the group's last key row.
    const auto next = [&](const float* row, int u) {
      return u + 1 < U && (kWhole || static_cast<std::size_t>(u) + 1 < nk) ? row + ldk : row;
    };
#pragma GCC unroll 16
    for (int i = 0; i < R * U; ++i)
      acc[i] = V(0.0f);
    std::size_t x = 0;
    if (R == 1) {
      for (; x + 4 * L <= dk; x += 4 * L) {
        const V q0 = V::load_unaligned(qr[0] + x), q1 = V::load_unaligned(qr[0] + x + L),
                q2 = V::load_unaligned(qr[0] + x + 2 * L),
                q3 = V::load_unaligned(qr[0] + x + 3 * L);
        const float* row = base + x;
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
          V t = fmadd<A>(q0, V::load_unaligned(row), acc[u]);
          t = fmadd<A>(q1, V::load_unaligned(row + L), t);
          t = fmadd<A>(q2, V::load_unaligned(row + 2 * L), t);
          acc[u] = fmadd<A>(q3, V::load_unaligned(row + 3 * L), t);
          row = next(row, u);
        }
      }
    }
    for (; x + L <= dk; x += L) {
      V qv[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
        qv[r] = V::load_unaligned(qr[r] + x);
      const float* row = base + x;
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const V kv = V::load_unaligned(row);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
          acc[r * U + u] = fmadd<A>(qv[r], kv, acc[r * U + u]);
        row = next(row, u);
      }
    }
    if (x < dk) {
      const std::size_t n = dk - x;
      V qv[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
        qv[r] = load_partial<A>(qr[r] + x, n, 0.0f);
      const float* row = base + x;
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const V kv = load_partial<A>(row, n, 0.0f);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
          acc[r * U + u] = fmadd<A>(qv[r], kv, acc[r * U + u]);
        row = next(row, u);
      }
    }
  }

  template <class A, int R>
  static void tile(const float* q, std::size_t ldq, std::size_t rows, const float* k,
                   std::size_t ldk, std::size_t keys, std::size_t dk, float scale, float* s,
                   std::size_t lds, const DirectPrefetch& pf) {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    constexpr int U = (L >= 8 ? static_cast<int>(L) : 8) / R;
    const std::size_t ahead = pf.k_ahead_bytes / (dk * sizeof(float)) + 1;  // dk > 0 here
    const float* qr[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {  // rows past `rows` repeat row 0; their sums are dropped
      qr[r] = q + (static_cast<std::size_t>(r) < rows ? static_cast<std::size_t>(r) * ldq : 0);
    }
    V acc[R * U];
    std::size_t j = 0;
    for (; j + U <= keys; j += U) {
      prefetch_group(k, ldk, j, U, ahead, dk, pf);
      dots<A, R, true>(qr, k + j * ldk, ldk, U, dk, acc);
      store_dots<A, R, U>(acc, rows, j, U, scale, s, lds);
    }
    if (j < keys) {
      prefetch_group(k, ldk, j, keys - j, ahead, dk, pf);
      dots<A, R, false>(qr, k + j * ldk, ldk, keys - j, dk, acc);
      store_dots<A, R, U>(acc, rows, j, keys - j, scale, s, lds);
    }
  }
};

// all_finite: x - x is 0 for a finite x and NaN for an infinity or a NaN, so a sum of such
// differences is NaN exactly when some element is not finite.
struct all_finite_kernel {
  template <class A>
  bool operator()(A, const float* x, std::size_t ld, std::size_t rows, std::size_t cols) const {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    V s0(0.0f), s1(0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = x + r * ld;
      std::size_t c = 0;
      for (; c + 2 * L <= cols; c += 2 * L) {
        const V a = V::load_unaligned(row + c), b = V::load_unaligned(row + c + L);
        s0 += a - a;
        s1 += b - b;
      }
      for (; c + L <= cols; c += L) {
        const V a = V::load_unaligned(row + c);
        s0 += a - a;
      }
      if (c < cols) {
        const V a = load_partial<A>(row + c, cols - c, 0.0f);
        s1 += a - a;
      }
    }
    const V s = s0 + s1;
    return xsimd::all(s == s);
  }
};

// SmallRowKernel: dot products along the head dimension, the softmax over at most
// kSmallRowKeys scores, and the weighted sum of V rows along the value dimension.
struct small_row_kernel {
  template <class A>
  void operator()(A, const float* q, const float* k, std::size_t ldk, const float* v,
                  std::size_t ldv, std::size_t lk, std::size_t dk, std::size_t dv, float scale,
                  const unsigned char* allowed, const float* bias, float* out,
                  float* weights) const {
    using V = vfloat<A>;
    constexpr std::size_t L = lanes<A>;
    alignas(64) float s[kSmallRowKeys + L];
    float m = -INFINITY;
    bool nan = false;
    for (std::size_t j = 0; j < lk; ++j) {
      if (!allowed[j]) {
        s[j] = -INFINITY;
        continue;
      }
      V acc(0.0f);
      if (dk > 0) {  // with dk == 0, k may be null: no pointer arithmetic on it
        const float* kj = k + j * ldk;
        std::size_t x = 0;
        for (; x + L <= dk; x += L)
          acc = fmadd<A>(V::load_unaligned(q + x), V::load_unaligned(kj + x), acc);
        if (x < dk)
          acc = fmadd<A>(load_partial<A>(q + x, dk - x, 0.0f),
                         load_partial<A>(kj + x, dk - x, 0.0f), acc);
      }
      s[j] = reduce_add<A>(acc) * scale + (bias ? bias[j] : 0.0f);
      nan = nan || s[j] != s[j];
      m = s[j] > m ? s[j] : m;
    }
    if (nan || m == INFINITY || m == -INFINITY) {
      const float fill = m == -INFINITY && !nan ? 0.0f : NAN;
      for (std::size_t x = 0; x < dv; ++x)
        out[x] = fill;
      if (weights) {
        for (std::size_t j = 0; j < lk; ++j)
          weights[j] = fill;
      }
      return;
    }
    V sum(0.0f);
    for (std::size_t j = 0; j < lk; j += L) {
      const std::size_t n = lk - j < L ? lk - j : L;
      const V e = expf_impl::exp_nonpositive_flush<A>(load_partial<A>(s + j, n, -INFINITY) - V(m));
      e.store_aligned(s + j);  // lanes past lk land in the slack of s
      sum += e;
    }
    const float inv = 1.0f / reduce_add<A>(sum);
    for (std::size_t x = 0; x < dv; x += L) {
      const std::size_t n = dv - x < L ? dv - x : L;
      V acc(0.0f);
      for (std::size_t j = 0; j < lk; ++j) {
        if (!allowed[j]) continue;  // blocked keys are never read
        const float* vj = v + j * ldv + x;
        acc = fmadd<A>(V(s[j]), n == L ? V::load_unaligned(vj) : load_partial<A>(vj, n, 0.0f), acc);
      }
      acc = acc * V(inv);
      if (n == L) {
        acc.store_unaligned(out + x);
      } else {
        store_partial<A>(out + x, n, acc);
      }
    }
    if (weights) {
      for (std::size_t j = 0; j < lk; ++j)
        weights[j] = s[j] * inv;
    }
  }
};

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

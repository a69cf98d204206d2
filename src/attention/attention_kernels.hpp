// The SIMD kernels of the fused attention, xsimd functors templated on the architecture and
// instantiated by attention/attention_kernels_<isa>.cpp. Contracts: PvUkernel and
// SoftmaxTileKernel in dispatch/kernels.hpp.
#pragma once

#include <cmath>

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
                  std::size_t ldc, const float* row_scale) const;
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
                                        const float* row_scale) const {
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
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* row = c + static_cast<std::size_t>(i) * ldc;
    const V scale(row_scale[i]);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      fmadd<A>(scale, V::load_unaligned(row + j * L), acc[i][j]).store_unaligned(row + j * L);
    }
  }
}

template <class A>
void online_softmax_kernel::operator()(A, float* s, std::size_t ld, std::size_t rows,
                                       std::size_t cols, float* m, float* l, float* alpha) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = s + i * ld;
    V vm(-INFINITY);
    std::size_t j = 0;
    for (; j + L <= cols; j += L)
      vm = xsimd::max(vm, V::load_unaligned(row + j));
    if (j < cols) vm = xsimd::max(vm, load_partial<A>(row + j, cols - j, -INFINITY));
    const float row_max = reduce_max<A>(vm);
    const float m_new = row_max > m[i] ? row_max : m[i];
    if (m_new == -INFINITY) {
      bool nan = false;
      for (std::size_t t = 0; t < cols; ++t) {
        nan = nan || std::isnan(row[t]);
        row[t] = 0.0f;
      }
      alpha[i] = 1.0f;
      if (nan) l[i] = NAN;
      continue;
    }
    const float a =
        m[i] == -INFINITY ? 0.0f : expf_impl::exp_nonpositive_flush<A>(V(m[i] - m_new)).get(0);
    const V vmax(m_new);
    V sum0(0.0f), sum1(0.0f);
    j = 0;
    for (; j + 2 * L <= cols; j += 2 * L) {
      const V e0 = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(row + j) - vmax);
      const V e1 = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(row + j + L) - vmax);
      e0.store_unaligned(row + j);
      e1.store_unaligned(row + j + L);
      sum0 += e0;
      sum1 += e1;
    }
    for (; j + L <= cols; j += L) {
      const V e = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(row + j) - vmax);
      e.store_unaligned(row + j);
      sum0 += e;
    }
    if (j < cols) {
      // Pad with m' (e^0 = 1, no careful path for padding) and drop the padding from the sum.
      const std::size_t n = cols - j;
      V e = expf_impl::exp_nonpositive_flush<A>(load_partial<A>(row + j, n, m_new) - vmax);
      store_partial<A>(row + j, n, e);
      sum1 += xsimd::select(lane_index<A>() < V(static_cast<float>(n)), e, V(0.0f));
    }
    alpha[i] = a;
    l[i] = a * l[i] + reduce_add<A>(sum0 + sum1);
    m[i] = m_new;
  }
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// The SIMD GEMM micro-kernel, an xsimd functor templated on the architecture and the register
// tile (MR rows x NV vectors), defined out of class and instantiated by
// matmul/gemm_kernel_<tile>_<isa>.cpp. Contract: GemmUkernel in dispatch/kernels.hpp.
// Per k step: NV vector loads of B, MR broadcasts of A, MR * NV FMAs into MR * NV accumulators
// that stay in registers (ref: Goto & van de Geijn 2008; BLIS's haswell 6x16 kernel).
#pragma once

#include "simd/simd.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

template <int MR, int NV>
struct gemm_kernel {
  template <class A>
  void operator()(A, std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                  float alpha, float beta, std::size_t m, std::size_t n) const;
};

template <int MR, int NV>
template <class A>
void gemm_kernel<MR, NV>::operator()(A, std::size_t k, const float* a, const float* b, float* c,
                                     std::size_t ldc, float alpha, float beta, std::size_t m,
                                     std::size_t n) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  constexpr std::size_t NR = NV * L;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[i][j] = V(0.0f);
  }
  for (std::size_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = V::load_unaligned(b + j * L);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V ai(a[i]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[i][j] = fmadd<A>(ai, bv[j], acc[i][j]);
    }
    a += MR;
    b += NR;
  }
  const V va(alpha), vb(beta);
  if (m == MR && n == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* row = c + static_cast<std::size_t>(i) * ldc;
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        const V r = beta == 0.0f ? va * acc[i][j]
                                 : fmadd<A>(vb, V::load_unaligned(row + j * L), va * acc[i][j]);
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
      const V old = beta == 0.0f ? V(0.0f) : load_partial<A>(row + c0, w, 0.0f);
      const V r = beta == 0.0f ? va * acc[i][j] : fmadd<A>(vb, old, va * acc[i][j]);
      if (w == L) {
        r.store_unaligned(row + c0);
      } else {
        store_partial<A>(row + c0, w, r);
      }
    }
  }
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

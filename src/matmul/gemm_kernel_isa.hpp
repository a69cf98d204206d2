// The GEMM micro-kernels each SIMD ISA provides (defined in matmul/gemm_kernel_<tile>_<isa>.cpp).
#pragma once

#include <cstddef>

namespace attn::detail {

#define ATTN_DECLARE_GEMM_KERNEL(isa, name)                                                        \
  namespace isa {                                                                                  \
  void name(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc, float alpha, \
            float beta);                                                                           \
  }

ATTN_DECLARE_GEMM_KERNEL(sse2, gemm_kernel_6x8)
ATTN_DECLARE_GEMM_KERNEL(avx2, gemm_kernel_6x16)
ATTN_DECLARE_GEMM_KERNEL(avx512, gemm_kernel_14x32)
ATTN_DECLARE_GEMM_KERNEL(neon, gemm_kernel_8x12)

#undef ATTN_DECLARE_GEMM_KERNEL

}  // namespace attn::detail

// The GEMM kernels each SIMD ISA provides (defined in matmul/gemm_kernel_<tile>_<isa>.cpp).
#pragma once

#include <cstddef>

namespace attn::detail {

#define ATTN_DECLARE_GEMM_KERNEL(isa, name, pack_a)                                                \
  namespace isa {                                                                                  \
  void name(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc, float alpha, \
            float beta, std::size_t m, std::size_t n, const float* bias);                          \
  void gemm_direct(std::size_t k, const float* a, std::size_t lda, const float* b,                 \
                   std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,            \
                   std::size_t m, std::size_t n, const float* bias);                               \
  void gemm_direct_narrow(std::size_t k, const float* a, std::size_t lda, const float* b,          \
                          std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,     \
                          std::size_t m, std::size_t n, const float* bias);                        \
  void pack_a(const float* a, std::size_t lda, std::size_t rows, std::size_t k, float* dst);       \
  void gemm_pack_b_rows(const float* b, std::size_t ldb, std::size_t width, std::size_t k,         \
                        float* dst);                                                               \
  void gemm_pack_a_cols(const float* a, std::size_t lda, std::size_t width, std::size_t k,         \
                        float* dst);                                                               \
  void transpose(const float* src, std::size_t lds, std::size_t rows, std::size_t cols,            \
                 float* dst, std::size_t ldd);                                                     \
  }

ATTN_DECLARE_GEMM_KERNEL(sse2, gemm_kernel_6x8, gemm_pack_a_6)
ATTN_DECLARE_GEMM_KERNEL(avx2, gemm_kernel_6x16, gemm_pack_a_6)
ATTN_DECLARE_GEMM_KERNEL(avx512, gemm_kernel_14x32, gemm_pack_a_14)
ATTN_DECLARE_GEMM_KERNEL(neon, gemm_kernel_8x12, gemm_pack_a_8)

#undef ATTN_DECLARE_GEMM_KERNEL

}  // namespace attn::detail

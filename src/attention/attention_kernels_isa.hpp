// The fused-attention kernels each SIMD ISA provides (attention/attention_kernels_<isa>.cpp).
#pragma once

#include <cstddef>

#include "dispatch/kernels.hpp"

#define ATTN_DECLARE_ATTENTION_KERNELS(isa, pv)                                                    \
  namespace isa {                                                                                  \
  void pv(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,                \
          std::size_t ldc, const float* row_scale, std::size_t m);                                 \
  void online_softmax(float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,      \
                      float* l, float* alpha);                                                     \
  void small_row(const float* q, const float* k, std::size_t ldk, const float* v, std::size_t ldv, \
                 std::size_t lk, std::size_t dk, std::size_t dv, float scale,                      \
                 const unsigned char* allowed, const float* bias, float* out, float* weights);     \
  void pack_kt(const float* k, std::size_t ldk, std::size_t keys, std::size_t dk, float* dst);     \
  void scores_direct(const float* q, std::size_t ldq, std::size_t rows, const float* k,            \
                     std::size_t ldk, std::size_t keys, std::size_t dk, float scale, float* s,     \
                     std::size_t lds, const DirectPrefetch& pf);                                   \
  bool all_finite(const float* x, std::size_t ld, std::size_t rows, std::size_t cols);             \
  void pv_few(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,            \
              std::size_t ldc, const float* row_scale, std::size_t m);                             \
  void pv_few_vec(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,        \
                  std::size_t ldc, const float* row_scale, std::size_t m);                         \
  void scores_q_in_place(std::size_t k, const float* a, std::size_t lda, const float* b,           \
                         std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,      \
                         std::size_t m, std::size_t n, const float* bias);                         \
  void scores_q_in_place_narrow(std::size_t k, const float* a, std::size_t lda, const float* b,    \
                                std::size_t ldb, float* c, std::size_t ldc, float alpha,           \
                                float beta, std::size_t m, std::size_t n, const float* bias);      \
  void scores_narrow(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,     \
                     float alpha, float beta, std::size_t m, std::size_t n, const float* bias,     \
                     const L2Prefetch& next);                                                      \
  }

namespace attn::detail {
ATTN_DECLARE_ATTENTION_KERNELS(sse2, pv_kernel_4x8_bk64)
ATTN_DECLARE_ATTENTION_KERNELS(avx2, pv_kernel_6x16_bk128)
ATTN_DECLARE_ATTENTION_KERNELS(avx512, pv_kernel_14x32_bk128)
ATTN_DECLARE_ATTENTION_KERNELS(neon, pv_kernel_4x12_bk96)
}  // namespace attn::detail

#undef ATTN_DECLARE_ATTENTION_KERNELS

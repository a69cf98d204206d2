// The GEMM kernels each SIMD ISA provides (defined in matmul/gemm_kernel_<tile>_<isa>.cpp; see
// matmul/gemm_kernels_isa.inc).
#pragma once

#include <cstddef>

#include "matmul/l2_prefetch.hpp"

namespace attn::detail {

// A packed tile: its micro-kernel, packing routines, and the same width's prefetching tile for a
// pre-packed B (gemm_prefetch_sliver: defined where the tile file sets ATTN_GEMM_SLIVER_MR).
#define ATTN_DECLARE_GEMM_TILE(isa, name, pack_a, pack_a_cols, pack_b_rows, pack_b_cols)           \
  namespace isa {                                                                                  \
  void name(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc, float alpha, \
            float beta, std::size_t m, std::size_t n, const float* bias, const L2Prefetch& next);  \
  void pack_a(const float* a, std::size_t lda, std::size_t rows, std::size_t k, float* dst);       \
  void pack_a_cols(const float* a, std::size_t lda, std::size_t width, std::size_t k, float* dst); \
  void pack_b_rows(const float* b, std::size_t ldb, std::size_t width, std::size_t k, float* dst); \
  void pack_b_cols(const float* b, std::size_t ldb, std::size_t width, std::size_t k, float* dst); \
  void gemm_prefetch_sliver(std::size_t k, const float* a, std::size_t lda, const float* b,        \
                            std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,   \
                            std::size_t m, std::size_t n, const float* bias);                      \
  }

// Rows of C that one call of gemm_rows takes (Kernels::gemm_rows_max).
#define ATTN_GEMM_ROWS_MAX 4
// Rows of C that one call of gemm_rows_t takes (Kernels::gemm_rows_t_max).
#define ATTN_GEMM_ROWS_T_MAX 8

// The no-packing kernels and the rows kernel.
#define ATTN_DECLARE_GEMM_DIRECT(isa)                                                              \
  namespace isa {                                                                                  \
  void gemm_direct(std::size_t k, const float* a, std::size_t lda, const float* b,                 \
                   std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,            \
                   std::size_t m, std::size_t n, const float* bias);                               \
  void gemm_direct_tiles(std::size_t k, const float* a, std::size_t lda, const float* b,           \
                         std::size_t ldb, std::size_t panel_stride, float* c, std::size_t ldc,     \
                         float alpha, float beta, std::size_t m, std::size_t n,                    \
                         const float* bias);                                                       \
  void gemm_direct_tiles_l1(std::size_t k, const float* a, std::size_t lda, const float* b,        \
                            std::size_t ldb, std::size_t panel_stride, float* c, std::size_t ldc,  \
                            float alpha, float beta, std::size_t m, std::size_t n,                 \
                            const float* bias);                                                    \
  void gemm_direct_narrow(std::size_t k, const float* a, std::size_t lda, const float* b,          \
                          std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,     \
                          std::size_t m, std::size_t n, const float* bias);                        \
  void gemm_direct_narrow_split(std::size_t k, const float* a, std::size_t lda, const float* b,    \
                                std::size_t ldb, float* c, std::size_t ldc, float alpha,           \
                                float beta, std::size_t m, std::size_t n, const float* bias);      \
  void gemm_rows(std::size_t k, const float* a, std::size_t lda, const float* b, std::size_t ldb,  \
                 float* c, std::size_t ldc, float alpha, float beta, std::size_t m, std::size_t n, \
                 const float* bias, float* acc, std::size_t block, bool b_beyond_l3);              \
  void gemm_rows_t(std::size_t k, const float* a, std::size_t lda, const float* b,                 \
                   std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,            \
                   std::size_t m, std::size_t n, const float* bias);                               \
  void gemm_rows_t_prefetch(std::size_t k, const float* a, std::size_t lda, const float* b,        \
                            std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,   \
                            std::size_t m, std::size_t n, const float* bias);                      \
  void gemm_prefetch_b(std::size_t k, const float* a, std::size_t lda, const float* b,             \
                       std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,        \
                       std::size_t m, std::size_t n, const float* bias);                           \
  void gemm_store_t(const float* ct, std::size_t ldct, float* c, std::size_t ldc, float alpha,     \
                    float beta, std::size_t m, std::size_t n, const float* bias);                  \
  }

ATTN_DECLARE_GEMM_TILE(sse2, gemm_kernel_4x8, gemm_pack_a_4, gemm_pack_a_cols_4, gemm_pack_b_rows_8,
                       gemm_pack_b_cols_8)
ATTN_DECLARE_GEMM_DIRECT(sse2)
namespace sse2 {  // the packed GEMM's tile, on A panels of 4 copies of each value
void gemm_kernel_4x8_copies(std::size_t k, const float* a, const float* b, float* c,
                            std::size_t ldc, float alpha, float beta, std::size_t m, std::size_t n,
                            const float* bias, const L2Prefetch& next);
void gemm_pack_a_4_copies(const float* a, std::size_t lda, std::size_t rows, std::size_t k,
                          float* dst);
void gemm_pack_a_cols_4_copies(const float* a, std::size_t lda, std::size_t width, std::size_t k,
                               float* dst);
}  // namespace sse2
ATTN_DECLARE_GEMM_TILE(avx2, gemm_kernel_6x16, gemm_pack_a_6, gemm_pack_a_cols_6,
                       gemm_pack_b_rows_16, gemm_pack_b_cols_16)
ATTN_DECLARE_GEMM_DIRECT(avx2)
ATTN_DECLARE_GEMM_TILE(avx512, gemm_kernel_6x64, gemm_pack_a_6, gemm_pack_a_cols_6,
                       gemm_pack_b_rows_64, gemm_pack_b_cols_64)
namespace avx512 {
void gemm_direct_wide(std::size_t k, const float* a, std::size_t lda, const float* b,
                      std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                      std::size_t m, std::size_t n, const float* bias);
void gemm_wide_panel(std::size_t k, const float* a, std::size_t lda, const float* b,
                     std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                     std::size_t m, std::size_t n, const float* bias);
}  // namespace avx512
ATTN_DECLARE_GEMM_TILE(avx512, gemm_kernel_14x32, gemm_pack_a_14, gemm_pack_a_cols_14,
                       gemm_pack_b_rows_32, gemm_pack_b_cols_32)
ATTN_DECLARE_GEMM_DIRECT(avx512)
ATTN_DECLARE_GEMM_TILE(neon, gemm_kernel_8x12, gemm_pack_a_8, gemm_pack_a_cols_8,
                       gemm_pack_b_rows_12, gemm_pack_b_cols_12)
ATTN_DECLARE_GEMM_DIRECT(neon)

#undef ATTN_DECLARE_GEMM_TILE
#undef ATTN_DECLARE_GEMM_DIRECT

}  // namespace attn::detail

#pragma once

#include <cstddef>

#include "matmul/l2_prefetch.hpp"

namespace attn::detail::scalar {

// MR = 4, NR = 4; contract in dispatch/kernels.hpp.
void gemm_kernel_4x4(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                     float alpha, float beta, std::size_t m, std::size_t n, const float* bias,
                     const L2Prefetch& next);
// Rows of a row-major A into a 4-wide panel: dst[p * 4 + i] = a[i * lda + p].
// The no-packing kernel: C[m x n] (m, n <= 4) = alpha * A B + beta * C, A and B row-major.
void gemm_direct_4x4(std::size_t k, const float* a, std::size_t lda, const float* b,
                     std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                     std::size_t m, std::size_t n, const float* bias);
// k rows of up to 4 contiguous floats into a 4-wide panel: dst[p * 4 + j] = src[p * ld + j].
void gemm_pack_n_4(const float* src, std::size_t ld, std::size_t width, std::size_t k, float* dst);
void gemm_pack_a_4(const float* a, std::size_t lda, std::size_t rows, std::size_t k, float* dst);

}  // namespace attn::detail::scalar

// Isa::scalar GEMM micro-kernel: a 4 x 4 register tile in portable C++.
#include "matmul/gemm_kernel_scalar.hpp"

namespace attn::detail::scalar {
namespace {

// -0 in every accumulator: the additive identity, as in the SIMD kernels (gemm_kernel.hpp).
void zero_tile(float (&acc)[4][4]) {
  for (auto& row : acc) {
    for (float& x : row)
      x = -0.0f;
  }
}

}  // namespace

void gemm_kernel_4x4(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                     float alpha, float beta, std::size_t m, std::size_t n, const float* bias,
                     const L2Prefetch& /* the scalar fallback does not prefetch */) {
  float acc[4][4];
  zero_tile(acc);
  for (std::size_t p = 0; p < k; ++p) {
    for (int i = 0; i < 4; ++i) {
      const float ai = a[p * 4 + i];
      for (int j = 0; j < 4; ++j)
        acc[i][j] += ai * b[p * 4 + j];
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (std::size_t j = 0; j < n; ++j) {
      const float add = bias ? bias[j] : -0.0f;
      row[j] = beta == 0.0f ? alpha * acc[i][j] + add : alpha * acc[i][j] + add + beta * row[j];
    }
  }
}

void gemm_pack_a_4(const float* a, std::size_t lda, std::size_t rows, std::size_t k, float* dst) {
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t i = 0; i < 4; ++i)
      dst[p * 4 + i] = i < rows ? a[i * lda + p] : 0.0f;
  }
}

void gemm_pack_n_4(const float* src, std::size_t ld, std::size_t width, std::size_t k, float* dst) {
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t j = 0; j < 4; ++j)
      dst[p * 4 + j] = j < width ? src[p * ld + j] : 0.0f;
  }
}

void gemm_direct_4x4(std::size_t k, const float* a, std::size_t lda, const float* b,
                     std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                     std::size_t m, std::size_t n, const float* bias) {
  float acc[4][4];
  zero_tile(acc);
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t i = 0; i < m; ++i) {
      const float ai = a[i * lda + p];
      for (std::size_t j = 0; j < n; ++j)
        acc[i][j] += ai * b[p * ldb + j];
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (std::size_t j = 0; j < n; ++j) {
      const float add = bias ? bias[j] : -0.0f;
      row[j] = beta == 0.0f ? alpha * acc[i][j] + add : alpha * acc[i][j] + add + beta * row[j];
    }
  }
}

}  // namespace attn::detail::scalar

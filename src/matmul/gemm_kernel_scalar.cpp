// Isa::scalar GEMM micro-kernel: a 4 x 4 register tile in portable C++.
#include "matmul/gemm_kernel_scalar.hpp"

namespace attn::detail::scalar {

void gemm_kernel_4x4(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                     float alpha, float beta) {
  float acc[4][4] = {};
  for (std::size_t p = 0; p < k; ++p) {
    for (int i = 0; i < 4; ++i) {
      const float ai = a[p * 4 + i];
      for (int j = 0; j < 4; ++j)
        acc[i][j] += ai * b[p * 4 + j];
    }
  }
  for (int i = 0; i < 4; ++i) {
    float* row = c + static_cast<std::size_t>(i) * ldc;
    for (int j = 0; j < 4; ++j) {
      row[j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * row[j];
    }
  }
}

}  // namespace attn::detail::scalar

#pragma once

#include <cstddef>

namespace attn::detail::scalar {

// MR = 4, NR = 4; contract in dispatch/kernels.hpp.
void gemm_kernel_4x4(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                     float alpha, float beta);

}  // namespace attn::detail::scalar

// Isa::scalar fused-attention kernels (contracts in dispatch/kernels.hpp).
#pragma once

#include <cstddef>

namespace attn::detail::scalar {

// MR = 4, NR = 4, P row stride 64.
void pv_kernel_4x4_bk64(std::size_t k, const float* p, const float* b, float* c, std::size_t ldc,
                        const float* row_scale);
void online_softmax(float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,
                    float* l, float* alpha);

}  // namespace attn::detail::scalar

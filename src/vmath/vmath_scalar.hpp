// Isa::scalar vector-math kernels (contracts in dispatch/kernels.hpp).
#pragma once

#include <cstddef>

namespace attn::detail::scalar {

void exp(const float* x, float* y, std::size_t n);
float reduce_max(const float* x, std::size_t n);
double exp_minus_max_sum(const float* x, float* y, std::size_t n, float max);
void scale(const float* x, float* y, std::size_t n, float s);

}  // namespace attn::detail::scalar

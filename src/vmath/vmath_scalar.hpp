// Isa::scalar vector-math kernels (contracts in dispatch/kernels.hpp).
#pragma once

#include <cstddef>

namespace attn::detail::scalar {

void exp(const float* x, float* y, std::size_t n);
float reduce_max(const float* x, std::size_t n);
// e^x for x <= 0 (or NaN) with results below 2^-126 (x < -87.3365) flushed to 0, as the SIMD
// ISAs' exp_nonpositive_flush (vmath/vmath_kernels.hpp): softmax's and attention's weights then
// round to 0 at the same place on every ISA.
float exp_nonpositive_flush1(float x);
// y = e^(x - max), flushed as above; returns their sum.
double exp_minus_max_sum(const float* x, float* y, std::size_t n, float max);
void scale(const float* x, float* y, std::size_t n, float s);

}  // namespace attn::detail::scalar

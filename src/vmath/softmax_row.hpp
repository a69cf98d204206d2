// One softmax row from the kernel table's pieces: max, then e^(x - max) stored and summed, then
// a scale by 1/sum. Shared by attn::softmax and the attention paths that return weights.
#pragma once

#include <cmath>
#include <cstddef>

#include "dispatch/kernels.hpp"

namespace attn::detail {

// y = softmax(x) over n >= 1 entries; y may equal x. A row whose max is -inf becomes zeros
// (unless it holds a NaN, which makes it NaN); a NaN or +inf anywhere makes the row NaN.
inline void softmax_row(const Kernels& kern, const float* x, float* y, std::size_t n) {
  const float max = kern.reduce_max(x, n);
  if (max == -INFINITY) {
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j)
      nan = nan || std::isnan(x[j]);
    for (std::size_t j = 0; j < n; ++j)
      y[j] = nan ? NAN : 0.0f;
    return;
  }
  const double sum = kern.exp_minus_max_sum(x, y, n, max);
  if (std::isnan(sum)) {
    for (std::size_t j = 0; j < n; ++j)
      y[j] = NAN;
    return;
  }
  kern.scale(y, y, n, static_cast<float>(1.0 / sum));
}

}  // namespace attn::detail

// Vectorised elementwise and row-wise math.
#pragma once

#include <cstddef>

#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn {

// y[i] = e^x[i] for i < n. y may equal x exactly; any other overlap is invalid_argument.
// Special values as C's expf: exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN, +inf for
// x > 88.72284 and 0 below the smallest subnormal result. The accuracy bound per ISA is in
// README ("Accuracy").
ATTN_API Status exp(Context& ctx, const float* x, float* y, std::size_t n) noexcept;

// Row-wise softmax: y[i, j] = e^(x[i, j] - m_i) / sum_j e^(x[i, j] - m_i), m_i = max_j x[i, j].
// A row whose max is -inf (every entry -inf) becomes all zeros. NaN in a row makes the row NaN.
// x and y have the same shape; y may alias x exactly (same data and stride).
ATTN_API Status softmax(Context& ctx, MatrixView<const float> x, MatrixView<float> y) noexcept;

}  // namespace attn

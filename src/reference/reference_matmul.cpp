// attn::reference::matmul and the vector-math oracles: double accumulation, one rounding.
#include <cmath>
#include <cstddef>

#include "attn/reference.hpp"
#include "core/args.hpp"
#include "core/checks.hpp"

namespace attn::reference {

Status matmul(MatrixView<const float> a, Transpose ta, MatrixView<const float> b, Transpose tb,
              MatrixView<float> c, float alpha, float beta) {
  ATTN_RETURN_IF_ERROR(detail::validate_matmul("reference::matmul", a, ta, b, tb, c));
  const std::size_t k = ta == Transpose::no ? a.cols : a.rows;
  auto at = [&](std::size_t i, std::size_t p) {
    return static_cast<double>(ta == Transpose::no ? a(i, p) : a(p, i));
  };
  auto bt = [&](std::size_t p, std::size_t j) {
    return static_cast<double>(tb == Transpose::no ? b(p, j) : b(j, p));
  };
  for (std::size_t i = 0; i < c.rows; ++i) {
    for (std::size_t j = 0; j < c.cols; ++j) {
      double sum = -0.0;  // the additive identity: a sum of one product is that product, even -0
      for (std::size_t p = 0; p < k; ++p)
        sum += at(i, p) * bt(p, j);
      double r = static_cast<double>(alpha) * sum;
      if (beta != 0.0f) r += static_cast<double>(beta) * static_cast<double>(c(i, j));
      c(i, j) = static_cast<float>(r);
    }
  }
  return Status::Ok();
}

Status exp(const float* x, float* y, std::size_t n) {
  ATTN_RETURN_IF_ERROR(detail::validate_exp("reference::exp", x, y, n));
  for (std::size_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
  return Status::Ok();
}

Status softmax(MatrixView<const float> x, MatrixView<float> y) {
  ATTN_RETURN_IF_ERROR(detail::validate_softmax("reference::softmax", x, y));
  for (std::size_t i = 0; i < x.rows; ++i) {
    double m = -INFINITY;
    bool nan = false;
    for (std::size_t j = 0; j < x.cols; ++j) {
      const double v = x(i, j);
      nan = nan || std::isnan(v);
      if (v > m) m = v;
    }
    if (nan) {
      for (std::size_t j = 0; j < x.cols; ++j)
        y(i, j) = NAN;
      continue;
    }
    if (m == -INFINITY) {  // every entry -inf: zeros, by contract
      for (std::size_t j = 0; j < x.cols; ++j)
        y(i, j) = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (std::size_t j = 0; j < x.cols; ++j)
      sum += std::exp(static_cast<double>(x(i, j)) - m);
    // Read every input before writing: y may alias x.
    for (std::size_t j = 0; j < x.cols; ++j) {
      y(i, j) = static_cast<float>(std::exp(static_cast<double>(x(i, j)) - m) / sum);
    }
  }
  return Status::Ok();
}

}  // namespace attn::reference

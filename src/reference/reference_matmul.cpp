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
  // Each c(i, j) is one sum over p in ascending order, whichever loop runs innermost. A row-major
  // B is read row by row, for a block of kColumns sums at a time: reading it down its columns
  // (rows ldb floats apart) touched a new page on every step: under AddressSanitizer on a Zen 5
  // VM the test case of 9 x 29156 x 300 products took 1207 s that way, 40 s this way.
  constexpr std::size_t kColumns = 64;
  double sums[kColumns];
  for (std::size_t i = 0; i < c.rows; ++i) {
    for (std::size_t j0 = 0; j0 < c.cols; j0 += kColumns) {
      const std::size_t cols = c.cols - j0 < kColumns ? c.cols - j0 : kColumns;
      for (std::size_t j = 0; j < cols; ++j)
        sums[j] = -0.0;  // the additive identity: a sum of one product is that product, even -0
      if (tb == Transpose::no) {
        for (std::size_t p = 0; p < k; ++p) {
          const double a_ip = at(i, p);
          for (std::size_t j = 0; j < cols; ++j)
            sums[j] += a_ip * bt(p, j0 + j);
        }
      } else {
        for (std::size_t j = 0; j < cols; ++j)
          for (std::size_t p = 0; p < k; ++p)
            sums[j] += at(i, p) * bt(p, j0 + j);
      }
      for (std::size_t j = 0; j < cols; ++j) {
        double r = static_cast<double>(alpha) * sums[j];
        if (beta != 0.0f) r += static_cast<double>(beta) * static_cast<double>(c(i, j0 + j));
        c(i, j0 + j) = static_cast<float>(r);
      }
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

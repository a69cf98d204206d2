// Checks of a no-packing tile called directly (a GemmDirectKernel): two forms of it must write
// the same bits, and one must meet the contract, C = alpha A B + beta C + bias on m rows and n
// columns with nothing else written (beta == 0 never reading C, which the callers fill with NaN).
//
// Tolerance per element: (k + 2) u_f (|alpha| sum |a||b| + |beta c| + |bias|), u_f = FLT_EPSILON:
// k products and sums in float, the alpha and beta products, the bias add.
#pragma once

#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace attn_test {

inline std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Random operands in [-1, 1) for one call: A (m rows, row stride lda), B (k rows, row stride
// ldb), a bias of n values, and C before the call (c_rows x ldc), quiet NaN throughout where
// beta == 0 (which must never read it).
struct DirectOperands {
  std::vector<float> a, b, bias, c0;
  DirectOperands(std::size_t m, std::size_t n, std::size_t k, std::size_t lda, std::size_t ldb,
                 std::size_t ldc, std::size_t c_rows, float beta, std::mt19937& rng)
      : a(m * lda), b(k * ldb), bias(n), c0(c_rows * ldc) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::vector<float>* v : {&a, &b, &bias})
      for (float& x : *v)
        x = dist(rng);
    for (float& x : c0)
      x = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
  }
};

// One call's operands: A (m x k, row stride lda), B (k x n, row stride ldb), the bias (n values
// or null), and C before the call (c_rows x ldc, c_rows >= m, ldc >= n).
struct DirectTile {
  std::size_t m, n, k;
  float alpha, beta;
  const std::vector<float>& a;
  std::size_t lda;
  const std::vector<float>& b;
  std::size_t ldb;
  const float* bias;
  const std::vector<float>& c0;
  std::size_t ldc, c_rows;
};

// FAIL_CHECKs (at most 5 per call) where `first` and `second` differ in any bit, where `first`
// changed outside the tile, or where it misses the contract; returns the failures found.
inline std::size_t check_direct_tile(const DirectTile& t, const std::vector<float>& first,
                                     const std::vector<float>& second) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < t.c_rows; ++i) {
    for (std::size_t j = 0; j < t.ldc; ++j) {
      const std::size_t e = i * t.ldc + j;
      if (float_bits(first[e]) != float_bits(second[e]) && bad++ < 5) {
        FAIL_CHECK("c(" << i << ", " << j << "): " << first[e] << " and " << second[e]);
      }
      if (i >= t.m || j >= t.n) {
        if (float_bits(first[e]) != float_bits(t.c0[e]) && bad++ < 5)
          FAIL_CHECK("c(" << i << ", " << j << ") outside the tile changed");
        continue;
      }
      double want = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < t.k; ++p) {
        const double prod = double(t.a[i * t.lda + p]) * double(t.b[p * t.ldb + j]);
        want += prod;
        mag += std::fabs(prod);
      }
      want *= t.alpha;
      mag *= std::fabs(double(t.alpha));
      if (t.beta != 0.0f) {
        want += double(t.beta) * t.c0[e];
        mag += std::fabs(double(t.beta) * t.c0[e]);
      }
      if (t.bias) {
        want += t.bias[j];
        mag += std::fabs(double(t.bias[j]));
      }
      const double tol = double(t.k + 2) * FLT_EPSILON * mag + 1e-30;
      if (!(std::fabs(double(first[e]) - want) <= tol) && bad++ < 5) {
        FAIL_CHECK("c(" << i << ", " << j << ") = " << first[e] << ", reference " << want
                        << ", tolerance " << tol);
      }
    }
  }
  return bad;
}

}  // namespace attn_test

// exp and softmax against the float64 references on every ISA.
//
// exp: |y - e^x| <= 1 ulp(e^x), with
//   C's special values. The exhaustive check over all 2^32 inputs is tests/exp_exhaustive.cpp.
// softmax: |y - softmax64| <= 4 ulp + 1e-7 * max_j y_j. The 4 ULP are 1 (exp) + 1 (the sum,
//   accumulated in double) + 1.5 (the reciprocal and the product) + slack; the 1e-7 * max term
//   covers rounding of x - max (relative error u in the exponent, at most u/e of the row's max
//   output, 2.2e-8).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "support/test_support.hpp"

using attn_test::inf_f;
using attn_test::nan_f;
using attn_test::ulp_error;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void check_exp(attn::Context& ctx, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  REQUIRE(attn::exp(ctx, x.data(), y.data(), x.size()).ok());
  double worst = 0.0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], std::exp(static_cast<double>(x[i])));
    if (e > worst) {
      worst = e;
      worst_i = i;
    }
  }
  if (x.empty()) return;
  INFO("worst at x = " << x[worst_i] << " (" << worst << " ulp), y = " << y[worst_i]);
  CHECK(worst <= 1.0);
}

}  // namespace

TEST_CASE("exp is within 1 ULP on sampled inputs", "[exp]") {
  attn_test::Rng rng(3);
  std::vector<float> x;
  for (int i = 0; i < 200000; ++i)
    x.push_back(rng.uniform(-104.0f, 89.0f));
  for (int i = 0; i < 20000; ++i)
    x.push_back(rng.uniform(-1.0f, 1.0f));
  for (int i = 0; i < 20000; ++i)
    x.push_back(rng.uniform(-105.0f, -86.0f));  // subnormal results
  for (int i = 0; i < 20000; ++i)
    x.push_back(rng.uniform(87.0f, 89.0f));  // near overflow
  for (std::uint32_t b = 0; b < 1u << 20; b += 97)
    x.push_back(from_bits(b * 4096u + 7u));
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    check_exp(ctx, x);
    // Every length 0..40 and every offset, for the vector tails.
    for (std::size_t n = 0; n <= 40; ++n) {
      std::vector<float> xs(x.begin() + 1, x.begin() + 1 + n);
      check_exp(ctx, xs);
    }
  }
}

TEST_CASE("exp special values are C's", "[exp]") {
  const float xs[] = {-inf_f(), inf_f(), nan_f(),  0.0f,       -0.0f,        88.72283f,  88.72284f,
                      88.7229f, 89.0f,   1000.0f,  -87.33655f, -103.97208f,  -103.9721f, -104.0f,
                      -1000.0f, FLT_MIN, -FLT_MIN, 1e-30f,     FLT_TRUE_MIN, -FLT_MAX,   FLT_MAX};
  const std::size_t n = sizeof(xs) / sizeof(xs[0]);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    // Repeat to fill whole vectors as well as tails.
    std::vector<float> x;
    for (int r = 0; r < 20; ++r)
      x.insert(x.end(), xs, xs + n);
    std::vector<float> y(x.size());
    REQUIRE(attn::exp(ctx, x.data(), y.data(), x.size()).ok());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = std::exp(x[i]);
      INFO("x = " << x[i] << " got " << y[i] << " want " << want);
      if (std::isnan(want)) {
        CHECK(std::isnan(y[i]));
      } else if (std::isinf(want) || want == 0.0f) {
        CHECK(y[i] == want);
      } else {
        CHECK(ulp_error(y[i], std::exp(double(x[i]))) <= 1.0);
      }
    }
    // In place.
    REQUIRE(attn::exp(ctx, x.data(), x.data(), x.size()).ok());
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(((std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i]));
    }
  }
}

namespace {

void check_softmax(attn::Context& ctx, const std::vector<float>& x, std::size_t rows,
                   std::size_t cols, std::size_t stride, bool in_place) {
  std::vector<float> want(x.size()), y = in_place ? x : std::vector<float>(x.size(), 7.0f);
  const attn::MatrixView<const float> xv{x.data(), rows, cols, stride};
  REQUIRE(attn::reference::softmax(xv, {want.data(), rows, cols, stride}).ok());
  const attn::MatrixView<const float> src =
      in_place ? attn::MatrixView<const float>{y.data(), rows, cols, stride} : xv;
  REQUIRE(attn::softmax(ctx, src, {y.data(), rows, cols, stride}).ok());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    double row_max = 0.0;
    for (std::size_t j = 0; j < cols; ++j)
      row_max = std::fmax(row_max, want[i * stride + j]);
    for (std::size_t j = 0; j < cols; ++j) {
      const float got = y[i * stride + j];
      const double ref = want[i * stride + j];
      if (std::isnan(ref)) {
        if (!std::isnan(got) && bad++ < 5) FAIL_CHECK("expected NaN at " << i << ", " << j);
        continue;
      }
      const double tol =
          4.0 * std::ldexp(1.0, std::max(std::ilogb(std::fmax(ref, FLT_MIN)) - 23, -149)) +
          1e-7 * row_max;
      if (!(std::fabs(got - ref) <= tol) && bad++ < 5) {
        FAIL_CHECK("row " << i << " col " << j << ": " << got << " vs " << ref
                          << " (x = " << x[i * stride + j] << ")");
      }
    }
    for (std::size_t j = cols; j < stride && i + 1 < rows; ++j) {
      if (!in_place) CHECK(y[i * stride + j] == 7.0f);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("softmax matches the float64 softmax", "[softmax]") {
  attn_test::Rng rng(9);
  const std::size_t lengths[] = {1,  2,  3,  7,  8,   9,   15,  16,   17,  31,
                                 33, 63, 64, 65, 127, 128, 129, 1000, 4097};
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (float range : {1.0f, 30.0f, 1e4f}) {
      for (std::size_t n : lengths) {
        INFO("isa " << attn::isa_name(isa) << " n " << n << " range " << range);
        const std::size_t rows = 3, stride = n + 3;
        check_softmax(ctx, rng.uniform_vec(rows * stride, -range, range), rows, n, stride, false);
        check_softmax(ctx, rng.uniform_vec(rows * n, -range, range), rows, n, n, true);
      }
    }
    INFO("isa " << attn::isa_name(isa) << " n 65537");
    check_softmax(ctx, rng.uniform_vec(65537, -1.0f, 1.0f), 1, 65537, 65537, false);
    check_softmax(ctx, rng.uniform_vec(65537, -1e4f, 1e4f), 1, 65537, 65537, true);
  }
}

TEST_CASE("softmax rows of -inf become zeros, NaN and +inf make the row NaN", "[softmax]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    const std::size_t n = 37;
    std::vector<float> x(4 * n, -inf_f()), y(4 * n, 5.0f);
    for (std::size_t j = 0; j < n; ++j) {
      x[n + j] = static_cast<float>(j);  // row 1: ordinary
      x[2 * n + j] = static_cast<float>(j);
    }
    x[2 * n + 20] = nan_f();  // row 2: one NaN
    x[3 * n + 30] = nan_f();  // row 3: -inf and a NaN
    REQUIRE(attn::softmax(ctx, {x.data(), 4, n, n}, {y.data(), 4, n, n}).ok());
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(y[j] == 0.0f);
      sum += y[n + j];
      CHECK(std::isnan(y[2 * n + j]));
      CHECK(std::isnan(y[3 * n + j]));
    }
    CHECK(sum == Approx(1.0).epsilon(1e-6));
    std::vector<float> p = {1.0f, inf_f(), 2.0f}, q(3);
    REQUIRE(attn::softmax(ctx, {p.data(), 1, 3, 3}, {q.data(), 1, 3, 3}).ok());
    for (float v : q)
      CHECK(std::isnan(v));
  }
}

// Softmax's exponential e^(x - max) on its own: with max = 0, x - max is exact, so the 4 ulp
// bound holds without the 1e-7 * max term, down to the smallest results. Every ISA flushes
// results below 2^-126 (x < -87.33654f, the float next above ln 2^-126) to exactly 0: the SIMD
// kernels so that no product meets a subnormal probability, the scalar one to give the same zeros
// (a weight of 0 times an infinite v is NaN on every ISA, not inf on one).
TEST_CASE("softmax's exponential: 4 ulp down to 2^-126, then 0 on every ISA", "[softmax]") {
  std::vector<float> xs;
  for (std::uint32_t u = 0x80000000u; u <= 0xC2D00000u; u += 1021) {  // -0 to -104
    float x;
    std::memcpy(&x, &u, sizeof x);
    xs.push_back(x);
  }
  for (float x = -87.3366f; x <= -87.3364f; x = std::nextafter(x, 0.0f))
    xs.push_back(x);
  xs.push_back(-inf_f());
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    for (std::size_t cols : {16, 19}) {  // whole vectors, and a partial one
      const std::size_t per_row = cols - 1, rows = (xs.size() + per_row - 1) / per_row;
      std::vector<float> x(rows * cols, -inf_f()), y(rows * cols);
      for (std::size_t i = 0; i < xs.size(); ++i)
        x[i / per_row * cols + 1 + i % per_row] = xs[i];
      for (std::size_t r = 0; r < rows; ++r)
        x[r * cols] = 0.0f;  // the row max
      REQUIRE(attn::softmax(ctx, {x.data(), rows, cols, cols}, {y.data(), rows, cols, cols}).ok());
      std::size_t bad = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        double sum = 0.0;
        for (std::size_t j = 0; j < cols; ++j)
          sum += std::exp(static_cast<double>(x[r * cols + j]));
        for (std::size_t j = 1; j < cols; ++j) {
          const float xj = x[r * cols + j], got = y[r * cols + j];
          if (xj < -87.33654f) {
            if (got != 0.0f && bad++ < 5) FAIL_CHECK("x = " << xj << ": " << got);
            continue;
          }
          const double ref = std::exp(static_cast<double>(xj)) / sum;
          const double tol =
              4.0 * std::ldexp(1.0, std::max(std::ilogb(std::fmax(ref, FLT_MIN)) - 23, -149));
          if (!(std::fabs(got - ref) <= tol) && bad++ < 5)
            FAIL_CHECK("x = " << xj << ": " << got << " vs " << ref);
        }
      }
      CHECK(bad == 0);
    }
  }
}

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

// attn::reference::exp is float64 exp rounded once to float (include/attn/reference.hpp: "Each
// output is the double-precision result rounded once to float"): against long double's expl (an
// independent libm routine), within half an ulp of float plus what the double result can carry
// (glibc's exp is within 1 ulp of double, 2^-29 of a float ulp: 2^-20 allowed), with C's special
// values (include/attn/vmath.hpp, README "Accuracy"): exp(+-0) = 1, exp(-inf) = +0, exp(+inf) =
// +inf, NaN stays NaN, +inf above 88.72284, subnormal results down to -103.97, then +0. y may
// equal x (the same bits).
TEST_CASE("reference::exp is within half an ulp of expl and works in place", "[exp][reference]") {
  std::vector<float> x = {0.0f,      -0.0f,      1.0f,     -1.0f,      0.5f,         -0.5f,
                          88.72283f, 88.72284f,  88.7229f, 89.0f,      1000.0f,      FLT_MAX,
                          -87.3365f, -87.33655f, -100.0f,  -103.9720f, -103.9721f,   -104.0f,
                          -1000.0f,  -FLT_MAX,   FLT_MIN,  -FLT_MIN,   FLT_TRUE_MIN, -FLT_TRUE_MIN,
                          1e-30f,    inf_f(),    -inf_f(), nan_f(),    -nan_f()};
  attn_test::Rng rng(17);
  for (int i = 0; i < 4000; ++i)
    x.push_back(rng.uniform(-110.0f, 95.0f));
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65521)  // every sign and exponent
    x.push_back(from_bits(static_cast<std::uint32_t>(b)));
  const auto bits = [](float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  std::vector<float> y(x.size(), 7.0f);
  REQUIRE(attn::reference::exp(x.data(), y.data(), x.size()).ok());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = static_cast<double>(std::exp(static_cast<long double>(x[i])));
    const double err = attn_test::ulp_error(y[i], want);
    if (!(err <= 0.5 + std::ldexp(1.0, -20)) && bad++ < 5) {
      FAIL_CHECK("x = " << x[i] << ": " << y[i] << ", expl " << want << ", " << err << " ulp");
    }
  }
  CHECK(bad == 0);
  // The special values by name (x's first entries, by index).
  CHECK(bits(y[0]) == bits(1.0f));  // e^0
  CHECK(bits(y[1]) == bits(1.0f));  // e^-0
  CHECK(y[2] == static_cast<float>(2.718281828459045));
  CHECK(y[3] == static_cast<float>(0.36787944117144233));
  CHECK(std::isfinite(y[6]));  // e^88.72283: finite, near FLT_MAX
  CHECK(y[6] > 3.0e38f);
  for (std::size_t i : {7, 8, 9, 10, 11, 25})  // x >= 88.72284 and +inf: +inf
    CHECK(y[i] == inf_f());
  CHECK(std::fpclassify(y[14]) == FP_SUBNORMAL);  // e^-100
  CHECK(std::fpclassify(y[15]) == FP_SUBNORMAL);  // e^-103.972: the smallest nonzero results
  for (std::size_t i : {16, 17, 18, 19, 26}) {    // below -103.97 and -inf: +0, never -0
    CHECK(y[i] == 0.0f);
    CHECK_FALSE(std::signbit(y[i]));
  }
  CHECK(std::isnan(y[27]));
  CHECK(std::isnan(y[28]));
  // In place (y == x) gives the same bits.
  std::vector<float> z = x;
  REQUIRE(attn::reference::exp(z.data(), z.data(), z.size()).ok());
  bad = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const bool same = std::isnan(y[i]) ? std::isnan(z[i]) : bits(z[i]) == bits(y[i]);
    if (!same && bad++ < 5) FAIL_CHECK("in place, x = " << x[i] << ": " << z[i] << " vs " << y[i]);
  }
  CHECK(bad == 0);
  // n == 0 reads and writes nothing: null pointers are valid.
  CHECK(attn::reference::exp(nullptr, nullptr, 0).ok());
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

// A row holding a NaN is NaN, a row holding +inf is NaN (inf - inf), a row of only -inf is zeros,
// and ordinary rows beside them in the same call are what they are alone: the contract of
// attn::softmax (include/attn/vmath.hpp; README "Guarantees", NaN, inf and fully masked rows),
// which reference::softmax shares (include/attn/reference.hpp: the oracles). The reference's
// ordinary rows are bit-identical to a call without the special rows; every ISA (1, 2 and 3
// threads, out of place and in place) gives the same NaN and zero rows, and its other rows are
// within check_softmax's bound of the reference. 7 rows of 9,400 (65,800 elements, over the 65,536
// from which softmax splits the rows among the threads: the special rows fall to different
// threads).
TEST_CASE(
    "reference::softmax and softmax: NaN and +inf rows are NaN and -inf rows zeros beside "
    "ordinary rows",
    "[softmax][reference]") {
  const std::size_t rows = 7, cols = 9400, stride = 9403;
  attn_test::Rng rng(23);
  const std::vector<float> clean = rng.uniform_vec(rows * stride, -8.0f, 8.0f);
  std::vector<float> x = clean;
  x[1 * stride + 5] = nan_f();  // row 1: one NaN
  for (std::size_t j = 0; j < cols; ++j)
    x[2 * stride + j] = -inf_f();  // row 2: only -inf
  x[4 * stride + 11] = inf_f();    // row 4: one +inf
  for (std::size_t j = 0; j < cols; j += 3)
    x[5 * stride + j] = -inf_f();  // row 5: some -inf, an ordinary row
  x[6 * stride + 0] = -inf_f();    // row 6: a -inf and a NaN: NaN
  x[6 * stride + 36] = nan_f();
  const bool special[rows] = {false, true, true, false, true, false, true};
  const auto at = [&](std::vector<float>& v) {
    return attn::MatrixView<float>{v.data(), rows, cols, stride};
  };
  const auto cat = [&](const std::vector<float>& v) {
    return attn::MatrixView<const float>{v.data(), rows, cols, stride};
  };
  // The special rows must come out as NaN rows (1, 4, 6) and a zero row (2).
  const auto check_special_rows = [&](const std::vector<float>& y) {
    std::size_t bad = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const bool ok = std::isnan(y[1 * stride + j]) && y[2 * stride + j] == 0.0f &&
                      std::isnan(y[4 * stride + j]) && std::isnan(y[6 * stride + j]);
      if (!ok && bad++ < 5) FAIL_CHECK("column " << j << " of rows 1, 2, 4 or 6");
    }
    CHECK(bad == 0);
  };

  // The reference: each row alone is the same row with no special rows beside it.
  std::vector<float> want_clean(rows * stride, 7.0f), want(rows * stride, 7.0f);
  std::vector<float> clean_with_row5 = clean;
  for (std::size_t j = 0; j < cols; j += 3)
    clean_with_row5[5 * stride + j] = -inf_f();
  REQUIRE(attn::reference::softmax(cat(clean_with_row5), at(want_clean)).ok());
  REQUIRE(attn::reference::softmax(cat(x), at(want)).ok());
  check_special_rows(want);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < stride; ++j) {
      const std::size_t e = i * stride + j;
      // The padding between rows is not written; ordinary rows bit for bit (no NaN, no -0).
      const bool ok = j >= cols     ? want[e] == 7.0f
                      : !special[i] ? want[e] == want_clean[e] && std::isfinite(want[e])
                                    : true;
      if (!ok && bad++ < 5) FAIL_CHECK("reference (" << i << ", " << j << ") = " << want[e]);
    }
  }
  // In place gives the same.
  std::vector<float> in_place = x;
  REQUIRE(attn::reference::softmax(cat(in_place), at(in_place)).ok());
  for (std::size_t e = 0; e < x.size(); ++e) {
    const bool ok = e % stride >= cols || (std::isnan(want[e]) && std::isnan(in_place[e])) ||
                    want[e] == in_place[e];
    if (!ok && bad++ < 5) FAIL_CHECK("in place, element " << e << ": " << in_place[e]);
  }
  CHECK(bad == 0);

  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2, 3}) {
      INFO("isa " << attn::isa_name(isa) << ", " << threads << " threads");
      attn::Context ctx = attn_test::make_context(isa, threads);
      std::vector<float> y(rows * stride, 7.0f);
      REQUIRE(attn::softmax(ctx, cat(x), at(y)).ok());
      check_special_rows(y);
      std::vector<float> z = x;
      REQUIRE(attn::softmax(ctx, cat(z), at(z)).ok());
      check_special_rows(z);
      // The ordinary rows: within the bound of the reference (which check_softmax also asks of
      // the NaN rows; its bound for the zero row is a few subnormal ULP, checked exact above).
      check_softmax(ctx, x, rows, cols, stride, false);
      check_softmax(ctx, x, rows, cols, stride, true);
    }
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

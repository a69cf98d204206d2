// The fused attention's tile kernels called directly on every ISA (all_finite and attention_pv
// at the end). The online-softmax step (Kernels::attention_softmax): its exponentials e^(s - m)
// against float64 exp, to the bound documented beside expf_impl::ShiftedExp
// (src/vmath/vmath_kernels.hpp), which the attention tests' tolerance is too loose to check at that
// level (it allows errors of order (Dk + Lk) u).
//
// Bound per exponential, u = 2^-24, x = s - m (the row maximum): relative error
// <= u (2.5 |x| + 1.4); results whose exact value is below 2^-126 may be flushed to 0.
// Row sums l: the float sum of cols exponentials, so |l - sum of exact| <= sum of the
// exponentials' bounds + cols u l. Correction factors alpha on the second tile: e^(m_old - m_new)
// by exp_nonpositive_flush, 1 ULP after the rounding of the difference: u (|dm| + 1).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

namespace {

constexpr double kU = 0x1p-24;
constexpr double kMinNormal = 0x1p-126;

double exp_bound(double x, double exact) {
  return exact * kU * (2.5 * std::fabs(x) + 1.4) + (exact < kMinNormal * 1.0001 ? exact : 0.0);
}

}  // namespace

TEST_CASE("online softmax tile: exponentials, sums and corrections within their bounds",
          "[attention][softmax_tile]") {
  // 37 rows: two groups of 16 lanes and a partial one (AVX-512), 77 columns: whole vectors and a
  // partial one on every ISA; the row stride is wider than the row.
  constexpr std::size_t kRows = 37, kCols = 77, kLd = 80;
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    std::mt19937 rng(20261201u);
    // Distances below the maximum: dense near 0, where the polynomial's error dominates, and
    // out to the flush threshold (87.3) and past it.
    std::uniform_real_distribution<float> near(0.0f, 2.0f), far(0.0f, 95.0f), max_d(-60.0f, 60.0f);
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<float> s(kRows * kLd, 1e30f), s0, m(kRows, -INFINITY), l(kRows, 0.0f),
          alpha(kRows, -1.0f);
      std::vector<float> row_max(kRows);
      for (std::size_t r = 0; r < kRows; ++r) {
        row_max[r] = max_d(rng);
        for (std::size_t c = 0; c < kCols; ++c) {
          const float d = c % 3 == 2 ? far(rng) : near(rng);
          s[r * kLd + c] = c == r % kCols ? row_max[r] : row_max[r] - d;
        }
      }
      s0 = s;
      kern->attention_softmax(s.data(), kLd, kRows, kCols, m.data(), l.data(), alpha.data());
      for (std::size_t r = 0; r < kRows; ++r) {
        REQUIRE(m[r] == row_max[r]);
        CHECK(alpha[r] == 0.0f);  // nothing attended before
        double sum = 0.0, sum_bound = 0.0;
        for (std::size_t c = 0; c < kCols; ++c) {
          const double x = double(s0[r * kLd + c]) - double(m[r]);
          const double exact = std::exp(x), got = s[r * kLd + c];
          const double bound = exp_bound(x, exact);
          if (!(std::fabs(got - exact) <= bound)) {
            FAIL_CHECK("row " << r << " col " << c << ": e^" << x << " = " << got << ", exact "
                              << exact << ", error " << std::fabs(got - exact) / (exact * kU)
                              << " u, bound " << bound / (exact * kU) << " u");
          }
          sum += exact;
          sum_bound += bound;
        }
        for (std::size_t c = kCols; c < kLd; ++c)
          REQUIRE(s[r * kLd + c] == 1e30f);  // past the row: untouched
        CHECK(std::fabs(l[r] - sum) <= sum_bound + double(kCols) * kU * sum);
      }
      // A second tile whose maxima exceed the first's by up to 3: alpha = e^(m_old - m_new).
      std::vector<float> m_old = m, l_old = l, s2(kRows * kLd, 0.0f);
      for (std::size_t r = 0; r < kRows; ++r) {
        for (std::size_t c = 0; c < kCols; ++c)
          s2[r * kLd + c] = row_max[r] + (c == 0 ? 3.0f * near(rng) / 2.0f : -near(rng));
      }
      const std::vector<float> s2_0 = s2;
      kern->attention_softmax(s2.data(), kLd, kRows, kCols, m.data(), l.data(), alpha.data());
      for (std::size_t r = 0; r < kRows; ++r) {
        const double dm = double(m_old[r]) - double(m[r]);
        const double a_exact = std::exp(dm), a_bound = a_exact * kU * (std::fabs(dm) + 1.0);
        CHECK(std::fabs(alpha[r] - a_exact) <= a_bound);
        // l <- alpha l_old + the tile's sum: the exponentials' bounds, alpha's error times l_old,
        // and cols + 1 roundings of the sum.
        double sum = a_exact * double(l_old[r]), sum_bound = a_bound * double(l_old[r]);
        for (std::size_t c = 0; c < kCols; ++c) {
          const double x = double(s2_0[r * kLd + c]) - double(m[r]), exact = std::exp(x);
          sum += exact;
          sum_bound += exp_bound(x, exact);
        }
        CHECK(std::fabs(l[r] - sum) <= sum_bound + double(kCols + 1) * kU * sum);
      }
    }
  }
}

// Kernels::all_finite, which decides whether a cut key tile's V may meet a zero weight with
// 0 * inf: false exactly when some element of the rows x cols block is an infinity or a NaN,
// wherever it sits (whole vectors, the vector loop, the partial tail), never reading past a row.
TEST_CASE("all_finite: finds every non-finite element, reads nothing past the rows",
          "[attention][all_finite]") {
  constexpr std::size_t kLd = 150;
  const float specials[] = {attn_test::inf_f(), -attn_test::inf_f(), attn_test::nan_f(),
                            -attn_test::nan_f()};
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    std::mt19937 rng(20261201u);
    std::uniform_real_distribution<double> value(-3.4e38, 3.4e38);  // float's b - a would be inf
    // Widths: one element, a partial vector, 1-4 vectors (4 = one step of the unrolled loop),
    // more than 4 with a tail, a head dimension of 64 and of 80.
    for (std::size_t cols : {1, 3, 4, 8, 16, 17, 33, 64, 65, 80, 131}) {
      for (std::size_t rows : {1, 2, 5}) {
        INFO("rows " << rows << " cols " << cols);
        std::vector<float> x(rows * kLd);
        for (std::size_t i = 0; i < x.size(); ++i) {
          // Past each row: not finite, which must not be read.
          x[i] = i % kLd < cols ? static_cast<float>(value(rng)) : specials[i % 4];
        }
        x[0] = -0.0f;
        x[rows * kLd - kLd + cols - 1] = 3.4028235e38f;  // the largest finite float
        CHECK(kern->all_finite(x.data(), kLd, rows, cols));
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t c = 0; c < cols; ++c) {
            const float keep = x[r * kLd + c];
            x[r * kLd + c] = specials[(r + c) % 4];
            CHECK_FALSE(kern->all_finite(x.data(), kLd, rows, cols));
            x[r * kLd + c] = keep;
          }
        }
      }
    }
    // An empty block is all finite.
    const float nan = attn_test::nan_f();
    CHECK(kern->all_finite(&nan, 1, 0, 1));
    CHECK(kern->all_finite(&nan, 1, 1, 0));
  }
}

// Kernels::attention_pv: C[i, :] = sum_p P[i, p] V[p, 0:NR] + row_scale[i] C[i, :] for the first
// m rows (P's row stride the table's bk), and with row_scale == nullptr C = P V without reading C
// (a task's first key tile): C starts as NaN there, and rows past m stay as they were. Bound: a
// float sum of k products against the float64 one, gamma k u sum |P V| (gamma = 2), plus the
// scaled C's rounding.
TEST_CASE("attention_pv: P V plus the scaled tile, or P V alone without reading C",
          "[attention][pv]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    const std::size_t mr = kern->attention_mr, nr = kern->attention_nr;
    const std::size_t bk = kern->attention_tiling.bk, ldb = nr + 5, ldc = nr + 3;
    std::mt19937 rng(20261205u);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{7}, bk}) {
      for (std::size_t m = 1; m <= mr; ++m) {
        for (bool scaled : {false, true}) {
          INFO("k " << k << " m " << m << " scaled " << scaled);
          std::vector<float> p(mr * bk), v(std::max<std::size_t>(k, 1) * ldb), scale(mr);
          std::vector<float> c(mr * ldc, attn_test::nan_f());
          for (float& x : p)
            x = value(rng);
          for (float& x : v)
            x = value(rng);
          for (float& x : scale)
            x = value(rng);
          if (scaled) {
            for (float& x : c)
              x = value(rng);
          }
          const std::vector<float> before = c;
          kern->attention_pv(k, p.data(), v.data(), ldb, c.data(), ldc,
                             scaled ? scale.data() : nullptr, m);
          for (std::size_t i = 0; i < mr; ++i) {
            for (std::size_t j = 0; j < ldc; ++j) {
              const float got = c[i * ldc + j];
              if (i >= m || j >= nr) {  // not written
                CHECK(std::memcmp(&got, &before[i * ldc + j], sizeof got) == 0);
                continue;
              }
              const attn_test::SumAndMagnitude pv = attn_test::sum_and_magnitude(
                  k, [&](std::size_t q) { return double(p[i * bk + q]) * double(v[q * ldb + j]); });
              double sum = pv.sum, bound = 2.0 * double(k) * kU * pv.mag;
              if (scaled) {
                const double sc = double(scale[i]) * double(before[i * ldc + j]);
                sum += sc;
                bound += 2.0 * kU * (std::fabs(sc) + std::fabs(sum));
              }
              CHECK(std::fabs(double(got) - sum) <= bound);
            }
          }
        }
      }
    }
  }
}

// Kernels::gemm_store_t (GemmStoreTKernel in src/dispatch/kernels.hpp), called directly on every
// ISA that has it: C = alpha CT^T + beta C + bias on the first m rows and n columns of C, nothing
// else written, beta == 0 never reading C (it starts as NaN there). Sizes on both sides of the
// lanes x lanes blocks it transposes (1, a vector less one, a vector, one more, 2 vectors + 3, 37),
// row strides past the rows.
//
// Tolerance per element: 2 u_f (|alpha ct| + |beta c| + |bias|), u_f = FLT_EPSILON: the alpha
// and beta products and two sums (one rounding each where the ISA has no FMA).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

TEST_CASE("gemm_store_t writes C from the transposed product", "[matmul][kernel]") {
  attn_test::Rng rng(23);
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    if (kern->gemm_store_t == nullptr) continue;
    const std::size_t lanes = kern->gemm_direct_narrow_nr;
    const std::size_t sizes[] = {1, lanes - 1, lanes, lanes + 1, 2 * lanes + 3, 37};
    for (std::size_t m : sizes) {
      for (std::size_t n : sizes) {
        for (const float alpha : {1.0f, -0.5f}) {
          for (const float beta : {0.0f, 1.0f, -0.5f}) {
            for (const bool with_bias : {false, true}) {
              if (m == 0 || n == 0) continue;
              INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " alpha " << alpha
                          << " beta " << beta << " bias " << with_bias);
              const std::size_t ldct = m + 3, ldc = n + 2, rows_c = m + 2;
              const auto ct = rng.uniform_vec(n * ldct);
              const auto bias = rng.uniform_vec(n, 2.0f, 4.0f);
              auto c0 = rng.uniform_vec(rows_c * ldc);
              if (beta == 0.0f) {
                for (std::size_t i = 0; i < m; ++i)
                  for (std::size_t j = 0; j < n; ++j)
                    c0[i * ldc + j] = attn_test::nan_f();
              }
              auto c = c0;
              kern->gemm_store_t(ct.data(), ldct, c.data(), ldc, alpha, beta, m, n,
                                 with_bias ? bias.data() : nullptr);
              std::size_t bad = 0;
              for (std::size_t i = 0; i < rows_c; ++i) {
                for (std::size_t j = 0; j < ldc; ++j) {
                  const float got = c[i * ldc + j];
                  if (i >= m || j >= n) {  // outside the m x n block: untouched
                    if (!(got == c0[i * ldc + j]) && bad++ < 5) {
                      FAIL_CHECK("c(" << i << ", " << j << ") written outside the block");
                    }
                    continue;
                  }
                  const double t = double(alpha) * ct[j * ldct + i];
                  const double cb = beta == 0.0f ? 0.0 : double(beta) * c0[i * ldc + j];
                  const double b = with_bias ? double(bias[j]) : 0.0;
                  const double tol =
                      2.0 * FLT_EPSILON * (std::fabs(t) + std::fabs(cb) + std::fabs(b));
                  if (!(std::fabs(got - (t + cb + b)) <= tol) && bad++ < 5) {
                    FAIL_CHECK("c(" << i << ", " << j << ") = " << got << ", want " << t + cb + b);
                  }
                }
              }
              CHECK(bad == 0);
            }
          }
        }
      }
    }
  }
}

// The one-vector-wide no-packing tile's two forms (Kernels::gemm_direct_narrow, in pairs of k
// steps, and Kernels::gemm_direct_narrow_split, one broadcast per FMA), called directly: the
// driver takes one or the other by CPU (CpuInfo::narrow_tile_split), so each machine runs
// only one of them through matmul; here both run on every ISA that has both. They must write the
// same bits (each column is its even k steps' chain plus its odd steps' chain, in both; NaN
// payloads aside, where both are NaN), and each must meet GemmDirectKernel's contract:
// C = alpha A B + beta C + bias on m rows and n columns, nothing else written, beta == 0 never
// reading C.
// (Tolerance: support/direct_tile_check.hpp.)
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/direct_tile_check.hpp"
#include "support/kernel_tables.hpp"
#include "support/test_support.hpp"

namespace {

struct NarrowCase {
  std::size_t m, n, k;
  float alpha, beta;
  bool bias;
};

}  // namespace

TEST_CASE("the narrow no-packing tile's two forms write the same bits", "[matmul]") {
  // m 1-8 (6, AVX-512's split limit, and 7-8, which both forms take in pairs), n one lane, a
  // partial vector and a whole one, k odd (the pairs form's zero-padded last step) and even,
  // short and deep; alpha, beta and bias in combinations (beta 0 over NaN in C).
  std::vector<NarrowCase> cases;
  for (std::size_t m = 1; m <= 8; ++m) {
    for (std::size_t k : {1, 2, 3, 64, 65, 301}) {
      cases.push_back({m, 0, k, 1.0f, 0.0f, false});
      cases.push_back({m, 0, k, -0.5f, 1.0f, true});
      cases.push_back({m, 0, k, 2.0f, -0.5f, false});
    }
  }
  std::mt19937 rng(29);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_direct_narrow_split != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        const std::size_t lanes = kern->gemm_direct_narrow_nr;
        for (std::size_t n : {std::size_t{1}, lanes - 1, lanes}) {
          for (NarrowCase cs : cases) {
            cs.n = n;
            INFO("isa " << attn::isa_name(isa) << " m " << cs.m << " n " << cs.n << " k " << cs.k
                        << " alpha " << cs.alpha << " beta " << cs.beta << " bias " << cs.bias);
            // A with a row stride past k, B rows ldb = lanes + 3 apart, C with 4 columns past n and
            // one row below m (those must stay as they were).
            const std::size_t lda = cs.k + 5, ldb = lanes + 3, ldc = n + 4, c_rows = cs.m + 1;
            const attn_test::DirectOperands ops(cs.m, n, cs.k, lda, ldb, ldc, c_rows, cs.beta, rng);
            const std::vector<float>&a = ops.a, &b = ops.b, &c0 = ops.c0;
            std::vector<float> pairs = c0, split = c0;
            const float* bias_p = cs.bias ? ops.bias.data() : nullptr;
            kern->gemm_direct_narrow(cs.k, a.data(), lda, b.data(), ldb, pairs.data(), ldc,
                                     cs.alpha, cs.beta, cs.m, n, bias_p);
            kern->gemm_direct_narrow_split(cs.k, a.data(), lda, b.data(), ldb, split.data(), ldc,
                                           cs.alpha, cs.beta, cs.m, n, bias_p);
            const attn_test::DirectTile tile{cs.m, n,   cs.k,   cs.alpha, cs.beta, a,     lda,
                                             b,    ldb, bias_p, c0,       ldc,     c_rows};
            const std::size_t bad = attn_test::check_direct_tile(tile, pairs, split);
            CHECK(bad == 0);
          }
        }
      });
  // AVX-512 has both forms; elsewhere (or where the CPU lacks it) there is nothing to compare.
  if (!ran) WARN("no ISA on this CPU has the split narrow tile");
}

TEST_CASE("the narrow tile's two forms agree on infinities, NaN and signed zeros", "[matmul]") {
  // Special values in A and B: an infinite a[p] against a finite row, 0 x inf (NaN), a NaN, and
  // sums of -0 (a -0 result stays -0 in both: the pairs form pads an odd k with -0, never 0).
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    if (kern->gemm_direct_narrow_split == nullptr) continue;
    const std::size_t lanes = kern->gemm_direct_narrow_nr;
    for (std::size_t k : {1, 2, 5, 6}) {
      for (std::size_t m : {1, 6}) {
        INFO("isa " << attn::isa_name(isa) << " m " << m << " k " << k);
        const std::size_t lda = k, ldb = lanes, ldc = lanes;
        std::vector<float> a(m * lda, -0.0f), b(k * ldb, 0.0f), c0(m * ldc, 7.0f);
        a[0] = attn_test::inf_f();     // row 0: inf x b
        b[0 * ldb + 1] = -0.0f;        // inf x -0 = NaN in column 1
        b[0 * ldb + 2] = 1.0f;         // inf in column 2
        if (m > 1) a[1 * lda] = 1.0f;  // row 1: column 3 NaN, the rest +0 sums
        b[0 * ldb + 3] = attn_test::nan_f();
        std::vector<float> pairs = c0, split = c0;
        kern->gemm_direct_narrow(k, a.data(), lda, b.data(), ldb, pairs.data(), ldc, 1.0f, 0.0f, m,
                                 lanes, nullptr);
        kern->gemm_direct_narrow_split(k, a.data(), lda, b.data(), ldb, split.data(), ldc, 1.0f,
                                       0.0f, m, lanes, nullptr);
        for (std::size_t e = 0; e < pairs.size(); ++e) {
          const bool both_nan = std::isnan(pairs[e]) && std::isnan(split[e]);
          CHECK((both_nan || attn_test::float_bits(pairs[e]) == attn_test::float_bits(split[e])));
        }
        CHECK(std::isnan(pairs[1]));
        CHECK(pairs[2] == attn_test::inf_f());
        if (m > 1) {
          CHECK(std::isnan(pairs[1 * ldc + 3]));
          CHECK(attn_test::float_bits(pairs[1 * ldc + 4]) == attn_test::float_bits(0.0f));
          CHECK(attn_test::float_bits(pairs[2 * ldc + 4]) ==
                attn_test::float_bits(-0.0f));  // row 2: -0 x 0 throughout
        }
      }
    }
  }
}

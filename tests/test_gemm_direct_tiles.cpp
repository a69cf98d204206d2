// The no-packing tile over many whole tiles in one call (Kernels::gemm_direct_tiles, and the
// wider tiles of gemm_direct_tiles_l1 where the ISA has them), called directly beside gemm_direct
// called once per tile: the same sums in the same order, so the same
// bits, and GemmDirectKernel's contract on the whole m x n block (nothing else written, beta == 0
// never reading C), with B row-major in place and as packed panels. matmul runs it on whole tiles;
// here every write mode (its straight stores for alpha 1, beta 0 and no bias, and store_tile's
// otherwise) on several row blocks and panels.
// (Tolerance: support/direct_tile_check.hpp.)
#include <catch2/catch.hpp>
#include <cstddef>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/direct_tile_check.hpp"
#include "support/kernel_tables.hpp"
#include "support/test_support.hpp"

namespace {

struct TilesMode {
  float alpha, beta;
  bool bias;
};

}  // namespace

TEST_CASE("gemm_direct_tiles and gemm_direct_tiles_l1 write gemm_direct's bits, tile by tile",
          "[matmul]") {
  // 1 and 3 row blocks, 1-4 panels of gemm_direct_nr columns (2 and 4: one and two of AVX-512's
  // 64-column l1 tiles); k 1, an odd short one and deep; A, B and C with row strides past their
  // rows; beta 0 over NaN in C.
  const TilesMode modes[] = {{1.0f, 0.0f, false},
                             {1.0f, 1.0f, false},
                             {1.0f, 0.0f, true},
                             {-0.5f, 0.0f, false},
                             {2.0f, -0.5f, true}};
  std::mt19937 rng(37);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_direct_tiles != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        const std::size_t mr = kern->gemm_direct_mr, nr = kern->gemm_direct_nr;
        for (std::size_t blocks : {1, 3}) {
          for (std::size_t panels : {1, 2, 3, 4}) {
            for (std::size_t k : {1, 7, 130}) {
              for (const TilesMode& md : modes) {
                const std::size_t m = blocks * mr, n = panels * nr;
                INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k
                            << " alpha " << md.alpha << " beta " << md.beta << " bias " << md.bias);
                const std::size_t lda = k + 3, ldb = n + 5, ldc = n + 4, c_rows = m + 1;
                const attn_test::DirectOperands ops(m, n, k, lda, ldb, ldc, c_rows, md.beta, rng);
                const std::vector<float>&a = ops.a, &b = ops.b, &c0 = ops.c0;
                std::vector<float> tiles = c0, each = c0;
                const float* bias_p = md.bias ? ops.bias.data() : nullptr;
                kern->gemm_direct_tiles(k, a.data(), lda, b.data(), ldb, nr, tiles.data(), ldc,
                                        md.alpha, md.beta, m, n, bias_p);
                for (std::size_t i0 = 0; i0 < m; i0 += mr) {
                  for (std::size_t j0 = 0; j0 < n; j0 += nr) {
                    kern->gemm_direct(k, a.data() + i0 * lda, lda, b.data() + j0, ldb,
                                      each.data() + i0 * ldc + j0, ldc, md.alpha, md.beta, mr, nr,
                                      bias_p ? bias_p + j0 : nullptr);
                  }
                }
                const attn_test::DirectTile tile{m, n,   k,      md.alpha, md.beta, a,     lda,
                                                 b, ldb, bias_p, c0,       ldc,     c_rows};
                CHECK(attn_test::check_direct_tile(tile, tiles, each) == 0);
                // B's panels packed one after another (k x NR each, as gemm_direct_pack_b_cols lays
                // out a B^T): the same bits.
                std::vector<float> packed(panels * k * nr), from_panels = c0;
                for (std::size_t jp = 0; jp < panels; ++jp) {
                  for (std::size_t p = 0; p < k; ++p) {
                    for (std::size_t j = 0; j < nr; ++j)
                      packed[(jp * k + p) * nr + j] = b[p * ldb + jp * nr + j];
                  }
                }
                kern->gemm_direct_tiles(k, a.data(), lda, packed.data(), nr, k * nr,
                                        from_panels.data(), ldc, md.alpha, md.beta, m, n, bias_p);
                CHECK(attn_test::check_direct_tile(tile, from_panels, tiles) == 0);
                // The tiles for a B within L1 (AVX-512: 4 x 64, over pairs of panels) where they
                // take all of n: the same bits, from B in place and from the panels.
                if (kern->gemm_direct_tiles_l1 == nullptr) continue;
                REQUIRE(kern->gemm_direct_tiles_l1_nr % nr == 0);
                if (n % kern->gemm_direct_tiles_l1_nr != 0) continue;
                std::vector<float> l1_in_place = c0, l1_panels = c0;
                kern->gemm_direct_tiles_l1(k, a.data(), lda, b.data(), ldb, nr, l1_in_place.data(),
                                           ldc, md.alpha, md.beta, m, n, bias_p);
                kern->gemm_direct_tiles_l1(k, a.data(), lda, packed.data(), nr, k * nr,
                                           l1_panels.data(), ldc, md.alpha, md.beta, m, n, bias_p);
                CHECK(attn_test::check_direct_tile(tile, l1_in_place, tiles) == 0);
                CHECK(attn_test::check_direct_tile(tile, l1_panels, tiles) == 0);
              }
            }
          }
        }
      });
  // Every SIMD table has it; only a scalar-only run has nothing to compare.
  if (!ran) WARN("no ISA on this CPU has gemm_direct_tiles");
}

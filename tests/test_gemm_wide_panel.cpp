// The wide tile on a packed panel (Kernels::gemm_wide_panel: on AVX-512 the packed tile's
// assembly k loop with A's rows read in place, for whole 6 x 64 tiles), called directly: the
// driver takes it only where CpuInfo::l2_feeds_in_place_b is false (Intel), so other machines
// never run it through matmul. It must write the bits of the intrinsics tile on the same panel
// (Kernels::gemm_direct_wide: the same sums in the same order) and meet GemmDirectKernel's
// contract: C = alpha A B + beta C + bias on m rows and n columns, nothing else written,
// beta == 0 never reading C. Then the driver around it (GemmPath::wide_panels), forced.
// (Tolerance: support/direct_tile_check.hpp.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/direct_tile_check.hpp"
#include "support/kernel_tables.hpp"
#include "support/test_support.hpp"

namespace {

struct WideCase {
  float alpha, beta;
  bool bias;
};

}  // namespace

TEST_CASE("the wide tile on a packed panel writes the intrinsics tile's bits", "[matmul]") {
  // m: under one tile (1, 4), one (6), one and a remainder (7; 8: the 2-row tile), two (12), two
  // and one row (13);
  // n: the whole panel (64, the loop) and a partial one (36, the intrinsics only); k under, at
  // and past the loop's C-prefetch tail of 32 steps, with and without a whole group of 8 (13,
  // 32, 33, 41, 100, 300); the loop's write modes: alpha 1 with beta 0 (C set) or 1 (C added),
  // and through the sums (other alpha and beta, or a bias); beta 0 over NaN in C.
  const WideCase modes[] = {{1.0f, 0.0f, false},
                            {1.0f, 1.0f, false},
                            {1.0f, 0.0f, true},
                            {-0.5f, 2.0f, false},
                            {2.0f, -0.5f, true}};
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_wide_panel != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        REQUIRE(kern->gemm_direct_wide != nullptr);
        const std::size_t nr = kern->gemm_nr;
        for (std::size_t m : {1, 4, 6, 7, 8, 12, 13}) {
          for (std::size_t n : {nr * 9 / 16, nr}) {
            for (std::size_t k : {13, 32, 33, 41, 100, 300}) {
              for (const WideCase& cs : modes) {
                INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k
                            << " alpha " << cs.alpha << " beta " << cs.beta << " bias " << cs.bias);
                // A with a row stride past k; the panel's rows nr floats apart (ldb == nr, as
                // packed); C with 4 columns past n and one row below m (those must stay as they
                // were).
                const std::size_t lda = k + 5, ldc = n + 4, c_rows = m + 1;
                std::vector<float> a(m * lda), b(k * nr), bias(n), c0(c_rows * ldc);
                for (float& x : a)
                  x = dist(rng);
                for (std::size_t p = 0; p < k; ++p) {
                  for (std::size_t j = 0; j < nr; ++j)
                    b[p * nr + j] = j < n ? dist(rng) : 0.0f;  // a packed panel's zero padding
                }
                for (float& x : bias)
                  x = dist(rng);
                for (float& x : c0)
                  x = cs.beta == 0.0f ? attn_test::nan_f() : dist(rng);
                std::vector<float> panel = c0, direct = c0;
                const float* bias_p = cs.bias ? bias.data() : nullptr;
                kern->gemm_wide_panel(k, a.data(), lda, b.data(), nr, panel.data(), ldc, cs.alpha,
                                      cs.beta, m, n, bias_p);
                kern->gemm_direct_wide(k, a.data(), lda, b.data(), nr, direct.data(), ldc, cs.alpha,
                                       cs.beta, m, n, bias_p);
                const attn_test::DirectTile tile{m, n,  k,      cs.alpha, cs.beta, a,     lda,
                                                 b, nr, bias_p, c0,       ldc,     c_rows};
                const std::size_t bad = attn_test::check_direct_tile(tile, panel, direct);
                CHECK(bad == 0);
              }
            }
          }
        }
      });
  // AVX-512 has the loop; elsewhere (or where the CPU lacks it) there is nothing to compare.
  if (!ran) WARN("no ISA on this CPU has the wide panel tile");
}

TEST_CASE("GemmPath::wide_panels forced on every CPU whose ISA has its tile", "[matmul][gemm]") {
  // The driver around that tile (gemm_wide_panels in matmul/gemm.cpp: op(B) packed into NR-wide
  // panels by the threads, a barrier, then each thread's block of MR_wide-row groups against every
  // panel) runs through matmul only where CpuInfo::l2_feeds_in_place_b is false (Intel), so
  // test_matmul's wide-panel cases take other paths elsewhere. Here gemm_on_path runs it on every
  // CPU whose ISA has the tile: A row-major (the path reads its rows in place), B and B^T (both
  // packing routines); m under one group of rows (1, 5), one (6), groups and a partial one (133);
  // n under a panel (1, 63), one (64), panels and a partial one (65, 200); k 1, 13 (under the
  // loop's tail), 100 and 520 (groups of 8 steps); alpha 1 with beta 0 over a NaN C (never read),
  // or -0.5 with beta 2 and a bias; C's padding columns unwritten. Threads 1, 2 and 3 (under an
  // emulator 1 and 2) bit-identical, and within support/direct_tile_check.hpp's bound (on op(B)
  // copied row-major); the 2 MFLOP below which the driver runs one thread leaves 133 x 200 x 100
  // and 133 x 200 x 520 on several.
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_wide_panel != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        constexpr std::size_t kPad = 3;  // floats past each row of A, B and C
        for (std::size_t m : {1, 5, 6, 133}) {
          for (std::size_t n : {1, 63, 64, 65, 200}) {
            for (std::size_t k : {1, 13, 100, 520}) {
              for (bool bt : {false, true}) {
                const bool plain = (m + n + k) % 2 == 0;
                const float alpha = plain ? 1.0f : -0.5f, beta = plain ? 0.0f : 2.0f;
                INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k
                            << " B^T " << bt << " alpha " << alpha << " beta " << beta);
                attn_test::Rng rng(static_cast<std::uint32_t>(m * 7 + n * 3 + k));
                const std::size_t lda = k + kPad, ldb = (bt ? k : n) + kPad, ldc = n + kPad;
                const auto a = rng.uniform_vec(m * lda), b = rng.uniform_vec((bt ? n : k) * ldb),
                           bias = rng.uniform_vec(n);
                auto c0 = rng.uniform_vec(m * ldc);
                if (plain) std::fill(c0.begin(), c0.end(), attn_test::nan_f());
                std::vector<float> op_b(k * n);  // op(B) row-major, for the check
                for (std::size_t p = 0; p < k; ++p) {
                  for (std::size_t j = 0; j < n; ++j)
                    op_b[p * n + j] = bt ? b[j * ldb + p] : b[p * ldb + j];
                }
                const attn::detail::GemmOperand ga{a.data(), lda, 1},
                    gb = bt ? attn::detail::GemmOperand{b.data(), 1, ldb}
                            : attn::detail::GemmOperand{b.data(), ldb, 1};
                const float* bias_p = plain ? nullptr : bias.data();
                std::vector<float> first;
                for (int threads : {1, 2, 3}) {
                  if (threads == 3 && attn_test::emulated()) break;
                  INFO("threads " << threads);
                  attn_test::AlignedScratch scratch(attn::detail::gemm_path_scratch_bytes(
                      *kern, attn::detail::GemmPath::wide_panels, threads, {m, n, k}, ga, gb));
                  void* at = scratch.get();
                  auto c = c0;
                  attn::detail::gemm_on_path(*kern, attn::detail::GemmPath::wide_panels, threads,
                                             {m, n, k}, alpha, ga, gb, beta, c.data(), ldc, at,
                                             bias_p);
                  if (first.empty()) first = c;
                  const attn_test::DirectTile tile{m,    n, k,      alpha, beta, a, lda,
                                                   op_b, n, bias_p, c0,    ldc,  m};
                  CHECK(attn_test::check_direct_tile(tile, first, c) == 0);
                }
              }
            }
          }
        }
      });
  if (!ran) WARN("no ISA on this CPU has the wide panel tile");
}

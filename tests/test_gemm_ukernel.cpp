// Every ISA's packed GEMM micro-kernel (Kernels::gemm_ukernel) against its contract
// (GemmUkernel in src/dispatch/kernels.hpp), called directly: C = alpha A B + beta C + bias on the
// first m <= MR rows and n <= NR columns, nothing else written, beta == 0 never reads C, for every
// way the k loop can split (AVX-512's assembly loop, gemm_loop_6x64_avx512.hpp: groups of 8
// steps, 0-7 single steps, the 32-step tail after the C prefetch) and every kind of L2Prefetch
// hint (none, fewer lines than groups, as many, more: the excess first), and the ways a tile
// reaches C (AVX-512 writes a whole tile with alpha 1 and no bias from the registers, C = AB with
// beta 0 and C + AB with beta 1; any other through store_tile). The FMA ISAs (AVX2,
// AVX-512, NEON) run the same fused multiply-adds in the same order per element, so their tiles
// agree bit for bit on the rows and columns they share.
//
// Tolerance per element: (k + 2) u_f (|alpha| sum |a||b| + |beta c| + |bias|), u_f = FLT_EPSILON:
// k products and sums in float, the alpha and beta products, the bias add.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

namespace {

using attn::detail::Kernels;
using attn::detail::L2Prefetch;

struct Tile {
  std::size_t k, m, n;
  float alpha, beta;
  bool bias;
  std::size_t hint_lines;  // 0: no hint
};

constexpr std::size_t kPad = 5;  // columns past NR in each row of the C buffer, and rows below

// Runs one tile; returns C (the whole (MR + kPad) x ldc buffer) and checks it.
std::vector<float> run_tile(const Kernels& kern, const Tile& t, const std::vector<float>& a_vals,
                            const std::vector<float>& b_vals, const std::vector<float>& bias,
                            const std::vector<float>& c0, const std::vector<float>& hint_target) {
  const std::size_t mr = kern.gemm_mr, nr = kern.gemm_nr, copies = kern.gemm_a_copies;
  const std::size_t ldc = nr + kPad;
  // Packed panels: a[(p MR + i) copies + c] = A(i, p) for every copy c; b[p NR + j] = B(p, j).
  std::vector<float> a(mr * copies * t.k + 16), b(nr * t.k + 16);
  for (std::size_t p = 0; p < t.k; ++p) {
    for (std::size_t i = 0; i < mr; ++i) {
      for (std::size_t c = 0; c < copies; ++c)
        a[(p * mr + i) * copies + c] = a_vals[p * mr + i];
    }
    for (std::size_t j = 0; j < nr; ++j)
      b[p * nr + j] = b_vals[p * nr + j];
  }
  std::vector<float> c = c0;
  const L2Prefetch hint =
      t.hint_lines == 0 ? L2Prefetch{} : L2Prefetch{hint_target.data(), t.hint_lines};
  kern.gemm_ukernel(t.k, a.data(), b.data(), c.data(), ldc, t.alpha, t.beta, t.m, t.n,
                    t.bias ? bias.data() : nullptr, hint);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < mr + kPad; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j], before = c0[i * ldc + j];
      if (i >= t.m || j >= t.n) {  // outside the tile: untouched (NaN stays NaN)
        if (!(got == before || (std::isnan(got) && std::isnan(before))) && bad++ < 5)
          FAIL_CHECK("c(" << i << ", " << j << ") outside the tile changed to " << got);
        continue;
      }
      double want = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < t.k; ++p) {
        want += double(a_vals[p * mr + i]) * double(b_vals[p * nr + j]);
        mag += std::fabs(double(a_vals[p * mr + i]) * double(b_vals[p * nr + j]));
      }
      want *= t.alpha;
      mag *= std::fabs(double(t.alpha));
      if (t.beta != 0.0f) {
        want += double(t.beta) * before;
        mag += std::fabs(double(t.beta) * before);
      }
      if (t.bias) {
        want += bias[j];
        mag += std::fabs(double(bias[j]));
      }
      const double tol = double(t.k + 2) * FLT_EPSILON * mag + 1e-30;
      if (!(std::fabs(double(got) - want) <= tol) && bad++ < 5)
        FAIL_CHECK("c(" << i << ", " << j << ") = " << got << ", reference " << want
                        << ", tolerance " << tol);
    }
  }
  CHECK(bad == 0);
  return c;
}

}  // namespace

TEST_CASE("the GEMM micro-kernel meets its contract on every k split and hint", "[matmul]") {
  // k: 0; tails only (1, 31, 32); one step past the tail (33); groups of 8 with 0-7 single steps
  // after them (40, 41, 47, 71, 100); many groups (263, 512: a KC block).
  const std::size_t ks[] = {0, 1, 31, 32, 33, 40, 41, 47, 71, 100, 263, 512};
  struct Ref {
    attn::Isa isa;
    std::size_t mr, nr;
    std::vector<float> c;
  };
  for (const std::size_t k : ks) {
    const std::size_t groups = k > 32 ? (k - 32) / L2Prefetch::kSteps : 0;
    const std::size_t lines[] = {0, 1, groups, groups + 7, 3 * groups + 2, groups};
    for (int variant = 0; variant < 6; ++variant) {
      attn_test::Rng rng(static_cast<std::uint32_t>(k * 10 + variant));
      // Values for the largest tile of any ISA (14 x 64), the same for every ISA.
      const auto a_vals = rng.uniform_vec(14 * k + 1), b_vals = rng.uniform_vec(64 * k + 1),
                 bias = rng.uniform_vec(64 + kPad, 2.0f, 4.0f);
      const std::vector<float> hint_target((3 * groups + 2) * 16 + 16, 1.0f);
      std::vector<Ref> fma_tiles;  // full tiles, alpha 1, beta 0, no bias, per FMA ISA
      for (attn::Isa isa : attn_test::test_isas()) {
        const Kernels* kern = attn::detail::kernels_for(isa);
        REQUIRE(kern != nullptr);
        const std::size_t mr = kern->gemm_mr, nr = kern->gemm_nr;
        const std::size_t ldc = nr + kPad;
        // Repack the shared values at this ISA's tile: A(i, p) = a_vals[p * 14 + i] and B(p, j)
        // = b_vals[p * 64 + j], so every ISA multiplies the same numbers.
        std::vector<float> av(mr * k + 1), bv(nr * k + 1);
        for (std::size_t p = 0; p < k; ++p) {
          for (std::size_t i = 0; i < mr; ++i)
            av[p * mr + i] = a_vals[p * 14 + i];
          for (std::size_t j = 0; j < nr; ++j)
            bv[p * nr + j] = b_vals[p * 64 + j];
        }
        // Variant: the tile's rows and columns, alpha, beta, bias, hint. 0: a whole tile set
        // (AVX-512: kLoopSetC); 5: a whole tile added to C (kLoopAddC); the others through
        // store_tile (alpha != 1, a bias, or part of a tile).
        const Tile variants[] = {
            {k, mr, nr, 1.0f, 0.0f, false, lines[0]},
            {k, mr, nr, -0.5f, 1.0f, true, lines[1]},
            {k, 1, nr - 1, 1.0f, -0.5f, false, lines[2]},
            {k, mr - 1, 1, 2.0f, 0.0f, true, lines[3]},
            {k, mr, nr / 2 + 1, 0.0f, 1.0f, false, lines[4]},
            {k, mr, nr, 1.0f, 1.0f, false, lines[5]},
        };
        const Tile& t = variants[variant];
        INFO("isa " << attn::isa_name(isa) << " k " << k << " m " << t.m << " n " << t.n
                    << " alpha " << t.alpha << " beta " << t.beta << " bias " << t.bias
                    << " hint lines " << t.hint_lines << " (groups " << groups << ")");
        std::vector<float> c0 = rng.uniform_vec((mr + kPad) * ldc);
        if (t.beta == 0.0f) {  // never read: NaN in the tile must not reach the result
          for (std::size_t i = 0; i < t.m; ++i)
            for (std::size_t j = 0; j < t.n; ++j)
              c0[i * ldc + j] = attn_test::nan_f();
        }
        const auto c = run_tile(*kern, t, av, bv, bias, c0, hint_target);
        if (variant == 0 && isa != attn::Isa::scalar && isa != attn::Isa::sse2) {
          std::vector<float> tile(mr * nr);
          for (std::size_t i = 0; i < mr; ++i)
            std::memcpy(tile.data() + i * nr, c.data() + i * ldc, nr * sizeof(float));
          fma_tiles.push_back({isa, mr, nr, tile});
        }
      }
      for (std::size_t x = 1; x < fma_tiles.size(); ++x) {
        const Ref &p = fma_tiles[0], &q = fma_tiles[x];
        INFO("k " << k << ": " << attn::isa_name(p.isa) << " against " << attn::isa_name(q.isa));
        // The rows and columns both tiles have (the same A and B values there).
        const std::size_t rows = std::min(p.mr, q.mr), cols = std::min(p.nr, q.nr);
        for (std::size_t i = 0; i < rows; ++i)
          CHECK(std::memcmp(p.c.data() + i * p.nr, q.c.data() + i * q.nr, cols * sizeof(float)) ==
                0);
      }
    }
  }
}

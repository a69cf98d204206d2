// The GEMM driver's bias (detail::gemm's last argument, which self_attention's projections use):
// C = alpha A B + beta C + bias, the bias added exactly once whichever path serves the shape and
// however many k passes or chunks it takes (the packed path's KC passes, the no-packing wide
// tile's k chunks on AVX-512: wide_k_chunk in src/matmul/gemm.cpp). The public matmul has no
// bias, and self_attention's tolerance at these sizes is too loose to see a bias dropped.
//
// Tolerance per element: (k + 2) u_f (|alpha| sum |a||b| + |beta c| + |bias|), u_f = FLT_EPSILON:
// k products and sums in float, the alpha and beta products, the bias add.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/test_support.hpp"

namespace {

struct BiasCase {
  std::size_t m, n, k;
  float alpha, beta;
  bool trans_b = false;    // op(B) = B^T, B stored n x k
  std::size_t b_past = 0;  // B starts this many floats past a 64-byte line
};

}  // namespace

TEST_CASE("gemm adds the bias once on every path", "[matmul][bias]") {
  // 67 x 64 x 300: AVX-512's wide tile in k chunks (193 = 128 + 65 too); 70 x 100 x 300: the
  // no-packing path, or B packed (AVX-512: into the wide tile's panels), by CPU;
  // 70 x 130 x 1100: k > 1024 is packed, in KC passes; 5 x 16 x 64: one no-packing tile (the
  // seed's shape); 9 x 2100 x 300: few rows against a large B read in place, its rows
  // prefetched (GemmPath::prefetched, 2 chunks of k: the bias goes in once); 1 x 3000 x 9 and
  // 4 x 100 x 70 (one column block) and 4 x 2100 x 270 (two; 3 threads split its columns): B
  // read row after row (GemmPath::rows), and 6 x 2100 x 150 (B over half of L2: on AVX2 the rows
  // path, 6 rows on one thread, 2 on each of three; GemmPath::prefetched elsewhere); the last
  // five with B^T: rows of B^T as dot products (GemmPath::rows; at 4 x 2100 x 137 on 3 threads,
  // and 7 x 2100 x 150, over half of L2),
  // 70 x 130 x 300 packed, and 9 x 2100 x 300 packed one sliver at a time (GemmPath::streamed;
  // 3 KC passes on SSE2, 2 on AVX2); 32 x 2100 x 300 and 64 x 2101 x 150 computed as C^T and
  // written to C by Kernels::gemm_store_t (GemmPath::c_transposed where B^T, 2.5 and 1.3 MB, is
  // over half of L2: the first under qemu's 4 MiB too); 9 x 2112 x 260 with B 16 bytes past a
  // line, its rows 132 vectors of 16 floats apart: GemmPath::prefetched's first panel is then
  // narrower on AVX2 and AVX-512 (gemm_prefetched_first_panel), and each later panel's bias
  // starts at its own column.
  const BiasCase cases[] = {
      {67, 64, 300, 1.0f, 0.0f},         {64, 64, 193, -0.5f, 1.0f},
      {70, 100, 300, 1.0f, 0.5f},        {70, 130, 1100, 1.0f, 0.0f},
      {5, 16, 64, 2.0f, 0.0f},           {9, 2100, 300, -0.5f, 1.0f},
      {1, 3000, 9, 1.0f, 0.0f},          {4, 100, 70, -0.5f, 1.0f},
      {4, 2100, 270, 1.0f, 0.0f},        {6, 2100, 150, 1.0f, 0.5f},
      {2, 100, 70, 1.0f, 0.0f, true},    {4, 2100, 137, -0.5f, 1.0f, true},
      {70, 130, 300, 1.0f, 0.5f, true},  {9, 2100, 300, -0.5f, 1.0f, true},
      {7, 2100, 150, 1.0f, 0.5f, true},  {32, 2100, 300, -0.5f, 1.0f, true},
      {64, 2101, 150, 1.0f, 0.0f, true}, {9, 2112, 260, -0.5f, 1.0f, false, 4},
  };

  for (const BiasCase& cs : cases) {
    attn_test::Rng rng(static_cast<std::uint32_t>(cs.m * 7 + cs.k));
    const auto a = rng.uniform_vec(cs.m * cs.k), b = rng.uniform_vec(cs.k * cs.n),
               bias = rng.uniform_vec(cs.n, 4.0f, 8.0f);
    auto c0 = rng.uniform_vec(cs.m * cs.n);
    if (cs.beta == 0.0f) c0.assign(c0.size(), attn_test::nan_f());  // never read
    std::vector<float> b_store(b.size() + 32);
    float* const bp = attn_test::line_start(b_store, cs.b_past);
    std::copy(b.begin(), b.end(), bp);
    // Each element's value and tolerance, once for every ISA and thread count; B read in its
    // memory order (each sum still over p in ascending order).
    std::vector<double> want(cs.m * cs.n), tol(cs.m * cs.n);
    std::vector<double> sum(cs.n), mag(cs.n);
    for (std::size_t i = 0; i < cs.m; ++i) {
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      const auto add = [&](std::size_t j, std::size_t p, float bpj) {
        const double prod = double(a[i * cs.k + p]) * double(bpj);
        sum[j] += prod;
        mag[j] += std::fabs(prod);
      };
      if (cs.trans_b) {
        for (std::size_t j = 0; j < cs.n; ++j) {
          for (std::size_t p = 0; p < cs.k; ++p)
            add(j, p, b[j * cs.k + p]);
        }
      } else {
        for (std::size_t p = 0; p < cs.k; ++p) {
          for (std::size_t j = 0; j < cs.n; ++j)
            add(j, p, b[p * cs.n + j]);
        }
      }
      for (std::size_t j = 0; j < cs.n; ++j) {
        const double cij = cs.beta == 0.0f ? 0.0 : double(cs.beta) * c0[i * cs.n + j];
        want[i * cs.n + j] = double(cs.alpha) * sum[j] + cij + bias[j];
        tol[i * cs.n + j] = double(cs.k + 2) * FLT_EPSILON *
                            (std::fabs(double(cs.alpha)) * mag[j] + std::fabs(cij) + bias[j]);
      }
    }
    for (attn::Isa isa : attn_test::test_isas()) {
      const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
      REQUIRE(kern != nullptr);
      for (int threads : {1, 3}) {
        INFO("isa " << attn::isa_name(isa) << " threads " << threads << " m " << cs.m << " n "
                    << cs.n << " k " << cs.k << " alpha " << cs.alpha << " beta " << cs.beta
                    << " B^T " << cs.trans_b);
        auto c = c0;
        const attn::detail::GemmShape shape{cs.m, cs.n, cs.k};
        const attn::detail::GemmOperand ga{a.data(), cs.k, 1};
        const attn::detail::GemmOperand gb = cs.trans_b ? attn::detail::GemmOperand{bp, 1, cs.k}
                                                        : attn::detail::GemmOperand{bp, cs.n, 1};
        const std::size_t bytes = attn::detail::gemm_scratch_bytes(*kern, threads, shape, ga, gb);
        void* scratch = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
        REQUIRE(scratch != nullptr);
        attn::detail::gemm(*kern, threads, shape, cs.alpha, ga, gb, cs.beta, c.data(), cs.n,
                           scratch, bias.data());
        std::free(scratch);
        std::size_t bad = 0;
        for (std::size_t e = 0; e < cs.m * cs.n; ++e) {
          const double err = std::fabs(double(c[e]) - want[e]);
          if (!(err <= tol[e]) && bad++ < 5) {
            FAIL_CHECK("c(" << e / cs.n << ", " << e % cs.n << ") = " << c[e] << ", want "
                            << want[e] << ", tolerance " << tol[e]);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

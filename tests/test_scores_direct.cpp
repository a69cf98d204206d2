// Decoding's scores kernel (Kernels::attention_scores_direct), called directly: its prefetch
// hints (DirectPrefetch: K rows ahead, V rows for P * V) never change a score, so every ISA writes
// the same bits with no hint, with the K hint alone, with both, with both at another K distance
// and with both into L2 (the driver drops the V hint by CpuInfo::decode_prefetch_v, the thread
// count and decode_prefetch_v_one_thread_min_rows, sets the distance from decode_k_ahead_bytes
// and L2 by decode_prefetch_l2 and the size of K and V, so a machine's attention tests run a few
// forms), and each score is scale times the dot product of a query row and a key row.
// Tolerance: dk + 1 roundings (dk products and sums in float, the scale) of scale * sum |q||k|.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("decoding's scores kernel writes the same bits with and without its prefetch hints",
          "[attention]") {
  // 1 to 4 query rows (kDirectRows), and 5, 7, 9 and 16 (attention takes up to 16 rows per KV head
  // in place: four at a time, the first four prefetching); keys not a multiple of any tile (1, 37)
  // and many (300, with the K hint running past the tile): whole groups of keys and a partial last
  // one; dk a partial vector (5), whole vectors (64), 128 + 3, and 20 and 83 (on 16 and 8 lanes,
  // one key row's chunks of 4 vectors, then single vectors, then a partial one), and 0 with q and k
  // null (kernels.hpp allows it; attention itself passes an empty K packed); row strides past the
  // rows; V rows of 16 and 130 floats.
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    for (std::size_t rows : {1, 2, 3, 4, 5, 7, 9, 16}) {
      for (std::size_t keys : {1, 37, 300}) {
        for (std::size_t dk : {0, 5, 20, 64, 83, 131}) {
          for (std::size_t dv : {16, 130}) {
            INFO("isa " << attn::isa_name(isa) << " rows " << rows << " keys " << keys << " dk "
                        << dk << " dv " << dv);
            const std::size_t ldq = dk + 2, ldk = dk + 3, ldv = dv + 1, lds = keys + 4;
            std::vector<float> q(rows * ldq), k(keys * ldk), v(keys * ldv);
            for (std::vector<float>* x : {&q, &k, &v})
              for (float& e : *x)
                e = dist(rng);
            const float scale = 0.125f;
            attn::detail::DirectPrefetch k_only;
            k_only.k_rows = keys;
            attn::detail::DirectPrefetch both = k_only;
            both.v = v.data();
            both.ldv = ldv;
            both.v_bytes = dv * sizeof(float);
            attn::detail::DirectPrefetch near = both;
            near.k_ahead_bytes = 64;  // the next key row or two
            attn::detail::DirectPrefetch to_l2 = both;
            to_l2.to_l2 = true;
            const attn::detail::DirectPrefetch hints[] = {attn::detail::DirectPrefetch{}, k_only,
                                                          both, near, to_l2};
            constexpr int kHints = 5;
            std::vector<float> out[kHints];
            for (int h = 0; h < kHints; ++h) {
              out[h].assign(rows * lds, -7.0f);
              kern->attention_scores_direct(dk ? q.data() : nullptr, ldq, rows,
                                            dk ? k.data() : nullptr, ldk, keys, dk, scale,
                                            out[h].data(), lds, hints[h]);
            }
            std::size_t bad = 0;
            for (std::size_t r = 0; r < rows; ++r) {
              for (std::size_t j = 0; j < lds; ++j) {
                const std::size_t e = r * lds + j;
                for (int h = 1; h < kHints; ++h) {
                  if (bits(out[h][e]) != bits(out[0][e]) && bad++ < 5)
                    FAIL_CHECK("s(" << r << ", " << j << ") differs with hint " << h);
                }
                if (j >= keys) {
                  if (out[0][e] != -7.0f && bad++ < 5)
                    FAIL_CHECK("s(" << r << ", " << j << ") past the keys written");
                  continue;
                }
                const attn_test::SumAndMagnitude dot = attn_test::sum_and_magnitude(
                    dk,
                    [&](std::size_t x) { return double(q[r * ldq + x]) * double(k[j * ldk + x]); });
                const double want = dot.sum * scale, mag = dot.mag * scale;
                const double tol = double(dk + 1) * FLT_EPSILON * mag + 1e-30;
                if (!(std::fabs(double(out[0][e]) - want) <= tol) && bad++ < 5) {
                  FAIL_CHECK("s(" << r << ", " << j << ") = " << out[0][e] << ", reference " << want
                                  << ", tolerance " << tol);
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

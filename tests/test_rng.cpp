// The tests' random inputs (support/test_support.hpp): Rng::uniform computes what
// std::uniform_real_distribution<float> does on the same engine, so every case's data is the
// standard library's, whichever compiler built the tests.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>

#include "support/test_support.hpp"

TEST_CASE("Rng::uniform draws std::uniform_real_distribution's floats, bit for bit", "[support]") {
  const float ranges[][2] = {{-1.0f, 1.0f},   {4.0f, 8.0f},      {0.0f, 1.0f}, {-3.0f, 5.0f},
                             {-1e-3f, 2e-3f}, {-100.0f, 100.0f}, {0.0f, 95.0f}};
  for (std::uint32_t seed : {1u, 22u, 83u}) {
    attn_test::Rng rng(seed);
    std::mt19937 gen(seed);
    std::size_t differ = 0;
    for (std::size_t n = 0; n < 200000; ++n) {
      const float* r = ranges[n % 7];
      const float want = std::uniform_real_distribution<float>(r[0], r[1])(gen);
      const float got = rng.uniform(r[0], r[1]);
      differ += std::memcmp(&want, &got, sizeof(float)) != 0;
    }
    INFO("seed " << seed);
    CHECK(differ == 0);
  }
}

namespace {

// An engine with mt19937's range that returns one chosen value.
struct FixedDraw {
  using result_type = std::uint32_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return 0xffffffffu; }
  result_type operator()() { return value; }
  result_type value;
};

}  // namespace

TEST_CASE("Rng::uniform_from matches the standard library at the ends of the engine's range",
          "[support]") {
  // The largest draws round to 2^32, so generate_canonical's quotient is 1 and libstdc++ returns
  // the float below 1 instead; the 600000 draws above reach them with about 2% probability.
  // (Times hi - lo plus lo, that float can still round to hi: [4, 8) gives 8, here as there.)
  const float ranges[][2] = {{-1.0f, 1.0f}, {4.0f, 8.0f}, {0.0f, 1.0f}, {-1e-3f, 2e-3f}};
  for (std::uint32_t draw : {0u, 1u, 127u, 0x80000000u, 0xffffff7eu, 0xffffff7fu, 0xffffff80u,
                             0xffffff81u, 0xfffffffeu, 0xffffffffu}) {
    for (const auto& r : ranges) {
      FixedDraw engine{draw};
      const float want = std::uniform_real_distribution<float>(r[0], r[1])(engine);
      const float got = attn_test::Rng::uniform_from(draw, r[0], r[1]);
      INFO("draw " << draw << " range [" << r[0] << ", " << r[1] << ")");
      CHECK(std::memcmp(&want, &got, sizeof(float)) == 0);
    }
  }
}

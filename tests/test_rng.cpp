// The tests' random inputs (support/test_support.hpp): Rng::uniform computes what
// std::uniform_real_distribution<float> does on the same engine, so every case's data is the
// standard library's, whichever compiler built the tests.
#include <catch2/catch.hpp>
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

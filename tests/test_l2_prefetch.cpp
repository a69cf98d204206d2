// The packed GEMM's prefetch of the next B sliver (SliverShares, src/matmul/l2_prefetch.hpp):
// the shares of a block's calls cover the sliver exactly once, in order, and never reach past it;
// call 0 and a block of one row panel fetch nothing. (Whether the fetch pays is measured, not
// tested: see matmul/gemm.cpp.)
#include <catch2/catch.hpp>
#include <cstddef>
#include <vector>

#include "matmul/l2_prefetch.hpp"

using attn::detail::L2Prefetch;
using attn::detail::SliverShares;

TEST_CASE("next-sliver prefetch shares cover the sliver once", "[matmul][prefetch]") {
  constexpr std::size_t kLineFloats = L2Prefetch::kLineBytes / sizeof(float);
  std::vector<float> buffer(4100 * kLineFloats);
  for (std::size_t lines : {1, 2, 3, 17, 64, 512, 2048, 4099}) {
    for (std::size_t panels : {1, 2, 3, 5, 36, 37, 100, 5000}) {
      CAPTURE(lines, panels);
      const float* next = buffer.data();
      const SliverShares shares(lines * kLineFloats, panels);
      std::size_t covered = 0;  // lines [0, covered) have a call, in call order
      for (std::size_t r = 0; r < panels + 2; ++r) {
        const L2Prefetch share = shares.of(next, r);
        if (r == 0 || r >= panels) {
          CHECK(share.lines == 0);
          continue;
        }
        if (share.lines == 0) continue;
        CHECK(share.p == next + covered * kLineFloats);
        covered += share.lines;
        CHECK(covered <= lines);
      }
      CHECK(covered == (panels >= 2 ? lines : 0));
    }
  }
}

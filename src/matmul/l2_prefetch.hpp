// A prefetch hint that a GEMM micro-kernel call carries (GemmUkernel in dispatch/kernels.hpp),
// and how the packed GEMM shares the next B sliver among the calls over the current one.
#pragma once

#include <algorithm>
#include <cstddef>

namespace attn::detail {

// `lines` cache lines (64 bytes) from p on, which the call fetches into L2 and never reads: the
// SIMD kernels issue them in equal bursts, one burst per kSteps k steps of the loop before its
// last 32 steps (none when k < 32 + kSteps); the scalar kernel and the attention's scores tile
// ignore the hint.
struct L2Prefetch {
  static constexpr std::size_t kLineBytes = 64;
  static constexpr int kSteps = 8;
  const float* p = nullptr;
  std::size_t lines = 0;
};

// How the calls over one B sliver share the next sliver (`sliver_floats` floats; a last partial
// line is left out) among a block of `panels` row panels: calls 1 to panels - 1 take equal
// consecutive shares that cover the sliver, call 0 (which streams the current sliver for the
// first time) takes none. Built once per block, so the calls do no division.
class SliverShares {
 public:
  SliverShares(std::size_t sliver_floats, std::size_t panels)
      : lines_(panels < 2 ? 0 : sliver_floats / kLineFloats),
        share_(panels < 2 ? 0 : (lines_ + panels - 2) / (panels - 1)),
        panels_(panels) {}

  // The share of the call for row panel r, of the next sliver at `next`.
  L2Prefetch of(const float* next, std::size_t r) const {
    if (r == 0 || r >= panels_) return {};
    const std::size_t first = (r - 1) * share_;
    if (first >= lines_) return {};
    return {next + first * kLineFloats, std::min(share_, lines_ - first)};
  }

 private:
  static constexpr std::size_t kLineFloats = L2Prefetch::kLineBytes / sizeof(float);
  std::size_t lines_, share_, panels_;
};

}  // namespace attn::detail

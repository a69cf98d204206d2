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

// The share of the next B sliver (`sliver_floats` floats at next; a last partial line is left out)
// that the call for row panel r of a block of `panels` row panels fetches: calls 1 to panels - 1
// take equal consecutive shares that cover the sliver, call 0 (which streams the current sliver for
// the first time) takes none.
inline L2Prefetch sliver_share(const float* next, std::size_t sliver_floats, std::size_t r,
                               std::size_t panels) {
  constexpr std::size_t kLineFloats = L2Prefetch::kLineBytes / sizeof(float);
  if (r == 0 || r >= panels) return {};
  const std::size_t lines = sliver_floats / kLineFloats;
  const std::size_t share = (lines + panels - 2) / (panels - 1);
  const std::size_t first = (r - 1) * share;
  if (first >= lines) return {};
  return {next + first * kLineFloats, std::min(share, lines - first)};
}

}  // namespace attn::detail

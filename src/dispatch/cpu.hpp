// What the CPU (and the OS, for AVX state) can run, read once with cpuid/xgetbv. xsimd 8.1's own
// detection misreads SSE2/AVX and ignores XCR0, so attn does not use it.
#pragma once

#include <cstddef>

namespace attn::detail {

struct CpuInfo {
  bool sse2 = false;
  bool avx2_fma = false;  // AVX2 + FMA3 + OS-saved YMM state
  bool avx512 = false;    // AVX-512 F, DQ, BW, VL + OS-saved ZMM state
  bool neon = false;
  std::size_t l1d_bytes = 32 * 1024;  // per core; defaults when the CPU does not say
  std::size_t l2_bytes = 512 * 1024;  // per core
  std::size_t l3_bytes = 8 * 1024 * 1024;
  char model[64] = "unknown";
};

// Detected on first use (thread-safe), then cached.
const CpuInfo& cpu_info() noexcept;

}  // namespace attn::detail

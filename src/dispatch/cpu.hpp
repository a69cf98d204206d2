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
  // Whether the no-packing GEMM kernels, which read a B of up to half of L2 in place (rows ldb
  // apart), run at the packed kernel's rate when B is larger than L1 (matmul/gemm.cpp,
  // gemm_path). Measured per vendor: AMD Zen 5 yes (AVX-512 256^3 at 93% of the FMA probe, level
  // with oneDNN); an Intel Xeon with AVX-512 and AMX (KVM guest, family 6 model 167, 48 KiB L1d,
  // 2 MiB L2) no: packing made 256^3 0.90x and A*B^T 512 x 512 x 64 0.94x the time on AVX-512,
  // 0.90x and 0.975x on AVX2 (bench/ab, 4 rounds). Other Intel CPUs are taken to be alike; CPUs
  // not measured (other vendors, AArch64) keep the rule first tuned on Zen 5.
  bool l2_feeds_in_place_b = true;
  // Whether GemmPath::prefetched (a row-major B beyond L2 read in place, its rows prefetched)
  // runs faster than packing B for up to Kernels::gemm_prefetch_b_many_rows rows rather than 48
  // (matmul/gemm.cpp, use_prefetched). Measured per vendor: AMD Zen 5 yes, the Intel Xeon above
  // no (64 rows 1.03x the time); other CPUs keep 48.
  bool prefetched_many_rows = false;
  // Whether the one-vector no-packing tile broadcasts once per FMA for a few rows
  // (Kernels::gemm_direct_narrow_split) rather than in pairs of k steps with shuffles, which on
  // Intel cores share ports with the FMAs. Measured per vendor (kernels_avx512.cpp): Intel yes,
  // Zen 5 no; others keep the pairs.
  bool narrow_tile_split = false;
  char model[64] = "unknown";
};

// Reads the CPU (cpuid, sysfs); cpu_info() calls it once.
CpuInfo detect_cpu() noexcept;

// Detected on first use (thread-safe), then cached. Inline: the GEMM's path choice asks several
// times per call, and a call of the seed's 6 x 16 x 64 product takes tens of nanoseconds.
inline const CpuInfo& cpu_info() noexcept {
  static const CpuInfo info = detect_cpu();
  return info;
}

}  // namespace attn::detail

// CPU detection (dispatch/cpu.cpp): the cache sizes the GEMM's path rules and blocking read must
// be the CPU's, not CpuInfo's defaults. glibc's sysconf reads the same cpuid leaves on its own
// (leaf 4 or 2 on Intel, 0x80000005/6 on AMD), so where it answers the two must agree. Not in the
// qemu builds (ATTN_TEST_EMULATED): qemu's CPU models answer leaf 2 and leaf 4 with different L2
// sizes; nor on hybrid Intel CPUs (CPUID.7.EDX[15]), where leaf 4 describes whichever kind of
// core runs it, and glibc may have asked on another.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdio>

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <unistd.h>
#endif

#include "dispatch/cpu.hpp"

TEST_CASE("cpu_info reads the cache sizes the OS reports", "[cpu]") {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && \
    defined(_SC_LEVEL1_DCACHE_SIZE) && !defined(ATTN_TEST_EMULATED)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 15) & 1u) != 0) {
    SUCCEED("a hybrid CPU: leaf 4 depends on the core");
    return;
  }
  const attn::detail::CpuInfo& cpu = attn::detail::cpu_info();
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  INFO("cpu_info: L1d " << cpu.l1d_bytes << " B, L2 " << cpu.l2_bytes << " B; sysconf: L1d " << l1d
                        << " B, L2 " << l2 << " B (" << cpu.model << ")");
  if (l1d > 0) CHECK(cpu.l1d_bytes == static_cast<std::size_t>(l1d));
  if (l2 > 0) CHECK(cpu.l2_bytes == static_cast<std::size_t>(l2));
#else
  SUCCEED("no sysconf cache sizes to compare with here");
#endif
}

TEST_CASE("cpu_info reads the CPU family the OS reports", "[cpu]") {
  // The path rules tell AMD Zen 4 (family 25) from Zen 5 (26) by it (CpuInfo::narrow_tile_split).
  // /proc/cpuinfo's "cpu family" is the kernel's reading of the same cpuid leaf 1.
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ATTN_TEST_EMULATED)
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) {
    SUCCEED("no /proc/cpuinfo");
    return;
  }
  char line[256];
  unsigned family = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f) != nullptr) {
    found = std::sscanf(line, "cpu family : %u", &family) == 1;
  }
  std::fclose(f);
  if (!found) {
    SUCCEED("/proc/cpuinfo names no cpu family");
    return;
  }
  INFO("/proc/cpuinfo: cpu family " << family << " (" << attn::detail::cpu_info().model << ")");
  CHECK(attn::detail::cpu_info().family == family);
#else
  SUCCEED("no /proc/cpuinfo to compare with here");
#endif
}

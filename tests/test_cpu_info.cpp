// CPU detection (dispatch/cpu.cpp): the cache sizes the GEMM's path rules and blocking read must
// be the CPU's, not CpuInfo's defaults. glibc's sysconf reads the same cpuid leaves on its own
// (leaf 4 or 2 on Intel, 0x80000005/6 on AMD), so where it answers the two must agree. Not under
// qemu or valgrind (attn_test::emulated()): qemu's CPU models answer leaf 2 and leaf 4 with
// different L2 sizes; nor on hybrid Intel CPUs (CPUID.7.EDX[15]), where leaf 4 describes
// whichever kind of core runs it, and glibc may have asked on another.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdio>
#include <cstring>

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <unistd.h>
#endif

#include "dispatch/cpu.hpp"
#include "support/test_support.hpp"

TEST_CASE("cpu_info reads the cache sizes the OS reports", "[cpu]") {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && \
    defined(_SC_LEVEL1_DCACHE_SIZE)
  if (attn_test::emulated()) {
    SUCCEED("under an emulator: its CPU model's cache leaves need not agree");
    return;
  }
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
  // /proc/cpuinfo's "cpu family" is the kernel's reading of the same cpuid leaf 1, on the CPU the
  // kernel runs on: under an emulator or valgrind the process reads the emulated CPU's leaves
  // (valgrind answers as an Intel Core i7, family 6), so there the two are not compared
  // (attn_test::emulated(), or /proc/cpuinfo's model name not the brand string attn read).
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
  std::FILE* f = attn_test::emulated() ? nullptr : std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) {
    SUCCEED("emulated, or no /proc/cpuinfo");
    return;
  }
  char line[256], name[128] = "";
  unsigned family = 0;
  bool found = false, named = false;
  while ((!found || !named) && std::fgets(line, sizeof line, f) != nullptr) {
    if (!found) found = std::sscanf(line, "cpu family : %u", &family) == 1;
    if (!named) named = std::sscanf(line, "model name : %127[^\n]", name) == 1;
  }
  std::fclose(f);
  for (std::size_t n = std::strlen(name); n > 0 && name[n - 1] == ' '; --n)
    name[n - 1] = '\0';
  const attn::detail::CpuInfo& cpu = attn::detail::cpu_info();
  INFO("/proc/cpuinfo: cpu family " << family << ", model name '" << name << "'; cpu_info: family "
                                    << cpu.family << ", '" << cpu.model << "'");
  if (!found || !named || std::strcmp(name, cpu.model) != 0) {
    SUCCEED("/proc/cpuinfo names no family, or another CPU than the one this process reads");
    return;
  }
  CHECK(cpu.family == family);
#else
  SUCCEED("no /proc/cpuinfo to compare with here");
#endif
}

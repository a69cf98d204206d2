#include "dispatch/cpu.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attn::detail {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}

unsigned long long xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

bool vendor_is(const char* name) {
  const Regs r = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &r.b, 4);
  std::memcpy(vendor + 4, &r.d, 4);
  std::memcpy(vendor + 8, &r.c, 4);
  return std::strcmp(vendor, name) == 0;
}

bool is_intel() {
  return vendor_is("GenuineIntel");
}
bool is_amd() {
  return vendor_is("AuthenticAMD");
}

// Cache sizes from the deterministic cache parameters: leaf 4 (Intel) or 0x8000001D (AMD with
// topoext). Where those say nothing (a hypervisor that hides topoext from an AMD guest: the Zen 5
// KVM/PVM guest of the README, where leaf 4 reads zeros and attn ran with the defaults, 32 KiB
// and 512 KiB, for its 48 KiB and 1 MiB until 2026-12-02), the extended leaves 0x80000005 (AMD: L1d
// KiB in ECX[31:24]) and 0x80000006 (AMD and Intel: L2 KiB in ECX[31:16]; AMD: L3 in 512 KiB units
// in EDX[31:18]) still do; glibc's sysconf reads them too.
void read_caches(CpuInfo* info) {
  const unsigned max_ext = cpuid(0x80000000).a;
  const bool topoext = max_ext >= 0x8000001D && (cpuid(0x80000001).c & (1u << 22));
  const unsigned leaf = topoext ? 0x8000001D : 4;
  bool l1d = false, l2 = false, l3 = false;
  for (unsigned i = 0; i < 16 && (topoext || cpuid(0).a >= 4); ++i) {
    const Regs r = cpuid(leaf, i);
    const unsigned type = r.a & 0x1F;
    if (type == 0) break;
    if (type == 2) continue;  // instruction cache
    const unsigned level = (r.a >> 5) & 0x7;
    const std::size_t ways = ((r.b >> 22) & 0x3FF) + 1;
    const std::size_t parts = ((r.b >> 12) & 0x3FF) + 1;
    const std::size_t line = (r.b & 0xFFF) + 1;
    const std::size_t sets = static_cast<std::size_t>(r.c) + 1;
    const std::size_t bytes = ways * parts * line * sets;
    if (level == 1) {
      info->l1d_bytes = bytes;
      l1d = true;
    } else if (level == 2) {
      info->l2_bytes = bytes;
      l2 = true;
    } else if (level == 3) {
      info->l3_bytes = bytes;
      l3 = true;
    }
  }
  const bool amd = is_amd() || vendor_is("HygonGenuine");  // Hygon: AMD's leaves (glibc alike)
  if (!l1d && amd && max_ext >= 0x80000005) {
    const std::size_t kib = cpuid(0x80000005).c >> 24;
    if (kib != 0) info->l1d_bytes = kib * 1024;
  }
  if ((!l2 || (!l3 && amd)) && max_ext >= 0x80000006) {
    const Regs r = cpuid(0x80000006);
    const std::size_t l2_kib = r.c >> 16, l3_units = r.d >> 18;
    if (!l2 && l2_kib != 0) info->l2_bytes = l2_kib * 1024;
    if (!l3 && amd && l3_units != 0) info->l3_bytes = l3_units * 512 * 1024;
  }
}

void read_model(CpuInfo* info) {
  if (cpuid(0x80000000).a < 0x80000004) return;
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    const Regs r = cpuid(0x80000002 + i);
    std::memcpy(brand + 16 * i + 0, &r.a, 4);
    std::memcpy(brand + 16 * i + 4, &r.b, 4);
    std::memcpy(brand + 16 * i + 8, &r.c, 4);
    std::memcpy(brand + 16 * i + 12, &r.d, 4);
  }
  const char* p = brand;
  while (*p == ' ')
    ++p;
  std::snprintf(info->model, sizeof(info->model), "%s", p);
  for (std::size_t n = std::strlen(info->model); n > 0 && info->model[n - 1] == ' '; --n) {
    info->model[n - 1] = '\0';
  }
}

CpuInfo detect() {
  CpuInfo info;
  const Regs l1 = cpuid(1);
  info.sse2 = (l1.d >> 26) & 1;
  const bool osxsave = (l1.c >> 27) & 1;
  const bool avx = (l1.c >> 28) & 1;
  const bool fma = (l1.c >> 12) & 1;
  const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  const Regs l7 = cpuid(0).a >= 7 ? cpuid(7, 0) : Regs{};
  const bool avx2 = (l7.b >> 5) & 1;
  const bool f = (l7.b >> 16) & 1, dq = (l7.b >> 17) & 1, bw = (l7.b >> 30) & 1,
             vl = (l7.b >> 31) & 1;
  info.avx2_fma = avx && avx2 && fma && ymm_saved;
  info.avx512 = info.avx2_fma && f && dq && bw && vl && zmm_saved;
  read_caches(&info);
  read_model(&info);
  const unsigned base_family = (l1.a >> 8) & 0xF;
  info.family = base_family == 0xF ? base_family + ((l1.a >> 20) & 0xFF) : base_family;
  const bool intel = is_intel(), amd = is_amd();
  const bool family_25 = amd && info.family == 0x19;  // Zen 4 measured (and Zen 3, not measured)
  const bool family_26 = amd && info.family == 0x1A;  // Zen 5
  info.l2_feeds_in_place_b = !intel;
  info.narrow_tile_split = intel || family_25;
  info.prefetched_many_rows = amd;
  info.prefetched_next_panel = !family_26;
  info.rows_t_prefetch_min_rows = family_26 ? 2 : amd ? SIZE_MAX : 1;
  info.decode_prefetch_v = !family_25;
  info.decode_prefetch_v_one_thread_min_rows = family_26 ? 2 : 1;
  info.decode_k_ahead_bytes = family_25 || family_26 ? 4096 : 8192;
  info.decode_prefetch_l2 = family_25;
  info.avx512_double_pumped = family_25 && info.avx512;
  return info;
}

#else

CpuInfo detect() {
  CpuInfo info;
#if defined(__aarch64__)
  info.neon = true;  // Advanced SIMD is mandatory on AArch64
#endif
#if defined(__linux__)
  auto read_size = [](const char* path, std::size_t* out) {
    if (std::FILE* f = std::fopen(path, "r")) {
      unsigned long v = 0;
      char unit = 0;
      if (std::fscanf(f, "%lu%c", &v, &unit) >= 1) {
        *out = v * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
      }
      std::fclose(f);
    }
  };
  read_size("/sys/devices/system/cpu/cpu0/cache/index0/size", &info.l1d_bytes);
  read_size("/sys/devices/system/cpu/cpu0/cache/index2/size", &info.l2_bytes);
  read_size("/sys/devices/system/cpu/cpu0/cache/index3/size", &info.l3_bytes);
#endif
  return info;
}

#endif

}  // namespace

CpuInfo detect_cpu() noexcept {
  return detect();
}

}  // namespace attn::detail

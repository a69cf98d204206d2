// The FMA-throughput probe and the description of the machine for the context block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/isa.hpp"

namespace attn_bench {

struct Peak {
  std::string isa;   // "avx512", "avx2", "sse2", "neon"
  std::string what;  // "AVX-512 FMA", "SSE2 mul+add", ...
  double flops = 0;  // FLOP/s of one core
};

// Measures, on the calling thread, the FMA (or mul+add) throughput of each ISA the CPU and OS
// support, best first. Takes about 0.1 s per ISA. Empty on architectures without a probe.
std::vector<Peak> probe_fma_peaks();

// The probe's loop for one ISA, run in timed batches between other work (attn-bench
// --alternate): each run() takes about `seconds` of wall time (the constructor calibrates the
// iteration count with calls it does not report) and returns its FLOP/s, 0 if the clock did not
// advance. ok() is false where this build or CPU has no loop for the ISA (Isa::scalar has none).
class ProbeBatch {
 public:
  ProbeBatch(attn::Isa isa, double seconds);
  bool ok() const { return chains_ != nullptr; }
  const char* what() const { return what_; }
  double run();

 private:
  float (*chains_)(long) = nullptr;
  const char* what_ = "";
  double flop_per_iteration_ = 0;
  std::int64_t iterations_ = 0;
};

struct SystemInfo {
  std::string cpu_model;  // from /proc/cpuinfo
  int cpus = 0;           // logical CPUs online
  std::string caches;     // e.g. "L1d 48 KiB, L1i 32 KiB, L2 1 MiB, L3 32 MiB" (per instance)
};
SystemInfo system_info();

}  // namespace attn_bench

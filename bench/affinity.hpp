// The CPUs this process may run on, and the calling thread pinned to one of them for a scope:
// attn-bench --alternate=attention times its one-thread baseline on each CPU the threads share,
// since one vCPU of a guest can run a cache-bound call 10% slower than its neighbour
// (bench/RESULTS.md, fifty-fifth session). Linux only: elsewhere no CPU is listed and nothing
// is pinned.
#pragma once

#include <vector>

namespace attn_bench {

// The calling thread's allowed CPUs in increasing order; empty where they cannot be read.
std::vector<int> allowed_cpus();

// Pins the calling thread to `cpu` (nothing for cpu < 0 or where it fails), and restores the
// CPUs it was allowed before at the end of the scope.
class ScopedPin {
 public:
  explicit ScopedPin(int cpu);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  std::vector<int> saved_;  // empty: nothing pinned, nothing to restore
};

}  // namespace attn_bench

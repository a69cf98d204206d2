// The calling thread's CPU affinity (affinity.hpp).
#include "affinity.hpp"

#include <utility>

#if defined(__linux__)
#include <sched.h>
#endif

namespace attn_bench {

#if defined(__linux__)
namespace {

bool set_allowed(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return false;
    CPU_SET(c, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

ScopedPin::ScopedPin(int cpu) {
  if (cpu < 0) return;
  std::vector<int> before = allowed_cpus();
  if (!before.empty() && set_allowed({cpu})) saved_ = std::move(before);
}

ScopedPin::~ScopedPin() {
  if (!saved_.empty()) set_allowed(saved_);
}

#else

std::vector<int> allowed_cpus() {
  return {};
}
ScopedPin::ScopedPin(int) {}
ScopedPin::~ScopedPin() {}

#endif

}  // namespace attn_bench

// Helpers shared by the tests: the ISAs to test, random data, ULP distances.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "attn/attn.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if defined(ATTN_TEST_COVERAGE)
extern "C" void __gcov_dump(void);
#endif

namespace attn_test {

// Every ISA this machine and build support; or only the one ATTN_ISA names (which every
// Context then takes by default); or only the one ATTN_TEST_ISA names, which leaves the default
// Context alone (tests/emulated: qemu Nehalem tests sse2's kernels and the detected default).
inline std::vector<attn::Isa> test_isas() {
  std::vector<attn::Isa> out;
  attn::Isa forced;
  if (const char* env = std::getenv("ATTN_ISA"); env && attn::parse_isa(env, &forced)) {
    out.push_back(forced);
    return out;
  }
  if (const char* env = std::getenv("ATTN_TEST_ISA"); env && *env) {
    if (!attn::parse_isa(env, &forced)) {
      std::fprintf(stderr, "ATTN_TEST_ISA=%s names no ISA\n", env);
      std::abort();
    }
    out.push_back(forced);
    return out;
  }
  for (attn::Isa isa : attn::kAllIsas) {
    if (attn::isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

// A Context on the given ISA with n threads.
inline attn::Context make_context(attn::Isa isa, int threads = 1) {
  attn::Context ctx;
  (void)ctx.set_isa(isa);
  (void)ctx.set_num_threads(threads);
  return ctx;
}

class Rng {
 public:
  explicit Rng(std::uint32_t seed) : gen_(seed) {}
  // std::uniform_real_distribution<float>(lo, hi)(gen_) as libstdc++ computes it, bit for bit
  // (tests/test_rng.cpp), without the logl that its generate_canonical calls on every draw where
  // the compiler does not fold it (clang-14: 5% of an ASan attention case's time).
  float uniform(float lo, float hi) { return uniform_from(gen_(), lo, hi); }
  // The float that draw (one output of the 32-bit engine) gives.
  static float uniform_from(std::uint32_t draw, float lo, float hi) {
    float r = static_cast<float>(draw) / 4294967296.0f;  // generate_canonical<float, 24>
    if (r >= 1.0f) r = std::nextafter(1.0f, 0.0f);       // draws of 2^32 - 128 and up
    return r * (hi - lo) + lo;
  }
  float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(gen_); }
  std::size_t index(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(gen_);
  }
  std::vector<float> uniform_vec(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v)
      x = uniform(lo, hi);
    return v;
  }
  std::vector<float> normal_vec(std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v)
      x = normal();
    return v;
  }

 private:
  std::mt19937 gen_;
};

// Distance in units in the last place of `want` (float), subnormals included.
inline double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  // Beyond FLT_MAX + ulp/2 the correctly rounded result is inf.
  if (std::isinf(static_cast<float>(want)) || std::isinf(got)) {
    return got == static_cast<float>(want) ? 0.0 : INFINITY;
  }
  const double aw = std::fabs(want);
  int e = 0;
  std::frexp(aw, &e);                                      // aw in [2^(e-1), 2^e)
  int exp2 = e - 24;                                       // ulp of a float in that binade
  if (exp2 < -149) exp2 = -149;                            // subnormal ulp
  if (aw > std::numeric_limits<float>::max()) exp2 = 104;  // beyond float: ulp of FLT_MAX
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, exp2);
}

// Whether the tests run under an emulator or valgrind (ATTN_TEST_EMULATED built in or set in the
// environment: tests/CMakeLists.txt), where the longest cases run reduced.
inline bool emulated() {
#if defined(ATTN_TEST_EMULATED)
  return true;
#else
  return std::getenv("ATTN_TEST_EMULATED") != nullptr;
#endif
}

// Whether this build runs under AddressSanitizer or ThreadSanitizer (the asan and tsan presets),
// where a case whose size serves no check of its own may run reduced, as emulated() cases do.
inline bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// The first float of v that starts a 64-byte cache line, plus `past` floats (v holds at least
// 16 floats of slack before the data a test places there).
inline float* line_start(std::vector<float>& v, std::size_t past = 0) {
  const auto addr = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (64 - addr % 64) % 64 / sizeof(float) + past;
}

#if defined(__unix__) || defined(__APPLE__)
// Ends a forked child with _exit (no atexit handlers, no second flush of the parent's buffers),
// in a coverage build (tests/coverage defines ATTN_TEST_COVERAGE) after writing gcov's counts,
// which _exit would drop: the lines the child ran then count as run.
[[noreturn]] inline void child_exit(int status) {
#if defined(ATTN_TEST_COVERAGE)
  __gcov_dump();
#endif
  _exit(status);
}
#endif

// Scratch of `bytes` for a driver called directly (the drivers take 64-byte aligned scratch, as a
// Context's arena gives them): a buffer that owns it and the aligned start.
class AlignedScratch {
 public:
  explicit AlignedScratch(std::size_t bytes) : buf_(bytes + 64) {}
  void* get() {
    return buf_.data() + (64 - reinterpret_cast<std::uintptr_t>(buf_.data()) % 64) % 64;
  }

 private:
  std::vector<unsigned char> buf_;
};

inline float nan_f() {
  return std::numeric_limits<float>::quiet_NaN();
}
inline float inf_f() {
  return std::numeric_limits<float>::infinity();
}

// The float64 sum of term(i) for i < n, and the sum of the terms' magnitudes (a float sum's
// error bound is proportional to it).
struct SumAndMagnitude {
  double sum = 0.0, mag = 0.0;
};
template <class Term>
SumAndMagnitude sum_and_magnitude(std::size_t n, const Term& term) {
  SumAndMagnitude r;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = term(i);
    r.sum += t;
    r.mag += std::fabs(t);
  }
  return r;
}

}  // namespace attn_test

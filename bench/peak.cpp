// The FMA-throughput probe: how many FLOP/s one core retires when every instruction is a
// multiply-add with no dependency stalls. Each ISA's loop keeps enough independent accumulator
// chains in registers to cover the latency of the slowest common FPU (4 cycles × 2 pipes,
// doubled for headroom), so the loop is bound by throughput only.
//
// The per-ISA loops use function target attributes rather than per-file flags, so no inline
// function from a header is ever compiled with AVX flags here.
#include "peak.hpp"

#include <time.h>

#include <chrono>

#include "attn/attn.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ATTN_BENCH_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define ATTN_BENCH_NEON 1
#endif

namespace attn_bench {
namespace {

// Read through volatile so the compiler cannot fold the loop into a closed form.
volatile float g_mul = 0.99999f;
volatile float g_add = 1e-6f;
volatile float g_sink = 0.0f;

// c = c·m + a converges to a / (1 − m) = 0.1: no overflow, no subnormals.
#define ATTN_BENCH_REPEAT12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ATTN_BENCH_REPEAT16(X) ATTN_BENCH_REPEAT12(X) X(12) X(13) X(14) X(15)

#if defined(ATTN_BENCH_X86)
// 16 chains × 16 lanes × 2 FLOP per iteration.
__attribute__((target("avx512f"))) float chains_avx512(long iterations) {
  const __m512 m = _mm512_set1_ps(g_mul), a = _mm512_set1_ps(g_add);
#define DECL(i) __m512 c##i = _mm512_set1_ps(0.01f * (i));
  ATTN_BENCH_REPEAT16(DECL)
#undef DECL
  for (long it = 0; it < iterations; ++it) {
#define STEP(i) c##i = _mm512_fmadd_ps(c##i, m, a);
    ATTN_BENCH_REPEAT16(STEP)
#undef STEP
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
  ATTN_BENCH_REPEAT16(SUM)
#undef SUM
  return _mm512_reduce_add_ps(s);
}

// 12 chains (16 ymm registers) × 8 lanes × 2 FLOP per iteration.
__attribute__((target("avx2,fma"))) float chains_avx2(long iterations) {
  const __m256 m = _mm256_set1_ps(g_mul), a = _mm256_set1_ps(g_add);
#define DECL(i) __m256 c##i = _mm256_set1_ps(0.01f * (i));
  ATTN_BENCH_REPEAT12(DECL)
#undef DECL
  for (long it = 0; it < iterations; ++it) {
#define STEP(i) c##i = _mm256_fmadd_ps(c##i, m, a);
    ATTN_BENCH_REPEAT12(STEP)
#undef STEP
  }
  __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, c##i);
  ATTN_BENCH_REPEAT12(SUM)
#undef SUM
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// No FMA in SSE2: a multiply then an add, 12 chains × 4 lanes × 2 FLOP per iteration.
float chains_sse2(long iterations) {
  const __m128 m = _mm_set1_ps(g_mul), a = _mm_set1_ps(g_add);
#define DECL(i) __m128 c##i = _mm_set1_ps(0.01f * (i));
  ATTN_BENCH_REPEAT12(DECL)
#undef DECL
  for (long it = 0; it < iterations; ++it) {
#define STEP(i) c##i = _mm_add_ps(_mm_mul_ps(c##i, m), a);
    ATTN_BENCH_REPEAT12(STEP)
#undef STEP
  }
  __m128 s = _mm_setzero_ps();
#define SUM(i) s = _mm_add_ps(s, c##i);
  ATTN_BENCH_REPEAT12(SUM)
#undef SUM
  alignas(16) float out[4];
  _mm_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3];
}
#endif

#if defined(ATTN_BENCH_NEON)
// 16 chains × 4 lanes × 2 FLOP per iteration.
float chains_neon(long iterations) {
  const float32x4_t m = vdupq_n_f32(g_mul), a = vdupq_n_f32(g_add);
#define DECL(i) float32x4_t c##i = vdupq_n_f32(0.01f * (i));
  ATTN_BENCH_REPEAT16(DECL)
#undef DECL
  for (long it = 0; it < iterations; ++it) {
#define STEP(i) c##i = vfmaq_f32(a, c##i, m);
    ATTN_BENCH_REPEAT16(STEP)
#undef STEP
  }
  float32x4_t s = vdupq_n_f32(0.0f);
#define SUM(i) s = vaddq_f32(s, c##i);
  ATTN_BENCH_REPEAT16(SUM)
#undef SUM
  return vaddvq_f32(s);
}
#endif

// This thread's CPU time in seconds: time the OS gives to other processes does not count, as in
// the benchmarks' rates.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best of several trials of about 20 ms each, in FLOP/s.
double measure(float (*chains)(long), double flop_per_iteration) {
  long iterations = 1 << 14;
  double best = 0.0;
  for (int trial = 0; trial < 10; ++trial) {
    const double t0 = thread_seconds();
    g_sink = chains(iterations);
    const double s = thread_seconds() - t0;
    if (s < 0.01) {  // calibrating: not a trial yet
      iterations *= 4;
      --trial;
      continue;
    }
    const double rate = flop_per_iteration * static_cast<double>(iterations) / s;
    if (rate > best) best = rate;
  }
  return best;
}

// The probe loops this build and CPU can run, best first: the ISA, its Peak::isa and
// Peak::what, the loop, and its FLOP per iteration. attn's ISA checks include OS support (XCR0)
// as well as the CPUID bits.
struct ProbeLoop {
  attn::Isa isa;
  const char* name;
  const char* what;
  float (*chains)(long);
  double flop_per_iteration;
};

std::vector<ProbeLoop> probe_loops() {
  std::vector<ProbeLoop> loops;
#if defined(ATTN_BENCH_X86)
  if (attn::isa_supported(attn::Isa::avx512))
    loops.push_back({attn::Isa::avx512, "avx512", "AVX-512 FMA", chains_avx512, 16 * 16 * 2});
  if (attn::isa_supported(attn::Isa::avx2))
    loops.push_back({attn::Isa::avx2, "avx2", "AVX2 FMA", chains_avx2, 12 * 8 * 2});
  loops.push_back({attn::Isa::sse2, "sse2", "SSE2 mul+add", chains_sse2, 12 * 4 * 2});
#elif defined(ATTN_BENCH_NEON)
  loops.push_back({attn::Isa::neon, "neon", "NEON FMA", chains_neon, 16 * 4 * 2});
#endif
  return loops;
}

// Wall-clock seconds of one call of `chains` over `iterations`.
double wall_seconds(float (*chains)(long), std::int64_t iterations) {
  const auto t0 = std::chrono::steady_clock::now();
  g_sink = chains(static_cast<long>(iterations));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ProbeBatch::ProbeBatch(attn::Isa isa, double seconds) {
  for (const ProbeLoop& loop : probe_loops()) {
    if (loop.isa != isa) continue;
    chains_ = loop.chains, what_ = loop.what, flop_per_iteration_ = loop.flop_per_iteration;
  }
  if (chains_ == nullptr) return;
  iterations_ = 1 << 10;
  for (;;) {  // calibration: a count that takes at least `seconds` (aiming 5% above it)
    const double s = wall_seconds(chains_, iterations_);
    if (s >= seconds || iterations_ > (std::int64_t{1} << 40)) break;
    iterations_ =
        s > 1e-4
            ? static_cast<std::int64_t>(static_cast<double>(iterations_) * 1.05 * seconds / s) + 1
            : iterations_ * 8;
  }
}

double ProbeBatch::run() {
  if (chains_ == nullptr) return 0.0;
  const double s = wall_seconds(chains_, iterations_);
  return s > 0.0 ? flop_per_iteration_ * static_cast<double>(iterations_) / s : 0.0;
}

std::vector<Peak> probe_fma_peaks() {
  std::vector<Peak> peaks;
  for (const ProbeLoop& loop : probe_loops())
    peaks.push_back({loop.name, loop.what, measure(loop.chains, loop.flop_per_iteration)});
  return peaks;
}

}  // namespace attn_bench

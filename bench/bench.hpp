// attn-bench internals: the registry of benchmarks, the shapes every implementation runs, and
// the timing helper that sets the counters.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/attn.hpp"

namespace attn_bench {

// What a benchmark's rate counts: floating-point operations ("FLOP") or elements ("elem").
enum class Unit { flop, elem };

// One registered benchmark. name is its full Google Benchmark name, e.g.
// "matmul_avx2/512/512/512" or "matmul_openblas/1024/1024/1024/threads:2":
// "<routine>_<impl>/<shape>[/threads:N]". impl is an attn ISA (ours) or a peer's name.
struct Info {
  std::string name;
  std::string routine;  // "matmul", "matmul_nt", "exp", "softmax", "attention_causal", ...
  std::string shape;    // "512/512/512"
  std::string impl;     // "avx512", "scalar", "openblas", "sleef-avx2", ...
  bool ours = true;
  int threads = 1;
  Unit unit = Unit::flop;
};

// Records a benchmark; commit() registers them all with Google Benchmark, grouped so that every
// implementation of a routine and shape runs (and prints) next to the others.
void add(const Info& info, std::function<void(benchmark::State&)> fn);
void commit();
const std::vector<Info>& registry();
// nullptr if no benchmark has this name.
const Info* find(const std::string& name);

// A run's name without the "/real_time" Google Benchmark appends to multi-threaded benchmarks.
std::string base_name(const std::string& run_name);

// Full name from the parts (see Info).
std::string full_name(const std::string& routine, const std::string& impl, const std::string& shape,
                      int threads);

// FMA throughput of one core, in FLOP/s, of the best ISA the probe ran (0 when unknown). Set once
// by main before any benchmark runs; the "peak%" counter is relative to it.
double machine_peak();
void set_machine_peak(double flops);

// Uniform random floats in [lo, hi), the same for a given seed on every machine. Generated once
// and kept: Google Benchmark calls a benchmark function once per repetition (and more while it
// sizes the iteration count), and every implementation of a shape reads the same inputs.
const std::vector<float>& random_vec(std::size_t n, float lo, float hi, std::uint32_t seed);

// The median of v (the mean of the two middle values of an even count; 0 when empty), and its
// q-quantile (0 <= q <= 1) by the nearest rank.
double median(std::vector<double> v);
double quantile(std::vector<double> v, double q);

// Settings of this run, fixed before registration.
struct Options {
  bool quick = false;             // fewer shapes, ours on the default ISA only, plus the peers
  bool default_isa_only = false;  // ours on the default ISA only, plus the peers
  std::vector<attn::Isa> isas;    // the ISAs whose kernels run, scalar first
  attn::Isa default_isa = attn::Isa::scalar;  // best_isa(), or ATTN_ISA when set
  int max_threads = 1;                        // the 2-thread variants need 2 cores
};

// Which thread counts a shape runs with: every shape runs on one thread in a full run; two is
// the 2-thread variant; q1 and q2 put the 1- and 2-thread variants in --quick too (which keeps
// under a minute by leaving out the slowest shapes).
enum Variants : unsigned { one = 0, two = 1, q1 = 2, q2 = 4 | two };
constexpr Variants operator|(Variants a, Variants b) {
  return Variants(unsigned(a) | unsigned(b));
}
// The thread counts to register: 1 and/or 2 (2 only on a machine with 2 CPUs or more).
std::vector<int> thread_counts(const Options& options, Variants v);

// The shapes. Every implementation (ours on each ISA, each peer) runs exactly these.
struct MatmulShape {
  const char* routine;  // "matmul" (A·B) or "matmul_nt" (A·Bᵀ)
  std::size_t m, n, k;
  bool trans_b;
  Variants variants;
  bool packed_too = false;  // ours also with B packed once (matmul_packed / matmul_nt_packed)
};
inline constexpr MatmulShape kMatmulShapes[] = {
    {"matmul", 64, 64, 64, false, q1},
    {"matmul", 256, 256, 256, false, q1},
    {"matmul", 1024, 1024, 1024, false, q1 | q2},
    {"matmul", 2048, 2048, 2048, false, q1 | q2},
    {"matmul_nt", 512, 512, 64, true, q1},  // Q·Kᵀ of one 512-token head, d = 64
    {"matmul", 512, 64, 512, false, q1},    // P·V of the same head
    {"matmul", 6, 16, 64, false, q1},       // the seed's Q = X·Wq
    // A 768-wide encoder's fused Q, K, V projection ([Wq | Wk | Wv], as self_attention's
    // benchmark runs it) for 128 tokens, for 16, and for one token (a decoding step).
    {"matmul", 128, 2304, 768, false, q1 | two, true},
    {"matmul", 16, 2304, 768, false, one, true},
    {"matmul", 1, 2304, 768, false, q1, true},
    // The same with W stored [out, in] (PyTorch's Linear), x·Wᵀ.
    {"matmul_nt", 128, 2304, 768, true, two, true},
    {"matmul_nt", 16, 2304, 768, true, one, true},
    {"matmul_nt", 1, 2304, 768, true, q1, true},
};
inline constexpr std::size_t kExpSize = 4096;  // floats: 16 KiB in, 16 KiB out, in L1
inline constexpr float kExpLo = -80.0f, kExpHi = 80.0f;

std::string matmul_shape_name(const MatmulShape& s);

// Checks c = a·op(b) (row-major, lda = k, ldb = trans_b ? k : n, ldc = n) at 64 sampled
// entries against a double-precision dot product, with the bound (k + 2)·eps·Σ|a||b|. Returns an
// empty string when every sample is within it, else a message naming the first one that is not.
std::string check_matmul(const MatmulShape& s, const float* a, const float* b, const float* c);
// Every y[i] of an exp benchmark against std::exp(x[i]) in double, within 1e-6 relative (a
// spot check of the right function, far looser than attn's tested bound): "" if all hold.
std::string check_exp(const float* x, const float* y, std::size_t n);

// attn-bench --alternate=SPEC [--pairs=N] (alternate.cpp): ours on `isa` and every matmul peer
// on one shape in alternating batches; prints the medians and returns the exit status
// (kNoPeerExit where there is no peer to alternate with).
int run_alternate(const std::string& spec, int pairs, attn::Isa isa);
// attn-bench --alternate=attention:B,H,n,d[:THREADS] (alternate_attention.cpp): bidirectional
// attention on `isa` against the probe, causal, and on THREADS > 1 one thread, in alternating
// batches; prints the medians and returns the exit status.
int run_alternate_attention(const std::string& spec, int pairs, attn::Isa isa);
inline constexpr int kNoPeerExit = 77;  // CTest's conventional "skipped"

// Wall, thread CPU and process CPU time, in seconds.
struct Clocks {
  double wall = 0, thread_cpu = 0, process_cpu = 0;
  static Clocks now();
};

// Sets the counters of a benchmark whose loop ran between start and end:
//   FLOP or elem: work per iteration as a rate (shown as e.g. "123.4G/s");
//   peak%: FLOP/s as a percentage of threads × machine_peak() (FLOP benchmarks only);
//   cores: process CPU time / wall time over the loop: 1.0 means one busy thread. A peer that
//          starts threads of its own shows here, and so does a machine too busy to give a
//          multi-threaded benchmark all its cores.
// One-thread rates use the benchmark thread's CPU time, as Google Benchmark's own rates do (time
// the OS gives other processes does not count); multi-threaded ones use wall time.
void set_counters(benchmark::State& state, const Info& info, double work_per_iteration,
                  const Clocks& start, const Clocks& end);

// Runs body() in the benchmark loop and sets the counters. One untimed call first takes
// first-call costs (oneDNN's JIT, attn's scratch arena, page faults) out of the timing, except
// for calls of 1 GFLOP or more, whose first-call costs are small beside them.
template <class Body>
void run_loop(benchmark::State& state, const Info& info, double work_per_iteration, Body&& body) {
  if (work_per_iteration < 1e9) body();
  const Clocks start = Clocks::now();
  for (auto _ : state)
    body();
  set_counters(state, info, work_per_iteration, start, Clocks::now());
}

void register_ours(const Options& options);
void register_peers(const Options& options);
// "name version (details)" of each peer linked in, for the context block.
std::vector<std::string> peer_descriptions();

}  // namespace attn_bench

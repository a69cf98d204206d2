// attn-bench --alternate's rounds: contenders timed in alternating batches within one process,
// each ratio taken between batches seconds apart, with the FMA probe of ours' ISA taking a turn
// in every round (alternate.cpp for matmul against the peers, alternate_attention.cpp for
// attention against its own variants).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "peak.hpp"

namespace attn_bench {

struct Contender {
  Contender(std::string n, std::function<void()> f) : name(std::move(n)), run(std::move(f)) {}
  std::string name;
  std::function<void()> run;
  // >= 0: each of its batches runs with the calling thread pinned to this CPU (affinity.hpp),
  // after one call outside the timing (the move leaves the CPU's caches cold).
  int cpu = -1;
  std::vector<double> seconds;  // per call, one entry per counted batch
  std::vector<double> ratios;   // this batch's time over the adjacent batch of the first contender
};

// Calls per batch: about `seconds` of c.run(), from the time of one call (not counted).
int calls_per_batch(Contender& c, double seconds);

// The part of an --alternate spec after "routine:": `count` positive integers separated by
// commas into dims, then optionally ":THREADS" (a positive count; 1 when absent), and nothing
// else. False for anything else, a sign or a value beyond 2^32.
bool parse_dims(const std::string& text, std::size_t count, std::size_t* dims, int* threads);

// ours' fraction of `threads` times its ISA's probe, one entry per round.
struct ProbeShare {
  std::vector<double> probe_rates;  // FLOP/s of one core
  std::vector<double> of_peak;
};

// `rounds` rounds over all (at least two contenders; all[0] is ours, the reference of every
// ratio). Each opens with a batch of the probe, when it has a loop for the ISA, and a batch of
// all[0] (not counted in its median time: whatever state the probe leaves the core in lands on
// it), whose rate over threads times the probe's is the round's share of the peak (flop per
// call of all[0]); then each other contender's batch after a batch of all[0], its ratio their
// times.
ProbeShare run_rounds(std::vector<Contender>& all, int rounds, int calls, ProbeBatch& probe,
                      double flop, int threads);

// "<what> probe: X GFLOP/s on one core (median); <who> at Y% of it (quartiles ...)", nothing
// where no round ran the probe.
void print_probe_share(const ProbeShare& share, const ProbeBatch& probe, const std::string& who,
                       int threads);

}  // namespace attn_bench

// attn-bench --alternate's rounds (rounds.hpp).
#include "rounds.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "affinity.hpp"
#include "bench.hpp"

namespace attn_bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call over a batch of `calls`.
double time_calls(Contender& c, int calls) {
  const ScopedPin pin(c.cpu);
  if (c.cpu >= 0) c.run();
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i)
    c.run();
  return std::chrono::duration<double>(Clock::now() - t0).count() / calls;
}

// The same, kept in c.seconds (the median time printed).
double time_batch(Contender& c, int calls) {
  const double s = time_calls(c, calls);
  c.seconds.push_back(s);
  return s;
}

}  // namespace

bool parse_dims(const std::string& text, std::size_t count, std::size_t* dims, int* threads) {
  constexpr unsigned long long kMax = 1ull << 32;
  std::size_t pos = 0;
  // A run of digits at pos, at most kMax, nonzero.
  const auto number = [&](unsigned long long* out) {
    unsigned long long v = 0;
    const std::size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && v <= kMax)
      v = v * 10 + static_cast<unsigned long long>(text[pos++] - '0');
    *out = v;
    return pos > start && v > 0 && v <= kMax;
  };
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0 && (pos >= text.size() || text[pos++] != ',')) return false;
    unsigned long long v = 0;
    if (!number(&v)) return false;
    dims[i] = static_cast<std::size_t>(v);
  }
  *threads = 1;
  if (pos == text.size()) return true;
  unsigned long long t = 0;
  if (text[pos++] != ':' || !number(&t) || pos != text.size() || t > 4096) return false;
  *threads = static_cast<int>(t);
  return true;
}

int calls_per_batch(Contender& c, double seconds) {
  const double once = time_calls(c, 1);
  return std::max(1, static_cast<int>(seconds / std::max(once, 1e-9)));
}

ProbeShare run_rounds(std::vector<Contender>& all, int rounds, int calls, ProbeBatch& probe,
                      double flop, int threads) {
  ProbeShare share;
  Contender& ours = all[0];
  for (int round = 0; round < rounds; ++round) {
    if (probe.ok()) {
      const double rate = probe.run();
      const double mine = time_calls(ours, calls);
      if (rate > 0.0) {
        share.probe_rates.push_back(rate);
        share.of_peak.push_back(flop / mine / (threads * rate));
      }
    }
    for (std::size_t i = 1; i < all.size(); ++i) {
      const double mine = time_batch(ours, calls);
      all[i].ratios.push_back(time_batch(all[i], calls) / mine);
    }
  }
  return share;
}

void print_probe_share(const ProbeShare& share, const ProbeBatch& probe, const std::string& who,
                       int threads) {
  if (share.of_peak.empty()) return;
  const std::string of = threads == 1 ? "it" : std::to_string(threads) + " x it";
  std::printf(
      "%s probe: %.1f GFLOP/s on one core (median); %s at %.1f%% of %s (quartiles %.1f-%.1f%%)\n",
      probe.what(), median(share.probe_rates) * 1e-9, who.c_str(), 100.0 * median(share.of_peak),
      of.c_str(), 100.0 * quantile(share.of_peak, 0.25), 100.0 * quantile(share.of_peak, 0.75));
}

}  // namespace attn_bench

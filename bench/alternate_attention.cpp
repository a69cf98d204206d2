// attn-bench --alternate=attention:B,H,n,d[:THREADS]: issue 5's ratios on one shape, each from
// batches seconds apart within one process (rounds.hpp): bidirectional attention's fraction of
// the FMA probe, causal's speed-up over bidirectional, and on more than one thread the speed-up
// over one thread. Runs minutes apart on a drifting host move these by more than the targets'
// margins (README "Where attn stands").
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "affinity.hpp"
#include "attn/reference.hpp"
#include "bench.hpp"
#include "peak.hpp"
#include "rounds.hpp"

namespace attn_bench {
namespace {

// The most CPUs that get a pinned one-thread baseline each (above, one unpinned baseline).
constexpr std::size_t kMaxPinnedBaselines = 8;

struct AttentionSpec {
  std::size_t batch = 0, heads = 0, n = 0, d = 0;
  int threads = 1;
};

// "attention:B,H,n,d" then optionally ":THREADS".
bool parse_attention_spec(const std::string& spec, AttentionSpec* out) {
  const std::string prefix = "attention:";
  if (spec.compare(0, prefix.size(), prefix) != 0) return false;
  std::size_t dims[4];
  int threads = 1;
  if (!parse_dims(spec.substr(prefix.size()), 4, dims, &threads)) return false;
  // q, k, v and the outputs are allocated whole: refuse shapes whose sizes in bytes overflow.
  std::size_t floats = 1;
  for (const std::size_t x : dims) {
    if (floats > SIZE_MAX / sizeof(float) / x) return false;
    floats *= x;
  }
  *out = AttentionSpec{dims[0], dims[1], dims[2], dims[3], threads};
  return true;
}

// out's row i of (batch b, head h) against attn::reference::attention (double precision) of that
// query row over keys 0..i (causal) or all of them: "" if every element is within 1e-4 (the
// values lie in [-1, 1], so the outputs do too; a spot check of the right function, far looser
// than README "Accuracy").
std::string check_row(const AttentionSpec& s, const float* q, const float* k, const float* v,
                      const float* out, std::size_t b, std::size_t h, std::size_t i, bool causal) {
  const std::size_t head = (b * s.heads + h) * s.n * s.d, keys = causal ? i + 1 : s.n;
  const auto one_head = [&](const float* x) {
    return attn::make_bhsd<const float>(x + head, 1, 1, s.n, s.d);
  };
  std::vector<float> ref(s.d);
  const attn::Status st = attn::reference::attention(
      attn::seq_slice(one_head(q), i, 1), attn::seq_slice(one_head(k), 0, keys),
      attn::seq_slice(one_head(v), 0, keys), attn::make_bhsd(ref.data(), 1, 1, 1, s.d));
  if (!st.ok()) return std::string("reference: ") + st.message();
  for (std::size_t c = 0; c < s.d; ++c) {
    const float got = out[head + i * s.d + c];
    if (!(std::fabs(got - ref[c]) <= 1e-4f)) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "%s batch %zu head %zu row %zu column %zu: %.9g, reference %.9g",
                    causal ? "causal" : "bidirectional", b, h, i, c, got, ref[c]);
      return msg;
    }
  }
  return "";
}

}  // namespace

int run_alternate_attention(const std::string& spec, int pairs, attn::Isa isa) {
  AttentionSpec s;
  if (!parse_attention_spec(spec, &s) || pairs < 1) {
    std::fprintf(stderr,
                 "attn-bench: --alternate takes attention:B,H,n,d, optionally followed by "
                 ":THREADS (got \"%s\"), and --pairs a positive count\n",
                 spec.c_str());
    return 2;
  }
  const std::size_t elems = s.batch * s.heads * s.n * s.d;
  // The attention benchmarks' data (bench_ours.cpp uses the same seeds).
  const auto& q = random_vec(elems, -1, 1, 5);
  const auto& k = random_vec(elems, -1, 1, 6);
  const auto& v = random_vec(elems, -1, 1, 7);
  std::vector<float> out_bi(elems), out_causal(elems), out_one(elems);
  attn::Context ctx, one;
  if (!ctx.set_isa(isa).ok() || !ctx.set_num_threads(s.threads).ok() || !one.set_isa(isa).ok()) {
    std::fprintf(stderr, "attn-bench: cannot run %s on %d threads\n", attn::isa_name(isa),
                 s.threads);
    return 1;
  }
  const auto qv = attn::make_bhsd<const float>(q.data(), s.batch, s.heads, s.n, s.d);
  const auto kv = attn::make_bhsd<const float>(k.data(), s.batch, s.heads, s.n, s.d);
  const auto vv = attn::make_bhsd<const float>(v.data(), s.batch, s.heads, s.n, s.d);
  attn::AttentionOptions causal;
  causal.mask = attn::Mask::causal();
  attn::Status failed;
  const auto call = [&](attn::Context& c, std::vector<float>& out,
                        const attn::AttentionOptions& o) {
    const auto ov = attn::make_bhsd(out.data(), s.batch, s.heads, s.n, s.d);
    const attn::Status st = attn::attention(c, qv, kv, vv, ov, o);
    if (!st.ok()) failed = st;
  };
  std::vector<Contender> all;
  all.emplace_back(std::string("bidirectional ") + attn::isa_name(isa),
                   [&] { call(ctx, out_bi, {}); });
  all.emplace_back("causal", [&] { call(ctx, out_causal, causal); });
  // On more threads, the speed-up over one thread: where the process may run on 2 to
  // kMaxPinnedBaselines CPUs, one baseline pinned to each (a guest's vCPUs can run this call 10%
  // apart, and an unpinned baseline lands on either); else one wherever the OS runs it.
  std::vector<int> cpus;
  if (s.threads > 1) {
    cpus = allowed_cpus();
    if (cpus.size() < 2 || cpus.size() > kMaxPinnedBaselines) cpus.clear();
    if (cpus.empty()) all.emplace_back("bidirectional, 1 thread", [&] { call(one, out_one, {}); });
    for (const int cpu : cpus) {
      all.emplace_back("1 thread on CPU " + std::to_string(cpu), [&] { call(one, out_one, {}); });
      all.back().cpu = cpu;
    }
  }
  // Every contender's result is checked once, at rows spread over the batch, heads and positions.
  for (auto& x : all)
    x.run();
  if (!failed.ok()) {
    std::fprintf(stderr, "attn-bench: attention failed: %s\n", failed.message());
    return 1;
  }
  for (std::size_t r = 0; r < 8; ++r) {
    const std::size_t b = r % s.batch, h = (r / s.batch) % s.heads, i = (r * (s.n - 1)) / 7;
    for (const bool c : {false, true}) {
      const std::string wrong = check_row(s, q.data(), k.data(), v.data(),
                                          c ? out_causal.data() : out_bi.data(), b, h, i, c);
      if (!wrong.empty()) {
        std::fprintf(stderr, "attn-bench: attention %s\n", wrong.c_str());
        return 1;
      }
    }
  }
  // attn's contract: the same bits on any thread count.
  if (s.threads > 1 && std::memcmp(out_one.data(), out_bi.data(), elems * sizeof(float)) != 0) {
    std::fprintf(stderr, "attn-bench: attention on 1 and %d threads differ\n", s.threads);
    return 1;
  }
  // GFLOP/s as the attention benchmarks count them: 4 d FLOP per (query, key) pair attended.
  const double pairs_bi = double(s.batch) * double(s.heads) * double(s.n) * double(s.n);
  const double pairs_causal = double(s.batch) * double(s.heads) * double(s.n) * double(s.n + 1) / 2;
  const double flop_bi = 4.0 * double(s.d) * pairs_bi;
  const int calls = calls_per_batch(all[0], 0.02);
  ProbeBatch probe(isa, 0.02);
  const ProbeShare share = run_rounds(all, pairs, calls, probe, flop_bi, s.threads);
  if (!failed.ok()) {
    std::fprintf(stderr, "attn-bench: attention failed: %s\n", failed.message());
    return 1;
  }
  std::printf("attention %zux%zux%zux%zu (B x H x n x d), %d thread(s), %d rounds of %d calls:\n",
              s.batch, s.heads, s.n, s.d, s.threads, pairs, calls);
  std::printf("%-24s %14s %10s  %s\n", "", "time (median)", "GFLOP/s",
              "speed-up: median (quartiles)");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Contender& x = all[i];
    const double t = median(x.seconds);
    const double flop = 4.0 * double(s.d) * (i == 1 ? pairs_causal : pairs_bi);
    std::printf("%-24s %11.4g ms %10.1f", x.name.c_str(), t * 1e3, flop / t * 1e-9);
    // ratios are this contender's time over bidirectional's on the threads asked for.
    std::vector<double> up = x.ratios;
    if (i == 1) {
      for (double& r : up)
        r = 1.0 / r;
    }
    if (!up.empty()) {
      std::printf("  %.3fx (%.3f-%.3f) %s", median(up), quantile(up, 0.25), quantile(up, 0.75),
                  i == 1 ? "causal over bidirectional"
                         : (std::to_string(s.threads) + " threads over 1").c_str());
    }
    std::printf("\n");
  }
  if (cpus.size() >= 2) {
    // Per round, the mean of the pinned baselines' ratios: the threads' speed-up over the mean
    // of the CPUs' one-thread times.
    std::vector<double> mean;
    for (std::size_t r = 0; r < all[2].ratios.size(); ++r) {
      double sum = 0.0;
      for (std::size_t i = 2; i < all.size(); ++i)
        sum += all[i].ratios[r];
      mean.push_back(sum / double(all.size() - 2));
    }
    std::printf("%d threads over 1 on the mean of the %zu CPUs' times: %.3fx (%.3f-%.3f)\n",
                s.threads, cpus.size(), median(mean), quantile(mean, 0.25), quantile(mean, 0.75));
  }
  print_probe_share(share, probe, "bidirectional", s.threads);
  if (s.threads > 1 && flop_bi < 2e6) {
    std::printf(
        "(attn runs a call of under about 2 MFLOP on the caller's thread alone, whatever "
        "the thread count: README, \"API\")\n");
  }
  return 0;
}

}  // namespace attn_bench

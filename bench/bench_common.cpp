// The registry, the shapes' names, the result check and the counters.
#include <time.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>

#include "bench.hpp"

namespace attn_bench {
namespace {

std::vector<Info>& infos() {
  static std::vector<Info> v;
  return v;
}
std::map<std::string, std::size_t>& index() {
  static std::map<std::string, std::size_t> m;
  return m;
}
std::vector<std::function<void(benchmark::State&)>>& functions() {
  static std::vector<std::function<void(benchmark::State&)>> v;
  return v;
}
double g_peak = 0.0;

double seconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

void add(const Info& info, std::function<void(benchmark::State&)> fn) {
  infos().push_back(info);
  functions().push_back(std::move(fn));
}

void commit() {
  // Rank of each (routine, shape, threads) group by first appearance; stable within a group.
  std::map<std::string, std::size_t> rank;
  auto group = [](const Info& i) {
    return i.routine + "|" + i.shape + "|" + std::to_string(i.threads);
  };
  for (const Info& i : infos())
    rank.emplace(group(i), rank.size());
  std::vector<std::size_t> order(infos().size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rank[group(infos()[a])] < rank[group(infos()[b])];
  });
  std::vector<Info> sorted;
  for (std::size_t i : order) {
    index()[infos()[i].name] = sorted.size();
    sorted.push_back(infos()[i]);
    auto* b = benchmark::RegisterBenchmark(infos()[i].name.c_str(), std::move(functions()[i]));
    // With several threads, one thread's CPU time says nothing about the elapsed time: rates
    // are over wall time (and Google Benchmark appends "/real_time" to the name).
    if (infos()[i].threads > 1) b->UseRealTime();
  }
  infos() = std::move(sorted);
  functions().clear();
}

const std::vector<Info>& registry() {
  return infos();
}

const Info* find(const std::string& name) {
  const auto it = index().find(name);
  return it == index().end() ? nullptr : &infos()[it->second];
}

std::string base_name(const std::string& run_name) {
  const std::string suffix = "/real_time";
  if (run_name.size() > suffix.size() &&
      run_name.compare(run_name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return run_name.substr(0, run_name.size() - suffix.size());
  return run_name;
}

std::string full_name(const std::string& routine, const std::string& impl, const std::string& shape,
                      int threads) {
  std::string s = routine + "_" + impl + "/" + shape;
  if (threads != 1) s += "/threads:" + std::to_string(threads);
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)];
}

double machine_peak() {
  return g_peak;
}
void set_machine_peak(double flops) {
  g_peak = flops;
}

const std::vector<float>& random_vec(std::size_t n, float lo, float hi, std::uint32_t seed) {
  static std::map<std::tuple<std::size_t, float, float, std::uint32_t>, std::vector<float>> cache;
  std::vector<float>& v = cache[{n, lo, hi, seed}];
  if (v.size() == n) return v;
  std::mt19937 gen(seed);
  v.resize(n);
  // Not std::uniform_real_distribution: its output differs between standard libraries.
  for (float& x : v)
    x = lo + (hi - lo) * static_cast<float>(gen() >> 8) * 0x1.0p-24f;
  return v;
}

std::vector<int> thread_counts(const Options& options, Variants v) {
  std::vector<int> t;
  if (!options.quick || (v & q1)) t.push_back(1);
  const bool two_in_mode = options.quick ? (v & q2) == q2 : (v & two) != 0;
  if (two_in_mode && options.max_threads >= 2) t.push_back(2);
  return t;
}

std::string matmul_shape_name(const MatmulShape& s) {
  return std::to_string(s.m) + "/" + std::to_string(s.n) + "/" + std::to_string(s.k);
}

std::string check_matmul(const MatmulShape& s, const float* a, const float* b, const float* c) {
  std::mt19937 gen(7);
  for (int t = 0; t < 64; ++t) {
    const std::size_t i = gen() % s.m, j = gen() % s.n;
    double dot = 0.0, mag = 0.0;
    for (std::size_t p = 0; p < s.k; ++p) {
      const double x = a[i * s.k + p];
      const double y = s.trans_b ? b[j * s.k + p] : b[p * s.n + j];
      dot += x * y;
      mag += std::fabs(x * y);
    }
    const double got = c[i * s.n + j];
    const double bound = static_cast<double>(s.k + 2) * FLT_EPSILON * mag;
    if (!(std::fabs(got - dot) <= bound)) {
      char msg[160];
      std::snprintf(msg, sizeof msg, "wrong result: c[%zu][%zu] = %.9g, expected %.9g (bound %.3g)",
                    i, j, got, dot, bound);
      return msg;
    }
  }
  return {};
}

std::string check_exp(const float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double want = std::exp(double(x[i]));
    if (!(std::fabs(double(y[i]) - want) <= 1e-6 * want))
      return "wrong result at x = " + std::to_string(x[i]);
  }
  return {};
}

Clocks Clocks::now() {
  Clocks c;
  c.wall = seconds(CLOCK_MONOTONIC);
  c.thread_cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
  c.process_cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
  return c;
}

void set_counters(benchmark::State& state, const Info& info, double work_per_iteration,
                  const Clocks& start, const Clocks& end) {
  using benchmark::Counter;
  state.counters[info.unit == Unit::flop ? "FLOP" : "elem"] =
      Counter(work_per_iteration, Counter::kIsIterationInvariantRate, Counter::OneK::kIs1000);
  const double iterations = static_cast<double>(state.iterations());
  const double wall = end.wall - start.wall;
  // The time Google Benchmark's rates use: this thread's CPU time, or wall time with threads.
  const double time = info.threads > 1 ? wall : end.thread_cpu - start.thread_cpu;
  if (info.unit == Unit::flop && g_peak > 0 && time > 0) {
    state.counters["peak%"] =
        100.0 * work_per_iteration * iterations / time / (g_peak * info.threads);
  }
  if (wall > 0) state.counters["cores"] = (end.process_cpu - start.process_cpu) / wall;
}

}  // namespace attn_bench

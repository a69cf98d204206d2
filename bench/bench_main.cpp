// attn-bench: Google Benchmark of attn's routines on every ISA the CPU supports.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attn/attn.hpp"

namespace {

std::vector<float> random_vec(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(gen);
  return v;
}

bool use_isa(benchmark::State& state, attn::Context& ctx, attn::Isa isa) {
  if (!attn::isa_supported(isa) || !ctx.set_isa(isa).ok()) {
    state.SkipWithError("ISA not supported on this CPU");
    return false;
  }
  return true;
}

void BM_matmul(benchmark::State& state, attn::Isa isa) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  attn::Context ctx;
  if (!use_isa(state, ctx, isa)) return;
  auto a = random_vec(m * k), b = random_vec(k * n);
  std::vector<float> c(m * n);
  for (auto _ : state) {
    attn::matmul(ctx, attn::make_matrix<const float>(a.data(), m, k), attn::Transpose::no,
                 attn::make_matrix<const float>(b.data(), k, n), attn::Transpose::no,
                 attn::make_matrix(c.data(), m, n));
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_exp(benchmark::State& state, attn::Isa isa) {
  const auto n = static_cast<std::size_t>(state.range(0));
  attn::Context ctx;
  if (!use_isa(state, ctx, isa)) return;
  auto x = random_vec(n, -80.0f, 80.0f);
  std::vector<float> y(n);
  for (auto _ : state) {
    attn::exp(ctx, x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["Gelem/s"] =
      benchmark::Counter(double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_softmax(benchmark::State& state, attn::Isa isa) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t rows = std::max<std::size_t>(1, 65536 / n);
  attn::Context ctx;
  if (!use_isa(state, ctx, isa)) return;
  auto x = random_vec(rows * n, -10.0f, 10.0f);
  std::vector<float> y(rows * n);
  for (auto _ : state) {
    attn::softmax(ctx, attn::make_matrix<const float>(x.data(), rows, n),
                  attn::make_matrix(y.data(), rows, n));
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["Gelem/s"] =
      benchmark::Counter(double(rows * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_attention(benchmark::State& state, attn::Isa isa, bool causal) {
  const auto h = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto d = static_cast<std::size_t>(state.range(2));
  attn::Context ctx;
  if (!use_isa(state, ctx, isa)) return;
  auto q = random_vec(h * n * d), k = random_vec(h * n * d), v = random_vec(h * n * d);
  std::vector<float> out(h * n * d);
  attn::AttentionOptions o;
  if (causal) o.mask = attn::Mask::causal();
  for (auto _ : state) {
    attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, h, n, d),
                    attn::make_bhsd<const float>(k.data(), 1, h, n, d),
                    attn::make_bhsd<const float>(v.data(), 1, h, n, d),
                    attn::make_bhsd(out.data(), 1, h, n, d), o);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * double(h) * double(n) * double(n) * double(d) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  for (attn::Isa isa :
       {attn::Isa::scalar, attn::Isa::sse2, attn::Isa::avx2, attn::Isa::avx512, attn::Isa::neon}) {
    if (!attn::isa_supported(isa)) continue;
    const std::string s = attn::isa_name(isa);
    benchmark::RegisterBenchmark(("matmul_" + s).c_str(), BM_matmul, isa)
        ->Args({64, 64, 64})
        ->Args({256, 256, 256})
        ->Args({512, 512, 512});
    benchmark::RegisterBenchmark(("exp_" + s).c_str(), BM_exp, isa)->Arg(4096);
    benchmark::RegisterBenchmark(("softmax_" + s).c_str(), BM_softmax, isa)
        ->Arg(16)
        ->Arg(128)
        ->Arg(4096);
    benchmark::RegisterBenchmark(("attention_" + s).c_str(), BM_attention, isa, false)
        ->Args({1, 6, 16})
        ->Args({12, 128, 64});
    benchmark::RegisterBenchmark(("attention_causal_" + s).c_str(), BM_attention, isa, true)
        ->Args({12, 128, 64});
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

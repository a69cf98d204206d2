// The peers' benchmarks: the same shapes, data, checks and counters as ours.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "peers.hpp"

namespace attn_bench {
namespace {

#if defined(ATTN_BENCH_HAVE_EIGEN)
class EigenGemm final : public PeerGemm {
 public:
  std::string prepare(const GemmProblem& p, int threads) override {
    p_ = p;
    eigen_peer::set_threads(threads);
    return {};
  }
  void run() override { eigen_peer::gemm(p_.m, p_.n, p_.k, p_.trans_b, p_.a, p_.b, p_.c); }

 private:
  GemmProblem p_;
};
#endif

}  // namespace

std::vector<std::pair<std::string, GemmFactory>> gemm_peers() {
  std::vector<std::pair<std::string, GemmFactory>> peers;
#if defined(ATTN_BENCH_HAVE_OPENBLAS)
  peers.emplace_back("openblas", make_openblas_gemm);
#endif
#if defined(ATTN_BENCH_HAVE_BLIS)
  peers.emplace_back("blis", make_blis_gemm);
#endif
#if defined(ATTN_BENCH_HAVE_ONEDNN)
  peers.emplace_back("onednn", make_onednn_matmul);
  peers.emplace_back("onednn-sgemm", make_onednn_sgemm);
#endif
#if defined(ATTN_BENCH_HAVE_EIGEN)
  if (eigen_peer::cpu_supported())
    peers.emplace_back("eigen", [] { return std::unique_ptr<PeerGemm>(new EigenGemm); });
#endif
  return peers;
}

namespace {

void register_gemm(const std::string& peer, const GemmFactory& make, const MatmulShape& shape,
                   int threads) {
  Info info;
  info.routine = shape.routine;
  info.impl = peer;
  info.ours = false;
  info.shape = matmul_shape_name(shape);
  info.threads = threads;
  info.name = full_name(info.routine, info.impl, info.shape, threads);
  add(info, [info, make, shape, threads](benchmark::State& state) {
    const std::size_t m = shape.m, n = shape.n, k = shape.k;
    // The same data as ours (bench_ours.cpp uses the same seeds).
    const auto& a = random_vec(m * k, -1, 1, 1);
    const auto& b = random_vec(k * n, -1, 1, 2);
    std::vector<float> c(m * n);
    const GemmProblem p{m, n, k, shape.trans_b, a.data(), b.data(), c.data()};
    const auto gemm = make();
    const std::string error = gemm->prepare(p, threads);
    if (!error.empty()) return state.SkipWithError(error.c_str());
    state.SetLabel(gemm->label());
    run_loop(state, info, 2.0 * double(m) * double(n) * double(k), [&] {
      gemm->run();
      benchmark::ClobberMemory();
    });
    const std::string wrong = check_matmul(shape, a.data(), b.data(), c.data());
    if (!wrong.empty()) state.SkipWithError(wrong.c_str());
  });
}

[[maybe_unused]] void register_exp(const std::string& peer, ExpFn fn) {
  Info info;
  info.routine = "exp";
  info.impl = peer;
  info.ours = false;
  info.shape = std::to_string(kExpSize);
  info.unit = Unit::elem;
  info.name = full_name(info.routine, info.impl, info.shape, 1);
  add(info, [info, fn](benchmark::State& state) {
    const auto& x = random_vec(kExpSize, kExpLo, kExpHi, 3);
    std::vector<float> y(kExpSize);
    run_loop(state, info, double(kExpSize), [&] {
      fn(x.data(), y.data(), kExpSize);
      benchmark::ClobberMemory();
    });
    const std::string wrong = check_exp(x.data(), y.data(), kExpSize);
    if (!wrong.empty()) state.SkipWithError(wrong.c_str());
  });
}

}  // namespace

void register_peers(const Options& options) {
  const auto peers = gemm_peers();
  for (const auto& s : kMatmulShapes) {
    for (int t : thread_counts(options, s.variants)) {
      for (const auto& [name, make] : peers)
        register_gemm(name, make, s, t);
    }
  }
  // The AVX2 entry points need AVX2 + FMA, the AVX-512 ones AVX-512F: attn's checks of the
  // same ISAs (CPU and OS support) decide.
  [[maybe_unused]] const bool avx2 = attn::isa_supported(attn::Isa::avx2);
  [[maybe_unused]] const bool avx512 = attn::isa_supported(attn::Isa::avx512);
#if defined(ATTN_BENCH_HAVE_SLEEF)
  if (avx2) register_exp("sleef-avx2", sleef_exp_avx2);
  if (avx512) register_exp("sleef-avx512", sleef_exp_avx512);
#endif
#if defined(ATTN_BENCH_HAVE_LIBMVEC)
  if (avx2) register_exp("libmvec-avx2", libmvec_exp_avx2);
  if (avx512) register_exp("libmvec-avx512", libmvec_exp_avx512);
#endif
}

std::vector<std::string> peer_descriptions() {
  std::vector<std::string> d;
#if defined(ATTN_BENCH_HAVE_OPENBLAS)
  d.push_back(openblas_description());
#endif
#if defined(ATTN_BENCH_HAVE_BLIS)
  d.push_back(blis_description());
#endif
#if defined(ATTN_BENCH_HAVE_ONEDNN)
  d.push_back(onednn_description());
#endif
#if defined(ATTN_BENCH_HAVE_EIGEN)
  d.push_back(std::string(eigen_peer::description()) +
              (eigen_peer::cpu_supported() ? "" : " [not run: built for another CPU]"));
#endif
#if defined(ATTN_BENCH_HAVE_SLEEF)
  d.push_back(sleef_description());
#endif
#if defined(ATTN_BENCH_HAVE_LIBMVEC)
  d.push_back(libmvec_description());
#endif
  return d;
}

}  // namespace attn_bench

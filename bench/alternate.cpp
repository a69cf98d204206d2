// attn-bench --alternate: ours and each matmul peer on one shape, in alternating batches of calls
// within one process (ours, peer 1, ours, peer 2, ...), so that every ratio compares batches
// seconds apart; the FMA probe of ours' ISA takes a turn in each round, for ours' fraction of it.
// On a shared, drifting host this resolves differences of a few percent that separate benchmark
// runs, or Google Benchmark's repetitions, blur (see bench/vs-peers).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "peak.hpp"
#include "peers.hpp"
#include "rounds.hpp"

namespace attn_bench {
namespace {

// "matmul:M,N,K" or "matmul_nt:M,N,K" (or either with "_packed": B pre-packed), then
// optionally ":THREADS".
bool parse_spec(const std::string& spec, MatmulShape* shape, int* threads, bool* packed) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos) return false;
  std::string routine = spec.substr(0, colon);
  const std::string suffix = "_packed";
  *packed = routine.size() > suffix.size() &&
            routine.compare(routine.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (*packed) routine.resize(routine.size() - suffix.size());
  if (routine != "matmul" && routine != "matmul_nt") return false;
  std::size_t dims[3];
  if (!parse_dims(spec.substr(colon + 1), 3, dims, threads)) return false;
  const std::size_t m = dims[0], n = dims[1], k = dims[2];
  // Each operand is allocated whole: refuse shapes whose sizes in bytes overflow.
  constexpr std::size_t kMaxFloats = SIZE_MAX / sizeof(float);
  if (m > kMaxFloats / k || n > kMaxFloats / k || m > kMaxFloats / n) return false;
  *shape = MatmulShape{
      routine == "matmul" ? "matmul" : "matmul_nt", m, n, k, routine == "matmul_nt", one};
  return true;
}

}  // namespace

int run_alternate(const std::string& spec, int pairs, attn::Isa isa) {
  if (spec.compare(0, 10, "attention:") == 0) return run_alternate_attention(spec, pairs, isa);
  MatmulShape shape;
  int threads = 1;
  bool packed = false;
  if (!parse_spec(spec, &shape, &threads, &packed) || pairs < 1) {
    std::fprintf(stderr,
                 "attn-bench: --alternate takes matmul:M,N,K or matmul_nt:M,N,K (or matmul_packed, "
                 "matmul_nt_packed) or attention:B,H,n,d, optionally followed by :THREADS (got "
                 "\"%s\"), and --pairs a positive count\n",
                 spec.c_str());
    return 2;
  }
  const std::size_t m = shape.m, n = shape.n, k = shape.k;
  // The benchmarks' data (bench_ours.cpp and bench_peers.cpp use the same seeds).
  const auto& a = random_vec(m * k, -1, 1, 1);
  const auto& b = random_vec(k * n, -1, 1, 2);
  std::vector<float> c_ours(m * n), c_peer(m * n);

  attn::Context ctx;
  if (!ctx.set_isa(isa).ok() || !ctx.set_num_threads(threads).ok()) {
    std::fprintf(stderr, "attn-bench: cannot run %s on %d threads\n", attn::isa_name(isa), threads);
    return 1;
  }
  const attn::MatrixView<const float> av{a.data(), m, k, k};
  const attn::MatrixView<const float> bv = shape.trans_b
                                               ? attn::MatrixView<const float>{b.data(), n, k, k}
                                               : attn::MatrixView<const float>{b.data(), k, n, n};
  const attn::Transpose tb = shape.trans_b ? attn::Transpose::yes : attn::Transpose::no;
  std::vector<Contender> all;
  // Packed: ours on B packed once (outside the timing), beside ours on B as it is and the peers;
  // oneDNN's matmul primitive then also runs on weights reordered once into its own layout.
  attn::PackedMatrix b_packed;
  auto peer_list = gemm_peers();
  if (packed) {
    if (!attn::pack_matrix(ctx, bv, tb, &b_packed).ok()) {
      std::fprintf(stderr, "attn-bench: pack_matrix failed\n");
      return 1;
    }
    all.emplace_back(std::string("ours ") + attn::isa_name(isa) + " packed", [&] {
      (void)attn::matmul(ctx, av, attn::Transpose::no, b_packed, {c_ours.data(), m, n, n});
    });
    all.emplace_back(std::string("ours ") + attn::isa_name(isa), [&] {
      (void)attn::matmul(ctx, av, attn::Transpose::no, bv, tb, {c_ours.data(), m, n, n});
    });
#if defined(ATTN_BENCH_HAVE_ONEDNN)
    peer_list.emplace_back("onednn-packed", make_onednn_matmul_packed);
#endif
  } else {
    all.emplace_back(std::string("ours ") + attn::isa_name(isa), [&] {
      (void)attn::matmul(ctx, av, attn::Transpose::no, bv, tb, {c_ours.data(), m, n, n});
    });
  }
  const GemmProblem p{m, n, k, shape.trans_b, a.data(), b.data(), c_peer.data()};
  std::vector<std::unique_ptr<PeerGemm>> peers;
  for (const auto& [name, make] : peer_list) {
    auto peer = make();
    const std::string error = peer->prepare(p, threads);
    if (!error.empty()) {
      std::printf("%s: not run (%s)\n", name.c_str(), error.c_str());
      continue;
    }
    PeerGemm* raw = peer.get();
    peers.push_back(std::move(peer));
    all.emplace_back(name, [raw] { raw->run(); });
  }
  // Nothing to alternate with: no matrix-multiply peer was found when attn-bench was built
  // (bench/CMakeLists.txt), or none can run here (the "not run" lines above). Exit status 77,
  // which the smoke test bench.alternate-peers tells CTest means "skipped".
  if (all.size() < 2) {
    std::fprintf(stderr,
                 "attn-bench: --alternate has no peer to time against: build attn-bench where "
                 "OpenBLAS, BLIS, oneDNN or Eigen is installed (on Debian: apt-get install "
                 "libopenblas-dev libblis-dev libdnnl-dev libeigen3-dev, then cmake --preset "
                 "bench again), or use matmul_packed: to time ours on packed B against ours\n");
    return kNoPeerExit;
  }
  // Every contender's result is checked once, as the benchmarks check theirs.
  for (auto& x : all) {
    x.run();
    const std::string wrong = check_matmul(
        shape, a.data(), b.data(), x.name.rfind("ours", 0) == 0 ? c_ours.data() : c_peer.data());
    if (!wrong.empty()) {
      std::fprintf(stderr, "attn-bench: %s: %s\n", x.name.c_str(), wrong.c_str());
      return 1;
    }
  }
  // Batches of about 20 ms of ours; the FMA probe of ours' ISA opens each round (rounds.hpp), for
  // ours' fraction of that ISA's peak measured seconds apart as the peer ratios are, where the
  // benchmarks' peak% divides by one probe of the best ISA taken before them all.
  const int calls = calls_per_batch(all[0], 0.02);
  const double flop = 2.0 * double(m) * double(n) * double(k);
  ProbeBatch probe(isa, 0.02);
  const ProbeShare share = run_rounds(all, pairs, calls, probe, flop, threads);
  std::printf("%s%s %zux%zux%zu, %d thread(s), %d pairs of %d calls per peer:\n", shape.routine,
              packed ? " (B pre-packed)" : "", m, n, k, threads, pairs, calls);
  std::printf("%-20s %14s %10s  %-34s %s\n", "", "time (median)", "GFLOP/s",
              "ours/peer speed: median (quartiles)", "ours faster");
  for (const auto& x : all) {
    const double t = median(x.seconds);
    std::printf("%-20s %11.4g us %10.1f", x.name.c_str(), t * 1e6, flop / t * 1e-9);
    if (!x.ratios.empty()) {
      const auto wins =
          std::count_if(x.ratios.begin(), x.ratios.end(), [](double r) { return r > 1.0; });
      char ratio[64];
      std::snprintf(ratio, sizeof ratio, "%.3fx (%.3f-%.3f)", median(x.ratios),
                    quantile(x.ratios, 0.25), quantile(x.ratios, 0.75));
      std::printf("  %-34s %ld of %zu", ratio, static_cast<long>(wins), x.ratios.size());
    }
    std::printf("\n");
  }
  print_probe_share(share, probe, "ours", threads);
  return 0;
}

}  // namespace attn_bench

// attn-bench: Google Benchmark of attn's routines on every ISA the CPU supports, beside the peer
// libraries found at configure time, with the machine's FMA peak measured at start-up.
//
//   attn-bench [--quick] [--summary] [--default-isa] [Google Benchmark flags]
//   attn-bench --alternate=matmul:M,N,K[:THREADS] [--pairs=N]   (or matmul_nt: A·Bᵀ; with
//                                                              _packed: B pre-packed)
//   attn-bench --alternate=attention:B,H,n,d[:THREADS] [--pairs=N]
//
// --quick:       ours on the default ISA and the peers, the shapes that run fast (3 repetitions
//                of at least 0.02 s), then a summary table. Under a minute. Later flags
//                override its defaults.
// --summary:     print the summary table after any run.
// --default-isa: ours on the default ISA only (and the peers), every shape.
// --alternate:   no Google Benchmark run: ours on the default ISA and each matmul peer on one
//                shape, in alternating batches of about 20 ms (--pairs of them per peer,
//                default 21), then each peer's median time and ours/peer speed ratio, and
//                ours' fraction of its ISA's probe, which takes a turn in every round
//                (alternate.cpp). With attention:, bidirectional attention, causal and (on
//                more threads) one thread instead (alternate_attention.cpp).
// ATTN_ISA=<isa> makes <isa> the default ISA and leaves out the ISAs above it, as on a CPU
// without them (the peers still run on whatever they detect).
// Exit status: 0, or 1 when a benchmark failed (attn returned an error, or a result was wrong),
// 2 for unknown flags.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "peak.hpp"
#include "peers.hpp"
#include "summary.hpp"

namespace {

const char* kUsage =
    "attn-bench: attn's matmul, exp, softmax, attention and self-attention on every ISA this CPU\n"
    "supports, beside the peer libraries found when it was built.\n"
    "\n"
    "  attn-bench [--quick] [--summary] [--default-isa] [Google Benchmark flags]\n"
    "\n"
    "  --quick        ours on the default ISA and the peers, the shapes that run fast, 3 short\n"
    "                 repetitions each, then a summary table (under a minute). Later flags\n"
    "                 override its defaults.\n"
    "  --summary      print the summary table at the end of any run.\n"
    "  --default-isa  ours on the default ISA only (and the peers), every shape.\n"
    "  --alternate=matmul:M,N,K[:THREADS]  (or matmul_nt:, A·Bᵀ) no benchmark run: ours and\n"
    "                 each matmul peer in alternating batches of about 20 ms, --pairs=N per\n"
    "                 peer (default 21), then the median ours/peer speed ratio of each peer\n"
    "                 and ours' median fraction of its ISA's probe, timed once per round.\n"
    "                 matmul_packed: (or matmul_nt_packed:) ours on B packed once\n"
    "                 (attn::pack_matrix), beside ours unpacked, the peers, and oneDNN's\n"
    "                 matmul primitive on weights reordered once (onednn-packed).\n"
    "  --alternate=attention:B,H,n,d[:THREADS]  no benchmark run: ours bidirectional, causal\n"
    "                 and (on THREADS > 1) one thread in alternating batches, --pairs=N\n"
    "                 rounds: causal's and the threads' median speed-ups, and bidirectional's\n"
    "                 median fraction of the probe (issue 5's targets, seconds apart).\n"
    "                 On 2-8 allowed CPUs the one-thread baseline runs pinned to each.\n"
    "  ATTN_ISA=<isa>  run <isa> as the default and leave out the ISAs above it.\n"
    "\n"
    "Counters: FLOP or elem (rates per second of the benchmark thread's CPU time), peak% (of the\n"
    "FMA peak of one core times the thread count), cores (process CPU time / wall time).\n"
    "Google Benchmark's flags follow.\n\n";

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string gflops(double f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", f * 1e-9);
  return buf;
}

// The value of the last --<name>=... flag, or fallback.
std::string flag_value(const std::vector<char*>& args, const std::string& name,
                       const std::string& fallback) {
  std::string value = fallback;
  const std::string prefix = "--" + name + "=";
  for (const char* a : args) {
    if (std::strncmp(a, prefix.c_str(), prefix.size()) == 0) value = a + prefix.size();
  }
  return value;
}

bool truthy(const std::string& v) {
  return v == "true" || v == "yes" || v == "1";
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, summary = false, default_isa_only = false;
  std::vector<char*> args = {argv[0]};
  static char min_time[] = "--benchmark_min_time=0.02";
  static char repetitions[] = "--benchmark_repetitions=3";
  static char aggregates[] = "--benchmark_report_aggregates_only=true";
  std::vector<char*> rest;
  std::string alternate;
  int pairs = 21;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--alternate=", 12) == 0) {
      alternate = argv[i] + 12;
    } else if (std::strncmp(argv[i], "--pairs=", 8) == 0) {
      pairs = std::atoi(argv[i] + 8);
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--summary") == 0) {
      summary = true;
    } else if (std::strcmp(argv[i], "--default-isa") == 0) {
      default_isa_only = true;
    } else {
      if (std::strcmp(argv[i], "--help") == 0) std::fputs(kUsage, stdout);
      rest.push_back(argv[i]);
    }
  }
  if (quick) args.insert(args.end(), {min_time, repetitions, aggregates});
  args.insert(args.end(), rest.begin(), rest.end());
  // Read before Initialize consumes them: the reporter is made here, so these are applied here.
  const std::string format = flag_value(args, "benchmark_format", "console");
  const std::string colour_flag = flag_value(args, "benchmark_color", "auto");
  const bool tabular = truthy(flag_value(args, "benchmark_counters_tabular", "false"));
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  attn::Context probe_ctx;
  if (!probe_ctx.init_status().ok()) {
    std::fprintf(stderr, "attn-bench: %s\n", probe_ctx.init_status().message());
    return 1;
  }
  if (!alternate.empty()) return attn_bench::run_alternate(alternate, pairs, probe_ctx.isa());
  attn_bench::Options options;
  options.quick = quick;
  options.default_isa_only = default_isa_only;
  options.default_isa = probe_ctx.isa();
  options.max_threads = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<std::string> isa_names;
  for (attn::Isa isa : attn::kAllIsas) {
    // The enum is ordered by x86 capability; NEON stands alone.
    const bool below = static_cast<int>(isa) <= static_cast<int>(options.default_isa);
    if (!attn::isa_supported(isa) || !below) continue;
    if (isa == attn::Isa::neon && options.default_isa != attn::Isa::neon) continue;
    options.isas.push_back(isa);
    isa_names.push_back(attn::isa_name(isa));
  }

  const auto peaks = attn_bench::probe_fma_peaks();
  const auto sys = attn_bench::system_info();
  attn_bench::SummaryHeader header;
  header.isa = attn::isa_name(options.default_isa);
  header.cpu = sys.cpu_model + ", " + std::to_string(sys.cpus) + " CPUs, " + sys.caches;
  for (const auto& p : peaks) {
    if (p.flops > header.peak) {
      header.peak = p.flops;
      header.peak_what = p.what;
    }
    benchmark::AddCustomContext("fma_peak_" + p.isa, gflops(p.flops));
  }
  attn_bench::set_machine_peak(header.peak);

  const char* env_isa = std::getenv("ATTN_ISA");
  benchmark::AddCustomContext("cpu_model", sys.cpu_model);
  benchmark::AddCustomContext("cpus", std::to_string(sys.cpus));
  benchmark::AddCustomContext("caches", sys.caches);
  benchmark::AddCustomContext("attn_version", ATTN_VERSION_STRING);
  benchmark::AddCustomContext("attn_isa", header.isa + (env_isa ? " (ATTN_ISA)" : ""));
  benchmark::AddCustomContext("attn_isas", join(isa_names, " "));
  benchmark::AddCustomContext(
      "fma_peak",
      header.peak > 0 ? gflops(header.peak) + " (" + header.peak_what + ", one core)" : "unknown");
#if defined(ATTN_BENCH_HAVE_OPENBLAS)
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
    header.notes.push_back(std::string("OpenBLAS runs its ") + attn_bench::openblas_core() +
                           " kernels because OPENBLAS_CORETYPE=" + forced +
                           " is set; unset it to let OpenBLAS choose for this CPU");
  }
#endif
  const auto peers = attn_bench::peer_descriptions();
  benchmark::AddCustomContext("peers", peers.empty() ? "none" : join(peers, "; "));
  benchmark::AddCustomContext("mode",
                              quick ? "quick" : (default_isa_only ? "default ISA" : "full"));

  attn_bench::register_ours(options);
  attn_bench::register_peers(options);
  attn_bench::commit();

  // The chosen output format goes where Google Benchmark would send it; in quick mode the
  // console's per-benchmark lines go to stderr, leaving stdout to the summary.
  std::unique_ptr<benchmark::BenchmarkReporter> inner;
  std::ostream* table = &std::cout;
  if (format == "json") {
    inner = std::make_unique<benchmark::JSONReporter>();
    table = &std::cerr;
  } else if (format == "csv") {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    inner = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
    table = &std::cerr;
  } else {
    const bool to_stderr = quick;
    const bool colour = colour_flag == "auto"
                            ? isatty(to_stderr ? STDERR_FILENO : STDOUT_FILENO) == 1 &&
                                  std::getenv("NO_COLOR") == nullptr
                            : truthy(colour_flag);
    using Console = benchmark::ConsoleReporter;
    inner = std::make_unique<Console>(
        static_cast<Console::OutputOptions>((colour ? Console::OO_Color : Console::OO_None) |
                                            (tabular ? Console::OO_Tabular : Console::OO_None)));
    if (to_stderr) {
      inner->SetOutputStream(&std::cerr);
      inner->SetErrorStream(&std::cerr);
    }
  }
  attn_bench::CollectingReporter collector(inner.get());
  benchmark::RunSpecifiedBenchmarks(&collector);
  const auto results = collector.results();
  if (quick || summary) attn_bench::print_summary(*table, header, results);
  benchmark::Shutdown();
  // A benchmark that failed (an attn error, a peer's wrong result) fails the run.
  int failed = 0;
  for (const auto& [name, r] : results) {
    if (r.error)
      std::fprintf(stderr, "attn-bench: %s failed: %s\n", name.c_str(), r.message.c_str());
    failed += r.error;
  }
  return failed ? 1 : 0;
}

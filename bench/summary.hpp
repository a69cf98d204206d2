// The summary table of `attn-bench --quick` (and --summary): for each routine and shape, ours on
// the default ISA beside the best peer, from the medians of the runs Google Benchmark reports.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace attn_bench {

// Forwards everything to the reporter the user chose (console, JSON, CSV) and keeps the runs.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit CollectingReporter(benchmark::BenchmarkReporter* inner) : inner_(inner) {}
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  struct Result {
    bool error = false;
    std::string message;  // the error, if any
    std::string label;    // e.g. the peer's kernel
    double seconds = 0;   // per iteration, benchmark thread's CPU time (median)
    double rate = 0;      // FLOP/s or elements/s (median)
    double cores = 0;     // process CPU / wall (median)
    int repetitions = 0;  // how many runs the medians are of
  };
  // By benchmark name.
  std::map<std::string, Result> results() const;

 private:
  benchmark::BenchmarkReporter* inner_;
  std::map<std::string, std::vector<Run>> iterations_;  // per name, one per repetition
  std::map<std::string, Run> medians_;                  // Google Benchmark's median aggregates
  std::map<std::string, Run> errors_;
};

struct SummaryHeader {
  std::string cpu;                 // model, CPUs, caches
  std::string isa;                 // ours: the ISA that runs by default
  double peak = 0;                 // FLOP/s, one core
  std::string peak_what;           // "AVX-512 FMA"
  std::vector<std::string> notes;  // printed under the table
};

void print_summary(std::ostream& out, const SummaryHeader& header,
                   const std::map<std::string, CollectingReporter::Result>& results);

}  // namespace attn_bench

// The summary table: one row per routine, shape and thread count.
#include "summary.hpp"

#include <algorithm>
#include <cstdio>

#include "bench.hpp"

namespace attn_bench {
namespace {

double counter(const benchmark::BenchmarkReporter::Run& r, const char* name) {
  const auto it = r.counters.find(name);
  return it == r.counters.end() ? 0.0 : it->second.value;
}

double rate_of(const benchmark::BenchmarkReporter::Run& r) {
  return std::max(counter(r, "FLOP"), counter(r, "elem"));
}

// Seconds per iteration: the benchmark thread's CPU time, or wall time for multi-threaded runs.
double seconds_of(const benchmark::BenchmarkReporter::Run& r) {
  const double t =
      r.run_name.time_type == "real_time" ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime();
  return t / benchmark::GetTimeUnitMultiplier(r.time_unit);
}

// Display width of UTF-8 text (code points; every character used here is one column wide).
std::size_t width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad(const std::string& s, std::size_t w, bool right = false) {
  const std::size_t n = width(s);
  if (n >= w) return s;
  return right ? std::string(w - n, ' ') + s : s + std::string(w - n, ' ');
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// 3 significant digits, at least 0.001.
std::string giga(double rate) {
  const double g = rate * 1e-9;
  if (g >= 100) return fmt("%.0f", g);
  if (g >= 10) return fmt("%.1f", g);
  if (g >= 1) return fmt("%.2f", g);
  return fmt("%.3f", g);
}

std::string duration(double s) {
  if (s >= 1) return fmt("%.3g s", s);
  if (s >= 1e-3) return fmt("%.3g ms", s * 1e3);
  return fmt("%.3g µs", s * 1e6);
}

std::string pretty_shape(const Info& info) {
  std::string s = info.shape;
  std::replace(s.begin(), s.end(), '/', 'x');
  std::string out;
  for (char c : s)
    out += c == 'x' ? std::string("×") : std::string(1, c);
  if (info.routine == "exp") return out + " floats";
  if (info.routine == "softmax") return "rows of " + out;
  if (info.routine == "matmul_nt" || info.routine == "matmul_nt_packed") return out + " A·Bᵀ";
  return out;
}

std::string peer_name(const std::string& impl) {
  static const std::map<std::string, std::string> names = {{"openblas", "OpenBLAS"},
                                                           {"blis", "BLIS"},
                                                           {"onednn", "oneDNN"},
                                                           {"onednn-sgemm", "oneDNN sgemm"},
                                                           {"eigen", "Eigen"},
                                                           {"sleef-avx2", "SLEEF AVX2"},
                                                           {"sleef-avx512", "SLEEF AVX-512"},
                                                           {"libmvec-avx2", "libmvec AVX2"},
                                                           {"libmvec-avx512", "libmvec AVX-512"}};
  const auto it = names.find(impl);
  return it == names.end() ? impl : it->second;
}

}  // namespace

bool CollectingReporter::ReportContext(const Context& context) {
  return inner_->ReportContext(context);
}

void CollectingReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    const std::string name = base_name(r.run_name.str());
    if (r.error_occurred) {
      errors_[name] = r;
    } else if (r.run_type == Run::RT_Iteration) {
      iterations_[name].push_back(r);
    } else if (r.aggregate_name == "median") {
      medians_[name] = r;
    }
  }
  inner_->ReportRuns(runs);
}

void CollectingReporter::Finalize() {
  inner_->Finalize();
}

std::map<std::string, CollectingReporter::Result> CollectingReporter::results() const {
  std::map<std::string, Result> out;
  for (const auto& [name, r] : errors_) {
    Result& x = out[name];
    x.error = true;
    x.message = r.error_message;
  }
  // Prefer our own median of every repetition; else Google Benchmark's median aggregate (when
  // only aggregates were reported).
  for (const auto& [name, runs] : iterations_) {
    std::vector<double> s, rate, cores;
    for (const Run& r : runs) {
      s.push_back(seconds_of(r));
      rate.push_back(rate_of(r));
      cores.push_back(counter(r, "cores"));
    }
    Result& x = out[name];
    x = Result{};
    x.label = runs.front().report_label;
    x.seconds = median(s);
    x.rate = median(rate);
    x.cores = median(cores);
    x.repetitions = static_cast<int>(runs.size());
  }
  for (const auto& [name, r] : medians_) {
    if (iterations_.count(name)) continue;
    Result& x = out[name];
    x = Result{};
    x.label = r.report_label;
    x.seconds = seconds_of(r);
    x.rate = rate_of(r);
    x.cores = counter(r, "cores");
    x.repetitions = static_cast<int>(r.repetitions);
  }
  return out;
}

void print_summary(std::ostream& out, const SummaryHeader& header,
                   const std::map<std::string, CollectingReporter::Result>& results) {
  // Rows in registration order: one per (routine, shape, threads).
  struct Row {
    const Info* ours = nullptr;
    std::vector<const Info*> peers;
  };
  std::vector<std::pair<std::string, Row>> rows;
  int repetitions = 0;
  for (const Info& info : registry()) {
    const auto res = results.find(info.name);
    if (res == results.end()) continue;  // filtered out
    repetitions = std::max(repetitions, res->second.repetitions);
    const std::string key = info.routine + "|" + info.shape + "|" + std::to_string(info.threads);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == key; });
    if (it == rows.end()) it = rows.insert(rows.end(), {key, Row{}});
    if (!info.ours) {
      it->second.peers.push_back(&info);
    } else if (info.impl == header.isa) {
      it->second.ours = &info;
    }
  }

  out << "\nattn-bench summary: median of " << repetitions
      << " repetition(s) of each benchmark, ours and the peers in the same run.\n"
      << "CPU: " << header.cpu << "\n"
      << "FMA peak of one core (start-up probe): " << giga(header.peak) << " GFLOP/s ("
      << header.peak_what << "). Rates: GFLOP/s, or G elements/s for exp and softmax.\n"
      << "Times per call: the benchmark thread's CPU time, wall time with 2 threads. "
         "ours/peer > 1: attn is faster.\n"
      << "cores: ours' process CPU time / wall time (below the thread count: the CPUs were "
         "shared with other processes).\n\n";

  const std::vector<std::pair<std::string, std::size_t>> cols = {
      {"routine", 17}, {"shape", 20},     {"thr", 3},       {"ours " + header.isa, 11},
      {"time", 10},    {"best peer", 16}, {"peer rate", 9}, {"ours/peer", 9},
      {"% peak", 6},   {"cores", 5}};
  std::string line, rule;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    line += pad(cols[i].first, cols[i].second, i >= 2 && i != 5) + "  ";
    rule += std::string(cols[i].second, '-') + "  ";
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  rule.resize(rule.size() - 2);
  out << line << "\n" << rule << "\n";

  std::vector<std::string> notes;
  int contended = 0;
  for (const auto& [key, row] : rows) {
    const Info* any = row.ours ? row.ours : row.peers.front();
    std::string ours_rate = "-", ours_time = "-", peak = "-", cores = "-";
    double ours_value = 0;
    if (row.ours) {
      const auto& r = results.at(row.ours->name);
      if (!r.error && row.ours->threads > 1 && r.cores < 0.9 * row.ours->threads) {
        ++contended;
      }
      if (r.error) {
        ours_rate = "error";
        notes.push_back(row.ours->name + ": " + r.message);
      } else {
        ours_value = r.rate;
        ours_rate = giga(r.rate);
        cores = fmt("%.2f", r.cores);
        ours_time = duration(r.seconds);
        if (row.ours->unit == Unit::flop && header.peak > 0)
          peak = fmt("%.0f%%", 100.0 * r.rate / (header.peak * row.ours->threads));
      }
    }
    std::string peer = "-", peer_rate = "-", ratio = "-";
    const Info* best = nullptr;
    double best_rate = 0;
    for (const Info* p : row.peers) {
      const auto& r = results.at(p->name);
      if (r.error) {
        notes.push_back(p->name + ": " + r.message);
      } else if (r.rate > best_rate) {
        best_rate = r.rate;
        best = p;
      }
    }
    if (best) {
      const auto& r = results.at(best->name);
      peer = peer_name(best->impl);
      peer_rate = giga(best_rate);
      if (ours_value > 0) ratio = fmt("%.2f×", ours_value / best_rate);
      if (best->threads > 1 && r.cores < 0.9 * best->threads) ++contended;
      if (r.cores > best->threads + 0.3) {
        peer += " !";
        notes.push_back(best->name + " kept " + fmt("%.1f", r.cores) + " cores busy on " +
                        std::to_string(best->threads) + " thread(s)");
      }
    }
    const std::vector<std::string> cells = {any->routine,
                                            pretty_shape(*any),
                                            std::to_string(any->threads),
                                            ours_rate,
                                            ours_time,
                                            peer,
                                            peer_rate,
                                            ratio,
                                            peak,
                                            cores};
    line.clear();
    for (std::size_t i = 0; i < cols.size(); ++i)
      line += pad(cells[i], cols[i].second, i >= 2 && i != 5) + "  ";
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out << line << "\n";
  }
  notes.insert(notes.begin(), header.notes.begin(), header.notes.end());
  if (contended) {
    notes.push_back(std::to_string(contended) +
                    " multi-threaded result(s) ran with fewer busy cores than threads (see the "
                    "cores counter): other processes shared the CPUs, so their rates are low");
  }
  for (const std::string& n : notes)
    out << "note: " << n << "\n";
  out.flush();
}

}  // namespace attn_bench

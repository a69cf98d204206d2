// attn-demo: the seed's example. "The bank approved the loan quickly": random embeddings and
// projections (d_model 64, d_k 16), attention weights under the bidirectional and the causal
// mask, drawn as heatmaps, and the weights of "bank" side by side.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "attn/attn.hpp"

namespace {

// A small deterministic normal generator (splitmix64 + Box-Muller), so the demo prints the
// same numbers on every machine.
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : state_(seed) {}
  float operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2.0 * M_PI * u2));
  }

 private:
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t state_;
  bool has_spare_ = false;
  float spare_ = 0.0f;
};

struct Style {
  bool colour;
};

// A cell shaded from white (0) to dark blue (1) on 256-colour terminals.
void print_cell(const Style& style, float w) {
  if (!style.colour) {
    std::printf(" %5.2f", static_cast<double>(w));
    return;
  }
  static const int ramp[] = {231, 195, 159, 123, 117, 81, 75, 69, 33, 27, 21, 19, 17};
  const int n = sizeof(ramp) / sizeof(ramp[0]);
  int idx = static_cast<int>(std::lround(static_cast<double>(w) * (n - 1)));
  idx = idx < 0 ? 0 : (idx >= n ? n - 1 : idx);
  const int fg = idx > n / 2 ? 231 : 16;
  std::printf("\x1b[48;5;%dm\x1b[38;5;%dm %5.2f \x1b[0m", ramp[idx], fg, static_cast<double>(w));
}

void print_heatmap(const Style& style, const char* title, const std::vector<std::string>& tokens,
                   const std::vector<float>& w) {
  const std::size_t n = tokens.size();
  const int cell = style.colour ? 7 : 6;
  std::printf("\n%s (row: query, column: key)\n%10s", title, "");
  for (const auto& t : tokens)
    std::printf("%*.*s", cell, cell - 1, t.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < n; ++i) {
    std::printf("%10s", tokens[i].c_str());
    for (std::size_t j = 0; j < n; ++j)
      print_cell(style, w[i * n + j]);
    std::printf("\n");
  }
}

}  // namespace

int main() {
  const std::vector<std::string> tokens = {"The", "bank", "approved", "the", "loan", "quickly"};
  const std::size_t n = tokens.size(), d_model = 64, d_k = 16;
  const Style style{isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr};

  Normal randn(42);
  std::vector<float> x(n * d_model), wq(d_model * d_k), wk(d_model * d_k), wv(d_model * d_k);
  for (float& e : x)
    e = randn();
  for (auto* w : {&wq, &wk, &wv}) {
    for (float& e : *w)
      e = 0.1f * randn();
  }

  attn::Context ctx;
  if (!ctx.init_status().ok()) {
    std::fprintf(stderr, "attn-demo: %s\n", ctx.init_status().message());
    return 1;
  }
  std::printf("attn %s, ISA: %s, threads: %d\n", ATTN_VERSION_STRING, attn::isa_name(ctx.isa()),
              ctx.num_threads());
  std::printf("Sentence: \"The bank approved the loan quickly\", d_model %zu, d_k %zu\n", d_model,
              d_k);

  std::vector<float> out(n * d_k), bidir(n * n), causal(n * n);
  attn::SelfAttentionParams params;
  params.q.weight = attn::make_matrix<const float>(wq.data(), d_model, d_k);
  params.k.weight = attn::make_matrix<const float>(wk.data(), d_model, d_k);
  params.v.weight = attn::make_matrix<const float>(wv.data(), d_model, d_k);
  const auto xv = attn::make_matrix<const float>(x.data(), n, d_model);
  const auto ov = attn::make_matrix(out.data(), n, d_k);

  for (auto [mask, weights] :
       {std::pair{attn::Mask::bidirectional(), &bidir}, std::pair{attn::Mask::causal(), &causal}}) {
    params.attention.mask = mask;
    params.attention.weights = attn::make_bhsd(weights->data(), 1, 1, n, n);
    const attn::Status s = attn::self_attention(ctx, xv, 1, params, ov);
    if (!s.ok()) {
      std::fprintf(stderr, "attn-demo: %s\n", s.message());
      return 1;
    }
  }

  print_heatmap(style, "Bidirectional attention weights (encoder)", tokens, bidir);
  print_heatmap(style, "Causal attention weights (decoder)", tokens, causal);

  std::printf("\nWeights of \"bank\" (query 1):\n%10s %13s %13s\n", "key", "bidirectional",
              "causal");
  for (std::size_t j = 0; j < n; ++j) {
    std::printf("%10s %13.4f %13.4f\n", tokens[j].c_str(), static_cast<double>(bidir[n + j]),
                static_cast<double>(causal[n + j]));
  }
  std::printf(
      "\nBidirectional: \"bank\" gives \"loan\" weight %.4f. Causal: \"bank\" sees only "
      "\"The\" and itself; \"loan\" gets %.4f.\n",
      static_cast<double>(bidir[n + 4]), static_cast<double>(causal[n + 4]));
  return 0;
}

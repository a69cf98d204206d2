// attn-decode: one decoder layer's attention generating tokens from a KV cache, as an inference
// loop embeds attn. The weights are packed once (pack_matrix); the prompt's K and V are projected
// into the cache and attended causally; then per token: the new token's Q and its K and V
// projected (K and V straight into the cache's next position), attention over the filled part
// of the cache (seq_slice of a view made at the cache's capacity, queries aligned bottom-right),
// the output projection, which becomes the next token's input. Random weights, grouped-query
// attention (8 query heads, 2 KV heads, head dimension 64, d_model 512). Prints the median and
// worst time per generated token and checks the last step against attn::reference.
//
//   attn-decode [--prompt N] [--tokens N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attn/attn.hpp"

namespace {

constexpr std::size_t kDModel = 512, kHeads = 8, kKvHeads = 2, kDim = 64;
constexpr std::size_t kQCols = kHeads * kDim;         // 512: the query heads side by side
constexpr std::size_t kKvCols = 2 * kKvHeads * kDim;  // 256: a cache position holds K, then V

const char* kUsage =
    "usage: attn-decode [--prompt N] [--tokens N] [--threads N]\n"
    "\n"
    "A decoder layer's attention over a KV cache with random weights: a prompt of N tokens\n"
    "(default 128, at least 1), then N generated tokens one at a time (default 64), on N\n"
    "threads (default 1). Prints the time per generated token and the last step's distance to\n"
    "attn::reference.\n";

bool parse_count(const char* text, std::size_t lo, std::size_t hi, std::size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || text[0] == '-' || v < lo || v > hi) return false;
  *out = static_cast<std::size_t>(v);
  return true;
}

bool check(const attn::Status& s, const char* what) {
  if (!s.ok()) std::fprintf(stderr, "attn-decode: %s: %s\n", what, s.message());
  return s.ok();
}

std::vector<float> random_matrix(std::mt19937& gen, std::size_t rows, std::size_t cols) {
  std::normal_distribution<float> dist(0.0f, 1.0f / std::sqrt(static_cast<float>(rows)));
  std::vector<float> m(rows * cols);
  for (float& x : m)
    x = dist(gen);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t prompt = 128, tokens = 64, threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    std::size_t* target = flag == "--prompt"    ? &prompt
                          : flag == "--tokens"  ? &tokens
                          : flag == "--threads" ? &threads
                                                : nullptr;
    const std::size_t hi = flag == "--threads" ? 256 : 65536;
    if (target == nullptr || i + 1 >= argc || !parse_count(argv[i + 1], 1, hi, target)) {
      std::fprintf(stderr, "attn-decode: bad argument '%s'\n\n%s", argv[i], kUsage);
      return 2;
    }
    ++i;
  }
  const std::size_t capacity = prompt + tokens;

  attn::Context ctx;
  if (!check(ctx.set_num_threads(static_cast<int>(threads)), "set_num_threads")) return 1;
  std::printf(
      "attn %s, ISA: %s, threads: %zu; d_model %zu, %zu query heads, %zu KV heads, "
      "head dimension %zu\n",
      ATTN_VERSION_STRING, attn::isa_name(ctx.isa()), threads, kDModel, kHeads, kKvHeads, kDim);

  // The weights, packed once for this Context's ISA: Wq, [Wk | Wv] (so that one product writes a
  // position's K and V into the cache), Wo.
  std::mt19937 gen(7);
  const std::vector<float> wq = random_matrix(gen, kDModel, kQCols);
  const std::vector<float> wkv = random_matrix(gen, kDModel, kKvCols);
  const std::vector<float> wo = random_matrix(gen, kQCols, kDModel);
  attn::PackedMatrix pq, pkv, po;
  if (!check(attn::pack_matrix(ctx, attn::make_matrix(wq.data(), kDModel, kQCols),
                               attn::Transpose::no, &pq),
             "pack Wq") ||
      !check(attn::pack_matrix(ctx, attn::make_matrix(wkv.data(), kDModel, kKvCols),
                               attn::Transpose::no, &pkv),
             "pack Wk|Wv") ||
      !check(attn::pack_matrix(ctx, attn::make_matrix(wo.data(), kQCols, kDModel),
                               attn::Transpose::no, &po),
             "pack Wo")) {
    return 1;
  }

  // The cache: capacity positions of [k heads | v heads]; K and V viewed at the capacity, with
  // the positions' row stride, and cut to the filled positions with seq_slice at each step.
  std::vector<float> cache(capacity * kKvCols);
  const auto k_all =
      attn::make_bshd<const float>(cache.data(), 1, capacity, kKvHeads, kDim, kKvCols);
  const auto v_all = attn::make_bshd<const float>(cache.data() + kKvHeads * kDim, 1, capacity,
                                                  kKvHeads, kDim, kKvCols);
  auto position = [&](std::size_t first, std::size_t count) {
    return attn::MatrixView<float>{cache.data() + first * kKvCols, count, kKvCols, kKvCols};
  };

  // The prompt: random embeddings, projected in one product each, causal attention over them.
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(prompt * kDModel), q(prompt * kQCols), heads(prompt * kQCols),
      y(prompt * kDModel);
  for (float& e : x)
    e = unit(gen);
  const auto xv = attn::make_matrix<const float>(x.data(), prompt, kDModel);
  attn::AttentionOptions causal;
  causal.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
  if (!check(attn::matmul(ctx, xv, attn::Transpose::no, pq,
                          attn::make_matrix(q.data(), prompt, kQCols)),
             "prompt Q") ||
      !check(attn::matmul(ctx, xv, attn::Transpose::no, pkv, position(0, prompt)), "prompt K, V") ||
      !check(attn::attention(ctx, attn::make_bshd<const float>(q.data(), 1, prompt, kHeads, kDim),
                             attn::seq_slice(k_all, 0, prompt), attn::seq_slice(v_all, 0, prompt),
                             attn::make_bshd(heads.data(), 1, prompt, kHeads, kDim), causal),
             "prompt attention") ||
      !check(attn::matmul(ctx, attn::make_matrix<const float>(heads.data(), prompt, kQCols),
                          attn::Transpose::no, po, attn::make_matrix(y.data(), prompt, kDModel)),
             "prompt output")) {
    return 1;
  }

  // Generation: the last output is the next token's input (the layer's residual stream would
  // add it to its input; one layer alone keeps the magnitudes by the weights' scale).
  std::vector<float> xt(y.end() - kDModel, y.end()), qt(kQCols), ht(kQCols), yt(kDModel);
  std::vector<double> micros;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::size_t len = prompt + t;  // positions filled before this token
    const auto start = std::chrono::steady_clock::now();
    const auto xrow = attn::make_matrix<const float>(xt.data(), 1, kDModel);
    if (!check(attn::matmul(ctx, xrow, attn::Transpose::no, pq,
                            attn::make_matrix(qt.data(), 1, kQCols)),
               "token Q") ||
        !check(attn::matmul(ctx, xrow, attn::Transpose::no, pkv, position(len, 1)), "token K, V") ||
        !check(
            attn::attention(ctx, attn::make_bshd<const float>(qt.data(), 1, 1, kHeads, kDim),
                            attn::seq_slice(k_all, 0, len + 1), attn::seq_slice(v_all, 0, len + 1),
                            attn::make_bshd(ht.data(), 1, 1, kHeads, kDim), causal),
            "token attention") ||
        !check(attn::matmul(ctx, attn::make_matrix<const float>(ht.data(), 1, kQCols),
                            attn::Transpose::no, po, attn::make_matrix(yt.data(), 1, kDModel)),
               "token output")) {
      return 1;
    }
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (t + 1 < tokens) xt = yt;
  }

  // The last step's attention again, by the scalar double-precision reference.
  std::vector<float> want(kQCols);
  const std::size_t len = capacity;
  if (!check(attn::reference::attention(
                 ctx, attn::make_bshd<const float>(qt.data(), 1, 1, kHeads, kDim),
                 attn::seq_slice(k_all, 0, len), attn::seq_slice(v_all, 0, len),
                 attn::make_bshd(want.data(), 1, 1, kHeads, kDim), causal),
             "reference attention")) {
    return 1;
  }
  double err = 0.0, mag = 0.0;
  for (std::size_t i = 0; i < kQCols; ++i) {
    err = std::max(err, std::fabs(static_cast<double>(ht[i]) - want[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(want[i])));
  }
  std::vector<double> sorted = micros;
  std::sort(sorted.begin(), sorted.end());
  std::printf("prompt %zu tokens, then %zu generated (cache of %zu positions)\n", prompt, tokens,
              capacity);
  std::printf(
      "per generated token (Q, K and V projections, attention, output): median %.1f us, "
      "worst %.1f us (the first: %.1f us)\n",
      sorted[sorted.size() / 2], sorted.back(), micros.front());
  std::printf(
      "last step's attention against attn::reference: max |error| %.3g (outputs up to "
      "%.3g)\n",
      err, mag);
  // A sanity check, far looser than README's attention bound (which the tests check): an error
  // this large is a wrong result, not rounding.
  if (!(err <= 1e-4 * std::max(1.0, mag))) {
    std::fprintf(stderr, "attn-decode: the last step differs from the reference\n");
    return 1;
  }
  return 0;
}

// Checks that the numbers attn-demo drew into its SVG are the weights attn computes.
//
//   attn-demo-svg-check FILE.svg SEED D_MODEL D_K MASK QUERY "TOKENS"
//
// Recomputes the attention weights of the figure's patterns (bidirectional, then MASK unless it
// is bidirectional) with attn::self_attention and attn::reference::self_attention, then checks
// every <text class="cell"> and <text class="bar"> of the SVG: its data-w attribute reads back
// as exactly the float attn computed, its text is that weight printed with 2 (cells) or 3 (bars)
// decimals, the weights agree with the reference to 1e-5, and no cell or bar is missing.
// Exit status 0 when all hold, 1 otherwise (with the first failures on stderr).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "attn/attn.hpp"
#include "demo_model.hpp"

namespace {

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 20) std::fprintf(stderr, "demo_svg_check: %s\n", what.c_str());
}

std::string fixed(float w, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(w));
  return buf;
}

// The weights of the seed's single-head self-attention, from the reference oracle, with its
// own parameter set-up (not the demo's helper).
std::vector<float> reference_weights(const attn_demo::Inputs& in, const attn::Mask& mask) {
  const std::size_t n = in.n;
  std::vector<float> out(n * in.d_k), w(n * n);
  attn::SelfAttentionParams p;
  p.q.weight = {in.wq.data(), in.d_model, in.d_k, in.d_k};
  p.k.weight = {in.wk.data(), in.d_model, in.d_k, in.d_k};
  p.v.weight = {in.wv.data(), in.d_model, in.d_k, in.d_k};
  p.attention.mask = mask;
  p.attention.weights = attn::make_bhsd(w.data(), 1, 1, n, n);
  const attn::Status s = attn::reference::self_attention({in.x.data(), n, in.d_model, in.d_model},
                                                         1, p, {out.data(), n, in.d_k, in.d_k});
  if (!s.ok()) fail(std::string("reference::self_attention: ") + s.message());
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s FILE.svg SEED D_MODEL D_K MASK QUERY \"TOKENS\"\n", argv[0]);
    return 2;
  }
  std::uint64_t seed = 0, d_model = 0, d_k = 0, query = 0;
  attn_demo::MaskChoice mask;
  if (!attn_demo::parse_size(argv[2], &seed) || !attn_demo::parse_size(argv[3], &d_model) ||
      !attn_demo::parse_size(argv[4], &d_k) || !attn_demo::parse_mask(argv[5], &mask) ||
      !attn_demo::parse_size(argv[6], &query)) {
    std::fprintf(stderr, "demo_svg_check: bad arguments\n");
    return 2;
  }
  const auto tokens = attn_demo::split_tokens(argv[7]);
  const std::size_t n = tokens.size();

  std::ifstream file(argv[1]);
  if (!file) {
    std::fprintf(stderr, "demo_svg_check: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream text;
  text << file.rdbuf();
  const std::string svg = text.str();

  // What attn computes, on the Context's default ISA (ATTN_ISA, as the demo's).
  const auto inputs = attn_demo::make_inputs(seed, n, d_model, d_k);
  std::vector<attn_demo::MaskChoice> masks(1);
  masks[0].kind = attn_demo::MaskChoice::Kind::bidirectional;
  if (mask.kind != attn_demo::MaskChoice::Kind::bidirectional) masks.push_back(mask);
  attn::Context ctx;
  std::vector<std::vector<float>> fast, ref;
  for (const auto& m : masks) {
    std::vector<float> w(n * n), out(n * d_k);
    attn::SelfAttentionParams p;
    p.q.weight = attn::make_matrix<const float>(inputs.wq.data(), d_model, d_k);
    p.k.weight = attn::make_matrix<const float>(inputs.wk.data(), d_model, d_k);
    p.v.weight = attn::make_matrix<const float>(inputs.wv.data(), d_model, d_k);
    p.attention.mask = m.mask();
    p.attention.weights = attn::make_bhsd(w.data(), 1, 1, n, n);
    const attn::Status s =
        attn::self_attention(ctx, attn::make_matrix<const float>(inputs.x.data(), n, d_model), 1, p,
                             attn::make_matrix(out.data(), n, d_k));
    if (!s.ok()) fail(std::string("self_attention: ") + s.message());
    fast.push_back(w);
    ref.push_back(reference_weights(inputs, m.mask()));
  }

  // Every drawn number.
  const std::regex number(
      "<text class=\"(cell|bar)\" data-p=\"(\\d+)\" data-q=\"(\\d+)\" data-k=\"(\\d+)\" "
      "data-w=\"([^\"]+)\"[^>]*>([^<]*)</text>");
  std::map<std::tuple<std::string, std::size_t, std::size_t, std::size_t>, int> seen;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), number); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    const std::string kind = m[1];
    const std::size_t p = std::stoul(m[2]), q = std::stoul(m[3]), k = std::stoul(m[4]);
    const std::string where = kind + " p=" + m[2].str() + " q=" + m[3].str() + " k=" + m[4].str();
    if (p >= fast.size() || q >= n || k >= n) {
      fail(where + ": outside the figure");
      continue;
    }
    if (kind == "bar" && q != query) fail(where + ": bar of query " + m[3].str());
    ++seen[{kind, p, q, k}];
    const float want = fast[p][q * n + k];
    const float drawn = std::strtof(m[5].str().c_str(), nullptr);
    if (drawn != want) {
      fail(where + ": data-w " + m[5].str() + " but attn computes " + fixed(want, 9));
    }
    const std::string shown = fixed(want, kind == "cell" ? 2 : 3);
    if (m[6].str() != shown) fail(where + ": shows " + m[6].str() + ", expected " + shown);
    if (!(std::fabs(want - ref[p][q * n + k]) <= 1e-5f)) {
      fail(where + ": attn " + fixed(want, 9) + " vs reference " + fixed(ref[p][q * n + k], 9));
    }
  }
  const std::size_t cells = fast.size() * n * n, bars = fast.size() * n;
  std::size_t got_cells = 0, got_bars = 0;
  for (const auto& [key, count] : seen) {
    if (count != 1) fail("a number is drawn " + std::to_string(count) + " times");
    (std::get<0>(key) == "cell" ? got_cells : got_bars)++;
  }
  if (got_cells != cells)
    fail(std::to_string(got_cells) + " heatmap cells, expected " + std::to_string(cells));
  if (got_bars != bars) fail(std::to_string(got_bars) + " bars, expected " + std::to_string(bars));
  // The tokens label both axes and the bars.
  for (const auto& t : tokens) {
    if (svg.find(">" + t + "</text>") == std::string::npos) fail("token " + t + " is not drawn");
  }
  if (failures == 0) {
    std::printf("demo_svg_check: %zu cells and %zu bars match attn's weights\n", got_cells,
                got_bars);
  }
  return failures == 0 ? 0 : 1;
}

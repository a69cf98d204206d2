// attn-demo: the seed's example. "The bank approved the loan quickly": random embeddings and
// projections (d_model 64, d_k 16), attention weights under the bidirectional and the causal
// mask, drawn as heatmaps, and the weights of "bank" side by side. Flags choose another
// sentence, seed, mask and sizes, and --svg draws the seed's two figures from attn's output.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attn/attn.hpp"
#include "demo_model.hpp"
#include "demo_svg.hpp"

namespace {

const char* kUsage =
    "usage: attn-demo [--tokens \"a sentence\"] [--seed N] [--mask M] [--d-model N] [--d-k N]\n"
    "                 [--query WORD|INDEX] [--svg FILE]\n"
    "\n"
    "Single-head self-attention of a sentence with random embeddings and projections (the\n"
    "seed's example), printed as heatmaps of the attention weights, bidirectional beside the\n"
    "mask M, and the weights of one query under both.\n"
    "\n"
    "  --tokens S     the sentence, split at whitespace (1 to 64 tokens; default \"The bank\n"
    "                 approved the loan quickly\")\n"
    "  --seed N       seed of the random embeddings and projections (default 42)\n"
    "  --mask M       bidirectional | causal | window:L,R (query i sees keys i-L .. i+R);\n"
    "                 shown beside bidirectional (default causal)\n"
    "  --d-model N    embedding size, 1 to 4096 (default 64)\n"
    "  --d-k N        query/key/value size, 1 to 1024 (default 16)\n"
    "  --query Q      the query of the bar chart: a token or its index (default \"bank\" if\n"
    "                 present, else token 1)\n"
    "  --svg FILE     also draw the heatmaps and the bar chart into FILE (SVG)\n";

struct Args {
  std::string sentence = attn_demo::kDefaultSentence;
  std::uint64_t seed = attn_demo::kDefaultSeed;
  attn_demo::MaskChoice mask;  // causal
  std::uint64_t d_model = 64, d_k = 16;
  std::string query;  // empty: "bank" or token 1
  std::string svg;
  bool any = false;  // a flag was given
};

int usage_error(const char* format, const char* what) {
  std::fprintf(stderr, "attn-demo: ");
  std::fprintf(stderr, format, what);
  std::fprintf(stderr, "\n\n%s", kUsage);
  return 2;
}

// Returns -1 when the arguments are good, else the exit status.
int parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    static const char* kFlags[] = {"--tokens", "--seed",  "--mask", "--d-model",
                                   "--d-k",    "--query", "--svg"};
    const auto eq = flag.find('=');
    const std::string name = flag.substr(0, eq);
    bool known = false;
    for (const char* f : kFlags)
      known = known || name == f;
    if (!known) {
      return usage_error(flag.rfind("-", 0) == 0 ? "unknown flag %s" : "unexpected argument %s",
                         name.c_str());
    }
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage_error("%s needs a value", flag.c_str());
    }
    a->any = true;
    std::uint64_t v = 0;
    if (flag == "--tokens") {
      a->sentence = value;
    } else if (flag == "--seed") {
      if (!attn_demo::parse_size(value, &a->seed))
        return usage_error("--seed takes a non-negative integer, not \"%s\"", value.c_str());
    } else if (flag == "--mask") {
      if (!attn_demo::parse_mask(value, &a->mask))
        return usage_error("unknown --mask \"%s\"", value.c_str());
    } else if (flag == "--d-model") {
      if (!attn_demo::parse_size(value, &v) || v < 1 || v > 4096)
        return usage_error("--d-model takes 1 to 4096, not \"%s\"", value.c_str());
      a->d_model = v;
    } else if (flag == "--d-k") {
      if (!attn_demo::parse_size(value, &v) || v < 1 || v > 1024)
        return usage_error("--d-k takes 1 to 1024, not \"%s\"", value.c_str());
      a->d_k = v;
    } else if (flag == "--query") {
      a->query = value;
    } else if (flag == "--svg") {
      if (value.empty()) return usage_error("%s needs a file name", "--svg");
      a->svg = value;
    }
  }
  return -1;
}

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

void print_heatmap(const Style& style, const std::string& title,
                   const std::vector<std::string>& tokens, const std::vector<float>& w) {
  const std::size_t n = tokens.size();
  const int cell = style.colour ? 7 : 6;
  std::printf("\n%s (row: query, column: key)\n%10s", title.c_str(), "");
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

// The query of the bar chart: --query as a token or an index, else "bank", else token 1.
bool pick_query(const std::string& q, const std::vector<std::string>& tokens, std::size_t* out) {
  if (!q.empty()) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == q) return *out = i, true;
    }
    std::uint64_t index = 0;
    if (attn_demo::parse_size(q, &index) && index < tokens.size()) return *out = index, true;
    return false;
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "bank") return *out = i, true;
  }
  *out = tokens.size() > 1 ? 1 : 0;
  return true;
}

std::string quoted_list(const std::vector<std::string>& tokens, std::size_t end) {
  std::string s;
  for (std::size_t i = 0; i < end; ++i)
    s += (i ? (i + 1 == end ? " and " : ", ") : "") + ("\"" + tokens[i] + "\"");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const int status = parse_args(argc, argv, &args); status >= 0) return status;
  const std::vector<std::string> tokens = attn_demo::split_tokens(args.sentence);
  if (tokens.empty() || tokens.size() > 64)
    return usage_error("--tokens takes 1 to 64 tokens, not %s",
                       std::to_string(tokens.size()).c_str());
  std::size_t query = 0;
  if (!pick_query(args.query, tokens, &query))
    return usage_error("--query \"%s\" is neither a token nor a token index", args.query.c_str());
  const std::size_t n = tokens.size();
  const Style style{isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr};

  attn::Context ctx;
  if (!ctx.init_status().ok()) {
    std::fprintf(stderr, "attn-demo: %s\n", ctx.init_status().message());
    return 1;
  }
  std::printf("attn %s, ISA: %s, threads: %d\n", ATTN_VERSION_STRING, attn::isa_name(ctx.isa()),
              ctx.num_threads());
  std::printf("Sentence: \"%s\", d_model %zu, d_k %zu", args.sentence.c_str(),
              static_cast<std::size_t>(args.d_model), static_cast<std::size_t>(args.d_k));
  if (args.seed != attn_demo::kDefaultSeed)
    std::printf(", seed %llu", static_cast<unsigned long long>(args.seed));
  std::printf("\n");

  const auto inputs = attn_demo::make_inputs(args.seed, n, args.d_model, args.d_k);
  // The encoder's pattern, then the one --mask chose (unless that is the same).
  std::vector<attn_demo::MaskChoice> masks(1);
  masks[0].kind = attn_demo::MaskChoice::Kind::bidirectional;
  if (args.mask.kind != attn_demo::MaskChoice::Kind::bidirectional) masks.push_back(args.mask);
  attn_demo::Figure figure;
  figure.tokens = tokens;
  figure.query = query;
  for (const auto& m : masks) {
    attn_demo::Figure::Pattern p;
    p.mask = m;
    p.title = m.name() + " (" + m.role() + ")";
    const attn::Status s = attn_demo::attention_weights(ctx, inputs, m.mask(), &p.weights);
    if (!s.ok()) {
      std::fprintf(stderr, "attn-demo: %s\n", s.message());
      return 1;
    }
    figure.patterns.push_back(std::move(p));
  }

  for (const auto& p : figure.patterns) {
    print_heatmap(style, p.mask.name() + " attention weights (" + p.mask.role() + ")", tokens,
                  p.weights);
  }
  const auto& first = figure.patterns.front();
  const auto& second = figure.patterns.back();
  std::printf("\nWeights of \"%s\" (query %zu):\n%10s", tokens[query].c_str(), query, "key");
  for (const auto& p : figure.patterns)
    std::printf(" %13s", p.mask.short_name().c_str());
  std::printf("\n");
  for (std::size_t j = 0; j < n; ++j) {
    std::printf("%10s", tokens[j].c_str());
    for (const auto& p : figure.patterns)
      std::printf(" %13.4f", static_cast<double>(p.weights[query * n + j]));
    std::printf("\n");
  }
  if (second.mask.kind == attn_demo::MaskChoice::Kind::causal) {
    // The seed's point: the causal query misses the later token that disambiguates it.
    std::size_t later = n - 1;
    for (std::size_t j = query + 1; j < n; ++j) {
      if (tokens[j] == "loan") later = j;
    }
    if (later > query) {
      const std::string seen = query == 0 ? std::string("only itself")
                                          : "only " + quoted_list(tokens, query) + " and itself";
      std::printf(
          "\nBidirectional: \"%s\" gives \"%s\" weight %.4f. Causal: \"%s\" sees %s; \"%s\" gets "
          "%.4f.\n",
          tokens[query].c_str(), tokens[later].c_str(),
          static_cast<double>(first.weights[query * n + later]), tokens[query].c_str(),
          seen.c_str(), tokens[later].c_str(),
          static_cast<double>(second.weights[query * n + later]));
    }
  }

  if (!args.svg.empty()) {
    figure.subtitle = "\"" + args.sentence + "\": d_model " + std::to_string(args.d_model) +
                      ", d_k " + std::to_string(args.d_k) + ", seed " + std::to_string(args.seed) +
                      ", random projections; attn " + ATTN_VERSION_STRING + ", ISA " +
                      attn::isa_name(ctx.isa());
    if (!attn_demo::write_svg(args.svg, figure)) {
      std::fprintf(stderr, "attn-demo: cannot write %s: %s\n", args.svg.c_str(),
                   std::strerror(errno));
      return 1;
    }
    std::printf("\nWrote %s\n", args.svg.c_str());
  }
  return 0;
}

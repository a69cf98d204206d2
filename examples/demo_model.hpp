// The demo's inputs, shared by attn-demo and its test: the seed's recipe (random embeddings X and
// projections W = 0.1·N(0, 1)), the --mask syntax and the token splitting.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "attn/attn.hpp"

namespace attn_demo {

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

inline const char* kDefaultSentence = "The bank approved the loan quickly";
inline constexpr std::uint64_t kDefaultSeed = 42;

// X [n, d_model] ~ N(0, 1), then Wq, Wk, Wv [d_model, d_k] ~ 0.1·N(0, 1), drawn in that order.
struct Inputs {
  std::size_t n = 0, d_model = 0, d_k = 0;
  std::vector<float> x, wq, wk, wv;
};

inline Inputs make_inputs(std::uint64_t seed, std::size_t n, std::size_t d_model, std::size_t d_k) {
  Inputs in;
  in.n = n;
  in.d_model = d_model;
  in.d_k = d_k;
  in.x.resize(n * d_model);
  in.wq.resize(d_model * d_k);
  in.wk.resize(d_model * d_k);
  in.wv.resize(d_model * d_k);
  Normal randn(seed);
  for (float& e : in.x)
    e = randn();
  for (auto* w : {&in.wq, &in.wk, &in.wv}) {
    for (float& e : *w)
      e = 0.1f * randn();
  }
  return in;
}

// The single-head self-attention of the seed (no output projection), with `mask`; writes the
// n × n attention weights.
inline attn::Status attention_weights(attn::Context& ctx, const Inputs& in, const attn::Mask& mask,
                                      std::vector<float>* weights) {
  std::vector<float> out(in.n * in.d_k);
  weights->assign(in.n * in.n, 0.0f);
  attn::SelfAttentionParams params;
  params.q.weight = attn::make_matrix<const float>(in.wq.data(), in.d_model, in.d_k);
  params.k.weight = attn::make_matrix<const float>(in.wk.data(), in.d_model, in.d_k);
  params.v.weight = attn::make_matrix<const float>(in.wv.data(), in.d_model, in.d_k);
  params.attention.mask = mask;
  params.attention.weights = attn::make_bhsd(weights->data(), 1, 1, in.n, in.n);
  return attn::self_attention(ctx, attn::make_matrix<const float>(in.x.data(), in.n, in.d_model), 1,
                              params, attn::make_matrix(out.data(), in.n, in.d_k));
}

// A --mask value: "bidirectional", "causal" or "window:L,R" (query i sees keys i-L .. i+R).
struct MaskChoice {
  enum class Kind { bidirectional, causal, window } kind = Kind::causal;
  std::size_t left = 0, right = 0;

  attn::Mask mask() const {
    switch (kind) {
      case Kind::bidirectional:
        return attn::Mask::bidirectional();
      case Kind::causal:
        return attn::Mask::causal();
      case Kind::window:
        return attn::Mask::bidirectional().with_window(left, right);
    }
    return {};
  }
  // Whether query i may attend key j.
  bool allows(std::size_t i, std::size_t j) const {
    switch (kind) {
      case Kind::bidirectional:
        return true;
      case Kind::causal:
        return j <= i;
      case Kind::window:
        return j + left >= i && j <= i + right;
    }
    return true;
  }
  // "Causal", "Window 1 left, 1 right", ...
  std::string name() const {
    switch (kind) {
      case Kind::bidirectional:
        return "Bidirectional";
      case Kind::causal:
        return "Causal";
      case Kind::window:
        return "Window " + std::to_string(left) + " left, " + std::to_string(right) + " right";
    }
    return {};
  }
  // "bidirectional", "causal", "window 1,1": a table's column heading.
  std::string short_name() const {
    if (kind == Kind::window) return "window " + std::to_string(left) + "," + std::to_string(right);
    return kind == Kind::causal ? "causal" : "bidirectional";
  }
  // The attention pattern's role, as the demo's headings say it.
  std::string role() const {
    switch (kind) {
      case Kind::bidirectional:
        return "encoder";
      case Kind::causal:
        return "decoder";
      case Kind::window:
        return "local";
    }
    return {};
  }
};

// Parses an unsigned decimal integer (all of s). False on anything else or on overflow.
inline bool parse_size(const std::string& s, std::uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

inline bool parse_mask(const std::string& s, MaskChoice* out) {
  MaskChoice m;
  if (s == "bidirectional") {
    m.kind = MaskChoice::Kind::bidirectional;
  } else if (s == "causal") {
    m.kind = MaskChoice::Kind::causal;
  } else if (s.rfind("window:", 0) == 0) {
    const std::string rest = s.substr(7);
    const auto comma = rest.find(',');
    std::uint64_t l = 0, r = 0;
    if (comma == std::string::npos || !parse_size(rest.substr(0, comma), &l) ||
        !parse_size(rest.substr(comma + 1), &r) || l > 1000000 || r > 1000000)
      return false;
    m.kind = MaskChoice::Kind::window;
    m.left = l;
    m.right = r;
  } else {
    return false;
  }
  *out = m;
  return true;
}

inline std::vector<std::string> split_tokens(const std::string& sentence) {
  std::istringstream in(sentence);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;)
    tokens.push_back(t);
  return tokens;
}

}  // namespace attn_demo

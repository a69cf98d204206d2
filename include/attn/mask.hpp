// Attention masks: which keys each query may attend, and an optional additive bias.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "attn/view.hpp"

namespace attn {

// Where the causal diagonal sits when Lq != Lk.
//   top_left:     query i may attend key j iff j <= i.
//   bottom_right: query i may attend key j iff j <= i + Lk - Lq (the last query sees every key;
//                 as in decoding with a KV cache). Equal to top_left when Lq == Lk.
enum class CausalAlign { top_left, bottom_right };

// A mask is a combination of parts; a key is blocked if any part blocks it, and the additive
// part is added to the scaled scores of the keys left. Parts combine by chaining:
//   Mask::causal().with_key_lengths(lens).with_additive(bias)
// A query row with every key blocked (or every score -inf) yields zeros in the output and in
// the weights, never NaN.
struct Mask {
  static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

  // Every query sees every key (the encoder's mask). The default.
  static Mask bidirectional() { return Mask(); }
  static Mask causal(CausalAlign align = CausalAlign::top_left) {
    Mask m;
    m.is_causal = true;
    m.causal_align = align;
    return m;
  }

  // Added to the scaled scores; a -inf entry gives its key weight 0, but arithmetically: that
  // key's k and v are still used (0 * inf is NaN), so block keys whose data may not be finite
  // with the boolean mask or key lengths. Shape [B or 1, Hq or 1, Lq or 1, Lk]: a dimension of
  // size 1 broadcasts (its stride is ignored), so a plain Lq x Lk matrix (the seed's mask) is
  // make_bhsd(ptr, 1, 1, Lq, Lk) and a per-sequence key bias (padding) [B, 1, 1, Lk]. The last
  // stride must be 1 (where Lk > 1).
  Mask with_additive(TensorView<const float> bias) const {
    Mask m = *this;
    m.additive = bias;
    return m;
  }
  // Boolean: nonzero may attend, zero is blocked. Same shape rule as with_additive.
  Mask with_allowed(TensorView<const std::uint8_t> allowed_keys) const {
    Mask m = *this;
    m.allowed = allowed_keys;
    return m;
  }
  // Padding: one length per batch entry (B values, each in [0, Lk]); key j >= lengths[b] is
  // blocked. The array must stay valid for the call.
  Mask with_key_lengths(const std::int32_t* lengths) const {
    Mask m = *this;
    m.key_lengths = lengths;
    return m;
  }
  // Sliding window: query i may attend key j only if i - left <= j <= i + right. With
  // align == bottom_right the query's position is i + Lk - Lq (as for causal). kUnbounded
  // leaves a side open; with_window(n, 0) on a causal mask is the usual local causal window.
  Mask with_window(std::size_t left, std::size_t right,
                   CausalAlign align = CausalAlign::top_left) const {
    Mask m = *this;
    m.has_window = true;
    m.window_left = left;
    m.window_right = right;
    m.window_align = align;
    return m;
  }

  bool is_causal = false;
  CausalAlign causal_align = CausalAlign::top_left;
  bool has_window = false;
  std::size_t window_left = kUnbounded;
  std::size_t window_right = kUnbounded;
  CausalAlign window_align = CausalAlign::top_left;
  TensorView<const float> additive{};         // data == nullptr: none
  TensorView<const std::uint8_t> allowed{};   // data == nullptr: none
  const std::int32_t* key_lengths = nullptr;  // nullptr: none
};

}  // namespace attn

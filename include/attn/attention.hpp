// Scaled dot-product attention: out = softmax(scale * q k^T + mask) v.
#pragma once

#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/mask.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn {

struct AttentionOptions {
  Mask mask{};
  // Multiplies q k^T; 0 means 1 / sqrt(Dk).
  float scale = 0.0f;
  // When weights.data != nullptr, the attention weights, [B, Hq, Lq, Lk] (last stride 1), are
  // written here: softmax(scale * q k^T + mask), with zeros for blocked keys.
  TensorView<float> weights{};
};

// q [B, Hq, Lq, Dk], k [B, Hkv, Lk, Dk], v [B, Hkv, Lk, Dv], out [B, Hq, Lq, Dv].
// Hq % Hkv == 0: query head h uses key/value head h / (Hq / Hkv) (grouped-query attention;
// Hkv == 1 is multi-query). Lq != Lk (cross-attention) and Dk != Dv are allowed. Every view's
// last stride must be 1 where its last dimension is longer than 1; other strides are free (BSHD
// views read heads in place). Lq == 0 or B == 0 or Hq == 0 is valid and writes nothing; Lk == 0 is
// valid and writes zeros (every row is fully masked). out and weights must not overlap each other
// or any input. Errors: invalid_argument, unsupported, out_of_memory; on error nothing is written.
ATTN_API Status attention(Context& ctx, TensorView<const float> q, TensorView<const float> k,
                          TensorView<const float> v, TensorView<float> out,
                          const AttentionOptions& options = {}) noexcept;

}  // namespace attn

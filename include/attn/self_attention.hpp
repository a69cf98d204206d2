// Multi-head self-attention: projections, attention, output projection.
#pragma once

#include <cstddef>

#include "attn/attention.hpp"
#include "attn/context.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn {

// y = x * weight + bias. weight is [d_in, d_out] (the seed's X W convention); bias has d_out
// entries or is nullptr.
struct Projection {
  MatrixView<const float> weight{};
  const float* bias = nullptr;
};

struct SelfAttentionParams {
  // q.weight [d_model, num_heads * Dk], k.weight [d_model, num_kv_heads * Dk],
  // v.weight [d_model, num_kv_heads * Dv], o.weight [num_heads * Dv, d_out].
  // o.weight.data == nullptr: no output projection; out holds the heads side by side
  // (d_out = num_heads * Dv), which is exactly the seed's pipeline.
  Projection q{}, k{}, v{}, o{};
  std::size_t num_heads = 1;
  std::size_t num_kv_heads = 0;  // 0 means num_heads
  // Mask, scale (0 = 1/sqrt(Dk)) and optional weights [batch, num_heads, seq, seq].
  AttentionOptions attention{};
};

// x is [batch * seq, d_model] (sequence b occupies rows b*seq .. b*seq + seq - 1); out is
// [batch * seq, d_out]. Q = x Wq + bq, K = x Wk + bk, V = x Wv + bv, split into heads,
// attention(Q, K, V) with params.attention, then out = heads Wo + bo.
// Errors: invalid_argument, unsupported, out_of_memory; on error nothing is written.
Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                      const SelfAttentionParams& params, MatrixView<float> out);

}  // namespace attn

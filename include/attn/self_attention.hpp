// Multi-head self-attention: projections, attention, output projection.
#pragma once

#include <cstddef>

#include "attn/attention.hpp"
#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/isa.hpp"
#include "attn/packed_matrix.hpp"
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
  // o.weight.data == nullptr: no output projection (o.bias must then be null too); out holds the
  // heads side by side (d_out = num_heads * Dv), which is exactly the seed's pipeline.
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
ATTN_API Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                               const SelfAttentionParams& params, MatrixView<float> out) noexcept;

// A self-attention layer's weights packed once for many calls (pack_self_attention, when a model
// loads): Wq, Wk and Wv side by side as one PackedMatrix, so that one GEMM projects all three
// whether or not they lie side by side in memory; Wo as another; a copy of the biases. It refers
// to nothing of the SelfAttentionParams it was packed from. Move-only; empty when
// default-constructed or moved from.
class ATTN_API PackedSelfAttention {
 public:
  PackedSelfAttention() noexcept = default;
  ~PackedSelfAttention();
  PackedSelfAttention(const PackedSelfAttention&) = delete;
  PackedSelfAttention& operator=(const PackedSelfAttention&) = delete;
  PackedSelfAttention(PackedSelfAttention&& other) noexcept;
  PackedSelfAttention& operator=(PackedSelfAttention&& other) noexcept;

  bool empty() const noexcept { return qkv_.empty(); }
  Isa isa() const noexcept { return qkv_.isa(); }
  std::size_t d_model() const noexcept { return qkv_.rows(); }
  std::size_t num_heads() const noexcept { return heads_; }
  std::size_t num_kv_heads() const noexcept { return kv_heads_; }
  std::size_t dim_k() const noexcept { return dim_k_; }
  std::size_t dim_v() const noexcept { return dim_v_; }
  bool has_output_projection() const noexcept { return !o_.empty(); }
  // Columns of self_attention's out: Wo's, or num_heads * dim_v without it.
  std::size_t d_out() const noexcept { return o_.empty() ? heads_ * dim_v_ : o_.cols(); }

  // For attn's own implementation: [Wq | Wk | Wv] and Wo packed, their biases (nullptr if none;
  // [bq | bk | bv] with zeros for an absent one).
  const PackedMatrix& qkv() const noexcept { return qkv_; }
  const PackedMatrix& o() const noexcept { return o_; }
  const float* qkv_bias() const noexcept { return qkv_bias_; }
  const float* o_bias() const noexcept { return o_bias_; }

 private:
  friend Status pack_self_attention(Context& ctx, const SelfAttentionParams& params,
                                    PackedSelfAttention* out) noexcept;
  PackedMatrix qkv_, o_;
  float* biases_ = nullptr;  // one allocation: qkv_bias_ and o_bias_ point into it
  const float* qkv_bias_ = nullptr;
  const float* o_bias_ = nullptr;
  std::size_t heads_ = 0, kv_heads_ = 0, dim_k_ = 0, dim_v_ = 0;
};

// Packs params' weights and biases for Contexts of ctx's ISA, with ctx's threads (d_model is
// params.q.weight.rows; params.attention is not used: the options go with each call). The
// layer's allocations happen here. On error *out is untouched.
// Errors: invalid_argument (the weights as self_attention checks them, out == nullptr),
// out_of_memory.
ATTN_API Status pack_self_attention(Context& ctx, const SelfAttentionParams& params,
                                    PackedSelfAttention* out) noexcept;

// self_attention with the layer's weights packed: x [batch * seq, layer.d_model()], out
// [batch * seq, layer.d_out()], options as params.attention above. Within the same bounds as the
// call with the weights' views, not always the same bits (the projections may take other tiles).
// Errors as above, and invalid_argument when layer is empty or was packed for another ISA.
ATTN_API Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                               const PackedSelfAttention& layer, const AttentionOptions& options,
                               MatrixView<float> out) noexcept;

}  // namespace attn

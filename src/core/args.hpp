// Argument validation of each public routine, shared by the fast paths and attn::reference so
// both accept and reject exactly the same calls. fn names the caller in messages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attn/attention.hpp"
#include "attn/packed_matrix.hpp"
#include "attn/self_attention.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"
#include "core/checks.hpp"

namespace attn::detail {

// The bytes a non-empty matrix view spans, when its sizes are far from any overflow (each below
// 2^28, so the span stays below 2^58 bytes) and its stride holds its rows; else 0.
template <class T>
inline std::uintptr_t plain_span(const MatrixView<T>& x) {
  constexpr std::size_t kSmall = std::size_t{1} << 28;
  if (x.data == nullptr || x.rows == 0 || x.cols == 0 || x.rows >= kSmall || x.cols >= kSmall ||
      x.stride >= kSmall || x.stride < x.cols) {
    return 0;
  }
  return ((x.rows - 1) * x.stride + x.cols) * sizeof(float);
}

// The common valid matmul, recognised with a few comparisons (a call of a tiny product is tens
// of nanoseconds, and validate_matmul's full checks cost about ten of them): every view non-empty
// with small sizes and aligned data, the shapes agreeing, no view wrapping around the address
// space, and c disjoint from a and b. Inline, so that attn::matmul asks it without a call
// (validate_matmul asks it first too); anything else takes the full checks, which name the
// argument and the values.
inline bool plainly_valid_matmul(const MatrixView<const float>& a, Transpose ta,
                                 const MatrixView<const float>& b, Transpose tb,
                                 const MatrixView<float>& c) {
  const std::uintptr_t sa = plain_span(a), sb = plain_span(b), sc = plain_span(c);
  if (sa == 0 || sb == 0 || sc == 0) return false;
  const bool na = ta == Transpose::no, nb = tb == Transpose::no;
  if ((na ? a.cols : a.rows) != (nb ? b.rows : b.cols) || c.rows != (na ? a.rows : a.cols) ||
      c.cols != (nb ? b.cols : b.rows)) {
    return false;
  }
  const auto pa = reinterpret_cast<std::uintptr_t>(a.data);
  const auto pb = reinterpret_cast<std::uintptr_t>(b.data);
  const auto pc = reinterpret_cast<std::uintptr_t>(c.data);
  if (((pa | pb | pc) & (alignof(float) - 1)) != 0) return false;
  const std::uintptr_t top = UINTPTR_MAX;
  if (pa > top - sa || pb > top - sb || pc > top - sc) return false;
  const bool c_meets_a = pc < pa + sa && pa < pc + sc;
  const bool c_meets_b = pc < pb + sb && pb < pc + sc;
  return !c_meets_a && !c_meets_b;
}

Status validate_matmul(const char* fn, const MatrixView<const float>& a, Transpose ta,
                       const MatrixView<const float>& b, Transpose tb, const MatrixView<float>& c);

// matmul with a PackedMatrix: a and c as validate_matmul checks them; b is op(b), k x n, packed
// for `isa` (empty: never packed or moved from) and the Context runs ctx_isa.
Status validate_packed_matmul(const char* fn, const MatrixView<const float>& a, Transpose ta,
                              const PackedMatrix& b, Isa ctx_isa, const MatrixView<float>& c);

Status validate_exp(const char* fn, const float* x, const float* y, std::size_t n);

Status validate_softmax(const char* fn, const MatrixView<const float>& x,
                        const MatrixView<float>& y);

// The sizes of a validated attention call.
struct AttentionDims {
  std::size_t batch, heads_q, heads_kv, len_q, len_k, dim_k, dim_v;
  float scale;  // resolved: options.scale, or 1/sqrt(dim_k) when that is 0
};

// A validated attention call with nothing to write: no query rows, or no output columns and no
// weights (or weights of no keys). Such views are empty, so no size check bounds B * Hq * Lq:
// attn::attention and the reference return before looping over them.
inline bool attention_writes_nothing(const AttentionDims& d, bool weights) {
  return d.batch == 0 || d.heads_q == 0 || d.len_q == 0 ||
         (d.dim_v == 0 && (!weights || d.len_k == 0));
}

Status validate_attention(const char* fn, const TensorView<const float>& q,
                          const TensorView<const float>& k, const TensorView<const float>& v,
                          const TensorView<float>& out, const AttentionOptions& options,
                          AttentionDims* dims);

// The sizes of a validated self-attention call.
struct SelfAttentionDims {
  std::size_t batch, seq, d_model, heads_q, heads_kv, dim_k, dim_v, d_out;
  bool has_output_projection;
  float scale;  // resolved as in AttentionDims
};

Status validate_self_attention(const char* fn, const MatrixView<const float>& x, std::size_t batch,
                               const SelfAttentionParams& params, const MatrixView<float>& out,
                               SelfAttentionDims* dims);

// A validated self-attention call of `rows` rows with nothing to write: no rows, or no output
// columns and no weights. attn::self_attention and the reference return before sizing anything
// (with no output columns, out bounds none of the projections' sizes).
inline bool self_attention_writes_nothing(std::size_t rows, const SelfAttentionDims& d,
                                          bool weights) {
  return rows == 0 || (d.d_out == 0 && !weights);
}

// The names of the weights and biases of SelfAttentionParams, in the order of the extents below:
// q.weight, q.bias, k.weight, k.bias, v.weight, v.bias, o.weight, o.bias.
inline constexpr const char* kSelfAttentionWeightNames[8] = {
    "params.q.weight", "params.q.bias", "params.k.weight", "params.k.bias",
    "params.v.weight", "params.v.bias", "params.o.weight", "params.o.bias"};

// The weights part of validate_self_attention (params.attention is not looked at) for inputs of
// d_model columns: sets dims' d_model, heads, Dk, Dv, d_out and has_output_projection, and the
// extents of the 8 weights and biases (empty where absent).
Status validate_self_attention_weights(const char* fn, const SelfAttentionParams& params,
                                       std::size_t d_model, SelfAttentionDims* dims,
                                       Extent extents[8]);

// A call of self_attention with a packed layer of sizes `layer` (validate_self_attention_weights'
// dims) whose memory is layer_extents (its packed matrices and biases; empty where absent): x,
// out and the options as validate_self_attention checks them.
Status validate_packed_self_attention(const char* fn, const MatrixView<const float>& x,
                                      std::size_t batch, const SelfAttentionDims& layer,
                                      const Extent (&layer_extents)[4],
                                      const AttentionOptions& options, const MatrixView<float>& out,
                                      SelfAttentionDims* dims);

}  // namespace attn::detail

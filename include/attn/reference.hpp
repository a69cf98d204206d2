// attn::reference: the oracles. Scalar, double accumulation, written to be obviously correct
// rather than fast (each sum in index order; matmul runs its loops in B's memory order, which
// leaves every sum as it was). Tests compare every fast path with these. Each function validates
// its arguments exactly as its fast counterpart does, and takes the same arguments; the Context
// overloads ignore the Context (the reference is always scalar and single-threaded).
#pragma once

#include <cstddef>

#include "attn/attention.hpp"
#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/self_attention.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn::reference {

// Each output is the double-precision result rounded once to float.
ATTN_API Status matmul(MatrixView<const float> a, Transpose ta, MatrixView<const float> b,
                       Transpose tb, MatrixView<float> c, float alpha = 1.0f, float beta = 0.0f);
ATTN_API Status exp(const float* x, float* y, std::size_t n);
ATTN_API Status softmax(MatrixView<const float> x, MatrixView<float> y);
ATTN_API Status attention(TensorView<const float> q, TensorView<const float> k,
                          TensorView<const float> v, TensorView<float> out,
                          const AttentionOptions& options = {});
ATTN_API Status self_attention(MatrixView<const float> x, std::size_t batch,
                               const SelfAttentionParams& params, MatrixView<float> out);

inline Status matmul(Context&, MatrixView<const float> a, Transpose ta, MatrixView<const float> b,
                     Transpose tb, MatrixView<float> c, float alpha = 1.0f, float beta = 0.0f) {
  return matmul(a, ta, b, tb, c, alpha, beta);
}
inline Status exp(Context&, const float* x, float* y, std::size_t n) {
  return exp(x, y, n);
}
inline Status softmax(Context&, MatrixView<const float> x, MatrixView<float> y) {
  return softmax(x, y);
}
inline Status attention(Context&, TensorView<const float> q, TensorView<const float> k,
                        TensorView<const float> v, TensorView<float> out,
                        const AttentionOptions& options = {}) {
  return attention(q, k, v, out, options);
}
inline Status self_attention(Context&, MatrixView<const float> x, std::size_t batch,
                             const SelfAttentionParams& params, MatrixView<float> out) {
  return self_attention(x, batch, params, out);
}

}  // namespace attn::reference

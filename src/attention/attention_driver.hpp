// The attention drivers behind attn::attention and attn::self_attention. Arguments are trusted
// (validated by the callers); scratch comes from the Context arena.
#pragma once

#include <cstddef>

#include "attn/attention.hpp"
#include "core/args.hpp"
#include "dispatch/kernels.hpp"

namespace attn::detail {

struct AttentionCall {
  TensorView<const float> q, k, v;
  TensorView<float> out;
  const AttentionOptions* options;
  AttentionDims dims;
};

// The view with the stride of each size-1 dimension among the first three, which the contract
// ignores (mask.hpp: any value, PTRDIFF_MIN and PTRDIFF_MAX included), set to a plain view's:
// the row width for a one-row dimension 2, 0 for the batch and head dimensions (only ever taken
// times index 0). The drivers choose paths by the row strides and the kernels form pointers from
// them, some a row past the last (pv_kernel's b += ldb after its last key), which such a stride
// overflows. For validated views (last stride 1).
template <class T>
TensorView<T> with_plain_unit_strides(TensorView<T> t) {
  if (t.shape[0] == 1) t.strides[0] = 0;
  if (t.shape[1] == 1) t.strides[1] = 0;
  if (t.shape[2] == 1) t.strides[2] = static_cast<std::ptrdiff_t>(t.shape[3]);
  return t;
}

// The options with with_plain_unit_strides applied to the weights and both masks.
inline AttentionOptions with_plain_unit_strides(const AttentionOptions& options) {
  AttentionOptions o = options;
  o.weights = with_plain_unit_strides(o.weights);
  o.mask.additive = with_plain_unit_strides(o.mask.additive);
  o.mask.allowed = with_plain_unit_strides(o.mask.allowed);
  return o;
}

std::size_t attention_scratch_bytes(const Kernels& kern, int threads, const AttentionCall& call);

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch);

}  // namespace attn::detail

// The attention drivers behind attn::attention and attn::self_attention. Arguments are trusted
// (validated by the callers); scratch comes from the Context arena.
#pragma once

#include <cstddef>
#include <optional>

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

// A one-row view's row stride (dimension 2), which the contract ignores (mask.hpp: any value,
// PTRDIFF_MIN and PTRDIFF_MAX included), as a plain view has it: the row width. The drivers
// choose paths by the row strides and the kernels form pointers from them, some a row past the
// last (pv_kernel's b += ldb after its last key), which such a stride overflows. A size-1 batch or
// head dimension's stride is only taken times index 0 (row_ptr) or not at all (MaskRows), so it
// stays. For validated views (last stride 1).
template <class T>
bool has_odd_row_stride(const TensorView<T>& t) {
  return t.shape[2] == 1 && t.strides[2] != static_cast<std::ptrdiff_t>(t.shape[3]);
}
template <class T>
TensorView<T> with_plain_row_stride(TensorView<T> t) {
  if (t.shape[2] == 1) t.strides[2] = static_cast<std::ptrdiff_t>(t.shape[3]);
  return t;
}

// The options themselves, or where the weights or a mask has an odd row stride, *plain set to
// them with with_plain_row_stride applied (constructed and copied only then: the seed's
// 6 x 6 x 16 call takes about 0.4 us).
inline const AttentionOptions* with_plain_row_strides(const AttentionOptions& options,
                                                      std::optional<AttentionOptions>* plain) {
  if (!has_odd_row_stride(options.weights) && !has_odd_row_stride(options.mask.additive) &&
      !has_odd_row_stride(options.mask.allowed)) {
    return &options;
  }
  AttentionOptions& o = plain->emplace(options);
  o.weights = with_plain_row_stride(o.weights);
  o.mask.additive = with_plain_row_stride(o.mask.additive);
  o.mask.allowed = with_plain_row_stride(o.mask.allowed);
  return &o;
}

std::size_t attention_scratch_bytes(const Kernels& kern, int threads, const AttentionCall& call);

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch);

}  // namespace attn::detail

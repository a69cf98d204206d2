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

// Whether a view has no elements. Its data and strides are then unchecked (check_tensor: any
// values, PTRDIFF_MIN and PTRDIFF_MAX included).
template <class T>
bool has_no_elements(const TensorView<T>& t) {
  return t.shape[0] == 0 || t.shape[1] == 0 || t.shape[2] == 0 || t.shape[3] == 0;
}

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

// q, k, v and out as the drivers take them: a view with no elements (Dk == 0: q and k; Dv == 0:
// v and out; Lk == 0: k and v) as null data with strides {0, 0, 0, 1} (make_bhsd's for a last
// dimension of 0), so that no offset is formed from the caller's data and strides and the path
// taken does not depend on them (K is read in place only with a positive row stride, so never
// with Dk == 0); other views with_plain_row_stride.
template <class T>
TensorView<T> driver_view(TensorView<T> t) {
  if (has_no_elements(t)) return {nullptr, t.shape, {0, 0, 0, 1}};
  return with_plain_row_stride(t);
}

// The options themselves, or where the weights or a mask has an odd row stride or is an empty
// view with data (Lk == 0), *plain set to them with with_plain_row_stride applied and the empty
// views' data null (constructed and copied only then: the seed's 6 x 6 x 16 call takes about
// 0.4 us). A null mask or weights view is never read through its strides.
template <class T>
bool needs_plain_view(const TensorView<T>& t) {
  return has_odd_row_stride(t) || (t.data != nullptr && has_no_elements(t));
}
template <class T>
TensorView<T> plain_option_view(TensorView<T> t) {
  if (has_no_elements(t)) t.data = nullptr;
  return with_plain_row_stride(t);
}
inline const AttentionOptions* with_plain_row_strides(const AttentionOptions& options,
                                                      std::optional<AttentionOptions>* plain) {
  if (!needs_plain_view(options.weights) && !needs_plain_view(options.mask.additive) &&
      !needs_plain_view(options.mask.allowed)) {
    return &options;
  }
  AttentionOptions& o = plain->emplace(options);
  o.weights = plain_option_view(o.weights);
  o.mask.additive = plain_option_view(o.mask.additive);
  o.mask.allowed = plain_option_view(o.mask.allowed);
  return &o;
}

std::size_t attention_scratch_bytes(const Kernels& kern, int threads, const AttentionCall& call);

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch);

}  // namespace attn::detail

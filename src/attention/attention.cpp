// attn::attention: argument checks, scratch, then the attention driver on the Context's ISA.
#include "attn/attention.hpp"

#include "attention/attention_driver.hpp"
#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"

namespace attn {

Status attention(Context& ctx, TensorView<const float> q, TensorView<const float> k,
                 TensorView<const float> v, TensorView<float> out,
                 const AttentionOptions& options) noexcept {
  constexpr const char* fn = "attention";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  detail::AttentionCall call{};
  ATTN_RETURN_IF_ERROR(detail::validate_attention(fn, q, k, v, out, options, &call.dims));
  std::optional<AttentionOptions> plain_options;
  call.q = detail::driver_view(q);
  call.k = detail::driver_view(k);
  call.v = detail::driver_view(v);
  call.out = detail::driver_view(out);
  call.options = detail::with_plain_row_strides(options, &plain_options);
  void* scratch = nullptr;
  ATTN_RETURN_IF_ERROR(
      st->scratch(fn, detail::attention_scratch_bytes(*st->kernels, st->threads, call), &scratch));
  detail::attention_run(*st->kernels, st->threads, call, scratch);
  return Status::Ok();
}

}  // namespace attn

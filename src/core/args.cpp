#include "core/args.hpp"

#include <cmath>
#include <cstdint>

#include "core/checks.hpp"

namespace attn::detail {
namespace {

const char* tr(Transpose t) {
  return t == Transpose::yes ? "^T" : "";
}

// The names of an AttentionOptions' parts in messages, under the name the call gives the options
// ("options", or self_attention's "params.attention"): string literals, so that a valid call
// formats nothing (seven snprintf calls per call took about a third of the seed's 6-token
// attention on Zen 4).
struct OptionNames {
  const char *additive, *allowed, *key_lengths, *scale, *weights, *causal_align, *window_align;
};
#define ATTN_OPTION_NAMES(opt)                                                        \
  OptionNames {                                                                       \
    opt ".mask.additive", opt ".mask.allowed", opt ".mask.key_lengths", opt ".scale", \
        opt ".weights", opt ".mask.causal_align", opt ".mask.window_align"            \
  }
constexpr OptionNames kOptionsNames = ATTN_OPTION_NAMES("options");
constexpr OptionNames kParamsAttentionNames = ATTN_OPTION_NAMES("params.attention");
#undef ATTN_OPTION_NAMES

// Mask parts against [B, Hq, Lq, Lk]; collects the extents of what the mask reads.
Status validate_mask(const char* fn, const OptionNames& on, const Mask& mask, std::size_t batch,
                     std::size_t heads, std::size_t lq, std::size_t lk, Extent* additive,
                     Extent* allowed, Extent* lengths) {
  const std::size_t want[4] = {batch, heads, lq, lk};
  const char* dim_names[4] = {"batch", "heads", "Lq", "Lk"};
  auto check_shape = [&](const char* arg, const std::array<std::size_t, 4>& shape) {
    for (int d = 0; d < 4; ++d) {
      const bool broadcast = d < 3 && shape[d] == 1;  // batch, heads and queries; not keys
      if (shape[d] != want[d] && !broadcast) {
        return Status::Error(StatusCode::invalid_argument,
                             "%s: %s has shape [%zu, %zu, %zu, %zu], which does not broadcast to "
                             "[%zu, %zu, %zu, %zu] (dimension %s)",
                             fn, arg, shape[0], shape[1], shape[2], shape[3], want[0], want[1],
                             want[2], want[3], dim_names[d]);
      }
    }
    return Status::Ok();
  };
  *additive = Extent{};
  *allowed = Extent{};
  *lengths = Extent{};
  // An enum holds any value of its underlying type: one that is neither alignment is refused
  // (the drivers would read it as top_left), where the part it belongs to is on.
  const auto check_align = [&](bool used, CausalAlign align, const char* arg) {
    if (!used || align == CausalAlign::top_left || align == CausalAlign::bottom_right) {
      return Status::Ok();
    }
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s is %d; it must be CausalAlign::top_left (0) or bottom_right (1)",
                         fn, arg, static_cast<int>(align));
  };
  ATTN_RETURN_IF_ERROR(check_align(mask.is_causal, mask.causal_align, on.causal_align));
  ATTN_RETURN_IF_ERROR(check_align(mask.has_window, mask.window_align, on.window_align));
  if (mask.additive.data != nullptr) {
    ATTN_RETURN_IF_ERROR(check_shape(on.additive, mask.additive.shape));
    ATTN_RETURN_IF_ERROR(check_tensor(fn, on.additive, mask.additive, additive));
  }
  if (mask.allowed.data != nullptr) {
    ATTN_RETURN_IF_ERROR(check_shape(on.allowed, mask.allowed.shape));
    ATTN_RETURN_IF_ERROR(check_tensor(fn, on.allowed, mask.allowed, allowed));
  }
  if (mask.key_lengths != nullptr) {
    ATTN_RETURN_IF_ERROR(
        check_buffer(fn, on.key_lengths, mask.key_lengths, batch, sizeof(std::int32_t), lengths));
    for (std::size_t b = 0; b < batch; ++b) {
      const std::int32_t len = mask.key_lengths[b];
      if (len < 0 || static_cast<std::size_t>(len) > lk) {
        return Status::Error(StatusCode::invalid_argument,
                             "%s: %s[%zu] is %d; it must be in [0, Lk = %zu]", fn, on.key_lengths,
                             b, static_cast<int>(len), lk);
      }
    }
  }
  return Status::Ok();
}

Status shape_error(const char* fn, const char* arg, const std::array<std::size_t, 4>& got,
                   const std::array<std::size_t, 4>& want) {
  return Status::Error(StatusCode::invalid_argument,
                       "%s: %s has shape [%zu, %zu, %zu, %zu]; expected [%zu, %zu, %zu, %zu]", fn,
                       arg, got[0], got[1], got[2], got[3], want[0], want[1], want[2], want[3]);
}

Status check_scale(const char* fn, const OptionNames& on, float scale) {
  if (!std::isfinite(scale)) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s is %g; it must be finite (0 = 1/sqrt(Dk))", fn, on.scale,
                         static_cast<double>(scale));
  }
  return Status::Ok();
}

float resolve_scale(float scale, std::size_t dim_k) {
  if (scale != 0.0f) return scale;
  return dim_k == 0 ? 1.0f : static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim_k)));
}

// The weights output: [B, Hq, Lq, Lk], disjoint from the inputs and the output.
Status validate_weights(const char* fn, const OptionNames& on, const TensorView<float>& w,
                        const std::array<std::size_t, 4>& want, Extent* extent) {
  *extent = Extent{};
  if (w.data == nullptr) return Status::Ok();
  if (w.shape != want) return shape_error(fn, on.weights, w.shape, want);
  ATTN_RETURN_IF_ERROR(check_tensor(fn, on.weights, w, extent));
  return check_no_self_overlap(fn, on.weights, w.shape, w.strides);
}

}  // namespace

Status validate_matmul(const char* fn, const MatrixView<const float>& a, Transpose ta,
                       const MatrixView<const float>& b, Transpose tb, const MatrixView<float>& c) {
  if (plainly_valid_matmul(a, ta, b, tb, c)) return Status::Ok();
  Extent ea, eb, ec;
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "a", a, &ea));
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "b", b, &eb));
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "c", c, &ec));
  const std::size_t m = ta == Transpose::no ? a.rows : a.cols;
  const std::size_t ka = ta == Transpose::no ? a.cols : a.rows;
  const std::size_t kb = tb == Transpose::no ? b.rows : b.cols;
  const std::size_t n = tb == Transpose::no ? b.cols : b.rows;
  if (ka != kb) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: inner dimensions differ: a%s is %zu x %zu but b%s is %zu x %zu", fn,
                         tr(ta), m, ka, tr(tb), kb, n);
  }
  if (c.rows != m || c.cols != n) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: c is %zu x %zu but the product a%s b%s is %zu x %zu", fn, c.rows,
                         c.cols, tr(ta), tr(tb), m, n);
  }
  ATTN_RETURN_IF_ERROR(check_disjoint(fn, "c", ec, "a", ea));
  return check_disjoint(fn, "c", ec, "b", eb);
}

Status validate_packed_matmul(const char* fn, const MatrixView<const float>& a, Transpose ta,
                              const PackedMatrix& b, Isa ctx_isa, const MatrixView<float>& c) {
  if (b.empty()) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: b is an empty PackedMatrix (never packed, or moved from)", fn);
  }
  if (b.isa() != ctx_isa) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: b was packed for %s but the Context runs %s; pack it with a Context "
                         "of that ISA",
                         fn, isa_name(b.isa()), isa_name(ctx_isa));
  }
  Extent ea, ec;
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "a", a, &ea));
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "c", c, &ec));
  const std::size_t m = ta == Transpose::no ? a.rows : a.cols;
  const std::size_t k = ta == Transpose::no ? a.cols : a.rows;
  if (k != b.rows()) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: inner dimensions differ: a%s is %zu x %zu but the packed b is %zu x "
                         "%zu",
                         fn, tr(ta), m, k, b.rows(), b.cols());
  }
  if (c.rows != m || c.cols != b.cols()) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: c is %zu x %zu but the product a%s times the packed b is %zu x %zu",
                         fn, c.rows, c.cols, tr(ta), m, b.cols());
  }
  ATTN_RETURN_IF_ERROR(check_disjoint(fn, "c", ec, "a", ea));
  const auto pb = reinterpret_cast<std::uintptr_t>(b.data());
  return check_disjoint(fn, "c", ec, "the packed b", Extent{pb, pb + b.bytes()});
}

Status validate_exp(const char* fn, const float* x, const float* y, std::size_t n) {
  Extent ex, ey;
  ATTN_RETURN_IF_ERROR(check_buffer(fn, "x", x, n, sizeof(float), &ex));
  ATTN_RETURN_IF_ERROR(check_buffer(fn, "y", y, n, sizeof(float), &ey));
  if (x == y) return Status::Ok();
  return check_disjoint(fn, "y", ey, "x", ex);
}

Status validate_softmax(const char* fn, const MatrixView<const float>& x,
                        const MatrixView<float>& y) {
  Extent ex, ey;
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "x", x, &ex));
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "y", y, &ey));
  if (x.rows != y.rows || x.cols != y.cols) {
    return Status::Error(StatusCode::invalid_argument, "%s: x is %zu x %zu but y is %zu x %zu", fn,
                         x.rows, x.cols, y.rows, y.cols);
  }
  if (x.data == y.data && (x.stride == y.stride || x.rows <= 1)) return Status::Ok();
  return check_disjoint(fn, "y", ey, "x", ex);
}

Status validate_attention(const char* fn, const TensorView<const float>& q,
                          const TensorView<const float>& k, const TensorView<const float>& v,
                          const TensorView<float>& out, const AttentionOptions& options,
                          AttentionDims* dims) {
  Extent eq, ek, ev, eo, ew, ea, eb, el;
  ATTN_RETURN_IF_ERROR(check_tensor(fn, "q", q, &eq));
  ATTN_RETURN_IF_ERROR(check_tensor(fn, "k", k, &ek));
  ATTN_RETURN_IF_ERROR(check_tensor(fn, "v", v, &ev));
  ATTN_RETURN_IF_ERROR(check_tensor(fn, "out", out, &eo));
  AttentionDims d;
  d.batch = q.shape[0];
  d.heads_q = q.shape[1];
  d.len_q = q.shape[2];
  d.dim_k = q.shape[3];
  d.heads_kv = k.shape[1];
  d.len_k = k.shape[2];
  d.dim_v = v.shape[3];
  if (k.shape[0] != d.batch || k.shape[3] != d.dim_k) {
    return shape_error(fn, "k", k.shape, {d.batch, d.heads_kv, d.len_k, d.dim_k});
  }
  if (v.shape[0] != d.batch || v.shape[1] != d.heads_kv || v.shape[2] != d.len_k) {
    return shape_error(fn, "v", v.shape, {d.batch, d.heads_kv, d.len_k, d.dim_v});
  }
  if (d.heads_kv == 0 ? d.heads_q != 0 : d.heads_q % d.heads_kv != 0) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: q has %zu heads, which is not a multiple of the %zu heads of k and v",
                         fn, d.heads_q, d.heads_kv);
  }
  const std::array<std::size_t, 4> out_shape = {d.batch, d.heads_q, d.len_q, d.dim_v};
  if (out.shape != out_shape) return shape_error(fn, "out", out.shape, out_shape);
  ATTN_RETURN_IF_ERROR(check_no_self_overlap(fn, "out", out.shape, out.strides));
  const OptionNames& on = kOptionsNames;
  ATTN_RETURN_IF_ERROR(check_scale(fn, on, options.scale));
  ATTN_RETURN_IF_ERROR(
      validate_mask(fn, on, options.mask, d.batch, d.heads_q, d.len_q, d.len_k, &ea, &eb, &el));
  ATTN_RETURN_IF_ERROR(
      validate_weights(fn, on, options.weights, {d.batch, d.heads_q, d.len_q, d.len_k}, &ew));
  const Extent inputs[] = {eq, ek, ev, ea, eb, el};
  const char* names[] = {"q", "k", "v", on.additive, on.allowed, on.key_lengths};
  for (int i = 0; i < 6; ++i) {
    ATTN_RETURN_IF_ERROR(check_disjoint(fn, "out", eo, names[i], inputs[i]));
    ATTN_RETURN_IF_ERROR(check_disjoint(fn, on.weights, ew, names[i], inputs[i]));
  }
  ATTN_RETURN_IF_ERROR(check_disjoint(fn, on.weights, ew, "out", eo));
  d.scale = resolve_scale(options.scale, d.dim_k);
  *dims = d;
  return Status::Ok();
}

namespace {

// The checks of a self-attention call that do not depend on how its weights are given: out's
// shape, the options, and out and options.weights disjoint from x, the `n` weight extents
// (named by `names`) and the mask's inputs. d holds the weights' sizes (d_model, heads, Dk, Dv,
// d_out); sets batch, seq and scale. `on` names the options' parts in messages (under
// "params.attention" or "options").
Status validate_self_attention_call(const char* fn, const OptionNames& on, const Extent& ex,
                                    const Extent& eo, const MatrixView<const float>& x,
                                    std::size_t batch, const AttentionOptions& options,
                                    const MatrixView<float>& out, const Extent* weights,
                                    const char* const* names, int n, SelfAttentionDims* d) {
  d->batch = batch;
  d->seq = batch == 0 ? 0 : x.rows / batch;
  if (out.rows != x.rows || out.cols != d->d_out) {
    return Status::Error(StatusCode::invalid_argument, "%s: out is %zu x %zu; expected %zu x %zu",
                         fn, out.rows, out.cols, x.rows, d->d_out);
  }
  ATTN_RETURN_IF_ERROR(check_scale(fn, on, options.scale));
  Extent ea, eb, el, ew;
  ATTN_RETURN_IF_ERROR(
      validate_mask(fn, on, options.mask, d->batch, d->heads_q, d->seq, d->seq, &ea, &eb, &el));
  ATTN_RETURN_IF_ERROR(
      validate_weights(fn, on, options.weights, {d->batch, d->heads_q, d->seq, d->seq}, &ew));
  const Extent inputs[] = {ex, ea, eb, el};
  const char* input_names[] = {"x", on.additive, on.allowed, on.key_lengths};
  for (int i = 0; i < 4 + n; ++i) {
    const Extent& e = i < 4 ? inputs[i] : weights[i - 4];
    const char* name = i < 4 ? input_names[i] : names[i - 4];
    ATTN_RETURN_IF_ERROR(check_disjoint(fn, "out", eo, name, e));
    ATTN_RETURN_IF_ERROR(check_disjoint(fn, on.weights, ew, name, e));
  }
  ATTN_RETURN_IF_ERROR(check_disjoint(fn, on.weights, ew, "out", eo));
  d->scale = resolve_scale(options.scale, d->dim_k);
  return Status::Ok();
}

// x and out as matrices, and x's rows a multiple of batch.
Status validate_self_attention_x(const char* fn, const MatrixView<const float>& x,
                                 std::size_t batch, const MatrixView<float>& out, Extent* ex,
                                 Extent* eo) {
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "x", x, ex));
  ATTN_RETURN_IF_ERROR(check_matrix(fn, "out", out, eo));
  if (batch == 0 ? x.rows != 0 : x.rows % batch != 0) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: x has %zu rows, which is not batch (%zu) times a sequence length", fn,
                         x.rows, batch);
  }
  return Status::Ok();
}

}  // namespace

Status validate_self_attention_weights(const char* fn, const SelfAttentionParams& p,
                                       std::size_t d_model, SelfAttentionDims* dims,
                                       Extent extents[8]) {
  SelfAttentionDims d{};
  if (p.num_heads == 0) {
    return Status::Error(StatusCode::invalid_argument, "%s: params.num_heads is 0", fn);
  }
  d.d_model = d_model;
  d.heads_q = p.num_heads;
  d.heads_kv = p.num_kv_heads == 0 ? p.num_heads : p.num_kv_heads;
  if (d.heads_q % d.heads_kv != 0) {
    return Status::Error(
        StatusCode::invalid_argument,
        "%s: params.num_heads (%zu) is not a multiple of params.num_kv_heads (%zu)", fn, d.heads_q,
        d.heads_kv);
  }
  const Projection* projs[4] = {&p.q, &p.k, &p.v, &p.o};
  d.has_output_projection = p.o.weight.data != nullptr;
  if (!d.has_output_projection && p.o.bias != nullptr) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: params.o.bias is set but params.o.weight.data is null (no output "
                         "projection to add it to)",
                         fn);
  }
  for (int i = 0; i < 8; ++i)
    extents[i] = Extent{};
  for (int i = 0; i < 4; ++i) {
    if (i == 3 && !d.has_output_projection) break;
    ATTN_RETURN_IF_ERROR(
        check_matrix(fn, kSelfAttentionWeightNames[2 * i], projs[i]->weight, &extents[2 * i]));
    ATTN_RETURN_IF_ERROR(check_buffer(fn, kSelfAttentionWeightNames[2 * i + 1], projs[i]->bias,
                                      projs[i]->bias ? projs[i]->weight.cols : 0, sizeof(float),
                                      &extents[2 * i + 1]));
  }
  auto rows_error = [&](int i, std::size_t want) {
    return Status::Error(StatusCode::invalid_argument, "%s: %s has %zu rows; expected %zu", fn,
                         kSelfAttentionWeightNames[2 * i], projs[i]->weight.rows, want);
  };
  for (int i = 0; i < 3; ++i) {
    if (projs[i]->weight.rows != d.d_model) return rows_error(i, d.d_model);
  }
  const MatrixView<const float>& wq = p.q.weight;
  const MatrixView<const float>& wk = p.k.weight;
  const MatrixView<const float>& wv = p.v.weight;
  if (wq.cols == 0 || wq.cols % d.heads_q != 0) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: params.q.weight has %zu columns, not a positive multiple of "
                         "num_heads (%zu)",
                         fn, wq.cols, d.heads_q);
  }
  d.dim_k = wq.cols / d.heads_q;
  if (wk.cols != d.heads_kv * d.dim_k) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: params.k.weight has %zu columns; expected num_kv_heads (%zu) x Dk "
                         "(%zu) = %zu",
                         fn, wk.cols, d.heads_kv, d.dim_k, d.heads_kv * d.dim_k);
  }
  if (wv.cols == 0 || wv.cols % d.heads_kv != 0) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: params.v.weight has %zu columns, not a positive multiple of "
                         "num_kv_heads (%zu)",
                         fn, wv.cols, d.heads_kv);
  }
  d.dim_v = wv.cols / d.heads_kv;
  // Weights with no rows (d_model == 0) bound no width: a row of Q, K and V side by side, and
  // one of the concatenated heads, must still be addressable (each row is materialised).
  constexpr std::size_t kMaxRowFloats = static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(float);
  std::size_t dqkv = 0;
  if (!add_ok(wq.cols, wk.cols, &dqkv) || !add_ok(dqkv, wv.cols, &dqkv) || dqkv > kMaxRowFloats) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: the projections' %zu + %zu + %zu columns side by side span more "
                         "bytes than fit in ptrdiff_t",
                         fn, wq.cols, wk.cols, wv.cols);
  }
  if (!mul_ok(d.heads_q, d.dim_v, &d.d_out) || d.d_out > kMaxRowFloats) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: num_heads (%zu) x Dv (%zu) heads' columns span more bytes than fit "
                         "in ptrdiff_t",
                         fn, d.heads_q, d.dim_v);
  }
  if (d.has_output_projection) {
    if (p.o.weight.rows != d.d_out) return rows_error(3, d.d_out);
    d.d_out = p.o.weight.cols;
  }
  *dims = d;
  return Status::Ok();
}

Status validate_self_attention(const char* fn, const MatrixView<const float>& x, std::size_t batch,
                               const SelfAttentionParams& p, const MatrixView<float>& out,
                               SelfAttentionDims* dims) {
  Extent ex, eo, weights[8];
  ATTN_RETURN_IF_ERROR(validate_self_attention_x(fn, x, batch, out, &ex, &eo));
  SelfAttentionDims d{};
  ATTN_RETURN_IF_ERROR(validate_self_attention_weights(fn, p, x.cols, &d, weights));
  ATTN_RETURN_IF_ERROR(validate_self_attention_call(fn, kParamsAttentionNames, ex, eo, x, batch,
                                                    p.attention, out, weights,
                                                    kSelfAttentionWeightNames, 8, &d));
  *dims = d;
  return Status::Ok();
}

Status validate_packed_self_attention(const char* fn, const MatrixView<const float>& x,
                                      std::size_t batch, const SelfAttentionDims& layer,
                                      const Extent (&layer_extents)[4],
                                      const AttentionOptions& options, const MatrixView<float>& out,
                                      SelfAttentionDims* dims) {
  Extent ex, eo;
  ATTN_RETURN_IF_ERROR(validate_self_attention_x(fn, x, batch, out, &ex, &eo));
  if (x.cols != layer.d_model) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: x has %zu columns but the packed layer's d_model is %zu", fn, x.cols,
                         layer.d_model);
  }
  SelfAttentionDims d = layer;
  const char* names[] = {"the packed layer", "the packed layer", "the packed layer",
                         "the packed layer"};
  ATTN_RETURN_IF_ERROR(validate_self_attention_call(fn, kOptionsNames, ex, eo, x, batch, options,
                                                    out, layer_extents, names, 4, &d));
  *dims = d;
  return Status::Ok();
}

}  // namespace attn::detail

// attn::self_attention: projections (GEMMs with the bias as the initial C), attention over the
// heads read in place through BSHD strides, then the output projection; the weights given as
// views or packed once (PackedSelfAttention).
#include "attn/self_attention.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "attention/attention_driver.hpp"
#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "matmul/gemm.hpp"

namespace attn {
namespace {

using detail::GemmOperand;
using detail::GemmShape;

// The q, k and v weights side by side in one matrix ([Wq | Wk | Wv], as fused-QKV checkpoints
// store them), whatever their biases.
bool joint_weights(const SelfAttentionParams& p, MatrixView<const float>* w) {
  const auto& q = p.q.weight;
  const auto& k = p.k.weight;
  const auto& v = p.v.weight;
  // Pointer arithmetic only on non-null pointers (empty views may be null).
  if (!q.data || !k.data || !v.data || q.stride != k.stride || q.stride != v.stride ||
      k.data != q.data + q.cols || v.data != k.data + k.cols) {
    return false;
  }
  *w = MatrixView<const float>{q.data, q.rows, q.cols + k.cols + v.cols, q.stride};
  return true;
}

// Joint weights with biases absent or side by side too: one GEMM projects all three.
bool fused_qkv(const SelfAttentionParams& p, Projection* qkv) {
  const bool no_bias = !p.q.bias && !p.k.bias && !p.v.bias;
  const bool joint_bias = p.q.bias && p.k.bias && p.v.bias &&
                          p.k.bias == p.q.bias + p.q.weight.cols &&
                          p.v.bias == p.k.bias + p.k.weight.cols;
  if ((!no_bias && !joint_bias) || !joint_weights(p, &qkv->weight)) return false;
  qkv->bias = p.q.bias;
  return true;
}

// One projection y (rows x cols, row stride ldy) = a * W + bias, the bias added as the GEMM
// writes y: W a view (gemm) or packed (gemm_prepacked).
struct ProjectionGemm {
  MatrixView<const float> weight{};
  const PackedMatrix* packed = nullptr;
  const float* bias = nullptr;
  std::size_t col0 = 0;  // y's first column in the output buffer

  std::size_t cols() const { return packed ? packed->cols() : weight.cols; }
  std::size_t scratch_bytes(const detail::Kernels& kern, int threads, std::size_t rows,
                            std::size_t k, const GemmOperand& a) const {
    const GemmShape shape{rows, cols(), k};
    return packed ? detail::gemm_prepacked_scratch_bytes(kern, threads, shape, a)
                  : detail::gemm_scratch_bytes(kern, threads, shape, a,
                                               GemmOperand{weight.data, weight.stride, 1});
  }
  void run(const detail::Kernels& kern, int threads, const MatrixView<const float>& a, float* y,
           std::size_t ldy, void* scratch) const {
    const GemmShape shape{a.rows, cols(), a.cols};
    const GemmOperand ga{a.data, a.stride, 1};
    if (packed) {
      detail::gemm_prepacked(kern, threads, shape, 1.0f, ga, packed->data(), 0.0f, y + col0, ldy,
                             scratch, bias);
    } else {
      detail::gemm(kern, threads, shape, 1.0f, ga, GemmOperand{weight.data, weight.stride, 1}, 0.0f,
                   y + col0, ldy, scratch, bias);
    }
  }
};

// The pipeline of a validated call (d): the 1 or 3 GEMMs of `qkv` write Q, K and V side by side
// into the arena, the attention reads the heads in place, then `o` (when set) projects them.
Status run_self_attention(detail::ContextState* st, const MatrixView<const float>& x,
                          const detail::SelfAttentionDims& d, const AttentionOptions& options,
                          const ProjectionGemm* qkv, int qkv_count, const ProjectionGemm* o,
                          const MatrixView<float>& out) {
  const std::size_t rows = x.rows;
  if (detail::self_attention_writes_nothing(rows, d, options.weights.data != nullptr)) {
    return Status::Ok();
  }
  const detail::Kernels& kern = *st->kernels;
  const int threads = st->threads;
  const std::size_t dq = d.heads_q * d.dim_k, dk = d.heads_kv * d.dim_k, dv = d.heads_kv * d.dim_v,
                    dh = d.heads_q * d.dim_v;

  // Q, K, V and (with an output projection) the concatenated heads live in the arena. Their rows
  // are within ptrdiff_t (validated); all of them may not be, when d_model == 0 leaves the widths
  // unbounded by any view: out_of_memory before any view of them is formed.
  const std::size_t dqkv = dq + dk + dv;
  constexpr std::size_t kMaxFloats = static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(float);
  std::size_t qkv_floats = 0, heads_floats = 0;
  if (!detail::mul_ok(rows, dqkv, &qkv_floats) || !detail::mul_ok(rows, dh, &heads_floats) ||
      qkv_floats > kMaxFloats || heads_floats > kMaxFloats) {
    return Status::Error(StatusCode::out_of_memory,
                         "self_attention: Q, K and V of %zu rows x %zu columns need more bytes "
                         "than fit in ptrdiff_t",
                         rows, dqkv);
  }
  float* heads_out = out.data;
  std::size_t heads_stride = out.stride;
  detail::AttentionCall call{};
  std::optional<AttentionOptions> plain_options;
  call.options = detail::with_plain_row_strides(options, &plain_options);
  call.dims = detail::AttentionDims{d.batch, d.heads_q, d.heads_kv, d.seq,
                                    d.seq,   d.dim_k,   d.dim_v,    d.scale};
  std::size_t work = 0;
  const GemmOperand xa{x.data, x.stride, 1};
  for (int i = 0; i < qkv_count; ++i)
    work = std::max(work, qkv[i].scratch_bytes(kern, threads, rows, d.d_model, xa));
  if (o != nullptr) {
    work = std::max(work, o->scratch_bytes(kern, threads, rows, dh, GemmOperand{nullptr, dh, 1}));
  }
  // Q, K and V side by side in one buffer (row stride dqkv); attention reads the heads in place.
  float* qkv_buf = nullptr;            // set below; the views only need their strides for sizing
  auto set_views = [&](float* base) {  // base == nullptr: views for sizing only
    const float* k = base ? base + dq : nullptr;
    const float* v = base ? base + dq + dk : nullptr;
    call.q =
        detail::driver_view(make_bshd<const float>(base, d.batch, d.seq, d.heads_q, d.dim_k, dqkv));
    call.k =
        detail::driver_view(make_bshd<const float>(k, d.batch, d.seq, d.heads_kv, d.dim_k, dqkv));
    call.v =
        detail::driver_view(make_bshd<const float>(v, d.batch, d.seq, d.heads_kv, d.dim_v, dqkv));
    call.out = detail::driver_view(
        make_bshd<float>(heads_out, d.batch, d.seq, d.heads_q, d.dim_v, heads_stride));
  };
  if (o != nullptr) heads_stride = dh;
  set_views(qkv_buf);
  work = std::max(work, detail::attention_scratch_bytes(kern, threads, call));
  using detail::ScratchCarver;
  const std::size_t bytes =
      detail::sat_add(ScratchCarver::rounded(qkv_floats * sizeof(float)) +
                          (o != nullptr ? ScratchCarver::rounded(heads_floats * sizeof(float)) : 0),
                      work);
  void* scratch = nullptr;
  ATTN_RETURN_IF_ERROR(st->scratch("self_attention", bytes, &scratch));
  ScratchCarver carve(scratch);
  qkv_buf = carve.take<float>(qkv_floats);
  if (o != nullptr) heads_out = carve.take<float>(heads_floats);
  void* work_area = carve.take_bytes(work);

  for (int i = 0; i < qkv_count; ++i)
    qkv[i].run(kern, threads, x, qkv_buf, dqkv, work_area);
  set_views(qkv_buf);
  detail::attention_run(kern, threads, call, work_area);
  if (o != nullptr) {
    const MatrixView<const float> heads{heads_out, rows, dh, dh};
    o->run(kern, threads, heads, out.data, out.stride, work_area);
  }
  return Status::Ok();
}

}  // namespace

Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                      const SelfAttentionParams& params, MatrixView<float> out) noexcept {
  constexpr const char* fn = "self_attention";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  detail::SelfAttentionDims d;
  ATTN_RETURN_IF_ERROR(detail::validate_self_attention(fn, x, batch, params, out, &d));
  const std::size_t dq = d.heads_q * d.dim_k, dk = d.heads_kv * d.dim_k;
  ProjectionGemm qkv[3];
  int qkv_count = 1;
  Projection fused;
  if (fused_qkv(params, &fused)) {
    qkv[0] = ProjectionGemm{fused.weight, nullptr, fused.bias, 0};
  } else {
    qkv[0] = ProjectionGemm{params.q.weight, nullptr, params.q.bias, 0};
    qkv[1] = ProjectionGemm{params.k.weight, nullptr, params.k.bias, dq};
    qkv[2] = ProjectionGemm{params.v.weight, nullptr, params.v.bias, dq + dk};
    qkv_count = 3;
  }
  const ProjectionGemm o{params.o.weight, nullptr, params.o.bias, 0};
  return run_self_attention(st, x, d, params.attention, qkv, qkv_count,
                            d.has_output_projection ? &o : nullptr, out);
}

PackedSelfAttention::~PackedSelfAttention() {
  std::free(biases_);
}

PackedSelfAttention::PackedSelfAttention(PackedSelfAttention&& other) noexcept
    : qkv_(std::move(other.qkv_)),
      o_(std::move(other.o_)),
      biases_(std::exchange(other.biases_, nullptr)),
      qkv_bias_(std::exchange(other.qkv_bias_, nullptr)),
      o_bias_(std::exchange(other.o_bias_, nullptr)),
      heads_(std::exchange(other.heads_, 0)),
      kv_heads_(std::exchange(other.kv_heads_, 0)),
      dim_k_(std::exchange(other.dim_k_, 0)),
      dim_v_(std::exchange(other.dim_v_, 0)) {}

PackedSelfAttention& PackedSelfAttention::operator=(PackedSelfAttention&& other) noexcept {
  if (this != &other) {
    std::free(biases_);
    qkv_ = std::move(other.qkv_);
    o_ = std::move(other.o_);
    biases_ = std::exchange(other.biases_, nullptr);
    qkv_bias_ = std::exchange(other.qkv_bias_, nullptr);
    o_bias_ = std::exchange(other.o_bias_, nullptr);
    heads_ = std::exchange(other.heads_, 0);
    kv_heads_ = std::exchange(other.kv_heads_, 0);
    dim_k_ = std::exchange(other.dim_k_, 0);
    dim_v_ = std::exchange(other.dim_v_, 0);
  }
  return *this;
}

Status pack_self_attention(Context& ctx, const SelfAttentionParams& params,
                           PackedSelfAttention* out) noexcept {
  constexpr const char* fn = "pack_self_attention";
  {  // the Context's errors (its pack_matrix steps hold it in turn; this call reads nothing else)
    detail::StateUse use;
    ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  }
  if (out == nullptr) {
    return Status::Error(StatusCode::invalid_argument, "%s: out is null", fn);
  }
  detail::SelfAttentionDims d;
  detail::Extent extents[8];
  ATTN_RETURN_IF_ERROR(
      detail::validate_self_attention_weights(fn, params, params.q.weight.rows, &d, extents));
  const std::size_t dq = d.heads_q * d.dim_k, dk = d.heads_kv * d.dim_k, dv = d.heads_kv * d.dim_v;
  // Each weight's size fits in ptrdiff_t (validated); the three side by side might not.
  std::size_t dqkv = 0, copy_floats = 0, copy_bytes = 0;
  if (!detail::add_ok(dq, dk, &dqkv) || !detail::add_ok(dqkv, dv, &dqkv) ||
      !detail::mul_ok(d.d_model, dqkv, &copy_floats) ||
      !detail::mul_ok(copy_floats, sizeof(float), &copy_bytes) ||
      copy_bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: [Wq | Wk | Wv] (%zu x (%zu + %zu + %zu)) would span more bytes than "
                         "fit in ptrdiff_t",
                         fn, d.d_model, dq, dk, dv);
  }
  // pack_matrix's errors (out_of_memory, sizes) named as this call's.
  const auto packing = [&](const Status& s, const char* what) {
    return s.ok() ? s
                  : Status::Error(s.code(), "%s: packing %s: %s", fn, what,
                                  s.message() ? s.message() : "");
  };
  const auto oom = [&] {
    return Status::Error(StatusCode::out_of_memory,
                         "%s: could not allocate the packed layer (d_model %zu, %zu + %zu + %zu "
                         "projected columns)",
                         fn, d.d_model, dq, dk, dv);
  };

  PackedSelfAttention layer;
  // [Wq | Wk | Wv]: packed from the weights in place where they lie side by side as one matrix
  // (rows at least three widths apart: joint_weights also accepts interleaved rows, which are no
  // matrix), whatever the biases (copied below), else from a copy made side by side here (freed
  // before returning).
  MatrixView<const float> joint;
  if (joint_weights(params, &joint) && (joint.stride >= dqkv || d.d_model <= 1)) {
    ATTN_RETURN_IF_ERROR(
        packing(pack_matrix(ctx, joint, Transpose::no, &layer.qkv_), "[Wq | Wk | Wv]"));
  } else {
    float* side_by_side =
        static_cast<float*>(std::malloc(std::max<std::size_t>(copy_bytes, sizeof(float))));
    if (side_by_side == nullptr) return oom();
    const MatrixView<const float> parts[3] = {params.q.weight, params.k.weight, params.v.weight};
    for (std::size_t r = 0; r < d.d_model; ++r) {
      float* row = side_by_side + r * dqkv;
      for (const auto& w : parts) {
        std::memcpy(row, w.data + r * w.stride, w.cols * sizeof(float));
        row += w.cols;
      }
    }
    const Status s = pack_matrix(ctx, MatrixView<const float>{side_by_side, d.d_model, dqkv, dqkv},
                                 Transpose::no, &layer.qkv_);
    std::free(side_by_side);
    ATTN_RETURN_IF_ERROR(packing(s, "[Wq | Wk | Wv]"));
  }
  if (d.has_output_projection) {
    ATTN_RETURN_IF_ERROR(
        packing(pack_matrix(ctx, params.o.weight, Transpose::no, &layer.o_), "params.o.weight"));
  }
  const bool qkv_bias = params.q.bias || params.k.bias || params.v.bias;
  const bool o_bias = d.has_output_projection && params.o.bias;
  const std::size_t bias_floats = (qkv_bias ? dqkv : 0) + (o_bias ? d.d_out : 0);
  if (bias_floats > 0) {
    layer.biases_ = static_cast<float*>(std::malloc(bias_floats * sizeof(float)));
    if (layer.biases_ == nullptr) return oom();
    float* next = layer.biases_;
    if (qkv_bias) {
      const float* parts[3] = {params.q.bias, params.k.bias, params.v.bias};
      const std::size_t widths[3] = {dq, dk, dv};
      for (int i = 0; i < 3; ++i) {
        if (parts[i]) {
          std::memcpy(next, parts[i], widths[i] * sizeof(float));
        } else {
          std::fill(next, next + widths[i], 0.0f);
        }
        next += widths[i];
      }
      layer.qkv_bias_ = layer.biases_;
    }
    if (o_bias) {
      std::memcpy(next, params.o.bias, d.d_out * sizeof(float));
      layer.o_bias_ = next;
    }
  }
  layer.heads_ = d.heads_q;
  layer.kv_heads_ = d.heads_kv;
  layer.dim_k_ = d.dim_k;
  layer.dim_v_ = d.dim_v;
  *out = std::move(layer);
  return Status::Ok();
}

Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                      const PackedSelfAttention& layer, const AttentionOptions& options,
                      MatrixView<float> out) noexcept {
  constexpr const char* fn = "self_attention";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  if (layer.empty()) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: layer is an empty PackedSelfAttention (never packed, or moved from)",
                         fn);
  }
  if (layer.isa() != st->isa) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: layer was packed for %s but the Context runs %s; pack it with a "
                         "Context of that ISA",
                         fn, isa_name(layer.isa()), isa_name(st->isa));
  }
  detail::SelfAttentionDims shape{};
  shape.d_model = layer.d_model();
  shape.heads_q = layer.num_heads();
  shape.heads_kv = layer.num_kv_heads();
  shape.dim_k = layer.dim_k();
  shape.dim_v = layer.dim_v();
  shape.d_out = layer.d_out();
  shape.has_output_projection = layer.has_output_projection();
  const auto extent_of = [](const void* data, std::size_t bytes) {
    const auto p = reinterpret_cast<std::uintptr_t>(data);
    return detail::Extent{p, data ? p + bytes : p};
  };
  const std::size_t dqkv = layer.qkv().cols();
  const detail::Extent extents[4] = {extent_of(layer.qkv().data(), layer.qkv().bytes()),
                                     extent_of(layer.o().data(), layer.o().bytes()),
                                     extent_of(layer.qkv_bias(), dqkv * sizeof(float)),
                                     extent_of(layer.o_bias(), layer.d_out() * sizeof(float))};
  detail::SelfAttentionDims d;
  ATTN_RETURN_IF_ERROR(
      detail::validate_packed_self_attention(fn, x, batch, shape, extents, options, out, &d));
  const ProjectionGemm qkv{{}, &layer.qkv(), layer.qkv_bias(), 0};
  const ProjectionGemm o{{}, &layer.o(), layer.o_bias(), 0};
  return run_self_attention(st, x, d, options, &qkv, 1, d.has_output_projection ? &o : nullptr,
                            out);
}

}  // namespace attn

// attn::self_attention: projections (GEMMs with the bias as the initial C), attention over the
// heads read in place through BSHD strides, then the output projection.
#include "attn/self_attention.hpp"

#include <algorithm>

#include "attention/attention_driver.hpp"
#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "matmul/gemm.hpp"

namespace attn {
namespace {

using detail::GemmOperand;
using detail::GemmShape;

// y (rows x p.weight.cols, row stride ldy) = x * p.weight + p.bias, the bias added as the GEMM
// writes y.
void project(const detail::Kernels& kern, int threads, const MatrixView<const float>& x,
             const Projection& p, float* y, std::size_t ldy, void* scratch) {
  detail::gemm(kern, threads, GemmShape{x.rows, p.weight.cols, x.cols}, 1.0f,
               GemmOperand{x.data, x.stride, 1}, GemmOperand{p.weight.data, p.weight.stride, 1},
               0.0f, y, ldy, scratch, p.bias);
}

// The q, k and v weights side by side in one matrix ([Wq | Wk | Wv], as fused-QKV checkpoints
// store them), with biases absent or side by side too: one GEMM projects all three.
bool fused_qkv(const SelfAttentionParams& p, Projection* qkv) {
  const auto& q = p.q.weight;
  const auto& k = p.k.weight;
  const auto& v = p.v.weight;
  // Pointer arithmetic only on non-null pointers (empty views may be null).
  if (!q.data || !k.data || !v.data || q.stride != k.stride || q.stride != v.stride ||
      k.data != q.data + q.cols || v.data != k.data + k.cols) {
    return false;
  }
  const bool no_bias = !p.q.bias && !p.k.bias && !p.v.bias;
  const bool joint_bias = p.q.bias && p.k.bias && p.v.bias && p.k.bias == p.q.bias + q.cols &&
                          p.v.bias == p.k.bias + k.cols;
  if (!no_bias && !joint_bias) return false;
  qkv->weight = MatrixView<const float>{q.data, q.rows, q.cols + k.cols + v.cols, q.stride};
  qkv->bias = p.q.bias;
  return true;
}

}  // namespace

Status self_attention(Context& ctx, MatrixView<const float> x, std::size_t batch,
                      const SelfAttentionParams& params, MatrixView<float> out) {
  constexpr const char* fn = "self_attention";
  detail::ContextState* st = nullptr;
  ATTN_RETURN_IF_ERROR(detail::usable_state(ctx, fn, &st));
  detail::SelfAttentionDims d;
  ATTN_RETURN_IF_ERROR(detail::validate_self_attention(fn, x, batch, params, out, &d));
  const std::size_t rows = x.rows;
  // Nothing to write: no rows, or no output columns and no weights requested.
  if (rows == 0 || (d.d_out == 0 && params.attention.weights.data == nullptr)) return Status::Ok();
  const detail::Kernels& kern = *st->kernels;
  const int threads = st->threads;
  const std::size_t dq = d.heads_q * d.dim_k, dk = d.heads_kv * d.dim_k, dv = d.heads_kv * d.dim_v,
                    dh = d.heads_q * d.dim_v;

  // Q, K, V and (with an output projection) the concatenated heads live in the arena.
  float* heads_out = out.data;
  std::size_t heads_stride = out.stride;
  detail::AttentionCall call{};
  call.options = &params.attention;
  call.dims = detail::AttentionDims{d.batch, d.heads_q, d.heads_kv, d.seq,
                                    d.seq,   d.dim_k,   d.dim_v,    d.scale};
  std::size_t work = 0;
  const GemmOperand xa{x.data, x.stride, 1};
  Projection qkv;
  const bool fused = fused_qkv(params, &qkv);
  if (fused) {
    const GemmOperand wb{qkv.weight.data, qkv.weight.stride, 1};
    work = std::max(work, detail::gemm_scratch_bytes(
                              kern, threads, GemmShape{rows, qkv.weight.cols, d.d_model}, xa, wb));
  }
  for (const Projection* pr : {&params.q, &params.k, &params.v}) {
    const GemmOperand wb{pr->weight.data, pr->weight.stride, 1};
    work = std::max(work, detail::gemm_scratch_bytes(
                              kern, threads, GemmShape{rows, pr->weight.cols, d.d_model}, xa, wb));
  }
  if (d.has_output_projection) {
    const GemmOperand ha{nullptr, dh, 1};
    const GemmOperand wo{params.o.weight.data, params.o.weight.stride, 1};
    work = std::max(
        work, detail::gemm_scratch_bytes(kern, threads, GemmShape{rows, d.d_out, dh}, ha, wo));
  }
  // Q, K and V side by side in one buffer (row stride dqkv); attention reads the heads in place.
  const std::size_t dqkv = dq + dk + dv;
  float* qkv_buf = nullptr;            // set below; the views only need their strides for sizing
  auto set_views = [&](float* base) {  // base == nullptr: views for sizing only
    const float* k = base ? base + dq : nullptr;
    const float* v = base ? base + dq + dk : nullptr;
    call.q = make_bshd<const float>(base, d.batch, d.seq, d.heads_q, d.dim_k, dqkv);
    call.k = make_bshd<const float>(k, d.batch, d.seq, d.heads_kv, d.dim_k, dqkv);
    call.v = make_bshd<const float>(v, d.batch, d.seq, d.heads_kv, d.dim_v, dqkv);
    call.out = make_bshd<float>(heads_out, d.batch, d.seq, d.heads_q, d.dim_v, heads_stride);
  };
  if (d.has_output_projection) heads_stride = dh;
  set_views(qkv_buf);
  work = std::max(work, detail::attention_scratch_bytes(kern, threads, call));
  using detail::ScratchCarver;
  const std::size_t bytes =
      ScratchCarver::rounded(rows * dqkv * sizeof(float)) +
      (d.has_output_projection ? ScratchCarver::rounded(rows * dh * sizeof(float)) : 0) + work;
  void* scratch = nullptr;
  ATTN_RETURN_IF_ERROR(st->scratch(bytes, &scratch));
  ScratchCarver carve(scratch);
  qkv_buf = carve.take<float>(rows * dqkv);
  if (d.has_output_projection) heads_out = carve.take<float>(rows * dh);
  void* work_area = carve.take_bytes(work);

  if (fused) {
    project(kern, threads, x, qkv, qkv_buf, dqkv, work_area);
  } else {
    project(kern, threads, x, params.q, qkv_buf, dqkv, work_area);
    project(kern, threads, x, params.k, qkv_buf + dq, dqkv, work_area);
    project(kern, threads, x, params.v, qkv_buf + dq + dk, dqkv, work_area);
  }
  set_views(qkv_buf);
  detail::attention_run(kern, threads, call, work_area);
  if (d.has_output_projection) {
    const MatrixView<const float> heads{heads_out, rows, dh, dh};
    project(kern, threads, heads, params.o, out.data, out.stride, work_area);
  }
  return Status::Ok();
}

}  // namespace attn

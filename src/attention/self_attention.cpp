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

// y (rows x p.weight.cols, row stride ldy) = x * p.weight + p.bias.
void project(const detail::Kernels& kern, int threads, const MatrixView<const float>& x,
             const Projection& p, float* y, std::size_t ldy, void* scratch) {
  const std::size_t n = p.weight.cols;
  float beta = 0.0f;
  if (p.bias != nullptr) {
    for (std::size_t r = 0; r < x.rows; ++r)
      std::copy(p.bias, p.bias + n, y + r * ldy);
    beta = 1.0f;
  }
  detail::gemm(kern, threads, GemmShape{x.rows, n, x.cols}, 1.0f, GemmOperand{x.data, x.stride, 1},
               GemmOperand{p.weight.data, p.weight.stride, 1}, beta, y, ldy, scratch);
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
  if (rows == 0 || d.d_out == 0) return Status::Ok();
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
  work = std::max(work, detail::attention_scratch_bytes(kern, threads, call));
  using detail::ScratchCarver;
  const std::size_t bytes =
      ScratchCarver::rounded(rows * dq * sizeof(float)) +
      ScratchCarver::rounded(rows * dk * sizeof(float)) +
      ScratchCarver::rounded(rows * dv * sizeof(float)) +
      (d.has_output_projection ? ScratchCarver::rounded(rows * dh * sizeof(float)) : 0) + work;
  void* scratch = nullptr;
  ATTN_RETURN_IF_ERROR(st->scratch(bytes, &scratch));
  ScratchCarver carve(scratch);
  float* qs = carve.take<float>(rows * dq);
  float* ks = carve.take<float>(rows * dk);
  float* vs = carve.take<float>(rows * dv);
  if (d.has_output_projection) {
    heads_out = carve.take<float>(rows * dh);
    heads_stride = dh;
  }
  void* work_area = carve.take_bytes(work);

  project(kern, threads, x, params.q, qs, dq, work_area);
  project(kern, threads, x, params.k, ks, dk, work_area);
  project(kern, threads, x, params.v, vs, dv, work_area);
  call.q = make_bshd<const float>(qs, d.batch, d.seq, d.heads_q, d.dim_k);
  call.k = make_bshd<const float>(ks, d.batch, d.seq, d.heads_kv, d.dim_k);
  call.v = make_bshd<const float>(vs, d.batch, d.seq, d.heads_kv, d.dim_v);
  call.out = make_bshd<float>(heads_out, d.batch, d.seq, d.heads_q, d.dim_v, heads_stride);
  detail::attention_run(kern, threads, call, work_area);
  if (d.has_output_projection) {
    const MatrixView<const float> heads{heads_out, rows, dh, dh};
    project(kern, threads, heads, params.o, out.data, out.stride, work_area);
  }
  return Status::Ok();
}

}  // namespace attn

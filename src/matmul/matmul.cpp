// attn::matmul: argument checks, scratch, then the GEMM driver on the Context's ISA.
#include "attn/matmul.hpp"

#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "matmul/gemm.hpp"

namespace attn {

Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta, MatrixView<const float> b,
              Transpose tb, MatrixView<float> c, float alpha, float beta) {
  constexpr const char* fn = "matmul";
  detail::ContextState* st = nullptr;
  ATTN_RETURN_IF_ERROR(detail::usable_state(ctx, fn, &st));
  ATTN_RETURN_IF_ERROR(detail::validate_matmul(fn, a, ta, b, tb, c));
  const detail::GemmShape shape{c.rows, c.cols, ta == Transpose::no ? a.cols : a.rows};
  if (shape.m == 0 || shape.n == 0) return Status::Ok();
  const detail::GemmOperand ga = ta == Transpose::no ? detail::GemmOperand{a.data, a.stride, 1}
                                                     : detail::GemmOperand{a.data, 1, a.stride};
  const detail::GemmOperand gb = tb == Transpose::no ? detail::GemmOperand{b.data, b.stride, 1}
                                                     : detail::GemmOperand{b.data, 1, b.stride};
  if (detail::gemm_one_tile(*st->kernels, shape, alpha, ga, gb, beta, c.data, c.stride)) {
    return Status::Ok();
  }
  void* scratch = nullptr;
  const std::size_t bytes = detail::gemm_scratch_bytes(*st->kernels, st->threads, shape, ga, gb);
  if (bytes > 0) ATTN_RETURN_IF_ERROR(st->scratch(bytes, &scratch));
  detail::gemm(*st->kernels, st->threads, shape, alpha, ga, gb, beta, c.data, c.stride, scratch);
  return Status::Ok();
}

Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta, const PackedMatrix& b,
              MatrixView<float> c, float alpha, float beta) {
  constexpr const char* fn = "matmul";
  detail::ContextState* st = nullptr;
  ATTN_RETURN_IF_ERROR(detail::usable_state(ctx, fn, &st));
  ATTN_RETURN_IF_ERROR(detail::validate_packed_matmul(fn, a, ta, b, st->isa, c));
  const detail::GemmShape shape{c.rows, c.cols, b.rows()};
  if (shape.m == 0 || shape.n == 0) return Status::Ok();
  const detail::GemmOperand ga = ta == Transpose::no ? detail::GemmOperand{a.data, a.stride, 1}
                                                     : detail::GemmOperand{a.data, 1, a.stride};
  void* scratch = nullptr;
  const std::size_t bytes =
      detail::gemm_prepacked_scratch_bytes(*st->kernels, st->threads, shape, ga);
  if (bytes > 0) ATTN_RETURN_IF_ERROR(st->scratch(bytes, &scratch));
  detail::gemm_prepacked(*st->kernels, st->threads, shape, alpha, ga, b.data(), beta, c.data,
                         c.stride, scratch);
  return Status::Ok();
}

}  // namespace attn

// attn::matmul: argument checks, scratch, then the GEMM driver on the Context's ISA.
#include "attn/matmul.hpp"

#include <cmath>

#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "matmul/gemm.hpp"

namespace attn {
namespace {

// The drivers apply alpha to each k block's partial sum as they add it to C (as BLIS does):
// alpha s1 + alpha s2 for alpha (s1 + s2), equal within rounding for a finite, nonzero alpha but
// not for 0 (0 * 5 + 0 * -9 is +0 where 0 * -4 is -0) or +-inf (inf - inf is NaN where inf * -4
// is -inf) or NaN. Such an alpha gets the product P = op(A) op(B) formed with alpha 1 into
// scratch first, then C = alpha P + beta C (beta == 0 reads no C), as reference::matmul does.
bool alpha_applies_per_block(float alpha) {
  return std::isfinite(alpha) && alpha != 0.0f;
}

// C = alpha * P + beta * C for P m x n (row stride n).
void scale_product(const detail::GemmShape& s, float alpha, const float* p, float beta,
                   const MatrixView<float>& c) {
  for (std::size_t i = 0; i < s.m; ++i) {
    float* row = c.data + i * c.stride;
    const float* prow = p + i * s.n;
    for (std::size_t j = 0; j < s.n; ++j)
      row[j] = beta == 0.0f ? alpha * prow[j] : alpha * prow[j] + beta * row[j];
  }
}

// Scratch for a call: the driver's `driver_bytes`, and where alpha needs it, P first.
Status take_scratch(detail::ContextState* st, const detail::GemmShape& s, float alpha,
                    std::size_t driver_bytes, float** product, void** work) {
  *product = nullptr;
  *work = nullptr;
  std::size_t product_bytes = 0;
  if (!alpha_applies_per_block(alpha) && s.k > 0) {
    product_bytes = detail::ScratchCarver::rounded(detail::sat_mul(s.m * s.n, sizeof(float)));
  }
  const std::size_t bytes = detail::sat_add(product_bytes, driver_bytes);
  if (bytes == 0) return Status::Ok();
  void* scratch = nullptr;
  ATTN_RETURN_IF_ERROR(st->scratch("matmul", bytes, &scratch));
  detail::ScratchCarver carve(scratch);
  if (product_bytes > 0) *product = carve.take<float>(s.m * s.n);
  *work = carve.take_bytes(driver_bytes);
  return Status::Ok();
}

}  // namespace

Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta, MatrixView<const float> b,
              Transpose tb, MatrixView<float> c, float alpha, float beta) noexcept {
  constexpr const char* fn = "matmul";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  if (!detail::plainly_valid_matmul(a, ta, b, tb, c)) {
    ATTN_RETURN_IF_ERROR(detail::validate_matmul(fn, a, ta, b, tb, c));
  }
  const detail::GemmShape shape{c.rows, c.cols, ta == Transpose::no ? a.cols : a.rows};
  if (shape.m == 0 || shape.n == 0) return Status::Ok();
  const detail::GemmOperand ga = ta == Transpose::no ? detail::GemmOperand{a.data, a.stride, 1}
                                                     : detail::GemmOperand{a.data, 1, a.stride};
  const detail::GemmOperand gb = tb == Transpose::no ? detail::GemmOperand{b.data, b.stride, 1}
                                                     : detail::GemmOperand{b.data, 1, b.stride};
  const detail::Kernels& kern = *st->kernels;
  if (alpha_applies_per_block(alpha) &&
      detail::gemm_one_tile(kern, shape, alpha, ga, gb, beta, c.data, c.stride)) {
    return Status::Ok();
  }
  // The path rules run once per call (a 64^3 product takes about 2.4 us, each ask about 4 ns).
  const detail::GemmPath path = detail::gemm_path(kern, shape, ga, gb);
  float* product = nullptr;
  void* work = nullptr;
  ATTN_RETURN_IF_ERROR(take_scratch(
      st, shape, alpha, detail::gemm_path_scratch_bytes(kern, path, st->threads, shape, ga, gb),
      &product, &work));
  if (product == nullptr) {
    detail::gemm_on_path(kern, path, st->threads, shape, alpha, ga, gb, beta, c.data, c.stride,
                         work);
    return Status::Ok();
  }
  detail::gemm_on_path(kern, path, st->threads, shape, 1.0f, ga, gb, 0.0f, product, shape.n, work);
  scale_product(shape, alpha, product, beta, c);
  return Status::Ok();
}

Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta, const PackedMatrix& b,
              MatrixView<float> c, float alpha, float beta) noexcept {
  constexpr const char* fn = "matmul";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  ATTN_RETURN_IF_ERROR(detail::validate_packed_matmul(fn, a, ta, b, st->isa, c));
  const detail::GemmShape shape{c.rows, c.cols, b.rows()};
  if (shape.m == 0 || shape.n == 0) return Status::Ok();
  const detail::GemmOperand ga = ta == Transpose::no ? detail::GemmOperand{a.data, a.stride, 1}
                                                     : detail::GemmOperand{a.data, 1, a.stride};
  const detail::Kernels& kern = *st->kernels;
  float* product = nullptr;
  void* work = nullptr;
  ATTN_RETURN_IF_ERROR(take_scratch(
      st, shape, alpha, detail::gemm_prepacked_scratch_bytes(kern, st->threads, shape, ga),
      &product, &work));
  if (product == nullptr) {
    detail::gemm_prepacked(kern, st->threads, shape, alpha, ga, b.data(), beta, c.data, c.stride,
                           work);
    return Status::Ok();
  }
  detail::gemm_prepacked(kern, st->threads, shape, 1.0f, ga, b.data(), 0.0f, product, shape.n,
                         work);
  scale_product(shape, alpha, product, beta, c);
  return Status::Ok();
}

}  // namespace attn

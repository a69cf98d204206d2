// attn::exp and attn::softmax: argument checks, then the ISA's row kernels, rows split among
// threads.
#include "attn/vmath.hpp"

#include <cmath>

#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "core/parallel.hpp"
#include "vmath/softmax_row.hpp"

namespace attn {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr std::size_t kParallelExpMin = 1 << 16;
constexpr std::size_t kExpChunk = 1 << 12;

}  // namespace

Status exp(Context& ctx, const float* x, float* y, std::size_t n) noexcept {
  constexpr const char* fn = "exp";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  ATTN_RETURN_IF_ERROR(detail::validate_exp(fn, x, y, n));
  const auto exp_kernel = st->kernels->exp;
  const int threads = n >= kParallelExpMin ? st->threads : 1;
  const std::size_t chunks = (n + kExpChunk - 1) / kExpChunk;
  detail::run_parallel(threads, [&](int t, int nt) {
    std::size_t begin, end;
    detail::static_range(chunks, t, nt, &begin, &end);
    for (std::size_t c = begin; c < end; ++c) {
      const std::size_t i = c * kExpChunk;
      exp_kernel(x + i, y + i, (n - i < kExpChunk ? n - i : kExpChunk));
    }
  });
  return Status::Ok();
}

Status softmax(Context& ctx, MatrixView<const float> x, MatrixView<float> y) noexcept {
  constexpr const char* fn = "softmax";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  ATTN_RETURN_IF_ERROR(detail::validate_softmax(fn, x, y));
  if (x.rows == 0 || x.cols == 0) return Status::Ok();
  const detail::Kernels& kern = *st->kernels;
  const int threads = x.rows * x.cols >= kParallelExpMin ? st->threads : 1;
  detail::run_parallel(threads, [&](int t, int nt) {
    std::size_t begin, end;
    detail::static_range(x.rows, t, nt, &begin, &end);
    for (std::size_t i = begin; i < end; ++i) {
      detail::softmax_row(kern, x.data + i * x.stride, y.data + i * y.stride, x.cols);
    }
  });
  return Status::Ok();
}

}  // namespace attn

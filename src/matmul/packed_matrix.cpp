// attn::PackedMatrix and attn::pack_matrix: op(b) copied once into the GEMM kernels' B layout
// (matmul/gemm.hpp, gemm_prepack_b).
#include "attn/packed_matrix.hpp"

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "core/args.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "core/large_alloc.hpp"
#include "matmul/gemm.hpp"

namespace attn {

PackedMatrix::~PackedMatrix() {
  std::free(data_);
}

PackedMatrix::PackedMatrix(PackedMatrix&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      isa_(std::exchange(other.isa_, Isa::scalar)),
      packed_(std::exchange(other.packed_, false)) {}

PackedMatrix& PackedMatrix::operator=(PackedMatrix&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    isa_ = std::exchange(other.isa_, Isa::scalar);
    packed_ = std::exchange(other.packed_, false);
  }
  return *this;
}

Status pack_matrix(Context& ctx, MatrixView<const float> b, Transpose tb,
                   PackedMatrix* out) noexcept {
  constexpr const char* fn = "pack_matrix";
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::use_state(ctx.state(), fn, &use));
  detail::ContextState* st = use.state();
  if (out == nullptr) {
    return Status::Error(StatusCode::invalid_argument, "%s: out is null", fn);
  }
  detail::Extent eb;
  ATTN_RETURN_IF_ERROR(detail::check_matrix(fn, "b", b, &eb));
  const std::size_t k = tb == Transpose::no ? b.rows : b.cols;
  const std::size_t n = tb == Transpose::no ? b.cols : b.rows;
  const detail::Kernels& kern = *st->kernels;
  // k x round_up(n, NR) floats, which check_matrix's bound on b's span does not bound.
  const std::size_t nr = kern.gemm_nr;
  std::size_t floats = 0, bytes = 0;
  if (n > SIZE_MAX - nr || !detail::mul_ok(k, (n + nr - 1) / nr * nr, &floats) ||
      !detail::mul_ok(floats, sizeof(float), &bytes) ||
      bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: b (%zu x %zu) packed would span more bytes than fit in ptrdiff_t", fn,
                         k, n);
  }
  // From 2 MiB on, on a 2 MiB boundary and advised for transparent huge pages (alloc_large).
  // Zen 4 (AB_LIB_OFFSET=16 bench/ab-lib matmul_packed, 11 pairs, against 64-byte aligned 4 KiB
  // pages; bit-identical): 512 x 2304 x 768 0.973x and 0.989x the time, A B^T 0.987x, two
  // threads 0.987x; 128 x 2304 x 768 0.996x, 16 x 2304 x 768 1.005x, 2048^3 1.000x.
  void* data = nullptr;
  if (bytes > 0 && (data = detail::alloc_large(bytes)) == nullptr) {
    return Status::Error(StatusCode::out_of_memory,
                         "%s: could not allocate %zu bytes for the packed %zu x %zu matrix", fn,
                         bytes, k, n);
  }
  if (bytes > 0) {
    const detail::GemmOperand gb = tb == Transpose::no ? detail::GemmOperand{b.data, b.stride, 1}
                                                       : detail::GemmOperand{b.data, 1, b.stride};
    detail::gemm_prepack_b(kern, st->threads, k, n, gb, static_cast<float*>(data));
  }
  std::free(out->data_);
  out->data_ = static_cast<float*>(data);
  out->rows_ = k;
  out->cols_ = n;
  out->bytes_ = bytes;
  out->isa_ = st->isa;
  out->packed_ = true;
  return Status::Ok();
}

}  // namespace attn

// A matrix packed once for many products: the weights of a projection, packed when a model
// loads instead of in every matmul call.
#pragma once

#include <cstddef>

#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/isa.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn {

// op(b) (k x n) copied into the layout the GEMM micro-kernel of one ISA reads: for each block of
// KC rows (the last block the k % KC left, if any), column panels NR wide, each a contiguous
// sliver of the block's rows x NR (KC and NR are the ISA's, see README "How it works"). It owns its
// memory; it does not refer to the matrix it was packed from. Move-only. An empty PackedMatrix
// (default-constructed or moved from) has no ISA and serves no product.
class ATTN_API PackedMatrix {
 public:
  PackedMatrix() noexcept = default;
  ~PackedMatrix();
  PackedMatrix(const PackedMatrix&) = delete;
  PackedMatrix& operator=(const PackedMatrix&) = delete;
  PackedMatrix(PackedMatrix&& other) noexcept;
  PackedMatrix& operator=(PackedMatrix&& other) noexcept;

  bool empty() const noexcept { return !packed_; }
  // op(b)'s k (rows) and n (columns).
  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  // The ISA whose kernels it was packed for (that of the Context given to pack_matrix).
  Isa isa() const noexcept { return isa_; }
  // Bytes of the packed copy (k times n rounded up to the ISA's panel width, in floats).
  std::size_t bytes() const noexcept { return bytes_; }

  // For attn's own implementation.
  const float* data() const noexcept { return data_; }

 private:
  friend Status pack_matrix(Context& ctx, MatrixView<const float> b, Transpose tb,
                            PackedMatrix* out) noexcept;
  float* data_ = nullptr;  // 64-byte aligned (2 MiB from 2 MiB on); nullptr when bytes_ == 0
  std::size_t rows_ = 0, cols_ = 0, bytes_ = 0;
  Isa isa_ = Isa::scalar;
  bool packed_ = false;
};

// Packs op(b) for products through Contexts of ctx's ISA (matmul with a PackedMatrix), with
// ctx's threads. The one allocation of the packed copy happens here (from 2 MiB on, on a 2 MiB
// boundary and, on Linux, advised for transparent huge pages, as the Context's arena is). On
// success *out holds the packed matrix (its previous contents are freed); on error *out is
// untouched.
// Errors: invalid_argument (b's shape, stride or null data, out == nullptr), out_of_memory.
ATTN_API Status pack_matrix(Context& ctx, MatrixView<const float> b, Transpose tb,
                            PackedMatrix* out) noexcept;

}  // namespace attn

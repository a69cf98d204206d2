// General matrix multiply.
#pragma once

#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/packed_matrix.hpp"
#include "attn/status.hpp"
#include "attn/view.hpp"

namespace attn {

// c = alpha * op(a) * op(b) + beta * c, where op(x) is x or its transpose.
// Shapes: op(a) is m x k, op(b) is k x n, c is m x n. k == 0 is valid: each sum is empty, -0
// (the sums start there, as the reference's do), so c = alpha * -0 + beta * c as IEEE says
// (beta == 0: -0 for alpha >= 0; alpha infinite: NaN). When beta == 0, c is never read (it may
// hold NaN or uninitialised memory).
// c must not overlap a or b. Errors: invalid_argument (shapes, strides, null data, overlap,
// byte-size overflow), unsupported, out_of_memory; on error c is untouched.
// Threads: rows (and, for few rows, columns) of c are split among ctx.num_threads(); k is never
// split, so the result is bit-identical for any thread count.
ATTN_API Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta,
                       MatrixView<const float> b, Transpose tb, MatrixView<float> c,
                       float alpha = 1.0f, float beta = 0.0f) noexcept;

// c = alpha * op(a) * B + beta * c with B packed by pack_matrix (op(b) there, k x n): the same
// contract and threads as above, without packing B in the call. It pays where the call would
// pack B (products of more than a few rows against a B beyond half of L2, README "Pre-packed
// weights" has the numbers), and is bit-identical for any thread count. Errors as above, and
// invalid_argument when b is empty or was packed for another ISA than ctx's.
ATTN_API Status matmul(Context& ctx, MatrixView<const float> a, Transpose ta, const PackedMatrix& b,
                       MatrixView<float> c, float alpha = 1.0f, float beta = 0.0f) noexcept;

}  // namespace attn

// The portable GEMM driver: C = alpha * op(A) op(B) + beta * C with the Goto/BLIS loop nest
// (ref: Goto & van de Geijn 2008; Van Zee & van de Geijn 2015, "BLIS"), calling the ISA's
// micro-kernel from the kernel table. Arguments are trusted (validated by the callers).
#pragma once

#include <cstddef>

#include "dispatch/kernels.hpp"

namespace attn::detail {

// op(X)(i, p) = data[i * rs + p * cs]: rs = stride, cs = 1 for X; rs = 1, cs = stride for X^T.
// One of rs and cs is 1 (the packing routines take rows or columns that are contiguous).
struct GemmOperand {
  const float* data;
  std::size_t rs;
  std::size_t cs;
};

struct GemmShape {
  std::size_t m, n, k;
};

// The path gemm() takes (matmul/gemm.cpp says which products each serves): the no-packing
// tiles, op(B) packed into the wide tile's panels, the Goto loop nest, B packed one sliver at a
// time, a few rows read row after row, or B read in place with its rows prefetched. It depends
// on the shape, the operands' layout and the CPU's caches, never on the thread count.
enum class GemmPath { direct, wide_panels, packed, streamed, rows, prefetched };
GemmPath gemm_path(const Kernels& kern, const GemmShape& shape, const GemmOperand& a,
                   const GemmOperand& b);

// Bytes of scratch gemm() needs for this shape and these operands on this many threads.
std::size_t gemm_scratch_bytes(const Kernels& kern, int threads, const GemmShape& shape,
                               const GemmOperand& a, const GemmOperand& b);

// C (m x n, row stride ldc) = alpha * op(A) op(B) + beta * C (+ bias, n values added to every
// row, when bias != nullptr); beta == 0 never reads C.
// scratch holds gemm_scratch_bytes() bytes, 64-byte aligned. Bit-identical for any thread count:
// every element of C is reduced over k in the same order whichever thread computes it.
// Operands are passed by reference: built by value on the caller's stack, 24-byte structs cost a
// store-forwarding stall per call (measured: a third of a 1 x 1 x 1 matmul's ~34 ns).
void gemm(const Kernels& kern, int threads, const GemmShape& shape, float alpha,
          const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
          void* scratch, const float* bias = nullptr);


// Pre-packed B (prototype).
std::size_t gemm_prepacked_floats(const Kernels& kern, std::size_t k, std::size_t n);
void gemm_prepack_b(const Kernels& kern, const GemmShape& shape, const GemmOperand& b, float* dst);
std::size_t gemm_prepacked_scratch_bytes(const Kernels& kern, int threads, const GemmShape& shape);
void gemm_prepacked(const Kernels& kern, int threads, const GemmShape& shape, float alpha,
                    const GemmOperand& a, const float* packed_b, float beta, float* c,
                    std::size_t ldc, void* scratch, const float* bias = nullptr);

}  // namespace attn::detail

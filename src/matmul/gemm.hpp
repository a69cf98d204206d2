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

// The path gemm() takes (matmul/gemm_path.cpp says which products each serves): the no-packing
// tiles, op(B) packed into the wide tile's panels, the Goto loop nest, B packed one sliver at a
// time, a few rows read row after row, B read in place with its rows prefetched, or a B^T read in
// place as the rows of the transposed product. It depends on the shape, the operands' layout and
// the CPU's caches, never on the thread count.
enum class GemmPath { direct, wide_panels, packed, streamed, rows, prefetched, c_transposed };
GemmPath gemm_path(const Kernels& kern, const GemmShape& shape, const GemmOperand& a,
                   const GemmOperand& b);

// The most rows GemmPath::prefetched takes against this row-major B on this CPU.
std::size_t gemm_prefetched_max_rows(const Kernels& kern, const GemmOperand& b);
// The k steps of each of GemmPath::prefetched's passes over its panels against this row-major
// B: all of k, or chunks (the last one shorter) where C fits L2, A does not fit half of it or a
// panel's rows of B do not fit L2's sets.
std::size_t gemm_prefetched_kc(const Kernels& kern, const GemmShape& shape, const GemmOperand& b);
// The columns of GemmPath::prefetched's first panel against this row-major B (its later panels
// are Kernels::gemm_prefetch_b_nr wide): fewer where that puts the later panels' rows on vector
// boundaries (0 on a table without gemm_prefetch_b).
std::size_t gemm_prefetched_first_panel(const Kernels& kern, const GemmOperand& b);
// GemmPath::rows against a B^T: the floats by which its dot products want A's rows past a vector
// boundary (B^T's rows' phase, matmul/vector_phase.hpp: both are then loaded on boundaries after
// the same head), and whether it first copies A's rows into the thread's scratch, each row that
// far past a cache line (where they lie otherwise and the copy fits).
std::size_t rows_t_a_phase(const Kernels& kern, const GemmOperand& b);
bool rows_t_copies_a(const Kernels& kern, const GemmShape& shape, const GemmOperand& a,
                     const GemmOperand& b);
// Whether GemmPath::rows reads a row-major B of k x n floats at least as large as L3
// (CpuInfo::l3_bytes), so from memory: Kernels::gemm_rows' b_beyond_l3. A CPU that reports less L3
// than it has (the 8 MiB default where it reports none) passes it for some B that stay in L3,
// whose rows then take the wide passes at strides that share L1 sets (1.04-1.58x the time there).
bool rows_b_beyond_l3(const GemmShape& shape);

// Bytes of scratch gemm() needs for this shape and these operands on this many threads.
std::size_t gemm_scratch_bytes(const Kernels& kern, int threads, const GemmShape& shape,
                               const GemmOperand& a, const GemmOperand& b);
// The same for gemm_on_path() on `path` (== gemm_path(kern, shape, a, b)).
std::size_t gemm_path_scratch_bytes(const Kernels& kern, GemmPath path, int threads,
                                    const GemmShape& shape, const GemmOperand& a,
                                    const GemmOperand& b);

// C (m x n, row stride ldc) = alpha * op(A) op(B) + beta * C (+ bias, n values added to every
// row, when bias != nullptr); beta == 0 never reads C. alpha multiplies each k block's partial
// sum: for alpha 0, +-inf or NaN that is not alpha times the sum (attn::matmul forms the product
// with alpha 1 first for those).
// scratch holds gemm_scratch_bytes() bytes, 64-byte aligned. Bit-identical for any thread count:
// every element of C is reduced over k in the same order whichever thread computes it.
// Operands are passed by reference: built by value on the caller's stack, 24-byte structs cost a
// store-forwarding stall per call (measured: a third of a 1 x 1 x 1 matmul's ~34 ns).
void gemm(const Kernels& kern, int threads, const GemmShape& shape, float alpha,
          const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
          void* scratch, const float* bias = nullptr);

// gemm() on `path`, which the caller has asked gemm_path(kern, shape, a, b) for (attn::matmul
// asks once per call; gemm() asks for itself), with gemm_path_scratch_bytes() of scratch. Where
// gemm() calls a product of one no-packing tile at once, this runs gemm_direct's loops over it.
void gemm_on_path(const Kernels& kern, GemmPath path, int threads, const GemmShape& shape,
                  float alpha, const GemmOperand& a, const GemmOperand& b, float beta, float* c,
                  std::size_t ldc, void* scratch, const float* bias = nullptr);

// gemm() for a product of one no-packing tile (the seed's 6 x 16 x 64), which needs no scratch:
// false, touching nothing, for any other product (and for k == 0). attn::matmul asks it before
// the path rules, so that such a call runs none of them.
bool gemm_one_tile(const Kernels& kern, const GemmShape& shape, float alpha, const GemmOperand& a,
                   const GemmOperand& b, float beta, float* c, std::size_t ldc);

// op(B) packed once (attn::PackedMatrix) in the layout the Goto and streamed loops pack it into
// per call: for each block of KC rows (the table's KC on this CPU), the gemm_nr-wide column
// panels as contiguous kc x NR slivers, columns past n zero. Block pc (a multiple of KC) starts
// at pc * round_up(n, NR) floats, its sliver jp at jp * NR * kc, kc = min(KC, k - pc).
std::size_t gemm_prepacked_floats(const Kernels& kern, std::size_t k, std::size_t n);
// Packs op(B) (k x n; b.cs == 1 or b.rs == 1) into dst (gemm_prepacked_floats, 64-byte aligned),
// the threads splitting the panels of each block.
void gemm_prepack_b(const Kernels& kern, int threads, std::size_t k, std::size_t n,
                    const GemmOperand& b, float* dst);
// The loop gemm_prepacked runs (matmul/gemm_path.cpp, gemm_prepacked_loop): the prefetching tile
// over each sliver with A in place (few rows of a row-major A), op(A) packed whole per KC block and
// run over each sliver, or the Goto loop nest. Never on the thread count.
enum class PrepackedLoop { rows, streamed, packed };
PrepackedLoop gemm_prepacked_loop(const Kernels& kern, const GemmShape& shape,
                                  const GemmOperand& a);
std::size_t gemm_prepacked_scratch_bytes(const Kernels& kern, int threads, const GemmShape& shape,
                                         const GemmOperand& a);
// gemm() with op(B) read from packed_b (gemm_prepack_b's layout for shape.k x shape.n): the same
// contract, scratch of gemm_prepacked_scratch_bytes(), bit-identical for any thread count.
void gemm_prepacked(const Kernels& kern, int threads, const GemmShape& shape, float alpha,
                    const GemmOperand& a, const float* packed_b, float beta, float* c,
                    std::size_t ldc, void* scratch, const float* bias = nullptr);

}  // namespace attn::detail

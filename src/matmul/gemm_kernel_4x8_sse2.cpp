// The 4 x 8 GEMM micro-kernels for Isa::sse2 (2 vectors wide) with 2- and 3-row tiles for edge
// tiles: the packed GEMM's, on A panels that hold each value as a whole vector
// (gemm_kernel_4x8_copies; see rank1_update_packed), and the attention's scores tile on plain
// panels (gemm_kernel_4x8); the 6 x 8 no-packing kernel and the packing helpers.
//
// 4 rows, not 6: without FMA each a * b + c takes a copy of one factor (SSE's two-operand mulps),
// so a 6 x 8 tile needs all 16 XMM registers (12 accumulators, 2 of B, the broadcast, the copy)
// and GCC 12 spilled an accumulator to the stack in the k loop, a store and a reload every step:
// 1024^3 ran at 33-34 GFLOP/s, 57% of the SSE2 probe, and 46.6-47.5 GFLOP/s (81%) with the
// 4 x 8 tile (8 accumulators), which keeps all in registers. The no-packing 6 x 8 kernel reads A
// from its rows and compiles without the spill (256^3: 47 GFLOP/s).
#define ATTN_GEMM_MR 4
#define ATTN_GEMM_NV 2
#define ATTN_GEMM_MR_SMALL 2
#define ATTN_GEMM_MR_MID 3
#define ATTN_GEMM_DIRECT_MR 6
#define ATTN_GEMM_DIRECT_MR_SMALL 3
// GemmPath::prefetched: 6 x 8 (12 accumulators of 16 registers).
#define ATTN_GEMM_PREFETCH_B_MR 6
#define ATTN_GEMM_PREFETCH_B_NV 2
// Few rows against a pre-packed B: the same 6 x 8 tile on one packed 8-column sliver.
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_KERNEL gemm_kernel_4x8
#define ATTN_GEMM_PACK_A gemm_pack_a_4
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_4
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_8
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_8
#include "matmul/gemm_kernels_isa.inc"

namespace attn::detail::ATTN_ISA_NS {

// As Kernels::gemm_a_copies in dispatch/kernels_sse2.cpp (ATTN_GEMM_A_COPIES): one vector.
constexpr int kCopies = static_cast<int>(lanes<Arch>);

void gemm_kernel_4x8_copies(std::size_t k, const float* a, const float* b, float* c,
                            std::size_t ldc, float alpha, float beta, std::size_t m, std::size_t n,
                            const float* bias, const L2Prefetch& next) {
  gemm_kernel_by_rows<ATTN_GEMM_MR, ATTN_GEMM_NV, ATTN_GEMM_MR_SMALL, ATTN_GEMM_MR_MID, kCopies>{}(
      Arch{}, k, a, b, c, ldc, alpha, beta, m, n, bias, next);
}

void gemm_pack_a_4_copies(const float* a, std::size_t lda, std::size_t rows, std::size_t k,
                          float* dst) {
  pack_copies_kernel<ATTN_GEMM_MR, kCopies>{}(Arch{}, a, lda, 1, rows, k, dst);
}

void gemm_pack_a_cols_4_copies(const float* a, std::size_t lda, std::size_t width, std::size_t k,
                               float* dst) {
  pack_copies_kernel<ATTN_GEMM_MR, kCopies>{}(Arch{}, a, 1, lda, width, k, dst);
}

}  // namespace attn::detail::ATTN_ISA_NS

// The 4 x 8 GEMM micro-kernel for Isa::sse2 (2 vectors wide) with 2- and 3-row tiles for edge
// tiles, the 6 x 8 no-packing kernel, and the GEMM driver's packing helpers.
//
// 4 rows, not 6: without FMA each a * b + c takes a copy of one factor (SSE's two-operand mulps),
// so a 6 x 8 tile needs all 16 XMM registers (12 accumulators, 2 of B, the broadcast, the copy)
// and GCC 12 spilled an accumulator to the stack in the k loop, a store and a reload every step:
// 1024^3 ran at 33-34 GFLOP/s, 57% of the SSE2 probe. The 4 x 8 tile (8 accumulators) keeps all
// in registers: 46.6-47.5 GFLOP/s (81%) on Zen 5, where OpenBLAS's SSE kernels
// (OPENBLAS_CORETYPE=Core2 / Nehalem) run at 50.8 / 45.0. The no-packing 6 x 8 kernel reads A
// from its rows and compiles without the spill (256^3: 47 GFLOP/s).
#define ATTN_GEMM_MR 4
#define ATTN_GEMM_NV 2
#define ATTN_GEMM_MR_SMALL 2
#define ATTN_GEMM_MR_MID 3
#define ATTN_GEMM_DIRECT_MR 6
#define ATTN_GEMM_DIRECT_MR_SMALL 3
#define ATTN_GEMM_KERNEL gemm_kernel_4x8
#define ATTN_GEMM_PACK_A gemm_pack_a_4
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_4
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_8
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_8
#include "matmul/gemm_kernels_isa.inc"

// The 6 x 64 micro-kernel of the packed GEMM for Isa::avx512 (4 vectors wide: 24 accumulators,
// 4 B vectors and 1 broadcast of 32 ZMM registers), with 2- and 4-row tiles for edge tiles, and
// its packing routines. Per k step it loads 4 vectors and broadcasts 6 values for 24 FMAs, where
// the 14 x 32 tile needs 2 + 14 loads for 28: measured on Zen 5 (interleaved A/B runs, medians of
// 6), 2048^3 0.93-0.95x and 1024^3 0.98x the 14 x 32 tile's time. Its k loop is inline
// assembly (matmul/gemm_loop_6x64_avx512.hpp). The same tile without packing (gemm_direct_wide,
// 4-row tile for the last rows) serves use_direct_wide in matmul/gemm.cpp.
#define ATTN_GEMM_MR 6
#define ATTN_GEMM_NV 4
#define ATTN_GEMM_MR_SMALL 2
#define ATTN_GEMM_MR_MID 4
#define ATTN_GEMM_DIRECT_WIDE_MR 6
#define ATTN_GEMM_DIRECT_WIDE_MR_SMALL 4
// Few rows against a pre-packed B (gemm_prefetch_sliver): the 6 x 64 tile, and for 7 or 8 rows
// 8 x 32 tiles (16 accumulators) on the two halves of each 64-column sliver.
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_SLIVER_TALL_MR 8
#define ATTN_GEMM_SLIVER_TALL_NV 2
#define ATTN_GEMM_KERNEL gemm_kernel_6x64
#define ATTN_GEMM_PACK_A gemm_pack_a_6
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_6
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_64
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_64
#include "matmul/gemm_kernels_isa.inc"

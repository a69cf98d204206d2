// The 8 x 12 GEMM micro-kernel for Isa::neon (3 vectors wide) with 4- and
// 8-row tiles for edge tiles, the 8 x 12 no-packing
// kernel, and the GEMM driver's packing helpers.
#define ATTN_GEMM_MR 8
#define ATTN_GEMM_NV 3
#define ATTN_GEMM_MR_SMALL 4
#define ATTN_GEMM_MR_MID 8
#define ATTN_GEMM_DIRECT_MR 8
#define ATTN_GEMM_DIRECT_MR_SMALL 4
// GemmPath::prefetched: 8 x 12 (24 accumulators of 32 registers).
#define ATTN_GEMM_PREFETCH_B_MR 8
#define ATTN_GEMM_PREFETCH_B_NV 3
#define ATTN_GEMM_SLIVER_MR 8
#define ATTN_GEMM_KERNEL gemm_kernel_8x12
#define ATTN_GEMM_PACK_A gemm_pack_a_8
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_8
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_12
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_12
#include "matmul/gemm_kernels_isa.inc"

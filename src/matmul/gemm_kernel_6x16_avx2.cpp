// The 6 x 16 GEMM micro-kernel for Isa::avx2 (2 vectors wide) with a 3-row
// tile for edge tiles, the 6 x 16 no-packing
// kernel, and the GEMM driver's packing helpers.
#define ATTN_GEMM_MR 6
#define ATTN_GEMM_NV 2
#define ATTN_GEMM_MR_SMALL 3
#define ATTN_GEMM_MR_MID 6
#define ATTN_GEMM_DIRECT_MR 6
#define ATTN_GEMM_DIRECT_MR_SMALL 3
// GemmPath::prefetched: the direct tile's 6 x 16 (12 accumulators of 16 registers).
#define ATTN_GEMM_PREFETCH_B_MR 6
#define ATTN_GEMM_PREFETCH_B_NV 2
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_KERNEL gemm_kernel_6x16
#define ATTN_GEMM_PACK_A gemm_pack_a_6
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_6
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_16
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_16
#include "matmul/gemm_kernels_isa.inc"

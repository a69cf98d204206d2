// The 14 x 32 micro-kernel for Isa::avx512 (2 vectors wide; the fused attention's scores tile)
// with 4- and 8-row tiles for edge tiles (4 rows: 8 accumulators, still enough to cover a 4-cycle
// FMA latency on 2 pipes), its packing routines and the 8 x 32 no-packing kernels. The packed
// GEMM uses the 6 x 64 tile (gemm_kernel_6x64_avx512.cpp).
#define ATTN_GEMM_MR 14
#define ATTN_GEMM_NV 2
#define ATTN_GEMM_MR_SMALL 4
#define ATTN_GEMM_MR_MID 8
#define ATTN_GEMM_DIRECT_MR 8
#define ATTN_GEMM_DIRECT_MR_SMALL 6
// gemm_direct_tiles_l1: 4 x 64 tiles (over pairs of 32-column panels) for a B within half of L1.
#define ATTN_GEMM_DIRECT_TILES_L1_MR 4
#define ATTN_GEMM_DIRECT_TILES_L1_NV 4
// GemmPath::prefetched: 8 x 48 (24 accumulators, 3 B vectors); see gemm_prefetch_b.
#define ATTN_GEMM_PREFETCH_B_MR 8
#define ATTN_GEMM_PREFETCH_B_NV 3
#define ATTN_GEMM_KERNEL gemm_kernel_14x32
// Its packed tile serves only the attention's scores, whose 56 x 128 tile stays in L1.
#define ATTN_GEMM_PREFETCH_C 0
#define ATTN_GEMM_PACK_A gemm_pack_a_14
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_14
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_32
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_32
#include "matmul/gemm_kernels_isa.inc"

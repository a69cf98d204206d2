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
// GemmPath::prefetched: 8 x 48 (24 accumulators, 3 B vectors); see gemm_prefetch_b.
#define ATTN_GEMM_PREFETCH_B_MR 8
#define ATTN_GEMM_PREFETCH_B_NV 3
// Narrow calls of at most 6 rows take gemm_direct_narrow_kernel's SPLIT form (one broadcast per
// FMA, no shuffles): the same library alternating both in one process on the Intel Xeon of the
// README (medians of 31-41 pairs), 6 x 16 x 64 0.91x the time of the pairs, 6 x 16 x 256 0.91x,
// 6 x 16 x 1024 0.88x, 3 x 16 x 64 and 1 x 16 x 64 0.90x; but the 8-row tile took 1.01x
// (8 x 16 x 64) and 1.04x (8 x 16 x 256), so it keeps the pairs. Zen 5, the split form against
// the pairs (bench/ab-lib with inputs on a line and 16 bytes past one, 21 pairs): 6 x 16 x 64
// 0.99-1.01x, 3 x 16 x 64 1.00x, 1 x 16 x 64 1.00x, 6 x 16 x 1024 1.00x: level, so one form.
#define ATTN_GEMM_DIRECT_NARROW_SPLIT_SMALL 1
#define ATTN_GEMM_KERNEL gemm_kernel_14x32
// Its packed tile serves only the attention's scores, whose 56 x 128 tile stays in L1.
#define ATTN_GEMM_PREFETCH_C 0
#define ATTN_GEMM_PACK_A gemm_pack_a_14
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_14
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_32
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_32
#include "matmul/gemm_kernels_isa.inc"

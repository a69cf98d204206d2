// The Isa::neon kernel table (AArch64 Advanced SIMD).
//
// GEMM blocking for the 8 x 12 kernel (32 Q registers: 24 accumulators, 3 B vectors, 1 A
// broadcast): a KC x NR sliver of B, 256 x 12 floats = 12 KiB, and an MR x KC sliver of A,
// 8 KiB, fit a 32-64 KiB L1; an MC x KC block of A, 128 x 256 floats = 128 KiB, in a 512 KiB+
// L2; a KC x NC panel of B, 256 x 4092 floats = 4 MiB, in L3 or memory.
#define ATTN_KERNELS_NAME kNeonKernels
#define ATTN_KERNELS_ISA Isa::neon
#define ATTN_GEMM_KERNEL gemm_kernel_8x12
#define ATTN_GEMM_PACK_A gemm_pack_a_8
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_8
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_12
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_12
#define ATTN_GEMM_DIRECT_MR 8
// GemmPath::prefetched: 8 x 12 (24 accumulators of 32 registers).
#define ATTN_GEMM_PREFETCH_B_MR 8
#define ATTN_GEMM_PREFETCH_B_NV 3
#define ATTN_GEMM_PREFETCH_B_MIN_ROWS 5
// A pre-packed B: 8 x 12 on each packed sliver for up to ATTN_GEMM_SLIVER_MAX_ROWS rows
// (gemm_prepacked_loop in matmul/gemm_path.cpp has the measurements).
#define ATTN_GEMM_SLIVER_MR 8
#define ATTN_GEMM_SLIVER_MAX_ROWS 48
#define ATTN_GEMM_LANES 4
#define ATTN_GEMM_MR 8
#define ATTN_GEMM_NR 12
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    128, 256, 4092         \
  }
// Fused attention: 48 query rows (6 x MR) against 96 keys: the 48 x 96 score tile (18 KiB)
// fits a 32-64 KiB L1; K and V tiles (96 x 64 floats, 24 KiB each at d = 64) sit in L2.
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    48, 96                    \
  }
#define ATTN_ATTENTION_PV pv_kernel_4x12_bk96
#include "dispatch/kernels_table.inc"

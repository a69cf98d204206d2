// The Isa::avx2 kernel table (AVX2 + FMA3).
//
// GEMM blocking for the 6 x 16 kernel (16 YMM registers: 12 accumulators, 2 B vectors, 1
// broadcast), as BLIS's Haswell/Zen configurations: a KC x NR sliver of B, 256 x 16 floats =
// 16 KiB, and an MR x KC sliver of A, 6 KiB, fit a 32 KiB L1; an MC x KC block of A, 144 x 256
// floats = 144 KiB, about half of a 256-512 KiB L2; a KC x NC panel of B, 256 x 4080 floats =
// 4 MiB, in a shared L3.
#define ATTN_KERNELS_NAME kAvx2Kernels
#define ATTN_KERNELS_ISA Isa::avx2
#define ATTN_GEMM_KERNEL gemm_kernel_6x16
#define ATTN_GEMM_PACK_A gemm_pack_a_6
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_6
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_16
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_16
#define ATTN_GEMM_DIRECT_MR 6
// GemmPath::prefetched: the direct tile's 6 x 16 (12 accumulators of 16 registers).
#define ATTN_GEMM_PREFETCH_B_MR 6
#define ATTN_GEMM_PREFETCH_B_NV 2
#define ATTN_GEMM_PREFETCH_B_MIN_ROWS 9     // 5-8 rows: gemm_rows (see use_prefetched)
#define ATTN_GEMM_PREFETCH_B_MANY_ROWS 128  // AMD: see use_prefetched
// A pre-packed B: 6 x 16 on each packed sliver for up to ATTN_GEMM_SLIVER_MAX_ROWS rows
// (gemm_prepacked_loop in matmul/gemm_path.cpp has the measurements).
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_SLIVER_MAX_ROWS 32
#define ATTN_GEMM_LANES 8
#define ATTN_GEMM_MR 6
#define ATTN_GEMM_NR 16
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    144, 256, 4080         \
  }
// Fused attention: 48 query rows (8 x MR) against 128 keys: the 48 x 128 score tile (24 KiB)
// stays in a 32 KiB L1 while it is turned into probabilities; the packed K and V tiles
// (128 x 64 floats, 32 KiB each at d = 64) and the 48 x Dv output accumulator sit in L2.
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    48, 128                   \
  }
#define ATTN_ATTENTION_PV pv_kernel_6x16_bk128
// Decoding's P*V (at most 4 rows): 32-wide panels, as in
// attention/attention_kernels_avx2.cpp.
#define ATTN_PV_FEW_NV 4
#include "dispatch/kernels_table.inc"

// The Isa::sse2 kernel table.
//
// GEMM blocking for the 4 x 8 packed kernel (16 XMM registers: 8 accumulators; 6 rows spill, see
// matmul/gemm_kernel_4x8_sse2.cpp), whose A panels hold 4 copies of each value (16 bytes per
// element): a KC x NR sliver of B, 128 x 8 floats = 4 KiB, plus an MR x KC sliver of A,
// 4 x 128 x 16 B = 8 KiB, fit a 32 KiB L1 with room for C; an MC x KC block of A,
// 60 x 128 x 16 B = 120 KiB, half of a 256 KiB L2 (the CPUs without AVX2 this path is for); a
// KC x NC panel of B, 128 x 4096 floats = 2 MiB, in L3. On Zen 5 (48 KiB L1, 1 MiB L2) MC/KC of
// 60/128, 60/256, 120/128, 120/256 and 240/128 all ran 1024^3 and 2048^3 at 48-50 GFLOP/s (two
// runs each).
#define ATTN_KERNELS_NAME kSse2Kernels
#define ATTN_KERNELS_ISA Isa::sse2
#define ATTN_GEMM_KERNEL gemm_kernel_4x8_copies
#define ATTN_GEMM_PACK_A gemm_pack_a_4_copies
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_4_copies
#define ATTN_GEMM_A_COPIES 4
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_8
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_8
#define ATTN_GEMM_DIRECT_MR 6
// GemmPath::prefetched: 6 x 8 (12 accumulators of 16 registers).
#define ATTN_GEMM_PREFETCH_B_MR 6
#define ATTN_GEMM_PREFETCH_B_NV 2
#define ATTN_GEMM_PREFETCH_B_MIN_ROWS 5
// A pre-packed B: 6 x 8 on each packed sliver for up to ATTN_GEMM_SLIVER_MAX_ROWS rows
// (gemm_prepacked_loop in matmul/gemm_path.cpp has the measurements).
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_SLIVER_MAX_ROWS 2
#define ATTN_GEMM_LANES 4
#define ATTN_GEMM_MR 4
#define ATTN_GEMM_NR 8
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    60, 128, 4096          \
  }
// Fused attention: the same 4 x 8 tile on plain Q panels (one copy of each value: a 48 x Dk Q
// tile, 12 KiB at d = 64, would take 48 KiB with copies). 48 query rows (12 x MR) against 64
// keys: the 48 x 64 score tile (12 KiB), a 64 x Dk K tile and a 64 x Dv V tile (16 KiB each at
// d = 64) fit a 32 KiB L1 plus L2.
#define ATTN_ATTENTION_MR 4
#define ATTN_ATTENTION_NR 8
#define ATTN_ATTENTION_SCORES gemm_kernel_4x8
#define ATTN_ATTENTION_PACK_Q gemm_pack_a_4
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    48, 64                    \
  }
#define ATTN_ATTENTION_PV pv_kernel_4x8_bk64
// Decoding's P*V (at most 4 rows): 16-wide panels, as in
// attention/attention_kernels_sse2.cpp.
#define ATTN_PV_FEW_NV 4
#include "dispatch/kernels_table.inc"

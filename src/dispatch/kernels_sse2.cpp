// The Isa::sse2 kernel table.
//
// GEMM blocking for the 4 x 8 packed kernel (16 XMM registers: 8 accumulators; 6 rows spill, see
// matmul/gemm_kernel_4x8_sse2.cpp): a KC x NR sliver of B, 256 x 8 floats = 8 KiB, plus an MR x KC
// sliver of A, 4 KiB, fit a 32 KiB L1 with room for C; an MC x KC block of A, 120 x 256 floats =
// 120 KiB, half of a 256 KiB L2; a KC x NC panel of B, 256 x 4096 floats = 4 MiB, in L3. With the
// former 6 x 8 tile on Zen 5 (1 MiB L2), NC = 512 or 1024 and MC = 240 measured the same at 1024^3
// and 2048^3 (one run each, within 2%).
#define ATTN_KERNELS_NAME kSse2Kernels
#define ATTN_KERNELS_ISA Isa::sse2
#define ATTN_GEMM_KERNEL gemm_kernel_4x8
#define ATTN_GEMM_PACK_A gemm_pack_a_4
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_4
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_8
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_8
#define ATTN_GEMM_DIRECT_MR 6
#define ATTN_GEMM_LANES 4
#define ATTN_GEMM_MR 4
#define ATTN_GEMM_NR 8
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    120, 256, 4096         \
  }
// Fused attention: 48 query rows (12 x MR) against 64 keys: the 48 x 64 score tile (12 KiB), a
// 64 x Dk K tile and a 64 x Dv V tile (16 KiB each at d = 64) fit a 32 KiB L1 plus L2.
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    48, 64                    \
  }
#define ATTN_ATTENTION_PV pv_kernel_4x8_bk64
// Decoding's P*V (at most 4 rows): 16-wide panels, as in
// attention/attention_kernels_sse2.cpp.
#define ATTN_PV_FEW_NV 4
#include "dispatch/kernels_table.inc"

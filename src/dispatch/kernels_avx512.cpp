// The Isa::avx512 kernel table (AVX-512 F/DQ/BW/VL).
//
// GEMM blocking for the 14 x 32 kernel (32 ZMM registers: 28 accumulators, 2 B vectors, 1
// broadcast): a KC x NR sliver of B, 256 x 32 floats = 32 KiB, and an MR x KC sliver of A,
// 14 KiB, fit a 48 KiB L1; an MC x KC block of A, 224 x 256 floats = 224 KiB, under half of a
// 1-2 MiB L2; a KC x NC panel of B, 256 x 4096 floats = 4 MiB, in a shared L3.
#define ATTN_KERNELS_NAME kAvx512Kernels
#define ATTN_KERNELS_ISA Isa::avx512
#define ATTN_GEMM_KERNEL gemm_kernel_14x32
#define ATTN_GEMM_PACK_A gemm_pack_a_14
#define ATTN_GEMM_DIRECT_MR 8
#define ATTN_GEMM_MR 14
#define ATTN_GEMM_NR 32
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    224, 256, 4096         \
  }
// Fused attention: 56 query rows (4 x MR) against 128 keys: the 56 x 128 score tile (28 KiB)
// stays in a 48 KiB L1 while it is turned into probabilities; the packed K and V tiles
// (128 x 64 floats, 32 KiB each at d = 64) and the 56 x Dv output accumulator sit in L2.
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    56, 128                   \
  }
#define ATTN_ATTENTION_PV pv_kernel_14x32_bk128
#include "dispatch/kernels_table.inc"

// The Isa::avx512 kernel table (AVX-512 F/DQ/BW/VL).
//
// GEMM blocking for the 14 x 32 kernel (32 ZMM registers: 28 accumulators, 2 B vectors, 1
// broadcast): per k step the kernel reads 128 bytes of B for 28 FMAs (14 cycles at 2 FMAs per
// cycle), so a KC x NR sliver of B, 512 x 32 floats = 64 KiB, may stream from L2 (Zen 4/5 L2
// sustains 32-64 B/cycle) while the MR x KC sliver of A, 28 KiB, stays in a 48 KiB L1; an MC x KC
// block of A, 224 x 512 floats = 448 KiB, fits a 1 MiB L2 beside the B sliver; a KC x NC panel
// of B, 512 x 4096 floats = 8 MiB, in a shared L3. KC = 512 halves the passes over C against
// KC = 256 (measured on Zen 5, with the kernel prefetching C: 2048^3 78 -> 76 ms, oneDNN 72-74;
// KC 384 and 768 and MC 112 and 336 were no better).
#define ATTN_KERNELS_NAME kAvx512Kernels
#define ATTN_KERNELS_ISA Isa::avx512
#define ATTN_GEMM_KERNEL gemm_kernel_14x32
#define ATTN_GEMM_PACK_A gemm_pack_a_14
#define ATTN_GEMM_DIRECT_MR 8
#define ATTN_GEMM_LANES 16
#define ATTN_GEMM_MR 14
#define ATTN_GEMM_NR 32
#define ATTN_GEMM_BLOCKING \
  GemmBlocking {           \
    224, 512, 4096         \
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

// Fused-attention kernels for Isa::avx2: the 6 x 16 P*V micro-kernel for key tiles of 128,
// the online-softmax step and the K^T panel packing.
#define ATTN_PV_MR 6
#define ATTN_PV_MR_SMALL 3
#define ATTN_PV_MR_MID 6
#define ATTN_PV_NV 2
#define ATTN_PV_BK 128
#define ATTN_PV_FEW_NV 4     // as in dispatch/kernels_avx2.cpp
#define ATTN_PV_FEW_SPLIT 3  // 12 accumulators of 16 registers
#define ATTN_PV_FEW_NV4 2
#define ATTN_PV_NAME pv_kernel_6x16_bk128
#include "attention/attention_kernels_isa.inc"

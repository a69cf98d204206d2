// Fused-attention kernels for Isa::avx512: the 14 x 32 P*V micro-kernel for key tiles of 128,
// the online-softmax step and the K^T panel packing.
#define ATTN_PV_MR 14
#define ATTN_PV_MR_SMALL 4
#define ATTN_PV_MR_MID 8
#define ATTN_PV_NV 2
#define ATTN_PV_BK 128
#define ATTN_PV_FEW_NV 4  // as in dispatch/kernels_avx512.cpp
#define ATTN_PV_FEW_SPLIT 4
#define ATTN_PV_FEW_NV4 4
#define ATTN_PV_NAME pv_kernel_14x32_bk128
#include "attention/attention_kernels_isa.inc"

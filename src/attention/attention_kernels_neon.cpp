// Fused-attention kernels for Isa::neon: the 8 x 12 P*V micro-kernel for key tiles of 96,
// the online-softmax step and the K^T panel packing.
#define ATTN_PV_MR 8
#define ATTN_PV_MR_SMALL 4
#define ATTN_PV_MR_MID 8
#define ATTN_PV_NV 3
#define ATTN_PV_BK 96
#define ATTN_PV_NAME pv_kernel_8x12_bk96
#include "attention/attention_kernels_isa.inc"

// Fused-attention kernels for Isa::sse2: the 4 x 8 P*V micro-kernel for key tiles of 64 (the
// scores tile's rows; 6 rows spill an accumulator without FMA, as matmul/gemm_kernel_4x8_sse2.cpp
// explains), the online-softmax step and the K^T panel packing.
#define ATTN_PV_MR 4
#define ATTN_PV_MR_SMALL 2
#define ATTN_PV_MR_MID 3
#define ATTN_PV_NV 2
#define ATTN_PV_BK 64
#define ATTN_PV_FEW_NV 4     // as in dispatch/kernels_sse2.cpp
#define ATTN_PV_FEW_SPLIT 3  // 12 accumulators of 16 registers
#define ATTN_PV_FEW_NV4 2
#define ATTN_PV_NAME pv_kernel_4x8_bk64
#include "attention/attention_kernels_isa.inc"

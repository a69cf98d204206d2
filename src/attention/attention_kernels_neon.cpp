// Fused-attention kernels for Isa::neon: the P*V micro-kernel for key tiles of 96, 12 columns
// wide and 4 rows high (a scores tile's 8 rows in two groups: P gives 8 strided scalars per key,
// one register each, and with 8 rows GCC 12 held them beside 24 accumulators and 3 V vectors and
// spilled 4 accumulators to the stack in the k loop; seen in the compiled loop, not timed: there
// is no AArch64 hardware here), the 8-row scores kernel that reads Q in place, the online-softmax
// step and the K^T panel packing.
#define ATTN_PV_MR 4
#define ATTN_PV_MR_SMALL 2
#define ATTN_PV_MR_MID 3
#define ATTN_Q_IN_PLACE_MR 8
#define ATTN_Q_IN_PLACE_MR_SMALL 4
#define ATTN_PV_NV 3
#define ATTN_PV_BK 96
#define ATTN_PV_NAME pv_kernel_4x12_bk96
#include "attention/attention_kernels_isa.inc"

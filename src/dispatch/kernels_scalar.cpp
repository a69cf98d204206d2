// The Isa::scalar kernel table.
#include "attention/attention_kernels_scalar.hpp"
#include "dispatch/kernels.hpp"
#include "matmul/gemm_kernel_scalar.hpp"
#include "vmath/vmath_scalar.hpp"

namespace attn::detail {

// Blocking for the 4 x 4 scalar kernel: a KC x NR sliver of B (256 x 4 floats = 4 KiB) and an
// MR x KC sliver of A stay in a 32 KiB L1; an MC x KC block of A (128 x 256 floats = 128 KiB)
// in a 512 KiB L2; a KC x NC panel of B (256 x 2048 floats = 2 MiB) in L3.
// Fused attention: 32 query rows against 64 keys (an 8 KiB score tile in L1).
extern const Kernels kScalarKernels;
const Kernels kScalarKernels = {
    Isa::scalar,
    &scalar::exp,
    &scalar::reduce_max,
    &scalar::exp_minus_max_sum,
    &scalar::scale,
    4,
    4,
    1,
    GemmBlocking{128, 256, 2048},
    &scalar::gemm_kernel_4x4,
    &scalar::gemm_pack_a_4,
    &scalar::gemm_pack_n_4,
    &scalar::gemm_pack_n_4,
    &scalar::pack_kt_4,
    4,
    4,
    &scalar::gemm_direct_4x4,
    nullptr,
    0,
    nullptr,
    4,
    &scalar::gemm_direct_4x4,
    nullptr,
    &scalar::pack_kt_4,
    0,
    nullptr,
    nullptr,
    0,
    nullptr,
    0,
    nullptr,
    nullptr,
    0,
    0,
    0,
    0,
    nullptr,
    0,
    0,
    0,
    nullptr,
    nullptr,
    4,
    4,
    &scalar::gemm_kernel_4x4,
    &scalar::gemm_pack_a_4,
    &scalar::gemm_direct_4x4,
    nullptr,
    nullptr,
    AttentionTiling{32, 64},
    &scalar::pv_kernel_4x4_bk64,
    &scalar::online_softmax,
    &scalar::pack_kt_4,
    &scalar::scores_direct,
    0,
    nullptr,
    0,
    nullptr,
    &scalar::all_finite,
    &scalar::small_row,
};

}  // namespace attn::detail

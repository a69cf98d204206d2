// Fused-attention kernels for Isa::sse2: the 6 x 8 P*V micro-kernel for key tiles of 64,
// the online-softmax tile step and the K^T packing.
#include "attention/attention_kernels.hpp"
#include "attention/attention_kernels_isa.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

template void pv_kernel<6, 2, 64>::operator()<Arch>(Arch, std::size_t, const float*, const float*,
                                                    std::size_t, float*, std::size_t,
                                                    const float*) const;
template void online_softmax_kernel::operator()<Arch>(Arch, float*, std::size_t, std::size_t,
                                                      std::size_t, float*, float*, float*) const;

void pv_kernel_6x8_bk64(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                        std::size_t ldc, const float* row_scale) {
  static_assert(2 * lanes<Arch> == 8, "tile width");
  pv_kernel<6, 2, 64>{}(Arch{}, k, p, b, ldb, c, ldc, row_scale);
}

void online_softmax(float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,
                    float* l, float* alpha) {
  online_softmax_kernel{}(Arch{}, s, ld, rows, cols, m, l, alpha);
}

void pack_kt(const float* k, std::size_t ldk, std::size_t keys, std::size_t dk, float* dst) {
  pack_t_kernel<8>{}(Arch{}, k, ldk, keys, dk, dst);
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

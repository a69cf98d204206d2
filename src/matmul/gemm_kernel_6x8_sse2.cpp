// The 6 x 8 GEMM micro-kernel for Isa::sse2.
#include "matmul/gemm_kernel.hpp"
#include "matmul/gemm_kernel_isa.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

template void gemm_kernel<6, 2>::operator()<Arch>(Arch, std::size_t, const float*, const float*,
                                                  float*, std::size_t, float, float) const;

void gemm_kernel_6x8(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                     float alpha, float beta) {
  static_assert(2 * lanes<Arch> == 8, "tile width");
  gemm_kernel<6, 2>{}(Arch{}, k, a, b, c, ldc, alpha, beta);
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// The 8 x 12 GEMM micro-kernel for Isa::neon, the 8 x 12 no-packing kernel, and the
// packing and transposing helpers of the GEMM driver.
#include "matmul/gemm_kernel.hpp"
#include "matmul/gemm_kernel_isa.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

template void gemm_kernel<8, 3>::operator()<Arch>(Arch, std::size_t, const float*, const float*,
                                                  float*, std::size_t, float, float, std::size_t,
                                                  std::size_t, const float*) const;

void gemm_kernel_8x12(std::size_t k, const float* a, const float* b, float* c, std::size_t ldc,
                      float alpha, float beta, std::size_t m, std::size_t n, const float* bias) {
  static_assert(3 * lanes<Arch> == 12, "tile width");
  gemm_kernel<8, 3>{}(Arch{}, k, a, b, c, ldc, alpha, beta, m, n, bias);
}

void gemm_direct(std::size_t k, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float* c, std::size_t ldc, float alpha, float beta, std::size_t m, std::size_t n,
                 const float* bias) {
  gemm_direct_kernel<8, 3>{}(Arch{}, k, a, lda, b, ldb, c, ldc, alpha, beta, m, n, bias);
}

void gemm_pack_a_8(const float* a, std::size_t lda, std::size_t rows, std::size_t k, float* dst) {
  pack_t_kernel<8>{}(Arch{}, a, lda, rows, k, dst);
}

void gemm_pack_b_rows(const float* b, std::size_t ldb, std::size_t width, std::size_t k,
                      float* dst) {
  pack_n_kernel<12>{}(Arch{}, b, ldb, width, k, dst);
}

void gemm_pack_a_cols(const float* a, std::size_t lda, std::size_t width, std::size_t k,
                      float* dst) {
  pack_n_kernel<8>{}(Arch{}, a, lda, width, k, dst);
}

void transpose(const float* src, std::size_t lds, std::size_t rows, std::size_t cols, float* dst,
               std::size_t ldd) {
  transpose_matrix<Arch>(src, lds, rows, cols, dst, ldd);
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// Isa::scalar fused-attention kernels (contracts in dispatch/kernels.hpp).
#pragma once

#include <cstddef>

#include "dispatch/kernels.hpp"

namespace attn::detail::scalar {

// MR = 4, NR = 4, P row stride 64.
void pv_kernel_4x4_bk64(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                        std::size_t ldc, const float* row_scale, std::size_t m);
void scores_direct(const float* q, std::size_t ldq, std::size_t rows, const float* k,
                   std::size_t ldk, std::size_t keys, std::size_t dk, float scale, float* s,
                   std::size_t lds, const DirectPrefetch& pf);
bool all_finite(const float* x, std::size_t ld, std::size_t rows, std::size_t cols);
void online_softmax(float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,
                    float* l, float* alpha);
void small_row(const float* q, const float* k, std::size_t ldk, const float* v, std::size_t ldv,
               std::size_t lk, std::size_t dk, std::size_t dv, float scale,
               const unsigned char* allowed, const float* bias, float* out, float* weights);
// NR = 4.
void pack_kt_4(const float* k, std::size_t ldk, std::size_t keys, std::size_t dk, float* dst);

}  // namespace attn::detail::scalar

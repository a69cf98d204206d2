// The vector-math entry points each SIMD ISA provides (defined in vmath/vmath_<isa>.cpp).
#pragma once

#include <cstddef>

#define ATTN_DECLARE_VMATH_KERNELS(isa)                                         \
  namespace isa {                                                               \
  void exp(const float* x, float* y, std::size_t n);                            \
  float reduce_max(const float* x, std::size_t n);                              \
  double exp_minus_max_sum(const float* x, float* y, std::size_t n, float max); \
  void scale(const float* x, float* y, std::size_t n, float s);                 \
  }

namespace attn::detail {
ATTN_DECLARE_VMATH_KERNELS(sse2)
ATTN_DECLARE_VMATH_KERNELS(avx2)
ATTN_DECLARE_VMATH_KERNELS(avx512)
ATTN_DECLARE_VMATH_KERNELS(neon)
}  // namespace attn::detail

#undef ATTN_DECLARE_VMATH_KERNELS

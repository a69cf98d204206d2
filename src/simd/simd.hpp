// The SIMD layer of the per-ISA kernels: xsimd 8.1 batches plus the few operations xsimd 8.1
// gets wrong or lacks. Include only from *_<isa>.cpp files (compiled with that ISA's flags and
// ATTN_ISA_NS=<isa>): everything here lives in attn::detail::ATTN_ISA_NS, so no inline function
// compiled with one ISA's flags can be merged by the linker into another ISA's code.
#pragma once

#ifndef ATTN_ISA_NS
#error "simd/simd.hpp is for per-ISA translation units (*_<isa>.cpp) only"
#endif

#include <cstddef>
#include <cstdint>

// xsimd's functions are inline, keyed on the arch type, and several ISAs share some of them
// (simd_register<int, sse2>'s members are inherited by the AVX2 batches, simd_register<double,
// avx>'s by the AVX-512 ones' halves). An unoptimised build does not inline them, and the linker
// keeps a single copy, compiled with the flags of whichever ISA's object it met first: an AVX2
// copy could then run on the SSE2 path of a CPU without AVX. Renaming xsimd's namespace per ISA
// (xsimd -> attn_xsimd_<isa>) makes every instantiation distinct; tests/check_isa_symbols.cmake
// checks that no ISA object defines a symbol another ISA could share.
#define ATTN_SIMD_PASTE2(a, b) a##b
#define ATTN_SIMD_PASTE(a, b) ATTN_SIMD_PASTE2(a, b)
#define xsimd ATTN_SIMD_PASTE(attn_xsimd_, ATTN_ISA_NS)
#include <xsimd/xsimd.hpp>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace attn::detail {
namespace ATTN_ISA_NS {

// The xsimd architecture of this translation unit. xsimd traps avoided (8.1.0, verified against
// its source): plain `avx2` makes xsimd::fma a separate multiply and add, hence fma3<avx2>;
// its AVX-512 fma is not fused either, hence fmadd below.
#if defined(__AVX512F__)
using Arch = xsimd::avx512bw;
#elif defined(__AVX2__) && defined(__FMA__)
using Arch = xsimd::fma3<xsimd::avx2>;
#elif defined(__aarch64__)
using Arch = xsimd::neon64;
#elif defined(__SSE2__)
using Arch = xsimd::sse2;
#else
#error "no SIMD architecture for this translation unit"
#endif

template <class A>
using vfloat = xsimd::batch<float, A>;
template <class A>
using vint = xsimd::batch<std::int32_t, A>;
template <class A>
constexpr std::size_t lanes = xsimd::batch<float, A>::size;

// a * b + c, fused where the ISA has FMA (SSE2 has not: a rounded product, then the sum).
template <class A>
inline vfloat<A> fmadd(vfloat<A> a, vfloat<A> b, vfloat<A> c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__) || defined(__aarch64__)
  return xsimd::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// c - a * b, fused where the ISA has FMA.
template <class A>
inline vfloat<A> fnmadd(vfloat<A> a, vfloat<A> b, vfloat<A> c) {
#if defined(__AVX512F__)
  return _mm512_fnmadd_ps(a, b, c);
#elif defined(__FMA__) || defined(__aarch64__)
  return xsimd::fnma(a, b, c);
#else
  return c - a * b;
#endif
}

// Horizontal sum (xsimd 8.1 calls it hadd; 9.0 renamed it reduce_add).
template <class A>
inline float reduce_add(vfloat<A> v) {
#if XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_add(v);
#else
  return xsimd::hadd(v);
#endif
}

template <class A>
inline float reduce_max(vfloat<A> v) {
  alignas(64) float buf[lanes<A>];
  v.store_aligned(buf);
  float m = buf[0];
  for (std::size_t i = 1; i < lanes<A>; ++i)
    m = buf[i] > m ? buf[i] : m;
  return m;
}

// The first n < lanes floats of p, the rest filled with `fill`; and the converse store.
template <class A>
inline vfloat<A> load_partial(const float* p, std::size_t n, float fill) {
  alignas(64) float buf[lanes<A>];
  for (std::size_t i = 0; i < lanes<A>; ++i)
    buf[i] = i < n ? p[i] : fill;
  return vfloat<A>::load_aligned(buf);
}
template <class A>
inline void store_partial(float* p, std::size_t n, vfloat<A> v) {
  alignas(64) float buf[lanes<A>];
  v.store_aligned(buf);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = buf[i];
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

namespace attn::detail {
namespace ATTN_ISA_NS {

// A float vector's lanes widened to double and added to two double accumulators (the low and
// the high half of the lanes).
template <class A>
struct DoubleSum {
  xsimd::batch<double, A> lo = 0.0, hi = 0.0;

  void add(vfloat<A> v) {
#if defined(__AVX512F__)
    lo += xsimd::batch<double, A>(_mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    hi += xsimd::batch<double, A>(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
#elif defined(__AVX2__)
    lo += xsimd::batch<double, A>(_mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    hi += xsimd::batch<double, A>(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
#elif defined(__aarch64__)
    lo += xsimd::batch<double, A>(vcvt_f64_f32(vget_low_f32(v)));
    hi += xsimd::batch<double, A>(vcvt_high_f64_f32(v));
#else
    lo += xsimd::batch<double, A>(_mm_cvtps_pd(v));
    hi += xsimd::batch<double, A>(_mm_cvtps_pd(_mm_movehl_ps(v, v)));
#endif
  }
  double total() const {
#if XSIMD_VERSION_MAJOR >= 9
    return xsimd::reduce_add(lo + hi);
#else
    return xsimd::hadd(lo + hi);
#endif
  }
};

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

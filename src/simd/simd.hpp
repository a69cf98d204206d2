// The SIMD layer of the per-ISA kernels: xsimd 8.1 batches plus the few operations xsimd 8.1
// gets wrong or lacks. Include only from *_<isa>.cpp files (compiled with that ISA's flags and
// ATTN_ISA_NS=<isa>): everything here lives in attn::detail::ATTN_ISA_NS, so no inline function
// compiled with one ISA's flags can be merged by the linker into another ISA's code.
#pragma once

#ifndef ATTN_ISA_NS
#error "simd/simd.hpp is for per-ISA translation units (*_<isa>.cpp) only"
#endif

// The architecture below follows the ISA (ATTN_ISA_IS_<ISA>, which comes with ATTN_ISA_NS:
// src/CMakeLists.txt), but the intrinsics branches here and in the kernels follow the compiler's
// macros: objects compiled with more than their ISA's flags (a project's -march=native, which
// cmake/AttnIsa.cmake caps with -mno-avx and -mno-avx512f) would take another ISA's branches.
#if defined(ATTN_ISA_IS_SSE2) && defined(__AVX__)
#error "sse2 objects compiled with AVX: a flag after cmake/AttnIsa.cmake's -mno-avx?"
#endif
#if defined(ATTN_ISA_IS_AVX2) && (defined(__AVX512F__) || !defined(__AVX2__) || !defined(__FMA__))
#error "avx2 objects need AVX2 and FMA without AVX-512 (cmake/AttnIsa.cmake)"
#endif
#if defined(ATTN_ISA_IS_AVX512) && !defined(__AVX512BW__)
#error "avx512 objects need AVX-512 F, BW, DQ and VL (cmake/AttnIsa.cmake)"
#endif
#if defined(ATTN_ISA_IS_NEON) && !defined(__aarch64__)
#error "neon objects are AArch64 code (cmake/AttnIsa.cmake)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

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

// The xsimd architecture of this translation unit's ISA (ATTN_ISA_IS_<ISA>, not the compiler's
// macros: an ISA without a line here stops the build instead of compiling as another width under
// its own tables). xsimd traps avoided (8.1.0, verified against its source): plain `avx2` makes
// xsimd::fma a separate multiply and add, hence fma3<avx2>; its AVX-512 fma is not fused either,
// hence fmadd below.
#if defined(ATTN_ISA_IS_AVX512)
using Arch = xsimd::avx512bw;
#elif defined(ATTN_ISA_IS_AVX2)
using Arch = xsimd::fma3<xsimd::avx2>;
#elif defined(ATTN_ISA_IS_NEON)
using Arch = xsimd::neon64;
#elif defined(ATTN_ISA_IS_SSE2)
using Arch = xsimd::sse2;
#else
#error "simd/simd.hpp names no xsimd architecture for this ISA (README: Adding a kernel)"
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

// c - a * b, fused where the ISA has FMA. (xsimd 8.1's NEON fnma is its generic -a * b + c,
// fused only if the compiler contracts it, which attn's -ffp-contract=off forbids.)
template <class A>
inline vfloat<A> fnmadd(vfloat<A> a, vfloat<A> b, vfloat<A> c) {
#if defined(__AVX512F__)
  return _mm512_fnmadd_ps(a, b, c);
#elif defined(__aarch64__)
  return vfmsq_f32(c, a, b);
#elif defined(__FMA__)
  return xsimd::fnma(a, b, c);
#else
  return c - a * b;
#endif
}

// Horizontal sum (xsimd 8.1 calls it hadd; 9.0 renamed it reduce_add).
template <class A>
inline float reduce_add(vfloat<A> v) {
#if defined(__AVX512F__)
  return _mm512_reduce_add_ps(v);
#elif XSIMD_VERSION_MAJOR >= 9
  return xsimd::reduce_add(v);
#else
  return xsimd::hadd(v);
#endif
}

// Lane i of sum_each_slotted(v) is the horizontal sum of v[sum_each_slot(i)], for lanes<A>
// vectors: xsimd 8.1's haddp, which on SSE, AVX and NEON sums v[i] into lane i, but on AVX-512
// returns the sums with lanes 2-3 swapped with 4-5 and 10-11 with 12-13 (verified against 8.1.0,
// and newer xsimd has the same code). sum_each_slot is that involution (the identity elsewhere):
// a kernel that writes the vector for output i to slot sum_each_slot(i) needs no permuted copy.
template <class A>
constexpr std::size_t sum_each_slot(std::size_t i) {
#if defined(__AVX512F__)
  return (i & ~std::size_t{6}) | ((i & 2) << 1) | ((i & 4) >> 1);
#else
  return i;
#endif
}

template <class A>
inline vfloat<A> sum_each_slotted(const vfloat<A>* v) {
  return xsimd::haddp(v);
}

// Lane i of the result is the horizontal sum of v[i], for lanes<A> vectors (the input permuted
// into sum_each_slotted's slots on AVX-512). The [direct] attention tests fail on avx512 if the
// lane order is wrong (checked by removing the permutation).
template <class A>
inline vfloat<A> sum_each(const vfloat<A>* v) {
#if defined(__AVX512F__)
  vfloat<A> p[16];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < 16; ++i)
    p[sum_each_slot<A>(i)] = v[i];
  return sum_each_slotted<A>(p);
#else
  return sum_each_slotted<A>(v);
#endif
}

template <class A>
inline float reduce_max(vfloat<A> v) {
#if defined(__AVX512F__)
  return _mm512_reduce_max_ps(v);
#elif defined(__AVX2__)
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
#elif defined(__aarch64__)
  return vmaxvq_f32(v);
#else
  __m128 m = _mm_max_ps(v, _mm_movehl_ps(v, v));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
#endif
}

// Lane i of the result is the maximum of the lanes of v[i], for lanes<A> vectors (NaN lanes as
// max orders them: either operand may win). On AVX-512 a halving tree, 45 shuffles and maxima
// for 16 rows where 16 reduce_max calls take 128: each level takes the maximum of two halves of
// a pair of vectors and packs both results into one vector. Its output lane k holds input
// kTreeRow[k], an involution, so the inputs are read in that order. The attention tests fail on
// avx512 if the order is wrong (checked with the identity order: 5 attention test cases fail).
template <class A>
inline vfloat<A> max_each(const vfloat<A>* v) {
#if defined(__AVX512F__)
  constexpr int kTreeRow[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};
  __m512 w[8], x[4], y[2];
  for (int i = 0; i < 8; ++i) {  // 256-bit halves: row i, row i + 8 (of the reordered inputs)
    const __m512 a = v[kTreeRow[i]], b = v[kTreeRow[i + 8]];
    w[i] = _mm512_max_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  for (int i = 0; i < 4; ++i) {  // 128-bit lanes: rows i, i + 8, i + 4, i + 12
    x[i] = _mm512_max_ps(_mm512_shuffle_f32x4(w[i], w[i + 4], 0x88),
                         _mm512_shuffle_f32x4(w[i], w[i + 4], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {  // float pairs: rows i, i + 2 in lane 0, and so on
    const __m512d a = _mm512_castps_pd(x[i]), b = _mm512_castps_pd(x[i + 2]);
    y[i] = _mm512_max_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  return _mm512_max_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
#else
  alignas(64) float m[lanes<A>];
  for (std::size_t i = 0; i < lanes<A>; ++i)
    m[i] = reduce_max<A>(v[i]);
  return vfloat<A>::load_aligned(m);
#endif
}

// 0, 1, 2, ... lanes - 1 as floats.
template <class A>
inline vfloat<A> lane_index() {
  alignas(64) float buf[lanes<A>];
  for (std::size_t i = 0; i < lanes<A>; ++i)
    buf[i] = static_cast<float>(i);
  return vfloat<A>::load_aligned(buf);
}

// The first n < lanes floats of p, the rest filled with `fill`; and the converse store. Masked
// loads and stores where the ISA has them, so no byte past p + n is touched.
template <class A>
inline vfloat<A> load_partial(const float* p, std::size_t n, float fill) {
#if defined(__AVX512F__)
  const __mmask16 k = static_cast<__mmask16>((1u << n) - 1u);  // n <= 16
  return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), k, p);
#elif defined(__AVX2__)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i k = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
  return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, k), _mm256_castsi256_ps(k));
#else
  alignas(64) float buf[lanes<A>];
  for (std::size_t i = 0; i < lanes<A>; ++i)
    buf[i] = i < n ? p[i] : fill;
  return vfloat<A>::load_aligned(buf);
#endif
}
template <class A>
inline void store_partial(float* p, std::size_t n, vfloat<A> v) {
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
#elif defined(__AVX2__)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx), v);
#else
  alignas(64) float buf[lanes<A>];
  v.store_aligned(buf);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = buf[i];
#endif
}
// Pairs of k steps in one vector (the narrow GEMM kernel), per 128-bit block j of 4 lanes:
//   zip_lo(x, y)      = x[4j], y[4j], x[4j+1], y[4j+1]
//   zip_hi(x, y)      = x[4j+2], y[4j+2], x[4j+3], y[4j+3]
//   broadcast_pair(p) = p[0], p[1], p[0], p[1], ...
//   add_pairs(lo, hi) = lo[4j] + lo[4j+1], lo[4j+2] + lo[4j+3], hi[4j] + hi[4j+1],
//                       hi[4j+2] + hi[4j+3]
// so add_pairs(a * zip_lo(x, y), a * zip_hi(x, y)) with a = broadcast_pair(p) is
// p[0] * x + p[1] * y, lane for lane.
template <class A>
inline vfloat<A> zip_lo(vfloat<A> x, vfloat<A> y) {
#if defined(__AVX512F__)
  return _mm512_unpacklo_ps(x, y);
#elif defined(__AVX2__)
  return _mm256_unpacklo_ps(x, y);
#elif defined(__aarch64__)
  return vzip1q_f32(x, y);
#else
  return _mm_unpacklo_ps(x, y);
#endif
}
template <class A>
inline vfloat<A> zip_hi(vfloat<A> x, vfloat<A> y) {
#if defined(__AVX512F__)
  return _mm512_unpackhi_ps(x, y);
#elif defined(__AVX2__)
  return _mm256_unpackhi_ps(x, y);
#elif defined(__aarch64__)
  return vzip2q_f32(x, y);
#else
  return _mm_unpackhi_ps(x, y);
#endif
}
template <class A>
inline vfloat<A> broadcast_pair(const float* p) {
  double d;  // 8 bytes of two floats, without an aliasing cast
  std::memcpy(&d, p, sizeof d);
#if defined(__AVX512F__)
  return _mm512_castpd_ps(_mm512_set1_pd(d));
#elif defined(__AVX2__)
  return _mm256_castpd_ps(_mm256_set1_pd(d));
#elif defined(__aarch64__)
  return vreinterpretq_f32_f64(vdupq_n_f64(d));
#else
  return _mm_castpd_ps(_mm_set1_pd(d));
#endif
}
template <class A>
inline vfloat<A> add_pairs(vfloat<A> lo, vfloat<A> hi) {
#if defined(__AVX512F__)
  return _mm512_add_ps(_mm512_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
#elif defined(__AVX2__)
  return _mm256_add_ps(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
#elif defined(__aarch64__)
  return vaddq_f32(vuzp1q_f32(lo, hi), vuzp2q_f32(lo, hi));
#else
  return _mm_add_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
#endif
}

// The same for n <= lanes: a full vector when n == lanes.
template <class A>
inline vfloat<A> load_n(const float* p, std::size_t n, float fill) {
  return n == lanes<A> ? vfloat<A>::load_unaligned(p) : load_partial<A>(p, n, fill);
}
template <class A>
inline void store_n(float* p, std::size_t n, vfloat<A> v) {
  if (n == lanes<A>) {
    v.store_unaligned(p);
  } else {
    store_partial<A>(p, n, v);
  }
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

namespace attn::detail {
namespace ATTN_ISA_NS {

template <class A>
using vdouble = xsimd::batch<double, A>;

// The low and the high half of a float vector's lanes as doubles, and back (one rounding).
template <class A>
inline void widen(vfloat<A> v, vdouble<A>* lo, vdouble<A>* hi) {
#if defined(__AVX512F__)
  *lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  *hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
#elif defined(__AVX2__)
  *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
#elif defined(__aarch64__)
  *lo = vcvt_f64_f32(vget_low_f32(v));
  *hi = vcvt_high_f64_f32(v);
#else
  *lo = _mm_cvtps_pd(v);
  *hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
#endif
}
template <class A>
inline vfloat<A> narrow(vdouble<A> lo, vdouble<A> hi) {
#if defined(__AVX512F__)
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
#elif defined(__AVX2__)
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
#elif defined(__aarch64__)
  return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi);
#else
  return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
#endif
}

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

namespace attn::detail {
namespace ATTN_ISA_NS {

#if defined(__AVX512F__)
// The in-lane part of a 16 x 16 transpose: y[p] holds, in 128-bit lane q, 4 floats of row
// 4q + p; z[c] gets, in lane q, float c of those 4 from rows 4q..4q+3.
inline void transpose_4x4_lanes(const __m512 (&y)[4], __m512 (&z)[4]) {
  const __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(y[0], y[1]));
  const __m512d t1 = _mm512_castps_pd(_mm512_unpackhi_ps(y[0], y[1]));
  const __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(y[2], y[3]));
  const __m512d t3 = _mm512_castps_pd(_mm512_unpackhi_ps(y[2], y[3]));
  z[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
  z[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
  z[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
  z[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
}
#endif

// Transposes a lanes x lanes block: row r of the input (r < rows, the rest zero) is read from
// src + r * ld (its first `cols` <= lanes floats), and the first `count` <= lanes floats of column
// c of the block (c < cols) are stored at dst + c * ldd; nothing else is written. Packs K^T and
// GEMM panels.
template <class A>
inline void transpose_block(const float* src, std::size_t ld, std::size_t rows, std::size_t cols,
                            float* dst, std::size_t ldd, std::size_t count) {
  using V = vfloat<A>;
  const auto row = [&](std::size_t i) {
    return i < rows ? load_n<A>(src + i * ld, cols, 0.0f) : V(0.0f);
  };
#if defined(__AVX512F__)
  const auto store_column = [&](std::size_t col, V v) {
    if (col < cols) store_n<A>(dst + col * ldd, count, v);
  };
  if (rows == 16 && cols == 16) {
    // A whole block: 4-float chunk m of rows p, 4 + p, 8 + p, 12 + p lands in the four 128-bit
    // lanes of one vector by one load and three masked broadcast loads, which leaves only the
    // in-lane transposes to the shuffle unit (32 shuffles where the general case below does 64).
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      __m512 y[4], z[4];
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const float* chunk = src + static_cast<std::size_t>(p) * ld + 4 * m;
        __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(chunk));
        v = _mm512_mask_broadcast_f32x4(v, 0x00F0, _mm_loadu_ps(chunk + 4 * ld));
        v = _mm512_mask_broadcast_f32x4(v, 0x0F00, _mm_loadu_ps(chunk + 8 * ld));
        y[p] = _mm512_mask_broadcast_f32x4(v, 0xF000, _mm_loadu_ps(chunk + 12 * ld));
      }
      transpose_4x4_lanes(y, z);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c)
        store_column(static_cast<std::size_t>(4 * m + c), z[c]);
    }
    return;
  }
  // Rows 4g..4g+3 transposed inside each 128-bit lane (u[4g + c]: in lane q, float 4q + c of
  // those rows), then the lanes of u[i], u[4 + i], u[8 + i], u[12 + i] regrouped into columns
  // i, 4 + i, 8 + i, 12 + i: at most 24 vectors live, so none is spilled.
  __m512 u[16];
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    __m512 y[4], z[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p)
      y[p] = row(static_cast<std::size_t>(4 * g + p));
    transpose_4x4_lanes(y, z);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
      u[4 * g + c] = z[c];
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512 a = _mm512_shuffle_f32x4(u[i], u[4 + i], 0x88);
    const __m512 b = _mm512_shuffle_f32x4(u[i], u[4 + i], 0xDD);
    const __m512 c = _mm512_shuffle_f32x4(u[8 + i], u[12 + i], 0x88);
    const __m512 d = _mm512_shuffle_f32x4(u[8 + i], u[12 + i], 0xDD);
    const std::size_t col = static_cast<std::size_t>(i);
    store_column(col, _mm512_shuffle_f32x4(a, c, 0x88));
    store_column(col + 4, _mm512_shuffle_f32x4(b, d, 0x88));
    store_column(col + 8, _mm512_shuffle_f32x4(a, c, 0xDD));
    store_column(col + 12, _mm512_shuffle_f32x4(b, d, 0xDD));
  }
#elif defined(__AVX2__)
  // The 8 x 8 transpose in registers (24 shuffles). Columns are stored in order, whole vectors
  // where the 8 - count floats past a column land in the next column's slots (count == ldd >= 4:
  // the 6-row GEMM A and attention Q panels), which its own store then overwrites; only the last
  // column of such a block takes a masked store (vmaskmovps stores are many micro-ops on AMD
  // cores, per Agner Fog's instruction tables).
  __m256 t[8], u[8];
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m256 r0 = row(static_cast<std::size_t>(2 * g)),
                 r1 = row(static_cast<std::size_t>(2 * g + 1));
    t[2 * g] = _mm256_unpacklo_ps(r0, r1);
    t[2 * g + 1] = _mm256_unpackhi_ps(r0, r1);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
    u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  __m256 columns[8];
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // immediates, also where the loop is not unrolled (-O0)
    columns[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    columns[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
  const bool spill_ok = count == lanes<A> || (count == ldd && 2 * ldd >= lanes<A>);
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
    const std::size_t col = static_cast<std::size_t>(c);
    if (col >= cols) break;
    const __m256 v = columns[c];
    if (count == lanes<A> || (spill_ok && col + 1 < cols)) {
      _mm256_storeu_ps(dst + col * ldd, v);
    } else {
      store_partial<A>(dst + col * ldd, count, v);
    }
  }
#else
  constexpr std::size_t L = lanes<A>;
  alignas(64) float buf[L][L];
  for (std::size_t i = 0; i < L; ++i)
    row(i).store_aligned(buf[i]);
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t i = 0; i < count; ++i)
      dst[c * ldd + i] = buf[i][c];
  }
#endif
}

// Prefetches column `col` of rows [first, first + rows) of a (row stride ld): rows of the next
// panel, while a packing routine reads this one. Integer arithmetic: past the last panel the
// address is outside the matrix, and a prefetch never faults. Always inlined: GCC deletes calls
// it did not inline to a function whose only effects are prefetches (it finds them "const").
__attribute__((always_inline)) inline void prefetch_rows(const float* a, std::size_t ld,
                                                         std::size_t first, std::size_t col,
                                                         std::size_t rows) {
  const std::uintptr_t next =
      reinterpret_cast<std::uintptr_t>(a) + (col + first * ld) * sizeof(float);
#pragma GCC unroll 8
  for (std::size_t i = 0; i < rows; ++i)
    __builtin_prefetch(reinterpret_cast<const void*>(next + i * ld * sizeof(float)));
}

#if defined(__AVX512F__)
// Six rows transposed into a 6-wide panel (the AVX-512 GEMM's A panel), 16 columns at a time:
// output float f = 16o + l of a 16-column chunk is row f % 6, column f / 6. Each of the 6
// output vectors is 3 two-source permutes (rows 0-1, 2-3, 4-5) and 2 blends: 18 shuffle-unit
// ops, 12 blends and 6 stores per 96 floats, where transpose_block's general path transposes a
// 16 x 16 block of which 10 rows are zeros and stores 16 masked 6-float columns.
struct Pack6Tables {
  alignas(64) std::int32_t index[6][3][16];
  std::uint16_t take[6][3];  // lanes of output o that pair q supplies
};
constexpr Pack6Tables make_pack6_tables() {
  Pack6Tables t{};
  for (int o = 0; o < 6; ++o) {
    for (int l = 0; l < 16; ++l) {
      const int f = 16 * o + l, row = f % 6, col = f / 6, q = row / 2;
      t.index[o][q][l] = col + (row % 2 == 1 ? 16 : 0);
      t.take[o][q] = static_cast<std::uint16_t>(t.take[o][q] | (1u << l));
    }
  }
  return t;
}
inline constexpr Pack6Tables kPack6 = make_pack6_tables();

// dst[p * 6 + i] = src[i * ld + p] for p < k, i < rows (<= 6; rows past `rows` are zero).
inline void pack_rows_6(const float* src, std::size_t ld, std::size_t rows, std::size_t k,
                        float* dst) {
  for (std::size_t p0 = 0; p0 < k; p0 += 16) {
    float* const d = dst + p0 * 6;
    const std::size_t cols = k - p0 < 16 ? k - p0 : 16;
    const __mmask16 cmask = static_cast<__mmask16>((1u << cols) - 1u);
    __m512 r[6];
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      // Plain loads for whole chunks: with an all-ones mask, masked loads made this routine
      // 1.6x slower on Zen 5 (perf shares 3.9% vs 2.4% of a 1024^3 matmul, before the prefetch).
      r[i] = _mm512_setzero_ps();
      if (static_cast<std::size_t>(i) >= rows) continue;
      const float* row = src + static_cast<std::size_t>(i) * ld + p0;
      r[i] = cols == 16 ? _mm512_loadu_ps(row) : _mm512_maskz_loadu_ps(cmask, row);
    }
    const std::size_t out = cols * 6;
    // The same columns of the next panel's rows (gemm.cpp packs a block's panels in order): A
    // comes from L3 or memory, and the loads of each row's first lines waited on the misses.
    // Packing A's share of a 1024^3 matmul's perf samples on Zen 5: 2.0-2.2% with
    // transpose_block, 2.4% with this routine unprefetched, 1.2-1.7% with (7 runs); an hour
    // later, on a busier machine, 2.2-2.5% (2 runs) against 1.8-2.1% (6 runs).
    prefetch_rows(src, ld, 6, p0, 6);
#pragma GCC unroll 6
    for (int o = 0; o < 6; ++o) {
      const std::size_t o0 = static_cast<std::size_t>(o) * 16;
      if (o0 >= out) break;
      const auto pair = [o](int q, __m512 lo, __m512 hi) {
        return _mm512_permutex2var_ps(lo, _mm512_load_si512(kPack6.index[o][q]), hi);
      };
      __m512 v = pair(0, r[0], r[1]);
      v = _mm512_mask_blend_ps(kPack6.take[o][1], v, pair(1, r[2], r[3]));
      v = _mm512_mask_blend_ps(kPack6.take[o][2], v, pair(2, r[4], r[5]));
      const std::size_t n = out - o0 < 16 ? out - o0 : 16;
      if (n == 16) {
        _mm512_storeu_ps(d + o0, v);
      } else {
        _mm512_mask_storeu_ps(d + o0, static_cast<__mmask16>((1u << n) - 1u), v);
      }
    }
  }
}
#endif

// Rows of a matrix transposed into a W-wide GEMM panel (PackKtKernel: K^T for attention with
// W = NR, row-major A for matmul and Q for attention with W = MR), one lanes x lanes transpose at
// a time (AVX-512's 6-row panels: pack_rows_6). Each block prefetches the same columns of the
// next panel's rows (the callers pack panels in order), as pack_rows_6 does: AVX2's 6-row A and Q
// panels measured in ff33893; the fused attention's K^T (32-wide) and Q (14-row) panels on
// Zen 5, AVX-512, bench/ab-lib against none, 9-11 pairs: 1 x 12 x 512 x 64 0.970-0.982x the time,
// causal 0.969x, 1 x 8 x 2048 x 64 0.990x, 1 x 1 x 4096 x 64 and 1 x 12 x 128 x 64 (Q read in
// place, K in 4 panels a head) 0.999-1.003x, A B^T 512 x 512 x 64 and 128 x 2304 x 768 (B^T's
// 32-wide panels) 0.996-0.998x; AVX2 1 x 12 x 512 x 64 0.996x; the GEMM's other packs (AVX2 A B^T
// 1024^3 and 128 x 2304 x 768, 512^3; SSE2 A B^T and A B 512^3) 0.990-1.007x. AVX-512's 64-wide B^T
// panels (the GEMM's B^T slivers) instead prefetch each of a block's 16 rows 4 blocks (256 bytes)
// ahead: the pack walks 16 rows side by side, more streams than the hardware prefetchers followed
// on Zen 5, where the loads of the transposes were the samples' peak. Zen 5, bench/ab-lib, 9-11
// pairs: A B^T 128 x 2304 x 768 0.879x the time (2 threads 0.985x), 16 x 2304 x 768 0.964x, 512 x
// 3072 x 768 0.976x, 1024^3 0.989x; 2 blocks ahead 0.991x of 4, 8 blocks 1.019x (those with the 512
// KiB L2 default, in the Goto path; in the streamed path, which the 1 MiB L2 gives that shape since
// fe611b5, removing the prefetch took 1.071x the time, two threads 1.072x). Not measured on the
// Intel Xeon.
template <int W>
struct pack_t_kernel {
  template <class A>
  void operator()(A, const float* k, std::size_t ldk, std::size_t keys, std::size_t dk,
                  float* dst) const {
    constexpr std::size_t L = lanes<A>;
#if defined(__AVX512F__)
    if constexpr (W == 6 && L == 16) {
      pack_rows_6(k, ldk, keys, dk, dst);
      return;
    }
#endif
    for (std::size_t g = 0; g * L < static_cast<std::size_t>(W); ++g) {
      const std::size_t count = W - g * L < L ? W - g * L : L;
      const std::size_t rows = keys > g * L ? (keys - g * L < count ? keys - g * L : count) : 0;
      for (std::size_t d0 = 0; d0 < dk; d0 += L) {
        const std::size_t cols = dk - d0 < L ? dk - d0 : L;
        // A group past the last key reads nothing: no pointer is formed past K's end.
        const float* src = rows > 0 ? k + g * L * ldk + d0 : k;
        if constexpr (W == 64 && L == 16) {
          if (rows == L && d0 + 4 * L < dk) {
            for (std::size_t i = 0; i < L; ++i)
              __builtin_prefetch(src + i * ldk + 4 * L, 0, 3);
          }
        } else {
          prefetch_rows(k, ldk, W + g * L, d0, count);
        }
        transpose_block<A>(src, ldk, rows, cols, dst + d0 * W + g * L, W, count);
      }
    }
  }
};

// Packs an MR-row panel of A with C copies of each value (Kernels::gemm_a_copies):
// dst[(p * W + i) * C + c] = src[i * rs + p * cs] for i < rows, 0 for rows <= i < W. A row-major A
// has rs = its row stride, cs = 1; an A^T rs = 1, cs = its row stride.
template <int W, int C>
struct pack_copies_kernel {
  template <class A>
  void operator()(A, const float* src, std::size_t rs, std::size_t cs, std::size_t rows,
                  std::size_t k, float* dst) const {
    static_assert(C == static_cast<int>(lanes<A>), "a packed value fills one vector");
    for (std::size_t p = 0; p < k; ++p) {
#pragma GCC unroll 16
      for (std::size_t i = 0; i < static_cast<std::size_t>(W); ++i, dst += C) {
        const vfloat<A> v(i < rows ? src[i * rs + p * cs] : 0.0f);
        v.store_unaligned(dst);
      }
    }
  }
};

// Copies `width` <= W contiguous floats of each of k rows (row stride ld) into a W-wide panel,
// zero-padding each row: dst[p * W + j] = src[p * ld + j]. Packs row-major B and A^T.
template <int W>
struct pack_n_kernel {
  template <class A>
  void operator()(A, const float* src, std::size_t ld, std::size_t width, std::size_t k,
                  float* dst) const {
    constexpr std::size_t L = lanes<A>;
    constexpr std::size_t kFull = static_cast<std::size_t>(W) / L;
    constexpr std::size_t kTail = static_cast<std::size_t>(W) % L;
    // Row p at src + p * ld: a pointer stepped past the last row would be formed even where k is
    // 1 and ld (a size-1 dimension's stride, which views may set to anything) overflows it.
    if (width == static_cast<std::size_t>(W)) {
      for (std::size_t p = 0; p < k; ++p, dst += W) {
        const float* row = src + p * ld;
        for (std::size_t v = 0; v < kFull; ++v) {
          vfloat<A>::load_unaligned(row + v * L).store_unaligned(dst + v * L);
        }
        for (std::size_t j = kFull * L; j < kFull * L + kTail; ++j)
          dst[j] = row[j];
      }
      return;
    }
    for (std::size_t p = 0; p < k; ++p, dst += W) {
      const float* row = src + p * ld;
      for (std::size_t j0 = 0; j0 < static_cast<std::size_t>(W); j0 += L) {
        const std::size_t n = j0 < width ? (width - j0 < L ? width - j0 : L) : 0;
        const std::size_t room = static_cast<std::size_t>(W) - j0 < L ? W - j0 : L;
        const vfloat<A> v = n == 0 ? vfloat<A>(0.0f) : load_partial<A>(row + j0, n, 0.0f);
        if (room == L) {
          v.store_unaligned(dst + j0);
        } else {
          store_partial<A>(dst + j0, room, v);
        }
      }
    }
  }
};

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

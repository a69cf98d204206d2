// The SIMD vector-math kernels as xsimd functors templated on the architecture, defined out of
// class here and explicitly instantiated by vmath_<isa>.cpp. Contracts: dispatch/kernels.hpp;
// the exp algorithm: vmath/exp_constants.hpp.
#pragma once

#include <cmath>

#include "simd/simd.hpp"
#include "vmath/exp_constants.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

struct exp_kernel {
  template <class A>
  void operator()(A, const float* x, float* y, std::size_t n) const;
};
struct reduce_max_kernel {
  template <class A>
  float operator()(A, const float* x, std::size_t n) const;
};
// e^(x - max) <= 1 by the flushing exp: a result below 2^-126 becomes 0, an absolute error far
// below softmax's bound (1e-7 of the row's max, which is at least 1/n).
struct exp_minus_max_sum_kernel {
  template <class A>
  double operator()(A, const float* x, float* y, std::size_t n, float max) const;
};
struct scale_kernel {
  template <class A>
  void operator()(A, const float* x, float* y, std::size_t n, float s) const;
};

namespace expf_impl {

namespace c = expf_constants;

// e^r * 2^n before the final scaling: returns p = e^r and t (whose low bits hold n + 127).
template <class A>
inline vfloat<A> reduce_and_poly(vfloat<A> x, vfloat<A>* t_out) {
  using V = vfloat<A>;
  const V t = fmadd<A>(x, V(c::kLog2e), V(c::kMagicBias));
  const V n = t - V(c::kMagicBias);
  V r = fnmadd<A>(n, V(c::kLn2Hi), x);
  r = fnmadd<A>(n, V(c::kLn2Lo), r);
  V u = fmadd<A>(V(c::kC6), r, V(c::kC5));
  u = fmadd<A>(u, r, V(c::kC4));
  u = fmadd<A>(u, r, V(c::kC3));
  u = fmadd<A>(u, r, V(c::kC2));
  u = fmadd<A>(u, r, V(c::kC1));
  *t_out = t;
  return fmadd<A>(r * r, u, r) + V(1.0f);
}

// Valid when every |x| <= kFastLimit (and for NaN, which flows through as NaN).
template <class A>
inline vfloat<A> exp_fast(vfloat<A> x) {
  vfloat<A> t;
  const vfloat<A> p = reduce_and_poly<A>(x, &t);
  return p * xsimd::bitwise_cast<vfloat<A>>(xsimd::bitwise_cast<vint<A>>(t) << 23);
}

// e^x in double for x in [kMinInput, kMaxInput] (see exp_constants.hpp).
template <class A>
inline vdouble<A> exp_double(vdouble<A> x) {
  using D = vdouble<A>;
  using I = xsimd::batch<std::int64_t, A>;
  const D t = x * D(c::kLog2eD) + D(c::kMagicBiasD);
  const D r = x - (t - D(c::kMagicBiasD)) * D(c::kLn2D);
  D p(c::kTaylorD[11]);
  for (int i = 10; i >= 0; --i)
    p = p * r + D(c::kTaylorD[i]);
  return p * xsimd::bitwise_cast<D>(xsimd::bitwise_cast<I>(t) << 52);
}

// Every input: e^x in double, rounded once to float (overflow to +inf, correctly rounded
// subnormals, 0 below -103.97); NaN stays NaN.
template <class A>
inline vfloat<A> exp_careful(vfloat<A> x) {
  using V = vfloat<A>;
  const V xc = xsimd::min(xsimd::max(x, V(c::kMinInput)), V(c::kMaxInput));
  vdouble<A> lo, hi;
  widen<A>(xc, &lo, &hi);
  const V y = narrow<A>(exp_double<A>(lo), exp_double<A>(hi));
  // !(x == x): xsimd's != is an ordered compare, false for NaN.
  return xsimd::select(!(x == x), x + x, y);
}

// e^x for x <= 0 (and NaN), branch-free, for attention's probabilities e^(s - max): results
// below 2^-126 (x < -87.3365) are flushed to 0, which also makes e^-inf exactly 0. The error
// is 1 ULP for normal results and at most 2^-126 absolute: far below the attention bound.
template <class A>
inline vfloat<A> exp_nonpositive_flush(vfloat<A> x) {
  using V = vfloat<A>;
#if defined(__AVX512F__)
  // The same values in 3 fewer instructions (on a core that issues two 512-bit operations per
  // cycle, the exp is bound by their count): no clamp, since lanes below the cutoff (-inf too,
  // whose r is NaN) are zeroed by the mask, and p * 2^n in one scalef. NaN lanes pass the mask
  // (unordered compare) and stay NaN.
  vfloat<A> t;
  const V p = reduce_and_poly<A>(x, &t);
  const V n = t - V(c::kMagicBias);
  return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(x, V(c::kFlushCutoff), _CMP_NLT_UQ), p, n);
#else
  // max(cutoff, x): x when x is NaN (the second operand wins), so NaN flows through.
  vfloat<A> t;
  const V p = reduce_and_poly<A>(xsimd::max(V(c::kFlushCutoff), x), &t);
  const V e = p * xsimd::bitwise_cast<V>(xsimd::bitwise_cast<vint<A>>(t) << 23);
  return xsimd::select(x < V(c::kFlushCutoff), V(0.0f), e);
#endif
}

// e^(s - m) for the online softmax of the fused attention (s <= m, or NaN), flushed to 0 below
// 2^-126: ShiftedExp(m)(s), as 2^t, t = (s - m) log2e, 2^t = 2^n 2^f with 2^f by a degree-6
// polynomial (relative-error fits, 2.0e-9 in exact arithmetic) and no Cody-Waite split of ln 2:
// the online softmax, 13% of the fused attention's samples, is bound by the FMA pipes' operation
// count, and the split's accuracy is not needed there (below).
//   AVX-512 (11 operations per vector where exp_nonpositive_flush(s - m) and the subtraction take
//   15): n = floor(t), f = t - n in [0, 1) by vreduceps; 2^n and the flush by one masked
//   vscalefps. 2^t is within 1.39 u of exact for every float t in [-126, 0] (all 1.1e9 checked
//   against exp2 in double); the roundings of t and of log2e add 1.5 u |s - m|.
//   Elsewhere (14 operations where the other takes 17): n = round(x log2e), x = s - m, by the
//   magic-bias addition, f = x log2e - n in [-1/2, 1/2] by a second FMA (mul and add on SSE2),
//   2^n from the bits of the biased sum as in exp_fast. On AVX2, e^x is within
//   u (0.5 |x| + 1.39) of exact for every float x in [ln 2^-126, 0] (all 1.1e9 checked; the
//   0.5 u |x| is log2e's rounding).
// With the rounding of s - m (u |s - m|, as for exp_nonpositive_flush, which leaves 1 ULP after
// it): relative error <= u (2.5 |s - m| + 1.4), u = 2^-24, on every ISA;
// tests/support/attention_case.hpp carries the term into the attention bound.
template <class A>
struct ShiftedExp {
  using V = vfloat<A>;
  explicit ShiftedExp(float m) : vm(m) {}
  V operator()(V s) const {
#if defined(__AVX512F__)
    const V t = (s - vm) * V(c::kLog2e);
    // imm 0x09: reduce to integers (M = 0), rounding down, precision exception suppressed.
    const V p = exp2_poly(_mm512_reduce_ps(t, 0x09), kD);
    // t < -126 (-inf included) gives 0; NaN passes the unordered compare and stays NaN.
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(t, V(-126.0f), _CMP_NLT_UQ), p, t);
#else
    const V x = s - vm;
    const V t = fmadd<A>(x, V(c::kLog2e), V(c::kMagicBias));  // n + 127 in its low bits
    const V p = exp2_poly(fmadd<A>(x, V(c::kLog2e), V(c::kMagicBias) - t), kC);
    const V e = p * xsimd::bitwise_cast<V>(xsimd::bitwise_cast<vint<A>>(t) << 23);
    // x < ln 2^-126 (-inf included) gives 0, before 2^n leaves the normal range; NaN stays NaN.
    return xsimd::select(x < V(c::kFlushCutoff), V(0.0f), e);
#endif
  }
  V vm;
  // 2^f = 1 + f (k[0] + f (k[1] + ... + f k[5])): kD on [0, 1] (AVX-512), kC on [-1/2, 1/2].
  static constexpr float kD[6] = {0.6931470632553101f,    0.2402293086051941f,
                                  0.055485282093286514f,  0.009675451554358006f,
                                  0.0012467845808714628f, 0.00021612914861179888f};
  static constexpr float kC[6] = {0.6931471824645996f,    0.24022647738456726f,
                                  0.055503323674201965f,  0.00961843691766262f,
                                  0.0013398873852565885f, 0.00015353361959569156f};
  static V exp2_poly(V f, const float (&k)[6]) {
    V p = fmadd<A>(V(k[5]), f, V(k[4]));
#pragma GCC unroll 4
    for (int i = 3; i >= 0; --i)
      p = fmadd<A>(p, f, V(k[i]));
    return fmadd<A>(p, f, V(1.0f));
  }
};

template <class A>
inline bool all_fast(vfloat<A> x) {
  return !xsimd::any(xsimd::abs(x) > vfloat<A>(c::kFastLimit));
}

template <class A>
inline vfloat<A> exp_any(vfloat<A> x) {
  return all_fast<A>(x) ? exp_fast<A>(x) : exp_careful<A>(x);
}

}  // namespace expf_impl

template <class A>
void exp_kernel::operator()(A, const float* x, float* y, std::size_t n) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  std::size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const V x0 = V::load_unaligned(x + i), x1 = V::load_unaligned(x + i + L),
            x2 = V::load_unaligned(x + i + 2 * L), x3 = V::load_unaligned(x + i + 3 * L);
    // Each vector's own test, and-ed: a max over the vectors would let a NaN lane hide a large
    // one (x86 max returns its second operand when either is NaN). NaN fails the test and goes
    // to exp_any, which checks each vector on its own.
    const V lim(expf_constants::kFastLimit);
    if (xsimd::all((xsimd::abs(x0) <= lim) & (xsimd::abs(x1) <= lim) & (xsimd::abs(x2) <= lim) &
                   (xsimd::abs(x3) <= lim))) {
      expf_impl::exp_fast<A>(x0).store_unaligned(y + i);
      expf_impl::exp_fast<A>(x1).store_unaligned(y + i + L);
      expf_impl::exp_fast<A>(x2).store_unaligned(y + i + 2 * L);
      expf_impl::exp_fast<A>(x3).store_unaligned(y + i + 3 * L);
    } else {
      expf_impl::exp_any<A>(x0).store_unaligned(y + i);
      expf_impl::exp_any<A>(x1).store_unaligned(y + i + L);
      expf_impl::exp_any<A>(x2).store_unaligned(y + i + 2 * L);
      expf_impl::exp_any<A>(x3).store_unaligned(y + i + 3 * L);
    }
  }
  for (; i + L <= n; i += L)
    expf_impl::exp_any<A>(V::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n)
    store_partial<A>(y + i, n - i, expf_impl::exp_any<A>(load_partial<A>(x + i, n - i, 0.0f)));
}

template <class A>
float reduce_max_kernel::operator()(A, const float* x, std::size_t n) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  V m0(-INFINITY), m1(-INFINITY), m2(-INFINITY), m3(-INFINITY);
  std::size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    m0 = xsimd::max(m0, V::load_unaligned(x + i));
    m1 = xsimd::max(m1, V::load_unaligned(x + i + L));
    m2 = xsimd::max(m2, V::load_unaligned(x + i + 2 * L));
    m3 = xsimd::max(m3, V::load_unaligned(x + i + 3 * L));
  }
  for (; i + L <= n; i += L)
    m0 = xsimd::max(m0, V::load_unaligned(x + i));
  if (i < n) m1 = xsimd::max(m1, load_partial<A>(x + i, n - i, -INFINITY));
  return reduce_max<A>(xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3)));
}

template <class A>
double exp_minus_max_sum_kernel::operator()(A, const float* x, float* y, std::size_t n,
                                            float max) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  const V vmax(max);
  DoubleSum<A> s0, s1;
  std::size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const V e0 = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(x + i) - vmax);
    const V e1 = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(x + i + L) - vmax);
    e0.store_unaligned(y + i);
    e1.store_unaligned(y + i + L);
    s0.add(e0);
    s1.add(e1);
  }
  for (; i + L <= n; i += L) {
    const V e = expf_impl::exp_nonpositive_flush<A>(V::load_unaligned(x + i) - vmax);
    e.store_unaligned(y + i);
    s0.add(e);
  }
  if (i < n) {
    // Padding lanes are -inf, whose exp is exactly 0.
    const V e =
        expf_impl::exp_nonpositive_flush<A>(load_partial<A>(x + i, n - i, -INFINITY) - vmax);
    store_partial<A>(y + i, n - i, e);
    s1.add(e);
  }
  return s0.total() + s1.total();
}

template <class A>
void scale_kernel::operator()(A, const float* x, float* y, std::size_t n, float s) const {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  const V vs(s);
  std::size_t i = 0;
  for (; i + L <= n; i += L)
    (V::load_unaligned(x + i) * vs).store_unaligned(y + i);
  for (; i < n; ++i)
    y[i] = x[i] * s;
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// Isa::scalar vector math: the same algorithms as the SIMD kernels, one element at a time, in
// portable C++ (no FMA is assumed).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "vmath/exp_constants.hpp"
#include "vmath/vmath_scalar.hpp"

namespace attn::detail::scalar {
namespace {

namespace c = expf_constants;

inline float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float exp1(float x) {
  if (!(x == x)) return x + x;  // NaN stays NaN (quietened)
  const bool fast = std::fabs(x) <= c::kFastLimit;
  const float xc =
      fast ? x : (x < c::kMinInput ? c::kMinInput : (x > c::kMaxInput ? c::kMaxInput : x));
  const float t = xc * c::kLog2e + c::kMagicBias;
  const std::uint32_t tb = to_bits(t);
  const float n = t - c::kMagicBias;
  float r = xc - n * c::kLn2Hi;
  r = r - n * c::kLn2Lo;
  float u = c::kC6;
  u = u * r + c::kC5;
  u = u * r + c::kC4;
  u = u * r + c::kC3;
  u = u * r + c::kC2;
  u = u * r + c::kC1;
  const float p = 1.0f + ((r * r) * u + r);
  if (fast) return p * from_bits(tb << 23);
  // The careful path in double, rounded once (exp_constants.hpp).
  const double xd = xc;
  const double td = xd * c::kLog2eD + c::kMagicBiasD;
  const double rd = xd - (td - c::kMagicBiasD) * c::kLn2D;
  double pd = c::kTaylorD[11];
  for (int i = 10; i >= 0; --i)
    pd = pd * rd + c::kTaylorD[i];
  std::uint64_t tbits;
  std::memcpy(&tbits, &td, sizeof tbits);
  tbits <<= 52;
  double scale;
  std::memcpy(&scale, &tbits, sizeof scale);
  return static_cast<float>(pd * scale);
}

}  // namespace

void exp(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = exp1(x[i]);
}

float reduce_max(const float* x, std::size_t n) {
  float m = x[0];
  for (std::size_t i = 1; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

float exp_nonpositive_flush1(float x) {
  return x < c::kFlushCutoff ? 0.0f : exp1(x);
}

double exp_minus_max_sum(const float* x, float* y, std::size_t n, float max) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float e = exp_nonpositive_flush1(x[i] - max);
    y[i] = e;
    sum += e;
  }
  return sum;
}

void scale(const float* x, float* y, std::size_t n, float s) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = x[i] * s;
}

}  // namespace attn::detail::scalar

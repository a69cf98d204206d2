// Constants of attn's expf, shared by the scalar and the SIMD kernels.
//
// Algorithm (Cody & Waite 1980 range reduction, polynomial from SLEEF's xexpf, Shibata 2020):
//   n = round(x / ln2) via the magic-bias trick: t = x * log2e + kMagicBias leaves n + 127 in the
//       low mantissa bits of t, so (bits(t) << 23) is the float 2^n;
//   r = x - n * ln2 in two steps (kLn2Hi has 9 trailing zero bits, so n * kLn2Hi is exact for
//       |n| < 2^8 with or without FMA);
//   e^r = 1 + r + r^2 * P(r), P of degree 5, |r| <= 0.35;
//   e^x = e^r * 2^n. When some |x| > kFastLimit, 2^n may not be a normal float: the careful
//       path then computes e^x in double (x clamped to [kMinInput, kMaxInput]; the same
//       reduction, a degree-11 Taylor polynomial, |error| < 1e-14 relative) and rounds once to
//       float, so results overflow to +inf above 88.72284, are correctly rounded in the
//       subnormals (barring a double result within 1e-14 of a rounding boundary), and reach 0
//       below -103.97.
// Measured max error over all 2^32 inputs: see README ("Accuracy").
#pragma once

namespace attn::detail::expf_constants {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kMagicBias = 12583039.0f;  // 0x1.8000FEp23: 1.5 * 2^23 + 127
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.42860682030941723212e-6f;
constexpr float kC6 = 0.000198527617612853646278381f;
constexpr float kC5 = 0.00139304355252534151077271f;
constexpr float kC4 = 0.00833336077630519866943359f;
constexpr float kC3 = 0.0416664853692054748535156f;
constexpr float kC2 = 0.166666671633720397949219f;
constexpr float kC1 = 0.5f;
// ln(2^-126): the flushing exponentials (exp_nonpositive_flush, ShiftedExp) give 0 below it.
constexpr float kFlushCutoff = -87.33654f;
// |x| <= kFastLimit keeps n in [-126, 126], where 2^n is a normal float.
constexpr float kFastLimit = 87.0f;
// Clamp range of the careful path: e^-104 rounds to 0 and e^89 to +inf.
constexpr float kMinInput = -104.0f;
constexpr float kMaxInput = 89.0f;

// The careful path, in double: n = round(x log2 e) via t = x log2e + 1.5 * 2^52 + 1023, whose
// low bits hold n + 1023 (so bits(t) << 52 is the double 2^n); r = x - n ln2; e^r by Taylor.
constexpr double kLog2eD = 1.4426950408889634;
constexpr double kMagicBiasD = 6755399441056767.0;  // 1.5 * 2^52 + 1023
constexpr double kLn2D = 0.6931471805599453;
constexpr double kTaylorD[12] = {1.0,         1.0,          1.0 / 2,       1.0 / 6,
                                 1.0 / 24,    1.0 / 120,    1.0 / 720,     1.0 / 5040,
                                 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};

}  // namespace attn::detail::expf_constants

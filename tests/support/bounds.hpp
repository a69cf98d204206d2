// The accuracy bounds of README "Accuracy", as formulas, for the code that cannot include Catch2
// (the fuzzer). Each is derived beside the unit test that introduced it, and must stay equal to
// it: change both or neither.
//   matmul:         tests/test_matmul.cpp
//   exp, softmax:   tests/test_vmath.cpp
//   attention:      tests/support/attention_case.hpp
//   self_attention: tests/test_self_attention.cpp
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>

namespace attn_test::bounds {

// |c - ref| for one entry of c = alpha op(a) op(b) + beta c, where
// mag = |alpha| sum_p |a_ip b_pj| + |beta c_ij| (the beta term only when beta != 0).
inline double matmul(std::size_t k, double mag) {
  return double(k + 2) * FLT_EPSILON * mag + 1e-30;
}

// |y - ref| for one softmax entry, ref the float64 softmax and row_max the largest ref of the row.
inline double softmax(double ref, double row_max) {
  return 4.0 * std::ldexp(1.0, std::max(std::ilogb(std::fmax(ref, FLT_MIN)) - 23, -149)) +
         1e-7 * row_max;
}

// The attention row factor f: |out - ref| <= f * V + 1e-30 and |w - ref_w| <= f * ref_w + 1e-30,
// where S = max over the attended keys of (|scale| sum_d |q_d k_jd| + |bias_j|) (an infinite bias
// counts 0) and V = max over the attended keys of |v_j|. First order in the score error: it
// holds while f <= 1 (beyond, float scores err by more than 1 and the weights by any factor).
inline double attention_factor(std::size_t dim_k, std::size_t len_k, double s_abs) {
  const double u = std::ldexp(1.0, -24);
  return 2.0 * u * (2.0 * double(dim_k + 2) * s_abs + 2.0 * double(len_k) + 8.0);
}

// self_attention, the composition of test_self_attention.cpp (gamma = 2 included):
//   pq, pk, pv: max over entries of |x| |W| + |b| of each projection;
//   s_abs: |scale| Dk pq pk, plus the largest finite |bias| of an additive mask;
//   o_abs: max over entries of pv |Wo| summed over the heads plus |bo|; o_col: max column sum of
//   |Wo| (both 0 without an output projection).
struct SelfAttentionBound {
  double out;      // |out - ref|
  double weights;  // |w - ref_w|
};
inline SelfAttentionBound self_attention(std::size_t d_model, std::size_t dim_k, std::size_t seq,
                                         std::size_t heads_dv, double pq, double pk, double pv,
                                         double scale, double bias_abs, bool out_proj, double o_abs,
                                         double o_col) {
  const double u = std::ldexp(1.0, -24), eps = 2 * u;
  const double proj = double(d_model + 2) * eps;
  const double s_abs = std::fabs(scale) * double(dim_k) * pq * pk + bias_abs;
  const double ds = std::fabs(scale) * double(dim_k) * (proj * pq * pk + pq * proj * pk) +
                    double(dim_k + 2) * u * s_abs;
  const double dh_err = (2 * ds + double(2 * seq + 8) * u) * pv + proj * pv;
  double tol = dh_err;
  if (out_proj) tol = double(heads_dv + 2) * eps * o_abs + dh_err * o_col;
  return {2.0 * tol, 2 * ds * 2 + 1e-6};
}

}  // namespace attn_test::bounds

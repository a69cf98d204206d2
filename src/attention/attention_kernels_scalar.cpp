// Isa::scalar fused-attention kernels in portable C++.
#include "attention/attention_kernels_scalar.hpp"

#include <cmath>

#include "dispatch/kernels.hpp"

#include "vmath/vmath_scalar.hpp"

namespace attn::detail::scalar {

void pv_kernel_4x4_bk64(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                        std::size_t ldc, const float* row_scale, std::size_t m) {
  constexpr std::size_t kLda = 64;
  float acc[4][4] = {};
  for (std::size_t q = 0; q < k; ++q) {
    for (int i = 0; i < 4; ++i) {
      const float pi = p[i * kLda + q];
      for (int j = 0; j < 4; ++j)
        acc[i][j] += pi * b[q * ldb + j];
    }
  }
  for (std::size_t i = 0; i < m && i < 4; ++i) {
    float* row = c + i * ldc;
    for (int j = 0; j < 4; ++j)
      row[j] = row_scale != nullptr ? acc[i][j] + row_scale[i] * row[j] : acc[i][j];
  }
}

void online_softmax(float* s, std::size_t ld, std::size_t rows, std::size_t cols, float* m,
                    float* l, float* alpha) {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = s + i * ld;
    const float row_max = cols ? reduce_max(row, cols) : -INFINITY;
    const float m_new = row_max > m[i] ? row_max : m[i];
    if (m_new == -INFINITY) {
      bool nan = false;
      for (std::size_t t = 0; t < cols; ++t) {
        nan = nan || std::isnan(row[t]);
        row[t] = 0.0f;
      }
      alpha[i] = 1.0f;
      if (nan) l[i] = NAN;
      continue;
    }
    const float a = m[i] != -INFINITY ? exp_nonpositive_flush1(m[i] - m_new) : 0.0f;
    const double sum = exp_minus_max_sum(row, row, cols, m_new);
    alpha[i] = a;
    l[i] = a * l[i] + static_cast<float>(sum);
    m[i] = m_new;
  }
}

void scores_direct(const float* q, std::size_t ldq, std::size_t rows, const float* k,
                   std::size_t ldk, std::size_t keys, std::size_t dk, float scale, float* s,
                   std::size_t lds,
                   const DirectPrefetch& /*pf: hints the scalar path does without*/) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < keys; ++j) {
      float dot = 0.0f;
      for (std::size_t x = 0; x < dk; ++x)
        dot += q[r * ldq + x] * k[j * ldk + x];
      s[r * lds + j] = scale * dot;
    }
  }
}

bool all_finite(const float* x, std::size_t ld, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      if (!std::isfinite(x[r * ld + c])) return false;
    }
  }
  return true;
}

void pack_kt_4(const float* k, std::size_t ldk, std::size_t keys, std::size_t dk, float* dst) {
  for (std::size_t x = 0; x < dk; ++x) {
    for (std::size_t j = 0; j < 4; ++j)
      dst[x * 4 + j] = j < keys ? k[j * ldk + x] : 0.0f;
  }
}

void small_row(const float* q, const float* k, std::size_t ldk, const float* v, std::size_t ldv,
               std::size_t lk, std::size_t dk, std::size_t dv, float scale,
               const unsigned char* allowed, const float* bias, float* out, float* weights) {
  float s[kSmallRowKeys];
  float m = -INFINITY;
  bool nan = false;
  for (std::size_t j = 0; j < lk; ++j) {
    if (!allowed[j]) {
      s[j] = -INFINITY;
      continue;
    }
    float dot = 0.0f;
    for (std::size_t x = 0; x < dk; ++x)
      dot += q[x] * k[j * ldk + x];
    s[j] = dot * scale + (bias ? bias[j] : 0.0f);
    nan = nan || std::isnan(s[j]);
    m = s[j] > m ? s[j] : m;
  }
  if (nan || m == INFINITY || m == -INFINITY) {
    const float fill = m == -INFINITY && !nan ? 0.0f : NAN;
    for (std::size_t x = 0; x < dv; ++x)
      out[x] = fill;
    if (weights) {
      for (std::size_t j = 0; j < lk; ++j)
        weights[j] = fill;
    }
    return;
  }
  const float inv = static_cast<float>(1.0 / exp_minus_max_sum(s, s, lk, m));
  for (std::size_t x = 0; x < dv; ++x)
    out[x] = 0.0f;
  for (std::size_t j = 0; j < lk; ++j) {
    if (!allowed[j]) continue;  // blocked keys are never read
    for (std::size_t x = 0; x < dv; ++x)
      out[x] += s[j] * v[j * ldv + x];
  }
  for (std::size_t x = 0; x < dv; ++x)
    out[x] *= inv;
  if (weights) {
    for (std::size_t j = 0; j < lk; ++j)
      weights[j] = s[j] * inv;
  }
}

}  // namespace attn::detail::scalar

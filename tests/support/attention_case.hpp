// A randomised attention problem with every knob the API has, run through attn::attention and
// attn::reference::attention and compared with the derived tolerance below.
//
// Tolerance for out[b, h, i, :]. With u = 2^-24, S = max_j (scale * sum_d |q_d k_jd| + |bias_j|)
// over the keys the row attends (the code takes all of them: a larger S), and V = max_j |v_j|:
//   scores: |ds_j| <= (Dk + 2) u S               (float dot product, scale, bias)
//   weights: relative error <= 2 max|ds| + (Lk + 4) u   (e^(s - m) shifts cancel in the ratio
//            up to twice the score error; 1 ULP exp; float sum over Lk terms; division)
//   output: adds Lk u from the float sum over keys.
//   |out - ref| <= gamma * u * (2 (Dk + 2) S + 2 Lk + 8) * V,  gamma = 2.
// The weights get the same bound relative to each weight, plus 1e-30 for underflow.
// On the SIMD ISAs the online softmax's e^(s - m) (expf_impl::ShiftedExp, checked on its own by
// tests/test_softmax_tile.cpp) is within u (2.5 |s - m| + 1.4) <= u (5 S + 1.4) of exact
// instead of 1 ULP after the subtraction, which adds 5 u S to the
// first-order bound: u (2 (Dk + 2) S + 5 S + 2 Lk + 5) V, within the tolerance above since
// 5 S <= 2 (Dk + 2) S for Dk >= 1 (with Dk = 0 the scores are the bias, exactly: no ds).
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "support/test_support.hpp"

namespace attn_test {

struct AttentionCase {
  std::size_t B = 1, Hq = 1, Hkv = 1, Lq = 1, Lk = 1, Dk = 4, Dv = 4;
  bool causal = false;
  attn::CausalAlign causal_align = attn::CausalAlign::top_left;
  bool window = false;
  std::size_t window_left = 0, window_right = 0;
  attn::CausalAlign window_align = attn::CausalAlign::top_left;
  bool key_lengths = false;
  // _bcast_b, _h, _q: the mask's batch, head or query dimension of size 1 (broadcast).
  bool additive = false, additive_bcast_b = false, additive_bcast_h = false;
  bool additive_bcast_q = false;
  bool allowed = false, allowed_bcast_b = false, allowed_bcast_h = false, allowed_bcast_q = false;
  bool bshd = false;  // q, k, v, out as [B, S, H, D] with padded rows
  bool weights = false;
  float scale = 0.0f;
  float q_range = 1.0f;
  std::uint32_t seed = 1;
};

struct AttentionResult {
  std::vector<float> out;      // dense [B, Hq, Lq, Dv]
  std::vector<float> weights;  // dense [B, Hq, Lq, Lk] (empty when not requested)
};

class AttentionProblem {
 public:
  explicit AttentionProblem(const AttentionCase& c) : c_(c) {
    Rng rng(c.seed);
    const std::size_t pad = c.bshd ? 3 : 0;
    q_row_ = c.Hq * c.Dk + pad;
    k_row_ = c.Hkv * c.Dk + pad;
    v_row_ = c.Hkv * c.Dv + pad;
    o_row_ = c.Hq * c.Dv + pad;
    q_ = rng.uniform_vec(c.B * c.Lq * q_row_ + 1, -c.q_range, c.q_range);
    k_ = rng.uniform_vec(c.B * c.Lk * k_row_ + 1);
    v_ = rng.uniform_vec(c.B * c.Lk * v_row_ + 1);
    if (c.key_lengths) {
      for (std::size_t b = 0; b < c.B; ++b) {
        // The last batch entry (when there are several) has no keys at all.
        const bool empty = c.B > 1 && b + 1 == c.B;
        lengths_.push_back(static_cast<std::int32_t>(empty ? 0 : rng.index(c.Lk + 1)));
      }
    }
    if (c.additive) {
      const std::size_t bb = c.additive_bcast_b ? 1 : c.B, hh = c.additive_bcast_h ? 1 : c.Hq;
      const std::size_t qq = c.additive_bcast_q ? 1 : c.Lq;
      bias_ = rng.uniform_vec(bb * hh * qq * c.Lk, -2.0f, 2.0f);
      for (float& x : bias_) {
        if (rng.uniform(0.0f, 1.0f) < 0.15f) x = -INFINITY;
      }
      bias_view_ = attn::make_bhsd<const float>(bias_.data(), bb, hh, qq, c.Lk);
    }
    if (c.allowed) {
      const std::size_t bb = c.allowed_bcast_b ? 1 : c.B, hh = c.allowed_bcast_h ? 1 : c.Hq;
      const std::size_t qq = c.allowed_bcast_q ? 1 : c.Lq;
      allowed_.resize(bb * hh * qq * c.Lk);
      for (auto& x : allowed_)
        x = rng.uniform(0.0f, 1.0f) < 0.7f ? 1 : 0;
      // One fully blocked query row, to exercise the zero-row contract.
      if (qq > 1) {
        for (std::size_t j = 0; j < c.Lk; ++j)
          allowed_[(c.Lq - 1) * c.Lk + j] = 0;
      }
      allowed_view_ = attn::make_bhsd<const std::uint8_t>(allowed_.data(), bb, hh, qq, c.Lk);
    }
  }

  attn::AttentionOptions options(float* weights) const {
    attn::AttentionOptions o;
    attn::Mask m = c_.causal ? attn::Mask::causal(c_.causal_align) : attn::Mask::bidirectional();
    if (c_.window) m = m.with_window(c_.window_left, c_.window_right, c_.window_align);
    if (c_.key_lengths) m = m.with_key_lengths(lengths_.data());
    if (c_.additive) m = m.with_additive(bias_view_);
    if (c_.allowed) m = m.with_allowed(allowed_view_);
    o.mask = m;
    o.scale = c_.scale;
    if (weights) o.weights = attn::make_bhsd(weights, c_.B, c_.Hq, c_.Lq, c_.Lk);
    return o;
  }

  template <class T>
  attn::TensorView<T> view(T* data, std::size_t heads, std::size_t len, std::size_t dim,
                           std::size_t row) const {
    if (c_.bshd) return attn::make_bshd<T>(data, c_.B, len, heads, dim, row);
    return attn::make_bhsd<T>(data, c_.B, heads, len, dim);
  }

  // Runs fast (ctx != nullptr) or reference; returns dense results.
  attn::Status run(attn::Context* ctx, bool with_weights, AttentionResult* r) const {
    std::vector<float> out(c_.B * c_.Lq * o_row_ + 1, -7.0f);
    std::vector<float> w(with_weights ? c_.B * c_.Hq * c_.Lq * c_.Lk : 0, -7.0f);
    const auto tq = view<const float>(q_.data(), c_.Hq, c_.Lq, c_.Dk, q_row_);
    const auto tk = view<const float>(k_.data(), c_.Hkv, c_.Lk, c_.Dk, k_row_);
    const auto tv = view<const float>(v_.data(), c_.Hkv, c_.Lk, c_.Dv, v_row_);
    const auto to = view<float>(out.data(), c_.Hq, c_.Lq, c_.Dv, o_row_);
    const auto o = options(with_weights ? w.data() : nullptr);
    const attn::Status s = ctx ? attn::attention(*ctx, tq, tk, tv, to, o)
                               : attn::reference::attention(tq, tk, tv, to, o);
    if (!s.ok()) return s;
    r->out.assign(c_.B * c_.Hq * c_.Lq * c_.Dv, 0.0f);
    for (std::size_t b = 0; b < c_.B; ++b)
      for (std::size_t h = 0; h < c_.Hq; ++h)
        for (std::size_t i = 0; i < c_.Lq; ++i)
          for (std::size_t x = 0; x < c_.Dv; ++x)
            r->out[((b * c_.Hq + h) * c_.Lq + i) * c_.Dv + x] = to(b, h, i, x);
    // Padding between BSHD rows is never written.
    if (c_.bshd) {
      for (std::size_t r0 = 0; r0 + 1 < c_.B * c_.Lq; ++r0) {
        for (std::size_t x = c_.Hq * c_.Dv; x < o_row_; ++x)
          CHECK(out[r0 * o_row_ + x] == -7.0f);
      }
    }
    r->weights = w;
    return s;
  }

  // Per-row tolerance factor for out (see the header comment: times V); weights use it alone.
  // S is taken over all of the row's keys, attended or not.
  double row_factor(std::size_t b, std::size_t h, std::size_t i) const {
    const auto tq = view<const float>(q_.data(), c_.Hq, c_.Lq, c_.Dk, q_row_);
    const auto tk = view<const float>(k_.data(), c_.Hkv, c_.Lk, c_.Dk, k_row_);
    const std::size_t hk = h / (c_.Hq / c_.Hkv);
    const double scale = c_.scale != 0.0f ? c_.scale : 1.0 / std::sqrt(double(c_.Dk));
    // sum_d |q_d k_jd| for 4 keys at a time: independent chains, each summed over d in order.
    std::vector<double> dots(c_.Lk, 0.0);
    std::size_t j0 = 0;
    for (; j0 + 4 <= c_.Lk; j0 += 4) {
      double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
      // Rows are contiguous in both layouts (view()).
      const float* const qi = c_.Dk == 0 ? nullptr : &tq(b, h, i, 0);
      const float* const k0 = c_.Dk == 0 ? nullptr : &tk(b, hk, j0, 0);
      const std::ptrdiff_t ks = tk.strides[2];
      for (std::size_t x = 0; x < c_.Dk; ++x) {
        const double qx = qi[x];
        d0 += std::fabs(qx * k0[x]);
        d1 += std::fabs(qx * k0[ks + x]);
        d2 += std::fabs(qx * k0[2 * ks + x]);
        d3 += std::fabs(qx * k0[3 * ks + x]);
      }
      dots[j0] = d0;
      dots[j0 + 1] = d1;
      dots[j0 + 2] = d2;
      dots[j0 + 3] = d3;
    }
    for (; j0 < c_.Lk; ++j0) {
      for (std::size_t x = 0; x < c_.Dk; ++x)
        dots[j0] += std::fabs(double(tq(b, h, i, x)) * tk(b, hk, j0, x));
    }
    double s_abs = 0.0;
    for (std::size_t j = 0; j < c_.Lk; ++j) {
      const double dot = dots[j];
      double bias = 0.0;
      if (c_.additive) {
        const float bj = bias_view_(c_.additive_bcast_b ? 0 : b, c_.additive_bcast_h ? 0 : h,
                                    c_.additive_bcast_q ? 0 : i, j);
        bias = std::isinf(bj) ? 0.0 : std::fabs(bj);
      }
      const double sj = std::fabs(scale) * dot + bias;
      if (sj > s_abs) s_abs = sj;  // as fmax: a NaN score leaves S as it was
    }
    const double u = std::ldexp(1.0, -24);
    return 2.0 * u * (2.0 * double(c_.Dk + 2) * s_abs + 2.0 * double(c_.Lk) + 8.0);
  }

  // V for the rows that read KV head hk of batch b: the largest finite |v|. A case may plant NaN
  // or inf in the v rows of keys a mask blocks, which must not widen the tolerance of the rows
  // that never read them.
  double v_max(std::size_t b, std::size_t hk) const {
    const auto tv = view<const float>(v_.data(), c_.Hkv, c_.Lk, c_.Dv, v_row_);
    double vmax = 0.0;
    for (std::size_t j = 0; j < c_.Lk; ++j) {
      for (std::size_t x = 0; x < c_.Dv; ++x) {
        const float vx = tv(b, hk, j, x);
        if (std::isfinite(vx) && std::fabs(vx) > vmax) vmax = std::fabs(vx);
      }
    }
    return vmax;
  }

  void compare(const AttentionResult& got, const AttentionResult& want) const {
    if (factors_.empty()) {  // the per-row tolerance factors, computed once per problem
      std::vector<double> v_by_head(c_.B * c_.Hkv);
      for (std::size_t b = 0; b < c_.B; ++b)
        for (std::size_t hk = 0; hk < c_.Hkv; ++hk)
          v_by_head[b * c_.Hkv + hk] = v_max(b, hk);
      for (std::size_t b = 0; b < c_.B; ++b)
        for (std::size_t h = 0; h < c_.Hq; ++h)
          for (std::size_t i = 0; i < c_.Lq; ++i) {
            factors_.push_back(row_factor(b, h, i));
            vmaxes_.push_back(v_by_head[b * c_.Hkv + h / (c_.Hq / c_.Hkv)]);
          }
    }
    std::size_t bad = 0;
    for (std::size_t b = 0; b < c_.B; ++b) {
      for (std::size_t h = 0; h < c_.Hq; ++h) {
        for (std::size_t i = 0; i < c_.Lq; ++i) {
          const std::size_t row = (b * c_.Hq + h) * c_.Lq + i;
          const double f = factors_[row], vmax = vmaxes_[row];
          for (std::size_t x = 0; x < c_.Dv; ++x) {
            const float g = got.out[row * c_.Dv + x], w = want.out[row * c_.Dv + x];
            const bool ok =
                std::isnan(w) ? std::isnan(g) : std::fabs(double(g) - w) <= f * vmax + 1e-30;
            if (!ok && bad++ < 5) {
              FAIL_CHECK("out[" << b << "," << h << "," << i << "," << x << "] = " << g
                                << ", reference " << w << ", tolerance " << f * vmax);
            }
          }
          if (want.weights.empty() || got.weights.empty()) continue;
          for (std::size_t j = 0; j < c_.Lk; ++j) {
            const float g = got.weights[row * c_.Lk + j], w = want.weights[row * c_.Lk + j];
            const bool ok =
                std::isnan(w) ? std::isnan(g) : std::fabs(double(g) - w) <= f * w + 1e-30;
            if (!ok && bad++ < 5) {
              FAIL_CHECK("weights[" << b << "," << h << "," << i << "," << j << "] = " << g
                                    << ", reference " << w);
            }
          }
        }
      }
    }
    CHECK(bad == 0);
  }

  const AttentionCase& config() const { return c_; }

  // The inputs as writable views, for a case that plants NaN or inf or blocks keys before it runs
  // (the tolerance factors are computed at the first compare). The masks' views have the case's
  // shapes (size 1 where they broadcast); empty views when the case has no such mask.
  attn::TensorView<float> q_view() { return view<float>(q_.data(), c_.Hq, c_.Lq, c_.Dk, q_row_); }
  attn::TensorView<float> k_view() { return view<float>(k_.data(), c_.Hkv, c_.Lk, c_.Dk, k_row_); }
  attn::TensorView<float> v_view() { return view<float>(v_.data(), c_.Hkv, c_.Lk, c_.Dv, v_row_); }
  attn::TensorView<float> bias_view() {
    const auto& s = bias_view_.shape;
    return attn::make_bhsd<float>(bias_.data(), s[0], s[1], s[2], s[3]);
  }
  attn::TensorView<std::uint8_t> allowed_view() {
    const auto& s = allowed_view_.shape;
    return attn::make_bhsd<std::uint8_t>(allowed_.data(), s[0], s[1], s[2], s[3]);
  }

 private:
  AttentionCase c_;
  std::size_t q_row_, k_row_, v_row_, o_row_;
  std::vector<float> q_, k_, v_, bias_;
  std::vector<std::uint8_t> allowed_;
  std::vector<std::int32_t> lengths_;
  attn::TensorView<const float> bias_view_{};
  attn::TensorView<const std::uint8_t> allowed_view_{};
  mutable std::vector<double> factors_, vmaxes_;
};

inline std::ostream& operator<<(std::ostream& os, const AttentionCase& c) {
  os << "B" << c.B << " Hq" << c.Hq << " Hkv" << c.Hkv << " Lq" << c.Lq << " Lk" << c.Lk << " Dk"
     << c.Dk << " Dv" << c.Dv << (c.causal ? " causal" : "")
     << (c.causal && c.causal_align == attn::CausalAlign::bottom_right ? "(br)" : "");
  if (c.window) os << " window(" << c.window_left << "," << c.window_right << ")";
  if (c.key_lengths) os << " key_lengths";
  if (c.additive)
    os << " additive" << (c.additive_bcast_b ? "(1b)" : "") << (c.additive_bcast_h ? "(1h)" : "")
       << (c.additive_bcast_q ? "(1q)" : "");
  if (c.allowed)
    os << " allowed" << (c.allowed_bcast_b ? "(1b)" : "") << (c.allowed_bcast_h ? "(1h)" : "")
       << (c.allowed_bcast_q ? "(1q)" : "");
  if (c.bshd) os << " bshd";
  if (c.weights) os << " weights";
  if (c.scale != 0.0f) os << " scale " << c.scale;
  return os << " seed " << c.seed;
}

// Runs the case on ctx and on the reference; compares; with weights also checks the output
// without weights agrees.
inline void check_attention_case(attn::Context& ctx, const AttentionCase& c,
                                 AttentionResult* fast_out = nullptr) {
  INFO(c);
  const AttentionProblem p(c);
  AttentionResult want, got;
  REQUIRE(p.run(nullptr, c.weights, &want).ok());
  REQUIRE(p.run(&ctx, c.weights, &got).ok());
  p.compare(got, want);
  if (c.weights) {
    AttentionResult plain;
    REQUIRE(p.run(&ctx, false, &plain).ok());
    p.compare(plain, want);
  }
  if (fast_out) *fast_out = got;
}

// p on every ISA the machine runs and each thread count against the reference's result `want`
// (computed once: the slow part), with weights if asked and, then, also without.
inline void check_problem_everywhere(const AttentionProblem& p, const AttentionResult& want,
                                     bool weights, const std::vector<int>& thread_counts) {
  for (attn::Isa isa : test_isas()) {
    for (int threads : thread_counts) {
      INFO("isa " << attn::isa_name(isa) << " threads " << threads);
      attn::Context ctx = make_context(isa, threads);
      AttentionResult got;
      REQUIRE(p.run(&ctx, weights, &got).ok());
      p.compare(got, want);
      if (weights) {
        AttentionResult plain;
        REQUIRE(p.run(&ctx, false, &plain).ok());
        p.compare(plain, want);
      }
    }
  }
}

// A case on every ISA the machine runs and each thread count.
inline void check_attention_case_everywhere(const AttentionCase& c,
                                            const std::vector<int>& thread_counts) {
  INFO(c);
  const AttentionProblem p(c);
  AttentionResult want;
  REQUIRE(p.run(nullptr, c.weights, &want).ok());
  check_problem_everywhere(p, want, c.weights, thread_counts);
}

}  // namespace attn_test

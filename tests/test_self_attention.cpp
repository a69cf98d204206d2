// self_attention against reference::self_attention on every ISA.
//
// Tolerance, composed from the matmul and attention bounds (u = 2^-24, eps = 2u):
//   projections: |dQ|, |dK|, |dV| <= (d_model + 2) eps P, with P = max (|x| |W| + |b|) entrywise;
//   scores: |ds| <= scale Dk (|dQ| Kmax + Qmax |dK|) + (Dk + 2) u S (attention's own bound);
//   heads:  |dH| <= (2 |ds| + (2 seq + 8) u) Vmax + |dV|;
//   output projection: |dO| <= (Hq Dv + 2) eps O_abs + |dH| max_c sum_t |Wo[t, c]|.
// All with a safety factor gamma = 2.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "support/test_support.hpp"

namespace {

struct Config {
  std::size_t batch, seq, d_model, heads, kv_heads, dk, dv, d_out;
  bool bias, out_proj, causal, weights;
};

// max over entries of (|x| |W| + |b|): the magnitude scale of one projection.
double abs_product_max(const std::vector<float>& x, std::size_t rows, std::size_t inner,
                       const std::vector<float>& w, std::size_t cols, const std::vector<float>* b) {
  double best = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      double s = b ? std::fabs((*b)[c]) : 0.0;
      for (std::size_t t = 0; t < inner; ++t)
        s += std::fabs(double(x[r * inner + t]) * w[t * cols + c]);
      best = std::fmax(best, s);
    }
  }
  return best;
}

// fused: the q, k, v weights (and biases) side by side in one matrix, as fused-QKV checkpoints
// store them; self_attention then projects with one GEMM.
void run(attn::Context& ctx, const Config& c, std::uint32_t seed, bool fused = false,
         std::vector<float>* result = nullptr) {
  attn_test::Rng rng(seed);
  const std::size_t rows = c.batch * c.seq;
  const std::size_t dq = c.heads * c.dk, dkv = c.kv_heads * c.dk, dvv = c.kv_heads * c.dv,
                    dh = c.heads * c.dv;
  const std::size_t d_out = c.out_proj ? c.d_out : dh;
  auto x = rng.uniform_vec(rows * c.d_model);
  auto wq = rng.uniform_vec(c.d_model * dq, -0.3f, 0.3f),
       wk = rng.uniform_vec(c.d_model * dkv, -0.3f, 0.3f),
       wv = rng.uniform_vec(c.d_model * dvv, -0.3f, 0.3f),
       wo = rng.uniform_vec(dh * d_out, -0.3f, 0.3f);
  auto bq = rng.uniform_vec(dq), bk = rng.uniform_vec(dkv), bv = rng.uniform_vec(dvv),
       bo = rng.uniform_vec(d_out);
  attn::SelfAttentionParams p;
  p.q = {attn::make_matrix<const float>(wq.data(), c.d_model, dq), c.bias ? bq.data() : nullptr};
  p.k = {attn::make_matrix<const float>(wk.data(), c.d_model, dkv), c.bias ? bk.data() : nullptr};
  p.v = {attn::make_matrix<const float>(wv.data(), c.d_model, dvv), c.bias ? bv.data() : nullptr};
  const std::size_t wide = dq + dkv + dvv;
  std::vector<float> wqkv(c.d_model * wide), bqkv(wide);
  if (fused) {
    for (std::size_t r = 0; r < c.d_model; ++r) {
      std::copy(wq.begin() + r * dq, wq.begin() + (r + 1) * dq, wqkv.begin() + r * wide);
      std::copy(wk.begin() + r * dkv, wk.begin() + (r + 1) * dkv, wqkv.begin() + r * wide + dq);
      std::copy(wv.begin() + r * dvv, wv.begin() + (r + 1) * dvv,
                wqkv.begin() + r * wide + dq + dkv);
    }
    std::copy(bq.begin(), bq.end(), bqkv.begin());
    std::copy(bk.begin(), bk.end(), bqkv.begin() + dq);
    std::copy(bv.begin(), bv.end(), bqkv.begin() + dq + dkv);
    p.q = {{wqkv.data(), c.d_model, dq, wide}, c.bias ? bqkv.data() : nullptr};
    p.k = {{wqkv.data() + dq, c.d_model, dkv, wide}, c.bias ? bqkv.data() + dq : nullptr};
    p.v = {{wqkv.data() + dq + dkv, c.d_model, dvv, wide},
           c.bias ? bqkv.data() + dq + dkv : nullptr};
  }
  if (c.out_proj)
    p.o = {attn::make_matrix<const float>(wo.data(), dh, d_out), c.bias ? bo.data() : nullptr};
  p.num_heads = c.heads;
  p.num_kv_heads = c.kv_heads;
  p.attention.mask = c.causal ? attn::Mask::causal() : attn::Mask::bidirectional();
  std::vector<float> got(rows * d_out), want(rows * d_out), wgot, wwant;
  if (c.weights) {
    wgot.resize(c.batch * c.heads * c.seq * c.seq);
    wwant.resize(wgot.size());
  }
  const auto xv = attn::make_matrix<const float>(x.data(), rows, c.d_model);
  if (c.weights)
    p.attention.weights = attn::make_bhsd(wwant.data(), c.batch, c.heads, c.seq, c.seq);
  REQUIRE(
      attn::reference::self_attention(xv, c.batch, p, attn::make_matrix(want.data(), rows, d_out))
          .ok());
  if (c.weights) p.attention.weights = attn::make_bhsd(wgot.data(), c.batch, c.heads, c.seq, c.seq);
  REQUIRE(
      attn::self_attention(ctx, xv, c.batch, p, attn::make_matrix(got.data(), rows, d_out)).ok());

  const double u = std::ldexp(1.0, -24), eps = 2 * u;
  const double pq = abs_product_max(x, rows, c.d_model, wq, dq, c.bias ? &bq : nullptr);
  const double pk = abs_product_max(x, rows, c.d_model, wk, dkv, c.bias ? &bk : nullptr);
  const double pv = abs_product_max(x, rows, c.d_model, wv, dvv, c.bias ? &bv : nullptr);
  const double proj = double(c.d_model + 2) * eps;
  const double scale = 1.0 / std::sqrt(double(c.dk));
  const double s_abs = scale * double(c.dk) * pq * pk;
  const double ds =
      scale * double(c.dk) * (proj * pq * pk + pq * proj * pk) + double(c.dk + 2) * u * s_abs;
  double dh_err = (2 * ds + double(2 * c.seq + 8) * u) * pv + proj * pv;
  double tol = dh_err;
  if (c.out_proj) {
    std::vector<float> ones(rows * dh, float(pv));
    const double o_abs = abs_product_max(ones, rows, dh, wo, d_out, c.bias ? &bo : nullptr);
    double col = 0.0;
    for (std::size_t cc = 0; cc < d_out; ++cc) {
      double s = 0.0;
      for (std::size_t t = 0; t < dh; ++t)
        s += std::fabs(wo[t * d_out + cc]);
      col = std::fmax(col, s);
    }
    tol = double(dh + 2) * eps * o_abs + dh_err * col;
  }
  tol *= 2.0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(double(got[i]) - want[i]) <= tol) && bad++ < 5) {
      FAIL_CHECK("out[" << i << "] = " << got[i] << ", reference " << want[i] << ", tolerance "
                        << tol);
    }
  }
  for (std::size_t i = 0; i < wgot.size(); ++i) {
    if (!(std::fabs(double(wgot[i]) - wwant[i]) <= 2 * ds * 2 + 1e-6) && bad++ < 5) {
      FAIL_CHECK("weights[" << i << "] = " << wgot[i] << ", reference " << wwant[i]);
    }
  }
  CHECK(bad == 0);
  if (result) *result = got;
}

}  // namespace

TEST_CASE("self_attention matches the reference", "[self_attention]") {
  const Config configs[] = {
      {1, 6, 64, 1, 1, 16, 16, 0, false, false, false, true},  // the seed's pipeline
      {1, 6, 64, 1, 1, 16, 16, 0, false, false, true, true},
      {2, 7, 24, 4, 2, 6, 5, 11, true, true, true, false},  // GQA, Dk != Dv, biases, Wo
      {3, 5, 16, 3, 1, 4, 4, 16, true, true, false, true},  // MQA
      {1, 33, 48, 2, 2, 24, 24, 48, false, true, false, false},
      {2, 65, 32, 4, 4, 8, 8, 0, true, false, true, false},
  };
  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2}) {
      attn::Context ctx = attn_test::make_context(isa, threads);
      std::uint32_t seed = 1;
      for (const Config& c : configs) {
        INFO("isa " << attn::isa_name(isa) << " threads " << threads << " config " << seed);
        run(ctx, c, seed, false);
        run(ctx, c, seed, true);
        ++seed;
      }
    }
  }
}

TEST_CASE("self_attention with batch 0 is valid and writes nothing", "[self_attention]") {
  attn::Context ctx;
  std::vector<float> w(8 * 4, 0.5f);
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = attn::make_matrix<const float>(w.data(), 8, 4);
  CHECK(attn::self_attention(ctx, {nullptr, 0, 8, 8}, 0, p, {nullptr, 0, 4, 4}).ok());
}

// self_attention against reference::self_attention on every ISA.
//
// Tolerance per output element, from the exact (double) values and magnitudes of this input
// (u = 2^-24, eps = 2u), composed from the matmul and attention bounds:
//   projections: |dQ_it| <= (d_model + 2) eps (|x| |Wq| + |bq|)_it, the same for K and V;
//   scores of query row i: |ds_ij| <= scale sum_t (|dQ_it| |K_jt| + |Q_it| |dK_jt| + |dQ_it|
//     |dK_jt|) + (Dk + 2) u scale sum_t |Q_it| |K_jt|, and ds_i = max_j |ds_ij| over the keys
//     row i attends;
//   heads: |dH_ic| <= (2 ds_i + (2 seq + 8) u) max_j |V_jc| + max_j |dV_jc| (softmax's first
//     order change is at most 2 ds_i in each weight; the attention's own rounding);
//   output projection: |dO_ic| <= (Hq Dv + 2) eps (|H| |Wo| + |bo|)_ic + sum_t |dH_it| |Wo_tc|.
// All times a safety factor gamma = 2. Entry by entry, not with maxima over the whole input: at
// d_model 256 the maxima made the bound larger than the outputs, so a dropped bias passed (the
// test "self_attention's tolerance sees a dropped bias" checks that it cannot now).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

#include "support/test_support.hpp"

namespace {

struct Config {
  std::size_t batch, seq, d_model, heads, kv_heads, dk, dv, d_out;
  bool bias, out_proj, causal, weights;
  bool no_v_bias = false;  // with bias: V's left out (zero in the bounds), the others present
};

// The mask parts beyond causal that a case adds, as plain data: the test evaluates the contract
// (include/attn/mask.hpp) from these itself rather than through the library. additive and
// allowed are [B or 1, Hq or 1, seq, seq] (per_batch, per_head say which); empty: none.
struct MaskParts {
  std::vector<std::int32_t> key_lengths;
  bool window = false;
  std::size_t left = 0, right = 0;
  std::vector<float> additive;
  std::vector<std::uint8_t> allowed;
  bool per_batch = false, per_head = false;

  std::size_t at(const Config& c, std::size_t b, std::size_t h, std::size_t i,
                 std::size_t j) const {
    return (((per_batch ? b : 0) * (per_head ? c.heads : 1) + (per_head ? h : 0)) * c.seq + i) *
               c.seq +
           j;
  }
  // Whether query i of (b, h) attends key j, and what is added to its scaled score. An additive
  // -inf counts as blocked here: its weight is 0 (the data is finite, so 0 * v is 0).
  bool attends(const Config& c, std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    if (c.causal && j > i) return false;
    if (window && (j + left < i || j > i + right)) return false;
    if (!key_lengths.empty() && j >= std::size_t(key_lengths[b])) return false;
    if (!allowed.empty() && allowed[at(c, b, h, i, j)] == 0) return false;
    return added(c, b, h, i, j) != -INFINITY;
  }
  double added(const Config& c, std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    return additive.empty() ? 0.0 : additive[at(c, b, h, i, j)];
  }
  attn::Mask mask(const Config& c) const {
    attn::Mask m = c.causal ? attn::Mask::causal() : attn::Mask::bidirectional();
    const std::size_t nb = per_batch ? c.batch : 1, nh = per_head ? c.heads : 1;
    if (!key_lengths.empty()) m = m.with_key_lengths(key_lengths.data());
    if (window) m = m.with_window(left, right);
    if (!additive.empty())
      m = m.with_additive(attn::make_bhsd(additive.data(), nb, nh, c.seq, c.seq));
    if (!allowed.empty()) m = m.with_allowed(attn::make_bhsd(allowed.data(), nb, nh, c.seq, c.seq));
    return m;
  }
};

// y = x W + b in double and |x| |W| + |b|, for x rows x inner and W inner x cols.
void project(const std::vector<float>& x, std::size_t rows, std::size_t inner,
             const std::vector<float>& w, std::size_t cols, const std::vector<float>* b,
             std::vector<double>* y, std::vector<double>* mag) {
  y->assign(rows * cols, 0.0);
  mag->assign(rows * cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      double v = b ? (*b)[c] : 0.0, m = b ? std::fabs((*b)[c]) : 0.0;
      for (std::size_t t = 0; t < inner; ++t) {
        const double prod = double(x[r * inner + t]) * double(w[t * cols + c]);
        v += prod;
        m += std::fabs(prod);
      }
      (*y)[r * cols + c] = v;
      (*mag)[r * cols + c] = m;
    }
  }
}

struct Bounds {
  std::vector<double> out;        // per output element, gamma included
  std::vector<double> score_row;  // ds_i per [batch, head, query row]
};

// The file comment's bound for this input; w and b: q, k, v, o.
Bounds error_bounds(const Config& c, const std::vector<float>& x,
                    const std::vector<float>* const (&w)[4],
                    const std::vector<float>* const (&b)[4], const MaskParts& mp = {}) {
  const double u = std::ldexp(1.0, -24), eps = 2 * u, gamma = 2.0;
  const std::size_t rows = c.batch * c.seq, dh = c.heads * c.dv;
  const std::size_t cols[3] = {c.heads * c.dk, c.kv_heads * c.dk, c.kv_heads * c.dv};
  std::vector<double> val[3], mag[3];
  for (int i = 0; i < 3; ++i) {
    project(x, rows, c.d_model, *w[i], cols[i], c.bias ? b[i] : nullptr, &val[i], &mag[i]);
    for (double& m : mag[i])
      m *= double(c.d_model + 2) * eps;  // now |dQ|, |dK|, |dV|
  }
  const std::vector<double>&Q = val[0], &K = val[1], &V = val[2], &dQ = mag[0], &dK = mag[1],
        &dV = mag[2];
  const std::size_t lq = cols[0], lk = cols[1], lv = cols[2];
  const double scale = 1.0 / std::sqrt(double(c.dk));
  Bounds out;
  out.score_row.assign(c.batch * c.heads * c.seq, 0.0);
  std::vector<double> H(rows * dh), dH(rows * dh);
  std::vector<double> sc(c.seq), p(c.seq);
  for (std::size_t bi = 0; bi < c.batch; ++bi) {
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t g = h / (c.heads / c.kv_heads);
      for (std::size_t s = 0; s < c.seq; ++s) {
        const std::size_t r = bi * c.seq + s;
        double ds = 0.0, mx = -INFINITY, sum = 0.0;
        for (std::size_t j = 0; j < c.seq; ++j) {
          if (!mp.attends(c, bi, h, s, j)) continue;
          const std::size_t rk = bi * c.seq + j;
          double dot = 0.0, err = 0.0, m = 0.0;
          for (std::size_t t = 0; t < c.dk; ++t) {
            const double q = Q[r * lq + h * c.dk + t], k = K[rk * lk + g * c.dk + t];
            const double eq = dQ[r * lq + h * c.dk + t], ek = dK[rk * lk + g * c.dk + t];
            dot += q * k;
            err += eq * std::fabs(k) + std::fabs(q) * ek + eq * ek;
            m += std::fabs(q * k);
          }
          // An additive term costs one more rounding: u |scale q.k + a|.
          const double a = mp.added(c, bi, h, s, j);
          sc[j] = scale * dot + a;
          ds = std::fmax(ds, scale * err + double(c.dk + 2) * u * scale * m +
                                 u * (std::fabs(scale * dot) + std::fabs(a)));
          mx = std::fmax(mx, sc[j]);
        }
        out.score_row[(bi * c.heads + h) * c.seq + s] = ds;
        for (std::size_t j = 0; j < c.seq; ++j)
          sum += (p[j] = mp.attends(c, bi, h, s, j) ? std::exp(sc[j] - mx) : 0.0);
        for (std::size_t d = 0; d < c.dv; ++d) {
          double hv = 0.0, vmax = 0.0, dvmax = 0.0;
          for (std::size_t j = 0; j < c.seq; ++j) {
            if (p[j] == 0.0) continue;
            const std::size_t iv = (bi * c.seq + j) * lv + g * c.dv + d;
            hv += p[j] / sum * V[iv];
            vmax = std::fmax(vmax, std::fabs(V[iv]));
            dvmax = std::fmax(dvmax, dV[iv]);
          }
          H[r * dh + h * c.dv + d] = hv;
          dH[r * dh + h * c.dv + d] = (2 * ds + double(2 * c.seq + 8) * u) * vmax + dvmax;
        }
      }
    }
  }
  if (!c.out_proj) {
    out.out = dH;
  } else {
    const std::vector<float>& wo = *w[3];
    out.out.assign(rows * c.d_out, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t col = 0; col < c.d_out; ++col) {
        double m = c.bias ? std::fabs((*b[3])[col]) : 0.0, prop = 0.0;
        for (std::size_t t = 0; t < dh; ++t) {
          m += std::fabs(H[r * dh + t] * wo[t * c.d_out + col]);
          prop += dH[r * dh + t] * std::fabs(wo[t * c.d_out + col]);
        }
        out.out[r * c.d_out + col] = double(dh + 2) * eps * m + prop;
      }
    }
  }
  for (double& t : out.out)
    t *= gamma;
  for (double& t : out.score_row)
    t *= gamma;
  return out;
}

// Which bias the reference leaves out (Drop::none: none, the test proper). With one left out,
// the library's output must be outside the tolerance somewhere: the check that the tolerance
// can see that bias dropped.
enum class Drop { none, q, v, o };

// How the weights reach self_attention: views of separate matrices; views into one matrix with
// the q, k, v weights (and biases) side by side, as fused-QKV checkpoints store them (one GEMM
// projects all three); the weights side by side but the biases in buffers of their own (not one
// GEMM: each projection's own, on its view of the joint matrix); or views or side-by-side weights
// packed first by pack_self_attention (always one GEMM), the parameters' buffers then overwritten
// with NaN before the call (the layer must not read them).
enum class Form { views, fused, fused_weights, packed, packed_fused };
constexpr Form kForms[] = {Form::views, Form::fused, Form::fused_weights, Form::packed,
                           Form::packed_fused};

// mp: mask parts beyond c.causal; pad: floats past each row of x and out (out's must stay as
// they were).
void run(attn::Context& ctx, const Config& c, std::uint32_t seed, Form form = Form::views,
         std::vector<float>* result = nullptr, Drop drop = Drop::none, const MaskParts& mp = {},
         std::size_t pad = 0) {
  const bool fused =
      form == Form::fused || form == Form::fused_weights || form == Form::packed_fused;
  const bool packed = form == Form::packed || form == Form::packed_fused;
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
  if (c.no_v_bias) std::fill(bv.begin(), bv.end(), 0.0f);
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
    const bool apart = form == Form::fused_weights;
    p.q = {{wqkv.data(), c.d_model, dq, wide}, c.bias ? (apart ? bq : bqkv).data() : nullptr};
    p.k = {{wqkv.data() + dq, c.d_model, dkv, wide},
           c.bias ? (apart ? bk.data() : bqkv.data() + dq) : nullptr};
    p.v = {{wqkv.data() + dq + dkv, c.d_model, dvv, wide},
           c.bias ? (apart ? bv.data() : bqkv.data() + dq + dkv) : nullptr};
  }
  if (c.out_proj)
    p.o = {attn::make_matrix<const float>(wo.data(), dh, d_out), c.bias ? bo.data() : nullptr};
  if (c.no_v_bias) p.v.bias = nullptr;
  p.num_heads = c.heads;
  p.num_kv_heads = c.kv_heads;
  p.attention.mask = mp.mask(c);
  const float kPad = 777.0f;
  const std::size_t ld_out = d_out + pad;
  std::vector<float> got(rows * ld_out, kPad), want(rows * d_out), wgot, wwant;
  if (c.weights) {
    wgot.resize(c.batch * c.heads * c.seq * c.seq);
    wwant.resize(wgot.size());
  }
  std::vector<float> x_padded(rows * (c.d_model + pad), attn_test::nan_f());
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(x.begin() + r * c.d_model, x.begin() + (r + 1) * c.d_model,
              x_padded.begin() + r * (c.d_model + pad));
  const attn::MatrixView<const float> xv{x_padded.data(), rows, c.d_model, c.d_model + pad};
  const attn::MatrixView<float> out_view{got.data(), rows, d_out, ld_out};
  if (c.weights)
    p.attention.weights = attn::make_bhsd(wwant.data(), c.batch, c.heads, c.seq, c.seq);
  attn::SelfAttentionParams p_ref = p;
  if (drop == Drop::q) p_ref.q.bias = nullptr;
  if (drop == Drop::v) p_ref.v.bias = nullptr;
  if (drop == Drop::o) p_ref.o.bias = nullptr;
  REQUIRE(attn::reference::self_attention(xv, c.batch, p_ref,
                                          attn::make_matrix(want.data(), rows, d_out))
              .ok());
  if (c.weights) p.attention.weights = attn::make_bhsd(wgot.data(), c.batch, c.heads, c.seq, c.seq);
  // The bounds read the weights: computed before a packed form spoils the parameters' copies.
  const std::vector<float>* const ws[4] = {&wq, &wk, &wv, &wo};
  const std::vector<float>* const bs[4] = {&bq, &bk, &bv, &bo};
  const Bounds tol = error_bounds(c, x, ws, bs, mp);
  if (packed) {
    attn::PackedSelfAttention layer;
    REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
    CHECK(layer.d_out() == d_out);
    CHECK(layer.has_output_projection() == c.out_proj);
    for (auto* v : {&wq, &wk, &wv, &wo, &bq, &bk, &bv, &bo, &wqkv, &bqkv})
      std::fill(v->begin(), v->end(), attn_test::nan_f());
    REQUIRE(attn::self_attention(ctx, xv, c.batch, layer, p.attention, out_view).ok());
  } else {
    REQUIRE(attn::self_attention(ctx, xv, c.batch, p, out_view).ok());
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = d_out; i < ld_out; ++i)
      REQUIRE(got[r * ld_out + i] == kPad);
  }
  // From here got is rows x d_out, as want.
  for (std::size_t r = 1; r < rows; ++r)
    std::copy(got.begin() + r * ld_out, got.begin() + r * ld_out + d_out, got.begin() + r * d_out);
  got.resize(rows * d_out);

  if (drop != Drop::none) {
    double worst = 0.0;  // the largest difference in units of the tolerance
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::fmax(worst, std::fabs(double(got[i]) - want[i]) / tol.out[i]);
    INFO("largest difference from the reference without that bias: " << worst << " tolerances");
    CHECK(worst > 1.0);
    return;
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(double(got[i]) - want[i]) <= tol.out[i]) && bad++ < 5) {
      FAIL_CHECK("out[" << i << "] = " << got[i] << ", reference " << want[i] << ", tolerance "
                        << tol.out[i]);
    }
  }
  // weights[b, h, s, j]: each moves by at most 2 ds_s (first order), times gamma.
  for (std::size_t i = 0; i < wgot.size(); ++i) {
    const double t = 2 * tol.score_row[i / c.seq] + 1e-6;
    if (!(std::fabs(double(wgot[i]) - wwant[i]) <= t) && bad++ < 5) {
      FAIL_CHECK("weights[" << i << "] = " << wgot[i] << ", reference " << wwant[i]
                            << ", tolerance " << t);
    }
  }
  CHECK(bad == 0);
  if (result) *result = got;
}

// A case of run(): its sizes, mask parts beyond causal and padding of x's and out's rows.
struct Case {
  Config c;
  MaskParts mp = {};
  std::size_t pad = 0;
};

// Each case in every form, on every ISA with 1 and 2 threads; seeds from seed0 on, one a case.
void run_everywhere(const std::vector<Case>& cases, std::uint32_t seed0) {
  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2}) {
      attn::Context ctx = attn_test::make_context(isa, threads);
      std::uint32_t seed = seed0;
      for (const Case& k : cases) {
        INFO("isa " << attn::isa_name(isa) << " threads " << threads << " case " << seed);
        for (Form form : kForms)
          run(ctx, k.c, seed, form, nullptr, Drop::none, k.mp, k.pad);
        ++seed;
      }
    }
  }
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
      {2, 9, 256, 4, 4, 16, 16, 64, true, true, false, false},    // d_model 256
      {2, 7, 24, 4, 2, 6, 5, 11, true, true, true, false, true},  // q and k biases, not v's
      // 8 and 7 rows, projections over 32 columns: with a packed layer on AVX-512 the 8 x 32
      // tiles on each half of a sliver, the bias of each half.
      {1, 8, 64, 2, 2, 32, 32, 48, true, true, false, false},
      {1, 7, 64, 2, 2, 32, 32, 48, true, true, true, false},
  };
  std::vector<Case> cases;
  for (const Config& c : configs)
    cases.push_back({c});
  run_everywhere(cases, 1);
}

TEST_CASE("self_attention with key lengths, windows, masks, seq 1 and padded rows",
          "[self_attention][mask]") {
  // Every mask part reaches the attention of each batch entry's own rows, blocked keys weigh
  // nothing, a batch entry with key length 0 (every row blocked) gives the heads zeros (out = bo),
  // and x's and out's padding is neither read (x's is NaN) nor written.
  std::vector<Case> cases;
  {  // key lengths, one 0 and one 1, with Wo and biases
    Case k{{3, 5, 16, 2, 1, 4, 4, 8, true, true, false, true}, {}, 3};
    k.mp.key_lengths = {5, 1, 0};
    cases.push_back(k);
  }
  {  // seq 1: one query, one key (or none)
    Case k{{4, 1, 24, 3, 3, 8, 8, 0, true, false, true, true}, {}, 1};
    k.mp.key_lengths = {1, 0, 1, 1};
    cases.push_back(k);
  }
  {  // window over several key tiles, GQA, Dk != Dv
    Case k{{2, 40, 32, 4, 2, 8, 5, 0, false, false, false, true}, {}, 0};
    k.mp.window = true, k.mp.left = 2, k.mp.right = 1;
    cases.push_back(k);
  }
  {  // local causal window and key lengths over more than one tile of rows and keys
    Case k{{2, 70, 32, 2, 2, 16, 16, 24, true, true, true, false}, {}, 5};
    k.mp.window = true, k.mp.left = 20, k.mp.right = 0;
    k.mp.key_lengths = {70, 33};
    cases.push_back(k);
  }
  {  // additive per batch and head, some -inf, one row all -inf
    Case k{{2, 9, 16, 4, 4, 4, 4, 0, true, false, false, true}, {}, 2};
    attn_test::Rng rng(21);
    k.mp.additive = rng.uniform_vec(2 * 4 * 9 * 9, -2.0f, 2.0f);
    k.mp.per_batch = k.mp.per_head = true;
    for (std::size_t i = 0; i < k.mp.additive.size(); i += 7)
      k.mp.additive[i] = -INFINITY;
    for (std::size_t j = 0; j < 9; ++j)
      k.mp.additive[k.mp.at(k.c, 1, 2, 4, j)] = -INFINITY;
    cases.push_back(k);
  }
  {  // boolean mask broadcast over batch and heads with a fully blocked row, causal too
    Case k{{3, 17, 16, 2, 1, 8, 8, 16, false, true, true, true}, {}, 0};
    attn_test::Rng rng(22);
    k.mp.allowed.resize(17 * 17);
    for (auto& a : k.mp.allowed)
      a = std::uint8_t(rng.index(4) != 0);
    for (std::size_t j = 0; j < 17; ++j)
      k.mp.allowed[k.mp.at(k.c, 0, 0, 6, j)] = 0;
    cases.push_back(k);
  }
  run_everywhere(cases, 40);
}

TEST_CASE("self_attention's tolerance sees a dropped bias", "[self_attention]") {
  // The bias of K is left out: it adds q . b_k to every score of a row, which softmax cancels.
  // d_model 256: the projections' share of the tolerance grows with d_model.
  const Config configs[] = {
      {2, 7, 24, 4, 2, 6, 5, 11, true, true, true, false},
      {2, 9, 256, 4, 4, 16, 16, 64, true, true, false, false},
      {2, 9, 256, 4, 4, 16, 16, 0, true, false, true, false},
      {2, 9, 256, 4, 4, 16, 16, 64, true, true, false, false, true},  // no V bias
  };
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    std::uint32_t seed = 100;
    for (const Config& c : configs) {
      for (Drop drop : {Drop::q, Drop::v, Drop::o}) {
        if ((drop == Drop::o && !c.out_proj) || (drop == Drop::v && c.no_v_bias)) continue;
        INFO("isa " << attn::isa_name(isa) << " config " << seed << " drop " << int(drop));
        for (Form form : kForms)
          run(ctx, c, seed, form, nullptr, drop);
      }
      ++seed;
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

TEST_CASE("self_attention with a packed layer rejects bad arguments and writes nothing",
          "[self_attention][packed][args]") {
  const float kSentinel = 777.0f;
  attn::Context ctx;
  REQUIRE(ctx.init_status().ok());
  const std::size_t dm = 16, heads = 2, dk = 4, rows = 6;
  attn_test::Rng rng(5);
  std::vector<float> wq = rng.uniform_vec(dm * heads * dk), wk = rng.uniform_vec(dm * heads * dk),
                     wv = rng.uniform_vec(dm * heads * dk), x = rng.uniform_vec(rows * dm),
                     out(rows * heads * dk, kSentinel);
  attn::SelfAttentionParams p;
  p.q.weight = attn::make_matrix<const float>(wq.data(), dm, heads * dk);
  p.k.weight = attn::make_matrix<const float>(wk.data(), dm, heads * dk);
  p.v.weight = attn::make_matrix<const float>(wv.data(), dm, heads * dk);
  p.num_heads = heads;
  attn::PackedSelfAttention layer;
  REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
  CHECK(layer.d_model() == dm);
  CHECK(layer.d_out() == heads * dk);
  const auto xv = attn::make_matrix<const float>(x.data(), rows, dm);
  const auto ov = attn::make_matrix(out.data(), rows, heads * dk);
  const auto expect = [&](const attn::Status& s, const char* text) {
    INFO(s.message());
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(std::string(s.message()).find(text) != std::string::npos);
    for (float v : out)
      CHECK(v == kSentinel);
  };
  expect(attn::self_attention(ctx, xv, 1, attn::PackedSelfAttention{}, {}, ov),
         "empty PackedSelfAttention");
  expect(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), rows, dm - 1), 1, layer,
                              {}, ov),
         "x has 15 columns but the packed layer's d_model is 16");
  expect(attn::self_attention(ctx, xv, 4, layer, {}, ov), "not batch (4)");
  expect(attn::self_attention(ctx, xv, 1, layer, {},
                              attn::make_matrix(out.data(), rows, heads * dk - 1)),
         "out is 6 x 7; expected 6 x 8");
  attn::AttentionOptions bad_scale;
  bad_scale.scale = NAN;
  expect(attn::self_attention(ctx, xv, 1, layer, bad_scale, ov), "options.scale");
  attn::AttentionOptions weights_over_x;
  weights_over_x.weights = attn::make_bhsd(x.data(), 1, heads, rows, rows);
  expect(attn::self_attention(ctx, xv, 1, layer, weights_over_x, ov), "options.weights");
  // out or options.weights in the packed layer's memory (a packed matrix, a bias).
  attn::SelfAttentionParams with_bias = p;
  std::vector<float> bq(heads * dk, 0.5f);
  with_bias.q.bias = bq.data();
  attn::PackedSelfAttention biased;
  REQUIRE(attn::pack_self_attention(ctx, with_bias, &biased).ok());
  float* packed_qkv = const_cast<float*>(biased.qkv().data());
  expect(
      attn::self_attention(ctx, xv, 1, biased, {}, attn::make_matrix(packed_qkv, rows, heads * dk)),
      "out overlaps the packed layer");
  attn::AttentionOptions weights_in_bias;
  weights_in_bias.weights = attn::make_bhsd(const_cast<float*>(biased.qkv_bias()), 1, heads, 2, 2);
  expect(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), 2, dm), 1, biased,
                              weights_in_bias, attn::make_matrix(out.data(), 2, heads * dk)),
         "options.weights overlaps the packed layer");
  const auto isas = attn_test::test_isas();
  if (isas.size() > 1) {
    attn::Context other =
        attn_test::make_context(isas.front() == ctx.isa() ? isas.back() : isas.front());
    expect(attn::self_attention(other, xv, 1, layer, {}, ov),
           (std::string("packed for ") + attn::isa_name(ctx.isa())).c_str());
  }
  // pack_self_attention checks the weights as self_attention does, and leaves out as it was.
  CHECK(attn::pack_self_attention(ctx, p, nullptr).code() == attn::StatusCode::invalid_argument);
  attn::SelfAttentionParams bad = p;
  bad.num_heads = 3;
  const attn::Status s = attn::pack_self_attention(ctx, bad, &layer);
  CHECK(s.code() == attn::StatusCode::invalid_argument);
  CHECK(std::string(s.message()).find("pack_self_attention: params.q.weight has 8 columns") !=
        std::string::npos);
  CHECK(layer.num_heads() == heads);
  CHECK(attn::self_attention(ctx, xv, 1, layer, {}, ov).ok());
  CHECK(out[0] != kSentinel);
}

TEST_CASE("pack_self_attention takes Wq, Wk, Wv whose rows interleave",
          "[self_attention][packed]") {
  // Views of one buffer with k.data = q.data + 4, v.data = k.data + 4 and stride 4: valid views
  // (row r + 1 of Wq is row r of Wk), which self_attention projects as one 8 x 12 matrix of row
  // stride 4; packed, they are copied side by side first. Both within the file's bound.
  const Config c{1, 6, 8, 1, 1, 4, 4, 0, false, false, false, false};
  attn_test::Rng rng(9);
  const std::vector<float> buf = rng.uniform_vec((c.d_model + 2) * 4, -0.3f, 0.3f),
                           x = rng.uniform_vec(c.seq * c.d_model);
  attn::SelfAttentionParams p;
  p.q.weight = {buf.data(), c.d_model, 4, 4};
  p.k.weight = {buf.data() + 4, c.d_model, 4, 4};
  p.v.weight = {buf.data() + 8, c.d_model, 4, 4};
  std::vector<float> wq(c.d_model * 4), wk(wq.size()), wv(wq.size()), none;
  for (std::size_t i = 0; i < wq.size(); ++i) {
    wq[i] = buf[i];
    wk[i] = buf[i + 4];
    wv[i] = buf[i + 8];
  }
  const std::vector<float>* const ws[4] = {&wq, &wk, &wv, &none};
  const std::vector<float>* const bs[4] = {&none, &none, &none, &none};
  const Bounds tol = error_bounds(c, x, ws, bs);
  const auto xv = attn::make_matrix<const float>(x.data(), c.seq, c.d_model);
  std::vector<float> want(c.seq * 4);
  REQUIRE(attn::reference::self_attention(xv, 1, p, attn::make_matrix(want.data(), c.seq, 4)).ok());
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> views(c.seq * 4), packed(c.seq * 4);
    REQUIRE(attn::self_attention(ctx, xv, 1, p, attn::make_matrix(views.data(), c.seq, 4)).ok());
    attn::PackedSelfAttention layer;
    const attn::Status s = attn::pack_self_attention(ctx, p, &layer);
    INFO("isa " << attn::isa_name(isa) << ": " << (s.message() ? s.message() : ""));
    REQUIRE(s.ok());
    REQUIRE(attn::self_attention(ctx, xv, 1, layer, {}, attn::make_matrix(packed.data(), c.seq, 4))
                .ok());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(std::fabs(double(views[i]) - want[i]) <= tol.out[i]);
      CHECK(std::fabs(double(packed[i]) - want[i]) <= tol.out[i]);
    }
  }
}

TEST_CASE("a PackedSelfAttention moves, and packing again replaces it",
          "[self_attention][packed]") {
  // The moved-to layer gives the same bits; the moved-from one is empty and refused; assignment
  // over a packed layer frees its old buffers (ASan and valgrind see a leak otherwise).
  attn_test::Rng rng(11);
  const std::size_t dm = 12, heads = 2, dk = 4, rows = 5, d_out = 7;
  const std::vector<float> w = rng.uniform_vec(dm * 3 * heads * dk, -0.3f, 0.3f),
                           wo = rng.uniform_vec(heads * dk * d_out, -0.3f, 0.3f),
                           b = rng.uniform_vec(3 * heads * dk), x = rng.uniform_vec(rows * dm);
  attn::SelfAttentionParams p;
  p.q = {{w.data(), dm, heads * dk, 3 * heads * dk}, b.data()};
  p.k = {{w.data() + heads * dk, dm, heads * dk, 3 * heads * dk}, nullptr};
  p.v = {{w.data() + 2 * heads * dk, dm, heads * dk, 3 * heads * dk}, b.data() + 2 * heads * dk};
  p.o = {attn::make_matrix<const float>(wo.data(), heads * dk, d_out), b.data()};
  p.num_heads = heads;
  attn::SelfAttentionParams no_o = p;
  no_o.o = {};
  const auto xv = attn::make_matrix<const float>(x.data(), rows, dm);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa, 2);
    std::vector<float> want(rows * d_out), got(rows * d_out, 777.0f);
    const auto ov = attn::make_matrix(got.data(), rows, d_out);
    attn::PackedSelfAttention layer;
    REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
    REQUIRE(attn::self_attention(ctx, xv, 1, layer, {}, attn::make_matrix(want.data(), rows, d_out))
                .ok());

    attn::PackedSelfAttention moved(std::move(layer));
    CHECK(layer.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK(!layer.has_output_projection());
    CHECK(layer.qkv_bias() == nullptr);
    CHECK(layer.o_bias() == nullptr);
    const attn::Status s = attn::self_attention(ctx, xv, 1, layer, {}, ov);
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(std::string(s.message()).find("empty PackedSelfAttention") != std::string::npos);
    CHECK(got == std::vector<float>(rows * d_out, 777.0f));
    REQUIRE(attn::self_attention(ctx, xv, 1, moved, {}, ov).ok());
    CHECK(got == want);

    attn::PackedSelfAttention other;  // packed without Wo: another d_out
    REQUIRE(attn::pack_self_attention(ctx, no_o, &other).ok());
    CHECK(other.d_out() == heads * dk);
    other = std::move(moved);
    CHECK(moved.empty());  // NOLINT(bugprone-use-after-move)
    CHECK(other.d_out() == d_out);
    std::fill(got.begin(), got.end(), 0.0f);
    REQUIRE(attn::self_attention(ctx, xv, 1, other, {}, ov).ok());
    CHECK(got == want);
    attn::PackedSelfAttention& alias = other;
    other = std::move(alias);  // self-move leaves it as it was
    REQUIRE(attn::self_attention(ctx, xv, 1, other, {}, ov).ok());
    CHECK(got == want);

    REQUIRE(attn::pack_self_attention(ctx, no_o, &other).ok());
    CHECK(!other.has_output_projection());
    CHECK(other.o_bias() == nullptr);
    CHECK(other.d_out() == heads * dk);
  }
}

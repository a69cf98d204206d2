// Determinism: every routine's output is bit-identical for 1, 2, 3 and 7 threads, and for
// repeated calls on the same Context (arena reused) and on a fresh one, on every ISA. Shapes are
// large enough that each routine really splits its work (exp and softmax go parallel from 2^16
// elements; matmul from 2 MFLOP, with few rows by columns).
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstring>

#include "support/test_support.hpp"

namespace {

using attn::Transpose;

// The inputs, and one call of each routine writing a fresh output.
struct Problems {
  attn_test::Rng rng{77};
  std::vector<float> a = rng.uniform_vec(203 * 300), b = rng.uniform_vec(300 * 77),
                     c0 = rng.uniform_vec(203 * 77), wide_b = rng.uniform_vec(64 * 500);
  std::vector<float> ex = rng.uniform_vec(70001, -100.0f, 100.0f);
  std::vector<float> sx = rng.uniform_vec(5 * 20000, -20.0f, 20.0f);
  std::size_t B = 2, Hq = 6, Hkv = 2, Lq = 33, Lk = 47, Dk = 40, Dv = 24;
  std::vector<float> q = rng.uniform_vec(B * Hq * Lq * Dk), k = rng.uniform_vec(B * Hkv * Lk * Dk),
                     v = rng.uniform_vec(B * Hkv * Lk * Dv), bias = rng.uniform_vec(Lq * Lk);
  std::vector<std::int32_t> lengths{47, 30};
  // Decoding one token with one KV head (MQA), 1500 keys (no key split): 5 query heads at Dk 128
  // (K read in place; 5 rows are 4 + 1 on one thread, 3 + 2 on two, 2 + 2 + 1 on three, 1 per
  // task on 7: every scores tile), 16 at Dk 40 (K packed tile by tile) under a window of the last
  // 1000 keys, with weights. One task per KV head on one thread, the heads split over tasks on more
  // (attention_plan.cpp, make_plan).
  std::size_t mq_lk = 1500;
  std::vector<float> mq_q = rng.uniform_vec(16 * 128), mq_k = rng.uniform_vec(mq_lk * 128),
                     mq_v = rng.uniform_vec(mq_lk * 64);
  // Speculative decoding (Lq query rows per head) with one KV head, under the window above: row i
  // attends keys from 1500 - Lq + i - 999 on. V is -0 but at keys 497 and 498, which rows 0 (and
  // 1 for Lq = 4) attend and the others do not. A P*V row block summing over its own rows' keys
  // alone would give such another row -0 where its block holds none of those rows and +0 (0 * 1
  // added) where it does, wherever the kernel keeps a sum's -0: the first key tile of K packed
  // tile by tile (17 rows and more at Dk 40) on SSE2, AVX2, AVX-512 and NEON (the scalar tile
  // and the K-in-place path start their sums at +0). With P*V row blocks of MR rows, 3 rows x 9
  // heads change some such row's company between 1 thread and 2, 3 or 7 (the heads split over
  // tasks) for MR = 4, 8 and 14 (SSE2, NEON, AVX-512), 4 rows x 8 heads for MR = 6 and 14 (AVX2).
  // Plan::heads_may_split; with block_keys over the block's rows, SSE2, AVX2 and AVX-512 failed.
  // 3 rows x 5 heads at Dk 128 reads K in place.
  std::vector<float> sd_v = [] {
    std::vector<float> v(1500 * 64, -0.0f);
    std::fill(v.begin() + 497 * 64, v.begin() + 499 * 64, 1.0f);
    return v;
  }();
  // Decoding with up to 4 rows per KV head (below): 1900 keys, so that 3 heads pass the 2 MFLOP
  // from which attention starts threads, and no key split (from 2048 keys).
  std::size_t few_lk = 1900;
  std::vector<float> few_k = rng.uniform_vec(few_lk * 128), few_v = rng.uniform_vec(few_lk * 64);
  std::size_t batch = 2, seq = 23, dm = 48, heads = 4, dh = 12, d_out = 40;
  std::vector<float> x = rng.uniform_vec(batch * seq * dm),
                     wq = rng.uniform_vec(dm * heads * dh, -0.3f, 0.3f),
                     wk = rng.uniform_vec(dm * 2 * dh, -0.3f, 0.3f),
                     wv = rng.uniform_vec(dm * 2 * dh, -0.3f, 0.3f),
                     wo = rng.uniform_vec(heads * dh * d_out, -0.3f, 0.3f),
                     bq = rng.uniform_vec(heads * dh), bo = rng.uniform_vec(d_out);
  std::vector<float> deep_b = rng.uniform_vec(1100 * 150);

  // Every output of every routine, in a fixed order.
  std::vector<std::vector<float>> run(attn::Context& ctx) {
    std::vector<std::vector<float>> r;
    auto ok = [](const attn::Status& s) {
      INFO(s.message());
      REQUIRE(s.ok());
    };
    std::vector<float> c = c0;
    ok(attn::matmul(ctx, attn::make_matrix<const float>(a.data(), 203, 300), Transpose::no,
                    attn::make_matrix<const float>(b.data(), 300, 77), Transpose::no,
                    attn::make_matrix(c.data(), 203, 77), 0.75f, -0.5f));
    r.push_back(c);
    std::vector<float> few(3 * 500);  // 3 rows, 0.2 MFLOP: one thread whatever the Context says
    ok(attn::matmul(ctx, attn::make_matrix<const float>(a.data(), 64, 3), Transpose::yes,
                    attn::make_matrix<const float>(wide_b.data(), 500, 64), Transpose::yes,
                    attn::make_matrix(few.data(), 3, 500)));
    r.push_back(few);
    // 7 rows of A^T against 150 columns, k = 1100 (2.3 MFLOP): the Goto path's threads split
    // the column panels of each row block, over 3 KC passes.
    std::vector<float> seven(7 * 150);
    ok(attn::matmul(ctx, attn::make_matrix<const float>(a.data(), 1100, 7), Transpose::yes,
                    attn::make_matrix<const float>(deep_b.data(), 1100, 150), Transpose::no,
                    attn::make_matrix(seven.data(), 7, 150)));
    r.push_back(seven);
    std::vector<float> ey(ex.size());
    ok(attn::exp(ctx, ex.data(), ey.data(), ex.size()));
    r.push_back(ey);
    std::vector<float> sy(sx.size()), sy_in_place = sx;
    ok(attn::softmax(ctx, attn::make_matrix<const float>(sx.data(), 5, 20000),
                     attn::make_matrix(sy.data(), 5, 20000)));
    ok(attn::softmax(ctx, attn::make_matrix<const float>(sy_in_place.data(), 5, 20000),
                     attn::make_matrix(sy_in_place.data(), 5, 20000)));
    r.push_back(sy);
    r.push_back(sy_in_place);
    const auto tq = attn::make_bhsd<const float>(q.data(), B, Hq, Lq, Dk);
    const auto tk = attn::make_bshd<const float>(k.data(), B, Lk, Hkv, Dk);
    const auto tv = attn::make_bhsd<const float>(v.data(), B, Hkv, Lk, Dv);
    std::vector<float> out(B * Hq * Lq * Dv), w(B * Hq * Lq * Lk), plain(out.size());
    attn::AttentionOptions o;
    o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right)
                 .with_key_lengths(lengths.data())
                 .with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, Lq, Lk));
    o.weights = attn::make_bhsd(w.data(), B, Hq, Lq, Lk);
    ok(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(out.data(), B, Hq, Lq, Dv), o));
    ok(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(plain.data(), B, Hq, Lq, Dv), {}));
    r.push_back(out);
    r.push_back(w);
    std::vector<float> mq_out(5 * 64), mq_out2(16 * 24), mq_w(16 * mq_lk);
    ok(attn::attention(ctx, attn::make_bhsd<const float>(mq_q.data(), 1, 5, 1, 128),
                       attn::make_bhsd<const float>(mq_k.data(), 1, 1, mq_lk, 128),
                       attn::make_bhsd<const float>(mq_v.data(), 1, 1, mq_lk, 64),
                       attn::make_bhsd(mq_out.data(), 1, 5, 1, 64), {}));
    r.push_back(mq_out);
    attn::AttentionOptions mo;
    mo.mask = attn::Mask::causal(attn::CausalAlign::bottom_right)
                  .with_window(999, 0, attn::CausalAlign::bottom_right);
    mo.weights = attn::make_bhsd(mq_w.data(), 1, 16, 1, mq_lk);
    ok(attn::attention(ctx, attn::make_bhsd<const float>(mq_q.data(), 1, 16, 1, 40),
                       attn::make_bhsd<const float>(mq_k.data(), 1, 1, mq_lk, 40),
                       attn::make_bhsd<const float>(mq_v.data(), 1, 1, mq_lk, 24),
                       attn::make_bhsd(mq_out2.data(), 1, 16, 1, 24), mo));
    r.push_back(mq_out2);
    r.push_back(mq_w);
    attn::AttentionOptions so;
    so.mask = mo.mask;
    for (const auto& [lq, h, dk] :
         {std::array<std::size_t, 3>{3, 9, 40}, {4, 8, 40}, {3, 5, 128}}) {
      std::vector<float> sd_out(h * lq * 64);
      ok(attn::attention(ctx, attn::make_bhsd<const float>(mq_q.data(), 1, h, lq, dk),
                         attn::make_bhsd<const float>(mq_k.data(), 1, 1, mq_lk, dk),
                         attn::make_bhsd<const float>(sd_v.data(), 1, 1, mq_lk, 64),
                         attn::make_bhsd(sd_out.data(), 1, h, lq, 64), so));
      r.push_back(sd_out);
    }
    // Up to 4 rows per KV head stay one task (make_plan). Split, a task of one row would take
    // attention_pv_few's one-row kernel, which sums differently from its 2- to 4-row tiles: with
    // the split allowed, 4 heads (on 7 threads) and 3 heads (on 2 and more) changed bits.
    for (const auto& [lq, h] : {std::array<std::size_t, 2>{1, 4}, {2, 2}, {1, 3}}) {
      std::vector<float> few_out(h * lq * 64);
      ok(attn::attention(ctx, attn::make_bhsd<const float>(mq_q.data(), 1, h, lq, 128),
                         attn::make_bhsd<const float>(few_k.data(), 1, 1, few_lk, 128),
                         attn::make_bhsd<const float>(few_v.data(), 1, 1, few_lk, 64),
                         attn::make_bhsd(few_out.data(), 1, h, lq, 64), {}));
      r.push_back(few_out);
    }
    r.push_back(plain);
    attn::SelfAttentionParams p;
    p.q = {attn::make_matrix<const float>(wq.data(), dm, heads * dh), bq.data()};
    p.k = {attn::make_matrix<const float>(wk.data(), dm, 2 * dh), nullptr};
    p.v = {attn::make_matrix<const float>(wv.data(), dm, 2 * dh), nullptr};
    p.o = {attn::make_matrix<const float>(wo.data(), heads * dh, d_out), bo.data()};
    p.num_heads = heads;
    p.num_kv_heads = 2;
    p.attention.mask = attn::Mask::causal();
    std::vector<float> sa(batch * seq * d_out), sa_w(batch * heads * seq * seq);
    p.attention.weights = attn::make_bhsd(sa_w.data(), batch, heads, seq, seq);
    ok(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), batch * seq, dm), batch,
                            p, attn::make_matrix(sa.data(), batch * seq, d_out)));
    r.push_back(sa);
    r.push_back(sa_w);
    // The same layer packed (one GEMM for Q, K and V) on the Context's threads.
    attn::PackedSelfAttention layer;
    ok(attn::pack_self_attention(ctx, p, &layer));
    std::vector<float> sa_packed(sa.size());
    ok(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), batch * seq, dm), batch,
                            layer, p.attention,
                            attn::make_matrix(sa_packed.data(), batch * seq, d_out)));
    r.push_back(sa_packed);
    return r;
  }
};

const char* const kNames[] = {"matmul",
                              "matmul (3 rows)",
                              "matmul (7 rows of A^T, columns split)",
                              "exp",
                              "softmax",
                              "softmax in place",
                              "attention out",
                              "attention weights",
                              "MQA decoding, 5 heads",
                              "MQA decoding, 16 heads, window",
                              "MQA decoding, 16 heads, window: weights",
                              "MQA speculative decoding, 3 rows x 9 heads",
                              "MQA speculative decoding, 4 rows x 8 heads",
                              "MQA speculative decoding, 3 rows x 5 heads, Dk 128",
                              "MQA decoding, 4 heads",
                              "MQA speculative decoding, 2 rows x 2 heads",
                              "MQA decoding, 3 heads",
                              "attention without weights",
                              "self_attention out",
                              "self_attention weights",
                              "self_attention with a packed layer"};

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("every routine is bit-identical for 1, 2, 3 and 7 threads and repeated calls",
          "[determinism][threads]") {
  Problems problems;
  for (attn::Isa isa : attn_test::test_isas()) {
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2, 3, 7}) {
      attn::Context ctx = attn_test::make_context(isa, threads);
      for (int call = 0; call < 2; ++call) {
        const auto got = problems.run(ctx);
        if (first.empty()) {
          first = got;
          continue;
        }
        REQUIRE(got.size() == first.size());
        REQUIRE(got.size() == sizeof(kNames) / sizeof(kNames[0]));
        for (std::size_t i = 0; i < got.size(); ++i) {
          INFO("isa " << attn::isa_name(isa) << ", " << threads << " threads, call " << call << ": "
                      << kNames[i]);
          CHECK(same_bits(got[i], first[i]));
        }
      }
    }
  }
}

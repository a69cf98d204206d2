// The seed's example: "The bank approved the loan quickly", 6 tokens, d_model 64, d_k 16.
// Causal weights of "bank" are zero after position 1; bidirectional ones are not; every
// weights row sums to 1 (to within the accumulated rounding of 6 terms).
#include <catch2/catch.hpp>

#include "support/test_support.hpp"

TEST_CASE("the seed's example: bidirectional vs causal attention of \"bank\"", "[seed]") {
  const std::size_t n = 6, d_model = 64, d_k = 16;
  attn_test::Rng rng(42);
  auto x = rng.normal_vec(n * d_model);
  auto wq = rng.normal_vec(d_model * d_k), wk = rng.normal_vec(d_model * d_k),
       wv = rng.normal_vec(d_model * d_k);
  for (auto* w : {&wq, &wk, &wv}) {
    for (float& e : *w)
      e *= 0.1f;
  }
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    attn::SelfAttentionParams p;
    p.q.weight = attn::make_matrix<const float>(wq.data(), d_model, d_k);
    p.k.weight = attn::make_matrix<const float>(wk.data(), d_model, d_k);
    p.v.weight = attn::make_matrix<const float>(wv.data(), d_model, d_k);
    std::vector<float> out_b(n * d_k), out_c(n * d_k), wb(n * n), wc(n * n), ref(n * n);
    const auto xv = attn::make_matrix<const float>(x.data(), n, d_model);

    p.attention.weights = attn::make_bhsd(wb.data(), 1, 1, n, n);
    REQUIRE(attn::self_attention(ctx, xv, 1, p, attn::make_matrix(out_b.data(), n, d_k)).ok());
    p.attention.mask = attn::Mask::causal();
    p.attention.weights = attn::make_bhsd(wc.data(), 1, 1, n, n);
    REQUIRE(attn::self_attention(ctx, xv, 1, p, attn::make_matrix(out_c.data(), n, d_k)).ok());
    p.attention.weights = attn::make_bhsd(ref.data(), 1, 1, n, n);
    std::vector<float> out_r(n * d_k);
    REQUIRE(
        attn::reference::self_attention(xv, 1, p, attn::make_matrix(out_r.data(), n, d_k)).ok());

    const std::size_t bank = 1;
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(wb[bank * n + j] > 0.0f);                   // bidirectional: every key, "loan" too
      CHECK((wc[bank * n + j] > 0.0f) == (j <= bank));  // causal: only "The" and "bank"
    }
    for (std::size_t i = 0; i < n; ++i) {
      double sb = 0.0, sc = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        sb += wb[i * n + j];
        sc += wc[i * n + j];
        CHECK(wc[i * n + j] == Approx(ref[i * n + j]).margin(1e-6));
        if (j > i) CHECK(wc[i * n + j] == 0.0f);
      }
      CHECK(sb == Approx(1.0).margin(8 * 1.2e-7));
      CHECK(sc == Approx(1.0).margin(8 * 1.2e-7));
    }
    // The seed's additive form: an n x n -inf-above-the-diagonal matrix gives the same weights.
    std::vector<float> mask(n * n, 0.0f), wa(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j)
        mask[i * n + j] = -INFINITY;
    }
    p.attention.mask =
        attn::Mask().with_additive(attn::make_bhsd<const float>(mask.data(), 1, 1, n, n));
    p.attention.weights = attn::make_bhsd(wa.data(), 1, 1, n, n);
    REQUIRE(attn::self_attention(ctx, xv, 1, p, attn::make_matrix(out_r.data(), n, d_k)).ok());
    for (std::size_t i = 0; i < n * n; ++i)
      CHECK(wa[i] == Approx(wc[i]).margin(1e-6));
  }
}

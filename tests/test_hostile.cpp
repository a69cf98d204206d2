// Hostile inputs: each case pins the outcome README "Guarantees" documents. Where float
// arithmetic legitimately differs from the double reference (overflow), the float behaviour is
// pinned, not the reference.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "support/test_support.hpp"

using attn::MatrixView;
using attn::Status;
using attn::StatusCode;
using attn::TensorView;
using attn::Transpose;
using attn_test::inf_f;
using attn_test::nan_f;

namespace {

constexpr float kSentinel = 12345.0f;

bool all_equal(const std::vector<float>& v, float x) {
  for (float e : v)
    if (!(e == x)) return false;
  return true;
}

}  // namespace

TEST_CASE("empty views are valid whatever their strides: Lq == 0 through BSHD views",
          "[hostile][attention]") {
  // make_bshd with seq == 0 gives strides[0] == 0: no element exists, so nothing can alias.
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> k(2 * 3 * 4, 0.5f), v(2 * 3 * 4, 0.5f);
    const auto tq = attn::make_bshd<const float>(nullptr, 2, 0, 1, 4);
    const auto tk = attn::make_bshd<const float>(k.data(), 2, 3, 1, 4);
    const auto tv = attn::make_bshd<const float>(v.data(), 2, 3, 1, 4);
    const auto to = attn::make_bshd<float>(nullptr, 2, 0, 1, 4);
    REQUIRE(to.strides[0] == 0);
    const Status s = attn::attention(ctx, tq, tk, tv, to, {});
    INFO(s.message());
    CHECK(s.ok());
    CHECK(attn::reference::attention(tq, tk, tv, to, {}).ok());
  }
}

TEST_CASE("self_attention with seq == 0 and batch > 1 is valid, as in the reference",
          "[hostile][self_attention]") {
  attn::Context ctx;
  std::vector<float> w(4 * 2, 0.5f);
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = attn::make_matrix<const float>(w.data(), 4, 2);
  const MatrixView<const float> x{nullptr, 0, 4, 4};
  const MatrixView<float> out{nullptr, 0, 2, 2};
  CHECK(attn::self_attention(ctx, x, 2, p, out).ok());
  const Status r = attn::reference::self_attention(x, 2, p, out);
  INFO(r.message());
  CHECK(r.ok());
}

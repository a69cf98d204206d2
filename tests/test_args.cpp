// Bad arguments: every public entry point answers invalid_argument with a message naming the
// argument and its values, and writes nothing.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "support/test_support.hpp"

using attn::MatrixView;
using attn::Status;
using attn::StatusCode;
using attn::TensorView;
using attn::Transpose;

namespace {

constexpr float kSentinel = 12345.0f;

bool untouched(const std::vector<float>& v) {
  for (float x : v) {
    if (x != kSentinel) return false;
  }
  return true;
}

void check_error(const Status& s, std::initializer_list<const char*> words) {
  INFO("message: " << s.message());
  CHECK(s.code() == StatusCode::invalid_argument);
  for (const char* w : words)
    CHECK(std::string(s.message()).find(w) != std::string::npos);
}

// A valid attention problem whose pieces the cases below break one at a time.
struct Problem {
  std::size_t B = 2, Hq = 4, Hkv = 2, Lq = 3, Lk = 5, Dk = 4, Dv = 6;
  std::vector<float> q, k, v, out, w;
  Problem() {
    attn_test::Rng rng(1);
    q = rng.uniform_vec(B * Hq * Lq * Dk);
    k = rng.uniform_vec(B * Hkv * Lk * Dk);
    v = rng.uniform_vec(B * Hkv * Lk * Dv);
    out.assign(B * Hq * Lq * Dv, kSentinel);
    w.assign(B * Hq * Lq * Lk, kSentinel);
  }
  TensorView<const float> tq() const {
    return attn::make_bhsd<const float>(q.data(), B, Hq, Lq, Dk);
  }
  TensorView<const float> tk() const {
    return attn::make_bhsd<const float>(k.data(), B, Hkv, Lk, Dk);
  }
  TensorView<const float> tv() const {
    return attn::make_bhsd<const float>(v.data(), B, Hkv, Lk, Dv);
  }
  TensorView<float> tout() { return attn::make_bhsd(out.data(), B, Hq, Lq, Dv); }
  attn::AttentionOptions with_weights() {
    attn::AttentionOptions o;
    o.weights = attn::make_bhsd(w.data(), B, Hq, Lq, Lk);
    return o;
  }
  Status run(attn::Context& ctx, const attn::AttentionOptions& o) {
    return attn::attention(ctx, tq(), tk(), tv(), tout(), o);
  }
  bool clean() const { return untouched(out) && untouched(w); }
};

}  // namespace

TEST_CASE("matmul rejects bad arguments and writes nothing", "[args][matmul]") {
  attn::Context ctx;
  std::vector<float> a(6 * 4, 1.0f), b(4 * 5, 1.0f), c(6 * 5, kSentinel);
  const MatrixView<const float> av{a.data(), 6, 4, 4}, bv{b.data(), 4, 5, 5};
  const MatrixView<float> cv{c.data(), 6, 5, 5};
  REQUIRE(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no,
                       MatrixView<float>{nullptr, 0, 5, 5}, 1, 0)
              .code() == StatusCode::invalid_argument);  // c has 0 rows but op(a) has 6

  SECTION("null data with a non-zero size") {
    check_error(attn::matmul(ctx, {nullptr, 6, 4, 4}, Transpose::no, bv, Transpose::no, cv),
                {"a.data is null", "6 x 4"});
    check_error(attn::matmul(ctx, av, Transpose::no, {nullptr, 4, 5, 5}, Transpose::no, cv),
                {"b.data is null", "4 x 5"});
    check_error(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {nullptr, 6, 5, 5}),
                {"c.data is null", "6 x 5"});
  }
  SECTION("a view whose addresses wrap around") {
    // 6 rows of 4 floats from 64 bytes below the top of the address space (never dereferenced).
    const auto top = reinterpret_cast<const float*>(UINTPTR_MAX - 63);
    check_error(attn::matmul(ctx, {top, 6, 4, 4}, Transpose::no, bv, Transpose::no, cv),
                {"a wraps around the address space"});
  }
  SECTION("stride < cols") {
    check_error(attn::matmul(ctx, {a.data(), 6, 4, 3}, Transpose::no, bv, Transpose::no, cv),
                {"a.stride (3)", "a.cols (4)"});
    check_error(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {c.data(), 6, 5, 4}),
                {"c.stride (4)"});
  }
  SECTION("inner dimensions that do not match") {
    check_error(attn::matmul(ctx, av, Transpose::yes, bv, Transpose::no, cv),
                {"inner dimensions", "4 x 6", "4 x 5"});
  }
  SECTION("inner dimensions that do not match, each transposition named") {
    // op(a) and op(b) as the product sees them: a^T of a 6 x 4 view is 4 x 6.
    check_error(attn::matmul(ctx, av, Transpose::no, {b.data(), 3, 5, 5}, Transpose::no, cv),
                {"matmul: inner dimensions differ: a is 6 x 4 but b is 3 x 5"});
    check_error(attn::matmul(ctx, av, Transpose::yes, bv, Transpose::no, cv),
                {"matmul: inner dimensions differ: a^T is 4 x 6 but b is 4 x 5"});
    check_error(attn::matmul(ctx, av, Transpose::no, bv, Transpose::yes, cv),
                {"matmul: inner dimensions differ: a is 6 x 4 but b^T is 5 x 4"});
    check_error(attn::matmul(ctx, av, Transpose::yes, bv, Transpose::yes, cv),
                {"matmul: inner dimensions differ: a^T is 4 x 6 but b^T is 5 x 4"});
  }
  SECTION("c of the wrong shape") {
    check_error(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {c.data(), 5, 5, 5}),
                {"c is 5 x 5", "6 x 5"});
  }
  SECTION("c of the wrong shape, each transposition named") {
    // a_t^T and b_t^T are av and bv as products see them: 6 x 4 and 4 x 5.
    const MatrixView<const float> a_t{a.data(), 4, 6, 6}, b_t{b.data(), 5, 4, 4};
    check_error(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {c.data(), 6, 4, 4}),
                {"matmul: c is 6 x 4 but the product a b is 6 x 5"});
    check_error(attn::matmul(ctx, a_t, Transpose::yes, bv, Transpose::no, {c.data(), 6, 4, 4}),
                {"matmul: c is 6 x 4 but the product a^T b is 6 x 5"});
    check_error(attn::matmul(ctx, av, Transpose::no, b_t, Transpose::yes, {c.data(), 5, 5, 5}),
                {"matmul: c is 5 x 5 but the product a b^T is 6 x 5"});
    check_error(attn::matmul(ctx, a_t, Transpose::yes, b_t, Transpose::yes, {c.data(), 5, 6, 6}),
                {"matmul: c is 5 x 6 but the product a^T b^T is 6 x 5"});
    // The same views with the right c are valid (the shapes above are the only fault).
    CHECK(attn::matmul(ctx, a_t, Transpose::yes, b_t, Transpose::yes, cv, 1, 0).ok());
    c.assign(c.size(), kSentinel);
  }
  SECTION("c overlapping an input") {
    std::vector<float> big(100, kSentinel);
    check_error(attn::matmul(ctx, {big.data(), 6, 4, 4}, Transpose::no, bv, Transpose::no,
                             {big.data() + 10, 6, 5, 5}),
                {"c overlaps a"});
    for (std::size_t i = 24; i < big.size(); ++i)
      CHECK(big[i] == kSentinel);
  }
  SECTION("sizes whose byte count overflows size_t") {
    const std::size_t huge = std::size_t{1} << 62;
    check_error(attn::matmul(ctx, {a.data(), 2, huge, huge}, Transpose::no, {b.data(), huge, 1, 1},
                             Transpose::no, {c.data(), 2, 1, 1}),
                {"a spans more bytes", "9223372036854775808 elements of 4 bytes"});
  }
  CHECK(untouched(c));
}

// validate_packed_matmul: op(a) against the packed b (k x n) and c against op(a) times it, with
// and without a transposed a; the message names a or a^T as the product sees it.
TEST_CASE("matmul with a PackedMatrix rejects shapes that do not match and writes nothing",
          "[args][matmul]") {
  attn::Context ctx;
  std::vector<float> a(6 * 4, 1.0f), b(4 * 5, 1.0f), c(6 * 5, kSentinel);
  attn::PackedMatrix packed;
  REQUIRE(attn::pack_matrix(ctx, {b.data(), 4, 5, 5}, Transpose::no, &packed).ok());  // 4 x 5
  const MatrixView<const float> av{a.data(), 6, 4, 4}, a_t{a.data(), 4, 6, 6};
  const MatrixView<float> cv{c.data(), 6, 5, 5};
  check_error(attn::matmul(ctx, {a.data(), 6, 3, 3}, Transpose::no, packed, cv),
              {"matmul: inner dimensions differ: a is 6 x 3 but the packed b is 4 x 5"});
  check_error(attn::matmul(ctx, av, Transpose::yes, packed, cv),
              {"matmul: inner dimensions differ: a^T is 4 x 6 but the packed b is 4 x 5"});
  check_error(attn::matmul(ctx, av, Transpose::no, packed, {c.data(), 5, 5, 5}),
              {"matmul: c is 5 x 5 but the product a times the packed b is 6 x 5"});
  check_error(attn::matmul(ctx, a_t, Transpose::yes, packed, {c.data(), 6, 4, 4}),
              {"matmul: c is 6 x 4 but the product a^T times the packed b is 6 x 5"});
  CHECK(untouched(c));
  CHECK(attn::matmul(ctx, a_t, Transpose::yes, packed, cv).ok());
}

TEST_CASE("exp and softmax reject bad arguments and write nothing", "[args][vmath]") {
  attn::Context ctx;
  std::vector<float> x(16, 1.0f), y(16, kSentinel);
  check_error(attn::exp(ctx, nullptr, y.data(), 3), {"x is null", "n = 3"});
  check_error(attn::exp(ctx, x.data(), nullptr, 3), {"y is null"});
  check_error(attn::exp(ctx, x.data(), x.data() + 1, 3), {"y overlaps x"});
  check_error(attn::exp(ctx, x.data(), y.data(), std::size_t{1} << 62), {"spans more bytes"});
  CHECK(attn::exp(ctx, nullptr, nullptr, 0).ok());
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 4}, {y.data(), 2, 3, 4}),
              {"x is 2 x 4", "y is 2 x 3"});
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 4}, {y.data(), 3, 4, 4}),
              {"softmax: x is 2 x 4 but y is 3 x 4"});
  // y's 32 bytes start 8 into x's: 24 in common.
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 4}, {x.data() + 2, 2, 4, 4}),
              {"softmax: y overlaps x: their address ranges [0x", ") share 24 bytes"});
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 2}, {y.data(), 2, 4, 4}), {"x.stride (2)"});
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 4}, {x.data(), 2, 4, 5}), {"y overlaps x"});
  CHECK(untouched(y));
  CHECK(attn::softmax(ctx, {x.data(), 2, 4, 4}, {x.data(), 2, 4, 4}).ok());  // exact alias
}

// README "Errors", softmax: y may overlap x only with the same data and stride, or with the same
// data and one row (a single row's stride is never used). The same data with other strides and
// several rows is refused as an overlap, whatever y's stride.
TEST_CASE("softmax in place: one row ignores the strides, several rows need the same stride",
          "[args][vmath]") {
  attn::Context ctx;
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 9.0f, 9.0f, 9.0f, 9.0f, 9.0f, 9.0f};
  std::vector<float> want(4, kSentinel);
  REQUIRE(attn::softmax(ctx, {x.data(), 1, 4, 4}, {want.data(), 1, 4, 4}).ok());
  std::vector<float> io = x;
  CHECK(attn::softmax(ctx, {io.data(), 1, 4, 4}, {io.data(), 1, 4, 8}).ok());
  CHECK(std::vector<float>(io.begin(), io.begin() + 4) == want);
  io = x;
  CHECK(attn::reference::softmax({io.data(), 1, 4, 8}, {io.data(), 1, 4, 4}).ok());
  for (int j = 0; j < 4; ++j)
    CHECK(io[j] == Approx(want[j]));
  io = x;
  check_error(attn::softmax(ctx, {io.data(), 2, 4, 4}, {io.data(), 2, 4, 5}), {"y overlaps x"});
  check_error(attn::softmax(ctx, {io.data(), 2, 4, 5}, {io.data(), 2, 4, 4}),
              {"softmax: y overlaps x"});
  check_error(attn::reference::softmax({io.data(), 2, 4, 4}, {io.data(), 2, 4, 5}),
              {"reference::softmax: y overlaps x"});
  CHECK(io == x);
}

namespace {
// p moved one byte on: no longer aligned to its elements (never dereferenced by a correct check).
template <class T>
T* misaligned(T* p) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T*>(reinterpret_cast<Byte*>(p) + 1);
}
}  // namespace

TEST_CASE("data not aligned to its elements is rejected, empty views and bytes need none",
          "[args]") {
  // Every kernel would read such floats through misaligned accesses (undefined behaviour).
  attn::Context ctx;
  std::vector<float> a(6 * 4 + 1, 1.0f), b(4 * 5 + 1, 1.0f), c(6 * 5 + 1, kSentinel);
  const MatrixView<const float> av{a.data(), 6, 4, 4}, bv{b.data(), 4, 5, 5};
  const MatrixView<float> cv{c.data(), 6, 5, 5};
  check_error(
      attn::matmul(ctx, {misaligned(a.data()), 6, 4, 4}, Transpose::no, bv, Transpose::no, cv),
      {"matmul: a's data", "not aligned to its 4-byte elements"});
  check_error(
      attn::matmul(ctx, av, Transpose::no, {misaligned(b.data()), 4, 5, 5}, Transpose::no, cv),
      {"b's data"});
  check_error(
      attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {misaligned(c.data()), 6, 5, 5}),
      {"c's data"});
  attn::PackedMatrix packed;
  check_error(attn::pack_matrix(ctx, {misaligned(b.data()), 4, 5, 5}, Transpose::no, &packed),
              {"b's data"});
  CHECK(packed.empty());
  CHECK(untouched(c));
  // An empty view is never read: any pointer will do.
  CHECK(attn::matmul(ctx, {misaligned(a.data()), 6, 0, 0}, Transpose::no,
                     {misaligned(b.data()), 0, 5, 5}, Transpose::no, cv)
            .ok());

  std::vector<float> x(17, 1.0f), y(17, kSentinel);
  check_error(attn::exp(ctx, misaligned(x.data()), y.data(), 3), {"exp: x's data"});
  check_error(attn::exp(ctx, x.data(), misaligned(y.data()), 3), {"exp: y's data"});
  CHECK(attn::exp(ctx, misaligned(x.data()), misaligned(y.data()), 0).ok());
  check_error(attn::softmax(ctx, {misaligned(x.data()), 2, 4, 4}, {y.data(), 2, 4, 4}),
              {"softmax: x's data"});
  check_error(attn::softmax(ctx, {x.data(), 2, 4, 4}, {misaligned(y.data()), 2, 4, 4}),
              {"softmax: y's data"});
  CHECK(untouched(y));

  Problem p;
  const auto run_with = [&](TensorView<const float> q, TensorView<const float> k,
                            TensorView<const float> v, TensorView<float> out,
                            const attn::AttentionOptions& o) {
    return attn::attention(ctx, q, k, v, out, o);
  };
  auto q = p.tq(), k = p.tk(), v = p.tv();
  auto out = p.tout();
  q.data = misaligned(q.data);
  k.data = misaligned(k.data);
  v.data = misaligned(v.data);
  out.data = misaligned(out.data);
  check_error(run_with(q, p.tk(), p.tv(), p.tout(), p.with_weights()), {"attention: q's data"});
  check_error(run_with(p.tq(), k, p.tv(), p.tout(), p.with_weights()), {"k's data"});
  check_error(run_with(p.tq(), p.tk(), v, p.tout(), p.with_weights()), {"v's data"});
  check_error(run_with(p.tq(), p.tk(), p.tv(), out, p.with_weights()), {"out's data"});
  auto o = p.with_weights();
  o.weights.data = misaligned(o.weights.data);
  check_error(p.run(ctx, o), {"options.weights's data"});
  std::vector<float> bias(p.Lq * p.Lk + 1, 0.0f);
  o = p.with_weights();
  o.mask = attn::Mask().with_additive(
      attn::make_bhsd<const float>(misaligned(bias.data()), 1, 1, p.Lq, p.Lk));
  check_error(p.run(ctx, o), {"options.mask.additive's data", "4-byte"});
  std::vector<std::int32_t> lengths(p.B + 1, 2);
  o = p.with_weights();
  o.mask = attn::Mask().with_key_lengths(misaligned(lengths.data()));
  check_error(p.run(ctx, o), {"options.mask.key_lengths's data"});
  CHECK(p.clean());
  // Booleans are bytes: an odd address is theirs to have.
  std::vector<std::uint8_t> allowed(p.Lq * p.Lk + 1, 1);
  o = p.with_weights();
  o.mask = attn::Mask().with_allowed(
      attn::make_bhsd<const std::uint8_t>(allowed.data() + 1, 1, 1, p.Lq, p.Lk));
  CHECK(p.run(ctx, o).ok());

  const std::size_t batch = 2, seq = 3, dm = 8, heads = 2, dk = 4;
  attn_test::Rng rng(3);
  auto xs = rng.uniform_vec(batch * seq * dm + 1);
  auto w = rng.uniform_vec(dm * heads * dk + 1);
  std::vector<float> sa_out(batch * seq * heads * dk + 1, kSentinel);
  attn::SelfAttentionParams sp;
  sp.q.weight = sp.k.weight = sp.v.weight =
      attn::make_matrix<const float>(w.data(), dm, heads * dk);
  sp.num_heads = heads;
  const auto xv = attn::make_matrix<const float>(xs.data(), batch * seq, dm);
  const auto ov = attn::make_matrix(sa_out.data(), batch * seq, heads * dk);
  check_error(
      attn::self_attention(ctx, {misaligned(xs.data()), batch * seq, dm, dm}, batch, sp, ov),
      {"self_attention: x's data"});
  check_error(
      attn::self_attention(ctx, xv, batch, sp,
                           {misaligned(sa_out.data()), batch * seq, heads * dk, heads * dk}),
      {"out's data"});
  auto bad = sp;
  bad.k.weight.data = misaligned(w.data());
  check_error(attn::self_attention(ctx, xv, batch, bad, ov), {"params.k.weight's data"});
  bad = sp;
  bad.v.bias = misaligned(w.data());
  check_error(attn::self_attention(ctx, xv, batch, bad, ov), {"params.v.bias's data"});
  attn::PackedSelfAttention layer;
  check_error(attn::pack_self_attention(ctx, bad, &layer), {"params.v.bias's data"});
  CHECK(untouched(sa_out));
}

// reference::exp validates its arguments exactly as attn::exp (include/attn/reference.hpp;
// src/core/args.cpp validate_exp): null x or y with n > 0, data not aligned to a float, a byte
// count beyond ptrdiff_t, addresses that wrap, and y overlapping x other than y == x are
// invalid_argument with a message naming the routine and the argument, and nothing is written.
TEST_CASE("reference::exp rejects bad arguments as exp does and writes nothing",
          "[args][vmath][reference]") {
  std::vector<float> x(17, 1.0f), y(17, kSentinel);
  check_error(attn::reference::exp(nullptr, y.data(), 3), {"reference::exp: x is null", "n = 3"});
  check_error(attn::reference::exp(x.data(), nullptr, 3), {"reference::exp: y is null", "n = 3"});
  check_error(attn::reference::exp(nullptr, nullptr, 1), {"reference::exp: x is null"});
  check_error(attn::reference::exp(y.data(), y.data() + 1, 3), {"reference::exp: y overlaps x"});
  // x's 12 bytes start 8 into y's: 4 in common.
  check_error(attn::reference::exp(y.data() + 2, y.data(), 3),
              {"reference::exp: y overlaps x: their address ranges [0x", ") share 4 bytes"});
  check_error(attn::reference::exp(misaligned(x.data()), y.data(), 3),
              {"reference::exp: x's data", "not aligned to its 4-byte elements"});
  check_error(attn::reference::exp(x.data(), misaligned(y.data()), 3),
              {"reference::exp: y's data", "not aligned"});
  check_error(attn::reference::exp(x.data(), y.data(), std::size_t{1} << 62),
              {"reference::exp: x spans more bytes", "4611686018427387904 elements of 4 bytes"});
  check_error(attn::reference::exp(x.data(), y.data(), (std::size_t{1} << 61) + 1),
              {"reference::exp: x spans more bytes"});
  // 32 floats from 64 bytes below the top of the address space (never dereferenced).
  const auto top = reinterpret_cast<float*>(UINTPTR_MAX - 63);
  check_error(attn::reference::exp(top, y.data(), 32),
              {"reference::exp: x wraps around the address space"});
  check_error(attn::reference::exp(x.data(), top, 32),
              {"reference::exp: y wraps around the address space"});
  CHECK(untouched(y));
  // Valid: n == 0 with any pointers, and y == x exactly.
  CHECK(attn::reference::exp(nullptr, nullptr, 0).ok());
  CHECK(attn::reference::exp(misaligned(x.data()), nullptr, 0).ok());
  CHECK(attn::reference::exp(x.data(), x.data(), 3).ok());
}

TEST_CASE("attention rejects bad arguments and writes nothing", "[args][attention]") {
  attn::Context ctx;
  Problem p;
  REQUIRE(p.run(ctx, p.with_weights()).ok());
  p.out.assign(p.out.size(), kSentinel);
  p.w.assign(p.w.size(), kSentinel);

  SECTION("null data with a non-zero size") {
    auto q = p.tq();
    q.data = nullptr;
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), p.with_weights()),
                {"q.data is null", "[2, 4, 3, 4]"});
  }
  SECTION("last stride not 1") {
    auto k = p.tk();
    k.strides[3] = 2;
    check_error(attn::attention(ctx, p.tq(), k, p.tv(), p.tout(), p.with_weights()),
                {"k.strides[3] is 2"});
    auto q = p.tq(), v = p.tv();
    auto out = p.tout();
    q.strides[3] = v.strides[3] = out.strides[3] = 0;
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), p.with_weights()),
                {"q.strides[3] is 0"});
    check_error(attn::attention(ctx, p.tq(), p.tk(), v, p.tout(), p.with_weights()),
                {"v.strides[3] is 0"});
    check_error(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, p.with_weights()),
                {"out.strides[3] is 0"});
    auto o = p.with_weights();
    o.weights.strides[3] = 2;
    check_error(p.run(ctx, o), {"options.weights.strides[3] is 2"});
    std::vector<float> bias(p.Lq * p.Lk);
    auto additive = attn::make_bhsd<const float>(bias.data(), 1, 1, p.Lq, p.Lk);
    additive.strides[3] = -1;
    o = p.with_weights();
    o.mask = attn::Mask().with_additive(additive);
    check_error(p.run(ctx, o), {"options.mask.additive.strides[3] is -1"});
  }
  SECTION("shapes that do not match") {
    auto v = p.tv();
    v.shape[2] = 4;
    check_error(attn::attention(ctx, p.tq(), p.tk(), v, p.tout(), p.with_weights()),
                {"v has shape [2, 2, 4, 6]"});
    // Each of v's batch, heads and keys against k's, alone.
    const std::pair<int, const char*> dims[] = {
        {0, "attention: v has shape [1, 2, 5, 6]; expected [2, 2, 5, 6]"},
        {1, "attention: v has shape [2, 1, 5, 6]; expected [2, 2, 5, 6]"},
        {2, "attention: v has shape [2, 2, 4, 6]; expected [2, 2, 5, 6]"}};
    for (const auto& [dim, message] : dims) {
      v = p.tv();
      v.shape[dim] -= 1;
      check_error(attn::attention(ctx, p.tq(), p.tk(), v, p.tout(), p.with_weights()), {message});
    }
    auto out = p.tout();
    out.shape[3] = 5;
    check_error(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, p.with_weights()),
                {"out has shape", "expected [2, 4, 3, 6]"});
    auto k = p.tk();
    k.shape[3] = 3;
    check_error(attn::attention(ctx, p.tq(), k, p.tv(), p.tout(), p.with_weights()),
                {"k has shape"});
  }
  SECTION("Hq % Hkv != 0") {
    p.Hkv = 3;
    p.k.resize(p.B * 3 * p.Lk * p.Dk);
    p.v.resize(p.B * 3 * p.Lk * p.Dv);
    check_error(p.run(ctx, p.with_weights()), {"4 heads", "3 heads"});
  }
  SECTION("key lengths out of range") {
    const std::int32_t lens[2] = {5, 6};
    auto o = p.with_weights();
    o.mask = attn::Mask::bidirectional().with_key_lengths(lens);
    check_error(p.run(ctx, o), {"mask.key_lengths[1] is 6", "Lk = 5"});
    const std::int32_t neg[2] = {-1, 2};
    o.mask = attn::Mask::causal().with_key_lengths(neg);
    check_error(p.run(ctx, o), {"mask.key_lengths[0] is -1"});
  }
  SECTION("an alignment that is neither top_left nor bottom_right") {
    auto o = p.with_weights();
    o.mask = attn::Mask::causal(static_cast<attn::CausalAlign>(7));
    check_error(p.run(ctx, o), {"options.mask.causal_align is 7"});
    o.mask = attn::Mask().with_window(1, 1, static_cast<attn::CausalAlign>(-1));
    check_error(p.run(ctx, o), {"options.mask.window_align is -1"});
    o.mask = attn::Mask().with_window(1, 1, static_cast<attn::CausalAlign>(2));
    check_error(attn::reference::attention(p.tq(), p.tk(), p.tv(), p.tout(), o),
                {"reference::attention: options.mask.window_align is 2"});
  }
  SECTION("a mask whose shape cannot broadcast") {
    std::vector<float> bias(3 * 3 * 6);
    auto o = p.with_weights();
    o.mask = attn::Mask().with_additive(attn::make_bhsd<const float>(bias.data(), 1, 3, 3, 5));
    check_error(p.run(ctx, o), {"mask.additive has shape [1, 3, 3, 5]", "heads"});
    o.mask = attn::Mask().with_additive(attn::make_bhsd<const float>(bias.data(), 3, 1, 3, 5));
    check_error(p.run(ctx, o), {"mask.additive has shape [3, 1, 3, 5]", "batch"});
    o.mask = attn::Mask().with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, 3, 6));
    check_error(p.run(ctx, o), {"mask.additive has shape [1, 1, 3, 6]", "Lk"});
    std::vector<std::uint8_t> allowed(2 * 5);
    o.mask =
        attn::Mask().with_allowed(attn::make_bhsd<const std::uint8_t>(allowed.data(), 1, 1, 2, 5));
    check_error(p.run(ctx, o), {"mask.allowed has shape [1, 1, 2, 5]", "Lq"});
  }
  SECTION("weights of the wrong shape") {
    auto o = p.with_weights();
    o.weights.shape[3] = 4;
    check_error(p.run(ctx, o), {"options.weights has shape"});
  }
  SECTION("a non-finite scale") {
    auto o = p.with_weights();
    o.scale = attn_test::nan_f();
    check_error(p.run(ctx, o), {"options.scale is nan"});
    o.scale = -attn_test::inf_f();
    check_error(p.run(ctx, o), {"options.scale is -inf"});
  }
  SECTION("weights overlapping an input") {
    auto o = p.with_weights();
    o.weights = attn::make_bhsd(const_cast<float*>(p.k.data()), 1, 1, 1, p.Lk);
    o.weights.shape = {p.B, p.Hq, p.Lq, p.Lk};
    o.weights.strides = {0, 0, 0, 1};
    check_error(p.run(ctx, o), {"alias"});
    std::vector<float> kw(p.k.size() + p.w.size(), kSentinel);
    std::copy(p.k.begin(), p.k.end(), kw.begin());
    const auto k = attn::make_bhsd<const float>(kw.data(), p.B, p.Hkv, p.Lk, p.Dk);
    o.weights = attn::make_bhsd(kw.data() + 4, p.B, p.Hq, p.Lq, p.Lk);
    check_error(attn::attention(ctx, p.tq(), k, p.tv(), p.tout(), o),
                {"options.weights overlaps k"});
    for (std::size_t i = p.k.size(); i < kw.size(); ++i)
      CHECK(kw[i] == kSentinel);
  }
  SECTION("output overlapping an input") {
    std::vector<float> qq = p.q;
    qq.resize(p.out.size() + p.q.size(), kSentinel);
    const auto q = attn::make_bhsd<const float>(qq.data(), p.B, p.Hq, p.Lq, p.Dk);
    const auto out = attn::make_bhsd(qq.data() + 8, p.B, p.Hq, p.Lq, p.Dv);
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), out, {}), {"out overlaps q"});
    for (std::size_t i = p.q.size(); i < qq.size(); ++i)
      CHECK(qq[i] == kSentinel);
    auto o = p.with_weights();
    o.weights = attn::make_bhsd(p.out.data(), p.B, p.Hq, p.Lq, 1);
    o.weights.shape[3] = p.Lk;
    o.weights.strides = {static_cast<std::ptrdiff_t>(p.Hq * p.Lq * p.Dv),
                         static_cast<std::ptrdiff_t>(p.Lq * p.Dv),
                         static_cast<std::ptrdiff_t>(p.Dv), 1};
    check_error(p.run(ctx, o), {"options.weights overlaps out"});
  }
  SECTION("an output whose elements alias one another") {
    auto out = p.tout();
    out.strides[2] = 1;
    check_error(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, {}), {"alias"});
  }
  SECTION("sizes whose byte count overflows size_t") {
    auto q = p.tq();
    q.shape = {2, std::size_t{1} << 62, 3, 4};
    q.strides = {0, std::ptrdiff_t{1} << 61, 4, 1};
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}), {"q spans more bytes"});
  }
  SECTION("a boolean mask view that is not well formed") {
    std::vector<std::uint8_t> allowed(p.Lq * p.Lk * 2, 1);
    auto view = attn::make_bhsd<const std::uint8_t>(allowed.data(), 1, 1, p.Lq, p.Lk);
    auto o = p.with_weights();
    view.strides[3] = 2;
    o.mask = attn::Mask().with_allowed(view);
    check_error(p.run(ctx, o), {"attention: options.mask.allowed.strides[3] is 2",
                                "last dimension (5 elements) must be contiguous"});
    check_error(attn::reference::attention(p.tq(), p.tk(), p.tv(), p.tout(), o),
                {"reference::attention: options.mask.allowed.strides[3] is 2"});
    // Rows PTRDIFF_MAX bytes apart: beyond ptrdiff_t.
    view = attn::make_bhsd<const std::uint8_t>(allowed.data(), 1, 1, p.Lq, p.Lk);
    view.strides[2] = PTRDIFF_MAX;
    o.mask = attn::Mask().with_allowed(view);
    check_error(p.run(ctx, o),
                {"attention: options.mask.allowed spans more bytes than fit in ptrdiff_t",
                 "(shape [1, 1, 3, 5], strides [15, 15, 9223372036854775807, 1])"});
    // 15 bytes from 8 below the top of the address space (never dereferenced).
    view = attn::make_bhsd<const std::uint8_t>(
        reinterpret_cast<const std::uint8_t*>(UINTPTR_MAX - 7), 1, 1, p.Lq, p.Lk);
    o.mask = attn::Mask().with_allowed(view);
    check_error(p.run(ctx, o), {"attention: options.mask.allowed wraps around the address space"});
  }
  SECTION("a view whose negative strides reach below address 0 or whose end wraps") {
    // Aligned fake addresses, never dereferenced: q reaches 2048 floats (8192 bytes) below its
    // data at 0x1000, so its lowest byte would lie below address 0.
    auto q = p.tq();
    q.data = reinterpret_cast<const float*>(std::uintptr_t{0x1000});
    q.strides = {-2048, 12, 4, 1};
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q wraps around the address space", "from byte offset -8192)"});
    check_error(attn::reference::attention(q, p.tk(), p.tv(), p.tout(), {}),
                {"reference::attention: q wraps around the address space"});
    // Backwards by 48 floats but forwards by 3 x 2048: from 4096 bytes below the top, the end
    // wraps past it.
    q.data = reinterpret_cast<const float*>(UINTPTR_MAX - 4095);
    q.strides = {-48, 2048, 4, 1};
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q wraps around the address space", "from byte offset -192)"});
    // The same view backwards from a real address that holds it reaches no further than it may:
    // valid (batch 1 backwards from q's second batch).
    q = p.tq();
    q.data += p.Hq * p.Lq * p.Dk;
    q.strides[0] = -q.strides[0];
    CHECK(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}).ok());
    p.out.assign(p.out.size(), kSentinel);
  }
  SECTION("a view whose span overflows size_t, or reaches PTRDIFF_MAX elements") {
    auto q = p.tq();
    // (3 - 1) x 2^62 twice: each part fits size_t, their sum (2^64) does not.
    q.shape = {3, 3, 3, 4};
    q.strides = {std::ptrdiff_t{1} << 62, std::ptrdiff_t{1} << 62, 4, 1};
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes than fit in ptrdiff_t (shape [3, 3, 3, 4], "
                 "strides [4611686018427387904, 4611686018427387904, 4, 1])"});
    // (2^62 - 1) x 2^61 backwards: the product overflows.
    q.shape = {2, std::size_t{1} << 62, 3, 4};
    q.strides = {0, -(std::ptrdiff_t{1} << 61), 4, 1};
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes", "strides [0, -2305843009213693952, 4, 1]"});
    // The last element PTRDIFF_MAX elements on (47 from the inner dimensions): refused on the span.
    q = p.tq();
    q.strides[0] = PTRDIFF_MAX - 47;
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes than fit in ptrdiff_t (shape [2, 4, 3, 4], "
                 "strides [9223372036854775760, 12, 4, 1])"});
    // One element less: the span fits, its PTRDIFF_MAX elements of 4 bytes do not.
    q.strides[0] = PTRDIFF_MAX - 48;
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes than fit in ptrdiff_t (9223372036854775807 "
                 "elements of 4 bytes)"});
  }
  SECTION("a broadcast view whose logical size overflows or exceeds PTRDIFF_MAX bytes") {
    // Stride 0 everywhere: one float reached, but shape[0] x ... x shape[3] elements held.
    auto q = p.tq();
    q.strides = {0, 0, 0, 1};
    q.shape = {std::size_t{1} << 32, std::size_t{1} << 32, 2, 1};  // 2^65 elements
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes than fit in ptrdiff_t (shape [4294967296, "
                 "4294967296, 2, 1], strides [0, 0, 0, 1])"});
    q.shape = {std::size_t{1} << 31, std::size_t{1} << 31, 1, 1};  // 2^62 elements, 2^64 bytes
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes", "shape [2147483648, 2147483648, 1, 1]"});
    q.shape = {std::size_t{1} << 30, std::size_t{1} << 31, 1, 1};  // 2^61 elements, 2^63 bytes
    check_error(attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {}),
                {"attention: q spans more bytes", "shape [1073741824, 2147483648, 1, 1]"});
  }
  CHECK(p.clean());
}

TEST_CASE("a last dimension of one element, or an empty view, ignores the last stride",
          "[args][attention]") {
  // README "Overlap": a dimension of size 1 ignores its stride, whatever it is; the last one too.
  // Dk = 1 (q and k rows of one element), Lk = 1 for the additive mask and the weights: the same
  // bits as with strides[3] = 1, on every ISA.
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    Problem p;
    p.Dk = 1;
    p.q.resize(p.B * p.Hq * p.Lq);
    p.k.resize(p.B * p.Hkv * p.Lk);
    REQUIRE(p.run(ctx, {}).ok());
    const std::vector<float> want = p.out;
    auto q = p.tq(), k = p.tk();
    q.strides[3] = 0;
    k.strides[3] = -7;
    p.out.assign(p.out.size(), kSentinel);
    REQUIRE(attn::attention(ctx, q, k, p.tv(), p.tout(), {}).ok());
    CHECK(p.out == want);

    // One key: the mask's and the weights' rows hold one element each.
    const std::size_t Lk = 1;
    std::vector<float> k1(p.B * p.Hkv * p.Dk, 0.5f), v1(p.B * p.Hkv * p.Dv, 0.25f);
    std::vector<float> bias(p.Lq, -1.0f), w1(p.B * p.Hq * p.Lq, kSentinel);
    const auto tk1 = attn::make_bhsd<const float>(k1.data(), p.B, p.Hkv, Lk, p.Dk);
    const auto tv1 = attn::make_bhsd<const float>(v1.data(), p.B, p.Hkv, Lk, p.Dv);
    attn::AttentionOptions o;
    o.mask = attn::Mask().with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, p.Lq, Lk));
    o.weights = attn::make_bhsd(w1.data(), p.B, p.Hq, p.Lq, Lk);
    REQUIRE(attn::attention(ctx, p.tq(), tk1, tv1, p.tout(), o).ok());
    const std::vector<float> want_out = p.out, want_w = w1;
    o.mask.additive.strides[3] = 3;
    o.weights.strides[3] = 0;
    p.out.assign(p.out.size(), kSentinel);
    w1.assign(w1.size(), kSentinel);
    REQUIRE(attn::attention(ctx, p.tq(), tk1, tv1, p.tout(), o).ok());
    CHECK(p.out == want_out);
    CHECK(w1 == want_w);

    // Empty views reach nothing: any strides.
    auto empty_q = attn::make_bhsd<const float>(p.q.data(), 0, p.Hq, p.Lq, p.Dk);
    auto empty_out = attn::make_bhsd(p.out.data(), 0, p.Hq, p.Lq, p.Dv);
    empty_q.strides = {0, 0, 0, 0};
    empty_out.strides[3] = 0;
    const auto empty_k = attn::make_bhsd<const float>(p.k.data(), 0, p.Hkv, p.Lk, p.Dk);
    const auto empty_v = attn::make_bhsd<const float>(p.v.data(), 0, p.Hkv, p.Lk, p.Dv);
    CHECK(attn::attention(ctx, empty_q, empty_k, empty_v, empty_out, {}).ok());
  }
}

TEST_CASE("self_attention rejects bad arguments and writes nothing", "[args][self_attention]") {
  attn::Context ctx;
  const std::size_t batch = 2, seq = 3, dm = 8, heads = 2, dk = 4;
  attn_test::Rng rng(2);
  auto x = rng.uniform_vec(batch * seq * dm);
  auto wq = rng.uniform_vec(dm * heads * dk), wk = wq, wv = wq;
  std::vector<float> out(batch * seq * heads * dk, kSentinel);
  attn::SelfAttentionParams p;
  p.q.weight = attn::make_matrix<const float>(wq.data(), dm, heads * dk);
  p.k.weight = attn::make_matrix<const float>(wk.data(), dm, heads * dk);
  p.v.weight = attn::make_matrix<const float>(wv.data(), dm, heads * dk);
  p.num_heads = heads;
  const auto xv = attn::make_matrix<const float>(x.data(), batch * seq, dm);
  const auto ov = attn::make_matrix(out.data(), batch * seq, heads * dk);
  REQUIRE(attn::self_attention(ctx, xv, batch, p, ov).ok());
  out.assign(out.size(), kSentinel);

  SECTION("rows not a multiple of batch") {
    check_error(attn::self_attention(ctx, xv, 4, p, ov), {"6 rows", "batch (4)"});
  }
  SECTION("num_heads not a multiple of num_kv_heads") {
    p.num_kv_heads = 3;
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"num_kv_heads (3)"});
  }
  SECTION("weight of the wrong shape") {
    p.k.weight.rows = 7;
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.k.weight has 7 rows"});
  }
  SECTION("out of the wrong shape") {
    check_error(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(out.data(), 6, 7)),
                {"out is 6 x 7"});
  }
  SECTION("out of the wrong rows, or the wrong columns") {
    check_error(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(out.data(), 5, 8)),
                {"self_attention: out is 5 x 8; expected 6 x 8"});
    check_error(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(out.data(), 6, 7)),
                {"self_attention: out is 6 x 7; expected 6 x 8"});
  }
  SECTION("q.weight with no columns") {
    p.q.weight.cols = 0;
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.q.weight has 0 columns, not a positive multiple of "
                 "num_heads (2)"});
  }
  SECTION("a boolean mask view that is not well formed") {
    std::vector<std::uint8_t> allowed(seq * seq * 2, 1);
    auto view = attn::make_bhsd<const std::uint8_t>(allowed.data(), 1, 1, seq, seq);
    view.strides[3] = 2;
    p.attention.mask = attn::Mask().with_allowed(view);
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.mask.allowed.strides[3] is 2"});
  }
  SECTION("attention weights that are not well formed or overlap out or x") {
    std::vector<float> w(batch * heads * seq * seq, kSentinel);
    const auto good = attn::make_bhsd(w.data(), batch, heads, seq, seq);
    p.attention.weights = attn::make_bhsd(w.data(), batch, heads, seq, seq - 1);
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.weights has shape [2, 2, 3, 2]; expected "
                 "[2, 2, 3, 3]"});
    p.attention.weights = good;
    p.attention.weights.strides[3] = 2;
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.weights.strides[3] is 2"});
    p.attention.weights = good;
    p.attention.weights.strides[2] = 0;
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.weights.strides[2] (0) makes elements of the "
                 "output alias one another"});
    // 36 floats from out's data (48 floats): every other check passes, then the weights meet out.
    p.attention.weights = attn::make_bhsd(out.data(), batch, heads, seq, seq);
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.weights overlaps out"});
    p.attention.weights = attn::make_bhsd(const_cast<float*>(x.data()), batch, heads, seq, seq);
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"self_attention: params.attention.weights overlaps x"});
    CHECK(untouched(w));
    // With the packed layer the options are named as attention's.
    attn::PackedSelfAttention layer;
    REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
    attn::AttentionOptions o;
    o.weights = attn::make_bhsd(out.data(), batch, heads, seq, seq);
    check_error(attn::self_attention(ctx, xv, batch, layer, o, ov),
                {"self_attention: options.weights overlaps out"});
    o.weights = good;
    o.weights.shape[0] = 1;
    check_error(attn::self_attention(ctx, xv, batch, layer, o, ov),
                {"self_attention: options.weights has shape [1, 2, 3, 3]; expected [2, 2, 3, 3]"});
    o.weights = {};
    auto view = attn::make_bhsd<const std::uint8_t>(nullptr, 1, 1, seq, seq);
    std::vector<std::uint8_t> allowed(seq * seq * 2, 1);
    view.data = allowed.data();
    view.strides[3] = 2;
    o.mask = attn::Mask().with_allowed(view);
    check_error(attn::self_attention(ctx, xv, batch, layer, o, ov),
                {"self_attention: options.mask.allowed.strides[3] is 2"});
  }
  SECTION("null bias data is allowed, null weight data is not") {
    p.v.weight.data = nullptr;
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.v.weight.data is null"});
  }
  SECTION("out overlapping x") {
    check_error(attn::self_attention(ctx, xv, batch, p,
                                     attn::make_matrix(const_cast<float*>(x.data()), 6, 8)),
                {"out overlaps x"});
  }
  SECTION("num_heads 0") {
    p.num_heads = 0;
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.num_heads is 0"});
  }
  SECTION("q.weight's columns not a multiple of num_heads") {
    p.q.weight.cols = 7;
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"params.q.weight has 7 columns", "num_heads (2)"});
  }
  SECTION("k.weight's columns not num_kv_heads x Dk") {
    p.num_kv_heads = 1;
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"params.k.weight has 8 columns", "num_kv_heads (1) x Dk (4) = 4"});
  }
  SECTION("o.weight's rows not num_heads x Dv") {
    p.o.weight = attn::make_matrix<const float>(wq.data(), 7, 8);
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.o.weight has 7 rows", "8"});
  }
  SECTION("o.bias without o.weight") {
    p.o.bias = wq.data();
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.o.bias is set"});
  }
  SECTION("a weight's stride below its columns") {
    p.q.weight.stride = 4;
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.q.weight"});
  }
  SECTION("a NaN scale") {
    p.attention.scale = attn_test::nan_f();
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"params.attention.scale is nan"});
  }
  SECTION("a mask alignment that is neither top_left nor bottom_right") {
    p.attention.mask = attn::Mask::causal(static_cast<attn::CausalAlign>(7));
    check_error(attn::self_attention(ctx, xv, batch, p, ov),
                {"params.attention.mask.causal_align is 7"});
  }
  SECTION("out overlapping a bias") {
    p.q.bias = out.data();
    check_error(attn::self_attention(ctx, xv, batch, p, ov), {"out overlaps params.q.bias"});
  }
  CHECK(untouched(out));
}

// README "Errors", self_attention: projection shapes that do not fit the heads, and the
// projections' columns side by side or the heads' (num_heads x Dv) beyond PTRDIFF_MAX bytes
// ("weights with no rows bound no width": d_model 0, any column count) are invalid_argument
// naming the argument and its values, and nothing is written. pack_self_attention checks the
// weights as self_attention does (include/attn/self_attention.hpp), its d_model being
// q.weight.rows, and leaves the layer it was given as it was.
TEST_CASE("self_attention and pack_self_attention reject V, side-by-side and heads' widths",
          "[args][self_attention]") {
  attn::Context ctx;
  const std::size_t batch = 2, seq = 3, dm = 8, heads = 2, dk = 4;
  attn_test::Rng rng(4);
  auto x = rng.uniform_vec(batch * seq * dm);
  auto w = rng.uniform_vec(dm * heads * dk);
  std::vector<float> out(batch * seq * heads * dk, kSentinel);
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = attn::make_matrix<const float>(w.data(), dm, heads * dk);
  p.num_heads = heads;
  const auto xv = attn::make_matrix<const float>(x.data(), batch * seq, dm);
  const auto ov = attn::make_matrix(out.data(), batch * seq, heads * dk);
  attn::PackedSelfAttention layer;
  REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
  // x: d_model columns (the weights' rows) for the call with views.
  const auto both = [&](const attn::SelfAttentionParams& bad, const MatrixView<const float>& xs,
                        std::initializer_list<const char*> words) {
    const Status s = attn::self_attention(ctx, xs, batch, bad, ov);
    check_error(s, words);
    CHECK(std::string(s.message()).rfind("self_attention: ", 0) == 0);
    const Status ps = attn::pack_self_attention(ctx, bad, &layer);
    check_error(ps, words);
    CHECK(std::string(ps.message()).rfind("pack_self_attention: ", 0) == 0);
    CHECK(untouched(out));
    CHECK(layer.d_model() == dm);
    CHECK(layer.num_heads() == heads);
    CHECK(layer.dim_v() == dk);
  };
  const std::size_t big = std::size_t{1} << 61;  // floats: 2^63 bytes, beyond PTRDIFF_MAX
  SECTION("v.weight with no columns") {
    auto bad = p;
    bad.v.weight.cols = 0;
    both(bad, xv, {"params.v.weight has 0 columns", "positive multiple of num_kv_heads (2)"});
  }
  SECTION("v.weight's columns not a multiple of num_kv_heads") {
    auto bad = p;
    bad.v.weight.cols = 7;
    both(bad, xv, {"params.v.weight has 7 columns", "num_kv_heads (2)"});
  }
  SECTION("the projections side by side beyond ptrdiff_t, or beyond size_t") {
    const MatrixView<const float> no_cols{x.data(), batch * seq, 0, 0};
    auto bad = p;
    bad.q.weight = bad.k.weight = {w.data(), 0, big, big};
    bad.v.weight = {w.data(), 0, 2, 2};
    both(bad, no_cols,
         {"the projections' 2305843009213693952 + 2305843009213693952 + 2 columns side by side",
          "span more bytes than fit in ptrdiff_t"});
    bad.q.weight = bad.k.weight = {nullptr, 0, std::size_t{1} << 63, 0};
    both(bad, no_cols, {"the projections' 9223372036854775808 + 9223372036854775808 + 2 columns"});
  }
  SECTION("num_heads x Dv beyond ptrdiff_t, or beyond size_t") {
    const MatrixView<const float> no_cols{x.data(), batch * seq, 0, 0};
    auto bad = p;
    bad.num_heads = 4;
    bad.num_kv_heads = 1;
    bad.q.weight = {w.data(), 0, 4, 4};
    bad.k.weight = {w.data(), 0, 1, 1};
    bad.v.weight = {w.data(), 0, big / 2, big / 2};  // 4 heads x 2^60 = 2^62 floats
    both(bad, no_cols,
         {"num_heads (4) x Dv (1152921504606846976) heads' columns span more bytes than fit in "
          "ptrdiff_t"});
    bad.num_heads = std::size_t{1} << 32;
    bad.q.weight = {nullptr, 0, std::size_t{1} << 32, 0};
    bad.v.weight = {nullptr, 0, std::size_t{1} << 32, 0};  // 2^32 x 2^32 wraps size_t
    both(bad, no_cols, {"num_heads (4294967296) x Dv (4294967296)"});
  }
  SECTION("the same widths with a d_model of 1 (views of 2^62 bytes, never read)") {
    // Valid views alone (each within PTRDIFF_MAX bytes from a real address, no wrap).
    const MatrixView<const float> one_col{x.data(), batch * seq, 1, 1};
    auto bad = p;
    bad.q.weight = bad.k.weight = bad.v.weight = {w.data(), 1, big / 2, big / 2};
    both(bad, one_col,
         {"the projections' 1152921504606846976 + 1152921504606846976 + "
          "1152921504606846976 columns side by side"});
    bad.num_heads = 4;
    bad.num_kv_heads = 1;
    bad.q.weight = {w.data(), 1, 4, 4};
    bad.k.weight = {w.data(), 1, 1, 1};
    both(bad, one_col, {"num_heads (4) x Dv (1152921504606846976)"});
  }
}

// README "Errors": a MatrixView whose last element lies (rows - 1) x stride + cols elements on,
// beyond size_t (stride >= cols, so the view is otherwise well formed), is invalid_argument
// ("spans more bytes than fit in ptrdiff_t", with its shape and stride) for every entry point
// taking matrices: matmul (a, b, c), matmul with a PackedMatrix (a, c), pack_matrix (b),
// softmax (x, y), self_attention (x, out, each weight) and pack_self_attention (each weight).
// Nothing is written; a PackedMatrix or PackedSelfAttention given is left as it was.
TEST_CASE("a matrix view whose last offset overflows size_t is invalid_argument everywhere",
          "[args]") {
  attn::Context ctx;
  std::vector<float> a(3 * 4, 1.0f), b(4 * 5, 1.0f), c(3 * 5, kSentinel), y(3 * 4, kSentinel);
  const MatrixView<const float> av{a.data(), 3, 4, 4}, bv{b.data(), 4, 5, 5};
  const MatrixView<float> cv{c.data(), 3, 5, 5};
  attn::PackedMatrix packed;
  REQUIRE(attn::pack_matrix(ctx, bv, Transpose::no, &packed).ok());
  std::vector<float> w(4 * 4, 0.5f), sa_out(3 * 4, kSentinel);
  attn::SelfAttentionParams sp;
  sp.q.weight = sp.k.weight = sp.v.weight = attn::make_matrix<const float>(w.data(), 4, 4);
  attn::PackedSelfAttention layer;
  REQUIRE(attn::pack_self_attention(ctx, sp, &layer).ok());
  const auto xv = attn::make_matrix<const float>(a.data(), 3, 4);
  const auto sov = attn::make_matrix(sa_out.data(), 3, 4);
  // (rows - 1) x stride overflows: 2 x 2^63; or (rows - 1) x stride + cols does: SIZE_MAX + 4.
  struct Bad {
    std::size_t rows, stride;
    const char* what;
  };
  const Bad bads[] = {{3, std::size_t{1} << 63, "(3 x 4, stride 9223372036854775808)"},
                      {2, SIZE_MAX, "(2 x 4, stride 18446744073709551615)"}};
  for (const Bad& bad : bads) {
    INFO(bad.what);
    const MatrixView<const float> in{a.data(), bad.rows, 4, bad.stride};
    const MatrixView<float> io{c.data(), bad.rows, 4, bad.stride};
    const auto expect = [&](const Status& s, const std::string& head) {
      check_error(s, {(head + " spans more bytes than fit in ptrdiff_t " + bad.what).c_str()});
    };
    expect(attn::matmul(ctx, in, Transpose::no, bv, Transpose::no, cv), "matmul: a");
    expect(attn::matmul(ctx, av, Transpose::no, in, Transpose::no, cv), "matmul: b");
    expect(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, io), "matmul: c");
    expect(attn::matmul(ctx, in, Transpose::no, packed, cv), "matmul: a");
    expect(attn::matmul(ctx, av, Transpose::no, packed, io), "matmul: c");
    expect(attn::pack_matrix(ctx, in, Transpose::no, &packed), "pack_matrix: b");
    expect(attn::softmax(ctx, in, {y.data(), 3, 4, 4}), "softmax: x");
    expect(attn::softmax(ctx, xv, {y.data(), bad.rows, 4, bad.stride}), "softmax: y");
    expect(attn::self_attention(ctx, in, 1, sp, sov), "self_attention: x");
    expect(attn::self_attention(ctx, xv, 1, sp, {sa_out.data(), bad.rows, 4, bad.stride}),
           "self_attention: out");
    const char* names[4] = {"params.q.weight", "params.k.weight", "params.v.weight",
                            "params.o.weight"};
    for (int i = 0; i < 4; ++i) {
      attn::SelfAttentionParams p = sp;
      attn::Projection* proj[4] = {&p.q, &p.k, &p.v, &p.o};
      proj[i]->weight = in;
      expect(attn::self_attention(ctx, xv, 1, p, sov), std::string("self_attention: ") + names[i]);
      expect(attn::pack_self_attention(ctx, p, &layer),
             std::string("pack_self_attention: ") + names[i]);
    }
  }
  CHECK(untouched(c));
  CHECK(untouched(y));
  CHECK(untouched(sa_out));
  CHECK(packed.rows() == 4);
  CHECK(packed.cols() == 5);
  CHECK(layer.d_model() == 4);
  CHECK(layer.d_out() == 4);
}

// Hostile inputs: each case pins the outcome README "Guarantees" documents. Where float
// arithmetic legitimately differs from the double reference (overflow), the float behaviour is
// pinned, not the reference.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "support/bounds.hpp"
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

// Runs f in a child process and says whether it exited normally with status 0. For the cases a
// sanitizer build aborts on (undefined behaviour, heap overflow): there the test fails instead of
// taking the whole test binary down. The child enters no OpenMP region (one thread), so fork is
// safe.
bool exits_cleanly(const std::function<void()>& f) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // Catch's handlers would report a crash of the child as a failure of its own and print a
    // summary; the parent reports it instead.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
      std::signal(sig, SIG_DFL);
    f();
    std::fflush(nullptr);
    attn_test::child_exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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

// exp decides its fast path (valid for |x| <= 87) for 4 vectors at once; a NaN in one vector
// must not hide a large |x| in another (found by the fuzzer: a max over the vectors dropped
// the NaN's lane and with it the large one, so exp(-1e30) came out -inf).
TEST_CASE("exp: a NaN in one vector does not hide a large input in another", "[hostile][exp]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    std::size_t bad = 0;
    for (float big : {-1e30f, -200.0f, 100.0f, 1e30f}) {
      for (std::size_t p = 0; p < 64; ++p) {
        for (std::size_t q = 0; q < 64; ++q) {
          if (p == q) continue;
          std::vector<float> x(64, 0.5f), y(64, kSentinel);
          x[p] = big;
          x[q] = nan_f();
          REQUIRE(attn::exp(ctx, x.data(), y.data(), x.size()).ok());
          const float want = std::exp(big);  // 0 or +inf
          if (y[p] != want && bad++ < 3) {
            FAIL_CHECK(attn::isa_name(isa) << ": exp(" << big << ") = " << y[p] << " with x[" << p
                                           << "] = " << big << ", x[" << q << "] = NaN");
          }
          CHECK(std::isnan(y[q]));
        }
      }
    }
    CHECK(bad == 0);
  }
}

// With an output projection of 0 columns (d_out == 0) and attention weights requested, the
// weights are still computed and written, as the reference does (found by the fuzzer).
TEST_CASE("self_attention writes the weights even when out has no columns",
          "[hostile][self_attention]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    const std::size_t batch = 1, seq = 3, dm = 4, heads = 2, dk = 2;
    attn_test::Rng rng(3);
    auto x = rng.uniform_vec(batch * seq * dm), w = rng.uniform_vec(dm * heads * dk);
    // The weights do not depend on Wo: with a 1-column Wo they are what d_out == 0 must give.
    const std::vector<float> wo(heads * dk, 0.5f);
    attn::SelfAttentionParams p;
    p.q.weight = p.k.weight = p.v.weight = attn::make_matrix<const float>(w.data(), dm, heads * dk);
    p.o.weight = attn::make_matrix<const float>(wo.data(), heads * dk, 1);
    p.num_heads = heads;
    std::vector<float> got(batch * heads * seq * seq, kSentinel), want(got.size(), kSentinel),
        out1(batch * seq);
    const auto xv = attn::make_matrix<const float>(x.data(), batch * seq, dm);
    p.attention.weights = attn::make_bhsd(want.data(), batch, heads, seq, seq);
    REQUIRE(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(out1.data(), batch * seq, 1))
                .ok());
    p.o.weight.cols = 0;  // [heads * dk, 0]: present, no columns
    p.attention.weights = attn::make_bhsd(got.data(), batch, heads, seq, seq);
    REQUIRE(attn::self_attention(ctx, xv, batch, p, MatrixView<float>{nullptr, batch * seq, 0, 0})
                .ok());
    CHECK_FALSE(all_equal(want, kSentinel));
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
}

// With Dk == 0 (or Dv == 0) the q and k (v and out) views are empty and may have null data: the
// driver must never form a reference to *nullptr (UBSan, in the `asan` preset, would abort the
// child process). Found by the fuzzer.
TEST_CASE("attention with Dk == 0 or Dv == 0 and null data is free of undefined behaviour",
          "[hostile][attention]") {
  // 4 keys: the latency path; 40 keys: the fused path, K read in place (2 rows) or packed (6).
  for (attn::Isa isa : attn_test::test_isas()) {
    for (std::size_t lk : {4u, 40u}) {
      for (std::size_t lq : {2u, 6u}) {
        INFO("isa " << attn::isa_name(isa) << " Lk " << lk << " Lq " << lq);
        std::vector<float> q(lq * 3, 0.5f), k(lk * 3, 0.25f), v(lk * 3, 1.0f),
            out(lq * 3, kSentinel);
        // Dk == 0: q and k are empty; every score is 0, so out is the mean of v.
        CHECK(exits_cleanly([&] {
          attn::Context ctx = attn_test::make_context(isa);
          const Status s = attn::attention(ctx, attn::make_bhsd<const float>(nullptr, 1, 1, lq, 0),
                                           attn::make_bhsd<const float>(nullptr, 1, 1, lk, 0),
                                           attn::make_bhsd<const float>(v.data(), 1, 1, lk, 3),
                                           attn::make_bhsd(out.data(), 1, 1, lq, 3), {});
          if (!s.ok() || out[0] != 1.0f) attn_test::child_exit(2);
        }));
        // Dv == 0: v and out are empty; the weights are still written, under a boolean mask
        // that blocks key 0 (the careful path asks whether V's rows are finite).
        CHECK(exits_cleanly([&] {
          attn::Context ctx = attn_test::make_context(isa);
          std::vector<float> w(lq * lk, kSentinel);
          std::vector<std::uint8_t> allowed(lk, 1);
          allowed[0] = 0;
          attn::AttentionOptions o;
          o.weights = attn::make_bhsd(w.data(), 1, 1, lq, lk);
          o.mask = attn::Mask().with_allowed(
              TensorView<const std::uint8_t>{allowed.data(), {1, 1, lq, lk}, {0, 0, 0, 1}});
          const Status s = attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, lq, 3),
                                           attn::make_bhsd<const float>(k.data(), 1, 1, lk, 3),
                                           attn::make_bhsd<const float>(nullptr, 1, 1, lk, 0),
                                           attn::make_bhsd<float>(nullptr, 1, 1, lq, 0), o);
          const float expect = 1.0f / static_cast<float>(lk - 1);
          if (!s.ok() || w[0] != 0.0f || std::fabs(w[1] - expect) > 1e-6f * expect)
            attn_test::child_exit(2);
        }));
      }
    }
  }
}

TEST_CASE("a broadcast view whose element count times 4 overflows is invalid_argument",
          "[hostile][attention]") {
  // k and v broadcast one row to 2^62 keys (stride 0): a few bytes of memory, but 2^64 bytes of
  // logical size. Before the check, attention sized its per-row scratch as Lk * 4 = 0 (wrapped)
  // and wrote past it. Run in a child so a regression fails this test, not the whole binary.
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    CHECK(exits_cleanly([&] {
      attn::Context ctx = attn_test::make_context(isa);
      std::vector<float> q(4, 1.0f), kv(4, 1.0f), out(4, kSentinel);
      TensorView<const float> k{kv.data(), {1, 1, std::size_t{1} << 62, 4}, {0, 0, 0, 1}};
      const Status s = attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, 1, 4), k,
                                       k, attn::make_bhsd(out.data(), 1, 1, 1, 4), {});
      const bool ok = s.code() == StatusCode::invalid_argument &&
                      std::string(s.message()).find("k spans more bytes") != std::string::npos &&
                      all_equal(out, kSentinel);
      if (!ok) std::fprintf(stderr, "got %s: %s\n", attn::status_code_name(s.code()), s.message());
      if (!ok) attn_test::child_exit(3);
    }));
  }
}

// Scratch sizes must never wrap: with Dk == Dv == 0 every view is empty (so no size check can
// fire) and Lk = 2^62; an earlier driver sized Lk * 4 bytes, which wrapped to 0, and overflowed
// the heap (found by the fuzzer). Now sizes saturate (out_of_memory) and a call with nothing to
// write returns at once. It runs in a child process with a time limit.
TEST_CASE("attention's scratch size does not wrap around", "[hostile][attention]") {
  CHECK(exits_cleanly([] {
    alarm(20);
    attn::Context ctx = attn_test::make_context(attn::Isa::scalar);
    const std::size_t lk = std::size_t{1} << 62;
    const Status s = attn::attention(ctx, attn::make_bhsd<const float>(nullptr, 1, 1, 1, 0),
                                     attn::make_bhsd<const float>(nullptr, 1, 1, lk, 0),
                                     attn::make_bhsd<const float>(nullptr, 1, 1, lk, 0),
                                     attn::make_bhsd<float>(nullptr, 1, 1, 1, 0), {});
    if (!(s.ok() || s.code() == StatusCode::out_of_memory)) attn_test::child_exit(3);
  }));
}

// With Dv == Lk == 0, a weights view ([B, Hq, Lq, 0]) is empty too, so no size check bounds
// B * Hq * Lq = 2^60 and there is nothing to write: the call must return at once (it once walked
// every query row of the latency path, writing nothing, for hours). In a child process with a
// time limit.
TEST_CASE("attention with no output columns and weights of no keys returns at once",
          "[hostile][attention]") {
  CHECK(exits_cleanly([] {
    alarm(20);
    attn::Context ctx;
    const std::size_t n = std::size_t{1} << 20;
    float slot = kSentinel;
    attn::AttentionOptions o;
    o.weights = attn::make_bhsd<float>(&slot, n, n, n, 0);
    const Status s = attn::attention(ctx, attn::make_bhsd<const float>(nullptr, n, n, n, 0),
                                     attn::make_bhsd<const float>(nullptr, n, n, 0, 0),
                                     attn::make_bhsd<const float>(nullptr, n, n, 0, 0),
                                     attn::make_bhsd<float>(nullptr, n, n, n, 0), o);
    if (!s.ok() || slot != kSentinel) attn_test::child_exit(3);
  }));
}

// With d_model == 0 the weights have no rows, so their views bound no width. A row of Q, K and V
// side by side (or of the heads) beyond ptrdiff_t is invalid_argument; rows within it whose
// buffers the arena cannot hold are out_of_memory. An earlier version let the sizes wrap: a
// 64-byte arena, then zeros written 2^62 floats past it (found by review). Views and a packed
// layer; nothing written; the reference validates the same. In a child process with a limit.
TEST_CASE("self_attention with no model columns bounds the projections' widths",
          "[hostile][self_attention]") {
  CHECK(exits_cleanly([] {
    alarm(20);
    attn::Context ctx;
    constexpr std::size_t kHuge = std::size_t{1} << 62;
    float out_data[2] = {kSentinel, kSentinel};
    const attn::MatrixView<const float> x{nullptr, 1, 0, 0};
    const attn::MatrixView<float> out{out_data, 1, 1, 1};
    const auto expect = [&](const Status& s, StatusCode code, const char* words, int fail) {
      const bool ok = s.code() == code &&
                      std::string(s.message()).find(words) != std::string::npos &&
                      out_data[0] == kSentinel && out_data[1] == kSentinel;
      if (!ok) {
        std::fprintf(stderr, "case %d: %s: %s\n", fail, attn::status_code_name(s.code()),
                     s.message());
        attn_test::child_exit(fail);
      }
    };
    attn::SelfAttentionParams p;
    // Q and K 2^62 columns each: the three side by side overflow ptrdiff_t.
    p.q.weight = p.k.weight = {nullptr, 0, kHuge, kHuge};
    p.v.weight = {nullptr, 0, 1, 1};
    expect(attn::self_attention(ctx, x, 1, p, out), StatusCode::invalid_argument, "side by side",
           3);
    expect(attn::reference::self_attention(x, 1, p, out), StatusCode::invalid_argument,
           "side by side", 4);
    attn::PackedSelfAttention layer;
    expect(attn::pack_self_attention(ctx, p, &layer), StatusCode::invalid_argument, "side by side",
           5);
    // 2^32 heads of Dk 1 and Dv 2^32: the heads' width wraps size_t.
    p.num_heads = std::size_t{1} << 32;
    p.num_kv_heads = 1;
    p.q.weight = {nullptr, 0, std::size_t{1} << 32, std::size_t{1} << 32};
    p.k.weight = {nullptr, 0, 1, 1};
    p.v.weight = {nullptr, 0, std::size_t{1} << 32, std::size_t{1} << 32};
    expect(attn::self_attention(ctx, x, 1, p, out), StatusCode::invalid_argument, "Dv", 6);
    // Q and K 2^58 columns: a row fits ptrdiff_t, the arena cannot hold it.
    p.num_heads = 1;
    p.num_kv_heads = 0;
    p.q.weight = p.k.weight = {nullptr, 0, std::size_t{1} << 58, std::size_t{1} << 58};
    p.v.weight = {nullptr, 0, 1, 1};
    expect(attn::self_attention(ctx, x, 1, p, out), StatusCode::out_of_memory, "", 7);
    if (!attn::pack_self_attention(ctx, p, &layer).ok()) attn_test::child_exit(8);
    expect(attn::self_attention(ctx, x, 1, layer, {}, out), StatusCode::out_of_memory, "", 9);
  }));
}

TEST_CASE("self_attention and its reference: rows times a projection's width beyond size_t",
          "[hostile][self_attention]") {
  // d_model 1: x of 2^33 rows and Wq, Wk of 2^31 columns are valid views alone (32 and 8 GiB);
  // their products wrap size_t. Both return out_of_memory before touching memory (the views'
  // addresses are made up); with no output columns both have nothing to write. The reference
  // sized its projection vectors with the wrapped product and wrote past them (found by a review).
  CHECK(exits_cleanly([] {
    alarm(20);
    attn::Context ctx;
    constexpr std::size_t kRows = std::size_t{1} << 33, kCols = std::size_t{1} << 31;
    const auto at = [](std::uintptr_t tib) { return reinterpret_cast<float*>(tib << 40); };
    float one = 1.0f;
    attn::SelfAttentionParams p;
    p.q.weight = p.k.weight = {at(1), 1, kCols, kCols};
    p.v.weight = {&one, 1, 1, 1};
    p.o.weight = {&one, 1, 1, 1};
    const attn::MatrixView<const float> x{at(2), kRows, 1, 1};
    const attn::MatrixView<float> out{at(3), kRows, 1, 1};
    const auto expect = [](const Status& s, StatusCode code, int fail) {
      if (s.code() != code) {
        std::fprintf(stderr, "case %d: %s: %s\n", fail, attn::status_code_name(s.code()),
                     s.message() ? s.message() : "");
        attn_test::child_exit(fail);
      }
    };
    expect(attn::self_attention(ctx, x, 1, p, out), StatusCode::out_of_memory, 3);
    expect(attn::reference::self_attention(x, 1, p, out), StatusCode::out_of_memory, 4);
    p.o.weight = {&one, 1, 0, 0};
    const attn::MatrixView<float> no_cols{at(3), kRows, 0, 0};
    expect(attn::self_attention(ctx, x, 1, p, no_cols), StatusCode::ok, 5);
    expect(attn::reference::self_attention(x, 1, p, no_cols), StatusCode::ok, 6);
  }));
}

// include/attn/self_attention.hpp: pack_self_attention packs [Wq | Wk | Wv] as one matrix (in
// place where the weights lie side by side, else from a copy side by side), and Wo; its errors
// are invalid_argument (sizes) and out_of_memory, and on error *out is untouched. Weights each
// valid alone can still be too much together: d_model x (Dq + Dk + Dv) floats beyond PTRDIFF_MAX
// bytes is invalid_argument; a pack_matrix step that fails (its packed copy, rounded up to the
// kernels' panels, beyond PTRDIFF_MAX bytes; an allocation the heap refuses) keeps its code and
// message, prefixed "pack_self_attention: packing <what>: ". The views' addresses are made up
// (aligned, no wrap) and never read: every case fails before reading a weight. In-process, so
// that coverage tools see these lines.
TEST_CASE("pack_self_attention: weights too large together are refused, pack_matrix's errors named",
          "[hostile][self_attention][packed]") {
  attn::Context ctx;
  const auto at = [](std::uintptr_t bytes) {
    return reinterpret_cast<const float*>((std::uintptr_t{1} << 40) + bytes);
  };
  std::vector<float> w(8, 0.5f);
  attn::SelfAttentionParams small;
  small.q.weight = small.k.weight = small.v.weight = {w.data(), 2, 1, 1};
  attn::PackedSelfAttention layer;
  REQUIRE(attn::pack_self_attention(ctx, small, &layer).ok());
  const auto expect = [&](const attn::SelfAttentionParams& p, StatusCode code,
                          const std::string& words) {
    const Status s = attn::pack_self_attention(ctx, p, &layer);
    INFO(s.message());
    CHECK(s.code() == code);
    CHECK(std::string(s.message()).find(words) != std::string::npos);
    CHECK(layer.d_model() == 2);  // the layer packed before, untouched
    CHECK(layer.dim_k() == 1);
    CHECK(!layer.has_output_projection());
  };
  const std::size_t c59 = std::size_t{1} << 59;
  // Three 2 x 2^59 weights (2^62 bytes each): side by side 2 x 3 * 2^59 floats, 3 * 2^62 bytes.
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = {at(0), 2, c59, c59};
  expect(p, StatusCode::invalid_argument,
         "pack_self_attention: [Wq | Wk | Wv] (2 x (576460752303423488 + 576460752303423488 + "
         "576460752303423488)) would span more bytes than fit in ptrdiff_t");
  // One row, side by side in memory (packed in place): 2^59 + 2^59 + 2^60 - 1 = 2^61 - 1 floats,
  // just within PTRDIFF_MAX bytes; rounded up to the kernels' panel width (4 or more) they are not.
  p.q.weight = {at(0), 1, c59, c59};
  p.k.weight = {at(4 * c59), 1, c59, c59};
  p.v.weight = {at(8 * c59), 1, 2 * c59 - 1, c59};
  expect(p, StatusCode::invalid_argument,
         "pack_self_attention: packing [Wq | Wk | Wv]: pack_matrix: b (1 x 2305843009213693951) "
         "packed would span more bytes than fit in ptrdiff_t");
  // The same in place with 2^56 columns each: 3 x 2^58 bytes packed, which no heap holds.
  const std::size_t c56 = std::size_t{1} << 56;
  p.q.weight = {at(0), 1, c56, c56};
  p.k.weight = {at(4 * c56), 1, c56, c56};
  p.v.weight = {at(8 * c56), 1, c56, c56};
  expect(p, StatusCode::out_of_memory,
         "pack_self_attention: packing [Wq | Wk | Wv]: pack_matrix: could not allocate");
  // Wq, Wk, Wv pack (2 x 3 floats); Wo, 1 x (2^61 - 1) floats, rounded up to the panels, does not.
  p = small;
  p.o.weight = {at(0), 1, 4 * c59 - 1, 4 * c59 - 1};
  expect(p, StatusCode::invalid_argument,
         "pack_self_attention: packing params.o.weight: pack_matrix: b (1 x 2305843009213693951) "
         "packed would span more bytes than fit in ptrdiff_t");
}

// The reference (an oracle that allocates) returns out_of_memory where its work space is beyond
// the heap, never an exception: 2^60 keys broadcast from one row (a valid view of 2^62 bytes;
// calloc refuses 2^60 doubles). A call with nothing to write returns at once, as
// attn::attention does.
TEST_CASE("reference::attention neither throws nor loops over nothing", "[hostile][attention]") {
  CHECK(exits_cleanly([] {
    alarm(20);
    const std::size_t lk = std::size_t{1} << 60;
    std::vector<float> q(1, 0.5f), kv(1, 0.5f), out(1, kSentinel);
    const TensorView<const float> k{kv.data(), {1, 1, lk, 1}, {0, 0, 0, 1}};
    const Status s = attn::reference::attention(attn::make_bhsd<const float>(q.data(), 1, 1, 1, 1),
                                                k, k, attn::make_bhsd(out.data(), 1, 1, 1, 1), {});
    if (s.code() != StatusCode::out_of_memory || out[0] != kSentinel) attn_test::child_exit(3);
    const std::size_t n = std::size_t{1} << 20;
    float slot = kSentinel;
    attn::AttentionOptions o;
    o.weights = attn::make_bhsd<float>(&slot, n, n, n, 0);
    const Status e = attn::reference::attention(attn::make_bhsd<const float>(nullptr, n, n, n, 0),
                                                attn::make_bhsd<const float>(nullptr, n, n, 0, 0),
                                                attn::make_bhsd<const float>(nullptr, n, n, 0, 0),
                                                attn::make_bhsd<float>(nullptr, n, n, n, 0), o);
    if (!e.ok() || slot != kSentinel) attn_test::child_exit(4);
  }));
}

namespace {

// A small attention problem whose pieces the cases below change.
struct Small {
  std::size_t B = 2, H = 2, Lq = 3, Lk = 4, D = 4;
  std::vector<float> q, k, v, out, w;
  explicit Small(std::uint32_t seed = 1) {
    attn_test::Rng rng(seed);
    q = rng.uniform_vec(B * H * Lq * D);
    k = rng.uniform_vec(B * H * Lk * D);
    v = rng.uniform_vec(B * H * Lk * D);
    out.assign(B * H * Lq * D, kSentinel);
    w.assign(B * H * Lq * Lk, kSentinel);
  }
  TensorView<const float> tq() const { return attn::make_bhsd<const float>(q.data(), B, H, Lq, D); }
  TensorView<const float> tk() const { return attn::make_bhsd<const float>(k.data(), B, H, Lk, D); }
  TensorView<const float> tv() const { return attn::make_bhsd<const float>(v.data(), B, H, Lk, D); }
  TensorView<float> tout() { return attn::make_bhsd(out.data(), B, H, Lq, D); }
  TensorView<float> tw() { return attn::make_bhsd(w.data(), B, H, Lq, Lk); }
  Status run(attn::Context& ctx, attn::AttentionOptions o = {}, bool weights = true) {
    if (weights) o.weights = tw();
    return attn::attention(ctx, tq(), tk(), tv(), tout(), o);
  }
  float o(std::size_t b, std::size_t h, std::size_t i, std::size_t x) const {
    return out[((b * H + h) * Lq + i) * D + x];
  }
  float wt(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    return w[((b * H + h) * Lq + i) * Lk + j];
  }
};

void check_invalid(const Status& s, const char* words) {
  INFO(s.message());
  CHECK(s.code() == StatusCode::invalid_argument);
  CHECK(std::string(s.message()).find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("sizes whose byte counts overflow are invalid_argument, for every view",
          "[hostile][args]") {
  attn::Context ctx;
  const std::size_t huge = (std::size_t{1} << 61) + 1;  // * 4 bytes > PTRDIFF_MAX
  Small p;
  std::vector<float> buf(64, kSentinel);
  // softmax and self_attention (matmul, exp and attention's q: tests/test_args.cpp).
  check_invalid(attn::softmax(ctx, {buf.data(), huge, 1, 1}, {buf.data(), huge, 1, 1}),
                "x spans more bytes");
  attn::SelfAttentionParams sp;
  std::vector<float> wts(4 * 4, 0.5f);
  sp.q.weight = sp.k.weight = sp.v.weight = attn::make_matrix<const float>(wts.data(), 4, 4);
  check_invalid(
      attn::self_attention(ctx, {buf.data(), huge, 4, 4}, 1, sp, {buf.data(), huge, 4, 4}),
      "x spans more bytes");
  // Attention's other views: out, weights, the masks, and strides of either sign.
  auto out = p.tout();
  out.shape[0] = huge;
  check_invalid(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, {}), "out spans more bytes");
  attn::AttentionOptions o;
  o.weights = p.tw();
  o.weights.strides[0] = std::ptrdiff_t{1} << 62;
  check_invalid(p.run(ctx, o, false), "options.weights spans more bytes");
  o = {};
  TensorView<const float> bias{buf.data(), {1, 1, p.Lq, p.Lk}, {0, 0, PTRDIFF_MIN, 1}};
  o.mask = attn::Mask().with_additive(bias);
  check_invalid(p.run(ctx, o), "mask.additive spans more bytes");
  auto k = p.tk();
  k.strides[2] = -(std::ptrdiff_t{1} << 61);
  check_invalid(attn::attention(ctx, p.tq(), k, p.tv(), p.tout(), {}), "k spans more bytes");
  // A view that fits in ptrdiff_t but runs off the end of the address space.
  auto v = p.tv();
  v.data = reinterpret_cast<const float*>(UINTPTR_MAX - 63);  // aligned, 64 bytes below the top
  check_invalid(attn::attention(ctx, p.tq(), p.tk(), v, p.tout(), {}), "wraps around");
  // Key lengths for more batch entries than bytes: q's batch overflows first.
  CHECK(all_equal(p.out, kSentinel));
  CHECK(all_equal(p.w, kSentinel));
  CHECK(all_equal(buf, kSentinel));
}

TEST_CASE("make_bhsd and make_bshd saturate strides that overflow, and attention refuses them",
          "[hostile][args]") {
  // The products of sizes are formed unsigned and saturate at PTRDIFF_MAX (they overflowed
  // ptrdiff_t before: undefined, UBSan's report in the sanitizer build), a stride no buffer can
  // hold, refused by validation. Products that fit are the plain ones.
  constexpr std::size_t big = std::size_t{1} << 32;
  const auto bhsd = attn::make_bhsd<const float>(nullptr, 2, big, big, 4);
  CHECK(bhsd.strides == std::array<std::ptrdiff_t, 4>{PTRDIFF_MAX, std::ptrdiff_t{4} << 32, 4, 1});
  const auto bshd = attn::make_bshd<const float>(nullptr, 2, big, big, big);
  CHECK(bshd.strides ==
        std::array<std::ptrdiff_t, 4>{PTRDIFF_MAX, std::ptrdiff_t{1} << 32, PTRDIFF_MAX, 1});
  const auto wide_rows = attn::make_bshd<const float>(nullptr, 3, 2, 1, 4, SIZE_MAX);
  CHECK(wide_rows.strides == std::array<std::ptrdiff_t, 4>{PTRDIFF_MAX, 4, PTRDIFF_MAX, 1});
  CHECK(attn::make_bhsd<const float>(nullptr, 2, 3, 5, 7).strides ==
        std::array<std::ptrdiff_t, 4>{105, 35, 7, 1});
  CHECK(attn::make_bshd<const float>(nullptr, 2, 5, 3, 7, 30).strides ==
        std::array<std::ptrdiff_t, 4>{150, 7, 30, 1});
  CHECK(attn::make_bhsd<const float>(nullptr, 2, big, 0, big).strides ==
        std::array<std::ptrdiff_t, 4>{0, 0, std::ptrdiff_t{1} << 32, 1});

  attn::Context ctx;
  Small p;
  const float one = 1.0f;
  const auto q = attn::make_bhsd<const float>(&one, 2, big, big, 4);
  const Status s = attn::attention(ctx, q, p.tk(), p.tv(), p.tout(), {});
  check_invalid(s, "q spans more bytes");
  CHECK(all_equal(p.out, kSentinel));
}

TEST_CASE("a size-1 dimension's stride is never used, PTRDIFF_MIN and PTRDIFF_MAX included",
          "[hostile][args]") {
  // mask.hpp: a dimension of size 1 ignores its stride. For every view of attention (q, k, v,
  // out, weights, both masks) the batch and head strides, and with one query the row stride,
  // set to PTRDIFF_MIN, then PTRDIFF_MAX: the same bits as the plain views (PTRDIFF_MIN was
  // refused as "spans more bytes"; in the sanitizer build UBSan checks the arithmetic on them).
  // With one key, k's and v's row strides as well (the P V loop stepped its pointer to V's next
  // row past the last one; attention now sets such strides to a plain view's). Lk 2100 with
  // one query: the key split; Lq 16384 with one key: enough work for the fused path, which reads
  // V (d 64, whole panels) in place.
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa, 2);
    for (std::size_t lq : {1, 20, 16384}) {
      for (std::size_t lk : {1, 37, 2100}) {
        if ((lk > 1000 && lq > 1) || (lq > 1000 && lk > 1)) continue;
        INFO("isa " << attn::isa_name(isa) << " Lq " << lq << " Lk " << lk);
        constexpr std::size_t d = 64;
        attn_test::Rng rng(17);
        const auto q = rng.uniform_vec(lq * d), k = rng.uniform_vec(lk * d),
                   v = rng.uniform_vec(lk * d), bias = rng.uniform_vec(lq * lk);
        std::vector<std::uint8_t> allowed(lq * lk, 1);
        if (lk > 1) allowed[lk / 2] = 0;
        std::vector<float> out0(lq * d), w0(lq * lk), out(lq * d), w(lq * lk);
        attn::AttentionOptions o;
        o.mask =
            attn::Mask::causal(attn::CausalAlign::bottom_right)
                .with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, lq, lk))
                .with_allowed(attn::make_bhsd<const std::uint8_t>(allowed.data(), 1, 1, lq, lk));
        o.weights = attn::make_bhsd(w0.data(), 1, 1, lq, lk);
        REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, lq, d),
                                attn::make_bhsd<const float>(k.data(), 1, 1, lk, d),
                                attn::make_bhsd<const float>(v.data(), 1, 1, lk, d),
                                attn::make_bhsd(out0.data(), 1, 1, lq, d), o)
                    .ok());
        for (std::ptrdiff_t odd : {PTRDIFF_MIN, PTRDIFF_MAX}) {
          INFO("stride " << odd);
          const auto odd_strides = [&](auto view, bool rows_of_one) {
            view.strides[0] = view.strides[1] = odd;
            if (rows_of_one) view.strides[2] = odd;
            return view;
          };
          attn::AttentionOptions oo = o;
          oo.mask.additive = odd_strides(oo.mask.additive, lq == 1);
          oo.mask.allowed = odd_strides(oo.mask.allowed, lq == 1);
          oo.weights = odd_strides(attn::make_bhsd(w.data(), 1, 1, lq, lk), lq == 1);
          const Status s = attn::attention(
              ctx, odd_strides(attn::make_bhsd<const float>(q.data(), 1, 1, lq, d), lq == 1),
              odd_strides(attn::make_bhsd<const float>(k.data(), 1, 1, lk, d), lk == 1),
              odd_strides(attn::make_bhsd<const float>(v.data(), 1, 1, lk, d), lk == 1),
              odd_strides(attn::make_bhsd(out.data(), 1, 1, lq, d), lq == 1), oo);
          INFO((s.message() ? s.message() : ""));
          REQUIRE(s.ok());
          CHECK(std::memcmp(out.data(), out0.data(), out.size() * sizeof(float)) == 0);
          CHECK(std::memcmp(w.data(), w0.data(), w.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("an empty view's data and strides are never used: Dk, Dv or Lk == 0",
          "[hostile][attention]") {
  // view.hpp, checks.cpp: a view with no elements is never read or written, so its data and
  // strides go unchecked. Dk == 0 leaves q and k empty, Dv == 0 v and out, Lk == 0 k, v, the
  // weights and both masks. Each such view with every stride PTRDIFF_MIN, then PTRDIFF_MAX, its
  // data null or real: attention and reference::attention write the bits they write for the
  // plain views (make_bhsd's, data real). In the sanitizer build UBSan checks the offset
  // arithmetic: before the drivers replaced such views (attention_driver.hpp, driver_view), the
  // latency path formed &q(b, h, i, 0) from them, and a negative row stride sent Dk == 0 down
  // another path than the plain view's, with other bits.
  // Lk 4: the latency path; 40: the fused path (K in place with 2 queries per KV head, packed
  // with 20); 2100 with one query and no weights asked for: the key split (weights are asked for
  // at the other lengths). Two query heads share each KV head; a causal mask, key lengths and
  // both masks.
  constexpr std::size_t B = 2, Hq = 2, Hkv = 1, d = 8;
  enum class Empty { dk, dv, lk };
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa, 2);
    for (Empty empty : {Empty::dk, Empty::dv, Empty::lk}) {
      for (std::size_t lq : {1, 2, 20}) {
        for (std::size_t lk : {4, 40, 2100}) {
          if ((lk > 1000 && lq > 1) || (empty == Empty::lk && lk != 4)) continue;
          if (empty == Empty::lk) lk = 0;
          const std::size_t dk = empty == Empty::dk ? 0 : d, dv = empty == Empty::dv ? 0 : d;
          INFO("isa " << attn::isa_name(isa) << " Lq " << lq << " Lk " << lk << " Dk " << dk
                      << " Dv " << dv);
          attn_test::Rng rng(23);
          // At least one element each: with Lk == 0 the masks' and weights' data are real too.
          const std::size_t scores = std::max<std::size_t>(1, B * Hq * lq * lk);
          const auto q = rng.uniform_vec(B * Hq * lq * d),
                     k = rng.uniform_vec(B * Hkv * lk * d + 1),
                     v = rng.uniform_vec(B * Hkv * lk * d + 1), bias = rng.uniform_vec(scores);
          std::vector<std::uint8_t> allowed(scores, 1);
          for (std::size_t r = 0; r + 1 < scores; r += 3)
            allowed[r] = 0;
          const std::int32_t lens[B] = {static_cast<std::int32_t>(std::min<std::size_t>(3, lk)),
                                        static_cast<std::int32_t>(lk)};
          const auto plain_q = attn::make_bhsd<const float>(q.data(), B, Hq, lq, dk);
          const auto plain_k = attn::make_bhsd<const float>(k.data(), B, Hkv, lk, dk);
          const auto plain_v = attn::make_bhsd<const float>(v.data(), B, Hkv, lk, dv);
          attn::AttentionOptions o;
          o.mask =
              attn::Mask::causal(attn::CausalAlign::bottom_right)
                  .with_key_lengths(lens)
                  .with_additive(attn::make_bhsd<const float>(bias.data(), B, Hq, lq, lk))
                  .with_allowed(attn::make_bhsd<const std::uint8_t>(allowed.data(), B, Hq, lq, lk));
          // The four results of one call's outputs: fast and reference, each out and weights.
          struct Outputs {
            std::vector<float> out, w, ref, ref_w;
          };
          const auto outputs = [&] {
            return Outputs{std::vector<float>(B * Hq * lq * d, kSentinel),
                           std::vector<float>(scores, kSentinel),
                           std::vector<float>(B * Hq * lq * d, kSentinel),
                           std::vector<float>(scores, kSentinel)};
          };
          const auto out_view = [&](std::vector<float>& buf) {
            return attn::make_bhsd(buf.data(), B, Hq, lq, dv);
          };
          const auto w_view = [&](std::vector<float>& buf) {
            return attn::make_bhsd(buf.data(), B, Hq, lq, lk);
          };
          // Runs both with every empty view passed through `odd`.
          const auto run = [&](const auto& odd, Outputs* r) {
            attn::AttentionOptions oo = o;
            oo.mask.additive = odd(oo.mask.additive);
            oo.mask.allowed = odd(oo.mask.allowed);
            const bool weights = lk < 1000;  // else the key split, which weights turn off
            oo.weights = weights ? odd(w_view(r->w)) : attn::TensorView<float>{};
            const Status s = attn::attention(ctx, odd(plain_q), odd(plain_k), odd(plain_v),
                                             odd(out_view(r->out)), oo);
            INFO((s.message() ? s.message() : ""));
            REQUIRE(s.ok());
            oo.weights = weights ? odd(w_view(r->ref_w)) : attn::TensorView<float>{};
            const Status sr = attn::reference::attention(odd(plain_q), odd(plain_k), odd(plain_v),
                                                         odd(out_view(r->ref)), oo);
            INFO((sr.message() ? sr.message() : ""));
            REQUIRE(sr.ok());
          };
          Outputs plain = outputs();
          run([](auto view) { return view; }, &plain);
          if (lk == 0) CHECK(all_equal(plain.out, 0.0f));
          for (std::ptrdiff_t stride : {PTRDIFF_MIN, PTRDIFF_MAX}) {
            for (const bool null_data : {true, false}) {
              INFO("strides " << stride << (null_data ? ", data null" : ", data real"));
              const auto odd = [&](auto view) {
                if (view.shape[0] * view.shape[1] * view.shape[2] * view.shape[3] != 0) return view;
                if (null_data) view.data = nullptr;
                view.strides = {stride, stride, stride, stride};
                return view;
              };
              Outputs got = outputs();
              run(odd, &got);
              CHECK(std::memcmp(got.out.data(), plain.out.data(), plain.out.size() * 4) == 0);
              CHECK(std::memcmp(got.w.data(), plain.w.data(), plain.w.size() * 4) == 0);
              CHECK(std::memcmp(got.ref.data(), plain.ref.data(), plain.ref.size() * 4) == 0);
              CHECK(std::memcmp(got.ref_w.data(), plain.ref_w.data(), plain.ref_w.size() * 4) == 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("matmul: a one-row operand's stride is never used, PTRDIFF_MAX and SIZE_MAX included",
          "[hostile][matmul]") {
  // k = 1: op(A) = A^T of 1 x 15 (packed by columns) and B of 1 x 385 (packed by rows, in place
  // or by pack_matrix), each with the stride of its one row at PTRDIFF_MAX or SIZE_MAX: the same
  // bits as with stride == cols. The packing loops stepped a pointer past the last row by the
  // stride (UBSan's report in the sanitizer build).
  attn_test::Rng rng(23);
  const std::vector<float> a = rng.uniform_vec(15), b = rng.uniform_vec(385);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> want(15 * 385), got(15 * 385), got_packed(15 * 385);
    const MatrixView<float> cv{got.data(), 15, 385, 385}, pv{got_packed.data(), 15, 385, 385};
    REQUIRE(attn::matmul(ctx, {a.data(), 1, 15, 15}, Transpose::yes, {b.data(), 1, 385, 385},
                         Transpose::no, {want.data(), 15, 385, 385})
                .ok());
    for (std::size_t stride : {std::size_t{PTRDIFF_MAX}, SIZE_MAX}) {
      INFO("stride " << stride);
      const MatrixView<const float> av{a.data(), 1, 15, stride}, bv{b.data(), 1, 385, stride};
      REQUIRE(attn::matmul(ctx, av, Transpose::yes, bv, Transpose::no, cv).ok());
      CHECK(got == want);
      attn::PackedMatrix packed;
      REQUIRE(attn::pack_matrix(ctx, bv, Transpose::no, &packed).ok());
      REQUIRE(attn::matmul(ctx, av, Transpose::yes, packed, pv).ok());
      CHECK(got_packed == want);
    }
  }
}

TEST_CASE("aliasing strides: allowed for inputs, rejected for outputs", "[hostile][args]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    Small p;
    // Inputs may broadcast (stride 0), overlap (stride < row) and run backwards: the result is
    // the reference's on the same views.
    std::vector<float> kv = attn_test::Rng(5).uniform_vec(16);
    const TensorView<const float> k_bcast{kv.data(), {p.B, p.H, p.Lk, p.D}, {0, 0, 0, 1}};
    const TensorView<const float> k_overlap{kv.data(), {p.B, p.H, p.Lk, p.D}, {0, 2, 1, 1}};
    const TensorView<const float> v_back{kv.data() + 12, {p.B, p.H, p.Lk, p.D}, {0, -4, -2, 1}};
    std::vector<float> want(p.out.size());
    for (const auto& k : {k_bcast, k_overlap, v_back}) {
      const auto to = p.tout();
      REQUIRE(attn::attention(ctx, p.tq(), k, v_back, to, {}).ok());
      REQUIRE(attn::reference::attention(p.tq(), k, v_back,
                                         attn::make_bhsd(want.data(), p.B, p.H, p.Lq, p.D), {})
                  .ok());
      // The Accuracy bound, without Approx's relative slack (epsilon 0): S <= 2, max|v| <= 1.
      const double tol = attn_test::bounds::attention_factor(p.D, p.Lk, 2.0);
      for (std::size_t i = 0; i < want.size(); ++i)
        CHECK(p.out[i] == Approx(want[i]).epsilon(0).margin(tol));
    }
    // Outputs whose elements share memory are refused, and nothing is written.
    p.out.assign(p.out.size(), kSentinel);
    auto out = p.tout();
    out.strides[1] = 0;
    check_invalid(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, {}), "alias");
    out = p.tout();
    out.data = p.out.data() + 4;  // inside out's vector: the rows run back to p.out.data()
    out.strides[2] = -2;          // rows of 4 elements, 2 apart
    check_invalid(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, {}), "alias");
    attn::AttentionOptions o;
    o.weights = p.tw();
    o.weights.strides[0] = 1;
    check_invalid(p.run(ctx, o, false), "alias");
    CHECK(all_equal(p.out, kSentinel));
    CHECK(all_equal(p.w, kSentinel));
    // Outputs may run backwards when they do not alias.
    out = p.tout();
    out.data = p.out.data() + p.out.size() - p.D;
    out.strides = {-static_cast<std::ptrdiff_t>(p.H * p.Lq * p.D),
                   -static_cast<std::ptrdiff_t>(p.Lq * p.D), -static_cast<std::ptrdiff_t>(p.D), 1};
    REQUIRE(attn::attention(ctx, p.tq(), p.tk(), p.tv(), out, {}).ok());
    REQUIRE(attn::reference::attention(p.tq(), p.tk(), p.tv(),
                                       attn::make_bhsd(want.data(), p.B, p.H, p.Lq, p.D), {})
                .ok());
    CHECK(p.out[0] == Approx(want[want.size() - p.D])
                          .epsilon(0)
                          .margin(attn_test::bounds::attention_factor(p.D, p.Lk, 2.0)));
    // Matrix views cannot alias rows at all: stride < cols is refused for inputs and outputs.
    std::vector<float> x(16, 1.0f), y(16, kSentinel);
    check_invalid(attn::softmax(ctx, {x.data(), 2, 4, 2}, {y.data(), 2, 4, 4}), "x.stride (2)");
    check_invalid(attn::softmax(ctx, {x.data(), 2, 4, 4}, {y.data(), 2, 4, 0}), "y.stride (0)");
    // One row: the stride is never applied, so any value is fine.
    CHECK(attn::softmax(ctx, {x.data(), 1, 4, 0}, {y.data(), 1, 4, 1}).ok());
    CHECK(y[0] == 0.25f);
  }
}

TEST_CASE("outputs overlapping inputs or each other are refused, adjacent ones are fine",
          "[hostile][args]") {
  attn::Context ctx;
  Small p;
  std::vector<float> mem(1024, kSentinel);
  const std::vector<float> mem0 = mem;
  auto within = [&](std::size_t offset) {
    return attn::make_bhsd(mem.data() + offset, p.B, p.H, p.Lq, p.D);
  };
  // out inside k, v, the additive mask, the boolean mask and the key lengths.
  std::copy(p.k.begin(), p.k.end(), mem.begin());
  const auto k_in_mem = attn::make_bhsd<const float>(mem.data(), p.B, p.H, p.Lk, p.D);
  check_invalid(attn::attention(ctx, p.tq(), k_in_mem, p.tv(), within(p.k.size() - 1), {}),
                "out overlaps k");
  check_invalid(attn::attention(ctx, p.tq(), p.tk(), k_in_mem, within(5), {}), "out overlaps v");
  attn::AttentionOptions o;
  o.mask = attn::Mask().with_additive(attn::make_bhsd<const float>(mem.data(), 1, 1, p.Lq, p.Lk));
  check_invalid(attn::attention(ctx, p.tq(), p.tk(), p.tv(), within(3), o),
                "out overlaps options.mask.additive");
  std::vector<std::uint8_t> allowed_mem(1024, 1);
  o.mask = attn::Mask().with_allowed(
      attn::make_bhsd<const std::uint8_t>(allowed_mem.data() + 8, 1, 1, p.Lq, p.Lk));
  check_invalid(
      attn::attention(
          ctx, p.tq(), p.tk(), p.tv(),
          attn::make_bhsd(reinterpret_cast<float*>(allowed_mem.data()), p.B, p.H, p.Lq, p.D), o),
      "out overlaps options.mask.allowed");
  std::vector<std::int32_t> lengths(p.out.size() + 8, 4);
  o.mask = attn::Mask().with_key_lengths(lengths.data() + 5);
  check_invalid(
      attn::attention(
          ctx, p.tq(), p.tk(), p.tv(),
          attn::make_bhsd(reinterpret_cast<float*>(lengths.data()), p.B, p.H, p.Lq, p.D), o),
      "out overlaps options.mask.key_lengths");
  // weights overlapping out, both inside one buffer (a view running past out's own vector could
  // reach whatever the heap put next, q included).
  o = {};
  std::vector<float> out_w(p.out.size() + p.w.size() + 7, kSentinel);
  o.weights = attn::make_bhsd(out_w.data() + 7, p.B, p.H, p.Lq, p.Lk);
  check_invalid(attn::attention(ctx, p.tq(), p.tk(), p.tv(),
                                attn::make_bhsd(out_w.data(), p.B, p.H, p.Lq, p.D), o),
                "options.weights overlaps out");
  CHECK(all_equal(out_w, kSentinel));
  // The check compares address ranges: an output interleaved with an input (every other
  // column) is refused although no element is shared.
  std::vector<float> pair(2 * p.B * p.H * p.Lq * p.D);
  const TensorView<const float> q_even{
      pair.data(),
      {p.B, p.H, p.Lq, p.D},
      {std::ptrdiff_t(2 * p.H * p.Lq * p.D), std::ptrdiff_t(2 * p.Lq * p.D),
       std::ptrdiff_t(2 * p.D), 1}};
  TensorView<float> out_odd{pair.data() + p.D, q_even.shape, q_even.strides};
  check_invalid(attn::attention(ctx, q_even, p.tk(), p.tv(), out_odd, {}), "out overlaps q");
  CHECK(all_equal(p.out, kSentinel));
  // exp, softmax and matmul.
  std::vector<float> x = attn_test::Rng(2).uniform_vec(32);
  check_invalid(attn::exp(ctx, x.data() + 1, x.data(), 16), "y overlaps x");
  check_invalid(attn::matmul(ctx, {x.data(), 2, 2, 2}, Transpose::no, {x.data() + 8, 2, 2, 2},
                             Transpose::no, {x.data() + 10, 2, 2, 2}),
                "c overlaps b");
  // Touching is not overlapping: out may start right where q ends, in the same buffer.
  std::vector<float> qo(p.q.size() + p.out.size(), kSentinel);
  std::copy(p.q.begin(), p.q.end(), qo.begin());
  const auto tq = attn::make_bhsd<const float>(qo.data(), p.B, p.H, p.Lq, p.D);
  REQUIRE(attn::attention(ctx, tq, p.tk(), p.tv(),
                          attn::make_bhsd(qo.data() + p.q.size(), p.B, p.H, p.Lq, p.D), {})
              .ok());
  CHECK(std::equal(p.q.begin(), p.q.end(), qo.begin()));
  CHECK(qo.back() != kSentinel);
  // Inputs may overlap each other freely (q, k and v the same memory).
  CHECK(attn::attention(ctx, p.tq(), p.tq(), p.tq(), p.tout(), {}).ok());
  CHECK(std::equal(mem0.begin() + 64, mem0.end(), mem.begin() + 64));
}

namespace {

bool row_is(const Small& p, std::size_t b, std::size_t h, std::size_t i, bool (*pred)(float)) {
  for (std::size_t x = 0; x < p.D; ++x)
    if (!pred(p.o(b, h, i, x))) return false;
  for (std::size_t j = 0; j < p.Lk; ++j)
    if (!pred(p.wt(b, h, i, j))) return false;
  return true;
}
bool is_nan(float x) {
  return std::isnan(x);
}
bool is_zero(float x) {
  return x == 0.0f;
}
bool is_finite(float x) {
  return std::isfinite(x);
}

}  // namespace

TEST_CASE("attention: NaN and inf in q, k, v and the additive mask", "[hostile][attention][ieee]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    {  // NaN in k of key 2 of (b 0, h 1): every row of (0, 1) is NaN, out and weights.
      Small p;
      p.k[((0 * p.H + 1) * p.Lk + 2) * p.D + 3] = nan_f();
      REQUIRE(p.run(ctx).ok());
      for (std::size_t b = 0; b < p.B; ++b)
        for (std::size_t h = 0; h < p.H; ++h)
          for (std::size_t i = 0; i < p.Lq; ++i)
            CHECK(row_is(p, b, h, i, (b == 0 && h == 1) ? is_nan : is_finite));
    }
    {  // The additive mask, broadcast over b and h: NaN at (1, 2) and +inf at (0, 0) make those
       // rows NaN (+inf - inf); a row of -inf is a fully masked row: zeros.
      Small p;
      std::vector<float> bias(p.Lq * p.Lk, 0.5f);
      bias[1 * p.Lk + 2] = nan_f();
      bias[0] = inf_f();
      for (std::size_t j = 0; j < p.Lk; ++j)
        bias[2 * p.Lk + j] = -inf_f();
      attn::AttentionOptions o;
      o.mask =
          attn::Mask().with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, p.Lq, p.Lk));
      REQUIRE(p.run(ctx, o).ok());
      for (std::size_t b = 0; b < p.B; ++b)
        for (std::size_t h = 0; h < p.H; ++h) {
          CHECK(row_is(p, b, h, 0, is_nan));
          CHECK(row_is(p, b, h, 1, is_nan));
          CHECK(row_is(p, b, h, 2, is_zero));
        }
    }
    {  // NaN in v reaches only its own output column; the weights stay finite.
      Small p;
      p.v[((1 * p.H + 0) * p.Lk + 3) * p.D + 2] = nan_f();
      REQUIRE(p.run(ctx).ok());
      for (std::size_t i = 0; i < p.Lq; ++i) {
        for (std::size_t x = 0; x < p.D; ++x)
          CHECK(std::isnan(p.o(1, 0, i, x)) == (x == 2));
        for (std::size_t j = 0; j < p.Lk; ++j)
          CHECK(std::isfinite(p.wt(1, 0, i, j)));
      }
    }
    {  // q = -inf against positive k: every score is -inf, so the row is fully masked: zeros.
      // q = +inf: a +inf score: NaN.
      Small p;
      for (float& x : p.k)
        x = std::fabs(x) + 0.1f;
      for (std::size_t x = 0; x < p.D; ++x) {
        p.q[x] = -inf_f();                              // (0, 0, 0)
        p.q[(0 * p.H * p.Lq + 1) * p.D + x] = inf_f();  // (0, 0, 1)
      }
      REQUIRE(p.run(ctx).ok());
      CHECK(row_is(p, 0, 0, 0, is_zero));
      CHECK(row_is(p, 0, 0, 1, is_nan));
      CHECK(row_is(p, 0, 0, 2, is_finite));
    }
  }
}

TEST_CASE("attention: a weight below 2^-126 is 0 on every ISA, so times an infinite v it is NaN",
          "[hostile][attention][ieee]") {
  // q = k = 0 and scale 1: the scores are the additive mask. Key `low` is `gap` below the row's
  // maximum (key `top`), every other key 200 below (weight 0, finite v); v[low] = +inf, the
  // others 1. A gap of 100: e^-100 = 3.7e-44 is subnormal, which every ISA's exponential flushes
  // to 0 (README "NaN, inf and fully masked rows"), so out = 0 * inf = NaN where the double
  // reference gives +inf; before the max (low < top), the online softmax's correction factor
  // e^-100 is the one flushed. A gap of 80: e^-80 = 1.8e-35 is normal: out = +inf. Lk 2, 40 and
  // 300 with 1 and 20 queries, with and without weights: each attention path.
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (std::size_t lk : {2, 40, 300}) {
      for (std::size_t lq : {1, 20}) {
        for (bool with_weights : {false, true}) {
          for (float gap : {100.0f, 80.0f}) {
            for (bool low_first : {false, true}) {
              INFO("isa " << attn::isa_name(isa) << " Lk " << lk << " Lq " << lq << " weights "
                          << with_weights << " gap " << gap << " low first " << low_first);
              const std::size_t low = low_first ? 0 : lk - 1, top = low_first ? lk - 1 : 0;
              const std::vector<float> q(lq, 0.0f), k(lk, 0.0f);
              std::vector<float> v(lk, 1.0f), bias(lk, -200.0f), out(lq), w(lq * lk);
              v[low] = inf_f();
              bias[top] = 0.0f;
              bias[low] = -gap;
              attn::AttentionOptions o;
              o.mask = attn::Mask().with_additive(
                  attn::make_bhsd<const float>(bias.data(), 1, 1, 1, lk));
              o.mask.additive.strides[2] = 0;  // the one row for every query
              o.mask.additive.shape[2] = lq;
              o.scale = 1.0f;
              if (with_weights) o.weights = attn::make_bhsd(w.data(), 1, 1, lq, lk);
              REQUIRE(attn::attention(ctx, attn::make_bhsd(q.data(), 1, 1, lq, 1),
                                      attn::make_bhsd(k.data(), 1, 1, lk, 1),
                                      attn::make_bhsd(v.data(), 1, 1, lk, 1),
                                      attn::make_bhsd(out.data(), 1, 1, lq, 1), o)
                          .ok());
              for (std::size_t i = 0; i < lq; ++i) {
                if (gap == 100.0f) {
                  CHECK(std::isnan(out[i]));
                } else {
                  CHECK(out[i] == inf_f());
                }
                if (!with_weights) continue;
                CHECK(w[i * lk + top] == 1.0f);
                if (gap == 100.0f) {
                  CHECK(w[i * lk + low] == 0.0f);
                } else {
                  CHECK(w[i * lk + low] == Approx(std::exp(-80.0)).epsilon(1e-5));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("attention: huge and tiny q and k follow float arithmetic, not the double reference",
          "[hostile][attention][ieee]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    Small p;
    std::vector<float> ref_out(p.out.size());
    auto reference = [&] {
      REQUIRE(attn::reference::attention(p.tq(), p.tk(), p.tv(),
                                         attn::make_bhsd(ref_out.data(), p.B, p.H, p.Lq, p.D), {})
                  .ok());
    };
    // q, k = 1e30: q.k = 4e60 overflows float to +inf: every row NaN. In double the scores
    // are finite (and equal): the reference averages v.
    std::fill(p.q.begin(), p.q.end(), 1e30f);
    std::fill(p.k.begin(), p.k.end(), 1e30f);
    REQUIRE(p.run(ctx).ok());
    for (float x : p.out)
      CHECK(std::isnan(x));
    reference();
    for (float x : ref_out)
      CHECK(std::isfinite(x));
    // q = -1e30, k = 1e30: every score overflows to -inf: fully masked rows, zeros (the
    // reference again averages v).
    std::fill(p.q.begin(), p.q.end(), -1e30f);
    REQUIRE(p.run(ctx).ok());
    CHECK(all_equal(p.out, 0.0f));
    CHECK(all_equal(p.w, 0.0f));
    // q, k = 1e-30: q.k = 4e-60 underflows to 0: every score 0, uniform weights exactly
    // float(1 / Lk), out the mean of v.
    std::fill(p.q.begin(), p.q.end(), 1e-30f);
    std::fill(p.k.begin(), p.k.end(), -1e-30f);
    REQUIRE(p.run(ctx).ok());
    CHECK(all_equal(p.w, static_cast<float>(1.0 / double(p.Lk))));
    reference();
    for (std::size_t i = 0; i < p.out.size(); ++i)  // the Accuracy bound, S ~ 0, max|v| <= 1
      CHECK(p.out[i] == Approx(ref_out[i])
                            .epsilon(0)
                            .margin(attn_test::bounds::attention_factor(p.D, p.Lk, 1e-59)));
    // Subnormal v is not flushed to zero: the output is the (subnormal) mean.
    const float sub = 1e-40f;
    REQUIRE(std::fpclassify(sub) == FP_SUBNORMAL);
    std::fill(p.v.begin(), p.v.end(), sub);
    REQUIRE(p.run(ctx).ok());
    for (float x : p.out)
      CHECK(x == sub);
    // A huge (finite) scale overflows the scores the same way: NaN rows.
    std::fill(p.q.begin(), p.q.end(), 1.0f);
    std::fill(p.k.begin(), p.k.end(), 1.0f);
    attn::AttentionOptions o;
    o.scale = FLT_MAX;
    REQUIRE(p.run(ctx, o).ok());
    for (float x : p.w)
      CHECK(std::isnan(x));
  }
}

TEST_CASE("attention: fully masked batches, key lengths of 0, and zero-sized dimensions",
          "[hostile][attention][mask]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa, 2);
    {  // key length 0 for batch 0 (whose k and v hold NaN: never read), Lk for batch 1; then a
       // boolean mask that blocks all of batch 1.
      Small p;
      std::fill(p.k.begin(), p.k.begin() + p.H * p.Lk * p.D, nan_f());
      std::fill(p.v.begin(), p.v.begin() + p.H * p.Lk * p.D, inf_f());
      const std::int32_t lengths[2] = {0, 4};
      attn::AttentionOptions o;
      o.mask = attn::Mask().with_key_lengths(lengths);
      REQUIRE(p.run(ctx, o).ok());
      for (std::size_t h = 0; h < p.H; ++h)
        for (std::size_t i = 0; i < p.Lq; ++i) {
          CHECK(row_is(p, 0, h, i, is_zero));
          double sum = 0.0;
          for (std::size_t j = 0; j < p.Lk; ++j)
            sum += p.wt(1, h, i, j);
          CHECK(sum == Approx(1.0).epsilon(1e-6));
        }
      std::vector<std::uint8_t> allowed(p.B * p.Lq * p.Lk, 1);
      std::fill(allowed.begin() + p.Lq * p.Lk, allowed.end(), 0);
      o.mask = attn::Mask().with_key_lengths(lengths).with_allowed(
          attn::make_bhsd<const std::uint8_t>(allowed.data(), p.B, 1, p.Lq, p.Lk));
      REQUIRE(p.run(ctx, o).ok());
      CHECK(all_equal(p.out, 0.0f));
      CHECK(all_equal(p.w, 0.0f));
    }
    {  // A window that leaves some rows no key (Lq > Lk, top-left, [i, i]).
      Small p;
      p.Lq = 6;
      p.q.resize(p.B * p.H * p.Lq * p.D, 0.5f);
      p.out.assign(p.B * p.H * p.Lq * p.D, kSentinel);
      p.w.assign(p.B * p.H * p.Lq * p.Lk, kSentinel);
      attn::AttentionOptions o;
      o.mask = attn::Mask().with_window(0, 0);
      REQUIRE(p.run(ctx, o).ok());
      for (std::size_t i = 0; i < p.Lq; ++i) {
        CHECK(row_is(p, 1, 1, i, is_zero) == (i >= p.Lk));
        if (i < p.Lk) CHECK(p.wt(1, 1, i, i) == 1.0f);
      }
    }
    {  // Lk == 0 with weights requested: zeros in out; the weights view is empty.
      Small p;
      const Status s = attn::attention(
          ctx, p.tq(), attn::make_bhsd<const float>(nullptr, p.B, p.H, 0, p.D),
          attn::make_bhsd<const float>(nullptr, p.B, p.H, 0, p.D), p.tout(),
          attn::AttentionOptions{{}, 0.0f, attn::make_bhsd<float>(nullptr, p.B, p.H, p.Lq, 0)});
      REQUIRE(s.ok());
      CHECK(all_equal(p.out, 0.0f));
    }
    {  // B == 0, and Hq == Hkv == 0: valid, nothing written.
      Small p;
      CHECK(attn::attention(ctx, attn::make_bhsd<const float>(nullptr, 0, 2, 3, 4), p.tk(), p.tv(),
                            attn::make_bhsd<float>(nullptr, 0, 2, 3, 4), {})
                .code() == StatusCode::invalid_argument);  // k's batch must match: 0 != 2
      const auto e = attn::make_bhsd<const float>(nullptr, 0, 2, 3, 4);
      CHECK(attn::attention(ctx, e, e, e, attn::make_bhsd<float>(nullptr, 0, 2, 3, 4), {}).ok());
      const auto h0 = attn::make_bhsd<const float>(nullptr, 2, 0, 3, 4);
      CHECK(attn::attention(ctx, h0, h0, h0, attn::make_bhsd<float>(nullptr, 2, 0, 3, 4), {}).ok());
      CHECK(attn::attention(ctx, p.tq(), h0, h0, p.tout(), {}).code() ==
            StatusCode::invalid_argument);  // Hq = 2 heads over Hkv = 0
      CHECK(all_equal(p.out, kSentinel));
    }
    {  // Dk == 0 (real pointers): every score is 0, so out is the mean of v and the weights are
       // uniform. Dv == 0: the weights are still written.
      Small p;
      std::vector<float> any(4, 1.0f), w(p.B * p.H * p.Lq * p.Lk, kSentinel);
      const auto e = attn::make_bhsd<const float>(any.data(), p.B, p.H, p.Lq, 0);
      const auto ek = attn::make_bhsd<const float>(any.data(), p.B, p.H, p.Lk, 0);
      attn::AttentionOptions o;
      o.weights = attn::make_bhsd(w.data(), p.B, p.H, p.Lq, p.Lk);
      REQUIRE(attn::attention(ctx, e, ek, p.tv(), p.tout(), o).ok());
      CHECK(all_equal(w, 0.25f));
      for (std::size_t x = 0; x < p.D; ++x) {
        const double mean =
            (double(p.v[x]) + p.v[p.D + x] + p.v[2 * p.D + x] + p.v[3 * p.D + x]) / 4;
        CHECK(p.o(0, 0, 2, x) ==
              Approx(mean).epsilon(0).margin(attn_test::bounds::attention_factor(0, p.Lk, 0.0)));
      }
      w.assign(w.size(), kSentinel);
      std::vector<float> out_any(1, kSentinel);
      REQUIRE(attn::attention(ctx, p.tq(), p.tk(),
                              attn::make_bhsd<const float>(any.data(), p.B, p.H, p.Lk, 0),
                              attn::make_bhsd(out_any.data(), p.B, p.H, p.Lq, 0), o)
                  .ok());
      CHECK(out_any[0] == kSentinel);
      for (float x : w)
        CHECK((x >= 0.0f && x <= 1.0f));
    }
  }
}

TEST_CASE("matmul and self_attention: NaN and inf as IEEE says", "[hostile][ieee]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> a(3 * 4, 1.0f), b(4 * 5, 1.0f), c(3 * 5, kSentinel);
    const auto av = attn::make_matrix<const float>(a.data(), 3, 4);
    const auto bv = attn::make_matrix<const float>(b.data(), 4, 5);
    a[1 * 4 + 2] = nan_f();  // row 1 of c is NaN, the others are 4
    REQUIRE(
        attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, attn::make_matrix(c.data(), 3, 5))
            .ok());
    for (std::size_t i = 0; i < 15; ++i)
      CHECK((i / 5 == 1 ? std::isnan(c[i]) : c[i] == 4.0f));
    // alpha == 0 is arithmetic, not a shortcut: 0 * (inf + ...) = NaN, as in the reference.
    a[1 * 4 + 2] = inf_f();
    std::vector<float> want(15);
    REQUIRE(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no,
                         attn::make_matrix(c.data(), 3, 5), 0.0f, 0.0f)
                .ok());
    REQUIRE(attn::reference::matmul(av, Transpose::no, bv, Transpose::no,
                                    attn::make_matrix(want.data(), 3, 5), 0.0f, 0.0f)
                .ok());
    for (std::size_t i = 0; i < 15; ++i) {
      CHECK((i / 5 == 1 ? std::isnan(c[i]) : c[i] == 0.0f));
      CHECK(std::isnan(c[i]) == std::isnan(want[i]));
    }
    // An infinity in any k step, including the last of an odd k (the narrow no-packing kernel
    // takes k steps in pairs, the last one against a zero row), gives inf, never NaN.
    for (std::size_t k : {1, 3, 5, 17}) {
      for (std::size_t n : {3, 16, 33}) {
        for (std::size_t at : {std::size_t{0}, k - 1}) {
          INFO("k " << k << " n " << n << " inf at " << at);
          std::vector<float> ak(3 * k, 1.0f), bk(k * n, 1.0f), ck(3 * n, kSentinel);
          ak[1 * k + at] = inf_f();
          REQUIRE(attn::matmul(ctx, attn::make_matrix<const float>(ak.data(), 3, k), Transpose::no,
                               attn::make_matrix<const float>(bk.data(), k, n), Transpose::no,
                               attn::make_matrix(ck.data(), 3, n))
                      .ok());
          for (std::size_t i = 0; i < 3 * n; ++i)
            CHECK(ck[i] == (i / n == 1 ? inf_f() : static_cast<float>(k)));
        }
      }
    }
    // beta == NaN reads c: every entry NaN.
    REQUIRE(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no,
                         attn::make_matrix(c.data(), 3, 5), 1.0f, nan_f())
                .ok());
    for (float x : c)
      CHECK(std::isnan(x));

    // self_attention: NaN in one token of sequence 0 (bidirectional) spreads to every output of
    // that sequence through its key and value, and to no other sequence.
    const std::size_t batch = 2, seq = 3, dm = 4;
    std::vector<float> x = attn_test::Rng(8).uniform_vec(batch * seq * dm), w(dm * dm, 0.25f),
                       out(batch * seq * dm, kSentinel);
    x[1 * dm + 0] = nan_f();
    attn::SelfAttentionParams sp;
    sp.q.weight = sp.k.weight = sp.v.weight = attn::make_matrix<const float>(w.data(), dm, dm);
    REQUIRE(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), batch * seq, dm),
                                 batch, sp, attn::make_matrix(out.data(), batch * seq, dm))
                .ok());
    for (std::size_t i = 0; i < out.size(); ++i)
      CHECK(std::isnan(out[i]) == (i < seq * dm));
  }
}

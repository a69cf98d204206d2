// Status, Isa, Context and the view helpers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#endif
#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "core/context_state.hpp"
#include "core/large_alloc.hpp"
#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

using attn::Isa;

TEST_CASE("Status carries a code and a message", "[status]") {
  const attn::Status ok;
  CHECK(ok.ok());
  CHECK(ok.code() == attn::StatusCode::ok);
  CHECK(std::string(ok.message()).empty());
  const auto err = attn::Status::Error(attn::StatusCode::invalid_argument, "f: %s is %d", "n", 3);
  CHECK_FALSE(err.ok());
  CHECK(err.code() == attn::StatusCode::invalid_argument);
  CHECK(std::string(err.message()) == "f: n is 3");
  CHECK(std::string(attn::status_code_name(attn::StatusCode::out_of_memory)) == "out_of_memory");
  const std::string longer(1000, 'x');
  const auto truncated = attn::Status::Error(attn::StatusCode::unsupported, "%s", longer.c_str());
  CHECK(std::string(truncated.message()).size() == attn::Status::kMaxMessage - 1);
}

// status_code_name names every StatusCode as its enumerator is spelled (include/attn/status.hpp:
// "ok", "invalid_argument", "unsupported", "out_of_memory"), and a value outside the enum (a
// StatusCode cast from an int) gets "unknown", never a null pointer.
TEST_CASE("status_code_name names every code and unknown outside the enum", "[status]") {
  using attn::StatusCode;
  CHECK(std::string(attn::status_code_name(StatusCode::ok)) == "ok");
  CHECK(std::string(attn::status_code_name(StatusCode::invalid_argument)) == "invalid_argument");
  CHECK(std::string(attn::status_code_name(StatusCode::unsupported)) == "unsupported");
  CHECK(std::string(attn::status_code_name(StatusCode::out_of_memory)) == "out_of_memory");
  for (int v : {-1, 4, 5, 255, 1 << 30}) {
    INFO("value " << v);
    const char* name = attn::status_code_name(static_cast<StatusCode>(v));
    REQUIRE(name != nullptr);
    CHECK(std::string(name) == "unknown");
  }
  // The name of a Status's own code.
  const auto s = attn::Status::Error(StatusCode::unsupported, "x");
  CHECK(std::string(attn::status_code_name(s.code())) == "unsupported");
}

TEST_CASE("ISA names parse back and scalar is always supported", "[isa]") {
  // kAllIsas holds the enumerators 0..n-1, and isa_name (a switch over all of them: -Wswitch)
  // knows none after them, so an enumerator missing from kAllIsas fails here.
  const std::size_t n = std::size(attn::kAllIsas);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(static_cast<std::size_t>(attn::kAllIsas[i]) == i);
  CHECK(std::string(attn::isa_name(static_cast<Isa>(n))) == "unknown");
  for (Isa isa : attn::kAllIsas) {
    CHECK(std::string(attn::isa_name(isa)) != "unknown");
    Isa parsed = Isa::neon;
    REQUIRE(attn::parse_isa(attn::isa_name(isa), &parsed));
    CHECK(parsed == isa);
  }
  Isa unchanged = Isa::avx2;
  CHECK_FALSE(attn::parse_isa("avx3", &unchanged));
  CHECK_FALSE(attn::parse_isa(nullptr, &unchanged));
  CHECK(unchanged == Isa::avx2);
  CHECK(attn::isa_supported(Isa::scalar));
  CHECK(attn::isa_supported(attn::best_isa()));
#if defined(__x86_64__)
  CHECK_FALSE(attn::isa_supported(Isa::neon));
#elif defined(__aarch64__)
  CHECK(attn::isa_supported(Isa::neon));
  CHECK_FALSE(attn::isa_supported(Isa::avx2));
#endif
}

TEST_CASE(
    "each supported ISA has its own kernel table, and x86 detection agrees with the "
    "compiler's",
    "[isa]") {
  // A table copied from another ISA's file keeps that ISA's Kernels::isa; an ISA whose objects
  // CMake did not build (not in ATTN_ISAS) has no table and is silently unsupported, which only
  // an independent look at the CPU catches: __builtin_cpu_supports (libgcc's or compiler-rt's
  // CPUID and XGETBV).
  for (Isa isa : attn::kAllIsas) {
    INFO(attn::isa_name(isa));
    if (!attn::isa_supported(isa)) continue;
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    CHECK(kern->isa == isa);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (attn_test::emulated()) return;  // qemu's CPU models: ATTN_TEST_EXPECT_ISAS checks them
  __builtin_cpu_init();
  CHECK(attn::isa_supported(Isa::sse2));
  CHECK(attn::isa_supported(Isa::avx2) ==
        (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  CHECK(attn::isa_supported(Isa::avx512) == (ATTN_TEST_AVX512_BUILT && avx512));
#endif
}

TEST_CASE("Context defaults, threads and ISA selection", "[context]") {
  attn::Context ctx;
  const char* env = std::getenv("ATTN_ISA");
  if (env == nullptr) {
    CHECK(ctx.isa() == attn::best_isa());
    CHECK(ctx.init_status().ok());
  }
  CHECK(ctx.num_threads() == 1);
  CHECK(ctx.set_num_threads(3).ok());
  CHECK(ctx.num_threads() == 3);
  const attn::Status bad = ctx.set_num_threads(0);
  CHECK(bad.code() == attn::StatusCode::invalid_argument);
  CHECK(std::string(bad.message()).find("0") != std::string::npos);
  CHECK(ctx.num_threads() == 3);
  const Isa before = ctx.isa();
  const attn::Status not_an_isa = ctx.set_isa(static_cast<Isa>(42));
  CHECK(not_an_isa.code() == attn::StatusCode::invalid_argument);
  CHECK(std::string(not_an_isa.message()) == "Context::set_isa: isa (42) is not an attn::Isa");
  CHECK(ctx.isa() == before);
  for (Isa isa : attn::kAllIsas) {
    const attn::Status s = ctx.set_isa(isa);
    if (attn::isa_supported(isa)) {
      CHECK(s.ok());
      CHECK(ctx.isa() == isa);
    } else {
      CHECK(s.code() == attn::StatusCode::unsupported);
      CHECK(std::string(s.message()).find(attn::isa_name(isa)) != std::string::npos);
      CHECK(ctx.isa() != isa);
    }
  }
  attn::Context moved = std::move(ctx);
  CHECK(moved.num_threads() == 3);
}

TEST_CASE("Move assignment hands over the state and frees the target's own", "[context]") {
  // include/attn/context.hpp: a Context is movable; the moved-from one has no state (its calls
  // answer out_of_memory) until something is moved into it; self-move-assignment changes nothing.
  // The target's own arena is freed (ASan's leak check in CI sees it otherwise).
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
  const auto works = [&](attn::Context& ctx) {
    float c[4] = {0, 0, 0, 0};
    const attn::Status s =
        attn::matmul(ctx, attn::MatrixView<const float>{a, 2, 3, 3}, attn::Transpose::no,
                     {b, 3, 2, 2}, attn::Transpose::no, attn::MatrixView<float>{c, 2, 2, 2});
    INFO(s.message());
    return s.ok() && c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11;
  };
  attn::Context source, target;
  REQUIRE(source.set_num_threads(3).ok());
  REQUIRE(source.reserve_scratch(1 << 16).ok());
  REQUIRE(target.reserve_scratch(1 << 12).ok());
  const std::size_t held = source.scratch_bytes();
  target = std::move(source);
  CHECK(target.num_threads() == 3);
  CHECK(target.scratch_bytes() == held);
  CHECK(works(target));
  CHECK(source.init_status().code() == attn::StatusCode::out_of_memory);
  CHECK_FALSE(works(source));
  attn::Context& same = target;
  target = std::move(same);
  CHECK(target.num_threads() == 3);
  CHECK(works(target));
  source = std::move(target);  // into a moved-from Context
  CHECK(works(source));
  CHECK(source.num_threads() == 3);
  CHECK(target.init_status().code() == attn::StatusCode::out_of_memory);
}

TEST_CASE("ATTN_ISA selects the ISA, and an unsupported one fails every call", "[context]") {
  const char* old = std::getenv("ATTN_ISA");
  const std::string saved = old ? old : "";
  ::setenv("ATTN_ISA", "scalar", 1);
  {
    attn::Context ctx;
    CHECK(ctx.init_status().ok());
    CHECK(ctx.isa() == Isa::scalar);
  }
  ::setenv("ATTN_ISA", "not-an-isa", 1);
  {
    attn::Context ctx;
    CHECK(ctx.init_status().code() == attn::StatusCode::invalid_argument);
    float x = 1.0f, y = 0.0f;
    const attn::Status s = attn::exp(ctx, &x, &y, 1);
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(std::string(s.message()).find("not-an-isa") != std::string::npos);
    CHECK(y == 0.0f);
    REQUIRE(ctx.set_isa(Isa::scalar).ok());
    CHECK(attn::exp(ctx, &x, &y, 1).ok());
    CHECK(y == Approx(2.7182817f));
  }
#if defined(__x86_64__)
  ::setenv("ATTN_ISA", "neon", 1);
  {
    attn::Context ctx;
    CHECK(ctx.init_status().code() == attn::StatusCode::unsupported);
  }
#endif
  if (old) {
    ::setenv("ATTN_ISA", saved.c_str(), 1);
  } else {
    ::unsetenv("ATTN_ISA");
  }
}

namespace {

// Every routine through `ctx`, on small valid arguments: each must fail with `code`, the message
// holding `words`, and write nothing.
void every_routine_fails(attn::Context& ctx, attn::StatusCode code, const char* words) {
  constexpr float kSentinel = 12345.0f;
  std::vector<float> in(64, 0.5f), out(64, kSentinel);
  const auto expect = [&](const attn::Status& s, const char* routine) {
    INFO(routine << ": " << s.message());
    CHECK(s.code() == code);
    CHECK(std::string(s.message()).find(words) != std::string::npos);
  };
  float* o = out.data();
  const float* i = in.data();
  expect(attn::exp(ctx, i, o, 4), "exp");
  expect(attn::softmax(ctx, {i, 2, 4, 4}, {o, 2, 4, 4}), "softmax");
  expect(attn::matmul(ctx, {i, 2, 4, 4}, attn::Transpose::no, {i, 4, 3, 3}, attn::Transpose::no,
                      {o, 2, 3, 3}),
         "matmul");
  attn::PackedMatrix packed;
  expect(attn::pack_matrix(ctx, {i, 4, 3, 3}, attn::Transpose::no, &packed), "pack_matrix");
  expect(
      attn::attention(ctx, attn::make_bhsd<const float>(i, 1, 1, 2, 4),
                      attn::make_bhsd<const float>(i, 1, 1, 3, 4),
                      attn::make_bhsd<const float>(i, 1, 1, 3, 4), attn::make_bhsd(o, 1, 1, 2, 4)),
      "attention");
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = {i, 4, 4, 4};
  expect(attn::self_attention(ctx, {i, 3, 4, 4}, 1, p, {o, 3, 4, 4}), "self_attention");
  attn::PackedSelfAttention layer;
  expect(attn::pack_self_attention(ctx, p, &layer), "pack_self_attention");
  // The packed overloads fail on the Context before they look at their (empty) operands.
  expect(attn::matmul(ctx, {i, 2, 4, 4}, attn::Transpose::no, packed, {o, 2, 3, 3}),
         "matmul, packed");
  expect(attn::self_attention(ctx, {i, 3, 4, 4}, 1, layer, {}, {o, 3, 4, 4}),
         "self_attention, packed");
  CHECK(packed.empty());
  CHECK(layer.empty());
  for (float x : out)
    CHECK(x == kSentinel);
}

}  // namespace

TEST_CASE("every routine fails on a Context with a bad ATTN_ISA or no state", "[context]") {
  // README's error table: an ATTN_ISA that names no ISA is invalid_argument from every routine
  // (until set_isa succeeds); a Context without state (moved from) is out_of_memory, from the
  // routines and the setters.
  const char* old = std::getenv("ATTN_ISA");
  const std::string saved = old ? old : "";
  ::setenv("ATTN_ISA", "not-an-isa", 1);
  {
    attn::Context ctx;
    every_routine_fails(ctx, attn::StatusCode::invalid_argument, "not-an-isa");
  }
  if (old) {
    ::setenv("ATTN_ISA", saved.c_str(), 1);
  } else {
    ::unsetenv("ATTN_ISA");
  }
  attn::Context ctx;
  attn::Context taken = std::move(ctx);
  every_routine_fails(ctx, attn::StatusCode::out_of_memory, "no state");
  CHECK(ctx.set_num_threads(2).code() == attn::StatusCode::out_of_memory);
  CHECK(ctx.set_isa(Isa::scalar).code() == attn::StatusCode::out_of_memory);
  CHECK(ctx.init_status().code() == attn::StatusCode::out_of_memory);
  CHECK(taken.init_status().ok());
}

TEST_CASE("a Context in use by one call refuses every other call and setter", "[context]") {
  // README "Thread safety": every call and setter holds the Context while it runs; another one
  // through it meanwhile is invalid_argument and writes nothing.
  attn::Context ctx;
  REQUIRE(ctx.reserve_scratch(4096).ok());
  const std::size_t held = ctx.scratch_bytes();
  ctx.state()->busy.store(true);  // as a call on another thread would hold it
  every_routine_fails(ctx, attn::StatusCode::invalid_argument,
                      "ctx is in use by another call (a Context serves one call at a time");
  const auto refused = [](const attn::Status& s, const char* fn) {
    INFO("message: " << s.message());
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(std::string(fn) + ": ctx is in use", 0) == 0);
  };
  refused(ctx.set_num_threads(2), "Context::set_num_threads");
  refused(ctx.set_isa(Isa::scalar), "Context::set_isa");
  refused(ctx.reserve_scratch(held * 2), "Context::reserve_scratch");
  ctx.release_scratch();  // nothing to report: it leaves the arena alone
  CHECK(ctx.num_threads() == 1);
  CHECK(ctx.scratch_bytes() == held);

  ctx.state()->busy.store(false);
  std::vector<float> a(8 * 8, 1.0f), c(8 * 8, 7.0f);
  const auto av = attn::make_matrix<const float>(a.data(), 8, 8);
  CHECK(attn::matmul(ctx, av, attn::Transpose::no, av, attn::Transpose::no,
                     attn::make_matrix(c.data(), 8, 8))
            .ok());
  CHECK(c == std::vector<float>(8 * 8, 8.0f));
  CHECK_FALSE(ctx.state()->busy.load());  // each call lets go of it, on success
  CHECK(attn::matmul(ctx, av, attn::Transpose::yes, av, attn::Transpose::no,
                     attn::make_matrix(c.data(), 8, 9))
            .code() == attn::StatusCode::invalid_argument);
  CHECK_FALSE(ctx.state()->busy.load());  // and on error
  CHECK(ctx.set_num_threads(2).ok());
  CHECK_FALSE(ctx.state()->busy.load());
}

TEST_CASE("two threads sharing one Context get results or the in-use error, never a race",
          "[context]") {
  // The misuse README warns of: calls that overlap are refused (invalid_argument) and the others
  // compute the right thing. One thread frees the arena between its calls, so that each of its
  // calls allocates a new one: without the guard the other thread's call would read freed memory
  // (ASan's heap-use-after-free in CI's sanitizer run).
  const std::size_t n = 48, d = 16;
  attn_test::Rng rng(9);
  const auto q = rng.uniform_vec(n * d), k = rng.uniform_vec(n * d), v = rng.uniform_vec(n * d);
  const auto tq = attn::make_bhsd<const float>(q.data(), 1, 1, n, d);
  const auto tk = attn::make_bhsd<const float>(k.data(), 1, 1, n, d);
  const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, n, d);
  std::vector<float> want(n * d);
  {
    attn::Context alone;
    REQUIRE(attn::attention(alone, tq, tk, tv, attn::make_bhsd(want.data(), 1, 1, n, d), {}).ok());
  }
  attn::Context shared;
  const int calls = attn_test::emulated() ? 50 : 400;
  int ok[2] = {0, 0}, refused[2] = {0, 0}, wrong[2] = {0, 0};
  const auto worker = [&](int t) {
    std::vector<float> out(n * d);
    for (int i = 0; i < calls; ++i) {
      const attn::Status s =
          attn::attention(shared, tq, tk, tv, attn::make_bhsd(out.data(), 1, 1, n, d), {});
      if (s.ok()) {
        ++ok[t];
        wrong[t] += out != want;
      } else if (s.code() == attn::StatusCode::invalid_argument &&
                 std::string(s.message()).find("in use by another call") != std::string::npos) {
        ++refused[t];
      } else {
        ++wrong[t];
      }
      if (t == 0) shared.release_scratch();
    }
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  INFO("ok " << ok[0] << " + " << ok[1] << ", refused " << refused[0] << " + " << refused[1]);
  CHECK(wrong[0] + wrong[1] == 0);
  CHECK(ok[0] + refused[0] == calls);
  CHECK(ok[1] + refused[1] == calls);
  CHECK(ok[0] + ok[1] > 0);
}

#if defined(__unix__)
TEST_CASE("a process forked after a multi-thread call computes on its calling thread",
          "[context]") {
  // libgomp's worker pool does not survive fork(): a child's 2-thread call waited forever for
  // workers that the child does not have. The child's calls now run on its one thread, with the
  // same bits (any thread count gives the same), and one alarm ends a child that hangs.
  const std::size_t n = 128;  // 4 MFLOP: threaded with 2 threads
  attn_test::Rng rng(5);
  const auto a = rng.uniform_vec(n * n), b = rng.uniform_vec(n * n);
  std::vector<float> want(n * n), got(n * n);
  attn::Context ctx = attn_test::make_context(attn::best_isa(), 2);
  const auto run = [&](std::vector<float>* c) {
    return attn::matmul(ctx, attn::make_matrix<const float>(a.data(), n, n), attn::Transpose::no,
                        attn::make_matrix<const float>(b.data(), n, n), attn::Transpose::no,
                        attn::make_matrix(c->data(), n, n))
        .ok();
  };
  REQUIRE(run(&want));  // the parent's OpenMP team exists from here on
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: no Catch macro here, only its exit status
    alarm(attn_test::emulated() ? 300 : 30);
    const bool ok = run(&got) && got == want && run(&got) && got == want;
    attn_test::child_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << (WIFSIGNALED(status) ? " (killed: hung)" : ""));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  REQUIRE(run(&got));  // the parent keeps its threads
  CHECK(got == want);
}
#endif

TEST_CASE("Scratch arena grows once per shape", "[context]") {
  for (Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64);
    const auto av = attn::make_matrix<const float>(a.data(), 64, 64);
    const auto bv = attn::make_matrix<const float>(b.data(), 64, 64);
    // A^T takes the packed path, which needs scratch.
    REQUIRE(attn::matmul(ctx, av, attn::Transpose::yes, bv, attn::Transpose::no,
                         attn::make_matrix(c.data(), 64, 64))
                .ok());
    const std::size_t held = ctx.scratch_bytes();
    CHECK(held > 0);
    REQUIRE(attn::matmul(ctx, av, attn::Transpose::yes, bv, attn::Transpose::no,
                         attn::make_matrix(c.data(), 64, 64))
                .ok());
    CHECK(ctx.scratch_bytes() == held);
    CHECK(ctx.peak_scratch_bytes() >= held);
    ctx.release_scratch();
    CHECK(ctx.scratch_bytes() == 0);
  }
}

// README "Guarantees": attn's calls throw nothing, and say so to the compiler; a Status is
// [[nodiscard]] (a dropped one warns, which a test cannot observe without a compiler run).
static_assert(noexcept(attn::matmul(std::declval<attn::Context&>(), {}, attn::Transpose::no, {},
                                    attn::Transpose::no, {})));
static_assert(noexcept(attn::matmul(std::declval<attn::Context&>(), {}, attn::Transpose::no,
                                    std::declval<const attn::PackedMatrix&>(), {})));
static_assert(noexcept(attn::pack_matrix(std::declval<attn::Context&>(), {}, attn::Transpose::no,
                                         nullptr)));
static_assert(noexcept(attn::exp(std::declval<attn::Context&>(), nullptr, nullptr, 0)));
static_assert(noexcept(attn::softmax(std::declval<attn::Context&>(), {}, {})));
static_assert(noexcept(attn::attention(std::declval<attn::Context&>(), {}, {}, {}, {})));
static_assert(noexcept(attn::self_attention(std::declval<attn::Context&>(), {}, 1,
                                            attn::SelfAttentionParams{}, {})));
static_assert(noexcept(attn::pack_self_attention(std::declval<attn::Context&>(),
                                                 attn::SelfAttentionParams{}, nullptr)));
static_assert(noexcept(attn::self_attention(std::declval<attn::Context&>(), {}, 1,
                                            std::declval<const attn::PackedSelfAttention&>(),
                                            attn::AttentionOptions{}, {})));

TEST_CASE("reserve_scratch grows the arena ahead of the calls", "[context]") {
  attn::Context ctx;
  CHECK(ctx.reserve_scratch(0).ok());
  CHECK(ctx.scratch_bytes() == 0);
  REQUIRE(ctx.reserve_scratch(100000).ok());
  const std::size_t held = ctx.scratch_bytes();
  CHECK(held >= 100000);
  CHECK(ctx.peak_scratch_bytes() == held);
  CHECK(ctx.reserve_scratch(1000).ok());  // smaller: the same arena
  CHECK(ctx.scratch_bytes() == held);
  // A call whose scratch fits keeps it (A^T takes the packed path, which needs scratch).
  std::vector<float> a(64 * 64, 1.0f), c(64 * 64);
  const auto av = attn::make_matrix<const float>(a.data(), 64, 64);
  REQUIRE(attn::matmul(ctx, av, attn::Transpose::yes, av, attn::Transpose::no,
                       attn::make_matrix(c.data(), 64, 64))
              .ok());
  CHECK(ctx.scratch_bytes() == held);
  CHECK(c[0] == 64.0f);

  const attn::Status s = ctx.reserve_scratch(SIZE_MAX);
  INFO(s.message());
  CHECK(s.code() == attn::StatusCode::out_of_memory);
  CHECK(std::string(s.message()).find("reserve_scratch") != std::string::npos);
  CHECK(std::string(s.message()).find(std::to_string(SIZE_MAX)) != std::string::npos);
  CHECK(ctx.scratch_bytes() == held);

  attn::Context moved = std::move(ctx);
  const attn::Status moved_from = ctx.reserve_scratch(64);
  CHECK(moved_from.code() == attn::StatusCode::out_of_memory);
  CHECK(std::string(moved_from.message())
            .find("Context::reserve_scratch: the Context has no state") == 0);
  CHECK(moved.scratch_bytes() == held);
}

#if defined(__linux__)
static long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

TEST_CASE("reserve_scratch maps the arena's pages before the calls", "[context]") {
  // Below 2 MiB the arena is not advised for huge pages: 384 pages of 4 KiB, each a minor fault
  // on its first write unless reserve_scratch touched it (where transparent huge pages are
  // "always", a few huge pages instead, and this cannot tell). Not under qemu or valgrind, whose
  // memory is their own.
  if (attn_test::emulated()) return;
  constexpr std::size_t kBytes = 1536 * 1024;
  attn::Context ctx;
  REQUIRE(ctx.reserve_scratch(kBytes).ok());
  void* p = nullptr;
  REQUIRE(ctx.state()->scratch("test", kBytes, &p).ok());
  auto* c = static_cast<volatile char*>(p);
  const long before = minor_faults();
  for (std::size_t i = 0; i < kBytes; i += 4096)
    c[i] = 1;
  const long faults = minor_faults() - before;
  CHECK(faults <= 8);
}
#endif

#if defined(__linux__)
// The VmFlags of the mapping of /proc/self/smaps that holds p ("" where there is none).
static std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}
#endif

// Where a block of at least 2 MiB lies (alloc_large in core/large_alloc.hpp): on a 2 MiB boundary
// and, on Linux, advised for transparent huge pages (MADV_HUGEPAGE: VmFlags "hg" in
// /proc/self/smaps; not read under qemu or valgrind, whose mappings are their own, nor where the
// kernel has no transparent huge pages or smaps no VmFlags).
static void check_huge_block(const void* p) {
  CHECK(reinterpret_cast<std::uintptr_t>(p) % attn::detail::kHugePageBytes == 0);
#if defined(__linux__)
  const bool thp = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
  const std::string flags = vm_flags_at(p);
  if (!attn_test::emulated() && thp && !flags.empty()) {
    INFO(flags);
    CHECK(flags.find(" hg") != std::string::npos);
  }
#endif
}

TEST_CASE("A scratch arena of 2 MiB or more starts on a 2 MiB boundary", "[context]") {
  // ContextState::scratch (core/context.cpp): smaller arenas start on a 64-byte line.
  attn::Context ctx;
  REQUIRE(ctx.state() != nullptr);
  void* p = nullptr;
  REQUIRE(ctx.state()->scratch("test", 100000, &p).ok());
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  constexpr std::size_t kHuge = attn::detail::kHugePageBytes;
  REQUIRE(ctx.state()->scratch("test", 3 * kHuge / 2, &p).ok());
  check_huge_block(p);
  CHECK(ctx.scratch_bytes() >= 3 * kHuge / 2);
  void* again = nullptr;
  REQUIRE(ctx.state()->scratch("test", kHuge, &again).ok());  // no larger: the same arena
  CHECK(again == p);
}

TEST_CASE("A packed matrix of 2 MiB or more starts on a 2 MiB boundary", "[context][packed]") {
  // pack_matrix (matmul/packed_matrix.cpp) allocates its copy as the arena is allocated.
  attn::Context ctx;
  const std::size_t k = 700, n = 800;  // 2.24 MB as floats, at least that packed
  const std::vector<float> b(k * n, 0.5f);
  attn::PackedMatrix small, large;
  REQUIRE(attn::pack_matrix(ctx, {b.data(), 100, 100, n}, attn::Transpose::no, &small).ok());
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
  REQUIRE(attn::pack_matrix(ctx, {b.data(), k, n, n}, attn::Transpose::no, &large).ok());
  REQUIRE(large.bytes() >= attn::detail::kHugePageBytes);
  check_huge_block(large.data());
}

TEST_CASE("View helpers lay out BHSD and BSHD memory", "[views]") {
  float buf[2 * 3 * 4 * 5];
  const auto bhsd = attn::make_bhsd(buf, 2, 3, 4, 5);
  CHECK(&bhsd(1, 2, 3, 4) == &buf[((1 * 3 + 2) * 4 + 3) * 5 + 4]);
  const auto bshd = attn::make_bshd(buf, 2, 4, 3, 5);  // [batch 2, seq 4, heads 3, dim 5]
  CHECK(bshd.shape == std::array<std::size_t, 4>{2, 3, 4, 5});
  CHECK(&bshd(1, 2, 3, 4) == &buf[((1 * 4 + 3) * 3 + 2) * 5 + 4]);
  const auto strided = attn::make_bshd(buf, 1, 4, 3, 5, 20);
  CHECK(&strided(0, 1, 2, 0) == &buf[2 * 20 + 5]);
  const auto m = attn::make_matrix(buf, 3, 4);
  CHECK(&m(2, 3) == &buf[11]);
  // seq_slice: positions [first, first + count) with the same strides, also running backwards.
  const auto slice = attn::seq_slice(bshd, 1, 2);
  CHECK(slice.shape == std::array<std::size_t, 4>{2, 3, 2, 5});
  CHECK(slice.strides == bshd.strides);
  CHECK(&slice(1, 2, 1, 4) == &bshd(1, 2, 2, 4));
  CHECK(attn::seq_slice(bshd, 4, 0).data == bshd.data);  // empty: data as it was
  CHECK(attn::seq_slice(bshd, 2, 0).shape[2] == 0);
  attn::TensorView<float> back = bhsd;
  back.data += 3 * back.strides[2];
  back.strides[2] = -back.strides[2];  // positions 3, 2, 1, 0
  CHECK(&attn::seq_slice(back, 1, 3)(1, 1, 0, 2) == &bhsd(1, 1, 2, 2));
  // Beyond shape[2], overflow included: null data.
  CHECK(attn::seq_slice(bhsd, 0, 5).data == nullptr);
  CHECK(attn::seq_slice(bhsd, 5, 0).data == nullptr);
  CHECK(attn::seq_slice(bhsd, 2, SIZE_MAX).data == nullptr);
  CHECK(attn::seq_slice(bhsd, SIZE_MAX, 2).data == nullptr);
  CHECK(attn::seq_slice(bhsd, 2, SIZE_MAX).shape[2] == SIZE_MAX);
  // An offset beyond ptrdiff_t (a stride that view_stride saturated): null, no overflow.
  attn::TensorView<float> huge = bhsd;
  huge.strides[2] = PTRDIFF_MAX / 2 + 1;
  CHECK(attn::seq_slice(huge, 2, 1).data == nullptr);
  huge.strides[2] = -huge.strides[2];
  CHECK(attn::seq_slice(huge, 2, 1).data == nullptr);
  // A view without data (an absent mask or weights) stays without.
  attn::TensorView<float> absent{};
  absent.shape = {2, 3, 4, 5};
  CHECK(attn::seq_slice(absent, 1, 2).data == nullptr);
  CHECK(attn::seq_slice(absent, 1, 2).shape[2] == 2);
}

// Where CI knows the CPU (a qemu model: ATTN_TEST_EXPECT_ISAS="scalar,sse2" for -cpu Nehalem),
// detection must find exactly the ISAs listed, the last one best; the others are unsupported
// and Context refuses them.
TEST_CASE("ISA detection finds exactly the ISAs ATTN_TEST_EXPECT_ISAS lists", "[isa]") {
  const char* env = std::getenv("ATTN_TEST_EXPECT_ISAS");
  if (env == nullptr || *env == '\0') {
    SUCCEED("ATTN_TEST_EXPECT_ISAS is not set: the CPU is not known in advance");
    return;
  }
  INFO("ATTN_TEST_EXPECT_ISAS=" << env);
  std::vector<Isa> expected;
  std::string list = env;
  for (std::size_t pos = 0; pos <= list.size();) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string name = list.substr(pos, comma - pos);
    Isa isa;
    INFO("ISA name '" << name << "'");
    REQUIRE(attn::parse_isa(name.c_str(), &isa));
    expected.push_back(isa);
    pos = comma + 1;
  }
  for (Isa isa : attn::kAllIsas) {
    const bool want = std::find(expected.begin(), expected.end(), isa) != expected.end();
    INFO("isa " << attn::isa_name(isa));
    CHECK(attn::isa_supported(isa) == want);
    attn::Context ctx;
    CHECK(ctx.set_isa(isa).ok() == want);
  }
  CHECK(attn::isa_name(attn::best_isa()) == std::string(attn::isa_name(expected.back())));
}

// pack_matrix and matmul with a PackedMatrix: against reference::matmul on every ISA (tolerance
// derived in support/matmul_check.hpp), both of gemm_prepacked's loops, thread counts, the
// packed layout's edges, and every argument error.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/matmul_check.hpp"
#include "support/narrow_blocking.hpp"
#include "support/test_support.hpp"

using attn::MatrixView;
using attn::Transpose;
using attn_test::BForm;
using attn_test::Case;

namespace {

constexpr float kSentinel = 12345.0f;

std::string message_of(const attn::Status& s) {
  return s.message() ? s.message() : "";
}

// Requires that each case takes the loop want(kern, cs) names on every ISA, op(A) passed as
// matmul passes it.
template <std::size_t N, class Want>
void check_loops(const Case (&cases)[N], const Want& want) {
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    for (const Case& cs : cases) {
      INFO("isa " << attn::isa_name(isa) << " m " << cs.m << " k " << cs.k);
      const std::size_t lda = (cs.ta == Transpose::no ? cs.k : cs.m) + cs.pad;
      const attn::detail::GemmOperand a = cs.ta == Transpose::no
                                              ? attn::detail::GemmOperand{nullptr, lda, 1}
                                              : attn::detail::GemmOperand{nullptr, 1, lda};
      CHECK(attn::detail::gemm_prepacked_loop(*kern, {cs.m, cs.n, cs.k}, a) == want(*kern, cs));
    }
  }
}

}  // namespace

TEST_CASE("packed matmul matches the reference on small and edge shapes", "[matmul][packed]") {
  // Every transpose of A and B, m, n, k in 1..17 around the tiles (n past a multiple of every
  // ISA's NR: 4, 8, 12, 16, 64, so the last panel is padded with zeros), strides past the row,
  // alpha and beta in {1, -0.5, 0} (beta 0 with NaN in C).
  const std::size_t sizes[] = {1, 2, 3, 5, 7, 13, 17};
  attn_test::Rng rng(7);
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (std::size_t m : sizes) {
      for (std::size_t n : sizes) {
        for (std::size_t k : {std::size_t{1}, std::size_t{3}, std::size_t{17}}) {
          for (int t = 0; t < 4; ++t) {
            const Case cs{m,
                          n,
                          k,
                          t & 1 ? Transpose::yes : Transpose::no,
                          t & 2 ? Transpose::yes : Transpose::no,
                          t == 3 ? -0.5f : 1.0f,
                          t == 1 ? 0.0f : (t == 2 ? -0.5f : 1.0f),
                          static_cast<std::size_t>(t)};
            INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k << " t "
                        << t);
            attn_test::run_case(ctx, cs, rng, nullptr, BForm::packed);
          }
        }
      }
    }
  }
}

TEST_CASE("packed matmul: few rows read in place against each packed sliver", "[matmul][packed]") {
  // Up to Kernels::gemm_sliver_max_rows rows of a row-major A (AVX-512 and NEON 48, AVX2 32, SSE2
  // 2): PrepackedLoop::rows (required below; scalar, and SSE2 past 2 rows, take the streamed loop),
  // the prefetching tile over each sliver, the threads splitting the slivers. Rows 1 and 2 (every
  // SIMD ISA), 7 and 8 (AVX-512's 8 x 32 tiles on each half of a sliver), 13 (near-equal groups of
  // at most 6: 5 + 4 + 4; NEON's of 8: 7 + 6), 31 and 48; k = 1100: 2 KC blocks on AVX-512 with a 2
  // MiB L2 (KC 1024; 3 with KC 512), 5 on AVX2 and NEON, 9 on SSE2 (KC 128), the last shorter, beta
  // applied only in the first; n = 180 and 131: last panels of 52 and 3 columns of 64 (AVX-512; 4
  // and 3 of 16 on AVX2); strides past the row; threads 1, 2 and 3 bit-identical. Scalar has no
  // such tile: the streamed loop takes these.
  const Case cases[] = {
      {1, 180, 1100, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {2, 131, 1100, Transpose::no, Transpose::yes, -0.5f, 1.0f, 3},
      {7, 180, 300, Transpose::no, Transpose::no, 2.0f, 0.5f, 1},
      {8, 131, 1100, Transpose::no, Transpose::yes, 1.0f, -0.5f, 0},
      {13, 180, 600, Transpose::no, Transpose::no, 1.0f, 1.0f, 2},
      {31, 131, 1100, Transpose::no, Transpose::no, -0.5f, 0.0f, 1},
      {48, 180, 130, Transpose::no, Transpose::yes, 1.0f, 0.5f, 0},
  };
  check_loops(cases, [](const attn::detail::Kernels& kern, const Case& cs) {
    return kern.gemm_prefetch_sliver != nullptr && cs.m <= kern.gemm_sliver_max_rows
               ? attn::detail::PrepackedLoop::rows
               : attn::detail::PrepackedLoop::streamed;
  });
  attn_test::run_across_threads(cases, {1, 2, 3}, 53, BForm::packed);
}

TEST_CASE("packed matmul: the streamed loop over packed slivers, several KC blocks",
          "[matmul][packed]") {
  // op(A)'s packed rows within half of L2 and more rows than the rows loop takes (or A^T):
  // PrepackedLoop::streamed (required below), the threads splitting the slivers. k = 1100 and
  // n as above; 1 and 13 rows of an A^T (with a stride past its row: one row of A^T without one
  // is a row-major row and takes the rows loop), 49 and 60 rows of a row-major A (past every ISA's
  // gemm_sliver_max_rows); beta applied only in the first KC block; threads 1, 2 and 3
  // bit-identical (the first case, 0.4 MFLOP, runs on one thread whatever the count: below gemm's
  // 2 MFLOP threshold).
  const Case cases[] = {
      {1, 180, 1100, Transpose::yes, Transpose::no, 1.0f, 0.0f, 1},
      {13, 131, 1100, Transpose::yes, Transpose::yes, 1.0f, -0.5f, 1},
      {49, 180, 300, Transpose::no, Transpose::yes, -0.5f, 1.0f, 3},
      {60, 180, 130, Transpose::no, Transpose::no, 2.0f, 0.5f, 2},
  };
  check_loops(cases, [](const attn::detail::Kernels&, const Case&) {
    return attn::detail::PrepackedLoop::streamed;
  });
  attn_test::run_across_threads(cases, {1, 2, 3}, 51, BForm::packed);
}

TEST_CASE("packed matmul: the Goto loop nest over packed blocks", "[matmul][packed]") {
  // op(A)'s packed rows beyond half of L2: gemm_prepacked's Goto loop (MC blocks of rows split
  // among the threads, B's KC x NC blocks read where pack_matrix put them). Through the public
  // API: the first multiple of 64 rows past half of L2 for this ISA's KC, k = 1100 (several KC
  // blocks on every ISA but AVX-512's 1024 + 76), n = 70 (a padded last panel on every ISA).
  // Not under an emulator (ATTN_TEST_EMULATED: a thousand rows or more, minutes under qemu's AVX2),
  // where the next test case checks the same loop on every ISA.
  if (attn_test::emulated()) return;
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    std::size_t m = 64;
    while (attn::detail::gemm_prepacked_loop(*kern, {m, 70, 1100}, {nullptr, 1, m + 5}) !=
           attn::detail::PrepackedLoop::packed)
      m += 64;
    INFO("isa " << attn::isa_name(isa) << " m " << m);
    attn::Context ctx = attn_test::make_context(isa, 2);
    attn_test::Rng rng(61);
    attn_test::run_case(ctx, {m + 5, 70, 1100, Transpose::yes, Transpose::no, -0.5f, 0.5f, 1}, rng,
                        nullptr, BForm::packed);
  }
}

TEST_CASE("packed matmul: the Goto loop nest with several NC blocks, any thread count",
          "[matmul][packed]") {
  // The driver itself on each ISA's kernels with its blocking narrowed (KC 1024, NC one panel of
  // NR), so that a few hundred rows take the Goto loop (over 512 under qemu's 4 MiB L2) and n = 2
  // NR + 3 spans three NC blocks (the last a padded panel): each block of B starts at pc *
  // round_up(n, NR) + jc * kc. k = 1100: KC blocks of 1024 and 76. Threads 1, 2 and 3 (under an
  // emulator 1 and 2) bit-identical, the first checked against the reference.
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels kern = attn_test::narrow_blocking_kernels(isa);
    const std::size_t n = 2 * kern.gemm_nr + 3, k = 1100;
    std::size_t m = 64;
    while (attn::detail::gemm_prepacked_loop(kern, {m, n, k}, {nullptr, k + 1, 1}) !=
           attn::detail::PrepackedLoop::packed)
      m += 64;
    m += 7;
    INFO("isa " << attn::isa_name(isa) << " m " << m);
    const Case cs{m, n, k, Transpose::no, Transpose::yes, 2.0f, -0.5f, 1};
    attn_test::Rng rng(71);
    const std::size_t lda = k + 1, ldb = k + 1, ldc = n + 1;
    const auto a = rng.uniform_vec(m * lda), b = rng.uniform_vec(n * ldb),
               c0 = rng.uniform_vec(m * ldc);
    const MatrixView<const float> av{a.data(), m, k, lda}, bv{b.data(), n, k, ldb};
    std::vector<float> packed(attn::detail::gemm_prepacked_floats(kern, k, n) + 16);
    float* aligned =
        packed.data() + (16 - reinterpret_cast<std::uintptr_t>(packed.data()) / 4 % 16) % 16;
    attn::detail::gemm_prepack_b(kern, 1, k, n, {b.data(), 1, ldb}, aligned);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      if (threads == 3 && attn_test::emulated()) break;
      INFO("threads " << threads);
      attn_test::AlignedScratch scratch(
          attn::detail::gemm_prepacked_scratch_bytes(kern, threads, {m, n, k}, {a.data(), lda, 1}));
      void* scratch_at = scratch.get();
      auto c = c0;
      attn::detail::gemm_prepacked(kern, threads, {m, n, k}, cs.alpha, {a.data(), lda, 1}, aligned,
                                   cs.beta, c.data(), ldc, scratch_at);
      if (first.empty()) {
        attn_test::check_result(cs, av, bv, c0, c);
        first = c;
      } else {
        CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("packed matmul with k == 0 scales c by beta, and n == 0 writes nothing",
          "[matmul][packed]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    attn::PackedMatrix empty_k;
    REQUIRE(attn::pack_matrix(ctx, {nullptr, 0, 2, 2}, Transpose::no, &empty_k).ok());
    CHECK(!empty_k.empty());
    CHECK(empty_k.bytes() == 0);
    std::vector<float> c = {1, 2, 3, 4}, nan_c(4, attn_test::nan_f());
    const MatrixView<const float> a{nullptr, 2, 0, 0};
    REQUIRE(attn::matmul(ctx, a, Transpose::no, empty_k, {c.data(), 2, 2, 2}, 1, -0.5f).ok());
    CHECK(c == std::vector<float>{-0.5f, -1, -1.5f, -2});
    REQUIRE(attn::matmul(ctx, a, Transpose::no, empty_k, {nan_c.data(), 2, 2, 2}, 1, 0).ok());
    CHECK(nan_c == std::vector<float>{0, 0, 0, 0});
    attn::PackedMatrix empty_n;
    std::vector<float> b(3, 1.0f);
    REQUIRE(attn::pack_matrix(ctx, {b.data(), 3, 0, 1}, Transpose::no, &empty_n).ok());
    CHECK(empty_n.rows() == 3);
    CHECK(empty_n.cols() == 0);
    std::vector<float> a2(6, 1.0f);
    CHECK(
        attn::matmul(ctx, {a2.data(), 2, 3, 3}, Transpose::no, empty_n, {c.data(), 2, 0, 1}).ok());
  }
}

TEST_CASE("a PackedMatrix moves, holds its ISA and is independent of its source",
          "[matmul][packed]") {
  attn_test::Rng rng(3);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa, 2);
    std::vector<float> a = rng.uniform_vec(9 * 70), b = rng.uniform_vec(70 * 33);
    const MatrixView<const float> av{a.data(), 9, 70, 70}, bv{b.data(), 70, 33, 33};
    attn::PackedMatrix packed;
    CHECK(packed.empty());
    REQUIRE(attn::pack_matrix(ctx, bv, Transpose::no, &packed).ok());
    CHECK(packed.isa() == isa);
    CHECK(packed.bytes() >= 70 * 33 * sizeof(float));
    std::vector<float> want(9 * 33), got(9 * 33);
    REQUIRE(attn::matmul(ctx, av, Transpose::no, packed, {want.data(), 9, 33, 33}).ok());
    // The packed copy stands alone: the source may change or go away.
    std::fill(b.begin(), b.end(), attn_test::nan_f());
    attn::PackedMatrix moved(std::move(packed));
    CHECK(packed.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK(!moved.empty());
    REQUIRE(attn::matmul(ctx, av, Transpose::no, moved, {got.data(), 9, 33, 33}).ok());
    CHECK(got == want);
    attn::PackedMatrix assigned;
    assigned = std::move(moved);
    CHECK(moved.empty());  // NOLINT(bugprone-use-after-move)
    REQUIRE(attn::matmul(ctx, av, Transpose::no, assigned, {got.data(), 9, 33, 33}).ok());
    CHECK(got == want);
    // Packing again into a PackedMatrix replaces its contents.
    std::vector<float> b2 = rng.uniform_vec(70 * 5);
    REQUIRE(attn::pack_matrix(ctx, {b2.data(), 5, 70, 70}, Transpose::yes, &assigned).ok());
    CHECK(assigned.rows() == 70);
    CHECK(assigned.cols() == 5);
  }
}

TEST_CASE("packed matmul rejects bad arguments and writes nothing", "[matmul][packed][args]") {
  attn::Context ctx;
  REQUIRE(ctx.init_status().ok());
  std::vector<float> a(6 * 4, 1.0f), b(4 * 5, 1.0f), c(6 * 5, kSentinel);
  const MatrixView<const float> av{a.data(), 6, 4, 4}, bv{b.data(), 4, 5, 5};
  const auto c_untouched = [&] {
    for (float x : c)
      if (x != kSentinel) return false;
    return true;
  };
  attn::PackedMatrix packed;
  REQUIRE(attn::pack_matrix(ctx, bv, Transpose::no, &packed).ok());

  SECTION("an empty PackedMatrix") {
    attn::PackedMatrix none;
    const attn::Status s = attn::matmul(ctx, av, Transpose::no, none, {c.data(), 6, 5, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("empty PackedMatrix") != std::string::npos);
  }
  SECTION("inner dimensions") {
    const attn::Status s =
        attn::matmul(ctx, {a.data(), 4, 6, 6}, Transpose::no, packed, {c.data(), 4, 5, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("a is 4 x 6 but the packed b is 4 x 5") != std::string::npos);
  }
  SECTION("c's shape") {
    const attn::Status s = attn::matmul(ctx, av, Transpose::no, packed, {c.data(), 6, 4, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("c is 6 x 4") != std::string::npos);
  }
  SECTION("c overlapping a") {
    std::vector<float> ac(6 * 5, kSentinel);
    const attn::Status s =
        attn::matmul(ctx, {ac.data(), 6, 4, 4}, Transpose::no, packed, {ac.data() + 1, 6, 5, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    for (float x : ac)
      CHECK(x == kSentinel);
  }
  SECTION("c inside the packed copy") {
    float* inside = const_cast<float*>(packed.data());
    const attn::Status s = attn::matmul(ctx, av, Transpose::no, packed, {inside, 1, 5, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("the packed b") != std::string::npos);
  }
  SECTION("a packed for another ISA") {
    const auto isas = attn_test::test_isas();
    if (isas.size() < 2) return;  // one ISA only (ATTN_ISA set): nothing to mismatch
    attn::Context other =
        attn_test::make_context(isas.front() == ctx.isa() ? isas.back() : isas.front());
    const attn::Status s = attn::matmul(other, av, Transpose::no, packed, {c.data(), 6, 5, 5});
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find(std::string("packed for ") + attn::isa_name(ctx.isa())) !=
          std::string::npos);
  }
  SECTION("pack_matrix: a null out, a bad b, and out left as it was") {
    CHECK(attn::pack_matrix(ctx, bv, Transpose::no, nullptr).code() ==
          attn::StatusCode::invalid_argument);
    attn::Status s = attn::pack_matrix(ctx, {nullptr, 4, 5, 5}, Transpose::no, &packed);
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("pack_matrix: b") != std::string::npos);
    s = attn::pack_matrix(ctx, {b.data(), 4, 5, 3}, Transpose::yes, &packed);
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("stride") != std::string::npos);
    // 2^60 x 1: its 2^62 bytes fit in ptrdiff_t, but not with its one column padded to NR >= 2.
    s = attn::pack_matrix(ctx, {b.data(), std::size_t{1} << 60, 1, 1}, Transpose::no, &packed);
    CHECK(s.code() == attn::StatusCode::invalid_argument);
    CHECK(message_of(s).find("packed would span") != std::string::npos);
    CHECK(packed.rows() == 4);  // untouched by the failed calls
    CHECK(packed.cols() == 5);
    CHECK(attn::matmul(ctx, av, Transpose::no, packed, {c.data(), 6, 5, 5}).ok());
    CHECK(c[0] == 4.0f);
    return;
  }
  CHECK(c_untouched());
}

TEST_CASE("Contexts on several threads share one PackedMatrix and one PackedSelfAttention",
          "[matmul][packed][threads]") {
  // README "Guarantees": the packed objects are only read by the calls, so one copy can serve
  // the Contexts of several caller threads at once. Three std::threads, each with its own Context
  // of the same ISA (2 OpenMP threads each), call matmul and self_attention with the shared
  // objects 4 times; every result is bit-identical to the one computed alone first.
  const std::size_t m = 19, n = 150, k = 70, seq = 9, dm = 32, heads = 4, dk = 8;
  attn_test::Rng rng(81);
  const auto a = rng.uniform_vec(m * k), b = rng.uniform_vec(k * n), x = rng.uniform_vec(seq * dm),
             w = rng.uniform_vec(dm * 3 * heads * dk, -0.3f, 0.3f),
             wo = rng.uniform_vec(heads * dk * dm, -0.3f, 0.3f), bias = rng.uniform_vec(dm);
  attn::SelfAttentionParams p;
  const std::size_t width = heads * dk;
  p.q.weight = {w.data(), dm, width, 3 * width};
  p.k.weight = {w.data() + width, dm, width, 3 * width};
  p.v.weight = {w.data() + 2 * width, dm, width, 3 * width};
  p.o = {attn::make_matrix<const float>(wo.data(), width, dm), bias.data()};
  p.num_heads = heads;
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa, 2);
    attn::PackedMatrix packed;
    attn::PackedSelfAttention layer;
    REQUIRE(attn::pack_matrix(ctx, attn::make_matrix<const float>(b.data(), k, n), Transpose::no,
                              &packed)
                .ok());
    REQUIRE(attn::pack_self_attention(ctx, p, &layer).ok());
    attn::AttentionOptions causal;
    causal.mask = attn::Mask::causal();
    const auto run = [&](attn::Context& c, std::vector<float>* mm, std::vector<float>* sa) {
      mm->assign(m * n, 0.0f);
      sa->assign(seq * dm, 0.0f);
      const bool ok = attn::matmul(c, attn::make_matrix<const float>(a.data(), m, k), Transpose::no,
                                   packed, attn::make_matrix(mm->data(), m, n))
                          .ok() &&
                      attn::self_attention(c, attn::make_matrix<const float>(x.data(), seq, dm), 1,
                                           layer, causal, attn::make_matrix(sa->data(), seq, dm))
                          .ok();
      return ok;
    };
    std::vector<float> want_mm, want_sa;
    REQUIRE(run(ctx, &want_mm, &want_sa));
    constexpr int kThreads = 3, kRounds = 4;
    int same[kThreads] = {};
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
      pool.emplace_back([&, t] {
        attn::Context own = attn_test::make_context(isa, 2);
        for (int r = 0; r < kRounds; ++r) {
          std::vector<float> mm, sa;
          if (run(own, &mm, &sa) &&
              std::memcmp(mm.data(), want_mm.data(), mm.size() * sizeof(float)) == 0 &&
              std::memcmp(sa.data(), want_sa.data(), sa.size() * sizeof(float)) == 0) {
            ++same[t];
          }
        }
      });
    }
    for (auto& th : pool)
      th.join();
    for (int t = 0; t < kThreads; ++t)
      CHECK(same[t] == kRounds);
  }
}

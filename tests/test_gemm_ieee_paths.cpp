// NaN, +-inf, alpha == 0 and beta == 0 over a C of NaN on the GEMM paths other than the plain
// Goto loop: matmul with a PackedMatrix (each of gemm_prepacked's loops), GemmPath::streamed,
// GemmPath::c_transposed, and the last two with threads that get no work.
//
// Contract (include/attn/matmul.hpp, README "NaN, inf and fully masked rows"): IEEE arithmetic;
// alpha == 0 is no shortcut (0 * inf is NaN, as in reference::matmul); beta == 0 never reads C.
// Expected, per element, from reference::matmul (double accumulation) on the same inputs: NaN
// where it is NaN, the same infinity where it is infinite, else within support/matmul_check.hpp's
// bound (k + 2) FLT_EPSILON (|alpha| sum |a b| + |beta c|); C's padding unwritten; every thread
// count (1 to 3; 1 and 2 under an emulator) bit-identical to the first (NaNs compared as NaN). Each
// case requires that the driver's rule (gemm_path, gemm_prepacked_loop) picks its path on every ISA
// that has it, so a change of rules fails here rather than leaving a path untested. gemm runs one
// thread below 2 MFLOP (effective_threads in matmul/gemm.cpp): cases on several threads have m n k
// >= 1e6 (required).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/matmul_check.hpp"
#include "support/test_support.hpp"

namespace {

using attn::MatrixView;
using attn::Transpose;
using attn::detail::GemmOperand;
using attn::detail::GemmPath;
using attn::detail::Kernels;
using attn::detail::PrepackedLoop;
using attn_test::BForm;
using attn_test::Case;

constexpr float kPad = 12345.0f;  // C's padding, never written

// (alpha, beta): C never read (it holds NaN); alpha 0, which must not shortcut to 0 nor to
// beta C; neither 0 nor 1, over a C that holds a NaN and an inf.
constexpr float kScales[][2] = {{1.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 1.0f}, {-0.5f, 0.5f}};

std::size_t lda_of(const Case& cs) {
  return (cs.ta == Transpose::no ? cs.k : cs.m) + cs.pad;
}
std::size_t ldb_of(const Case& cs) {
  return (cs.tb == Transpose::no ? cs.n : cs.k) + cs.pad;
}
// An operand as attn::matmul hands it to the driver (matmul/matmul.cpp).
GemmOperand operand(Transpose t, std::size_t ld) {
  return t == Transpose::no ? GemmOperand{nullptr, ld, 1} : GemmOperand{nullptr, 1, ld};
}
GemmPath path_of(const Kernels& kern, const Case& cs) {
  return attn::detail::gemm_path(kern, {cs.m, cs.n, cs.k}, operand(cs.ta, lda_of(cs)),
                                 operand(cs.tb, ldb_of(cs)));
}
PrepackedLoop loop_of(const Kernels& kern, const Case& cs) {
  return attn::detail::gemm_prepacked_loop(kern, {cs.m, cs.n, cs.k}, operand(cs.ta, lda_of(cs)));
}

// Random operands of cs (m, n >= 3, k >= 6) with, in op()'s coordinates: NaN at op(A)(m/2, 0)
// (row m/2 of C is NaN), -inf at its last row and k step, a 0 in row 1 against op(B)'s -inf at
// (k/2, 0) (0 * inf: NaN), +inf at op(B)(0, n - 1), NaN at op(B)(k/3, n/2).
struct Inputs {
  std::vector<float> a, b, c;  // c: random, for beta != 0
  std::vector<double> mag;     // sum_p |op(A)(i, p) op(B)(p, j)|, row stride n
  MatrixView<const float> av, bv;
};

Inputs make_inputs(const Case& cs) {
  const bool ta = cs.ta == Transpose::yes, tb = cs.tb == Transpose::yes;
  const std::size_t lda = lda_of(cs), ldb = ldb_of(cs);
  attn_test::Rng rng(static_cast<std::uint32_t>(cs.m * 31 + cs.n * 7 + cs.k));
  Inputs in;
  in.a = rng.uniform_vec((ta ? cs.k : cs.m) * lda);
  in.b = rng.uniform_vec((tb ? cs.n : cs.k) * ldb);
  in.c = rng.uniform_vec(cs.m * (cs.n + cs.pad));
  const auto a = [&](std::size_t i, std::size_t p) -> float& {
    return ta ? in.a[p * lda + i] : in.a[i * lda + p];
  };
  const auto b = [&](std::size_t p, std::size_t j) -> float& {
    return tb ? in.b[j * ldb + p] : in.b[p * ldb + j];
  };
  a(cs.m / 2, 0) = attn_test::nan_f();
  a(cs.m - 1, cs.k - 1) = -attn_test::inf_f();
  a(1, cs.k / 2) = 0.0f;
  b(cs.k / 2, 0) = -attn_test::inf_f();
  b(0, cs.n - 1) = attn_test::inf_f();
  b(cs.k / 3, cs.n / 2) = attn_test::nan_f();
  in.mag.assign(cs.m * cs.n, 0.0);
  for (std::size_t i = 0; i < cs.m; ++i)
    for (std::size_t p = 0; p < cs.k; ++p)
      for (std::size_t j = 0; j < cs.n; ++j)
        in.mag[i * cs.n + j] += std::fabs(double(a(i, p)) * double(b(p, j)));
  in.av = {in.a.data(), ta ? cs.k : cs.m, ta ? cs.m : cs.k, lda};
  in.bv = {in.b.data(), tb ? cs.n : cs.k, tb ? cs.k : cs.n, ldb};
  return in;
}

// c against want (reference::matmul from c0) as the file's header says.
void check_c(const Case& cs, const Inputs& in, const std::vector<float>& c0,
             const std::vector<float>& want, const std::vector<float>& c) {
  const std::size_t ldc = cs.n + cs.pad;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < cs.m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const float w = j < cs.n ? want[i * ldc + j] : kPad, got = c[i * ldc + j];
      bool ok = std::isnan(w) ? std::isnan(got) : got == w;
      if (!ok && std::isfinite(w) && j < cs.n) {
        const double mag = std::fabs(double(cs.alpha)) * in.mag[i * cs.n + j] +
                           (cs.beta != 0.0f ? std::fabs(double(cs.beta) * c0[i * ldc + j]) : 0.0);
        ok = std::fabs(double(got) - w) <= double(cs.k + 2) * FLT_EPSILON * mag + 1e-30;
      }
      if (!ok && bad++ < 5) {
        FAIL_CHECK("c(" << i << ", " << j << ") = " << got << ", want " << w
                        << (j < cs.n ? "" : " (padding)"));
      }
    }
  }
  CHECK(bad == 0);
}

// shape (alpha and beta unused) with each of kScales, on each of `isas` and `threads`, B as a
// view or packed by pack_matrix on the call's Context; checked as the file's header says.
void check_ieee(const Case& shape, BForm form, std::initializer_list<int> threads,
                const std::vector<attn::Isa>& isas = attn_test::test_isas()) {
  if (std::max(threads) > 1) REQUIRE(double(shape.m) * double(shape.n) * double(shape.k) >= 1e6);
  const Inputs in = make_inputs(shape);
  const std::size_t ldc = shape.n + shape.pad;
  for (const auto& scale : kScales) {
    Case cs = shape;
    cs.alpha = scale[0];
    cs.beta = scale[1];
    // C: NaN where beta == 0 (never read), else random with a NaN at (0, 1), +inf at (m-2, n-2).
    std::vector<float> c0(cs.m * ldc, kPad);
    for (std::size_t i = 0; i < cs.m; ++i)
      for (std::size_t j = 0; j < cs.n; ++j)
        c0[i * ldc + j] = cs.beta == 0.0f ? attn_test::nan_f() : in.c[i * ldc + j];
    if (cs.beta != 0.0f) {
      c0[1] = attn_test::nan_f();
      c0[(cs.m - 2) * ldc + cs.n - 2] = attn_test::inf_f();
    }
    auto want = c0;
    REQUIRE(attn::reference::matmul(in.av, cs.ta, in.bv, cs.tb, {want.data(), cs.m, cs.n, ldc},
                                    cs.alpha, cs.beta)
                .ok());
    for (attn::Isa isa : isas) {
      std::vector<float> first;
      for (int t : threads) {
        if (t > 2 && attn_test::emulated()) break;  // qemu and valgrind: 1 and 2 threads
        INFO("isa " << attn::isa_name(isa) << " threads " << t << " m " << cs.m << " n " << cs.n
                    << " k " << cs.k << " alpha " << cs.alpha << " beta " << cs.beta);
        attn::Context ctx = attn_test::make_context(isa, t);
        auto c = c0;
        const MatrixView<float> cv{c.data(), cs.m, cs.n, ldc};
        if (form == BForm::packed) {
          attn::PackedMatrix packed;
          REQUIRE(attn::pack_matrix(ctx, in.bv, cs.tb, &packed).ok());
          REQUIRE(attn::matmul(ctx, in.av, cs.ta, packed, cv, cs.alpha, cs.beta).ok());
        } else {
          REQUIRE(attn::matmul(ctx, in.av, cs.ta, in.bv, cs.tb, cv, cs.alpha, cs.beta).ok());
        }
        check_c(cs, in, c0, want, c);
        if (first.empty()) first = c;
        bool same = true;
        for (std::size_t x = 0; x < c.size(); ++x) {
          same = same && (std::isnan(c[x]) ? std::isnan(first[x])
                                           : std::memcmp(&c[x], &first[x], sizeof(float)) == 0);
        }
        CHECK(same);
      }
    }
  }
}

const Kernels& kernels(attn::Isa isa) {
  const Kernels* kern = attn::detail::kernels_for(isa);
  REQUIRE(kern != nullptr);
  return *kern;
}

}  // namespace

TEST_CASE("gemm IEEE: a PackedMatrix through each prepacked loop", "[matmul][packed][ieee]") {
  // 7 rows of a row-major A: PrepackedLoop::rows where the ISA has the sliver tile and takes 7
  // rows (AVX2, AVX-512, NEON), else the streamed loop; k = 1100 is several KC blocks (beta and
  // the specials in the first and the last). 13 rows of an A^T against a packed B^T: the streamed
  // loop. The Goto loop nest: the first m (plus 3) whose packed op(A) overflows half of L2 on
  // every ISA (over 1e6 m n k with an L2 of 256 KiB or more), n = 5 (one padded panel), k = 1100.
  const Case rows{7, 131, 1100, Transpose::no, Transpose::no, 1.0f, 0.0f, 0};
  const Case streamed{13, 131, 1100, Transpose::yes, Transpose::yes, 1.0f, 0.0f, 1};
  Case goto_loop{64, 5, 1100, Transpose::yes, Transpose::no, 1.0f, 0.0f, 1};
  for (attn::Isa isa : attn_test::test_isas()) {
    while (loop_of(kernels(isa), goto_loop) != PrepackedLoop::packed)
      goto_loop.m += 64;
  }
  goto_loop.m += 3;
  for (attn::Isa isa : attn_test::test_isas()) {
    const Kernels& kern = kernels(isa);
    INFO("isa " << attn::isa_name(isa));
    const bool sliver = kern.gemm_prefetch_sliver != nullptr && rows.m <= kern.gemm_sliver_max_rows;
    CHECK(loop_of(kern, rows) == (sliver ? PrepackedLoop::rows : PrepackedLoop::streamed));
    CHECK(loop_of(kern, streamed) == PrepackedLoop::streamed);
    CHECK(loop_of(kern, goto_loop) == PrepackedLoop::packed);
  }
  check_ieee(rows, BForm::packed, {1, 2, 3});
  check_ieee(streamed, BForm::packed, {1, 2, 3});
  check_ieee(goto_loop, BForm::packed, {1, 2, 3});
}

TEST_CASE("gemm IEEE: GemmPath::streamed, B packed one sliver at a time", "[matmul][ieee]") {
  // An A^T (the rows and prefetched paths read a row-major A) against a B whose KC x n panel
  // overflows half of L2: n past L2 / 2 over 128 floats (the smallest KC, SSE2's), k >= 260
  // (deeper where a small L2 would leave m n k below 1e6): 3 KC blocks on SSE2, 2 on AVX2 and
  // scalar. The threads split the column panels: columns 0, n/2 and n - 1 (the specials) fall to
  // the first, a middle and the last thread. 9 rows against B (last row panels of 1 and 3), 5
  // against B^T (too few rows for c_transposed).
  const std::size_t n = attn::detail::cpu_info().l2_bytes / 2 / (128 * sizeof(float)) + 1;
  Case cases[] = {{9, n, 260, Transpose::yes, Transpose::no, 1.0f, 0.0f, 1},
                  {5, n, 260, Transpose::yes, Transpose::yes, 1.0f, 0.0f, 2}};
  for (Case& cs : cases) {
    cs.k = std::max<std::size_t>(cs.k, 1000000 / (cs.m * cs.n) + 1);  // a small L2's n
    for (attn::Isa isa : attn_test::test_isas()) {
      INFO("isa " << attn::isa_name(isa) << " m " << cs.m);
      CHECK(path_of(kernels(isa), cs) == GemmPath::streamed);
    }
    check_ieee(cs, BForm::view, {1, 2, 3});
  }
}

TEST_CASE("gemm IEEE: GemmPath::c_transposed, C^T written to C by gemm_store_t", "[matmul][ieee]") {
  // A B^T computed as C^T = B^T op(A)^T, op(A)^T transposed by gemm_store_t (row-major A) or
  // read in place (A^T), C^T written to C by gemm_store_t with alpha, beta (C unread at 0). 16
  // rows, k >= 64: the rule for a B^T within half of L2 (AVX-512: the narrow tile); 32 rows
  // (AVX-512: the 32-column tile) against a B^T over half of L2. Every ISA with a gemm_store_t (not
  // the scalar table, which has no such path).
  const std::size_t n_big = attn::detail::cpu_info().l2_bytes / 2 / (64 * sizeof(float)) + 1;
  const Case cases[] = {{16, 300, 210, Transpose::no, Transpose::yes, 1.0f, 0.0f, 3},
                        {32, n_big, 64, Transpose::yes, Transpose::yes, 1.0f, 0.0f, 1}};
  for (const Case& cs : cases) {
    std::vector<attn::Isa> isas;
    for (attn::Isa isa : attn_test::test_isas()) {
      const Kernels& kern = kernels(isa);
      INFO("isa " << attn::isa_name(isa) << " m " << cs.m);
      CHECK((path_of(kern, cs) == GemmPath::c_transposed) == (kern.gemm_store_t != nullptr));
      if (kern.gemm_store_t != nullptr) isas.push_back(isa);
    }
    check_ieee(cs, BForm::view, {1, 2, 3}, isas);
  }
}

TEST_CASE("gemm IEEE: c_transposed and the streamed loop with idle threads", "[matmul][ieee]") {
  // c_transposed splits C^T's row blocks (gemm_direct_mr columns of C, 6 or 8) among the threads:
  // with n = 6 there is one, and threads 1 and 2 get none (they still transpose their share of
  // op(A)'s k columns). 16 rows (the rule for a B^T within half of L2), k = 10500 for the 1e6
  // m n k of several threads; op(A)^T (672 KB) must fit in L2, so a smaller L2 (valgrind reports
  // 256 KiB) skips the case. Every ISA with a gemm_store_t. The streamed loop splits B's NR-wide
  // panels: n = 3 is one on every ISA. Unpacked, no n that narrow takes GemmPath::streamed (a KC
  // x NR panel never overflows half of L2), so the packed B's streamed loop serves (the same
  // gemm_streamed): an A^T (the rows loop takes only a row-major A) of 13 rows, packed within half
  // of any L2 of 64 KiB or more, k = 25700 for the 1e6 m n k.
  const Case ct{16, 6, 10500, Transpose::no, Transpose::yes, 1.0f, 0.0f, 1};
  const Case streamed{13, 3, 25700, Transpose::yes, Transpose::no, 1.0f, 0.0f, 2};
  const bool at_fits = ct.k * 16 * sizeof(float) <= attn::detail::cpu_info().l2_bytes;
  std::vector<attn::Isa> ct_isas;
  for (attn::Isa isa : attn_test::test_isas()) {
    const Kernels& kern = kernels(isa);
    INFO("isa " << attn::isa_name(isa));
    if (kern.gemm_store_t != nullptr && at_fits) {
      CHECK(path_of(kern, ct) == GemmPath::c_transposed);
      CHECK(ct.n <= kern.gemm_direct_mr);
      ct_isas.push_back(isa);
    }
    CHECK(loop_of(kern, streamed) == PrepackedLoop::streamed);
    CHECK(streamed.n <= kern.gemm_nr);
  }
  if (at_fits) {
    check_ieee(ct, BForm::view, {1, 2, 3}, ct_isas);
  } else {
    WARN("op(A)^T of 16 x " << ct.k << " floats exceeds L2: c_transposed not taken, skipped");
  }
  check_ieee(streamed, BForm::packed, {1, 2, 3});
}

// The matmul tests' case description and their check against reference::matmul, shared by
// test_matmul.cpp and test_packed_matmul.cpp.
//
// Tolerance: float accumulation of k products, then alpha and beta, satisfies
//   |c - exact| <= gamma_{k+2} (|alpha| sum_p |a_ip b_pj| + |beta c_ij|),  gamma_n = n u / (1 - n
//   u)
// (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1), u = 2^-24. We allow
// (k + 2) * FLT_EPSILON = 2 (k + 2) u, i.e. gamma = 2: blocking and FMA only shorten the
// summation chains. The reference itself is exact to within u |c|, which the bound covers.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "attn/attn.hpp"
#include "support/test_support.hpp"

namespace attn_test {

struct Case {
  std::size_t m, n, k;
  attn::Transpose ta, tb;
  float alpha, beta;
  std::size_t pad;  // extra elements per row (stride > row)
};

// reference::matmul's result for one case and each element's tolerance (the bound above), computed
// once however many ISAs and thread counts are then checked against them.
class Expected {
 public:
  Expected(const Case& cs, const attn::MatrixView<const float>& av,
           const attn::MatrixView<const float>& bv, const std::vector<float>& c0)
      : cs_(cs), c0_(c0), want_(c0), tol_(cs.m * cs.n) {
    const std::size_t ldc = cs.n + cs.pad;
    REQUIRE(attn::reference::matmul(av, cs.ta, bv, cs.tb, {want_.data(), cs.m, cs.n, ldc}, cs.alpha,
                                    cs.beta)
                .ok());
    auto at = [&](std::size_t i, std::size_t p) {
      return cs.ta == attn::Transpose::no ? av(i, p) : av(p, i);
    };
    auto bt = [&](std::size_t p, std::size_t j) {
      return cs.tb == attn::Transpose::no ? bv(p, j) : bv(j, p);
    };
    std::vector<double> mags(cs.n);
    for (std::size_t i = 0; i < cs.m; ++i) {
      // op(B) in B's memory order: down a row-major B's columns every step is a new page (minutes
      // under ASan for the shapes of several thousand columns).
      std::fill(mags.begin(), mags.end(), 0.0);
      if (cs.tb == attn::Transpose::no) {
        for (std::size_t p = 0; p < cs.k; ++p) {
          for (std::size_t j = 0; j < cs.n; ++j)
            mags[j] += std::fabs(double(at(i, p)) * double(bt(p, j)));
        }
      } else {
        for (std::size_t j = 0; j < cs.n; ++j) {
          for (std::size_t p = 0; p < cs.k; ++p)
            mags[j] += std::fabs(double(at(i, p)) * double(bt(p, j)));
        }
      }
      for (std::size_t j = 0; j < cs.n; ++j) {
        double mag = std::fabs(double(cs.alpha)) * mags[j];
        if (cs.beta != 0.0f) mag += std::fabs(double(cs.beta) * double(c0[i * ldc + j]));
        tol_[i * cs.n + j] = double(cs.k + 2) * FLT_EPSILON * mag + 1e-30;
      }
    }
  }

  // c (matmul's result from c0, row stride n + pad) within the tolerance, and the padding
  // between rows not written.
  void check(const std::vector<float>& c) const {
    const std::size_t ldc = cs_.n + cs_.pad;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < cs_.m; ++i) {
      for (std::size_t j = 0; j < cs_.n; ++j) {
        const double tol = tol_[i * cs_.n + j];
        const double err = std::fabs(double(c[i * ldc + j]) - double(want_[i * ldc + j]));
        if (!(err <= tol) && bad++ < 5) {
          FAIL_CHECK("c(" << i << ", " << j << ") = " << c[i * ldc + j] << ", reference "
                          << want_[i * ldc + j] << ", tolerance " << tol);
        }
      }
      // Padding between rows is never written.
      for (std::size_t j = cs_.n; j < ldc && i + 1 < cs_.m; ++j) {
        const float before = c0_[i * ldc + j], after = c[i * ldc + j];
        CHECK(((std::isnan(before) && std::isnan(after)) || before == after));
      }
    }
    CHECK(bad == 0);
  }

 private:
  Case cs_;
  std::vector<float> c0_;
  std::vector<float> want_;  // c0 with the reference's product written over its view
  std::vector<double> tol_;  // m x n
};

// Checks c (matmul's result from c0, row stride n + pad) against reference::matmul within the
// tolerance above, and that the padding between rows was not written.
inline void check_result(const Case& cs, const attn::MatrixView<const float>& av,
                         const attn::MatrixView<const float>& bv, const std::vector<float>& c0,
                         const std::vector<float>& c) {
  Expected(cs, av, bv, c0).check(c);
}

// How run_case passes B: as a view (attn::matmul with op(b)) or packed first (pack_matrix on the
// same Context, then matmul with the PackedMatrix).
enum class BForm { view, packed };

// One case's inputs, drawn from rng: A and B with their row padding, and c0 (NaN where beta == 0:
// never read).
struct CaseInputs {
  CaseInputs(const Case& cs, Rng& rng)
      : ar(cs.ta == attn::Transpose::no ? cs.m : cs.k),
        ac(cs.ta == attn::Transpose::no ? cs.k : cs.m),
        br(cs.tb == attn::Transpose::no ? cs.k : cs.n),
        bc(cs.tb == attn::Transpose::no ? cs.n : cs.k),
        a(rng.uniform_vec(ar * (ac + cs.pad) + 1)),
        b(rng.uniform_vec(br * (bc + cs.pad) + 1)),
        c0(rng.uniform_vec(cs.m * (cs.n + cs.pad) + 1)) {
    if (cs.beta == 0.0f) {
      for (float& x : c0)
        x = nan_f();
    }
  }
  attn::MatrixView<const float> av(const Case& cs) const { return {a.data(), ar, ac, ac + cs.pad}; }
  attn::MatrixView<const float> bv(const Case& cs) const { return {b.data(), br, bc, bc + cs.pad}; }

  std::size_t ar, ac, br, bc;
  std::vector<float> a, b, c0;
};

// matmul on ctx from the inputs' c0, B passed as `form` says; returns c.
inline std::vector<float> run_matmul(attn::Context& ctx, const Case& cs, const CaseInputs& in,
                                     BForm form) {
  auto c = in.c0;
  const attn::MatrixView<float> cv{c.data(), cs.m, cs.n, cs.n + cs.pad};
  if (form == BForm::packed) {
    attn::PackedMatrix packed;
    REQUIRE(attn::pack_matrix(ctx, in.bv(cs), cs.tb, &packed).ok());
    REQUIRE(packed.rows() == cs.k);
    REQUIRE(packed.cols() == cs.n);
    REQUIRE(attn::matmul(ctx, in.av(cs), cs.ta, packed, cv, cs.alpha, cs.beta).ok());
  } else {
    REQUIRE(attn::matmul(ctx, in.av(cs), cs.ta, in.bv(cs), cs.tb, cv, cs.alpha, cs.beta).ok());
  }
  return c;
}

// Runs one case with inputs from rng and, with `check`, checks it (check_result); *result gets c.
inline void run_case(attn::Context& ctx, const Case& cs, Rng& rng,
                     std::vector<float>* result = nullptr, BForm form = BForm::view,
                     bool check = true) {
  const CaseInputs in(cs, rng);
  auto c = run_matmul(ctx, cs, in, form);
  if (check) check_result(cs, in.av(cs), in.bv(cs), in.c0, c);
  if (result) *result = std::move(c);
}

// Each case on every ISA with each of `threads` (the same inputs each time, from `seed`): the
// first thread count within the reference's tolerance, the others bit-identical to it. The
// inputs and the reference are computed once per case.
template <std::size_t N>
void run_across_threads(const Case (&cases)[N], std::initializer_list<int> threads,
                        std::uint32_t seed, BForm form = BForm::view) {
  for (const Case& cs : cases) {
    INFO("m " << cs.m << " n " << cs.n << " k " << cs.k << " alpha " << cs.alpha << " beta "
              << cs.beta);
    Rng rng(seed);
    const CaseInputs in(cs, rng);
    const Expected expected(cs, in.av(cs), in.bv(cs), in.c0);
    for (attn::Isa isa : test_isas()) {
      std::vector<float> first;
      for (int t : threads) {
        attn::Context ctx = make_context(isa, t);
        INFO("isa " << attn::isa_name(isa) << " threads " << t);
        const std::vector<float> c = run_matmul(ctx, cs, in, form);
        if (first.empty()) {
          expected.check(c);
          first = c;
        } else {
          CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace attn_test

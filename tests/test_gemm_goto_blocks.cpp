// The Goto loop nest (GemmPath::packed) over several NC blocks of B per call, on each ISA's kernels
// with the driver's blocking narrowed (support/narrow_blocking.hpp) so that small products take
// every loop.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "matmul/gemm.hpp"
#include "support/matmul_check.hpp"
#include "support/narrow_blocking.hpp"

using attn::Transpose;
using attn::detail::GemmOperand;
using attn_test::Case;

namespace {

constexpr std::size_t kPad = 3;  // floats past each row of A, B and C

// op(X) as a GemmOperand for X stored row-major with `cols` columns plus the padding.
GemmOperand operand(const float* data, Transpose t, std::size_t cols) {
  return t == Transpose::no ? GemmOperand{data, cols + kPad, 1} : GemmOperand{data, 1, cols + kPad};
}

}  // namespace

TEST_CASE("the Goto loop nest with several NC blocks per call, any thread count",
          "[matmul][gemm]") {
  // n = 2 NR + 3: three NC blocks, the last a padded panel; k = 1100: KC blocks of 1024 and 76
  // (beta and the bias applied in the first only); every transpose of A and B, beta 0 over a NaN
  // C (never read) or beta 2 with a bias. m: the first 16 MR + 5 + 64 i the driver sends down the
  // Goto path (above GemmPath::prefetched's rows, up to 192 on AMD, and GemmPath::streamed's, all
  // of op(A) within half of L2), with a partial row panel and over the 2 MFLOP below which it runs
  // one thread. Threads 1, 2 and 3 (under an emulator 1 and 2) bit-identical, the first checked
  // against the reference (support/matmul_check.hpp's bound).
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels kern = attn_test::narrow_blocking_kernels(isa);
    const std::size_t n = 2 * kern.gemm_nr + 3, k = 1100;
    for (Transpose ta : {Transpose::no, Transpose::yes}) {
      for (Transpose tb : {Transpose::no, Transpose::yes}) {
        const bool zero_beta = ta == tb;
        std::size_t m = 16 * kern.gemm_mr + 5;
        const auto a_cols = [&] { return ta == Transpose::no ? k : m; };
        const GemmOperand gb = operand(nullptr, tb, tb == Transpose::no ? n : k);
        while (m < 8192 && attn::detail::gemm_path(kern, {m, n, k}, operand(nullptr, ta, a_cols()),
                                                   gb) != attn::detail::GemmPath::packed)
          m += 64;
        INFO("isa " << attn::isa_name(isa) << " ta " << int(ta) << " tb " << int(tb) << " m " << m);
        REQUIRE(m < 8192);
        const Case cs{m, n, k, ta, tb, -0.5f, zero_beta ? 0.0f : 2.0f, kPad};
        attn_test::Rng rng(83);
        const std::size_t ar = ta == Transpose::no ? m : k, br = tb == Transpose::no ? k : n,
                          bc = tb == Transpose::no ? n : k, ldc = n + kPad;
        const auto a = rng.uniform_vec(ar * (a_cols() + kPad)),
                   b = rng.uniform_vec(br * (bc + kPad)), bias = rng.uniform_vec(n);
        auto c0 = rng.uniform_vec(m * ldc);
        if (zero_beta) std::fill(c0.begin(), c0.end(), attn_test::nan_f());
        const GemmOperand ga = operand(a.data(), ta, a_cols()), gbv = operand(b.data(), tb, bc);
        // The bias (with beta != 0) checked as part of C: alpha op(A) op(B) + beta (c0 + bias /
        // beta) is the reference's product with c0 + bias / beta, rounded once more there, which
        // the bound's beta term covers.
        const float* with_bias = zero_beta ? nullptr : bias.data();
        auto c0_ref = c0;
        for (std::size_t i = 0; i < m && with_bias; ++i) {
          for (std::size_t j = 0; j < n; ++j)
            c0_ref[i * ldc + j] += bias[j] / cs.beta;
        }
        std::vector<float> first;
        for (int threads : {1, 2, 3}) {
          if (threads == 3 && attn_test::emulated()) break;
          INFO("threads " << threads);
          attn_test::AlignedScratch scratch(
              attn::detail::gemm_scratch_bytes(kern, threads, {m, n, k}, ga, gbv));
          void* at = scratch.get();
          auto c = c0;
          attn::detail::gemm(kern, threads, {m, n, k}, cs.alpha, ga, gbv, cs.beta, c.data(), ldc,
                             at, with_bias);
          if (first.empty()) {
            attn_test::check_result(cs, {a.data(), ar, a_cols(), a_cols() + kPad},
                                    {b.data(), br, bc, bc + kPad}, c0_ref, c);
            first = c;
          } else {
            CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("the Goto loop nest split by columns among the threads, several KC and NC blocks",
          "[matmul][gemm][threads]") {
  // Two threads, m <= n (at most 1024 rows) with at least 4 panels a thread: each thread packs
  // its own panels of B and all of A (gemm_packed's own_columns). GemmPath::packed forced
  // (gemm_on_path), MC 2 MR (several row blocks; m = 10 MR + 5, fewer where NR is narrow) and
  // NC 9 panels: n = 11 NR - 5 makes two NC blocks, the first split by columns, 5 panels to
  // thread 0 and 4 to thread 1, the second (2 panels, the last partial) by rows; 3 threads split
  // both by rows. k = 1100: KC blocks of 1024 and 76. Where thread 1, with less to do, packs
  // its next panels while thread 0 still reads its own, a breach of either layout rule changes
  // the result; but the threads do not always start together: with a KC block's panels side by
  // side (not a full KC apart) 7 of 10 runs of one two-thread call per case failed, with no
  // barrier before the second NC block 6 of 10, so two threads run 8 times (then 10 of 10 runs
  // failed for each breach, with 24-99 differing calls). Every transpose of A and B; threads 1, 2
  // and 3 (under an emulator 1 and 2) bit-identical, the first checked against the reference;
  // alpha -0.5, beta 2 and a bias (added in the first KC block only).
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::detail::Kernels kern = attn_test::narrow_blocking_kernels(isa);
    kern.gemm_blocking.mc = 2 * kern.gemm_mr;
    kern.gemm_blocking.mc_double_pumped = 0;
    kern.gemm_blocking.nc = 9 * kern.gemm_nr;
    const std::size_t n = 11 * kern.gemm_nr - 5, m = std::min(10 * kern.gemm_mr + 5, n - 2),
                      k = 1100;
    for (Transpose ta : {Transpose::no, Transpose::yes}) {
      for (Transpose tb : {Transpose::no, Transpose::yes}) {
        INFO("isa " << attn::isa_name(isa) << " ta " << int(ta) << " tb " << int(tb));
        const Case cs{m, n, k, ta, tb, -0.5f, 2.0f, kPad};
        attn_test::Rng rng(89);
        const std::size_t ar = ta == Transpose::no ? m : k, ac = ta == Transpose::no ? k : m,
                          br = tb == Transpose::no ? k : n, bc = tb == Transpose::no ? n : k,
                          ldc = n + kPad;
        const auto a = rng.uniform_vec(ar * (ac + kPad)), b = rng.uniform_vec(br * (bc + kPad)),
                   c0 = rng.uniform_vec(m * ldc), bias = rng.uniform_vec(n);
        const GemmOperand ga = operand(a.data(), ta, ac), gb = operand(b.data(), tb, bc);
        auto c0_ref = c0;  // the bias checked as part of C, as in the test above
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j)
            c0_ref[i * ldc + j] += bias[j] / cs.beta;
        }
        std::vector<float> first;
        for (int threads : {1, 2, 2, 2, 2, 2, 2, 2, 2, 3}) {
          if (threads == 3 && attn_test::emulated()) break;
          INFO("threads " << threads);
          attn_test::AlignedScratch scratch(attn::detail::gemm_path_scratch_bytes(
              kern, attn::detail::GemmPath::packed, threads, {m, n, k}, ga, gb));
          auto c = c0;
          attn::detail::gemm_on_path(kern, attn::detail::GemmPath::packed, threads, {m, n, k},
                                     cs.alpha, ga, gb, cs.beta, c.data(), ldc, scratch.get(),
                                     bias.data());
          if (first.empty()) {
            attn_test::check_result(cs, {a.data(), ar, ac, ac + kPad},
                                    {b.data(), br, bc, bc + kPad}, c0_ref, c);
            first = c;
          } else {
            CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

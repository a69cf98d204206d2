// matmul against reference::matmul on every ISA, transposes, edge shapes, strides, alpha/beta.
// The tolerance, (k + 2) FLT_EPSILON times the sum of the magnitudes, is derived in
// support/matmul_check.hpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/matmul_check.hpp"
#include "support/test_support.hpp"

using attn::MatrixView;
using attn::Transpose;
using attn_test::Case;
using attn_test::run_across_threads;
using attn_test::run_case;

TEST_CASE("matmul matches the reference on small and edge shapes", "[matmul]") {
  const std::size_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17};
  attn_test::Rng rng(7);
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (Transpose ta : {Transpose::no, Transpose::yes}) {
      for (Transpose tb : {Transpose::no, Transpose::yes}) {
        for (std::size_t m : sizes) {
          for (std::size_t n : sizes) {
            const std::size_t k = sizes[(m * 7 + n * 3) % 11];
            INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k << " ta "
                        << int(ta) << " tb " << int(tb));
            run_case(ctx, {m, n, k, ta, tb, 1.0f, 0.0f, 0}, rng);
          }
        }
      }
    }
  }
}

TEST_CASE("matmul alpha, beta, strides, deep k and tile multiples", "[matmul]") {
  attn_test::Rng rng(11);
  const Case cases[] = {
      {6, 16, 64, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {63, 65, 1, Transpose::no, Transpose::yes, -0.5f, 1.0f, 3},
      {31, 33, 4097, Transpose::yes, Transpose::no, 1.0f, -0.5f, 1},
      {97, 101, 257, Transpose::yes, Transpose::yes, -0.5f, 0.0f, 5},
      {127, 129, 131, Transpose::no, Transpose::no, 0.0f, 1.0f, 2},
      {128, 128, 64, Transpose::no, Transpose::yes, 1.0f, 1.0f, 0},
      {257, 95, 300, Transpose::no, Transpose::no, 1.0f, -0.5f, 7},
      {1, 1000, 1000, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0},
      {1000, 1, 513, Transpose::yes, Transpose::no, 1.0f, 0.0f, 0},
      // Row-major A and B too large for the no-packing path (B over half of L2), and one that
      // takes it with a transposed B.
      {70, 1100, 130, Transpose::no, Transpose::no, -0.5f, 1.0f, 2},
      // Row-major A with k > 1024 (packed): KC blocks of 512, 512 and 7 columns (AVX-512 with 2
      // MiB of L2: 1024 and 7, GemmBlocking::kc_large_l2), a last A panel of 1 row (AVX-512
      // packs 6-row panels 16 columns at a time).
      {13, 37, 1031, Transpose::no, Transpose::no, 1.0f, 0.0f, 1},
      // The same with a last A panel of 3 rows (the 3-row tiles of AVX2, AVX-512 and SSE2).
      {15, 40, 1100, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {45, 90, 200, Transpose::no, Transpose::yes, 1.0f, 0.5f, 3},
  };
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (const Case& cs : cases) {
      INFO("isa " << attn::isa_name(isa) << " m " << cs.m << " n " << cs.n << " k " << cs.k
                  << " alpha " << cs.alpha << " beta " << cs.beta);
      run_case(ctx, cs, rng);
    }
  }
}

TEST_CASE("matmul at every ISA's tile and block sizes plus and minus one", "[matmul]") {
  // MR: 4 (scalar, sse2), 6 (avx2, avx512, sse2 no-packing), 8 (neon, avx512 no-packing), 14
  // (avx512 attention); NR: 4, 8, 12, 16, 32 (avx512 no-packing and attention), 64 (avx512); KC:
  // 128 (sse2), 256, 512; MC: 60 (sse2), 216 (avx512; 240 where CpuInfo::avx512_double_pumped).
  // At these sizes A^T (cases 5-9 of every 10) takes the packed path; a row-major A takes the
  // no-packing path (B^T packed into panels first), except m = 217 and 241 where the CPU's L2
  // does not feed it (CpuInfo::l2_feeds_in_place_b: Intel) and B is wider than 64 columns and
  // larger than L1; m = 217 and 241 span two row blocks of the packed path (one MC or the other).
  attn_test::Rng rng(13);
  const std::size_t ms[] = {5, 7, 9, 13, 15, 27, 29, 59, 61, 217, 241};
  const std::size_t ns[] = {11, 13, 17, 31, 33, 63, 65, 129};
  const std::size_t ks[] = {1, 127, 129, 255, 257, 511, 513};
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    unsigned i = 0;
    for (std::size_t m : ms) {
      for (std::size_t n : ns) {
        const std::size_t k = ks[i % 7];
        const Transpose ta = (i / 5) % 2 ? Transpose::yes : Transpose::no;
        const Transpose tb = (i / 10) % 2 ? Transpose::yes : Transpose::no;
        ++i;
        INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k);
        run_case(ctx, {m, n, k, ta, tb, 1.0f, i % 3 == 0 ? 0.0f : -0.5f, i % 4}, rng);
      }
    }
  }
}

TEST_CASE("matmul: a row-major B one packed tile wide (the no-packing wide tile)", "[matmul]") {
  // On AVX-512, n == 64 with k >= 192 and m >= 64 takes the 6 x 64 tile without packing
  // (use_direct_wide in matmul/gemm.cpp); the other ISAs run these shapes on their usual paths.
  // m = 64, 65, 67, 68, 70, 131: last row blocks of 4 (the 4-row tile), 5, 1, 2, 4 and 5 rows;
  // k at the threshold and past it, which the tile takes in chunks whose B rows fit L1 (128 on a
  // 48 KiB L1: 193 ends in a chunk of 65, see wide_k_chunk); strides past the row; threads 1 and
  // 3 bit-identical.
  const Case cases[] = {
      {64, 64, 192, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {65, 64, 193, Transpose::no, Transpose::no, -0.5f, 1.0f, 3},
      {67, 64, 511, Transpose::no, Transpose::no, 1.0f, -0.5f, 1},
      {68, 64, 256, Transpose::no, Transpose::no, 0.0f, 1.0f, 0},
      {70, 64, 1024, Transpose::no, Transpose::no, 1.0f, 0.0f, 5},
      {131, 64, 300, Transpose::no, Transpose::no, -0.5f, 0.5f, 2},
  };
  run_across_threads(cases, {1, 3}, 17);
}

namespace {

// Where B's rows lie: floats past a 64-byte line, row stride.
struct BLayout {
  std::size_t offset, ldb;
};

// The product cs (row-major A and B, no padding in A or C; inputs from `seed`) with B's k x n
// values placed at each of `layouts` in turn, on every ISA and each of `threads`: every result
// bit-identical to the ISA's first, which is within the reference's tolerance (Expected; with
// check_each, every layout's first thread count is checked too). before(kern, b, ldb) runs ahead
// of each layout's calls (path checks).
template <class Before>
void check_b_layouts(const Case& cs, std::initializer_list<BLayout> layouts,
                     std::initializer_list<int> threads, std::uint32_t seed, bool check_each,
                     const Before& before) {
  const std::size_t m = cs.m, n = cs.n, k = cs.k;
  attn_test::Rng rng(seed);
  const auto a = rng.uniform_vec(m * k);
  const auto b_rows = rng.uniform_vec(k * n);
  auto c0 = rng.uniform_vec(m * n);
  if (cs.beta == 0.0f) std::fill(c0.begin(), c0.end(), attn_test::nan_f());  // never read
  const MatrixView<const float> av{a.data(), m, k, k};
  // The same values in every layout: one reference.
  const attn_test::Expected expected(cs, av, {b_rows.data(), k, n, n}, c0);
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    std::vector<float> first;
    for (const BLayout& l : layouts) {
      std::vector<float> storage(k * l.ldb + 16 + l.offset);
      float* const b = attn_test::line_start(storage, l.offset);
      for (std::size_t p = 0; p < k; ++p)
        std::copy_n(b_rows.data() + p * n, n, b + p * l.ldb);
      const MatrixView<const float> bv{b, k, n, l.ldb};
      before(*kern, b, l.ldb);
      for (int t : threads) {
        INFO("isa " << attn::isa_name(isa) << " threads " << t << " offset " << l.offset << " ldb "
                    << l.ldb);
        attn::Context ctx = attn_test::make_context(isa, t);
        auto c = c0;
        REQUIRE(attn::matmul(ctx, av, Transpose::no, bv, Transpose::no, {c.data(), m, n, n},
                             cs.alpha, cs.beta)
                    .ok());
        if (first.empty() || (check_each && t == *threads.begin())) expected.check(c);
        if (first.empty()) {
          first = c;
        } else {
          CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("matmul: the wide tile's B on and off cache-line boundaries", "[matmul]") {
  // The wide tile reads B in place where every row starts on a 64-byte line or a thread has
  // fewer than 128 rows, and otherwise copies each k chunk (wide_b_in_place in matmul/gemm.cpp).
  // The same product with B at line offsets 0 and 16 bytes, rows 64, 80 (in place), 65 and 68
  // floats apart: every result within the reference's tolerance and bit-identical to the first.
  // 259 rows: one thread copies; of two, the first (132 rows) copies and the second (127) does
  // not. k = 300: chunks of 128, 128 and 44 rows on a 48 KiB L1.
  check_b_layouts({259, 64, 300, Transpose::no, Transpose::no, 1.0f, -0.5f, 0},
                  {{0, 64}, {4, 64}, {0, 80}, {0, 65}, {1, 68}}, {1, 2}, 23, true,
                  [](const attn::detail::Kernels&, const float*, std::size_t) {});
  // A over half of a 1 MiB L2 (600 x 256 floats): all of k in one chunk, so each thread copies
  // all of B (threads 1, 2 and 3: 600, 300 and 200 rows each, all over 128).
  check_b_layouts({600, 64, 256, Transpose::no, Transpose::no, 1.0f, 0.0f, 0}, {{0, 64}, {4, 64}},
                  {1, 2, 3}, 27, true,
                  [](const attn::detail::Kernels&, const float*, std::size_t) {});
}

TEST_CASE("matmul: B packed into the wide tile's panels, A read in place", "[matmul]") {
  // On AVX-512 where L2 does not feed in-place B reads (Intel: CpuInfo::l2_feeds_in_place_b), a
  // row-major A with m >= 64, n > 64, k <= 1024, B between L1 and half of L2 (or within L1 with n
  // a multiple of 64), A within half of L2 and C within L2 takes GemmPath::wide_panels
  // (chosen in matmul/gemm_path.cpp): op(B) packed into 64-column panels, the 6 x 64 tile's
  // assembly loop on A's rows in place. Other CPUs and ISAs run these shapes on their usual paths.
  // B is at least 52 KiB in the first 7 cases (over a 48 KiB L1), 16-32 KiB in the last 2. Last row
  // blocks of 4, 5, 2, 1, 4, 4, 5, 4 and 1 rows; last panels of 5, 2, 0, 1, 36, 40, 16, 0 and 0
  // columns; k < 32 (the loop's tail alone), 32, 33 (one step before the tail), 100, 520 (groups of
  // 8); alpha 1 with beta 0 or 1 (C written from the registers), other alpha and beta (through
  // store_tile); strides past the row; threads 1, 2 and 3 bit-identical.
  const Case cases[] = {
      {64, 197, 67, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0},
      {131, 130, 100, Transpose::no, Transpose::no, -0.5f, 1.0f, 3},
      {200, 256, 64, Transpose::no, Transpose::yes, 1.0f, 1.0f, 1},
      {67, 129, 520, Transpose::no, Transpose::no, 1.0f, 0.5f, 0},
      {70, 100, 130, Transpose::no, Transpose::yes, 0.0f, 1.0f, 2},
      {64, 1000, 13, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {65, 400, 33, Transpose::no, Transpose::yes, 2.0f, -0.5f, 1},
      {64, 128, 32, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {133, 128, 64, Transpose::no, Transpose::yes, -0.5f, 1.0f, 2},
  };
  run_across_threads(cases, {1, 2, 3}, 29);
}

TEST_CASE("matmul: a few rows against a B or B^T read in memory order", "[matmul]") {
  // m <= 4 (Kernels::gemm_rows_max) with A row-major and n wider than one no-packing tile takes
  // GemmPath::rows (matmul/gemm_path.cpp) on the SIMD ISAs. With B row-major, the rows kernel reads
  // B row after row, 4 rows per pass (2 for 3 or 4 rows where a vector has fewer than 16 lanes; for
  // one row, passes of 16 rows on AVX-512 and 8 on AVX2 first, unless ldb is a multiple of 512
  // floats), then single rows for the rest of k, into blocks of at most 4096 / m columns (rounded
  // down to 64) of scratch, of equal widths; the threads split the columns in runs of 64. 5 to 8
  // rows take it on AVX2 where B is over half of L2 (these four cases' B: 1.04-1.20 MiB), with A's
  // values broadcast from memory on one thread and the rows split among threads (2 to 4 each, the
  // register tiles) on more (the other ISAs' GemmPath::prefetched tile takes them from
  // Kernels::gemm_prefetch_b_min_rows: see the next test). Cases: k = 1 (no whole pass), 7 (a pass
  // and 3 single rows), 331; n not a multiple of any vector (33, 2100, 4250), and over one block (m
  // = 1: 9000 columns, 3 blocks of about 3000 on one thread; m = 4: 4250, 5 of about 850); every
  // row count; one row with k = 55 and 1030 (passes of 16 or 8 rows, then of 4, then single
  // rows), and with ldb = 1024 (passes of 4 and single rows only). With B^T (the last ten; a
  // stride past the row, so that k = 1 is a B^T too), each output is a dot product of a row of A
  // and a row of B^T in 1 vector accumulator (1 row, up to 8 rows of B^T at once), 2 (2 rows) or 1,
  // a last partial vector, one vector's worth of outputs summed at once: k of 1 (the partial
  // vector alone), 7, 64 (whole vectors), 137, 167, 300, 600 and 1030; n of 33 (a partial group of
  // outputs), 70, 100, 1100, 2063 (one row: a last group of 15 outputs), 2100, 4250; 5 to 8 rows
  // (Kernels::gemm_rows_t_max) where B^T is over half of L2 and A's rows fit in two thirds of L1
  // (the last three: B^T 1.15, 1.32 and 2.5 MB, the last over half of the emulators' 4 MiB L2 too).
  // Alpha 1 with beta 0, alpha and beta other than 0 and 1; strides past the row; threads 1, 2 and
  // 3 bit-identical (gemm runs one thread below 2 MFLOP: 9000 x 7 does not, 4250 x 70, 2100 x 331
  // and the B^T cases of 167-1030 do). The scalar ISA and A^T take other paths.
  const Case cases[] = {
      {1, 9000, 7, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {2, 33, 1, Transpose::no, Transpose::no, -0.5f, 1.0f, 3},
      {3, 2100, 331, Transpose::no, Transpose::no, 1.0f, 0.0f, 1},
      {4, 4250, 70, Transpose::no, Transpose::no, 2.0f, -0.5f, 2},
      {4, 65, 300, Transpose::no, Transpose::no, 1.0f, 1.0f, 0},
      {1, 100, 1, Transpose::no, Transpose::no, -0.5f, 0.0f, 5},
      {1, 2100, 55, Transpose::no, Transpose::no, -0.5f, 1.0f, 3},
      {1, 2100, 1030, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {1, 1024, 55, Transpose::no, Transpose::no, 2.0f, -0.5f, 0},
      {5, 2100, 130, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {6, 2101, 150, Transpose::no, Transpose::no, -0.5f, 1.0f, 2},
      {7, 4250, 70, Transpose::no, Transpose::no, 2.0f, -0.5f, 1},
      {8, 1030, 303, Transpose::no, Transpose::no, 1.0f, 1.0f, 3},
      {1, 2100, 1030, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0},
      {1, 2063, 600, Transpose::no, Transpose::yes, -0.5f, 1.0f, 2},
      {2, 33, 7, Transpose::no, Transpose::yes, -0.5f, 1.0f, 3},
      {3, 4250, 167, Transpose::no, Transpose::yes, 2.0f, -0.5f, 1},
      {2, 2100, 600, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0},
      {4, 70, 64, Transpose::no, Transpose::yes, 1.0f, 1.0f, 2},
      {4, 100, 1, Transpose::no, Transpose::yes, 1.0f, 0.0f, 2},
      {5, 2100, 137, Transpose::no, Transpose::yes, 1.0f, 0.0f, 3},
      {8, 1100, 300, Transpose::no, Transpose::yes, -0.5f, 1.0f, 0},
      {6, 2100, 300, Transpose::no, Transpose::yes, 2.0f, -0.5f, 1},
  };
  run_across_threads(cases, {1, 2, 3}, 37);
  // The one-row cases of the 16/8-row passes take GemmPath::rows on every SIMD ISA.
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels& kern = *attn::detail::kernels_for(isa);
    if (kern.gemm_rows == nullptr) continue;
    for (const Case& cs : {cases[6], cases[7], cases[8]}) {
      INFO(attn::isa_name(isa) << " " << cs.m << " x " << cs.n << " x " << cs.k);
      CHECK(attn::detail::gemm_path(kern, {cs.m, cs.n, cs.k}, {nullptr, cs.k, 1},
                                    {nullptr, cs.n + cs.pad, 1}) == attn::detail::GemmPath::rows);
    }
  }
}

TEST_CASE("matmul: the rows kernel's B off a vector boundary", "[matmul]") {
  // Where all of B's rows start the same number of floats past a vector boundary (ldb a whole
  // number of vectors), the rows kernel's first block starts its sums that far into its scratch
  // and takes its first columns up to the boundary as one partial vector, so that its whole
  // vectors load B on boundaries (gemm_rows_kernel, matmul/gemm_rows_kernel.hpp). B's view starts
  // 0, 1, 4 (malloc's large blocks: 16 bytes past a line), 8, 12 and 15 floats into a buffer on
  // a line with ldb a multiple of 16 floats, and 4 floats in with ldb not a multiple of 4 (rows
  // past different boundaries: no shift). 1 x 9000 x 7: 3 blocks of about 3000 columns (at most
  // 4096), the first shortened by the shift (the second then starts on a boundary), a pass of 4
  // rows of B and 3 single rows; 4 x 4250 x 70: 5 blocks of about 850 (at most 1024) and 3
  // threads splitting runs of 64 columns; 4 x 2028 x 70 at 12 floats (AVX-512): 2 blocks, of
  // 1012 and 1016 columns, each row's first-block sums ending at the end of its slot (the last
  // row's at the end of the thread's scratch); 4 x 1020 x 70 and 1 x 4090 x 7 at 12 floats
  // (AVX-512): one block's width of columns that the shift alone makes two (516 + 504, 2052 +
  // 2038); 1 x 129 x 8000 and 1 x 148 x 8000 at 4 floats on 3 threads: the last thread's run of
  // 1 or 20 columns starts 4 floats past a boundary, so the partial head takes all of it (1 <= 12
  // on AVX-512, 1 <= 4 on AVX2) or leaves no whole vector after it (12 + 8 on AVX-512);
  // 6 x 2101 x 150 (B 1.26 MB): on AVX2 the kernel for any number of rows on one thread and the
  // rows split on three. C starts as NaN where beta == 0 (never read). Every result within the
  // reference's tolerance and bit-identical to the first layout's (the same sums).
  const auto on_rows = [](std::size_t m, std::size_t n, std::size_t k) {
    return [m, n, k](const attn::detail::Kernels& kern, const float* b, std::size_t ldb) {
      if (kern.gemm_rows != nullptr && m <= kern.gemm_rows_max) {
        CHECK(attn::detail::gemm_path(kern, {m, n, k}, {nullptr, k, 1}, {b, ldb, 1}) ==
              attn::detail::GemmPath::rows);
      }
    };
  };
  check_b_layouts({1, 9000, 7, Transpose::no, Transpose::no, -0.5f, 1.0f, 0},
                  {{0, 9008}, {1, 9008}, {4, 9008}, {8, 9008}, {12, 9008}, {15, 9008}, {4, 9001}},
                  {1}, 47, true, on_rows(1, 9000, 7));
  check_b_layouts({4, 4250, 70, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
                  {{0, 4256}, {4, 4256}, {13, 4256}, {4, 4253}}, {1, 3}, 53, true,
                  on_rows(4, 4250, 70));
  check_b_layouts({4, 2028, 70, Transpose::no, Transpose::no, -0.5f, 0.0f, 0},
                  {{0, 2032}, {12, 2032}}, {1}, 61, true, on_rows(4, 2028, 70));
  check_b_layouts({6, 2101, 150, Transpose::no, Transpose::no, 2.0f, -0.5f, 0},
                  {{0, 2112}, {4, 2112}, {9, 2112}}, {1, 3}, 59, true, on_rows(6, 2101, 150));
  check_b_layouts({4, 1020, 70, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
                  {{0, 1024}, {12, 1024}}, {1}, 67, true, on_rows(4, 1020, 70));
  check_b_layouts({1, 4090, 7, Transpose::no, Transpose::no, -0.5f, 1.0f, 0},
                  {{0, 4096}, {12, 4096}}, {1}, 83, true, on_rows(1, 4090, 7));
  check_b_layouts({1, 129, 8000, Transpose::no, Transpose::no, 1.0f, 0.0f, 0}, {{0, 144}, {4, 144}},
                  {1, 3}, 89, true, on_rows(1, 129, 8000));
  check_b_layouts({1, 148, 8000, Transpose::no, Transpose::no, 2.0f, -0.5f, 0},
                  {{0, 160}, {4, 160}}, {1, 3}, 97, true, on_rows(1, 148, 8000));
}

TEST_CASE("matmul: A B^T by dot products with A's rows copied to B^T's phase", "[matmul]") {
  // GemmPath::rows against a B^T copies A's rows to the thread's scratch, each as far past a
  // cache line as B^T's rows lie past a vector boundary (their phase, where they share one),
  // where A's rows lie otherwise and the copy fits the scratch (rows_t_copies_a in
  // matmul/gemm_path.cpp). B^T starts 0 or 4 floats past a line; A's view starts 0, 1 and 4 floats
  // into a buffer on a line with a row stride of k, k + 1 and a multiple of 16 floats;
  // 1 x 4000 x 300 and 4 x 1700 x 300 (no shared phase on 16 or 8 lanes), 1 x 4000 x 304 and
  // 4 x 1700 x 304 (phase 4 on 16 and 8 lanes: A copied where off it), 4 x 700 x 1100 (4 rows of
  // 1104 floats: over the scratch, read in place), 1 x 40 x 4080 and 1 x 40 x 4096 at phase 4
  // (the copy with its offset just fits the scratch, and just does not), on threads 1 and 2 (each
  // over 2 MFLOP where two threads run, each copying into its own scratch). C starts as NaN where
  // beta == 0 (never read). Every result within the reference's tolerance and bit-identical to
  // the first layout's (the same values, the same sums).
  struct ALayout {
    std::size_t offset, lda;
  };
  const auto check = [](const Case& cs, std::size_t bt_phase,
                        std::initializer_list<ALayout> layouts, std::uint32_t seed) {
    const std::size_t m = cs.m, n = cs.n, k = cs.k;
    attn_test::Rng rng(seed);
    const auto a_rows = rng.uniform_vec(m * k);
    const auto bt_values = rng.uniform_vec(n * k);
    std::vector<float> bt_store(n * k + 32);
    float* const bt = attn_test::line_start(bt_store, bt_phase);
    std::copy(bt_values.begin(), bt_values.end(), bt);
    auto c0 = rng.uniform_vec(m * n);
    if (cs.beta == 0.0f) std::fill(c0.begin(), c0.end(), attn_test::nan_f());  // never read
    const MatrixView<const float> bv{bt, n, k, k};
    // The same values in every layout: one reference.
    const attn_test::Expected expected(cs, {a_rows.data(), m, k, k}, bv, c0);
    for (attn::Isa isa : attn_test::test_isas()) {
      const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
      REQUIRE(kern != nullptr);
      std::vector<float> first;
      for (const ALayout& l : layouts) {
        std::vector<float> storage(m * l.lda + 16 + l.offset);
        float* const a = attn_test::line_start(storage, l.offset);
        for (std::size_t i = 0; i < m; ++i)
          std::copy_n(a_rows.data() + i * k, k, a + i * l.lda);
        const MatrixView<const float> av{a, m, k, l.lda};
        if (kern->gemm_rows_t != nullptr) {
          CHECK(attn::detail::gemm_path(*kern, {m, n, k}, {a, l.lda, 1}, {bt, 1, k}) ==
                attn::detail::GemmPath::rows);
          const std::size_t lanes = kern->gemm_direct_narrow_nr;
          const std::size_t phase =
              k % lanes == 0 ? reinterpret_cast<std::uintptr_t>(bt) % (lanes * 4) / 4 : 0;
          const bool in_phase = reinterpret_cast<std::uintptr_t>(a) % (lanes * 4) / 4 == phase &&
                                (m == 1 || l.lda % lanes == 0);
          CHECK(attn::detail::rows_t_a_phase(*kern, {bt, 1, k}) == phase);
          CHECK(attn::detail::rows_t_copies_a(*kern, {m, n, k}, {a, l.lda, 1}, {bt, 1, k}) ==
                (!in_phase && phase + m * ((k + 15) / 16 * 16) <= 4096));
        }
        for (int t : {1, 2}) {
          INFO("isa " << attn::isa_name(isa) << " m " << m << " k " << k << " threads " << t
                      << " offset " << l.offset << " lda " << l.lda);
          attn::Context ctx = attn_test::make_context(isa, t);
          auto c = c0;
          REQUIRE(attn::matmul(ctx, av, Transpose::no, bv, Transpose::yes, {c.data(), m, n, n},
                               cs.alpha, cs.beta)
                      .ok());
          if (first.empty()) {
            expected.check(c);
            first = c;
          } else {
            CHECK(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  };
  for (std::size_t bt_phase : {0, 4}) {
    check({1, 4000, 300, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0}, bt_phase,
          {{0, 300}, {1, 300}, {4, 300}}, 71);
    check({4, 1700, 300, Transpose::no, Transpose::yes, -0.5f, 1.0f, 0}, bt_phase,
          {{0, 304}, {4, 304}, {1, 301}, {0, 300}}, 73);
    check({1, 4000, 304, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0}, bt_phase,
          {{4, 304}, {0, 304}, {1, 304}}, 83);
    check({4, 1700, 304, Transpose::no, Transpose::yes, -0.5f, 1.0f, 0}, bt_phase,
          {{4, 304}, {0, 304}, {1, 305}}, 89);
    check({4, 700, 1100, Transpose::no, Transpose::yes, 2.0f, -0.5f, 0}, bt_phase,
          {{0, 1104}, {4, 1104}}, 79);
  }
  check({1, 40, 4080, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0}, 4, {{0, 4080}, {4, 4080}}, 97);
  check({1, 40, 4096, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0}, 4, {{0, 4096}, {4, 4096}},
        101);
}

TEST_CASE("matmul: gemm_path sends one no-packing tile to the direct path", "[matmul]") {
  // gemm() and gemm_scratch_bytes take a product of at most gemm_direct_mr x gemm_direct_nr with
  // row-major A and B, k <= 1024 and B within half of L2 straight to the direct tile
  // (one_direct_tile in matmul/gemm.cpp) without asking gemm_path: its rules must agree.
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    for (std::size_t m = 1; m <= kern->gemm_direct_mr; ++m) {
      for (std::size_t n : {std::size_t{1}, kern->gemm_direct_nr / 2 + 1, kern->gemm_direct_nr}) {
        for (std::size_t k : {1, 64, 1024}) {
          if (k * n * sizeof(float) > attn::detail::cpu_info().l2_bytes / 2) continue;
          INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k);
          const attn::detail::GemmOperand a{nullptr, k + 3, 1}, b{nullptr, n + 5, 1};
          CHECK(attn::detail::gemm_path(*kern, {m, n, k}, a, b) == attn::detail::GemmPath::direct);
        }
      }
    }
  }
}

TEST_CASE("matmul: gemm_one_tile serves one no-packing tile and nothing else", "[matmul]") {
  // attn::matmul asks gemm_one_tile (matmul/gemm.cpp) before sizing scratch: a product of one
  // no-packing tile runs there, bit-identical to gemm(); for any other product (one more row or
  // column, k over 1024, k = 0, a transposed A or B) it answers false and leaves C alone.
  using attn::detail::GemmOperand;
  using attn::detail::GemmShape;
  attn_test::Rng rng(67);
  const std::size_t ld = 1100;
  const auto a = rng.uniform_vec(40 * ld), b = rng.uniform_vec(1100 * ld);
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    const std::size_t mr = kern->gemm_direct_mr, nr = kern->gemm_direct_nr;
    INFO("isa " << attn::isa_name(isa));
    const GemmOperand ga{a.data(), ld, 1}, gb{b.data(), ld, 1};
    const GemmShape tile{mr, nr, 64};
    std::vector<float> c1(mr * ld, 0.5f), c2 = c1;
    REQUIRE(attn::detail::gemm_one_tile(*kern, tile, 1.5f, ga, gb, -0.5f, c1.data(), ld));
    attn::detail::gemm(*kern, 1, tile, 1.5f, ga, gb, -0.5f, c2.data(), ld, nullptr);
    CHECK(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0);
    const struct {
      GemmShape shape;
      GemmOperand a, b;
    } others[] = {{{mr + 1, nr, 64}, ga, gb},
                  {{mr, nr + 1, 64}, ga, gb},
                  {{mr, nr, 1025}, ga, gb},
                  {{mr, nr, 0}, ga, gb},
                  {{mr, nr, 64}, {a.data(), 1, ld}, gb},
                  {{mr, nr, 64}, ga, {b.data(), 1, ld}}};
    for (const auto& o : others) {
      INFO("m " << o.shape.m << " n " << o.shape.n << " k " << o.shape.k);
      std::vector<float> c((mr + 1) * ld, 0.5f);
      CHECK_FALSE(attn::detail::gemm_one_tile(*kern, o.shape, 1.0f, o.a, o.b, 0.0f, c.data(), ld));
      CHECK(std::all_of(c.begin(), c.end(), [](float v) { return v == 0.5f; }));
    }
  }
}

TEST_CASE("matmul: 5 to 48 rows against a large B read in place, its rows prefetched", "[matmul]") {
  // From Kernels::gemm_prefetch_b_min_rows (5; AVX2 9) to 48 rows of a row-major A against a
  // row-major B over half of L2 take GemmPath::prefetched (matmul/gemm_path.cpp) on the SIMD ISAs
  // (on AMD up to Kernels::gemm_prefetch_b_many_rows, AVX-512 192 and AVX2 128, where B's rows are
  // not a multiple of 4 KiB apart: gemm_prefetched_max_rows; the 97-, 128- and 192-row cases): the
  // threads split B's column panels (AVX-512 48 wide, AVX2 16, SSE2 8, NEON 12), each panel's rows
  // in near-equal groups of at most 8 (AVX-512, NEON) or 6 (AVX2, SSE2) rows, k in chunks of 256,
  // each applying alpha, the first also beta (the others add to C). Cases: 9 rows (groups 5 + 4),
  // 13 (7 + 6; 5 + 4 + 4), 24 (3 groups of 8; 4 of 6), 8 and 6 (one group; AVX2's rows path); k
  // of 512 (two whole chunks), 600, 260 (4 steps past the chunk), 1030 (5 chunks, the last of 6
  // steps) and 130 (one partial chunk); last panels of 22, 22, 22, 40 and 24 columns of 48 (AVX2
  // 6, 6, 6, 8 and 8 of 16); strides past the row; threads 1, 2 and 3 bit-identical. B: 2.1, 2.5,
  // 1.07, 4.1 and 2.2 MB for the first five, all but the third over half of the 4 MiB L2 that the
  // emulators (qemu) report, so that the emulated CI runs (AVX2, SSE2, NEON) take the path too;
  // 1.24, 1.07 and 0.58 MB for the AMD cases (over half of Zen 5's 1 MiB L2; the emulators, which
  // report an Intel CPU, run them on the streamed path). Where B is over half of this CPU's L2 the
  // test also requires that gemm_path names the path.
  const Case cases[] = {
      {9, 1030, 512, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
      {13, 1030, 600, Transpose::no, Transpose::no, -0.5f, 1.0f, 3},
      {24, 1030, 260, Transpose::no, Transpose::no, 2.0f, -0.5f, 1},
      {8, 1000, 1030, Transpose::no, Transpose::no, 1.0f, 1.0f, 2},
      {6, 4200, 130, Transpose::no, Transpose::no, 1.0f, 0.5f, 0},
      {97, 1030, 300, Transpose::no, Transpose::no, 1.0f, 0.0f, 1},
      {128, 1030, 260, Transpose::no, Transpose::no, -0.5f, 1.0f, 0},
      {192, 1030, 140, Transpose::no, Transpose::no, 1.0f, 0.5f, 2},
  };
  using attn::detail::GemmPath;
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    if (kern->gemm_prefetch_b == nullptr) continue;
    // The row limit: 48, or on AMD the table's (AVX-512 192, AVX2 128, none on SSE2 and NEON)
    // where B's rows are not a multiple of 4 KiB apart; then from the shapes alone (B 5 MB, over
    // half of any L2 here or under qemu), prefetched up to it and not one row past it.
    const std::size_t many = isa == attn::Isa::avx512 ? 192 : isa == attn::Isa::avx2 ? 128 : 0;
    CHECK(kern->gemm_prefetch_b_many_rows == many);
    const attn::detail::GemmOperand a_big{nullptr, 600, 1}, b_big{nullptr, 2101, 1};
    const std::size_t limit = attn::detail::gemm_prefetched_max_rows(*kern, b_big);
    CHECK(limit ==
          (attn::detail::cpu_info().prefetched_many_rows ? std::max<std::size_t>(48, many) : 48));
    CHECK(attn::detail::gemm_path(*kern, {limit, 2101, 600}, a_big, b_big) == GemmPath::prefetched);
    CHECK(attn::detail::gemm_path(*kern, {limit + 1, 2101, 600}, a_big, b_big) !=
          GemmPath::prefetched);
    CHECK(attn::detail::gemm_prefetched_max_rows(*kern, {nullptr, 2048, 1}) == 48);
    for (const Case& cs : cases) {
      const attn::detail::GemmShape shape{cs.m, cs.n, cs.k};
      const attn::detail::GemmOperand a{nullptr, cs.k + cs.pad, 1}, b{nullptr, cs.n + cs.pad, 1};
      if (cs.k * cs.n * sizeof(float) <= attn::detail::cpu_info().l2_bytes / 2) continue;
      INFO("isa " << attn::isa_name(isa) << " m " << cs.m << " n " << cs.n << " k " << cs.k);
      const GemmPath path = attn::detail::gemm_path(*kern, shape, a, b);
      if (cs.m < kern->gemm_prefetch_b_min_rows) {
        CHECK(path == GemmPath::rows);
      } else if (cs.m <= attn::detail::gemm_prefetched_max_rows(*kern, b)) {
        CHECK(path == GemmPath::prefetched);
      } else {
        CHECK(path != GemmPath::prefetched);
      }
    }
  }
  run_across_threads(cases, {1, 2, 3}, 41);
}

TEST_CASE("matmul: a large B whose rows start past a vector boundary, read in place", "[matmul]") {
  // GemmPath::prefetched reads B's rows in place; where they all start the same number of floats
  // past a vector boundary (the row stride a whole number of vectors), its first panel is narrower
  // on AVX2 and AVX-512 (up to the next line) so that the later panels' loads do not span two
  // cache lines (gemm_prefetched_first_panel, matmul/gemm_path.cpp), and the tile takes as many
  // vectors as a panel's columns need (gemm_prefetch_b). B's view starts 0, 1, 4 (where malloc
  // leaves a large block: 16 bytes past a line), 8 and 12 floats into a buffer on a 64-byte line,
  // with a row stride of 1040 floats (65 lines); n = 1030 columns, so AVX-512's first panel is 48
  // (no shift), 15, 12, 8 or 4 columns and its last 22 (two vectors), 7, 10, 14 or 18 (AVX2's
  // first 16, 15, 12, 16 or 4 columns: 8 floats are a whole vector there); 13 rows (groups of 7
  // and 6 on AVX-512 and NEON); k = 520 (chunks of 256, 256 and 8), so that B (2.04 MiB) is over
  // half of the 4 MiB L2 that qemu's x86 models report. Each offset's result within the
  // reference's tolerance and bit-identical to the others' (the same sums, whatever the panels),
  // on threads 1 and 3.
  const std::size_t m = 13, n = 1030, k = 520, ldb = 1040;
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    if (kern->gemm_prefetch_b == nullptr) continue;
    // The first panel: up to the next line (AVX-512 and AVX2).
    std::vector<float> storage(32);
    const std::size_t nr = kern->gemm_prefetch_b_nr, lanes = kern->gemm_direct_narrow_nr;
    const auto first_panel = [&](std::size_t offset, std::size_t stride) {
      return attn::detail::gemm_prefetched_first_panel(
          *kern, {attn_test::line_start(storage, offset), stride, 1});
    };
    INFO("isa " << attn::isa_name(isa));
    CHECK(first_panel(0, ldb) == nr);
    CHECK(first_panel(lanes, ldb) == nr);
    CHECK(first_panel(1, ldb + 1) == nr);  // rows past different boundaries
    // Not with 16-byte vectors (SSE2, NEON).
    CHECK(first_panel(1, ldb) == (lanes == 4 ? nr : 15));
    CHECK(first_panel(4, ldb) == (lanes == 4 ? nr : 12));
    CHECK(first_panel(1, lanes) == (lanes == 4 ? nr : 15));
  }
  const auto on_path = [&](const attn::detail::Kernels& kern, const float* b, std::size_t stride) {
    if (kern.gemm_prefetch_b != nullptr &&
        k * n * sizeof(float) > attn::detail::cpu_info().l2_bytes / 2) {
      CHECK(attn::detail::gemm_path(kern, {m, n, k}, {nullptr, k, 1}, {b, stride, 1}) ==
            attn::detail::GemmPath::prefetched);
    }
  };
  check_b_layouts({m, n, k, Transpose::no, Transpose::no, -0.5f, 1.0f, 0},
                  {{0, ldb}, {1, ldb}, {4, ldb}, {8, ldb}, {12, ldb}}, {1, 3}, 43, false, on_path);
  // All of C within the narrowed first panel: 16 x 12 x 12000 (B 576 KB, over half of a 1 MiB
  // L2; 12 columns, one no-packing tile wide, so not the rows path), B 1 and 4 floats past a line
  // with a row stride of 16 (first panels of 15 and 12 columns on AVX-512 and AVX2).
  const std::size_t kk = 12000, nn = 12;
  const auto on_path_narrow = [&](const attn::detail::Kernels& kern, const float* b,
                                  std::size_t stride) {
    if (kern.gemm_prefetch_b != nullptr &&
        kk * nn * sizeof(float) > attn::detail::cpu_info().l2_bytes / 2) {
      CHECK(attn::detail::gemm_path(kern, {16, nn, kk}, {nullptr, kk, 1}, {b, stride, 1}) ==
            attn::detail::GemmPath::prefetched);
    }
  };
  check_b_layouts({16, nn, kk, Transpose::no, Transpose::no, 1.0f, 0.0f, 0},
                  {{0, 16}, {1, 16}, {4, 16}}, {1, 3}, 47, true, on_path_narrow);
}

TEST_CASE("matmul: the prefetched path's k in one pass where C is beyond L2", "[matmul]") {
  // GemmPath::prefetched runs k in chunks of 256 (every panel per chunk), or all of k in one pass
  // where C is beyond L2, A within half of it and a panel's k rows of B within L2's sets: at most
  // L2 / max(gcd(row bytes, 4096), panel bytes per row) rows (gemm_prefetched_kc,
  // matmul/gemm_path.cpp). The rule on this CPU's L2 at each of its edges; then 9 rows (AVX2's
  // first on the path) of k = 300 against n = L2 / 36 + 29 columns, C just over L2: one pass (a
  // chunk of 256 and one of 44 before), within the reference's tolerance on every ISA (the path on
  // those with it), threads 1 and 2 bit-identical. Natively only: under an emulator's 4 MiB L2 the
  // product would be 315 M multiply-adds per run (the emulated runs take the chunks in the test
  // above).
  const std::size_t l2 = attn::detail::cpu_info().l2_bytes, m = 9, k = 300;
  const std::size_t n_over = l2 / (4 * m) + 29, n_within = l2 / (4 * m);
  // 48 rows, C over L2: A just over half of L2 at k_over (B's rows within L2's sets).
  const std::size_t m48 = 48, n48 = l2 / (4 * m48) + 29, k_over = l2 / 2 / (4 * m48) + 1;
  // Row strides past n_over, an odd multiple of 1 KiB (L2 / 1024 rows fit) and a multiple of
  // 4 KiB (L2 / 4096).
  const std::size_t ld_1k = (n_over / 512 + 1) * 512 + 256, ld_4k = (n_over / 1024 + 1) * 1024;
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    if (kern->gemm_prefetch_b == nullptr) continue;
    INFO("isa " << attn::isa_name(isa));
    const auto kc = [&](std::size_t n, std::size_t kk, std::size_t ldb, std::size_t rows) {
      return attn::detail::gemm_prefetched_kc(*kern, {rows, n, kk}, {nullptr, ldb, 1});
    };
    CHECK(kc(n_over, k, n_over, m) == k);
    CHECK(kc(n_within, k, n_over, m) == 256);
    CHECK(kc(n48, k_over - 1, n48, m48) == k_over - 1);
    CHECK(kc(n48, k_over, n48, m48) == 256);
    CHECK(kc(n_over, l2 / 1024, ld_1k, m) == l2 / 1024);
    CHECK(kc(n_over, l2 / 1024 + 1, ld_1k, m) == 256);
    CHECK(kc(n_over, l2 / 4096, ld_4k, m) == l2 / 4096);
    CHECK(kc(n_over, l2 / 4096 + 1, ld_4k, m) == 256);
    if (attn_test::emulated()) continue;
    CHECK(attn::detail::gemm_path(*kern, {m, n_over, k}, {nullptr, k, 1}, {nullptr, n_over, 1}) ==
          attn::detail::GemmPath::prefetched);
  }
  if (attn_test::emulated()) return;
  const Case cases[] = {{m, n_over, k, Transpose::no, Transpose::no, -0.5f, 1.0f, 0}};
  run_across_threads(cases, {1, 2}, 47);
}

TEST_CASE("matmul: few rows against a large B, packed one sliver at a time", "[matmul]") {
  // Where all of op(A)'s rows, packed for one KC block, fit in half of L2 and the packed
  // KC x NC panel of B would not fit in half of it (GemmPath::streamed, matmul/gemm_path.cpp), each
  // thread packs op(A) whole and B one NR-wide sliver at a time, running every row panel over
  // each sliver; the threads split the column panels. n >= 2100 makes the panel larger than
  // 1 MiB on every ISA's KC (128 on SSE2); on a CPU with a larger L2 these shapes run the Goto
  // path instead. Rows from 1 (an A^T with a stride past its row: with none, one row of A^T is a
  // row-major row and takes GemmPath::rows) to 49 (row-major A and B: fewer rows take
  // GemmPath::prefetched, on AMD more where B's rows are not a multiple of 4 KiB apart, so there
  // 49 x 2048, rows 8 KiB apart, is the row-major case that takes this path; its panel, 1 MiB on
  // SSE2's KC, takes the Goto path on SSE2 where half of L2 is 1 MiB or more); k of 130-600, so
  // 2 to 5 KC passes on SSE2 (KC
  // 128) and 2 or 3 at k >= 300 on AVX2 (KC 256); last panels of
  // 52, 0, 38, 54, 40 columns of 64 (AVX-512); all four transposes; strides past the row; threads
  // 1, 2 and 3 bit-identical (gemm runs one thread below 2 MFLOP; each of these
  // cases is above). Sizes kept small for the emulated CI runs (qemu).
  const Case cases[] = {
      {1, 2100, 600, Transpose::yes, Transpose::no, 1.0f, 0.0f, 1},
      {5, 2112, 300, Transpose::yes, Transpose::no, -0.5f, 1.0f, 3},
      {13, 2150, 140, Transpose::no, Transpose::yes, 1.0f, 1.0f, 1},
      {49, 2102, 130, Transpose::no, Transpose::no, 2.0f, -0.5f, 0},
      {49, 2048, 130, Transpose::no, Transpose::no, 1.0f, 0.5f, 0},
      {7, 4200, 130, Transpose::yes, Transpose::yes, 1.0f, 0.0f, 2},
  };
  run_across_threads(cases, {1, 2, 3}, 31);
}

TEST_CASE("matmul: A B^T with a few dozen rows, computed as its transpose", "[matmul]") {
  // A B^T with B^T over half of L2, from one vector of rows (Kernels::gemm_direct_narrow_nr:
  // AVX-512 16, AVX2 8, SSE2 and NEON 4) and more than gemm_rows_t_max (8) to 128, at most a
  // quarter of a vector of idle lanes in the last one, and op(A)^T (k x round_up(m, 16) floats)
  // within L2, takes GemmPath::c_transposed (matmul/gemm_path.cpp) on the SIMD ISAs: C^T = B^T
  // op(A)^T by the no-packing tiles with B^T's rows read in place, op(A)^T transposed once by
  // Kernels::gemm_store_t (read in place where op(A) is an A^T), C^T's rows in chunks within half
  // of L1 written to C's columns by gemm_store_t. Cases: one vector (16 rows), 64 rows with n and
  // k odd (a last row block of 5 rows of C^T on AVX-512 and NEON, 1 on AVX2 and SSE2), 60 rows
  // (4 idle lanes on AVX-512), an A^T (read in place) with a stride past its row, and 4200
  // columns (C^T in 22 chunks of 192 rows at 32 rows on AVX-512 with a 48 KiB L1); alpha 1 with
  // beta 0, alpha and beta other than 0 and 1; strides past the row; threads 1 and 3
  // bit-identical. B^T: 2.1-2.2 MB, over half of the 4 MiB L2 that qemu's x86 models report, so
  // the emulated x86 CI runs take the path too (sizes kept near that bound: the check is
  // m n k, 35 s of the Nehalem stage with 128 rows and k = 300 on three thread counts). The
  // test also
  // requires that gemm_path names the path for these where the rule holds on this CPU, and not
  // one row past the limit, below one vector, with more idle lanes, nor with op(A)^T beyond L2.
  // 14 and 11 rows: the fewest AVX2 and SSE2 (NEON) take, a vector with 2 and 1 idle lanes.
  // Where B^T fits half of L2, up to 16 rows with k >= 64 take the path too (the last two cases:
  // B^T 120 KB, and 10 KB with an A^T read in place), more rows or fewer k steps do not.
  const Case cases[] = {
      {16, 2100, 250, Transpose::no, Transpose::yes, 1.0f, 0.0f, 0},
      {14, 2100, 250, Transpose::no, Transpose::yes, -0.5f, 0.0f, 1},
      {11, 2100, 250, Transpose::no, Transpose::yes, 1.0f, 1.0f, 0},
      {64, 2101, 261, Transpose::no, Transpose::yes, -0.5f, 1.0f, 3},
      {60, 2100, 250, Transpose::no, Transpose::yes, 2.0f, -0.5f, 2},
      {48, 2100, 250, Transpose::yes, Transpose::yes, -0.5f, 0.5f, 1},
      {32, 4200, 130, Transpose::no, Transpose::yes, 1.0f, 0.5f, 0},
      {16, 300, 100, Transpose::no, Transpose::yes, -0.5f, 1.0f, 2},
      {16, 40, 64, Transpose::yes, Transpose::yes, 1.0f, 0.0f, 1},
  };
  using attn::detail::GemmOperand;
  using attn::detail::GemmPath;
  const std::size_t l2 = attn::detail::cpu_info().l2_bytes;
  const auto at_fits_l2 = [l2](std::size_t m, std::size_t k) {
    return k * ((m + 15) / 16 * 16) * sizeof(float) <= l2;
  };
  for (attn::Isa isa : attn_test::test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    const std::size_t lanes = kern->gemm_direct_narrow_nr;
    const auto path = [&](std::size_t m, std::size_t n, std::size_t k) {
      return attn::detail::gemm_path(*kern, {m, n, k}, GemmOperand{nullptr, k + 1, 1},
                                     GemmOperand{nullptr, 1, k + 1});
    };
    INFO("isa " << attn::isa_name(isa));
    const std::size_t big_k = 64, big_n = l2 / sizeof(float) / big_k + 1;  // B^T over L2
    if (kern->gemm_store_t == nullptr) {                                   // the scalar table
      CHECK(path(64, big_n, big_k) != GemmPath::c_transposed);
      continue;
    }
    // 8 rows and fewer take GemmPath::rows first (AVX2, SSE2, NEON).
    const std::size_t first =
        lanes > kern->gemm_rows_t_max ? lanes : (kern->gemm_rows_t_max / lanes + 1) * lanes;
    CHECK(path(first, big_n, big_k) == GemmPath::c_transposed);
    // The fewest rows the rule takes, with idle lanes in the one vector of rows of C^T: AVX-512
    // 16, AVX2 14 (2 of 8 idle), SSE2 and NEON 11 (1 of 4); the cases above run 14 and 11.
    std::size_t least = kern->gemm_rows_t_max + 1;
    while (least < lanes || ((least + lanes - 1) / lanes * lanes - least) * 4 > lanes)
      ++least;
    CHECK(path(least, big_n, big_k) == GemmPath::c_transposed);
    CHECK(path(least - 1, big_n, big_k) != GemmPath::c_transposed);
    CHECK(path(128, big_n, big_k) == GemmPath::c_transposed);  // op(A)^T 32 KiB
    CHECK(path(129, big_n, big_k) != GemmPath::c_transposed);
    CHECK(path(lanes - 1, big_n, big_k) != GemmPath::c_transposed);
    CHECK(path(lanes + 1, big_n, big_k) != GemmPath::c_transposed);  // lanes - 1 idle
    CHECK(path(4 * lanes - lanes / 4, big_n, big_k) == GemmPath::c_transposed);
    // op(A)^T of k x 128 floats beyond L2; B^T within half of it.
    const std::size_t deep_k = l2 / (128 * sizeof(float)) + 1;
    CHECK(path(128, big_n, deep_k) != GemmPath::c_transposed);
    CHECK(path(64, l2 / 2 / sizeof(float) / big_k, big_k) != GemmPath::c_transposed);
    // B^T within half of L2: up to 16 rows with k >= 64.
    if (first <= 16) {
      CHECK(path(first, 300, 64) == GemmPath::c_transposed);
      CHECK(path(first, 300, 63) != GemmPath::c_transposed);
    }
    CHECK(path(16 + lanes, 300, 100) != GemmPath::c_transposed);
    for (const Case& cs : cases) {
      const bool beyond_half_l2 = cs.k * cs.n * sizeof(float) > l2 / 2;
      if ((!beyond_half_l2 && (cs.m > 16 || cs.k < 64)) || cs.ta == Transpose::yes ||
          !at_fits_l2(cs.m, cs.k) || cs.m < first) {
        continue;
      }
      INFO("m " << cs.m << " n " << cs.n << " k " << cs.k);
      const std::size_t padded = (cs.m + lanes - 1) / lanes * lanes;
      if ((padded - cs.m) * 4 > lanes) continue;
      CHECK(path(cs.m, cs.n, cs.k) == GemmPath::c_transposed);
    }
  }
  run_across_threads(cases, {1, 3}, 43);
}

TEST_CASE("matmul with k == 0 scales c by beta", "[matmul]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> c = {1, 2, 3, 4}, nan_c(4, attn_test::nan_f());
    const MatrixView<const float> a{nullptr, 2, 0, 0}, b{nullptr, 0, 2, 2};
    REQUIRE(
        attn::matmul(ctx, a, Transpose::no, b, Transpose::no, {c.data(), 2, 2, 2}, 1, -0.5f).ok());
    CHECK(c == std::vector<float>{-0.5f, -1, -1.5f, -2});
    REQUIRE(
        attn::matmul(ctx, a, Transpose::no, b, Transpose::no, {nan_c.data(), 2, 2, 2}, 1, 0).ok());
    CHECK(nan_c == std::vector<float>{0, 0, 0, 0});
  }
}

TEST_CASE("matmul with k == 0: alpha times the empty sum, as the reference, for every alpha",
          "[matmul][ieee]") {
  // C = alpha * (-0) + beta * C: alpha 0, +-inf and NaN take matmul.cpp's product-first branch
  // for k > 0 only, so k == 0 goes through the drivers' own k == 0 block with such alphas too
  // (inf * -0 is NaN, -0.5 * -0 is +0, beta == 0 never reads C). The same bits as
  // reference::matmul (NaN for NaN), for the views and a PackedMatrix of 0 rows, on every ISA.
  const float kInf = attn_test::inf_f(), kNan = attn_test::nan_f();
  const float scales[] = {0.0f, -0.0f, kInf, -kInf, kNan, 1.0f, -0.5f};
  const float c_values[] = {0.0f, -0.0f, 3.0f, kInf, -kInf, kNan};
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (std::size_t m : {1u, 7u, 64u}) {
      for (std::size_t n : {1u, 17u, 100u}) {
        const MatrixView<const float> a{nullptr, m, 0, 0}, b{nullptr, 0, n, n};
        attn::PackedMatrix packed;
        REQUIRE(attn::pack_matrix(ctx, b, Transpose::no, &packed).ok());
        for (float alpha : scales) {
          for (float beta : scales) {
            INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " alpha " << alpha
                        << " beta " << beta);
            std::vector<float> want(m * n), got(m * n), got_packed(m * n);
            for (std::size_t i = 0; i < m * n; ++i)
              want[i] = got[i] = got_packed[i] = c_values[i % 6];
            REQUIRE(attn::reference::matmul(a, Transpose::no, b, Transpose::no,
                                            {want.data(), m, n, n}, alpha, beta)
                        .ok());
            REQUIRE(attn::matmul(ctx, a, Transpose::no, b, Transpose::no, {got.data(), m, n, n},
                                 alpha, beta)
                        .ok());
            REQUIRE(attn::matmul(ctx, a, Transpose::no, packed, {got_packed.data(), m, n, n}, alpha,
                                 beta)
                        .ok());
            std::size_t bad = 0;
            for (std::size_t i = 0; i < m * n; ++i) {
              for (float x : {got[i], got_packed[i]}) {
                const bool same = std::isnan(want[i])
                                      ? std::isnan(x)
                                      : x == want[i] && std::signbit(x) == std::signbit(want[i]);
                if (!same && bad++ < 3)
                  FAIL_CHECK("c[" << i << "] = " << x << ", reference " << want[i] << ", c was "
                                  << c_values[i % 6]);
              }
            }
            CHECK(bad == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("matmul is bit-identical for any thread count", "[matmul][threads]") {
  // The no-packing path (B^T; where L2 does not feed the no-packing kernels 203 rows have B
  // packed instead, into the wide tile's panels on AVX-512 and by the Goto path elsewhere: see
  // gemm_path in matmul/gemm_path.cpp; 61 rows take it on every CPU), and k > 1024: the Goto path,
  // rows split among the threads.
  const Case cases[] = {{203, 77, 300, Transpose::no, Transpose::yes, 1.0f, 0.5f, 1},
                        {61, 77, 300, Transpose::no, Transpose::yes, -0.5f, 0.5f, 2},
                        {203, 77, 1100, Transpose::no, Transpose::no, 1.0f, 0.5f, 0}};
  run_across_threads(cases, {1, 2, 3}, 5);
}

TEST_CASE("matmul: a zero result has the reference's sign (alpha >= 0, beta = 0)", "[matmul]") {
  // c(0, 0) sums products that are all zeros: -1e-30 * 1e-30 (rounds to -0 in float), -1 * 0
  // (exactly -0) or 1 * 0 (+0). The kernels' accumulators and the reference's sum start at -0,
  // the additive identity, so c(0, 0) is -0, -0 and +0 on every path: full or edge tile, packed
  // or not, narrow or wide (and the no-packing 6 x 64 tile, 64 x 64 x 192), KC passes (k = 600),
  // the one-tile path, the rows kernels of 1-4 rows against B and B^T (the last four; B^T's last
  // partial vector multiplies fills whose product is -0; 5 x 2100 x 130 the B^T kernel's 5 rows,
  // B^T over half of a 2 MiB L2), GemmPath::prefetched's k chunks
  // (9 x 1000 x 300, B over half of a 2 MiB L2); and k = 0 gives alpha * -0.
  struct Shape {
    std::size_t m, n, k;
    Transpose ta, tb;
  };
  const Shape shapes[] = {
      {8, 32, 1, Transpose::no, Transpose::no},      {7, 32, 1, Transpose::no, Transpose::no},
      {6, 16, 1, Transpose::no, Transpose::no},      {6, 16, 3, Transpose::no, Transpose::no},
      {8, 16, 2, Transpose::no, Transpose::no},      {1, 1, 1, Transpose::no, Transpose::no},
      {8, 32, 1, Transpose::no, Transpose::yes},     {9, 40, 5, Transpose::no, Transpose::yes},
      {6, 64, 1, Transpose::yes, Transpose::no},     {5, 64, 1, Transpose::yes, Transpose::no},
      {6, 16, 1, Transpose::yes, Transpose::no},     {13, 70, 600, Transpose::yes, Transpose::no},
      {20, 1100, 3, Transpose::no, Transpose::no},   {3, 5, 0, Transpose::no, Transpose::no},
      {64, 64, 192, Transpose::no, Transpose::no},   {1, 40, 1, Transpose::no, Transpose::no},
      {3, 70, 5, Transpose::no, Transpose::no},      {1, 40, 3, Transpose::no, Transpose::yes},
      {4, 33, 37, Transpose::no, Transpose::yes},    {9, 1000, 300, Transpose::no, Transpose::no},
      {5, 2100, 130, Transpose::no, Transpose::yes},
  };
  const float a_values[] = {-1e-30f, -1.0f, 1.0f}, b_values[] = {1e-30f, 0.0f, 0.0f};
  const bool negative[] = {true, true, false};
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (const Shape& s : shapes) {
      for (int kind = 0; kind < 3; ++kind) {
        for (float alpha : {1.0f, 2.0f}) {
          INFO("isa " << attn::isa_name(isa) << " m " << s.m << " n " << s.n << " k " << s.k
                      << " a " << a_values[kind] << " b " << b_values[kind] << " alpha " << alpha);
          const std::size_t ar = s.ta == Transpose::no ? s.m : s.k;
          const std::size_t ac = s.ta == Transpose::no ? s.k : s.m;
          const std::size_t br = s.tb == Transpose::no ? s.k : s.n;
          const std::size_t bc = s.tb == Transpose::no ? s.n : s.k;
          std::vector<float> a(ar * ac + 1, 1.0f), b(br * bc + 1, 1.0f), c(s.m * s.n),
              want(s.m * s.n);
          for (std::size_t p = 0; p < s.k; ++p) {
            a[s.ta == Transpose::no ? p : p * ac] = a_values[kind];
            b[s.tb == Transpose::no ? p * bc : p] = b_values[kind];
          }
          const MatrixView<const float> av{a.data(), ar, ac, std::max<std::size_t>(ac, 1)},
              bv{b.data(), br, bc, std::max<std::size_t>(bc, 1)};
          REQUIRE(
              attn::matmul(ctx, av, s.ta, bv, s.tb, {c.data(), s.m, s.n, s.n}, alpha, 0.0f).ok());
          REQUIRE(
              attn::reference::matmul(av, s.ta, bv, s.tb, {want.data(), s.m, s.n, s.n}, alpha, 0.0f)
                  .ok());
          const bool want_negative = s.k == 0 || negative[kind];
          REQUIRE(want[0] == 0.0f);
          REQUIRE(std::signbit(want[0]) == want_negative);
          CHECK(c[0] == 0.0f);
          CHECK(std::signbit(c[0]) == want_negative);
        }
      }
    }
  }
}

TEST_CASE("matmul: alpha 0, +-inf and NaN scale the whole sum, however k is blocked", "[matmul]") {
  // The drivers apply alpha to each k block's partial sum; for these alphas that is not alpha
  // times the sum (matmul.cpp forms the product first). op(A) is ones; op(B)'s rows p < 512 are
  // +1, the rest -10: each column sums to 512 - 10 (k - 512) exactly, negative for k = 600 and
  // 1100 (several KC, wide-tile and prefetched chunks on every ISA), while the first blocks'
  // partial sums are positive. alpha 0 gives -0 (+0 from per-block sums), +inf -inf (NaN from
  // inf - inf), -inf +inf, NaN NaN; beta 0 over a NaN C, or 0.5 over C = 3 (adding 1.5). Every
  // path: the packed Goto loop (A^T), the no-packing wide tile (A B, 64 rows), GemmPath::prefetched
  // or streamed (8 rows, 3000 columns), c_transposed (A B^T, 16 rows), and a PackedMatrix.
  struct Shape {
    std::size_t m, n, k;
    Transpose ta, tb;
    bool packed;
  };
  const Shape shapes[] = {{64, 64, 600, Transpose::yes, Transpose::no, false},
                          {64, 64, 600, Transpose::no, Transpose::no, false},
                          {8, 3000, 600, Transpose::no, Transpose::no, false},
                          {16, 700, 1100, Transpose::no, Transpose::yes, false},
                          {64, 64, 1100, Transpose::yes, Transpose::no, true},
                          {7, 131, 1100, Transpose::no, Transpose::no, true}};
  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2}) {
      attn::Context ctx = attn_test::make_context(isa, threads);
      for (const Shape& s : shapes) {
        const std::size_t ar = s.ta == Transpose::no ? s.m : s.k,
                          ac = s.ta == Transpose::no ? s.k : s.m,
                          br = s.tb == Transpose::no ? s.k : s.n,
                          bc = s.tb == Transpose::no ? s.n : s.k;
        const std::vector<float> a(ar * ac, 1.0f);
        std::vector<float> b(br * bc);
        for (std::size_t p = 0; p < s.k; ++p)
          for (std::size_t j = 0; j < s.n; ++j)
            b[s.tb == Transpose::no ? p * bc + j : j * bc + p] = p < 512 ? 1.0f : -10.0f;
        const MatrixView<const float> av{a.data(), ar, ac, ac}, bv{b.data(), br, bc, bc};
        attn::PackedMatrix packed;
        if (s.packed) REQUIRE(attn::pack_matrix(ctx, bv, s.tb, &packed).ok());
        for (float alpha : {0.0f, attn_test::inf_f(), -attn_test::inf_f(), attn_test::nan_f()}) {
          for (float beta : {0.0f, 0.5f}) {
            INFO("isa " << attn::isa_name(isa) << " threads " << threads << " m " << s.m << " n "
                        << s.n << " k " << s.k << " packed " << s.packed << " alpha " << alpha
                        << " beta " << beta);
            std::vector<float> c(s.m * s.n, beta == 0.0f ? attn_test::nan_f() : 3.0f);
            const MatrixView<float> cv{c.data(), s.m, s.n, s.n};
            if (s.packed) {
              REQUIRE(attn::matmul(ctx, av, s.ta, packed, cv, alpha, beta).ok());
            } else {
              REQUIRE(attn::matmul(ctx, av, s.ta, bv, s.tb, cv, alpha, beta).ok());
            }
            const float sum = 512.0f - 10.0f * float(s.k - 512);
            const float want = beta == 0.0f ? alpha * sum : alpha * sum + beta * 3.0f;
            std::size_t bad = 0;
            for (float x : c) {
              const bool same = std::isnan(want)
                                    ? std::isnan(x)
                                    : x == want && std::signbit(x) == std::signbit(want);
              if (!same && bad++ < 3) FAIL_CHECK("got " << x << ", want " << want);
            }
            CHECK(bad == 0);
          }
        }
      }
    }
  }
}

// GemmPath::rows against a row-major B, called directly: Kernels::gemm_rows with b_beyond_l3 false
// and true writes the same bits (one row of A then takes its wide passes, 16 or 8 rows of B at a
// time, even where B's rows share L1 sets: matmul/gemm_rows_kernel.hpp) and meets the no-packing
// tiles' contract on the m x n block, nothing else written and beta == 0 never reading C.
// (Tolerance: support/direct_tile_check.hpp; how many rows of B a pass takes changes no sum.) The
// flag changes speed only: a kernel that ignored it would pass here; what this catches is a wrong
// sum from the wide passes at the strides where only the flag lets them run.
#include <catch2/catch.hpp>
#include <cstddef>
#include <random>
#include <vector>

#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"
#include "matmul/gemm.hpp"
#include "support/direct_tile_check.hpp"
#include "support/kernel_tables.hpp"
#include "support/test_support.hpp"

TEST_CASE("gemm_rows writes the same bits with and without b_beyond_l3", "[matmul]") {
  // One row (the wide passes), 2 rows (a register tile of 4-row passes) and 6 (the kernel for any
  // number of rows); row strides of B a multiple of 2 KiB (512 and 1024 floats: the passes that
  // b_beyond_l3 widens) and not (701); k = 55 (three 16-row passes, or six 8-row, then a 4-row
  // pass and 3 single rows) and 16; n = 300 in blocks of at most 128 of equal widths, and n = 5 (a
  // partial vector alone); alpha 1 with beta 0 (over NaN in C), -0.5 and 1 with a bias.
  struct Mode {
    float alpha, beta;
    bool bias;
  };
  const Mode modes[] = {{1.0f, 0.0f, false}, {-0.5f, 1.0f, true}};
  std::mt19937 rng(43);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_rows != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        for (std::size_t m : {1, 2, 6}) {
          for (std::size_t ldb : {512, 1024, 701}) {
            for (std::size_t k : {55, 16}) {
              for (std::size_t n : {300, 5}) {
                for (const Mode& md : modes) {
                  INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k
                              << " ldb " << ldb << " alpha " << md.alpha << " beta " << md.beta);
                  const std::size_t lda = k + 3, ldc = n + 4, c_rows = m + 1, block = 128;
                  const attn_test::DirectOperands ops(m, n, k, lda, ldb, ldc, c_rows, md.beta, rng);
                  const float* bias = md.bias ? ops.bias.data() : nullptr;
                  std::vector<float> in_cache = ops.c0, from_memory = ops.c0;
                  std::vector<float> acc(m * block);
                  kern->gemm_rows(k, ops.a.data(), lda, ops.b.data(), ldb, in_cache.data(), ldc,
                                  md.alpha, md.beta, m, n, bias, acc.data(), block, false);
                  kern->gemm_rows(k, ops.a.data(), lda, ops.b.data(), ldb, from_memory.data(), ldc,
                                  md.alpha, md.beta, m, n, bias, acc.data(), block, true);
                  const attn_test::DirectTile tile{m,     n,   k,    md.alpha, md.beta, ops.a, lda,
                                                   ops.b, ldb, bias, ops.c0,   ldc,     c_rows};
                  CHECK(attn_test::check_direct_tile(tile, from_memory, in_cache) == 0);
                }
              }
            }
          }
        }
      });
  if (!ran) SUCCEED("no ISA here has the rows kernel (scalar only)");
}

TEST_CASE("gemm_rows' b_beyond_l3 holds from B's size of L3 on", "[matmul]") {
  // rows_b_beyond_l3 (matmul/gemm_path.cpp): k x n floats of B against CpuInfo::l3_bytes, whatever
  // the row stride; at exactly L3 and one row of 1024 floats either side.
  const std::size_t l3 = attn::detail::cpu_info().l3_bytes;
  REQUIRE(l3 % 4096 == 0);
  const std::size_t n = 1024, k = l3 / (n * sizeof(float));
  CHECK(attn::detail::rows_b_beyond_l3({1, n, k}));
  CHECK(attn::detail::rows_b_beyond_l3({4, n, k + 1}));
  CHECK_FALSE(attn::detail::rows_b_beyond_l3({1, n, k - 1}));
  CHECK_FALSE(attn::detail::rows_b_beyond_l3({1, 2304, 768}));
}

// GemmPath::rows against a B^T, called directly: Kernels::gemm_rows_t and gemm_rows_t_prefetch
// (the same dot products, one prefetching B^T 4 KiB ahead; matmul takes one of them by CPU and
// row count, CpuInfo::rows_t_prefetch_min_rows) write the same bits, and meet GemmDirectKernel's
// contract on the m x n block, nothing else written and beta == 0 never reading C. (Tolerance:
// support/direct_tile_check.hpp; the dot products' order of summation changes no term of its
// bound.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/kernels.hpp"
#include "support/direct_tile_check.hpp"
#include "support/kernel_tables.hpp"
#include "support/test_support.hpp"

TEST_CASE("gemm_rows_t_prefetch writes gemm_rows_t's bits", "[matmul]") {
  // Every row count (1 to gemm_rows_t_max: one row in groups of up to 8 rows of B^T, one
  // accumulator per output; 2 rows 2 accumulators per row, more 1); k of 1 (a partial vector
  // alone), 7, 64 (whole vectors), 137 and 1100 (rows of B^T over 4 KiB: the prefetch runs ahead
  // within one row and into the next); n of 5, 15 and 33 (a partial vector of outputs; for one
  // row on 16 or 8 lanes groups of 4 and 1, of 8 or 4, 2 and 1, and of 1; on 4 lanes n = 15 and
  // 70 end in groups of 2 and 1, 5 and 33 in one of 1), 16 (whole vectors only), 24 (AVX-512: a
  // whole vector, then a whole group of 8) and 70; row strides past the rows; alpha 1 with beta 0
  // (over NaN in C), alpha and beta other than 0 and 1 with a bias.
  struct Mode {
    float alpha, beta;
    bool bias;
  };
  const Mode modes[] = {{1.0f, 0.0f, false}, {-0.5f, 1.0f, true}, {2.0f, -0.5f, true}};
  std::mt19937 rng(41);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_rows_t != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        REQUIRE(kern->gemm_rows_t_prefetch != nullptr);
        for (std::size_t m = 1; m <= kern->gemm_rows_t_max; ++m) {
          for (std::size_t n : {5, 15, 16, 24, 33, 70}) {
            for (std::size_t k : {1, 7, 64, 137, 1100}) {
              for (const Mode& md : modes) {
                INFO("isa " << attn::isa_name(isa) << " m " << m << " n " << n << " k " << k
                            << " alpha " << md.alpha << " beta " << md.beta << " bias " << md.bias);
                const std::size_t lda = k + 3, ldbt = k + 5, ldc = n + 4, c_rows = m + 1;
                // n and k swapped on purpose: ops.b is then B^T (n rows of ldbt floats; ops.bias, k
                // values, unused), `b` its values as k x n for the contract check.
                const attn_test::DirectOperands ops(m, k, n, lda, ldbt, ldc, c_rows, md.beta, rng);
                std::vector<float> b(k * n);
                for (std::size_t j = 0; j < n; ++j) {
                  for (std::size_t p = 0; p < k; ++p)
                    b[p * n + j] = ops.b[j * ldbt + p];
                }
                std::vector<float> bias(n);
                std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
                for (float& x : bias)
                  x = dist(rng);
                const float* bias_p = md.bias ? bias.data() : nullptr;
                std::vector<float> plain = ops.c0, fetching = ops.c0;
                kern->gemm_rows_t(k, ops.a.data(), lda, ops.b.data(), ldbt, plain.data(), ldc,
                                  md.alpha, md.beta, m, n, bias_p);
                kern->gemm_rows_t_prefetch(k, ops.a.data(), lda, ops.b.data(), ldbt,
                                           fetching.data(), ldc, md.alpha, md.beta, m, n, bias_p);
                const attn_test::DirectTile tile{m, n, k,      md.alpha, md.beta, ops.a, lda,
                                                 b, n, bias_p, ops.c0,   ldc,     c_rows};
                CHECK(attn_test::check_direct_tile(tile, fetching, plain) == 0);
              }
            }
          }
        }
      });
  if (!ran) SUCCEED("no ISA here has the rows kernel (scalar only)");
}

TEST_CASE("gemm_rows_t loads B^T on vector boundaries after a head at every phase", "[matmul]") {
  // Where every row of B^T starts equally far past a vector boundary (its row stride a whole
  // number of vectors), the dot products take the floats before the boundary as one partial
  // vector (the head: rows_t_head in matmul/gemm_rows_t_kernel.hpp), then whole vectors on
  // boundaries. B^T at every phase within a vector (0: no head), with such a stride and with one
  // that is not (one float more: no shared phase, no head); k shorter than the head, equal to
  // it, one longer, whole vectors after it and a partial one, over 4 KiB per row; n of 5 and 33
  // (a partial vector of outputs; whole ones and a partial one); A's rows at B^T's phase and at
  // another (both on every row, its stride a whole number of vectors). Each call meets the contract
  // (tolerance: support/direct_tile_check.hpp; the head only regroups the sums), writes
  // gemm_rows_t_prefetch's bits, and the sums do not depend on where A lies. The head is pinned
  // exactly: a call with one writes the bits of a call on rows that start on a vector boundary with
  // 2 * lanes - head fills after the head's floats (0 in A, -0 in B^T), which put the head in a
  // vector of its own and keep the later vectors in the same accumulators (the 2-row kernel
  // alternates two).
  std::mt19937 rng(43);
  const bool ran = attn_test::for_each_table_with(
      [](const attn::detail::Kernels& k) { return k.gemm_rows_t != nullptr; },
      [&](attn::Isa isa, const attn::detail::Kernels* kern) {
        const std::size_t lanes = kern->gemm_direct_narrow_nr;
        for (std::size_t phase = 0; phase < lanes; ++phase) {
          const std::size_t head = phase == 0 ? 0 : lanes - phase;
          for (std::size_t k :
               {std::size_t{1}, head, head + 1, head + 2 * lanes + 3, std::size_t{1100}}) {
            if (k == 0) continue;
            const std::size_t lda = (k + lanes - 1) / lanes * lanes;
            for (std::size_t ldbt : {lda + lanes, lda + 1}) {
              for (std::size_t m = 1; m <= kern->gemm_rows_t_max; ++m) {
                for (std::size_t n : {5, 33}) {
                  INFO("isa " << attn::isa_name(isa) << " phase " << phase << " k " << k << " ldbt "
                              << ldbt << " m " << m << " n " << n);
                  const std::size_t ldc = n + 3, c_rows = m + 1;
                  const float alpha = -0.5f, beta = m % 2 == 0 ? 0.0f : 1.0f;
                  // n and k swapped, as above: ops.b is B^T's n rows of ldbt floats.
                  const attn_test::DirectOperands ops(m, k, n, lda, ldbt, ldc, c_rows, beta, rng);
                  std::vector<float> bt_store(n * ldbt + 32);
                  float* const bt = attn_test::line_start(bt_store, phase);
                  std::copy_n(ops.b.begin(), n * ldbt, bt);
                  std::vector<float> b(k * n);
                  for (std::size_t j = 0; j < n; ++j) {
                    for (std::size_t p = 0; p < k; ++p)
                      b[p * n + j] = bt[j * ldbt + p];
                  }
                  const attn_test::DirectTile tile{m, n, k,       alpha,  beta, ops.a, lda,
                                                   b, n, nullptr, ops.c0, ldc,  c_rows};
                  std::vector<float> first;
                  for (std::size_t a_phase : {phase, (phase + 1) % lanes}) {
                    std::vector<float> a_store(m * lda + 32);
                    float* const a = attn_test::line_start(a_store, a_phase);
                    std::copy_n(ops.a.begin(), m * lda, a);
                    std::vector<float> plain = ops.c0, fetching = ops.c0;
                    kern->gemm_rows_t(k, a, lda, bt, ldbt, plain.data(), ldc, alpha, beta, m, n,
                                      nullptr);
                    kern->gemm_rows_t_prefetch(k, a, lda, bt, ldbt, fetching.data(), ldc, alpha,
                                               beta, m, n, nullptr);
                    CHECK(attn_test::check_direct_tile(tile, fetching, plain) == 0);
                    if (first.empty()) {
                      first = plain;
                    } else {
                      CHECK(std::memcmp(first.data(), plain.data(), plain.size() * 4) == 0);
                    }
                  }
                  if (phase == 0 || ldbt % lanes != 0) continue;
                  const std::size_t h = std::min(head, k), fills = 2 * lanes - h;
                  const std::size_t k2 = k + fills, ld2 = (k2 + lanes - 1) / lanes * lanes;
                  std::vector<float> a2_store(m * ld2 + 32), b2_store(n * ld2 + 32);
                  float* const a2 = attn_test::line_start(a2_store);
                  float* const b2 = attn_test::line_start(b2_store);
                  const auto spread = [&](const float* src, float fill, float* dst) {
                    std::copy_n(src, h, dst);
                    std::fill_n(dst + h, fills, fill);
                    std::copy(src + h, src + k, dst + h + fills);
                  };
                  for (std::size_t i = 0; i < m; ++i)
                    spread(ops.a.data() + i * lda, 0.0f, a2 + i * ld2);
                  for (std::size_t j = 0; j < n; ++j)
                    spread(bt + j * ldbt, -0.0f, b2 + j * ld2);
                  std::vector<float> spread_out = ops.c0;
                  kern->gemm_rows_t(k2, a2, ld2, b2, ld2, spread_out.data(), ldc, alpha, beta, m, n,
                                    nullptr);
                  CHECK(std::memcmp(first.data(), spread_out.data(), first.size() * 4) == 0);
                }
              }
            }
          }
        }
      });
  if (!ran) SUCCEED("no ISA here has the rows kernel (scalar only)");
}

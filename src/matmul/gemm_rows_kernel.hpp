// The rows kernel (GemmRowsKernel in dispatch/kernels.hpp): a few rows of C against a row-major
// B that is read row after row, in the order it lies in memory, while the rows of C accumulate
// in a block of scratch that stays in L1. A decoding step's projection (one row of A against a
// weight matrix in L3 or DRAM) is bound by reading B once; the register tiles read B in short
// runs of rows that lie a whole row apart, which the hardware prefetchers do not follow across
// pages, and packing B first reads it and then writes and reads it again.
#pragma once

#include <cstddef>

#include "matmul/l1_alias.hpp"
#include "matmul/vector_phase.hpp"
#include "simd/simd.hpp"

namespace attn::detail {
namespace ATTN_ISA_NS {

// acc[i][0:w] (row stride lacc) += a[i][u] * b[u][0:w] for rows i < R of A (row stride lda) and
// U consecutive rows u of B (row stride ldb), one u after another, so that each element's sum
// runs over k in order, as in the register tiles. A's R x U values stay in registers. The first
// `head` columns (0 < head < lanes, or 0) as one partial vector, so that the whole vectors after
// them start where B's rows reach a vector boundary (see gemm_rows_kernel).
template <class A, int R, int U>
inline void rows_pass(const float* a, std::size_t lda, const float* b, std::size_t ldb,
                      std::size_t w, std::size_t head, float* acc, std::size_t lacc) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  V av[R][U];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
      av[i][u] = V(a[static_cast<std::size_t>(i) * lda + static_cast<std::size_t>(u)]);
  }
  const auto partial = [&](std::size_t j, std::size_t t) {  // columns j to j + t, t < L
    V bv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
      bv[u] = load_partial<A>(b + static_cast<std::size_t>(u) * ldb + j, t, 0.0f);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      float* row = acc + static_cast<std::size_t>(i) * lacc + j;
      V s = load_partial<A>(row, t, 0.0f);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u)
        s = fmadd<A>(av[i][u], bv[u], s);
      store_partial<A>(row, t, s);
    }
  };
  std::size_t j = head < w ? head : w;
  if (j != 0) partial(0, j);
  for (; j + L <= w; j += L) {
    V bv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
      bv[u] = V::load_unaligned(b + static_cast<std::size_t>(u) * ldb + j);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      float* row = acc + static_cast<std::size_t>(i) * lacc + j;
      V s = V::load_unaligned(row);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u)
        s = fmadd<A>(av[i][u], bv[u], s);
      s.store_unaligned(row);
    }
  }
  if (j < w) partial(j, w - j);
}

// rows_pass for a number of rows known only at run time (more than the tiles' 4), too many for
// R x U broadcasts in registers: each of A's values is broadcast from memory as its FMA needs it.
// Each element's sum still runs over k in order.
template <class A, int U>
inline void rows_pass_many(std::size_t rows, const float* a, std::size_t lda, const float* b,
                           std::size_t ldb, std::size_t w, std::size_t head, float* acc,
                           std::size_t lacc) {
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  for (std::size_t j = 0, t = 0; j < w; j += t) {
    t = j == 0 && head != 0 ? head : L;
    if (w - j < t) t = w - j;
    V bv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
      bv[u] = load_n<A>(b + static_cast<std::size_t>(u) * ldb + j, t, 0.0f);
    for (std::size_t i = 0; i < rows; ++i) {
      const float* ai = a + i * lda;
      float* row = acc + i * lacc + j;
      V s = load_n<A>(row, t, 0.0f);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u)
        s = fmadd<A>(V(ai[u]), bv[u], s);
      store_n<A>(row, t, s);
    }
  }
}

// C[R x n] = alpha * A B + beta * C (+ bias), columns in blocks of at most `block` (a multiple of
// the lanes), of equal widths (a narrow last block would read B's rows in short runs that the
// prefetchers do not follow), whose R x block accumulators live in acc; per block the sums
// start at -0 (as the register tiles' do) and take U rows of B per pass over them, then go to C as
// store_tile writes a tile: fma(alpha, acc, bias or -0), then fma(beta, c, that) unless beta == 0.
template <class A, int R>
void gemm_rows_kernel(A, std::size_t k, const float* a, std::size_t lda, const float* b,
                      std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                      std::size_t m, std::size_t n, const float* bias, float* acc,
                      std::size_t block, bool b_beyond_l3) {
  const std::size_t rows = R == 0 ? m : static_cast<std::size_t>(R);  // R == 0: m rows
  using V = vfloat<A>;
  constexpr std::size_t L = lanes<A>;
  // R * U broadcasts, R sums, U rows of B per pass over the sums (U4 where B's rows alias).
  constexpr int U4 = R == 0 || R <= 2 || L == 16 ? 4 : 2;
  // One row of A takes 16 rows of B per pass on AVX-512, 8 on AVX2: C's sums are loaded and
  // stored once per U rows instead of 4, and U rows of B stream at once (Zen 4, AB_LIB_OFFSET=16
  // bench/ab-lib, 9-15 pairs: 1 x 2304 x 768 0.825-0.885x the time, 1 x 768 x 3072
  // 0.886-0.907x, 1 x 1000 x 1000 0.952x, 1 x 2304 x 771 0.866x; AVX2 0.850x and 0.852x; two
  // threads 0.937-1.057x; B within L2, 1 x 256 x 768, 1.005-1.054x). Not where B's rows share
  // L1 sets (matmul/l1_alias.hpp): a pass's U lines of B then evict the sums' line from its set
  // (1 x 1024 x 1024 took 1.47x the time, 1 x 2048 x 1024 1.23x; with this rule 1.021x and level),
  // unless B is beyond L3 (b_beyond_l3): read from memory, the U rows in flight at once win
  // there (bench/ab-lib, 9 pairs, rows 4-32 KiB apart: 1 x 2048 x 4096 0.732x the time, 1 x 4096
  // x 2048 0.696x, 1 x 4096 x 4096 0.832x, 1 x 8192 x 4096 0.825x; against B hot in L3, 1 x 2048
  // x 2048 1.128x, 1 x 1024 x 4096 1.044x, 1 x 1024 x 1024 1.583x, though the same shapes with
  // B cycled through copies beyond L3, as a decoding step's weights come, 0.733-0.806x).
  constexpr int U = R == 1 && L >= 8 ? static_cast<int>(L) : U4;
  [[maybe_unused]] const bool wide_passes = U > U4 && (b_beyond_l3 || !rows_share_l1_sets(ldb));
  const V va(alpha), vb(beta);
  // Where all of B's rows start the same number of floats past a vector boundary (ldb a whole
  // number of vectors), the first block's sums start that many floats into acc (a vector
  // boundary) and its first `head` columns go as one partial vector: the passes' whole vectors
  // then load B (and acc) on boundaries, none spanning two cache lines, and the later blocks start
  // on one too. The sums do not change. B, A and C 16 bytes past a line (as malloc leaves a large
  // block; AB_LIB_OFFSET=16 bench/ab-lib, 9 pairs): AVX-512 1 x 2304 x 768 0.893x the time, 4
  // rows 0.977x; AVX2 1 row 0.975x, 6 rows 0.969x; on lines, level (0.99x).
  std::size_t shift = rows_vector_phase(b, ldb, L);
  // Blocks of `even` columns, the first `shift` short, the last whatever is left (at most even).
  const std::size_t blocks = (n + shift + block - 1) / block;
  const std::size_t even = ((n + shift + blocks - 1) / blocks + L - 1) / L * L;  // <= block
  for (std::size_t j0 = 0, w = 0; j0 < n; j0 += w, shift = 0) {
    w = n - j0 <= block - shift ? n - j0 : even - shift;
    const std::size_t head = shift == 0 ? 0 : L - shift;
    float* const sums = acc + shift;
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < w; ++j)
        sums[i * block + j] = -0.0f;
    }
    std::size_t p = 0;
    if constexpr (R == 0) {
      for (; p + U <= k; p += U)
        rows_pass_many<A, U>(rows, a + p, lda, b + p * ldb + j0, ldb, w, head, sums, block);
      for (; p < k; ++p)
        rows_pass_many<A, 1>(rows, a + p, lda, b + p * ldb + j0, ldb, w, head, sums, block);
    } else {
      if constexpr (U > U4) {
        for (; wide_passes && p + U <= k; p += U)
          rows_pass<A, R, U>(a + p, lda, b + p * ldb + j0, ldb, w, head, sums, block);
      }
      for (; p + U4 <= k; p += U4)
        rows_pass<A, R, U4>(a + p, lda, b + p * ldb + j0, ldb, w, head, sums, block);
      for (; p < k; ++p)
        rows_pass<A, R, 1>(a + p, lda, b + p * ldb + j0, ldb, w, head, sums, block);
    }
    for (std::size_t i = 0; i < rows; ++i) {
      const float* s = sums + i * block;
      float* row = c + i * ldc + j0;
      for (std::size_t j = 0; j < w; j += L) {
        const std::size_t t = w - j < L ? w - j : L;
        const V add = bias == nullptr ? V(-0.0f) : load_n<A>(bias + j0 + j, t, 0.0f);
        V r = fmadd<A>(va, load_n<A>(s + j, t, 0.0f), add);
        if (beta != 0.0f) r = fmadd<A>(vb, load_n<A>(row + j, t, 0.0f), r);
        store_n<A>(row + j, t, r);
      }
    }
  }
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

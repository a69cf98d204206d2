// The GEMM's drivers (matmul/gemm.hpp): the loops of each GemmPath and of a pre-packed B, and the
// scratch each needs. Which path a product takes is decided in matmul/gemm_path.cpp, but for
// one_direct_tile's shortcut and the direct path's choice of tile (use_direct_wide), here.
#include "matmul/gemm.hpp"

#include <algorithm>
#include <cstdint>

#include "core/parallel.hpp"
#include "dispatch/cpu.hpp"
#include "matmul/gemm_shared.hpp"

namespace attn::detail {
namespace {

struct GemmPlan {
  std::size_t mr, nr, mc, kc, nc;
  std::size_t copies;    // of each A value in the panels (Kernels::gemm_a_copies)
  std::size_t a_floats;  // per thread: packed MC x KC block of A, times copies
  std::size_t b_floats;  // shared: packed KC x NC panel of B
};

// Below about 10 microseconds of work, starting threads costs more than it saves.
int effective_threads(int threads, const GemmShape& s) {
  if (threads == 1) return 1;
  return 2.0 * double(s.m) * double(s.n) * double(s.k) < 2e6 ? 1 : threads;
}

// The table's MC on this CPU (GemmBlocking::mc_double_pumped).
std::size_t table_mc(const Kernels& kern) {
  const GemmBlocking& blk = kern.gemm_blocking;
  return blk.mc_double_pumped != 0 && cpu_info().avx512_double_pumped ? blk.mc_double_pumped
                                                                      : blk.mc;
}

GemmPlan make_plan(const Kernels& kern, const GemmShape& s, int threads) {
  GemmPlan p;
  p.mr = kern.gemm_mr;
  p.nr = kern.gemm_nr;
  const GemmBlocking& blk = kern.gemm_blocking;
  const std::size_t kc = table_kc(kern);
  p.kc = std::min(kc, std::max<std::size_t>(s.k, 1));
  // MC: at most the table's, and such that the row blocks split evenly among the threads (the
  // blocking never changes a result: each element of C is reduced over k in the same order).
  const std::size_t mc = table_mc(kern);
  const std::size_t m = std::max<std::size_t>(s.m, 1);
  const std::size_t t = static_cast<std::size_t>(threads);
  const std::size_t blocks = round_up((m + mc - 1) / mc, t);
  p.mc = std::min(mc, round_up((m + blocks - 1) / blocks, p.mr));
  const std::size_t nc = blk.nc * blk.kc / kc / p.nr * p.nr;  // the table's B panel size
  p.nc = std::min(nc, round_up(std::max<std::size_t>(s.n, 1), p.nr));
  p.copies = kern.gemm_a_copies;
  p.a_floats = round_up(p.mc * p.kc * p.copies, 16);
  p.b_floats = round_up(p.nc * p.kc, 16);
  return p;
}

// Packs rows [i0, i0 + mc) x cols [p0, p0 + kc) of op(A) into MR-row panels: panel r holds
// a[(p * MR + i) * copies + c]; rows past m are zero. a.cs == 1 or a.rs == 1 (GemmOperand).
void pack_a(const Kernels& kern, const GemmPlan& plan, const GemmOperand& a, std::size_t i0,
            std::size_t mc, std::size_t p0, std::size_t kc, float* dst) {
  const std::size_t mr = plan.mr, copies = plan.copies;
  for (std::size_t ir = 0; ir < mc; ir += mr, dst += mr * kc * copies) {
    const std::size_t rows = std::min(mr, mc - ir);
    const float* src = a.data + (i0 + ir) * a.rs + p0 * a.cs;
    if (a.cs == 1) {  // row-major A: a transpose into the panel
      kern.gemm_pack_a(src, a.rs, rows, kc, dst);
    } else {  // A^T: MR contiguous values per k
      kern.gemm_pack_a_cols(src, a.cs, rows, kc, dst);
    }
  }
}

// Packs rows [p0, p0 + kc) x the column panels [panel_begin, panel_end) of op(B) restricted to
// columns [j0, j0 + nc): panel jp, at panels + jp * panel_stride, holds b[p * NR + j]; columns
// past n are zero. b.cs == 1 or b.rs == 1 (GemmOperand).
void pack_b(const Kernels& kern, const GemmPlan& plan, const GemmOperand& b, std::size_t p0,
            std::size_t kc, std::size_t j0, std::size_t nc, std::size_t panel_begin,
            std::size_t panel_end, float* panels, std::size_t panel_stride) {
  const std::size_t nr = plan.nr;
  for (std::size_t jp = panel_begin; jp < panel_end; ++jp) {
    const std::size_t jr = jp * nr;
    const std::size_t cols = std::min(nr, nc - jr);
    float* dst = panels + jp * panel_stride;
    const float* src = b.data + p0 * b.rs + (j0 + jr) * b.cs;
    if (b.cs == 1) {  // row-major B: NR contiguous values per k
      kern.gemm_pack_b_rows(src, b.rs, cols, kc, dst);
    } else {  // B^T: a transpose into the panel
      kern.gemm_pack_b_cols(src, b.cs, cols, kc, dst);
    }
  }
}

// k == 0: c = alpha * (the empty sum, -0) + beta * c (+ bias) on an m x n block (beta == 0 writes
// without reading c); -0 as the kernels' accumulators start and the reference's sum does.
void scale_c(std::size_t m, std::size_t n, float alpha, float beta, float* c, std::size_t ldc,
             const float* bias) {
  const float empty = alpha * -0.0f;
  for (std::size_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (std::size_t j = 0; j < n; ++j) {
      const float add = bias ? bias[j] : -0.0f;
      row[j] = (beta == 0.0f ? empty : empty + beta * row[j]) + add;
    }
  }
}

bool direct_packs_b(const GemmOperand& b) {
  return b.cs != 1;
}

// A no-packing product whose row-major B is exactly one packed tile wide (n == gemm_nr, 64 on
// AVX-512: attention's P V with a head dimension of 64) takes that tile, which reads each A row
// once and each B row whole, where the gemm_direct_nr-wide tile reads A twice. It gains once k
// amortises its larger tile and m its last rows: microbenchmark on Zen 5, GFLOP/s of 6 x 64 over
// 8 x 32, 3 runs: 512 x 64 x k at k = 64 0.98-1.00, 128 0.99-1.02, 192 1.04-1.05, 256 and 512
// 1.03-1.04; 384 x 64 x 384 1.02-1.04; 128 x 64 x 512 1.01-1.02; 64 x 64 x 256 1.04; but
// 32 x 64 x 1024 0.95-0.97 (its 2 last rows cost 4), and with n = 128 or 256 0.98-1.01.
bool use_direct_wide(const Kernels& kern, const GemmShape& s, const GemmOperand& b) {
  return kern.gemm_direct_wide != nullptr && !direct_packs_b(b) && s.n == kern.gemm_nr &&
         s.k >= 192 && s.m >= 64;
}

// A product of one no-packing tile (the seed's 6 x 16 x 64), which gemm() and gemm_scratch_bytes
// recognise before asking gemm_path, whose rules answer GemmPath::direct for it (tested in
// test_matmul.cpp): not the rows path (n within one tile), not the prefetched one (B within half
// of L2), and then direct (row-major A, k <= 1024, B within half of L2, fewer than
// kMinPackedRows rows). A call of such a product takes tens of nanoseconds, which the full
// rules, then asked twice per call (scratch size and driver; attn::matmul now asks them once),
// added 10% to on Zen 5 (bench/ab-lib against 8054628, which had one rule).
bool one_direct_tile(const Kernels& kern, const GemmShape& s, const GemmOperand& a,
                     const GemmOperand& b) {
  return a.cs == 1 && b.cs == 1 && s.m <= kern.gemm_direct_mr && s.m < kMinPackedRows &&
         s.n <= kern.gemm_direct_nr && s.k <= 1024 &&
         s.k * s.n * sizeof(float) <= cpu_info().l2_bytes / 2;
}

// The no-packing tile for a panel of `cols` <= gemm_direct_nr columns: the narrow one where they
// fit one vector.
GemmDirectKernel direct_kernel(const Kernels& kern, std::size_t cols) {
  if (cols > kern.gemm_direct_narrow_nr) return kern.gemm_direct;
  return kern.gemm_direct_narrow_split != nullptr && cpu_info().narrow_tile_split
             ? kern.gemm_direct_narrow_split
             : kern.gemm_direct_narrow;
}

// One no-packing tile: C rows [i0, i0 + rows) x columns [j0, j0 + NR) (cut at n), B's column j0
// at bj with row stride ldb; a last panel at most one vector wide takes the narrow kernel, and
// `wide` the wide tile (NR = gemm_nr, see use_direct_wide), which takes any number of rows: one
// call per run of row blocks, not per block (512 x 64 x 512 0.99x the time, and 0.98x for
// gemm_wide_panels' panel calls at A B^T 512 x 512 x 64 and 256^3; bench/ab-lib, 21 pairs).
void direct_tile(const Kernels& kern, bool wide, const GemmShape& s, float alpha,
                 const GemmOperand& a, std::size_t i0, std::size_t rows, const float* bj,
                 std::size_t ldb, std::size_t j0, float beta, float* c, std::size_t ldc,
                 const float* bias) {
  const std::size_t cols = std::min(wide ? kern.gemm_nr : kern.gemm_direct_nr, s.n - j0);
  const GemmDirectKernel kernel = wide ? kern.gemm_direct_wide : direct_kernel(kern, cols);
  kernel(s.k, a.data + i0 * a.rs, a.rs, bj, ldb, c + i0 * ldc + j0, ldc, alpha, beta, rows, cols,
         bias ? bias + j0 : nullptr);
}

// The wide tile's k loop in chunks whose B rows fit in two thirds of L1 (128 rows of 64 floats,
// 32 KiB, in a 48 KiB L1), each chunk taken over all of a thread's row blocks before the next:
// B then comes from L2 once per chunk instead of once per row block, for one L2 round trip of C
// per chunk (C = alpha A B + beta C + bias on the first, C += alpha A B on the others, as the
// packed path's KC passes). Chunks are whole multiples of 16 rows. Only while all of A fits in half
// of L2 (the chunks re-read it; the rule sees the whole A, not a thread's rows, so that the sums do
// not depend on the thread count). AVX-512 on the Intel Xeon of the README, in-process alternation
// of the two versions, medians of 21-41 pairs: 512 x 64 x 512 0.93-0.95x the time (1 and 2
// threads), 256 x 64 x 256 0.92x, 512 x 64 x 192 0.92x, 64 x 64 x 1024 0.96x; with A at 4 MiB, 1024
// x 64 x 1024 took 1.00-1.04x.
std::size_t wide_k_chunk(const Kernels& kern, const GemmShape& s) {
  const CpuInfo& cpu = cpu_info();
  if (s.m * s.k * sizeof(float) > cpu.l2_bytes / 2) return s.k;
  const std::size_t rows = cpu.l1d_bytes * 2 / 3 / (kern.gemm_nr * sizeof(float)) / 16 * 16;
  return std::max<std::size_t>(rows, 16);
}

// Whether the wide tile reads B's rows in place for a thread's `rows` rows of C. Where a row of
// B does not start on a cache line, each of the tile's 4 vector loads per k step spans two
// lines: AVX-512 512 x 64 x 512 on the Intel Xeon of the README, the wide loop alone over B 16
// bytes past a line (where malloc leaves a mapped buffer) took 1.054x the time of an aligned B
// (medians of 41 alternated pairs; with A and C misaligned as well 1.068x, C alone 1.009x). A
// thread with at least kWideCopyMinRows rows then first copies each k chunk into its
// wide_b_floats of scratch (gemm_pack_b_rows: rows NR floats apart, 64-byte aligned; each thread
// its own copy, so the chunk loop needs no barrier). Whole matmul with B 16 bytes past a line,
// copy against in place (bench/ab-lib, 21-41 pairs): 512 x 64 x 512 0.946-0.957x the time (2
// threads 0.953x), 4096 x 64 x 512 (k in one chunk, B from L2) 0.886x, 256 rows 0.949x, 128 rows
// 0.967-0.976x, 2 threads of 128 rows 1.002x; but 64 x 64 x 256 1.055x and 64 x 64 x 1024
// 1.025x, where too few tiles share each copy.
constexpr std::size_t kWideCopyMinRows = 128;

bool wide_b_in_place(const GemmOperand& b, std::size_t rows) {
  return rows < kWideCopyMinRows || (reinterpret_cast<std::uintptr_t>(b.data) % kLineBytes == 0 &&
                                     b.rs * sizeof(float) % kLineBytes == 0);
}

// Floats of scratch per thread for the wide tile's copy of one k chunk of B.
std::size_t wide_b_floats(const Kernels& kern, const GemmShape& s) {
  return std::min(wide_k_chunk(kern, s), s.k) * kern.gemm_nr;
}

// C by row blocks of MR_direct x column panels of NR, the row blocks split among threads (a
// thread's whole tiles in one Kernels::gemm_direct_tiles call). B is
// row-major (b.cs == 1), or a B^T (b.rs == 1) that the threads first pack together into
// NR-wide panels in `panels` (panel j0 / NR at panels + j0 * k, row stride NR). Where
// use_direct_wide holds, row blocks of the wide tile, each the whole width of C, with B in place
// or (see wide_b_in_place) thread t's copy of each k chunk at panels + t * wide_b_floats.
void gemm_direct(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                 const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
                 const float* bias, float* panels) {
  const bool wide = use_direct_wide(kern, s, b);
  const std::size_t mr = wide ? kern.gemm_direct_wide_mr : kern.gemm_direct_mr;
  const std::size_t nr = kern.gemm_direct_nr;  // of the packed and narrow paths below
  const std::size_t whole_blocks = s.m / mr, blocks = whole_blocks + (s.m % mr != 0 ? 1 : 0);
  const bool packed = direct_packs_b(b);
  const std::size_t ldb = packed ? nr : b.rs;
  run_parallel(threads, [&](int t, int nt) {
    std::size_t begin, end;
    if (packed) {
      static_range((s.n + nr - 1) / nr, t, nt, &begin, &end);
      for (std::size_t j0 = begin * nr; j0 < std::min(s.n, end * nr); j0 += nr) {
        kern.gemm_direct_pack_b_cols(b.data + j0 * b.cs, b.cs, std::min(nr, s.n - j0), s.k,
                                     panels + j0 * s.k);
      }
      barrier(nt);
    }
    static_range(blocks, t, nt, &begin, &end);
    if (wide) {  // one column panel: B at b.data, row-major
      const std::size_t chunk = wide_k_chunk(kern, s);
      const bool in_place =
          wide_b_in_place(b, begin < end ? std::min(s.m, end * mr) - begin * mr : 0);
      float* b_copy =  // scratch is reserved only where a thread can copy
          in_place ? nullptr : panels + static_cast<std::size_t>(t) * wide_b_floats(kern, s);
      for (std::size_t pc = 0; pc < s.k && begin < end; pc += chunk) {
        GemmShape sc = s;
        sc.k = std::min(chunk, s.k - pc);
        GemmOperand ac = a;
        ac.data = a.data + pc;  // a.cs == 1 (gemm_path)
        const float* bc = b.data + pc * ldb;
        std::size_t ldbc = ldb;
        if (!in_place) {
          kern.gemm_pack_b_rows(bc, ldb, s.n, sc.k, b_copy);  // s.n == gemm_nr
          bc = b_copy;
          ldbc = kern.gemm_nr;
        }
        const std::size_t i0 = begin * mr, rows = std::min(end * mr, s.m) - i0;
        direct_tile(kern, true, sc, alpha, ac, i0, rows, bc, ldbc, 0, pc == 0 ? beta : 1.0f, c, ldc,
                    pc == 0 ? bias : nullptr);
      }
      return;
    }
    // The thread's whole row blocks (all of its blocks but the matrix's last partial one)
    // against B's whole panels in one call (Kernels::gemm_direct_tiles), then the other tiles one
    // by one.
    std::size_t j_tiles = 0;
    if (kern.gemm_direct_tiles != nullptr) {
      const std::size_t whole_end = std::min(end, whole_blocks);
      j_tiles = s.n - s.n % nr;
      if (begin < whole_end && j_tiles > 0) {
        const float* bt = packed ? panels : b.data;
        const std::size_t panel_stride = packed ? s.k * nr : nr, rows = (whole_end - begin) * mr;
        const float* ai = a.data + begin * mr * a.rs;
        float* ci = c + begin * mr * ldc;
        // Against a row-major B within half of L1, the table's wider tiles first
        // (gemm_direct_tiles_l1). Zen 5, AVX-512's 4 x 64 against 8 x 32, bench/ab-lib, 11 pairs,
        // inputs 16 bytes past a line (on lines): 64^3 0.986x the time (0.995x), 32 x 64 x 64
        // 0.992x (0.997x), 128 x 64 x 64 0.991x (0.998x), 100 x 64 x 48 0.997x (1.000x),
        // 96 x 96 x 64 0.998x (1.001x). Not on B^T's packed panels: A B^T 64^3 1.007x (0.994x),
        // 128 x 64 x 64 1.005x (0.978x). Not beyond half of L1: each 4-row block streams all of
        // B, at 256^3 from L2 twice the 8-row tiles' traffic (1.281x the time).
        std::size_t j_l1 = 0;
        if (!packed && kern.gemm_direct_tiles_l1 != nullptr &&
            s.k * s.n * sizeof(float) <= cpu_info().l1d_bytes / 2) {
          j_l1 = s.n - s.n % kern.gemm_direct_tiles_l1_nr;
          if (j_l1 > 0) {
            kern.gemm_direct_tiles_l1(s.k, ai, a.rs, bt, ldb, panel_stride, ci, ldc, alpha, beta,
                                      rows, j_l1, bias);
          }
        }
        if (j_tiles > j_l1) {
          kern.gemm_direct_tiles(s.k, ai, a.rs, bt + j_l1 / nr * panel_stride, ldb, panel_stride,
                                 ci + j_l1, ldc, alpha, beta, rows, j_tiles - j_l1,
                                 bias ? bias + j_l1 : nullptr);
        }
        if (j_tiles == s.n) begin = whole_end;
      }
    }
    for (std::size_t ib = begin; ib < end; ++ib) {
      const std::size_t i0 = ib * mr, rows = std::min(mr, s.m - i0);
      for (std::size_t j0 = rows == mr ? j_tiles : 0; j0 < s.n; j0 += nr) {
        const float* bj = packed ? panels + j0 * s.k : b.data + j0;
        direct_tile(kern, false, s, alpha, a, i0, rows, bj, ldb, j0, beta, c, ldc, bias);
      }
    }
  });
}

// GemmPath::wide_panels: op(B) packed once into the wide tile's NR-column panels (the threads
// pack a share each; panel j0 / NR at panels + j0 * k, row stride NR), then each thread takes its
// row blocks of MR_wide rows against one panel after another, reading A in place. With A and B
// in L2, a panel (k x 64 floats, 16 KiB at k = 64) stays in L1 while A's rows stream from L2,
// and the tile runs the packed tile's assembly loop (Kernels::gemm_wide_panel) without
// A's packing and the Goto path's KC passes, which these sizes do not need. Intel Xeon of the
// README, against the Goto path (bench/ab-lib, 21 pairs; outputs bit-identical): A B^T
// 512 x 512 x 64 0.977x the time (2 threads 0.948x), 512 x 512 x 128 0.986x, 64 x 512 x 64
// 0.970x; A B 128^3 0.904x, 256^3 0.933x (2 threads 0.990x), 512^3 0.963x (2 threads 0.967x),
// 128 x 512 x 512 0.948x, 300 x 200 x 100 0.965x. Not taken: with C beyond L2, where each
// panel's sweep over all rows of C misses L2 at every tile (A B^T 2048 x 2048 x 64 1.06x,
// 2048 x 2048 x 128 1.085x, A B 4096 x 512 x 64 1.057x, though 1000 x 1000 x 100, C at 4 MB,
// 0.967x; prefetching each tile of C at its start, or the next one into L2, made them no faster
// and the others slower), and with A beyond half of L2 (re-read once per panel: 1024^3 1.04x in
// a harness).
void gemm_wide_panels(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                      const GemmOperand& a, const GemmOperand& b, float beta, float* c,
                      std::size_t ldc, const float* bias, float* panels) {
  const std::size_t nr = kern.gemm_nr, mr = kern.gemm_direct_wide_mr;
  const std::size_t blocks = (s.m + mr - 1) / mr;
  run_parallel(threads, [&](int t, int nt) {
    std::size_t begin, end;
    static_range((s.n + nr - 1) / nr, t, nt, &begin, &end);
    for (std::size_t j0 = begin * nr; j0 < std::min(s.n, end * nr); j0 += nr) {
      const float* src = b.data + j0 * b.cs;
      const std::size_t cols = std::min(nr, s.n - j0);
      if (b.cs == 1) {
        kern.gemm_pack_b_rows(src, b.rs, cols, s.k, panels + j0 * s.k);
      } else {
        kern.gemm_pack_b_cols(src, b.cs, cols, s.k, panels + j0 * s.k);
      }
    }
    barrier(nt);
    static_range(blocks, t, nt, &begin, &end);
    if (begin == end) return;
    const std::size_t i0 = begin * mr, rows = std::min(end * mr, s.m) - i0;
    for (std::size_t j0 = 0; j0 < s.n; j0 += nr) {
      kern.gemm_wide_panel(s.k, a.data + i0 * a.rs, a.rs, panels + j0 * s.k, nr, c + i0 * ldc + j0,
                           ldc, alpha, beta, rows, std::min(nr, s.n - j0),
                           bias ? bias + j0 : nullptr);
    }
  });
}

// GemmPath::streamed (see use_streamed in gemm_path.cpp): per thread, op(A)'s rows packed for one
// KC block (plan.a_floats with MC = all rows) and one sliver of B (KC x NR).
std::size_t streamed_a_floats(const GemmPlan& plan, const GemmShape& s) {
  return round_up(round_up(s.m, plan.mr) * plan.kc * plan.copies, 16);
}

// With `prepacked` (gemm_prepack_b's layout; PrepackedLoop::streamed) each sliver is read where it
// lies, with no sliver buffer, and where a sliver is larger than L1 the calls over one fetch the
// next into L2 (SliverShares, as the Goto loop does).
void gemm_streamed(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                   const GemmOperand& a, const GemmOperand& b, float beta, float* c,
                   std::size_t ldc, const float* bias, float* scratch, const float* prepacked) {
  const GemmPlan plan = make_plan(kern, s, 1);
  const std::size_t a_floats = streamed_a_floats(plan, s);
  const std::size_t sliver_floats =
      prepacked ? 0 : round_up(plan.kc * plan.nr, 16);  // keeps buffers aligned
  const std::size_t n_panels = (s.n + plan.nr - 1) / plan.nr;
  const std::size_t n_padded = n_panels * plan.nr;
  const std::size_t row_panels = (s.m + plan.mr - 1) / plan.mr;
  const bool hint = prepacked && plan.nr * plan.kc * sizeof(float) > cpu_info().l1d_bytes;
  run_parallel(threads, [&](int t, int nt) {
    float* a_buf = scratch + static_cast<std::size_t>(t) * (a_floats + sliver_floats);
    float* sliver = a_buf + a_floats;
    std::size_t pb, pe;
    static_range(n_panels, t, nt, &pb, &pe);
    if (pb == pe) return;
    for (std::size_t pc = 0; pc < s.k; pc += plan.kc) {
      const std::size_t kc = std::min(plan.kc, s.k - pc);
      const float beta_pc = pc == 0 ? beta : 1.0f;
      pack_a(kern, plan, a, 0, s.m, pc, kc, a_buf);
      const SliverShares shares(plan.nr * kc, row_panels);
      for (std::size_t jp = pb; jp < pe; ++jp) {
        const std::size_t j0 = jp * plan.nr;
        const std::size_t cols = std::min(plan.nr, s.n - j0);
        const float* bp = sliver;
        if (prepacked) {
          bp = prepacked + pc * n_padded + jp * plan.nr * kc;
        } else {
          pack_b(kern, plan, b, pc, kc, j0, s.n - j0, 0, 1, sliver, 0);
        }
        for (std::size_t ir = 0; ir < s.m; ir += plan.mr) {
          const L2Prefetch next =
              hint && jp + 1 < pe ? shares.of(bp + plan.nr * kc, ir / plan.mr) : L2Prefetch{};
          kern.gemm_ukernel(kc, a_buf + ir * kc * plan.copies, bp, c + ir * ldc + j0, ldc, alpha,
                            beta_pc, std::min(plan.mr, s.m - ir), cols,
                            (pc == 0 && bias) ? bias + j0 : nullptr, next);
        }
      }
    }
  });
}

// GemmPath::c_transposed (see use_c_transposed in gemm_path.cpp): C^T's rows per thread in chunks
// whose m columns (row stride c_transposed_ld) fill at most half of L1, a whole number of tiles;
// op(A)^T transposed into k rows of the same stride (read in place where op(A) is an A^T: k rows of
// m floats, row stride a.cs).
std::size_t c_transposed_ld(const GemmShape& s) {
  return round_up(s.m, 16);
}
std::size_t ct_chunk_rows(const Kernels& kern, const GemmShape& s) {
  const std::size_t rows = cpu_info().l1d_bytes / 2 / (c_transposed_ld(s) * sizeof(float));
  return std::max(kern.gemm_direct_mr, rows / kern.gemm_direct_mr * kern.gemm_direct_mr);
}
std::size_t c_transposed_at_floats(const GemmShape& s, const GemmOperand& a) {
  return a.rs == 1 ? 0 : s.k * c_transposed_ld(s);
}

void gemm_c_transposed(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                       const GemmOperand& a, const GemmOperand& b, float beta, float* c,
                       std::size_t ldc, const float* bias, float* scratch) {
  const GemmOperand bt{b.data, b.cs, b.rs};  // op(B)^T: n x k, row-major (b.rs == 1)
  const std::size_t mr = kern.gemm_direct_mr, nr = kern.gemm_direct_nr;
  const bool in_place = a.rs == 1;  // op(A)^T is row-major: k x m, row stride a.cs
  const std::size_t ld = c_transposed_ld(s), chunk = ct_chunk_rows(kern, s);
  float* at = scratch;
  const float* at_rows = in_place ? a.data : at;
  const std::size_t ldat = in_place ? a.cs : ld;
  float* ct_bufs = scratch + c_transposed_at_floats(s, a);
  const std::size_t blocks = (s.n + mr - 1) / mr;
  run_parallel(threads, [&](int t, int nt) {
    std::size_t begin, end;
    if (!in_place) {  // op(A)^T's rows [begin, end): the columns of A's rows, transposed
      static_range(s.k, t, nt, &begin, &end);
      if (begin < end) {
        kern.gemm_store_t(a.data + begin, a.rs, at + begin * ld, ld, 1.0f, 0.0f, end - begin, s.m,
                          nullptr);
      }
      barrier(nt);
    }
    static_range(blocks, t, nt, &begin, &end);
    float* ct = ct_bufs + static_cast<std::size_t>(t) * chunk * ld;
    const std::size_t stop = std::min(end * mr, s.n);
    for (std::size_t r0 = begin * mr; r0 < stop; r0 += chunk) {
      const std::size_t r1 = std::min(r0 + chunk, stop);
      for (std::size_t i0 = r0; i0 < r1; i0 += mr) {
        const std::size_t rows = std::min(mr, r1 - i0);
        for (std::size_t j0 = 0; j0 < s.m; j0 += nr) {
          const std::size_t cols = std::min(nr, s.m - j0);
          direct_kernel(kern, cols)(s.k, bt.data + i0 * bt.rs, bt.rs, at_rows + j0, ldat,
                                    ct + (i0 - r0) * ld + j0, ld, 1.0f, 0.0f, rows, cols, nullptr);
        }
      }
      kern.gemm_store_t(ct, ld, c + r0, ldc, alpha, beta, s.m, r1 - r0, bias ? bias + r0 : nullptr);
    }
  });
}

// GemmPath::rows (see use_rows in gemm_path.cpp): columns of C in runs of kRowsColumns split among
// the threads, each thread's run in blocks of its kRowsAccFloats of scratch.
void gemm_rows(const Kernels& kern, int threads, const GemmShape& s, float alpha,
               const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
               const float* bias, float* scratch) {
  const std::size_t block = kRowsAccFloats / s.m / kRowsColumns * kRowsColumns;
  const bool b_beyond_l3 = rows_b_beyond_l3(s);
  run_parallel(threads, [&](int t, int nt) {
    if (b.cs == 1 && s.m > kern.gemm_rows_max && nt > 1) {  // the threads split the rows
      std::size_t r0, r1;
      static_range(s.m, t, nt, &r0, &r1);
      if (r0 >= r1) return;
      kern.gemm_rows(s.k, a.data + r0 * a.rs, a.rs, b.data, b.rs, c + r0 * ldc, ldc, alpha, beta,
                     r1 - r0, s.n, bias, scratch + static_cast<std::size_t>(t) * kRowsAccFloats,
                     kRowsAccFloats / (r1 - r0) / kRowsColumns * kRowsColumns, b_beyond_l3);
      return;
    }
    std::size_t begin, end;
    static_range((s.n + kRowsColumns - 1) / kRowsColumns, t, nt, &begin, &end);
    const std::size_t j0 = begin * kRowsColumns, j1 = std::min(end * kRowsColumns, s.n);
    if (j0 >= j1) return;
    if (b.cs != 1) {  // B^T: column j of op(B) is row j of b.data
      const float* at = a.data;
      std::size_t ldat = a.rs;
      if (rows_t_copies_a(kern, s, a, b)) {
        float* const copy =
            scratch + static_cast<std::size_t>(t) * kRowsAccFloats + rows_t_a_phase(kern, b);
        ldat = round_up(s.k, kLineBytes / sizeof(float));
        for (std::size_t i = 0; i < s.m; ++i)
          std::copy_n(a.data + i * a.rs, s.k, copy + i * ldat);
        at = copy;
      }
      const GemmDirectKernel rows_t =
          s.m >= cpu_info().rows_t_prefetch_min_rows ? kern.gemm_rows_t_prefetch : kern.gemm_rows_t;
      rows_t(s.k, at, ldat, b.data + j0 * b.cs, b.cs, c + j0, ldc, alpha, beta, s.m, j1 - j0,
             bias ? bias + j0 : nullptr);
      return;
    }
    kern.gemm_rows(s.k, a.data, a.rs, b.data + j0, b.rs, c + j0, ldc, alpha, beta, s.m, j1 - j0,
                   bias ? bias + j0 : nullptr,
                   scratch + static_cast<std::size_t>(t) * kRowsAccFloats, block, b_beyond_l3);
  });
}

// GemmPath::prefetched on one thread, with kNextPanelMinGroups groups of rows or more and at
// least kNextPanelMinWork products per row of a panel (m x nr): the first group's call streams its
// panel of B from L3 or memory (the tile's own prefetch runs 8 rows ahead), the later groups read
// it from L2. So before each later call the driver fetches a share of the next panel's rows into L2
// (prefetcht1: for AVX-512's 48 columns, 4 prefetches per row over its 3 or 4 lines), at most
// kNextPanelMaxShare rows per call, so that the next panel's first call finds its first rows
// there. In a standalone copy of the loop (the 8 x 48 tile over 48 panels of 2304 x 768, 16
// groups) equal shares covering the panel took 100-105 GFLOP/s to 109-110. AMD Zen 4,
// bench/ab-lib (AB_LIB_OFFSET=16, 9-11 pairs, bit-identical, time against no hint), equal shares
// of the whole panel from 5 groups: AVX-512 128 x 2304 x 768 0.965x (two threads 0.985x), 64 rows
// 0.974x, 192 rows 0.977x, 40 rows 0.982x, 48 x 768 x 3072 0.931x, 48 x 4096 x 1024 (rows 16 KiB
// apart) 0.879x, 40 x 7000 x 3000 (one pass over k, two panels beyond the L2 sets
// gemm_prefetched_kc counts) 0.971x; AVX2 128 x 2304 x 768 0.899x. Shares of at most 64 rows
// against those: 40, 128 and 192 rows 0.998x, 0.998x, 1.007x, 48 x 4096 x 1024 0.989x, AVX2
// 128 rows 0.996x; and they serve 4 groups, where whole shares lost (32 rows 1.013x): against no
// hint 28 rows 0.938x, 32 rows 0.909-0.938x, 36 rows 0.891x, 32 x 768 x 3072 0.912x. Lost: 2 and
// 3 groups (16 rows 1.010x, 24 rows 0.954-1.023x); less work per prefetched row (AVX2's 16
// columns at 25 rows 1.044-1.058x, 48 x 4096 x 1024 1.004-1.012x; SSE2's 8 at 128 rows
// 1.015-1.056x); two threads (each over half the panels) at 32 and 36 rows 1.028-1.043x and
// 1.056x, at 128 rows 0.974-0.985x: one thread only. Zen 5 runs faster without it
// (CpuInfo::prefetched_next_panel); not measured on Intel or NEON.
constexpr std::size_t kNextPanelMinGroups = 4;
constexpr std::size_t kNextPanelMinWork = 28 * 48;
constexpr std::size_t kNextPanelMaxShare = 64;

// Fetches `rows` rows of `bytes` bytes each, from p on and ld floats apart, into L2. Addresses are
// integers: the last panel's rows may reach past the matrix (a prefetch does not fault). Always
// inlined, as simd.hpp's prefetch_rows, or GCC may delete its calls.
__attribute__((always_inline)) inline void prefetch_rows_l2(const float* p, std::size_t rows,
                                                            std::size_t ld, std::size_t bytes) {
  std::uintptr_t row = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t r = 0; r < rows; ++r, row += ld * sizeof(float)) {
    for (std::size_t l = 0; l < bytes; l += kLineBytes)
      __builtin_prefetch(reinterpret_cast<const void*>(row + l), 0, 2);
    __builtin_prefetch(reinterpret_cast<const void*>(row + bytes - 1), 0, 2);
  }
}

// The loop of the prefetching tiles (GemmPath::prefetched, PrepackedLoop::rows), n >= 1: the
// threads split B's column panels, nr wide but the first, which is `first` wide (0 < first <= nr);
// each element of C is one thread's, so the sums do not depend on the thread count. Per chunk of
// kc_max k steps, each panel's rows of C in one call (m <= call_rows) or in near-equal groups of
// at most mr; the first chunk applies beta and the bias, the others add to C (as the Goto path's
// KC blocks do). b_at(pc, kc, jp, j0): the first row of panel jp, at column j0, in the chunk from
// pc of kc steps, rows ldb floats apart. next_panel_l2: fetch the next panel into L2 meanwhile
// (kNextPanelMinGroups; measured on GemmPath::prefetched only, not on pre-packed slivers).
template <class BAt>
void prefetched_panels(GemmDirectKernel kernel, std::size_t nr, std::size_t first, std::size_t mr,
                       std::size_t call_rows, std::size_t kc_max, int threads, const GemmShape& s,
                       float alpha, const GemmOperand& a, const BAt& b_at, std::size_t ldb,
                       float beta, float* c, std::size_t ldc, const float* bias,
                       bool next_panel_l2) {
  const std::size_t groups = s.m <= call_rows ? 1 : (s.m + mr - 1) / mr;
  const std::size_t panels = s.n <= first ? 1 : 1 + (s.n - first + nr - 1) / nr;
  const bool hint_rule =
      next_panel_l2 && groups >= kNextPanelMinGroups && s.m * nr >= kNextPanelMinWork;
  run_parallel(threads, [&](int t, int nt) {
    std::size_t pb, pe;
    static_range(panels, t, nt, &pb, &pe);
    const bool hint = hint_rule && nt == 1;
    for (std::size_t pc = 0; pc < s.k; pc += kc_max) {
      const std::size_t kc = std::min(kc_max, s.k - pc);
      const float beta_pc = pc == 0 ? beta : 1.0f;
      // Before each call after a panel's first, a share of the next panel's rows into L2.
      const std::size_t share =
          hint ? std::min(kNextPanelMaxShare, (kc + groups - 2) / (groups - 1)) : 0;
      for (std::size_t jp = pb; jp < pe; ++jp) {
        const std::size_t j0 = jp == 0 ? 0 : first + (jp - 1) * nr;
        const std::size_t cols = std::min(jp == 0 ? first : nr, s.n - j0);
        const float* bj = b_at(pc, kc, jp, j0);
        const float* bias_pc = bias != nullptr && pc == 0 ? bias + j0 : nullptr;
        const float* next = hint && jp + 1 < pe ? b_at(pc, kc, jp + 1, j0 + cols) : nullptr;
        for (std::size_t g = 0; g < groups; ++g) {
          std::size_t r0, r1;
          static_range(s.m, static_cast<int>(g), static_cast<int>(groups), &r0, &r1);
          if (next != nullptr && g != 0 && (g - 1) * share < kc) {
            const std::size_t row = (g - 1) * share;
            prefetch_rows_l2(next + row * ldb, std::min(share, kc - row), ldb, nr * sizeof(float));
          }
          kernel(kc, a.data + r0 * a.rs + pc, a.rs, bj, ldb, c + r0 * ldc + j0, ldc, alpha, beta_pc,
                 r1 - r0, cols, bias_pc);
        }
      }
    }
  });
}

// GemmPath::prefetched (see use_prefetched in gemm_path.cpp): B's row-major panels in place, k in
// chunks of gemm_prefetched_kc, the first panel as gemm_prefetched_first_panel says. Zen 5,
// bench/ab-lib (9-11 pairs, time against the same panels from column 0; inputs 16 bytes past a
// line): AVX-512 16 x 2304 x 768 0.986x and 1.000x (4 bytes past: 0.963x), 48 x 768 x 3072 0.981x,
// 64 x 2304 x 768 0.989x, 128 x 2304 x 768 0.979-0.988x (two threads 0.995x); AVX2 16 x 2304 x 768
// 0.880x and 0.957x (4 bytes past: 0.943x), 128 x 2304 x 768 0.924-0.929x. The tile's width by the
// panel's columns (gemm_prefetch_b) on line-aligned inputs: 32 x 784 x 768 (a last panel of 16
// columns) 0.967-0.968x.
void gemm_prefetched(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                     const GemmOperand& a, const GemmOperand& b, float beta, float* c,
                     std::size_t ldc, const float* bias) {
  const std::size_t nr = kern.gemm_prefetch_b_nr;
  prefetched_panels(
      kern.gemm_prefetch_b, nr, gemm_prefetched_first_panel(kern, b), kern.gemm_prefetch_b_mr,
      kern.gemm_prefetch_b_mr, gemm_prefetched_kc(kern, s, b), threads, s, alpha, a,
      [&](std::size_t pc, std::size_t, std::size_t, std::size_t j0) {
        return b.data + pc * b.rs + j0;
      },
      b.rs, beta, c, ldc, bias, cpu_info().prefetched_next_panel);
}

// GemmPath::packed: the Goto loop nest, op(B) packed per KC x NC block into `scratch` or, with
// `prepacked` (gemm_prepack_b's layout), read from there.
//
// Threads split C one of two ways. By rows (the default): each thread packs its share of the B
// panels into the shared buffer, all wait, then each packs its own row blocks of A and runs them
// against every panel (a share of them where there are fewer row blocks than threads), and all
// wait again before the next KC x NC block overwrites the panels.
// By columns (own_columns): each thread packs only its own panels and runs every row block of A
// against them, so no thread reads the panels another packed and only a new NC block needs a
// barrier; the price is that each thread packs all of A, not its share. perf of 512^3 on two
// threads by rows: packing B 9.1% of the samples (one thread at 1024^3: 2.1%), the barriers'
// spinning 6.1%, packing A 2.0%. Zen 5, two threads, bench/ab-lib (AB_LIB_OFFSET=16, 11 pairs,
// bit-identical), time by columns over by rows: AVX-512 512^3 0.948x, 640^3 0.932x, 864^3
// 0.985x, 512 x 768 x 768 0.926x, 512 x 2304 x 768 0.958x, 768 x 3072 x 768 0.967x, 896 x 2304
// x 768 0.974x (three runs), 1024 x 4096 x 768 0.966x, 768^3 0.999x; 1024 x 2304 x 768 1.009x,
// 0.979x, 0.949x and 1024^3 1.013x, 1.003x, 1.019x, 0.981x, 0.975x (the hour moves them); but
// 1536 x 2304 x 768 1.013x and 1.003x, 2048 x 2304 x 768 1.028x, 2048^3 1.007x, so rows beyond
// kOwnColumnsMaxRows keep the split by rows (AVX2, whose kernel takes twice as long per packed
// value, gained there too: 512^3 0.908x, 1024^3 0.989x, 2048 x 2304 x 768 0.969x). Of m > n,
// one shape was measured, 2048 x 512 x 512 (1.05x by columns, a /tmp harness), itself beyond
// 1024 rows; the rule asks m <= n too, where A is no larger than B. Only
// two threads were measured: with more, every thread still packs all of A for fewer panels of its
// own, a trade this 2-CPU machine cannot measure, so they split by rows. At least
// kOwnColumnsMinPanels panels a thread, so that each packed block of A serves several.
constexpr std::size_t kOwnColumnsMinPanels = 4;
constexpr std::size_t kOwnColumnsMaxRows = 1024;

void gemm_packed(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                 const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
                 const float* bias, float* scratch, const float* prepacked) {
  const GemmPlan plan = make_plan(kern, s, threads);
  float* b_buf = scratch;
  float* thread_bufs = b_buf + (prepacked ? 0 : plan.b_floats);
  const std::size_t n_padded = round_up(s.n, plan.nr);
  const std::size_t m_blocks = (s.m + plan.mc - 1) / plan.mc;
  const std::size_t m_panels = (s.m + plan.mr - 1) / plan.mr;  // <= m_blocks * MC / MR
  // A B sliver larger than L1 (AVX-512's 512 x 64 floats, 128 KiB) streams from L2 in every
  // call over it, and from L3, where pack_b left it, in the first: rdtsc around the calls of an
  // AVX-512 2048^3 on the Intel Xeon of the README, the first took 12.4k ticks, the others 4.7k
  // (4.5% of the kernel's time). So the calls over sliver jp fetch sliver jp + 1 into L2
  // (SliverShares): the first call then took 5.5k. Where the sliver fits L1 (AVX2, SSE2, NEON)
  // the calls are short and it is read from L1 after the first: SSE2 1024^3 took 1.04x the
  // time with the hint, AVX2 1.02x (in-process alternation, medians of 9 and 15).
  const bool prefetch_slivers = plan.nr * plan.kc * sizeof(float) > cpu_info().l1d_bytes;

  run_parallel(threads, [&](int tid, int nt) {
    float* a_buf = thread_bufs + static_cast<std::size_t>(tid) * plan.a_floats;
    // Row block ib: its share of the MR-row panels (blocks differ by at most one panel, so
    // threads that own equally many blocks own equally many rows, give or take MR).
    const auto block_rows = [&](std::size_t ib, std::size_t* ic, std::size_t* mc) {
      std::size_t p0, p1;
      static_range(m_panels, static_cast<int>(ib), static_cast<int>(m_blocks), &p0, &p1);
      *ic = p0 * plan.mr;
      *mc = std::min(p1 * plan.mr, s.m) - *ic;
    };
    // The tiles of rows [ic, ic + mc) (packed in a_buf) by the column panels [jp_begin, jp_end)
    // of the KC x NC block of B whose panel jp is at b_block + jp * panel_stride.
    const auto run_block = [&](std::size_t ic, std::size_t mc, std::size_t jc, std::size_t nc,
                               std::size_t pc, std::size_t kc, const float* b_block,
                               std::size_t panel_stride, std::size_t jp_begin, std::size_t jp_end) {
      const float beta_pc = pc == 0 ? beta : 1.0f;
      const SliverShares shares(plan.nr * kc, (mc + plan.mr - 1) / plan.mr);
      for (std::size_t jp = jp_begin; jp < jp_end; ++jp) {
        const std::size_t jr = jp * plan.nr;
        const std::size_t cols = std::min(plan.nr, nc - jr);
        const float* bp = b_block + jp * panel_stride;
        for (std::size_t ir = 0; ir < mc; ir += plan.mr) {
          const std::size_t rows = std::min(plan.mr, mc - ir);
          const float* ap = a_buf + ir * kc * plan.copies;
          float* cp = c + (ic + ir) * ldc + jc + jr;
          const L2Prefetch next = prefetch_slivers && jp + 1 < jp_end
                                      ? shares.of(bp + panel_stride, ir / plan.mr)
                                      : L2Prefetch{};
          kern.gemm_ukernel(kc, ap, bp, cp, ldc, alpha, beta_pc, rows, cols,
                            (pc == 0 && bias) ? bias + jc + jr : nullptr, next);
        }
      }
    };
    for (std::size_t jc = 0; jc < s.n; jc += plan.nc) {
      const std::size_t nc = std::min(plan.nc, s.n - jc);
      const std::size_t n_panels = (nc + plan.nr - 1) / plan.nr;
      const bool own_columns = !prepacked && nt == 2 && s.m <= s.n && s.m <= kOwnColumnsMaxRows &&
                               n_panels >= 2 * kOwnColumnsMinPanels;
      if (own_columns) {
        // Panels a full KC apart, so that a thread's panels stay where they are for a last,
        // shorter KC block, clear of the other threads' panels.
        const std::size_t stride = plan.nr * plan.kc;
        std::size_t pb, pe;
        static_range(n_panels, tid, nt, &pb, &pe);
        for (std::size_t pc = 0; pc < s.k; pc += plan.kc) {
          const std::size_t kc = std::min(plan.kc, s.k - pc);
          pack_b(kern, plan, b, pc, kc, jc, nc, pb, pe, b_buf, stride);
          for (std::size_t ib = 0; ib < m_blocks; ++ib) {
            std::size_t ic, mc;
            block_rows(ib, &ic, &mc);
            pack_a(kern, plan, a, ic, mc, pc, kc, a_buf);
            run_block(ic, mc, jc, nc, pc, kc, b_buf, stride, pb, pe);
          }
        }
        // No thread may pack the next NC block's panels while another reads this one's: the
        // last, narrower block splits its panels otherwise, or by rows. (Between two full
        // blocks the split is the same and the barrier not needed; it costs one wait per
        // 4096 columns on AVX-512.)
        if (jc + plan.nc < s.n) barrier(nt);
        continue;
      }
      // With fewer row blocks than threads, also split the column panels.
      const std::size_t col_groups =
          m_blocks >= static_cast<std::size_t>(nt)
              ? 1
              : std::min(n_panels, (static_cast<std::size_t>(nt) + m_blocks - 1) / m_blocks);
      for (std::size_t pc = 0; pc < s.k; pc += plan.kc) {
        const std::size_t kc = std::min(plan.kc, s.k - pc);
        const float* b_block = b_buf;
        if (prepacked) {
          b_block = prepacked + pc * n_padded + jc * kc;
        } else {
          std::size_t pb, pe;
          static_range(n_panels, tid, nt, &pb, &pe);
          pack_b(kern, plan, b, pc, kc, jc, nc, pb, pe, b_buf, plan.nr * kc);
          barrier(nt);
        }
        std::size_t tb, te;
        static_range(m_blocks * col_groups, tid, nt, &tb, &te);
        std::size_t packed_block = SIZE_MAX;
        for (std::size_t task = tb; task < te; ++task) {
          const std::size_t ib = task / col_groups;
          std::size_t ic, mc;
          block_rows(ib, &ic, &mc);
          if (packed_block != ib) {
            pack_a(kern, plan, a, ic, mc, pc, kc, a_buf);
            packed_block = ib;
          }
          std::size_t jp_begin, jp_end;
          static_range(n_panels, static_cast<int>(task % col_groups), static_cast<int>(col_groups),
                       &jp_begin, &jp_end);
          run_block(ic, mc, jc, nc, pc, kc, b_block, plan.nr * kc, jp_begin, jp_end);
        }
        if (!prepacked) barrier(nt);
      }
    }
  });
}

}  // namespace

std::size_t gemm_scratch_bytes(const Kernels& kern, int threads, const GemmShape& shape,
                               const GemmOperand& a, const GemmOperand& b) {
  if (one_direct_tile(kern, shape, a, b)) return 0;
  return gemm_path_scratch_bytes(kern, gemm_path(kern, shape, a, b), threads, shape, a, b);
}

std::size_t gemm_path_scratch_bytes(const Kernels& kern, GemmPath path, int threads,
                                    const GemmShape& shape, const GemmOperand& a,
                                    const GemmOperand& b) {
  threads = effective_threads(threads, shape);
  if (path == GemmPath::wide_panels) {
    return shape.k * round_up(shape.n, kern.gemm_nr) * sizeof(float);
  }
  if (path == GemmPath::direct) {
    if (use_direct_wide(kern, shape, b)) {  // no thread copies B with fewer rows in all
      return shape.m < kWideCopyMinRows
                 ? 0
                 : static_cast<std::size_t>(threads) * wide_b_floats(kern, shape) * sizeof(float);
    }
    return direct_packs_b(b) ? shape.k * round_up(shape.n, kern.gemm_direct_nr) * sizeof(float) : 0;
  }
  if (path == GemmPath::prefetched) return 0;
  if (path == GemmPath::c_transposed) {
    return (c_transposed_at_floats(shape, a) + static_cast<std::size_t>(threads) *
                                                   ct_chunk_rows(kern, shape) *
                                                   c_transposed_ld(shape)) *
           sizeof(float);
  }
  if (path == GemmPath::rows) {
    return static_cast<std::size_t>(threads) * kRowsAccFloats * sizeof(float);
  }
  if (path == GemmPath::streamed) {
    const GemmPlan p = make_plan(kern, shape, 1);
    return static_cast<std::size_t>(threads) *
           (streamed_a_floats(p, shape) + round_up(p.kc * p.nr, 16)) * sizeof(float);
  }
  const GemmPlan p = make_plan(kern, shape, threads);
  const std::size_t per_thread = p.a_floats * sizeof(float);
  return p.b_floats * sizeof(float) + static_cast<std::size_t>(threads) * per_thread;
}

bool gemm_one_tile(const Kernels& kern, const GemmShape& s, float alpha, const GemmOperand& a,
                   const GemmOperand& b, float beta, float* c, std::size_t ldc) {
  if (s.m == 0 || s.n == 0 || s.k == 0 || !one_direct_tile(kern, s, a, b)) return false;
  direct_tile(kern, false, s, alpha, a, 0, s.m, b.data, b.rs, 0, beta, c, ldc, nullptr);
  return true;
}

void gemm(const Kernels& kern, int threads, const GemmShape& s, float alpha, const GemmOperand& a,
          const GemmOperand& b, float beta, float* c, std::size_t ldc, void* scratch,
          const float* bias) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k > 0 && one_direct_tile(kern, s, a, b)) {  // gemm_direct's only call, without its loops
    direct_tile(kern, false, s, alpha, a, 0, s.m, b.data, b.rs, 0, beta, c, ldc, bias);
    return;
  }
  gemm_on_path(kern, gemm_path(kern, s, a, b), threads, s, alpha, a, b, beta, c, ldc, scratch,
               bias);
}

void gemm_on_path(const Kernels& kern, GemmPath path, int threads, const GemmShape& s, float alpha,
                  const GemmOperand& a, const GemmOperand& b, float beta, float* c, std::size_t ldc,
                  void* scratch, const float* bias) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    scale_c(s.m, s.n, alpha, beta, c, ldc, bias);
    return;
  }
  threads = effective_threads(threads, s);
  if (path == GemmPath::direct) {
    gemm_direct(kern, threads, s, alpha, a, b, beta, c, ldc, bias, static_cast<float*>(scratch));
    return;
  }
  if (path == GemmPath::wide_panels) {
    gemm_wide_panels(kern, threads, s, alpha, a, b, beta, c, ldc, bias,
                     static_cast<float*>(scratch));
    return;
  }
  if (path == GemmPath::prefetched) {
    gemm_prefetched(kern, threads, s, alpha, a, b, beta, c, ldc, bias);
    return;
  }
  if (path == GemmPath::c_transposed) {
    gemm_c_transposed(kern, threads, s, alpha, a, b, beta, c, ldc, bias,
                      static_cast<float*>(scratch));
    return;
  }
  if (path == GemmPath::rows) {
    gemm_rows(kern, threads, s, alpha, a, b, beta, c, ldc, bias, static_cast<float*>(scratch));
    return;
  }
  if (path == GemmPath::streamed) {
    gemm_streamed(kern, threads, s, alpha, a, b, beta, c, ldc, bias, static_cast<float*>(scratch),
                  nullptr);
    return;
  }
  gemm_packed(kern, threads, s, alpha, a, b, beta, c, ldc, bias, static_cast<float*>(scratch),
              nullptr);
}

std::size_t gemm_prepacked_floats(const Kernels& kern, std::size_t k, std::size_t n) {
  return k * round_up(n, kern.gemm_nr);
}

void gemm_prepack_b(const Kernels& kern, int threads, std::size_t k, std::size_t n,
                    const GemmOperand& b, float* dst) {
  const GemmPlan plan = make_plan(kern, GemmShape{1, n, k}, 1);
  const std::size_t n_panels = (n + plan.nr - 1) / plan.nr;
  run_parallel(effective_threads(threads, GemmShape{1, n, k}), [&](int t, int nt) {
    std::size_t pb, pe;
    static_range(n_panels, t, nt, &pb, &pe);
    for (std::size_t pc = 0; pc < k; pc += plan.kc) {
      const std::size_t kc = std::min(plan.kc, k - pc);
      pack_b(kern, plan, b, pc, kc, 0, n, pb, pe, dst + pc * n_panels * plan.nr, plan.nr * kc);
    }
  });
}

std::size_t gemm_prepacked_scratch_bytes(const Kernels& kern, int threads, const GemmShape& s,
                                         const GemmOperand& a) {
  threads = effective_threads(threads, s);
  switch (gemm_prepacked_loop(kern, s, a)) {
    case PrepackedLoop::rows:
      return 0;
    case PrepackedLoop::streamed:
      return static_cast<std::size_t>(threads) * streamed_a_floats(make_plan(kern, s, 1), s) *
             sizeof(float);
    case PrepackedLoop::packed:
      break;
  }
  return static_cast<std::size_t>(threads) * make_plan(kern, s, threads).a_floats * sizeof(float);
}

namespace {

// PrepackedLoop::rows: prefetched_panels over the packed slivers (ldb = NR), k in the packed KC
// blocks.
void gemm_prepacked_rows(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                         const GemmOperand& a, const float* packed, float beta, float* c,
                         std::size_t ldc, const float* bias) {
  const std::size_t nr = kern.gemm_nr, n_padded = round_up(s.n, nr);
  prefetched_panels(
      kern.gemm_prefetch_sliver, nr, nr, kern.gemm_sliver_mr, kern.gemm_sliver_call_rows,
      std::min(table_kc(kern), s.k), threads, s, alpha, a,
      [&](std::size_t pc, std::size_t kc, std::size_t jp, std::size_t) {
        return packed + pc * n_padded + jp * nr * kc;
      },
      nr, beta, c, ldc, bias, /*next_panel_l2=*/false);
}

}  // namespace

void gemm_prepacked(const Kernels& kern, int threads, const GemmShape& s, float alpha,
                    const GemmOperand& a, const float* packed_b, float beta, float* c,
                    std::size_t ldc, void* scratch, const float* bias) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    scale_c(s.m, s.n, alpha, beta, c, ldc, bias);
    return;
  }
  threads = effective_threads(threads, s);
  const GemmOperand none{nullptr, 0, 1};  // op(B) is read from packed_b only
  float* const buf = static_cast<float*>(scratch);
  switch (gemm_prepacked_loop(kern, s, a)) {
    case PrepackedLoop::rows:
      gemm_prepacked_rows(kern, threads, s, alpha, a, packed_b, beta, c, ldc, bias);
      return;
    case PrepackedLoop::streamed:
      gemm_streamed(kern, threads, s, alpha, a, none, beta, c, ldc, bias, buf, packed_b);
      return;
    case PrepackedLoop::packed:
      gemm_packed(kern, threads, s, alpha, a, none, beta, c, ldc, bias, buf, packed_b);
      return;
  }
}

}  // namespace attn::detail

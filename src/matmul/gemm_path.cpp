// Which path a product takes (gemm_path, GemmPath in matmul/gemm.hpp) and some of the choices the
// paths make for themselves (GemmPath::prefetched's k chunks and first panel, GemmPath::rows'
// copy of A, the loop over a pre-packed B), each rule beside the measurements that set it. The
// drivers that run the paths are in matmul/gemm.cpp, with the choices that only they make.
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "dispatch/cpu.hpp"
#include "matmul/gemm.hpp"
#include "matmul/gemm_shared.hpp"
#include "matmul/vector_phase.hpp"

namespace attn::detail {
namespace {

// Which path a product takes (gemm_path). A few rows go to GemmPath::rows (use_rows), up to
// 48 rows (on AMD up to 192) against a row-major B beyond half of L2 to GemmPath::prefetched
// (use_prefetched, gemm_prefetched_max_rows), and a
// few hundred rows against a B too large for L2 to GemmPath::streamed (use_streamed); below,
// the rest. Row-major A with a B that fits in half of L2 skips packing: the
// direct kernel streams B from L2 at a fraction of the FMA rate and reads A rows from L1, so
// packing (O(mk + kn) copies) would buy nothing. A B^T is first packed once into
// gemm_direct_nr-wide panels (about 2% of a 512 x 512 x 64 call), each a contiguous k x NR
// sliver. Where L2 does not feed the in-place reads at that rate (CpuInfo::l2_feeds_in_place_b),
// a B larger than L1 and wider than kMaxInPlaceCols is packed once A has kMinPackedRows rows to
// repay it. Measured on the Intel Xeon that CpuInfo names (GFLOP/s packed over no-packing,
// AVX-512, medians of 15 timings of repeated calls on the same data): 32 x 256 x 256 0.86,
// 64 x 256 x 256 1.01, 128 x 256 x 256 1.07, 256^3 1.14, 128 x 512 x 512 1.14, A*B^T
// 64 x 512 x 64 1.03, 512 x 512 x 64 1.08; B within L1 (48 KiB): A*B^T 128 x 128 x 64 0.96,
// 512 x 128 x 64 0.99, 64^3 0.82; 64 columns: the wide tile's 512 x 64 x 512 0.93, and on AVX2
// 512 x 64 x 512 took 1.06x the time packed (bench/ab). Packed there means
// GemmPath::wide_panels where the kernel table has the wide tile, A fits in half of L2 and C in
// L2 (see gemm_wide_panels in gemm.cpp), else the Goto path (GemmPath::packed), which also takes
// any other product. A B within L1 takes wide_panels too when n is a multiple of the wide tile's 64
// columns (bench/ab-lib against the no-packing path, 21 pairs: A B^T 128 x 128 x 64 0.960x the
// time, 512 x 128 x 64 0.953x, A B 64 x 128 x 32 0.910x; two identical builds read 0.985-1.005x
// on such shapes), not otherwise: the padded last panel cost more than it saved (n = 160 1.152x,
// n = 112 1.034x, n = 96 1.313x). (kMinPackedRows: matmul/gemm_shared.hpp.)
constexpr std::size_t kMaxInPlaceCols = 64;

// GemmPath::streamed: few rows of A against a B whose packed KC x n panel would not fit in half
// of L2. The Goto loop packs the KC x NC part of it whole before any kernel call, so for few rows
// it writes B out to L3 and reads it back for no reuse to speak of. Instead each thread packs all
// of op(A)'s rows for a KC block once and then, one NR-wide sliver of B at a time, packs the
// sliver into its own buffer (in L2) and runs every row panel over it at once; the threads
// split the column panels (each packs all of A: m x k copies against B's k x n). Taken when all
// of A's packed rows fit in half of L2. Intel Xeon of the README, AVX-512, against the Goto path
// (bench/ab-lib, 11-15 pairs, outputs bit-identical): 1 x 2304 x 768 0.556x the time (2 threads
// 0.543x), 16 x 2304 x 768 0.687x (0.436x), 128 x 2304 x 768 0.903x (0.812x), 128 x 768 x 768
// 0.912x, 128 x 768 x 3072 0.934x, 256 x 2304 x 768 0.966x (0.920x), 300 x 768 x 768 0.976x.
// Whether all of op(A)'s rows, packed for one KC block, fit in half of L2 (the streamed loop's
// condition on A, with or without a pre-packed B).
bool packed_a_fits_half_l2(const Kernels& kern, const GemmShape& s) {
  const std::size_t kc = std::min(table_kc(kern), s.k);
  const std::size_t a_bytes = round_up(s.m, kern.gemm_mr) * kc * kern.gemm_a_copies * sizeof(float);
  return a_bytes <= cpu_info().l2_bytes / 2;
}

bool use_streamed(const Kernels& kern, const GemmShape& s) {
  const std::size_t kc = std::min(table_kc(kern), s.k);
  const std::size_t panel_bytes = kc * round_up(s.n, kern.gemm_nr) * sizeof(float);
  return packed_a_fits_half_l2(kern, s) && panel_bytes > cpu_info().l2_bytes / 2;
}

// GemmPath::rows: at most Kernels::gemm_rows_max rows of a row-major A (kRowsMax where B is over
// half of L2 and fewer than Kernels::gemm_prefetch_b_min_rows: AVX2) against a row-major B wider
// than one no-packing tile (a decoding step's projections), read row after row by the rows
// kernel (matmul/gemm_rows_kernel.hpp) with the rows of C accumulating in kRowsAccFloats of
// scratch per thread (16 KiB, a third of a 48 KiB L1, so that the lines of B streaming through do
// not evict them); the threads split the columns in runs of kRowsColumns.
// Intel Xeon of the README, against the streamed and Goto paths (bench/ab-lib, 9 pairs, one and two
// threads): AVX-512 1 x 2304 x 768 0.601x the time (2 threads 0.504x; against the Goto path
// 0.33x), 4 x 2304 x 768 0.668x (0.577x), 1 x 768 x 3072 0.583x, 4 x 3072 x 768 0.502x; AVX2 and
// SSE2 2 x 2304 x 768 0.25-0.30x, 4 x 2304 x 768 0.37-0.52x. Where B fits in L2, against the
// no-packing tiles: 1 x 256 x 768 0.571x, 4 x 256 x 512 0.838x, 1 x 64 x 64 0.471x, 4 x 64 x 64
// 0.955x, 2 x 48 x 300 0.833x, but 4 x 33 x 64 1.033x; within one such tile (n <= gemm_direct_nr)
// the tile is faster (4 x 16 x 64 took 1.31x the time by rows), so those keep it. Not for more
// rows: on one thread the 6- and 8-row kernels (2 rows of B per pass) ran at 0.84-0.88x the
// streamed path's time, but on two threads, splitting the columns, at 1.45-1.81x (two processes of
// one thread each ran at one thread's speed; no PMU in this guest to say why), and two threads of 3
// and 4 rows each (splitting the rows, each reading all of B) level with the streamed path. A
// kernel for any number of rows that broadcasts A's values from memory took 0.68-0.92x the
// streamed path's time on one thread (8 rows 0.683x, 16 rows 0.921x) but 1.12-1.62x on two.
// The path may not depend on the thread count (the sums' order would change where k exceeds KC),
// so 5 to kRowsMax rows (now AVX2 only; measured on AVX-512) take that kernel on one thread and
// split the rows on more, each thread a register tile of 2-4 rows reading all of B: 5, 6, 8 rows
// 0.68-0.70x the time on one thread, 0.954x, 0.958x, 1.025x on two, 7 rows 0.899x on two, 8 x 768 x
// 3072 0.776x, 6 x 512 x 1024 0.527x, 8 x 512 x 768 on two 0.780x; with B within L2 the tiles are
// faster (8 x 256 x 512 took 1.43x the time by rows, 8 x 64 x 64 1.69x), so those keep them. A B^T
// (a weight matrix stored [out, in]) is read row after row too, each output a dot product
// (Kernels::gemm_rows_t, prefetching 4 KiB ahead by CpuInfo::rows_t_prefetch_min_rows; Intel Xeon
// of the README): A B^T 1 x 2304 x 768 0.59x the time of the streamed path (0.62x without the
// prefetch), 4 x 2304 x 768 0.60x (0.76x; two threads 0.61x; AVX2 0.53x, SSE2 0.45x), and
// against the no-packing path 2 x 100 x 300 0.48x, 4 x 40 x 64 0.95x (bench/ab-lib, 7-9 pairs).
// 5 to Kernels::gemm_rows_t_max (8) rows take it too where B^T is beyond half of L2 and A's
// rows, which every dot product reads again, fit in two thirds of L1 (one register per row, one
// vector of B^T loaded per step: 9 loads per 8 FMAs at 8 rows):
// A B^T 8 x 2304 x 768 0.78x the time of the streamed path (two threads 0.79x; AVX2 0.67x, SSE2
// 0.66x), 7 rows 0.70x, 5 rows 0.63x (two threads 0.63x), 8 x 4096 x 1024 0.61x. Not with A
// beyond L1 (8 x 768 x 3072, A 96 KiB: 1.26x) nor for more rows in groups of 8 over blocks of
// 64 rows of B^T (16 x 2304 x 768 0.87x, but 12 rows 1.11x, 32 rows 1.15x, 48 rows 1.93x);
// nor did a 4 x 4 tile of dot products (4 rows of A and 4 of B^T per step, 8 loads per 16 FMAs,
// groups of 4 rows over blocks of 64 columns) help: 16 rows 0.97x, 32 rows 1.14x, 48 rows 1.49x
// (one of the two operands streams from L2 in every tile). The same
// prefetch in the row-major kernel, 4 passes of B ahead, took 1.06-1.08x the time.
// The sums took 32 KiB until 2026-12-02; Zen 5, with the kernel's blocks of equal width (its
// last block had been whatever was left, as narrow as 64 columns), 16 KiB against 32 KiB
// (AB_LIB_OFFSET=16 bench/ab-lib, 9 pairs; the same sums): AVX-512 2 x 2304 x 768 0.902x the time,
// 3 rows 0.806x, 4 rows 0.853x (two threads 0.947x; with 16 KiB but the old blocks, whose last
// was then 128 columns, 1.345x), 4 x 3072 x 768 0.902x, 4 x 4096 x 1024 0.894x, 4 x 768 x 3072
// 1.012x, 3 x 1000 x 1000 0.990x; 1 row within the noise (1 x 2304 x 768 1.015x, 1 x 768 x 3072
// 0.992x, 1 x 4096 x 1024 1.039x; the 32 KiB build against itself read 0.977-1.030x); AVX2 4 x
// 2304 x 768 0.882x, 8 rows 0.878x, 6 x 3072 x 768 0.993x, 1 row 1.009x; SSE2 1 and 4 rows
// 1.03x and 1.02x. (kRowsAccFloats and kRowsColumns: matmul/gemm_shared.hpp.)
constexpr std::size_t kRowsMax = 8;  // row-major B; B^T: Kernels::gemm_rows_t_max

bool use_rows(const Kernels& kern, const GemmShape& s, const GemmOperand& a, const GemmOperand& b) {
  if (kern.gemm_rows == nullptr || a.cs != 1 || s.n <= kern.gemm_direct_nr) return false;
  const CpuInfo& cpu = cpu_info();
  const bool b_beyond_l2 = s.k * s.n * sizeof(float) > cpu.l2_bytes / 2;
  if (b.cs != 1) {
    // More rows only where B^T is beyond L2 and A's rows, which every dot product reads, stay
    // in L1.
    return b.rs == 1 &&
           (s.m <= kern.gemm_rows_max || (s.m <= kern.gemm_rows_t_max && b_beyond_l2 &&
                                          s.m * s.k * sizeof(float) <= cpu.l1d_bytes * 2 / 3));
  }
  // More rows only where B is beyond L2 (the tiles read a B within it faster) and the ISA's
  // GemmPath::prefetched tile does not take them.
  return s.m <= kern.gemm_rows_max ||
         (s.m <= kRowsMax && s.m < kern.gemm_prefetch_b_min_rows && b_beyond_l2);
}

// GemmPath::prefetched: from Kernels::gemm_prefetch_b_min_rows (above the rows path) to
// kPrefetchedMaxRows rows (more on AMD: below) of a row-major A against a row-major B beyond half
// of L2 (a few tokens' projections: a prefill chunk, a batch of decoding steps, speculative
// decoding), computed by a register tile that reads B in place and prefetches its rows ahead
// (Kernels::gemm_prefetch_b): B is read from L3 or memory once, by the first group of rows of
// each column panel, and no scratch is written. The streamed path packs each sliver of B first
// (the packing's reads, rows ~9 KiB apart, waited on L3: half of 16 x 2304 x 768's samples) and
// the rows path (5-8 rows) keeps the sums in L1 (a load and a store per 4 FMAs: about half the
// FMA rate). k runs in chunks of kPrefetchedKc (or whole: gemm_prefetched_kc), every panel of the
// thread per chunk, so that one chunk's rows of B (256 pages for a row of at least 4 KiB) stay in
// the TLB and in L2 for the later groups: without them, 8 x 3072 x 768 took 1.22x and 16 x 768 x
// 3072 1.22x the previous paths' time, with them 0.92x and 0.71-0.73x (KC 128, 192 and 384 no
// better). Intel Xeon of the README, AVX-512 (8 x 48 tile), bench/ab-lib against the rows (5-8
// rows) and streamed paths, 9-11 pairs, with the prefetch distance at 12 (then 8, measured against
// 12 below; the final build against 9c05187: 8 x 3072 x 768 0.87x, 8 x 4096 x 1024 0.99x, 8 x 1024
// x 1024 0.89x, 16 x 3072 x 768 0.67x): 5 x 2304 x 768 0.94x the time, 8 x 2304 x 768 0.83x, 8 x
// 768 x 3072 0.73x, 16 x 2304 x 768 0.76x, 16 x 3072 x 768 0.73x, 16 x 768 x 3072 0.71x, 16 x 4096
// x 1024 0.73x, 16 x 768 x 768 0.67x, 32 x 2304 x 768 0.86x, 40 rows 0.91x, 48 rows 1.00x, 48 x 768
// x 3072 0.92x, 64 rows 1.03x (so 48 is the limit); two threads (they split the column panels, each
// reading its part of B) 8 rows 0.58x, 16 rows 0.74x, 32 rows 0.85x, 8 x 3072 x 768 0.64x,
// 16 x 768 x 3072 0.72x. With the prefetch distance 12 (see kPrefetchBSteps) instead of 8, rows
// of 12 or 16 KiB (3072 and 4096 columns) lost (8 x 3072 x 768 1.07x the rows path's time,
// 8 x 4096 x 1024 1.10x). AVX2's 6 x 16 tile, two groups of 4 for 8 rows, took 1.6-1.8x the
// rows path's time at 8 rows, so AVX2 starts at 9 rows (10 rows 0.86x, 16 0.85x, 48 0.94x
// against the streamed path); SSE2's 6 x 8: 5 rows 0.96x, 8 rows 0.89x, 16 0.93x, 48 1.00-1.02x.
// NEON's 8 x 12 tile is not timed (no AArch64 hardware here); it starts at 5 rows as AVX-512's
// tile of the same shape in registers does.
// On AMD (CpuInfo::prefetched_many_rows) the tile beats packing for more rows, up to
// Kernels::gemm_prefetch_b_many_rows, unless B's rows lie a multiple of 4 KiB apart (then
// every row of a chunk maps to the same L1 sets). Zen 5, bench/ab-lib against the streamed path,
// 9 pairs: AVX-512 64 x 2304 x 768 0.892x the time (two threads 0.888x), 96 rows 0.933x, 128 rows
// 0.948x (0.662x), 160 0.954x, 192 0.964x (0.748x), 224 0.979x (0.853x), 256 1.011x (0.899x);
// 128 x 768 x 768 0.909x, 128 x 768 x 3072 0.964x; AVX2 64 rows 0.856x (0.861x), 128 rows 0.953x
// (0.945x), 192 rows 1.027x (1.031x); SSE2 64 rows 1.037x, 128 rows 1.067x (so 48); rows 12 or
// 16 KiB apart, AVX-512: 64 x 3072 x 768 1.006x, 96 rows 1.250x, 128 rows 1.053x, 128 x 4096 x
// 1024 1.054x (so 48); but rows 2, 6, 10 or 14 KiB apart keep the tile (packing them instead
// took 1.017-1.027x the time at 128 x 512 x 1024 and x 2048, 1.055-1.080x at 128 x 1536, 2560
// and 3584 x 768 and 96 x 1536 x 768). Those ran with the 512 KiB L2 default (dispatch/cpu.cpp),
// where more than about 120 rows took the Goto path; with the 1 MiB read since, the streamed path
// takes up to about 250, and the tile still leads it up to 192 (bench/ab-lib, 11 pairs, streamed
// over the tile): 64 x 2304 x 768 1.090x the time (two threads 1.122x), 128 rows 1.042x (1.077x),
// 144 1.032x, 160 1.019x (1.028x), 176 0.999x, 192 0.985x (1.012x), 192 x 768 x 768 1.020x
// (1.031x), 192 x 768 x 3072 1.019x.
constexpr std::size_t kPrefetchedMaxRows = 48;
constexpr std::size_t kPrefetchedKc = 256;

bool use_prefetched(const Kernels& kern, const GemmShape& s, const GemmOperand& a,
                    const GemmOperand& b) {
  return kern.gemm_prefetch_b != nullptr && a.cs == 1 && b.cs == 1 &&
         s.m >= kern.gemm_prefetch_b_min_rows &&
         s.k * s.n * sizeof(float) > cpu_info().l2_bytes / 2 &&
         s.m <= gemm_prefetched_max_rows(kern, b);
}

// GemmPath::c_transposed: A B^T (B^T's rows, k contiguous floats each: a weight stored
// [out, in]) with a few dozen rows of A, B^T beyond half of L2 (within it, up to 16 rows: see
// kCTransposedInL2MaxRows). The streamed path packs B^T into
// NR-wide slivers, a transpose of every element of B^T in 16 x 16 blocks from L3, for few rows to
// run over each: at 16 rows the packing took about as long as the tiles. Instead the product runs
// transposed, C^T = B^T op(A)^T: B^T's rows are the rows of the no-packing tiles' A, read in
// place in memory order (each element broadcast once per gemm_direct_nr-wide column panel of
// C^T, once at 32 rows on AVX-512), op(A)^T (k x round_up(m, 16) floats) is transposed once by
// Kernels::gemm_store_t (read in place where op(A) is an A^T), and each thread's rows of C^T go
// in chunks within half of L1 (ct_chunk_rows) to C's columns by gemm_store_t, which applies
// alpha, beta and the bias. Taken from one vector of rows (fewer would leave lanes idle in every
// FMA) and more than Kernels::gemm_rows_t_max (8 and fewer keep GemmPath::rows or the streamed
// path, whichever layout A has) to kCTransposedMaxRows, with at most a quarter of a vector of
// idle lanes in the last one, and op(A)^T within L2 (every row block of C^T reads all of it). Zen
// 5, AVX-512, bench/ab-lib against the streamed path, 11 pairs, time new/old: 16 x 2304 x 768
// 0.663x (two threads 0.668x), 28 rows 0.871x, 32 rows 0.750x (0.783x), 48 rows 0.870x, 60 rows
// 0.950x, 64 rows 0.896x (0.920x), 96 rows 0.929x, 108 rows 0.984x, 112 rows 0.970x, 124 rows
// 0.976x, 128 rows 0.968x (0.932x); 16 x 768 x 768 0.669x, 64 x 768 x 768 0.896x, 16 x 3072 x 768
// 0.646x, 16 x 768 x 3072 0.522x, 64 x 768 x 3072 0.876x (0.842x), 80 x 768 x 3072 0.974x, 64 x
// 4096 x 1024 0.893x. Not taken, measured before the rules: 17 rows 1.158x (15 idle lanes), 20
// rows 1.020x, 33 rows 1.117x, 40 rows 1.001x, 56 rows 0.980x, 100 rows 1.052x, 120 rows 1.016x,
// 160 rows 0.957x, 192 rows 0.975x (two threads 1.058x), 256 rows 1.024x, 128 x 768 x 3072
// (op(A)^T 1.5 MiB) 1.111x (1.214x). AVX2 (ATTN_ISA): 16 rows 0.714x, 64 rows 0.909x (0.922x), 128
// rows 0.957x; SSE2: 12 rows 0.738x, 16 rows 0.800x, 64 rows 0.971x (0.932x), 128 rows 1.014x. Not
// timed on NEON nor on the Intel Xeon of the README.
// Where B^T fits half of L2 the direct path packs it into panels first; for at most
// kCTransposedInL2MaxRows rows and k >= kCTransposedInL2MinK the transposed product is faster
// there too (same measurement, time against the direct path): AVX-512 16 x 1024 x 128 0.744x,
// 16 x 2048 x 64 0.786x, 16 x 512 x 64 0.807x, 16 x 256 x 256 0.722x, 16 x 16 x 512 0.879x,
// 16 x 48 x 100 0.922x, 16 x 64 x 64 0.982x; AVX2 16 x 1024 x 128 0.774x, 16 x 256 x 256 0.756x;
// SSE2 0.753x and 0.729x, 12 x 100 x 100 0.825x. Not for fewer k steps (16 x 32 x 32 1.139x,
// 16 x 128 x 16 1.184x) nor more rows (32 rows: AVX-512 0.83-1.01x, but AVX2 1.06-1.32x).
constexpr std::size_t kCTransposedMaxRows = 128;
constexpr std::size_t kCTransposedInL2MaxRows = 16;
constexpr std::size_t kCTransposedInL2MinK = 64;

bool use_c_transposed(const Kernels& kern, const GemmShape& s, const GemmOperand& b) {
  if (kern.gemm_store_t == nullptr || b.rs != 1 || b.cs == 1) return false;  // before a division
  const std::size_t lanes = kern.gemm_direct_narrow_nr, padded = round_up(s.m, lanes);
  const CpuInfo& cpu = cpu_info();
  if (s.m < lanes || s.m <= kern.gemm_rows_t_max || s.m > kCTransposedMaxRows ||
      (padded - s.m) * 4 > lanes || s.k * round_up(s.m, 16) * sizeof(float) > cpu.l2_bytes) {
    return false;
  }
  return s.k * s.n * sizeof(float) > cpu.l2_bytes / 2 ||
         (s.m <= kCTransposedInL2MaxRows && s.k >= kCTransposedInL2MinK);
}

}  // namespace

std::size_t gemm_prefetched_max_rows(const Kernels& kern, const GemmOperand& b) {
  const bool many = cpu_info().prefetched_many_rows && b.rs * sizeof(float) % 4096 != 0;
  return many ? std::max(kPrefetchedMaxRows, kern.gemm_prefetch_b_many_rows) : kPrefetchedMaxRows;
}

// GemmPath::prefetched's k chunk (gemm.hpp): all of k at once where C is beyond L2 (each further
// chunk would read and write all of C from L3 again), A within half of it (every panel reads all
// of A: it stays in L2) and a panel's k rows of B fit in L2's sets (the groups of rows after the
// first read them there). Rows ldb floats apart fall on L2 sets gcd(ldb * 4, 4096) bytes apart
// within a page (above that the physical page decides), so L2 holds about L2 / max(that gcd, the
// panel's bytes per row) of them. Zen 5, AVX-512, bench/ab-lib against chunks of 256, inputs 16
// bytes past a line, 9-15 pairs: 128 x 2304 x 768 0.951-0.982x the time (two threads 0.963x),
// 112 and 144 rows 0.970x and 0.973x, 168 x 2304 x 512 0.974x, 48 x 6000 x 1536 0.966x, 40 x 8000
// x 1536 0.969x, 64 x 4500 x 1800 0.977x. The rule keeps the chunks wherever all of k lost there:
// B's rows over the sets (48 x 6144, 5888 and 5632 x 1536: 1.277x, 1.229x, 1.138x), C within L2
// (128 x 768 x 768 1.068x, 96 x 768 x 1024 1.118x, 192 x 768 x 768 1.074x, 128 x 1024 x 1024
// 1.013x, 16 x 1024 x 1024 1.105x, 48 x 1536 x 1536 1.189x) or A beyond half of L2 (160 x 2304 x
// 1024, 640 KiB of A, 1.140x; 128 x 768 x 3072 1.115x). It also keeps them where all of k won
// with C within L2 (8 x 3072 x 768 0.93-0.94x, 16-56 rows of 2304 x 768 0.96-0.97x, 16 x 768 x
// 3072 0.95x, 160 x 768 x 768 0.975x) but shapes of like sizes lost, by causes not found. Shapes
// measured after the rule was set, all of k against chunks: 32 x 9000 x 1024 0.935x, 64 x 5000 x
// 1200 0.938x (two threads 0.970x), 176 x 2304 x 640 0.962x. Not measured on the Intel Xeon,
// whose 2 MiB L2 and 48-row limit leave the rule to n > 10922.
std::size_t gemm_prefetched_kc(const Kernels& kern, const GemmShape& s, const GemmOperand& b) {
  const std::size_t l2 = cpu_info().l2_bytes;
  const bool c_beyond_l2 = s.m * s.n > l2 / sizeof(float);
  const bool a_within_half = s.m * s.k <= l2 / 2 / sizeof(float);
  const std::size_t set_step = std::gcd(b.rs * sizeof(float), std::size_t{4096});
  const std::size_t row_bytes = std::max(set_step, kern.gemm_prefetch_b_nr * sizeof(float));
  const bool b_rows_fit = s.k <= l2 / row_bytes;
  return c_beyond_l2 && a_within_half && b_rows_fit ? s.k : kPrefetchedKc;
}

GemmPath gemm_path(const Kernels& kern, const GemmShape& s, const GemmOperand& a,
                   const GemmOperand& b) {
  if (use_rows(kern, s, a, b)) return GemmPath::rows;
  if (use_c_transposed(kern, s, b)) return GemmPath::c_transposed;
  if (use_prefetched(kern, s, a, b)) return GemmPath::prefetched;
  // use_streamed divides by MR and NR: asked only where the answer is a packing path.
  const auto packed = [&] { return use_streamed(kern, s) ? GemmPath::streamed : GemmPath::packed; };
  if (a.cs != 1 || s.k > 1024) return packed();
  const CpuInfo& cpu = cpu_info();
  const std::size_t b_bytes = s.k * s.n * sizeof(float);
  if (b_bytes > cpu.l2_bytes / 2) return packed();
  if (cpu.l2_feeds_in_place_b || s.m < kMinPackedRows || s.n <= kMaxInPlaceCols) {
    return GemmPath::direct;
  }
  const std::size_t a_bytes = s.m * s.k * sizeof(float), c_bytes = s.m * s.n * sizeof(float);
  const bool wide =
      kern.gemm_wide_panel != nullptr && a_bytes <= cpu.l2_bytes / 2 && c_bytes <= cpu.l2_bytes;
  if (b_bytes <= cpu.l1d_bytes) {
    return wide && s.n % kern.gemm_nr == 0 ? GemmPath::wide_panels : GemmPath::direct;
  }
  return wide ? GemmPath::wide_panels : packed();
}

// GemmPath::prefetched's first panel (gemm.hpp): where all of B's rows start the same number of
// floats past a vector boundary, a narrower first panel puts every later panel's rows on one, so
// that a tile's vector loads do not each span two cache lines (GemmPath::direct's wide tile copies
// its B for the same reason: see wide_b_in_place in gemm.cpp). A B in a large block from malloc or
// std::vector (glibc maps those) sits 16 bytes past a 64-byte line. Panels are whole vectors wide
// (nr floats), so `first` below nr leaves later panels on vector boundaries, and with AVX2's 16
// columns and AVX-512's 48 on lines where the row stride is a whole number of lines. Not for
// 16-byte vectors (SSE2, NEON), of which at most one in four spans two lines (SSE2 on Zen 5, B 4
// bytes past a line: 16 x 2304 x 768 took 1.039x the time). Measured: see gemm_prefetched in
// gemm.cpp. Returns 0 on a table with no gemm_prefetch_b (scalar).
std::size_t gemm_prefetched_first_panel(const Kernels& kern, const GemmOperand& b) {
  const std::size_t nr = kern.gemm_prefetch_b_nr;
  constexpr std::size_t kMinVectorBytes = 32;
  const std::size_t vector_bytes = kern.gemm_direct_narrow_nr * sizeof(float);
  const std::size_t past = reinterpret_cast<std::uintptr_t>(b.data) % kLineBytes;
  if (vector_bytes < kMinVectorBytes || past % vector_bytes == 0 || past % sizeof(float) != 0 ||
      b.rs * sizeof(float) % vector_bytes != 0) {
    return nr;
  }
  // Not 0: kLineBytes - past is no whole number of vectors.
  return (kLineBytes - past) / sizeof(float) % nr;
}

bool rows_b_beyond_l3(const GemmShape& s) {
  return s.k * s.n * sizeof(float) >= cpu_info().l3_bytes;
}

// GemmPath::rows against a B^T: where B^T's rows share a phase (matmul/vector_phase.hpp), the
// dot products take its first floats up to a vector boundary as one partial vector (the head,
// rows_t_head in matmul/gemm_rows_t_kernel.hpp), then load B^T and A on boundaries, so A's rows
// are wanted at the same phase. Where they lie otherwise, they are first copied to the thread's
// scratch, each row that far past a cache line (every dot product reads all of A's rows again,
// and off that phase every vector load of A spans two lines); only where the copy fits the
// kRowsAccFloats of scratch. The values, and so the sums, are the same either way.
// Measured on Zen 5 with A and B^T 16 bytes past a line (AB_LIB_OFFSET=16 bench/ab-lib, 9 pairs),
// A copied onto lines against reading it in place, before the head: AVX-512 A B^T 1 x 2304 x 768
// 0.820x the time (two threads 0.660x), 4 x 2304 x 768 0.624x, 1 x 768 x 3072 0.878x,
// 2 x 4096 x 1024 0.728x; AVX2 1 x 2304 x 768 0.862x; on lines, level (1.005x). The head's
// measurements are at rows_t_head. SSE2's 16-byte vectors start on boundaries at that offset;
// its one-row kernel read 1.054-1.071x the time at offsets 16 and 0 in one build, 4 rows 1.004x:
// where the linker placed the loop.
std::size_t rows_t_a_phase(const Kernels& kern, const GemmOperand& b) {
  return rows_vector_phase(b.data, b.cs, kern.gemm_direct_narrow_nr);
}

bool rows_t_copies_a(const Kernels& kern, const GemmShape& s, const GemmOperand& a,
                     const GemmOperand& b) {
  constexpr std::size_t kLineFloats = kLineBytes / sizeof(float);
  const std::size_t lanes = kern.gemm_direct_narrow_nr, phase = rows_t_a_phase(kern, b);
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(a.data);
  const bool in_phase =
      at % (lanes * sizeof(float)) / sizeof(float) == phase && (s.m == 1 || a.rs % lanes == 0);
  return !in_phase && phase + s.m * round_up(s.k, kLineFloats) <= kRowsAccFloats;
}

// Which loop gemm_prepacked runs. With B packed, the per-call packing that the paths for a
// row-major B avoid (rows, prefetched, direct) or pay (streamed, packed) is gone, so only the
// kernels' own rates decide:
// - PrepackedLoop::rows: up to Kernels::gemm_sliver_max_rows rows of a row-major A, read in place
//   by the prefetching tile of the packed tile's width over each sliver (gemm_prefetch_sliver;
//   the threads split the slivers, rows in near-equal groups, k in the packed KC blocks);
// - PrepackedLoop::streamed: while op(A)'s packed rows for one KC block fit in half of L2,
//   gemm_streamed reading each sliver where it lies, fetching the next into L2 meanwhile where a
//   sliver is larger than L1 (as the Goto loop does);
// - PrepackedLoop::packed: the Goto loop nest, B's KC x NC blocks where they lie.
// Intel Xeon of the README, one thread, B 2304 x 768 (7 MiB, from L3), against matmul on the
// row-major B (a harness alternating the two, medians of 7 pairs): AVX-512 1 row 1.00-1.01x the
// time, 4 rows 0.93-0.95x, 5 and 6 rows 0.90-0.92x, 7 and 8 rows 1.05x (GemmPath::prefetched's
// 8 x 48 tile reads B once; the 6 x 64 tile needs two groups, 1.08-1.19x, so 7 and 8 rows take
// 8 x 32 tiles on each half of the sliver), 9 rows 0.86x, 16 0.90x, 48 0.89x; 64 rows 0.87x,
// 128 0.90x and 512 0.94x by the streamed and Goto loops; two threads 8 rows 1.01x (two 4-row
// groups of the 6 x 64 tile; with the 8 x 32 halves, attn-bench --alternate: 0.98x), 16 rows
// 0.92x, 48 rows 0.88x. The rows loop against the streamed one on the packed B: AVX-512 48 rows
// 0.97x, 64 rows 0.99x, 96 rows 1.05x (hence 48); AVX2 4 rows 0.90x, 8 rows 0.95x, 32 rows
// 0.97x, 40 and 48 rows 1.00-1.02x (hence 32); SSE2 1 and 2 rows 0.80-0.92x, but 3 and 4 rows
// 1.08-1.14x and 8 rows 1.11x (its 6 x 8 tile against the packed 4 x 8 tile on A panels of
// copies; hence 2). NEON's limit (48) and tile (8 x 12) are AVX-512's, untimed.
PrepackedLoop gemm_prepacked_loop(const Kernels& kern, const GemmShape& s, const GemmOperand& a) {
  if (kern.gemm_prefetch_sliver != nullptr && a.cs == 1 && s.m <= kern.gemm_sliver_max_rows) {
    return PrepackedLoop::rows;
  }
  return packed_a_fits_half_l2(kern, s) ? PrepackedLoop::streamed : PrepackedLoop::packed;
}

}  // namespace attn::detail

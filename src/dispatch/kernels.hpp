// The kernel table: one per ISA, chosen once per Context. The portable drivers (blocking loops,
// packing, threads, masks) call only these pointers, so adding an ISA means filling one table.
#pragma once

#include <cstddef>

#include "attn/isa.hpp"
#include "matmul/l2_prefetch.hpp"

namespace attn::detail {

// Cache blocking of the GEMM driver, in elements (the derivation is beside each ISA's table in
// src/dispatch/kernels_<isa>.cpp): an MC x KC block of A stays in L2, a KC x NR sliver of B in L1
// or L2, a KC x NC panel of B in L3.
struct GemmBlocking {
  std::size_t mc = 0;
  std::size_t kc = 0;
  std::size_t nc = 0;
  // KC on a CPU with at least kLargeL2Bytes of L2 per core, for a table whose KC is bounded by
  // L2 (0: kc everywhere). NC then shrinks so that the KC x NC panel of B keeps the table's size.
  std::size_t kc_large_l2 = 0;
  static constexpr std::size_t kLargeL2Bytes = 2 * 1024 * 1024;
  // MC on a CPU that runs this table's FMAs in two halves at half the rate
  // (CpuInfo::avx512_double_pumped), for a table measured there (0: mc everywhere).
  std::size_t mc_double_pumped = 0;
};

// Micro-kernel contract (BLIS's): for the MR x NR tile of C at c (row stride ldc, column stride
// 1), C = alpha * A B + beta * C, where A is packed MR-row-major per k (a[(p * MR + i) * copies +
// c] for c < Kernels::gemm_a_copies, usually 1) and B is packed NR-wide per k (b[p * NR + j]), p <
// k. k may be 0. Only the first m <= MR rows and n <= NR columns of C are read or written (edge
// tiles need no copy). beta == 0: C is not read. bias: nullptr, or n values added to every row (C =
// alpha A B + beta C + bias). next: memory to fetch into L2 meanwhile (L2Prefetch; {} for none),
// by reference: passed by value, it goes on the stack as two 8-byte stores that GCC 12 reloads
// with one 16-byte load, which cannot be store-forwarded and so waits until every older store,
// the previous call's tile of C, has reached L1. AVX-512 A B^T 512 x 512 x 64 on the Intel Xeon of
// the README: 0.941-0.964x the time by reference (bench/ab-lib, three runs of 21 pairs, 19-21
// won).
using GemmUkernel = void (*)(std::size_t k, const float* a, const float* b, float* c,
                             std::size_t ldc, float alpha, float beta, std::size_t m, std::size_t n,
                             const float* bias, const L2Prefetch& next);

// The rows kernel: C[m x n] = alpha * A B + beta * C (+ bias, n values added to every row) with
// A row-major (row stride lda) and B row-major (row stride ldb), B read row after row
// (matmul/gemm_rows_kernel.hpp): any m >= 1, register tiles up to Kernels::gemm_rows_max rows and
// A's values broadcast from memory above. acc holds m * block floats of scratch; block is a
// multiple of the ISA's lanes. beta == 0: C is not read. b_beyond_l3: B is at least as large as
// L3 (CpuInfo::l3_bytes; so read from memory), which lets one row of A take its wide passes at
// any row stride of B (gemm_rows_kernel); the sums do not depend on it.
using GemmRowsKernel = void (*)(std::size_t k, const float* a, std::size_t lda, const float* b,
                                std::size_t ldb, float* c, std::size_t ldc, float alpha, float beta,
                                std::size_t m, std::size_t n, const float* bias, float* acc,
                                std::size_t block, bool b_beyond_l3);

// The small-matrix micro-kernel (no packing): C[m x n] (m <= gemm_direct_mr, n <= gemm_direct_nr)
// = alpha * A B + beta * C with A row-major (row stride lda) and B row-major (row stride ldb).
using GemmDirectKernel = void (*)(std::size_t k, const float* a, std::size_t lda, const float* b,
                                  std::size_t ldb, float* c, std::size_t ldc, float alpha,
                                  float beta, std::size_t m, std::size_t n, const float* bias);

// GemmDirectKernel's tile over m rows and n columns, m a multiple of its MR and n of its NR, with
// B's NR-column panels panel_stride floats apart (NR for a row-major B read in place, k * NR for
// panels packed one after another), each with row stride ldb.
using GemmDirectTilesKernel = void (*)(std::size_t k, const float* a, std::size_t lda,
                                       const float* b, std::size_t ldb, std::size_t panel_stride,
                                       float* c, std::size_t ldc, float alpha, float beta,
                                       std::size_t m, std::size_t n, const float* bias);

// Writes C (m x n, row stride ldc) from the transposed product CT (Kernels::gemm_store_t).
using GemmStoreTKernel = void (*)(const float* ct, std::size_t ldct, float* c, std::size_t ldc,
                                  float alpha, float beta, std::size_t m, std::size_t n,
                                  const float* bias);

// Tile sizes of the fused attention: bq query rows (a multiple of attention_mr) against bk keys
// (a multiple of attention_nr); the derivation is beside each ISA's table.
struct AttentionTiling {
  std::size_t bq = 0;
  std::size_t bk = 0;
};

// The P*V micro-kernel of the fused attention: for the MR x NR tile of C (row stride ldc),
// C[i, :] = sum_p P[i, p] * B[p, 0:NR] + row_scale[i] * C[i, :], where P is row-major with row
// stride AttentionTiling::bk (a compile-time constant of the kernel) and row p of B starts at
// b + p * ldb (V itself when its rows hold whole NR-wide panels, else a packed copy). Only the
// first m <= MR rows of C are written; they are always read (they must hold finite values or
// zeros), except by Kernels::attention_pv with row_scale == nullptr: C = P B, C not read (a
// task's first key tile; attention_pv_few does not take it).
using PvUkernel = void (*)(std::size_t k, const float* p, const float* b, std::size_t ldb, float* c,
                           std::size_t ldc, const float* row_scale, std::size_t m);

// One step of the online softmax (Milakov & Gimelshein 2018) over a tile of scores: for each of
// `rows` rows of s (row stride ld, `cols` valid entries), with running max m[i] and sum l[i]:
//   m' = max(m[i], max_j s[i, j]);  alpha[i] = e^(m[i] - m');  s[i, j] = e^(s[i, j] - m');
//   l[i] = alpha[i] * l[i] + sum_j s[i, j];  m[i] = m'.
// A row whose m' is -inf (nothing attended yet) becomes zeros with alpha[i] = 1, and l[i]
// becomes NaN if the row held a NaN. Entries past `cols` are not touched.
using SoftmaxTileKernel = void (*)(float* s, std::size_t ld, std::size_t rows, std::size_t cols,
                                   float* m, float* l, float* alpha);

// Packs `keys` <= NR rows of K (row stride ldk, dk columns) transposed into an NR-wide GEMM
// B panel: dst[x * NR + j] = k[j * ldk + x], with zeros for j >= keys.
using PackKtKernel = void (*)(const float* k, std::size_t ldk, std::size_t keys, std::size_t dk,
                              float* dst);

// Scores of a few query rows against keys read in place, for attention whose query rows per KV
// head are too few to repay packing K (decoding): s[r * lds + j] = scale * sum_x q[r * ldq + x] *
// k[j * ldk + x] for r < rows, j < keys, in groups of kDirectRows rows (each group reads K again:
// Plan::direct_k takes up to a query tile's bq rows, attention/attention_plan.cpp). With dk == 0
// the scores are 0 (q and k may then be null).
//
// Decoding streams K and V from memory once, so the kernel's first group of rows also prefetches
// into L1 (results do not depend on it): with key j, the key row pf.k_ahead_bytes ahead if it is
// below pf.k_rows (the rows the caller may read, past this tile too), and row j of pf.v (pf.v_bytes
// at pf.v + j * pf.ldv; none when pf.v is null: the caller leaves it null where
// CpuInfo::decode_prefetch_v is false, AMD Zen 4, or on one thread below
// decode_prefetch_v_one_thread_min_rows query rows per KV head, Zen 5's one row, or on a
// one-row task's 512-key tiles (Plan::key_tile), unless pf.to_l2), the V rows P * V reads next.
// Measured on Zen 5 (bench/ab, 8 rounds, medians), attention_decode 1x32x8x1x4096x128, whose 33.5
// MB of K and V come from DRAM: 1.39 ms with the V tile prefetched before the scores and no K
// prefetch, 0.95 ms with this and the wide P * V panels (attention_pv_few); K ahead by 4 or 16 KiB
// was no better (bench/ab-lib later read 4 KiB faster: CpuInfo::decode_k_ahead_bytes),
// prefetching every other line 1.07-1.13x slower. Where K and V stay in L3
// (1x12x12x1x1024x64, 6.3 MB, hot between benchmark iterations) the hardware prefetchers keep up,
// and the prefetch instructions cost: 1.03-1.05x the time without the K prefetch. On the Intel Xeon
// (480 MiB L3), without either prefetch: 0.93x the time at 1x32x8x1x4096x128 and 0.90x at
// 1x12x12x1x1024x64, both hot in L3, but 1.36x at 1x32x8x1x65536x128 (537 MB of K and V from
// DRAM); V prefetched to L2 (prefetcht1) instead: 1.00x hot, 1.04x from DRAM (bench/ab, 3-4
// rounds). A decoding step's K and V usually come from DRAM (the other layers' caches evict
// them), so the prefetches stay. With pf.to_l2 both prefetches go to L2 only (prefetcht1): the
// caller's choice where K and V come from memory on a CPU with CpuInfo::decode_prefetch_l2.
constexpr std::size_t kDirectRows = 4;
struct DirectPrefetch {
  const float* v = nullptr;
  std::size_t ldv = 0;
  std::size_t v_bytes = 0;
  std::size_t k_rows = 0;
  std::size_t k_ahead_bytes = 8192;  // the caller's: CpuInfo::decode_k_ahead_bytes
  bool to_l2 = false;
};
// The hint goes by reference for GemmUkernel's reason: by value, scores_direct reloaded its 32
// bytes from the caller's stack with one 32-byte vector load. On the decoding shapes no change
// measured (bench/ab-lib, 1x32x1x4096x128 1.009x, 1x12x1x1024x64 0.996x, 31 pairs each).
using ScoresDirectKernel = void (*)(const float* q, std::size_t ldq, std::size_t rows,
                                    const float* k, std::size_t ldk, std::size_t keys,
                                    std::size_t dk, float scale, float* s, std::size_t lds,
                                    const DirectPrefetch& pf);

// The latency path of attention: one query row against lk <= kSmallRowKeys keys read in place
// (no packing). allowed[j] != 0 marks the keys the mask lets the row attend (the others are
// never read); bias is nullptr or lk values added to the scaled scores. Writes out[0, dv) and,
// when weights != nullptr, weights[0, lk). Row semantics as the fused path (fully masked: zeros;
// a NaN or +inf score: NaN).
constexpr std::size_t kSmallRowKeys = 32;
using SmallRowKernel = void (*)(const float* q, const float* k, std::size_t ldk, const float* v,
                                std::size_t ldv, std::size_t lk, std::size_t dk, std::size_t dv,
                                float scale, const unsigned char* allowed, const float* bias,
                                float* out, float* weights);

struct Kernels {
  Isa isa;

  // y[i] = e^x[i]; y may equal x. Max error and special values: see exp in attn/vmath.hpp.
  void (*exp)(const float* x, float* y, std::size_t n);
  // max_i x[i] for n >= 1 (NaN entries may or may not win; callers check the sum instead).
  float (*reduce_max)(const float* x, std::size_t n);
  // y[i] = e^(x[i] - max) and returns the sum of the y[i], accumulated in double (softmax's
  // 4 ULP bound needs the sum of up to 65537 terms to within 1 ULP); y may equal x.
  double (*exp_minus_max_sum)(const float* x, float* y, std::size_t n, float max);
  // y[i] = x[i] * s; y may equal x.
  void (*scale)(const float* x, float* y, std::size_t n, float s);

  std::size_t gemm_mr;
  std::size_t gemm_nr;
  // Copies of each A value in the packed panels (1, or SSE2's 4: each value packed as a whole
  // vector, so the micro-kernel loads it where it would broadcast it); a panel holds
  // MR * gemm_a_copies floats per k.
  std::size_t gemm_a_copies;
  GemmBlocking gemm_blocking;
  GemmUkernel gemm_ukernel;
  // Packs up to MR rows of a row-major A (k contiguous) into an MR-wide panel, gemm_a_copies
  // copies of each value (GemmUkernel's layout).
  PackKtKernel gemm_pack_a;
  // Packs k rows of up to NR contiguous floats (row-major B) into an NR-wide panel, and k rows of
  // up to MR contiguous floats (A^T) into an MR-wide panel of gemm_a_copies copies of each value
  // (PackKtKernel's arguments: src, ld, width, k, dst).
  PackKtKernel gemm_pack_b_rows;
  PackKtKernel gemm_pack_a_cols;
  // Packs k columns of up to NR rows (B^T: k contiguous per row) into an NR-wide panel.
  PackKtKernel gemm_pack_b_cols;
  std::size_t gemm_direct_mr;
  std::size_t gemm_direct_nr;
  GemmDirectKernel gemm_direct;
  // gemm_direct's tile over m rows and n columns in one call, m a multiple of gemm_direct_mr and
  // n of gemm_direct_nr, tile by tile with gemm_direct's bits (GemmDirectTilesKernel); nullptr
  // where the ISA has none (scalar).
  GemmDirectTilesKernel gemm_direct_tiles;
  // The same sums and bits for a B within half of L1, n a multiple of gemm_direct_tiles_l1_nr
  // (a multiple of gemm_direct_nr), in tiles of fewer rows and more columns (fewer loads per FMA,
  // but every row block reads all of B again); nullptr (and 0) where the ISA has none.
  std::size_t gemm_direct_tiles_l1_nr;
  GemmDirectTilesKernel gemm_direct_tiles_l1;
  // The same, one vector wide (n <= gemm_direct_narrow_nr): for narrow matrices and last panels.
  std::size_t gemm_direct_narrow_nr;
  GemmDirectKernel gemm_direct_narrow;
  // gemm_direct_narrow's contract and bits with one broadcast per FMA for calls of few rows (no
  // shuffles), taken where CpuInfo::narrow_tile_split; nullptr where the ISA keeps one form.
  GemmDirectKernel gemm_direct_narrow_split;
  // Packs k columns of up to gemm_direct_nr rows (B^T) into a gemm_direct_nr-wide panel, which
  // the no-packing kernels then read as a row-major B with ldb = gemm_direct_nr.
  PackKtKernel gemm_direct_pack_b_cols;
  // The packed GEMM's own tile (gemm_direct_wide_mr x gemm_nr) reading a row-major A and B in
  // place, where it is wider than gemm_direct_nr; nullptr (and 0) where the ISA has none. Unlike
  // gemm_direct it takes any m, in blocks of gemm_direct_wide_mr rows. See use_direct_wide in
  // matmul/gemm.cpp for the products it serves.
  std::size_t gemm_direct_wide_mr;
  GemmDirectKernel gemm_direct_wide;
  // The same tile on one packed NR-wide panel of B (ldb == gemm_nr) for GemmPath::wide_panels,
  // where the ISA has a k loop for A's rows in place that pays there (AVX-512); else nullptr.
  GemmDirectKernel gemm_wide_panel;
  // Few rows against a row-major B read row after row (GemmPath::rows: matmul/gemm_path.cpp), with
  // register tiles of up to gemm_rows_max rows; nullptr (and 0) on the scalar table.
  std::size_t gemm_rows_max;
  GemmRowsKernel gemm_rows;
  // The same rows against op(B) = B^T (a GemmDirectKernel whose b holds n rows of k contiguous
  // floats, row stride ldb), as dot products read in memory order, up to gemm_rows_t_max rows;
  // nullptr (and 0) on the scalar table.
  std::size_t gemm_rows_t_max;
  GemmDirectKernel gemm_rows_t;
  // gemm_rows_t prefetching B^T 4 KiB ahead of its loads, with the same sums; taken where
  // CpuInfo::rows_t_prefetch_min_rows. nullptr on the scalar table.
  GemmDirectKernel gemm_rows_t_prefetch;
  // A no-packing tile of up to gemm_prefetch_b_mr rows and gemm_prefetch_b_nr columns that
  // prefetches B's rows a few k steps ahead (GemmPath::prefetched in matmul/gemm_path.cpp: from
  // gemm_prefetch_b_min_rows to a few dozen rows against a row-major B beyond L2; fewer take
  // gemm_rows); m >= 1. nullptr (and 0) on the scalar table.
  std::size_t gemm_prefetch_b_min_rows;
  // Where CpuInfo::prefetched_many_rows, GemmPath::prefetched's row limit (if above its usual 48;
  // 0: none) for a B whose rows are not a multiple of 4 KiB apart (gemm_prefetched_max_rows).
  std::size_t gemm_prefetch_b_many_rows;
  std::size_t gemm_prefetch_b_mr;
  std::size_t gemm_prefetch_b_nr;
  GemmDirectKernel gemm_prefetch_b;
  // Up to gemm_sliver_call_rows rows against one sliver of a pre-packed B (ldb = gemm_nr, n <=
  // gemm_nr), B's rows prefetched as gemm_prefetch_b does: gemm_prepacked takes it for at most
  // gemm_sliver_max_rows rows of a row-major A, m <= gemm_sliver_call_rows in one call, more in
  // near-equal groups of at most gemm_sliver_mr (the limit: gemm_prepacked_loop in
  // matmul/gemm_path.cpp; the groups: prefetched_panels in matmul/gemm.cpp). nullptr (and 0) on
  // the scalar table.
  std::size_t gemm_sliver_max_rows;
  std::size_t gemm_sliver_mr;
  std::size_t gemm_sliver_call_rows;
  GemmDirectKernel gemm_prefetch_sliver;
  // GemmPath::c_transposed's write of C from the transposed product CT (n x m, row stride ldct):
  // C[i * ldc + j] = alpha * ct[j * ldct + i] + beta * C[i * ldc + j] (+ bias[j]) for i < m,
  // j < n, with GemmUkernel's arithmetic (alpha * ct + bias, then + beta * C); beta == 0: C is not
  // read. nullptr on the scalar table (which does not take that path).
  GemmStoreTKernel gemm_store_t;

  // The fused attention's register tile, which may differ from the GEMM's (the GEMM's widest
  // tile would pad a head dimension of 80 to 128): S = scale * Q K^T by attention_scores (a
  // GemmUkernel) on Q packed by attention_pack_q into MR-row panels and K^T by attention_pack_kt
  // into NR-wide panels; P * V by attention_pv on NR-wide V panels.
  std::size_t attention_mr;
  std::size_t attention_nr;
  GemmUkernel attention_scores;
  PackKtKernel attention_pack_q;
  // The same tile reading Q rows in place (a GemmDirectKernel, B = K^T panels with ldb = NR).
  GemmDirectKernel attention_scores_q_in_place;
  // The same tile one vector wide (gemm_direct_narrow_nr columns of a K^T panel, ldb = NR still),
  // for a row block whose keys in the panel lie within one of its vectors (Task::panel_columns in
  // attention/attention_fused.cpp): under a causal mask the diagonal's panel of half the blocks
  // (AVX-512: 14-row blocks, 32-key panels of 2 vectors; at 128 tokens the scores computed 1.33
  // times the causal pairs, 1.20 with it; at 256 1.16 and 1.10). bench/ab-lib against whole
  // panels (AB_LIB_OFFSET=16, 11-15 pairs, bit-identical), attention_causal on AMD Zen 4, Q in
  // place (but in the last query tile): 1x12x128x64 0.960x and 0.963x the time, 1x12x64x64 0.958x,
  // 1x16x128x128 0.950x; ATTN_ISA=avx2 (6 x 16, vectors of 8) 0.990x, sse2 (4 x 8) 0.998x. nullptr
  // on the scalar table (panels of one vector), as is attention_scores_narrow.
  GemmDirectKernel attention_scores_q_in_place_narrow;
  // attention_scores one vector wide, on the same packed Q and K^T panels. The same rule, measured
  // the same way: 1x12x256x64 0.985x and 0.967x, 1x16x256x128 0.983x, 1x12x512x64 0.989x,
  // 1x8x1024x64 0.986x; avx2 and sse2 at 256 tokens 0.999x and 1.001x; bidirectional level
  // (1x12x512x64 1.006x, 1x12x128x64 0.996x).
  GemmUkernel attention_scores_narrow;
  AttentionTiling attention_tiling;
  PvUkernel attention_pv;
  SoftmaxTileKernel attention_softmax;
  PackKtKernel attention_pack_kt;
  ScoresDirectKernel attention_scores_direct;
  // P * V for at most kDirectRows rows (decoding, Plan::pv_few) on V panels of
  // attention_pv_few_nr columns, wider than attention_nr so that each V row is read in longer
  // runs of whole lines (one row: pv_kernel_row, the keys split over accumulator sets; two rows:
  // a 2-row tile; 3 or 4: 4-row tiles as wide as the registers allow). 4 vectors wide on AVX-512,
  // AVX2 and SSE2 (64, 32, 16 floats); nullptr (and 0) on NEON, which keeps its NR-wide panels
  // (not measured: no AArch64 hardware here), and scalar. bench/ab, 4 rounds, time against the
  // NR-wide panels: attention_decode 1x12x12x1x1024x64 avx2 0.84x, sse2 0.65x; 1x32x8x1x4096x128
  // avx2 0.91x, sse2 0.83x (avx512: see pv_kernel_row and a0a183c).
  std::size_t attention_pv_few_nr;
  PvUkernel attention_pv_few;
  // attention_pv_few one vector wide (attention_pv_few_vec_nr, the lanes): on that path, a V
  // whose rows hold whole vectors but not whole attention_nr-wide panels (AVX-512's Dv 48, 80,
  // 112) is read in place, its last columns a vector at a time, where it was copied into padded
  // rows first (Plan::pack_v). bench/ab-lib (Zen 5, AB_LIB_OFFSET=16, one thread, 7-9 pairs, all
  // won; one row's last columns sum in another order, within the bounds): attention
  // 1,12,1,1024,80 0.577x the time, 112 0.539x, 48 0.581x, 4 rows at 80 0.569x, K and V from
  // memory (AB_LIB_KV_COPIES=16) 0.708x; AVX2 at Dv 72 0.564x, SSE2 at 68 0.590x. nullptr (and
  // 0) where attention_pv_few is.
  std::size_t attention_pv_few_vec_nr;
  PvUkernel attention_pv_few_vec;
  // True if x[r * ld + c] is finite for every r < rows, c < cols.
  bool (*all_finite)(const float* x, std::size_t ld, std::size_t rows, std::size_t cols);
  SmallRowKernel attention_small_row;
};

// The table of an ISA compiled into this build, or nullptr. Does not check the CPU.
const Kernels* kernels_for(Isa isa) noexcept;

}  // namespace attn::detail

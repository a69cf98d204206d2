// make_plan (attention/attention_plan.hpp): the rules that cut a fused attention call into tiles,
// tasks and packs, with the measurements that set them.
#include "attention/attention_plan.hpp"

#include <algorithm>
#include <cassert>

#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "core/stealable_range.hpp"
#include "dispatch/cpu.hpp"

namespace attn::detail {
namespace {

// Scratch for the output accumulators of one task's heads.
constexpr std::size_t kHeadStateBudget = 256 * 1024;
// Packed K (and V) of the (batch, KV head) groups processed between two barriers.
constexpr std::size_t kPackBudget = 32 * 1024 * 1024;
// Split the keys of long rows when there are fewer tasks than this, in chunks of about this many.
constexpr std::size_t kSplitMinTasks = 8;
constexpr std::size_t kSplitMinKeys = 2048;
constexpr std::size_t kSplitChunkKeys = 1024;
constexpr std::size_t kSplitMaxChunks = 16;
// Keys per tile of a decoding task with one query row (MHA decoding; Plan::key_tile).
constexpr std::size_t kOneRowTileKeys = 512;

// Whether the scores read K's rows in place (dot products, Plan::direct_k) rather than from K^T
// panels packed per call, for `rows` query rows per KV head (Lq times the GQA group), head
// dimension dk and lk keys. Up to kDirectRows rows (a decoding step) always. Above, packing K
// costs a pass over it that its reuse by the packed tiles' rows (14 on AVX-512, of which the
// others are padding) must repay, and the dot products pay a horizontal sum per score that a
// smaller dk amortises less: up to kDirectMaxRows rows (a GQA group of 5-8 heads, speculative
// decoding, a short chunk of a prompt) where dk >= kDirectWideDk, where the rows are at most
// kDirectFewRows, or where one KV head's K rows (lk * dk floats) reach a quarter of L2, so that
// the pack would read them from L3 or memory. Zen 5, AVX-512, bench/ab-lib (AB_LIB_OFFSET=16,
// 7-11 pairs, K and V hot in L3; shapes B,H,Lq,Lk,d, so rows = Lq), time against packing K:
// d = 128: 1,8,5,2048,128 0.452x, 8 rows 0.558x, 12 rows 0.618x, 16 rows 0.649x and 0.654x,
// 1,32,8,1024,128 0.484x, 1,8,8,1024,128 0.730x, 1,8,16,256,128 0.948x; d = 96 and 80:
// 1,32,8,512,96 0.592x, 1,32,8,512,80 0.660x; d = 64: 1,12,5,512,64 0.842x, 1,12,6,64,64 0.944x,
// 1,12,6,128,64 0.981x, 1,12,8,1024,64 0.914x, 1,12,12,1024,64 0.972x, 1,12,8,2048,64 0.694x,
// 1,12,16,2048,64 0.933x, 1,4,16,4096,64 0.919x; but with K of a head within a quarter of L2,
// 1,12,7,512,64 1.086x, 1,12,8,128,64 1.124x, 1,12,8,512,64 1.096-1.152x, 1,12,16,512,64
// 0.993-1.182x (those keep the packed tiles). AVX2 read 1,8,8,2048,128 0.489x and 1,12,8,512,64
// 0.913x (the rule keeps AVX-512's bound there).
// More than kDirectMaxRows rows (speculative decoding over a GQA group, a chunk of a prompt), up
// to bq: where dk >= kDirectWideDk and one KV head's K reaches rows / kDirectKPerRow of L2 (half
// of it at 32 rows), as the pack's pass over K then costs more than the dot products' horizontal
// sums; the same measurements, hot in L3: 1,8,20,1024,128 0.810x,
// 1,8,24,1024,128 0.973x, 1,8,32,1024,128 0.935x, 1,8,32,2048,128 0.839x, 1,8,40,2048,128
// 0.900x, 1,8,56,2048,128 0.996x, 1,32,24,1024,96 0.713x; K and V from memory
// (AB_LIB_KV_COPIES=16) 1,8,24,1024,128 0.831x; AVX2 1,8,32,2048,128 0.854x; two threads
// 1,8,32,2048,128 0.986x. Below the bound the dot products lost: 1,8,32,256,128 1.104x,
// 1,8,48,512,128 1.118x (from memory they won, 0.896x and 0.992x: the bound is set by K hot in
// L3); 1,8,24,512,128 0.992x and 1,8,48,1024,128 1.003x. 1,12,32,512,64 lost 1.269x (dk 64).
constexpr std::size_t kDirectMaxRows = 16;
constexpr std::size_t kDirectFewRows = 6;
constexpr std::size_t kDirectWideDk = 80;
constexpr std::size_t kDirectKPerRow = 64;

// The rows must fit one pass of bq rows (Plan::passes_per_task).
bool scores_read_k_in_place(std::size_t rows, std::size_t dk, std::size_t lk, std::size_t bq) {
  if (rows > bq) return false;
  if (rows <= kDirectRows) return true;
  if (rows > kDirectMaxRows) {
    return dk >= kDirectWideDk && sat_mul(sat_mul(sat_mul(lk, dk), sizeof(float)),
                                          kDirectKPerRow) >= sat_mul(cpu_info().l2_bytes, rows);
  }
  return dk >= kDirectWideDk || rows <= kDirectFewRows ||
         sat_mul(sat_mul(lk, dk), sizeof(float)) >= cpu_info().l2_bytes / 4;
}

// Whether the decoding path's P * V (Task::accumulate with attention_pv_few) takes Dv's columns
// past its whole attention_nr-wide panels one vector at a time: Dv is whole vectors, not panels.
bool pv_by_vectors(const Kernels& kern, std::size_t dv) {
  return kern.attention_pv_few != nullptr && kern.attention_pv_few_vec != nullptr &&
         dv % kern.attention_nr != 0 && dv % kern.attention_pv_few_vec_nr == 0;
}

}  // namespace

Plan make_plan(const Kernels& kern, const AttentionCall& call, int threads) {
  const AttentionDims& d = call.dims;
  Plan p{};
  p.mr = kern.attention_mr;
  p.nr = kern.attention_nr;
  p.bq = kern.attention_tiling.bq;
  p.bk = kern.attention_tiling.bk;
  p.dk = d.dim_k;
  p.dv = d.dim_v;
  p.dv_pad = round_up(d.dim_v, p.nr);
  p.group = d.heads_kv ? d.heads_q / d.heads_kv : 1;
  // Packing K^T pays when its panels are reused by many query rows; with few rows per KV head
  // (scores_read_k_in_place), the scores read K where it is.
  const std::size_t rows_per_kv_head = sat_mul(d.len_q, p.group);
  p.direct_k =
      scores_read_k_in_place(rows_per_kv_head, d.dim_k, d.len_k, p.bq) && call.k.strides[2] > 0;
  // A task takes all the query heads of its KV head where K is read in place or packed tile by
  // tile, in one pass (their rows fit bq), so that K and V are read once per KV head (so there are
  // B * Hkv tasks, times the key chunks; on more threads than that, see below): GQA group 8
  // (attention_decode 1x64x8x1x4096x128, AVX-512, Dk = Dv = 128, where the budget below allows 4
  // heads) took 0.49-0.57x the time (attn-bench, 3 alternated runs, twice). Otherwise as many heads
  // as kHeadStateBudget holds at bq rows each, one pass per head at worst. Sizes saturate (sat_mul,
  // sat_add): absurd shapes end in out_of_memory, never in a wrap (the dimensions of
  // self_attention's internal views are bounded only by ptrdiff_t).
  const std::size_t per_head =
      sat_mul(sat_mul(p.bq, sat_add(sat_add(p.dv_pad, p.dk), 3)), sizeof(float));
  p.one_pass = rows_per_kv_head <= p.bq;  // direct_k implies it
  p.tile_k = p.one_pass && !p.direct_k;
  p.heads_per_task = p.one_pass
                         ? p.group
                         : std::max<std::size_t>(1, std::min(p.group, kHeadStateBudget / per_head));
  p.passes_per_task = p.one_pass ? 1 : p.heads_per_task;
  p.head_chunks = div_up(p.group, p.heads_per_task);
  p.q_tiles = div_up(d.len_q, p.bq);
  p.weights = call.options->weights.data != nullptr;
  const std::size_t base_tasks = d.batch * d.heads_kv * p.head_chunks * p.q_tiles;
  p.k_chunks = 1;
  p.k_chunk_len = std::max<std::size_t>(d.len_k, 1);
  if (!p.weights && base_tasks < kSplitMinTasks && d.len_k >= kSplitMinKeys) {
    p.k_chunks = std::min(kSplitMaxChunks, div_up(d.len_k, kSplitChunkKeys));
    p.k_chunk_len = round_up(div_up(d.len_k, p.k_chunks), p.bk);
    p.k_chunks = div_up(d.len_k, p.k_chunk_len);
  }
  // With more threads than tasks, a KV head's query heads are split over tasks after all (each
  // reading K and V; the scratch holds one pass either way). Only where no key split applies (its
  // partial results' size must not depend on the thread count), so that each row's bits are the
  // same in any task: the scores' dot products and the P*V tiles are row by row, and with
  // heads_may_split a row block's key range is the task's (block_keys; with the block's own, rows
  // of different ranges, as under a causal mask with several query rows, would add 0 * V for keys
  // outside a row's range in one grouping and not in another, which turns a -0 sum into +0).
  // bench/ab-lib (Zen 5, two threads, AB_LIB_GROUP = Hq: one KV head; 7-9 pairs, all
  // bit-identical), time against one task: 1,8,1,1024,256 0.883x, 1,8,1,1024,128 0.944x,
  // 1,16,1,512,64 0.636x (K packed tile by tile), K and V from memory 1,8,1,1900,128 0.760x;
  // 2,32,1,1024,64 (2 KV heads: no split) 0.991x; 4 query rows per task and more: 1,8,4,1024,128
  // 0.609x. Not up to kDirectRows rows per KV head, where two tasks of 2 rows each (never one:
  // attention_pv_few's one-row kernel sums differently from its 2- to 4-row tiles) took longer:
  // 1,4,1,1024,128 1.082x, 1,2,2,1024,128 1.229x, from memory 1,4,1,1900,128 1.232x (each task
  // reads all of K and V for 2 rows).
  p.heads_may_split =
      p.k_chunks == 1 && p.one_pass && p.group > 1 && rows_per_kv_head > kDirectRows;
  const std::size_t kv_heads = sat_mul(d.batch, d.heads_kv), nt = static_cast<std::size_t>(threads);
  if (threads > 1 && p.heads_may_split && kv_heads > 0 && kv_heads < nt) {
    const std::size_t chunks = std::min(p.group, div_up(nt, kv_heads));
    p.heads_per_task = div_up(p.group, chunks);
    p.head_chunks = div_up(p.group, p.heads_per_task);
  }
  p.tasks_per_group = p.head_chunks * p.q_tiles * p.k_chunks;
  assert(!p.one_pass || p.q_tiles <= 1);
  p.groups = d.batch * d.heads_kv;
  p.key_tile = p.direct_k && rows_per_kv_head == 1 && kern.attention_pv_few != nullptr && !p.weights
                   ? std::min(kOneRowTileKeys, p.bq * p.bk)
                   : p.bk;
  assert(!p.tile_k || p.key_tile == p.bk);  // Work::kt holds one bk-key tile's panels
  const CpuInfo& cpu = cpu_info();
  const std::size_t kv_bytes =
      sat_mul(sat_mul(p.groups, d.len_k), sat_mul(sat_add(d.dim_k, d.dim_v), sizeof(float)));
  p.kv_prefetch_l2 = p.direct_k && cpu.decode_prefetch_l2 && kv_bytes > cpu.l3_bytes / 2;
  // Not on 512-key tiles (key_tile): the hint fetches the tile's V rows into L1 as the scores
  // reach their keys, 128 KiB at Dv 64, which L1 cannot hold until P*V reads them. Zen 5, two
  // threads (bench/ab-lib as for key_tile, time without the hint over with it): 1,12,1,1024,64
  // 1.041x, but K and V from memory 0.933x, and 1,32,1,4096,128 0.888x.
  const bool v_hint =
      cpu.decode_prefetch_v && p.key_tile == p.bk &&
      (threads > 1 || rows_per_kv_head >= cpu.decode_prefetch_v_one_thread_min_rows);
  p.prefetch_v = d.dim_v > 0 && (v_hint || p.kv_prefetch_l2);  // V may have no data
  p.k_ahead_bytes = cpu.decode_k_ahead_bytes;
  // V is read in place when each of its rows holds whole NR-wide panels, or, on the decoding
  // path, whole vectors (Kernels::attention_pv_few_vec; Task::accumulate).
  p.pv_few = p.direct_k && rows_per_kv_head <= kDirectRows && kern.attention_pv_few != nullptr;
  p.pv_vectors = p.pv_few && pv_by_vectors(kern, d.dim_v);
  p.pack_v = (d.dim_v % p.nr != 0 && !p.pv_vectors) || call.v.strides[2] <= 0;
  const std::size_t lk_pad = sat_mul(div_up(std::max<std::size_t>(d.len_k, 1), p.nr), p.nr);
  p.k_pack_floats = p.one_pass ? 0 : sat_round_up(sat_mul(lk_pad, p.dk), 16);
  p.kt_floats = p.tile_k ? sat_mul(std::min(p.bk, lk_pad), p.dk) : 0;  // one key tile's panels
  p.v_pack_floats = p.pack_v ? sat_round_up(sat_mul(lk_pad, p.dv_pad), 16) : 0;
  const std::size_t group_bytes = sat_mul(sat_add(p.k_pack_floats, p.v_pack_floats), 4);
  // All groups at once when nothing is packed (direct K, V in place). On one thread (a call
  // that asks for one), one group at a time: each group's K^T (and V) is packed into the same
  // buffer just before its tasks read it, from L2 while one group's panels fit there, where
  // packing every group first wrote them all out to L3 and the tasks read them back from
  // there. Zen 5, AVX-512, bench/ab-lib (AB_LIB_OFFSET=16, 9-15 pairs, bit-identical), time
  // against all groups at once: 1x12x512x64 0.992x and 0.967x, causal 0.986x, 1x8x2048x64
  // 0.997x, 1x12x128x64 0.994x, causal GQA 1x32x8x512x128 0.983x, padded 4x12x512x64 0.983x,
  // 1x1x4096x64 (one group) 1.001x. On more threads a batch is shared out among them between
  // barriers, and one group's tasks balance worse (1x12x512x64 on two threads with one group
  // per batch: 1.226x).
  p.groups_per_batch =
      group_bytes == 0 ? std::max<std::size_t>(1, p.groups)
      : threads == 1   ? 1
                       : std::max<std::size_t>(1, std::min(p.groups, kPackBudget / group_bytes));
  p.pack_bytes = sat_mul(p.groups_per_batch, group_bytes);
  const std::size_t slots = sat_mul(p.passes_per_task, p.bq);
  p.q_floats = sat_mul(slots, p.dk);
  p.s_floats = p.bq * p.bk;
  p.o_floats = sat_mul(slots, p.dv_pad);
  p.row_floats = slots;
  // The thread's StealableRange (attention_fused.cpp), then its Work.
  std::size_t bytes = sat_add(ScratchCarver::rounded(sizeof(StealableRange)),
                              ScratchCarver::rounded(sat_mul(p.q_floats, 4)));
  bytes = sat_add(bytes, ScratchCarver::rounded(sat_mul(p.o_floats, 4)));
  bytes = sat_add(bytes, ScratchCarver::rounded(sat_mul(p.kt_floats, 4)));
  bytes = sat_add(bytes, ScratchCarver::rounded(p.s_floats * 4) +
                             3 * ScratchCarver::rounded(p.row_floats * 4) +
                             2 * ScratchCarver::rounded(p.bq * sizeof(std::size_t)) +
                             ScratchCarver::rounded(std::max(p.bq, p.mr) * 4));
  p.per_thread_bytes = bytes;
  // Decoding split: (m, l, O) per task, head and row, for one batch of groups.
  p.partial_bytes = p.k_chunks > 1
                        ? sat_mul(sat_mul(sat_mul(p.groups_per_batch, p.tasks_per_group), slots),
                                  (p.dv_pad + 2) * 4)
                        : 0;
  p.partial_bytes =
      p.partial_bytes == SIZE_MAX ? SIZE_MAX : ScratchCarver::rounded(p.partial_bytes);
  return p;
}

}  // namespace attn::detail

// How a fused attention call is cut up (attention_fused.cpp runs it): the register tile and
// key tiles, the tasks (batch, KV head, chunk of its query heads, query tile[, key chunk]), which
// of K and V are packed and how many (batch, KV head) groups at a time, and the scratch each
// thread needs. make_plan (attention_plan.cpp) holds the rules, beside their measurements.
#pragma once

#include <cstddef>

#include "attention/attention_driver.hpp"
#include "core/checks.hpp"
#include "dispatch/kernels.hpp"

namespace attn::detail {

struct Plan {
  std::size_t mr, nr, bq, bk;
  // The keys of one tile in run_fused: bk, or, for a task of one query row (direct_k, Lq = 1, no
  // GQA group) without weights (run_with_weights keeps bk), kOneRowTileKeys, in the row of
  // bq * bk scores its scratch holds (the NR-wide attention_pv that accumulate() runs on columns
  // past the last attention_pv_few panel reads P rows bk apart: row 0 is this row, the others it
  // reads and never stores, within the scratch, as with bk-key tiles). Its softmax
  // and its P*V (attention_pv_few's one-row kernel, whose P has no row stride) then run over 512
  // keys at a time, and the task turns from K to V a quarter as often. bench/ab-lib (Zen 5,
  // AB_LIB_OFFSET=16, one thread, against 128-key tiles; the sums group differently, within the
  // bounds): attention 1,12,1,1024,64 0.905x the time, K and V from memory (AB_LIB_KV_COPIES=16)
  // 0.934x, two threads 0.919x, AVX2 0.984x and 0.961x; 1,12,1,2048,64 0.912x, 1,12,1,300,64
  // 0.913x; 1,32,1,4096,128 (134 MB) 0.978x. Tiles of 256 keys: 0.952x, 0.928x and 0.970x on
  // the first, second and last; 1024 keys: 0.940x, 0.949x, 0.971x; whole rows (the tile up to
  // bq * bk): 0.854x, 0.942x, but 1.040x and 1.000x on the last. Not measured on Intel or Zen 4.
  std::size_t key_tile;
  std::size_t dk, dv, dv_pad;
  std::size_t group, heads_per_task, head_chunks, q_tiles;
  // The most passes of bq state rows one task runs (Task::passes_), which size its scratch.
  std::size_t passes_per_task;
  std::size_t k_chunks, k_chunk_len;
  std::size_t tasks_per_group;  // head_chunks * q_tiles * k_chunks
  bool weights;
  // All of a KV head's query rows fit one pass (at most bq): one task takes them (unless its
  // heads split over threads), and K never goes into the shared pack: direct_k or tile_k.
  bool one_pass;
  // Few query rows per KV head (decoding): scores from K read in place, K is not packed.
  bool direct_k;
  // one_pass, not direct_k: one task reads the head's K, so it packs each key tile's K^T panels
  // itself as it reaches them (Work::kt, L1 or L2) rather than all of K into the shared pack before
  // the tasks (a pass over K through L3 or memory). The same panels, so the same bits. bench/ab-lib
  // (Zen 5, AVX-512, AB_LIB_OFFSET=16, 9 pairs, all 9 bit-identical; time against the shared pack):
  // hot in L3 1,12,8,512,64 0.980x, 1,12,16,512,64 0.965x, 1,12,32,512,64 0.970x, 1,8,32,256,128
  // 0.987x, 1,8,48,512,128 0.981x; K and V from memory (AB_LIB_KV_COPIES=16) 1,8,48,512,128 0.960x,
  // 1,12,16,512,64 1.000x (code placement alone moved a decoding shape by 4-5%: bench/RESULTS.md,
  // forty-ninth session).
  bool tile_k;
  // A KV head's query heads may split over tasks (make_plan; on more threads than tasks), so each
  // row block's keys (Task::block_keys) are the hull over all the task's query rows, the same in
  // every task of the KV head, not over the block's: a row's P * V then sums the same keys
  // whichever heads share its block, and its bits do not depend on the thread count.
  bool heads_may_split;
  // direct_k's prefetch hints (DirectPrefetch), from this CPU's rules: K and V into L2 where the
  // call's K and V come from memory (CpuInfo::decode_prefetch_l2), else K into L1 and V's rows
  // where CpuInfo::decode_prefetch_v (on one thread, for decode_prefetch_v_one_thread_min_rows
  // query rows per KV head or more) and the tile is bk keys (not key_tile's 512); K's rows
  // k_ahead_bytes ahead. Hints change no result.
  bool kv_prefetch_l2, prefetch_v;
  std::size_t k_ahead_bytes;
  // Shared packs: K^T panels of every group in a batch, and V rows when V is not read in place.
  bool pack_v;
  // P * V by Kernels::attention_pv_few (Task::accumulate): direct_k with at most kDirectRows
  // rows per KV head, on an ISA that has it; more rows take the attention_pv tiles.
  bool pv_few;
  // pv_few's P * V takes Dv's columns past its whole NR-wide panels one vector at a time
  // (pv_by_vectors), V packed or not.
  bool pv_vectors;
  std::size_t k_pack_floats, v_pack_floats;  // per group
  // (batch, KV head) groups, and how many are packed between two barriers (make_plan).
  std::size_t groups, groups_per_batch;
  // floats per thread
  std::size_t q_floats, s_floats, o_floats, row_floats, kt_floats;
  std::size_t per_thread_bytes, partial_bytes, pack_bytes;
};

// `threads`: the threads the call runs on. Only the prefetch hints (prefetch_v), the split of a
// KV head's query heads over more threads than tasks read it and, on one thread, the pack batches
// (groups_per_batch) depend on it, so that attention_scratch_bytes may pass the Context's count
// where attention_run passes fewer: no result depends on it, and no size grows with fewer
// threads.
Plan make_plan(const Kernels& kern, const AttentionCall& call, int threads);

}  // namespace attn::detail

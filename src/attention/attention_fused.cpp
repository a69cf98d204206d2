// Fused attention: query tiles against key tiles with an online softmax, so the Lq x Lk score
// matrix is never materialised (ref: Milakov & Gimelshein 2018, "Online normalizer calculation
// for softmax"; Dao et al. 2022, "FlashAttention"). fp32 throughout.
//
// K of each (batch, KV head) is packed once, transposed into NR-wide panels (the attention's
// register tile, Kernels::attention_mr x attention_nr: 14 x 32 on AVX-512), and shared
// by every task that reads it (V is read in place when its rows hold whole panels, else packed
// too); packing runs in parallel, a batch of (batch, KV head) groups at a time within a memory
// budget (a call on one thread: one group at a time, just before its tasks); where one task
// reads a KV head's K (its query rows fit one tile: Plan::tile_k), the task packs each key
// tile's panels as it reaches them instead. A task is (batch, KV head, chunk of
// the query heads sharing it, query tile[, key chunk]); it reuses each K and V tile for every query
// row of its tile and every query head of its chunk (grouped-query attention). Per pass (one head's
// rows, or several heads' stacked when the tile has few rows; see Task) and key tile:
//   S = scale * Q K^T               (a GEMM micro-kernel, Q and K packed; or dot products)
//   mask S on the tile (only tiles the structural mask cuts; skipped tiles are never read)
//   online softmax: S <- e^(S - m), alpha = e^(m_old - m), l <- alpha l + sum S
//   O <- P V + alpha O              (the P*V micro-kernel rescales O as it loads it)
// and finally out = O / l. With weights requested, a first pass writes the masked scores into
// the caller's weights and finds m and l; a second turns them into exact probabilities and
// accumulates O from them. For a few long rows (decoding) the keys are split into chunks of a
// size fixed by the shape, whose partial (m, l, O) are merged in chunk order: the result never
// depends on the thread count. With few query rows per KV head (a decoding step, a GQA group,
// speculative decoding: scores_read_k_in_place) packing K would cost more than the reuse it buys:
// the query heads sharing a KV head are stacked into one tile and their scores computed from K
// rows in place (dot products), so K and V are each read once from memory. How a call is cut
// into tiles, tasks and packs: attention/attention_plan.hpp.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <new>

#include "attention/attention_driver.hpp"
#include "attention/attention_plan.hpp"
#include "attention/mask_rows.hpp"
#include "core/checks.hpp"
#include "core/context_state.hpp"
#include "core/parallel.hpp"
#include "core/stealable_range.hpp"

namespace attn::detail {
namespace {

// Below this much work (about 10 microseconds) a call runs on one thread (attention_run), and a
// call with few keys takes the latency path (use_small_rows).
constexpr double kMinParallelFlops = 2e6;

// Row s of head h of batch b in a [batch, heads, seq, dim] view, or nullptr when the view has
// no data (an empty view: Dk or Dv == 0, or Lk == 0 for k and v; driver_view), so no reference
// to *nullptr is ever formed.
template <class T>
T* row_ptr(const TensorView<T>& t, std::size_t b, std::size_t h, std::size_t s) {
  return t.data == nullptr ? nullptr : &t(b, h, s, 0);
}

struct TaskIndex {
  std::size_t b, kvh, head_chunk, q_tile, k_chunk;
};

TaskIndex task_index(const Plan& p, std::size_t heads_kv, std::size_t group, std::size_t t) {
  TaskIndex ti;
  ti.k_chunk = t % p.k_chunks;
  t /= p.k_chunks;
  ti.q_tile = t % p.q_tiles;
  t /= p.q_tiles;
  ti.head_chunk = t;
  ti.kvh = group % heads_kv;
  ti.b = group / heads_kv;
  return ti;
}

// The packed K^T panels and V rows of one (batch, KV head) group.
struct GroupPack {
  const float* k;  // [Lk/NR panels][dk][NR]; unused with Plan::direct_k
  const float* v;  // V rows: row j at v + j * ldv, NR-wide panels at column offsets jp * NR
  std::size_t ldv;
};

// The V rows [begin, end) of one (batch, KV head) group that a thread has found finite: its
// next tasks are mostly of the same group and ask of overlapping rows (under a causal mask each
// query tile's cut tiles reach past the previous tile's; under a boolean mask every task asks of
// every tile), so each row is checked about once per thread instead of once per task. Causal
// 1x12x128x64 (3 query tiles) checked 2.3 times V's rows (all_finite: 3.4% of the samples); with
// the divisions below gone too, 0.974x the time (bench/ab-lib, Zen 5, 21 of 21 pairs).
struct FiniteRows {
  std::size_t group = SIZE_MAX, begin = 0, end = 0;
};

// Per-thread buffers.
struct Work {
  float* q;      // passes x [bq/MR panels][dk][MR] (direct_k: passes x [rows][dk]; unused in place)
  float* kt;     // Plan::tile_k: the key tile's K^T panels
  float* s;      // [bq][bk]; a one-row task's key_tile scores in row 0 (key_tile <= bq * bk)
  float* o;      // passes_per_task x [bq][dv_pad]
  float* m;      // passes_per_task x bq
  float* l;      // passes_per_task x bq
  float* alpha;  // passes_per_task x bq
  std::size_t* lo;  // bq: structural key range of each row
  std::size_t* hi;
  float* ones;           // max(bq, MR) ones: the row scale of accumulate-only P*V
  FiniteRows* v_finite;  // the thread's, outside the scratch
};

// Thread t's block of the scratch: its StealableRange (which other threads read), then its Work.
StealableRange* thread_range(const Plan& p, char* thread_base, std::size_t t) {
  return reinterpret_cast<StealableRange*>(thread_base + t * p.per_thread_bytes);
}

Work carve_work(const Plan& p, void* base, FiniteRows* v_finite) {
  ScratchCarver c(base);
  c.take_bytes(sizeof(StealableRange));
  Work w;
  w.q = c.take<float>(p.q_floats);
  w.kt = c.take<float>(p.kt_floats);
  w.s = c.take<float>(p.s_floats);
  w.o = c.take<float>(p.o_floats);
  w.m = c.take<float>(p.row_floats);
  w.l = c.take<float>(p.row_floats);
  w.alpha = c.take<float>(p.row_floats);
  w.lo = c.take<std::size_t>(p.bq);
  w.hi = c.take<std::size_t>(p.bq);
  w.ones = c.take<float>(std::max(p.bq, p.mr));
  w.v_finite = v_finite;
  return w;
}

// Packs K^T panels [panel_begin, panel_end) of group (b, kvh) into `k_pack` (panel_begin first).
void pack_k_panels(const Kernels& kern, const Plan& p, const AttentionCall& call, std::size_t b,
                   std::size_t kvh, std::size_t panel_begin, std::size_t panel_end, float* k_pack) {
  const std::size_t nr = p.nr, dk = p.dk, lk = call.dims.len_k;
  const std::ptrdiff_t ldk = call.k.strides[2];
  if (dk == 0) return;  // nothing to pack (and k may have no data)
  for (std::size_t jp = panel_begin; jp < panel_end; ++jp) {
    const std::size_t keys = std::min(nr, lk - jp * nr);
    float* dst = k_pack + (jp - panel_begin) * nr * dk;
    if (ldk > 0) {
      kern.attention_pack_kt(row_ptr(call.k, b, kvh, jp * nr), static_cast<std::size_t>(ldk), keys,
                             dk, dst);
      continue;
    }
    for (std::size_t x = 0; x < dk; ++x) {  // zero or negative key stride: element by element
      for (std::size_t j = 0; j < nr; ++j) {
        dst[x * nr + j] = j < keys ? call.k(b, kvh, jp * nr + j, x) : 0.0f;
      }
    }
  }
}

// Copies V rows [row_begin, row_end) of group (b, kvh) into `v_pack` (row stride dv_pad,
// zero-padded columns).
void pack_v_rows(const Plan& p, const AttentionCall& call, std::size_t b, std::size_t kvh,
                 std::size_t row_begin, std::size_t row_end, float* v_pack) {
  for (std::size_t j = row_begin; j < row_end; ++j) {
    float* dst = v_pack + j * p.dv_pad;
    for (std::size_t x = 0; x < p.dv; ++x)
      dst[x] = call.v(b, kvh, j, x);
    std::fill(dst + p.dv, dst + p.dv_pad, 0.0f);
  }
}

// One task: the query rows [q0, q0 + rows) of the heads [h0, h0 + nh) sharing one KV head, against
// the keys of its chunk. The rows of its heads run in passes of at most bq rows: a pass stacks
// hp = max(1, bq / rows) whole heads, so a decoding step (one row per head) computes the rows of
// all its query heads in one GEMM tile instead of padding each to MR rows. Slot r of pass `pass`
// is query row r % rows of head pass * hp + r / rows; its state (m, l, alpha, O) is at
// pass * bq + r, and with hp == 1 a pass is one head, as in a plain flash tile.
class Task {
 public:
  Task(const Kernels& kern, const Plan& plan, const AttentionCall& call, const Work& w,
       const TaskIndex& ti, const GroupPack& pack)
      : kern_(kern), p_(plan), call_(call), d_(call.dims), w_(w), ti_(ti), pack_(pack) {
    h0_ = ti.kvh * p_.group + ti.head_chunk * p_.heads_per_task;
    nh_ = std::min(p_.heads_per_task, p_.group - ti.head_chunk * p_.heads_per_task);
    q0_ = ti.q_tile * p_.bq;
    rows_ = std::min(p_.bq, d_.len_q - q0_);
    hp_ = std::max<std::size_t>(1, p_.bq / rows_);
    passes_ = div_up(nh_, hp_);
    assert(passes_ <= p_.passes_per_task);  // the scratch holds that many passes' state
    kc0_ = ti.k_chunk * p_.k_chunk_len;
    kc1_ = std::min(d_.len_k, kc0_ + p_.k_chunk_len);
    q_in_place_ =
        !p_.direct_k && hp_ == 1 && p_.dk > 0 && call_.q.strides[2] > 0 && kc1_ - kc0_ <= p_.bk;
  }

  // The key range [begin, end) any row of the tile may attend (structural parts only).
  void key_ranges(const MaskRows& mr, std::size_t* begin, std::size_t* end) const {
    *begin = kc1_;
    *end = kc0_;
    for (std::size_t i = 0; i < rows_; ++i) {
      const KeyRange r = mr.range(q0_ + i);
      w_.lo[i] = std::max(r.begin, kc0_);
      w_.hi[i] = std::min(r.end, kc1_);
      if (w_.lo[i] >= w_.hi[i]) {
        w_.lo[i] = w_.hi[i] = kc0_;
        continue;
      }
      *begin = std::min(*begin, w_.lo[i]);
      *end = std::max(*end, w_.hi[i]);
    }
  }

  std::size_t pass_heads(std::size_t pass) const { return std::min(hp_, nh_ - pass * hp_); }
  std::size_t pass_rows(std::size_t pass) const { return pass_heads(pass) * rows_; }
  // The task-relative head of slot r of a pass.
  std::size_t slot_head(std::size_t pass, std::size_t r) const { return pass * hp_ + r / rows_; }
  std::size_t state(std::size_t pass, std::size_t r) const { return pass * p_.bq + r; }
  float* out_row(std::size_t pass, std::size_t r) const {
    return row_ptr(call_.out, ti_.b, h0_ + slot_head(pass, r), q0_ + r % rows_);
  }
  float* weights_row(std::size_t pass, std::size_t r, std::size_t k0) const {
    return &call_.options->weights(ti_.b, h0_ + slot_head(pass, r), q0_ + r % rows_, k0);
  }
  MaskRows head_mask(std::size_t hh) const {
    return MaskRows(call_.options->mask, d_, ti_.b, h0_ + hh);
  }

  // With a single key tile (as for 128 tokens) packing Q is not repaid: a pass of one head's
  // consecutive rows with a positive row stride has its scores read Q where it is. (With more key
  // tiles the packed tile is faster: measured 1.02x the time at 2048 keys, 0.97x at 128.)
  bool q_in_place() const { return q_in_place_; }

  // The pass's Q rows in MR-wide panels (the GEMM's A layout), zero rows past its slots; with
  // Plan::direct_k, row after row.
  void pack_q(std::size_t pass) const {
    const std::size_t mr = p_.mr, dk = p_.dk, n = pass_rows(pass);
    if (dk == 0 || q_in_place()) return;  // nothing to pack (and q may have no data)
    const std::ptrdiff_t ldq = call_.q.strides[2];
    float* dst = w_.q + pass * p_.bq * dk;
    if (p_.direct_k) {
      for (std::size_t r = 0; r < n; ++r) {
        const std::size_t h = h0_ + slot_head(pass, r), i = q0_ + r % rows_;
        for (std::size_t x = 0; x < dk; ++x)
          dst[r * dk + x] = call_.q(ti_.b, h, i, x);
      }
      return;
    }
    for (std::size_t ib = 0; ib < n; ib += mr, dst += mr * dk) {
      const std::size_t rows = std::min(mr, n - ib), i = ib % rows_;
      if (ldq > 0 && i + rows <= rows_) {  // consecutive rows of one head
        kern_.attention_pack_q(row_ptr(call_.q, ti_.b, h0_ + slot_head(pass, ib), q0_ + i),
                               static_cast<std::size_t>(ldq), rows, dk, dst);
        continue;
      }
      for (std::size_t r = 0; r < mr; ++r) {  // rows of two heads, or a zero or negative stride
        const std::size_t slot = ib + r, h = h0_ + slot_head(pass, slot);
        for (std::size_t x = 0; x < dk; ++x) {
          dst[x * mr + r] = r < rows ? call_.q(ti_.b, h, q0_ + slot % rows_, x) : 0.0f;
        }
      }
    }
  }

  // True if V rows [k0, k0 + cols) hold only finite values: the tile may then multiply a blocked
  // key's V by an exact 0 weight. Asked only of tiles a structural mask cuts, or of every tile
  // under a boolean mask; their V rows are read next. Rows the thread has found finite for this
  // group (Work::v_finite) are not checked again; rows that are not finite are never remembered.
  bool v_finite(std::size_t k0, std::size_t cols) const {
    if (p_.dv == 0 || cols == 0) return true;  // and V may have no data
    FiniteRows& known = *w_.v_finite;
    const std::size_t group = ti_.b * d_.heads_kv + ti_.kvh, end = k0 + cols;
    if (known.group != group || end < known.begin || k0 > known.end) {  // apart: start again
      if (!rows_finite(k0, end)) return false;
      known = FiniteRows{group, k0, end};
      return true;
    }
    if (k0 < known.begin && !rows_finite(k0, known.begin)) return false;
    if (end > known.end && !rows_finite(known.end, end)) return false;
    known.begin = std::min(known.begin, k0);
    known.end = std::max(known.end, end);
    return true;
  }
  bool rows_finite(std::size_t begin, std::size_t end) const {
    return kern_.all_finite(pack_.v + begin * pack_.ldv, pack_.ldv, end - begin, p_.dv);
  }

  // The keys [*lo, *hi) of the tile [k0, k0 + cols), as offsets into it, that some row of the
  // slots [ib, ib + m) of a pass may attend: on a tile the structural mask cuts (`cut`), the hull
  // of those rows' ranges (of all the task's rows under Plan::heads_may_split; empty when none
  // attends a key of the tile), else the whole tile. The scores and P * V of a row block need
  // only these keys: apply_mask then sets every score outside a row's range to -inf, so scores
  // the block skips are overwritten before the softmax reads them, and its probabilities outside
  // the hull are 0.
  void block_keys(bool cut, std::size_t ib, std::size_t m, std::size_t k0, std::size_t cols,
                  std::size_t* lo, std::size_t* hi) const {
    *lo = 0;
    *hi = cols;
    if (!cut) return;
    if (p_.heads_may_split) {
      ib = 0;
      m = rows_;
    }
    std::size_t a = cols, b = 0;
    for (std::size_t r = 0, i = ib % rows_; r < m; ++r, i = i + 1 == rows_ ? 0 : i + 1) {
      const std::size_t rl = std::max(w_.lo[i], k0), rh = std::min(w_.hi[i], k0 + cols);
      if (rl >= rh) continue;
      a = std::min(a, rl - k0);
      b = std::max(b, rh - k0);
    }
    *lo = a < b ? a : 0;
    *hi = a < b ? b : 0;
  }

  // S = scale * Q K^T for the pass's rows against the tile (row stride bk); on a cut tile only
  // the K^T panels each row block may attend (block_keys).
  void scores(std::size_t pass, std::size_t k0, std::size_t cols, bool cut) const {
    const std::size_t mr = p_.mr, nr = p_.nr, dk = p_.dk, n = pass_rows(pass);
    const float* q = w_.q + pass * p_.bq * dk;
    if (p_.direct_k) {
      DirectPrefetch pf;
      pf.v = p_.prefetch_v ? pack_.v + k0 * pack_.ldv : nullptr;
      pf.ldv = pack_.ldv;
      pf.v_bytes = p_.dv * sizeof(float);
      pf.k_rows = kc1_ - k0;
      pf.k_ahead_bytes = p_.k_ahead_bytes;
      pf.to_l2 = p_.kv_prefetch_l2;
      kern_.attention_scores_direct(q, dk, n, row_ptr(call_.k, ti_.b, ti_.kvh, k0),
                                    static_cast<std::size_t>(call_.k.strides[2]), cols, dk,
                                    d_.scale, w_.s, p_.bk, pf);
      return;
    }
    const float* k_tile = w_.kt;
    if (p_.tile_k) {
      pack_k_panels(kern_, p_, call_, ti_.b, ti_.kvh, k0 / nr, div_up(k0 + cols, nr), w_.kt);
    } else {
      k_tile = pack_.k + k0 * dk;  // k0 is a multiple of NR
    }
    const bool in_place = q_in_place();
    const std::size_t ldq = in_place ? static_cast<std::size_t>(call_.q.strides[2]) : 0;
    const float* qh = in_place ? row_ptr(call_.q, ti_.b, h0_ + slot_head(pass, 0), q0_) : nullptr;
    for (std::size_t ib = 0; ib < n; ib += mr) {
      const std::size_t m = std::min(mr, n - ib);
      std::size_t lo, hi;
      block_keys(cut, ib, m, k0, cols, &lo, &hi);
      for (std::size_t jp = lo / nr; jp < div_up(hi, nr); ++jp) {
        std::size_t j0 = jp * nr;
        const std::size_t width = panel_columns(lo, hi, &j0);
        const float* kt = k_tile + jp * nr * dk + (j0 - jp * nr);
        float* s = w_.s + ib * p_.bk + j0;
        if (in_place) {
          (width < nr ? kern_.attention_scores_q_in_place_narrow
                      : kern_.attention_scores_q_in_place)(dk, qh + ib * ldq, ldq, kt, nr, s, p_.bk,
                                                           d_.scale, 0.0f, m, width, nullptr);
        } else {
          (width < nr ? kern_.attention_scores_narrow : kern_.attention_scores)(
              dk, q + ib * dk, kt, s, p_.bk, d_.scale, 0.0f, m, width, nullptr, {});
        }
      }
    }
  }

  // The columns of the K^T panel at *j0 (NR keys) that a row block attending keys [lo, hi) of the
  // tile computes: all NR, or, where those keys lie within one vector of the panel and the ISA
  // has the one-vector tiles (attention_scores_narrow), that vector alone, *j0 moved to it: the
  // diagonal's panel under a causal mask, a short tile's last. The rest are keys that apply_mask
  // overwrites or past the tile's.
  std::size_t panel_columns(std::size_t lo, std::size_t hi, std::size_t* j0) const {
    const std::size_t nr = p_.nr, vl = kern_.gemm_direct_narrow_nr;
    if (kern_.attention_scores_narrow == nullptr || vl >= nr) return nr;
    const std::size_t first = std::max(lo, *j0) - *j0, last = std::min(hi, *j0 + nr) - *j0;
    if (first / vl != (last - 1) / vl) return nr;
    *j0 += first / vl * vl;
    return vl;
  }

  // Bias, then -inf for blocked keys. `cut`: some row's structural range cuts the tile.
  void apply_mask(std::size_t pass, std::size_t k0, std::size_t cols, bool cut) const {
    for (std::size_t j = 0; j < pass_heads(pass); ++j) {
      const MaskRows mr = head_mask(pass * hp_ + j);
      if (!cut && !mr.has_allowed() && !mr.has_additive()) continue;
      for (std::size_t i = 0; i < rows_; ++i) {
        float* row = w_.s + (j * rows_ + i) * p_.bk;
        if (const float* bias = mr.additive_row(q0_ + i)) {
          for (std::size_t c = 0; c < cols; ++c)
            row[c] += bias[k0 + c];
        }
        if (const std::uint8_t* allowed = mr.allowed_row(q0_ + i)) {
          for (std::size_t c = 0; c < cols; ++c) {
            if (allowed[k0 + c] == 0) row[c] = -INFINITY;
          }
        }
        if (cut) {
          const std::size_t lo = std::max(w_.lo[i], k0), hi = std::min(w_.hi[i], k0 + cols);
          if (lo >= hi) {
            std::fill(row, row + cols, -INFINITY);
          } else {
            std::fill(row, row + (lo - k0), -INFINITY);
            std::fill(row + (hi - k0), row + cols, -INFINITY);
          }
        }
      }
    }
  }

  bool blocked(const MaskRows& mr, std::size_t i, std::size_t key) const {
    if (key < w_.lo[i] || key >= w_.hi[i]) return true;
    const std::uint8_t* allowed = mr.allowed_row(q0_ + i);
    return allowed != nullptr && allowed[key] == 0;
  }

  // O <- P V + row_scale * O (no row_scale: O <- P V) for the pass's rows; on a cut tile each row
  // block sums only the keys it may attend (block_keys: its other probabilities are 0, and V is
  // finite here).
  void accumulate(std::size_t pass, std::size_t k0, std::size_t cols, bool cut,
                  const float* row_scale) const {
    const std::size_t mr = p_.mr, nr = p_.nr, n = pass_rows(pass);
    if (p_.dv == 0) return;  // and V may have no data
    float* o = w_.o + state(pass, 0) * p_.dv_pad;
    const float* v_tile = pack_.v + k0 * pack_.ldv;
    if (p_.pv_few) {
      // One row block (n <= kDirectRows): panels as wide as attention_pv_few takes (fewer and
      // longer runs of each V row than NR-wide panels; on AVX2 and SSE2 3 or 4 rows take each
      // panel in two halves; measured on AVX-512 0.91-0.93x the time of NR-wide panels on both
      // attention_decode shapes), then NR-wide ones (attention_pv_few_nr is a multiple of NR).
      std::size_t lo, hi;
      block_keys(cut, 0, n, k0, cols, &lo, &hi);
      // Where Dv is whole vectors (Plan::pv_vectors), the panels end at Dv, the last columns one
      // vector at a time (V may be in place: make_plan), packed or not; else at Dv padded.
      const std::size_t fnr = kern_.attention_pv_few_nr, vnr = kern_.attention_pv_few_vec_nr;
      const std::size_t end = p_.pv_vectors ? p_.dv : p_.dv_pad;
      std::size_t j0 = 0;
      for (; j0 + fnr <= end; j0 += fnr) {
        kern_.attention_pv_few(hi - lo, w_.s + lo, v_tile + lo * pack_.ldv + j0, pack_.ldv, o + j0,
                               p_.dv_pad, row_scale, n);
      }
      for (; j0 + nr <= end; j0 += nr) {
        kern_.attention_pv(hi - lo, w_.s + lo, v_tile + lo * pack_.ldv + j0, pack_.ldv, o + j0,
                           p_.dv_pad, row_scale, n);
      }
      for (; j0 < end; j0 += vnr) {
        kern_.attention_pv_few_vec(hi - lo, w_.s + lo, v_tile + lo * pack_.ldv + j0, pack_.ldv,
                                   o + j0, p_.dv_pad, row_scale, n);
      }
      return;
    }
    for (std::size_t ib = 0; ib < n; ib += mr) {
      std::size_t lo, hi;
      block_keys(cut, ib, std::min(mr, n - ib), k0, cols, &lo, &hi);
      for (std::size_t jp = 0; jp < p_.dv_pad / nr; ++jp) {
        kern_.attention_pv(hi - lo, w_.s + ib * p_.bk + lo, v_tile + lo * pack_.ldv + jp * nr,
                           pack_.ldv, o + ib * p_.dv_pad + jp * nr, p_.dv_pad,
                           row_scale != nullptr ? row_scale + ib : nullptr, std::min(mr, n - ib));
      }
    }
  }

  // The same as accumulate(), skipping blocked keys: V holds a NaN or inf that a zero weight
  // must not turn into NaN.
  void accumulate_skipping_blocked(std::size_t pass, std::size_t k0, std::size_t cols,
                                   const float* row_scale) const {
    for (std::size_t j = 0; j < pass_heads(pass); ++j) {
      const MaskRows mr = head_mask(pass * hp_ + j);
      for (std::size_t i = 0; i < rows_; ++i) {
        const std::size_t r = j * rows_ + i;
        float* orow = w_.o + state(pass, r) * p_.dv_pad;
        for (std::size_t x = 0; x < p_.dv; ++x)
          orow[x] *= row_scale[r];
        for (std::size_t c = 0; c < cols; ++c) {
          if (blocked(mr, i, k0 + c)) continue;
          const float pij = w_.s[r * p_.bk + c];
          const float* vrow = pack_.v + (k0 + c) * pack_.ldv;
          for (std::size_t x = 0; x < p_.dv; ++x)
            orow[x] += pij * vrow[x];
        }
      }
    }
  }

  void run_fused(float* partial) const {
    const MaskRows mr0 = head_mask(0);
    std::size_t begin, end;
    key_ranges(mr0, &begin, &end);
    const bool careful_mask = mr0.has_allowed();
    // O starts at zero: filled here, or the first tile's P V overwrites it (accumulate() with no
    // row scale), which only the NR-wide row-block tiles do and only where V is finite. The same
    // bits (but for the sign of a sum that is exactly zero: -0 stays -0, where 0 * alpha + -0
    // was +0). bench/ab-lib against filling it (Zen 4, AB_LIB_OFFSET=16, 11-15 pairs):
    // bidirectional 1x12x64x64 0.982x the time, 1x12x128x64 0.991x; causal 1x12x128x64 0.987x,
    // 1x12x256x64 0.995x; 512 tokens and 1x16x128x128 level (0.998-1.002x).
    const auto zero_o = [&] {
      for (std::size_t pass = 0; pass < passes_; ++pass) {
        float* o = w_.o + state(pass, 0) * p_.dv_pad;
        std::fill(o, o + pass_rows(pass) * p_.dv_pad, 0.0f);
      }
    };
    if (begin >= end || p_.direct_k) zero_o();
    std::fill(w_.m, w_.m + passes_ * p_.bq, -INFINITY);
    std::fill(w_.l, w_.l + passes_ * p_.bq, 0.0f);
    std::fill(w_.alpha, w_.alpha + passes_ * p_.bq, 0.0f);
    if (begin < end) {
      for (std::size_t pass = 0; pass < passes_; ++pass)
        pack_q(pass);
    }
    for (std::size_t k0 = first_tile(begin); k0 < end; k0 += p_.key_tile) {
      const std::size_t cols = std::min(p_.key_tile, end - k0);
      const bool cut = tile_is_cut(k0, cols);
      const bool careful = (cut || careful_mask) && !v_finite(k0, cols);
      const bool first = k0 == first_tile(begin) && !p_.direct_k;
      if (first && careful) zero_o();
      for (std::size_t pass = 0; pass < passes_; ++pass) {
        const std::size_t s0 = state(pass, 0);
        scores(pass, k0, cols, cut);
        apply_mask(pass, k0, cols, cut);
        kern_.attention_softmax(w_.s, p_.bk, pass_rows(pass), cols, w_.m + s0, w_.l + s0,
                                w_.alpha + s0);
        if (careful) {
          accumulate_skipping_blocked(pass, k0, cols, w_.alpha + s0);
        } else {
          accumulate(pass, k0, cols, cut, first ? nullptr : w_.alpha + s0);
        }
      }
    }
    if (partial != nullptr) {
      save_partial(partial);
    } else {
      finish_fused();
    }
  }

  // Key tiles start on K^T panel boundaries; keys below `begin` in the first tile are masked.
  std::size_t first_tile(std::size_t begin) const { return begin / p_.nr * p_.nr; }

  bool tile_is_cut(std::size_t k0, std::size_t cols) const {
    for (std::size_t i = 0; i < rows_; ++i) {
      if (w_.lo[i] > k0 || w_.hi[i] < k0 + cols) return true;
    }
    return false;
  }

  // Slot by slot as heads and rows: out_row's two divisions per row and block_keys' one (now one
  // per block) cost causal 1x12x128x64 1.7% of its time (bench/ab-lib, Zen 5: 0.983x without).
  void finish_fused() const {
    for (std::size_t pass = 0; pass < passes_; ++pass) {
      for (std::size_t j = 0, r = 0; j < pass_heads(pass); ++j) {
        for (std::size_t i = 0; i < rows_; ++i, ++r) {
          const std::size_t s = state(pass, r);
          write_row(row_ptr(call_.out, ti_.b, h0_ + pass * hp_ + j, q0_ + i), w_.o + s * p_.dv_pad,
                    w_.l[s]);
        }
      }
    }
  }

  void write_row(float* out, const float* orow, float l) const {
    if (p_.dv == 0) return;
    if (std::isnan(l)) {
      std::fill(out, out + p_.dv, NAN);
    } else if (l == 0.0f) {  // fully masked: zeros, by contract
      std::fill(out, out + p_.dv, 0.0f);
    } else {
      kern_.scale(orow, out, p_.dv, 1.0f / l);
    }
  }

  // Partial layout per task: one [m, l, O (dv_pad)] record per state slot.
  void save_partial(float* partial) const {
    const std::size_t stride = p_.dv_pad + 2;
    for (std::size_t pass = 0; pass < passes_; ++pass) {
      for (std::size_t r = 0; r < pass_rows(pass); ++r) {
        const std::size_t s = state(pass, r);
        float* dst = partial + s * stride;
        dst[0] = w_.m[s];
        dst[1] = w_.l[s];
        std::memcpy(dst + 2, w_.o + s * p_.dv_pad, p_.dv_pad * sizeof(float));
      }
    }
  }

  // Merges the key chunks of this (batch, head chunk, query tile) in chunk order; `first` is
  // the partial of chunk 0 and chunks follow at `chunk_stride` floats.
  void merge_partials(const float* first, std::size_t chunk_stride, float* acc) const {
    const std::size_t stride = p_.dv_pad + 2;
    for (std::size_t pass = 0; pass < passes_; ++pass) {
      for (std::size_t r = 0; r < pass_rows(pass); ++r) {
        const std::size_t off = state(pass, r) * stride;
        float m = -INFINITY;
        bool nan = false;
        for (std::size_t c = 0; c < p_.k_chunks; ++c) {
          const float mc = first[c * chunk_stride + off];
          const float lc = first[c * chunk_stride + off + 1];
          nan = nan || std::isnan(lc) || std::isnan(mc);
          if (mc > m) m = mc;
        }
        float l = 0.0f;
        std::fill(acc, acc + p_.dv, 0.0f);
        if (!nan && m != -INFINITY) {
          // A chunk whose keys were all blocked (m = -inf, l = 0) scales by e^-inf = 0 rather than
          // being skipped: an additive -inf is arithmetic, and its 0 * inf in O is NaN, as in the
          // unsplit path (whose O carries it through alpha = 1) and the reference.
          for (std::size_t c = 0; c < p_.k_chunks; ++c) {
            const float* part = first + c * chunk_stride + off;
            float scale = 1.0f;
            const float dm = part[0] - m;
            kern_.exp(&dm, &scale, 1);
            l += scale * part[1];
            for (std::size_t x = 0; x < p_.dv; ++x)
              acc[x] += scale * part[2 + x];
          }
        }
        write_row(out_row(pass, r), acc, nan ? NAN : l);
      }
    }
  }

  // Two passes over the keys: (1) masked scores into the weights, m and l; (2) exact
  // probabilities into the weights, and O = P V from them.
  void run_with_weights() const {
    const MaskRows mr0 = head_mask(0);
    std::size_t begin, end;
    key_ranges(mr0, &begin, &end);
    const bool careful_mask = mr0.has_allowed();
    std::fill(w_.m, w_.m + passes_ * p_.bq, -INFINITY);
    std::fill(w_.l, w_.l + passes_ * p_.bq, 0.0f);
    std::fill(w_.o, w_.o + passes_ * p_.bq * p_.dv_pad, 0.0f);
    std::fill(w_.ones, w_.ones + std::max(p_.bq, p_.mr), 1.0f);
    for (std::size_t pass = 0; pass < passes_; ++pass) {
      for (std::size_t r = 0; r < pass_rows(pass); ++r) {
        float* wrow = weights_row(pass, r, 0);
        std::fill(wrow, wrow + d_.len_k, 0.0f);
      }
      if (begin < end) pack_q(pass);
    }
    for (std::size_t k0 = first_tile(begin); k0 < end; k0 += p_.bk) {  // pass 1
      const std::size_t cols = std::min(p_.bk, end - k0);
      const bool cut = tile_is_cut(k0, cols);
      for (std::size_t pass = 0; pass < passes_; ++pass) {
        const std::size_t s0 = state(pass, 0);
        scores(pass, k0, cols, cut);
        apply_mask(pass, k0, cols, cut);
        for (std::size_t r = 0; r < pass_rows(pass); ++r) {
          std::memcpy(weights_row(pass, r, k0), w_.s + r * p_.bk, cols * sizeof(float));
        }
        kern_.attention_softmax(w_.s, p_.bk, pass_rows(pass), cols, w_.m + s0, w_.l + s0,
                                w_.alpha + s0);
      }
    }
    for (std::size_t k0 = first_tile(begin); k0 < end; k0 += p_.bk) {  // pass 2
      const std::size_t cols = std::min(p_.bk, end - k0);
      const bool cut = tile_is_cut(k0, cols);
      const bool careful = (cut || careful_mask) && !v_finite(k0, cols);
      for (std::size_t pass = 0; pass < passes_; ++pass) {
        for (std::size_t r = 0; r < pass_rows(pass); ++r) {
          float* wrow = weights_row(pass, r, k0);
          float* srow = w_.s + r * p_.bk;
          const float m = w_.m[state(pass, r)], l = w_.l[state(pass, r)];
          if (std::isnan(l) || m == -INFINITY || l == 0.0f) {
            std::fill(srow, srow + cols, 0.0f);  // the row is finished below
            continue;
          }
          kern_.exp_minus_max_sum(wrow, srow, cols, m);
          kern_.scale(srow, srow, cols, 1.0f / l);
          std::memcpy(wrow, srow, cols * sizeof(float));
        }
        if (careful) {
          accumulate_skipping_blocked(pass, k0, cols, w_.ones);
        } else {
          accumulate(pass, k0, cols, cut, w_.ones);
        }
      }
    }
    for (std::size_t pass = 0; pass < passes_; ++pass) {
      for (std::size_t r = 0; r < pass_rows(pass); ++r) {
        const std::size_t s = state(pass, r);
        const float m = w_.m[s], l = w_.l[s];
        float* out = out_row(pass, r);
        float* wrow = weights_row(pass, r, 0);
        if (std::isnan(l)) {
          std::fill(out, out + p_.dv, NAN);
          std::fill(wrow, wrow + d_.len_k, NAN);
        } else if (m == -INFINITY || l == 0.0f) {
          std::fill(out, out + p_.dv, 0.0f);
          std::fill(wrow, wrow + d_.len_k, 0.0f);
        } else {
          const float* orow = w_.o + s * p_.dv_pad;
          std::copy(orow, orow + p_.dv, out);
        }
      }
    }
  }

 private:
  const Kernels& kern_;
  const Plan& p_;
  const AttentionCall& call_;
  const AttentionDims& d_;
  const Work& w_;
  TaskIndex ti_;
  GroupPack pack_;
  std::size_t h0_ = 0, nh_ = 0, q0_ = 0, rows_ = 0, hp_ = 1, passes_ = 0, kc0_ = 0, kc1_ = 0;
  bool q_in_place_ = false;
};

// The call's flops counting only the keys each row may attend by the structural mask (causal,
// window, key lengths), up to `enough`: counted as if unmasked, a top-left causal mask over a
// long key cache (rows attending 1 to 4 of 1024 keys, 2 us of work) went to two threads, whose
// start, barriers and join cost this Zen 5 guest about 7 us: bench/ab-lib attention_causal
// 1,8,4,1024,128 (AB_LIB_GROUP=8) on two threads took 4.4x one thread's time (bench/RESULTS.md,
// fiftieth session).
double attended_flops(const AttentionCall& call, double enough) {
  const AttentionDims& d = call.dims;
  const double per_key = 2.0 * double(d.heads_q) * double(d.dim_k + d.dim_v);
  double flops = 0.0;
  for (std::size_t b = 0; b < d.batch; ++b) {
    const MaskRows mr(call.options->mask, d, b, 0);
    for (std::size_t i = 0; i < d.len_q; ++i) {
      const KeyRange keys = mr.range(i);
      if (keys.end > keys.begin) flops += per_key * double(keys.end - keys.begin);
      if (flops >= enough) return flops;
    }
  }
  return flops;
}

// The latency path (the seed's 6 x 6 x 16, a handful of keys): each query row on its own with
// K and V read in place, on the caller's thread, with no scratch at all.
bool use_small_rows(const AttentionCall& call) {
  const AttentionDims& d = call.dims;
  const double flops = 2.0 * double(d.batch * d.heads_q) * double(d.len_q) * double(d.len_k) *
                       double(d.dim_k + d.dim_v);
  return d.len_k <= kSmallRowKeys && flops < kMinParallelFlops && call.k.strides[2] >= 0 &&
         call.v.strides[2] >= 0;
}

void run_small_rows(const Kernels& kern, const AttentionCall& call) {
  const AttentionDims& d = call.dims;
  const TensorView<float>& w = call.options->weights;
  const std::size_t group = d.heads_q / d.heads_kv;
  const std::size_t ldk = static_cast<std::size_t>(call.k.strides[2]);
  const std::size_t ldv = static_cast<std::size_t>(call.v.strides[2]);
  unsigned char allowed[kSmallRowKeys];
  for (std::size_t b = 0; b < d.batch; ++b) {
    for (std::size_t h = 0; h < d.heads_q; ++h) {
      const MaskRows mr(call.options->mask, d, b, h);
      const std::size_t hk = h / group;
      const float* k = d.len_k ? row_ptr(call.k, b, hk, 0) : nullptr;
      const float* v = d.len_k ? row_ptr(call.v, b, hk, 0) : nullptr;
      for (std::size_t i = 0; i < d.len_q; ++i) {
        const KeyRange r = mr.range(i);
        const std::uint8_t* keep = mr.allowed_row(i);
        for (std::size_t j = 0; j < d.len_k; ++j) {
          allowed[j] = j >= r.begin && j < r.end && (keep == nullptr || keep[j] != 0);
        }
        kern.attention_small_row(row_ptr(call.q, b, h, i), k, ldk, v, ldv, d.len_k, d.dim_k,
                                 d.dim_v, d.scale, allowed, mr.additive_row(i),
                                 row_ptr(call.out, b, h, i), w.data ? &w(b, h, i, 0) : nullptr);
      }
    }
  }
}

// The keys the rows of task `task` (of the batch of groups starting at g0) may attend, plus one
// tile's worth for the task's fixed costs.
std::size_t task_cost(const Plan& p, const AttentionCall& call, std::size_t g0, std::size_t task) {
  const AttentionDims& d = call.dims;
  const std::size_t g = g0 + task / p.tasks_per_group;
  const TaskIndex ti = task_index(p, d.heads_kv, g, task % p.tasks_per_group);
  const MaskRows mr(call.options->mask, d, ti.b, ti.kvh * p.group);
  const std::size_t q0 = ti.q_tile * p.bq, q1 = std::min(d.len_q, q0 + p.bq) - 1;
  const std::size_t kc0 = ti.k_chunk * p.k_chunk_len;
  const std::size_t kc1 = std::min(d.len_k, kc0 + p.k_chunk_len);
  const KeyRange keys = mr.hull(q0, q1);
  const std::size_t begin = std::max(kc0, keys.begin), end = std::min(kc1, keys.end);
  return (end > begin ? end - begin : 0) + p.bk;
}

// Thread t's contiguous share [begin, end) of `tasks`: a task goes to the thread whose share of
// the total cost holds the task's middle. Depends only on the problem, never on timing.
void balanced_range(const Plan& p, const AttentionCall& call, std::size_t g0, std::size_t tasks,
                    int t, int nt, std::size_t* begin, std::size_t* end) {
  if (nt == 1) {
    *begin = 0;
    *end = tasks;
    return;
  }
  double total = 0.0;
  for (std::size_t i = 0; i < tasks; ++i)
    total += double(task_cost(p, call, g0, i));
  const double lo = total * t / nt, hi = total * (t + 1) / nt;
  double run = 0.0;
  *begin = *end = tasks;
  bool started = false;
  for (std::size_t i = 0; i < tasks; ++i) {
    const double cost = double(task_cost(p, call, g0, i));
    const double mid = run + 0.5 * cost;
    if (!started && mid >= lo) {
      *begin = i;
      started = true;
    }
    if (mid >= hi) {
      *end = i;
      break;
    }
    run += cost;
  }
  if (t == nt - 1) *end = tasks;
  if (*end < *begin) *end = *begin;
}

}  // namespace

bool nothing_to_do(const AttentionCall& call) {
  return attention_writes_nothing(call.dims, call.options->weights.data != nullptr);
}

std::size_t attention_scratch_bytes(const Kernels& kern, int threads, const AttentionCall& call) {
  if (nothing_to_do(call) || use_small_rows(call)) return 0;
  const Plan p = make_plan(kern, call, threads);
  return sat_add(sat_add(p.pack_bytes, p.partial_bytes),
                 sat_mul(static_cast<std::size_t>(threads), p.per_thread_bytes));
}

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch) {
  const AttentionDims& d = call.dims;
  if (nothing_to_do(call)) return;
  if (use_small_rows(call)) {
    run_small_rows(kern, call);
    return;
  }
  // Below about 10 microseconds of work, starting threads costs more than it saves (the seed's
  // 6 x 6 x 16 problem runs on the caller's thread whatever the Context says).
  if (threads > 1 && attended_flops(call, kMinParallelFlops) < kMinParallelFlops) threads = 1;
  const Plan p = make_plan(kern, call, threads);
  float* packs = static_cast<float*>(scratch);
  float* partials = reinterpret_cast<float*>(static_cast<char*>(scratch) + p.pack_bytes);
  char* thread_base = static_cast<char*>(scratch) + p.pack_bytes + p.partial_bytes;
  const std::size_t group_floats = p.k_pack_floats + p.v_pack_floats;
  const std::size_t partial_floats = p.passes_per_task * p.bq * (p.dv_pad + 2);
  const std::size_t k_panels = p.one_pass ? 0 : div_up(d.len_k, p.nr);
  const std::size_t pack_items = k_panels + (p.pack_v ? d.len_k : 0);
  auto group_pack = [&](std::size_t g, std::size_t g0) {
    const float* base = packs + (g - g0) * group_floats;
    if (p.pack_v) return GroupPack{base, base + p.k_pack_floats, p.dv_pad};
    const std::size_t b = g / d.heads_kv, kvh = g % d.heads_kv;
    return GroupPack{base, d.len_k ? row_ptr(call.v, b, kvh, 0) : nullptr,
                     static_cast<std::size_t>(call.v.strides[2])};
  };
  // Work stealing where batches of groups follow one another only across a barrier (otherwise a
  // thief still in one batch could take an index of the next batch's range as its own batch's).
  const bool may_steal =
      threads > 1 && (p.groups_per_batch >= p.groups || pack_items > 0 || p.k_chunks > 1);
  if (may_steal) {
    for (int t = 0; t < threads; ++t)
      new (thread_range(p, thread_base, static_cast<std::size_t>(t))) StealableRange();
  }
  run_parallel(threads, [&](int t, int nt) {
    FiniteRows v_finite;
    const Work w =
        carve_work(p, thread_base + static_cast<std::size_t>(t) * p.per_thread_bytes, &v_finite);
    for (std::size_t g0 = 0; g0 < p.groups; g0 += p.groups_per_batch) {
      const std::size_t ng = std::min(p.groups_per_batch, p.groups - g0);
      // Contiguous task ranges (each thread keeps to a few groups, whose packed K stays in its
      // L2) of equal work: a task's cost is the span of keys its rows may attend, which grows
      // with the query tile under a causal mask. The first batch's ranges start unset, and a
      // thief arms the range of a thread that has not started (a worker that woke late); a later
      // batch's are all taken when its owner resets it (barriers separate the batches).
      const std::size_t tasks = ng * p.tasks_per_group;
      std::size_t task_begin, task_end;
      balanced_range(p, call, g0, tasks, t, nt, &task_begin, &task_end);
      const bool stealing = may_steal && nt == threads && tasks <= StealableRange::kMaxEnd;
      StealableRange* own = thread_range(p, thread_base, static_cast<std::size_t>(t));
      if (stealing) {
        if (g0 == 0) {
          own->arm(task_begin, task_end);
        } else {
          own->reset(task_begin, task_end);
        }
      }
      // 1. Pack K^T (and V) of the batch's groups: items are K panels, then V rows.
      std::size_t begin, end;
      static_range(ng * pack_items, t, nt, &begin, &end);
      for (std::size_t item = begin; item < end;) {
        const std::size_t gi = item / pack_items, r = item % pack_items;
        const std::size_t stop = std::min(end, (gi + 1) * pack_items) - gi * pack_items;
        const std::size_t g = g0 + gi, b = g / d.heads_kv, kvh = g % d.heads_kv;
        float* base = packs + gi * group_floats;
        // Only the panels, and V rows from the first panel's, holding keys some row may attend
        // (Task reads from that panel on: first_tile; a padded sequence's keys past its length
        // are never packed). bench/ab-lib attention_padded (key lengths Lk, 3/4, 1/2, 1/4; Zen 5,
        // AB_LIB_OFFSET=16, bit-identical): 4,12,256,64 0.956x the time, 4,12,512,64 0.981x,
        // 8,12,128,64 0.948x. Task's Q read in place wherever the keys fit one tile (not only
        // when Lk does), tried with it: 1.014x and 1.012x alone, not kept.
        const KeyRange keys =
            MaskRows(call.options->mask, d, b, kvh * p.group).hull(0, d.len_q - 1);
        const std::size_t pb = keys.begin / p.nr,
                          pe = keys.end > keys.begin ? div_up(keys.end, p.nr) : pb;
        const std::size_t kp0 = std::max(r, pb), kp1 = std::min({stop, k_panels, pe});
        if (kp0 < kp1) pack_k_panels(kern, p, call, b, kvh, kp0, kp1, base + kp0 * p.nr * p.dk);
        if (stop > k_panels) {
          const std::size_t v0 = std::max(std::max(r, k_panels) - k_panels, pb * p.nr);
          const std::size_t v1 = std::min(stop - k_panels, keys.end > keys.begin ? keys.end : 0);
          if (v0 < v1) pack_v_rows(p, call, b, kvh, v0, v1, base + p.k_pack_floats);
        }
        item = gi * pack_items + stop;
      }
      if (pack_items > 0) barrier(nt);  // none packed (one pass, V in place): none to wait for
      // 2. The tasks of the batch's groups: each thread's own range, then, once that is done,
      // the last task of another thread's while the tasks before it in that range cost at
      // least as much (so that, at equal speeds, the thief does not finish last). A task's
      // bits do not depend on the thread that runs it. A thread whose core runs slower (a
      // guest's vCPU sharing its core, a hybrid CPU's efficient cores) no longer sets the
      // call's time alone: bench/RESULTS.md, fifty-fifth session.
      const auto run_task = [&](std::size_t task) {
        const std::size_t g = g0 + task / p.tasks_per_group;
        const Task job(kern, p, call, w, task_index(p, d.heads_kv, g, task % p.tasks_per_group),
                       group_pack(g, g0));
        if (p.weights) {
          job.run_with_weights();
        } else {
          job.run_fused(p.k_chunks > 1 ? partials + task * partial_floats : nullptr);
        }
      };
      if (stealing) {
        std::size_t task;
        while (own->take_front(&task))
          run_task(task);
        const auto worth = [&](std::size_t front, std::size_t back) {
          const std::size_t last = task_cost(p, call, g0, back - 1);
          std::size_t before = 0;
          for (std::size_t i = front; i + 1 < back && before < last; ++i)
            before += task_cost(p, call, g0, i);
          return before >= last;
        };
        for (int v = (t + 1) % nt; v != t; v = (v + 1) % nt) {
          StealableRange* other = thread_range(p, thread_base, static_cast<std::size_t>(v));
          if (other->unset()) {
            std::size_t vb, ve;
            balanced_range(p, call, g0, tasks, v, nt, &vb, &ve);
            other->arm(vb, ve);
          }
          while (other->take_back(&task, worth))
            run_task(task);
        }
      } else {
        for (std::size_t task = task_begin; task < task_end; ++task)
          run_task(task);
      }
      if (p.k_chunks > 1) {
        barrier(nt);
        const std::size_t merges = tasks / p.k_chunks;
        static_range(merges, t, nt, &begin, &end);
        for (std::size_t mi = begin; mi < end; ++mi) {
          const std::size_t task = mi * p.k_chunks;
          const std::size_t g = g0 + task / p.tasks_per_group;
          const Task job(kern, p, call, w, task_index(p, d.heads_kv, g, task % p.tasks_per_group),
                         group_pack(g, g0));
          job.merge_partials(partials + task * partial_floats, partial_floats, w.o);
        }
      }
      // The next batch overwrites the packs and partials; after the last, the region's end waits.
      if (g0 + p.groups_per_batch < p.groups && (pack_items > 0 || p.k_chunks > 1)) barrier(nt);
    }
  });
}

}  // namespace attn::detail

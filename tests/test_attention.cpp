// attention against reference::attention on every ISA and thread count: shapes chosen to break
// tiling, every mask kind and combination, GQA/MQA, cross-attention, Dk != Dv, strided BSHD
// views, weights on and off. Tolerances: support/attention_case.hpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "dispatch/cpu.hpp"
#include "support/attention_case.hpp"
#include "support/bounds.hpp"

using attn_test::AttentionCase;
using attn_test::AttentionResult;
using attn_test::check_attention_case;

namespace {

// A mask configuration drawn from the case index, so every combination appears.
AttentionCase with_mask(AttentionCase c, unsigned bits, attn_test::Rng& rng) {
  c.causal = bits & 1;
  c.causal_align = (bits & 2) ? attn::CausalAlign::bottom_right : attn::CausalAlign::top_left;
  c.window = bits & 4;
  c.window_left = rng.index(c.Lk + 2);
  c.window_right = rng.index(4);
  c.window_align = (bits & 2) ? attn::CausalAlign::bottom_right : attn::CausalAlign::top_left;
  c.key_lengths = bits & 8;
  c.additive = bits & 16;
  c.additive_bcast_b = c.additive_bcast_h = (bits & 64);
  c.allowed = bits & 32;
  c.allowed_bcast_h = (bits & 128);
  // Query rows broadcast (a [B, 1, 1, Lk] padding bias) in about a third of the cases.
  c.additive_bcast_q = ((bits >> 2) ^ bits) % 3 == 0;
  c.allowed_bcast_q = ((bits >> 3) ^ bits) % 3 == 1;
  return c;
}

std::vector<int> thread_counts() {
  return {1, 2, 3};
}

}  // namespace

TEST_CASE("attention matches the reference on small shapes with every mask", "[attention]") {
  attn_test::Rng rng(21);
  unsigned n = 0;
  for (std::size_t lq = 1; lq <= 9; ++lq) {
    for (std::size_t lk = 1; lk <= 9; ++lk) {
      AttentionCase c;
      c.B = 2;
      c.Hq = 2;
      c.Hkv = (n % 2) ? 1 : 2;
      c.Lq = lq;
      c.Lk = lk;
      c.Dk = 1 + (n % 5);
      c.Dv = 1 + (n % 3) * 3;
      c.bshd = n % 4 == 1;
      c.weights = n % 3 == 0;
      c.seed = n;
      c = with_mask(c, n * 37 % 256, rng);
      attn_test::check_attention_case_everywhere(c, thread_counts());
      ++n;
    }
  }
}

TEST_CASE("attention matches the reference on tile-sized and long shapes", "[attention]") {
  attn_test::Rng rng(22);
  struct Shape {
    std::size_t lq, lk, dk, dv;
  };
  // Around every ISA's tiles: query tiles of 32 (scalar), 48 (sse2, avx2, neon), 56 (avx512);
  // key tiles of 64 (scalar, sse2), 96 (neon), 128 (avx2, avx512); K^T panels of 4..32 keys;
  // the latency path's 32 keys.
  const Shape shapes[] = {
      {31, 63, 64, 64},   {33, 65, 16, 8},    {47, 95, 64, 64},   {49, 97, 32, 64},
      {55, 127, 64, 64},  {57, 129, 64, 128}, {56, 128, 64, 64},  {48, 96, 1, 1},
      {7, 32, 16, 16},    {9, 33, 16, 16},    {15, 17, 16, 16},   {16, 16, 64, 64},
      {31, 33, 80, 80},   {63, 65, 64, 32},   {64, 64, 128, 128}, {65, 127, 3, 5},
      {129, 257, 64, 64}, {1, 1031, 64, 64},  {97, 1, 256, 256},  {200, 211, 16, 48}};
  unsigned n = 0;
  for (const Shape& s : shapes) {
    for (unsigned bits : {0u, 1u, 3u, 5u, 8u, 16u, 32u, 9u + 16u + 32u}) {
      AttentionCase c;
      c.B = 1 + n % 2;
      c.Hq = 4;
      c.Hkv = n % 3 == 0 ? 1 : (n % 3 == 1 ? 2 : 4);
      c.Lq = s.lq;
      c.Lk = s.lk;
      c.Dk = s.dk;
      c.Dv = s.dv;
      c.bshd = n % 2 == 0;
      c.weights = n % 5 == 0;
      c.seed = 100 + n;
      c = with_mask(c, bits, rng);
      attn_test::check_attention_case_everywhere(c, thread_counts());
      ++n;
    }
  }
}

TEST_CASE("attention: a row block's keys within one vector of its K^T panel", "[attention][mask]") {
  // The scores tile then computes that vector alone (attention_scores_narrow, and its form that
  // reads Q in place). 61 query rows against 61 keys, every key in one tile of 64 to 128: the
  // first query tile (32 to 56 rows, more than half a tile: one head per pass) reads Q in place,
  // the second (5 to 29 rows: both heads in one pass) packs it; 4 heads of 13 rows (several heads
  // per pass) and 150 rows (several key tiles) take packed Q panels. Panels of 8 to 32 keys hold
  // vectors of 4 to 16. Causal top-left ends blocks' keys in a diagonal panel's first vector;
  // windows whose left side runs from 0 to 40 keys (even) start them in every later one. Dk = 19:
  // the k loop's tail.
  struct Shape {
    std::size_t hq, lq, lk;
  };
  unsigned n = 0;
  for (const Shape& s : {Shape{2, 61, 61}, Shape{4, 13, 61}, Shape{1, 150, 150}}) {
    for (std::size_t left = 0; left <= 40; left += 2) {
      for (int kind = 0; kind < 2; ++kind) {
        AttentionCase c;
        c.Hq = s.hq;
        c.Lq = s.lq;
        c.Lk = s.lk;
        c.Dk = 19;
        c.Dv = 24;
        c.causal = kind == 0;
        c.window = true;
        c.window_left = left;
        c.window_right = kind == 0 ? 0 : left % 7;
        c.weights = n % 4 == 0;
        c.seed = 400 + n++;
        attn_test::check_attention_case_everywhere(c, {1, 3});
      }
    }
  }
}

TEST_CASE("attention splits long key ranges of few rows (decoding) exactly", "[attention][split]") {
  // Few query tiles and >= 2048 keys: the keys are split into chunks whose partial results are
  // merged; masks and non-finite values must behave as in the unsplit path.
  attn_test::Rng rng(23);
  const std::size_t lks[] = {2048, 3001, 5000};
  unsigned n = 0;
  for (std::size_t lk : lks) {
    for (unsigned bits : {0u, 3u, 5u, 8u, 16u + 32u}) {
      AttentionCase c;
      c.B = 1 + n % 2;
      c.Hq = 2;
      c.Hkv = 1 + n % 2;
      c.Lq = 1 + n % 3;
      c.Lk = lk;
      c.Dk = 64;
      c.Dv = 40;
      c.bshd = n % 2 == 1;
      c.seed = 300 + n;
      c = with_mask(c, bits, rng);
      c.window_left = 1500;
      attn_test::check_attention_case_everywhere(c, {1, 3});
      ++n;
    }
  }
}

TEST_CASE("attention: the paths only large shapes reach", "[attention][split]") {
  // Found untested by a review (2026-12-03): the decoding key split (few query tiles, >= 2048
  // keys) over a task of two passes (30 rows > bq / 2: one head per pass, two heads per task),
  // causal top-left (the second chunk wholly masked) and bottom-right; the split over head chunks
  // (Dk = Dv = 256: a task holds fewer query heads than share the KV head), packed (8 query rows
  // per KV head) and direct (4); two packing batches (each group's packed K over 16 MiB of the
  // 32 MiB budget: Dk = 1024, 4200 keys), split into 5 chunks; head chunks with two groups;
  // causal and window bottom-right with Lq > Lk on the fused path (whole query tiles with no key
  // to attend, rows with and without keys in one tile), with and without weights; and the split
  // with a NaN in v behind key lengths of 1500. Every ISA, threads 1 and 3.
  std::vector<AttentionCase> cases;
  AttentionCase c;
  c.Hq = 2, c.Lq = 30, c.Lk = 2048, c.Dk = c.Dv = 16, c.causal = true, c.seed = 701;
  cases.push_back(c);
  c.causal_align = attn::CausalAlign::bottom_right, c.seed = 702;
  cases.push_back(c);
  c = {};
  c.Hq = 8, c.Lq = 1, c.Lk = 4096, c.Dk = c.Dv = 256, c.seed = 703;
  cases.push_back(c);
  c.Hq = 4, c.seed = 704;
  cases.push_back(c);
  c = {};
  c.Hq = c.Hkv = 2, c.Lq = 9, c.Lk = 4200, c.Dk = 1024, c.Dv = 8, c.seed = 705;
  cases.push_back(c);
  c = {};
  c.B = 2, c.Hq = 8, c.Hkv = 2, c.Lq = 9, c.Lk = 300, c.Dk = c.Dv = 256, c.seed = 706;
  cases.push_back(c);
  c = {};
  c.Hq = 4, c.Hkv = 2, c.Lq = 200, c.Lk = 70, c.Dk = c.Dv = 64, c.causal = true;
  c.causal_align = attn::CausalAlign::bottom_right, c.seed = 707;
  cases.push_back(c);
  c.weights = true, c.seed = 708;
  cases.push_back(c);
  c = {};
  c.Lq = 130, c.Lk = 300, c.Dk = c.Dv = 64, c.window = true, c.window_left = 20;
  c.window_right = 3, c.window_align = attn::CausalAlign::bottom_right, c.seed = 709;
  cases.push_back(c);
  for (const AttentionCase& x : cases)
    attn_test::check_attention_case_everywhere(x, {1, 3});
  // The split with a NaN in a v row that key lengths of 1500 block (in the second chunk).
  const std::size_t lk = 4096, d = 16;
  attn_test::Rng rng(710);
  auto q = rng.uniform_vec(d), k = rng.uniform_vec(lk * d), v = rng.uniform_vec(lk * d);
  v[2000 * d + 3] = attn_test::nan_f();
  const std::int32_t len = 1500;
  attn::AttentionOptions o;
  o.mask = attn::Mask::bidirectional().with_key_lengths(&len);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    std::vector<float> out(d);
    REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, 1, d),
                            attn::make_bhsd<const float>(k.data(), 1, 1, lk, d),
                            attn::make_bhsd<const float>(v.data(), 1, 1, lk, d),
                            attn::make_bhsd(out.data(), 1, 1, 1, d), o)
                .ok());
    for (float x : out)
      CHECK(std::isfinite(x));
  }
}

TEST_CASE("attention of few query rows per KV head (decoding and GQA groups) reads K in place",
          "[attention][direct]") {
  // Lq * (Hq / Hkv) <= 4 takes the path that computes scores from K rows in place (no K^T pack),
  // 1, 2 or 4 rows per register tile, and P * V by attention_pv_few. 5 to 16 rows take it by
  // scores_read_k_in_place (attention/attention_plan.cpp), four rows per scores call and P * V
  // by the attention_pv tiles: always up to 6 rows, else where Dk >= 80 (here 80, 128 and 257)
  // or one KV head's K reaches a quarter of L2 (3001 keys from Dk 22 up on a 1 MiB L2, from Dk
  // 44 on 2 MiB); the others pack K. Head dims around every vector width, key counts across tiles
  // and panels, every mask kind. 17 rows and more: `many` below.
  attn_test::Rng rng(24);
  struct Rows {
    std::size_t lq, hq, hkv;
  };
  // {5, 8, 2}: 20 packed rows per KV head, 4 heads stacked in one pass whose MR panels mix
  // heads. 3001 keys: the direct path under the decoding key split. {2, 4, 1}: speculative
  // decoding of 2 tokens with a GQA group of 4.
  const Rows rows[] = {{1, 1, 1}, {1, 2, 1},  {1, 4, 1},  {2, 2, 1}, {3, 1, 1},
                       {1, 3, 1}, {4, 1, 1},  {1, 8, 2},  {2, 4, 2}, {5, 1, 1},
                       {1, 5, 1}, {5, 8, 2},  {6, 1, 1},  {1, 8, 1}, {2, 4, 1},
                       {3, 4, 1}, {16, 1, 1}, {1, 34, 2}, {17, 1, 1}};
  // Dv 80, 40 and 20: whole vectors, not whole P*V panels, on AVX-512, AVX2 and SSE2 (V read in
  // place, its last columns one vector at a time: Kernels::attention_pv_few_vec).
  const std::size_t dks[] = {1, 3, 20, 40, 64, 80, 128, 257};
  const std::size_t lks[] = {33, 100, 257, 1031, 3001};
  unsigned n = 0;
  for (const Rows& r : rows) {
    for (std::size_t lk : lks) {
      AttentionCase c;
      c.B = 1 + n % 2;
      c.Hq = r.hq;
      c.Hkv = r.hkv;
      c.Lq = r.lq;
      c.Lk = lk;
      c.Dk = dks[n % 8];
      c.Dv = dks[(n + 3) % 8];
      c.bshd = n % 2 == 1;
      c.weights = n % 3 == 0;
      c.seed = 400 + n;
      c = with_mask(c, n * 53 % 256, rng);
      attn_test::check_attention_case_everywhere(c, thread_counts());
      ++n;
    }
  }
  // 17 rows up to bq (56 on AVX-512, 48 elsewhere) read K in place where Dk >= 80 and one KV
  // head's K reaches rows / 64 of L2: the first key count of each takes that path on any L2 up
  // to 2 MiB (lk * Dk * 4 * 64 >= 2 MiB * rows), the second packs K. 8 tokens over a GQA group
  // of 4 (speculative decoding), a 24-row chunk of a prompt, a group of 48 heads stacked in one
  // pass, and 56 rows (packed past the other ISAs' bq). Masks that leave most rows many keys
  // across several key tiles (with_mask's bits: causal aligned bottom-right, a window of up to Lk
  // + 1 keys): a perturbed score must move the result.
  struct Many {
    Rows r;
    std::size_t dk, dv, lk[2];
    unsigned mask[2];
  };
  const Many many[] = {{{8, 8, 2}, 128, 64, {2100, 257}, {3, 16}},
                       {{24, 1, 1}, 96, 128, {2100, 700}, {3, 39}},
                       {{1, 48, 1}, 257, 80, {1537, 300}, {0, 82}},
                       {{56, 1, 1}, 128, 40, {3600, 1000}, {43, 2}}};
  for (const Many& m : many) {
    for (int i = 0; i < 2; ++i) {
      const std::size_t lk = m.lk[i];
      AttentionCase c;
      c.B = 1;
      c.Hq = m.r.hq;
      c.Hkv = m.r.hkv;
      c.Lq = m.r.lq;
      c.Lk = lk;
      c.Dk = m.dk;
      c.Dv = m.dv;
      c.bshd = n / 2 % 2 == 0;  // each layout on both paths
      c.weights = n % 3 == 0;
      c.seed = 400 + n;
      c = with_mask(c, m.mask[i], rng);
      attn_test::check_attention_case_everywhere(c, thread_counts());
      ++n;
    }
  }
}

// One query row per KV head (MHA decoding) runs its keys in tiles of 512 rather than the fused
// tile's (Plan::key_tile in attention/attention_plan.hpp): key counts around multiples of 512,
// every mask kind cutting tiles anywhere. Every third case: a window of the last 301 keys and a
// boolean mask, with NaN in the V rows of two blocked keys: one just before the window, at or
// past its first 8-key boundary, so within the first tile read on every ISA (tiles start on K
// panel boundaries, 8 keys or more), and one inside the window, 200 keys or more past its start
// (at least 410 keys into a 512-key tile), which the boolean mask blocks. Its tile must take the
// path that skips blocked keys (Task::v_finite: a 0 weight times NaN is NaN). No weights (their
// two passes keep the fused tile).
TEST_CASE("MHA decoding in tiles of 512 keys with every mask kind", "[attention][direct]") {
  attn_test::Rng rng(25);
  const std::size_t lks[] = {511, 512, 513, 1100, 1537};
  unsigned n = 0;
  for (std::size_t lk : lks) {
    for (unsigned bits : {0u, 1u, 3u, 5u, 7u, 9u, 17u, 33u, 39u, 45u, 63u}) {
      AttentionCase c;
      c.B = 2, c.Hq = c.Hkv = 1 + n / 3 % 3, c.Lq = 1, c.Lk = lk;
      c.Dk = n % 2 ? 64 : 24;
      c.Dv = std::size_t{80} >> (n % 4 % 3);  // 80, 40, 20, 80: whole vectors, not whole panels
      c.bshd = n % 5 == 0;
      c.seed = 1500 + n;
      c = with_mask(c, bits, rng);
      const bool poison = n % 3 == 0;
      const std::size_t begin = lk - 301;  // the window's first key
      if (poison) {
        c.causal = false, c.key_lengths = false;
        c.window = true, c.window_align = attn::CausalAlign::bottom_right;
        c.window_left = 300, c.window_right = 0;
        c.allowed = true, c.allowed_bcast_b = c.allowed_bcast_h = c.allowed_bcast_q = false;
      }
      INFO(c);
      attn_test::AttentionProblem p(c);
      if (poison) {
        REQUIRE(begin % 8 != 0);  // else no key before the window shares its 8-key block
        const std::size_t keys[2] = {begin - 1 - n % (begin % 8), begin + 200 + n % 50};
        auto v = p.v_view();
        auto allowed = p.allowed_view();
        for (std::size_t b = 0; b < c.B; ++b) {
          for (std::size_t h = 0; h < c.Hkv; ++h) {
            for (std::size_t j : keys) {
              v(b, h, j, 0) = attn_test::nan_f();
              allowed(b, h, 0, j) = 0;
            }
          }
        }
      }
      attn_test::AttentionResult want;
      REQUIRE(p.run(nullptr, false, &want).ok());
      if (poison) {
        for (float x : want.out)
          REQUIRE(std::isfinite(x));
      }
      attn_test::check_problem_everywhere(p, want, false, thread_counts());
      ++n;
    }
  }
}

TEST_CASE("decoding whose K and V exceed half of L3 (prefetched into L2 on some CPUs)",
          "[attention][direct]") {
  // Where CpuInfo::decode_prefetch_l2 holds, K and V beyond half of L3 take the scores kernel's
  // hints into L2 (DirectPrefetch::to_l2) and the V hint with them; the hints never change a
  // result (test_scores_direct.cpp), so this checks the driver's call of that form: GQA rows of
  // one KV head (the 4-row tile), and two heads with V packed on AVX-512 (Dv 80) under a causal
  // mask, both under the decoding key split. Elsewhere (and under qemu or valgrind, which report an
  // Intel CPU) these calls take the L1 hints of the 3001-key cases above: skipped, to save the CI's
  // emulated stages a minute.
  const attn::detail::CpuInfo& cpu = attn::detail::cpu_info();
  if (!cpu.decode_prefetch_l2) {
    WARN("no CpuInfo::decode_prefetch_l2 on this CPU: nothing to check");
    return;
  }
  const std::size_t half_l3 = cpu.l3_bytes / 2;
  AttentionCase gqa;
  gqa.Hq = 4;
  gqa.Hkv = 1;
  gqa.Dk = gqa.Dv = 64;
  gqa.Lk = half_l3 / ((gqa.Dk + gqa.Dv) * sizeof(float)) + 1001;
  gqa.seed = 91;
  AttentionCase packed_v;
  packed_v.Hq = packed_v.Hkv = 2;
  packed_v.Dk = 128;
  packed_v.Dv = 80;
  packed_v.Lk = half_l3 / (2 * (packed_v.Dk + packed_v.Dv) * sizeof(float)) + 777;
  packed_v.causal = true;
  packed_v.causal_align = attn::CausalAlign::bottom_right;
  packed_v.bshd = true;
  packed_v.seed = 92;
  for (const AttentionCase& c : {gqa, packed_v}) {
    INFO("Lk " << c.Lk << ", decode_prefetch_l2 " << cpu.decode_prefetch_l2);
    attn_test::check_attention_case_everywhere(c, {1, 2});
  }
}

TEST_CASE("attention: wide heads, a KV head's query heads in one task or split across tasks",
          "[attention][direct]") {
  // d = 256: on the packed path (9 rows x 8 heads) fewer query heads per task than share a KV
  // head (the per-task state budget); on the direct path (1 row x 4 heads) all of them in one
  // task and one pass (Plan::passes_per_task), whose scratch holds one pass's state.
  attn_test::Rng rng(25);
  unsigned n = 0;
  for (std::size_t lq : {1u, 9u}) {
    for (unsigned bits : {0u, 3u, 8u + 32u}) {
      AttentionCase c;
      c.Hq = lq == 1 ? 4 : 8;
      c.Hkv = 1;
      c.Lq = lq;
      c.Lk = 300;
      c.Dk = c.Dv = 256;
      c.weights = n % 2 == 0;
      c.seed = 500 + n;
      c = with_mask(c, bits, rng);
      attn_test::check_attention_case_everywhere(c, {1, 2});
      ++n;
    }
  }
}

TEST_CASE("attention: a mask of one query row per sequence broadcasts over the query rows",
          "[attention][mask]") {
  // The padding bias PyTorch and Hugging Face pass: the same bits as the mask written out for
  // every query row, on every ISA, for the additive and the boolean part, weights included, on
  // the small-problem path (Lk <= kSmallRowKeys), the tiled one and decoding (one query row).
  // (self_attention hands its mask to the same code; the fuzzer draws such masks for both.)
  const std::size_t B = 2, H = 3, d = 16;
  attn_test::Rng rng(27);
  const std::size_t shapes[][2] = {{5, 20}, {70, 67}, {1, 67}};  // Lq, Lk
  for (const auto& shape : shapes) {
    const std::size_t lq = shape[0], lk = shape[1];
    const auto q = rng.uniform_vec(B * H * lq * d), k = rng.uniform_vec(B * H * lk * d),
               v = rng.uniform_vec(B * H * lk * d);
    std::vector<float> bias = rng.uniform_vec(B * lk, -2.0f, 2.0f);
    std::vector<std::uint8_t> keep(B * lk);
    for (std::size_t j = 0; j < B * lk; ++j) {
      keep[j] = rng.uniform(0.0f, 1.0f) < 0.8f ? 1 : 0;
      if (j % 9 == 4) bias[j] = -INFINITY;
    }
    std::vector<float> full_bias(B * lq * lk);
    std::vector<std::uint8_t> full_keep(B * lq * lk);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < lq; ++i)
        for (std::size_t j = 0; j < lk; ++j) {
          full_bias[(b * lq + i) * lk + j] = bias[b * lk + j];
          full_keep[(b * lq + i) * lk + j] = keep[b * lk + j];
        }
    const auto tq = attn::make_bhsd<const float>(q.data(), B, H, lq, d);
    const auto tk = attn::make_bhsd<const float>(k.data(), B, H, lk, d);
    const auto tv = attn::make_bhsd<const float>(v.data(), B, H, lk, d);
    attn::AttentionOptions row, full;
    row.mask = attn::Mask()
                   .with_additive(attn::make_bhsd<const float>(bias.data(), B, 1, 1, lk))
                   .with_allowed(attn::make_bhsd<const std::uint8_t>(keep.data(), B, 1, 1, lk));
    full.mask =
        attn::Mask()
            .with_additive(attn::make_bhsd<const float>(full_bias.data(), B, 1, lq, lk))
            .with_allowed(attn::make_bhsd<const std::uint8_t>(full_keep.data(), B, 1, lq, lk));
    for (attn::Isa isa : attn_test::test_isas()) {
      INFO("isa " << attn::isa_name(isa) << ", Lq " << lq << ", Lk " << lk);
      attn::Context ctx = attn_test::make_context(isa);
      std::vector<float> want(B * H * lq * d), got(B * H * lq * d), ww(B * H * lq * lk),
          wg(B * H * lq * lk);
      full.weights = attn::make_bhsd(ww.data(), B, H, lq, lk);
      row.weights = attn::make_bhsd(wg.data(), B, H, lq, lk);
      REQUIRE(
          attn::attention(ctx, tq, tk, tv, attn::make_bhsd(want.data(), B, H, lq, d), full).ok());
      REQUIRE(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(got.data(), B, H, lq, d), row).ok());
      CHECK(got == want);
      CHECK(wg == ww);
      // Without weights (the decoding and tiled paths differ there).
      full.weights = row.weights = {};
      REQUIRE(
          attn::attention(ctx, tq, tk, tv, attn::make_bhsd(want.data(), B, H, lq, d), full).ok());
      REQUIRE(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(got.data(), B, H, lq, d), row).ok());
      CHECK(got == want);
    }
  }
}

TEST_CASE("attention: K broadcast over its keys (row stride 0) with few query rows",
          "[attention][direct]") {
  // A zero row stride keeps the packing path even with 4 rows per KV head: 4 heads stacked.
  const std::size_t hq = 4, lk = 77, d = 20;
  attn_test::Rng rng(26);
  const auto q = rng.uniform_vec(hq * d), k = rng.uniform_vec(d), v = rng.uniform_vec(lk * d);
  const attn::TensorView<const float> tk{k.data(), {1, 1, lk, d}, {0, 0, 0, 1}};
  const auto tq = attn::make_bhsd<const float>(q.data(), 1, hq, 1, d);
  const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, lk, d);
  std::vector<float> want(hq * d), got(hq * d);
  REQUIRE(attn::reference::attention(tq, tk, tv, attn::make_bhsd(want.data(), 1, hq, 1, d)).ok());
  // The bound of support/attention_case.hpp: |q|, |k|, |v| <= 1, scale 1/sqrt(d), so S <= sqrt(d).
  const double u = std::ldexp(1.0, -24);
  const double tol = 2 * u * (2.0 * (d + 2) * std::sqrt(double(d)) + 2.0 * lk + 8.0);
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    REQUIRE(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(got.data(), 1, hq, 1, d)).ok());
    for (std::size_t x = 0; x < got.size(); ++x)
      CHECK(std::fabs(got[x] - want[x]) <= tol);
  }
}

TEST_CASE("attention: sequences read backwards (row stride < 0) or broadcast (0) on every path",
          "[attention][strides]") {
  // Views may run backwards and inputs may broadcast (README "API"). The fused path reads Q in
  // place only with a positive row stride and otherwise packs it row by row; the decoding, key
  // split, small-problem and weights paths each form row pointers from the strides. q plain,
  // reversed or one row repeated (stride 0); k and v plain or reversed; out and weights reversed
  // or not; bidirectional and bottom-right causal. The reference reads the same views.
  // Tolerance: support/attention_case.hpp's bound with |q|, |k|, |v| <= 1 and scale 1/sqrt(d), so
  // S <= sqrt(d): |out - ref| <= 2 u (2 (d + 2) sqrt(d) + 2 Lk + 8), weights relative to each.
  struct Shape {
    std::size_t B, Hq, Hkv, Lq, Lk, d;
  };
  const Shape shapes[] = {
      {1, 2, 1, 5, 20, 16},     // small problem (Lk <= kSmallRowKeys) and tiny tiles
      {1, 2, 2, 60, 128, 64},   // one key tile: Q read in place when its stride is positive
      {1, 4, 2, 100, 300, 64},  // several key tiles, GQA, Q packed
      {1, 8, 2, 1, 700, 128},   // decoding: 4 rows per KV head, K read in place
      {2, 2, 2, 1, 2100, 32},   // decoding key split
  };
  const auto reversed = [](auto t) {
    t.data += (static_cast<std::ptrdiff_t>(t.shape[2]) - 1) * t.strides[2];
    t.strides[2] = -t.strides[2];
    return t;
  };
  const double u = std::ldexp(1.0, -24);
  for (const Shape& s : shapes) {
    attn_test::Rng rng(31);
    const auto q = rng.uniform_vec(s.B * s.Hq * s.Lq * s.d),
               k = rng.uniform_vec(s.B * s.Hkv * s.Lk * s.d),
               v = rng.uniform_vec(s.B * s.Hkv * s.Lk * s.d);
    const double tol = 2 * u * (2.0 * (s.d + 2) * std::sqrt(double(s.d)) + 2.0 * s.Lk + 8.0);
    for (int q_form = 0; q_form < 3; ++q_form) {
      for (bool kv_back : {false, true}) {
        for (bool out_back : {false, true}) {
          for (bool causal : {false, true}) {
            auto tq = attn::make_bhsd<const float>(q.data(), s.B, s.Hq, s.Lq, s.d);
            if (q_form == 1) tq = reversed(tq);
            if (q_form == 2) tq.strides[2] = 0;
            auto tk = attn::make_bhsd<const float>(k.data(), s.B, s.Hkv, s.Lk, s.d);
            auto tv = attn::make_bhsd<const float>(v.data(), s.B, s.Hkv, s.Lk, s.d);
            if (kv_back) {
              tk = reversed(tk);
              tv = reversed(tv);
            }
            const std::size_t n_out = s.B * s.Hq * s.Lq * s.d, n_w = s.B * s.Hq * s.Lq * s.Lk;
            std::vector<float> want(n_out), want_w(n_w);
            const auto out_view = [&](float* p) {
              const auto t = attn::make_bhsd(p, s.B, s.Hq, s.Lq, s.d);
              return out_back ? reversed(t) : t;
            };
            const auto weights_view = [&](float* p) {
              const auto t = attn::make_bhsd(p, s.B, s.Hq, s.Lq, s.Lk);
              return out_back ? reversed(t) : t;
            };
            attn::AttentionOptions o;
            if (causal) o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
            o.weights = weights_view(want_w.data());
            REQUIRE(attn::reference::attention(tq, tk, tv, out_view(want.data()), o).ok());
            for (attn::Isa isa : attn_test::test_isas()) {
              std::vector<float> first;
              for (int threads : {1, 2, 3}) {
                INFO("isa " << attn::isa_name(isa) << " threads " << threads << " B " << s.B
                            << " Hq " << s.Hq << " Hkv " << s.Hkv << " Lq " << s.Lq << " Lk "
                            << s.Lk << " d " << s.d << " q form " << q_form << " k and v back "
                            << kv_back << " out back " << out_back << " causal " << causal);
                attn::Context ctx = attn_test::make_context(isa, threads);
                std::vector<float> got(n_out, -7.0f), with_w(n_out, -7.0f), w(n_w, -7.0f);
                attn::AttentionOptions ow = o;
                ow.weights = {};
                REQUIRE(attn::attention(ctx, tq, tk, tv, out_view(got.data()), ow).ok());
                ow.weights = weights_view(w.data());
                REQUIRE(attn::attention(ctx, tq, tk, tv, out_view(with_w.data()), ow).ok());
                std::size_t bad = 0;
                for (std::size_t e = 0; e < n_out; ++e) {
                  bad += !(std::fabs(double(got[e]) - want[e]) <= tol);
                  bad += !(std::fabs(double(with_w[e]) - want[e]) <= tol);
                }
                for (std::size_t e = 0; e < n_w; ++e)
                  bad += !(std::fabs(double(w[e]) - want_w[e]) <= tol * want_w[e] + 1e-30);
                CHECK(bad == 0);
                if (threads == 1) first = got;
                CHECK(got == first);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("decoding: keys that a mask blocks are never read, attended non-finite V is IEEE",
          "[attention][direct][ieee]") {
  // One KV head shared by 4 query heads, 300 keys: one query row (4 rows per KV head) takes the
  // direct path, two (8 rows) the packed one; both must hide blocked NaN and inf.
  for (attn::Isa isa : attn_test::test_isas()) {
    for (std::size_t lq : {1u, 2u}) {
      INFO("isa " << attn::isa_name(isa) << " Lq " << lq);
      attn::Context ctx = attn_test::make_context(isa);
      const std::size_t hq = 4, lk = 300, d = 24;
      attn_test::Rng rng(6);
      auto q = rng.uniform_vec(hq * lq * d), k = rng.uniform_vec(lk * d),
           v = rng.uniform_vec(lk * d);
      std::vector<float> out(hq * lq * d);
      const auto tq = attn::make_bhsd<const float>(q.data(), 1, hq, lq, d);
      const auto tk = attn::make_bhsd<const float>(k.data(), 1, 1, lk, d);
      const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, lk, d);
      const auto to = attn::make_bhsd(out.data(), 1, hq, lq, d);
      k[250 * d + 1] = attn_test::nan_f();  // hidden by key lengths of 200
      v[260 * d + 3] = attn_test::inf_f();
      const std::int32_t len = 200;
      attn::AttentionOptions o;
      o.mask = attn::Mask::bidirectional().with_key_lengths(&len);
      REQUIRE(attn::attention(ctx, tq, tk, tv, to, o).ok());
      for (float x : out)
        CHECK(std::isfinite(x));
      // The last key holds inf in v, bottom-right causal hides it from every row but the last.
      k[250 * d + 1] = 0.5f;
      v[260 * d + 3] = 0.5f;
      v[(lk - 1) * d + 3] = attn_test::inf_f();
      o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
      REQUIRE(attn::attention(ctx, tq, tk, tv, to, o).ok());
      for (std::size_t h = 0; h < hq; ++h) {
        for (std::size_t i = 0; i < lq; ++i) {
          for (std::size_t x = 0; x < d; ++x) {
            const float y = out[(h * lq + i) * d + x];
            CHECK(std::isinf(y) == (i + 1 == lq && x == 3));
            if (!(i + 1 == lq && x == 3)) CHECK(std::isfinite(y));
          }
        }
      }
    }
  }
}

TEST_CASE("decoding key split: a chunk of additive -inf keys carries 0 * inf like the unsplit path",
          "[attention][split][ieee]") {
  // An additive -inf is arithmetic: the key gets weight 0 and 0 * inf in its v is NaN (README
  // "Masks"), in the reference and in the unsplit path, whose O carries the NaN on. One query row
  // against 2047 keys (no split) and 2048 and 4096 (chunks of 1024 keys, 1056 on NEON): keys
  // [0, 1056) get -inf, so every key of the first chunk is blocked and its partial has m = -inf,
  // l = 0 and O[0] = NaN from v[5][0] = inf; the merge must keep that NaN (it once skipped such a
  // chunk). Column 0 is NaN, the others finite; threads 1 and 2 bit-identical.
  for (attn::Isa isa : attn_test::test_isas()) {
    for (std::size_t lk : {2047u, 2048u, 4096u}) {
      const std::size_t d = 16;
      attn_test::Rng rng(11);
      auto q = rng.uniform_vec(d), k = rng.uniform_vec(lk * d), v = rng.uniform_vec(lk * d);
      v[5 * d + 0] = attn_test::inf_f();
      std::vector<float> bias(lk, 0.0f);
      std::fill(bias.begin(), bias.begin() + 1056, -attn_test::inf_f());
      attn::AttentionOptions o;
      o.mask = attn::Mask::bidirectional().with_additive(
          attn::make_bhsd<const float>(bias.data(), 1, 1, 1, lk));
      std::vector<float> ref(d);
      REQUIRE(attn::reference::attention(attn::make_bhsd<const float>(q.data(), 1, 1, 1, d),
                                         attn::make_bhsd<const float>(k.data(), 1, 1, lk, d),
                                         attn::make_bhsd<const float>(v.data(), 1, 1, lk, d),
                                         attn::make_bhsd(ref.data(), 1, 1, 1, d), o)
                  .ok());
      CHECK(std::isnan(ref[0]));
      std::vector<float> first;
      for (int t : {1, 2}) {
        INFO("isa " << attn::isa_name(isa) << " Lk " << lk << " threads " << t);
        attn::Context ctx = attn_test::make_context(isa, t);
        std::vector<float> out(d, 0.25f);
        REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, 1, d),
                                attn::make_bhsd<const float>(k.data(), 1, 1, lk, d),
                                attn::make_bhsd<const float>(v.data(), 1, 1, lk, d),
                                attn::make_bhsd(out.data(), 1, 1, 1, d), o)
                    .ok());
        CHECK(std::isnan(out[0]));
        for (std::size_t x = 1; x < d; ++x)
          CHECK(std::isfinite(out[x]));
        if (first.empty()) {
          first = out;
        } else {
          CHECK(std::memcmp(out.data(), first.data(), d * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("attention keeps O(n) memory: Lq = Lk = 32768 in under 64 MiB of scratch",
          "[attention][memory]") {
  // One head, d = 64: the full problem on the best ISA (about 275 GFLOP: a second natively, hours
  // under an emulator or valgrind, where ATTN_TEST_EMULATED is set and the queries are cut to
  // 112 rows, 2 or 3 query tiles (56 rows on AVX-512, 48 elsewhere), at least one per thread,
  // which need the same scratch: K packed once for all 32768 keys plus per-thread tiles, and no
  // key split; 8 x 56 rows took 144 s of the CI's qemu Haswell stage; cut the same way under a
  // sanitizer, where the whole problem took 35 s of the ASan stage on the Zen 5),
  // then a decoding row against the same keys on every ISA.
  const std::size_t n = 32768, d = 64;
  const std::size_t lq = attn_test::emulated() || attn_test::sanitized() ? 2 * 56 : n;
  attn_test::Rng rng(77);
  const auto k = rng.uniform_vec(n * d), v = rng.uniform_vec(n * d);
  const auto tk = attn::make_bhsd<const float>(k.data(), 1, 1, n, d);
  const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, n, d);
  {
    attn::Context ctx = attn_test::make_context(attn::best_isa(), 2);
    const auto q = rng.uniform_vec(lq * d);
    std::vector<float> out(lq * d);
    REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, lq, d), tk, tv,
                            attn::make_bhsd(out.data(), 1, 1, lq, d))
                .ok());
    INFO("Lq " << lq << ", peak scratch " << ctx.peak_scratch_bytes() << " bytes");
    CHECK(ctx.peak_scratch_bytes() < 64u * 1024 * 1024);
    CHECK(ctx.peak_scratch_bytes() >= n * d * sizeof(float));  // K^T packed once, whole
    for (std::size_t i = 0; i < lq * d; i += 4099)
      CHECK(std::isfinite(out[i]));
  }
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    const auto q = rng.uniform_vec(d);
    std::vector<float> out(d), ref(d);
    const auto tq = attn::make_bhsd<const float>(q.data(), 1, 1, 1, d);
    REQUIRE(attn::attention(ctx, tq, tk, tv, attn::make_bhsd(out.data(), 1, 1, 1, d)).ok());
    CHECK(ctx.peak_scratch_bytes() < 64u * 1024 * 1024);
    REQUIRE(attn::reference::attention(tq, tk, tv, attn::make_bhsd(ref.data(), 1, 1, 1, d)).ok());
    // The bound of support/attention_case.hpp: |q|, |k|, |v| <= 1, scale 1/8, so S <= 8.
    const double u = std::ldexp(1.0, -24);
    const double tol = 2 * u * (2.0 * (d + 2) * 8.0 + 2.0 * n + 8.0);
    for (std::size_t x = 0; x < d; ++x)
      CHECK(std::fabs(out[x] - ref[x]) <= tol);
  }
}

TEST_CASE("attention output is bit-identical for any thread count", "[attention][threads]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    AttentionCase c;
    c.B = 2;
    c.Hq = 6;
    c.Hkv = 2;
    c.Lq = 77;
    c.Lk = 93;
    c.Dk = 40;
    c.Dv = 24;
    c.causal = true;
    c.key_lengths = true;
    c.weights = true;
    AttentionCase decode = c;  // the key-split path
    decode.B = 1;
    decode.Hq = 2;
    decode.Hkv = 1;
    decode.Lq = 1;
    decode.Lk = 4099;
    decode.causal_align = attn::CausalAlign::bottom_right;
    decode.key_lengths = false;
    decode.weights = false;
    AttentionResult one, one_decode;
    for (int threads : {1, 2, 3, 7}) {
      INFO("isa " << attn::isa_name(isa) << " threads " << threads);
      attn::Context ctx = attn_test::make_context(isa, threads);
      AttentionResult r, rd;
      check_attention_case(ctx, c, &r);
      check_attention_case(ctx, decode, &rd);
      if (threads == 1) {
        one = r;
        one_decode = rd;
      } else {
        CHECK(std::memcmp(rd.out.data(), one_decode.out.data(), rd.out.size() * 4) == 0);
        CHECK(std::memcmp(r.out.data(), one.out.data(), r.out.size() * 4) == 0);
        CHECK(std::memcmp(r.weights.data(), one.weights.data(), r.weights.size() * 4) == 0);
      }
    }
  }
}

TEST_CASE("attention: fully masked rows are zeros, weights rows sum to 1", "[attention][mask]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    const std::size_t L = 5, D = 3;
    attn_test::Rng rng(4);
    auto q = rng.uniform_vec(L * D), k = rng.uniform_vec(L * D), v = rng.uniform_vec(L * D);
    std::vector<float> out(L * D, 9.0f), w(L * L, 9.0f);
    attn::AttentionOptions o;
    // bottom-right causal with Lq > Lk: the first queries see nothing.
    const auto tk = attn::make_bhsd<const float>(k.data(), 1, 1, 2, D);
    const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, 2, D);
    o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
    o.weights = attn::make_bhsd(w.data(), 1, 1, L, 2);
    REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, L, D), tk, tv,
                            attn::make_bhsd(out.data(), 1, 1, L, D), o)
                .ok());
    for (std::size_t i = 0; i < L; ++i) {
      const double sum = double(w[i * 2]) + w[i * 2 + 1];
      if (i < 3) {  // query i sees keys j <= i + 2 - 5
        CHECK(sum == 0.0);
        for (std::size_t x = 0; x < D; ++x)
          CHECK(out[i * D + x] == 0.0f);
      } else {
        CHECK(sum == Approx(1.0).epsilon(1e-6));
      }
    }
    // Lk == 0: every row is fully masked.
    std::fill(out.begin(), out.end(), 9.0f);
    REQUIRE(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), 1, 1, L, D),
                            attn::make_bhsd<const float>(nullptr, 1, 1, 0, D),
                            attn::make_bhsd<const float>(nullptr, 1, 1, 0, D),
                            attn::make_bhsd(out.data(), 1, 1, L, D), {})
                .ok());
    for (float x : out)
      CHECK(x == 0.0f);
    // Lq == 0: nothing to write, valid.
    CHECK(attn::attention(ctx, attn::make_bhsd<const float>(nullptr, 1, 1, 0, D), tk, tv,
                          attn::make_bhsd<float>(nullptr, 1, 1, 0, D), {})
              .ok());
  }
}

TEST_CASE("attention: NaN and inf propagate, blocked keys are never read", "[attention][ieee]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa);
    const std::size_t L = 6, D = 4;
    attn_test::Rng rng(5);
    auto q = rng.uniform_vec(L * D), k = rng.uniform_vec(L * D), v = rng.uniform_vec(L * D);
    std::vector<float> out(L * D);
    const auto tq = attn::make_bhsd<const float>(q.data(), 1, 1, L, D);
    const auto tk = attn::make_bhsd<const float>(k.data(), 1, 1, L, D);
    const auto tv = attn::make_bhsd<const float>(v.data(), 1, 1, L, D);
    const auto to = attn::make_bhsd(out.data(), 1, 1, L, D);
    // NaN in q row 2: that row is NaN, the others are not.
    q[2 * D + 1] = attn_test::nan_f();
    REQUIRE(attn::attention(ctx, tq, tk, tv, to, {}).ok());
    for (std::size_t i = 0; i < L; ++i) {
      for (std::size_t x = 0; x < D; ++x)
        CHECK(std::isnan(out[i * D + x]) == (i == 2));
    }
    q[2 * D + 1] = 0.5f;
    // NaN and inf in k and v of key 5, which causal attention hides from queries 0..4 and
    // key lengths hide from everyone.
    k[5 * D] = attn_test::nan_f();
    v[5 * D + 2] = attn_test::inf_f();
    attn::AttentionOptions o;
    o.mask = attn::Mask::causal();
    REQUIRE(attn::attention(ctx, tq, tk, tv, to, o).ok());
    for (std::size_t i = 0; i < L; ++i) {
      for (std::size_t x = 0; x < D; ++x)
        CHECK(std::isnan(out[i * D + x]) == (i == 5));
    }
    const std::int32_t len = 5;
    o.mask = attn::Mask::bidirectional().with_key_lengths(&len);
    REQUIRE(attn::attention(ctx, tq, tk, tv, to, o).ok());
    for (float x : out)
      CHECK(std::isfinite(x));
    // inf in v of an attended key: the output column is inf or NaN as IEEE says.
    k[5 * D] = 0.0f;
    REQUIRE(attn::attention(ctx, tq, tk, tv, to, {}).ok());
    for (std::size_t i = 0; i < L; ++i)
      CHECK(std::isinf(out[i * D + 2]));
  }
}

namespace {

// [B, H, Lq, Lk] attention of Dk 4, Dv 3 under a causal mask (row i attends keys j <= i) and an
// additive bias, into which poison() puts NaN and inf.
struct Poisoned {
  static constexpr std::size_t B = 2, H = 2, Lq = 4, Lk = 5, Dk = 4, Dv = 3;
  std::vector<float> q, k, v, bias;
  Poisoned() {
    attn_test::Rng rng(31);
    q = rng.uniform_vec(B * H * Lq * Dk);
    k = rng.uniform_vec(B * H * Lk * Dk);
    v = rng.uniform_vec(B * H * Lk * Dv);
    bias = rng.uniform_vec(B * H * Lq * Lk, -0.5f, 0.5f);
    ke(1, 1, 0, 0) = 0.75f;
  }
  static std::size_t row(std::size_t b, std::size_t h, std::size_t i) {
    return (b * H + h) * Lq + i;
  }
  float& qe(std::size_t b, std::size_t h, std::size_t i, std::size_t x) {
    return q[row(b, h, i) * Dk + x];
  }
  float& ke(std::size_t b, std::size_t h, std::size_t j, std::size_t x) {
    return k[((b * H + h) * Lk + j) * Dk + x];
  }
  float& be(std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
    return bias[row(b, h, i) * Lk + j];
  }
  // NaN or +inf in the scores of six query rows, returned as row(b, h, i); and NaN where the
  // causal mask blocks it (key 4 of k, which no row attends, and a bias entry above the diagonal).
  std::vector<std::size_t> poison() {
    qe(0, 1, 2, 1) = attn_test::nan_f();  // NaN in q
    ke(1, 0, 2, 3) = attn_test::nan_f();  // NaN in key 2: rows 2 and 3 attend it, 0 and 1 not
    be(0, 0, 1, 0) = attn_test::nan_f();  // NaN in the bias
    be(1, 1, 3, 1) = attn_test::inf_f();  // +inf in the bias: inf - inf
    // +inf in q against a positive k (the constructor's 0.75): row 0 attends key 0 only, whose
    // score is +inf.
    qe(1, 1, 0, 0) = attn_test::inf_f();
    // Blocked by the mask: never part of a score.
    ke(0, 0, 4, 0) = attn_test::nan_f();
    be(1, 0, 0, 3) = attn_test::nan_f();
    return {row(0, 1, 2), row(1, 0, 2), row(1, 0, 3), row(0, 0, 1), row(1, 1, 3), row(1, 1, 0)};
  }
  attn::TensorView<const float> tq() const {
    return attn::make_bhsd<const float>(q.data(), B, H, Lq, Dk);
  }
  attn::TensorView<const float> tk() const {
    return attn::make_bhsd<const float>(k.data(), B, H, Lk, Dk);
  }
  attn::TensorView<const float> tv() const {
    return attn::make_bhsd<const float>(v.data(), B, H, Lk, Dv);
  }
  attn::AttentionOptions options(std::vector<float>* w) const {
    attn::AttentionOptions o;
    o.mask =
        attn::Mask::causal().with_additive(attn::make_bhsd<const float>(bias.data(), B, H, Lq, Lk));
    if (w != nullptr) {
      w->assign(B * H * Lq * Lk, 9.0f);
      o.weights = attn::make_bhsd(w->data(), B, H, Lq, Lk);
    }
    return o;
  }
};

bool row_all(const std::vector<float>& m, std::size_t r, std::size_t n, bool (*pred)(float)) {
  for (std::size_t x = 0; x < n; ++x)
    if (!pred(m[r * n + x])) return false;
  return true;
}

}  // namespace

// README "Masks" (and "Guarantees", NaN, inf and fully masked rows): NaN in an attended score,
// from q, k or the additive bias, makes that output row and weights row NaN, and so does a +inf
// score (inf - inf); NaN in the k row of a key the mask blocks never reaches the output, nor does
// a bias entry of a blocked key (the bias is added to the scores of the keys left). The
// reference (include/attn/reference.hpp, the oracle) shares the contract: its other rows are the
// same bits as without the NaN, with weights and without. attn::attention on every ISA, weights
// and not, gives NaN in the same rows (out and weights) and elsewhere stays within the tolerance of
// tests/support/attention_case.hpp of the reference without the NaN (a call this small runs on one
// thread whatever the Context asks; the fused-path test below runs 1, 2 and 3).
TEST_CASE("reference::attention and attention: a NaN or +inf score makes only its row NaN",
          "[attention][ieee][reference]") {
  using P = Poisoned;
  const std::size_t rows = P::B * P::H * P::Lq;
  Poisoned clean, bad;
  const std::vector<std::size_t> nan_rows = bad.poison();
  const auto is_nan_row = [&](std::size_t r) {
    return std::find(nan_rows.begin(), nan_rows.end(), r) != nan_rows.end();
  };
  const auto nan = [](float x) { return std::isnan(x); };
  const auto finite = [](float x) { return std::isfinite(x); };

  std::vector<float> want(rows * P::Dv), want_w;
  REQUIRE(attn::reference::attention(clean.tq(), clean.tk(), clean.tv(),
                                     attn::make_bhsd(want.data(), P::B, P::H, P::Lq, P::Dv),
                                     clean.options(&want_w))
              .ok());
  // NaN rows where poisoned; elsewhere finite and within tol of the clean run (tol 0: the same),
  // the weights within tol relative to each weight (attention_case.hpp).
  const auto check_rows = [&](const std::vector<float>& out, const std::vector<float>& w,
                              bool weights, double tol) {
    for (std::size_t r = 0; r < rows; ++r) {
      INFO("row " << r);
      if (is_nan_row(r)) {
        CHECK(row_all(out, r, P::Dv, nan));
        if (weights) CHECK(row_all(w, r, P::Lk, nan));
        continue;
      }
      CHECK(row_all(out, r, P::Dv, finite));
      for (std::size_t x = 0; x < P::Dv; ++x)
        CHECK(std::fabs(out[r * P::Dv + x] - want[r * P::Dv + x]) <= tol);
      if (!weights) continue;
      for (std::size_t j = 0; j < P::Lk; ++j)
        CHECK(std::fabs(w[r * P::Lk + j] - want_w[r * P::Lk + j]) <=
              tol * std::fabs(want_w[r * P::Lk + j]) + (tol > 0.0 ? 1e-30 : 0.0));
    }
  };
  for (bool weights : {true, false}) {
    INFO("reference, weights " << weights);
    std::vector<float> out(rows * P::Dv, 9.0f), w;
    REQUIRE(attn::reference::attention(bad.tq(), bad.tk(), bad.tv(),
                                       attn::make_bhsd(out.data(), P::B, P::H, P::Lq, P::Dv),
                                       bad.options(weights ? &w : nullptr))
                .ok());
    check_rows(out, w, weights, 0.0);
  }

  // attention_case.hpp's bound: 2 u (2 (Dk + 2) S + 2 Lk + 8) V, with q, k, v in [-1, 1] and the
  // bias in [-0.5, 0.5]: S <= scale Dk + 0.5 (scale = 1 / sqrt(Dk)), V <= 1.
  const double u = std::ldexp(1.0, -24);
  const double S = 1.0 / std::sqrt(double(P::Dk)) * P::Dk + 0.5;
  const double tol = 2.0 * u * (2.0 * (P::Dk + 2) * S + 2.0 * P::Lk + 8.0);
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx = attn_test::make_context(isa);
    for (bool weights : {true, false}) {
      INFO("isa " << attn::isa_name(isa) << ", weights " << weights);
      std::vector<float> out(rows * P::Dv, 9.0f), w;
      REQUIRE(attn::attention(ctx, bad.tq(), bad.tk(), bad.tv(),
                              attn::make_bhsd(out.data(), P::B, P::H, P::Lq, P::Dv),
                              bad.options(weights ? &w : nullptr))
                  .ok());
      check_rows(out, w, weights, tol);
    }
  }
}

// README "Masks" and "Guarantees" (NaN, inf and fully masked rows), on the fused kernel (dozens
// of query rows and keys; and a decoding step of 2100 keys, split into key chunks without
// weights): NaN or inf in the k and v rows of keys the boolean mask blocks cannot reach the
// output (a key tile whose V is not finite takes the accumulation that skips blocked keys), and
// a NaN or +inf score (from q or the bias) makes that row NaN in out and in the weights. Against
// reference::attention, every ISA, threads 1, 2 and 3, weights on and off.
TEST_CASE("attention, fused path: blocked non-finite V stays out, NaN scores make NaN rows",
          "[attention][ieee][mask]") {
  struct Shape {
    std::size_t B, Hq, Hkv, Lq, Lk, Dk, Dv;
  };
  // Dv 5: V packed; Dv 64: V read in place. 2 x 4 x 64 x 100 is above the 2 MFLOP at which
  // threads start. 1 x 2 x 1 x 2100: two query rows per KV head (direct K), keys split in 3.
  const Shape shapes[] = {
      {2, 4, 2, 64, 100, 32, 5}, {2, 4, 2, 64, 100, 32, 64}, {1, 2, 1, 1, 2100, 8, 16}};
  unsigned n = 0;
  for (const Shape& s : shapes) {
    for (bool structural : {false, true}) {
      AttentionCase c;
      c.B = s.B, c.Hq = s.Hq, c.Hkv = s.Hkv, c.Lq = s.Lq, c.Lk = s.Lk, c.Dk = s.Dk, c.Dv = s.Dv;
      c.allowed = true;  // random keys blocked, and (Lq > 1) one fully blocked row
      c.weights = true;
      // Bottom-right causal (tiles it cuts) and an additive part, or the boolean part alone.
      c.causal = c.additive = structural;
      c.causal_align = attn::CausalAlign::bottom_right;
      c.seed = 800 + n++;
      INFO(c);
      attn_test::AttentionProblem p(c);
      auto q = p.q_view(), k = p.k_view(), v = p.v_view();
      auto allowed = p.allowed_view();
      // Three keys blocked for every query row by the boolean mask, in different key tiles (and
      // chunks), their V rows NaN, +inf and -inf and the first's K row NaN.
      const std::size_t poisoned[3] = {3, s.Lk / 2 + 1, s.Lk - 2};
      const float poison[3] = {attn_test::nan_f(), attn_test::inf_f(), -attn_test::inf_f()};
      for (std::size_t b = 0; b < s.B; ++b) {
        for (std::size_t m = 0; m < 3; ++m) {
          const std::size_t j = poisoned[m];
          for (std::size_t h = 0; h < s.Hq; ++h)
            for (std::size_t i = 0; i < s.Lq; ++i)
              allowed(b, h, i, j) = 0;
          for (std::size_t hk = 0; hk < s.Hkv; ++hk) {
            for (std::size_t x = 0; x < s.Dv; ++x)
              v(b, hk, j, x) = poison[m];
            if (m == 0) k(b, hk, j, 0) = attn_test::nan_f();
          }
        }
      }
      // A NaN in q: row (0, 1, Lq / 2) is NaN. With the additive part, a +inf bias on a key
      // the row attends: row (B - 1, 0, Lq - 2 or 0) is NaN (inf - inf).
      const std::size_t nan_row = s.Lq / 2, inf_row = s.Lq > 1 ? s.Lq - 2 : 0;
      q(0, 1, nan_row, 1) = attn_test::nan_f();
      const std::size_t inf_key = s.Lk / 4;
      allowed(s.B - 1, 0, inf_row, inf_key) = 1;
      if (structural) p.bias_view()(s.B - 1, 0, inf_row, inf_key) = attn_test::inf_f();
      AttentionResult want;
      REQUIRE(p.run(nullptr, true, &want).ok());
      // The reference itself: NaN rows exactly where planted; the poisoned keys' weights 0.
      std::size_t unexpected = 0;
      for (std::size_t b = 0; b < s.B; ++b) {
        for (std::size_t h = 0; h < s.Hq; ++h) {
          for (std::size_t i = 0; i < s.Lq; ++i) {
            const bool nan = (b == 0 && h == 1 && i == nan_row) ||
                             (structural && b == s.B - 1 && h == 0 && i == inf_row);
            const std::size_t row = (b * s.Hq + h) * s.Lq + i;
            for (std::size_t x = 0; x < s.Dv; ++x)
              unexpected += std::isnan(want.out[row * s.Dv + x]) != nan;
            for (std::size_t j = 0; j < s.Lk; ++j)
              unexpected += std::isnan(want.weights[row * s.Lk + j]) != nan;
            for (std::size_t j : poisoned)
              unexpected += !nan && want.weights[row * s.Lk + j] != 0.0f;
          }
        }
      }
      CHECK(unexpected == 0);
      attn_test::check_problem_everywhere(p, want, true, thread_counts());
    }
  }
}

// K's panels (and V's rows, where V is packed: Dv 5) are packed only where some query row of the
// (batch, KV head) may attend them (MaskRows::hull: a padded sequence's key length, a window's
// first and last keys). Each padded call runs on a Context whose scratch the call before filled
// with the packs of other data over every key, so that reading a panel it did not pack shows.
TEST_CASE("attention packs only the keys some row may attend (key lengths and windows)",
          "[attention][mask]") {
  attn_test::Rng rng(27);
  unsigned n = 0;
  for (std::size_t dv : {64, 5}) {
    for (bool window : {false, true}) {
      AttentionCase full;
      full.B = 4, full.Hq = 4, full.Hkv = 2, full.Lq = 70, full.Lk = 300, full.Dk = 32,
      full.Dv = dv;
      full.seed = 2700 + n++;
      AttentionCase padded = full;
      padded.seed = 2700 + n++;
      padded.key_lengths = true;  // random lengths, the last batch entry none
      padded.window = window;
      padded.window_left = 40 + rng.index(40), padded.window_right = rng.index(20);
      padded.window_align = attn::CausalAlign::bottom_right;
      INFO(padded);
      const attn_test::AttentionProblem pf(full), pp(padded);
      AttentionResult want;
      REQUIRE(pp.run(nullptr, false, &want).ok());
      for (attn::Isa isa : attn_test::test_isas()) {
        for (int threads : thread_counts()) {
          INFO("isa " << attn::isa_name(isa) << " threads " << threads);
          attn::Context ctx = attn_test::make_context(isa, threads);
          AttentionResult first, got;
          REQUIRE(pf.run(&ctx, false, &first).ok());
          REQUIRE(pp.run(&ctx, false, &got).ok());
          pp.compare(got, want);
        }
      }
    }
  }
}

// A task asks whether the V rows of each tile its mask cuts are finite (Task::v_finite), and a
// thread remembers the rows of a KV head it has found finite so that its next tasks skip them.
// One V row per KV head holds a NaN that the first query tiles' rows never attend and later
// ones do: a row that does not attend it must stay finite (a 0 weight times NaN is NaN), one that
// does is NaN in that column. Causal: each query tile's keys extend the last one's; a window:
// they move, so a remembered range is extended at its end or dropped. The rows (150, 60 for the
// KV heads of batch 0, 30, 170 for batch 1) lie past the first query tile (at most 56 rows on
// every ISA) and within a later one, but 30: with one KV head, batch 1's first task asks of rows
// that one thread found finite for batch 0's, so that the batch must be part of what is
// remembered. A failed check remembered would show in batch 0's KV head 1 under the window:
// its third query tile's rows more than 70 past the NaN. Dv 32: V in place on AVX-512 and AVX2,
// Dv 5: packed.
TEST_CASE("attention: a thread remembers the V rows it found finite and never a non-finite one",
          "[attention][ieee][mask]") {
  unsigned n = 0;
  for (std::size_t dv : {32, 5}) {
    for (std::size_t hkv : {1, 2}) {
      for (bool window : {false, true}) {
        attn_test::AttentionCase c;
        c.B = 2, c.Hq = 2 * hkv, c.Hkv = hkv, c.Lq = c.Lk = 200, c.Dk = 16, c.Dv = dv;
        c.causal = !window;
        c.window = window, c.window_left = 70, c.window_right = 0;
        c.seed = 900 + n++;
        INFO(c);
        attn_test::AttentionProblem p(c);
        auto v = p.v_view();
        const std::size_t poisoned[2][2] = {{150, 60}, {30, 170}};
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t hk = 0; hk < hkv; ++hk)
            v(b, hk, poisoned[b][hk], 0) = attn_test::nan_f();
        attn_test::AttentionResult want;
        REQUIRE(p.run(nullptr, false, &want).ok());
        // The reference: column 0 is NaN exactly in the rows that attend their head's NaN row.
        std::size_t unexpected = 0;
        for (std::size_t b = 0; b < 2; ++b) {
          for (std::size_t h = 0; h < c.Hq; ++h) {
            const std::size_t j = poisoned[b][h / 2];
            for (std::size_t i = 0; i < c.Lq; ++i) {
              const bool attends = i >= j && (!window || i - j <= c.window_left);
              const float* out = &want.out[((b * c.Hq + h) * c.Lq + i) * dv];
              for (std::size_t x = 0; x < dv; ++x)
                unexpected += std::isnan(out[x]) != (attends && x == 0);
            }
          }
        }
        CHECK(unexpected == 0);
        attn_test::check_problem_everywhere(p, want, false, thread_counts());
      }
    }
  }
}

// README "Guarantees": "Dk == 0 gives uniform weights over the keys left; Dv == 0 still writes
// the weights". Every mask (with_mask), on the latency path (Lk 4), the fused path (with Dv == 0
// K in place or packed: 2 or 20 query rows; with Dk == 0 always packed, having no elements), the
// decoding split (2100 keys, no weights), GQA, BSHD views.
TEST_CASE("attention with Dk == 0 or Dv == 0 matches the reference on every path", "[attention]") {
  attn_test::Rng rng(31);
  unsigned n = 0;
  for (const bool no_dk : {true, false}) {
    for (std::size_t lq : {1u, 2u, 20u}) {
      for (std::size_t lk : {4u, 40u, 2100u}) {
        if (lk > 1000 && lq > 2) continue;
        AttentionCase c;
        c.B = 2, c.Hq = 4, c.Hkv = 2, c.Lq = lq, c.Lk = lk;
        c.Dk = no_dk ? 0 : 5;
        c.Dv = no_dk ? 7 : 0;
        c.bshd = n % 2 == 1;
        c.weights = !no_dk || n % 3 != 2;  // Dv == 0: the weights are all it writes
        c.seed = 700 + n;
        c = with_mask(c, n * 53 % 256, rng);
        attn_test::check_attention_case_everywhere(c, thread_counts());
        ++n;
      }
    }
  }
}

// README "Guarantees" (NaN, inf and fully masked rows): "Dk == 0 gives uniform weights over the
// keys left", so out is the mean of the attended V rows; decoding shapes (at most 4 query rows
// per KV head), with and without the key split, against reference::attention, on every ISA,
// threads 1, 2 and 3, weights on and off. q and k have no elements: the driver takes them as null
// data with row stride 0 (attention_driver.hpp, driver_view), whatever the caller's strides, so
// K is never read in place here.
TEST_CASE("attention with Dk == 0 and decoding shapes is the mean of the attended V rows",
          "[attention]") {
  unsigned n = 0;
  for (std::size_t lk : {300u, 2100u}) {
    for (std::size_t lq : {1u, 2u}) {
      // BSHD views with padded rows.
      AttentionCase c;
      c.B = 2, c.Hq = 4, c.Hkv = 2, c.Lq = lq, c.Lk = lk, c.Dk = 0, c.Dv = 24;
      c.bshd = true;
      c.causal = n % 2 == 1;
      c.causal_align = attn::CausalAlign::bottom_right;
      c.key_lengths = true;
      c.weights = true;
      c.seed = 900 + n++;
      attn_test::check_attention_case_everywhere(c, thread_counts());

      // q and k null: the mean of V's first `len` rows, written out.
      const std::size_t B = 2, Hq = 4, Hkv = 2, dv = 24;
      attn_test::Rng rng(c.seed);
      const auto v = rng.uniform_vec(B * Hkv * lk * dv);
      const std::int32_t lens[2] = {static_cast<std::int32_t>(lk / 3), 1};
      const attn::TensorView<const float> tq{nullptr, {B, Hq, lq, 0}, {0, 0, 1, 1}};
      const attn::TensorView<const float> tk{nullptr, {B, Hkv, lk, 0}, {0, 0, 1, 1}};
      const auto tv = attn::make_bhsd<const float>(v.data(), B, Hkv, lk, dv);
      attn::AttentionOptions o;
      o.mask = attn::Mask::bidirectional().with_key_lengths(lens);
      std::vector<float> want(B * Hq * lq * dv, -7.0f);
      REQUIRE(attn::reference::attention(tq, tk, tv, attn::make_bhsd(want.data(), B, Hq, lq, dv), o)
                  .ok());
      std::size_t not_mean = 0;
      for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < Hq; ++h) {
          for (std::size_t x = 0; x < dv; ++x) {
            double mean = 0.0;
            for (std::int32_t j = 0; j < lens[b]; ++j)
              mean += tv(b, h / 2, static_cast<std::size_t>(j), x);
            mean /= lens[b];
            // The reference's double sum of len terms (|v| <= 1, weights 1/len), rounded once to
            // float: half an ulp of the mean plus len units of 2^-53.
            const double tol_ref =
                std::ldexp(std::fabs(mean), -24) + double(lens[b]) * std::ldexp(1.0, -52);
            for (std::size_t i = 0; i < lq; ++i)
              not_mean += !(std::fabs(want[((b * Hq + h) * lq + i) * dv + x] - mean) <= tol_ref);
          }
        }
      }
      CHECK(not_mean == 0);
      // |v| <= 1 and no score error: the bound of support/attention_case.hpp with S = 0.
      const double tol = 2.0 * std::ldexp(1.0, -24) * (2.0 * double(lk) + 8.0);
      for (attn::Isa isa : attn_test::test_isas()) {
        for (int threads : thread_counts()) {
          INFO("isa " << attn::isa_name(isa) << " threads " << threads << " Lk " << lk << " Lq "
                      << lq);
          attn::Context ctx = attn_test::make_context(isa, threads);
          std::vector<float> got(want.size(), -7.0f), with_w(want.size(), -7.0f),
              w(B * Hq * lq * lk, -7.0f);
          REQUIRE(
              attn::attention(ctx, tq, tk, tv, attn::make_bhsd(got.data(), B, Hq, lq, dv), o).ok());
          attn::AttentionOptions ow = o;
          ow.weights = attn::make_bhsd(w.data(), B, Hq, lq, lk);
          REQUIRE(
              attn::attention(ctx, tq, tk, tv, attn::make_bhsd(with_w.data(), B, Hq, lq, dv), ow)
                  .ok());
          std::size_t bad_out = 0, bad_weights = 0;
          for (std::size_t e = 0; e < want.size(); ++e) {
            bad_out += !(std::fabs(double(got[e]) - want[e]) <= tol);
            bad_out += !(std::fabs(double(with_w[e]) - want[e]) <= tol);
          }
          for (std::size_t r = 0; r < B * Hq * lq; ++r) {
            const std::size_t len = static_cast<std::size_t>(lens[r / (Hq * lq)]);
            for (std::size_t j = 0; j < lk; ++j) {
              const double expect = j < len ? 1.0 / double(len) : 0.0;
              bad_weights += !(std::fabs(w[r * lk + j] - expect) <= tol * expect);
            }
          }
          CHECK(bad_out == 0);
          CHECK(bad_weights == 0);
        }
      }
    }
  }
}

TEST_CASE("a KV cache viewed at its capacity through seq_slice: decoding and prefill steps",
          "[attention][views]") {
  // The caches hold C positions per (batch, KV head); the first len are filled, the rest NaN, so
  // a view that reached past len, or placed batch entries or heads len positions apart (a view
  // made with seq = len), would put NaN or other keys into the output. K as a projection writes it
  // ([B, C, Hkv, D]), V as planes ([B, Hkv, C, D]); the queries are the last Lq positions
  // (bottom-right causal). Lq = 1 takes the decoding path (4 query rows per KV head), Lq = 3 the
  // packed one; len 2100 and 2304 split the keys. The reference runs on compact copies of the
  // filled positions. Tolerance (support/attention_case.hpp): |q|, |k|, |v| <= 1 and the default
  // scale 1/sqrt(D) bound every score by S = sqrt(D), so |out - ref| <= attention_factor(D, len,
  // sqrt(D)) (V = 1).
  const std::size_t B = 2, Hq = 8, Hkv = 2, D = 64, C = 2304;
  attn_test::Rng rng(91);
  std::vector<float> k_cache(B * C * Hkv * D, NAN), v_cache(B * Hkv * C * D, NAN);
  const auto k_all = attn::make_bshd<float>(k_cache.data(), B, C, Hkv, D);
  const auto v_all = attn::make_bhsd<float>(v_cache.data(), B, Hkv, C, D);
  std::size_t filled = 0;
  for (std::size_t len : {1, 5, 37, 300, 2100, 2304}) {
    for (std::size_t b = 0; b < B; ++b)  // append positions [filled, len)
      for (std::size_t h = 0; h < Hkv; ++h)
        for (std::size_t s = filled; s < len; ++s)
          for (std::size_t x = 0; x < D; ++x) {
            k_all(b, h, s, x) = rng.uniform(-1.0f, 1.0f);
            v_all(b, h, s, x) = rng.uniform(-1.0f, 1.0f);
          }
    filled = len;
    std::vector<float> kc(B * Hkv * len * D), vc(B * Hkv * len * D);
    const auto kc_view = attn::make_bhsd<float>(kc.data(), B, Hkv, len, D);
    const auto vc_view = attn::make_bhsd<float>(vc.data(), B, Hkv, len, D);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < Hkv; ++h)
        for (std::size_t s = 0; s < len; ++s)
          for (std::size_t x = 0; x < D; ++x) {
            kc_view(b, h, s, x) = k_all(b, h, s, x);
            vc_view(b, h, s, x) = v_all(b, h, s, x);
          }
    const attn::TensorView<const float> k = attn::seq_slice(k_all, 0, len);
    const attn::TensorView<const float> v = attn::seq_slice(v_all, 0, len);
    for (std::size_t lq : {1, 3}) {
      if (lq > len) continue;
      const std::vector<float> q = rng.uniform_vec(B * Hq * lq * D);
      const auto qv = attn::make_bhsd<const float>(q.data(), B, Hq, lq, D);
      attn::AttentionOptions opt;
      opt.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
      std::vector<float> want(B * Hq * lq * D);
      attn::Context ref_ctx;
      REQUIRE(attn::reference::attention(ref_ctx, qv, kc_view, vc_view,
                                         attn::make_bhsd(want.data(), B, Hq, lq, D), opt)
                  .ok());
      const double tol = attn_test::bounds::attention_factor(D, len, std::sqrt(double(D)));
      for (attn::Isa isa : attn_test::test_isas()) {
        for (int threads : thread_counts()) {
          INFO("len " << len << ", Lq " << lq << ", " << attn::isa_name(isa) << ", threads "
                      << threads);
          attn::Context ctx = attn_test::make_context(isa, threads);
          std::vector<float> out(want.size(), -7.0f);
          const attn::Status s =
              attn::attention(ctx, qv, k, v, attn::make_bhsd(out.data(), B, Hq, lq, D), opt);
          INFO(s.message());
          REQUIRE(s.ok());
          std::size_t bad = 0;
          for (std::size_t i = 0; i < out.size(); ++i) {
            if (!(std::fabs(double(out[i]) - want[i]) <= tol) && bad++ < 3) {
              FAIL_CHECK("out[" << i << "] = " << out[i] << ", reference " << want[i]);
            }
          }
          CHECK(bad == 0);
        }
      }
    }
  }
  // A range beyond the cache gives null data, which attention refuses.
  attn::Context ctx;
  std::vector<float> q(B * Hq * D), out(B * Hq * D, -7.0f);
  const auto qv = attn::make_bhsd<const float>(q.data(), B, Hq, 1, D);
  const auto ov = attn::make_bhsd(out.data(), B, Hq, 1, D);
  const attn::TensorView<const float> past_end = attn::seq_slice(k_all, 1, C);
  CHECK(past_end.data == nullptr);
  const attn::Status s = attn::attention(ctx, qv, past_end, attn::seq_slice(v_all, 1, C), ov);
  CHECK(s.code() == attn::StatusCode::invalid_argument);
  CHECK_THAT(s.message(), Catch::Contains("k.data is null"));
  CHECK(out[0] == -7.0f);
}

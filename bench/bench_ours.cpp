// attn's own routines, one benchmark per routine, shape, ISA and thread count.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"

namespace attn_bench {
namespace {

// A Context on the ISA and thread count asked for; false (and the benchmark skipped) if the
// library refuses either.
bool setup(benchmark::State& state, attn::Context& ctx, attn::Isa isa, int threads) {
  attn::Status s = ctx.set_isa(isa);
  if (s.ok()) s = ctx.set_num_threads(threads);
  if (!s.ok()) {
    state.SkipWithError(s.message());
    return false;
  }
  return true;
}

// Runs call() (an attn call returning a Status) in the benchmark loop. A call that fails turns
// the benchmark into an error, so no time is ever reported for an error return.
template <class Call>
bool run_calls(benchmark::State& state, const Info& info, double work, Call&& call) {
  attn::Status failed;
  run_loop(state, info, work, [&] {
    const attn::Status s = call();
    if (!s.ok()) failed = s;
    benchmark::ClobberMemory();
  });
  if (!failed.ok()) state.SkipWithError(failed.message());
  return failed.ok();
}

// packed: B packed once by pack_matrix outside the timing ("<routine>_packed"; no peer runs it).
void register_matmul(attn::Isa isa, const MatmulShape& shape, int threads, bool packed) {
  Info info;
  info.routine = std::string(shape.routine) + (packed ? "_packed" : "");
  info.impl = attn::isa_name(isa);
  info.shape = matmul_shape_name(shape);
  info.threads = threads;
  info.name = full_name(info.routine, info.impl, info.shape, threads);
  add(info, [info, isa, shape, threads, packed](benchmark::State& state) {
    attn::Context ctx;
    if (!setup(state, ctx, isa, threads)) return;
    const std::size_t m = shape.m, n = shape.n, k = shape.k;
    const auto& a = random_vec(m * k, -1, 1, 1);
    const auto& b = random_vec(k * n, -1, 1, 2);
    std::vector<float> c(m * n);
    const auto av = attn::make_matrix<const float>(a.data(), m, k);
    const auto bv = shape.trans_b ? attn::make_matrix<const float>(b.data(), n, k)
                                  : attn::make_matrix<const float>(b.data(), k, n);
    const auto tb = shape.trans_b ? attn::Transpose::yes : attn::Transpose::no;
    const auto cv = attn::make_matrix(c.data(), m, n);
    attn::PackedMatrix b_packed;
    if (packed && !attn::pack_matrix(ctx, bv, tb, &b_packed).ok()) {
      state.SkipWithError("pack_matrix failed");
      return;
    }
    const bool ok = run_calls(state, info, 2.0 * double(m) * double(n) * double(k), [&] {
      return packed ? attn::matmul(ctx, av, attn::Transpose::no, b_packed, cv)
                    : attn::matmul(ctx, av, attn::Transpose::no, bv, tb, cv);
    });
    const std::string wrong = ok ? check_matmul(shape, a.data(), b.data(), c.data()) : "";
    if (!wrong.empty()) state.SkipWithError(wrong.c_str());
  });
}

void register_exp(attn::Isa isa) {
  Info info;
  info.routine = "exp";
  info.impl = attn::isa_name(isa);
  info.shape = std::to_string(kExpSize);
  info.unit = Unit::elem;
  info.name = full_name(info.routine, info.impl, info.shape, 1);
  add(info, [info, isa](benchmark::State& state) {
    attn::Context ctx;
    if (!setup(state, ctx, isa, 1)) return;
    const auto& x = random_vec(kExpSize, kExpLo, kExpHi, 3);
    std::vector<float> y(kExpSize);
    const bool ok = run_calls(state, info, double(kExpSize),
                              [&] { return attn::exp(ctx, x.data(), y.data(), kExpSize); });
    const std::string wrong = ok ? check_exp(x.data(), y.data(), kExpSize) : "";
    if (!wrong.empty()) state.SkipWithError(wrong.c_str());
  });
}

// Rows of n floats, 65536 floats in all (256 KiB in, 256 KiB out: L2).
void register_softmax(attn::Isa isa, std::size_t n) {
  Info info;
  info.routine = "softmax";
  info.impl = attn::isa_name(isa);
  info.shape = std::to_string(n);
  info.unit = Unit::elem;
  info.name = full_name(info.routine, info.impl, info.shape, 1);
  add(info, [info, isa, n](benchmark::State& state) {
    attn::Context ctx;
    if (!setup(state, ctx, isa, 1)) return;
    const std::size_t rows = std::max<std::size_t>(1, 65536 / n);
    const auto& x = random_vec(rows * n, -10, 10, 4);
    std::vector<float> y(rows * n);
    const auto xv = attn::make_matrix<const float>(x.data(), rows, n);
    const auto yv = attn::make_matrix(y.data(), rows, n);
    run_calls(state, info, double(rows * n), [&] { return attn::softmax(ctx, xv, yv); });
  });
}

enum class MaskKind { bidirectional, causal, causal_bottom_right };

struct AttentionCase {
  const char* routine;
  std::size_t batch, hq, hkv, lq, lk, d;
  MaskKind mask;
  std::vector<std::int32_t> key_lengths;  // empty: none
  Variants variants;
};

// The shape part of the name: B/H/n/d when Hq == Hkv and Lq == Lk, else every dimension.
std::string attention_shape(const AttentionCase& c) {
  auto s = [](std::size_t v) { return std::to_string(v); };
  if (c.hq == c.hkv && c.lq == c.lk)
    return s(c.batch) + "/" + s(c.hq) + "/" + s(c.lq) + "/" + s(c.d);
  return s(c.batch) + "/" + s(c.hq) + "/" + s(c.hkv) + "/" + s(c.lq) + "/" + s(c.lk) + "/" + s(c.d);
}

// 4·d FLOP per (query, key) pair the mask lets through: 2·d for q·k, 2·d for the weight times v.
double attention_flop(const AttentionCase& c) {
  double pairs = 0;
  for (std::size_t b = 0; b < c.batch; ++b) {
    const std::size_t len = c.key_lengths.empty() ? c.lk : std::size_t(c.key_lengths[b]);
    for (std::size_t i = 0; i < c.lq; ++i) {
      std::size_t keys = len;
      if (c.mask == MaskKind::causal) keys = std::min(len, i + 1);
      if (c.mask == MaskKind::causal_bottom_right) keys = std::min(len, i + 1 + c.lk - c.lq);
      pairs += double(keys);
    }
  }
  return 4.0 * double(c.d) * double(c.hq) * pairs;
}

void register_attention(attn::Isa isa, const AttentionCase& c, int threads) {
  Info info;
  info.routine = c.routine;
  info.impl = attn::isa_name(isa);
  info.shape = attention_shape(c);
  info.threads = threads;
  info.name = full_name(info.routine, info.impl, info.shape, threads);
  add(info, [info, isa, c, threads](benchmark::State& state) {
    attn::Context ctx;
    if (!setup(state, ctx, isa, threads)) return;
    const auto& q = random_vec(c.batch * c.hq * c.lq * c.d, -1, 1, 5);
    const auto& k = random_vec(c.batch * c.hkv * c.lk * c.d, -1, 1, 6);
    const auto& v = random_vec(c.batch * c.hkv * c.lk * c.d, -1, 1, 7);
    std::vector<float> out(c.batch * c.hq * c.lq * c.d);
    const auto qv = attn::make_bhsd<const float>(q.data(), c.batch, c.hq, c.lq, c.d);
    const auto kv = attn::make_bhsd<const float>(k.data(), c.batch, c.hkv, c.lk, c.d);
    const auto vv = attn::make_bhsd<const float>(v.data(), c.batch, c.hkv, c.lk, c.d);
    const auto ov = attn::make_bhsd(out.data(), c.batch, c.hq, c.lq, c.d);
    attn::AttentionOptions o;
    if (c.mask == MaskKind::causal) o.mask = attn::Mask::causal();
    if (c.mask == MaskKind::causal_bottom_right)
      o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right);
    if (!c.key_lengths.empty()) o.mask = o.mask.with_key_lengths(c.key_lengths.data());
    run_calls(state, info, attention_flop(c),
              [&] { return attn::attention(ctx, qv, kv, vv, ov, o); });
  });
}

struct SelfAttentionCase {
  std::size_t batch, seq, d_model, heads, d_k;
  bool output_projection;  // with Wo (d_model × d_model) and biases, as in BERT
  Variants variants;
};

// packed: the layer's weights packed once (pack_self_attention) outside the timing.
void register_self_attention(attn::Isa isa, const SelfAttentionCase& c, int threads, bool packed) {
  auto s = [](std::size_t v) { return std::to_string(v); };
  Info info;
  info.routine = packed ? "self_attention_packed" : "self_attention";
  info.impl = attn::isa_name(isa);
  info.shape = s(c.batch) + "/" + s(c.seq) + "/" + s(c.d_model) + "/" + s(c.heads) + "/" + s(c.d_k);
  info.threads = threads;
  info.name = full_name(info.routine, info.impl, info.shape, threads);
  add(info, [info, isa, c, threads, packed](benchmark::State& state) {
    attn::Context ctx;
    if (!setup(state, ctx, isa, threads)) return;
    const std::size_t rows = c.batch * c.seq, hd = c.heads * c.d_k;
    const auto& x = random_vec(rows * c.d_model, -1, 1, 8);
    const auto& wq = random_vec(c.d_model * hd, -0.1f, 0.1f, 9);
    const auto& wk = random_vec(c.d_model * hd, -0.1f, 0.1f, 10);
    const auto& wv = random_vec(c.d_model * hd, -0.1f, 0.1f, 11);
    const auto& wo = random_vec(hd * c.d_model, -0.1f, 0.1f, 12);
    const auto& bias = random_vec(std::max(hd, c.d_model), -0.1f, 0.1f, 13);
    const std::size_t d_out = c.output_projection ? c.d_model : hd;
    std::vector<float> out(rows * d_out);
    attn::SelfAttentionParams p;
    p.num_heads = c.heads;
    p.q.weight = attn::make_matrix<const float>(wq.data(), c.d_model, hd);
    p.k.weight = attn::make_matrix<const float>(wk.data(), c.d_model, hd);
    p.v.weight = attn::make_matrix<const float>(wv.data(), c.d_model, hd);
    if (c.output_projection) {
      p.o.weight = attn::make_matrix<const float>(wo.data(), hd, c.d_model);
      p.q.bias = p.k.bias = p.v.bias = p.o.bias = bias.data();
    }
    const auto xv = attn::make_matrix<const float>(x.data(), rows, c.d_model);
    const auto ov = attn::make_matrix(out.data(), rows, d_out);
    const double projections = 2.0 * double(rows) * double(c.d_model) * double(3 * hd) +
                               (c.output_projection ? 2.0 * double(rows * hd * c.d_model) : 0.0);
    const double attention =
        4.0 * double(c.batch * c.heads) * double(c.seq) * double(c.seq) * double(c.d_k);
    attn::PackedSelfAttention layer;
    if (packed && !attn::pack_self_attention(ctx, p, &layer).ok()) {
      state.SkipWithError("pack_self_attention failed");
      return;
    }
    run_calls(state, info, projections + attention, [&] {
      return packed ? attn::self_attention(ctx, xv, c.batch, layer, p.attention, ov)
                    : attn::self_attention(ctx, xv, c.batch, p, ov);
    });
  });
}

}  // namespace

void register_ours(const Options& options) {
  using V = Variants;
  const std::vector<AttentionCase> attention_cases = {
      {"attention", 1, 1, 1, 6, 6, 16, MaskKind::bidirectional, {}, V::q1},
      {"attention", 1, 12, 12, 128, 128, 64, MaskKind::bidirectional, {}, V::q1},
      {"attention", 1, 12, 12, 512, 512, 64, MaskKind::bidirectional, {}, V::q1 | V::two},
      {"attention", 1, 8, 8, 2048, 2048, 64, MaskKind::bidirectional, {}, V::q1 | V::two},
      {"attention", 1, 1, 1, 4096, 4096, 64, MaskKind::bidirectional, {}, V::two},
      {"attention_causal", 1, 1, 1, 6, 6, 16, MaskKind::causal, {}, V::q1},
      {"attention_causal", 1, 12, 12, 128, 128, 64, MaskKind::causal, {}, V::q1},
      {"attention_causal", 1, 12, 12, 512, 512, 64, MaskKind::causal, {}, V::q1 | V::two},
      {"attention_causal", 1, 8, 8, 2048, 2048, 64, MaskKind::causal, {}, V::q1 | V::two},
      {"attention_causal", 1, 1, 1, 4096, 4096, 64, MaskKind::causal, {}, V::two},
      // A padded batch: 4 sequences of 256, 200, 128 and 64 real tokens in 256 slots.
      {"attention_padded",
       4,
       12,
       12,
       256,
       256,
       64,
       MaskKind::bidirectional,
       {256, 200, 128, 64},
       V::q1},
      // Grouped-query prefill: 32 query heads share 8 key/value heads (Llama-like), causal.
      {"attention_gqa", 1, 32, 8, 512, 512, 128, MaskKind::causal, {}, V::q1 | V::two},
      // Decoding one token against a 4096-token KV cache, grouped-query.
      {"attention_decode",
       1,
       32,
       8,
       1,
       4096,
       128,
       MaskKind::causal_bottom_right,
       {},
       V::q1 | V::two},
      // Decoding with a GQA group of 8 (64 query heads over 8 KV heads, as Llama-3-70B's).
      {"attention_decode",
       1,
       64,
       8,
       1,
       4096,
       128,
       MaskKind::causal_bottom_right,
       {},
       V::q1 | V::two},
      // Speculative decoding: 8 tokens (7 drafted) over a GQA group of 4, 32 query rows per KV
      // head.
      {"attention_decode",
       1,
       32,
       8,
       8,
       4096,
       128,
       MaskKind::causal_bottom_right,
       {},
       V::q1 | V::two},
      // Decoding with multi-head attention (GPT-2 small: 12 heads of 64, a 1024-token cache).
      {"attention_decode",
       1,
       12,
       12,
       1,
       1024,
       64,
       MaskKind::causal_bottom_right,
       {},
       V::q1 | V::two},
      // Cross-attention: 256 decoder queries against 1024 encoder keys.
      {"attention_cross", 1, 8, 8, 256, 1024, 64, MaskKind::bidirectional, {}, V::q1},
  };
  const std::vector<SelfAttentionCase> self_cases = {
      {1, 6, 64, 1, 16, false, V::q1},             // the seed: 6 tokens, d_model 64, d_k 16
      {1, 128, 768, 12, 64, true, V::q1 | V::q2},  // BERT-base, 128 tokens
  };
  for (attn::Isa isa : options.isas) {
    if ((options.quick || options.default_isa_only) && isa != options.default_isa) continue;
    for (const auto& s : kMatmulShapes) {
      for (int t : thread_counts(options, s.variants)) {
        register_matmul(isa, s, t, false);
        if (s.packed_too) register_matmul(isa, s, t, true);
      }
    }
    register_exp(isa);
    for (std::size_t n : {16, 128, 512, 4096, 32768})
      register_softmax(isa, n);
    for (const auto& c : attention_cases) {
      for (int t : thread_counts(options, c.variants))
        register_attention(isa, c, t);
    }
    for (const auto& c : self_cases) {
      for (int t : thread_counts(options, c.variants)) {
        register_self_attention(isa, c, t, false);
        register_self_attention(isa, c, t, true);
      }
    }
  }
}

}  // namespace attn_bench

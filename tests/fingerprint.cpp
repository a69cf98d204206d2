// attn-fingerprint: one hash of the output bits per (routine, ISA) over a fixed set of calls, on
// every ISA this CPU runs (or the one ATTN_ISA names), one thread. CI runs it from the g++ build
// and from the clang-14 build and requires the same lines (README "Determinism"): attn compiles
// with -ffp-contract=off and writes its FMAs explicitly, so a compiler may not fuse a product and
// a sum on its own.
//
// Inputs come from an integer generator (no libm, no float arithmetic; attn_test::Rng's std
// distributions compute in float inside this binary, which a compiler could contract), so both
// builds feed the library the same bits. NaN payloads are folded into one value (the sign of zero
// is kept).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "attn/attn.hpp"
#include "support/test_support.hpp"

namespace {

struct Inputs {
  std::uint64_t state;
  explicit Inputs(std::uint64_t seed) : state(seed) {}
  std::uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  }
  // A float k / 2^20 with -2^22 <= k < 2^22: in [-4, 4), exact, the same bits on every compiler.
  float value() {
    const std::int32_t k = static_cast<std::int32_t>(next() % (1u << 23)) - (1 << 22);
    return static_cast<float>(k) / 1048576.0f;
  }
  std::vector<float> vec(std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v)
      x = value();
    return v;
  }
};

struct Hash {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over 32-bit words
  void add(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (x != x) bits = 0x7fc00000u;
    for (int i = 0; i < 4; ++i) {
      h ^= (bits >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  void add(const std::vector<float>& v) {
    for (float x : v)
      add(x);
  }
};

bool ok(const attn::Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "attn-fingerprint: %s: %s\n", what, s.message());
  return false;
}

// matmul's paths, or (packed) matmul with a PackedMatrix on each of its loops (few rows in place,
// op(A) packed whole, the Goto nest on CPUs whose L2 the 300 rows' KC block exceeds).
bool matmuls(attn::Context& ctx, Hash& h, bool packed) {
  struct Shape {
    std::size_t m, n, k;
    attn::Transpose ta, tb;
    float alpha, beta;
    std::size_t b_phase = 0;  // > 0: B starts this many floats past a 64-byte line
  };
  const attn::Transpose N = attn::Transpose::no, T = attn::Transpose::yes;
  const Shape plain[] = {{6, 16, 64, N, N, 1, 0},
                         {64, 64, 64, N, N, 1, 0},
                         {37, 129, 70, N, T, -0.5f, 1},
                         {100, 45, 600, T, N, 1, -0.5f},
                         {300, 200, 1100, N, N, 1, 0},
                         {13, 77, 5, T, T, 2, 1},
                         {67, 64, 200, N, N, 1, 0.5f},   // the wide no-packing tile (AVX-512)
                         {1, 2063, 70, N, T, -0.5f, 1},  // one row against a B^T (GemmPath::rows)
                         // the same after a head (5 floats past a line: one on 4, 8 and 16 lanes)
                         {1, 2063, 96, N, T, 1, 0, 5},
                         {2, 2063, 96, N, T, 1, 0, 5}};
  const Shape prepacked[] = {
      {8, 200, 300, N, N, 1, 0.5f}, {60, 200, 300, T, T, 1, 0.5f}, {300, 200, 1100, N, N, 1, 0.5f}};
  Inputs in(packed ? 6 : 1);
  const std::size_t count = packed ? std::size(prepacked) : std::size(plain);
  for (std::size_t i = 0; i < count; ++i) {
    const Shape& s = packed ? prepacked[i] : plain[i];
    const std::size_t ar = s.ta == N ? s.m : s.k, ac = s.ta == N ? s.k : s.m;
    const std::size_t br = s.tb == N ? s.k : s.n, bc = s.tb == N ? s.n : s.k;
    const std::vector<float> a = in.vec(ar * ac), b = in.vec(br * bc);
    std::vector<float> c = in.vec(s.m * s.n);
    // A case with a b_phase places B that far past a line: its bits depend on it, not on where
    // the allocator put the vector.
    std::vector<float> b_store(s.b_phase == 0 ? 0 : b.size() + 16 + s.b_phase);
    const float* b_at = b.data();
    if (s.b_phase != 0) {
      float* const placed = attn_test::line_start(b_store, s.b_phase);
      std::copy(b.begin(), b.end(), placed);
      b_at = placed;
    }
    const auto av = attn::make_matrix<const float>(a.data(), ar, ac);
    const auto bv = attn::make_matrix<const float>(b_at, br, bc);
    const auto cv = attn::make_matrix(c.data(), s.m, s.n);
    attn::PackedMatrix pb;
    if (packed && !ok(attn::pack_matrix(ctx, bv, s.tb, &pb), "pack_matrix")) return false;
    const attn::Status st = packed ? attn::matmul(ctx, av, s.ta, pb, cv, s.alpha, s.beta)
                                   : attn::matmul(ctx, av, s.ta, bv, s.tb, cv, s.alpha, s.beta);
    if (!ok(st, "matmul")) return false;
    h.add(c);
  }
  return true;
}

bool vmath(attn::Context& ctx, Hash& ex, Hash& sm) {
  Inputs in(2);
  std::vector<float> x(4099);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Every range of exp: |x| up to 1024 (overflow, underflow, subnormal results).
    x[i] = in.value() * static_cast<float>(1u << (i % 6)) * 8.0f;
  }
  std::vector<float> y(x.size());
  if (!ok(attn::exp(ctx, x.data(), y.data(), x.size()), "exp")) return false;
  ex.add(y);
  const std::size_t rows = 7, cols = 585;
  const std::vector<float> s = in.vec(rows * cols);
  std::vector<float> p(s.size());
  if (!ok(attn::softmax(ctx, attn::make_matrix<const float>(s.data(), rows, cols),
                        attn::make_matrix(p.data(), rows, cols)),
          "softmax")) {
    return false;
  }
  sm.add(p);
  return true;
}

bool attentions(attn::Context& ctx, Hash& h) {
  struct Case {
    std::size_t b, hq, hkv, lq, lk, dk, dv;
    // 0 none, 1 causal, 2 bottom-right causal + key lengths, 3 window + additive + boolean, with
    // weights. The last three cases: at most 32 keys (the latency path); 4 decoding rows against
    // 4096 keys (the keys split into chunks whose partial results are merged); a GQA group of 8
    // (8 rows per KV head, K read in place, P * V by the fused tile's kernel).
    int mask;
  };
  const Case cases[] = {{1, 1, 1, 6, 6, 16, 16, 0},       {1, 12, 12, 128, 128, 64, 64, 0},
                        {1, 4, 4, 200, 200, 64, 64, 1},   {2, 8, 2, 57, 300, 64, 80, 2},
                        {1, 32, 8, 1, 2100, 128, 128, 2}, {2, 3, 3, 70, 150, 32, 32, 3},
                        {1, 2, 2, 10, 20, 8, 8, 3},       {1, 4, 4, 1, 4096, 64, 64, 0},
                        {1, 16, 2, 1, 700, 128, 128, 2}};
  Inputs in(3);
  for (const Case& c : cases) {
    const std::vector<float> q = in.vec(c.b * c.hq * c.lq * c.dk);
    const std::vector<float> k = in.vec(c.b * c.hkv * c.lk * c.dk);
    const std::vector<float> v = in.vec(c.b * c.hkv * c.lk * c.dv);
    std::vector<float> out(c.b * c.hq * c.lq * c.dv);
    std::vector<float> weights(c.b * c.hq * c.lq * c.lk);
    const std::vector<float> bias = in.vec(c.lq * c.lk);
    std::vector<std::uint8_t> allowed(c.lq * c.lk);
    for (std::uint8_t& a : allowed)
      a = in.next() % 5 != 0;
    std::vector<std::int32_t> lengths(c.b);
    for (std::size_t i = 0; i < c.b; ++i)
      lengths[i] = static_cast<std::int32_t>(c.lk - i * (c.lk / 3));
    attn::AttentionOptions o;
    if (c.mask == 1) o.mask = attn::Mask::causal();
    if (c.mask == 2) {
      o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right).with_key_lengths(lengths.data());
    }
    if (c.mask == 3) {
      const std::ptrdiff_t ld = static_cast<std::ptrdiff_t>(c.lk);
      const attn::TensorView<const float> add{bias.data(), {1, 1, c.lq, c.lk}, {0, 0, ld, 1}};
      const attn::TensorView<const std::uint8_t> keep{
          allowed.data(), {1, 1, c.lq, c.lk}, {0, 0, ld, 1}};
      o.mask = attn::Mask::bidirectional().with_window(40, 9).with_additive(add).with_allowed(keep);
      o.weights = attn::make_bhsd(weights.data(), c.b, c.hq, c.lq, c.lk);
    }
    if (!ok(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), c.b, c.hq, c.lq, c.dk),
                            attn::make_bhsd<const float>(k.data(), c.b, c.hkv, c.lk, c.dk),
                            attn::make_bhsd<const float>(v.data(), c.b, c.hkv, c.lk, c.dv),
                            attn::make_bhsd(out.data(), c.b, c.hq, c.lq, c.dv), o),
            "attention")) {
      return false;
    }
    h.add(out);
    if (c.mask == 3) h.add(weights);
  }
  return true;
}

bool self_attentions(attn::Context& ctx, Hash& h) {
  Inputs in(4);
  const std::size_t batch = 2, seq = 24, d_model = 96, heads = 6, dk = 16;
  const std::vector<float> x = in.vec(batch * seq * d_model);
  const std::vector<float> wq = in.vec(d_model * heads * dk), wk = in.vec(d_model * heads * dk),
                           wv = in.vec(d_model * heads * dk), wo = in.vec(heads * dk * d_model);
  const std::vector<float> bias = in.vec(d_model);
  attn::SelfAttentionParams p;
  p.num_heads = heads;
  p.q = {attn::make_matrix<const float>(wq.data(), d_model, heads * dk), bias.data()};
  p.k = {attn::make_matrix<const float>(wk.data(), d_model, heads * dk), bias.data()};
  p.v = {attn::make_matrix<const float>(wv.data(), d_model, heads * dk), bias.data()};
  p.o = {attn::make_matrix<const float>(wo.data(), heads * dk, d_model), bias.data()};
  p.attention.mask = attn::Mask::causal();
  std::vector<float> out(batch * seq * d_model);
  if (!ok(attn::self_attention(ctx, attn::make_matrix<const float>(x.data(), batch * seq, d_model),
                               batch, p, attn::make_matrix(out.data(), batch * seq, d_model)),
          "self_attention")) {
    return false;
  }
  h.add(out);
  return true;
}

}  // namespace

int main() {
  for (attn::Isa isa : attn_test::test_isas()) {
    attn::Context ctx;
    if (!ok(ctx.set_isa(isa), "set_isa")) return 1;
    Hash mm, pm, ex, sm, at, sa;
    if (!matmuls(ctx, mm, false) || !matmuls(ctx, pm, true) || !vmath(ctx, ex, sm) ||
        !attentions(ctx, at) || !self_attentions(ctx, sa)) {
      return 1;
    }
    const char* name = attn::isa_name(isa);
    std::printf("matmul %s %016llx\n", name, static_cast<unsigned long long>(mm.h));
    std::printf("packed_matmul %s %016llx\n", name, static_cast<unsigned long long>(pm.h));
    std::printf("exp %s %016llx\n", name, static_cast<unsigned long long>(ex.h));
    std::printf("softmax %s %016llx\n", name, static_cast<unsigned long long>(sm.h));
    std::printf("attention %s %016llx\n", name, static_cast<unsigned long long>(at.h));
    std::printf("self_attention %s %016llx\n", name, static_cast<unsigned long long>(sa.h));
  }
  return 0;
}

// One library build's side of bench/ab-lib: built with that build's libattn.a into a shared
// object, so that two builds can run in one process. Exposes C symbols only: ab_make sets up a
// case (inputs, a Context, one warm-up call), ab_time times `reps` calls, ab_out returns the
// output for the bit comparison. Kinds: 0 matmul A B (M x N x K), 1 matmul A B^T, 2 attention,
// 3 causal attention (B x H x Lq x Lk x d given as BATCH, HEADS, M = Lq, N = Lk, K = d), 4 and 5
// matmul A B and A B^T against B packed once by pack_matrix (in ab_make, outside the timing), 6
// attention with key lengths (a padded batch: batch entry b has Lk (4 - b % 4) / 4 keys).
// Every input and output starts on a 64-byte line, plus AB_LIB_OFFSET bytes (a multiple of 4,
// default 0) if set: both builds see the same alignment, which malloc would otherwise leave to
// chance (the same build against itself read 0.84x at 6 x 16 x 64 with heap-placed vectors).
#include <attn/attn.hpp>

// The packed kinds need pack_matrix (from a1dbc33 on); an older OLD tree builds without them.
#if __has_include(<attn/packed_matrix.hpp>)
#define AB_LIB_HAVE_PACKED 1
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// Floats from a line boundary plus the offset, inside a vector of its own. Movable (the vector's
// block, which p points into, moves with it), not copyable.
struct Buffer {
  std::vector<float> store;
  float* p = nullptr;

  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&&) = default;
  Buffer& operator=(Buffer&&) = default;

  float* data() { return p; }
  void resize(std::size_t count) {
    const char* env = std::getenv("AB_LIB_OFFSET");
    const long bytes = env ? std::strtol(env, nullptr, 10) : 0;
    if (bytes < 0 || bytes > 4096 || bytes % sizeof(float) != 0) {
      std::fprintf(stderr,
                   "bench/ab-lib: AB_LIB_OFFSET must be 0 to 4096 bytes, a multiple of 4\n");
      std::exit(2);
    }
    const std::size_t offset = static_cast<std::size_t>(bytes) / sizeof(float);
    store.assign(count + 16 + offset, 0.0f);
    const auto addr = reinterpret_cast<std::uintptr_t>(store.data());
    p = store.data() + ((64 - addr % 64) % 64) / sizeof(float) + offset;
  }
};

bool is_matmul(int kind) {
  return kind <= 1 || kind == 4 || kind == 5;
}

struct Case {
  int kind;
  std::size_t m, n, k, batch, heads;
  Buffer a, b, c, q, kk, v, o;
  attn::Context ctx;
#if defined(AB_LIB_HAVE_PACKED)
  attn::PackedMatrix packed;
  std::vector<attn::PackedMatrix> packed_copies;  // AB_LIB_B_COPIES for the packed kinds
#endif
  // AB_LIB_B_COPIES=N (the matmul kinds): N copies of B (packed ones for the packed kinds), each
  // call reading the next, so that B comes from memory as a decoding step's weights do (N copies
  // beyond L3).
  std::vector<Buffer> b_copies;
  // AB_LIB_KV_COPIES=N (the attention kinds): N copies of K and of V, each call reading the next
  // pair, so that K and V come from memory as a decoding step's do (the model's other layers
  // evict them between its steps).
  std::vector<Buffer> k_copies, v_copies;
  std::size_t next_copy = 0;
  std::vector<std::int32_t> key_lengths;  // kind 6
  // AB_LIB_GROUP=G (the attention kinds): G query heads share each KV head (GQA; heads / G KV
  // heads, G dividing heads).
  std::size_t group = 1;
  std::size_t heads_kv() const { return heads / group; }

  attn::MatrixView<const float> b_view() {
    const bool nt = kind == 1 || kind == 5;
    return {b.data(), nt ? n : k, nt ? k : n, nt ? k : n};
  }
  attn::Transpose b_op() const {
    return kind == 1 || kind == 5 ? attn::Transpose::yes : attn::Transpose::no;
  }

  void run() {
    attn::Status st;
    if (kind == 4 || kind == 5) {
#if defined(AB_LIB_HAVE_PACKED)
      const attn::PackedMatrix& pb = packed_copies.empty() ? packed : packed_copies[next_copy];
      if (!packed_copies.empty()) next_copy = (next_copy + 1) % packed_copies.size();
      st = attn::matmul(ctx, {a.data(), m, k, k}, attn::Transpose::no, pb,
                        attn::make_matrix(c.data(), m, n));
#endif
    } else if (kind <= 1) {
      attn::MatrixView<const float> bv = b_view();
      if (!b_copies.empty()) {
        bv.data = b_copies[next_copy].data();
        next_copy = (next_copy + 1) % b_copies.size();
      }
      st = attn::matmul(ctx, {a.data(), m, k, k}, attn::Transpose::no, bv, b_op(),
                        attn::make_matrix(c.data(), m, n));
    } else {
      attn::AttentionOptions opt;
      if (kind == 3) opt.mask = attn::Mask::causal();
      if (kind == 6) opt.mask = attn::Mask::bidirectional().with_key_lengths(key_lengths.data());
      const float* kd = kk.data();
      const float* vd = v.data();
      if (!k_copies.empty()) {
        kd = k_copies[next_copy].data();
        vd = v_copies[next_copy].data();
        next_copy = (next_copy + 1) % k_copies.size();
      }
      st = attn::attention(ctx, attn::make_bhsd<const float>(q.data(), batch, heads, m, k),
                           attn::make_bhsd<const float>(kd, batch, heads_kv(), n, k),
                           attn::make_bhsd<const float>(vd, batch, heads_kv(), n, k),
                           attn::make_bhsd(o.data(), batch, heads, m, k), opt);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "bench/ab-lib: %s\n", st.message());
      std::exit(1);
    }
  }
};

// `copies` buffers holding the first `count` floats of `x` each, on the same alignment.
std::vector<Buffer> copies_of(Buffer& x, std::size_t count, std::size_t copies) {
  std::vector<Buffer> out(copies);
  for (Buffer& copy : out) {
    copy.resize(count);
    std::copy(x.p, x.p + count, copy.p);
  }
  return out;
}

void fill(Buffer& x, std::size_t count) {
  x.resize(count);
  for (std::size_t i = 0; i < count; ++i)
    x.p[i] = static_cast<float>(std::rand() % 200 - 100) / 100.0f;
}

}  // namespace

extern "C" void* ab_make(int kind, long m, long n, long k, long batch, long heads, int threads) {
  Case* c = new Case{kind,           std::size_t(m),     std::size_t(n),
                     std::size_t(k), std::size_t(batch), std::size_t(heads)};
  if (!c->ctx.set_num_threads(threads).ok()) std::exit(1);
  std::srand(1);
  const char* copies = std::getenv("AB_LIB_B_COPIES");
  const long count = copies ? std::strtol(copies, nullptr, 10) : 0;
  if (copies != nullptr && (!is_matmul(kind) || count < 1)) {
    std::fprintf(stderr,
                 "bench/ab-lib: AB_LIB_B_COPIES takes a count of 1 or more, for the matmul kinds "
                 "only (N copies of B take N times its memory per build; AB_LIB_KV_COPIES for "
                 "attention)\n");
    std::exit(2);
  }
  if (std::getenv("AB_LIB_KV_COPIES") != nullptr && is_matmul(kind)) {
    std::fprintf(stderr, "bench/ab-lib: AB_LIB_KV_COPIES is for the attention kinds\n");
    std::exit(2);
  }
  if (is_matmul(kind)) {
    fill(c->a, c->m * c->k);
    fill(c->b, c->k * c->n);
    c->c.resize(c->m * c->n);
    if (count > 1 && kind <= 1)
      c->b_copies = copies_of(c->b, c->k * c->n, static_cast<std::size_t>(count));
#if defined(AB_LIB_HAVE_PACKED)
    if (kind >= 4) {
      c->packed_copies.resize(count > 1 ? static_cast<std::size_t>(count) : 0);
      bool ok = attn::pack_matrix(c->ctx, c->b_view(), c->b_op(), &c->packed).ok();
      for (attn::PackedMatrix& copy : c->packed_copies)
        ok = ok && attn::pack_matrix(c->ctx, c->b_view(), c->b_op(), &copy).ok();
      if (!ok) {
        std::fprintf(stderr, "bench/ab-lib: pack_matrix failed\n");
        std::exit(1);
      }
    }
#else
    if (kind >= 4) {
      std::fprintf(stderr, "bench/ab-lib: this tree has no pack_matrix (before a1dbc33)\n");
      std::exit(2);
    }
#endif
  } else {
    const char* group = std::getenv("AB_LIB_GROUP");
    const long g = group ? std::strtol(group, nullptr, 10) : 1;
    if (g < 1 || c->heads % static_cast<std::size_t>(g) != 0) {
      std::fprintf(stderr, "bench/ab-lib: AB_LIB_GROUP must divide the heads\n");
      std::exit(2);
    }
    c->group = static_cast<std::size_t>(g);
    const std::size_t rows = c->batch * c->heads * c->k;
    const std::size_t kv_rows = c->batch * c->heads_kv() * c->k;
    fill(c->q, rows * c->m);
    fill(c->kk, kv_rows * c->n);
    fill(c->v, kv_rows * c->n);
    c->o.resize(rows * c->m);
    for (std::size_t b = 0; b < c->batch; ++b)
      c->key_lengths.push_back(static_cast<std::int32_t>(c->n * (4 - b % 4) / 4));
    const char* kv = std::getenv("AB_LIB_KV_COPIES");
    const long kv_count = kv ? std::strtol(kv, nullptr, 10) : 0;
    if (kv != nullptr && kv_count < 1) {
      std::fprintf(stderr, "bench/ab-lib: AB_LIB_KV_COPIES takes a count of 1 or more\n");
      std::exit(2);
    }
    if (kv_count > 1) {
      c->k_copies = copies_of(c->kk, kv_rows * c->n, static_cast<std::size_t>(kv_count));
      c->v_copies = copies_of(c->v, kv_rows * c->n, static_cast<std::size_t>(kv_count));
    }
  }
  c->run();
  return c;
}

extern "C" double ab_time(void* p, int reps) {
  Case* c = static_cast<Case*>(p);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    c->run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

extern "C" const float* ab_out(void* p, std::size_t* count) {
  Case* c = static_cast<Case*>(p);
  *count = is_matmul(c->kind) ? c->m * c->n : c->batch * c->heads * c->k * c->m;
  return is_matmul(c->kind) ? c->c.p : c->o.p;
}

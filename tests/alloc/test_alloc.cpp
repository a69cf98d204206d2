// attn-alloc-tests: counts heap allocations. This binary replaces malloc, calloc, realloc, free,
// posix_memalign, aligned_alloc, memalign, valloc, pvalloc and every form of operator new and
// delete with counting versions that forward to glibc's own allocator (__libc_malloc and
// friends, so nothing here depends on dlsym, which itself allocates). The libraries the process
// loads (libstdc++, libgomp or libomp, glibc itself) resolve these names to the replacements, so
// allocations from any thread, attn's or the OpenMP runtime's, are seen.
//
// Checked: after a warm-up call of each shape on a Context (which grows its arena and lets the
// OpenMP runtime build its team), further calls of matmul (with B as a view or a PackedMatrix),
// exp, softmax, attention (with and without weights, with every mask part) and self_attention
// (with the weights as views or a PackedSelfAttention) make no allocation and no free, on one
// thread and on several, on every ISA; a Context given another's peak by reserve_scratch makes
// no allocation in its first calls either. Also: an allocation failure (of the scratch, or of
// pack_matrix's copy) becomes out_of_memory with nothing written; pack_self_attention copies the
// weights only where they lie apart. Not built with sanitizers (which
// replace the allocator themselves).
#include <dlfcn.h>
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "support/test_support.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void __libc_free(void*);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);
}

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocs{0};
std::atomic<long> g_frees{0};
std::atomic<int> g_fail_allocs{0};  // make this many next allocations fail,
std::atomic<int> g_pass_allocs{0};  // after letting this many through
// Where counted allocations came from (return addresses), for the failure message.
constexpr int kMaxSites = 16;
std::atomic<int> g_site_count{0};
void* g_sites[kMaxSites];

// True when this allocation must fail (the caller returns null).
bool note_alloc(void* site) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    const int i = g_site_count.fetch_add(1, std::memory_order_relaxed);
    if (i < kMaxSites) g_sites[i] = site;
  }
  int f = g_fail_allocs.load(std::memory_order_relaxed);
  if (f <= 0) return false;
  int pass = g_pass_allocs.load(std::memory_order_relaxed);
  while (pass > 0) {
    if (g_pass_allocs.compare_exchange_weak(pass, pass - 1)) return false;
  }
  while (f > 0) {
    if (g_fail_allocs.compare_exchange_weak(f, f - 1)) return true;
  }
  return false;
}
void note_free(void* p) {
  if (p != nullptr && g_counting.load(std::memory_order_relaxed)) {
    g_frees.fetch_add(1, std::memory_order_relaxed);
  }
}

void* counted_new(std::size_t n, void* site) {
  if (note_alloc(site)) throw std::bad_alloc();
  void* p = __libc_malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* counted_new_nothrow(std::size_t n, void* site) noexcept {
  if (note_alloc(site)) return nullptr;
  return __libc_malloc(n ? n : 1);
}
void* counted_new_aligned(std::size_t n, std::align_val_t a, void* site) {
  if (note_alloc(site)) throw std::bad_alloc();
  void* p = __libc_memalign(static_cast<std::size_t>(a), n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* counted_new_aligned_nothrow(std::size_t n, std::align_val_t a, void* site) noexcept {
  if (note_alloc(site)) return nullptr;
  return __libc_memalign(static_cast<std::size_t>(a), n ? n : 1);
}
void counted_delete(void* p) noexcept {
  note_free(p);
  __libc_free(p);
}

}  // namespace

#define ATTN_SITE __builtin_return_address(0)

extern "C" {
void* malloc(std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_malloc(n);
}
void* calloc(std::size_t c, std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_calloc(c, n);
}
void* realloc(void* p, std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_realloc(p, n);
}
void free(void* p) {
  note_free(p);
  __libc_free(p);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  if (note_alloc(ATTN_SITE)) return ENOMEM;
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(std::size_t align, std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_memalign(align, n);
}
void* memalign(std::size_t align, std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_memalign(align, n);
}
void* valloc(std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_valloc(n);
}
void* pvalloc(std::size_t n) {
  return note_alloc(ATTN_SITE) ? nullptr : __libc_pvalloc(n);
}
}

void* operator new(std::size_t n) {
  return counted_new(n, ATTN_SITE);
}
void* operator new[](std::size_t n) {
  return counted_new(n, ATTN_SITE);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_new_nothrow(n, ATTN_SITE);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_new_nothrow(n, ATTN_SITE);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, a, ATTN_SITE);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, a, ATTN_SITE);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_new_aligned_nothrow(n, a, ATTN_SITE);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_new_aligned_nothrow(n, a, ATTN_SITE);
}
void operator delete(void* p) noexcept {
  counted_delete(p);
}
void operator delete[](void* p) noexcept {
  counted_delete(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_delete(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_delete(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  counted_delete(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  counted_delete(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  counted_delete(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  counted_delete(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  counted_delete(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  counted_delete(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_delete(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_delete(p);
}

namespace {

// Counts the allocations and frees made while it lives.
class Counting {
 public:
  Counting() {
    g_allocs = 0;
    g_frees = 0;
    g_site_count = 0;
    g_counting = true;
  }
  ~Counting() { g_counting = false; }
  long allocs() const { return g_allocs.load(); }
  long frees() const { return g_frees.load(); }
  // The first allocation sites as "module+offset (symbol)"; addr2line -f -C -e module offset
  // names the line.
  static std::string sites() {
    std::string s;
    const int n = std::min(g_site_count.load(), kMaxSites);
    for (int i = 0; i < n; ++i) {
      Dl_info info{};
      char buf[512];
      if (dladdr(g_sites[i], &info) != 0 && info.dli_fname != nullptr) {
        std::snprintf(buf, sizeof buf, " %s+%#tx (%s)", info.dli_fname,
                      static_cast<char*>(g_sites[i]) - static_cast<char*>(info.dli_fbase),
                      info.dli_sname ? info.dli_sname : "?");
      } else {
        std::snprintf(buf, sizeof buf, " %p", g_sites[i]);
      }
      s += buf;
    }
    return s;
  }
};

constexpr float kSentinel = 4321.0f;

// The problems, built once; run(ctx) makes one call of each routine.
struct Workload {
  // matmul: 97 x 83 x 61, both transposes, alpha and beta; A B^T 32 x 2100 x 300 (B^T 2.5 MB,
  // over half of L2: computed as its transpose, GemmPath::c_transposed, where L2 is under 5 MB).
  std::vector<float> a, b, c, ta, tb, tc;
  // matmul with a PackedMatrix (when set): 40 x 700 x 300 (threaded), pb packed by pack_for.
  std::vector<float> pa, pb, pc;
  const attn::PackedMatrix* packed = nullptr;
  const attn::PackedSelfAttention* layer = nullptr;  // self_attention's weights packed, when set
  attn::PackedMatrix packed_b;
  attn::PackedSelfAttention packed_layer;

  // Packs B and the layer for ctx's ISA into packed_b and packed_layer (their allocations, to be
  // made before any counting) and points packed and layer at them.
  void pack_for(attn::Context& ctx) {
    REQUIRE(attn::pack_matrix(ctx, attn::make_matrix<const float>(pb.data(), 300, 700),
                              attn::Transpose::no, &packed_b)
                .ok());
    REQUIRE(attn::pack_self_attention(ctx, self_attention_params(), &packed_layer).ok());
    packed = &packed_b;
    layer = &packed_layer;
  }
  // exp: long enough for the threaded path (>= 2^16).
  std::vector<float> ex, ey;
  // softmax: 3 x 30000 (>= 2^16 elements, threaded), and a small in-place one.
  std::vector<float> sx, sy, small;
  // attention: GQA, cross-attention, Dk != Dv, every mask part, with and without weights.
  std::size_t B = 2, Hq = 4, Hkv = 2, Lq = 37, Lk = 53, Dk = 24, Dv = 16;
  std::vector<float> q, k, v, out, w, bias;
  std::vector<std::uint8_t> allowed;
  std::vector<std::int32_t> lengths{53, 20};
  // self_attention: batch 2, seq 19, d_model 32, 4 heads over 2 kv heads, biases, Wo, weights.
  std::size_t batch = 2, seq = 19, dm = 32, heads = 4, kv_heads = 2, dk = 8, d_out = 24;
  std::vector<float> x, wq, wk, wv, wo, bq, bk, bv, bo, sa_out, sa_w;

  Workload() {
    attn_test::Rng rng(42);
    a = rng.uniform_vec(97 * 61);
    b = rng.uniform_vec(61 * 83);
    c = rng.uniform_vec(97 * 83);
    ta = rng.uniform_vec(32 * 300);
    tb = rng.uniform_vec(2100 * 300);
    tc.assign(32 * 2100, 0.0f);
    pa = rng.uniform_vec(40 * 300);
    pb = rng.uniform_vec(300 * 700);
    pc.assign(40 * 700, 0.0f);
    ex = rng.uniform_vec(70000, -90.0f, 90.0f);
    ey.assign(ex.size(), 0.0f);
    sx = rng.uniform_vec(3 * 30000, -5.0f, 5.0f);
    sy.assign(sx.size(), 0.0f);
    small = rng.uniform_vec(4 * 9);
    q = rng.uniform_vec(B * Hq * Lq * Dk);
    k = rng.uniform_vec(B * Hkv * Lk * Dk);
    v = rng.uniform_vec(B * Hkv * Lk * Dv);
    out.assign(B * Hq * Lq * Dv, 0.0f);
    w.assign(B * Hq * Lq * Lk, 0.0f);
    bias = rng.uniform_vec(Lq * Lk);
    allowed.assign(B * Lq * Lk, 1);
    for (std::size_t i = 0; i < allowed.size(); i += 7)
      allowed[i] = 0;
    const std::size_t rows = batch * seq;
    x = rng.uniform_vec(rows * dm);
    wq = rng.uniform_vec(dm * heads * dk, -0.3f, 0.3f);
    wk = rng.uniform_vec(dm * kv_heads * dk, -0.3f, 0.3f);
    wv = rng.uniform_vec(dm * kv_heads * dk, -0.3f, 0.3f);
    wo = rng.uniform_vec(heads * dk * d_out, -0.3f, 0.3f);
    bq = rng.uniform_vec(heads * dk);
    bk = rng.uniform_vec(kv_heads * dk);
    bv = rng.uniform_vec(kv_heads * dk);
    bo = rng.uniform_vec(d_out);
    sa_out.assign(rows * std::max(d_out, heads * dk), 0.0f);  // with and without Wo
    sa_w.assign(batch * heads * seq * seq, 0.0f);
  }

  // self_attention's weights (GQA, biases, Wo) with a causal mask and no weights output.
  attn::SelfAttentionParams self_attention_params() {
    attn::SelfAttentionParams p;
    p.q = {attn::make_matrix<const float>(wq.data(), dm, heads * dk), bq.data()};
    p.k = {attn::make_matrix<const float>(wk.data(), dm, kv_heads * dk), bk.data()};
    p.v = {attn::make_matrix<const float>(wv.data(), dm, kv_heads * dk), bv.data()};
    p.o = {attn::make_matrix<const float>(wo.data(), heads * dk, d_out), bo.data()};
    p.num_heads = heads;
    p.num_kv_heads = kv_heads;
    p.attention.mask = attn::Mask::causal();
    return p;
  }

  // Each call, checked for ok; returns the number of calls that failed.
  int run(attn::Context& ctx) {
    int failed = 0;
    auto ok = [&](const attn::Status& s) { failed += s.ok() ? 0 : 1; };
    using attn::Transpose;
    ok(attn::matmul(ctx, attn::make_matrix<const float>(a.data(), 97, 61), Transpose::no,
                    attn::make_matrix<const float>(b.data(), 61, 83), Transpose::no,
                    attn::make_matrix(c.data(), 97, 83), 1.0f, 0.0f));
    ok(attn::matmul(ctx, attn::make_matrix<const float>(a.data(), 61, 97), Transpose::yes,
                    attn::make_matrix<const float>(b.data(), 83, 61), Transpose::yes,
                    attn::make_matrix(c.data(), 97, 83), 0.5f, 0.25f));
    ok(attn::matmul(ctx, attn::make_matrix<const float>(ta.data(), 32, 300), Transpose::no,
                    attn::make_matrix<const float>(tb.data(), 2100, 300), Transpose::yes,
                    attn::make_matrix(tc.data(), 32, 2100), 1.0f, 0.0f));
    if (packed != nullptr) {
      ok(attn::matmul(ctx, attn::make_matrix<const float>(pa.data(), 40, 300), Transpose::no,
                      *packed, attn::make_matrix(pc.data(), 40, 700), 1.0f, 0.5f));
    }
    ok(attn::exp(ctx, ex.data(), ey.data(), ex.size()));
    ok(attn::exp(ctx, ey.data(), ey.data(), 1000));
    ok(attn::softmax(ctx, attn::make_matrix<const float>(sx.data(), 3, 30000),
                     attn::make_matrix(sy.data(), 3, 30000)));
    ok(attn::softmax(ctx, attn::make_matrix<const float>(small.data(), 4, 9),
                     attn::make_matrix(small.data(), 4, 9)));
    const auto tq = attn::make_bhsd<const float>(q.data(), B, Hq, Lq, Dk);
    const auto tk = attn::make_bhsd<const float>(k.data(), B, Hkv, Lk, Dk);
    const auto tv = attn::make_bhsd<const float>(v.data(), B, Hkv, Lk, Dv);
    const auto to = attn::make_bhsd(out.data(), B, Hq, Lq, Dv);
    ok(attn::attention(ctx, tq, tk, tv, to, {}));
    attn::AttentionOptions o;
    o.mask = attn::Mask::causal(attn::CausalAlign::bottom_right)
                 .with_window(9, 2)
                 .with_key_lengths(lengths.data())
                 .with_additive(attn::make_bhsd<const float>(bias.data(), 1, 1, Lq, Lk))
                 .with_allowed(attn::make_bhsd<const std::uint8_t>(allowed.data(), B, 1, Lq, Lk));
    o.weights = attn::make_bhsd(w.data(), B, Hq, Lq, Lk);
    ok(attn::attention(ctx, tq, tk, tv, to, o));
    o.weights = {};
    ok(attn::attention(ctx, tq, tk, tv, to, o));
    // Decoding: one query row per head, 2 per KV head (scores from K in place, nothing packed).
    ok(attn::attention(ctx, attn::make_bhsd<const float>(q.data(), B, Hq, 1, Dk), tk, tv,
                       attn::make_bhsd(out.data(), B, Hq, 1, Dv), {}));
    const std::size_t rows = batch * seq;
    attn::SelfAttentionParams p = self_attention_params();
    p.attention.weights = attn::make_bhsd(sa_w.data(), batch, heads, seq, seq);
    const auto xv = attn::make_matrix<const float>(x.data(), rows, dm);
    ok(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(sa_out.data(), rows, d_out)));
    p.o = {};
    p.attention.weights = {};
    ok(attn::self_attention(ctx, xv, batch, p, attn::make_matrix(sa_out.data(), rows, heads * dk)));
    if (layer != nullptr) {
      ok(attn::self_attention(ctx, xv, batch, *layer, p.attention,
                              attn::make_matrix(sa_out.data(), rows, layer->d_out())));
    }
    return failed;
  }
};

}  // namespace

namespace {
// Stores every pointer, so the compiler cannot elide an allocation whose result is unused.
void* volatile g_sink = nullptr;
template <class T>
T* keep(T* p) {
  g_sink = p;
  return p;
}
}  // namespace

TEST_CASE("the counting allocator sees every allocation function", "[alloc]") {
  // Guards the test below: a replacement that the process does not use would count nothing.
  struct alignas(128) Wide {
    char c[128];
  };
  long allocs = 0, frees = 0;
  int memalign_rc = -1;
  {
    Counting count;
    void* p = keep(std::malloc(10));
    p = keep(std::realloc(p, 100));
    std::free(p);
    std::free(keep(std::calloc(3, 4)));
    void* q = nullptr;
    memalign_rc = posix_memalign(&q, 64, 128);
    std::free(keep(q));
    std::free(keep(aligned_alloc(64, 128)));
    delete keep(new int(1));
    delete[] keep(new int[3]);
    delete keep(new (std::nothrow) int(2));
    delete keep(new Wide);
    delete[] keep(new Wide[2]);
    std::vector<float> vec(1000);
    keep(vec.data());
    vec.resize(5000);
    keep(vec.data());
    allocs = count.allocs();
    frees = count.frees();
  }
  CHECK(memalign_rc == 0);
  CHECK(allocs == 12);
  CHECK(frees == 10);  // vec's second buffer is still alive; realloc's is not a separate free
}

TEST_CASE("no allocation in steady state: every routine, every ISA, 1 and several threads",
          "[alloc]") {
  Workload work;
  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2, 3}) {
      INFO("isa " << attn::isa_name(isa) << ", " << threads << " threads");
      attn::Context ctx = attn_test::make_context(isa, threads);
      work.pack_for(ctx);
      {
        Counting count;
        REQUIRE(work.run(ctx) == 0);  // warm-up: grows the arena, starts the OpenMP team
        CHECK(count.allocs() >= 1);   // the arena did grow: the counter sees attn's allocations
      }
      for (int round = 0; round < 3; ++round) {
        Counting count;
        REQUIRE(work.run(ctx) == 0);
        const long allocs = count.allocs(), frees = count.frees();
        INFO("round " << round << ": allocation sites" << Counting::sites());
        CHECK(allocs == 0);
        CHECK(frees == 0);
      }
    }
  }
}

TEST_CASE("a Context reserved to another's peak scratch allocates nothing in its first calls",
          "[alloc]") {
  // Context::reserve_scratch: the allocation at start-up instead of in the first call of each
  // shape. The OpenMP team of a given size is the runtime's, built by the first Context's calls.
  Workload work;
  for (attn::Isa isa : attn_test::test_isas()) {
    for (int threads : {1, 2}) {
      INFO("isa " << attn::isa_name(isa) << ", " << threads << " threads");
      attn::Context first = attn_test::make_context(isa, threads);
      work.pack_for(first);
      REQUIRE(work.run(first) == 0);
      const std::size_t peak = first.peak_scratch_bytes();
      CHECK(peak > 0);

      attn::Context ctx = attn_test::make_context(isa, threads);
      {
        Counting count;
        REQUIRE(ctx.reserve_scratch(peak).ok());
        CHECK(count.allocs() == 1);
      }
      Counting count;
      REQUIRE(work.run(ctx) == 0);
      const long allocs = count.allocs(), frees = count.frees();
      INFO("allocation sites" << Counting::sites());
      CHECK(allocs == 0);
      CHECK(frees == 0);
      CHECK(ctx.scratch_bytes() == peak);
    }
  }
}

#if defined(_OPENMP)
TEST_CASE("calls from inside the caller's own OpenMP parallel region allocate nothing", "[alloc]") {
  // Each of the caller's 2 threads runs the workload on its own 2-thread Context. The runtime does
  // not nest regions by default (max-active-levels 1, set here whatever OMP_MAX_ACTIVE_LEVELS
  // says), so each call runs on its caller's thread; entering the nested region anyway made
  // libgomp allocate a one-thread team in every call.
  struct Levels {
    int saved = omp_get_max_active_levels();
    Levels() { omp_set_max_active_levels(1); }
    ~Levels() { omp_set_max_active_levels(saved); }
  } levels;
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    Workload works[2];
    attn::Context ctxs[2] = {attn_test::make_context(isa, 2), attn_test::make_context(isa, 2)};
    for (int t = 0; t < 2; ++t)
      works[t].pack_for(ctxs[t]);
    int failed[2] = {0, 0};
    for (int round = 0; round < 3; ++round) {  // round 0 warms up: arenas, the caller's team
      Counting count;
#pragma omp parallel num_threads(2)
      {
        const int t = omp_get_thread_num();
        failed[t] += works[t].run(ctxs[t]);
      }
      REQUIRE(failed[0] + failed[1] == 0);
      if (round == 0) continue;
      const long allocs = count.allocs(), frees = count.frees();
      INFO("round " << round << ": allocation sites" << Counting::sites());
      CHECK(allocs == 0);
      CHECK(frees == 0);
    }
    // The same bits as the workload run outside any region on a 2-thread Context.
    Workload alone;
    attn::Context ctx = attn_test::make_context(isa, 2);
    alone.pack_for(ctx);
    for (int round = 0; round < 3; ++round)  // pc accumulates (beta 0.5)
      REQUIRE(alone.run(ctx) == 0);
    for (const Workload& w : works) {
      CHECK(w.c == alone.c);
      CHECK(w.tc == alone.tc);
      CHECK(w.pc == alone.pc);
      CHECK(w.ey == alone.ey);
      CHECK(w.sy == alone.sy);
      CHECK(w.out == alone.out);
      CHECK(w.sa_out == alone.sa_out);
    }
  }
}
#endif

TEST_CASE("pack_self_attention copies Wq, Wk, Wv only where they lie apart", "[alloc]") {
  // README "Allocation": the temporary side-by-side copy is made only for weights that lie apart.
  // [Wq | Wk | Wv] in one matrix is packed in place whatever the biases: with only Q's bias the
  // call makes exactly one allocation more than with none (the biases' buffer), not two (that
  // and a copy of the weights, as before 2026-12-03); with the weights apart, one more again.
  attn::Context ctx;
  const std::size_t dm = 16, cols = 3 * 8;
  std::vector<float> w(dm * cols, 0.25f), bias(cols, 0.5f);
  attn::SelfAttentionParams p;
  p.q.weight = {w.data(), dm, 8, cols};
  p.k.weight = {w.data() + 8, dm, 8, cols};
  p.v.weight = {w.data() + 16, dm, 8, cols};
  p.num_heads = 2;
  const auto allocations = [&](const attn::SelfAttentionParams& params) {
    attn::PackedSelfAttention layer;
    Counting count;
    REQUIRE(attn::pack_self_attention(ctx, params, &layer).ok());
    return count.allocs();
  };
  const long none = allocations(p);
  attn::SelfAttentionParams with_q_bias = p;
  with_q_bias.q.bias = bias.data();
  CHECK(allocations(with_q_bias) == none + 1);
  std::vector<float> wq(dm * 8, 0.25f);
  attn::SelfAttentionParams apart = with_q_bias;
  apart.q.weight = attn::make_matrix<const float>(wq.data(), dm, 8);
  CHECK(allocations(apart) == none + 2);
}

TEST_CASE("a scratch allocation failure is out_of_memory and writes nothing", "[alloc][oom]") {
  for (attn::Isa isa : attn_test::test_isas()) {
    INFO("isa " << attn::isa_name(isa));
    attn::Context ctx = attn_test::make_context(isa, 2);
    // 40 keys: more than the latency path takes (it needs no scratch), so the tiled path runs.
    std::vector<float> q(2 * 40 * 8, 0.5f), out(2 * 40 * 8, kSentinel);
    const auto tq = attn::make_bhsd<const float>(q.data(), 1, 2, 40, 8);
    const auto to = attn::make_bhsd(out.data(), 1, 2, 40, 8);
    g_fail_allocs = 1;
    const attn::Status s = attn::attention(ctx, tq, tq, tq, to, {});
    g_fail_allocs = 0;
    INFO(s.message());
    CHECK(s.code() == attn::StatusCode::out_of_memory);
    CHECK(std::string(s.message()).find("attention: could not allocate") == 0);
    CHECK(std::string(s.message()).find("bytes of scratch") != std::string::npos);
    for (float x : out)
      CHECK(x == kSentinel);
    CHECK(ctx.scratch_bytes() == 0);
    CHECK(attn::attention(ctx, tq, tq, tq, to, {}).ok());  // the next call allocates and runs
    CHECK(out[0] != kSentinel);

    std::vector<float> a(40 * 40, 1.0f), c(40 * 40, kSentinel);
    const auto av = attn::make_matrix<const float>(a.data(), 40, 40);
    ctx.release_scratch();
    g_fail_allocs = 1;  // A^T takes the packed path, which needs scratch
    const attn::Status ms = attn::matmul(ctx, av, attn::Transpose::yes, av, attn::Transpose::no,
                                         attn::make_matrix(c.data(), 40, 40));
    g_fail_allocs = 0;
    CHECK(ms.code() == attn::StatusCode::out_of_memory);
    CHECK(std::string(ms.message()).find("matmul: could not allocate") == 0);
    for (float x : c)
      CHECK(x == kSentinel);

    // pack_matrix's own allocation: out_of_memory, and the PackedMatrix keeps what it held.
    attn::PackedMatrix packed;
    REQUIRE(attn::pack_matrix(ctx, av, attn::Transpose::no, &packed).ok());
    g_fail_allocs = 1;
    const attn::Status ps = attn::pack_matrix(ctx, attn::make_matrix<const float>(a.data(), 20, 30),
                                              attn::Transpose::no, &packed);
    g_fail_allocs = 0;
    INFO(ps.message());
    CHECK(ps.code() == attn::StatusCode::out_of_memory);
    CHECK(std::string(ps.message()).find("could not allocate") != std::string::npos);
    CHECK(packed.rows() == 40);
    CHECK(packed.cols() == 40);

    // pack_self_attention's first, its copy of [Wq | Wk | Wv] (the weights lie apart): the
    // PackedSelfAttention stays empty.
    Workload work;
    attn::PackedSelfAttention layer;
    g_fail_allocs = 1;
    const attn::Status ls = attn::pack_self_attention(ctx, work.self_attention_params(), &layer);
    g_fail_allocs = 0;
    INFO(ls.message());
    CHECK(ls.code() == attn::StatusCode::out_of_memory);
    CHECK(std::string(ls.message()).find("could not allocate the packed layer") !=
          std::string::npos);
    CHECK(layer.empty());
    CHECK(attn::pack_self_attention(ctx, work.self_attention_params(), &layer).ok());
    CHECK(!layer.empty());
  }
}

TEST_CASE("the reference's work space failing at any of its allocations is out_of_memory",
          "[alloc][oom]") {
  // reference::attention takes three work arrays (scores, accumulator, blocked keys) and
  // reference::self_attention four (Q, K, V, heads) before its attention's three: the n-th
  // allocation failing, for each n, is out_of_memory before any output is written, and every
  // array taken before it is freed (frees == allocations - the one refused). The (n + 1)-th
  // call of a run that allocates n times does not fail: the count is exact.
  const std::size_t heads = 2, seq = 5, dm = 8, dk = 4;
  std::vector<float> x(seq * dm, 0.25f), w(dm * heads * dk, 0.5f), out(seq * heads * dk);
  const auto xv = attn::make_matrix<const float>(x.data(), seq, dm);
  const auto ov = attn::make_matrix(out.data(), seq, heads * dk);
  attn::SelfAttentionParams p;
  p.q.weight = p.k.weight = p.v.weight = attn::make_matrix<const float>(w.data(), dm, heads * dk);
  p.num_heads = heads;
  const auto tq = attn::make_bhsd<const float>(x.data(), 1, 1, seq, dm);
  const auto to = attn::make_bhsd(out.data(), 1, 1, seq, dm);
  struct Call {
    const char* name;
    int allocations;
    std::function<attn::Status()> run;
  };
  const Call calls[] = {
      {"reference::attention", 3, [&] { return attn::reference::attention(tq, tq, tq, to, {}); }},
      {"reference::self_attention", 7,
       [&] { return attn::reference::self_attention(xv, 1, p, ov); }},
  };
  for (const Call& call : calls) {
    for (int n = 1; n <= call.allocations + 1; ++n) {
      INFO(call.name << ", allocation " << n << " refused");
      std::fill(out.begin(), out.end(), kSentinel);
      attn::Status s;
      long allocs = 0, frees = 0;
      {
        Counting counting;
        g_pass_allocs = n - 1;
        g_fail_allocs = 1;
        s = call.run();
        allocs = counting.allocs();
        frees = counting.frees();
        g_fail_allocs = 0;
        g_pass_allocs = 0;
      }
      if (n <= call.allocations) {
        INFO((s.message() ? s.message() : ""));
        CHECK(s.code() == attn::StatusCode::out_of_memory);
        CHECK(std::string(s.message()).find("could not allocate its work space") !=
              std::string::npos);
        for (float y : out)
          CHECK(y == kSentinel);
        CHECK(allocs == n);
        CHECK(frees == n - 1);
      } else {
        CHECK(s.ok());
        CHECK(allocs == call.allocations);
        CHECK(frees == call.allocations);
      }
    }
  }
}

TEST_CASE("a Context whose state cannot be allocated fails every call with out_of_memory",
          "[alloc][oom]") {
  g_fail_allocs = 1;
  attn::Context ctx;
  g_fail_allocs = 0;
  CHECK(ctx.init_status().code() == attn::StatusCode::out_of_memory);
  CHECK(ctx.set_num_threads(2).code() == attn::StatusCode::out_of_memory);
  CHECK(ctx.set_isa(attn::Isa::scalar).code() == attn::StatusCode::out_of_memory);
  CHECK(ctx.num_threads() == 1);
  CHECK(ctx.scratch_bytes() == 0);
  std::vector<float> x(8, 1.0f), y(8, kSentinel);
  CHECK(attn::exp(ctx, x.data(), y.data(), 8).code() == attn::StatusCode::out_of_memory);
  CHECK(attn::softmax(ctx, attn::make_matrix<const float>(x.data(), 2, 4),
                      attn::make_matrix(y.data(), 2, 4))
            .code() == attn::StatusCode::out_of_memory);
  for (float e : y)
    CHECK(e == kSentinel);
}

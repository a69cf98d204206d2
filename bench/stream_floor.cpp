// attn-stream-floor: how fast this core reads a decoding step's K and V, with nothing else to do.
//
//     attn-stream-floor [kv_heads keys dim [tile [offset_bytes]]]
//
// (default: 8 4096 128 and 12 1024 64, tiles of 128 keys, each at offsets 0 and 16 bytes).
//
// K and V are [kv_heads][keys][dim] floats each, as attention_decode's; per head and per tile of
// `tile` keys the loop sums the K tile, then the V tile (the order the fused attention reads
// them), with independent sums so the loads run back to back. 200 passes over
// the same data, as a benchmark's iterations make them (data that fits in the last-level cache
// stays there). Prints the median and best time of a pass and the bytes read per second: the
// floor for attention_decode of that shape on this core, to set its time against.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ATTN_FLOOR_X86 1
#endif

namespace {

constexpr int kPasses = 200;
constexpr int kSums = 16;

// The widest loads the CPU has (x86: AVX-512, else AVX2; function target attributes, as in
// peak.cpp): the narrower the loads, the fewer lines in flight, and SSE2 loads read this
// machine's DRAM at 0.55x the AVX-512 rate.
void sum_tile_portable(const float* x, std::size_t n, float* acc) {
  float a[kSums] = {};  // local, so the compiler knows x cannot alias the sums
  std::size_t i = 0;
  for (; i + kSums <= n; i += kSums) {
    for (int s = 0; s < kSums; ++s)
      a[s] += x[i + s];
  }
  for (; i < n; ++i)
    a[0] += x[i];
  for (int s = 0; s < kSums; ++s)
    acc[s] += a[s];
}

#if defined(ATTN_FLOOR_X86)
__attribute__((target("avx512f"))) void sum_tile_avx512(const float* x, std::size_t n, float* acc) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  acc[0] += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  sum_tile_portable(x + i, n - i, acc);
}

__attribute__((target("avx2"))) void sum_tile_avx2(const float* x, std::size_t n, float* acc) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (float f : t)
    acc[0] += f;
  sum_tile_portable(x + i, n - i, acc);
}
#endif

using SumTile = void (*)(const float*, std::size_t, float*);

class AlignedFloats {
 public:
  // n floats starting `offset` floats past a 64-byte boundary.
  AlignedFloats(std::size_t n, std::size_t offset)
      : base_(static_cast<float*>(
            std::aligned_alloc(64, ((n + offset) * sizeof(float) + 63) / 64 * 64))),
        p_(base_ + offset) {
    if (base_ == nullptr) std::abort();
  }
  ~AlignedFloats() { std::free(base_); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float& operator[](std::size_t i) { return p_[i]; }
  const float* data() const { return p_; }

 private:
  float* base_;
  float* p_;
};

SumTile pick(const char** name) {
#if defined(ATTN_FLOOR_X86)
  if (__builtin_cpu_supports("avx512f")) {
    *name = "AVX-512";
    return &sum_tile_avx512;
  }
  if (__builtin_cpu_supports("avx2")) {
    *name = "AVX2";
    return &sum_tile_avx2;
  }
#endif
  *name = "portable";
  return &sum_tile_portable;
}

void run(std::size_t heads, std::size_t keys, std::size_t dim, std::size_t tile,
         std::size_t offset) {
  const char* isa = "";
  const SumTile sum_tile = pick(&isa);
  const std::size_t n = heads * keys * dim;
  AlignedFloats k(n, offset), v(n, offset);
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = static_cast<float>(i % 7);
    v[i] = static_cast<float>(i % 5);
  }
  std::vector<double> seconds;
  float acc[kSums] = {};
  for (int pass = 0; pass < kPasses; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t j = 0; j < keys; j += tile) {
        const std::size_t rows = std::min(tile, keys - j);
        sum_tile(k.data() + (h * keys + j) * dim, rows * dim, acc);
        sum_tile(v.data() + (h * keys + j) * dim, rows * dim, acc);
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  float total = 0;
  for (float a : acc)
    total += a;
  std::sort(seconds.begin(), seconds.end());
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  const double median = seconds[seconds.size() / 2], best = seconds.front();
  std::printf(
      "K and V %zux%zux%zu (%.1f MB), tiles of %zu keys, %s loads, data %zu bytes past "
      "a line: median %.3f ms (%.1f GB/s), best %.3f ms (%.1f GB/s)  [checksum %g]\n",
      heads, keys, dim, bytes * 1e-6, tile, isa, offset * sizeof(float), median * 1e3,
      bytes / median * 1e-9, best * 1e3, bytes / best * 1e-9, static_cast<double>(total));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 || argc == 3 || argc > 6) {
    std::fprintf(stderr, "usage: %s [kv_heads keys dim [tile [offset_bytes]]]\n", argv[0]);
    return 2;
  }
  if (argc >= 4) {
    const std::size_t tile = argc >= 5 ? std::strtoul(argv[4], nullptr, 10) : 128;
    const std::size_t offset = argc >= 6 ? std::strtoul(argv[5], nullptr, 10) / sizeof(float) : 0;
    run(std::strtoul(argv[1], nullptr, 10), std::strtoul(argv[2], nullptr, 10),
        std::strtoul(argv[3], nullptr, 10), tile == 0 ? 1 : tile, offset);
    return 0;
  }
  // Line-aligned data, and data 16 bytes past a line: where glibc's malloc puts a large block
  // (attn-bench's std::vector inputs; an unaligned 64-byte load touches two lines).
  for (std::size_t offset : {0, 4}) {
    run(8, 4096, 128, 128, offset);
    run(12, 1024, 64, 128, offset);
  }
  return 0;
}

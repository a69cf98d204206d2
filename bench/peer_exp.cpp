// Vector exp from SLEEF and from glibc's libmvec. Their AVX2 and AVX-512 entry points take
// vectors by value, so the loops calling them are compiled for those ISAs with function target
// attributes (no file-wide flags). The functions are declared here because sleef.h declares
// only the entry points of the ISAs this file's baseline flags enable.
#if defined(ATTN_BENCH_HAVE_SLEEF)
#include <sleef.h>
#endif
#if defined(ATTN_BENCH_HAVE_LIBMVEC)
#include <gnu/libc-version.h>
#endif
#include <immintrin.h>

#include "peers.hpp"

// Passing __m256/__m512 to a function declared outside a target region makes GCC warn that the
// ABI differs without AVX; the callers below are all AVX, which is the ABI these functions use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// Declared with the ISA they need, as Clang requires of functions taking vectors by value.
#define ATTN_AVX2 __attribute__((target("avx2,fma")))
#define ATTN_AVX512 __attribute__((target("avx512f")))
extern "C" {
#if defined(ATTN_BENCH_HAVE_SLEEF)
ATTN_AVX2 __m256 Sleef_expf8_u10avx2(__m256);
ATTN_AVX512 __m512 Sleef_expf16_u10avx512f(__m512);
#endif
#if defined(ATTN_BENCH_HAVE_LIBMVEC)
// The vector-function ABI names of expf: 'd' is AVX2, 'e' is AVX-512.
ATTN_AVX2 __m256 _ZGVdN8v_expf(__m256);
ATTN_AVX512 __m512 _ZGVeN16v_expf(__m512);
#endif
}

namespace attn_bench {

#if defined(ATTN_BENCH_HAVE_SLEEF)
ATTN_AVX2 void sleef_exp_avx2(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(y + i, Sleef_expf8_u10avx2(_mm256_loadu_ps(x + i)));
}
ATTN_AVX512 void sleef_exp_avx512(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(y + i, Sleef_expf16_u10avx512f(_mm512_loadu_ps(x + i)));
}
std::string sleef_description() {
  return "SLEEF " + std::to_string(SLEEF_VERSION_MAJOR) + "." +
         std::to_string(SLEEF_VERSION_MINOR) + "." + std::to_string(SLEEF_VERSION_PATCHLEVEL) +
         " (expf u10: 1.0 ULP)";
}
#endif

#if defined(ATTN_BENCH_HAVE_LIBMVEC)
ATTN_AVX2 void libmvec_exp_avx2(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(y + i, _ZGVdN8v_expf(_mm256_loadu_ps(x + i)));
}
ATTN_AVX512 void libmvec_exp_avx512(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(y + i, _ZGVeN16v_expf(_mm512_loadu_ps(x + i)));
}
std::string libmvec_description() {
  return std::string("libmvec (glibc ") + gnu_get_libc_version() + ")";
}
#endif

}  // namespace attn_bench

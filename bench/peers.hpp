// Peer libraries, benchmarks only: each is compiled in when CMake found it (ATTN_BENCH_HAVE_<X>)
// and is never linked into attn itself.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attn_bench {

// c = a·op(b), row-major and dense: a is m×k, b is k×n (or n×k when trans_b), c is m×n.
struct GemmProblem {
  std::size_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
};

class PeerGemm {
 public:
  virtual ~PeerGemm() = default;
  // Sets the library's thread count and creates whatever it needs to compute p (outside the
  // timing loop). Returns an empty string, or why the peer cannot run.
  virtual std::string prepare(const GemmProblem& p, int threads) = 0;
  virtual void run() = 0;
  // Which of the library's kernels runs, when it says (for the benchmark's label).
  virtual std::string label() const { return {}; }
};

using GemmFactory = std::function<std::unique_ptr<PeerGemm>()>;
// The matmul peers linked in (and able to run on this CPU), by benchmark name.
std::vector<std::pair<std::string, GemmFactory>> gemm_peers();

#if defined(ATTN_BENCH_HAVE_OPENBLAS)
std::unique_ptr<PeerGemm> make_openblas_gemm();
std::string openblas_description();
// OpenBLAS picks its kernels when it loads, from the CPU, unless OPENBLAS_CORETYPE names them.
const char* openblas_core();
#endif
#if defined(ATTN_BENCH_HAVE_BLIS)
std::unique_ptr<PeerGemm> make_blis_gemm();
std::string blis_description();
#endif
#if defined(ATTN_BENCH_HAVE_ONEDNN)
std::unique_ptr<PeerGemm> make_onednn_matmul();  // the matmul primitive, created in prepare
std::unique_ptr<PeerGemm> make_onednn_sgemm();   // dnnl_sgemm
// The matmul primitive with its weights reordered once in prepare (format_tag::any).
std::unique_ptr<PeerGemm> make_onednn_matmul_packed();
std::string onednn_description();
#endif
#if defined(ATTN_BENCH_HAVE_EIGEN)
// Plain functions: peer_eigen.cpp is compiled with its own -march flags, so it shares no
// inline function or class with the rest of the binary.
namespace eigen_peer {
void set_threads(int n);
void gemm(std::size_t m, std::size_t n, std::size_t k, bool trans_b, const float* a, const float* b,
          float* c);
// "eigen 3.4.0 (AVX512, FMA, ...; OpenMP)": a static string.
const char* description();
// True when the CPU runs the instructions peer_eigen.cpp was compiled for.
bool cpu_supported();
}  // namespace eigen_peer
#endif

// y[i] = e^x[i] for n a multiple of 16.
using ExpFn = void (*)(const float* x, float* y, std::size_t n);
#if defined(ATTN_BENCH_HAVE_SLEEF)
void sleef_exp_avx2(const float* x, float* y, std::size_t n);    // Sleef_expf8_u10avx2
void sleef_exp_avx512(const float* x, float* y, std::size_t n);  // Sleef_expf16_u10avx512f
std::string sleef_description();
#endif
#if defined(ATTN_BENCH_HAVE_LIBMVEC)
void libmvec_exp_avx2(const float* x, float* y, std::size_t n);    // _ZGVdN8v_expf
void libmvec_exp_avx512(const float* x, float* y, std::size_t n);  // _ZGVeN16v_expf
std::string libmvec_description();
#endif

}  // namespace attn_bench

// Eigen's GEMM. Eigen is header-only, so its speed depends on this file's flags: CMake compiles
// it with ATTN_BENCH_EIGEN_FLAGS (-march=native by default) and OpenMP (Eigen's threads). It
// exports plain functions only, and is linked after the other objects, so the linker keeps the
// baseline copies of any inline function it shares with them.
#include <Eigen/Core>
#include <cstdio>

#include "peers.hpp"

namespace attn_bench::eigen_peer {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void set_threads(int n) {
  Eigen::setNbThreads(n);
}

void gemm(std::size_t m, std::size_t n, std::size_t k, bool trans_b, const float* a, const float* b,
          float* c) {
  const auto M = static_cast<Eigen::Index>(m), N = static_cast<Eigen::Index>(n),
             K = static_cast<Eigen::Index>(k);
  Eigen::Map<const RowMajor> A(a, M, K);
  Eigen::Map<RowMajor> C(c, M, N);
  if (trans_b) {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, N, K).transpose();
  } else {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, K, N);
  }
}

const char* description() {
  static char text[256];
  std::snprintf(text, sizeof text, "Eigen %d.%d.%d (%s; %s)", EIGEN_WORLD_VERSION,
                EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse(),
#if defined(EIGEN_HAS_OPENMP)
                "OpenMP"
#else
                "no OpenMP"
#endif
  );
  return text;
}

bool cpu_supported() {
#if defined(__x86_64__)
  __builtin_cpu_init();
#if defined(__AVX512F__)
  if (!__builtin_cpu_supports("avx512f")) return false;
#endif
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2")) return false;
#endif
#if defined(__FMA__)
  if (!__builtin_cpu_supports("fma")) return false;
#endif
#endif
  return true;
}

}  // namespace attn_bench::eigen_peer

// What the GEMM's drivers (matmul/gemm.cpp) and its path rules (matmul/gemm_path.cpp) share: the
// helpers and constants both read, and the rows path's scratch layout that the rules describe.
#pragma once

#include <cstddef>

#include "core/checks.hpp"
#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"

namespace attn::detail {

inline constexpr std::size_t kLineBytes = 64;  // a cache line, on every CPU attn tunes for

// The table's KC on this CPU (GemmBlocking::kc_large_l2).
inline std::size_t table_kc(const Kernels& kern) {
  const GemmBlocking& blk = kern.gemm_blocking;
  return blk.kc_large_l2 != 0 && cpu_info().l2_bytes >= GemmBlocking::kLargeL2Bytes
             ? blk.kc_large_l2
             : blk.kc;
}

// A product with fewer rows than this, a row-major A, k <= 1024 and B within half of L2 takes the
// no-packing tiles on every CPU unless an earlier rule of gemm_path claims it (gemm_path.cpp says
// what was measured); one_direct_tile (gemm.cpp) relies on that.
inline constexpr std::size_t kMinPackedRows = 64;

// GemmPath::rows (use_rows in gemm_path.cpp says why these sizes): each thread's rows of C
// accumulate in kRowsAccFloats of scratch (16 KiB), and the threads split C's columns in runs of
// kRowsColumns.
inline constexpr std::size_t kRowsAccFloats = 4096;
inline constexpr std::size_t kRowsColumns = 64;

}  // namespace attn::detail

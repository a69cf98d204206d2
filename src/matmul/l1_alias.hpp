// Row strides whose lines share L1 sets. An L1 of 4 KiB ways (32 KiB 8-way on Zen 4, 48 KiB
// 12-way on Zen 5 and on Intel since Ice Lake) indexes its sets with address bits 6-11, so rows
// lying a multiple of 2 KiB apart put the lines of one column into one or two sets: a kernel that
// keeps more of those rows' lines in flight than a set has ways evicts its own lines. Kernels
// that read many rows of B at once (gemm_rows_kernel.hpp, the prefetching tiles of
// gemm_kernel.hpp) read fewer at once at such strides (gemm_rows_kernel: unless B is as large as
// L3, read from memory). (The measured losses were at multiples of 4 KiB; 2 KiB multiples put 8
// of 16 rows in a set, as many as its ways: unmeasured.)
// Include from ISA translation units only (ATTN_ISA_NS), as the kernels that use it are.
#pragma once

#include <cstddef>

#ifndef ATTN_ISA_NS
#error "matmul/l1_alias.hpp is included by ISA translation units only"
#endif

namespace attn::detail {
namespace ATTN_ISA_NS {

constexpr std::size_t kL1AliasFloats = 2048 / sizeof(float);

// Whether rows ld floats apart share one or two L1 sets per column.
constexpr bool rows_share_l1_sets(std::size_t ld) {
  return ld % kL1AliasFloats == 0;
}

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail

// An ISA's kernel table with the GEMM driver's blocking narrowed for tests of its loop nest:
// KC 1024 on every CPU and NC one panel of NR, so that small products span several KC and NC
// blocks (with the table's NC, thousands of columns, a second block needs a product of over a
// billion multiply-adds, too slow for the emulated CI stages).
#pragma once

#include "dispatch/kernels.hpp"

namespace attn_test {

inline attn::detail::Kernels narrow_blocking_kernels(attn::Isa isa) {
  attn::detail::Kernels kern = *attn::detail::kernels_for(isa);
  kern.gemm_blocking.kc = 1024;
  kern.gemm_blocking.kc_large_l2 = 0;
  kern.gemm_blocking.nc = kern.gemm_nr;
  return kern;
}

}  // namespace attn_test

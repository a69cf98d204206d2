// Where a matrix's rows start relative to vector boundaries. The rows kernels
// (gemm_rows_kernel.hpp, gemm_rows_t_kernel.hpp) take the floats before B's first boundary as one
// partial vector, so that every later vector load of B lies within one vector-aligned block: a
// 64-byte load 16 bytes past a line (where glibc's malloc places a large block) spans two lines.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn::detail {

// The floats by which every row of `data` (row stride ld floats) starts past a boundary of
// vectors of `lanes` floats, where all rows start equally far past one (ld a whole number of
// vectors); 0 where they do not. Static: the portable driver and the ISA objects each keep their
// own copy, so the linker never hands portable code one compiled with an ISA's flags
// (tests/check_isa_symbols.cmake).
static inline std::size_t rows_vector_phase(const float* data, std::size_t ld, std::size_t lanes) {
  if (ld % lanes != 0) return 0;
  return reinterpret_cast<std::uintptr_t>(data) % (lanes * sizeof(float)) / sizeof(float);
}

}  // namespace attn::detail

#include "dispatch/kernels.hpp"

namespace attn::detail {

// Each table is defined in its ISA's translation unit group, compiled only when the build has
// that ISA (ATTN_HAVE_<ISA>, set by CMake).
extern const Kernels kScalarKernels;
#if defined(ATTN_HAVE_SSE2)
extern const Kernels kSse2Kernels;
#endif
#if defined(ATTN_HAVE_AVX2)
extern const Kernels kAvx2Kernels;
#endif
#if defined(ATTN_HAVE_AVX512)
extern const Kernels kAvx512Kernels;
#endif
#if defined(ATTN_HAVE_NEON)
extern const Kernels kNeonKernels;
#endif

const Kernels* kernels_for(Isa isa) noexcept {
  switch (isa) {
    case Isa::scalar:
      return &kScalarKernels;
#if defined(ATTN_HAVE_SSE2)
    case Isa::sse2:
      return &kSse2Kernels;
#endif
#if defined(ATTN_HAVE_AVX2)
    case Isa::avx2:
      return &kAvx2Kernels;
#endif
#if defined(ATTN_HAVE_AVX512)
    case Isa::avx512:
      return &kAvx512Kernels;
#endif
#if defined(ATTN_HAVE_NEON)
    case Isa::neon:
      return &kNeonKernels;
#endif
    default:
      return nullptr;
  }
}

}  // namespace attn::detail

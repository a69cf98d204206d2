// Instruction sets attn can dispatch to.
#pragma once

#include "attn/export.hpp"

namespace attn {

// scalar: portable C++, always available. sse2: x86-64 baseline. avx2: AVX2 + FMA3.
// avx512: AVX-512 F/DQ/BW/VL. neon: AArch64 Advanced SIMD.
enum class Isa { scalar, sse2, avx2, avx512, neon };

// Every Isa, supported here or not, in declaration order: code that visits each ISA loops over
// this (a new ISA is added here and to the enum only).
inline constexpr Isa kAllIsas[] = {Isa::scalar, Isa::sse2, Isa::avx2, Isa::avx512, Isa::neon};

// "scalar", "sse2", "avx2", "avx512", "neon".
ATTN_API const char* isa_name(Isa isa) noexcept;

// Parses a name as printed by isa_name. Returns false (and leaves *out alone) if unknown.
ATTN_API bool parse_isa(const char* name, Isa* out) noexcept;

// True when this build has kernels for the ISA and the CPU and OS can run them.
ATTN_API bool isa_supported(Isa isa) noexcept;

// The fastest supported ISA.
ATTN_API Isa best_isa() noexcept;

}  // namespace attn

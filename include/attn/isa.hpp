// Instruction sets attn can dispatch to.
#pragma once

namespace attn {

// scalar: portable C++, always available. sse2: x86-64 baseline. avx2: AVX2 + FMA3.
// avx512: AVX-512 F/DQ/BW/VL. neon: AArch64 Advanced SIMD.
enum class Isa { scalar, sse2, avx2, avx512, neon };

// "scalar", "sse2", "avx2", "avx512", "neon".
const char* isa_name(Isa isa) noexcept;

// Parses a name as printed by isa_name. Returns false (and leaves *out alone) if unknown.
bool parse_isa(const char* name, Isa* out) noexcept;

// True when this build has kernels for the ISA and the CPU and OS can run them.
bool isa_supported(Isa isa) noexcept;

// The fastest supported ISA.
Isa best_isa() noexcept;

}  // namespace attn

#include "attn/isa.hpp"

#include <cstring>
#include <initializer_list>

#include "dispatch/cpu.hpp"
#include "dispatch/kernels.hpp"

namespace attn {

const char* isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::sse2:
      return "sse2";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::neon:
      return "neon";
  }
  return "unknown";
}

bool parse_isa(const char* name, Isa* out) noexcept {
  if (name == nullptr) return false;
  for (Isa isa : kAllIsas) {
    if (std::strcmp(name, isa_name(isa)) == 0) {
      *out = isa;
      return true;
    }
  }
  return false;
}

bool isa_supported(Isa isa) noexcept {
  if (detail::kernels_for(isa) == nullptr) return false;
  const detail::CpuInfo& cpu = detail::cpu_info();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::sse2:
      return cpu.sse2;
    case Isa::avx2:
      return cpu.avx2_fma;
    case Isa::avx512:
      return cpu.avx512;
    case Isa::neon:
      return cpu.neon;
  }
  return false;
}

Isa best_isa() noexcept {
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::neon, Isa::sse2}) {
    if (isa_supported(isa)) return isa;
  }
  return Isa::scalar;
}

}  // namespace attn

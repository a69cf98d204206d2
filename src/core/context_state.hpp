// The state behind attn::Context: ISA, kernel table, thread count and the scratch arena.
#pragma once

#include <cstddef>

#include "attn/context.hpp"
#include "attn/isa.hpp"
#include "attn/status.hpp"
#include "core/checks.hpp"
#include "core/large_alloc.hpp"
#include "dispatch/kernels.hpp"

namespace attn::detail {

struct ContextState {
  Isa isa = Isa::scalar;
  const Kernels* kernels = nullptr;
  int threads = 1;
  Status init;  // why ATTN_ISA could not be honoured, until set_isa succeeds

  // Allocated by alloc_large (core/large_alloc.hpp): from 2 MiB on, on a 2 MiB boundary and
  // advised for transparent huge pages.
  void* arena = nullptr;
  std::size_t arena_bytes = 0;
  std::size_t peak_bytes = 0;

  // Makes the arena at least `bytes` long (its contents are not kept) and returns it; the only
  // place attn allocates. out_of_memory if the allocation fails, its message naming the calling
  // function `fn` and the bytes.
  Status scratch(const char* fn, std::size_t bytes, void** out) noexcept;
  void release() noexcept;
};

// The error of a Context whose state is missing (out_of_memory) or failed to initialise (its
// init status), for usable_state.
Status unusable_state(const ContextState* st, const char* fn) noexcept;

// The state of ctx, or the error every call through it must return (init_status, or
// out_of_memory when the state itself could not be allocated). Inline: every call asks it first.
inline Status usable_state(Context& ctx, const char* fn, ContextState** out) noexcept {
  ContextState* st = ctx.state();
  if (st == nullptr || !st->init.ok()) return unusable_state(st, fn);
  *out = st;
  return Status::Ok();
}

// Carves 64-byte aligned pieces out of a scratch block, front to back.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : next_(static_cast<char*>(base)) {}
  static constexpr std::size_t kAlign = 64;
  static_assert(kAlign == kLargeAllocAlign, "the arena's pieces keep its alignment");
  // Saturates (sat_round_up): a saturated size stays SIZE_MAX, which the arena refuses.
  static std::size_t rounded(std::size_t bytes) { return sat_round_up(bytes, kAlign); }
  template <class T>
  T* take(std::size_t count) {
    T* p = reinterpret_cast<T*>(next_);
    next_ += rounded(count * sizeof(T));
    return p;
  }
  void* take_bytes(std::size_t bytes) {
    void* p = next_;
    next_ += rounded(bytes);
    return p;
  }

 private:
  char* next_;
};

}  // namespace attn::detail

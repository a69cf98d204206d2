// The state behind attn::Context: ISA, kernel table, thread count and the scratch arena.
#pragma once

#include <atomic>
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

  // Set while a call uses the arena or the thread count (StateUse): a Context serves one call at
  // a time, and a second one through it meanwhile (only another thread can make it) is refused
  // instead of racing on the arena.
  std::atomic<bool> busy{false};

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

// invalid_argument: fn was called through a Context that another call is using.
Status busy_state(const char* fn) noexcept;

// A call's hold on its Context's state, for the calls that use the arena or the thread count
// (matmul, attention, self_attention) and the Context's setters: the state's busy flag, set by
// use_state and cleared when the StateUse ends.
class StateUse {
 public:
  StateUse() = default;
  StateUse(const StateUse&) = delete;
  StateUse& operator=(const StateUse&) = delete;
  ~StateUse() {
    if (st_ != nullptr) st_->busy.store(false, std::memory_order_release);
  }
  ContextState* state() const { return st_; }

 private:
  friend Status hold_state(ContextState* st, const char* fn, StateUse* use) noexcept;
  ContextState* st_ = nullptr;
};

// Takes the state (st may be null: unusable_state's error) for the StateUse's life, or returns
// busy_state's error if a call holds it. For the Context's setters, which work whatever
// init_status says.
inline Status hold_state(ContextState* st, const char* fn, StateUse* use) noexcept {
  if (st == nullptr) return unusable_state(st, fn);
  if (st->busy.exchange(true, std::memory_order_acquire)) return busy_state(fn);
  use->st_ = st;
  return Status::Ok();
}

// usable_state's checks, then hold_state: for the calls.
inline Status use_state(ContextState* st, const char* fn, StateUse* use) noexcept {
  if (st != nullptr && !st->init.ok()) return st->init;
  return hold_state(st, fn, use);
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

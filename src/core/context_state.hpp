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

  // Set while a call or a setter uses this state (StateUse): a Context serves one call at a time,
  // and a second one through it meanwhile (only another thread can make it) is refused instead of
  // racing on the arena, the ISA or the thread count.
  std::atomic<bool> busy{false};

  // Makes the arena at least `bytes` long (its contents are not kept) and returns it; the only
  // place attn allocates. out_of_memory if the allocation fails, its message naming the calling
  // function `fn` and the bytes.
  Status scratch(const char* fn, std::size_t bytes, void** out) noexcept;
  void release() noexcept;
};

// out_of_memory: fn was called through a Context whose state is missing (moved from, or its
// allocation failed).
Status no_state(const char* fn) noexcept;

// invalid_argument: fn was called through a Context that another call is using.
Status busy_state(const char* fn) noexcept;

// A call's hold on its Context's state, for every call that reads it (matmul, exp, softmax,
// attention, self_attention, pack_matrix; pack_self_attention through its pack_matrix steps) and
// the Context's setters: the state's busy flag, set by hold_state and cleared when the StateUse
// ends.
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

// Takes the state (st may be null: no_state's error) for the StateUse's life, or returns
// busy_state's error if a call holds it. For the Context's setters, which work whatever
// init_status says.
inline Status hold_state(ContextState* st, const char* fn, StateUse* use) noexcept {
  if (st == nullptr) return no_state(fn);
  if (st->busy.exchange(true, std::memory_order_acquire)) return busy_state(fn);
  use->st_ = st;
  return Status::Ok();
}

// hold_state, then init_status's check (under the hold: set_isa writes init): for the calls.
inline Status use_state(ContextState* st, const char* fn, StateUse* use) noexcept {
  ATTN_RETURN_IF_ERROR(hold_state(st, fn, use));
  if (!st->init.ok()) return st->init;
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

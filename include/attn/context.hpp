// Context: the ISA, the thread count and the scratch arena of a sequence of attn calls.
#pragma once

#include <cstddef>

#include "attn/export.hpp"
#include "attn/isa.hpp"
#include "attn/status.hpp"

namespace attn {

namespace detail {
struct ContextState;
}

// One Context per thread of the caller: a Context is not safe to use from two threads at once
// (its scratch arena is shared by the calls made through it). Every call and setter holds it while
// it runs: another one through it meanwhile returns invalid_argument ("in use by another call")
// instead of racing (release_scratch does nothing then). Distinct Contexts are independent.
//
// Threads: with num_threads() == 1 (the default) attn never starts a thread; with n > 1 a call
// with enough work (matmul and attention from about 2 MFLOP, exp and softmax from 65536 elements)
// runs an OpenMP parallel region of exactly n threads, a smaller one runs on the caller's thread,
// as does any call made inside an active parallel region of the caller's where the runtime would
// nest none (OMP_MAX_ACTIVE_LEVELS), and every call in a process forked after attn started threads
// (the runtime's workers do not survive fork).
//
// Memory: a call takes its scratch from the arena, growing it (one allocation) only when the
// call needs more than any earlier call did. After the first call of a given shape and thread
// count, calls of that shape make no heap allocation. An arena of 2 MiB or more (a large product's
// packed panels) starts on a 2 MiB boundary and, on Linux, is advised for transparent huge pages
// (madvise MADV_HUGEPAGE; where /sys/kernel/mm/transparent_hugepage/defrag says so, the kernel
// may compact memory for them in the call that grows the arena).
//
// ISA: the constructor picks best_isa(), or the ISA named by the environment variable ATTN_ISA
// (scalar|sse2|avx2|avx512|neon). If ATTN_ISA names an unknown or unsupported ISA, init_status()
// holds the error and every call returns it until set_isa() succeeds: attn never silently runs
// another ISA than the one asked for.
class ATTN_API Context {
 public:
  Context() noexcept;
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;

  // n >= 1; invalid_argument otherwise (the count is unchanged).
  Status set_num_threads(int n) noexcept;
  int num_threads() const noexcept;

  // unsupported if this build or CPU lacks the ISA, invalid_argument for a value that is not an
  // Isa enumerator (the ISA is unchanged either way).
  Status set_isa(Isa isa) noexcept;
  // The ISA every call through this Context runs while init_status() is ok (with a bad ATTN_ISA
  // the calls fail and this is the ISA the constructor would have picked; scalar when moved from).
  Isa isa() const noexcept;

  // ok, or why ATTN_ISA could not be honoured (or out_of_memory if the Context's own state
  // could not be allocated).
  Status init_status() const noexcept;

  // Bytes held by the scratch arena now, and the most it has ever held.
  std::size_t scratch_bytes() const noexcept;
  std::size_t peak_scratch_bytes() const noexcept;
  // Grows the arena now to at least `bytes` (nothing if it holds that much already) and touches
  // its pages, so that a program makes the allocation and takes its page faults when it starts
  // instead of in its first call of each shape: for example with the peak_scratch_bytes() of a
  // run over the shapes and thread count it will use, on the same ISA and CPU (the scratch a call
  // takes depends on both: block sizes follow the caches). A call whose scratch fits the arena
  // allocates nothing. out_of_memory (naming the bytes) if the allocation fails; the arena is
  // then unchanged.
  Status reserve_scratch(std::size_t bytes) noexcept;
  // Frees the arena; the next call allocates again.
  void release_scratch() noexcept;

  // For attn's own implementation.
  detail::ContextState* state() noexcept { return state_; }

 private:
  detail::ContextState* state_ = nullptr;
};

}  // namespace attn

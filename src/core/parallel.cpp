#include "core/parallel.hpp"

#include <atomic>

#if defined(_OPENMP) && defined(__unix__)
#include <pthread.h>
#endif

namespace attn::detail {
namespace {

std::atomic<bool> g_forked_after_threads{false};

[[maybe_unused]] void mark_forked() {
  g_forked_after_threads.store(true, std::memory_order_relaxed);  // the child has one thread
}

}  // namespace

// OpenMP runtimes keep their worker threads in a pool, which fork() does not copy: GCC's libgomp
// in the child still believes the workers exist, and the child's first parallel region waits for
// them forever (measured: a 2-thread matmul in a child forked after one in the parent never
// returned). So once attn is about to start threads, a fork handler marks every child, whose
// calls then run on their caller's thread, as PyTorch does for its own pool after fork. A process
// that forks before attn starts any thread keeps its threads in the children (unless it ran an
// OpenMP region of its own before: then the child's runtime is broken for every user, attn too).
bool threads_usable() noexcept {
#if defined(_OPENMP) && defined(__unix__)
  static const bool registered = pthread_atfork(nullptr, nullptr, mark_forked) == 0;
  (void)registered;  // without the handler (ENOMEM) a child may hang: nothing better to do
#endif
  return !g_forked_after_threads.load(std::memory_order_relaxed);
}

}  // namespace attn::detail

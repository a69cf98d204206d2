// The one place attn starts threads. With n == 1 no OpenMP construct is entered, so a
// single-threaded Context never creates a thread pool.
#pragma once

#include <cstddef>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace attn::detail {

// False in a process forked after attn started threads (core/parallel.cpp): the OpenMP runtime's
// pool did not survive the fork, so its calls run on their caller's thread.
bool threads_usable() noexcept;

// Runs body(thread_index, n) on n threads (n >= 1) and waits for all of them. Inside an active
// parallel region of the caller's, where the runtime will not nest another (the default,
// OMP_MAX_ACTIVE_LEVELS), body runs as (0, 1) on the caller's thread: the region would get one
// thread anyway, and libgomp allocates that one-thread team on every call. So it does in a
// process forked after attn started threads (threads_usable).
template <class Body>
void run_parallel(int n, const Body& body) {
#if defined(_OPENMP)
  if (n > 1 && omp_get_active_level() < omp_get_max_active_levels() && threads_usable()) {
#pragma omp parallel num_threads(n)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  body(0, 1);
}

// A barrier among the threads of run_parallel; a no-op for one thread.
inline void barrier(int num_threads) {
#if defined(_OPENMP)
  if (num_threads > 1) {
#pragma omp barrier
  }
#else
  (void)num_threads;
#endif
}

// The half-open range [begin, end) of `count` items that thread t of n owns (static, contiguous
// and independent of timing, so results never depend on scheduling).
inline void static_range(std::size_t count, int t, int n, std::size_t* begin, std::size_t* end) {
  if (n == 1) {  // no division on the caller's thread alone (a call of a 64^3 product is ~2 us)
    *begin = 0;
    *end = count;
    return;
  }
  const std::size_t nn = static_cast<std::size_t>(n);
  const std::size_t tt = static_cast<std::size_t>(t);
  const std::size_t base = count / nn;
  const std::size_t extra = count % nn;
  *begin = tt * base + (tt < extra ? tt : extra);
  *end = *begin + base + (tt < extra ? 1 : 0);
}

}  // namespace attn::detail

// Argument checks shared by every public entry point (fast paths and reference alike).
// Each check returns invalid_argument with a message naming the function, the argument and the
// offending values, so "nothing is written on error" only needs the checks to run first.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "attn/status.hpp"
#include "attn/view.hpp"

// A project built with -ftrivial-auto-var-init=zero had every Status this macro holds zeroed
// (248 bytes, its message buffer) before the check filled it: the seed's 6-token attention took
// 0.78 us against 0.48 (the argument checks hold dozens; bench/RESULTS.md). The check's result is
// the Status itself, so nothing here is read uninitialised: the attribute leaves it alone.
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define ATTN_NO_AUTO_INIT __attribute__((uninitialized))
#endif
#endif
#ifndef ATTN_NO_AUTO_INIT
#define ATTN_NO_AUTO_INIT
#endif

#define ATTN_RETURN_IF_ERROR(expr)                           \
  do {                                                       \
    ATTN_NO_AUTO_INIT const ::attn::Status attn_s_ = (expr); \
    if (!attn_s_.ok()) return attn_s_;                       \
  } while (0)

namespace attn::detail {

// The bytes [begin, end) a view can touch; empty views touch nothing.
struct Extent {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool empty() const { return begin == end; }
};

bool overlaps(const Extent& x, const Extent& y);

// Every check: data may be null only if the view is empty, and a non-empty view's data must be
// aligned to elem_size (the elements' alignment; an empty view's data is never read).

// n * elem_size must not overflow.
Status check_buffer(const char* fn, const char* arg, const void* data, std::size_t n,
                    std::size_t elem_size, Extent* extent);

// rows x cols with row stride; stride >= cols when rows > 1; byte size fits in ptrdiff_t.
Status check_matrix(const char* fn, const char* arg, const void* data, std::size_t rows,
                    std::size_t cols, std::size_t stride, std::size_t elem_size, Extent* extent);

template <class T>
Status check_matrix(const char* fn, const char* arg, const MatrixView<T>& m, Extent* extent) {
  return check_matrix(fn, arg, m.data, m.rows, m.cols, m.stride, sizeof(T), extent);
}

// A rank-4 view; strides[3] must be 1 where the view has elements and its last dimension more
// than one (a dimension of size 1 ignores its stride; an empty view reaches nothing). Broadcast
// (stride 0) and negative strides are allowed for inputs. Both the bytes the view reaches and its
// logical size (the product of its shape times elem_size) must fit in ptrdiff_t.
Status check_tensor(const char* fn, const char* arg, const void* data,
                    const std::array<std::size_t, 4>& shape,
                    const std::array<std::ptrdiff_t, 4>& strides, std::size_t elem_size,
                    Extent* extent);

template <class T>
Status check_tensor(const char* fn, const char* arg, const TensorView<T>& t, Extent* extent) {
  return check_tensor(fn, arg, t.data, t.shape, t.strides, sizeof(T), extent);
}

// An output view must not write one element twice: after sorting the dimensions by |stride|,
// each stride must exceed the span of the dimensions inside it. An empty view always passes.
Status check_no_self_overlap(const char* fn, const char* arg,
                             const std::array<std::size_t, 4>& shape,
                             const std::array<std::ptrdiff_t, 4>& strides);

// invalid_argument if out overlaps in.
Status check_disjoint(const char* fn, const char* out_arg, const Extent& out, const char* in_arg,
                      const Extent& in);

// a * b without overflow, false if it overflows.
inline bool mul_ok(std::size_t a, std::size_t b, std::size_t* r) {
  return !__builtin_mul_overflow(a, b, r);
}
inline bool add_ok(std::size_t a, std::size_t b, std::size_t* r) {
  return !__builtin_add_overflow(a, b, r);
}

// Saturating size arithmetic for scratch sizes: SIZE_MAX on overflow, which the arena then
// refuses with out_of_memory.
inline std::size_t sat_mul(std::size_t a, std::size_t b) {
  std::size_t r;
  return mul_ok(a, b, &r) ? r : SIZE_MAX;
}
inline std::size_t sat_add(std::size_t a, std::size_t b) {
  std::size_t r;
  return add_ok(a, b, &r) ? r : SIZE_MAX;
}
// x / m rounded up, and x rounded up to a multiple of m, for sizes that cannot wrap (m > 0).
inline std::size_t div_up(std::size_t x, std::size_t m) {
  return (x + m - 1) / m;
}
inline std::size_t round_up(std::size_t x, std::size_t m) {
  return (x + m - 1) / m * m;
}
// x rounded up to a multiple of m; SIZE_MAX (a saturated size) and sizes that would wrap stay
// SIZE_MAX.
inline std::size_t sat_round_up(std::size_t x, std::size_t m) {
  return x > SIZE_MAX - (m - 1) ? SIZE_MAX : (x + m - 1) / m * m;
}

}  // namespace attn::detail

#include "core/checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace attn::detail {
namespace {

constexpr std::size_t kMaxBytes = static_cast<std::size_t>(PTRDIFF_MAX);

// `what`: the view's size as its caller knows it (elements, rows x cols, shape and strides).
Status too_large(const char* fn, const char* arg, const char* what) {
  return Status::Error(StatusCode::invalid_argument,
                       "%s: %s spans more bytes than fit in ptrdiff_t (%s)", fn, arg, what);
}

Status too_large_elements(const char* fn, const char* arg, std::size_t elements,
                          std::size_t elem_size) {
  char what[80];
  std::snprintf(what, sizeof what, "%zu elements of %zu bytes", elements, elem_size);
  return too_large(fn, arg, what);
}

// extent of `elements` elements starting at data + first (in elements).
Status make_extent(const char* fn, const char* arg, const void* data, std::ptrdiff_t first,
                   std::size_t elements, std::size_t elem_size, Extent* extent) {
  std::size_t bytes = 0;
  if (!mul_ok(elements, elem_size, &bytes) || bytes > kMaxBytes) {
    return too_large_elements(fn, arg, elements, elem_size);
  }
  const auto base = reinterpret_cast<std::uintptr_t>(data);
  // Elements are floats, int32s or bytes: their alignment is their size. A misaligned float
  // pointer would have every kernel read it through misaligned scalar accesses (undefined).
  if (base % elem_size != 0) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s's data (%p) is not aligned to its %zu-byte elements", fn, arg,
                         data, elem_size);
  }
  const std::intptr_t first_bytes =
      static_cast<std::intptr_t>(first) * static_cast<std::intptr_t>(elem_size);
  const std::uintptr_t begin = base + static_cast<std::uintptr_t>(first_bytes);
  if ((first_bytes < 0 && begin > base) || begin + bytes < begin) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s wraps around the address space (data %p, %zu bytes from byte "
                         "offset %td)",
                         fn, arg, data, bytes, static_cast<std::ptrdiff_t>(first_bytes));
  }
  extent->begin = begin;
  extent->end = begin + bytes;
  return Status::Ok();
}

}  // namespace

bool overlaps(const Extent& x, const Extent& y) {
  if (x.empty() || y.empty()) return false;
  return x.begin < y.end && y.begin < x.end;
}

Status check_buffer(const char* fn, const char* arg, const void* data, std::size_t n,
                    std::size_t elem_size, Extent* extent) {
  *extent = Extent{};
  if (n == 0) return Status::Ok();
  if (data == nullptr) {
    return Status::Error(StatusCode::invalid_argument, "%s: %s is null but n = %zu", fn, arg, n);
  }
  return make_extent(fn, arg, data, 0, n, elem_size, extent);
}

Status check_matrix(const char* fn, const char* arg, const void* data, std::size_t rows,
                    std::size_t cols, std::size_t stride, std::size_t elem_size, Extent* extent) {
  *extent = Extent{};
  if (rows == 0 || cols == 0) return Status::Ok();
  if (data == nullptr) {
    return Status::Error(StatusCode::invalid_argument, "%s: %s.data is null but %s is %zu x %zu",
                         fn, arg, arg, rows, cols);
  }
  if (rows > 1 && stride < cols) {
    return Status::Error(StatusCode::invalid_argument, "%s: %s.stride (%zu) < %s.cols (%zu)", fn,
                         arg, stride, arg, cols);
  }
  std::size_t elements = 0;
  if (!mul_ok(rows - 1, stride, &elements) || !add_ok(elements, cols, &elements)) {
    char what[96];
    std::snprintf(what, sizeof what, "%zu x %zu, stride %zu", rows, cols, stride);
    return too_large(fn, arg, what);
  }
  return make_extent(fn, arg, data, 0, elements, elem_size, extent);
}

Status check_tensor(const char* fn, const char* arg, const void* data,
                    const std::array<std::size_t, 4>& shape,
                    const std::array<std::ptrdiff_t, 4>& strides, std::size_t elem_size,
                    Extent* extent) {
  *extent = Extent{};
  for (std::size_t s : shape) {
    if (s == 0) return Status::Ok();
  }
  // Of size 1 the last dimension ignores its stride, as the others do (the kernels never read it).
  if (shape[3] > 1 && strides[3] != 1) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s.strides[3] is %td; the last dimension (%zu elements) must be "
                         "contiguous (1)",
                         fn, arg, strides[3], shape[3]);
  }
  if (data == nullptr) {
    return Status::Error(StatusCode::invalid_argument,
                         "%s: %s.data is null but its shape is [%zu, %zu, %zu, %zu]", fn, arg,
                         shape[0], shape[1], shape[2], shape[3]);
  }
  const auto tensor_too_large = [&] {
    char what[200];
    std::snprintf(what, sizeof what, "shape [%zu, %zu, %zu, %zu], strides [%td, %td, %td, %td]",
                  shape[0], shape[1], shape[2], shape[3], strides[0], strides[1], strides[2],
                  strides[3]);
    return too_large(fn, arg, what);
  };
  // Offsets of the lowest and highest element, in elements.
  std::size_t span = 0;
  std::size_t neg = 0;
  for (int d = 0; d < 4; ++d) {
    const std::ptrdiff_t st = strides[d];
    if (shape[d] == 1) continue;  // its stride is never used, whatever it is
    if (st == PTRDIFF_MIN) return tensor_too_large();
    const std::size_t mag = static_cast<std::size_t>(st < 0 ? -st : st);
    std::size_t part = 0;
    if (!mul_ok(shape[d] - 1, mag, &part) || !add_ok(span, part, &span)) {
      return tensor_too_large();
    }
    if (st < 0) neg += part;
  }
  if (span >= kMaxBytes) return tensor_too_large();
  // The logical size too: a broadcast view (stride 0) reaches few bytes but holds
  // shape[0] * ... * shape[3] elements, and the drivers size their work by the shape.
  std::size_t elements = 1;
  for (std::size_t s : shape) {
    if (!mul_ok(elements, s, &elements)) return tensor_too_large();
  }
  if (!mul_ok(elements, elem_size, &elements) || elements > kMaxBytes) return tensor_too_large();
  return make_extent(fn, arg, data, -static_cast<std::ptrdiff_t>(neg), span + 1, elem_size, extent);
}

Status check_no_self_overlap(const char* fn, const char* arg,
                             const std::array<std::size_t, 4>& shape,
                             const std::array<std::ptrdiff_t, 4>& strides) {
  for (std::size_t s : shape) {
    if (s == 0) return Status::Ok();  // no elements, nothing to alias
  }
  std::array<int, 4> order = {0, 1, 2, 3};
  auto mag = [&](int d) {  // |stride| in unsigned arithmetic (PTRDIFF_MIN on a size-1 dimension)
    const auto u = static_cast<std::size_t>(strides[d]);
    return strides[d] < 0 ? std::size_t{0} - u : u;
  };
  std::sort(order.begin(), order.end(), [&](int x, int y) { return mag(x) < mag(y); });
  std::size_t inner_span = 0;  // highest offset reachable by the inner dimensions
  for (int d : order) {
    if (shape[d] <= 1) continue;
    if (mag(d) <= inner_span) {
      return Status::Error(StatusCode::invalid_argument,
                           "%s: %s.strides[%d] (%td) makes elements of the output alias one "
                           "another (shape [%zu, %zu, %zu, %zu], strides [%td, %td, %td, %td])",
                           fn, arg, d, strides[d], shape[0], shape[1], shape[2], shape[3],
                           strides[0], strides[1], strides[2], strides[3]);
    }
    inner_span += (shape[d] - 1) * mag(d);  // cannot overflow: check_tensor bounded the span
  }
  return Status::Ok();
}

Status check_disjoint(const char* fn, const char* out_arg, const Extent& out, const char* in_arg,
                      const Extent& in) {
  if (!overlaps(out, in)) return Status::Ok();
  const std::uintptr_t first = std::max(out.begin, in.begin), last = std::min(out.end, in.end);
  return Status::Error(StatusCode::invalid_argument,
                       "%s: %s overlaps %s: their address ranges [%#zx, %#zx) and [%#zx, %#zx) "
                       "share %zu bytes",
                       fn, out_arg, in_arg, static_cast<std::size_t>(out.begin),
                       static_cast<std::size_t>(out.end), static_cast<std::size_t>(in.begin),
                       static_cast<std::size_t>(in.end), static_cast<std::size_t>(last - first));
}

}  // namespace attn::detail

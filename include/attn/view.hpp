// Views: non-owning descriptions of caller memory. Strides are in elements, not bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace attn {

// A rows x cols matrix; element (i, j) is data[i * stride + j]. stride >= cols unless rows <= 1.
template <class T>
struct MatrixView {
  T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t stride = 0;

  T& operator()(std::size_t i, std::size_t j) const { return data[i * stride + j]; }
  // A view of the same memory as const.
  operator MatrixView<const T>() const { return {data, rows, cols, stride}; }
};

// A contiguous row-major rows x cols matrix (stride == cols).
template <class T>
MatrixView<T> make_matrix(T* data, std::size_t rows, std::size_t cols) {
  return {data, rows, cols, cols};
}

enum class Transpose { no, yes };

// A rank-4 tensor in attention's logical order [batch, heads, seq, dim]. Element (b, h, s, d) is
// data[b*strides[0] + h*strides[1] + s*strides[2] + d*strides[3]]. Attention requires
// strides[3] == 1 where shape[3] > 1 (a dimension of size 1 ignores its stride); other strides
// may be anything, including 0 (broadcast) for masks. A view with a dimension of 0 holds no
// element: its data and strides are never used.
template <class T>
struct TensorView {
  T* data = nullptr;
  std::array<std::size_t, 4> shape = {0, 0, 0, 0};
  std::array<std::ptrdiff_t, 4> strides = {0, 0, 0, 0};

  T& operator()(std::size_t b, std::size_t h, std::size_t s, std::size_t d) const {
    return data[static_cast<std::ptrdiff_t>(b) * strides[0] +
                static_cast<std::ptrdiff_t>(h) * strides[1] +
                static_cast<std::ptrdiff_t>(s) * strides[2] +
                static_cast<std::ptrdiff_t>(d) * strides[3]];
  }
  operator TensorView<const T>() const { return {data, shape, strides}; }
};

namespace detail {
// a * b * c as a stride, or PTRDIFF_MAX where the product does not fit: a view no buffer can
// hold, which attention then refuses ("spans more bytes than fit in ptrdiff_t") instead of
// overflowing here.
constexpr std::ptrdiff_t view_stride(std::size_t a, std::size_t b = 1, std::size_t c = 1) {
  constexpr auto kMax = static_cast<std::size_t>(PTRDIFF_MAX);
  if (a == 0 || b == 0 || c == 0) return 0;
  if (a > kMax / b || a * b > kMax / c) return PTRDIFF_MAX;
  return static_cast<std::ptrdiff_t>(a * b * c);
}
}  // namespace detail

// Contiguous [batch, heads, seq, dim] memory: heads are separate planes.
template <class T>
TensorView<T> make_bhsd(T* data, std::size_t batch, std::size_t heads, std::size_t seq,
                        std::size_t dim) {
  return {data,
          {batch, heads, seq, dim},
          {detail::view_stride(heads, seq, dim), detail::view_stride(seq, dim),
           detail::view_stride(dim), 1}};
}

// Contiguous [batch, seq, heads, dim] memory (heads interleaved, as a projection X·W writes
// them), viewed in attention's [batch, heads, seq, dim] order. row_stride is the distance between
// consecutive tokens; 0 means heads * dim (densely packed).
template <class T>
TensorView<T> make_bshd(T* data, std::size_t batch, std::size_t seq, std::size_t heads,
                        std::size_t dim, std::size_t row_stride = 0) {
  const std::ptrdiff_t r =
      row_stride != 0 ? detail::view_stride(row_stride) : detail::view_stride(heads, dim);
  return {data,
          {batch, heads, seq, dim},
          {detail::view_stride(seq, static_cast<std::size_t>(r)), detail::view_stride(dim), r, 1}};
}

// Positions [first, first + count) of a view's sequence dimension (shape[2]), with its strides:
// the filled part of a KV cache allocated for more positions than it holds, viewed at its
// capacity (`seq_slice(make_bhsd(k_cache, B, Hkv, capacity, D), 0, len)`; a view made with
// seq = len would place batch entries, and make_bhsd's heads, len positions apart, not
// capacity), or a chunk of queries. Slice views whose shape[2] counts positions, not a dimension
// of size 1 that broadcasts (a mask's). A view with null data stays null (an absent mask or
// weights stays absent); an empty result (count == 0) keeps the view's data. A range beyond
// shape[2] (or an offset beyond ptrdiff_t) gives null data: q, k, v and out with positions are
// then refused ("k.data is null"), but for a mask or the weights null means "not given", so
// check the range before slicing those.
template <class T>
TensorView<T> seq_slice(TensorView<T> v, std::size_t first, std::size_t count) {
  const std::ptrdiff_t stride = v.strides[2];
  const std::size_t step =
      stride < 0 ? 0 - static_cast<std::size_t>(stride) : static_cast<std::size_t>(stride);
  if (first > v.shape[2] || count > v.shape[2] - first ||
      (step != 0 && first > static_cast<std::size_t>(PTRDIFF_MAX) / step)) {
    v.data = nullptr;
  } else if (v.data != nullptr && count > 0) {
    v.data += static_cast<std::ptrdiff_t>(first) * stride;
  }
  v.shape[2] = count;
  return v;
}

}  // namespace attn

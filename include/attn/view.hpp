// Views: non-owning descriptions of caller memory. Strides are in elements, not bytes.
#pragma once

#include <array>
#include <cstddef>

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
// strides[3] == 1; other strides may be anything, including 0 (broadcast) for masks.
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

// Contiguous [batch, heads, seq, dim] memory: heads are separate planes.
template <class T>
TensorView<T> make_bhsd(T* data, std::size_t batch, std::size_t heads, std::size_t seq,
                        std::size_t dim) {
  const auto d = static_cast<std::ptrdiff_t>(dim);
  const auto s = static_cast<std::ptrdiff_t>(seq);
  const auto h = static_cast<std::ptrdiff_t>(heads);
  return {data, {batch, heads, seq, dim}, {h * s * d, s * d, d, 1}};
}

// Contiguous [batch, seq, heads, dim] memory (heads interleaved, as a projection X·W writes
// them), viewed in attention's [batch, heads, seq, dim] order. row_stride is the distance between
// consecutive tokens; 0 means heads * dim (densely packed).
template <class T>
TensorView<T> make_bshd(T* data, std::size_t batch, std::size_t seq, std::size_t heads,
                        std::size_t dim, std::size_t row_stride = 0) {
  const auto d = static_cast<std::ptrdiff_t>(dim);
  const auto r = static_cast<std::ptrdiff_t>(row_stride ? row_stride : heads * dim);
  const auto s = static_cast<std::ptrdiff_t>(seq);
  return {data, {batch, heads, seq, dim}, {s * r, d, r, 1}};
}

}  // namespace attn

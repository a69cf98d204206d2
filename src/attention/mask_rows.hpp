// The mask of one (batch, head) as the drivers use it: the structural parts (causal, window, key
// length) reduce to a contiguous range of keys per query row; the boolean and additive parts are
// read with their broadcast strides (a dimension of size 1, the query rows' too, repeats its one
// row).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attn/mask.hpp"
#include "core/args.hpp"

namespace attn::detail {

struct KeyRange {
  std::size_t begin = 0;
  std::size_t end = 0;  // begin >= end: every key is blocked
};

class MaskRows {
 public:
  MaskRows(const Mask& mask, const AttentionDims& d, std::size_t b, std::size_t h)
      : mask_(mask), len_q_(static_cast<long long>(d.len_q)) {
    const long long lk = static_cast<long long>(d.len_k);
    len_k_ = lk;
    limit_ = mask.key_lengths ? static_cast<long long>(mask.key_lengths[b]) : lk;
    causal_shift_ = mask.causal_align == CausalAlign::bottom_right ? lk - len_q_ : 0;
    window_shift_ = mask.window_align == CausalAlign::bottom_right ? lk - len_q_ : 0;
    // Window sides beyond Lq + Lk are unbounded in effect; clamping keeps the sums in range.
    const unsigned long long cap = static_cast<unsigned long long>(len_q_ + lk + 1);
    left_ = static_cast<long long>(mask.window_left < cap ? mask.window_left : cap);
    right_ = static_cast<long long>(mask.window_right < cap ? mask.window_right : cap);
    if (mask.allowed.data) {
      const auto& t = mask.allowed;
      allowed_ = t.data + (t.shape[0] == 1 ? 0 : static_cast<std::ptrdiff_t>(b) * t.strides[0]) +
                 (t.shape[1] == 1 ? 0 : static_cast<std::ptrdiff_t>(h) * t.strides[1]);
      allowed_row_stride_ = t.shape[2] == 1 ? 0 : t.strides[2];
    }
    if (mask.additive.data) {
      const auto& t = mask.additive;
      additive_ = t.data + (t.shape[0] == 1 ? 0 : static_cast<std::ptrdiff_t>(b) * t.strides[0]) +
                  (t.shape[1] == 1 ? 0 : static_cast<std::ptrdiff_t>(h) * t.strides[1]);
      additive_row_stride_ = t.shape[2] == 1 ? 0 : t.strides[2];
    }
  }

  // Keys outside this range are blocked by the causal, window or key-length parts.
  KeyRange range(std::size_t i) const { return of(lower(i), upper(i)); }

  // A range holding range(i) of every row first <= i <= last: no such row attends a key outside
  // it. Both bounds grow with i, so the first row's lower bound and the last row's upper bound,
  // taken even where those rows attend nothing (range() is then empty, and says nothing of the
  // rows between).
  KeyRange hull(std::size_t first, std::size_t last) const { return of(lower(first), upper(last)); }

  bool has_allowed() const { return allowed_ != nullptr; }
  bool has_additive() const { return additive_ != nullptr; }
  // Row i of the boolean mask (nonzero: may attend), or nullptr.
  const std::uint8_t* allowed_row(std::size_t i) const {
    return allowed_ ? allowed_ + static_cast<std::ptrdiff_t>(i) * allowed_row_stride_ : nullptr;
  }
  // Row i of the additive mask, or nullptr.
  const float* additive_row(std::size_t i) const {
    return additive_ ? additive_ + static_cast<std::ptrdiff_t>(i) * additive_row_stride_ : nullptr;
  }

 private:
  long long lower(std::size_t i) const {
    const long long pos = static_cast<long long>(i) + window_shift_;
    return mask_.has_window && pos - left_ > 0 ? pos - left_ : 0;
  }
  long long upper(std::size_t i) const {
    const long long ii = static_cast<long long>(i);
    long long hi = limit_;
    if (mask_.is_causal && ii + causal_shift_ + 1 < hi) hi = ii + causal_shift_ + 1;
    if (mask_.has_window && ii + window_shift_ + right_ + 1 < hi)
      hi = ii + window_shift_ + right_ + 1;
    return hi;
  }
  static KeyRange of(long long lo, long long hi) {
    KeyRange r;
    if (hi <= lo || hi <= 0) return r;
    r.begin = static_cast<std::size_t>(lo);
    r.end = static_cast<std::size_t>(hi);
    return r;
  }

  const Mask& mask_;
  long long len_q_ = 0, len_k_ = 0, limit_ = 0;
  long long causal_shift_ = 0, window_shift_ = 0, left_ = 0, right_ = 0;
  const std::uint8_t* allowed_ = nullptr;
  std::ptrdiff_t allowed_row_stride_ = 0;
  const float* additive_ = nullptr;
  std::ptrdiff_t additive_row_stride_ = 0;
};

}  // namespace attn::detail

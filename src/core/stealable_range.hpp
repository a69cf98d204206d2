// A range of task indices [front, back) that its owner takes from the front and other threads may
// take from the back, one index at a time: the work stealing of Blumofe & Leiserson (1999),
// reduced to a contiguous range of integers, as in the deques of Arora, Blumofe & Plaxton (1998)
// whose entries are consecutive. Both ends live in one 64-bit atomic, so every take is one
// compare-and-swap and no index is ever taken twice. Which thread runs an index then depends on
// timing: a caller must make each task's result independent of the thread that runs it and of
// the tasks that thread ran before (attention_fused.cpp: every task writes only its own rows,
// and all a thread keeps between tasks is which V rows it found finite, a fact, not a result).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace attn::detail {

class alignas(64) StealableRange {  // a line of its own: owners and thieves write it
 public:
  // The largest `end` arm() and reset() take (both ends share 64 bits, and all ones is unset).
  static constexpr std::size_t kMaxEnd = 0xfffffffeu;

  // Unset: no index to take until arm() or reset().
  StealableRange() noexcept : bits_(kUnset) {}

  // [begin, end), begin <= end <= kMaxEnd, if the range is still unset; false if another thread
  // set it first. Owner and thieves may race to arm it, each with the same range: a thief that
  // finds the range of a thread that has not started yet arms it for that thread.
  bool arm(std::size_t begin, std::size_t end) noexcept {
    std::uint64_t unset = kUnset;
    return bits_.compare_exchange_strong(unset, pack(begin, end), std::memory_order_relaxed);
  }
  bool unset() const noexcept { return bits_.load(std::memory_order_relaxed) == kUnset; }

  // [begin, end), begin <= end <= kMaxEnd, whatever the range held. Only where no other thread
  // can take from this range until it sees the reset (across a barrier): a thief that read the
  // old range could otherwise take from a new range equal to it.
  void reset(std::size_t begin, std::size_t end) noexcept {
    bits_.store(pack(begin, end), std::memory_order_relaxed);
  }

  // The owner's next index, from the front; false once the range is empty.
  bool take_front(std::size_t* index) noexcept {
    std::uint64_t cur = bits_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t f = cur & kLow, b = cur >> 32;
      if (f >= b) return false;
      if (bits_.compare_exchange_weak(cur, pack(f + 1, b), std::memory_order_relaxed)) {
        *index = static_cast<std::size_t>(f);
        return true;
      }
    }
  }

  // The last index, where worth(front, back) says so for the range as it is at that moment;
  // false once the range is empty or worth declines.
  template <class Worth>
  bool take_back(std::size_t* index, const Worth& worth) noexcept {
    std::uint64_t cur = bits_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t f = cur & kLow, b = cur >> 32;
      if (f >= b || !worth(static_cast<std::size_t>(f), static_cast<std::size_t>(b))) {
        return false;
      }
      if (bits_.compare_exchange_weak(cur, pack(f, b - 1), std::memory_order_relaxed)) {
        *index = static_cast<std::size_t>(b - 1);
        return true;
      }
    }
  }

 private:
  static constexpr std::uint64_t kLow = 0xffffffffu;
  static constexpr std::uint64_t kUnset = ~std::uint64_t{0};  // front and back 2^32 - 1: empty
  static std::uint64_t pack(std::uint64_t front, std::uint64_t back) {
    return front | (back << 32);
  }
  std::atomic<std::uint64_t> bits_;
};

}  // namespace attn::detail

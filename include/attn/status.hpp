// Status: the result of every public attn call. Nothing in attn throws (the calls are noexcept) or
// aborts on bad input.
#pragma once

#include <cstddef>

#include "attn/export.hpp"

namespace attn {

enum class StatusCode {
  ok = 0,
  invalid_argument,  // a bad argument; the message names it and its values
  unsupported,       // a valid request this build or CPU cannot serve (e.g. an absent ISA)
  out_of_memory,     // the scratch arena could not grow
};

// A code and a message. The message lives inline (no heap), so constructing, copying and
// returning a Status never allocates, never throws, and an ok Status costs one int.
// [[nodiscard]]: a call whose Status is dropped draws a compiler warning (cast to void to
// ignore one on purpose).
class [[nodiscard]] ATTN_API Status {
 public:
  static constexpr std::size_t kMaxMessage = 240;

  Status() noexcept { message_[0] = '\0'; }
  // Copies only what is used: an ok Status copies one int.
  Status(const Status& other) noexcept { *this = other; }
  Status& operator=(const Status& other) noexcept;
  static Status Ok() noexcept { return Status(); }
  // printf-style message, truncated to kMaxMessage - 1 characters.
  static Status Error(StatusCode code, const char* format, ...) noexcept
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
      ;

  bool ok() const noexcept {
    return code_ == StatusCode::ok;
  }
  StatusCode code() const noexcept {
    return code_;
  }
  // Empty for ok; otherwise names the argument and the values, e.g.
  // "matmul: a.stride (3) < a.cols (5)".
  const char* message() const noexcept {
    return message_;
  }

 private:
  StatusCode code_ = StatusCode::ok;
  char message_[kMaxMessage];
};

// "ok", "invalid_argument", "unsupported", "out_of_memory".
ATTN_API const char* status_code_name(StatusCode code) noexcept;

}  // namespace attn

#include "attn/status.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace attn {

Status Status::Error(StatusCode code, const char* format, ...) noexcept {
  Status s;
  s.code_ = code;
  va_list args;
  va_start(args, format);
  std::vsnprintf(s.message_, sizeof(s.message_), format, args);
  va_end(args);
  return s;
}

Status& Status::operator=(const Status& other) noexcept {
  if (this == &other) return *this;
  code_ = other.code_;
  if (other.code_ == StatusCode::ok) {
    message_[0] = '\0';
  } else {
    std::memcpy(message_, other.message_, std::strlen(other.message_) + 1);
  }
  return *this;
}

const char* status_code_name(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::invalid_argument:
      return "invalid_argument";
    case StatusCode::unsupported:
      return "unsupported";
    case StatusCode::out_of_memory:
      return "out_of_memory";
  }
  return "unknown";
}

}  // namespace attn

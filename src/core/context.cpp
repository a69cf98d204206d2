#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>

#include "attn/context.hpp"
#include "core/context_state.hpp"
#include "core/large_alloc.hpp"

namespace attn {
namespace detail {

Status ContextState::scratch(const char* fn, std::size_t bytes, void** out) noexcept {
  if (bytes <= arena_bytes) {
    *out = arena;
    return Status::Ok();
  }
  const std::size_t rounded = ScratchCarver::rounded(bytes < 64 ? 64 : bytes);
  // Arenas of 2 MiB or more on 2 MiB boundaries, advised for transparent huge pages
  // (alloc_large): the packed GEMM's B panel (4 MiB at 2048^3) and A block then take a few TLB
  // entries instead of a thousand. Zen 4 (THP on madvise; AB_LIB_OFFSET=16 bench/ab-lib, 7-11
  // pairs, bit-identical): 2048^3 0.972x, 0.992x, 0.990x, 0.969x the time, 1024^3 0.983x, two
  // threads 2048^3 0.991x. Arenas from 1 MiB rounded up to whole huge pages as well: 512^3
  // 0.995x, 768^3 0.993x, 2048^3 1.009x (level; not taken).
  void* p = alloc_large(rounded);
  if (p == nullptr) {
    return Status::Error(StatusCode::out_of_memory, "%s: could not allocate %zu bytes of scratch",
                         fn, bytes);
  }
  std::free(arena);
  arena = p;
  arena_bytes = rounded;
  if (rounded > peak_bytes) peak_bytes = rounded;
  *out = arena;
  return Status::Ok();
}

void ContextState::release() noexcept {
  std::free(arena);
  arena = nullptr;
  arena_bytes = 0;
}

Status no_state(const char* fn) noexcept {
  return Status::Error(StatusCode::out_of_memory,
                       "%s: the Context has no state (moved from, or its allocation failed)", fn);
}

Status busy_state(const char* fn) noexcept {
  return Status::Error(StatusCode::invalid_argument,
                       "%s: ctx is in use by another call (a Context serves one call at a time: "
                       "use one Context per thread)",
                       fn);
}

}  // namespace detail

Context::Context() noexcept : state_(new (std::nothrow) detail::ContextState) {
  if (state_ == nullptr) return;
  Isa isa = best_isa();
  if (const char* env = std::getenv("ATTN_ISA"); env != nullptr && *env != '\0') {
    Isa wanted;
    if (!parse_isa(env, &wanted)) {
      state_->init =
          Status::Error(StatusCode::invalid_argument,
                        "ATTN_ISA=%s is not an ISA (scalar, sse2, avx2, avx512, neon)", env);
    } else if (!isa_supported(wanted)) {
      state_->init =
          Status::Error(StatusCode::unsupported, "ATTN_ISA=%s: this build or CPU cannot run %s",
                        env, isa_name(wanted));
    } else {
      isa = wanted;
    }
  }
  state_->isa = isa;
  state_->kernels = detail::kernels_for(isa);
}

Context::~Context() {
  if (state_ != nullptr) state_->release();
  delete state_;
}

Context::Context(Context&& other) noexcept : state_(other.state_) {
  other.state_ = nullptr;
}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->release();
    delete state_;
    state_ = other.state_;
    other.state_ = nullptr;
  }
  return *this;
}

Status Context::set_num_threads(int n) noexcept {
  if (n < 1) {
    return Status::Error(StatusCode::invalid_argument,
                         "Context::set_num_threads: n is %d; it must be >= 1", n);
  }
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::hold_state(state_, "Context::set_num_threads", &use));
  state_->threads = n;
  return Status::Ok();
}

int Context::num_threads() const noexcept {
  return state_ ? state_->threads : 1;
}

Status Context::set_isa(Isa isa) noexcept {
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::hold_state(state_, "Context::set_isa", &use));
  if (std::find(std::begin(kAllIsas), std::end(kAllIsas), isa) == std::end(kAllIsas)) {
    return Status::Error(StatusCode::invalid_argument,
                         "Context::set_isa: isa (%d) is not an attn::Isa", static_cast<int>(isa));
  }
  if (!isa_supported(isa)) {
    return Status::Error(StatusCode::unsupported,
                         "Context::set_isa: isa %s is not supported by this build or CPU",
                         isa_name(isa));
  }
  state_->isa = isa;
  state_->kernels = detail::kernels_for(isa);
  state_->init = Status::Ok();
  return Status::Ok();
}

Isa Context::isa() const noexcept {
  return state_ ? state_->isa : Isa::scalar;
}

Status Context::init_status() const noexcept {
  if (state_ == nullptr) {
    return detail::no_state("Context::init_status");
  }
  return state_->init;
}

std::size_t Context::scratch_bytes() const noexcept {
  return state_ ? state_->arena_bytes : 0;
}
std::size_t Context::peak_scratch_bytes() const noexcept {
  return state_ ? state_->peak_bytes : 0;
}
Status Context::reserve_scratch(std::size_t bytes) noexcept {
  detail::StateUse use;
  ATTN_RETURN_IF_ERROR(detail::hold_state(state_, "Context::reserve_scratch", &use));
  if (bytes <= state_->arena_bytes) return Status::Ok();
  void* arena = nullptr;
  ATTN_RETURN_IF_ERROR(state_->scratch("Context::reserve_scratch", bytes, &arena));
  detail::touch_pages(arena, state_->arena_bytes);
  return Status::Ok();
}
void Context::release_scratch() noexcept {
  detail::StateUse use;
  if (detail::hold_state(state_, "Context::release_scratch", &use).ok()) state_->release();
}

}  // namespace attn

#include "core/large_alloc.hpp"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attn::detail {

void* alloc_large(std::size_t bytes) noexcept {
  const std::size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kLargeAllocAlign;
  void* p = nullptr;
  // No object exceeds PTRDIFF_MAX bytes: larger requests (saturated sizes) are refused outright.
  if (bytes == 0 || bytes > static_cast<std::size_t>(PTRDIFF_MAX) ||
      posix_memalign(&p, align, bytes) != 0) {
    return nullptr;
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Whole huge pages only: the rest of the mapping may be the allocator's.
  if (align == kHugePageBytes) madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return p;
}

void touch_pages(void* p, std::size_t bytes) noexcept {
  auto* c = static_cast<volatile char*>(p);
  for (std::size_t i = 0; i < bytes; i += kTouchStrideBytes)
    c[i] = 0;
}

}  // namespace attn::detail

// The allocation of attn's large blocks: the Context's scratch arena and pack_matrix's copies.
#pragma once

#include <cstddef>

namespace attn::detail {

// The size of an x86-64 (and AArch64 4 KiB-granule) transparent huge page.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// The alignment of smaller blocks: a cache line.
inline constexpr std::size_t kLargeAllocAlign = 64;

// `bytes` (> 0) on a kLargeAllocAlign boundary or, from kHugePageBytes on, on a kHugePageBytes
// boundary with its whole huge pages advised for transparent huge pages (Linux, madvise
// MADV_HUGEPAGE; a kernel without them leaves 4 KiB pages, as without the advice): a large packed
// matrix or panel then takes a few TLB entries instead of one per 4 KiB. Freed with std::free;
// nullptr if the allocation fails or `bytes` exceeds PTRDIFF_MAX.
void* alloc_large(std::size_t bytes) noexcept;

// Writes a zero byte on every kTouchStrideBytes of [p, p + bytes), so that the kernel maps each
// page now (the page faults of a fresh block: one per 4 KiB page unless huge pages back it)
// rather than in the first call that uses the block.
inline constexpr std::size_t kTouchStrideBytes = 4096;
void touch_pages(void* p, std::size_t bytes) noexcept;

}  // namespace attn::detail

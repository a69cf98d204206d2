// ATTN_API marks what a shared libattn exports: the public API and nothing else. attn is compiled
// with hidden visibility (src/CMakeLists.txt), so its internals (attn::detail, the kernels) stay
// out of a shared library's dynamic symbol table, and out of that of a shared library a user links
// the static libattn.a into. The test shared_library_exports_only_the_api checks the list.
#pragma once

#if defined(__GNUC__) && !defined(_WIN32)  // ELF visibility; Windows is not a target
#define ATTN_API [[gnu::visibility("default")]]
#else
#define ATTN_API
#endif

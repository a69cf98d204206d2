# Which ISA kernel groups this build compiles, and the flags of each. Code compiled with an
# ISA's flags is only reachable through that ISA's kernel table, chosen at run time.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(ATTN_ARCH x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(ATTN_ARCH aarch64)
else()
  set(ATTN_ARCH other)
endif()

option(ATTN_ENABLE_AVX512 "Build the AVX-512 kernels (x86-64)" ON)

set(ATTN_ISAS)
if(ATTN_ARCH STREQUAL "x86_64")
  list(APPEND ATTN_ISAS sse2 avx2)
  if(ATTN_ENABLE_AVX512)
    list(APPEND ATTN_ISAS avx512)
  endif()
elseif(ATTN_ARCH STREQUAL "aarch64")
  list(APPEND ATTN_ISAS neon)
endif()

# Each ISA's objects are capped at that ISA's vector width, whatever the project's flags (which
# come first): simd.hpp picked the xsimd architecture from the compiler's macros (it now follows
# the ISA, but its intrinsics branches still follow the macros), so a project's -march=native
# made the sse2 and avx2 objects AVX-512 code under their 4- and 8-lane tables (and -mavx2 the
# sse2 ones AVX2 code). Built so on the Zen 4, the suite corrupted the heap with
# ATTN_ISA=sse2 and avx2 (malloc's checks aborted; all ISAs in one run hung in malloc) and drew
# 1,470 warnings. -mno-avx also turns off AVX2, FMA and AVX-512; -mno-avx512f every AVX-512
# subset. Extensions of the same width that -march adds (SSE4.2 and BMI2 in the sse2 objects, for
# example) stay: the compiler may use them, the kernels' #if branches do not. simd.hpp stops the
# build if an object still sees a wider ISA. CI builds the tests with -march=native (on an
# AVX-512 runner that checks both caps; on an AVX2 one only SSE2's).
set(ATTN_FLAGS_sse2 -msse2 -mno-avx)
set(ATTN_FLAGS_avx2 -mavx2 -mfma -mno-avx512f)
set(ATTN_FLAGS_avx512 -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma)
# GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers (a false positive).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND ATTN_FLAGS_avx512 -Wno-maybe-uninitialized -Wno-uninitialized)
endif()
set(ATTN_FLAGS_neon)
message(STATUS "attn: ISA kernels built: scalar ${ATTN_ISAS}")

# Sanitizer and fuzzing builds (the `asan` preset; see README "Guarantees").
#
# ATTN_SANITIZE: sanitizers for everything built in this tree (attn, its tests and tools), as a
#   list: "address;undefined". Errors abort (-fno-sanitize-recover=all), so a report fails CTest.
# ATTN_BUILD_FUZZERS: build tests/fuzz (libFuzzer, Clang only). attn itself is then compiled with
#   -fsanitize=fuzzer-no-link, the coverage instrumentation that guides libFuzzer
#   (src/CMakeLists.txt), but not the tests: compiled with it too, the ASan suite took 198 s
#   instead of 121 s on 2 cores (its compare tracing), 132 s with attn alone instrumented.
set(ATTN_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address;undefined")
option(ATTN_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (Clang only)" OFF)

if(ATTN_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "ATTN_SANITIZE needs g++ or clang++")
  endif()
  if("thread" IN_LIST ATTN_SANITIZE AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(WARNING "ATTN_SANITIZE=thread with ${CMAKE_CXX_COMPILER_ID}: its OpenMP runtime is "
                    "not known to ThreadSanitizer, which then reports races inside every parallel "
                    "region; use clang++ with libomp and its Archer tool (the tsan preset)")
  endif()
  list(JOIN ATTN_SANITIZE "," _attn_sanitizers)
  add_compile_options(-fsanitize=${_attn_sanitizers} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  # Reports need file and line, not full debug info: with line tables only, clang-14 compiled the
  # AVX-512 attention kernels under ASan in 23.9 s instead of 27.3 s. A Debug build keeps all of it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options($<$<NOT:$<CONFIG:Debug>>:-gline-tables-only>)
  endif()
  add_link_options(-fsanitize=${_attn_sanitizers})
  message(STATUS "attn: sanitizers: ${_attn_sanitizers}")
endif()

if(ATTN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ATTN_BUILD_FUZZERS needs clang++ (libFuzzer); this is "
                        "${CMAKE_CXX_COMPILER_ID}. Use the asan preset.")
  endif()
endif()

# Cross-compiles attn for AArch64 Linux with Debian's g++-aarch64-linux-gnu; CTest runs the
# results under qemu-user (package qemu-user):
#
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
#         -DATTN_BUILD_BENCHMARKS=OFF
#   cmake --build build/aarch64 -j2 && ctest --test-dir build/aarch64
#
# Google Benchmark has no AArch64 package installed here, hence ATTN_BUILD_BENCHMARKS=OFF.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ATTN_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${ATTN_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${ATTN_CROSS_TRIPLE}-g++)

# Target libraries (libstdc++, libgomp, libc) come with the cross compiler.
set(CMAKE_FIND_ROOT_PATH /usr/${ATTN_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# xsimd and Catch2 v2 are header-only: the build machine's Debian packages serve the target too.
# xsimd installs its CMake package under the build machine's multiarch directory, which a
# cross build does not search.
if(NOT DEFINED xsimd_DIR)
  file(GLOB _attn_xsimd_dirs /usr/lib/*-linux-gnu*/cmake/xsimd /usr/share/cmake/xsimd
       /usr/lib/cmake/xsimd)
  if(_attn_xsimd_dirs)
    list(GET _attn_xsimd_dirs 0 _attn_xsimd_dir)
    set(xsimd_DIR ${_attn_xsimd_dir} CACHE PATH "xsimd's CMake package (header-only)")
  endif()
endif()

# Tests (add_test, catch_discover_tests) run through qemu-user with the target's libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-${CMAKE_SYSTEM_PROCESSOR} -L /usr/${ATTN_CROSS_TRIPLE})

# The ISAs the tests must find (ATTN_TEST_EXPECT_ISAS in tests/CMakeLists.txt).
if(NOT DEFINED ATTN_TEST_EXPECT_ISAS)
  set(ATTN_TEST_EXPECT_ISAS "scalar,neon")
endif()

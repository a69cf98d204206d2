# Builds attn for x86-64 as usual, but CTest runs the tests under qemu-x86_64 (package
# qemu-user) emulating an older CPU, so that ISA detection and dispatch are tested on a CPU
# without AVX: the suite must pass, find exactly the ISAs the model has, and never execute an
# instruction the model lacks (qemu raises SIGILL).
#
#   cmake -S . -B build/qemu-nehalem -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-x86_64-qemu.cmake
#   cmake --build build/qemu-nehalem -j2 && ctest --test-dir build/qemu-nehalem
#
# ATTN_QEMU_CPU picks the model (qemu-x86_64 -cpu help), Nehalem by default: SSE4.2, no AVX.
# Naming a target system makes CMake treat the build as a cross build, which is what makes
# add_test and catch_discover_tests run the tests through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

if(NOT DEFINED ATTN_QEMU_CPU)
  set(ATTN_QEMU_CPU Nehalem)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-x86_64 -cpu ${ATTN_QEMU_CPU})

# The ISAs the tests must find on that model (ATTN_TEST_EXPECT_ISAS in tests/CMakeLists.txt).
if(NOT DEFINED ATTN_TEST_EXPECT_ISAS)
  if(ATTN_QEMU_CPU MATCHES "^(Nehalem|Westmere|Penryn|Conroe|core2duo|qemu64)")
    set(ATTN_TEST_EXPECT_ISAS "scalar,sse2")
  elseif(ATTN_QEMU_CPU MATCHES "^(Haswell|Broadwell|Skylake-Client)")
    set(ATTN_TEST_EXPECT_ISAS "scalar,sse2,avx2")
  endif()
endif()

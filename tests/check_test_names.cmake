# Checks that every Catch test case name can be run by name through CTest.
#
#   cmake -DTESTS=<attn-tests> -P check_test_names.cmake
#
# catch_discover_tests registers one CTest test per Catch test case, passing its name as a
# filter. A ';' in a name splits it as a CMake list: CTest then runs a filter that matches no
# test case, and Catch, having run nothing, exits 0, so the test case silently never runs (one
# did: "outputs overlapping inputs or each other are refused; adjacent is fine", 2026-12-03).
if(NOT DEFINED TESTS)
  message(FATAL_ERROR "check_test_names: -DTESTS=... is required")
endif()
# Catch v2 exits with the number of names it listed: the count below checks the listing instead.
execute_process(COMMAND ${TESTS} --list-test-names-only OUTPUT_VARIABLE names)
string(REPLACE ";" "<semicolon>" names "${names}")
string(REPLACE "\n" ";" lines "${names}")
set(bad 0)
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  math(EXPR count "${count} + 1")
  if(line MATCHES "<semicolon>")
    message(SEND_ERROR "test case name with ';' (CTest would never run it): ${line}")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "check_test_names: only ${count} test case names listed")
endif()
if(bad GREATER 0)
  message(FATAL_ERROR "check_test_names: ${bad} of ${count} names would not run under CTest")
endif()
message(STATUS "check_test_names: ${count} test case names, none with ';'")

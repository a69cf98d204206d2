# Checks that no code compiled with one ISA's flags can be shared with other code by the linker.
#
#   cmake -DNM=<nm> -DISAS="sse2;avx2" -DOBJECTS="a.o|b.o|..." -P check_isa_symbols.cmake
#
# Every function an ISA object (*_<isa>.cpp.o) defines with external linkage (nm types T, W, i,
# u) must be in attn::detail::<isa> or keyed on attn_xsimd_<isa> (src/simd/simd.hpp's name for
# xsimd in that ISA's objects). Any other such function -- an xsimd or std:: template, an inline
# function of a shared header -- may also be emitted by another object (portable code, or
# another ISA), and the linker keeps one copy, possibly the one with AVX instructions.
# Nor may an ISA object have a static initializer (it would run on every CPU at start-up).
# Unoptimised builds show the most such functions (nothing is inlined): CI checks a Debug build.
foreach(var NM ISAS OBJECTS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_isa_symbols: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" objects "${OBJECTS}")
include("${CMAKE_CURRENT_LIST_DIR}/nm_symbols.cmake")

set(checked 0)
set(bad 0)
foreach(isa IN LISTS ISAS)
  foreach(obj IN LISTS objects)
    get_filename_component(name "${obj}" NAME)
    if(NOT name MATCHES "_${isa}\\.cpp\\.(o|obj)$")
      continue()
    endif()
    math(EXPR checked "${checked} + 1")
    nm_lines(lines "${obj}")
    foreach(line IN LISTS lines)
      # A static initializer runs at start-up, whatever the CPU.
      if(line MATCHES "^[0-9a-fA-F]* [tT] (_GLOBAL__sub_I_.*)$")
        math(EXPR bad "${bad} + 1")
        message("${name}: static initializer ${CMAKE_MATCH_1}")
        continue()
      endif()
      if(NOT line MATCHES "^[0-9a-fA-F]* ([TWiu]) (.*)$")
        continue()
      endif()
      set(sym "${CMAKE_MATCH_2}")
      string(FIND "${sym}" "attn::detail::${isa}::" in_ns)
      string(FIND "${sym}" "attn_xsimd_${isa}::" keyed)
      if(in_ns EQUAL -1 AND keyed EQUAL -1)
        math(EXPR bad "${bad} + 1")
        message("${name}: ${sym}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "check_isa_symbols: no object of the ISAs '${ISAS}' among the objects")
endif()
if(bad GREATER 0)
  message(FATAL_ERROR "check_isa_symbols: ${bad} functions in ISA objects could run outside "
                      "their ISA (listed above): keep them in attn::detail::<isa>, without "
                      "static initializers")
endif()
message(STATUS "check_isa_symbols: ${checked} ISA objects, every external function ISA-unique")

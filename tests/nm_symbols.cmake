# nm helpers for the -P scripts that inspect attn's objects (check_exports.cmake,
# check_isa_symbols.cmake); NM names the tool.

# The demangled lines of `nm <flags> -C --defined-only <file>`, as a list in `var`.
function(nm_lines var file)
  execute_process(COMMAND "${NM}" ${ARGN} -C --defined-only "${file}" OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    get_filename_component(script "${CMAKE_SCRIPT_MODE_FILE}" NAME_WE)
    message(FATAL_ERROR "${script}: ${NM} ${ARGN} failed on ${file}")
  endif()
  string(REPLACE ";" "\\;" out "${out}")
  string(REPLACE "\n" ";" out "${out}")
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# The first capture of `regex` in each of those lines that matches it, as a list in `var`.
function(nm_symbols var file regex)
  nm_lines(lines "${file}" ${ARGN})
  set(symbols "")
  foreach(line IN LISTS lines)
    if(line MATCHES "${regex}")
      list(APPEND symbols "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${var} "${symbols}" PARENT_SCOPE)
endfunction()

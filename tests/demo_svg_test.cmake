# attn-demo's --svg figure, run by CTest (tests/CMakeLists.txt):
#   cmake -DDEMO=<attn-demo> -DCHECK=<attn-demo-svg-check> -DCASE=<case> -DOUT_DIR=<dir> -P this
# Runs the demo, renders its SVG to PNG with rsvg-convert (Debian: librsvg2-bin; the render step
# is skipped, saying so, when it is not installed), and checks that every number the figure
# shows is the weight attn computes. CASE bad_flag checks that a bad flag exits with status 2.
cmake_minimum_required(VERSION 3.25)

if(CASE STREQUAL "bad_flag")
  execute_process(COMMAND ${DEMO} --no-such-flag RESULT_VARIABLE rc OUTPUT_QUIET
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "usage: attn-demo")
    message(FATAL_ERROR "attn-demo --no-such-flag: exit ${rc} (expected 2 and the usage):\n${err}")
  endif()
  return()
endif()

set(svg ${OUT_DIR}/demo_${CASE}.svg)
set(png ${OUT_DIR}/demo_${CASE}.png)
file(REMOVE ${svg} ${png})
if(CASE STREQUAL "default")
  # The seed's sentence, seed, sizes and masks.
  set(tokens "The bank approved the loan quickly")
  set(expect 42 64 16 causal 1)
  execute_process(COMMAND ${DEMO} --svg ${svg} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
elseif(CASE STREQUAL "custom")
  set(tokens "the river bank was muddy after the rain")
  set(expect 7 32 8 window:1,2 2)
  execute_process(COMMAND ${DEMO} --tokens "${tokens}" --seed 7 --mask=window:1,2 --d-model 32
                          --d-k 8 --svg ${svg} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
else()
  message(FATAL_ERROR "unknown CASE ${CASE}")
endif()
if(NOT rc EQUAL 0 OR NOT EXISTS ${svg})
  message(FATAL_ERROR "attn-demo failed (exit ${rc}):\n${out}")
endif()

find_program(RSVG_CONVERT rsvg-convert)
if(RSVG_CONVERT)
  execute_process(COMMAND ${RSVG_CONVERT} -o ${png} ${svg} RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${png})
    message(FATAL_ERROR "rsvg-convert could not render ${svg} (exit ${rc}):\n${err}")
  endif()
  file(READ ${png} magic LIMIT 8 HEX)
  file(SIZE ${png} size)
  if(NOT magic STREQUAL "89504e470d0a1a0a" OR size LESS 10000)
    message(FATAL_ERROR "${png} is not a plausible PNG (${size} bytes)")
  endif()
  message(STATUS "rendered ${png} (${size} bytes)")
else()
  message(STATUS "SKIPPED the render step: rsvg-convert is not installed "
                 "(Debian: apt-get install librsvg2-bin); checking the numbers only")
endif()

execute_process(COMMAND ${CHECK} ${svg} ${expect} "${tokens}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the numbers in ${svg} are not attn's weights")
endif()

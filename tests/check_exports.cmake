# Checks that a shared libattn exports the public API (include/attn, ATTN_API) and nothing else.
#
#   cmake -DNM=<nm> -DLIB=libattn.so -DARCHIVE=libattn-internal.a -P check_exports.cmake
#
# Every defined dynamic symbol must be in namespace attn and outside attn::detail (no kernel, no
# xsimd or std:: template instantiation); every out-of-line function of namespace attn outside
# attn::detail that the same objects define (ARCHIVE, nm type T) must be exported (one missing
# ATTN_API would not be); and each public function below must be there (so that the comparison
# saw the library at all).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)
foreach(var NM LIB ARCHIVE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_exports: -D${var}=... is required")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/nm_symbols.cmake")
nm_symbols(exported "${LIB}" "^[0-9a-fA-F]* [A-Za-z] (.*)$" -D)

set(api
    "attn::attention(" "attn::matmul(" "attn::pack_matrix(" "attn::self_attention("
    "attn::pack_self_attention(" "attn::exp(" "attn::softmax(" "attn::isa_name("
    "attn::parse_isa(" "attn::isa_supported(" "attn::best_isa(" "attn::status_code_name("
    "attn::Status::Error(" "attn::Context::Context(" "attn::Context::reserve_scratch("
    "attn::PackedMatrix::~PackedMatrix(" "attn::PackedSelfAttention::~PackedSelfAttention("
    "attn::reference::matmul(" "attn::reference::exp(" "attn::reference::softmax("
    "attn::reference::attention(" "attn::reference::self_attention(")
set(found "")
list(LENGTH exported count)
set(bad 0)
foreach(sym IN LISTS exported)
  if(NOT sym MATCHES "^attn::" OR sym MATCHES "attn::detail")
    math(EXPR bad "${bad} + 1")
    message("exported, not public: ${sym}")
    continue()
  endif()
  foreach(name IN LISTS api)
    string(FIND "${sym}" "${name}" at)
    if(at EQUAL 0)
      list(APPEND found "${name}")
    endif()
  endforeach()
endforeach()
nm_symbols(public "${ARCHIVE}" "^[0-9a-fA-F]* T (attn::.*)$" -g)
list(FILTER public EXCLUDE REGEX "^attn::detail")
list(LENGTH public defined)
foreach(sym IN LISTS public)
  if(NOT sym IN_LIST exported)
    math(EXPR bad "${bad} + 1")
    message("public, not exported: ${sym}")
  endif()
endforeach()
foreach(name IN LISTS api)
  if(NOT name IN_LIST found)
    math(EXPR bad "${bad} + 1")
    message("public, not exported: ${name}...")
  endif()
endforeach()
if(bad GREATER 0)
  message(FATAL_ERROR "check_exports: ${bad} problems (listed above): mark the public API "
                      "ATTN_API (include/attn/export.hpp), nothing else")
endif()
message(STATUS "check_exports: ${count} exported symbols, all public API; ${defined} public "
               "functions defined, all exported")

# Writes OUTPUT: a C++ file defining jit::codegen::semantics_source() as the text of INPUT
# (dsl/semantics.h) without its `#pragma once`, which NVRTC would warn about in a main file.
file(READ "${INPUT}" text)
string(REPLACE "#pragma once" "" text "${text}")
string(FIND "${text}" ")jx_semantics\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter used to embed it")
endif()
file(WRITE "${OUTPUT}.tmp"
"// Generated from dsl/semantics.h by codegen/embed.cmake. Do not edit.
#include <string_view>
namespace jit::codegen {
namespace {
constexpr char kSemantics[] = R\"jx_semantics(${text})jx_semantics\";
}  // namespace
std::string_view semantics_source() { return {kSemantics, sizeof(kSemantics) - 1}; }
}  // namespace jit::codegen
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

// jitexpr CPU backend — strings (private to backend/cpu/): the loads that turn a block of an S, U
// or Arrow string column into string values (jx::sb, jx::su, jx::s8 of dsl/semantics.h, 16 bytes
// each: a pointer and a length), and the block kernels of the string ops over them.
#pragma once

#include "backend/cpu/kernels.hpp"

#include <jit/dtype.hpp>

#include <cstdint>

namespace jit::cpu {

// Bytes of a string value in a block (jx::sb / su / s8: a pointer and a 64-bit length).
inline constexpr std::int64_t kStringRegBytes = 16;

// dst[j] = the string of element (off + j * stride), j < n, of a column of dtype `t`: for Bytes
// and Str, elements of `item` bytes at `base` (their trailing NULs cut); for Utf8, offsets of
// `item` bytes at `base` (element k is chars[offsets[k], offsets[k + 1]).
void load_strings(DType t, const char* base, std::int64_t item, const char* chars, std::int64_t off,
                  std::int64_t stride, void* dst, std::int64_t n);

// The block kernel of string op `op` (a comparison or a string function) over operands of string
// dtypes `a` and `b` (b ignored for an op of one operand): out[i] = op(in[0][i], in[1][i]), bool
// or int64. `scalar` bit 1: in[0] is one value for every i; bit 2: in[1] is. Null when the op
// has no kernel for those dtypes.
OpFn string_kernel(ir::Op op, DType a, DType b, int scalar);

// The same op read straight from the column, without a block of string values first: out[j] =
// op(element (off + j * stride) of the column, *needle), j < n, the needle one string value
// (a literal). `base`, `item`, `chars` as load_strings takes them. For ==, != and contains of an
// Arrow (Utf8) or S (Bytes) column against a literal; null otherwise. Stride 1 (a block's rows in
// order) is the fast path: Arrow lengths from adjacent offsets, one search over the block's
// bytes, S rows compared whole with the needle NUL-padded to their width.
using StringScanFn = void (*)(const char* base, std::int64_t item, const char* chars, std::int64_t off,
                              std::int64_t stride, std::int64_t n, const void* needle, bool* out);
StringScanFn string_scan_kernel(ir::Op op, DType column);

}  // namespace jit::cpu

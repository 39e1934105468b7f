// jitexpr — exchanging arrays with other libraries without copying.
//
// Arrow (include/jit/arrow.h): primitive columns of the Arrow C data interface, with their
// validity, in and out; evaluation that propagates nulls (see the Arrow section below).
//
// DLPack (include/jit/dlpack.h): the C structures PyTorch, CuPy, JAX, NumPy and others export
// and import. Host tensors become Backend::Cpu arrays, CUDA tensors of device 0 Backend::Cuda
// arrays; the memory is shared, never copied.
//
//   DLManagedTensor* t = torch_like_export();
//   jit::Array a = jit::from_dlpack(t);         // a owns t now: t->deleter runs when the last
//                                               // array referring to the memory is gone
//   DLManagedTensor* r = jit::to_dlpack(jit::eval("a * 2", a));
//   ...                                         // hand r to the consumer, which calls
//   r->deleter(r);                              // r->deleter once when done
#pragma once

#include <jit/arrow.h>
#include <jit/dlpack.h>
#include <jit/array.hpp>
#include <jit/runtime.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit {

// --- DLPack -------------------------------------------------------------------------------

// The DLPack element type of a jitexpr dtype (lanes 1): bool is {kDLBool, 8}, bfloat16
// {kDLBfloat, 16}, complex64 {kDLComplex, 64}.
DLDataType to_dlpack_dtype(DType dtype);
// The jitexpr dtype of a DLPack element type; nullopt when there is none (lanes != 1, an
// opaque handle, an int of 128 bits, ...).
std::optional<DType> from_dlpack_dtype(DLDataType dtype);

// Takes ownership of `tensor` and returns an array viewing its memory (no copy). The tensor's
// deleter is called when the last array (or view, or result aliasing it) referring to the
// memory is destroyed. Accepted: kDLCPU and kDLCUDAHost memory (Backend::Cpu), kDLCUDA and
// kDLCUDAManaged memory of device 0 (Backend::Cuda); lanes 1; up to kMaxDims dimensions;
// strides in elements or NULL for C order; byte_offset.
// Throws ArgumentError for anything else, and then the tensor is NOT consumed: the caller
// still owns it and must call its deleter.
Array from_dlpack(DLManagedTensor* tensor);

// The same for a DLPack 1.x tensor (Python's "dltensor_versioned" capsules): takes ownership,
// calls its deleter once when the last array referring to the memory is gone. A tensor flagged
// DLPACK_FLAG_BITMASK_READ_ONLY gives a read-only array (Array::read_only(): read, never
// written; an assignment or out= that would write it is a ReadOnlyError). Throws
// ArgumentError for a major version other than 1, and then the tensor is not consumed.
Array from_dlpack_versioned(DLManagedTensorVersioned* tensor);

// A borrowed view of a DLTensor: the same checks and mapping as from_dlpack, but nothing is
// owned; the caller keeps the memory alive as long as the array (and any view of it) lives.
Array view_dlpack(const DLTensor& tensor);
// The same for a DLPack 1.x tensor, read-only when it is flagged so (as from_dlpack_versioned).
Array view_dlpack_versioned(const DLManagedTensorVersioned& tensor);

// Exports an array without copying: the returned tensor holds a reference to the array's
// storage (and owns its shape and strides). The consumer calls result->deleter(result) exactly
// once; the storage is freed then if nothing else refers to it. Strides are always given (in
// elements, possibly 0 for broadcast views). Throws ArgumentError for an undefined array.
// For a CUDA array, work queued on a stream that writes it must be complete (or ordered
// before the consumer's reads) before the consumer uses it.
DLManagedTensor* to_dlpack(const Array& array);
// The same as a DLPack 1.x tensor (version 1.0; `flags` as given, e.g.
// DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED; the read-only flag is always
// set for a read-only array).
DLManagedTensorVersioned* to_dlpack_versioned(const Array& array, std::uint64_t flags = 0);

// --- Arrow C data interface (include/jit/arrow.h) ------------------------------------------
//
// Primitive Arrow columns in host memory become 1-D Backend::Cpu arrays; the values are shared,
// not copied, except for booleans (Arrow packs them 8 to a byte, jitexpr stores one per byte).
// A validity bitmap becomes a bool array (true = valid), which is always a copy.
//
//   ArrowColumn a = jit::from_arrow(&schema_a, &array_a);   // moves array_a (release = NULL now)
//   ArrowColumn b = jit::from_arrow(&schema_b, &array_b);
//   ArrowColumn c = jit::eval_arrow("a * 2 + b", {a, b});    // null where a or b is null
//   ArrowArray out; ArrowSchema out_schema;
//   jit::to_arrow(c, &out, &out_schema);                     // the consumer releases both once

// One Arrow column: its values and, when it may hold nulls, its validity.
struct ArrowColumn {
    Array values;                   // 1-D, `length` elements
    std::optional<Array> validity;  // bool, same shape, true where the value is valid; absent
                                    // when the column has no nulls
    std::int64_t null_count = 0;    // number of false entries in validity; -1 when not counted
                                    // (results of eval_arrow, whose validity is computed lazily)
};

// The jitexpr dtype of an Arrow format string: "c" "C" "s" "S" "i" "I" "l" "L" (int8 ... uint64),
// "e" "f" "g" (float16, float32, float64), "b" (bool); the temporal types "tdD" (date32: its int32
// days are widened on import, a copy) datetime64[D], "tdm" (date64) datetime64[ms], "tss:ZONE"
// "tsm:" "tsu:" "tsn:" (timestamp, any zone: its values are UTC) datetime64[s|ms|us|ns], "tDs"
// "tDm" "tDu" "tDn" (duration) timedelta64[s|ms|us|ns]. nullopt for every other format.
std::optional<DType> from_arrow_format(std::string_view format);
// The Arrow format string of a dtype; throws ArgumentError for bfloat16 and complex dtypes,
// which the Arrow C data interface has no primitive format for, and for dates and durations of
// a unit Arrow lacks (datetime64[D] is "tdD", date32; datetime64 of s to ns a timestamp with no
// zone, "tss:" ...; timedelta64 of s to ns a duration).
const char* to_arrow_format(DType dtype);

// Imports a primitive column, taking ownership of `array` by the specification's move
// semantics: the structure is copied and `array->release` is set to NULL, so the caller must
// not release it any more. The values are viewed in place (no copy) and array's release
// callback runs exactly once, when the last jitexpr array (view, slice, result aliasing it)
// referring to them is gone; for a boolean column (copied) that is before from_arrow returns.
// `schema` is only read: the caller still owns and releases it. The values are read-only
// (Array::read_only(), copies included: Arrow columns are immutable).
// Accepted: the formats of from_arrow_format; n_buffers 2; no children and no dictionary;
// length, offset >= 0. A validity bitmap is read only when null_count != 0 and buffers[0] is
// not NULL; null_count -1 (unknown) is counted. Values not aligned to their size are copied.
// Throws ArgumentError for anything else, and then the array is NOT consumed: the caller still
// owns it and must release it.
ArrowColumn from_arrow(const ArrowSchema* schema, ArrowArray* array);

// The same view, owning nothing: the caller keeps `array` (unreleased) alive as long as the
// returned arrays, and any view of them, live.
ArrowColumn view_arrow(const ArrowSchema* schema, const ArrowArray* array);

// Exports a column as a new ArrowArray and ArrowSchema (format from to_arrow_format, name
// `name`, flags ARROW_FLAG_NULLABLE). The values are shared with the array when it is a
// contiguous host array of a non-bool dtype; otherwise (CUDA, strided, bool) copied to host
// memory. The validity is bit-packed (LSB first) into a new buffer, or buffers[0] is NULL when
// the column has no validity or no nulls; null_count is always exact. Each release callback
// frees what its structure owns; the consumer calls out_array->release(out_array) and
// out_schema->release(out_schema) once each. Throws ArgumentError (and writes nothing) for a
// values array that is not 1-D, a validity of another shape or dtype, or a dtype without an
// Arrow format. Dates and durations: NaT is exported as null; a datetime64[D] as a date32, whose
// int32 days must hold every value (copied).
void to_arrow(const ArrowColumn& column, ArrowArray* out_array, ArrowSchema* out_schema, std::string_view name = "");

// Evaluates `text` with the columns bound by position (in order of first appearance, as
// jit::eval) and propagates nulls: the result is null wherever any input column is null. The
// validity is the AND of the inputs' validity arrays, computed by jitexpr on `runtime`; absent
// when no input has one. The program must be elementwise over the columns: its result must be
// 1-D with their length (a reduction such as sum(a) throws ArgumentError: nulls have no
// meaning there). Values at null positions are computed from whatever the input buffers hold
// and are unspecified. Runs on `runtime`'s backend; results of a CUDA runtime are on the device
// (to_arrow copies them to host memory). Under Backend::Auto, host columns stay in host memory
// and each call is placed as any host data is (docs/api.md): small columns run on the CPU
// without starting CUDA, and results of host columns are host arrays; device arrays among the
// variables bring the rest to the device.
ArrowColumn eval_arrow(std::string_view text, const std::vector<ArrowColumn>& columns,
                       Runtime& runtime = Runtime::default_runtime());

// The same with every variable bound by name: `env` holds the values (Arrow columns' values,
// other arrays, host scalars) and `validity` the validity of those that may hold nulls (bool
// arrays of their shape, true = valid). Null rules, as Arrow compute and SQL have them:
//   - a program whose result has the columns' length is elementwise: the result is null where
//     any variable it reads is null (the AND of their validity; absent when none has one);
//   - a program that is one reduction over the whole of an expression, `f(expr)` with f one of
//     sum prod mean min max amin amax any all and no axis, skips the rows where any variable
//     it reads is null (SUM(a*b) skips the rows where a or b is NULL). The result is 0-d, and
//     null (validity a 0-d false) when no row is left: f over nothing is NULL in SQL;
//   - any other program with a reduction over a variable with nulls (`a - mean(a)`,
//     `mean(a) + mean(b)`) throws ArgumentError: each reduction would need rows of its own;
//     evaluate the reductions apart.
// The programs may assign (their last statement's value is the result); Arrow buffers are
// immutable, so a program must not assign to a variable that has a validity.
ArrowColumn eval_arrow(std::string_view text, const Environment& env,
                       const std::map<std::string, Array, std::less<>>& validity, Runtime& runtime);

}  // namespace jit

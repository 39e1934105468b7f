// jitexpr — exchanging arrays with other libraries without copying.
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

#include <jit/array.hpp>
#include <jit/dlpack.h>

#include <optional>

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

// A borrowed view of a DLTensor: the same checks and mapping as from_dlpack, but nothing is
// owned; the caller keeps the memory alive as long as the array (and any view of it) lives.
Array view_dlpack(const DLTensor& tensor);

// Exports an array without copying: the returned tensor holds a reference to the array's
// storage (and owns its shape and strides). The consumer calls result->deleter(result) exactly
// once; the storage is freed then if nothing else refers to it. Strides are always given (in
// elements, possibly 0 for broadcast views). Throws ArgumentError for an undefined array.
// For a CUDA array, work queued on a stream that writes it must be complete (or ordered
// before the consumer's reads) before the consumer uses it.
DLManagedTensor* to_dlpack(const Array& array);

// --- Arrow (planned) -----------------------------------------------------------------------
// The Arrow C data interface (ArrowArray/ArrowSchema) is to be added here.

}  // namespace jit

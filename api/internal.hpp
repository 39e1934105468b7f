// jitexpr — helpers shared inside api/.
#pragma once

#include <jit/array.hpp>

#include <memory>

namespace jit::detail {

Backend resolve(Backend b);
// Bytes of host memory this process could still get: the system's available memory, or less
// under an address-space limit (ulimit -v).
std::uint64_t host_memory_available();                                   // Auto -> the default runtime's backend
std::shared_ptr<Storage> allocate(std::size_t bytes, Backend b);
Array copy_contiguous(const Array& a);                        // a C-contiguous copy on a's backend
// Array::empty for an array first written by work on the legacy default stream (CUDA: may reuse
// a freed block without a driver call); the same as Array::empty on the CPU.
Array empty_for_default_stream(DType dtype, const Shape& shape, Backend backend);
// A C-contiguous array of that dtype and shape with no storage: a prototype for empty_like.
Array prototype(DType dtype, const Shape& shape, Backend backend);
// A new array shaped as `proto` (sharing its dimensions, so nothing is allocated for them), on
// fresh storage: empty_for_default_stream when `default_stream`, else Array::empty.
Array empty_like(const Array& proto, bool default_stream);

}  // namespace jit::detail

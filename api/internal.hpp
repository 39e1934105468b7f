// jitexpr — helpers shared inside api/.
#pragma once

#include <jit/array.hpp>

#include <memory>

namespace jit::detail {

Backend resolve(Backend b);                                   // Auto -> the default runtime's backend
std::shared_ptr<Storage> allocate(std::size_t bytes, Backend b);
Array copy_contiguous(const Array& a);                        // a C-contiguous copy on a's backend

}  // namespace jit::detail

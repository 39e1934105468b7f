// jitexpr — the CUDA backend's device for core::Array (see copy.cpp).
#pragma once

#include "core/device.hpp"

#include <cstdint>
#include <string>

namespace jit::cuda {

// Registers CUDA memory with core: Array::empty(..., Backend::Cuda), zeros, host transfers and
// copies between layouts (Array::contiguous, in-place copy-back) then work on this backend.
// Idempotent and thread-safe.
void register_device();

// The PTX text of the strided copy kernels (one entry per word size).
std::string copy_kernels_ptx();

// How a strided copy is launched: words of 2^word_log2 bytes, `units` of them per element, a
// grid-stride loop of `grid` blocks of `block` threads.
struct CopyPlan {
    int word_log2 = 0;
    int units = 1;
    int block = 256;
    std::int64_t grid = 1;
};
CopyPlan plan_copy(const void* dst, const void* src, const core::CopyLayout& layout, int sm_count);

}  // namespace jit::cuda

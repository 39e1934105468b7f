// jitexpr — host-side copies of the staged transfers (pageable <-> pinned).
#pragma once

#include <cstddef>

namespace jit::cuda {

// memcpy(dst, src, n) that writes with non-temporal stores where the target has them (x86-64):
// a pinned buffer that a copy engine reads next gains nothing from having its lines in the
// cache, and plain stores read each line before writing it. On the H100 host of 2026-12-07,
// 8 threads staged 52.9 GB/s this way against 43.1 with memcpy
// (bench/results/2026-12-07d-h100-stream-probe.txt). Same result as memcpy; the ranges must not
// overlap.
void copy_streaming(void* dst, const void* src, std::size_t n) noexcept;

// Off: copy_streaming is memcpy (process-wide; for benchmarks that compare the two in one run).
void set_streaming_stores(bool on) noexcept;

}  // namespace jit::cuda

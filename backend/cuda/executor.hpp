// jitexpr — the CUDA backend: plan -> kernels (build_kernels) -> modules (through a
// ModuleCache) -> launch.
//
// prepare() builds one kernel per schedule stage and gets a loaded module for each from a
// ModuleCache (module_cache.hpp): in memory and, through an ImageStore hook, on disk. run()
// fills the parameter blocks and launches every stage on the caller's stream without
// synchronising (launch.cpp). Tiered compiles start on quick kernels and swap in the full ones
// from a background thread (tiers.hpp).
#pragma once

#include "backend/backend.hpp"
#include "backend/cuda/build.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/module_cache.hpp"

#include <cstdint>
#include <memory>

namespace jit::cuda {

struct ExecutorOptions {
    std::shared_ptr<ModuleCache> cache;  // null: default_module_cache()
    int block = 256;                     // threads per block of every kernel (multiple of 32)
    int device = 0;                      // the CUDA device ordinal every program runs on
};

// Tiered compiles (PrepareOptions::tiered): how many programs started on their scalar-only
// kernels and were upgraded, and a way to wait for the upgrades in flight (tests, benchmarks).
struct TierStats {
    std::uint64_t started = 0;      // programs whose first kernels were the scalar-only tier
    std::uint64_t upgraded = 0;     // of those, programs now running the kernels with vector paths
    std::uint64_t failed = 0;       // background compiles that failed (the program keeps tier 1)
    std::uint64_t ptx_kernels = 0;  // first-tier kernels written as PTX (codegen::emit_ptx)
};
TierStats tier_stats();
void wait_for_upgrades();  // returns when no background compile is in flight

// The CUDA BackendImpl. Throws NoDeviceError from prepare() when CUDA is not available.
std::unique_ptr<jit::detail::BackendImpl> make_cuda_backend(ExecutorOptions options = {});

}  // namespace jit::cuda

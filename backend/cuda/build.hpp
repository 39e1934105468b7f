// jitexpr — the kernels of a plan for the CUDA backend, and precompiling them.
#pragma once

#include "backend/backend.hpp"
#include "backend/cuda/module_cache.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jit::cuda {

// The most IR nodes one CUDA kernel computes. NVRTC's time grows faster than linearly with the
// size of a kernel (docs/fuzzing.md has the measurements), so dsl::plan splits larger
// element-wise computations into kernels of at most this many nodes, where the time per node
// is still about constant.
inline constexpr std::size_t kMaxStageNodes = 2048;

// What one stage of the CUDA backend may compute: the limits dsl::plan schedules within.
dsl::Limits limits();

// The kernels of a plan, one per stage. Every CUDA caller emits through this one function
// (preparation, its tiers and variants, precompile), so the kernels, and so the keys they are
// cached under, cannot differ between them.
enum class Tier : std::uint8_t {
    Full,        // vector paths where the layout allows: what a prepared program runs
    ScalarOnly,  // the first tier of a tiered compile: no vector paths (half the NVRTC time)
    Strided,     // every element-wise kernel Strided: outputs given other layouts at run time
};
struct KernelOptions {
    int block = 256;  // threads per block of every kernel (multiple of 32)
    // ScalarOnly: Flat kernels written as PTX for sm_<ptx_sm> where codegen::emit_ptx can
    // (KernelSource::ptx); 0: none.
    int ptx_sm = 0;
};
codegen::Emitted build_kernels(const ir::Plan& plan, const KernelOptions& options, Tier tier);

// What explain shows of each kernel of `emitted` (build_kernels' output for `plan`): kind, index
// and vector width, name and launch. Pure: the cache and tier fields are left to the caller.
std::vector<detail::KernelReport> describe_kernels(const ir::Plan& plan, const codegen::Emitted& emitted);

// Ahead-of-time compilation (`jitexpr precompile`): one entry per kernel of the program, in
// stage order, for the kernels prepare() loads first (the variant for C-contiguous outputs).
struct PrecompiledKernel {
    std::string name;             // the kernel's generated name
    std::string disk_key;         // ModuleCache::disk_key: what prepare() will ask the ImageStore for
    bool already_stored = false;  // the store had it: nothing compiled
    double compile_ms = 0;
    std::size_t image_bytes = 0;
};
// The plan's kernels as prepare() loads them first (build_kernels, Tier::Full, blocks of
// `block` threads), each compiled with NVRTC for `options` (no driver or device needed) unless
// `store.get` already has it, and the images put through `store.put`. `plan` is made within
// limits(). Throws CompileError.
std::vector<PrecompiledKernel> precompile(const ir::Plan& plan, const CompileOptions& options, const ImageStore& store,
                                          int block = 256);

}  // namespace jit::cuda

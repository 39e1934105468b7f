// jitexpr — compiling a plan's CUDA kernels ahead of time into the disk cache, under the keys a
// runtime on that architecture looks up (jit::Precompiler, include/jit/precompile.hpp, is the
// public face). The image store over the disk cache is the one the runtime's module cache uses.
#pragma once

#include "backend/cache/cache.hpp"
#include "backend/cuda/module_cache.hpp"
#include "dsl/plan.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jit::run {

// The disk cache `disk` as the module cache's image store: the file key is the digest of the
// module cache's text key. `strict`: a write that fails is an IOError (else it is dropped).
cuda::ImageStore disk_image_store(std::shared_ptr<cache::DiskCache> disk, bool strict);

struct PrecompileTarget {
    std::optional<std::pair<int, int>> arch;  // absent: the device's
    std::string cache_dir;
    bool fast_math = false;
    std::vector<std::string> nvrtc_options;
};

struct Precompiled {
    std::string name;
    bool already_stored = false;
    double compile_ms = 0;
    std::size_t image_bytes = 0;
};

class Precompiler {
public:
    // NoDeviceError without an arch and without a GPU; IOError when the disk cache is disabled.
    explicit Precompiler(const PrecompileTarget& target);
    int cc_major() const { return co_.cc_major; }
    int cc_minor() const { return co_.cc_minor; }
    const std::string& cache_dir() const { return dir_; }
    // What one stage of a CUDA runtime may compute: plans to precompile are made within it.
    static dsl::Limits limits();
    // The plan's kernels as a runtime prepares them first, compiled unless stored already.
    std::vector<Precompiled> add(const ir::Plan& plan) const;

private:
    cuda::CompileOptions co_;
    std::shared_ptr<cache::DiskCache> disk_;
    cuda::ImageStore store_;
    std::string dir_;
};

}  // namespace jit::run

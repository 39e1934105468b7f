// jitexpr — the CUDA backend: emit (codegen) -> compile (NVRTC, through a module cache) -> launch.
//
// prepare() emits one kernel per schedule stage and gets a loaded module for each from a
// ModuleCache: in memory (keyed by the kernel source's hash plus the target; a kernel asked for
// by two threads at once is compiled once, different kernels compile in parallel) and, through
// an ImageStore hook, on disk. run() fills the parameter blocks and launches every stage on the
// caller's stream without synchronising.
#pragma once

#include "backend/backend.hpp"
#include "backend/cuda/cuda.hpp"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace jit::codegen {
struct KernelSource;
}

namespace jit::cuda {

// Where compiled images persist between processes (backend/cache's disk cache, connected by the
// runtime). `key` holds every field that changes the binary (source hash and length, entry
// name, arch, options, NVRTC version) as text; an implementation may hash it again. Both
// functions must be thread-safe; `get` returns nullopt on a miss. Errors inside are the store's
// business: throwing from get/put is reported as a miss / ignored.
struct ImageStore {
    std::function<std::optional<std::string>(const std::string& key)> get;
    std::function<void(const std::string& key, const std::string& bytes)> put;
};

class ModuleCache {
public:
    struct Stats {
        std::uint64_t hits = 0;       // modules found in memory
        std::uint64_t compiles = 0;   // NVRTC compiles
        std::uint64_t disk_hits = 0;  // images found in the ImageStore
        double compile_ms = 0;        // total NVRTC time
        std::size_t entries = 0;      // modules held
    };
    // How one lookup went, for PrepareInfo.
    struct Lookup {
        bool hit = false;  // memory or disk: no NVRTC
        double compile_ms = 0, load_ms = 0;
    };

    ModuleCache() = default;
    ModuleCache(const ModuleCache&) = delete;
    ModuleCache& operator=(const ModuleCache&) = delete;

    // The loaded module for `kernel` compiled with `options`. Throws CompileError / CudaError;
    // a failed compile is not cached (the next call tries again).
    ModulePtr get(const codegen::KernelSource& kernel, const CompileOptions& options, Lookup* lookup = nullptr);

    void set_image_store(ImageStore store);
    Stats stats() const;
    void clear();  // drops the modules from memory (loaded functions in use stay valid)

    // The text key given to the ImageStore for a kernel (exposed for tests).
    static std::string disk_key(const codegen::KernelSource& kernel, const CompileOptions& options);

private:
    struct Entry {
        std::string source;  // compared on a hit: the map key is a 64-bit hash
        std::shared_future<ModulePtr> module;
    };
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Entry> entries_;
    ImageStore store_;
    Stats stats_;
};

// The process-wide module cache (what make_cuda_backend uses by default).
std::shared_ptr<ModuleCache> default_module_cache();

struct ExecutorOptions {
    std::shared_ptr<ModuleCache> cache;  // null: default_module_cache()
    int block = 256;                     // threads per block of every kernel (multiple of 32)
};

// The CUDA BackendImpl. Throws NoDeviceError from prepare() when CUDA is not available.
std::unique_ptr<jit::detail::BackendImpl> make_cuda_backend(ExecutorOptions options = {});

}  // namespace jit::cuda

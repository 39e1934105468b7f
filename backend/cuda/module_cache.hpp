// jitexpr — the CUDA module cache: kernel source -> loaded module, in memory (an LRU with single
// flight: a kernel asked for by two threads at once is compiled once, different kernels compile
// in parallel) and, through an ImageStore, on disk.
#pragma once

#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

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
    // What becomes of an image compiled for get(): given to the ImageStore at once (Now), by a
    // background writer (Later: the store's write, with its fsyncs, a few ms on some hosts and
    // tens at worst, stays off a first eval's path; Runtime::wait_for_compiles and exit wait
    // for it), or kept in memory only (No).
    enum class Store : std::uint8_t { No, Now, Later };

    struct Stats {
        std::uint64_t hits = 0;       // modules found in memory (or being loaded by another thread)
        std::uint64_t compiles = 0;   // NVRTC compiles
        std::uint64_t disk_hits = 0;  // images found in the ImageStore
        std::uint64_t evictions = 0;  // modules dropped from memory by the LRU bound
        double compile_ms = 0;        // total NVRTC time
        // Device libraries (codegen::device_libraries) compiled by build_libraries, apart from
        // `compiles`, and those a PTX kernel was linked with from the ImageStore.
        std::uint64_t library_compiles = 0, library_loads = 0;
        std::size_t entries = 0;   // modules held
        std::size_t capacity = 0;  // most modules held
    };
    // How one lookup went, for PrepareInfo.
    struct Lookup {
        bool hit = false;  // memory or disk: no NVRTC
        // load_ms: from the disk cache, reading and checking its entry and loading the module;
        // after a compile, loading the module
        double compile_ms = 0, load_ms = 0;
    };

    // Keeps at most `capacity` loaded modules, least recently used dropped first (0: none is
    // kept; a kernel asked for by several threads at once is still compiled once).
    explicit ModuleCache(std::size_t capacity = 4096);
    ModuleCache(const ModuleCache&) = delete;
    ModuleCache& operator=(const ModuleCache&) = delete;

    // On the calling thread's current device (cuda::DeviceScope).
    // The loaded module for `kernel` compiled with `options`: from memory, else from the
    // ImageStore, else compiled (and given to the store). Threads asking for the same kernel at
    // once share one compile; different kernels compile in parallel. Throws CompileError /
    // CudaError; a failure is not cached (the next call tries again).
    // `store` says what becomes of what it compiles (the kernel and the device functions built
    // for it); No also skips the ImageStore lookup. A first tier's own kernels use No (once the
    // full kernels are on disk no later process asks for them), its kernels shared with the
    // full ones Later.
    ModulePtr get(const codegen::KernelSource& kernel, const CompileOptions& options, Lookup* lookup = nullptr,
                  Store store = Store::Now);
    // The same without compiling: from memory, else from the ImageStore (then kept in memory);
    // null when neither has it.
    ModulePtr find(const codegen::KernelSource& kernel, const CompileOptions& options, Lookup* lookup = nullptr);

    // Where `kernel` compiled with `options` is now, without loading, compiling or counting
    // anything (explain): loaded in memory on the current device, stored on disk, or neither.
    enum class Presence : std::uint8_t { Memory, Disk, None };
    Presence presence(const codegen::KernelSource& kernel, const CompileOptions& options) const;

    // The image of `kernel` without loading it: NVRTC for C++ kernels (relocatable code for
    // device functions); nvJitLink for PTX kernels, linked with the device functions they call,
    // each compiled once and kept (memory, then the ImageStore) for every later kernel. Needs
    // no driver. Throws CompileError. `store` as get()'s, for the device functions it compiles
    // (Later for No: they serve later kernels).
    Image build(const codegen::KernelSource& kernel, const CompileOptions& options, Store store = Store::Now);
    // The relocatable image of a device function (a PTX kernel's `links`): memory, else the
    // ImageStore, else NVRTC (then stored). Threads asking at once share one compile.
    std::shared_ptr<const Image> device_function(const codegen::KernelSource& f, const CompileOptions& options,
                                                 Store store = Store::Now);

    // The device libraries (codegen::device_libraries) for `options`: each one that neither
    // memory nor the ImageStore holds is compiled (one NVRTC run per group, a few hundred ms)
    // and stored. From then on build() links a PTX kernel with the libraries holding its calls
    // rather than compiling each function. Returns how many it compiled; a library that does
    // not compile is skipped (its functions compile one by one as before).
    std::size_t build_libraries(const CompileOptions& options);
    // True once per cache and options, when the ImageStore can keep images and some library is
    // not built yet: the caller then runs build_libraries (in the background). A machine builds
    // them once; a cache without a store never (each process would pay for them again).
    bool claim_library_build(const CompileOptions& options);

    void set_image_store(ImageStore store);
    void set_capacity(std::size_t capacity);
    Stats stats() const;
    void clear();  // drops the modules from memory (loaded functions in use stay valid)

    // The text key of a kernel: every field that changes the binary (two independent 64-bit
    // hashes and the length of the source, entry name, arch, options, NVRTC version). The
    // memory level is keyed by it, and the ImageStore is given it.
    static std::string disk_key(const codegen::KernelSource& kernel, const CompileOptions& options);
    // The memory level's key: the disk key and the current device's ordinal (a module is loaded
    // into one device's context). The disk key names the architecture only, so identical GPUs
    // share the files on disk.
    static std::string memory_key(const std::string& disk_key);

private:
    ImageStore image_store() const;  // a copy, taken under the lock
    ModulePtr from_store(const ImageStore& store, const CompileOptions& options, const std::string& key,
                         Lookup& lookup);
    // The image the store holds under `key` (nullopt: no store, a miss, or bytes that do not decode).
    static std::optional<Image> stored_image(const ImageStore& store, const CompileOptions& options,
                                             const std::string& key);
    // Counts a compile and gives its image to the store as `when` says (a failing store is ignored).
    void keep_compiled(const ImageStore& store, const std::string& key, const Image& img, Store when);
    ModulePtr create(const codegen::KernelSource& kernel, const CompileOptions& options, const std::string& key,
                     Lookup& lookup, Store store);

    // Device library `group` for `co` from memory, else the ImageStore (then kept in memory);
    // null when neither has it. Never compiles.
    std::shared_ptr<const Image> built_library(std::size_t group, const CompileOptions& co);
    std::string library_key(std::size_t group, const CompileOptions& co);  // disk_key, memoized

    cache::MemoryCache<std::string, ModulePtr> modules_;
    cache::MemoryCache<std::string, std::shared_ptr<const Image>> functions_;  // relocatable device functions
    mutable std::mutex mutex_;                                                 // store_ and the counters below
    ImageStore store_;
    std::uint64_t compiles_ = 0, disk_hits_ = 0, library_compiles_ = 0, library_loads_ = 0;
    std::map<std::string, std::string> library_keys_;  // library_key's: options and group -> disk key
    std::set<std::string> library_builds_;             // claim_library_build's: the options claimed
    double compile_ms_ = 0;
};

// The process-wide module cache (what make_cuda_backend uses by default).
std::shared_ptr<ModuleCache> default_module_cache();

// The bytes an ImageStore holds for an image ('C' or 'P', then the CUBIN or PTX), and back
// (nullopt for bytes that are not an image).
std::string encode_image(const Image& img);
std::optional<Image> decode_image(const std::string& bytes, const CompileOptions& options);

}  // namespace jit::cuda

// jitexpr — the CUDA module cache (see module_cache.hpp).
#include "backend/cuda/module_cache.hpp"

#include "backend/cuda/parallel.hpp"
#include "backend/cuda/tiers.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

namespace jit::cuda {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// ImageStore writes taken off the calling thread (Store::Later): one thread of the process
// writes them in the order given, then ends when none is left. Each write counts as a
// background compile (tiers()), so Runtime::wait_for_compiles and exit wait for it; the thread
// that queues one waits for them when it exits (WaitForUpgrades), as for an upgrade.
class LaterWrites {
public:
    void push(ImageStore store, std::string key, std::string bytes) {
        thread_local WaitForUpgrades wait_before_this_thread_exits;
        (void)wait_before_this_thread_exits;
        tiers().begin_other();
        std::unique_lock<std::mutex> lock(m_);
        jobs_.push_back({std::move(store), std::move(key), std::move(bytes)});
        if (running_) return;
        running_ = true;
        try {
            std::thread([this] { drain(); }).detach();
        } catch (...) {  // no thread to be had: this one writes
            lock.unlock();
            drain();
        }
    }

private:
    struct Job {
        ImageStore store;
        std::string key, bytes;
    };
    void drain() {
        for (;;) {
            Job job;
            {
                std::lock_guard<std::mutex> lock(m_);
                if (jobs_.empty()) {
                    running_ = false;
                    return;
                }
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            try {
                job.store.put(job.key, job.bytes);
            } catch (...) {
                // The disk cache is an optimisation; failing to write it is not an error here.
            }
            job = {};  // the store's references dropped before the count
            tiers().end_other();
        }
    }
    std::mutex m_;
    std::deque<Job> jobs_;
    bool running_ = false;
};

LaterWrites& later_writes() {
    static auto* w = new LaterWrites;  // never destroyed: writes may end during exit
    return *w;
}

}  // namespace

std::string encode_image(const Image& img) { return (img.is_cubin ? "C" : "P") + img.data; }

std::optional<Image> decode_image(const std::string& bytes, const CompileOptions& co) {
    if (bytes.size() < 2 || (bytes[0] != 'C' && bytes[0] != 'P')) return std::nullopt;
    Image img;
    img.is_cubin = bytes[0] == 'C';
    img.data = bytes.substr(1);
    img.arch = fmt::format("{}_{}{}", img.is_cubin ? "sm" : "compute", co.cc_major, co.cc_minor);
    return img;
}

std::string ModuleCache::disk_key(const codegen::KernelSource& k, const CompileOptions& co) {
    std::string extra;
    for (const auto& e : co.extra) extra += e + " ";
    // Two independent 64-bit hashes and the length of the source: a 128-bit identity. The
    // second is XXH3 where the build has it: on a disk hit in a fresh process this runs for
    // every kernel, and a second FNV-1a pass over a 15 KB source took about 20 us.
    return fmt::format(
        "jitexpr-cuda-module-v2|src={}-{}|len={}|name={}|arch=sm_{}{}|fast={}|lineinfo={}|extra={}|nvrtc={}{}",
        codegen::hex64(k.hash), codegen::hex64(cache::hash64(k.source, 0x9e3779b97f4a7c15ULL)), k.source.size(), k.name,
        co.cc_major, co.cc_minor, co.fast_math ? 1 : 0, co.line_info ? 1 : 0, extra, nvrtc_version(),
        k.relocatable ? "|rdc=1" : "");
}

ModuleCache::ModuleCache(std::size_t capacity) : modules_(capacity), functions_(1024) {}

std::shared_ptr<const Image> ModuleCache::device_function(const codegen::KernelSource& f, const CompileOptions& co,
                                                          Store when) {
    const std::string key = disk_key(f, co);
    return functions_.get_or_create(key, [&]() -> std::shared_ptr<const Image> {
        const ImageStore store = image_store();
        if (auto img = stored_image(store, co, key)) {
            std::lock_guard<std::mutex> lock(mutex_);
            ++disk_hits_;
            return std::make_shared<const Image>(std::move(*img));
        }
        Image img = compile(f.source, f.name, co, true);
        keep_compiled(store, key, img, when);
        return std::make_shared<const Image>(std::move(img));
    });
}

std::optional<Image> ModuleCache::stored_image(const ImageStore& store, const CompileOptions& co,
                                               const std::string& key) {
    if (!store.get) return std::nullopt;
    std::optional<std::string> bytes;
    try {
        bytes = store.get(key);
    } catch (...) {
        bytes.reset();
    }
    if (!bytes) return std::nullopt;
    return decode_image(*bytes, co);
}

void ModuleCache::keep_compiled(const ImageStore& store, const std::string& key, const Image& img, Store when) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++compiles_;
        compile_ms_ += img.compile_ms;
    }
    if (when == Store::No || !store.put) return;
    if (when == Store::Later) {
        later_writes().push(store, key, encode_image(img));
        return;
    }
    {
        try {
            store.put(key, encode_image(img));
        } catch (...) {
            // The disk cache is an optimisation; failing to write it is not an error here.
        }
    }
}

std::string ModuleCache::library_key(std::size_t group, const CompileOptions& co) {
    std::string id =
        fmt::format("{}|{}.{}|{}|{}|", group, co.cc_major, co.cc_minor, co.fast_math ? 1 : 0, co.line_info ? 1 : 0);
    for (const auto& e : co.extra) id += e + " ";
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (auto it = library_keys_.find(id); it != library_keys_.end()) return it->second;
    }
    std::string key = disk_key(codegen::device_libraries().at(group), co);  // hashes ~100 KB: once
    std::lock_guard<std::mutex> lock(mutex_);
    return library_keys_.emplace(id, std::move(key)).first->second;
}

std::shared_ptr<const Image> ModuleCache::built_library(std::size_t group, const CompileOptions& co) {
    const std::string key = library_key(group, co);
    if (auto img = functions_.get(key)) return *img;
    auto img = stored_image(image_store(), co, key);
    if (!img) return nullptr;
    auto held = std::make_shared<const Image>(std::move(*img));
    functions_.put(key, held);
    std::lock_guard<std::mutex> lock(mutex_);
    ++library_loads_;
    return held;
}

std::size_t ModuleCache::build_libraries(const CompileOptions& co) {
    const auto& libs = codegen::device_libraries();
    std::size_t built = 0;
    for (std::size_t g = 0; g < libs.size(); ++g) {
        if (built_library(g, co)) continue;
        Image img;
        try {
            img = compile(libs[g].source, libs[g].name, co, true);
        } catch (const CompileError&) {
            continue;  // its functions compile one by one, and report their errors there
        }
        const std::string key = library_key(g, co);
        if (const ImageStore store = image_store(); store.put) {
            try {
                store.put(key, encode_image(img));
            } catch (...) {
                // The disk cache is an optimisation; failing to write it is not an error here.
            }
        }
        functions_.put(key, std::make_shared<const Image>(std::move(img)));
        std::lock_guard<std::mutex> lock(mutex_);
        ++library_compiles_;
        ++built;
    }
    return built;
}

bool ModuleCache::claim_library_build(const CompileOptions& co) {
    if (!image_store().put) return false;
    std::string id = fmt::format("{}.{}|{}|{}|", co.cc_major, co.cc_minor, co.fast_math ? 1 : 0, co.line_info ? 1 : 0);
    for (const auto& e : co.extra) id += e + " ";
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!library_builds_.insert(id).second) return false;
    }
    for (std::size_t g = 0; g < codegen::device_libraries().size(); ++g)
        if (!built_library(g, co)) return true;
    return false;
}

Image ModuleCache::build(const codegen::KernelSource& k, const CompileOptions& co, Store when) {
    if (!k.ptx) return compile(k.source, k.name, co, k.relocatable);
    const auto t0 = Clock::now();
    // Each call from a built device library (one image per group, however many it holds), the
    // others compiled one by one (once per machine, then from memory or the ImageStore).
    std::vector<std::shared_ptr<const Image>> held(k.links.size());
    std::vector<std::size_t> alone;
    std::map<int, std::shared_ptr<const Image>> libraries;
    for (std::size_t i = 0; i < k.links.size(); ++i) {
        const int g = k.links[i].entries.empty() ? -1 : codegen::device_library_of(k.links[i].entries[0]);
        if (g >= 0) {
            auto [it, first] = libraries.try_emplace(g);
            if (first) it->second = built_library(static_cast<std::size_t>(g), co);
            if (it->second) continue;
        }
        alone.push_back(i);
    }
    // Device functions serve every later kernel that calls them: stored even for a kernel that
    // is not (Store::No), and off the calling thread unless it writes at once.
    const Store fn_store = when == Store::Now ? Store::Now : Store::Later;
    parallel_for(alone.size(),
                 [&](std::size_t j) { held[alone[j]] = device_function(k.links[alone[j]], co, fn_store); });
    std::vector<const Image*> link;
    for (const auto& h : held)
        if (h) link.push_back(h.get());
    for (const auto& [g, img] : libraries)
        if (img) link.push_back(img.get());
    Image img = assemble_ptx(k.source, k.name, co, link);
    img.compile_ms = ms_since(t0);  // the functions compiled for it included
    return img;
}

ModulePtr ModuleCache::get(const codegen::KernelSource& k, const CompileOptions& co, Lookup* lookup, Store when) {
    Lookup local;
    Lookup& lk = lookup ? *lookup : local;
    lk = {};
    const std::string key = disk_key(k, co);
    bool created = false;
    ModulePtr m = modules_.get_or_create(memory_key(key), [&] {
        created = true;
        return create(k, co, key, lk, when);
    });
    if (!created) lk.hit = true;  // found in memory, or loaded by the thread that was first
    return m;
}

ModulePtr ModuleCache::find(const codegen::KernelSource& k, const CompileOptions& co, Lookup* lookup) {
    Lookup local;
    Lookup& lk = lookup ? *lookup : local;
    lk = {};
    const std::string key = disk_key(k, co);
    const std::string mkey = memory_key(key);
    if (auto m = modules_.get(mkey)) {
        lk.hit = true;
        return *m;
    }
    ModulePtr m = from_store(image_store(), co, key, lk);
    if (m) modules_.put(mkey, m);
    return m;
}

ModuleCache::Presence ModuleCache::presence(const codegen::KernelSource& k, const CompileOptions& co) const {
    const std::string key = disk_key(k, co);
    if (modules_.contains(memory_key(key))) return Presence::Memory;
    return stored_image(image_store(), co, key) ? Presence::Disk : Presence::None;
}

std::string ModuleCache::memory_key(const std::string& disk_key) {
    std::string key = disk_key;
    key += fmt::format("\ndevice={}", current_device());
    return key;
}

ImageStore ModuleCache::image_store() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return store_;
}

// The module from the ImageStore's image, or null (no store, a miss, or an image that does not load).
ModulePtr ModuleCache::from_store(const ImageStore& store, const CompileOptions& co, const std::string& key,
                                  Lookup& lk) {
    auto t0 = Clock::now();
    auto decoded = stored_image(store, co, key);
    if (!decoded) return nullptr;
    try {
        ModulePtr m = Module::load(*decoded);
        lk.load_ms = ms_since(t0);
        lk.hit = true;
        std::lock_guard<std::mutex> lock(mutex_);
        ++disk_hits_;
        return m;
    } catch (const CudaError& e) {
        if (e.sticky()) throw;  // the context is lost: compiling afresh cannot help
        return nullptr;         // a stale or damaged image: the caller compiles afresh
    }
}

ModulePtr ModuleCache::create(const codegen::KernelSource& k, const CompileOptions& co, const std::string& key,
                              Lookup& lk, Store when) {
    const ImageStore store = image_store();
    if (when != Store::No)
        if (ModulePtr m = from_store(store, co, key, lk)) return m;
    Image img = build(k, co, when);
    lk.compile_ms = img.compile_ms;
    keep_compiled(store, key, img, when);
    auto t0 = Clock::now();
    ModulePtr m = Module::load(img);
    lk.load_ms = ms_since(t0);
    return m;
}

void ModuleCache::set_image_store(ImageStore store) {
    std::lock_guard<std::mutex> lock(mutex_);
    store_ = std::move(store);
}

void ModuleCache::set_capacity(std::size_t capacity) { modules_.set_capacity(capacity); }

ModuleCache::Stats ModuleCache::stats() const {
    const cache::MemoryStats ms = modules_.stats();
    Stats s;
    s.hits = ms.hits + ms.coalesced;
    s.evictions = ms.evictions;
    s.entries = ms.entries;
    s.capacity = ms.capacity;
    std::lock_guard<std::mutex> lock(mutex_);
    s.compiles = compiles_;
    s.disk_hits = disk_hits_;
    s.compile_ms = compile_ms_;
    s.library_compiles = library_compiles_;
    s.library_loads = library_loads_;
    return s;
}

void ModuleCache::clear() {
    modules_.clear();
    functions_.clear();
}

std::shared_ptr<ModuleCache> default_module_cache() {
    static std::shared_ptr<ModuleCache> cache = std::make_shared<ModuleCache>();
    return cache;
}

}  // namespace jit::cuda

// jitexpr — the CUDA backend: module cache, prepare (emit + compile + load), run (launch).
#include "backend/cuda/executor.hpp"

#include "codegen/codegen.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace jit::cuda {

namespace {

// parallel_for for a call that can be stopped or watched (`ctl` not null): no item starts once a
// stop is requested (the ones running finish), and then CancelledError is thrown. When the
// control wants ticks, the calling thread does none of the items but waits, ticking it every
// ~20 ms (its poll function and progress callback run on the calling thread only).
template <class Fn>
void parallel_for_watched(std::size_t n, jit::detail::CallControl* ctl, Fn&& fn);

// Runs fn(0) ... fn(n - 1) on up to hardware_concurrency threads (the caller's among them) and
// returns when all are done; the first exception any call threw is rethrown then.
template <class Fn>
void parallel_for(std::size_t n, Fn&& fn) {
    if (n <= 1) {
        if (n == 1) fn(std::size_t{0});
        return;
    }
    const std::size_t workers = std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<std::size_t> next{0};
    std::mutex error_mutex;
    std::exception_ptr error;
    auto work = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
            try {
                fn(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    try {
        for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    } catch (...) {
        // No more threads to be had: the ones started and this one share the work.
    }
    work();
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
}

template <class Fn>
void parallel_for_watched(std::size_t n, jit::detail::CallControl* ctl, Fn&& fn) {
    if (!ctl) return parallel_for(n, std::forward<Fn>(fn));
    std::atomic<bool> skipped{false};
    auto item = [&](std::size_t i) {
        if (ctl->stop_requested()) {
            skipped = true;
            return;
        }
        fn(i);
    };
    if (!ctl->wants_ticks() || n == 0) {
        parallel_for(n, item);
    } else {
        std::mutex m;
        std::condition_variable cv;
        bool finished = false;
        std::exception_ptr error;
        std::thread worker;
        try {
            worker = std::thread([&] {
                std::exception_ptr e;
                try {
                    parallel_for(n, item);
                } catch (...) {
                    e = std::current_exception();
                }
                std::lock_guard<std::mutex> lock(m);
                error = e;
                finished = true;
                cv.notify_one();
            });
        } catch (const std::system_error&) {
            parallel_for(n, item);  // no thread to be had: no ticks either
        }
        if (worker.joinable()) {
            std::unique_lock<std::mutex> lock(m);
            while (!cv.wait_for(lock, jit::detail::CallControl::kPollEvery, [&] { return finished; })) {
                lock.unlock();
                ctl->tick();
                lock.lock();
            }
            lock.unlock();
            worker.join();
            if (error) std::rethrow_exception(error);
        }
    }
    if (skipped) jit::detail::CallControl::throw_cancelled();
}

}  // namespace

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string encode_image(const Image& img) { return (img.is_cubin ? "C" : "P") + img.data; }

std::optional<Image> decode_image(const std::string& bytes, const CompileOptions& co) {
    if (bytes.size() < 2 || (bytes[0] != 'C' && bytes[0] != 'P')) return std::nullopt;
    Image img;
    img.is_cubin = bytes[0] == 'C';
    img.data = bytes.substr(1);
    img.arch = fmt::format("{}_{}{}", img.is_cubin ? "sm" : "compute", co.cc_major, co.cc_minor);
    return img;
}

}  // namespace

// ------------------------------------------------------------------------------- module cache

std::string ModuleCache::disk_key(const codegen::KernelSource& k, const CompileOptions& co) {
    std::string extra;
    for (const auto& e : co.extra) extra += e + " ";
    // Two independent 64-bit hashes and the length of the source: a 128-bit identity.
    return fmt::format("jitexpr-cuda-module-v1|src={}-{}|len={}|name={}|arch=sm_{}{}|fast={}|lineinfo={}|extra={}|nvrtc={}{}",
                       codegen::hex64(k.hash), codegen::hex64(codegen::fnv1a(k.source, 0x9e3779b97f4a7c15ULL)),
                       k.source.size(), k.name, co.cc_major, co.cc_minor, co.fast_math ? 1 : 0,
                       co.line_info ? 1 : 0, extra, nvrtc_version(), k.relocatable ? "|rdc=1" : "");
}

ModuleCache::ModuleCache(std::size_t capacity) : modules_(capacity), functions_(1024) {}

std::shared_ptr<const Image> ModuleCache::device_function(const codegen::KernelSource& f, const CompileOptions& co) {
    const std::string key = disk_key(f, co);
    return functions_.get_or_create(key, [&]() -> std::shared_ptr<const Image> {
        const ImageStore store = image_store();
        if (auto img = stored_image(store, co, key)) {
            std::lock_guard<std::mutex> lock(mutex_);
            ++disk_hits_;
            return std::make_shared<const Image>(std::move(*img));
        }
        Image img = compile(f.source, f.name, co, true);
        keep_compiled(store, key, img);
        return std::make_shared<const Image>(std::move(img));
    });
}

std::optional<Image> ModuleCache::stored_image(const ImageStore& store, const CompileOptions& co, const std::string& key) {
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

void ModuleCache::keep_compiled(const ImageStore& store, const std::string& key, const Image& img) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++compiles_;
        compile_ms_ += img.compile_ms;
    }
    if (store.put) {
        try {
            store.put(key, encode_image(img));
        } catch (...) {
            // The disk cache is an optimisation; failing to write it is not an error here.
        }
    }
}

Image ModuleCache::build(const codegen::KernelSource& k, const CompileOptions& co) {
    if (!k.ptx) return compile(k.source, k.name, co, k.relocatable);
    const auto t0 = Clock::now();
    std::vector<std::shared_ptr<const Image>> held(k.links.size());
    parallel_for(k.links.size(), [&](std::size_t i) { held[i] = device_function(k.links[i], co); });
    std::vector<const Image*> link;
    for (const auto& h : held) link.push_back(h.get());
    Image img = assemble_ptx(k.source, k.name, co, link);
    img.compile_ms = ms_since(t0);  // the functions compiled for it included
    return img;
}

ModulePtr ModuleCache::get(const codegen::KernelSource& k, const CompileOptions& co, Lookup* lookup) {
    Lookup local;
    Lookup& lk = lookup ? *lookup : local;
    lk = {};
    const std::string key = disk_key(k, co);
    bool created = false;
    ModulePtr m = modules_.get_or_create(key, [&] {
        created = true;
        return create(k, co, key, lk);
    });
    if (!created) lk.hit = true;  // found in memory, or loaded by the thread that was first
    return m;
}

ModulePtr ModuleCache::find(const codegen::KernelSource& k, const CompileOptions& co, Lookup* lookup) {
    Lookup local;
    Lookup& lk = lookup ? *lookup : local;
    lk = {};
    const std::string key = disk_key(k, co);
    if (auto m = modules_.get(key)) {
        lk.hit = true;
        return *m;
    }
    ModulePtr m = from_store(image_store(), co, key, lk);
    if (m) modules_.put(key, m);
    return m;
}

ImageStore ModuleCache::image_store() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return store_;
}

// The module from the ImageStore's image, or null (no store, a miss, or an image that does not load).
ModulePtr ModuleCache::from_store(const ImageStore& store, const CompileOptions& co, const std::string& key, Lookup& lk) {
    auto decoded = stored_image(store, co, key);
    if (!decoded) return nullptr;
    auto t0 = Clock::now();
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
                              Lookup& lk) {
    const ImageStore store = image_store();
    if (ModulePtr m = from_store(store, co, key, lk)) return m;
    Image img = build(k, co);
    lk.compile_ms = img.compile_ms;
    keep_compiled(store, key, img);
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
    return s;
}

void ModuleCache::clear() {
    modules_.clear();
    functions_.clear();
}

dsl::Limits limits() {
    dsl::Limits l;
    l.max_stage_nodes = kMaxStageNodes;
    return l;
}

codegen::Emitted build_kernels(const ir::Plan& plan, const KernelOptions& options, Tier tier) {
    codegen::EmitOptions eo;
    eo.block = options.block;
    eo.scalar_only = tier == Tier::ScalarOnly;
    eo.force_strided = tier == Tier::Strided;
    codegen::Emitted emitted = codegen::emit(plan.program, plan.schedule, eo);
    // Flat kernels of the ops PTX expresses exactly, written as PTX and assembled by nvJitLink:
    // several times faster to build than through NVRTC.
    if (tier == Tier::ScalarOnly && options.ptx_sm > 0)
        for (auto& k : emitted.kernels)
            if (auto pk = codegen::emit_ptx(plan.program, k, options.ptx_sm)) k = std::move(*pk);
    return emitted;
}

std::vector<PrecompiledKernel> precompile(const ir::Plan& plan, const CompileOptions& options, const ImageStore& store,
                                          int block) {
    KernelOptions ko;
    ko.block = block;
    const codegen::Emitted emitted = build_kernels(plan, ko, Tier::Full);
    std::vector<PrecompiledKernel> out(emitted.kernels.size());
    std::mutex store_mutex;  // the store's callbacks are called from one thread at a time
    parallel_for(emitted.kernels.size(), [&](std::size_t i) {
        const codegen::KernelSource& k = emitted.kernels[i];
        PrecompiledKernel& pk = out[i];
        pk.name = k.name;
        pk.disk_key = ModuleCache::disk_key(k, options);
        std::optional<std::string> present;
        if (store.get) {
            std::lock_guard<std::mutex> lock(store_mutex);
            try {
                present = store.get(pk.disk_key);
            } catch (...) {
                present.reset();
            }
        }
        if (present && decode_image(*present, options)) {
            pk.already_stored = true;
            pk.image_bytes = present->size();
        } else {
            Image img = compile(k.source, k.name, options);
            pk.compile_ms = img.compile_ms;
            std::string bytes = encode_image(img);
            pk.image_bytes = bytes.size();
            std::lock_guard<std::mutex> lock(store_mutex);
            if (store.put) store.put(pk.disk_key, bytes);
        }
    });
    return out;
}

std::shared_ptr<ModuleCache> default_module_cache() {
    static std::shared_ptr<ModuleCache> cache = std::make_shared<ModuleCache>();
    return cache;
}

// ------------------------------------------------------------------------------- prepared program

namespace {

using codegen::KernelKind;
using codegen::KernelSource;
using codegen::Param;

// True when an array of `shape`/`strides` is laid out C-contiguously (axes of extent 1 ignored).
bool c_contiguous(const Shape& shape, const Strides& strides) {
    if (shape_size(shape) <= 1) return true;
    if (strides.size() != shape.size()) return false;
    std::int64_t expect = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (shape[d] == 1) continue;
        if (strides[d] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

bool same_layout(const Shape& shape, const Strides& a, const Strides& b) {
    if (a.size() != shape.size() || b.size() != shape.size()) return false;
    if (shape_size(shape) == 0) return true;  // no element is read: strides do not matter
    for (std::size_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1 && a[d] != b[d]) return false;
    return true;
}

// Bytes of a scalar parameter (the register type of its dtype) from a host value.
std::size_t pack_scalar(const ir::Value& v, DType t, unsigned char* out) {
    auto as_double = [&]() -> double {
        if (is_bool(v.dtype)) return v.b ? 1.0 : 0.0;
        if (is_signed_int(v.dtype)) return static_cast<double>(v.i);
        if (is_unsigned_int(v.dtype)) return static_cast<double>(v.u);
        return v.f;
    };
    auto as_bits = [&]() -> std::uint64_t {
        if (is_bool(v.dtype)) return v.b ? 1 : 0;
        if (is_signed_int(v.dtype)) return static_cast<std::uint64_t>(v.i);
        if (is_unsigned_int(v.dtype)) return v.u;
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(v.f));
    };
    switch (t) {
        case DType::Bool: {
            bool b = is_bool(v.dtype) ? v.b : (as_double() != 0.0 || v.im != 0.0);
            std::memcpy(out, &b, 1);
            return 1;
        }
        case DType::Int8: case DType::UInt8:
        case DType::Int16: case DType::UInt16:
        case DType::Int32: case DType::UInt32:
        case DType::Int64: case DType::UInt64: {
            std::uint64_t bits = as_bits();  // little-endian: the low bytes are the narrower value
            std::memcpy(out, &bits, itemsize(t));
            return itemsize(t);
        }
        case DType::Float16: case DType::BFloat16: case DType::Float32: {
            float f = static_cast<float>(as_double());
            std::memcpy(out, &f, 4);
            return 4;
        }
        case DType::Float64: {
            double d = as_double();
            std::memcpy(out, &d, 8);
            return 8;
        }
        case DType::Complex64: {
            float c[2] = {static_cast<float>(as_double()), static_cast<float>(is_complex(v.dtype) ? v.im : 0.0)};
            std::memcpy(out, c, 8);
            return 8;
        }
        case DType::Complex128: {
            double c[2] = {as_double(), is_complex(v.dtype) ? v.im : 0.0};
            std::memcpy(out, c, 16);
            return 16;
        }
    }
    return 0;
}

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A kernel ready to launch: its source description, module and entry points.
struct Loaded {
    const KernelSource* kernel = nullptr;
    ModulePtr module;
    std::array<void*, 2> fn{};
    std::vector<std::int64_t> layout;  // shape then read rows; write rows filled per run
    std::size_t workspace_offset = 0;  // ReduceAll
};

struct Variant {
    codegen::Emitted emitted;
    std::vector<Loaded> kernels;
};

struct Workspace {
    void* base = nullptr;
    std::size_t bytes = 0;
};

// Per-thread scratch for argument arrays: grows once, then no allocation on the launch path.
struct ArgScratch {
    std::vector<void*> argv;
    std::vector<std::array<unsigned char, 16>> values;  // pointers, scalars, counts
    std::vector<std::int64_t> layout;
};

// Tiered compiles of the process: counters and the upgrades in flight.
class Tiers {
public:
    void begin() {
        std::lock_guard<std::mutex> lock(m_);
        ++stats_.started;
        ++in_flight_;
    }
    void end(bool upgraded) {
        std::lock_guard<std::mutex> lock(m_);
        if (upgraded) ++stats_.upgraded;
        else ++stats_.failed;
        if (--in_flight_ == 0) idle_.notify_all();
    }
    void count_ptx() {
        std::lock_guard<std::mutex> lock(m_);
        ++stats_.ptx_kernels;
    }
    TierStats stats() const {
        std::lock_guard<std::mutex> lock(m_);
        return stats_;
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m_);
        idle_.wait(lock, [this] { return in_flight_ == 0; });
    }

private:
    mutable std::mutex m_;
    std::condition_variable idle_;
    TierStats stats_;
    std::uint64_t in_flight_ = 0;
};

Tiers& tiers() {
    static Tiers* t = new Tiers;  // never destroyed: upgrades may end during exit
    return *t;
}

// A process must not tear NVRTC down under a background compile: NVRTC registers its exit-time
// destructors during its first compile, before any handler of ours could run first. glibc's
// exit() runs the exiting thread's thread_local destructors before all of those, so every thread
// that starts an upgrade holds one of these, and when it exits (or returns from main) it waits
// for the upgrades in flight. They finish what the process paid for: the full kernels go to disk
// and the next process starts on them.
struct WaitForUpgrades {
    ~WaitForUpgrades() { tiers().wait(); }
};

class CudaPrepared final : public detail::Prepared {
public:
    CudaPrepared(const ir::Plan& plan, const detail::PrepareOptions& o, std::shared_ptr<ModuleCache> cache, int block)
        : plan_(plan), program_(plan_.program), schedule_(plan_.schedule), options_(o), cache_(std::move(cache)),
          block_(block) {
        options_.control = nullptr;  // valid during this constructor only
        detail::CallControl* const ctl = o.control;
        const DeviceInfo& dev = device_info();
        sm_count_ = std::max(1, dev.sm_count);
        compile_.cc_major = dev.cc_major;
        compile_.cc_minor = dev.cc_minor;
        compile_.fast_math = o.fast_math;
        compile_.extra = o.nvrtc_options;
        auto t0 = Clock::now();
        KernelOptions ko;
        ko.block = block_;
        codegen::Emitted full = build_kernels(plan_, ko, Tier::Full);
        // Tiered: when kernels with vector paths are not yet compiled (in memory or on disk), the
        // program starts on scalar-only kernels (about half the NVRTC time where transcendental
        // functions dominate) and the full kernels compile in the background, replacing them
        // once all are loaded. Results are the same either way: each element is computed alike.
        bool tier = false;
        double found_load_ms = 0;  // modules the lookups below loaded from disk
        if (o.tiered) {
            for (const auto& k : full.kernels) {
                if (k.launch.vec <= 1) continue;
                ModuleCache::Lookup lk;
                if (!cache_->find(k, compile_, &lk)) tier = true;
                found_load_ms += lk.load_ms;
            }
        }
        if (tier) {
            // A compile is coming: the full kernels, with NVRTC, in the background. Its library
            // start (~270 ms the first time in a process) overlaps the first tier from here on.
            warm_up_nvrtc();
            // Flat kernels of the ops PTX expresses exactly are written as PTX and assembled by
            // nvJitLink (exact numerics only: fast math and extra NVRTC options keep NVRTC).
            KernelOptions first = ko;
            if (ptx_assembler_available() && !compile_.fast_math && compile_.extra.empty() && o.ptx_first_tier)
                first.ptx_sm = compile_.cc_major * 10 + compile_.cc_minor;
            main_.emitted = build_kernels(plan_, first, Tier::ScalarOnly);
            bool any_ptx = false;
            for (const auto& k : main_.emitted.kernels)
                if (k.ptx) {
                    any_ptx = true;
                    tiers().count_ptx();
                }
            full_ = std::make_unique<Variant>();
            full_->emitted = std::move(full);
            info_.emit_ms = ms_since(t0);
            // PTX that the assembler rejects, or a CUBIN of it that the driver does not load, is
            // a bug of codegen/ptx.cpp, not the user's: the NVRTC kernels of the same tier take
            // over (an NVRTC error, or a lost context, still reaches the user).
            auto fall_back = [&] {
                KernelOptions nvrtc_only = first;
                nvrtc_only.ptx_sm = 0;
                main_.emitted = build_kernels(plan_, nvrtc_only, Tier::ScalarOnly);  // the NVRTC kernels
                info_ = {};
                info_.emit_ms = ms_since(t0);
                load(main_, &info_, ctl);
            };
            try {
                load(main_, &info_, ctl);
            } catch (const CompileError&) {
                if (!any_ptx) throw;
                fall_back();
            } catch (const CudaError& e) {
                if (!any_ptx || e.sticky()) throw;
                fall_back();
            }
        } else {
            main_.emitted = std::move(full);
            info_.emit_ms = ms_since(t0);
            load(main_, &info_, ctl);
            info_.load_ms += found_load_ms;
        }
        // Workspace: per ReduceAll kernel its partials and counter, then each temporary.
        std::size_t off = 0;
        auto align = [](std::size_t x) { return (x + 255) / 256 * 256; };
        for (auto& l : main_.kernels) {
            if (l.kernel->launch.kind != KernelKind::ReduceAll) continue;
            l.workspace_offset = off;
            off += align(l.kernel->launch.workspace_bytes());
        }
        counters_bytes_ = off;
        const ir::TempLayout temps = ir::layout_temps(program_, schedule_, 256);  // shared when lifetimes allow
        for (std::size_t t = 0; t < schedule_.temps.size(); ++t) temp_offset_[schedule_.temps[t]] = off + temps.offset[t];
        workspace_bytes_ = off + temps.bytes;
        if (full_) start_upgrade();
    }

    ~CudaPrepared() override {
        if (upgrade_.joinable()) upgrade_.join();
        for (auto& [stream, ws] : workspaces_) cuda::free(ws.base);
    }

    void run(const detail::RunArgs& args) override {
        check_args(args);
        const Variant* v = live_.load(std::memory_order_acquire);
        if (needs_strided(args)) v = &strided_variant();
        const Workspace& ws = workspace(args.stream);
        if (!args.control) {
            for (auto& l : v->kernels) launch_one(l, args, ws);
            return;
        }
        run_watched(*v, args, ws, *args.control);
    }

    std::string source() const override {
        std::string s;
        for (const auto& k : (full_ ? *full_ : main_).emitted.kernels) {
            s += fmt::format("// ---- stage {}: {} (compiled after dsl/semantics.h and the jitexpr prelude)\n",
                             k.stage, k.name);
            s += k.body;
        }
        return s;
    }

    detail::PrepareInfo info() const override { return info_; }

private:
    // Programs of at least this many elements (all kernels together) and more than one kernel
    // are watched: the host queues kernels until they hold about this much work, then waits for
    // them before queueing more, so that a stop request is honoured at the next kernel boundary.
    // Smaller programs are queued at once, as without a control.
    static constexpr std::uint64_t kWatchElements = std::uint64_t{1} << 26;

    std::uint64_t elements_of(const Loaded& l) const {
        return static_cast<std::uint64_t>(shape_size(schedule_.stages[static_cast<std::size_t>(l.kernel->stage)].shape));
    }

    // Launches with stop requests honoured between kernels. Kernels are queued until the work
    // queued since the last wait reaches kWatchElements (one large kernel does), then the host
    // waits for them on an event, yielding and ticking the control (a wait that spins, like the
    // driver's own synchronisation, so the next launch follows at once). On a stop it launches
    // nothing more, waits for what it queued (a kernel is never cut short) and throws
    // CancelledError: the call returns within about one kernel's time.
    void run_watched(const Variant& v, const detail::RunArgs& args, const Workspace& ws, detail::CallControl& ctl) const {
        std::uint64_t total = 0;
        for (const auto& l : v.kernels) total += elements_of(l);
        ctl.begin(Progress::Phase::Run, Progress::Unit::Elements, total);
        ctl.check();
        if (v.kernels.size() <= 1 || total < kWatchElements || !Event::supported()) {
            for (auto& l : v.kernels) launch_one(l, args, ws);
            return;
        }
        std::optional<Event> queued;
        std::uint64_t pending = 0;  // elements queued since the last wait
        // Waits for everything queued; true when a stop was asked meanwhile.
        auto drain = [&] {
            if (!queued) queued.emplace();
            queued->record(args.stream);
            bool stop = false;
            while (!queued->done()) {
                stop = ctl.tick() || stop;
                std::this_thread::yield();
            }
            ctl.add_done(pending);
            pending = 0;
            return stop || ctl.stop_requested();
        };
        for (std::size_t i = 0; i < v.kernels.size(); ++i) {
            if (ctl.tick()) {
                if (pending) drain();
                detail::CallControl::throw_cancelled();
            }
            const Loaded& l = v.kernels[i];
            launch_one(l, args, ws);
            pending += elements_of(l);
            if (i + 1 < v.kernels.size() && pending >= kWatchElements && drain()) detail::CallControl::throw_cancelled();
        }
        // The last kernels stay queued: the call returns as it does without a control.
    }

    // The background half of a tiered compile: loads full_ (compiling what is missing, which
    // also stores it in the module cache and on disk) and then switches run() to it.
    void start_upgrade() {
        thread_local WaitForUpgrades wait_before_this_thread_exits;
        (void)wait_before_this_thread_exits;
        tiers().begin();
        try {
            upgrade_ = std::thread([this] {
                bool ok = false;
                try {
                    load(*full_, nullptr);
                    for (std::size_t i = 0; i < full_->kernels.size() && i < main_.kernels.size(); ++i)
                        full_->kernels[i].workspace_offset = main_.kernels[i].workspace_offset;
                    live_.store(full_.get(), std::memory_order_release);
                    ok = true;
                } catch (...) {
                    // The program keeps its scalar-only kernels (a sticky error fails everything anyway).
                }
                tiers().end(ok);
            });
        } catch (...) {
            tiers().end(false);  // no thread to be had: the scalar-only kernels stay
        }
    }

    // Compiles (or finds) and loads every kernel of the variant; the kernels of a program of
    // several stages compile in parallel (NVRTC is thread-safe; the module cache is single-flight).
    // With a control (a call that can be stopped or watched): compile progress counts the
    // kernels that need compiling, and a stop request leaves the compiles not yet started
    // unstarted (those running finish and stay cached) and throws CancelledError.
    void load(Variant& v, detail::PrepareInfo* info, detail::CallControl* ctl = nullptr) {
        const std::size_t n = v.emitted.kernels.size();
        v.kernels.clear();
        v.kernels.resize(n);
        std::vector<ModuleCache::Lookup> lookups(n);
        if (ctl) {
            ctl->check();
            std::uint64_t misses = 0;
            if (ctl->wants_ticks())
                for (const auto& k : v.emitted.kernels) misses += cache_->find(k, compile_) ? 0 : 1;
            ctl->begin(Progress::Phase::Compile, Progress::Unit::Kernels, misses);
        }
        parallel_for_watched(n, ctl, [&](std::size_t i) {
            const KernelSource& k = v.emitted.kernels[i];
            Loaded& l = v.kernels[i];
            l.kernel = &k;
            l.module = cache_->get(k, compile_, &lookups[i]);
            if (ctl && !lookups[i].hit) ctl->add_done(1);
            for (std::size_t e = 0; e < k.entries.size() && e < l.fn.size(); ++e) l.fn[e] = l.module->function(k.entries[e]);
            l.layout = initial_layout(k);
        });
        bool all_hit = true;
        for (const auto& lk : lookups) {
            all_hit = all_hit && lk.hit;
            if (info) {
                info->compile_ms += lk.compile_ms;
                info->load_ms += lk.load_ms;
            }
        }
        if (info) info->module_cache_hit = all_hit;
    }

    // Shape of the iteration space, then one stride row per array read (writes filled per run).
    std::vector<std::int64_t> initial_layout(const KernelSource& k) const {
        const int D = k.launch.ndim;
        const int R = k.launch.layout_rows;
        const bool has_layout = std::any_of(k.params.begin(), k.params.end(),
                                            [](const Param& p) { return p.kind == Param::Kind::Layout; });
        if (!has_layout) return {};
        const ir::Stage& st = schedule_.stages[static_cast<std::size_t>(k.stage)];
        std::vector<std::int64_t> lay(static_cast<std::size_t>(D) * (1 + std::max(R, 1)), 0);
        for (int d = 0; d < D; ++d) lay[static_cast<std::size_t>(d)] = st.shape[static_cast<std::size_t>(d)];
        for (const Param& p : k.params) {
            if (p.kind != Param::Kind::Array || p.written || p.layout_row < 0) continue;
            Shape shape;
            Strides strides;
            if (p.array.kind == codegen::ArrayRef::Kind::Input) {
                const ir::InputDecl& in = program_.inputs[static_cast<std::size_t>(p.array.index)];
                shape = in.shape;
                strides = in.strides.size() == in.shape.size() ? in.strides : contiguous_strides(in.shape);
            } else {
                shape = program_.node(p.array.index).shape;
                strides = contiguous_strides(shape);
            }
            Strides b = ir::broadcast_strides(shape, strides, st.shape);
            for (int d = 0; d < D; ++d)
                lay[static_cast<std::size_t>(D + p.layout_row * D + d)] = b[static_cast<std::size_t>(d)];
        }
        return lay;
    }

    void check_args(const detail::RunArgs& args) const {
        if (args.inputs.size() != program_.inputs.size() || args.scalars.size() != program_.scalars.size() ||
            args.outputs.size() != program_.outputs.size())
            throw ArgumentError(fmt::format("cuda backend: expected {} inputs, {} scalars and {} outputs, got {}, {} and {}",
                                            program_.inputs.size(), program_.scalars.size(), program_.outputs.size(),
                                            args.inputs.size(), args.scalars.size(), args.outputs.size()));
        for (std::size_t i = 0; i < args.inputs.size(); ++i) {
            const Array& a = args.inputs[i];
            const ir::InputDecl& d = program_.inputs[i];
            if (a.backend() != Backend::Cuda)
                throw ArgumentError(fmt::format("cuda backend: input {} is on {}, not cuda", i, backend_name(a.backend())));
            Strides ds = d.strides.size() == d.shape.size() ? d.strides : contiguous_strides(d.shape);
            if (a.dtype() != d.dtype || a.shape() != d.shape || !same_layout(d.shape, a.strides(), ds))
                throw ArgumentError(fmt::format("cuda backend: input {} is {}, the program was prepared for {} {}", i,
                                                a.describe(), dtype_name(d.dtype), shape_to_string(d.shape)));
        }
        for (std::size_t o = 0; o < args.outputs.size(); ++o) {
            const Array& a = args.outputs[o];
            const ir::Node& n = program_.node(program_.outputs[o].node);
            if (a.backend() != Backend::Cuda || a.dtype() != n.dtype || a.shape() != n.shape)
                throw ArgumentError(fmt::format("cuda backend: output {} is {}, expected {} {} on cuda", o, a.describe(),
                                                dtype_name(n.dtype), shape_to_string(n.shape)));
        }
    }

    // Flat kernels were chosen only where the outputs they write are C-contiguous (an aliased
    // input's declared layout included), and Strided kernels may assume an output contiguous
    // along the last axis; any other layout at run time takes the strided variant.
    bool needs_strided(const detail::RunArgs& args) const {
        for (const auto& l : main_.kernels) {
            const KernelSource& k = *l.kernel;
            const bool flat = k.launch.kind == KernelKind::Flat;
            if (!flat && k.launch.kind != KernelKind::Strided) continue;
            for (const Param& p : k.params) {
                if (p.kind != Param::Kind::Array || !p.written) continue;
                if (!flat && !p.unit_inner) continue;
                std::int32_t o = schedule_.output_of[static_cast<std::size_t>(p.array.index)];
                if (o < 0) continue;
                const Array& a = args.outputs[static_cast<std::size_t>(o)];
                if (flat) {
                    if (!c_contiguous(a.shape(), a.strides())) return true;
                } else if (!a.shape().empty() && a.shape().back() != 1 && a.strides().back() != 1) {
                    return true;
                }
            }
        }
        return false;
    }

    Variant& strided_variant() {
        std::lock_guard<std::mutex> lock(variant_mutex_);
        if (!strided_) {
            auto v = std::make_unique<Variant>();
            KernelOptions ko;
            ko.block = block_;
            v->emitted = build_kernels(plan_, ko, Tier::Strided);
            load(*v, nullptr);
            for (std::size_t i = 0; i < v->kernels.size(); ++i) v->kernels[i].workspace_offset = main_.kernels[i].workspace_offset;
            strided_ = std::move(v);
        }
        return *strided_;
    }

    const Workspace& workspace(void* stream) {
        static const Workspace none;
        if (workspace_bytes_ == 0) return none;  // most programs: no lock on the launch path
        std::lock_guard<std::mutex> lock(ws_mutex_);
        auto it = workspaces_.find(stream);
        if (it != workspaces_.end()) return it->second;
        Workspace ws;
        if (workspace_bytes_ > 0) {
            ws.base = cuda::alloc(workspace_bytes_);
            ws.bytes = workspace_bytes_;
            // Counters of the full reductions start at zero; the last block resets its own.
            if (counters_bytes_ > 0) cuda::memset(ws.base, 0, counters_bytes_, stream);
        }
        return workspaces_.emplace(stream, ws).first->second;
    }

    void* array_pointer(const Param& p, const detail::RunArgs& args, const Workspace& ws) const {
        if (p.array.kind == codegen::ArrayRef::Kind::Input) return args.inputs[static_cast<std::size_t>(p.array.index)].data();
        std::int32_t o = schedule_.output_of[static_cast<std::size_t>(p.array.index)];
        if (o >= 0) return args.outputs[static_cast<std::size_t>(o)].data();
        auto t = temp_offset_.find(p.array.index);
        if (t == temp_offset_.end())
            throw InternalError(fmt::format("cuda backend: node {} is stored but is neither an output nor a temporary",
                                            p.array.index));
        return static_cast<char*>(ws.base) + t->second;
    }

    // Strides (elements) of the array a kernel writes, over the kernel's iteration space.
    void write_row(const KernelSource& k, const Param& p, const detail::RunArgs& args, std::int64_t* row) const {
        const int D = k.launch.ndim;
        std::int32_t o = schedule_.output_of[static_cast<std::size_t>(p.array.index)];
        const ir::Node& n = program_.node(p.array.index);
        Strides st = o >= 0 ? args.outputs[static_cast<std::size_t>(o)].strides() : contiguous_strides(n.shape);
        if (st.size() != n.shape.size()) st = contiguous_strides(n.shape);
        if (k.launch.kind == KernelKind::ReduceAxis) {
            for (int d = 0, s = 0; d < D; ++d) row[d] = d == k.launch.axis ? 0 : st[static_cast<std::size_t>(s++)];
        } else {
            for (int d = 0; d < D; ++d) row[d] = st[static_cast<std::size_t>(d)];
        }
    }

    void launch_one(const Loaded& l, const detail::RunArgs& args, const Workspace& ws) const {
        const KernelSource& k = *l.kernel;
        const ir::Stage& st = schedule_.stages[static_cast<std::size_t>(k.stage)];
        const std::int64_t n = shape_size(st.shape);
        const unsigned block = static_cast<unsigned>(k.launch.block);
        const std::int64_t cap = static_cast<std::int64_t>(sm_count_) * (2048 / block) * 64;

        thread_local ArgScratch scratch;
        const std::size_t np = k.params.size();
        if (scratch.argv.size() < np) scratch.argv.resize(np);
        if (scratch.values.size() < np) scratch.values.resize(np);
        if (!l.layout.empty()) scratch.layout.assign(l.layout.begin(), l.layout.end());

        bool aligned = k.launch.vec > 1;
        unsigned char* flag_slot = nullptr;  // the VectorFlag argument, set once the layout is known
        for (std::size_t i = 0; i < np; ++i) {
            const Param& p = k.params[i];
            unsigned char* slot = scratch.values[i].data();
            switch (p.kind) {
                case Param::Kind::Array: {
                    void* ptr = array_pointer(p, args, ws);
                    if (p.vectorized) {
                        auto need = static_cast<std::uintptr_t>(k.launch.vec) * itemsize(p.dtype);
                        if (reinterpret_cast<std::uintptr_t>(ptr) % need != 0) aligned = false;
                    }
                    if (p.written && p.layout_row >= 0)
                        write_row(k, p, args, scratch.layout.data() + k.launch.ndim * (1 + p.layout_row));
                    if (p.written && args.started_outputs && p.array.kind == codegen::ArrayRef::Kind::Node) {
                        const std::int32_t o = schedule_.output_of[static_cast<std::size_t>(p.array.index)];
                        if (o >= 0) args.started_outputs[o] = true;
                    }
                    std::memcpy(slot, &ptr, sizeof ptr);
                    break;
                }
                case Param::Kind::Scalar:
                    pack_scalar(args.scalars[static_cast<std::size_t>(p.scalar)], p.dtype, slot);
                    break;
                case Param::Kind::Count: {
                    long long c = n;
                    std::memcpy(slot, &c, sizeof c);
                    break;
                }
                case Param::Kind::Workspace: {
                    void* ptr = static_cast<char*>(ws.base) + l.workspace_offset;
                    std::memcpy(slot, &ptr, sizeof ptr);
                    break;
                }
                case Param::Kind::Layout: break;
                case Param::Kind::VectorFlag: flag_slot = slot; break;
            }
            scratch.argv[i] = p.kind == Param::Kind::Layout ? static_cast<void*>(scratch.layout.data())
                                                            : static_cast<void*>(slot);
        }

        LaunchConfig cfg;
        cfg.stream = args.stream;
        cfg.block[0] = block;
        void* fn = l.fn[0];
        switch (k.launch.kind) {
            case KernelKind::Flat: {
                if (n == 0) return;
                const std::int64_t vec = aligned ? k.launch.vec : 1;
                // A thread per vector and one per element of the scalar tail, as the hand-written
                // reference kernel: the 64-bit form's loop only covers grids past the 2^31 - 1
                // block limit, and the 32-bit form (up to 2^30 elements) has none.
                const std::int64_t threads = aligned ? n / vec + n % vec : n;
                const std::int64_t grid = std::clamp<std::int64_t>(div_up(threads, block), 1, 0x7fffffff);
                set_flag(flag_slot, aligned);
                cfg.grid[0] = static_cast<unsigned>(grid);
                break;
            }
            case KernelKind::Strided: {
                if (n == 0) return;
                const int D = k.launch.ndim;
                const std::int64_t inner = st.shape.back();
                const std::int64_t rows = n / inner;
                const std::int64_t vec = k.launch.vec;
                bool vector = vec > 1 && aligned && inner % vec == 0;
                for (std::size_t i = 0; vector && i < np; ++i) {
                    const Param& p = k.params[i];
                    if (!p.vectorized || p.layout_row < 0) continue;
                    const std::int64_t* row = scratch.layout.data() + D * (1 + p.layout_row);
                    for (int d = 0; d + 1 < D; ++d) vector = vector && row[d] % vec == 0;
                }
                const std::int64_t units = vector ? inner / vec : inner;
                const unsigned bx = static_cast<unsigned>(std::min<std::int64_t>(block, div_up(units, 32) * 32));
                const unsigned by = block / bx;
                // Several units per thread and row, so that a row's offsets are paid for once.
                const std::int64_t gx = std::clamp<std::int64_t>(div_up(units, std::int64_t{bx} * (vector ? 2 : 4)), 1,
                                                                 std::min<std::int64_t>(cap, 0x7fffffff));
                const std::int64_t gy = std::clamp<std::int64_t>(div_up(rows, by), 1, std::max<std::int64_t>(1, std::min<std::int64_t>(65535, cap / gx)));
                cfg.block[0] = bx;
                cfg.block[1] = by;
                cfg.grid[0] = static_cast<unsigned>(gx);
                cfg.grid[1] = static_cast<unsigned>(gy);
                const bool idx32 = fits_int32(k, scratch.layout.data(), n + gx * bx + gy * by);
                fn = l.fn[idx32 ? codegen::kIndex32 : codegen::kIndex64];
                set_flag(flag_slot, vector);
                break;
            }
            case KernelKind::Tiled: {
                if (n == 0) return;
                const int D = k.launch.ndim;
                const std::int64_t nr = st.shape[static_cast<std::size_t>(D - 2)], nc = st.shape.back();
                const std::int64_t edge = k.launch.tile;
                const std::int64_t tiles = n / (nr * nc) * div_up(nr, edge) * div_up(nc, edge);
                const std::int64_t grid = std::clamp<std::int64_t>(tiles, 1, std::min<std::int64_t>(cap, 0x7fffffff));
                cfg.grid[0] = static_cast<unsigned>(grid);
                const bool idx32 = fits_int32(k, scratch.layout.data(), n + 2 * edge * (nr + nc) + tiles + grid);
                fn = l.fn[idx32 ? codegen::kIndex32 : codegen::kIndex64];
                // Vector tiles: aligned pointers, both tile axes a multiple of the width, each
                // vectorized array of stride 1 along its contiguous axis (the tile's rows for
                // inputs, its columns for outputs) and every other stride a multiple of the width.
                const std::int64_t vec = k.launch.vec;
                bool vector = vec > 1 && aligned && nr % vec == 0 && nc % vec == 0;
                for (std::size_t i = 0; vector && i < np; ++i) {
                    const Param& p = k.params[i];
                    if (!p.vectorized || p.layout_row < 0) continue;
                    const std::int64_t* row = scratch.layout.data() + D * (1 + p.layout_row);
                    const int unit = p.written ? D - 1 : D - 2;
                    for (int d = 0; d < D; ++d)
                        vector = vector && (d == unit ? row[d] == 1 : row[d] % vec == 0);
                }
                set_flag(flag_slot, vector);
                break;
            }
            case KernelKind::ReduceAll: {
                const std::int64_t limit = std::min<std::int64_t>(k.launch.max_blocks, static_cast<std::int64_t>(sm_count_) * (2048 / block));
                cfg.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(div_up(n, block), 1, limit));
                break;
            }
            case KernelKind::ReduceAxis: {
                const std::int64_t len = st.shape[static_cast<std::size_t>(k.launch.axis)];
                const std::int64_t outputs = len == 0 ? shape_size(program_.node(st.reduce).shape) : n / len;
                if (outputs == 0) return;
                const std::int64_t threads = k.launch.warp_per_output ? outputs * 32 : outputs;
                cfg.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(div_up(threads, block), 1, std::min<std::int64_t>(cap, 0x7fffffff)));
                break;
            }
        }
        launch(fn, cfg, scratch.argv.data());
    }

    static void set_flag(unsigned char* slot, bool on) {
        if (!slot) return;
        const int v = on ? 1 : 0;
        std::memcpy(slot, &v, sizeof v);
    }

    // Whether every offset a Strided or Tiled kernel forms (and `counts`, the largest loop bound
    // plus step) fits a 32-bit signed index.
    static bool fits_int32(const KernelSource& k, const std::int64_t* layout, std::int64_t counts) {
        constexpr std::int64_t limit = std::int64_t{1} << 31;
        if (counts >= limit) return false;
        const int D = k.launch.ndim;
        for (int r = 0; r < k.launch.layout_rows; ++r) {
            std::int64_t reach = 0;
            for (int d = 0; d < D; ++d) {
                const std::int64_t extent = layout[d];
                const std::int64_t stride = layout[D * (1 + r) + d];
                if (extent <= 1) continue;
                const std::int64_t step = stride < 0 ? -stride : stride;
                if (step >= limit || (extent - 1) > (limit - 1) / std::max<std::int64_t>(step, 1)) return false;
                reach += (extent - 1) * step;
                if (reach >= limit) return false;
            }
        }
        return true;
    }

    const ir::Plan plan_;
    const ir::Program& program_;    // plan_'s
    const ir::Schedule& schedule_;  // plan_'s
    detail::PrepareOptions options_;
    std::shared_ptr<ModuleCache> cache_;
    int block_;
    int sm_count_ = 1;
    CompileOptions compile_;
    detail::PrepareInfo info_;
    Variant main_;                        // the kernels run first (tier 1 when tiered)
    std::unique_ptr<Variant> full_;       // tiered: the kernels with vector paths, loaded in the background
    std::atomic<const Variant*> live_{&main_};  // what run() launches for C-contiguous outputs
    std::thread upgrade_;
    std::mutex variant_mutex_;
    std::unique_ptr<Variant> strided_;
    std::map<std::int32_t, std::size_t> temp_offset_;
    std::size_t counters_bytes_ = 0, workspace_bytes_ = 0;
    std::mutex ws_mutex_;
    std::map<void*, Workspace> workspaces_;
};

class CudaBackend final : public detail::BackendImpl {
public:
    explicit CudaBackend(ExecutorOptions o) : options_(std::move(o)) {
        if (!options_.cache) options_.cache = default_module_cache();
    }
    Backend kind() const override { return Backend::Cuda; }
    dsl::Limits limits() const override { return cuda::limits(); }
    std::shared_ptr<detail::Prepared> prepare(const ir::Plan& plan, const detail::PrepareOptions& options) override {
        std::string why;
        if (!available(&why)) throw NoDeviceError("cuda backend: " + why);
        return std::make_shared<CudaPrepared>(plan, options, options_.cache, options_.block);
    }

private:
    ExecutorOptions options_;
};

}  // namespace

TierStats tier_stats() { return tiers().stats(); }
void wait_for_upgrades() { tiers().wait(); }

std::unique_ptr<jit::detail::BackendImpl> make_cuda_backend(ExecutorOptions options) {
    return std::make_unique<CudaBackend>(std::move(options));
}

}  // namespace jit::cuda

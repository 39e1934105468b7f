// jitexpr — what a runtime runs on (see machine.hpp).
#include "run/machine.hpp"

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/build.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "backend/cuda/module_cache.hpp"
#include "backend/cuda/stream.hpp"
#include "core/device.hpp"
#include "dsl/plan.hpp"
#include "run/precompile.hpp"
#include "run/ways.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace jit::run {

namespace {

using Clock = std::chrono::steady_clock;

// The CPU backend's throughput on a*2+b over 2^23 float32 values, bytes read and written, best
// of 3 after a first run: `into_c` writes into a bound c (c = a*2+b), else each run makes its
// result (a*2+b), as an eval does.
double cpu_throughput(detail::BackendImpl& cpu, bool into_c) {
    const std::int64_t n = std::int64_t{1} << 23;
    Environment env{{"a", Array::zeros(DType::Float32, {n}, Backend::Cpu)},
                    {"b", Array::zeros(DType::Float32, {n}, Backend::Cpu)}};
    if (into_c) env.insert_or_assign("c", Arg(Array::empty(DType::Float32, {n}, Backend::Cpu)));
    const std::string_view text = into_c ? "c = a*2+b" : "a*2+b";
    std::map<std::string, dsl::Binding, std::less<>> bindings;
    for (const auto& [name, v] : env) {
        dsl::Binding b;
        b.kind = dsl::Binding::Kind::Array;
        b.dtype = v.array().dtype();
        b.shape = v.array().shape();
        b.strides = v.array().strides();
        bindings.emplace(name, std::move(b));
    }
    const std::shared_ptr<const Entry> e = prepare(dsl::plan(text, dsl::bindings_of(bindings), cpu.limits()), cpu, {});
    Call call;
    call.write_back = false;
    (void)direct(*e, env, call);
    double best = 0;
    for (int r = 0; r < 3; ++r) {
        const auto t0 = Clock::now();
        (void)direct(*e, env, call);
        const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
        if (sec > 0) best = std::max(best, 12.0 * static_cast<double>(n) / sec / 1e9);
    }
    return best;
}

// A fresh process's first plan and first kernel source cost about 0.5 ms of work done once: the
// parser's and the lowering's tables, the sections of dsl/semantics.h, the first touches of
// their code and data; its first module cache key looks for NVRTC's library (0.4 ms or more). Starting the CUDA driver and a context takes 100 ms or more. The one is
// done on another thread during the other, so that a first eval on a warm disk cache does not
// pay it (issue 33, item 4). The thread is joined when the start ends: none outlives it.
class FrontWarmUp {
public:
    FrontWarmUp() {
        try {
            thread_ = std::thread([] { warm(); });
        } catch (...) {
            // No thread: the first eval pays for it, as before.
        }
    }
    ~FrontWarmUp() {
        if (thread_.joinable()) thread_.join();
    }
    FrontWarmUp(const FrontWarmUp&) = delete;
    FrontWarmUp& operator=(const FrontWarmUp&) = delete;

private:
    static void warm() noexcept {
        try {
            dsl::Binding a;
            a.kind = dsl::Binding::Kind::Array;
            a.dtype = DType::Float32;
            a.shape = {1024};
            a.strides = {1};
            const std::map<std::string, dsl::Binding> env{{"a", a}, {"b", a}};
            const ir::Plan plan = dsl::plan("r = a*2 + b", dsl::bindings_of(env), cuda::limits());
            (void)cuda::build_kernels(plan, {}, cuda::Tier::Full);
            // Part of every module cache key: NVRTC's version, read once from where its library
            // lies (a search of the file system, 0.4-3 ms here), not from NVRTC itself.
            (void)cuda::nvrtc_version();
        } catch (...) {
            // Only a warm-up: whatever failed here fails again, with its error, where it counts.
        }
    }
    std::thread thread_;
};

}  // namespace

Machine::Machine(const MachineOptions& options) : options_(options), host_limits_(cuda::limits()) {
    // Auto on device 0 waits for a call that needs the GPU; everything else starts now, so that
    // a device that is not there is an error when the runtime is made.
    if (options_.backend != Backend::Auto || options_.device != 0) (void)start();
}

Machine::~Machine() = default;

Backend Machine::start() {
    if (!started()) std::call_once(start_once_, [this] { start_backend(); });
    return backend_;
}

void Machine::start_backend() {
    std::optional<FrontWarmUp> warm;
    if (options_.backend != Backend::Cpu) warm.emplace();
    std::string why;
    switch (options_.backend) {
        case Backend::Cpu:
            backend_ = Backend::Cpu;
            fallback_.clear();
            break;
        case Backend::Cuda:
            if (!cuda::available(&why)) throw NoDeviceError(why);
            backend_ = Backend::Cuda;
            break;
        case Backend::Auto:
            backend_ = cuda::available(&why) ? Backend::Cuda : Backend::Cpu;
            fallback_ = why;
            // Device N was asked for: the CPU is not a silent stand-in for a GPU that is not there.
            if (backend_ == Backend::Cpu && options_.device != 0)
                throw NoDeviceError(
                    fmt::format("CUDA device {} was asked for but CUDA is not available: {}", options_.device, why));
            break;
    }
    if (backend_ == Backend::Cuda) {
        const int n = cuda::device_count();
        if (options_.device >= n)
            throw ArgumentError(
                fmt::format("no CUDA device {}: this machine has {} (ordinals 0 to {})", options_.device, n, n - 1));
        device_ = options_.device;
        // NVRTC is not started here: a process whose kernels all come from the disk cache never
        // loads it (the executor starts its warm-up at the first miss of a tiered compile).
        cuda::ExecutorOptions eo;
        eo.device = device_;
        eo.cache = std::make_shared<cuda::ModuleCache>(options_.memory_cache_entries);
        if (options_.disk_cache) {
            cache::DiskCacheOptions dco;
            dco.dir = options_.cache_dir;
            auto disk = std::make_shared<cache::DiskCache>(dco);
            if (disk->enabled()) {
                disk_ = disk;
                eo.cache->set_image_store(disk_image_store(disk, /*strict=*/false));
            }
        }
        modules_ = eo.cache;
        cuda_ = cuda::make_cuda_backend(eo);
        main_ = cuda_.get();
    } else {
        main_ = &cpu();  // the one that host data kept on the CPU may have made already
    }
    limits_ = main_->limits();
    started_.store(true, std::memory_order_release);
}

detail::BackendImpl& Machine::main() {
    (void)start();
    return *main_;
}

const dsl::Limits& Machine::limits() {
    (void)start();
    return limits_;
}

detail::BackendImpl& Machine::cpu() {
    if (detail::BackendImpl* c = cpu_ready_.load(std::memory_order_acquire)) return *c;
    std::lock_guard<std::mutex> lock(cpu_mutex_);
    if (!cpu_) {
        cpu_ = detail::make_cpu_backend(options_.cpu_threads);
        cpu_limits_ = cpu_->limits();
        cpu_ready_.store(cpu_.get(), std::memory_order_release);
    }
    return *cpu_;
}

const dsl::Limits& Machine::cpu_limits() {
    (void)cpu();
    return cpu_limits_;
}

std::string Machine::setup_note() const {
    std::string note = started() && main_ != cpu_ready_.load(std::memory_order_acquire) ? main_->setup_note() : "";
    if (const detail::BackendImpl* c = cpu_ready_.load(std::memory_order_acquire)) {
        std::string n = c->setup_note();
        if (!n.empty()) note += (note.empty() ? "" : "; ") + n;
    }
    return note;
}

CompileCounts Machine::compile_counts() const {
    CompileCounts c;
    if (modules_) {
        const auto ms = modules_->stats();
        c.compiles = ms.compiles;
        c.compile_ms = ms.compile_ms;
        c.disk_hits = ms.disk_hits;
    }
    return c;
}

std::size_t Machine::device_budget() {
    std::size_t free = 0, total = 0;
    cuda::device_memory(&free, &total);
    const std::size_t usable = free - free / 10;
    if (options_.device_memory_limit) return std::min(options_.device_memory_limit, usable);
    return free / 10 * 8;
}

bool Machine::can_stream() { return cuda::streaming_supported(); }

namespace {

// A host model's two figures as the disk cache keeps them, and back.
std::string model_text(const HostModel& m) { return fmt::format("{} {}\n", m.link_gbs, m.cpu_gbs); }

std::optional<HostModel> model_of(const std::string& text, std::string source) {
    double link = 0, cpu_gbs = 0;
    std::istringstream in(text);
    if (in >> link >> cpu_gbs && link > 0 && cpu_gbs > 0) return HostModel{link, cpu_gbs, std::move(source)};
    return std::nullopt;
}

// The key of the known host model: the CPU's alone (threads, kernels), no device fact, since it
// is read before the driver starts. Written by host_model() whenever it has figures, so it
// follows the machine's last device and driver.
std::string known_model_key(int cpu_threads) {
    return cache::digest(fmt::format("jitexpr host model, last known v1|{}|{}|{}", std::thread::hardware_concurrency(),
                                     cpu_threads, cpu::kernels_name()));
}

}  // namespace

void remember_host_model(cache::DiskCache& store, int cpu_threads, const HostModel& m) {
    try {
        store.put(known_model_key(cpu_threads), model_text(m));
    } catch (const Error&) {}  // not kept: the next process starts the driver to know
}

cache::DiskCache* Machine::host_store() {
    std::call_once(host_store_once_, [&] {
        if (!options_.disk_cache) return;
        try {
            cache::DiskCacheOptions dco;
            dco.dir = options_.cache_dir;
            auto d = std::make_shared<cache::DiskCache>(dco);
            if (d->enabled()) host_store_ = std::move(d);
        } catch (const Error&) {}  // no store: the model is measured, as without a disk cache
    });
    return host_store_.get();
}

const HostModel* Machine::known_host_model() {
    std::call_once(known_once_, [&] {
        cache::DiskCache* store = host_store();
        if (!store) return;
        try {
            if (auto v = store->get(known_model_key(options_.cpu_threads)))
                known_ = model_of(*v, "the disk cache's last figures, CUDA not started");
        } catch (const Error&) {}
    });
    return known_ ? &*known_ : nullptr;
}

const HostModel& Machine::host_model() {
    std::call_once(model_once_, [&] {
        const cuda::DeviceInfo& dev = cuda::device_info();
        const std::string key = cache::digest(fmt::format("jitexpr host model v1|{}|{}|{}|{}|{}", dev.name,
                                                          dev.total_memory, std::thread::hardware_concurrency(),
                                                          options_.cpu_threads, cuda::driver_version()));
        std::optional<HostModel> cached;
        if (disk_)
            if (auto v = disk_->get(key)) cached = model_of(*v, "the disk cache");
        if (cached) {
            model_ = std::move(*cached);
        } else {
            const cuda::LinkMeasure m = cuda::measure_link(std::size_t{64} << 20, 3);
            // Pageable memory (NumPy's) is the common case: the link as the pipeline sees it.
            model_.link_gbs = std::min(m.pinned_to_device_gbs, m.staging_gbs);
            // The CPU backend on a*2+b, float32, 2^23 elements (96 MiB read and written), best of 3.
            const double best = cpu_throughput(cpu(), /*into_c=*/false);
            model_.cpu_gbs = best > 0 ? best : 1;
            model_.source = "measured";
            if (disk_) disk_->put(key, model_text(model_));
        }
        // The figures later processes read before starting the driver, when they differ.
        const HostModel* known = known_host_model();
        if (cache::DiskCache* store = host_store(); store && (!known || model_text(*known) != model_text(model_)))
            remember_host_model(*store, options_.cpu_threads, model_);
    });
    return model_;
}

double Machine::bandwidth(Backend which, std::string* source) {
    if (which == Backend::Cuda) {
        std::call_once(device_bandwidth_.once, [&] {
            // A device-to-device copy: what a memory-bound kernel's bytes can move at.
            const std::int64_t n = std::int64_t{16} << 20;  // 64 MiB of float32
            Array a = Array::zeros(DType::Float32, {n}, Backend::Cuda, device_);
            Array b = Array::empty(DType::Float32, {n}, Backend::Cuda, device_);
            core::copy(b, a);
            cuda::synchronize(nullptr);
            double best = 0;
            for (int r = 0; r < 3; ++r) {
                const auto t0 = Clock::now();
                core::copy(b, a);
                cuda::synchronize(nullptr);
                const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
                if (sec > 0) best = std::max(best, 2.0 * static_cast<double>(a.nbytes()) / sec / 1e9);
            }
            device_bandwidth_.gbs = best > 0 ? best : 1;
            device_bandwidth_.source =
                "the device's copy bandwidth: a 64 MiB device-to-device copy measured now, best of 3, "
                "bytes read and written";
        });
        *source = device_bandwidth_.source;
        return device_bandwidth_.gbs;
    }
    std::call_once(cpu_bandwidth_.once, [&] {
        // The CPU backend's own throughput on a memory-bound program, once per machine.
        const std::string key =
            cache::digest(fmt::format("jitexpr cpu bandwidth v1|{}|{}|{}", std::thread::hardware_concurrency(),
                                      options_.cpu_threads, cpu::kernels_name()));
        std::shared_ptr<cache::DiskCache> store = disk_;
        if (!store && options_.disk_cache) {
            cache::DiskCacheOptions dco;
            dco.dir = options_.cache_dir;
            auto d = std::make_shared<cache::DiskCache>(dco);
            if (d->enabled()) store = d;
        }
        if (store) {
            try {
                if (auto v = store->get(key)) {
                    double g = 0;
                    std::istringstream in(*v);
                    if (in >> g && g > 0) {
                        cpu_bandwidth_.gbs = g;
                        cpu_bandwidth_.source =
                            "the CPU backend's throughput on a*2+b over 2^23 float32 values (bytes read "
                            "and written), measured once on this machine and kept in the disk cache";
                        return;
                    }
                }
            } catch (const Error&) {}
        }
        const double best = cpu_throughput(cpu(), /*into_c=*/true);
        cpu_bandwidth_.gbs = best > 0 ? best : 1;
        cpu_bandwidth_.source = fmt::format(
            "the CPU backend's throughput on a*2+b over 2^23 float32 values (bytes read and "
            "written), measured now{}",
            store ? " and kept in the disk cache" : " (no disk cache: once per process)");
        if (store) {
            try {
                store->put(key, fmt::format("{}\n", cpu_bandwidth_.gbs));
            } catch (const Error&) {}
        }
    });
    *source = cpu_bandwidth_.source;
    return cpu_bandwidth_.gbs;
}

std::string Machine::device_text() const {
    const cuda::DeviceInfo& d = cuda::device_info();
    return fmt::format("{}, sm_{}{}", d.name, d.cc_major, d.cc_minor);
}

void Machine::synchronize(void* stream) const {
    if (started_backend() == Backend::Cuda) cuda::synchronize(stream);
}

void Machine::wait_for_compiles() const {
    // Process-wide (a counter, no driver call): other runtimes' compiles are waited for too.
    if (started_backend() != Backend::Cpu) cuda::wait_for_upgrades();
}

dsl::Limits Machine::cuda_limits() { return cuda::limits(); }

std::vector<detail::KernelReport> Machine::cuda_kernels(const ir::Plan& plan) {
    // Built as prepare() builds them.
    cuda::KernelOptions ko;
    return cuda::describe_kernels(plan, cuda::build_kernels(plan, ko, cuda::Tier::Full));
}

}  // namespace jit::run

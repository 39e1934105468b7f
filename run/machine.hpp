// jitexpr — what a runtime runs on: its backend (CUDA on a device, or the CPU; under
// Backend::Auto started only when a call needs the GPU), the CPU backend that host data kept on
// the CPU runs on (a second backend object, made when first needed), the compiled modules
// (memory, then the disk cache), and the measurements decide() and explain read (the host
// model, the device's free memory, bandwidths).
#pragma once

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "run/decide.hpp"

#include <jit/array.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace jit::cuda {
class ModuleCache;
}  // namespace jit::cuda

namespace jit::run {

struct MachineOptions {
    Backend backend = Backend::Cpu;  // as asked (Auto: CUDA when available, else the CPU)
    int device = 0;                  // the CUDA device ordinal
    int cpu_threads = 0;
    bool disk_cache = true;
    std::string cache_dir;
    std::size_t memory_cache_entries = 4096;  // the module cache's
    std::size_t device_memory_limit = 0;      // 0: 80% of the free memory
};

struct CompileCounts {
    std::uint64_t compiles = 0, disk_hits = 0;
    double compile_ms = 0;
};

class Machine final : public Probe {
public:
    // Chooses the backend. Backend::Cpu makes the CPU backend; Backend::Cuda starts the CUDA
    // driver now (NoDeviceError where it is not there, ArgumentError for a device the machine
    // does not have); so does Backend::Auto with a device N > 0 (NoDeviceError without CUDA: the
    // CPU is not a silent stand-in for a GPU that was named). Backend::Auto on device 0 starts
    // nothing: start() does, when a call needs to know (run::decide, for host data the GPU may
    // be worth; a call over device arrays; backend()), so that a process whose work all stays
    // on the CPU never loads the driver.
    explicit Machine(const MachineOptions& options);
    ~Machine() override;
    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    // Starts the backend if it is not yet (Backend::Auto): CUDA when available (the driver
    // initialised, the device's primary context made), else the CPU, with fallback() saying why.
    // Once per machine; after it, an atomic load.
    Backend start() override;
    bool started() const { return started_.load(std::memory_order_acquire); }
    // The backend, started if it was not.
    Backend backend() { return start(); }
    // The backend if started, else Backend::Auto (nothing asked of the driver).
    Backend started_backend() const { return started() ? backend_ : Backend::Auto; }
    int device() const { return device_; }
    // Backend::Auto on a machine without CUDA, once started: why.
    const std::string& fallback() const { return fallback_; }
    // The started backend (start() first).
    detail::BackendImpl& main();
    // The limits of the started backend's plans.
    const dsl::Limits& limits();
    // The limits of the plans run::decide reads for host data: those of a CUDA runtime's, also
    // before Backend::Auto has started one (they depend on no device).
    const dsl::Limits& host_limits() const { return host_limits_; }
    // The CPU backend for host data kept on the CPU (the main one on a CPU runtime), made when
    // first asked.
    detail::BackendImpl& cpu();
    const dsl::Limits& cpu_limits();
    // What could not be set up as asked (the CPU backend's threads), of the backends made so far.
    std::string setup_note() const;
    CompileCounts compile_counts() const;

    // Probe (decide.hpp).
    const HostModel& host_model() override;
    // The figures host_model() last had on this machine (any device), read from the disk cache
    // without starting anything; host_model() keeps them there.
    const HostModel* known_host_model() override;
    std::size_t device_budget() override;
    bool can_stream() override;

    // What a memory-bound kernel's bytes move at, for explain: on CUDA a device-to-device copy
    // measured now; on the CPU the CPU backend's throughput on a*2+b (kept in the disk cache).
    // `source` says which.
    double bandwidth(Backend which, std::string* source);
    // "H200, sm_90" of the runtime's device (CUDA).
    std::string device_text() const;
    // Nothing to wait for where CUDA is not started.
    void synchronize(void* stream) const;
    void wait_for_compiles() const;

    // What a CUDA runtime would do, where there is none (explain under Auto): the limits its
    // stages are planned within, and the kernels it would build for a plan made within them.
    static dsl::Limits cuda_limits();
    static std::vector<detail::KernelReport> cuda_kernels(const ir::Plan& plan);

private:
    void start_backend();  // start()'s work, once

    MachineOptions options_;
    std::once_flag start_once_;
    std::atomic<bool> started_{false};
    Backend backend_ = Backend::Cpu;  // valid once started
    int device_ = 0;
    std::string fallback_;
    std::unique_ptr<detail::BackendImpl> cuda_;  // a CUDA runtime's backend
    detail::BackendImpl* main_ = nullptr;        // cuda_, or the CPU backend on a CPU runtime
    dsl::Limits limits_, host_limits_;
    std::shared_ptr<cuda::ModuleCache> modules_;  // CUDA: compiled modules (memory, then disk)
    std::shared_ptr<cache::DiskCache> disk_;      // CUDA: the disk level, when enabled

    mutable std::mutex cpu_mutex_;
    std::unique_ptr<detail::BackendImpl> cpu_;  // the CPU backend (made when first asked)
    std::atomic<detail::BackendImpl*> cpu_ready_{nullptr};
    dsl::Limits cpu_limits_;

    // The disk cache for what is kept before a backend starts (the known host model), made when
    // first asked: null when the disk cache is off or unusable.
    cache::DiskCache* host_store();

    std::once_flag model_once_;
    HostModel model_;
    std::once_flag known_once_, host_store_once_;
    std::optional<HostModel> known_;
    std::shared_ptr<cache::DiskCache> host_store_;
    struct Measured {
        std::once_flag once;
        double gbs = 0;
        std::string source;
    };
    Measured device_bandwidth_, cpu_bandwidth_;
};

// Keeps `m` in `store` as the known host model (Machine::known_host_model) of machines with
// `cpu_threads`: what Machine::host_model does whenever it has figures. Never throws.
void remember_host_model(cache::DiskCache& store, int cpu_threads, const HostModel& m);

// Makes the runtime's CUDA device current on this thread for one call (nothing on the CPU):
// arrays it allocates, modules it loads and kernels it launches are on that device.
class OnDevice {
public:
    OnDevice(Backend b, int device) {
        if (b == Backend::Cuda) scope_.emplace(device);
    }

private:
    std::optional<cuda::DeviceScope> scope_;
};

}  // namespace jit::run

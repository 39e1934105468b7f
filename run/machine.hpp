// jitexpr — what a runtime runs on: its backend (CUDA on a device, or the CPU), the CPU backend
// that host data kept on the CPU runs on (a second backend object, made when first needed), the
// compiled modules (memory, then the disk cache), and the measurements decide() and explain
// read (the host model, the device's free memory, bandwidths).
#pragma once

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "run/decide.hpp"

#include <jit/array.hpp>

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
    // Chooses and makes the backend: NoDeviceError where CUDA was asked for and is not there (or
    // Auto asked for device N > 0 of a machine without CUDA), ArgumentError for a device the
    // machine does not have.
    explicit Machine(const MachineOptions& options);
    ~Machine() override;
    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    Backend backend() const { return backend_; }
    int device() const { return device_; }
    // Backend::Auto on a machine without CUDA: why.
    const std::string& fallback() const { return fallback_; }
    detail::BackendImpl& main() { return *main_; }
    const dsl::Limits& limits() const { return limits_; }
    // The CPU backend for host data kept on the CPU (the main one on a CPU runtime).
    detail::BackendImpl& cpu();
    const dsl::Limits& cpu_limits();
    std::string setup_note() const { return main_->setup_note(); }
    CompileCounts compile_counts() const;

    // Probe (decide.hpp).
    const HostModel& host_model() override;
    std::size_t device_budget() override;
    bool can_stream() override;

    // What a memory-bound kernel's bytes move at, for explain: on CUDA a device-to-device copy
    // measured now; on the CPU the CPU backend's throughput on a*2+b (kept in the disk cache).
    // `source` says which.
    double bandwidth(Backend which, std::string* source);
    // "H200, sm_90" of the runtime's device (CUDA).
    std::string device_text() const;
    void synchronize(void* stream) const;
    void wait_for_compiles() const;

    // What a CUDA runtime would do, where there is none (explain under Auto): the limits its
    // stages are planned within, and the kernels it would build for a plan made within them.
    static dsl::Limits cuda_limits();
    static std::vector<detail::KernelReport> cuda_kernels(const ir::Plan& plan);

private:
    MachineOptions options_;
    Backend backend_ = Backend::Cpu;
    int device_ = 0;
    std::string fallback_;
    std::unique_ptr<detail::BackendImpl> main_;
    dsl::Limits limits_;
    std::shared_ptr<cuda::ModuleCache> modules_;  // CUDA: compiled modules (memory, then disk)
    std::shared_ptr<cache::DiskCache> disk_;      // CUDA: the disk level, when enabled

    std::mutex cpu_mutex_;
    std::unique_ptr<detail::BackendImpl> cpu_;  // a CUDA runtime's CPU backend (made when first asked)
    dsl::Limits cpu_limits_;

    std::once_flag model_once_;
    HostModel model_;
    struct Measured {
        std::once_flag once;
        double gbs = 0;
        std::string source;
    };
    Measured device_bandwidth_, cpu_bandwidth_;
};

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

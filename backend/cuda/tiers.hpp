// jitexpr — tiered compiles: the decision whether a program starts on a first tier (one rule,
// for preparation and for explain), and the process's counters and upgrades in flight (internal
// to backend/cuda; tier_stats() and wait_for_upgrades() in executor.hpp are the public face).
#pragma once

#include "backend/cuda/build.hpp"
#include "backend/cuda/executor.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace jit::cuda {

// Whether a tiered preparation of `full` (build_kernels' Tier::Full kernels) starts on the
// scalar-only first tier: when some kernel with a vector path is not compiled yet (in memory or
// on disk). `compiled(kernel)` is asked once for each such kernel, in order, every one of them
// (preparation's lookup loads what it finds).
template <class Compiled>
bool starts_on_first_tier(const codegen::Emitted& full, bool tiered, Compiled&& compiled) {
    if (!tiered) return false;
    bool first = false;
    for (const codegen::KernelSource& k : full.kernels) {
        if (k.launch.vec <= 1) continue;
        if (!compiled(k)) first = true;
    }
    return first;
}

// The options of the first tier's kernels (Tier::ScalarOnly): Flat kernels of the ops PTX
// expresses exactly are written as PTX and assembled by nvJitLink when it is there (exact
// numerics only: fast math and extra NVRTC options keep NVRTC).
KernelOptions first_tier_options(const KernelOptions& full, const CompileOptions& compile, bool ptx_first_tier);

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
    // Another background compile (the device libraries): waited for alike, counted as neither
    // an upgrade nor a failure.
    void begin_other() {
        std::lock_guard<std::mutex> lock(m_);
        ++in_flight_;
    }
    void end_other() {
        std::lock_guard<std::mutex> lock(m_);
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

// The process's (never destroyed: upgrades may end during exit).
Tiers& tiers();

// A process must not tear NVRTC down under a background compile: NVRTC registers its exit-time
// destructors during its first compile, before any handler of ours could run first. glibc's
// exit() runs the exiting thread's thread_local destructors before all of those, so every thread
// that starts an upgrade holds one of these, and when it exits (or returns from main) it waits
// for the upgrades in flight. They finish what the process paid for: the full kernels go to disk
// and the next process starts on them.
struct WaitForUpgrades {
    ~WaitForUpgrades() { tiers().wait(); }
};

}  // namespace jit::cuda

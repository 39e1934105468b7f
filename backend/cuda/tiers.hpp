// jitexpr — tiered compiles of the process: counters and the upgrades in flight (internal to
// backend/cuda; tier_stats() and wait_for_upgrades() in executor.hpp are the public face).
#pragma once

#include "backend/cuda/executor.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace jit::cuda {

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

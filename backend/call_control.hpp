// jitexpr — one call's stop request and progress, as the backends see them.
//
// The runtime makes one CallControl per call from the call's CancelToken, its own cancel epoch
// (Runtime::cancel) and the progress callback, and hands the backends a pointer to it (RunArgs,
// PrepareOptions; null means: never stops, reports nothing). Backends ask stop_requested() at
// their safe points (between blocks, kernels, compiles, chunks) from any thread; the calling
// thread alone calls tick(), which runs the token's poll function and the progress callback.
#pragma once

#include <jit/cancel.hpp>
#include <jit/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace jit::detail {

class CallControl {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr auto kPollEvery = std::chrono::milliseconds(20);
    static constexpr auto kProgressEvery = std::chrono::milliseconds(100);

    CallControl() = default;
    CallControl(const CancelToken* token, const std::atomic<std::uint64_t>* epoch, const ProgressFn* progress)
        : token_(token),
          epoch_(epoch),
          epoch0_(epoch ? epoch->load(std::memory_order_acquire) : 0),
          progress_(progress && *progress ? progress : nullptr) {
        wants_ticks_ = progress_ || (token_ && token_->has_poll());
        // No clock read unless a progress callback needs the start: every eval has a control,
        // and a call that never ticks (one kernel launched on the GPU) reads no clock at all.
        // A poll function alone is timed from the first tick, which polls (last_poll_ is the
        // clock's epoch).
        if (progress_) last_progress_ = phase_start_ = Clock::now();
    }
    CallControl(const CallControl&) = delete;
    CallControl& operator=(const CallControl&) = delete;

    // Any thread; two relaxed loads: should the work stop at its next safe point?
    bool stop_requested() const noexcept {
        return (token_ && token_->cancelled()) || (epoch_ && epoch_->load(std::memory_order_relaxed) != epoch0_);
    }
    // Whether the calling thread should call tick() while it works or waits.
    bool wants_ticks() const noexcept { return wants_ticks_; }

    // Calling thread only, as often as convenient: runs the poll function at the first tick and
    // then every ~20 ms, and the progress callback every ~100 ms. Returns stop_requested().
    bool tick() noexcept {
        if (!wants_ticks_) return stop_requested();
        const auto now = Clock::now();
        if (token_ && now - last_poll_ >= kPollEvery) {
            last_poll_ = now;
            token_->poll();
        }
        if (progress_ && now - last_progress_ >= kProgressEvery) {
            last_progress_ = now;
            Progress p = snapshot();
            p.elapsed_s = std::chrono::duration<double>(now - phase_start_).count();
            try {
                (*progress_)(p);
            } catch (...) {
                // A display that fails must not fail the work.
            }
        }
        return stop_requested();
    }

    // Starts a phase of progress: `total` units (0: unknown), done counting from 0. Calling
    // thread, before the work of the phase starts.
    void begin(Progress::Phase phase, Progress::Unit unit, std::uint64_t total) noexcept {
        phase_ = phase;
        unit_ = unit;
        total_ = total;
        done_.store(0, std::memory_order_relaxed);
        if (progress_) phase_start_ = Clock::now();
    }
    void add_done(std::uint64_t n) noexcept { done_.fetch_add(n, std::memory_order_relaxed); }
    void set_done(std::uint64_t n) noexcept { done_.store(n, std::memory_order_relaxed); }

    Progress snapshot() const noexcept {
        Progress p;
        p.phase = phase_;
        p.unit = unit_;
        p.total = total_;
        p.done = done_.load(std::memory_order_relaxed);
        if (p.total && p.done > p.total) p.done = p.total;
        return p;
    }

    // The error of a stopped call (the runtime adds the names of arrays partly written).
    [[noreturn]] static void throw_cancelled() { throw CancelledError(); }
    // Throws CancelledError when a stop was requested.
    void check() const {
        if (stop_requested()) throw_cancelled();
    }

private:
    const CancelToken* token_ = nullptr;
    const std::atomic<std::uint64_t>* epoch_ = nullptr;
    std::uint64_t epoch0_ = 0;
    const ProgressFn* progress_ = nullptr;
    bool wants_ticks_ = false;
    Clock::time_point last_poll_{}, last_progress_{}, phase_start_{};
    Progress::Phase phase_ = Progress::Phase::Run;
    Progress::Unit unit_ = Progress::Unit::Elements;
    std::uint64_t total_ = 0;
    std::atomic<std::uint64_t> done_{0};
};

}  // namespace jit::detail

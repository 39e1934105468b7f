// jitexpr — stopping a long call, and watching it: the cancel token and progress reports.
//
//   jit::CancelToken stop;                       // share it with whoever may stop the call
//   jit::CallOptions o;
//   o.cancel = stop;
//   std::thread t([&] { rt.run("y = sin(x) * 2", env, o); });   // throws jit::CancelledError
//   stop.cancel();                               // from any thread, or a signal handler
//
// A cancelled call stops at the next safe point: between blocks of elements on the CPU (within
// about 1 ms), between kernels or copy chunks on CUDA (a running kernel is never interrupted),
// between compiles, between chunks of a file. It throws jit::CancelledError. Arrays it was
// creating are dropped; arrays it was writing in place are named in the error (they may be
// partly written); the runtime stays usable.
//
// The library never installs signal handlers: an application that wants Ctrl-C to stop a call
// installs its own and calls cancel() from it (the jitexpr CLI does; so does the Python package,
// through a poll function).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace jit {

class CancelToken {
public:
    // A token that is not cancelled.
    CancelToken() : state_(std::make_shared<State>()) {}
    // With a poll function: the call that holds the token runs `poll` on the calling thread
    // when it starts its work and then about every 20 ms while it works or waits (for the CPU threads, the GPU, a compile), and
    // stops as if cancel() had been called once `poll` returns true. For hosts whose signals are
    // seen only on one thread (Python: PyErr_CheckSignals under the GIL). `poll` must not
    // throw; if it does, the call is cancelled and the exception dropped.
    explicit CancelToken(std::function<bool()> poll) : state_(std::make_shared<State>()) {
        state_->poll = std::move(poll);
    }

    // Copies share one state: cancelling one cancels them all.
    CancelToken(const CancelToken&) = default;
    CancelToken& operator=(const CancelToken&) = default;

    // Asks every call holding this token to stop. Only an atomic store: safe in a signal
    // handler and from any thread. Stays cancelled until reset().
    void cancel() const noexcept { state_->cancelled.store(true, std::memory_order_release); }
    bool cancelled() const noexcept { return state_->cancelled.load(std::memory_order_acquire); }
    // Makes the token usable again (for the next call; a call in flight may already have seen it).
    void reset() const noexcept { state_->cancelled.store(false, std::memory_order_release); }

    // Runs the poll function now, if there is one (cancelling when it says so), and returns
    // cancelled(). The evaluating calls do this themselves; call it from the thread `poll` expects.
    bool poll() const noexcept {
        if (state_->poll && !cancelled()) {
            bool stop = true;
            try {
                stop = state_->poll();
            } catch (...) {}
            if (stop) cancel();
        }
        return cancelled();
    }
    bool has_poll() const noexcept { return static_cast<bool>(state_->poll); }

private:
    struct State {
        std::atomic<bool> cancelled{false};
        std::function<bool()> poll;
    };
    static_assert(std::atomic<bool>::is_always_lock_free, "cancel() must be a plain atomic store");
    std::shared_ptr<State> state_;
};

// How far a long call has come, for a progress display. Reported on the calling thread, about
// every 100 ms while the call works, and only while it works (nothing is reported when it ends:
// the caller knows).
struct Progress {
    enum class Phase : std::uint8_t {
        Run,      // evaluating: `done` of `total` elements (every stage's, added up) or kernels
        Compile,  // CUDA: kernels compiled of those the program needs compiled
        Load,     // reading a file: bytes
        Save,     // writing a file: bytes
        Create,   // making an array on the host (the CLI's constructors): elements
    };
    enum class Unit : std::uint8_t { Elements, Bytes, Kernels };
    Phase phase = Phase::Run;
    Unit unit = Unit::Elements;
    std::uint64_t done = 0;
    std::uint64_t total = 0;  // 0: not known
    double elapsed_s = 0;     // since this phase began
};
using ProgressFn = std::function<void(const Progress&)>;

}  // namespace jit

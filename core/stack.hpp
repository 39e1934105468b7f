// jitexpr — running recursive work on a stack of known size, whatever the caller's thread.
//
// The parser and the lowering recurse once per nesting level of the user's text (at most
// syntax::kMaxNesting levels). The documented limit must hold on any thread a host hands
// jitexpr: a Python thread made after threading.stack_size(256 * 1024), musl's 128 KiB
// default. with_stack(need, fn) runs fn right here when this thread has `need` bytes of stack
// left below the caller, and otherwise on a thread of its own with a stack of `need` bytes,
// waiting for it; what fn returns or throws comes back to the caller either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace jit::core {

// The stack the parser and the lowering ask for (syntax::parse, dsl::lower): on a thread with
// less left they run on a thread of their own with this much, so that syntax::kMaxNesting holds
// on any thread. At least twice what they use at the nesting limit (test_small_stack measures
// it: about 450 KiB in a Release build, 1-2 MiB unoptimised, more under AddressSanitizer).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr std::size_t kFrontStackBytes = std::size_t{32} << 20;
#else
inline constexpr std::size_t kFrontStackBytes = std::size_t{4} << 20;
#endif

// Bytes of stack left below the caller's frame on this thread; SIZE_MAX when the thread's
// stack is not known (the first call on a thread asks the system; later calls are a subtraction).
std::size_t stack_left();

// The lowest address this thread's stack may use (what stack_left() measures down to), 0 when
// not known. The main thread's comes from the auxiliary vector and RLIMIT_STACK, not from
// /proc/self/maps (see stack.cpp).
std::uintptr_t stack_floor_of_this_thread();

// Runs job(arg) on a new thread with a stack of `bytes` and waits for it. Throws ResourceError
// when no such thread can be made. job must not throw (with_stack catches for it).
void run_on_own_stack(std::size_t bytes, void (*job)(void*), void* arg);

// How many times this process ran a job on a stack of its own (tests count the hops).
std::size_t own_stack_runs();

// The size of the stack run_on_own_stack gave this thread, 0 on any other thread. A job there
// was sized for all the front's work: a with_stack inside it (the parser inside a walk of the
// CLI's) runs in place rather than hopping to yet another thread.
std::size_t own_stack_bytes();

template <class F>
std::invoke_result_t<F&> with_stack(std::size_t need, F&& fn) {
    using R = std::invoke_result_t<F&>;
    if (own_stack_bytes() >= need || stack_left() >= need) return fn();
    struct Job {
        F* fn;
        std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> result{};
        std::exception_ptr error;
    } job{&fn, {}, nullptr};
    run_on_own_stack(
        need,
        [](void* p) {
            auto* j = static_cast<Job*>(p);
            try {
                if constexpr (std::is_void_v<R>) (*j->fn)();
                else j->result.emplace((*j->fn)());
            } catch (...) {
                j->error = std::current_exception();
            }
        },
        &job);
    if (job.error) std::rethrow_exception(job.error);
    if constexpr (!std::is_void_v<R>) return std::move(*job.result);
}

}  // namespace jit::core

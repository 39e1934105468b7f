#include "core/stack.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>

namespace jit::core {

namespace {

// The lowest address of this thread's stack (stacks grow down on every platform jitexpr
// builds for), or 0 when the system does not say.
std::uintptr_t stack_floor() {
    thread_local const std::uintptr_t floor = [] {
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) != 0) return std::uintptr_t{0};
        void* addr = nullptr;
        std::size_t size = 0;
        const int rc = pthread_attr_getstack(&attr, &addr, &size);
        pthread_attr_destroy(&attr);
        if (rc != 0 || addr == nullptr) return std::uintptr_t{0};
        // The guard page(s) sit inside the reported range on some systems: leave a page.
        return reinterpret_cast<std::uintptr_t>(addr) + 4096;
    }();
    return floor;
}

std::atomic<std::size_t> g_own_stack_runs{0};
thread_local std::size_t t_own_stack_bytes = 0;

}  // namespace

std::size_t stack_left() {
    const std::uintptr_t floor = stack_floor();
    if (floor == 0) return std::numeric_limits<std::size_t>::max();
    char here;
    const auto sp = reinterpret_cast<std::uintptr_t>(&here);
    return sp > floor ? sp - floor : 0;
}

std::size_t own_stack_runs() { return g_own_stack_runs.load(std::memory_order_relaxed); }
std::size_t own_stack_bytes() { return t_own_stack_bytes; }

void run_on_own_stack(std::size_t bytes, void (*job)(void*), void* arg) {
    struct Call {
        void (*job)(void*);
        void* arg;
        std::size_t bytes;
    } call{job, arg, bytes};
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) throw OutOfMemoryError(bytes, stack_left(), "a thread stack for the parser");
    int rc = pthread_attr_setstacksize(&attr, bytes);
    pthread_t th;
    if (rc == 0)
        rc = pthread_create(
            &th, &attr,
            [](void* p) -> void* {
                auto* c = static_cast<Call*>(p);
                t_own_stack_bytes = c->bytes;
                c->job(c->arg);
                return nullptr;
            },
            &call);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        throw OutOfMemoryError(bytes, stack_left(),
                               fmt::format("a thread stack for the parser (this thread's is too small; "
                                           "pthread_create: {})",
                                           std::strerror(rc)));
    g_own_stack_runs.fetch_add(1, std::memory_order_relaxed);
    pthread_join(th, nullptr);
}

}  // namespace jit::core

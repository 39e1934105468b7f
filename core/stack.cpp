#include "core/stack.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <pthread.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>

namespace jit::core {

namespace {

// The main thread's stack floor without /proc/self/maps, which glibc's pthread_getattr_np
// reads for that thread (~0.1 ms, more in a process with many mappings, such as one with the
// CUDA driver loaded: a fresh process's first eval paid it). The kernel copies the executable's
// name last, just below the top of the stack (then one null pointer); the stack may grow down
// to RLIMIT_STACK below that top. 0 when that cannot be told (no limit, no name).
std::uintptr_t main_thread_floor() {
    struct rlimit rl;
    if (::getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    const auto* name = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
    if (name == nullptr) return 0;
    const std::uintptr_t page = 4096;
    const std::uintptr_t top =
        (reinterpret_cast<std::uintptr_t>(name) + std::strlen(name) + 1 + sizeof(void*) + page - 1) / page * page;
    char here;
    const auto sp = reinterpret_cast<std::uintptr_t>(&here);
    if (sp >= top || rl.rlim_cur >= top) return 0;
    const std::uintptr_t limit = (static_cast<std::uintptr_t>(rl.rlim_cur) + page - 1) / page * page;
    // The guard page(s) as below: leave a page.
    return top - limit + page;
}

// The lowest address of this thread's stack (stacks grow down on every platform jitexpr
// builds for), or 0 when the system does not say.
std::uintptr_t stack_floor() {
    thread_local const std::uintptr_t floor = [] {
        if (::getpid() == static_cast<pid_t>(::syscall(SYS_gettid)))
            if (const std::uintptr_t f = main_thread_floor()) return f;
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

std::uintptr_t stack_floor_of_this_thread() { return stack_floor(); }

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

#include "tests/support/allocation_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
std::atomic<std::size_t> fail_from{0};
}  // namespace

void* operator new(std::size_t size) {
    if (counting) ++allocations;
    if (const std::size_t f = fail_from.load(std::memory_order_relaxed); f != 0 && size >= f) throw std::bad_alloc();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The array forms too: libstdc++'s operator new[] forwards to operator new, but AddressSanitizer's
// runtime replaces operator new[] with its own, which does not, so under ASan `new T[n]` would
// pass by the hook.
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }
// And the nothrow forms (std::get_temporary_buffer's, under std::stable_sort), for the same
// reason: ASan's runtime would allocate them with its own operator new, and the sized delete
// above would then free what malloc never gave (an alloc-dealloc mismatch).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return ::operator new(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return ::operator new(size);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }

namespace jit::test {

void start_counting_allocations() noexcept {
    allocations = 0;
    counting = true;
}

std::size_t stop_counting_allocations() noexcept {
    counting = false;
    return allocations;
}

void fail_allocations_from(std::size_t bytes) noexcept { fail_from.store(bytes, std::memory_order_relaxed); }

}  // namespace jit::test

// Counts the calling thread's heap allocations, for tests that prove a path allocates nothing.
// Linking tests/support/allocation_counter.cpp into a test replaces global operator new and
// delete for that executable. They live in a file of their own so that the compiler never sees
// the replaced operator new and its std::free in the same body as the test's own allocations
// (GCC's -Wmismatched-new-delete flags that pairing although it is what the replacement means).
#pragma once

#include <cstddef>

namespace jit::test {

// Starts counting the calling thread's calls of operator new from zero.
void start_counting_allocations() noexcept;
// Stops counting and returns how many allocations the calling thread made since the start.
std::size_t stop_counting_allocations() noexcept;

// From now on operator new throws std::bad_alloc for requests of `bytes` or more, on every
// thread, as a system out of memory would (0: never). Host arrays (malloc, aligned_alloc) are not
// touched: only the heap allocations of jitexpr's own work are.
void fail_allocations_from(std::size_t bytes) noexcept;

}  // namespace jit::test

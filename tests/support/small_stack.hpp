// Runs a test's code on a thread with a stack of a given size, in memory of the test's own, so
// that the test can also see how much of it was written.
#pragma once

#include <gtest/gtest.h>

#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <vector>

namespace jit::testing {

// Runs fn on a new thread with a stack of `bytes` and waits for it; what fn throws is rethrown
// here. `used`, when given, gets the bytes below the top of the stack that fn's frames reached.
template <class F>
void on_stack(std::size_t bytes, F fn, std::size_t* used = nullptr) {
    struct Job {
        F* fn;
        std::exception_ptr error;
    } job{&fn, nullptr};
    std::vector<unsigned char> stack(bytes, 0xA5);
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstack(&attr, stack.data(), stack.size()), 0);
    pthread_t th;
    auto body = [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
            (*j->fn)();
        } catch (...) {
            j->error = std::current_exception();
        }
        return nullptr;
    };
    ASSERT_EQ(pthread_create(&th, &attr, body, &job), 0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
    if (used) {
        const auto first = std::find_if(stack.begin(), stack.end(), [](unsigned char c) { return c != 0xA5; });
        *used = static_cast<std::size_t>(stack.end() - first);
    }
    if (job.error) std::rethrow_exception(job.error);
}

}  // namespace jit::testing

// jitexpr — parallel loops for the CUDA backend's host work (compiles of several kernels), plain
// and watched by a call's control (stop requests, progress ticks).
#pragma once

#include "backend/call_control.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace jit::cuda {

// parallel_for for a call that can be stopped or watched (`ctl` not null): no item starts once a
// stop is requested (the ones running finish), and then CancelledError is thrown. When the
// control wants ticks, the calling thread does none of the items but waits, ticking it every
// ~20 ms (its poll function and progress callback run on the calling thread only).
template <class Fn>
void parallel_for_watched(std::size_t n, jit::detail::CallControl* ctl, Fn&& fn);

// Runs fn(0) ... fn(n - 1) on up to hardware_concurrency threads (the caller's among them) and
// returns when all are done; the first exception any call threw is rethrown then.
template <class Fn>
void parallel_for(std::size_t n, Fn&& fn) {
    if (n <= 1) {
        if (n == 1) fn(std::size_t{0});
        return;
    }
    const std::size_t workers = std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<std::size_t> next{0};
    std::mutex error_mutex;
    std::exception_ptr error;
    auto work = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
            try {
                fn(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    try {
        for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    } catch (...) {
        // No more threads to be had: the ones started and this one share the work.
    }
    work();
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
}

template <class Fn>
void parallel_for_watched(std::size_t n, jit::detail::CallControl* ctl, Fn&& fn) {
    if (!ctl) return parallel_for(n, std::forward<Fn>(fn));
    std::atomic<bool> skipped{false};
    auto item = [&](std::size_t i) {
        if (ctl->stop_requested()) {
            skipped = true;
            return;
        }
        fn(i);
    };
    if (!ctl->wants_ticks() || n == 0) {
        parallel_for(n, item);
    } else {
        std::mutex m;
        std::condition_variable cv;
        bool finished = false;
        std::exception_ptr error;
        std::thread worker;
        try {
            worker = std::thread([&] {
                std::exception_ptr e;
                try {
                    parallel_for(n, item);
                } catch (...) {
                    e = std::current_exception();
                }
                std::lock_guard<std::mutex> lock(m);
                error = e;
                finished = true;
                cv.notify_one();
            });
        } catch (const std::system_error&) {
            parallel_for(n, item);  // no thread to be had: no ticks either
        }
        if (worker.joinable()) {
            std::unique_lock<std::mutex> lock(m);
            while (!cv.wait_for(lock, jit::detail::CallControl::kPollEvery, [&] { return finished; })) {
                lock.unlock();
                ctl->tick();
                lock.lock();
            }
            lock.unlock();
            worker.join();
            if (error) std::rethrow_exception(error);
        }
    }
    if (skipped) jit::detail::CallControl::throw_cancelled();
}

}  // namespace jit::cuda

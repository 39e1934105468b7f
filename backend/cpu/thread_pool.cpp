#include "backend/cpu/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <system_error>

namespace jit::cpu {

ThreadPool::ThreadPool(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    workers_.reserve(static_cast<std::size_t>(threads - 1));
    for (int t = 1; t < threads; ++t) {
        try {
            workers_.emplace_back([this, t] { worker(t); });
        } catch (const std::system_error& e) {
            // Workers are numbered 1..size()-1 however many started: fewer threads, same results.
            note_ =
                fmt::format("the CPU backend runs on {} of the {} threads asked for: thread {} could not start ({})", t,
                            threads, t + 1, e.code().message());
            break;
        } catch (const std::bad_alloc&) {
            note_ = fmt::format(
                "the CPU backend runs on {} of the {} threads asked for: thread {} could not start "
                "(out of memory)",
                t, threads, t + 1);
            break;
        }
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::worker(int id) {
    std::uint64_t seen = 0;
    for (;;) {
        const std::function<void(int)>* job;
        {
            std::unique_lock<std::mutex> lock(m_);
            start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
        }
        std::exception_ptr err;
        try {
            (*job)(id);
        } catch (...) {
            err = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(m_);
        if (err && !error_) error_ = err;
        if (--pending_ == 0) done_cv_.notify_one();
    }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
    std::lock_guard<std::mutex> serial(run_mutex_);
    if (workers_.empty()) {
        fn(0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(m_);
        job_ = &fn;
        pending_ = static_cast<int>(workers_.size());
        error_ = nullptr;
        ++generation_;
    }
    start_cv_.notify_all();
    std::exception_ptr mine;
    try {
        fn(0);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(m_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
}

}  // namespace jit::cpu

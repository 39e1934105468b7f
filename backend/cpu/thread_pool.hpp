// jitexpr CPU backend — a persistent pool of worker threads. run(fn) calls fn(0..size()-1), one
// call per thread, fn(0) on the calling thread, and returns when all are done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jit::cpu {

class ThreadPool {
public:
    // threads: total threads including the caller; 0 = std::thread::hardware_concurrency().
    // A thread the system cannot start (no memory for its stack under `ulimit -v`, a process
    // limit) is not an error: the pool runs on the threads that started, the caller's at least,
    // and note() says so.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }
    // Empty, or why the pool has fewer threads than were asked for.
    const std::string& note() const { return note_; }
    // Runs fn(t) for t in [0, size()); the first exception thrown is rethrown here. Calls from
    // several threads are serialised.
    void run(const std::function<void(int)>& fn);

private:
    void worker(int id);

    std::vector<std::thread> workers_;
    std::mutex run_mutex_;  // one run at a time
    std::mutex m_;
    std::condition_variable start_cv_, done_cv_;
    const std::function<void(int)>* job_ = nullptr;
    std::uint64_t generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
    std::string note_;
};

}  // namespace jit::cpu

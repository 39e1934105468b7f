// jitexpr — host-side copies of the staged transfers (pageable <-> pinned).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace jit::cuda {

// memcpy(dst, src, n) that writes with non-temporal stores where the target has them (x86-64):
// a pinned buffer that a copy engine reads next gains nothing from having its lines in the
// cache, and plain stores read each line before writing it. On the H100 host of 2026-12-07,
// 8 threads staged 52.9 GB/s this way against 43.1 with memcpy
// (bench/results/2026-12-07d-h100-stream-probe.txt). Same result as memcpy; the ranges must not
// overlap.
void copy_streaming(void* dst, const void* src, std::size_t n) noexcept;

// Off: copy_streaming is memcpy (process-wide; for benchmarks that compare the two in one run).
void set_streaming_stores(bool on) noexcept;

struct CopyTask {
    void* dst;
    const void* src;
    std::size_t n;
};

// Copies batches of ranges, each split into parts of at least kPart bytes, with threads of its
// own (sleeping between batches) and the calling thread; one batch at a time (callers
// serialise). A thread takes a part only of the batch it was woken for (the batch's number and
// the part's index are claimed together), so a thread that wakes late never reads the next
// batch's list while it is being written. The destructor stops and joins the threads.
class HostCopier {
public:
    static constexpr std::size_t kPart = std::size_t{2} << 20;

    explicit HostCopier(unsigned threads);
    ~HostCopier();
    HostCopier(const HostCopier&) = delete;
    HostCopier& operator=(const HostCopier&) = delete;

    unsigned threads() const { return threads_; }
    // Copies every task (non-overlapping ranges); returns when all are done. `streaming`:
    // copy_streaming, else memcpy.
    void run(const std::vector<CopyTask>& tasks, bool streaming = true);

private:
    void take_parts(std::uint32_t batch, std::size_t count, bool streaming);
    void work();

    unsigned threads_ = 1;
    std::vector<std::thread> workers_;
    std::vector<CopyTask> parts_;         // the batch's; written only while no thread may read it
    std::atomic<std::uint64_t> next_{0};  // batch number << 32 | the next part's index
    std::mutex m_;
    std::condition_variable wake_, done_;
    std::uint32_t batch_ = 0;               // under m_
    std::size_t count_ = 0, left_ = 0;      // under m_: the batch's parts, those not yet copied
    bool streaming_ = true, stop_ = false;  // under m_
};

}  // namespace jit::cuda

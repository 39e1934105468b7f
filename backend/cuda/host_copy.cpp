// jitexpr — host-side copies of the staged transfers (see host_copy.hpp).
#include "backend/cuda/host_copy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace jit::cuda {

namespace {
std::atomic<bool> streaming_stores{true};
}  // namespace

void set_streaming_stores(bool on) noexcept { streaming_stores.store(on, std::memory_order_relaxed); }

void copy_streaming(void* dst, const void* src, std::size_t n) noexcept {
#if defined(__x86_64__)
    if (!streaming_stores.load(std::memory_order_relaxed)) {
        std::memcpy(dst, src, n);
        return;
    }
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
    if (n < head + 256) {  // too short for the stores to matter
        std::memcpy(d, s, n);
        return;
    }
    std::memcpy(d, s, head);  // dst 16-byte aligned from here
    d += head;
    s += head;
    n -= head;
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
        const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
        const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), x0);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), x1);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), x2);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), x3);
    }
    _mm_sfence();  // the stores are visible before the copy engine (or another thread) reads
    std::memcpy(d + i, s + i, n - i);
#else
    std::memcpy(dst, src, n);
#endif
}

HostCopier::HostCopier(unsigned threads) : threads_(std::max(1u, threads)) {
    for (unsigned t = 1; t < threads_; ++t) {
        try {
            workers_.emplace_back([this] { work(); });
        } catch (...) {
            threads_ = t;  // no more threads to be had: fewer parts
            break;
        }
    }
}

HostCopier::~HostCopier() {
    {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void HostCopier::run(const std::vector<CopyTask>& tasks, bool streaming) {
    parts_.clear();
    for (const CopyTask& t : tasks) {
        const std::size_t k = std::max<std::size_t>(1, std::min<std::size_t>(threads_ * 2, t.n / kPart));
        const std::size_t per = (t.n / k + 63) / 64 * 64;
        for (std::size_t off = 0; off < t.n; off += per)
            parts_.push_back({static_cast<unsigned char*>(t.dst) + off, static_cast<const unsigned char*>(t.src) + off,
                              std::min(per, t.n - off)});
    }
    if (parts_.empty()) return;
    if (parts_.size() == 1 || threads_ == 1) {
        for (const CopyTask& p : parts_)
            streaming ? copy_streaming(p.dst, p.src, p.n) : (void)std::memcpy(p.dst, p.src, p.n);
        return;
    }
    std::uint32_t batch;
    {
        std::lock_guard<std::mutex> lock(m_);
        batch = ++batch_;
        count_ = left_ = parts_.size();
        streaming_ = streaming;
        next_.store(static_cast<std::uint64_t>(batch) << 32, std::memory_order_release);
    }
    wake_.notify_all();
    take_parts(batch, parts_.size(), streaming);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return left_ == 0; });
}

void HostCopier::take_parts(std::uint32_t batch, std::size_t count, bool streaming) {
    std::size_t finished = 0;
    std::uint64_t v = next_.load(std::memory_order_acquire);
    for (;;) {
        // Claim the next part of `batch`; none once the batch is another or all are claimed (a
        // part claimed keeps its batch from ending, so parts_ stays as it is while it copies).
        if ((v >> 32) != batch || (v & 0xFFFFFFFFu) >= count) break;
        if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        const CopyTask& p = parts_[static_cast<std::size_t>(v & 0xFFFFFFFFu)];
        if (streaming) copy_streaming(p.dst, p.src, p.n);
        else std::memcpy(p.dst, p.src, p.n);
        ++finished;
        v = next_.load(std::memory_order_acquire);
    }
    if (finished) {
        std::lock_guard<std::mutex> lock(m_);
        left_ -= finished;
        if (left_ == 0) done_.notify_all();
    }
}

void HostCopier::work() {
    std::uint32_t seen = 0;
    for (;;) {
        std::uint32_t batch;
        std::size_t count;
        bool streaming;
        {
            std::unique_lock<std::mutex> lock(m_);
            wake_.wait(lock, [&] { return stop_ || batch_ != seen; });
            if (stop_) return;
            seen = batch = batch_;
            count = count_;
            streaming = streaming_;
        }
        take_parts(batch, count, streaming);
    }
}

}  // namespace jit::cuda

// jitexpr — device memory of each device's primary context: allocation, copies, Array storage.
// Everything here works on the calling thread's current device (cuda::current_device()); the
// pool, the kept blocks and the staging buffers are per device, so two threads on two devices
// share no lock.
#include "backend/call_control.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"
#include "backend/cuda/host_copy.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace jit::cuda {
namespace {

using detail::api;
using detail::check;
using detail::to_device_ptr;

CUstream as_stream(void* stream) { return static_cast<CUstream>(stream); }

std::string human_bytes(std::size_t bytes) {
    static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

// Array memory comes from a memory pool of our own with the stream-ordered allocator: an
// allocation or a free is a few hundred nanoseconds and never synchronises, where cuMemAlloc and
// cuMemFree cost tens of microseconds to milliseconds and cuMemFree waits for the device. Freed
// blocks stay in the pool for reuse (release threshold: unbounded); when an allocation fails
// for lack of memory the pool is trimmed and the allocation tried once more. Allocation and free
// are ordered on the legacy default stream, which every blocking stream synchronises with.
// Drivers without the allocator (older than 11.2) get plain cuMemAlloc/cuMemFree.
// The index of the calling thread's current device into the per-device tables below.
std::size_t slot() {
    const int d = current_device();
    if (d < 0 || d >= kMaxDevices)
        throw ArgumentError(fmt::format("CUDA device {}: jitexpr uses device ordinals 0 to {}", d, kMaxDevices - 1));
    return static_cast<std::size_t>(d);
}

struct Pools {
    std::once_flag once[kMaxDevices];
    CUmemoryPool pool[kMaxDevices] = {};
};
Pools& pools() {
    static Pools* p = new Pools;  // never destroyed: blocks may be freed during exit
    return *p;
}

CUmemoryPool array_pool() {
    const std::size_t dev = slot();
    Pools& ps = pools();
    std::call_once(ps.once[dev], [&] {
        const auto& d = api();
        if (!d.MemPoolCreate) return;
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = static_cast<int>(dev);
        CUmemoryPool p = nullptr;
        if (d.MemPoolCreate(&p, &props) != CUDA_SUCCESS) return;
        cuuint64_t keep = ~cuuint64_t{0};
        d.MemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
        ps.pool[dev] = p;
    });
    return ps.pool[dev];
}

// For noexcept paths (destructors): whether the current device's pool exists, never creating it.
bool has_pool() noexcept {
    const int d = current_device();
    return d >= 0 && d < kMaxDevices && pools().pool[d] != nullptr;
}

void pool_free(void* ptr) noexcept;

// Freed blocks kept on the host for the next allocation of the same size whose first user is
// the legacy default stream (an eval without a stream): taking one costs a lock and a vector
// pop instead of two driver calls (cuMemAllocFromPoolAsync and cuMemFreeAsync), which cost far
// more than that on every small evaluation.
// Safe for that user only: work on the legacy stream waits for all earlier work of blocking
// streams, as the pool's stream-ordered free would; a user on another stream might run beside
// a kernel still reading the block, so other allocations go to the pool. Bounded (kCacheBytes
// in all, blocks up to kCacheBlock); emptied into the pool when an allocation fails.
constexpr std::size_t kCacheBlock = std::size_t{16} << 20;
constexpr std::size_t kCacheBytes = std::size_t{256} << 20;

struct BlockCache {
    std::mutex mutex;
    std::unordered_map<std::size_t, std::vector<void*>> free;  // by size in bytes
    std::size_t bytes = 0;
};

BlockCache& block_cache() {
    static BlockCache* c = new BlockCache[kMaxDevices];  // never destroyed: blocks may be freed during exit
    const int d = current_device();
    return c[d >= 0 && d < kMaxDevices ? d : 0];
}

void* cache_take(std::size_t bytes) {
    if (bytes > kCacheBlock) return nullptr;
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free.find(bytes);
    if (it == c.free.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    c.bytes -= bytes;
    return p;
}

// True when the block was kept.
bool cache_keep(void* ptr, std::size_t bytes) noexcept {
    if (bytes == 0 || bytes > kCacheBlock) return false;
    BlockCache& c = block_cache();
    try {
        std::lock_guard<std::mutex> lock(c.mutex);
        if (c.bytes + bytes > kCacheBytes) return false;
        c.free[bytes].push_back(ptr);
        c.bytes += bytes;
        return true;
    } catch (...) {
        return false;  // no memory for the list: the block goes back to the pool
    }
}

// Every kept block back to the pool.
void cache_flush() noexcept {
    BlockCache& c = block_cache();
    std::unordered_map<std::size_t, std::vector<void*>> blocks;
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        blocks.swap(c.free);
        c.bytes = 0;
    }
    for (auto& [size, list] : blocks)
        for (void* p : list) pool_free(p);
}

void* pool_alloc(std::size_t bytes) {
    const auto& d = api();
    CUmemoryPool pool = array_pool();
    if (!pool) return alloc(bytes);
    CUdeviceptr p = 0;
    CUresult r = d.MemAllocFromPoolAsync(&p, bytes, pool, nullptr);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        // Give kept and cached blocks back to the device and try once more.
        cache_flush();
        check(d.CtxSynchronize(), "cuCtxSynchronize");
        d.MemPoolTrimTo(pool, 0);
        r = d.MemAllocFromPoolAsync(&p, bytes, pool, nullptr);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        const DeviceInfo& info = device_info();
        check(r, "cuMemAllocFromPoolAsync",
              fmt::format("cannot allocate {} on device {} ({}, {} in all)", human_bytes(bytes), current_device(),
                          info.name, human_bytes(info.total_memory)));
    }
    check(r, "cuMemAllocFromPoolAsync");
    return reinterpret_cast<void*>(p);
}

void pool_free(void* ptr) noexcept {
    if (!ptr) return;
    const auto* d = detail::api_noexcept();
    if (!d) return;
    if (!has_pool()) {
        detail::report(d->MemFree(to_device_ptr(ptr)), "cuMemFree");
        return;
    }
    detail::report(d->MemFreeAsync(to_device_ptr(ptr), nullptr), "cuMemFreeAsync");
}

// Device memory owned by arrays; freed when the last array lets go (kept for reuse when the
// pool is in use and the cache has room).
class DeviceStorage final : public Storage {
public:
    // api() first: without a driver even a 0-byte array is a NoDeviceError.
    explicit DeviceStorage(std::size_t bytes)
        : ptr_((api(), bytes ? pool_alloc(bytes) : nullptr)), bytes_(bytes), device_(current_device()) {}
    DeviceStorage(void* kept, std::size_t bytes) : ptr_(kept), bytes_(bytes), device_(current_device()) {}
    ~DeviceStorage() override {
        if (!ptr_) return;
        DeviceScope scope(device_);  // freed into the pool of the device it came from
        if (!(has_pool() && cache_keep(ptr_, bytes_))) pool_free(ptr_);
    }
    DeviceStorage(const DeviceStorage&) = delete;
    DeviceStorage& operator=(const DeviceStorage&) = delete;

    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return Backend::Cuda; }
    int device() const override { return device_; }

private:
    void* ptr_;
    std::size_t bytes_;
    int device_;
};

}  // namespace

void* alloc(std::size_t bytes) {
    const auto& d = api();
    if (bytes == 0) return nullptr;
    CUdeviceptr p = 0;
    CUresult r = d.MemAlloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        const DeviceInfo& info = device_info();
        check(r, "cuMemAlloc",
              fmt::format("cannot allocate {} on device {} ({}, {} in all)", human_bytes(bytes), current_device(),
                          info.name, human_bytes(info.total_memory)));
    }
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(p);
}

void free(void* ptr) noexcept {
    if (!ptr) return;
    const auto* d = detail::api_noexcept();
    if (!d) return;  // no driver: nothing can have been allocated
    detail::report(d->MemFree(to_device_ptr(ptr)), "cuMemFree");
}

namespace {

// Pageable host memory cannot be read by the copy engines: the driver copies it through small
// pinned buffers of its own, one piece at a time, with one thread doing the host-side copy, and
// so reaches what one core can memcpy, far below the bus. Large copies of pageable memory (from
// 4 MiB) take one of these paths instead, chosen by JITEXPR_STAGING:
//  - "direct" (or "0"): the driver's path;
//  - "staged" (or "1", the default): two pinned staging buffers of our own; the host side of each chunk is
//    copied by several threads at once, and while the device copies one buffer the host fills
//    (or drains) the other. One transfer uses the buffers at a time; a thread that finds them
//    busy copies directly;
//  - "register": the caller's pages are page-locked for the copy (cuMemHostRegister) and
//    released after it, so the device reads them in place.
// Staged is the default because it is the fastest of the three for one large copy; registering
// costs more than a single copy saves (docs/embedding.md, "Host memory", has the figures).
constexpr std::size_t kStageChunk = std::size_t{16} << 20;     // bytes per staging buffer
constexpr std::size_t kStageThreshold = std::size_t{4} << 20;  // smaller copies go direct
constexpr std::size_t kCopyPart = std::size_t{1} << 20;        // least bytes per copying thread

enum class HostPath { Direct, Staged, Register };

// Read at each large copy (a getenv is nothing next to 4 MiB), so a test can switch paths.
HostPath host_path() {
    const char* env = std::getenv("JITEXPR_STAGING");
    const std::string_view v = env ? env : "";
    if (v == "0" || v == "direct") return HostPath::Direct;
    if (v == "register") return HostPath::Register;
    return HostPath::Staged;  // unset, "1", "staged" (and anything else)
}

// memcpy split over a few threads that live as long as the process (they sleep between copies).
// One copy at a time: the caller holds the staging mutex.
class CopyPool {
public:
    explicit CopyPool(unsigned threads) : threads_(std::max(1u, threads)) {
        for (unsigned t = 1; t < threads_; ++t) {
            try {
                std::thread([this] { work(); }).detach();
            } catch (...) {
                threads_ = t;  // no more threads to be had: fewer parts
                break;
            }
        }
    }

    void copy(void* dst, const void* src, std::size_t n) {
        const std::size_t parts = std::min<std::size_t>(threads_, std::max<std::size_t>(1, n / kCopyPart));
        if (parts <= 1) {
            copy_streaming(dst, src, n);
            return;
        }
        {
            std::lock_guard<std::mutex> lock(m_);
            dst_ = static_cast<unsigned char*>(dst);
            src_ = static_cast<const unsigned char*>(src);
            n_ = n;
            parts_ = parts;
            next_ = 0;
            left_ = parts;
            ++generation_;
        }
        wake_.notify_all();
        run_parts();
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [this] { return left_ == 0; });
    }

private:
    // Takes parts of the current copy until none is left.
    void run_parts() {
        for (;;) {
            unsigned char* d;
            const unsigned char* s;
            std::size_t lo, hi;
            {
                std::lock_guard<std::mutex> lock(m_);
                if (next_ >= parts_) return;
                const std::size_t i = next_++;
                const std::size_t per = (n_ / parts_ + 63) / 64 * 64;
                lo = std::min(n_, i * per);
                hi = i + 1 == parts_ ? n_ : std::min(n_, lo + per);
                d = dst_;
                s = src_;
            }
            if (hi > lo) copy_streaming(d + lo, s + lo, hi - lo);
            std::lock_guard<std::mutex> lock(m_);
            if (--left_ == 0) done_.notify_all();
        }
    }

    void work() {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(m_);
                wake_.wait(lock, [&] { return generation_ != seen; });
                seen = generation_;
            }
            run_parts();
        }
    }

    unsigned threads_;
    std::mutex m_;
    std::condition_variable wake_, done_;
    std::uint64_t generation_ = 0;
    unsigned char* dst_ = nullptr;
    const unsigned char* src_ = nullptr;
    std::size_t n_ = 0, parts_ = 0, next_ = 0, left_ = 0;
};

struct Staging {
    std::mutex mutex;
    bool tried = false;
    void* buffer[2] = {nullptr, nullptr};
    CUevent done[2] = {nullptr, nullptr};  // recorded after the copy that last used each buffer
    std::unique_ptr<CopyPool> pool;
};

// One pair of buffers per device: their events belong to that device's context.
Staging& staging() {
    static Staging* s = new Staging[kMaxDevices];  // never destroyed: the driver may be gone at exit
    return s[slot()];
}

// The buffers and threads, made on first use; false when unavailable (the copy goes direct).
bool staging_ready(Staging& s, const detail::Driver& d) {
    if (s.tried) return s.buffer[0] != nullptr;
    s.tried = true;
    if (!d.MemHostAlloc) return false;
    for (int i = 0; i < 2; ++i) {
        if (d.MemHostAlloc(&s.buffer[i], kStageChunk, 0) != CUDA_SUCCESS ||
            d.EventCreate(&s.done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            for (int k = 0; k < 2; ++k) {
                if (s.buffer[k]) d.MemFreeHost(s.buffer[k]);
                if (s.done[k]) d.EventDestroy(s.done[k]);
                s.buffer[k] = nullptr;
                s.done[k] = nullptr;
            }
            return false;
        }
    }
    s.pool = std::make_unique<CopyPool>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
    return true;
}

// Plain pageable host memory (not pinned, registered or managed): CUDA does not know the address.
bool pageable(const detail::Driver& d, const void* host) {
    unsigned int type = 0;
    return d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, to_device_ptr(host)) ==
           CUDA_ERROR_INVALID_VALUE;
}

// Page-locks [host, host + bytes) for one copy; false when the driver refuses (the copy goes direct).
struct Registration {
    const detail::Driver& d;
    void* host;
    bool ok;
    Registration(const detail::Driver& drv, const void* p, std::size_t bytes)
        : d(drv),
          host(const_cast<void*>(p)),
          ok(drv.MemHostRegister && drv.MemHostRegister(host, bytes, 0) == CUDA_SUCCESS) {}
    ~Registration() {
        if (ok) detail::report(d.MemHostUnregister(host), "cuMemHostUnregister");
    }
};

}  // namespace

namespace {

// Bytes per piece of a watched copy that does not go through the staging buffers (direct or
// registered): about 2-10 ms on a PCIe 5 link, so a stop is honoured within that.
constexpr std::size_t kWatchedPiece = std::size_t{64} << 20;

// Between two pieces of a watched copy: counts the piece done and, on a stop request, waits for
// what was queued on the stream (the staging buffers are reused by the next copy) and throws.
void between_pieces(const detail::Driver& d, CUstream stream, jit::detail::CallControl* ctl, std::size_t done_bytes) {
    if (!ctl) return;
    ctl->add_done(done_bytes);
    if (ctl->tick()) {
        (void)d.StreamSynchronize(stream);  // a failure of the copy itself repeats at the next call
        jit::detail::CallControl::throw_cancelled();
    }
}

// A direct (or registered) copy, in pieces when watched, complete when it returns.
template <class Issue>
void copy_in_pieces(const detail::Driver& d, CUstream stream, std::size_t bytes, jit::detail::CallControl* ctl,
                    Issue&& issue) {
    const std::size_t piece = ctl ? kWatchedPiece : bytes;
    for (std::size_t off = 0; off < bytes; off += piece) {
        const std::size_t n = std::min(piece, bytes - off);
        issue(off, n);
        // Complete before returning: the host buffer may be pinned (then the copy reads it
        // later) and callers free or reuse it at once.
        check(d.StreamSynchronize(stream), "cuStreamSynchronize");
        if (off + n < bytes) between_pieces(d, stream, ctl, n);
        else if (ctl) ctl->add_done(n);
    }
}

}  // namespace

void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream, jit::detail::CallControl* ctl) {
    const auto& d = api();
    if (bytes == 0) return;
    if (ctl && ctl->tick()) jit::detail::CallControl::throw_cancelled();
    const HostPath path = bytes >= kStageThreshold ? host_path() : HostPath::Direct;
    const CUstream st = as_stream(stream);
    auto* to = static_cast<unsigned char*>(dst);
    const auto* from = static_cast<const unsigned char*>(src);
    auto direct = [&](std::size_t off, std::size_t n) {
        check(d.MemcpyHtoDAsync(to_device_ptr(to + off), from + off, n, st), "cuMemcpyHtoDAsync");
    };
    if (path == HostPath::Register && pageable(d, src)) {
        Registration reg(d, src, bytes);
        copy_in_pieces(d, st, bytes, ctl, direct);
        return;
    }
    Staging& s = staging();
    std::unique_lock<std::mutex> lock(s.mutex, std::defer_lock);
    if (path == HostPath::Staged && pageable(d, src) && lock.try_lock() && staging_ready(s, d)) {
        for (std::size_t off = 0, i = 0; off < bytes; off += kStageChunk, ++i) {
            const std::size_t n = std::min(kStageChunk, bytes - off);
            const int b = static_cast<int>(i % 2);
            if (i > 0) between_pieces(d, st, ctl, kStageChunk);
            // The copy that last read this buffer (two chunks ago) must be done before refilling it.
            if (i >= 2) check(d.EventSynchronize(s.done[b]), "cuEventSynchronize");
            s.pool->copy(s.buffer[b], from + off, n);
            check(d.MemcpyHtoDAsync(to_device_ptr(to + off), s.buffer[b], n, st), "cuMemcpyHtoDAsync");
            check(d.EventRecord(s.done[b], st), "cuEventRecord");
        }
        check(d.StreamSynchronize(st), "cuStreamSynchronize");
        if (ctl) ctl->add_done((bytes - 1) % kStageChunk + 1);
        return;
    }
    copy_in_pieces(d, st, bytes, ctl, direct);
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream, jit::detail::CallControl* ctl) {
    const auto& d = api();
    if (bytes == 0) return;
    if (ctl && ctl->tick()) jit::detail::CallControl::throw_cancelled();
    const HostPath path = bytes >= kStageThreshold ? host_path() : HostPath::Direct;
    const CUstream st = as_stream(stream);
    auto* to = static_cast<unsigned char*>(dst);
    const auto* from = static_cast<const unsigned char*>(src);
    auto direct = [&](std::size_t off, std::size_t n) {
        check(d.MemcpyDtoHAsync(to + off, to_device_ptr(from + off), n, st), "cuMemcpyDtoHAsync");
    };
    if (path == HostPath::Register && pageable(d, dst)) {
        Registration reg(d, dst, bytes);
        copy_in_pieces(d, st, bytes, ctl, direct);
        return;
    }
    Staging& s = staging();
    std::unique_lock<std::mutex> lock(s.mutex, std::defer_lock);
    if (path == HostPath::Staged && pageable(d, dst) && lock.try_lock() && staging_ready(s, d)) {
        const std::size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
        auto issue = [&](std::size_t i) {
            const std::size_t off = i * kStageChunk, n = std::min(kStageChunk, bytes - off);
            const int b = static_cast<int>(i % 2);
            check(d.MemcpyDtoHAsync(s.buffer[b], to_device_ptr(from + off), n, st), "cuMemcpyDtoHAsync");
            check(d.EventRecord(s.done[b], st), "cuEventRecord");
        };
        // Chunk i+1 lands in the other buffer while the host drains chunk i; a buffer is refilled
        // only after the host has drained it (the loop drains chunk i before issuing chunk i+2).
        issue(0);
        for (std::size_t i = 0; i < chunks; ++i) {
            if (i > 0) between_pieces(d, st, ctl, kStageChunk);  // waits for chunk i, issued, on a stop
            if (i + 1 < chunks) issue(i + 1);
            const int b = static_cast<int>(i % 2);
            check(d.EventSynchronize(s.done[b]), "cuEventSynchronize");
            const std::size_t off = i * kStageChunk;
            s.pool->copy(to + off, s.buffer[b], std::min(kStageChunk, bytes - off));
        }
        if (ctl) ctl->add_done((bytes - 1) % kStageChunk + 1);
        return;
    }
    // The caller reads `dst` as soon as this returns.
    copy_in_pieces(d, st, bytes, ctl, direct);
}

void copy_device(void* dst, const void* src, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
    check(d.MemcpyDtoDAsync(to_device_ptr(dst), to_device_ptr(src), bytes, as_stream(stream)), "cuMemcpyDtoDAsync");
}

void memset(void* dst, int value, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
    check(d.MemsetD8Async(to_device_ptr(dst), static_cast<unsigned char>(value), bytes, as_stream(stream)),
          "cuMemsetD8Async");
}

void synchronize(void* stream) {
    const auto& d = api();
    if (stream) {
        check(d.StreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
    } else {
        check(d.CtxSynchronize(), "cuCtxSynchronize");
    }
}

bool is_device_pointer(const void* ptr) {
    const auto& d = api();
    if (!ptr) return false;
    const CUdeviceptr p = to_device_ptr(ptr);
    unsigned int memory_type = 0;
    CUresult r = d.PointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r == CUDA_ERROR_INVALID_VALUE) return false;  // memory CUDA does not know: plain host memory
    check(r, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)");
    unsigned int managed = 0;
    check(d.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p),
          "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED)");
    if (managed) return true;                               // kernels of any device may touch managed memory
    if (memory_type != CU_MEMORYTYPE_DEVICE) return false;  // pinned or registered host memory
    int ordinal = -1;
    check(d.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
          "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)");
    return ordinal == current_device();
}

int pointer_device(const void* ptr) {
    const auto& d = api();
    if (!ptr) return -1;
    const CUdeviceptr p = to_device_ptr(ptr);
    unsigned int memory_type = 0;
    CUresult r = d.PointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r == CUDA_ERROR_INVALID_VALUE) return -1;
    check(r, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)");
    unsigned int managed = 0;
    check(d.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p),
          "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED)");
    if (managed || memory_type != CU_MEMORYTYPE_DEVICE) return -1;
    int ordinal = -1;
    check(d.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
          "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)");
    return ordinal;
}

void copy_peer(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes) {
    if (bytes == 0) return;
    if (dst_device == src_device) {
        DeviceScope scope(dst_device);
        copy_device(dst, src, bytes);
        synchronize();
        return;
    }
    CUcontext src_ctx = nullptr, dst_ctx = nullptr;
    const detail::Driver* d = nullptr;
    {
        DeviceScope scope(src_device);
        d = &api();
        src_ctx = detail::primary_context();
        synchronize();  // work queued on the source (its legacy stream) is done before the copy reads
    }
    DeviceScope scope(dst_device);
    api();
    dst_ctx = detail::primary_context();
    if (d->MemcpyPeerAsync) {
        check(d->MemcpyPeerAsync(to_device_ptr(dst), dst_ctx, to_device_ptr(src), src_ctx, bytes, nullptr),
              "cuMemcpyPeerAsync",
              fmt::format("copying {} from CUDA device {} to device {}", human_bytes(bytes), src_device, dst_device));
        synchronize();
        return;
    }
    std::vector<unsigned char> host(bytes);  // no peer copy in this driver: through the host
    {
        DeviceScope from(src_device);
        copy_to_host(host.data(), src, bytes);
    }
    copy_to_device(dst, host.data(), bytes);
}

namespace {
// A full device as an OutOfMemoryError: the bytes asked and the device's free memory, as for
// host memory (SECURITY.md).
[[noreturn]] void throw_device_full(std::size_t bytes, std::string_view what_for) {
    std::size_t free = 0, total = 0;
    const auto* d = detail::api_noexcept();
    if (d && d->MemGetInfo && d->MemGetInfo(&free, &total) != CUDA_SUCCESS) free = 0;
    const DeviceInfo& info = device_info();
    throw OutOfMemoryError(bytes, free,
                           fmt::format("{} on device {} ({}, {} in all)", what_for, current_device(), info.name,
                                       human_bytes(info.total_memory)));
}

// An array's device memory. The device being full is an OutOfMemoryError; any other failure
// stays a CudaError. (cuda::alloc itself keeps reporting CUDA_ERROR_OUT_OF_MEMORY as a CudaError.)
std::shared_ptr<Storage> new_device_storage(std::size_t bytes) {
    try {
        return std::make_shared<DeviceStorage>(bytes);
    } catch (const CudaError& e) {
        if (e.result() != CUDA_ERROR_OUT_OF_MEMORY) throw;
        throw_device_full(bytes, "an array");
    }
}
}  // namespace

void* alloc_for(std::size_t bytes, std::string_view what_for) {
    try {
        return alloc(bytes);
    } catch (const CudaError& e) {
        if (e.result() != CUDA_ERROR_OUT_OF_MEMORY) throw;
        throw_device_full(bytes, what_for);
    }
}

std::shared_ptr<Storage> make_storage(std::size_t bytes) { return new_device_storage(bytes); }

std::shared_ptr<Storage> make_storage_for_default_stream(std::size_t bytes) {
    api();
    if (void* kept = array_pool() ? cache_take(bytes) : nullptr) return std::make_shared<DeviceStorage>(kept, bytes);
    return new_device_storage(bytes);
}

std::size_t kept_device_bytes() {
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    return c.bytes;
}

void release_kept_device_memory() { cache_flush(); }

}  // namespace jit::cuda

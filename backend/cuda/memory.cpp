// jitexpr — device memory of device 0's primary context: allocation, copies, Array storage.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

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
CUmemoryPool array_pool() {
    static CUmemoryPool pool = []() -> CUmemoryPool {
        const auto& d = api();
        if (!d.MemPoolCreate) return nullptr;
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        CUmemoryPool p = nullptr;
        if (d.MemPoolCreate(&p, &props) != CUDA_SUCCESS) return nullptr;
        cuuint64_t keep = ~cuuint64_t{0};
        d.MemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
        return p;
    }();
    return pool;
}

void* pool_alloc(std::size_t bytes) {
    const auto& d = api();
    CUmemoryPool pool = array_pool();
    if (!pool) return alloc(bytes);
    CUdeviceptr p = 0;
    CUresult r = d.MemAllocFromPoolAsync(&p, bytes, pool, nullptr);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        // Give cached blocks back to the device and try once more.
        check(d.CtxSynchronize(), "cuCtxSynchronize");
        d.MemPoolTrimTo(pool, 0);
        r = d.MemAllocFromPoolAsync(&p, bytes, pool, nullptr);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        const DeviceInfo& info = device_info(0);
        check(r, "cuMemAllocFromPoolAsync",
              fmt::format("cannot allocate {} on device 0 ({}, {} in all)", human_bytes(bytes), info.name,
                          human_bytes(info.total_memory)));
    }
    check(r, "cuMemAllocFromPoolAsync");
    return reinterpret_cast<void*>(p);
}

void pool_free(void* ptr) noexcept {
    if (!ptr) return;
    const auto* d = detail::api_noexcept();
    if (!d) return;
    if (!array_pool()) {
        detail::report(d->MemFree(to_device_ptr(ptr)), "cuMemFree");
        return;
    }
    detail::report(d->MemFreeAsync(to_device_ptr(ptr), nullptr), "cuMemFreeAsync");
}

// Device memory owned by arrays; freed when the last array lets go.
class DeviceStorage final : public Storage {
public:
    // api() first: without a driver even a 0-byte array is a NoDeviceError.
    explicit DeviceStorage(std::size_t bytes) : ptr_((api(), bytes ? pool_alloc(bytes) : nullptr)), bytes_(bytes) {}
    ~DeviceStorage() override { pool_free(ptr_); }
    DeviceStorage(const DeviceStorage&) = delete;
    DeviceStorage& operator=(const DeviceStorage&) = delete;

    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return Backend::Cuda; }

private:
    void* ptr_;
    std::size_t bytes_;
};

}  // namespace

void* alloc(std::size_t bytes) {
    const auto& d = api();
    if (bytes == 0) return nullptr;
    CUdeviceptr p = 0;
    CUresult r = d.MemAlloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        const DeviceInfo& info = device_info(0);
        check(r, "cuMemAlloc",
              fmt::format("cannot allocate {} on device 0 ({}, {} in all)",
                          human_bytes(bytes), info.name, human_bytes(info.total_memory)));
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
// pinned buffers of its own, one piece at a time, and reaches about half of what the bus can do.
// Large copies of pageable memory go through two pinned staging buffers of our own instead:
// while the device copies one buffer, the host fills (or drains) the other. One transfer uses
// the buffers at a time; a thread that finds them busy copies directly. Opt-in for now
// (JITEXPR_STAGING=1): it has not yet run on a GPU; it becomes the default once the GPU tests
// and BM_HostToDevice/BM_DeviceToHost have confirmed it.
constexpr std::size_t kStageChunk = std::size_t{8} << 20;     // bytes per staging buffer
constexpr std::size_t kStageThreshold = std::size_t{4} << 20;  // smaller copies go direct

struct Staging {
    std::mutex mutex;
    bool tried = false;
    void* buffer[2] = {nullptr, nullptr};
    CUevent done[2] = {nullptr, nullptr};  // recorded after the copy that last used each buffer
};

Staging& staging() {
    static Staging* s = new Staging;  // never destroyed: the driver may be gone at exit
    return *s;
}

// The buffers, made on first use; false when staging is off or unavailable (the copy goes direct).
bool staging_ready(Staging& s, const detail::Driver& d) {
    if (s.tried) return s.buffer[0] != nullptr;
    s.tried = true;
    const char* env = std::getenv("JITEXPR_STAGING");
    if (!d.MemHostAlloc || !env || std::string_view(env) != "1") return false;
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
    return true;
}

// Plain pageable host memory (not pinned, registered or managed): CUDA does not know the address.
bool pageable(const detail::Driver& d, const void* host) {
    unsigned int type = 0;
    return d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, to_device_ptr(host)) == CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
    Staging& s = staging();
    std::unique_lock<std::mutex> lock(s.mutex, std::defer_lock);
    if (bytes >= kStageThreshold && pageable(d, src) && lock.try_lock() && staging_ready(s, d)) {
        const auto* from = static_cast<const unsigned char*>(src);
        for (std::size_t off = 0, i = 0; off < bytes; off += kStageChunk, ++i) {
            const std::size_t n = std::min(kStageChunk, bytes - off);
            const int b = static_cast<int>(i % 2);
            // The copy that last read this buffer (two chunks ago) must be done before refilling it.
            if (i >= 2) check(d.EventSynchronize(s.done[b]), "cuEventSynchronize");
            std::memcpy(s.buffer[b], from + off, n);
            check(d.MemcpyHtoDAsync(to_device_ptr(static_cast<unsigned char*>(dst) + off), s.buffer[b], n,
                                    as_stream(stream)),
                  "cuMemcpyHtoDAsync");
            check(d.EventRecord(s.done[b], as_stream(stream)), "cuEventRecord");
        }
        check(d.StreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
        return;
    }
    check(d.MemcpyHtoDAsync(to_device_ptr(dst), src, bytes, as_stream(stream)), "cuMemcpyHtoDAsync");
    // Complete before returning: the host buffer may be pinned (then the copy reads it later) and
    // callers free or reuse it at once.
    check(d.StreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
    Staging& s = staging();
    std::unique_lock<std::mutex> lock(s.mutex, std::defer_lock);
    if (bytes >= kStageThreshold && pageable(d, dst) && lock.try_lock() && staging_ready(s, d)) {
        auto* to = static_cast<unsigned char*>(dst);
        const std::size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
        auto issue = [&](std::size_t i) {
            const std::size_t off = i * kStageChunk, n = std::min(kStageChunk, bytes - off);
            const int b = static_cast<int>(i % 2);
            check(d.MemcpyDtoHAsync(s.buffer[b], to_device_ptr(static_cast<const unsigned char*>(src) + off), n,
                                    as_stream(stream)),
                  "cuMemcpyDtoHAsync");
            check(d.EventRecord(s.done[b], as_stream(stream)), "cuEventRecord");
        };
        // Chunk i+1 lands in the other buffer while the host drains chunk i; a buffer is refilled
        // only after the host has drained it (the loop drains chunk i before issuing chunk i+2).
        issue(0);
        for (std::size_t i = 0; i < chunks; ++i) {
            if (i + 1 < chunks) issue(i + 1);
            const int b = static_cast<int>(i % 2);
            check(d.EventSynchronize(s.done[b]), "cuEventSynchronize");
            const std::size_t off = i * kStageChunk;
            std::memcpy(to + off, s.buffer[b], std::min(kStageChunk, bytes - off));
        }
        return;
    }
    check(d.MemcpyDtoHAsync(dst, to_device_ptr(src), bytes, as_stream(stream)), "cuMemcpyDtoHAsync");
    // The caller reads `dst` as soon as this returns.
    check(d.StreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
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
    if (managed) return true;  // kernels of any device may touch managed memory
    if (memory_type != CU_MEMORYTYPE_DEVICE) return false;  // pinned or registered host memory
    int ordinal = -1;
    check(d.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
          "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)");
    return ordinal == 0;
}

std::shared_ptr<Storage> make_storage(std::size_t bytes) { return std::make_shared<DeviceStorage>(bytes); }

}  // namespace jit::cuda

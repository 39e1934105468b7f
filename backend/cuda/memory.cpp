// jitexpr — device memory of device 0's primary context: allocation, copies, Array storage.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

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

void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
    check(d.MemcpyHtoDAsync(to_device_ptr(dst), src, bytes, as_stream(stream)), "cuMemcpyHtoDAsync");
    // Complete before returning: the host buffer may be pinned (then the copy reads it later) and
    // callers free or reuse it at once.
    check(d.StreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream) {
    const auto& d = api();
    if (bytes == 0) return;
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

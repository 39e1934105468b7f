// jitexpr — what core asks of the memory of a backend, and what the layers above core use of
// it that the public headers do not show.
//
// jit::Array (include/jit/array.hpp, implemented in core/array.cpp) knows host memory itself.
// Memory of another backend is reached through a Device: functions its backend registers
// (backend/cuda: cuda::register_device). Array::empty/zeros/from_host/to/contiguous and
// copy_to_host call them; nothing in core calls a compiler or a runtime.
#pragma once

#include <jit/array.hpp>
#include <jit/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace jit::core {

// A copy between two arrays of one shape and element size, as core hands it to a device: axes
// of extent 1 dropped and axes that both arrays walk contiguously merged, so `ndim` is
// usually 1 or 2. Strides in elements. `ndim` is 0 for a single element.
struct CopyLayout {
    int ndim = 0;
    std::int64_t shape[kMaxDims] = {};
    std::int64_t dst_stride[kMaxDims] = {};
    std::int64_t src_stride[kMaxDims] = {};
    std::size_t item = 0;  // bytes per element
    std::int64_t size() const;
    // Both arrays dense and in the same order: one block copy of size() * item bytes.
    bool dense() const { return ndim == 0 || (ndim == 1 && dst_stride[0] == 1 && src_stride[0] == 1); }
};
// The layout of a copy from `src` into `dst` (same shape, same itemsize).
CopyLayout copy_layout(const Array& dst, const Array& src);

// The memory of one backend, over its devices (ordinals 0 to count()-1; the host has one). Every
// function takes the ordinal of the device whose memory it touches; Storage::device() tells the
// ordinal of an array's memory.
struct Device {
    // Fresh memory of `bytes` bytes on device `ordinal`.
    std::shared_ptr<Storage> (*allocate)(int ordinal, std::size_t bytes) = nullptr;
    // Sets `bytes` bytes at `dst` to zero (queued on the device's default stream).
    void (*zero)(int ordinal, void* dst, std::size_t bytes) = nullptr;
    // Host to device and back; complete when they return.
    void (*from_host)(int ordinal, void* dst, const void* src, std::size_t bytes) = nullptr;
    void (*to_host)(int ordinal, void* dst, const void* src, std::size_t bytes) = nullptr;
    // Element-wise copy within one device's memory, queued on `stream` (null: the default one).
    void (*copy)(int ordinal, void* dst, const void* src, const CopyLayout& layout, void* stream) = nullptr;
    // A dense copy between two devices of this backend; complete when it returns.
    void (*peer)(int dst_ordinal, void* dst, int src_ordinal, const void* src, std::size_t bytes) = nullptr;
    // How many devices there are (throws NoDeviceError when none is usable).
    int (*count)() = nullptr;
};

// Throws ArgumentError unless `ordinal` names a device of backend `b` (the host has device 0 only).
void check_ordinal(Backend b, int ordinal);

// Registers the device of backend `b` (not Cpu, which is core's own host memory). The device
// must live as long as the process. Thread-safe.
void register_device(Backend b, const Device* device);
// The device of `b` (host memory for Cpu). Throws NoDeviceError when no backend registered one.
const Device& device(Backend b);
// The host device: 64-byte aligned memory, memcpy and strided loops.
const Device& host_device();
std::shared_ptr<Storage> host_storage(std::size_t bytes);
// Bytes of host memory this process could still get: the system's available memory, or less
// under an address-space limit (ulimit -v). For the figures of an OutOfMemoryError.
std::uint64_t host_memory_available();

// `count` elements of T in host memory, not initialised, for a kernel's own work (an order
// statistic's copy of a row, partial sums). OutOfMemoryError for `what_for`, with the bytes
// asked and available, when they cannot be had.
template <class T>
std::unique_ptr<T[]> host_buffer(std::size_t count, std::string_view what_for) {
    try {
        return std::unique_ptr<T[]>(new T[std::max<std::size_t>(count, 1)]);
    } catch (const std::bad_alloc&) {
        const std::uint64_t bytes = count > UINT64_MAX / sizeof(T) ? UINT64_MAX : std::uint64_t{count} * sizeof(T);
        throw OutOfMemoryError(bytes, host_memory_available(), std::string(what_for));
    }
}

// What Backend::Auto means: set by the layer that owns the default runtime. Without one, Auto
// is the CPU.
void set_default_backend(Backend (*resolve)());
Backend resolve(Backend b);

// Copies `src` into `dst` (same dtype and shape, either on any layout) on the device of their
// backend, queued on `stream`. Throws ArgumentError for arrays that differ (in dtype, shape,
// backend or device ordinal).
void copy(const Array& dst, const Array& src, void* stream = nullptr);

// A C-contiguous array of that dtype and shape with no storage: a prototype for with_storage.
// `itemsize`: an S or U array's width (0: the dtype's own).
Array prototype(DType dtype, const Shape& shape, Backend backend, std::size_t itemsize = 0);
// The device ordinal an array of `b` gets when none is named (Array::kDefaultDevice): the
// backend's current device of the calling thread (CUDA: the device a DeviceScope chose, else 0).
// Set by the backend that registers the device; 0 otherwise.
void set_current_device(Backend b, int (*current)());
int resolve_ordinal(Backend b, int ordinal);
// `proto` (sharing its dimensions, so nothing is allocated for them) on `storage`.
Array with_storage(const Array& proto, std::shared_ptr<Storage> storage);

// A view of a's memory whose element 0 is `offset` elements past a's element 0, with the
// given shape and strides (in elements; negative and zero strides allowed): a slice that a
// program takes (ir::InputDecl::view). ArgumentError when an element of it would fall outside
// a's elements.
Array restrided(const Array& a, std::int64_t offset, Shape shape, Strides strides);

// The same array (memory, shape, strides, read-only flag) seen as dtype `t` of the same
// itemsize: a datetime64/timedelta64 array as the int64 counts a program computes with, and
// back (ir::InputDecl::temporal, ir::OutputDecl::temporal). ArgumentError for another itemsize.
Array relabelled(const Array& a, DType t);
// The rows of `parts` (Arrow string columns, each in C order, on any backend) one after another
// in one new host column of `shape` (as many elements as the parts together): the bytes
// concatenated and the offsets rebased from 0, int64 where any part's are (int32 otherwise; an
// ArgumentError when the bytes pass int32's range).
Array concat_utf8(const std::vector<Array>& parts, const Shape& shape);
// Array::view_utf8 without its check of the offsets, for a caller that has checked them already
// (the Arrow import checks them once, with the UTF-8 of the bytes): never for unchecked input.
Array view_utf8_checked(const void* offsets, std::size_t offset_width, const void* chars, std::size_t chars_bytes,
                        std::int64_t rows, Backend backend, int device, std::shared_ptr<void> keep_alive);

}  // namespace jit::core

// jitexpr — arrays: an element type, a shape, strides and storage on one backend.
#pragma once

#include <jit/core/dtype.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace jit {

enum class Backend : std::uint8_t { Auto, Cpu, Cuda };
std::string_view backend_name(Backend b);

inline constexpr int kMaxDims = 8;

using Shape = std::vector<std::int64_t>;    // extents, outermost first
using Strides = std::vector<std::int64_t>;  // in elements (not bytes), may be 0 or negative

std::int64_t shape_size(const Shape& s);
Strides contiguous_strides(const Shape& s);   // C order
std::string shape_to_string(const Shape& s);  // "(3, 4)", "()" for 0-d

// Memory owned (or borrowed) by arrays. Arrays share it; views keep it alive.
class Storage {
public:
    virtual ~Storage() = default;
    virtual void* data() const = 0;
    virtual std::size_t bytes() const = 0;
    virtual Backend backend() const = 0;
    // The ordinal of the device of backend() that holds the memory (0 for host memory).
    virtual int device() const { return 0; }
};

// An N-dimensional array (0 to 8 dims). Cheap to copy: copies share storage.
// On Backend::Cuda the data lives in device memory of the primary context of one device, its
// ordinal device(); host arrays are on device 0 of Backend::Cpu. Every function that makes an
// array takes a device ordinal; kDefaultDevice means the backend's current device on the calling
// thread (CUDA: the device of the innermost cuda device scope, else 0).
class Array {
public:
    static constexpr int kDefaultDevice = -1;

    Array() = default;

    // Uninitialised array, C-contiguous. Backend::Auto means the default runtime's backend.
    // A device ordinal that does not exist is an ArgumentError.
    static Array empty(DType dtype, Shape shape, Backend backend = Backend::Auto, int device = kDefaultDevice);
    static Array zeros(DType dtype, Shape shape, Backend backend = Backend::Auto, int device = kDefaultDevice);

    // Copies host data (C order) into a new array on `backend`.
    static Array from_host(const void* data, DType dtype, Shape shape, Backend backend = Backend::Auto,
                           int device = kDefaultDevice);
    // A shape that holds another number of elements than `values` is an ArgumentError.
    template <class T>
    static Array from(std::span<const T> values, Shape shape = {}, Backend backend = Backend::Auto,
                      int device = kDefaultDevice) {
        if (shape.empty() && values.size() != 1) shape = {static_cast<std::int64_t>(values.size())};
        check_value_count(values.size(), shape);
        return from_host(values.data(), dtype_of_v<T>, std::move(shape), backend, device);
    }
    template <class T>
    static Array from(const std::vector<T>& values, Shape shape = {}, Backend backend = Backend::Auto,
                      int device = kDefaultDevice) {
        if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
        check_value_count(values.size(), shape);
        return from_host(values.data(), dtype_of_v<T>, std::move(shape), backend, device);
    }

    // Fixed-width string arrays (DType::Bytes, DType::Str), C-contiguous, of `itemsize` bytes per
    // element (NumPy's S5 is Bytes with itemsize 5, U3 is Str with itemsize 12). An itemsize of
    // 0, or one that is no multiple of 4 for Str, is an ArgumentError. Uninitialised.
    static Array empty(DType dtype, std::size_t itemsize, Shape shape, Backend backend = Backend::Auto,
                       int device = kDefaultDevice);

    // A view over memory that jitexpr does not own (a cudaMalloc pointer, a host buffer).
    // `keep_alive` (may be null) is held as long as any array refers to the memory.
    static Array view(void* data, DType dtype, Shape shape, Strides strides, Backend backend,
                      std::shared_ptr<void> keep_alive = nullptr);
    // The same on device `device` of `backend` (memory of CUDA device 1, for example). The
    // ordinal is not checked against the machine: a view costs no driver call.
    static Array view(void* data, DType dtype, Shape shape, Strides strides, Backend backend, int device,
                      std::shared_ptr<void> keep_alive = nullptr);
    // Views of const memory (a const pointer picks these): read-only arrays (read_only()), which
    // jitexpr reads but never writes: an assignment to a name bound to one, an eval that would
    // write into it and run_into's `out` are refused with a ReadOnlyError before anything runs.
    static Array view(const void* data, DType dtype, Shape shape, Strides strides, Backend backend,
                      std::shared_ptr<void> keep_alive = nullptr);
    static Array view(const void* data, DType dtype, Shape shape, Strides strides, Backend backend, int device,
                      std::shared_ptr<void> keep_alive = nullptr);

    // Views of fixed-width string memory (DType::Bytes, DType::Str; strides in elements of
    // `itemsize` bytes), writable and read-only as the views above.
    static Array view(void* data, DType dtype, std::size_t itemsize, Shape shape, Strides strides, Backend backend,
                      int device = kDefaultDevice, std::shared_ptr<void> keep_alive = nullptr);
    static Array view(const void* data, DType dtype, std::size_t itemsize, Shape shape, Strides strides,
                      Backend backend, int device = kDefaultDevice, std::shared_ptr<void> keep_alive = nullptr);
    // A read-only view of a variable-length UTF-8 column in Arrow's layout (DType::Utf8): `rows`
    // strings, row i the bytes [offsets[i], offsets[i + 1]) of `chars`; `offsets` holds rows + 1
    // integers of `offset_width` bytes (4: Arrow's string, 8: large_string), counted from `chars`.
    // The array's elements are the offsets (itemsize() is their width, data() points at
    // offsets[0]; a view of it, a slice or a broadcast, reads element k's string from the offsets
    // k and k + 1); chars() is the data buffer. The offsets must not decrease and must lie in
    // [0, chars_bytes] (checked: an ArgumentError names the first bad row); the bytes are not
    // checked here (from_arrow checks that they are UTF-8).
    static Array view_utf8(const void* offsets, std::size_t offset_width, const void* chars, std::size_t chars_bytes,
                           std::int64_t rows, Backend backend, int device = kDefaultDevice,
                           std::shared_ptr<void> keep_alive = nullptr);

    // This array's layout (dtype, item size, shape, strides, backend, device, read-only flag)
    // over other memory: element (0, ..., 0) at `data`, `keep_alive` held as Array::view holds
    // it. The dimensions are shared with this array, so nothing is allocated for them: a caller
    // that wraps buffers of one layout call after call keeps one array of that layout and
    // re-points it. Nothing of this array's memory is read or kept. Not for Utf8 arrays (their
    // layout is two buffers: view_utf8).
    Array with_data(void* data, std::shared_ptr<void> keep_alive = nullptr) const;

    DType dtype() const { return dtype_; }
    // Bytes per element: the dtype's own, an S or U array's width, a Utf8 array's offset width.
    std::size_t itemsize() const { return itemsize_; }
    // A Utf8 array's data buffer (on the array's backend), and its size; null and 0 otherwise.
    const void* chars() const { return chars_ ? chars_->data() : nullptr; }
    std::size_t chars_bytes() const { return chars_ ? chars_->bytes() : 0; }
    const std::shared_ptr<Storage>& chars_storage() const { return chars_; }
    const Shape& shape() const { return dims_ ? dims_->shape : no_dims().shape; }
    const Strides& strides() const { return dims_ ? dims_->strides : no_dims().strides; }
    int ndim() const { return static_cast<int>(shape().size()); }
    std::int64_t size() const { return shape_size(shape()); }
    std::size_t nbytes() const { return static_cast<std::size_t>(size()) * itemsize_; }
    Backend backend() const { return backend_; }
    // The ordinal of the device holding the data (0 on the CPU and for an undefined array).
    int device() const { return storage_ ? storage_->device() : 0; }
    bool defined() const { return storage_ != nullptr; }
    bool is_contiguous() const;  // C order, no gaps
    // Whether jitexpr may write into the memory: false for views of const memory, for arrays of
    // as_read_only(), and for every view of those (slice, transpose, reshape, broadcast_to keep
    // it); copies (to(), contiguous() when it copies) are new memory and writable.
    bool read_only() const { return read_only_; }
    // The same array (same memory, no copy) marked read-only: for memory the caller lends to be
    // read only (an immutable buffer, another library's read-only tensor).
    Array as_read_only() const {
        Array a = *this;
        a.read_only_ = true;
        return a;
    }

    // Address of element (0, ..., 0): host or device pointer depending on backend().
    void* data() const;
    std::int64_t offset() const { return offset_; }  // in elements, from storage start
    const std::shared_ptr<Storage>& storage() const { return storage_; }

    // Strided views (no copy).
    Array transpose() const;           // reverse the axes
    Array reshape(Shape shape) const;  // contiguous arrays only
    Array slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const;
    Array broadcast_to(const Shape& shape) const;

    // Copies to host memory in C order (synchronises with the device if needed).
    void copy_to_host(void* dst) const;
    // The same, each element converted to `to` as NumPy's astype does (the backends' casts:
    // float to integer truncates toward zero, NaN gives 0 and out-of-range values saturate;
    // complex to real keeps the real part). `dst` holds size() elements of `to`.
    void copy_to_host_as(void* dst, DType to) const;
    // The elements in C order as T, converted from the array's dtype when it is another one
    // (to_vector<double>() of a float32 array). Read bool arrays as std::uint8_t
    // (std::vector<bool> has no contiguous storage).
    template <class T>
    std::vector<T> to_vector() const {
        static_assert(!std::is_same_v<T, bool>, "read bool arrays with to_vector<std::uint8_t>()");
        std::vector<T> out(static_cast<std::size_t>(size()));
        copy_to_host_as(out.data(), dtype_of_v<T>);
        return out;
    }
    // The one element of an array of size 1 (a 0-d result: eval("sum(a)", ...).item<double>()),
    // converted as to_vector does. ArgumentError for any other size or an undefined array.
    template <class T>
    T item() const {
        check_item();
        if constexpr (std::is_same_v<T, bool>) {
            std::uint8_t b = 0;
            copy_to_host_as(&b, DType::Bool);
            return b != 0;
        } else {
            T v{};
            copy_to_host_as(&v, dtype_of_v<T>);
            return v;
        }
    }
    // A C-contiguous copy on `backend` (a copy even when already there), on device `device` of
    // it: between two CUDA devices a peer copy. Copies happen only here, never behind an eval.
    Array to(Backend backend, int device = kDefaultDevice) const;
    Array contiguous() const;  // this array if already contiguous, else a copy

    std::string describe() const;  // "float32 (3, 4) on cpu", "... on cuda", "... on cuda:1"
    // "cpu", "cuda" for CUDA device 0 and "cuda:N" for device N.
    std::string place() const;

private:
    void check_item() const;
    static void check_value_count(std::size_t count, const Shape& shape);
    // Shape and strides, shared by copies and never changed once made: copying an array (as
    // every eval does with its arguments) allocates nothing.
    struct Dims {
        Shape shape;
        Strides strides;
    };
    static const Dims& no_dims() {
        static const Dims none;
        return none;
    }
    void set_dims(Shape shape, Strides strides) {
        dims_ = std::make_shared<const Dims>(Dims{std::move(shape), std::move(strides)});
    }
    DType dtype_ = DType::Float32;
    std::size_t itemsize_ = 4;
    std::shared_ptr<const Dims> dims_;
    std::int64_t offset_ = 0;
    Backend backend_ = Backend::Cpu;
    bool read_only_ = false;
    std::shared_ptr<Storage> storage_;
    std::shared_ptr<Storage> chars_;  // Utf8: the data buffer the offsets (storage_) index
    friend struct ArrayAccess;
};

}  // namespace jit

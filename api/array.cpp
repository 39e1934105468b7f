#include <jit/array.hpp>
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include "api/internal.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/semantics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace jit {

namespace {

// Host memory, 64-byte aligned so that vector loads are aligned on every backend.
class HostStorage final : public Storage {
public:
    explicit HostStorage(std::size_t bytes) : bytes_(bytes) {
        if (bytes_ > 0) {
            const std::size_t rounded = (bytes_ + 63) / 64 * 64;
            ptr_ = std::aligned_alloc(64, rounded);
            if (!ptr_) throw ArgumentError(fmt::format("out of host memory allocating {} bytes", bytes_));
        }
    }
    ~HostStorage() override { std::free(ptr_); }
    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return Backend::Cpu; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_;
};

// Memory someone else owns.
class BorrowedStorage final : public Storage {
public:
    BorrowedStorage(void* p, std::size_t bytes, Backend b, std::shared_ptr<void> keep)
        : ptr_(p), bytes_(bytes), backend_(b), keep_(std::move(keep)) {}
    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return backend_; }

private:
    void* ptr_;
    std::size_t bytes_;
    Backend backend_;
    std::shared_ptr<void> keep_;
};

void check_shape(const Shape& shape) {
    if (static_cast<int>(shape.size()) > kMaxDims)
        throw ArgumentError(fmt::format("arrays have at most {} dimensions (got {})", kMaxDims, shape.size()));
    std::int64_t n = 1;
    for (auto e : shape) {
        if (e < 0) throw ArgumentError(fmt::format("negative extent in shape {}", shape_to_string(shape)));
        // Every extent but zeros must multiply without overflow (strides are products too).
        if (e > 0 && __builtin_mul_overflow(n, e, &n))
            throw ArgumentError(fmt::format("shape {} is too large", shape_to_string(shape)));
    }
}

}  // namespace

namespace detail {
Backend resolve(Backend b) { return b == Backend::Auto ? Runtime::default_runtime().backend() : b; }

std::shared_ptr<Storage> allocate(std::size_t bytes, Backend b) {
    if (b == Backend::Cuda) return cuda::make_storage(bytes);
    return std::make_shared<HostStorage>(bytes);
}
}  // namespace detail

struct ArrayAccess {
    static void set_storage(Array& a, std::shared_ptr<Storage> st) { a.storage_ = std::move(st); }
    static Array make(DType t, Shape shape, Strides strides, std::int64_t offset, Backend b, std::shared_ptr<Storage> st) {
        Array a;
        a.dtype_ = t;
        a.set_dims(std::move(shape), std::move(strides));
        a.offset_ = offset;
        a.backend_ = b;
        a.storage_ = std::move(st);
        return a;
    }
};

namespace {
// A C-contiguous array of a checked shape on storage from `allocate(bytes)`.
template <class Allocate>
Array contiguous_on(DType dtype, Shape shape, Backend backend, Allocate&& allocate) {
    const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * itemsize(dtype);
    Strides strides = contiguous_strides(shape);
    return ArrayAccess::make(dtype, std::move(shape), std::move(strides), 0, backend, allocate(bytes));
}
}  // namespace

Array Array::empty(DType dtype, Shape shape, Backend backend) {
    check_shape(shape);
    backend = detail::resolve(backend);
    return contiguous_on(dtype, std::move(shape), backend, [backend](std::size_t bytes) { return detail::allocate(bytes, backend); });
}

namespace detail {
Array empty_for_default_stream(DType dtype, const Shape& shape, Backend backend) {
    if (backend != Backend::Cuda) return Array::empty(dtype, shape, backend);
    check_shape(shape);
    return contiguous_on(dtype, shape, backend, cuda::make_storage_for_default_stream);
}

Array prototype(DType dtype, const Shape& shape, Backend backend) {
    check_shape(shape);
    return ArrayAccess::make(dtype, shape, contiguous_strides(shape), 0, resolve(backend), nullptr);
}

Array empty_like(const Array& proto, bool default_stream) {
    Array a = proto;
    const std::size_t bytes = proto.nbytes();
    ArrayAccess::set_storage(a, default_stream && proto.backend() == Backend::Cuda ? cuda::make_storage_for_default_stream(bytes)
                                                                                 : allocate(bytes, proto.backend()));
    return a;
}
}  // namespace detail

Array Array::zeros(DType dtype, Shape shape, Backend backend) {
    Array a = empty(dtype, std::move(shape), backend);
    if (a.nbytes() == 0) return a;
    if (a.backend() == Backend::Cuda) {
        cuda::memset(a.data(), 0, a.nbytes());
    } else {
        std::memset(a.data(), 0, a.nbytes());
    }
    return a;
}

Array Array::from_host(const void* data, DType dtype, Shape shape, Backend backend) {
    Array a = empty(dtype, std::move(shape), backend);
    if (a.nbytes() == 0) return a;
    if (a.backend() == Backend::Cuda) {
        cuda::copy_to_device(a.data(), data, a.nbytes());
        cuda::synchronize();
    } else {
        std::memcpy(a.data(), data, a.nbytes());
    }
    return a;
}

Array Array::view(void* data, DType dtype, Shape shape, Strides strides, Backend backend, std::shared_ptr<void> keep_alive) {
    check_shape(shape);
    backend = detail::resolve(backend);
    if (strides.empty() && !shape.empty()) strides = contiguous_strides(shape);
    if (strides.size() != shape.size())
        throw ArgumentError(fmt::format("view: {} strides for {} dimensions", strides.size(), shape.size()));
    // Extent of the memory the view may touch, for the storage's byte count.
    std::int64_t hi = 0;
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (shape[k] > 0 && strides[k] > 0) hi += (shape[k] - 1) * strides[k];
    const std::size_t bytes = shape_size(shape) == 0 ? 0 : static_cast<std::size_t>(hi + 1) * itemsize(dtype);
    auto st = std::make_shared<BorrowedStorage>(data, bytes, backend, std::move(keep_alive));
    return ArrayAccess::make(dtype, std::move(shape), std::move(strides), 0, backend, std::move(st));
}

bool Array::is_contiguous() const {
    std::int64_t expect = 1;
    const Shape& shape = this->shape();
    const Strides& strides = this->strides();
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (shape[k] == 1) continue;
        if (shape[k] == 0) return true;
        if (strides[k] != expect) return false;
        expect *= shape[k];
    }
    return true;
}

void* Array::data() const {
    if (!storage_) return nullptr;
    auto* base = static_cast<char*>(storage_->data());
    if (!base) return nullptr;
    return base + offset_ * static_cast<std::int64_t>(itemsize(dtype_));
}

Array Array::transpose() const {
    Array a = *this;
    a.set_dims(Shape(shape().rbegin(), shape().rend()), Strides(strides().rbegin(), strides().rend()));
    return a;
}

Array Array::reshape(Shape shape) const {
    check_shape(shape);
    if (shape_size(shape) != size())
        throw ArgumentError(fmt::format("cannot reshape {} elements into shape {}", size(), shape_to_string(shape)));
    if (!is_contiguous()) throw ArgumentError("reshape needs a contiguous array; call contiguous() first");
    Array a = *this;
    Strides strides = contiguous_strides(shape);
    a.set_dims(std::move(shape), std::move(strides));
    return a;
}

Array Array::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
    if (axis < 0) axis += ndim();
    if (axis < 0 || axis >= ndim()) throw ArgumentError(fmt::format("slice: axis {} out of range", axis));
    if (step == 0) throw ArgumentError("slice: step must not be zero");
    const std::int64_t n = shape()[static_cast<std::size_t>(axis)];
    auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
        if (v < 0) v += n;
        return std::min(std::max(v, lo), hi);
    };
    std::int64_t count;
    if (step > 0) {
        start = clamp(start, 0, n);
        stop = clamp(stop, 0, n);
        count = stop > start ? (stop - start + step - 1) / step : 0;
    } else {
        start = clamp(start, -1, n - 1);
        stop = clamp(stop, -1, n - 1);
        count = start > stop ? (start - stop - step - 1) / (-step) : 0;
    }
    Array a = *this;
    const std::int64_t s = strides()[static_cast<std::size_t>(axis)];
    if (count > 0) a.offset_ += start * s;
    Shape shape = this->shape();
    Strides strides = this->strides();
    shape[static_cast<std::size_t>(axis)] = count;
    strides[static_cast<std::size_t>(axis)] = s * step;
    a.set_dims(std::move(shape), std::move(strides));
    return a;
}

Array Array::broadcast_to(const Shape& shape) const {
    check_shape(shape);
    const Shape& mine = this->shape();
    if (shape.size() < mine.size()) throw ArgumentError("broadcast_to: fewer dimensions than the array");
    Array a = *this;
    const std::size_t off = shape.size() - mine.size();
    Strides st(shape.size(), 0);
    for (std::size_t k = 0; k < mine.size(); ++k) {
        if (mine[k] == shape[k + off]) st[k + off] = strides()[k];
        else if (mine[k] == 1) st[k + off] = 0;
        else
            throw ArgumentError(fmt::format("cannot broadcast {} to {}", shape_to_string(mine), shape_to_string(shape)));
    }
    a.set_dims(shape, std::move(st));
    return a;
}

void Array::check_item() const {
    if (!defined()) throw ArgumentError("item(): the array is undefined (the program gave no value)");
    if (size() != 1)
        throw ArgumentError(fmt::format("item() needs an array of one element, not {}", describe()));
}

namespace {

// Host element conversions with the backends' semantics (backend/semantics.h): float to
// integer truncates, NaN gives 0, out of range saturates; complex to real keeps the real part.
// 16-bit floats are read as float and written from double with one rounding.
template <class F>
void with_register_type(DType t, F&& f) {
    switch (t) {
        case DType::Bool: return f(bool{});
        case DType::Int8: return f(jx::i8{});
        case DType::Int16: return f(jx::i16{});
        case DType::Int32: return f(jx::i32{});
        case DType::Int64: return f(jx::i64{});
        case DType::UInt8: return f(jx::u8{});
        case DType::UInt16: return f(jx::u16{});
        case DType::UInt32: return f(jx::u32{});
        case DType::UInt64: return f(jx::u64{});
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32: return f(float{});
        case DType::Float64: return f(double{});
        case DType::Complex64: return f(jx::c64{});
        case DType::Complex128: return f(jx::c128{});
    }
}

template <class R>
R load_element(const unsigned char* p, DType t) {
    if (t == DType::Float16 || t == DType::BFloat16) {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return static_cast<R>(t == DType::Float16 ? jx::half_to_float(h) : jx::bf16_to_float(h));
    }
    R v{};
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class R>
void store_element(unsigned char* p, DType t, const R& v) {
    if (t == DType::Float16 || t == DType::BFloat16) {
        const double d = jx::cast<double>(v);
        const std::uint16_t h = t == DType::Float16 ? jx::double_to_half(d) : jx::double_to_bf16(d);
        std::memcpy(p, &h, 2);
        return;
    }
    std::memcpy(p, &v, sizeof v);
}

void convert_elements(const unsigned char* src, DType from, unsigned char* dst, DType to, std::size_t n) {
    with_register_type(from, [&](auto from_tag) {
        using RF = decltype(from_tag);
        with_register_type(to, [&](auto to_tag) {
            using RT = decltype(to_tag);
            for (std::size_t i = 0; i < n; ++i) {
                const RF v = load_element<RF>(src + i * itemsize(from), from);
                if constexpr (std::is_same_v<RT, float> || std::is_same_v<RT, double>) {
                    if (to == DType::Float16 || to == DType::BFloat16) {
                        store_element(dst + i * itemsize(to), to, v);  // rounded once, from the source
                        continue;
                    }
                }
                store_element(dst + i * itemsize(to), to, jx::cast<RT>(v));
            }
        });
    });
}

}  // namespace

void Array::copy_to_host_as(void* dst, DType to) const {
    if (to == dtype_ || (to == DType::UInt8 && dtype_ == DType::Bool)) return copy_to_host(dst);
    const auto n = static_cast<std::size_t>(size());
    if (n == 0) return;
    std::unique_ptr<unsigned char[]> raw(new unsigned char[nbytes()]);
    copy_to_host(raw.get());
    convert_elements(raw.get(), dtype_, static_cast<unsigned char*>(dst), to, n);
}

void Array::copy_to_host(void* dst) const {
    if (size() == 0) return;
    const Array c = contiguous();
    if (c.backend() == Backend::Cuda) {
        cuda::copy_to_host(dst, c.data(), c.nbytes());
        cuda::synchronize();
    } else {
        std::memcpy(dst, c.data(), c.nbytes());
    }
}

Array Array::contiguous() const {
    if (is_contiguous()) return *this;
    return detail::copy_contiguous(*this);
}

Array Array::to(Backend backend) const {
    backend = detail::resolve(backend);
    const Array c = contiguous();
    Array out = empty(dtype_, shape(), backend);
    if (out.nbytes() == 0) return out;
    if (c.backend() == Backend::Cpu && backend == Backend::Cpu) {
        std::memcpy(out.data(), c.data(), c.nbytes());
    } else if (c.backend() == Backend::Cpu) {
        cuda::copy_to_device(out.data(), c.data(), c.nbytes());
        cuda::synchronize();
    } else if (backend == Backend::Cpu) {
        cuda::copy_to_host(out.data(), c.data(), c.nbytes());
        cuda::synchronize();
    } else {
        cuda::copy_device(out.data(), c.data(), c.nbytes());
    }
    return out;
}

std::string Array::describe() const {
    return fmt::format("{} {} on {}", dtype_name(dtype_), shape_to_string(shape()), backend_name(backend_));
}

}  // namespace jit

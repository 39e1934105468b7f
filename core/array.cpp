// jit::Array: dtype, shape, strides and storage. Host memory is core's own; the memory of other
// backends is reached through the device they register (core/device.hpp).
#include <jit/array.hpp>
#include <jit/error.hpp>

#include "core/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace jit {

namespace {

// Memory someone else owns.
class BorrowedStorage final : public Storage {
public:
    BorrowedStorage(void* p, std::size_t bytes, Backend b, int device, std::shared_ptr<void> keep)
        : ptr_(p), bytes_(bytes), backend_(b), device_(device), keep_(std::move(keep)) {}
    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return backend_; }
    int device() const override { return device_; }

private:
    void* ptr_;
    std::size_t bytes_;
    Backend backend_;
    int device_;
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
    // Its bytes must be countable too, for the widest dtype (complex128, 16 bytes): a forged
    // extent (a DLPack shape of 2**62) is refused here, not by an allocation that cannot be.
    if (n > std::numeric_limits<std::int64_t>::max() / 16)
        throw ArgumentError(fmt::format("shape {} is too large: {} elements", shape_to_string(shape), n));
}

}  // namespace

struct ArrayAccess {
    static void set_storage(Array& a, std::shared_ptr<Storage> st) { a.storage_ = std::move(st); }
    static void set_dtype(Array& a, DType t) { a.dtype_ = t; }
    static Array make(DType t, Shape shape, Strides strides, std::int64_t offset, Backend b,
                      std::shared_ptr<Storage> st) {
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

Array Array::empty(DType dtype, Shape shape, Backend backend, int device) {
    check_shape(shape);
    backend = core::resolve(backend);
    const core::Device& dev = core::device(backend);
    device = core::resolve_ordinal(backend, device);
    core::check_ordinal(backend, device);
    return contiguous_on(dtype, std::move(shape), backend,
                         [&dev, device](std::size_t bytes) { return dev.allocate(device, bytes); });
}

namespace core {
Array prototype(DType dtype, const Shape& shape, Backend backend) {
    check_shape(shape);
    return ArrayAccess::make(dtype, shape, contiguous_strides(shape), 0, resolve(backend), nullptr);
}

Array with_storage(const Array& proto, std::shared_ptr<Storage> storage) {
    Array a = proto;
    ArrayAccess::set_storage(a, std::move(storage));
    return a;
}

namespace {
// The lowest and highest element offsets (from element 0) that an array of this shape and
// these strides reaches; {0, -1} when it has no element.
std::pair<std::int64_t, std::int64_t> reach(const Shape& shape, const Strides& strides) {
    std::int64_t lo = 0, hi = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == 0) return {0, -1};
        const std::int64_t span = (shape[k] - 1) * strides[k];
        (span < 0 ? lo : hi) += span;
    }
    return {lo, hi};
}
}  // namespace

Array relabelled(const Array& a, DType t) {
    if (itemsize(t) != itemsize(a.dtype()))
        throw ArgumentError(
            fmt::format("relabelled: {} as {}, another itemsize", dtype_name(a.dtype()), dtype_name(t)));
    Array r = a;
    ArrayAccess::set_dtype(r, t);
    return r;
}

Array restrided(const Array& a, std::int64_t offset, Shape shape, Strides strides) {
    check_shape(shape);
    if (strides.size() != shape.size())
        throw ArgumentError(fmt::format("restrided: {} strides for {} dimensions", strides.size(), shape.size()));
    const auto [lo, hi] = reach(shape, strides);
    const auto [alo, ahi] = reach(a.shape(), a.strides());
    if (lo <= hi && (alo > ahi || offset + lo < alo || offset + hi > ahi))
        throw ArgumentError(fmt::format("a view reaching elements {}..{} falls outside {} (elements {}..{})",
                                        offset + lo, offset + hi, a.describe(), alo, ahi));
    Array v = ArrayAccess::make(a.dtype(), std::move(shape), std::move(strides),
                                lo <= hi ? a.offset() + offset : a.offset(), a.backend(), a.storage());
    return a.read_only() ? v.as_read_only() : v;  // a view of read-only memory stays read-only
}
}  // namespace core

Array Array::zeros(DType dtype, Shape shape, Backend backend, int device) {
    Array a = empty(dtype, std::move(shape), backend, device);
    if (a.nbytes() == 0) return a;
    core::device(a.backend()).zero(a.device(), a.data(), a.nbytes());
    return a;
}

Array Array::from_host(const void* data, DType dtype, Shape shape, Backend backend, int device) {
    Array a = empty(dtype, std::move(shape), backend, device);
    if (a.nbytes() == 0) return a;
    core::device(a.backend()).from_host(a.device(), a.data(), data, a.nbytes());
    return a;
}

Array Array::view(void* data, DType dtype, Shape shape, Strides strides, Backend backend,
                  std::shared_ptr<void> keep_alive) {
    return view(data, dtype, std::move(shape), std::move(strides), backend, kDefaultDevice, std::move(keep_alive));
}

Array Array::view(void* data, DType dtype, Shape shape, Strides strides, Backend backend, int device,
                  std::shared_ptr<void> keep_alive) {
    check_shape(shape);
    backend = core::resolve(backend);
    device = core::resolve_ordinal(backend, device);
    if (device < 0) throw ArgumentError(fmt::format("view: device ordinal {} is negative", device));
    if (backend == Backend::Cpu && device != 0)
        throw ArgumentError(
            fmt::format("view: device {} of the CPU backend: the host is one device, ordinal 0", device));
    if (strides.empty() && !shape.empty()) strides = contiguous_strides(shape);
    if (strides.size() != shape.size())
        throw ArgumentError(fmt::format("view: {} strides for {} dimensions", strides.size(), shape.size()));
    // Extent of the memory the view may touch, for the storage's byte count. Strides whose
    // reach (in bytes, either way) cannot be counted address no memory: refused, not wrapped.
    std::int64_t hi = 0, lo = 0;
    const bool empty = shape_size(shape) == 0;
    for (std::size_t k = 0; k < shape.size() && !empty; ++k) {
        std::int64_t span = 0;
        if (__builtin_mul_overflow(shape[k] - 1, strides[k], &span) ||
            __builtin_add_overflow(span > 0 ? hi : lo, span, span > 0 ? &hi : &lo))
            throw ArgumentError(fmt::format("view: strides {} of shape {} reach past any address",
                                            shape_to_string(strides), shape_to_string(shape)));
    }
    std::int64_t reach = 0;
    const auto item = static_cast<std::int64_t>(itemsize(dtype));
    if (__builtin_mul_overflow(hi, item, &reach) || __builtin_add_overflow(reach, item, &reach) ||
        __builtin_mul_overflow(lo, item, &lo))
        throw ArgumentError(fmt::format("view: strides {} of shape {} reach past any address", shape_to_string(strides),
                                        shape_to_string(shape)));
    const std::size_t bytes = empty ? 0 : static_cast<std::size_t>(reach);
    auto st = std::make_shared<BorrowedStorage>(data, bytes, backend, device, std::move(keep_alive));
    return ArrayAccess::make(dtype, std::move(shape), std::move(strides), 0, backend, std::move(st));
}

Array Array::view(const void* data, DType dtype, Shape shape, Strides strides, Backend backend,
                  std::shared_ptr<void> keep_alive) {
    return view(data, dtype, std::move(shape), std::move(strides), backend, kDefaultDevice, std::move(keep_alive));
}

// Const memory: the same view, marked read-only, so that nothing of jitexpr's writes through it.
Array Array::view(const void* data, DType dtype, Shape shape, Strides strides, Backend backend, int device,
                  std::shared_ptr<void> keep_alive) {
    return view(const_cast<void*>(data), dtype, std::move(shape), std::move(strides), backend, device,
                std::move(keep_alive))
        .as_read_only();
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
            throw ArgumentError(
                fmt::format("cannot broadcast {} to {}", shape_to_string(mine), shape_to_string(shape)));
    }
    a.set_dims(shape, std::move(st));
    return a;
}

void Array::check_item() const {
    if (!defined()) throw ArgumentError("item(): the array is undefined (the program gave no value)");
    if (size() != 1) throw ArgumentError(fmt::format("item() needs an array of one element, not {}", describe()));
}

void Array::copy_to_host(void* dst) const {
    if (size() == 0) return;
    const Array c = contiguous();
    core::device(c.backend()).to_host(c.device(), dst, c.data(), c.nbytes());
}

// A C-contiguous copy through the device's own copy: no program is compiled for it.
Array Array::contiguous() const {
    if (is_contiguous()) return *this;
    Array out = empty(dtype_, shape(), backend_, device());
    core::copy(out, *this);
    return out;
}

Array Array::to(Backend backend, int device) const {
    backend = core::resolve(backend);
    const Array c = contiguous();
    Array out = empty(dtype_, shape(), backend, device);
    if (out.nbytes() == 0) return out;
    if (c.backend() == Backend::Cpu) {
        core::device(backend).from_host(out.device(), out.data(), c.data(), c.nbytes());
    } else if (backend == Backend::Cpu) {
        core::device(c.backend()).to_host(c.device(), out.data(), c.data(), c.nbytes());
    } else if (backend == c.backend() && out.device() == c.device()) {
        core::copy(out, c);
    } else if (backend == c.backend()) {
        core::device(backend).peer(out.device(), out.data(), c.device(), c.data(), c.nbytes());
    } else {
        throw ArgumentError(fmt::format("cannot copy {} to {} directly", c.describe(), backend_name(backend)));
    }
    return out;
}

std::string Array::place() const {
    if (backend_ == Backend::Cpu || device() == 0) return std::string(backend_name(backend_));
    return fmt::format("{}:{}", backend_name(backend_), device());
}

std::string Array::describe() const {
    return fmt::format("{} {} on {}", dtype_name(dtype_), shape_to_string(shape()), place());
}

}  // namespace jit

// jit::Array: dtype, shape, strides and storage. Host memory is core's own; the memory of other
// backends is reached through the device they register (core/device.hpp).
#include <jit/array.hpp>
#include <jit/error.hpp>

#include "core/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

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

// The itemsize of a fixed-width string array, checked; `what` names the caller.
std::size_t string_itemsize(DType dtype, std::size_t itemsize, const char* what) {
    if (dtype != DType::Bytes && dtype != DType::Str)
        throw ArgumentError(
            fmt::format("{}: an itemsize is given only for the fixed-width string dtypes (bytes, "
                        "str), not {}",
                        what, dtype_name(dtype)));
    if (itemsize == 0)
        throw ArgumentError(
            fmt::format("{}: a {} array with itemsize 0 ({} of no width) holds no string; jitexpr "
                        "takes widths of 1 and more",
                        what, dtype_name(dtype), dtype == DType::Bytes ? "S0" : "U0"));
    if (dtype == DType::Str && itemsize % 4 != 0)
        throw ArgumentError(
            fmt::format("{}: a str (U) array's itemsize is 4 bytes per code point, not {}", what, itemsize));
    if (itemsize > (std::size_t{1} << 31))
        throw ArgumentError(fmt::format("{}: itemsize {} is too large (at most 2**31)", what, itemsize));
    return itemsize;
}

// The bytes of `n` elements of `item` bytes, or an ArgumentError when they cannot be counted.
std::size_t bytes_of(std::int64_t n, std::size_t item, const Shape& shape) {
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(n), item, &bytes) ||
        bytes > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))
        throw ArgumentError(fmt::format("shape {} of {}-byte elements is too large", shape_to_string(shape), item));
    return bytes;
}

}  // namespace

struct ArrayAccess {
    static void set_storage(Array& a, std::shared_ptr<Storage> st) { a.storage_ = std::move(st); }
    static void set_dtype(Array& a, DType t) { a.dtype_ = t; }
    static Array make(DType t, Shape shape, Strides strides, std::int64_t offset, Backend b,
                      std::shared_ptr<Storage> st, std::size_t item = 0) {
        Array a;
        a.dtype_ = t;
        a.itemsize_ = item ? item : jit::itemsize(t);
        a.set_dims(std::move(shape), std::move(strides));
        a.offset_ = offset;
        a.backend_ = b;
        a.storage_ = std::move(st);
        return a;
    }
    // `a` with other dimensions and offset, the same storage, dtype, width and chars.
    static Array redim(const Array& a, Shape shape, Strides strides, std::int64_t offset) {
        Array v = a;
        v.set_dims(std::move(shape), std::move(strides));
        v.offset_ = offset;
        return v;
    }
    static void set_chars(Array& a, std::shared_ptr<Storage> chars) { a.chars_ = std::move(chars); }
};

namespace {
// A C-contiguous array of a checked shape on storage from `allocate(bytes)`.
template <class Allocate>
Array contiguous_on(DType dtype, Shape shape, Backend backend, Allocate&& allocate, std::size_t item = 0) {
    if (item == 0) item = jit::itemsize(dtype);
    const std::size_t bytes = bytes_of(shape_size(shape), item, shape);
    Strides strides = contiguous_strides(shape);
    return ArrayAccess::make(dtype, std::move(shape), std::move(strides), 0, backend, allocate(bytes), item);
}
}  // namespace

Array Array::empty(DType dtype, Shape shape, Backend backend, int device) {
    if (is_string(dtype))
        throw ArgumentError(fmt::format("empty: a {} array needs its itemsize (Array::empty(dtype, itemsize, shape))",
                                        dtype_name(dtype)));
    check_shape(shape);
    backend = core::resolve(backend);
    const core::Device& dev = core::device(backend);
    device = core::resolve_ordinal(backend, device);
    core::check_ordinal(backend, device);
    return contiguous_on(dtype, std::move(shape), backend,
                         [&dev, device](std::size_t bytes) { return dev.allocate(device, bytes); });
}

Array Array::empty(DType dtype, std::size_t itemsize, Shape shape, Backend backend, int device) {
    const std::size_t item = string_itemsize(dtype, itemsize, "empty");
    check_shape(shape);
    backend = core::resolve(backend);
    const core::Device& dev = core::device(backend);
    device = core::resolve_ordinal(backend, device);
    core::check_ordinal(backend, device);
    return contiguous_on(
        dtype, std::move(shape), backend, [&dev, device](std::size_t bytes) { return dev.allocate(device, bytes); },
        item);
}

namespace core {
Array prototype(DType dtype, const Shape& shape, Backend backend, std::size_t itemsize) {
    check_shape(shape);
    return ArrayAccess::make(dtype, shape, contiguous_strides(shape), 0, resolve(backend), nullptr, itemsize);
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
    if (is_string(t) || is_string(a.dtype()) || itemsize(t) != a.itemsize())
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
    // (the same dtype, width and, for a Utf8 column, chars: a view of rows of one column)
    return ArrayAccess::redim(a, std::move(shape), std::move(strides), lo <= hi ? a.offset() + offset : a.offset());
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

namespace {
// The view of Array::view, with the element size `item` (the dtype's, or a string array's width).
Array make_view(void* data, DType dtype, std::size_t item, Shape shape, Strides strides, Backend backend, int device,
                std::shared_ptr<void> keep_alive);
}  // namespace

Array Array::view(void* data, DType dtype, Shape shape, Strides strides, Backend backend, int device,
                  std::shared_ptr<void> keep_alive) {
    if (is_string(dtype))
        throw ArgumentError(fmt::format(
            "view: a {} array needs its itemsize (Array::view(data, dtype, itemsize, shape, ...))", dtype_name(dtype)));
    return make_view(data, dtype, jit::itemsize(dtype), std::move(shape), std::move(strides), backend, device,
                     std::move(keep_alive));
}

Array Array::view(void* data, DType dtype, std::size_t itemsize, Shape shape, Strides strides, Backend backend,
                  int device, std::shared_ptr<void> keep_alive) {
    const std::size_t item = string_itemsize(dtype, itemsize, "view");
    return make_view(data, dtype, item, std::move(shape), std::move(strides), backend, device, std::move(keep_alive));
}

Array Array::view(const void* data, DType dtype, std::size_t itemsize, Shape shape, Strides strides, Backend backend,
                  int device, std::shared_ptr<void> keep_alive) {
    return view(const_cast<void*>(data), dtype, itemsize, std::move(shape), std::move(strides), backend, device,
                std::move(keep_alive))
        .as_read_only();
}

Array Array::view_utf8(const void* offsets, std::size_t offset_width, const void* chars, std::size_t chars_bytes,
                       std::int64_t rows, Backend backend, int device, std::shared_ptr<void> keep_alive) {
    if (offset_width != 4 && offset_width != 8)
        throw ArgumentError(
            fmt::format("view_utf8: offsets of {} bytes; Arrow's are 4 (string) or 8 (large_string)", offset_width));
    if (rows < 0) throw ArgumentError(fmt::format("view_utf8: {} rows", rows));
    if (!offsets) throw ArgumentError("view_utf8: null offsets");
    if (!chars && chars_bytes > 0) throw ArgumentError("view_utf8: null chars with a size");
    backend = core::resolve(backend);
    if (backend != Backend::Cpu)
        throw ArgumentError("view_utf8: the offsets are checked when viewed, so they must be host memory");
    // Every offset in [0, chars_bytes], none below the one before: nothing past the data is ever read.
    const auto at = [&](std::int64_t i) -> std::int64_t {
        if (offset_width == 4) {
            std::int32_t v;
            std::memcpy(&v, static_cast<const char*>(offsets) + i * 4, 4);
            return v;
        }
        std::int64_t v;
        std::memcpy(&v, static_cast<const char*>(offsets) + i * 8, 8);
        return v;
    };
    std::int64_t prev = at(0);
    if (prev < 0 || static_cast<std::uint64_t>(prev) > chars_bytes)
        throw ArgumentError(
            fmt::format("view_utf8: offset 0 is {}, outside the data buffer of {} bytes", prev, chars_bytes));
    for (std::int64_t i = 1; i <= rows; ++i) {
        const std::int64_t v = at(i);
        if (v < prev)
            throw ArgumentError(fmt::format(
                "view_utf8: offset {} ({}) is below offset {} ({}): the offsets of a string column must not decrease",
                i, v, i - 1, prev));
        if (static_cast<std::uint64_t>(v) > chars_bytes)
            throw ArgumentError(fmt::format("view_utf8: offset {} ({}) is past the end of the data buffer ({} bytes)",
                                            i, v, chars_bytes));
        prev = v;
    }
    return core::view_utf8_checked(offsets, offset_width, chars, chars_bytes, rows, backend, device,
                                   std::move(keep_alive));
}

Array core::view_utf8_checked(const void* offsets, std::size_t offset_width, const void* chars, std::size_t chars_bytes,
                              std::int64_t rows, Backend backend, int device, std::shared_ptr<void> keep_alive) {
    // The offsets' storage holds rows + 1 of them; the array's elements are the first `rows`.
    Array a = make_view(const_cast<void*>(offsets), DType::Utf8, offset_width, Shape{rows + 1}, Strides{1}, backend,
                        device, keep_alive);
    a = a.slice(0, 0, rows);
    static const unsigned char kNoChars = 0;
    auto chars_storage = std::make_shared<BorrowedStorage>(
        const_cast<void*>(chars ? chars : static_cast<const void*>(&kNoChars)), chars_bytes, backend,
        core::resolve_ordinal(backend, device), std::move(keep_alive));
    ArrayAccess::set_chars(a, std::move(chars_storage));
    return a.as_read_only();
}

namespace {
Array make_view(void* data, DType dtype, std::size_t item_bytes, Shape shape, Strides strides, Backend backend,
                int device, std::shared_ptr<void> keep_alive) {
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
    const auto item = static_cast<std::int64_t>(item_bytes);
    if (__builtin_mul_overflow(hi, item, &reach) || __builtin_add_overflow(reach, item, &reach) ||
        __builtin_mul_overflow(lo, item, &lo))
        throw ArgumentError(fmt::format("view: strides {} of shape {} reach past any address", shape_to_string(strides),
                                        shape_to_string(shape)));
    const std::size_t bytes = empty ? 0 : static_cast<std::size_t>(reach);
    auto st = std::make_shared<BorrowedStorage>(data, bytes, backend, device, std::move(keep_alive));
    return ArrayAccess::make(dtype, std::move(shape), std::move(strides), 0, backend, std::move(st), item_bytes);
}
}  // namespace

Array Array::with_data(void* data, std::shared_ptr<void> keep_alive) const {
    if (dtype_ == DType::Utf8)
        throw ArgumentError("with_data: a utf8 array is its offsets and its bytes; make a view with view_utf8");
    // The bytes the layout reaches from element 0, as make_view counts them (the dimensions were
    // checked when this array was made, so nothing overflows here).
    std::int64_t hi = 0;
    const Shape& sh = shape();
    const Strides& st = strides();
    const bool empty = shape_size(sh) == 0;
    for (std::size_t k = 0; k < sh.size() && k < st.size() && !empty; ++k)
        if (st[k] > 0) hi += (sh[k] - 1) * st[k];
    const std::size_t bytes = empty ? 0 : static_cast<std::size_t>(hi + 1) * itemsize_;
    Array a = *this;
    a.offset_ = 0;
    a.storage_ = std::make_shared<BorrowedStorage>(data, bytes, backend_, device(), std::move(keep_alive));
    return a;
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
    return base + offset_ * static_cast<std::int64_t>(itemsize_);
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
    // The count as NumPy's: (distance - 1) / |step| + 1, in unsigned arithmetic (a step near
    // INT64_MAX, or INT64_MIN, overflowed the rounding-up form into a negative extent).
    std::int64_t count;
    if (step > 0) {
        start = clamp(start, 0, n);
        stop = clamp(stop, 0, n);
        count = stop > start ? static_cast<std::int64_t>(
                                   static_cast<std::uint64_t>(stop - start - 1) / static_cast<std::uint64_t>(step) + 1)
                             : 0;
    } else {
        start = clamp(start, -1, n - 1);
        stop = clamp(stop, -1, n - 1);
        const std::uint64_t magnitude = static_cast<std::uint64_t>(-(step + 1)) + 1u;
        count =
            start > stop ? static_cast<std::int64_t>(static_cast<std::uint64_t>(start - stop - 1) / magnitude + 1) : 0;
    }
    Array a = *this;
    const std::int64_t s = strides()[static_cast<std::size_t>(axis)];
    if (count > 0) a.offset_ += start * s;
    Shape shape = this->shape();
    Strides strides = this->strides();
    shape[static_cast<std::size_t>(axis)] = count;
    // (One element or none: the step is never taken, and s * step could overflow.)
    strides[static_cast<std::size_t>(axis)] = count > 1 ? s * step : s;
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

void Array::check_value_count(std::size_t count, const Shape& shape) {
    check_shape(shape);
    if (static_cast<std::uint64_t>(shape_size(shape)) != count)
        throw ArgumentError(fmt::format("from: {} values for shape {}, which holds {}", count, shape_to_string(shape),
                                        shape_size(shape)));
}

void Array::check_item() const {
    if (!defined()) throw ArgumentError("item(): the array is undefined (the program gave no value)");
    if (size() != 1) throw ArgumentError(fmt::format("item() needs an array of one element, not {}", describe()));
}

void Array::copy_to_host(void* dst) const {
    if (!defined()) throw ArgumentError("copy_to_host: the array is undefined (the program gave no value)");
    if (dtype_ == DType::Utf8)
        throw ArgumentError(
            fmt::format("copy_to_host: {} is a variable-length string column, which has no elements "
                        "of one size to copy; read its offsets (data()) and chars()",
                        describe()));
    if (size() == 0) return;
    const Array c = contiguous();
    core::device(c.backend()).to_host(c.device(), dst, c.data(), c.nbytes());
}

namespace {
// A Utf8 array of another backend, its storage (offsets and chars) copied whole to the host.
Array utf8_storage_to_host(const Array& a) {
    const core::Device& dev = core::device(a.backend());
    auto offsets = core::host_storage(a.storage()->bytes());
    auto chars = core::host_storage(a.chars_bytes());
    if (a.storage()->bytes() > 0) dev.to_host(a.device(), offsets->data(), a.storage()->data(), a.storage()->bytes());
    if (a.chars_bytes() > 0) dev.to_host(a.device(), chars->data(), a.chars(), a.chars_bytes());
    Array h = ArrayAccess::make(DType::Utf8, a.shape(), a.strides(), a.offset(), Backend::Cpu, std::move(offsets),
                                a.itemsize());
    ArrayAccess::set_chars(h, std::move(chars));
    return h;
}

// A Utf8 column's rows, gathered into new host offsets (from 0) and chars: `a` read on the host.
Array gather_utf8(const Array& a) {
    const Array h = a.backend() == Backend::Cpu ? a : utf8_storage_to_host(a);
    const std::int64_t n = h.size();
    const std::size_t w = h.itemsize();
    auto off = [&](std::int64_t k) -> std::int64_t {
        const char* p = static_cast<const char*>(h.data()) + k * static_cast<std::int64_t>(w);
        if (w == 4) {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    };
    // Element k of a strided view reads its string from offsets k and k + 1 of the storage.
    std::vector<std::int64_t> at(static_cast<std::size_t>(n));
    std::size_t total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t k = 0, rem = i;
        for (std::size_t d = h.shape().size(); d-- > 0;) {
            k += (rem % h.shape()[d]) * h.strides()[d];
            rem /= h.shape()[d];
        }
        at[static_cast<std::size_t>(i)] = k;
        total += static_cast<std::size_t>(off(k + 1) - off(k));
    }
    if (w == 4 && total > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        throw ArgumentError(
            fmt::format("a copy of {} holds {} bytes, past the 2**31 - 1 of a string column", h.describe(), total));
    }
    auto offsets = core::host_storage(static_cast<std::size_t>(n + 1) * w);
    auto chars = core::host_storage(std::max<std::size_t>(total, 1));
    auto* o = static_cast<char*>(offsets->data());
    auto* c = static_cast<char*>(chars->data());
    const auto* src = static_cast<const char*>(h.chars());
    std::int64_t pos = 0;
    auto put = [&](std::int64_t i, std::int64_t v) {
        if (w == 4) {
            const auto v32 = static_cast<std::int32_t>(v);
            std::memcpy(o + i * 4, &v32, 4);
        } else {
            std::memcpy(o + i * 8, &v, 8);
        }
    };
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t k = at[static_cast<std::size_t>(i)];
        const std::int64_t b = off(k), e = off(k + 1);
        put(i, pos);
        if (e > b) std::memcpy(c + pos, src + b, static_cast<std::size_t>(e - b));
        pos += e - b;
    }
    put(n, pos);
    Array out = ArrayAccess::make(DType::Utf8, h.shape(), contiguous_strides(h.shape()), 0, Backend::Cpu,
                                  std::move(offsets), w);
    ArrayAccess::set_chars(out, std::move(chars));
    return out;
}
}  // namespace

namespace core {
Array concat_utf8(const std::vector<Array>& parts, const Shape& shape) {
    // Offset k of a host Utf8 array that gather_utf8 made (C-contiguous, from 0).
    auto off = [](const Array& r, std::int64_t k) -> std::int64_t {
        const char* q = static_cast<const char*>(r.data()) + k * static_cast<std::int64_t>(r.itemsize());
        if (r.itemsize() == 4) {
            std::int32_t v;
            std::memcpy(&v, q, 4);
            return v;
        }
        std::int64_t v;
        std::memcpy(&v, q, 8);
        return v;
    };
    std::vector<Array> rows;  // each part's rows on the host, offsets from 0
    std::size_t w = 4, total = 0;
    std::int64_t n = 0;
    for (const Array& p : parts) {
        if (p.dtype() != DType::Utf8) throw InternalError("concat_utf8: a part is not an Arrow string column");
        rows.push_back(gather_utf8(p));
        w = std::max(w, p.itemsize());
        total += static_cast<std::size_t>(off(rows.back(), rows.back().size()));
        n += p.size();
    }
    if (n != shape_size(shape)) throw InternalError("concat_utf8: the parts' rows are not the shape's");
    if (w == 4 && total > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw ArgumentError(
            fmt::format("the parts of a string column hold {} bytes together, past the 2**31 - 1 of "
                        "a string column's int32 offsets (a large_string part makes room)",
                        total));
    auto offsets = host_storage(static_cast<std::size_t>(n + 1) * w);
    auto chars = host_storage(std::max<std::size_t>(total, 1));
    auto* o = static_cast<char*>(offsets->data());
    auto* c = static_cast<char*>(chars->data());
    std::int64_t row = 0, base = 0;
    auto put = [&](std::int64_t v) {
        if (w == 4) {
            const auto v32 = static_cast<std::int32_t>(v);
            std::memcpy(o + row * 4, &v32, 4);
        } else {
            std::memcpy(o + row * 8, &v, 8);
        }
    };
    for (const Array& r : rows) {
        for (std::int64_t k = 0; k < r.size(); ++k, ++row) put(base + off(r, k));
        const std::int64_t bytes = off(r, r.size());
        if (bytes > 0) std::memcpy(c + base, r.chars(), static_cast<std::size_t>(bytes));
        base += bytes;
    }
    put(base);
    Array out =
        ArrayAccess::make(DType::Utf8, shape, contiguous_strides(shape), 0, Backend::Cpu, std::move(offsets), w);
    ArrayAccess::set_chars(out, std::move(chars));
    return out;
}
}  // namespace core

// A C-contiguous copy through the device's own copy: no program is compiled for it.
Array Array::contiguous() const {
    if (is_contiguous()) return *this;
    if (dtype_ == DType::Utf8) {
        const Array g = gather_utf8(*this);
        return backend_ == Backend::Cpu ? g : g.to(backend_, device());
    }
    Array out = is_string(dtype_) ? empty(dtype_, itemsize_, shape(), backend_, device())
                                  : empty(dtype_, shape(), backend_, device());
    core::copy(out, *this);
    return out;
}

Array Array::to(Backend backend, int device) const {
    backend = core::resolve(backend);
    if (dtype_ == DType::Utf8) {
        // The rows alone, offsets from 0: a slice of a long column copies only its own bytes.
        const Array g = gather_utf8(*this);
        if (backend == Backend::Cpu) return g;
        const std::size_t bytes = g.chars_bytes();
        const core::Device& dev = core::device(backend);
        device = core::resolve_ordinal(backend, device);
        core::check_ordinal(backend, device);
        auto offsets = dev.allocate(device, static_cast<std::size_t>(g.size() + 1) * g.itemsize());
        dev.from_host(device, offsets->data(), g.data(), static_cast<std::size_t>(g.size() + 1) * g.itemsize());
        auto chars = dev.allocate(device, bytes);
        if (bytes > 0) dev.from_host(device, chars->data(), g.chars(), bytes);
        Array out =
            ArrayAccess::make(DType::Utf8, g.shape(), g.strides(), 0, backend, std::move(offsets), g.itemsize());
        ArrayAccess::set_chars(out, std::move(chars));
        return out;
    }
    const Array c = contiguous();
    Array out = is_string(dtype_) ? empty(dtype_, itemsize_, shape(), backend, device)
                                  : empty(dtype_, shape(), backend, device);
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
    return fmt::format("{} {} on {}", dtype_name(dtype_, itemsize_), shape_to_string(shape()), place());
}

}  // namespace jit

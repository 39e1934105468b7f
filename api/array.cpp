#include <jit/array.hpp>
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include "api/internal.hpp"
#include "backend/cuda/cuda.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <new>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace jit {

namespace {

// Large host blocks freed recently, kept for the next allocation of the same size: a fresh
// block of megabytes comes from mmap and pays a page fault per page at its first touch, which
// for a streaming expression costs as much as the work (an evaluation into a new output, or the
// temporary of an all-or-nothing in-place write, every call of a loop). Bounded in bytes and
// blocks; the oldest go first. Only sizes from kMinKept on: small blocks are malloc's business.
class KeptBlocks {
public:
    static constexpr std::size_t kMinKept = std::size_t{1} << 20;
    static constexpr std::size_t kMaxBytes = std::size_t{512} << 20;
    static constexpr std::size_t kMaxBlocks = 8;

    static KeptBlocks& instance() {
        static KeptBlocks* k = new KeptBlocks;  // never destroyed: arrays may die during exit
        return *k;
    }
    void* take(std::size_t rounded) {
        std::lock_guard<std::mutex> lock(m_);
        for (std::size_t i = blocks_.size(); i-- > 0;)
            if (blocks_[i].bytes == rounded) {
                void* p = blocks_[i].ptr;
                bytes_ -= rounded;
                blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
                return p;
            }
        return nullptr;
    }
    void give(void* p, std::size_t rounded) noexcept {
        if (rounded < kMinKept || rounded > kMaxBytes) {
            std::free(p);
            return;
        }
        std::vector<void*> drop;
        {
            std::lock_guard<std::mutex> lock(m_);
            try {
                blocks_.push_back({p, rounded});
            } catch (...) {
                drop.push_back(p);
            }
            bytes_ += drop.empty() ? rounded : 0;
            while (!blocks_.empty() && (bytes_ > kMaxBytes || blocks_.size() > kMaxBlocks)) {
                bytes_ -= blocks_.front().bytes;
                drop.push_back(blocks_.front().ptr);
                blocks_.erase(blocks_.begin());
            }
        }
        for (void* q : drop) std::free(q);  // outside the lock: munmap takes time
    }

private:
    struct Block {
        void* ptr;
        std::size_t bytes;
    };
    std::mutex m_;
    std::vector<Block> blocks_;
    std::size_t bytes_ = 0;
};

// Host memory, 64-byte aligned so that vector loads are aligned on every backend.
class HostStorage final : public Storage {
public:
    explicit HostStorage(std::size_t bytes) : bytes_(bytes) {
        if (bytes_ > 0) {
            rounded_ = (bytes_ + 63) / 64 * 64;
            if (bytes_ >= SIZE_MAX - 63) rounded_ = 0;  // no such block: out of memory below
            if (rounded_ >= KeptBlocks::kMinKept) ptr_ = KeptBlocks::instance().take(rounded_);
            if (!ptr_ && rounded_) ptr_ = std::aligned_alloc(64, rounded_);
            if (!ptr_) throw OutOfMemoryError(bytes_, detail::host_memory_available(), "an array in host memory");
        }
    }
    ~HostStorage() override {
        if (ptr_) KeptBlocks::instance().give(ptr_, rounded_);
    }
    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return Backend::Cpu; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_;
    std::size_t rounded_ = 0;
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
std::uint64_t host_memory_available() {
    std::uint64_t avail = 0;
    if (std::FILE* f = std::fopen("/proc/meminfo", "re")) {
        char line[256];
        while (std::fgets(line, sizeof line, f)) {
            unsigned long long kib = 0;
            if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                avail = static_cast<std::uint64_t>(kib) * 1024;
                break;
            }
        }
        std::fclose(f);
    }
    if (avail == 0) {
        const long pages = ::sysconf(_SC_AVPHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
        if (pages > 0 && size > 0) avail = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size);
    }
    rlimit as{};
    if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        // What is left of the address space: the limit less what is mapped now.
        std::uint64_t mapped = 0;
        if (std::FILE* f = std::fopen("/proc/self/statm", "re")) {
            unsigned long long pages = 0;
            if (std::fscanf(f, "%llu", &pages) == 1) mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
            std::fclose(f);
        }
        const std::uint64_t limit = as.rlim_cur;
        avail = std::min<std::uint64_t>(avail, limit > mapped ? limit - mapped : 0);
    }
    return avail;
}

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

void Array::check_host_type(DType t) const {
    if (t == DType::UInt8 && dtype_ == DType::Bool) return;  // bool read as bytes
    if (t != dtype_)
        throw ArgumentError(fmt::format("array holds {}, not {}", dtype_name(dtype_), dtype_name(t)));
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

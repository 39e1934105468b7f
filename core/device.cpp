// Devices behind jit::Array: host memory (core's own) and the registry of the others.
#include "core/device.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

namespace jit::core {

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

// A new block of `rounded` bytes (a multiple of 64), 64-byte aligned. From kHugeFrom on it is
// aligned to 2 MiB and offered to transparent huge pages (madvise, where the kernel has them in
// "madvise" mode; "always" needs no advice, "never" ignores it): its first touch then faults
// once per 2 MiB instead of once per 4 KiB. A block of megabytes is mmap'ed memory, so nothing
// else shares those pages. free() releases it either way.
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeFrom = std::size_t{4} << 20;

void* fresh_block(std::size_t rounded) {
    if (rounded < kHugeFrom) return std::aligned_alloc(64, rounded);
    void* p = nullptr;
    if (::posix_memalign(&p, kHugePage, rounded) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
    (void)::madvise(p, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return p;
}

// Host memory, 64-byte aligned so that vector loads are aligned on every backend. A block under
// kMinKept comes from plain malloc, 48 bytes larger, and is aligned within: glibc's aligned_alloc
// carves an aligned chunk out of a larger one and frees the rest (about 1,100 instructions for
// the allocation and release of a 64-byte result, against about 100), which a small result of
// every call paid (bench_cpu's BM_HostOverheadEvalText).
class HostStorage final : public Storage {
public:
    explicit HostStorage(std::size_t bytes) : bytes_(bytes) {
        if (bytes_ > 0) {
            rounded_ = (bytes_ + 63) / 64 * 64;
            if (bytes_ >= SIZE_MAX - 127) rounded_ = 0;  // no such block: out of memory below
            if (rounded_ >= KeptBlocks::kMinKept) {
                ptr_ = KeptBlocks::instance().take(rounded_);
                if (!ptr_) ptr_ = fresh_block(rounded_);
            } else if (rounded_) {
                static_assert(alignof(std::max_align_t) >= 16);
                base_ = std::malloc(rounded_ + 64 - alignof(std::max_align_t));
                if (base_)
                    ptr_ =
                        reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(base_) + 63) & ~std::uintptr_t{63});
            }
            if (!ptr_) throw OutOfMemoryError(bytes_, host_memory_available(), "an array in host memory");
        }
    }
    ~HostStorage() override {
        if (base_) std::free(base_);
        else if (ptr_) KeptBlocks::instance().give(ptr_, rounded_);
    }
    void* data() const override { return ptr_; }
    std::size_t bytes() const override { return bytes_; }
    Backend backend() const override { return Backend::Cpu; }
    int device() const override { return 0; }

private:
    void* ptr_ = nullptr;
    void* base_ = nullptr;  // what malloc gave, for a small block
    std::size_t bytes_;
    std::size_t rounded_ = 0;
};

template <std::size_t N>
void copy_run(char* dst, std::int64_t ds, const char* src, std::int64_t ss, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, N);
}

void host_copy(int, void* dst, const void* src, const CopyLayout& l, void*) {
    const std::int64_t n = l.size();
    if (n == 0) return;
    if (l.dense()) {
        std::memcpy(dst, src, static_cast<std::size_t>(n) * l.item);
        return;
    }
    const int nd = l.ndim;
    const auto item = static_cast<std::int64_t>(l.item);
    const std::int64_t inner = l.shape[nd - 1];
    const std::int64_t ds = l.dst_stride[nd - 1] * item, ss = l.src_stride[nd - 1] * item;
    std::int64_t idx[kMaxDims] = {};
    for (std::int64_t done = 0; done < n; done += inner) {
        std::int64_t od = 0, os = 0;
        for (int d = 0; d + 1 < nd; ++d) {
            od += idx[d] * l.dst_stride[d];
            os += idx[d] * l.src_stride[d];
        }
        char* to = static_cast<char*>(dst) + od * item;
        const char* from = static_cast<const char*>(src) + os * item;
        if (ds == item && ss == item) {
            std::memcpy(to, from, static_cast<std::size_t>(inner * item));
        } else {
            switch (l.item) {
                case 1: copy_run<1>(to, ds, from, ss, inner); break;
                case 2: copy_run<2>(to, ds, from, ss, inner); break;
                case 4: copy_run<4>(to, ds, from, ss, inner); break;
                case 8: copy_run<8>(to, ds, from, ss, inner); break;
                case 16: copy_run<16>(to, ds, from, ss, inner); break;
                default:
                    for (std::int64_t i = 0; i < inner; ++i) std::memcpy(to + i * ds, from + i * ss, l.item);
            }
        }
        for (int d = nd - 2; d >= 0; --d) {
            if (++idx[d] < l.shape[d]) break;
            idx[d] = 0;
        }
    }
}

const Device kHost{
    [](int, std::size_t bytes) { return host_storage(bytes); },
    [](int, void* dst, std::size_t bytes) { std::memset(dst, 0, bytes); },
    [](int, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); },
    [](int, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); },
    &host_copy,
    [](int, void* dst, int, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); },
    [] { return 1; },
};

// Constant-initialised: usable from any static initialiser.
constinit std::atomic<const Device*> devices[3] = {nullptr, nullptr, nullptr};
constinit std::atomic<int (*)()> current_devices[3] = {nullptr, nullptr, nullptr};
constinit std::atomic<Backend (*)()> default_backend{nullptr};

}  // namespace

std::shared_ptr<Storage> host_storage(std::size_t bytes) { return std::make_shared<HostStorage>(bytes); }

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
            if (std::fscanf(f, "%llu", &pages) == 1)
                mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
            std::fclose(f);
        }
        const std::uint64_t limit = as.rlim_cur;
        avail = std::min<std::uint64_t>(avail, limit > mapped ? limit - mapped : 0);
    }
    return avail;
}

const Device& host_device() { return kHost; }

void register_device(Backend b, const Device* d) {
    if (b == Backend::Cpu || b == Backend::Auto)
        throw InternalError("register_device: only other backends register a device");
    devices[static_cast<int>(b)].store(d, std::memory_order_release);
}

const Device& device(Backend b) {
    if (b == Backend::Cpu) return kHost;
    b = resolve(b);
    if (b == Backend::Cpu) return kHost;
    const Device* d = devices[static_cast<int>(b)].load(std::memory_order_acquire);
    if (!d) throw NoDeviceError(fmt::format("no {} backend is linked into this program", backend_name(b)));
    return *d;
}

void set_current_device(Backend b, int (*current)()) {
    if (b == Backend::Cpu || b == Backend::Auto)
        throw InternalError("set_current_device: only other backends have devices");
    current_devices[static_cast<int>(b)].store(current, std::memory_order_release);
}

int resolve_ordinal(Backend b, int ordinal) {
    if (ordinal != Array::kDefaultDevice) return ordinal;
    b = resolve(b);
    if (b == Backend::Cpu) return 0;
    auto f = current_devices[static_cast<int>(b)].load(std::memory_order_acquire);
    return f ? f() : 0;
}

void check_ordinal(Backend b, int ordinal) {
    b = resolve(b);
    if (b == Backend::Cpu) {
        if (ordinal != 0)
            throw ArgumentError(
                fmt::format("device {} of the CPU backend: the host is one device, ordinal 0", ordinal));
        return;
    }
    const Device& d = device(b);
    const int n = d.count ? d.count() : 1;
    if (ordinal < 0 || ordinal >= n)
        throw ArgumentError(
            fmt::format("no {} device {}: this machine has {} (ordinals 0 to {})", backend_name(b), ordinal, n, n - 1));
}

void set_default_backend(Backend (*resolve)()) { default_backend.store(resolve, std::memory_order_release); }

Backend resolve(Backend b) {
    if (b != Backend::Auto) return b;
    auto r = default_backend.load(std::memory_order_acquire);
    return r ? r() : Backend::Cpu;
}

std::int64_t CopyLayout::size() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
}

CopyLayout copy_layout(const Array& dst, const Array& src) {
    CopyLayout l;
    l.item = dst.itemsize();
    const Shape& shape = dst.shape();
    const Strides& a = dst.strides();
    const Strides& b = src.strides();
    if (shape_size(shape) == 0) {
        l.ndim = 1;  // nothing to copy
        l.dst_stride[0] = l.src_stride[0] = 1;
        return l;
    }
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == 1) continue;
        const int last = l.ndim - 1;
        if (last >= 0 && l.dst_stride[last] == a[k] * shape[k] && l.src_stride[last] == b[k] * shape[k]) {
            l.shape[last] *= shape[k];  // the outer axis steps over the inner one exactly: one axis
            l.dst_stride[last] = a[k];
            l.src_stride[last] = b[k];
            continue;
        }
        l.shape[l.ndim] = shape[k];
        l.dst_stride[l.ndim] = a[k];
        l.src_stride[l.ndim] = b[k];
        ++l.ndim;
    }
    return l;
}

void copy(const Array& dst, const Array& src, void* stream) {
    if (dst.dtype() != src.dtype() || dst.itemsize() != src.itemsize() || dst.shape() != src.shape() ||
        dst.backend() != src.backend() || dst.device() != src.device() || dst.dtype() == DType::Utf8)
        throw ArgumentError(fmt::format("copy: {} into {}", src.describe(), dst.describe()));
    if (dst.size() == 0) return;
    device(dst.backend()).copy(dst.device(), dst.data(), src.data(), copy_layout(dst, src), stream);
}

}  // namespace jit::core

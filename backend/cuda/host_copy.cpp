// jitexpr — host-side copies of the staged transfers (see host_copy.hpp).
#include "backend/cuda/host_copy.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace jit::cuda {

namespace {
std::atomic<bool> streaming_stores{true};
}  // namespace

void set_streaming_stores(bool on) noexcept { streaming_stores.store(on, std::memory_order_relaxed); }

void copy_streaming(void* dst, const void* src, std::size_t n) noexcept {
#if defined(__x86_64__)
    if (!streaming_stores.load(std::memory_order_relaxed)) {
        std::memcpy(dst, src, n);
        return;
    }
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
    if (n < head + 256) {  // too short for the stores to matter
        std::memcpy(d, s, n);
        return;
    }
    std::memcpy(d, s, head);  // dst 16-byte aligned from here
    d += head;
    s += head;
    n -= head;
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
        const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
        const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), x0);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), x1);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), x2);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), x3);
    }
    _mm_sfence();  // the stores are visible before the copy engine (or another thread) reads
    std::memcpy(d + i, s + i, n - i);
#else
    std::memcpy(dst, src, n);
#endif
}

}  // namespace jit::cuda

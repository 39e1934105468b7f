// Helpers for the embedding tests: host DLPack tensors built by hand, as a foreign producer would.
#pragma once

#include <jit/dlpack.h>
#include <jit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace embed_test {

// A host tensor owned by the test. The deleter counts its calls in *deleted.
struct HostTensor {
    DLManagedTensor managed{};
    std::vector<std::byte> bytes;
    std::vector<std::int64_t> shape, strides;
    int* deleted = nullptr;
};

inline void count_delete(DLManagedTensor* self) {
    auto* h = static_cast<HostTensor*>(self->manager_ctx);
    if (h->deleted) ++*h->deleted;
}

// `bytes` are the elements in the order the strides give (C order when strides is empty, which
// leaves DLTensor::strides null).
inline void fill(HostTensor& h, DLDataType dtype, std::vector<std::int64_t> shape, std::vector<std::byte> bytes,
                 std::vector<std::int64_t> strides = {}, int* deleted = nullptr) {
    h.bytes = std::move(bytes);
    h.shape = std::move(shape);
    h.strides = std::move(strides);
    h.deleted = deleted;
    DLTensor& t = h.managed.dl_tensor;
    t.data = h.bytes.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<std::int32_t>(h.shape.size());
    t.dtype = dtype;
    t.shape = h.shape.data();
    t.strides = h.strides.empty() ? nullptr : h.strides.data();
    t.byte_offset = 0;
    h.managed.manager_ctx = &h;
    h.managed.deleter = &count_delete;
}

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// n elements of `dtype` with exactly representable small values (0, 1, 2, 3, -1, ...; booleans
// 0/1), as raw bytes.
inline std::vector<std::byte> sample(jit::DType dtype, std::size_t n) {
    using jit::DType;
    static const int ints[] = {0, 1, 2, 3, -1, -2, 5};
    static const std::uint16_t f16[] = {0x0000, 0x3C00, 0x4000, 0x4200, 0xBC00, 0xC000, 0x4500};
    static const std::uint16_t bf16[] = {0x0000, 0x3F80, 0x4000, 0x4040, 0xBF80, 0xC000, 0x40A0};
    std::vector<std::byte> out(n * jit::itemsize(dtype));
    for (std::size_t i = 0; i < n; ++i) {
        const int v = ints[i % 7];
        std::byte* p = out.data() + i * jit::itemsize(dtype);
        auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
        switch (dtype) {
            case DType::Bool: put(static_cast<std::uint8_t>(v > 0)); break;
            case DType::Int8: put(static_cast<std::int8_t>(v)); break;
            case DType::Int16: put(static_cast<std::int16_t>(v)); break;
            case DType::Int32: put(static_cast<std::int32_t>(v)); break;
            case DType::Int64: put(static_cast<std::int64_t>(v)); break;
            case DType::UInt8: put(static_cast<std::uint8_t>(v + 2)); break;
            case DType::UInt16: put(static_cast<std::uint16_t>(v + 2)); break;
            case DType::UInt32: put(static_cast<std::uint32_t>(v + 2)); break;
            case DType::UInt64: put(static_cast<std::uint64_t>(v + 2)); break;
            case DType::Float16: put(f16[i % 7]); break;
            case DType::BFloat16: put(bf16[i % 7]); break;
            case DType::Float32: put(static_cast<float>(v)); break;
            case DType::Float64: put(static_cast<double>(v)); break;
            case DType::Complex64: {
                const float re = static_cast<float>(v), im = static_cast<float>(ints[(i + 3) % 7]);
                std::memcpy(p, &re, 4);
                std::memcpy(p + 4, &im, 4);
            } break;
            case DType::Complex128: {
                const double re = v, im = ints[(i + 3) % 7];
                std::memcpy(p, &re, 8);
                std::memcpy(p + 8, &im, 8);
            } break;
                JIT_TEMPORAL_CASES put(static_cast<std::int64_t>(v));
                break;  // a date's count
            case DType::Bytes:
            case DType::Str:
            case DType::Utf8: break;  // (numbers only)
        }
    }
    return out;
}

inline const jit::DType kAllDTypes[] = {
#define EMBED_TEST_DTYPE(Id, lower, name, size) jit::DType::Id,
    JIT_FOR_EACH_DTYPE(EMBED_TEST_DTYPE)
#undef EMBED_TEST_DTYPE
};

}  // namespace embed_test

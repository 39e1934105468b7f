// jitexpr — the CPU backend's run-time iteration spaces: collapsing axes, offsets, register values
// and the per-thread block buffers (prepared.hpp).
#include "backend/cpu/prepared.hpp"
#include "core/device.hpp"
#include "dsl/semantics.h"

#include <cstring>
#include <new>

namespace jit::cpu::impl {

// Drops extent-1 axes and merges axes that every operand walks contiguously. With
// keep_last, the last axis (a reduction axis) stays apart. In place (axis k moves to w <= k),
// so binding a stage allocates nothing once the vectors have grown.
void collapse(Shape& shape, std::span<Strides* const> strides, bool keep_last) {
    const std::size_t nd = shape.size();
    std::size_t w = 0;
    for (std::size_t k = 0; k < nd; ++k) {
        const bool last_axis = keep_last && k + 1 == nd;
        if (shape[k] == 1 && !last_axis) continue;
        bool merge = w > 0 && !last_axis;
        if (merge) {
            for (Strides* st : strides)
                if ((*st)[w - 1] != (*st)[k] * shape[k]) merge = false;
        }
        if (merge) {
            shape[w - 1] *= shape[k];
            for (Strides* st : strides) (*st)[w - 1] = (*st)[k];
        } else {
            shape[w] = shape[k];
            for (Strides* st : strides) (*st)[w] = (*st)[k];
            ++w;
        }
    }
    shape.resize(w);
    for (Strides* st : strides) st->resize(w);
}

i64 offset_of(i64 flat, const Shape& shape, const Strides& strides) {
    i64 off = 0;
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
        const i64 e = shape[static_cast<std::size_t>(k)];
        off += (flat % e) * strides[static_cast<std::size_t>(k)];
        flat /= e;
    }
    return off;
}

// A register value from an ir::Value of dtype t.
void value_to_reg(const ir::Value& v0, DType t, void* out) {
    const ir::Value v = v0.dtype == t ? v0 : v0.cast(t);
    switch (t) {
        // clang-format off
        case DType::Bool: { bool b = v.b; std::memcpy(out, &b, 1); break; }
#define JX_SINT(D, T) case DType::D: { T x = static_cast<T>(v.i); std::memcpy(out, &x, sizeof x); break; }
#define JX_UINT(D, T) case DType::D: { T x = static_cast<T>(v.u); std::memcpy(out, &x, sizeof x); break; }
        JX_SINT(Int8, jx::i8) JX_SINT(Int16, jx::i16) JX_SINT(Int32, jx::i32) JX_SINT(Int64, jx::i64)
        JX_UINT(UInt8, jx::u8) JX_UINT(UInt16, jx::u16) JX_UINT(UInt32, jx::u32) JX_UINT(UInt64, jx::u64)
#undef JX_SINT
#undef JX_UINT
        case DType::Float16: { float x = jx::round_f16(v.f); std::memcpy(out, &x, 4); break; }
        case DType::BFloat16: { float x = jx::round_bf16(v.f); std::memcpy(out, &x, 4); break; }
        case DType::Float32: { float x = static_cast<float>(v.f); std::memcpy(out, &x, 4); break; }
        case DType::Float64: { double x = v.f; std::memcpy(out, &x, 8); break; }
        // clang-format on
        case DType::Complex64: {
            jx::c64 x{static_cast<float>(v.f), static_cast<float>(v.im)};
            std::memcpy(out, &x, 8);
            break;
        }
        case DType::Complex128: {
            jx::c128 x{v.f, v.im};
            std::memcpy(out, &x, 16);
            break;
        }
            JIT_TEMPORAL_CASES break;  // lowered to int64 by dsl/lower/: never here
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: throw InternalError("cpu backend: a string filled as a number");
    }
}

// Per-thread block buffers, kept between runs.
struct alignas(64) CacheLine {
    std::byte b[64];
};
std::byte* thread_scratch(std::size_t bytes) {
    thread_local std::vector<CacheLine> buf;
    const std::size_t lines = (bytes + 63) / 64;
    if (buf.size() < lines) {
        try {
            buf.resize(lines);
        } catch (const std::bad_alloc&) {
            throw OutOfMemoryError(lines * 64, core::host_memory_available(), "a kernel thread's block buffers");
        }
    }
    return buf.empty() ? nullptr : buf.data()->b;
}

}  // namespace jit::cpu::impl

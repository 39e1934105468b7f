// Array::copy_to_host_as (to_vector<T>, item<T>): element conversions with the backends' value
// semantics (dsl/semantics.h), so that a host read converts exactly as astype(...) in a program
// does. It lives in the api layer because core sits below the semantics header.
#include <jit/array.hpp>

#include "dsl/semantics.h"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

namespace jit {

namespace {

// Host element conversions with the backends' semantics (dsl/semantics.h): float to
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
        case DType::Complex128:
            return f(jx::c128{});
            JIT_TEMPORAL_CASES return f(jx::i64{});  // a date's or duration's count, as NumPy's astype
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: return;  // (copy_to_host_as refuses strings first)
    }
}

template <class R>
R load_element(const unsigned char* p, DType t) {
    if (t == DType::Float16 || t == DType::BFloat16) {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return jx::cast<R>(t == DType::Float16 ? jx::half_to_float(h) : jx::bf16_to_float(h));
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
    if (!defined()) throw ArgumentError("copy_to_host_as: the array is undefined (the program gave no value)");
    if (to == dtype_ || (to == DType::UInt8 && dtype_ == DType::Bool)) return copy_to_host(dst);
    if (is_string(dtype_) || is_string(to))
        throw ArgumentError(
            fmt::format("copy_to_host_as: {} holds strings, which do not convert to {}", describe(), dtype_name(to)));
    const auto n = static_cast<std::size_t>(size());
    if (n == 0) return;
    std::unique_ptr<unsigned char[]> raw(new unsigned char[nbytes()]);
    copy_to_host(raw.get());
    convert_elements(raw.get(), dtype_, static_cast<unsigned char*>(dst), to, n);
}

}  // namespace jit

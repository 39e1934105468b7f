// jitexpr — element types.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jit {

// Every element type of the language. The order is used in tables: keep it stable.
#define JIT_FOR_EACH_DTYPE(X)               \
    X(Bool, bool_, "bool", 1)               \
    X(Int8, int8, "int8", 1)                \
    X(Int16, int16, "int16", 2)             \
    X(Int32, int32, "int32", 4)             \
    X(Int64, int64, "int64", 8)             \
    X(UInt8, uint8, "uint8", 1)             \
    X(UInt16, uint16, "uint16", 2)          \
    X(UInt32, uint32, "uint32", 4)          \
    X(UInt64, uint64, "uint64", 8)          \
    X(Float16, float16, "float16", 2)       \
    X(BFloat16, bfloat16, "bfloat16", 2)    \
    X(Float32, float32, "float32", 4)       \
    X(Float64, float64, "float64", 8)       \
    X(Complex64, complex64, "complex64", 8) \
    X(Complex128, complex128, "complex128", 16)

enum class DType : std::uint8_t {
#define JIT_DTYPE_ENUM(Id, lower, name, size) Id,
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_ENUM)
#undef JIT_DTYPE_ENUM
    // Strings, a family apart from the compute dtypes above (which kNumDTypes counts and the
    // kernel tables are sized by): values from 64 up. No value of these dtypes is ever computed:
    // only the string ops (comparisons, contains, startswith, endswith, find, str_len) read them,
    // and give bool or int64. Their width is each array's own (Array::itemsize()); itemsize() of
    // the dtype is 0.
    Bytes = 64,  // NumPy 'S': itemsize bytes per element; trailing NULs do not count
    Str = 65,    // NumPy 'U': itemsize / 4 code points (UCS-4, native order); trailing NULs do not count
    Utf8 = 66,   // Arrow string / large_string: itemsize 4 / 8, the width of the offsets (Array::chars())
};

inline constexpr int kNumDTypes = 15;

constexpr bool is_string(DType t) { return t == DType::Bytes || t == DType::Str || t == DType::Utf8; }

// Bytes per element of a compute dtype; 0 for the string dtypes, whose width is per array.
constexpr std::size_t itemsize(DType t) {
    switch (t) {
#define JIT_DTYPE_SIZE(Id, lower, name, size) \
    case DType::Id: return size;
        JIT_FOR_EACH_DTYPE(JIT_DTYPE_SIZE)
#undef JIT_DTYPE_SIZE
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: return 0;
    }
    return 0;
}

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
#define JIT_DTYPE_NAME(Id, lower, name, size) \
    case DType::Id: return name;
        JIT_FOR_EACH_DTYPE(JIT_DTYPE_NAME)
#undef JIT_DTYPE_NAME
        case DType::Bytes: return "bytes";
        case DType::Str: return "str";
        case DType::Utf8: return "string";
    }
    return "?";
}

// The name of a dtype with an array's width: NumPy's "S5" and "U3" for the fixed-width string
// dtypes, Arrow's "string" and "large_string" for Utf8 (by the offsets' width), dtype_name() for
// the others.
std::string dtype_name(DType t, std::size_t itemsize);

// "float32" -> DType::Float32; also accepts the NumPy aliases "float", "int", "complex", "half", "double".
std::optional<DType> dtype_from_name(std::string_view name);

constexpr bool is_bool(DType t) { return t == DType::Bool; }
constexpr bool is_signed_int(DType t) { return t >= DType::Int8 && t <= DType::Int64; }
constexpr bool is_unsigned_int(DType t) { return t >= DType::UInt8 && t <= DType::UInt64; }
constexpr bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
constexpr bool is_float(DType t) { return t >= DType::Float16 && t <= DType::Float64; }
constexpr bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
constexpr bool is_inexact(DType t) { return is_float(t) || is_complex(t); }
// float16 and bfloat16 are stored as such and computed in float32.
constexpr bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// C++ element type for each dtype on the host. float16/bfloat16 are raw 16-bit patterns.
struct half_bits {
    std::uint16_t bits;
};
struct bfloat16_bits {
    std::uint16_t bits;
};

template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
    static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<std::int8_t> {
    static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<std::int16_t> {
    static constexpr DType value = DType::Int16;
};
template <>
struct dtype_of<std::int32_t> {
    static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<std::int64_t> {
    static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<std::uint8_t> {
    static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<std::uint16_t> {
    static constexpr DType value = DType::UInt16;
};
template <>
struct dtype_of<std::uint32_t> {
    static constexpr DType value = DType::UInt32;
};
template <>
struct dtype_of<std::uint64_t> {
    static constexpr DType value = DType::UInt64;
};
template <>
struct dtype_of<half_bits> {
    static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<bfloat16_bits> {
    static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float> {
    static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
    static constexpr DType value = DType::Float64;
};
template <>
struct dtype_of<std::complex<float>> {
    static constexpr DType value = DType::Complex64;
};
template <>
struct dtype_of<std::complex<double>> {
    static constexpr DType value = DType::Complex128;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace jit

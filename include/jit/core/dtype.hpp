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

// Dates and durations: NumPy's datetime64 (a count of the unit since 1970-01-01T00:00, no time
// zone) and timedelta64 (a count of the unit), one dtype per unit, stored as int64; INT64_MIN is
// NaT ("not a time"). A family apart from the compute dtypes above: dsl/lower/ lowers every
// operation on them to int64 work, so the backends, their kernel tables (sized by kNumDTypes)
// and the generated code never see them; they exist at the edges, where arrays go in and out.
// The units, coarsest first: Generic is NumPy's unitless datetime64/timedelta64, which only a
// literal has (datetime64('NaT'), timedelta64(5)); an array of it is refused.
#define JIT_FOR_EACH_TIME_UNIT(X) \
    X(Generic, "")                \
    X(Y, "Y")                     \
    X(M, "M")                     \
    X(W, "W")                     \
    X(D, "D")                     \
    X(h, "h")                     \
    X(m, "m")                     \
    X(s, "s")                     \
    X(ms, "ms")                   \
    X(us, "us")                   \
    X(ns, "ns")                   \
    X(ps, "ps")                   \
    X(fs, "fs")                   \
    X(as, "as")

enum class TimeUnit : std::uint8_t {
#define JIT_TIME_UNIT_ENUM(Id, code) Id,
    JIT_FOR_EACH_TIME_UNIT(JIT_TIME_UNIT_ENUM)
#undef JIT_TIME_UNIT_ENUM
};
inline constexpr int kNumTimeUnits = 14;

// DType values of the family: datetime64 from kDateTimeBase, timedelta64 from kTimeDeltaBase,
// each plus its TimeUnit (DType::DateTime64_s is kDateTimeBase + TimeUnit::s).
inline constexpr int kDateTimeBase = 32;
inline constexpr int kTimeDeltaBase = 48;

enum class DType : std::uint8_t {
#define JIT_DTYPE_ENUM(Id, lower, name, size) Id,
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_ENUM)
#undef JIT_DTYPE_ENUM
// The dates and durations (below): DateTime64_Generic, DateTime64_Y, ..., DateTime64_as, then
// TimeDelta64_Generic, ..., TimeDelta64_as.
#define JIT_DATETIME_ENUM(Id, code) DateTime64_##Id = kDateTimeBase + static_cast<int>(TimeUnit::Id),
#define JIT_TIMEDELTA_ENUM(Id, code) TimeDelta64_##Id = kTimeDeltaBase + static_cast<int>(TimeUnit::Id),
        JIT_FOR_EACH_TIME_UNIT(JIT_DATETIME_ENUM) JIT_FOR_EACH_TIME_UNIT(JIT_TIMEDELTA_ENUM)
#undef JIT_DATETIME_ENUM
#undef JIT_TIMEDELTA_ENUM
    // Strings, a family apart from the compute dtypes (which kNumDTypes counts and the kernel
    // tables are sized by) and from the dates: values from 64 up. No value of these dtypes is ever
    // computed: only the string ops (comparisons, contains, startswith, endswith, find, str_len)
    // read them, and give bool or int64. Their width is each array's own (Array::itemsize());
    // itemsize() of the dtype is 0.
    Bytes = 64,  // NumPy 'S': itemsize bytes per element; trailing NULs do not count
    Str = 65,    // NumPy 'U': itemsize / 4 code points (UCS-4, native order); trailing NULs do not count
    Utf8 = 66,   // Arrow string / large_string: itemsize 4 / 8, the width of the offsets (Array::chars())
};

// The compute dtypes (JIT_FOR_EACH_DTYPE), which the backends' tables are indexed by.
inline constexpr int kNumDTypes = 15;

constexpr bool is_string(DType t) { return t == DType::Bytes || t == DType::Str || t == DType::Utf8; }

// The case labels of every datetime64/timedelta64 dtype, for a switch over the compute dtypes
// that the compiler should still check for exhaustiveness (-Wswitch): `JIT_TEMPORAL_CASES break;`.
#define JIT_TEMPORAL_CASE_DT_(Id, code) case ::jit::DType::DateTime64_##Id:
#define JIT_TEMPORAL_CASE_TD_(Id, code) case ::jit::DType::TimeDelta64_##Id:
#define JIT_TEMPORAL_CASES                        \
    JIT_FOR_EACH_TIME_UNIT(JIT_TEMPORAL_CASE_DT_) \
    JIT_FOR_EACH_TIME_UNIT(JIT_TEMPORAL_CASE_TD_)

constexpr bool is_datetime(DType t) {
    const int v = static_cast<int>(t);
    return v >= kDateTimeBase && v < kDateTimeBase + kNumTimeUnits;
}
constexpr bool is_timedelta(DType t) {
    const int v = static_cast<int>(t);
    return v >= kTimeDeltaBase && v < kTimeDeltaBase + kNumTimeUnits;
}
// datetime64 or timedelta64 of any unit.
constexpr bool is_temporal(DType t) { return is_datetime(t) || is_timedelta(t); }
// The unit of a datetime64/timedelta64 dtype (Generic for any other dtype).
constexpr TimeUnit time_unit(DType t) {
    if (is_datetime(t)) return static_cast<TimeUnit>(static_cast<int>(t) - kDateTimeBase);
    if (is_timedelta(t)) return static_cast<TimeUnit>(static_cast<int>(t) - kTimeDeltaBase);
    return TimeUnit::Generic;
}
constexpr DType datetime_of(TimeUnit u) { return static_cast<DType>(kDateTimeBase + static_cast<int>(u)); }
constexpr DType timedelta_of(TimeUnit u) { return static_cast<DType>(kTimeDeltaBase + static_cast<int>(u)); }
// NumPy's code of a unit: "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"
// ("" for Generic).
constexpr std::string_view time_unit_code(TimeUnit u) {
    switch (u) {
#define JIT_TIME_UNIT_CODE(Id, code) \
    case TimeUnit::Id: return code;
        JIT_FOR_EACH_TIME_UNIT(JIT_TIME_UNIT_CODE)
#undef JIT_TIME_UNIT_CODE
    }
    return "";
}
// "Y" -> TimeUnit::Y, ..., also "μs" for us (as NumPy); nullopt for anything else ("" too).
std::optional<TimeUnit> time_unit_from_code(std::string_view code);
// The NaT value of every datetime64/timedelta64 dtype.
inline constexpr std::int64_t kNaT = INT64_MIN;
// NumPy's text of a datetime64 value of unit `unit` (str(np.datetime64(v, unit))): "2024-03-01",
// "2024-03-01T12:30:00.250", "-001-03-01", "NaT"; the date of a Generic unit is "NaT" or its count.
std::string datetime_string(std::int64_t value, TimeUnit unit);

constexpr std::size_t itemsize(DType t) {
    switch (t) {
#define JIT_DTYPE_SIZE(Id, lower, name, size) \
    case DType::Id: return size;
        JIT_FOR_EACH_DTYPE(JIT_DTYPE_SIZE)
#undef JIT_DTYPE_SIZE
        JIT_TEMPORAL_CASES return 8;
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: return 0;  // the width is each array's (Array::itemsize())
    }
    return 0;
}

namespace detail {
// "datetime64[s]", "timedelta64[ns]", "datetime64" (generic), as NumPy's dtype.name.
inline constexpr std::string_view kTemporalNames[2][kNumTimeUnits] = {
    {"datetime64", "datetime64[Y]", "datetime64[M]", "datetime64[W]", "datetime64[D]", "datetime64[h]", "datetime64[m]",
     "datetime64[s]", "datetime64[ms]", "datetime64[us]", "datetime64[ns]", "datetime64[ps]", "datetime64[fs]",
     "datetime64[as]"},
    {"timedelta64", "timedelta64[Y]", "timedelta64[M]", "timedelta64[W]", "timedelta64[D]", "timedelta64[h]",
     "timedelta64[m]", "timedelta64[s]", "timedelta64[ms]", "timedelta64[us]", "timedelta64[ns]", "timedelta64[ps]",
     "timedelta64[fs]", "timedelta64[as]"}};
}  // namespace detail

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
#define JIT_DTYPE_NAME(Id, lower, name, size) \
    case DType::Id: return name;
        JIT_FOR_EACH_DTYPE(JIT_DTYPE_NAME)
#undef JIT_DTYPE_NAME
        JIT_TEMPORAL_CASES return detail::kTemporalNames[is_timedelta(t) ? 1 : 0][static_cast<int>(time_unit(t))];
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

// "float32" -> DType::Float32; also accepts the NumPy aliases "float", "int", "complex", "half", "double",
// and the dates and durations by NumPy's names and codes: "datetime64[ns]", "M8[ns]",
// "timedelta64[s]", "m8[s]", "datetime64" and "M8" (generic).
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

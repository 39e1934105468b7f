#include "host_values.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace jit::cli {
namespace {

// A binary float with `mbits` stored mantissa bits and `ebits` exponent bits, in 16 bits.
std::uint16_t to_small_float(double v, int mbits, int ebits) {
    const int bias = (1 << (ebits - 1)) - 1;
    const int emax_field = (1 << ebits) - 1;
    const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    if (std::isnan(v)) return static_cast<std::uint16_t>(sign | emax_field << mbits | 1 << (mbits - 1));
    const double a = std::fabs(v);
    if (std::isinf(a)) return static_cast<std::uint16_t>(sign | emax_field << mbits);
    if (a == 0) return sign;
    int e2 = 0;
    std::frexp(a, &e2);
    const int e = e2 - 1;  // a in [2^e, 2^(e+1))
    if (e < 1 - bias) {
        // Subnormal: a = m * 2^(1 - bias - mbits). A rounded m of 2^mbits is the smallest
        // normal number, whose encoding is exactly that integer.
        const double m = std::nearbyint(std::ldexp(a, bias - 1 + mbits));
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(m));
    }
    double m = std::nearbyint((std::ldexp(a, -e) - 1.0) * static_cast<double>(1 << mbits));
    int field = e + bias;
    if (m >= static_cast<double>(1 << mbits)) {
        m = 0;
        ++field;
    }
    if (field >= emax_field) return static_cast<std::uint16_t>(sign | emax_field << mbits);
    return static_cast<std::uint16_t>(sign | field << mbits | static_cast<int>(m));
}

double from_small_float(std::uint16_t bits, int mbits, int ebits) {
    const int bias = (1 << (ebits - 1)) - 1;
    const int emax_field = (1 << ebits) - 1;
    const bool neg = bits & 0x8000;
    const int field = (bits >> mbits) & emax_field;
    const int mant = bits & ((1 << mbits) - 1);
    double v;
    if (field == emax_field)
        v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (field == 0) v = std::ldexp(static_cast<double>(mant), 1 - bias - mbits);
    else v = std::ldexp(1.0 + static_cast<double>(mant) / static_cast<double>(1 << mbits), field - bias);
    return neg ? -v : v;
}

template <class T>
T saturate(double v) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
}

template <class T>
void put(void* dst, T v) {
    std::memcpy(dst, &v, sizeof v);
}
template <class T>
T get(const void* src) {
    T v;
    std::memcpy(&v, src, sizeof v);
    return v;
}

template <class T>
void store_integer(void* dst, const Number& n) {
    switch (n.kind) {
        case Number::Kind::Bool: put<T>(dst, static_cast<T>(n.b)); break;
        case Number::Kind::Int: put<T>(dst, static_cast<T>(n.i)); break;  // wraps, like NumPy's astype
        case Number::Kind::Float: put<T>(dst, saturate<T>(n.f)); break;
        case Number::Kind::Complex: put<T>(dst, saturate<T>(n.c.real())); break;
    }
}

}  // namespace

std::uint16_t double_to_half(double v) { return to_small_float(v, 10, 5); }
std::uint16_t double_to_bfloat16(double v) { return to_small_float(v, 7, 8); }
double half_to_double(std::uint16_t bits) { return from_small_float(bits, 10, 5); }
double bfloat16_to_double(std::uint16_t bits) { return from_small_float(bits, 7, 8); }

double Number::as_double() const {
    switch (kind) {
        case Kind::Bool: return b ? 1.0 : 0.0;
        case Kind::Int: return static_cast<double>(i);
        case Kind::Float: return f;
        case Kind::Complex: return c.real();
    }
    return 0;
}

std::complex<double> Number::as_complex() const {
    return kind == Kind::Complex ? c : std::complex<double>(as_double(), 0.0);
}

DType Number::natural_dtype() const {
    switch (kind) {
        case Kind::Bool: return DType::Bool;
        case Kind::Int: return DType::Int64;
        case Kind::Float: return DType::Float64;
        case Kind::Complex: return DType::Complex128;
    }
    return DType::Float64;
}

std::string Number::to_string() const {
    switch (kind) {
        case Kind::Bool: return b ? "True" : "False";
        case Kind::Int: return std::to_string(i);
        case Kind::Float: return fmt::format("{}", f);
        case Kind::Complex: return fmt::format("({}{:+}j)", c.real(), c.imag());
    }
    return "?";
}

void store(void* dst, DType t, const Number& n) {
    switch (t) {
        case DType::Bool:
            put<bool>(dst, n.kind == Number::Kind::Complex ? n.c != std::complex<double>()
                           : n.kind == Number::Kind::Int   ? n.i != 0
                           : n.kind == Number::Kind::Bool  ? n.b
                                                           : n.f != 0);
            break;
        case DType::Int8: store_integer<std::int8_t>(dst, n); break;
        case DType::Int16: store_integer<std::int16_t>(dst, n); break;
        case DType::Int32: store_integer<std::int32_t>(dst, n); break;
        case DType::Int64: store_integer<std::int64_t>(dst, n); break;
        case DType::UInt8: store_integer<std::uint8_t>(dst, n); break;
        case DType::UInt16: store_integer<std::uint16_t>(dst, n); break;
        case DType::UInt32: store_integer<std::uint32_t>(dst, n); break;
        case DType::UInt64: store_integer<std::uint64_t>(dst, n); break;
        case DType::Float16: put<std::uint16_t>(dst, double_to_half(n.as_double())); break;
        case DType::BFloat16: put<std::uint16_t>(dst, double_to_bfloat16(n.as_double())); break;
        case DType::Float32: put<float>(dst, static_cast<float>(n.as_double())); break;
        case DType::Float64: put<double>(dst, n.as_double()); break;
        case DType::Complex64: {
            auto c = n.as_complex();
            put<std::complex<float>>(dst, {static_cast<float>(c.real()), static_cast<float>(c.imag())});
            break;
        }
        case DType::Complex128:
            put<std::complex<double>>(dst, n.as_complex());
            break;
            JIT_TEMPORAL_CASES store_integer<std::int64_t>(dst, n);
            break;  // a date's count
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: throw jit::ArgumentError(fmt::format("a number stored as {}", dtype_name(t)));
    }
}

Number load(const void* src, DType t) {
    switch (t) {
        case DType::Bool: return Number::of_bool(get<unsigned char>(src) != 0);
        case DType::Int8: return Number::of_int(get<std::int8_t>(src));
        case DType::Int16: return Number::of_int(get<std::int16_t>(src));
        case DType::Int32: return Number::of_int(get<std::int32_t>(src));
        case DType::Int64: return Number::of_int(get<std::int64_t>(src));
        case DType::UInt8: return Number::of_int(get<std::uint8_t>(src));
        case DType::UInt16: return Number::of_int(get<std::uint16_t>(src));
        case DType::UInt32: return Number::of_int(get<std::uint32_t>(src));
        case DType::UInt64: {
            // Values above INT64_MAX keep their bits; printing reads uint64 directly.
            return Number::of_int(static_cast<std::int64_t>(get<std::uint64_t>(src)));
        }
        case DType::Float16: return Number::of_float(half_to_double(get<std::uint16_t>(src)));
        case DType::BFloat16: return Number::of_float(bfloat16_to_double(get<std::uint16_t>(src)));
        case DType::Float32: return Number::of_float(get<float>(src));
        case DType::Float64: return Number::of_float(get<double>(src));
        case DType::Complex64: {
            auto c = get<std::complex<float>>(src);
            return Number::of_complex({c.real(), c.imag()});
        }
        case DType::Complex128:
            return Number::of_complex(get<std::complex<double>>(src));
            JIT_TEMPORAL_CASES return Number::of_int(get<std::int64_t>(src));  // a date's count
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;
    }
    return Number{};
}

}  // namespace jit::cli

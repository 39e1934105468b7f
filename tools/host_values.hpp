// Element values on the host: converting numbers to and from every dtype's bytes (for the
// array constructors and for printing). float16/bfloat16 conversions round to nearest even.
#pragma once

#include <jit/dtype.hpp>

#include <complex>
#include <cstdint>
#include <string>

namespace jit::cli {

// IEEE binary16 and bfloat16 bit patterns <-> double (round to nearest, ties to even).
std::uint16_t double_to_half(double v);
std::uint16_t double_to_bfloat16(double v);
double half_to_double(std::uint16_t bits);
double bfloat16_to_double(std::uint16_t bits);

// A number from the user: an integer, a float, a bool or a complex value.
struct Number {
    enum class Kind : std::uint8_t { Bool, Int, Float, Complex } kind = Kind::Int;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::complex<double> c{};

    static Number of_bool(bool v) {
        Number n;
        n.kind = Kind::Bool;
        n.b = v;
        return n;
    }
    static Number of_int(std::int64_t v) {
        Number n;
        n.kind = Kind::Int;
        n.i = v;
        return n;
    }
    static Number of_float(double v) {
        Number n;
        n.kind = Kind::Float;
        n.f = v;
        return n;
    }
    static Number of_complex(std::complex<double> v) {
        Number n;
        n.kind = Kind::Complex;
        n.c = v;
        return n;
    }

    double as_double() const;
    std::complex<double> as_complex() const;
    bool is_integral() const { return kind == Kind::Int || kind == Kind::Bool; }
    // The dtype NumPy gives a Python scalar of this kind: bool, int64, float64, complex128.
    DType natural_dtype() const;
    std::string to_string() const;
};

// Writes `n` converted to `t` (NumPy's casts: float -> integer truncates, saturating here
// instead of being undefined; complex -> real keeps the real part) at `dst`.
void store(void* dst, DType t, const Number& n);
// Reads the element of type `t` at `src`.
Number load(const void* src, DType t);

}  // namespace jit::cli

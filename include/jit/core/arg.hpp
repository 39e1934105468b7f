// jitexpr — what a variable is bound to: jit::Arg (an array or a host scalar) and jit::Environment
// (named variables). Value types of the lowest layer: the runtime binds and assigns them, and the
// ways of running a call (run/) read and write them. Included by jit/runtime.hpp.
#pragma once

#include <jit/core/array.hpp>

#include <complex>
#include <concepts>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>

namespace jit {

// A value bound to a variable: an array, or a host scalar. Host scalars are kernel parameters
// (changing the value never recompiles) and are weakly typed like Python scalars (NEP 50):
// `float32_array * x` with a double x stays float32.
class Arg {
public:
    Arg(Array a) : v_(std::move(a)) {}
    // Only a bool itself (not a pointer, which would convert to bool: Arg("a") is no value).
    template <class B>
    requires std::same_as<B, bool> Arg(B v) : v_(v) {}
    Arg(int v) : v_(static_cast<std::int64_t>(v)) {}
    Arg(long v) : v_(static_cast<std::int64_t>(v)) {}
    Arg(long long v) : v_(static_cast<std::int64_t>(v)) {}
    Arg(double v) : v_(v) {}
    Arg(float v) : v_(static_cast<double>(v)) {}
    Arg(std::complex<double> v) : v_(v) {}

    bool is_array() const { return std::holds_alternative<Array>(v_); }
    const Array& array() const { return std::get<Array>(v_); }
    const std::variant<Array, bool, std::int64_t, double, std::complex<double>>& value() const { return v_; }

private:
    std::variant<Array, bool, std::int64_t, double, std::complex<double>> v_;
};

// Named variables: what the REPL and Runtime::run read and assign.
using Environment = std::map<std::string, Arg, std::less<>>;

}  // namespace jit

// jitexpr — evaluate array expressions, compiled at run time for the GPU (or run on the CPU).
//
//   jit::Array a = jit::Array::from(std::vector<float>{1, 2, 3});
//   jit::Array b = jit::Array::from(std::vector<float>{4, 5, 6});
//   jit::Array c = jit::eval("b * 2 + a", {{"a", a}, {"b", b}});   // bound by name
//   jit::Array d = jit::eval("a * 2 + b", a, b);   // positional, in order of first appearance
//
//   jit::Kernel k = jit::compile("a * x + b");           // parse and check once
//   jit::Array e = k({{"a", a}, {"x", 2.5}, {"b", b}});  // a scalar is a kernel parameter
//   double s = jit::eval("sum(a)", {{"a", a}}).item<double>();
#pragma once

#include <jit/array.hpp>
#include <jit/dtype.hpp>
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace jit {

// Evaluates `text` on the default runtime with the arguments bound by name. A bound name
// shadows a named constant (pi, e, inf, nan); every name must be one the program uses.
inline Array eval(std::string_view text, const Named& names) { return Runtime::default_runtime().eval(text, names); }

// Evaluates `text` on the default runtime with the arguments bound positionally, in order of
// first appearance of the names it reads (named constants are not parameters).
template <class... Args>
requires(std::is_constructible_v<Arg, Args&&>&&...) Array eval(std::string_view text, Args&&... args) {
    return Runtime::default_runtime().eval(text, std::vector<Arg>{Arg(std::forward<Args>(args))...});
}

// A program checked for syntax once and evaluated many times; each distinct combination of
// argument dtypes and shapes is prepared once and kept.
class Kernel {
public:
    Kernel(std::string text, Runtime* runtime);
    const std::string& text() const { return text_; }
    // Names bound positionally, in order.
    const std::vector<std::string>& parameters() const { return params_; }

    // Bound by name: k({{"a", a}, {"b", b}}); a bound name shadows a named constant.
    Array operator()(const Named& names) const { return runtime_->eval(text_, names); }
    Array call(const Named& names, void* stream = nullptr) const { return runtime_->eval(text_, names, stream); }
    Array call(const Named& names, const CallOptions& options) const { return runtime_->eval(text_, names, options); }

    // Bound by position, in the order of parameters().
    template <class... Args>
    requires(std::is_constructible_v<Arg, Args&&>&&...) Array operator()(Args&&... args) const {
        return runtime_->eval(text_, std::vector<Arg>{Arg(std::forward<Args>(args))...});
    }
    Array call(const std::vector<Arg>& args, void* stream = nullptr) const {
        return runtime_->eval(text_, args, stream);
    }
    Array call(const std::vector<Arg>& args, const CallOptions& options) const {
        return runtime_->eval(text_, args, options);
    }

private:
    std::string text_;
    std::vector<std::string> params_;
    Runtime* runtime_;
};

// Parses `text` now (a ParseError now, not at the first call); names (an unknown function
// too), dtypes and shapes are checked at the first call, which knows the arguments.
Kernel compile(std::string_view text, Runtime& runtime = Runtime::default_runtime());

// The names a program reads before assigning them, in order of first appearance: the
// positional parameters of eval and Kernel.
std::vector<std::string> parameters(std::string_view text);

// The names a program assigns, in order of first assignment (what Runtime::run binds in its
// environment).
std::vector<std::string> targets(std::string_view text);

}  // namespace jit

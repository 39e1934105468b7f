// Programs whose kernels cover every layout class of codegen/codegen.hpp (Flat, Strided,
// Tiled, ReduceAll, ReduceAxis), with their bindings: for the tests that the kernels precompile
// stores are the ones preparation asks for.
#pragma once

#include "dsl/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace jxtest {

struct LayoutProgram {
    std::string text;
    std::map<std::string, jit::dsl::Binding> env;
};

inline jit::dsl::Binding bound_array(jit::DType t, jit::Shape shape, jit::Strides strides = {}) {
    jit::dsl::Binding b;
    b.kind = jit::dsl::Binding::Kind::Array;
    b.dtype = t;
    b.strides = strides.empty() ? jit::contiguous_strides(shape) : std::move(strides);
    b.shape = std::move(shape);
    return b;
}

inline std::vector<LayoutProgram> layout_programs() {
    using jit::DType;
    return {
        // Flat
        {"c = a*2 + b", {{"a", bound_array(DType::Float32, {1000})}, {"b", bound_array(DType::Float32, {1000})}}},
        // Strided: every other column of a (1000, 300) array
        {"y = x*2 + 1", {{"x", bound_array(DType::Float32, {1000, 150}, {300, 2})}}},
        // Tiled: the transpose of a (300, 1000) array
        {"y = x - 1", {{"x", bound_array(DType::Float64, {1000, 300}, {1, 1000})}}},
        // ReduceAll
        {"s = sum(a * a)", {{"a", bound_array(DType::Float32, {1000})}}},
        // ReduceAxis, then an element-wise stage reading the reduction
        {"m = x - mean(x, axis=0)", {{"x", bound_array(DType::Float64, {100, 7})}}},
        // ReduceAxis along the last axis
        {"r = max(x, axis=1)", {{"x", bound_array(DType::Int32, {64, 33})}}},
    };
}

}  // namespace jxtest

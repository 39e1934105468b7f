// The front half of jitexpr as one call, for the hardening tests and the fuzz targets: text ->
// dsl::plan (against a fixed set of bound names, within the CUDA backend's stage limits) ->
// ir::verify (in every build, not only debug ones) -> cuda::build_kernels (Flat and
// forced-Strided layouts). No runtime, no device, no compiler.
#pragma once

#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"
#include "dsl/verify.hpp"

#include <jit/array.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace jxharden {

// Names bound in every fuzzed or hostile program: several dtypes, shapes and layouts, scalars of
// each weak kind, so the checker and every kernel class are reachable from short texts.
inline const std::map<std::string, jit::dsl::Binding, std::less<>>& fixed_bindings() {
    using jit::DType;
    using K = jit::dsl::Binding::Kind;
    static const std::map<std::string, jit::dsl::Binding, std::less<>> b = [] {
        std::map<std::string, jit::dsl::Binding, std::less<>> m;
        auto array = [&](const char* name, DType t, jit::Shape s, jit::Strides st = {}) {
            if (st.empty()) st = jit::contiguous_strides(s);
            m[name] = jit::dsl::Binding{K::Array, t, std::move(s), std::move(st)};
        };
        auto scalar = [&](const char* name, DType t) { m[name] = jit::dsl::Binding{K::Scalar, t, {}, {}}; };
        array("a", DType::Float32, {4});
        array("b", DType::Float64, {4});
        array("c", DType::Float32, {3, 4});
        array("t", DType::Float32, {4, 3}, {1, 4});  // a transposed view
        array("i", DType::Int32, {4});
        array("j", DType::Int64, {3, 1});
        array("u", DType::UInt8, {4});
        array("h", DType::Float16, {2, 4});
        array("g", DType::BFloat16, {1, 4});
        array("z", DType::Complex64, {4});
        array("m", DType::Bool, {3, 4});
        array("k", DType::Int16, {});        // 0-d
        array("e", DType::Float32, {0, 4});  // empty
        scalar("x", DType::Float64);
        scalar("n", DType::Int64);
        scalar("q", DType::Bool);
        scalar("w", DType::Complex128);
        return m;
    }();
    return b;
}

inline std::vector<std::string> fixed_names() {
    std::vector<std::string> v;
    for (const auto& [n, _] : fixed_bindings()) v.push_back(n);
    return v;
}

// The plan (program, schedule, aliasing) and its kernels.
struct FrontResult : jit::ir::Plan {
    std::vector<jit::codegen::Emitted> emitted;  // Tier::Full, then Tier::Strided
};

// Runs the whole front half. Throws what the stages throw (jit::Error subclasses, by contract).
// `bindings` defaults to fixed_bindings(), `limits` to the CUDA backend's.
inline FrontResult run_front(std::string_view text,
                             const std::map<std::string, jit::dsl::Binding, std::less<>>& bindings = fixed_bindings(),
                             const jit::dsl::Limits& limits = jit::cuda::limits()) {
    FrontResult r;
    static_cast<jit::ir::Plan&>(r) = jit::dsl::plan(text, jit::dsl::bindings_of(bindings), limits);
    jit::ir::verify(r);
    for (auto tier : {jit::cuda::Tier::Full, jit::cuda::Tier::Strided})
        r.emitted.push_back(jit::cuda::build_kernels(r, {}, tier));
    return r;
}

// Every byte handed to NVRTC for the program, kernel after kernel.
inline std::string all_sources(const FrontResult& r) {
    std::string s;
    for (const auto& e : r.emitted)
        for (const auto& k : e.kernels) s += k.source;
    return s;
}

}  // namespace jxharden

// jit::precompile (include/jit/precompile.hpp): the plan and kernels a CUDA runtime would
// prepare, compiled with NVRTC for an architecture and stored under the runtime's keys.
#include <jit/error.hpp>
#include <jit/precompile.hpp>

#include "dsl/plan.hpp"
#include "run/order.hpp"
#include "run/precompile.hpp"

#include <fmt/format.h>

#include <memory>

namespace jit {

Declaration Declaration::array(DType dtype, Shape shape, Strides strides) {
    Declaration d;
    d.kind = Kind::Array;
    d.dtype = dtype;
    d.strides = strides.empty() ? contiguous_strides(shape) : std::move(strides);
    d.shape = std::move(shape);
    return d;
}

Declaration Declaration::scalar(DType dtype) {
    Declaration d;
    d.kind = Kind::Scalar;
    d.dtype = dtype;
    return d;
}

struct Precompiler::Impl {
    explicit Impl(const run::PrecompileTarget& t) : pc(t) {}
    run::Precompiler pc;
};

Precompiler::Precompiler(const PrecompileOptions& options) {
    run::PrecompileTarget t;
    t.arch = options.arch;
    t.cache_dir = options.cache_dir;
    t.fast_math = options.fast_math;
    t.nvrtc_options = options.nvrtc_options;
    impl_ = std::make_unique<Impl>(t);
}

Precompiler::~Precompiler() = default;

int Precompiler::cc_major() const { return impl_->pc.cc_major(); }
int Precompiler::cc_minor() const { return impl_->pc.cc_minor(); }
const std::string& Precompiler::cache_dir() const { return impl_->pc.cache_dir(); }

namespace {

// The plan the CUDA runtime would make for `statements` with these variables.
ir::Plan plan_of(std::string_view statements, const std::map<std::string, Declaration, std::less<>>& variables) {
    std::map<std::string, dsl::Binding, std::less<>> bindings;
    for (const auto& [name, d] : variables) {
        dsl::Binding b;
        b.kind = d.kind == Declaration::Kind::Array ? dsl::Binding::Kind::Array : dsl::Binding::Kind::Scalar;
        b.dtype = d.dtype;
        b.shape = d.shape;
        b.strides = d.kind == Declaration::Kind::Array && d.strides.empty() ? contiguous_strides(d.shape) : d.strides;
        bindings.emplace(name, std::move(b));
    }
    ir::Plan plan = dsl::plan(statements, dsl::bindings_of(bindings), run::Precompiler::limits());
    // Arrays all in one other axis order than C's: the runtime runs such a program over the
    // arrays seen in that order (run/order.hpp), so their kernels are the ones to store.
    std::vector<run::ArrayLayout> arrays;
    for (const auto& [name, b] : bindings)
        if (b.kind == dsl::Binding::Kind::Array) arrays.push_back(run::ArrayLayout{&b.shape, &b.strides, b.dtype});
    const std::optional<run::AxisOrder> order = run::shared_order(arrays);
    if (!order || !run::order_free(plan.program, order->shape)) return plan;
    for (auto& [name, b] : bindings) {
        if (b.kind != dsl::Binding::Kind::Array) continue;
        b.strides = run::in_order(*order, b.strides);
        b.shape = order->ordered_shape;
    }
    return dsl::plan(statements, dsl::bindings_of(bindings), run::Precompiler::limits());
}

}  // namespace

void Precompiler::check(std::string_view statements, const std::map<std::string, Declaration, std::less<>>& variables) {
    (void)plan_of(statements, variables);
}

std::vector<PrecompiledKernel> Precompiler::add(std::string_view statements,
                                                const std::map<std::string, Declaration, std::less<>>& variables) {
    const ir::Plan plan = plan_of(statements, variables);
    std::vector<PrecompiledKernel> out;
    for (const auto& k : impl_->pc.add(plan)) {
        PrecompiledKernel pk;
        pk.name = k.name;
        pk.already_cached = k.already_stored;
        pk.compile_ms = k.compile_ms;
        pk.image_bytes = k.image_bytes;
        out.push_back(std::move(pk));
    }
    return out;
}

std::vector<PrecompiledKernel> precompile(std::string_view statements,
                                          const std::map<std::string, Declaration, std::less<>>& variables,
                                          const PrecompileOptions& options) {
    return Precompiler(options).add(statements, variables);
}

}  // namespace jit

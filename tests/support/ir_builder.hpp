// The one builder of hand-made ir::Programs for tests and benchmarks that need neither the parser
// nor the checker (the codegen goldens, the CPU backend's kernels, the module cache). The IR
// structs are plain; each helper keeps the invariants of dsl/ir.hpp (operands already of the
// op's operand dtype, shapes broadcast), and plan() is what a backend prepares: dsl::plan of the
// program within the backend's limits.
#pragma once

#include "backend/backend.hpp"
#include "dsl/ir.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"

#include <jit/array.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace jxtest {

using namespace jit;

inline Shape broadcast(const Shape& a, const Shape& b) {
    Shape r(std::max(a.size(), b.size()), 1);
    for (std::size_t k = 0; k < r.size(); ++k) {
        std::int64_t x = k < r.size() - a.size() ? 1 : a[k - (r.size() - a.size())];
        std::int64_t y = k < r.size() - b.size() ? 1 : b[k - (r.size() - b.size())];
        r[k] = x == 1 ? y : x;
    }
    return r;
}

struct Builder {
    ir::Program p;

    ir::NodeId add(ir::Node n) {
        p.nodes.push_back(std::move(n));
        return ir::NodeId(p.nodes.size() - 1);
    }
    const ir::Node& node(ir::NodeId i) const { return p.node(i); }

    // An input of shape `s` (C-contiguous unless `st` is given), named `name` (a made-up name
    // when empty).
    ir::NodeId input(DType t, Shape s, Strides st = {}, std::string name = "") {
        if (st.empty()) st = contiguous_strides(s);
        if (name.empty()) name = "user_array_" + std::to_string(p.inputs.size());
        ir::InputDecl d;
        d.name = name;
        d.dtype = t;
        d.shape = s;
        d.strides = st;
        p.inputs.push_back(d);
        ir::Node n;
        n.kind = ir::NodeKind::Input;
        n.dtype = t;
        n.shape = s;
        n.slot = static_cast<std::int32_t>(p.inputs.size() - 1);
        return add(n);
    }
    ir::NodeId scalar(DType t, std::string name = "") {
        if (name.empty()) name = "user_scalar_" + std::to_string(p.scalars.size());
        ir::ScalarDecl d;
        d.name = name;
        d.dtype = t;
        p.scalars.push_back(d);
        ir::Node n;
        n.kind = ir::NodeKind::Scalar;
        n.dtype = t;
        n.slot = static_cast<std::int32_t>(p.scalars.size() - 1);
        return add(n);
    }
    ir::NodeId constant(ir::Value v) {
        ir::Node n;
        n.kind = ir::NodeKind::Const;
        n.dtype = v.dtype;
        n.value = v;
        return add(n);
    }
    // A constant of dtype `t` holding `v` as written (not rounded to `t`).
    ir::NodeId fconst(double v, DType t) {
        ir::Value x;
        x.dtype = t;
        x.f = v;
        return constant(x);
    }
    ir::NodeId iconst(std::int64_t v, DType t) {
        ir::Value x;
        x.dtype = t;
        x.i = v;
        x.u = static_cast<std::uint64_t>(v);
        return constant(x);
    }
    // An op whose node dtype is `t` (operands must already have the operand dtype).
    ir::NodeId op(ir::Op o, DType t, std::initializer_list<ir::NodeId> args) {
        ir::Node n;
        n.kind = ir::NodeKind::Op;
        n.op = o;
        n.dtype = t;
        Shape s;
        int k = 0;
        for (auto a : args) {
            n.args[k++] = a;
            s = broadcast(s, node(a).shape);
        }
        n.nargs = static_cast<std::uint8_t>(k);
        n.shape = s;
        return add(n);
    }
    // The op with the dtype of its (last) operand: arithmetic, unary math.
    ir::NodeId same(ir::Op o, std::initializer_list<ir::NodeId> args) {
        return op(o, node(*(args.end() - 1)).dtype, args);
    }
    ir::NodeId cast(ir::NodeId a, DType t) {
        ir::Node n;
        n.kind = ir::NodeKind::Cast;
        n.dtype = t;
        n.shape = node(a).shape;
        n.args[0] = a;
        n.nargs = 1;
        return add(n);
    }
    // A reduction of `a` into dtype `t`, along `axis` (-1: every element).
    ir::NodeId reduce(ir::Op o, ir::NodeId a, DType t, int axis = -1) {
        ir::Node n;
        n.kind = ir::NodeKind::Reduce;
        n.op = o;
        n.dtype = t;
        n.axis = axis;
        n.args[0] = a;
        n.nargs = 1;
        if (axis >= 0) {
            n.shape = node(a).shape;
            n.shape.erase(n.shape.begin() + axis);
        }
        return add(n);
    }
    // An output of `node_index`, named `name` (a made-up name when empty), written in place into
    // input `alias` when >= 0. The last output is the program's result.
    void output(ir::NodeId node_index, std::string name = "", std::int32_t alias = -1) {
        if (name.empty()) name = "user_out_" + std::to_string(p.outputs.size());
        ir::OutputDecl d;
        d.name = name;
        d.node = node_index;
        d.alias_input = alias;
        p.outputs.push_back(d);
        p.result = node_index;
    }
    // A zeroed host array of output k's dtype and shape.
    Array make_output(std::size_t k) const {
        const ir::Node& n = node(p.outputs[k].node);
        return Array::zeros(n.dtype, n.shape, Backend::Cpu);
    }
    ir::Schedule schedule() const { return ir::schedule(p); }
    // What a backend prepares: dsl::plan of the program within the backend's limits.
    ir::Plan plan(const dsl::Limits& limits = {}) const { return dsl::plan(p, limits); }
};

// Runs a program on `backend` with the given inputs and outputs.
inline void run(detail::BackendImpl& backend, const ir::Program& p, std::vector<Array> inputs,
                std::vector<Array>& outputs, std::vector<ir::Value> scalars = {}) {
    auto prepared = backend.prepare(dsl::plan(p, backend.limits()), {});
    detail::RunArgs args;
    args.inputs = inputs;
    args.scalars = scalars;
    args.outputs = outputs;
    prepared->run(args);
}

}  // namespace jxtest

// Hand-built ir::Programs for the CPU backend tests and benchmarks (no parser involved).
#pragma once

#include "backend/backend.hpp"
#include "dsl/ir.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"

#include <jit/array.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

namespace jxtest {

using jit::DType;
using jit::Shape;
namespace ir = jit::ir;

inline Shape broadcast(const Shape& a, const Shape& b) {
    const std::size_t nd = std::max(a.size(), b.size());
    Shape r(nd, 1);
    for (std::size_t k = 0; k < nd; ++k) {
        const std::int64_t ea = k + a.size() >= nd ? a[k + a.size() - nd] : 1;
        const std::int64_t eb = k + b.size() >= nd ? b[k + b.size() - nd] : 1;
        r[k] = ea == 1 ? eb : ea;
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

    ir::NodeId input(DType t, Shape shape) {
        ir::InputDecl d;
        d.name = "in" + std::to_string(p.inputs.size());
        d.dtype = t;
        d.shape = shape;
        d.strides = jit::contiguous_strides(shape);
        p.inputs.push_back(d);
        ir::Node n;
        n.kind = ir::NodeKind::Input;
        n.dtype = t;
        n.shape = std::move(shape);
        n.slot = static_cast<int>(p.inputs.size()) - 1;
        return add(n);
    }
    ir::NodeId scalar(DType t) {
        ir::ScalarDecl d;
        d.name = 's';
        d.name += std::to_string(p.scalars.size());
        d.dtype = t;
        p.scalars.push_back(std::move(d));
        ir::Node n;
        n.kind = ir::NodeKind::Scalar;
        n.dtype = t;
        n.slot = static_cast<int>(p.scalars.size()) - 1;
        return add(n);
    }
    ir::NodeId constant(ir::Value v) {
        ir::Node n;
        n.kind = ir::NodeKind::Const;
        n.dtype = v.dtype;
        n.value = v;
        return add(n);
    }
    ir::NodeId fconst(double v, DType t) { return constant(ir::Value::of_float(v, t)); }
    // An op whose node dtype is `t` (operands must already have the operand dtype).
    ir::NodeId op(ir::Op o, DType t, std::initializer_list<ir::NodeId> args) {
        ir::Node n;
        n.kind = ir::NodeKind::Op;
        n.op = o;
        n.dtype = t;
        int k = 0;
        for (ir::NodeId a : args) {
            n.args[k++] = a;
            n.shape = broadcast(n.shape, node(a).shape);
        }
        n.nargs = static_cast<std::uint8_t>(k);
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
    ir::NodeId reduce(ir::Op o, ir::NodeId a, int axis, DType t) {
        ir::Node n;
        n.kind = ir::NodeKind::Reduce;
        n.op = o;
        n.dtype = t;
        n.args[0] = a;
        n.nargs = 1;
        n.axis = axis;
        if (axis >= 0) {
            n.shape = node(a).shape;
            n.shape.erase(n.shape.begin() + axis);
        }
        return add(n);
    }
    void output(ir::NodeId node_index, int alias_input = -1) {
        ir::OutputDecl o;
        o.name = "out" + std::to_string(p.outputs.size());
        o.node = node_index;
        o.alias_input = alias_input;
        p.outputs.push_back(o);
        p.result = node_index;
    }
    jit::Array make_output(std::size_t k) const {
        const ir::Node& n = node(p.outputs[k].node);
        return jit::Array::zeros(n.dtype, n.shape, jit::Backend::Cpu);
    }
};

// Runs a program on `backend` with the given inputs and outputs.
inline void run(jit::detail::BackendImpl& backend, const ir::Program& p, std::vector<jit::Array> inputs,
                std::vector<jit::Array>& outputs, std::vector<ir::Value> scalars = {}) {
    auto prepared = backend.prepare(jit::dsl::plan(p, backend.limits()), {});
    jit::detail::RunArgs args;
    args.inputs = inputs;
    args.scalars = scalars;
    args.outputs = outputs;
    prepared->run(args);
}

}  // namespace jxtest

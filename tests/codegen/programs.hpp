// Hand-built programs for the codegen tests: the IR structs are plain, so tests need neither the
// parser nor the checker. Each helper follows the invariants of dsl/ir.hpp (operands already of
// the op's operand dtype, shapes broadcast).
#pragma once

#include "dsl/ir.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"

#include <algorithm>
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

inline Strides c_strides(const Shape& s) {
    Strides st(s.size(), 1);
    for (std::size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
    return st;
}

struct Builder {
    ir::Program p;

    ir::NodeId add(ir::Node n) {
        p.nodes.push_back(n);
        return ir::NodeId(p.nodes.size() - 1);
    }
    const ir::Node& at(ir::NodeId i) const { return p.node(i); }

    ir::NodeId input(DType t, Shape s, Strides st = {}, std::string name = "") {
        if (st.empty()) st = c_strides(s);
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
    ir::NodeId op(ir::Op o, DType t, std::initializer_list<ir::NodeId> args) {
        ir::Node n;
        n.kind = ir::NodeKind::Op;
        n.op = o;
        n.dtype = t;
        Shape s;
        int k = 0;
        for (auto a : args) {
            n.args[k++] = a;
            s = broadcast(s, at(a).shape);
        }
        n.nargs = static_cast<std::uint8_t>(k);
        n.shape = s;
        return add(n);
    }
    ir::NodeId cast(ir::NodeId a, DType t) {
        ir::Node n;
        n.kind = ir::NodeKind::Cast;
        n.dtype = t;
        n.shape = at(a).shape;
        n.args[0] = a;
        n.nargs = 1;
        return add(n);
    }
    ir::NodeId reduce(ir::Op o, ir::NodeId a, DType t, int axis = -1) {
        ir::Node n;
        n.kind = ir::NodeKind::Reduce;
        n.op = o;
        n.dtype = t;
        n.axis = axis;
        n.args[0] = a;
        n.nargs = 1;
        if (axis >= 0) {
            n.shape = at(a).shape;
            n.shape.erase(n.shape.begin() + axis);
        }
        return add(n);
    }
    void output(ir::NodeId node, std::string name = "", std::int32_t alias = -1) {
        if (name.empty()) name = "user_out_" + std::to_string(p.outputs.size());
        ir::OutputDecl d;
        d.name = name;
        d.node = node;
        d.alias_input = alias;
        p.outputs.push_back(d);
        p.result = node;
    }
    ir::Schedule schedule() const { return ir::schedule(p); }
    // What a backend prepares: dsl::plan of the program within the backend's limits.
    ir::Plan plan(const dsl::Limits& limits = {}) const { return dsl::plan(p, limits); }
};

// c = a * 2 + b over n elements of `t` (16-bit floats compute in float32 registers).
inline Builder axpb(DType t, std::int64_t n = 1000) {
    Builder b;
    auto a = b.input(t, {n}, {}, "alpha_secret");
    auto y = b.input(t, {n}, {}, "beta_secret");
    auto two = is_integer(t) ? b.iconst(2, t) : b.fconst(2.0, t);
    auto m = b.op(ir::Op::Mul, t, {a, two});
    auto s = b.op(ir::Op::Add, t, {m, y});
    b.output(s, "gamma_secret");
    return b;
}

// d = where(a > 0, sin(a), b) in float64.
inline Builder where_sin(DType t = DType::Float64, std::int64_t n = 1000) {
    Builder b;
    auto a = b.input(t, {n}, {}, "alpha_secret");
    auto y = b.input(t, {n}, {}, "beta_secret");
    auto zero = b.fconst(0.0, t);
    auto gt = b.op(ir::Op::Gt, DType::Bool, {a, zero});
    auto sn = b.op(ir::Op::Sin, t, {a});
    auto w = b.op(ir::Op::Where, t, {gt, sn, y});
    b.output(w, "delta_secret");
    return b;
}

// c = a + row: a (rows, cols), row (cols,) broadcast along axis 0.
inline Builder broadcast_add(DType t = DType::Float32, std::int64_t rows = 37, std::int64_t cols = 45) {
    Builder b;
    auto a = b.input(t, {rows, cols}, {}, "matrix_secret");
    auto r = b.input(t, {cols}, {}, "row_secret");
    auto s = b.op(ir::Op::Add, t, {a, r});
    b.output(s, "sum_secret");
    return b;
}

// c = at * 3 where `at` is a transposed view: shape (rows, cols), strides (1, rows).
inline Builder transposed_scale(DType t = DType::Float32, std::int64_t rows = 33, std::int64_t cols = 65) {
    Builder b;
    auto a = b.input(t, {rows, cols}, {1, rows}, "view_secret");
    auto k = b.fconst(3.0, t);
    auto s = b.op(ir::Op::Mul, t, {a, k});
    b.output(s, "scaled_secret");
    return b;
}

// s = sum(a * x) with x a float64 scalar parameter cast to `t`.
inline Builder sum_scaled(DType t = DType::Float32, std::int64_t n = 1000) {
    Builder b;
    auto a = b.input(t, {n}, {}, "alpha_secret");
    auto x = b.scalar(DType::Float64, "x_secret");
    auto xc = b.cast(x, t);
    auto m = b.op(ir::Op::Mul, t, {a, xc});
    auto s = b.reduce(ir::Op::Sum, m, t);
    b.output(s, "total_secret");
    return b;
}

// r = op(a, axis) for a (rows, cols).
inline Builder reduce_axis(ir::Op op, int axis, DType t = DType::Float32, std::int64_t rows = 40,
                           std::int64_t cols = 70) {
    Builder b;
    auto a = b.input(t, {rows, cols}, {}, "matrix_secret");
    auto s = b.reduce(op, a, t, axis);
    b.output(s, "reduced_secret");
    return b;
}

// c = a - mean(a): a reduction read back by a later elementwise stage through a temporary.
inline Builder centered(DType t = DType::Float64, std::int64_t n = 1000) {
    Builder b;
    auto a = b.input(t, {n}, {}, "alpha_secret");
    auto m = b.reduce(ir::Op::Mean, a, t);
    auto d = b.op(ir::Op::Sub, t, {a, m});
    b.output(d, "centered_secret");
    return b;
}

}  // namespace jxtest

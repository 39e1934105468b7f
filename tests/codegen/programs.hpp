// Hand-built programs for the codegen tests, made with the tests' one IR builder
// (tests/support/ir_builder.hpp): no parser or checker involved.
#pragma once

#include "tests/support/ir_builder.hpp"

#include <string>

namespace jxtest {

using namespace jit;

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

// jitexpr — lowering, the statistics built of several passes: var/std, argmin/argmax, average and
// its weights (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

// The number of elements where `mask` is false, in dtype t, shaped as a reduction over ax.
ir::NodeId Lowerer::count_where_not(ir::NodeId mask, DType t, const Axes& ax, bool keep, SourceSpan span) {
    const ir::NodeId ones =
        cast(Val{op_node(Op::Not, DType::Bool, node(mask).shape, {mask}, span), Weak::None}, DType::Int64, span);
    return cast(Val{reduce_nodes(Op::Sum, ones, DType::Int64, ax, keep, span), Weak::None}, t, span);
}

// var, std, nanvar, nanstd: two passes (the mean, then the sum of squared deviations from
// it), each fused with x's expression; the mean is kept with the reduced axes so that it
// broadcasts against x.
ir::NodeId Lowerer::variance(Op op, ir::NodeId x, const Typed& t, const Axes& ax, bool keep, double ddof,
                             SourceSpan span) {
    const bool nan_aware = (op == Op::NanVar || op == Op::NanStd) && is_inexact(t.operand);
    const Shape in = node(x).shape;  // a copy: adding nodes moves them
    ir::NodeId r;
    if (!nan_aware) {
        const ir::NodeId m = reduce_nodes(Op::Mean, x, t.operand, ax, true, span);
        const ir::NodeId dev = binop(Op::Sub, x, m, span);
        const ir::NodeId s = reduce_nodes(Op::Sum, abs2(dev, span), t.result, ax, keep, span);
        const double n = static_cast<double>(reduced_count(in, ax));
        r = binop(Op::Div, s, const_of(std::max(n - ddof, 0.0), t.result, span), span);
    } else {
        const ir::NodeId nan = isnan_of(x, span);
        const ir::NodeId zero = const_of(0, t.operand, span);
        const ir::NodeId cnt_k = count_where_not(nan, t.operand, ax, true, span);
        const ir::NodeId m =
            binop(Op::Div, reduce_nodes(Op::Sum, select(nan, zero, x, span), t.operand, ax, true, span), cnt_k, span);
        const ir::NodeId dev = select(nan, zero, binop(Op::Sub, x, m, span), span);
        const ir::NodeId s = reduce_nodes(Op::Sum, abs2(dev, span), t.result, ax, keep, span);
        // The count in the result's shape: the kept one, or it folded over its axes of extent 1.
        const ir::NodeId cnt =
            keep ? cast(Val{cnt_k, Weak::None}, t.result, span)
                 : reduce_nodes(Op::Sum, cast(Val{cnt_k, Weak::None}, t.result, span), t.result, ax, false, span);
        const ir::NodeId dof = binop(Op::Sub, cnt, const_of(ddof, t.result, span), span);
        // NumPy: NaN where no degree of freedom is left (also where every element is NaN).
        const ir::NodeId bad = binop(Op::Le, dof, const_of(0, t.result, span), span);
        r = select(bad, const_of(std::numeric_limits<double>::quiet_NaN(), t.result, span),
                   binop(Op::Div, s, dof, span), span);
    }
    if (op == Op::Std || op == Op::NanStd) r = op_node(Op::Sqrt, t.result, node(r).shape, {r}, span);
    return r;
}

// argmin, argmax: the extreme (NaN when there is one), then the first position that holds
// it (or a NaN): two passes, each fused with x's expression. Positions are flat (C order)
// without an axis, along the axis with one.
ir::NodeId Lowerer::arg_extreme(Op op, ir::NodeId x, const Axes& ax, bool keep, SourceSpan span) {
    const Axes& one = ax;
    const ir::NodeId m =
        reduce_nodes(op == Op::ArgMin ? Op::ReduceMin : Op::ReduceMax, x, node(x).dtype, one, true, span);
    ir::NodeId hit = binop(Op::Eq, x, m, span);
    if (is_inexact(node(x).dtype))
        hit = binop(Op::Or, hit, binop(Op::And, isnan_of(x, span), isnan_of(m, span), span), span);
    return reduce_nodes(Op::ArgFirst, hit, DType::Int64, one, keep, span);
}

// average(x), average(x, axis), average(x, axis, weights): the mean, or sum(x * w) / sum(w),
// NumPy's rules for w: x's shape, or (with an axis) the shape of x along the axes, in their
// order, broadcast along them (a 1-d w of a square x weighs its rows for axis=0).
// With `sel` (x is the values of a selection reduced along its other axes, which are
// shifted by sel->axes - 1), weights are a selection by the same mask of the same shape,
// or an array along those axes.
ir::NodeId Lowerer::average(ir::NodeId x, const Typed& t, const Expr* weights, const Expr* axis_e, const Axes& ax,
                            bool keep, const std::string& fname, SourceSpan span, const Sel* sel) {
    if (!weights) return reduce_nodes(Op::Mean, x, t.result, ax, keep, span);
    const Val w0 = strong(expr(*weights));
    if (temporal(w0))
        type_error(fmt::format("{}(): weights= are numbers, not {}", fname, dtype_name(dt(w0))), weights->span);
    Val w = selected_weights(w0, sel, *weights, fname);
    DType p = promote(t.operand, dt(w));
    if (is_bool(p) || is_integer(p)) p = DType::Float64;
    const Shape in = node(x).shape;  // a copy: adding nodes moves them
    const std::int32_t shift = sel ? sel->axes - 1 : 0;
    if (w0.selected() || (!sel && shape(w) == in)) {
        if (shape(w) != in)
            throw ValueError(fmt::format("{}(): the weights of a boolean-mask selection must have its shape", fname),
                             text_, weights->span);
    } else {
        if (ax.all) type_error("Axis must be specified when shapes of a and weights differ.", weights->span);
        // The axes in the order given (NumPy transposes w to theirs).
        const auto nd = static_cast<std::int32_t>(in.size()) - shift;
        std::vector<std::int32_t> order;
        if (axis_e->kind == ExprKind::Tuple) {
            for (const auto& item : axis_e->operands)
                order.push_back(axes_of(item.get(), nd, true, fname).list.at(0) + shift);
        } else {
            order = ax.list;
        }
        Shape want;
        for (const std::int32_t a : order) want.push_back(in[static_cast<std::size_t>(a)]);
        if (shape(w) != want)
            throw ValueError("Shape of weights must be consistent with shape of a along specified axis.", text_,
                             weights->span);
        if (!std::is_sorted(order.begin(), order.end()))
            throw ValueError(fmt::format("{}(): weights along axes given out of increasing order are not "
                                         "supported (give the axes in increasing order)",
                                         fname),
                             text_, axis_e->span);
        View v;
        v.out.assign(in.size(), 1);
        for (std::size_t i = 0; i < order.size(); ++i) {
            const auto a = static_cast<std::size_t>(order[i]);
            v.out[a] = in[a];
            v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(a)});
        }
        view_memo_.clear();
        w.node = view_of(w.node, v, weights->span);
    }
    const ir::NodeId xs = cast(Val{x, Weak::None}, p, span), ws = cast(Val{w.node, Weak::None}, p, span);
    const ir::NodeId wb = shape(w) == in ? ws : cast_to_shape(ws, in, span);
    const ir::NodeId num = reduce_nodes(Op::Sum, binop(Op::Mul, xs, wb, span), p, ax, keep, span);
    const ir::NodeId den = reduce_nodes(Op::Sum, wb, p, ax, keep, span);
    require_nonzero_weights(den, fname, span);
    return binop(Op::Div, num, den, span);
}

// NumPy's ZeroDivisionError for weights that sum to zero (a ValueError here, as for 1 / 0
// between literals), raised when the program has run: never a NaN that looks computed.
void Lowerer::require_nonzero_weights(ir::NodeId den, const std::string& fname, SourceSpan span) {
    ir::NodeId ok = binop(Op::Ne, den, const_of(0, node(den).dtype, span), span);
    if (!node(ok).shape.empty()) ok = reduce_nodes(Op::All, ok, DType::Bool, Axes{}, false, span);
    checks_.push_back(PendingCheck{ok, fmt::format("{}(): weights sum to zero, can't be normalized", fname), span});
}

// average()'s weights: a selection only where the array is one, by the same mask; its
// values (before selection) are returned.
Val Lowerer::selected_weights(Val w, const Sel* sel, const Expr& we, const std::string& fname) {
    if (!w.selected()) return w;
    if (!sel)
        throw ValueError(fmt::format("{}(): weights are a boolean-mask selection but the array is not one", fname),
                         text_, we.span);
    if (w.mask_axes != sel->axes || !same_value(w.mask, sel->mask))
        throw ValueError(fmt::format("{}(): the weights of a boolean-mask selection must be selected by the same mask "
                                     "(weights=w[m])",
                                     fname),
                         text_, we.span);
    return Val{w.node, Weak::None};
}

}  // namespace jit::dsl::lowering

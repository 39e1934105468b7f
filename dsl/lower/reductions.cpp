// jitexpr — lowering, reductions and scans: their axes and arguments, plain and masked reductions,
// order statistics (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

// NumPy's positional parameters after the array (only those jitexpr reads).
std::vector<std::string_view> Lowerer::positional_params(Op op) {
    if (op == Op::Average) return {"axis", "weights"};
    if (takes_q(op)) return {"q", "axis"};
    return {"axis"};
}

bool Lowerer::takes_q(Op op) {
    return op == Op::Percentile || op == Op::Quantile || op == Op::NanPercentile || op == Op::NanQuantile;
}

bool Lowerer::takes_keyword(Op op, std::string_view k) {
    if (k == "axis") return true;
    if (k == "keepdims") return ir::info(op).kind == OpKind::Reduction;
    if (k == "ddof") return takes_ddof(op);
    if (k == "weights") return op == Op::Average;
    if (k == "q") return takes_q(op);
    return false;
}

Lowerer::Axes Lowerer::axes_of(const Expr* e, std::int32_t nd, bool one_only, const std::string& fname) const {
    Axes r;
    if (!e) return r;
    if (e->kind == ExprKind::Name && e->text == "None") return r;
    std::vector<const Expr*> items;
    if (e->kind == ExprKind::Tuple) {
        if (one_only)
            throw TypeError(fmt::format("{}() takes one axis (an integer or None), not a tuple", fname), text_,
                            e->span);
        for (const auto& o : e->operands) items.push_back(o.get());
    } else {
        items.push_back(e);
    }
    r.all = false;
    for (const Expr* it : items) {
        std::int64_t k = constant_int(*it);
        if (k < -nd || k >= nd)
            throw ShapeError(
                fmt::format("axis {} is out of bounds for an array of {} dimension{}", k, nd, nd == 1 ? "" : "s"),
                text_, it->span);
        if (k < 0) k += nd;
        if (std::find(r.list.begin(), r.list.end(), static_cast<std::int32_t>(k)) != r.list.end())
            throw ValueError("duplicate value in 'axis'", text_, it->span);
        r.list.push_back(static_cast<std::int32_t>(k));
    }
    std::sort(r.list.begin(), r.list.end());
    return r;
}

bool Lowerer::keepdims_of(const Expr* e) const {
    if (!e) return false;
    if (e->kind == ExprKind::Bool) return e->bool_value;
    if (e->kind == ExprKind::Int && !e->int_big && e->int_value <= 1) return e->int_value == 1;
    throw ValueError("keepdims must be True or False", text_, e->span);
}

double Lowerer::number_of(const Expr& e, std::string_view what) const {
    const Expr* x = &e;
    const bool neg = x->kind == ExprKind::Unary && x->ops.at(0) == Op::Neg;
    if (neg) x = x->operands.at(0).get();
    double v = 0;
    if (x->kind == ExprKind::Int && !x->int_big) v = static_cast<double>(x->int_value);
    else if (x->kind == ExprKind::Float) v = x->float_value;
    else throw ValueError(fmt::format("{} must be a number literal", what), text_, e.span);
    return neg ? -v : v;
}

Shape Lowerer::reduced_shape(const Shape& in, const Axes& ax, bool keepdims) {
    Shape r;
    for (std::size_t d = 0; d < in.size(); ++d) {
        if (!ax.has(d)) r.push_back(in[d]);
        else if (keepdims) r.push_back(1);
    }
    return r;
}

std::int64_t Lowerer::reduced_count(const Shape& in, const Axes& ax) {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < in.size(); ++d)
        if (ax.has(d)) n *= in[d];
    return n;
}

// A reduction without an identity (min, max, argmin, ptp, nanmin) of no element: NumPy's error.
void Lowerer::check_nonempty(Op op, const Shape& in, const Axes& ax, SourceSpan span) const {
    const ir::Rule r = ir::info(op).rule;
    if (r != ir::Rule::MinMaxReduce && r != ir::Rule::ArgReduce && r != ir::Rule::PtpReduce) return;
    if (reduced_count(in, ax) != 0) return;
    throw ValueError(fmt::format("{}() of an empty array has no value", ir::spelling(op)), text_, span);
}

// Reduce nodes of `op`, a reduction the backends run (Sum, Prod, ReduceMin, ReduceMax, Mean,
// Any, All, ArgFirst), over `ax`; x has the op's operand dtype, `result` is the nodes' dtype.
// Every axis (or all of them) is one node; several axes are folded one at a time, the
// highest first, each a stage of its own (the first fused with x's expression, the later
// ones over the smaller results). The last node has the requested shape (keepdims: extent 1
// where reduced); a mean over several axes is a sum divided by the count.
ir::NodeId Lowerer::reduce_nodes(Op op, ir::NodeId x, DType result, const Axes& ax, bool keepdims, SourceSpan span) {
    x = half_rounded(x, span);
    const Shape in = node(x).shape;
    const auto nd = static_cast<std::int32_t>(in.size());
    Shape final_shape = reduced_shape(in, ax, keepdims);
    auto make = [&](Op o, ir::NodeId arg, std::int32_t axis, Shape s) {
        Node n;
        n.kind = NodeKind::Reduce;
        n.op = o;
        n.dtype = result;
        n.shape = std::move(s);
        n.args[0] = arg;
        n.nargs = 1;
        n.axis = axis;
        n.span = span;
        return add(std::move(n));
    };
    if (!ax.all && ax.list.empty()) internal_error("a reduction over no axis");
    if (ax.all || static_cast<std::int32_t>(ax.list.size()) == nd) return make(op, x, -1, std::move(final_shape));
    if (ax.list.size() == 1) return make(op, x, ax.list[0], std::move(final_shape));
    if (op == Op::ArgFirst) internal_error("argfirst over several axes");
    const bool half = result == DType::Float16 || result == DType::BFloat16;
    if (op == Op::Mean && half) {  // the partial sums in float32, as NumPy's float16 mean
        const ir::NodeId wide = cast(Val{x, Weak::None}, DType::Float32, span);
        return cast(Val{reduce_nodes(op, wide, DType::Float32, ax, keepdims, span), Weak::None}, result, span);
    }
    const Op step = op == Op::Mean ? Op::Sum : op;
    ir::NodeId cur = x;
    for (std::size_t k = ax.list.size(); k-- > 0;) {
        Shape s = node(cur).shape;
        s.erase(s.begin() + ax.list[k]);
        cur = make(step, cur, ax.list[k], k == 0 ? final_shape : std::move(s));
    }
    if (op == Op::Mean) cur = divide_by_count(cur, reduced_count(in, ax), span);
    return cur;
}

// The arguments after the array of a reduction's or scan's call, by parameter name:
// positional ones (positional_params) and keywords (takes_keyword), each given once.
std::map<std::string_view, const Expr*> Lowerer::axis_call_arguments(const ir::OpInfo& fn, const Expr& e) const {
    const std::string& fname = e.text;
    const Op op = fn.op;
    const auto params = positional_params(op);
    if (e.operands.size() > params.size() + 1)
        throw TypeError(fmt::format("{}() takes at most {} positional arguments ({} given)", fname, params.size() + 1,
                                    e.operands.size()),
                        text_, e.operands[params.size() + 1]->span);
    std::map<std::string_view, const Expr*> given;
    for (std::size_t k = 1; k < e.operands.size(); ++k) given[params[k - 1]] = e.operands[k].get();
    for (const syntax::Keyword& k : e.keywords) {
        if (!takes_keyword(op, k.name))
            throw TypeError(fmt::format("{}() got an unexpected keyword argument '{}'", fname, k.name), text_,
                            k.name_span);
        if (given.count(k.name))
            throw TypeError(fmt::format("{}() got multiple values for argument '{}'", fname, k.name), text_,
                            k.name_span);
        given[k.name] = k.value.get();
    }
    return given;
}

Val Lowerer::reduction_call(const ir::OpInfo& fn, const Expr& e) {
    const std::string& fname = e.text;
    const Op op = fn.op;
    const SourceSpan span = e.span;
    const std::map<std::string_view, const Expr*> given = axis_call_arguments(fn, e);
    auto arg = [&](std::string_view n) -> const Expr* {
        const auto it = given.find(n);
        return it == given.end() ? nullptr : it->second;
    };
    const Val a = strong(expr(*e.operands[0]));
    if (temporal(a)) return temporal_reduction(op, fname, a, arg, span);
    if (a.selected()) return masked_reduction(op, fname, a, arg, span);
    if (is_order_stat(op)) return order_statistic(op, a, arg, fname, span);
    rule(op, dt(a), span);  // the operand's dtype first, as NumPy finds no loop before it checks an axis
    const Axes ax =
        axes_of(arg("axis"), static_cast<std::int32_t>(shape(a).size()), op == Op::ArgMin || op == Op::ArgMax, fname);
    return plain_reduction(op, a, ax, keepdims_of(arg("keepdims")), arg, fname, span, nullptr);
}

// The reduction `op` of a (no selection) along ax. `sel`: the selection a was taken from,
// when a reduction of it along its other axes is this one of its values (then selected).
template <class Arg>
Val Lowerer::plain_reduction(Op op, const Val& a, const Axes& ax, bool keep, Arg&& arg, const std::string& fname,
                             SourceSpan span, const Sel* sel) {
    const Shape in = shape(a);
    Typed t = rule(op, dt(a), span);
    const double ddof = arg("ddof") ? number_of(*arg("ddof"), "ddof") : 0.0;
    check_nonempty(op, in, ax, span);
    ir::NodeId x = cast(Val{a.node, Weak::None}, t.operand, span);
    // The statistics of 16-bit floats are computed in float32 (counts and means included)
    // and rounded once at the end.
    const bool statistic = op == Op::Var || op == Op::Std || op == Op::NanVar || op == Op::NanStd ||
                           op == Op::NanMean || (op == Op::Average && !arg("weights"));
    const DType half_result = t.result;
    const bool half = statistic && (t.operand == DType::Float16 || t.operand == DType::BFloat16);
    if (half) {
        x = cast(Val{x, Weak::None}, DType::Float32, span);
        t = Typed{DType::Float32, DType::Float32};
    }
    const bool floating = is_inexact(t.operand);
    ir::NodeId r;
    switch (op) {
        case Op::NanSum:
        case Op::NanProd: {
            const ir::NodeId v =
                floating ? select(isnan_of(x, span), const_of(op == Op::NanSum ? 0 : 1, t.operand, span), x, span) : x;
            r = reduce_nodes(op == Op::NanSum ? Op::Sum : Op::Prod, v, t.result, ax, keep, span);
            break;
        }
        case Op::NanMean: {
            if (!floating) {
                r = reduce_nodes(Op::Mean, x, t.result, ax, keep, span);
                break;
            }
            const ir::NodeId nan = isnan_of(x, span);
            const ir::NodeId s =
                reduce_nodes(Op::Sum, select(nan, const_of(0, t.operand, span), x, span), t.result, ax, keep, span);
            r = binop(Op::Div, s, count_where_not(nan, t.result, ax, keep, span), span);
            break;
        }
        case Op::NanMin:
        case Op::NanMax: {
            const Op base = op == Op::NanMin ? Op::ReduceMin : Op::ReduceMax;
            if (!floating) {
                r = reduce_nodes(base, x, t.result, ax, keep, span);
                break;
            }
            const double inf = std::numeric_limits<double>::infinity();
            const ir::NodeId nan = isnan_of(x, span);
            const ir::NodeId filled = select(nan, const_of(op == Op::NanMin ? inf : -inf, t.operand, span), x, span);
            const ir::NodeId m = reduce_nodes(base, filled, t.result, ax, keep, span);
            const ir::NodeId all_nan = reduce_nodes(Op::All, nan, DType::Bool, ax, keep, span);
            r = select(all_nan, const_of(std::numeric_limits<double>::quiet_NaN(), t.result, span), m, span);
            break;
        }
        case Op::Var:
        case Op::Std:
        case Op::NanVar:
        case Op::NanStd: r = variance(op, x, t, ax, keep, ddof, span); break;
        case Op::CountNonzero: {
            const ir::NodeId b = cast(Val{a.node, Weak::None}, DType::Bool, span);
            r = reduce_nodes(Op::Sum, cast(Val{b, Weak::None}, DType::Int64, span), DType::Int64, ax, keep, span);
            break;
        }
        case Op::Ptp: {
            const ir::NodeId hi = reduce_nodes(Op::ReduceMax, x, t.result, ax, keep, span);
            const ir::NodeId lo = reduce_nodes(Op::ReduceMin, x, t.result, ax, keep, span);
            r = binop(Op::Sub, hi, lo, span);
            break;
        }
        case Op::ArgMin:
        case Op::ArgMax: r = arg_extreme(op, x, ax, keep, span); break;
        case Op::Average: r = average(x, t, arg("weights"), arg("axis"), ax, keep, fname, span, sel); break;
        default: r = reduce_nodes(op, x, t.result, ax, keep, span); break;
    }
    if (half && node(r).dtype != half_result) r = cast(Val{r, Weak::None}, half_result, span);
    return Val{r, Weak::None};
}

// The most or least value of dtype t: the identity of min (max: false) and max (true).
ir::Value Lowerer::extreme(DType t, bool largest) {
    if (is_bool(t)) return ir::Value::of_bool(largest);
    if (is_inexact(t))
        return ir::Value::of_float(largest ? std::numeric_limits<double>::infinity()
                                           : -std::numeric_limits<double>::infinity())
            .cast(t);
    const int bits = static_cast<int>(itemsize(t)) * 8;
    if (is_unsigned_int(t))
        return ir::Value::of_uint(largest ? (bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1) : 0, t);
    const std::int64_t hi = bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (bits - 1)) - 1;
    return ir::Value::of_int(largest ? hi : -hi - 1, t);
}

// A reduction of a boolean-mask selection (sum(b[m]), mean(b[a > 0]), ...): a reduction of
// the values before selection with the unselected ones made neutral (sum(where(m, b, 0)),
// min with the dtype's largest value, a mean divided by the mask's count), fused with the
// mask and the values in one pass; nothing is compacted. Over every element, or along the
// selection's first axis (axis=0: the mask's axes); min and max of an empty selection are
// NumPy's ValueError, raised when the program has run (ir::RunCheck).
template <class Arg>
Val Lowerer::masked_reduction(Op op, const std::string& fname, const Val& a, Arg&& arg, SourceSpan span) {
    const ir::NodeId mask = a.mask;
    const auto k = static_cast<std::size_t>(a.mask_axes);
    const Val x0{a.node, Weak::None};
    const Shape full = shape(x0);
    const auto rank = static_cast<std::int32_t>(1 + full.size() - k);  // the selection's dimensions
    Typed t = rule(op, dt(x0), span);
    const Axes sel_axes = axes_of(arg("axis"), rank, op == Op::ArgMin || op == Op::ArgMax, fname);
    const bool keep = keepdims_of(arg("keepdims"));
    const double ddof = arg("ddof") ? number_of(*arg("ddof"), "ddof") : 0.0;
    const Op base_op = op == Op::Average && !arg("weights") ? Op::Mean : op;
    Axes ax;  // over the values before selection
    if (!sel_axes.all && sel_axes.list.front() != 0) {
        // Along the selection's other axes only: the same reduction of the values before
        // selection, then selected (sum(c[m], axis=1) is sum(c, axis=1)[m]); the mask loses
        // the reduced axes (of extent 1 in it), or keeps them with keepdims.
        if (is_order_stat(op))
            throw ValueError(fmt::format("{}() of a boolean-mask selection is not supported", fname), text_, span);
        ax.all = false;
        for (const std::int32_t j : sel_axes.list) ax.list.push_back(j - 1 + static_cast<std::int32_t>(k));
        const Sel sel{mask, a.mask_axes};
        Val r = plain_reduction(op, x0, ax, keep, arg, fname, span, &sel);
        ir::NodeId m = mask;
        if (!keep) {
            View v;
            const Shape& ms = node(mask).shape;
            for (std::size_t d = 0; d < ms.size(); ++d) {
                if (ax.has(d)) {
                    v.axes.push_back(ViewAxis{0, 1, -1});
                } else {
                    v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(v.out.size())});
                    v.out.push_back(ms[d]);
                }
            }
            view_memo_.clear();
            m = view_of(mask, v, span);
        }
        return reselect(r, Sel{m, a.mask_axes});
    }
    if (!sel_axes.all) {
        ax.all = false;
        for (std::size_t d = 0; d < k; ++d) ax.list.push_back(static_cast<std::int32_t>(d));
        for (std::size_t j = 1; j < sel_axes.list.size(); ++j)
            ax.list.push_back(sel_axes.list[j] - 1 + static_cast<std::int32_t>(k));
        if (ax.list.size() == full.size()) ax = Axes{};
    }
    if (keep && k > 1)
        throw ValueError("keepdims=True on a selection by a mask of several axes is not supported", text_, span);
    ir::NodeId x = cast(x0, t.operand, span);
    // 16-bit floats: the means and statistics in float32, rounded once at the end.
    const DType final_result = t.result;
    const bool half = (t.operand == DType::Float16 || t.operand == DType::BFloat16) &&
                      (base_op == Op::Mean || base_op == Op::NanMean || ir::info(op).rule == ir::Rule::VarReduce);
    if (half) {
        x = cast(Val{x, Weak::None}, DType::Float32, span);
        t = Typed{DType::Float32, DType::Float32};
    }
    const bool floating = is_inexact(t.operand);
    const bool nan_form = op == Op::NanSum || op == Op::NanProd || op == Op::NanMean || op == Op::NanMin ||
                          op == Op::NanMax || op == Op::NanVar || op == Op::NanStd;
    // The elements that count: the selected ones (and not NaN, for the nan-forms).
    ir::NodeId counted = mask;
    if (nan_form && floating)
        counted = binop(Op::And, mask, op_node(Op::Not, DType::Bool, node(x).shape, {isnan_of(x, span)}, span), span);
    auto full_shape = [&](ir::NodeId m) { return node(m).shape == full ? m : cast_to_shape(m, full, span); };
    auto count = [&](DType d, bool keepdims) {
        const ir::NodeId ones = cast(Val{full_shape(counted), Weak::None}, DType::Int64, span);
        return cast(Val{reduce_nodes(Op::Sum, ones, DType::Int64, ax, keepdims, span), Weak::None}, d, span);
    };
    auto neutral = [&](double v) { return select(counted, x, const_of(v, t.operand, span), span); };
    // No element to reduce: none selected, or a reduced axis of the values (past the mask's)
    // of extent 0. An axis that is not reduced may be empty (max(x[m], axis=0) of a (1, 0) x is
    // an empty result, as NumPy's): the mask is tested as it is, not spread over the values.
    auto require_selection = [&] {
        for (std::size_t d = k; d < full.size(); ++d)
            if (ax.has(d) && full[d] == 0)
                throw ValueError(fmt::format("{}() of an empty array has no value", ir::spelling(op)), text_, span);
        const ir::NodeId any = reduce_nodes(Op::Any, mask, DType::Bool, Axes{}, false, span);
        checks_.push_back(
            PendingCheck{any, fmt::format("{}() of an empty array has no value", ir::spelling(op)), span});
    };
    ir::NodeId r;
    switch (base_op) {  // average without weights= is the mean
        case Op::Sum:
        case Op::NanSum: r = reduce_nodes(Op::Sum, neutral(0), t.result, ax, keep, span); break;
        case Op::Prod:
        case Op::NanProd: r = reduce_nodes(Op::Prod, neutral(1), t.result, ax, keep, span); break;
        case Op::Mean:
        case Op::NanMean:
            r = binop(Op::Div, reduce_nodes(Op::Sum, neutral(0), t.result, ax, keep, span), count(t.result, keep),
                      span);
            break;
        case Op::ReduceMin:
        case Op::ReduceMax:
        case Op::NanMin:
        case Op::NanMax:
        case Op::Ptp: {
            require_selection();
            auto extreme_of = [&](bool largest) {
                const Op red = largest ? Op::ReduceMax : Op::ReduceMin;
                const ir::NodeId id = constant(extreme(t.operand, !largest), span);
                return reduce_nodes(red, select(counted, x, id, span), t.result, ax, keep, span);
            };
            if (op == Op::Ptp) {
                r = binop(Op::Sub, extreme_of(true), extreme_of(false), span);
            } else {
                r = extreme_of(op == Op::ReduceMax || op == Op::NanMax);
                if (nan_form && floating) {  // NaN where every selected element is NaN
                    const ir::NodeId some = reduce_nodes(Op::Any, full_shape(counted), DType::Bool, ax, keep, span);
                    r = select(op_node(Op::Not, DType::Bool, node(some).shape, {some}, span),
                               const_of(std::numeric_limits<double>::quiet_NaN(), t.result, span), r, span);
                }
            }
            break;
        }
        case Op::Any:
            r = reduce_nodes(Op::Any, full_shape(binop(Op::And, mask, x, span)), DType::Bool, ax, keep, span);
            break;
        case Op::All: {
            const ir::NodeId skip = op_node(Op::Not, DType::Bool, node(mask).shape, {mask}, span);
            r = reduce_nodes(Op::All, full_shape(binop(Op::Or, skip, x, span)), DType::Bool, ax, keep, span);
            break;
        }
        case Op::Average: {  // with weights= (without, it is the mean)
            const Expr* we = arg("weights");
            const Val w = strong(expr(*we));
            if (temporal(w))
                type_error(fmt::format("{}(): weights= are numbers, not {}", fname, dtype_name(dt(w))), we->span);
            auto not_same_mask = [&] {
                throw ValueError(fmt::format("{}(): the weights of a boolean-mask selection must be selected by "
                                             "the same mask (weights=w[m])",
                                             fname),
                                 text_, we->span);
            };
            if (!w.selected() || w.mask_axes != a.mask_axes) not_same_mask();
            ir::NodeId wv = w.node, wm = w.mask;
            const Shape wfull = broadcast(shape(w), node(w.mask).shape, we->span);
            if (wfull != full) {
                // NumPy's rule for weights of another shape: along the axis, here the
                // selected one (w[m] of x[m] along axis 0), broadcast along it.
                if (ax.all) type_error("Axis must be specified when shapes of a and weights differ.", we->span);
                if (wfull.size() != k || sel_axes.list.size() != 1)
                    throw ValueError("Shape of weights must be consistent with shape of a along specified axis.", text_,
                                     we->span);
                View v;
                v.out.assign(full.size(), 1);
                for (std::size_t d = 0; d < k; ++d) {
                    v.out[d] = full[d];
                    v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
                }
                view_memo_.clear();
                wv = view_of(wv, v, we->span);
                view_memo_.clear();
                wm = view_of(wm, v, we->span);
            }
            if (!same_value(wm, mask)) not_same_mask();
            DType p = promote(t.operand, dt(w));
            if (is_bool(p) || is_integer(p)) p = DType::Float64;
            const ir::NodeId xs = cast(Val{x, Weak::None}, p, span), ws = cast(Val{wv, Weak::None}, p, span);
            const ir::NodeId zero = const_of(0, p, span);
            const ir::NodeId num = reduce_nodes(
                Op::Sum, full_shape(select(counted, binop(Op::Mul, xs, ws, span), zero, span)), p, ax, keep, span);
            const ir::NodeId den =
                reduce_nodes(Op::Sum, full_shape(select(counted, ws, zero, span)), p, ax, keep, span);
            require_nonzero_weights(den, fname, span);
            return Val{binop(Op::Div, num, den, span), Weak::None};  // NumPy's dtype: x's and w's, promoted
        }
        case Op::ArgMin:
        case Op::ArgMax: {
            // The index into the selected values: the number of them before the first that
            // is the least (greatest; the first NaN if any), found with two running counts
            // (cumsum) of the selected elements and of the hits, in the selection's order.
            require_selection();
            if (!ax.all && k > 1)
                throw ValueError(fmt::format("{}() along the selected axis of a selection by a mask of several "
                                             "axes is not supported (select with a 1-d mask, or over every "
                                             "element)",
                                             fname),
                                 text_, span);
            const bool largest = op == Op::ArgMax;
            const ir::NodeId id = constant(extreme(t.operand, !largest), span);
            const ir::NodeId best = reduce_nodes(largest ? Op::ReduceMax : Op::ReduceMin,
                                                 full_shape(select(mask, x, id, span)), t.operand, ax, true, span);
            ir::NodeId hit = binop(Op::Eq, x, best, span);
            if (is_inexact(t.operand))
                hit = binop(Op::Or, hit, binop(Op::And, isnan_of(x, span), isnan_of(best, span), span), span);
            hit = full_shape(binop(Op::And, mask, hit, span));
            const std::int32_t along = ax.all ? -1 : 0;
            const ir::NodeId before =
                scan_sum(cast(Val{full_shape(mask), Weak::None}, DType::Int64, span), along, span);
            const ir::NodeId seen = scan_sum(cast(Val{hit, Weak::None}, DType::Int64, span), along, span);
            const ir::NodeId zero = const_of(0, DType::Int64, span);
            const ir::NodeId counted_before = select(binop(Op::Eq, seen, zero, span), before, zero, span);
            if (ax.all) {
                r = reduce_nodes(Op::ReduceMax, counted_before, DType::Int64, Axes{}, false, span);
                if (keep) r = cast_to_shape(r, Shape(static_cast<std::size_t>(rank), 1), span);
            } else {
                r = reduce_nodes(Op::ReduceMax, counted_before, DType::Int64, ax, keep, span);
            }
            break;
        }
        case Op::CountNonzero: {
            const ir::NodeId nz = binop(Op::And, mask, cast(x0, DType::Bool, span), span);
            const ir::NodeId ones = cast(Val{full_shape(nz), Weak::None}, DType::Int64, span);
            r = reduce_nodes(Op::Sum, ones, DType::Int64, ax, keep, span);
            break;
        }
        case Op::Var:
        case Op::Std:
        case Op::NanVar:
        case Op::NanStd: {
            const ir::NodeId zero = const_of(0, t.operand, span);
            const ir::NodeId cnt_k = count(t.operand, true);
            const ir::NodeId m =
                binop(Op::Div, reduce_nodes(Op::Sum, neutral(0), t.operand, ax, true, span), cnt_k, span);
            const ir::NodeId dev = select(counted, binop(Op::Sub, x, m, span), zero, span);
            const ir::NodeId sq = reduce_nodes(Op::Sum, abs2(full_shape(dev), span), t.result, ax, keep, span);
            const ir::NodeId dof = binop(Op::Sub, count(t.result, keep), const_of(ddof, t.result, span), span);
            if (nan_form) {  // NaN where no degree of freedom is left
                const ir::NodeId bad = binop(Op::Le, dof, const_of(0, t.result, span), span);
                r = select(bad, const_of(std::numeric_limits<double>::quiet_NaN(), t.result, span),
                           binop(Op::Div, sq, dof, span), span);
            } else {  // NumPy's max(n - ddof, 0)
                r = binop(Op::Div, sq, binop(Op::Maximum, dof, const_of(0, t.result, span), span), span);
            }
            if (op == Op::Std || op == Op::NanStd) r = op_node(Op::Sqrt, t.result, node(r).shape, {r}, span);
            break;
        }
        default: throw ValueError(fmt::format("{}() of a boolean-mask selection is not supported", fname), text_, span);
    }
    if (node(r).dtype != final_result) r = cast(Val{r, Weak::None}, final_result, span);
    return Val{r, Weak::None};
}

// cumsum(x), cumsum(x, axis), cumsum(x, axis=k | None) and the other scans: one Scan node
// over x's expression (the stage that scans computes it), NumPy's dtypes (those of sum and
// prod). Without an axis, or on a 0-d or 1-d x, the scan runs over every element in C order
// and gives a 1-d result (NumPy takes a 0-d x as 1-d, so its axis may be 0 or -1).
// nancumsum/nancumprod scan x with NaN replaced by 0/1 first (what NumPy does).
// A reduction of dates or durations (NumPy 2's): min and max of either, NaT where any element is;
// sum and mean of durations, NaT where any element is (the mean rounded towards zero, and NaT for
// no element); any, all and count_nonzero of the counts. Each is int64 reductions of the counts
// (the selected ones for a selection), so every path of those (axes, keepdims, masks) serves.
template <class Arg>
Val Lowerer::temporal_reduction(Op op, const std::string& fname, const Val& a, Arg&& arg, SourceSpan span) {
    const DType t = dt(a);
    const bool counts_only = op == Op::Any || op == Op::All || op == Op::CountNonzero;
    const bool ok = counts_only || op == Op::ReduceMin || op == Op::ReduceMax ||
                    ((op == Op::Sum || op == Op::Mean) && is_timedelta(t));
    if (!ok)
        type_error(fmt::format("{}() is not supported for {}{}", fname, dtype_name(t),
                               (op == Op::Sum || op == Op::Mean) ? " (a sum of dates has no meaning)" : ""),
                   span);
    auto reduce = [&](Op o, const Val& v) -> ir::NodeId {
        if (v.selected()) return masked_reduction(o, fname, v, arg, span).node;
        rule(o, dt(v), span);
        const Axes ax = axes_of(arg("axis"), static_cast<std::int32_t>(shape(v).size()), false, fname);
        return plain_reduction(o, v, ax, keepdims_of(arg("keepdims")), arg, fname, span, nullptr).node;
    };
    if (op == Op::ReduceMax) {
        // NaT must win, but is the least count: max(x - 1) + 1 in wrapping int64 (NaT - 1 is the
        // greatest count, and + 1 makes it NaT again): one reduction, no test of its own.
        const ir::NodeId one = int64_const(1, span);
        Val shifted = a;  // over the values (a selection stays one)
        shifted.node = op_node(Op::Sub, DType::Int64, shape(a), {a.node, one}, span);
        const ir::NodeId m = reduce(Op::ReduceMax, shifted);
        return Val{op_node(Op::Add, t, node(m).shape, {m, one}, span), Weak::None};
    }
    Val x = a;  // the counts, as int64 (still selected if a is)
    x.node = cast(Val{a.node, Weak::None}, DType::Int64, span);
    x.weak = Weak::None;
    if (counts_only) return Val{reduce(op, x), Weak::None};
    if (op == Op::ReduceMin) return Val{with_nat(std::nullopt, reduce(op, x), t, span), Weak::None};  // NaT is least
    const ir::NodeId nat = int64_const(kNaT, span);
    const ir::NodeId any_nat = reduce(Op::Any, binary(Op::Eq, x, Val{nat, Weak::None}, span));
    if (op == Op::Sum) return Val{with_nat(any_nat, reduce(op, x), t, span), Weak::None};
    // mean: sum // count, rounded towards zero; NaT for no element too
    const ir::NodeId sum = reduce(Op::Sum, x);
    const ir::NodeId count = reduce(Op::Sum, binary(Op::Eq, x, x, span));
    const ir::NodeId none = int64_op(Op::Eq, count, int64_const(0, span), span);
    const ir::NodeId one = int64_const(1, span);
    const ir::NodeId safe = select(none, one, count, span);  // no division by 0, even where masked
    // A sum that wrapped onto NaT's bits is NaT, as sum() gives it: NaT // n is NaT (NumPy's
    // mean divides its sum), not INT64_MIN // n.
    const ir::NodeId sum_nat = int64_op(Op::Eq, sum, nat, span);
    const ir::NodeId nat_mean = int64_op(Op::Or, int64_op(Op::Or, any_nat, none, span), sum_nat, span);
    return Val{with_nat(nat_mean, trunc_div(sum, safe, span), t, span), Weak::None};
}

Val Lowerer::scan_call(const ir::OpInfo& fn, const Expr& e) {
    const std::string& fname = e.text;
    const Op op = fn.op;
    const SourceSpan span = e.span;
    const std::map<std::string_view, const Expr*> given = axis_call_arguments(fn, e);
    const auto axis = given.find("axis");
    const Val a = strong(expr(*e.operands[0]));
    if (a.mask.valid())  // its length is the data's; the scan would run over the unselected values too
        throw ValueError(fmt::format("{}() of a boolean-mask selection is not supported", fname), text_, span);
    const Shape in = shape(a);
    const Typed t = rule(op, dt(a), span);  // the operand's dtype first, as for a reduction
    const auto nd = static_cast<std::int32_t>(std::max<std::size_t>(1, in.size()));
    const Axes ax = axes_of(axis == given.end() ? nullptr : axis->second, nd, true, fname);
    ir::NodeId x = half_rounded(cast(Val{a.node, Weak::None}, t.operand, span), span);
    const bool product = ir::info(op).accumulate == Op::Prod;
    if (ir::info(op).finish == ir::Finish::Lowered && is_inexact(t.operand))
        x = select(isnan_of(x, span), const_of(product ? 1 : 0, t.operand, span), x, span);
    Node n;
    n.kind = NodeKind::Scan;
    n.op = product ? Op::CumProd : Op::CumSum;
    n.dtype = t.result;
    n.args[0] = x;
    n.nargs = 1;
    n.axis = ax.all || in.size() <= 1 ? -1 : ax.list.at(0);
    n.shape = n.axis < 0 ? Shape{shape_size(in)} : in;
    n.span = span;
    return Val{add(std::move(n)), Weak::None};
}

// median, percentile, quantile and their nan* forms: one OrderStat node (a selection of each
// row's elements; its q, axes and NaN rule in Program::order_stats) over the operand in its own
// dtype, fused with the operand's expression, and a copy of it as the value (the node itself
// is never an output, so that its buffer is a C-contiguous temporary on every backend).
template <class Arg>
Val Lowerer::order_statistic(Op op, const Val& a, Arg&& arg, const std::string& fname, SourceSpan span) {
    const Shape in = shape(a);
    const bool percent = op == Op::Percentile || op == Op::NanPercentile;
    std::vector<double> qs;
    bool q_axis = false;
    // quantile's q of Python integers only (0 or 1; NumPy's integer virtual index) takes the
    // element itself, in the operand's dtype, bool included; percentile divides q first.
    bool take = false;
    if (takes_q(op) && !percent && arg("q")) {
        const Expr* qe = arg("q");
        auto integral = [](const Expr* x) {
            if (x->kind == ExprKind::Unary && x->ops.at(0) == Op::Neg) x = x->operands.at(0).get();
            return x->kind == ExprKind::Int || x->kind == ExprKind::Bool;
        };
        take = qe->kind == ExprKind::Tuple ? std::all_of(qe->operands.begin(), qe->operands.end(),
                                                         [&](const auto& o) { return integral(o.get()); })
                                           : integral(qe);
    }
    // NumPy's order statistics are Python code: quantile and percentile refuse a complex
    // operand first ("a must be an array of real numbers"), then the axis is checked (on a 0-d
    // operand every axis is NumPy 2.4's AxisError), before a bool operand fails in the
    // arithmetic (quantile(flag, 0.5, axis=2) is its AxisError).
    if (takes_q(op) && is_complex(dt(a))) (void)rule(op, dt(a), span);
    axes_of(arg("axis"), static_cast<std::int32_t>(in.size()), false, fname);
    const Typed t = take && is_bool(dt(a)) ? Typed{DType::Bool, DType::Bool} : rule(op, dt(a), span);
    if (takes_q(op)) {
        const Expr* qe = arg("q");
        if (!qe) throw TypeError(fmt::format("{}() missing 1 required positional argument: 'q'", fname), text_, span);
        std::vector<const Expr*> items;
        if (qe->kind == ExprKind::Tuple) {
            q_axis = true;
            for (const auto& o : qe->operands) items.push_back(o.get());
        } else {
            items.push_back(qe);
        }
        for (const Expr* it : items) {
            double v = it->kind == ExprKind::Bool ? (it->bool_value ? 1.0 : 0.0) : number_of(*it, "q");
            if (percent) v = v / 100.0;  // np.true_divide(q, 100), then the range check
            if (!(v >= 0.0 && v <= 1.0))
                throw ValueError(
                    percent ? "Percentiles must be in the range [0, 100]" : "Quantiles must be in the range [0, 1]",
                    text_, it->span);
            qs.push_back(v);
        }
    } else {
        qs.push_back(0.5);
    }
    const Axes ax = axes_of(arg("axis"), static_cast<std::int32_t>(in.size()), false, fname);
    const bool keep = keepdims_of(arg("keepdims"));
    const bool median = op == Op::Median || op == Op::NanMedian;
    const bool skip_nan =
        (op == Op::NanMedian || op == Op::NanPercentile || op == Op::NanQuantile) && is_inexact(t.operand);
    // NumPy indexes the last element of an empty row (quantile's index -1); its nan* forms and
    // the median (a mean of nothing) give NaN instead.
    const bool nan_form = op == Op::NanPercentile || op == Op::NanQuantile;
    if (!median && (!nan_form || (take && !is_inexact(t.operand))) && reduced_count(in, ax) == 0)
        throw IndexError(fmt::format("{}() of an empty array: index -1 is out of bounds for axis 0 with size 0", fname),
                         text_, span);
    ir::OrderStatDecl d;
    d.q = std::move(qs);
    d.q_axis = q_axis;
    for (std::size_t k = 0; k < in.size(); ++k)
        if (ax.has(k)) d.axes |= 1u << k;
    d.keepdims = keep;
    ir::NodeId x = half_rounded(cast(Val{a.node, Weak::None}, t.operand, span), span);
    if (in.empty()) {
        // A 0-d value is a row of one element: seen as shape (1,) (a broadcasting cast), so
        // that every backend has an axis to select along; the result has no axis to keep.
        x = fresh(x, Shape{1}, span);
        d.axes = 1u;
        d.keepdims = false;
    }
    d.skip_nan = skip_nan;
    d.median = median;
    d.take = take;
    Shape s;
    if (q_axis) s.push_back(static_cast<std::int64_t>(d.q.size()));
    for (const std::int64_t e : reduced_shape(in, ax, keep)) s.push_back(e);
    Node n;
    n.kind = NodeKind::Reduce;
    n.op = Op::OrderStat;
    n.dtype = take ? t.operand : q_axis && is_float(t.operand) ? DType::Float64 : t.result;  // an array q is float64
    n.shape = s;
    n.args[0] = x;
    n.nargs = 1;
    n.slot = static_cast<std::int32_t>(p_.order_stats.size());
    n.span = span;
    p_.order_stats.push_back(std::move(d));
    const ir::NodeId r = add(std::move(n));
    return Val{fresh(r, s, span), Weak::None};
}

ir::NodeId Lowerer::scan_sum(ir::NodeId x, std::int32_t axis, SourceSpan span) {
    Node n;
    n.kind = NodeKind::Scan;
    n.op = Op::CumSum;
    n.dtype = node(x).dtype;
    const Shape in = node(x).shape;
    n.args[0] = x;
    n.nargs = 1;
    n.axis = axis < 0 || in.size() <= 1 ? -1 : axis;
    n.shape = n.axis < 0 ? Shape{shape_size(in)} : in;
    n.span = span;
    return add(std::move(n));
}

}  // namespace jit::dsl::lowering

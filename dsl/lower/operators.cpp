// jitexpr — lowering, unary and binary operators, exact comparisons of integers, powers, where (the
// class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

Val Lowerer::binary(Op op, const Val& a, const Val& b, SourceSpan span, bool function_form) {
    // A string literal compared with a date or duration (dates.cpp: text is read as a date).
    if (ir::is_comparison(op) && (temporal(a) || temporal(b)) && (is_string_literal(a) || is_string_literal(b)))
        return compare_with_text(op, a, b, span, function_form);
    if (is_text(a) || is_text(b)) {
        // Strings meet only in comparisons and the string functions (strings.cpp).
        if (ir::is_comparison(op) || ir::is_string_function(op)) return string_op(op, {a, b}, span);
        const ir::OpInfo& oi = ir::info(op);
        no_strings({&a, &b},
                   oi.kind == OpKind::Operator ? fmt::format("operator '{}'", oi.token)
                                               : fmt::format("{}()", ir::spelling(op)),
                   span);
    }
    if (a.selected() || b.selected()) {
        Val x = a, y = b;
        const Sel sel = unselect({&x, &y}, span);
        return reselect(binary(op, x, y, span, function_form), sel);
    }
    if (temporal(a) || temporal(b)) return temporal_binary(op, a, b, span, function_form);
    if (ir::info(op).rule == ir::Rule::Compare)
        if (auto r = integer_compare(op, a, b, span)) return *r;
    Weak weak = Weak::None;
    DType p = promote_all({&a, &b}, &weak);
    // NumPy picks the first float loop both integer arrays cast to safely: arctan2(int8,
    // uint8) is float16 and hypot(int16, uint16) float32 (not the float of their int16 or
    // int32 common type).
    auto intlike = [&](const Val& v) { return v.weak == Weak::None && (is_integer(dt(v)) || is_bool(dt(v))); };
    if (ir::info(op).rule == ir::Rule::FloatBinary && intlike(a) && intlike(b))
        p = promote(float_for(dt(a)), float_for(dt(b)));
    const Typed t = rule(op, p, span);
    if (ir::info(op).rule == ir::Rule::Power && is_integer(t.operand)) {
        const Node& e = node(b.node);
        if (negative_const(e)) throw ValueError("integers to negative integer powers are not allowed", text_, e.span);
        mark_nonnegative_scalar(b.node);
    }
    const ir::NodeId x = cast(a, t.operand, span), y = cast(b, t.operand, span);
    Shape s = broadcast(node(x).shape, node(y).shape, span);
    const ir::NodeId r = op_node(op, t.result, std::move(s), {x, y}, span);
    // A value made only of weak values stays weak through an operator (k * 2.5 adapts like
    // a literal). Functions are NumPy ufuncs, whose results are typed: maximum(2, 3) is
    // int64 as np.maximum(2, 3) is, so i8 + maximum(2, 3) is int64.
    const bool keeps_weak = weak != Weak::None && ir::info(op).kind == OpKind::Operator &&
                            ir::info(op).rule != ir::Rule::Compare && ir::info(op).rule != ir::Rule::Logical;
    if (!keeps_weak) return Val{r, Weak::None};
    // A weak value has its kind's default dtype (host True % True is an int64 0, as Python's
    // int, not the int8 that bool arithmetic computes in).
    const Weak w = weak_kind_of(t.result);
    const DType d = default_dtype(w);
    return Val{node(r).dtype == d ? r : cast(Val{r, Weak::None}, d, span), w};
}

Op Lowerer::mirrored(Op op) {
    switch (op) {
        case Op::Lt: return Op::Gt;
        case Op::Le: return Op::Ge;
        case Op::Gt: return Op::Lt;
        case Op::Ge: return Op::Le;
        default: return op;
    }
}

// True everywhere (or false everywhere) in the shape of integer value x: x == x (x != x)
// holds for every integer, so the result keeps x's shape without a constant of its own.
Val Lowerer::all_bool(ir::NodeId x, bool v, SourceSpan span) {
    return Val{op_node(v ? Op::Eq : Op::Ne, DType::Bool, node(x).shape, {x, x}, span), Weak::None};
}

// Comparisons of integers are exact, as NumPy 2's: against any Python integer (an integer
// array compared with 2**64 or -1 needs no common dtype), and uint64 against signed
// integers (whose common dtype, float64, would round both). Nullopt for comparisons that
// are not between integers (and bool).
std::optional<Val> Lowerer::integer_compare(Op op, const Val& a, const Val& b, SourceSpan span) {
    // (A bool array meets a Python int as int64, as in NumPy: b >= 2**63 is out of bounds.)
    auto integral = [&](const Val& v) { return v.weak == Weak::Int || (v.weak == Weak::None && is_integer(dt(v))); };
    if (!integral(a) || !integral(b)) return std::nullopt;
    // A literal past every integer dtype: the answer is known from its sign.
    for (int side = 0; side < 2; ++side) {
        const Val& lit = side ? b : a;
        const Val& other = side ? a : b;
        auto big = big_.find(lit.node);
        if (big == big_.end()) continue;
        if (big_.count(other.node)) return std::nullopt;  // both big: folded before, never here
        const bool positive = big->second.digits[0] != '-';
        const Op o = side ? op : mirrored(op);  // other o lit
        const bool less = positive;             // other < lit
        bool v = false;
        switch (o) {
            case Op::Lt:
            case Op::Le: v = less; break;
            case Op::Gt:
            case Op::Ge: v = !less; break;
            case Op::Eq: v = false; break;
            default: v = true; break;
        }
        return all_bool(cast(Val{other.node, Weak::None}, dt(other), span), v, span);
    }
    // The dtype each side is compared in: its own when strong; a literal takes the other
    // side's dtype when it fits it (NEP 50), else its own (int64, or uint64 past int64); a
    // host scalar is an int64 whatever the array's dtype (its value is known only later).
    auto effective = [&](const Val& v, const Val& other) -> DType {
        if (v.weak == Weak::None) return dt(v);
        const Node& n = node(v.node);
        if (n.kind == NodeKind::Const) {
            if (other.weak == Weak::None && is_integer(dt(other)) && fits(n.value, dt(other))) return dt(other);
            return is_unsigned_int(n.value.dtype) ? DType::UInt64 : DType::Int64;
        }
        return DType::Int64;
    };
    const DType ta = effective(a, b), tb = effective(b, a);
    const bool mixed = (ta == DType::UInt64 && is_signed_int(tb)) || (tb == DType::UInt64 && is_signed_int(ta));
    if (!mixed) {
        const DType p = promote(ta, tb);
        const Typed t = rule(op, p, span);
        const ir::NodeId x = cast(a, t.operand, span), y = cast(b, t.operand, span);
        Shape s = broadcast(node(x).shape, node(y).shape, span);
        return Val{op_node(op, DType::Bool, std::move(s), {x, y}, span), Weak::None};
    }
    // uint64 u against signed s, as u o s.
    const bool u_left = ta == DType::UInt64;
    const ir::NodeId u = cast(u_left ? a : b, DType::UInt64, span);
    const ir::NodeId sg = cast(u_left ? b : a, DType::Int64, span);
    const Op o = u_left ? op : mirrored(op);
    const bool true_if_negative = o == Op::Ne || o == Op::Gt || o == Op::Ge;  // u o s for s < 0
    auto cmp = [&](Op c, ir::NodeId x, ir::NodeId y) {
        return op_node(c, DType::Bool, broadcast(node(x).shape, node(y).shape, span), {x, y}, span);
    };
    if (node(sg).kind == NodeKind::Const) {
        const std::int64_t v = node(sg).value.i;
        if (v < 0) return all_bool(u, true_if_negative, span);
        return Val{cmp(o, u, constant(ir::Value::of_uint(static_cast<std::uint64_t>(v)), node(sg).span)), Weak::None};
    }
    if (node(u).kind == NodeKind::Const) {
        const std::uint64_t v = node(u).value.u;
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return all_bool(sg, true_if_negative, span);  // u is above every int64
        return Val{cmp(o, constant(ir::Value::of_int(static_cast<std::int64_t>(v)), node(u).span), sg), Weak::None};
    }
    // Where s >= 0 both fit uint64 exactly; where s < 0 the sign decides.
    const ir::NodeId zero = constant(ir::Value::of_int(0), span);
    const ir::NodeId as_u = cast(Val{sg, Weak::None}, DType::UInt64, span);
    const ir::NodeId c = cmp(o, u, as_u);
    const ir::NodeId sign = cmp(true_if_negative ? Op::Lt : Op::Ge, sg, zero);
    return Val{cmp(true_if_negative ? Op::Or : Op::And, sign, c), Weak::None};
}

// Marks the host scalar behind `n` as an exponent that must not be negative. Behind casts, the
// value tested is the scalar's as they convert it (uint16(n) is never negative; int8(n) may be).
void Lowerer::mark_nonnegative_scalar(ir::NodeId n) {
    std::vector<DType> casts;  // outermost first while walking in
    while (node(n).kind == NodeKind::Cast) {
        casts.push_back(node(n).dtype);
        n = node(n).args[0];
    }
    const Node& s = node(n);
    if (s.kind == NodeKind::Scalar) {
        ir::ScalarDecl& d = p_.scalars[static_cast<std::size_t>(s.slot)];
        d.must_be_nonnegative = true;
        d.exponent_casts.emplace_back(casts.rbegin(), casts.rend());
        d.span = s.span;
    }
}

Val Lowerer::unary(Op op, const Val& a, SourceSpan span) {
    if (is_text(a)) {
        if (ir::is_string_function(op)) return string_op(op, {a}, span);
        const ir::OpInfo& oi = ir::info(op);
        no_strings(
            {&a},
            oi.kind == OpKind::Operator ? fmt::format("unary '{}'", oi.token) : fmt::format("{}()", ir::spelling(op)),
            span);
    }
    if (a.selected()) {
        Val x = a;
        const Sel sel = unselect({&x}, span);
        return reselect(unary(op, x, span), sel);
    }
    if (temporal(a)) return temporal_unary(op, a, span);
    const Node& n = node(a.node);
    if (op == Op::Neg && a.weak != Weak::None && n.kind == NodeKind::Const && !is_bool(n.dtype)) {
        ir::Value v = n.value;  // fold -literal so that it stays an exact weak constant
        if (is_signed_int(v.dtype)) {
            v.i = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(v.i));
        } else if (is_unsigned_int(v.dtype)) {  // a literal above int64's range
            if (v.u > (std::uint64_t{1} << 63))
                throw ValueError(fmt::format("integer -{} is out of bounds for int64", v.u), text_, span);
            v = ir::Value::of_int(static_cast<std::int64_t>(0 - v.u));
        } else {
            v.f = -v.f;
            v.im = -v.im;
        }
        const ir::NodeId c = constant(v, span);
        return Val{c, a.weak};
    }
    if (op == Op::Pos) {
        // NumPy 2 has no positive() for bool (as for negative()): a TypeError, not a no-op.
        if (is_bool(dt(a))) type_error("unary '+' is not supported for bool", span);
        return a;
    }
    const Typed t = rule(op, dt(a), span);
    const ir::NodeId x = cast(a, t.operand, span);
    const ir::NodeId r = op_node(op, t.result, node(x).shape, {x}, span);
    const bool keeps_weak = a.weak != Weak::None && (op == Op::Neg || op == Op::Invert);
    return Val{r, keeps_weak ? a.weak : Weak::None};
}

// x ** y with y a Python number (a literal or a host scalar) and x an inexact array, as
// NumPy computes it: ndarray.__pow__ takes a float exponent of 0.5 as sqrt and an int one of
// 2 as square and of -1 as reciprocal (`operator_form`; a complex ** 2.0 is pow), and
// np.power's float32 and float64 loops take a scalar 0.5 as sqrt (2 as square: the same
// values). Where these differ from pow is in special values and rounding:
// (-inf) ** 0.5 is nan and (-0.0) ** 0.5 is -0.0, a complex square or reciprocal has its own
// infinities, and CUDA's pow is not correctly rounded. A host scalar (or an expression of
// them) is chosen by its value per call (a select of the candidates).
// A strong 0-d exponent (a NumPy scalar, a 0-d array) meets only np.power's loop: for a float32
// or float64 result, a float exponent of 0.5 is sqrt there too (`x ** np.float64(0.5)` is nan at
// -inf), whatever the operator form.
Val Lowerer::power(const Val& a, const Val& b, SourceSpan span, bool operator_form) {
    // ndarray.__pow__'s `** 2` is np.square, whose bool loop is int8's: a bool array `** 2` (the
    // literal: a host scalar's value cannot choose the dtype) is int8, not int64.
    // (An array of one dimension or more: a 0-d result is a NumPy scalar there, whose ** is int64.)
    if (operator_form && a.weak == Weak::None && is_bool(dt(a)) && !node(a.node).shape.empty() && b.weak == Weak::Int &&
        !a.selected() && node(b.node).kind == NodeKind::Const && node(b.node).value.as_double() == 2.0) {
        const ir::NodeId x = cast(a, DType::Int8, span);
        return Val{op_node(Op::Square, DType::Int8, node(x).shape, {x}, span), Weak::None};
    }
    const Val r = binary(Op::Pow, a, b, span);
    const bool strong_scalar = b.weak == Weak::None && node(b.node).shape.empty() && is_float(dt(b));
    if (a.weak != Weak::None || (b.weak == Weak::None && !strong_scalar) || b.weak == Weak::Bool || a.selected() ||
        b.selected() || r.selected() || !is_inexact(dt(a)))
        return r;
    const DType t = node(r.node).dtype;
    const Node& bn = node(b.node);
    if (!is_inexact(t) || is_complex(bn.dtype) || is_bool(bn.dtype)) return r;
    std::vector<std::pair<double, Op>> shortcuts;
    const bool int_exponent = b.weak == Weak::Int;
    if (strong_scalar) {
        if (t == DType::Float32 || t == DType::Float64) shortcuts = {{0.5, Op::Sqrt}};
    } else if (operator_form && int_exponent) {
        shortcuts = {{2.0, Op::Square}, {-1.0, Op::Reciprocal}};
    } else if (operator_form) {
        shortcuts = {{0.5, Op::Sqrt}};
    } else if (t == DType::Float32 || t == DType::Float64) {
        shortcuts = int_exponent ? std::vector<std::pair<double, Op>>{{2.0, Op::Square}}
                                 : std::vector<std::pair<double, Op>>{{0.5, Op::Sqrt}, {2.0, Op::Square}};
    }
    if (shortcuts.empty()) return r;
    const ir::NodeId x = cast(a, t, span);
    auto shortcut = [&](Op op) { return op_node(op, t, node(x).shape, {x}, span); };
    if (bn.kind == NodeKind::Const) {
        const double v = bn.value.as_double();
        for (const auto& [e, op] : shortcuts)
            if (v == e) return Val{shortcut(op), Weak::None};
        return r;
    }
    const ir::NodeId y = cast(Val{b.node, Weak::None}, DType::Float64, span);
    Val acc = r;
    for (auto it = shortcuts.rbegin(); it != shortcuts.rend(); ++it) {
        const ir::NodeId is =
            op_node(Op::Eq, DType::Bool, Shape{}, {y, constant(ir::Value::of_float(it->first), span)}, span);
        acc = where(Val{is, Weak::None}, Val{shortcut(it->second), Weak::None}, acc, span);
    }
    return acc;
}

Val Lowerer::where(const Val& c, const Val& x, const Val& y, SourceSpan span) {
    no_strings({&c, &x, &y}, "where()", span);
    if (c.selected() || x.selected() || y.selected()) {
        Val c1 = c, x1 = x, y1 = y;
        const Sel sel = unselect({&c1, &x1, &y1}, span);
        return reselect(where(c1, x1, y1, span), sel);
    }
    if (temporal(x) || temporal(y)) return temporal_where(c, x, y, span);
    const ir::NodeId cb = cast(c, DType::Bool, span);
    Weak weak = Weak::None;
    const DType p = promote_all({&x, &y}, &weak);
    const ir::NodeId xs = cast(x, p, span), ys = cast(y, p, span);
    Shape s = broadcast(broadcast(node(cb).shape, node(xs).shape, span), node(ys).shape, span);
    // Typed even when both branches are literals, as np.where's result: where(c, 2, -1) is
    // int64, so u8 * where(c, 2, -1) is int64 (not a weak value that u8 would absorb).
    return Val{op_node(Op::Where, p, std::move(s), {cb, xs, ys}, span), Weak::None};
}

}  // namespace jit::dsl::lowering

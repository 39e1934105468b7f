// jitexpr — lowering, node construction: constants, casts, broadcasting, promotion, the small node
// helpers (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

SourceSpan join(SourceSpan a, SourceSpan b) { return {std::min(a.begin, b.begin), std::max(a.end, b.end)}; }

// Does an exact integer value fit in integer dtype t?
bool fits(const ir::Value& v, DType t) {
    if (!is_integer(t)) return true;
    if (is_bool(v.dtype)) return true;
    const bool neg = is_signed_int(v.dtype) && v.i < 0;
    const std::uint64_t mag =
        is_signed_int(v.dtype) ? (neg ? 0 - static_cast<std::uint64_t>(v.i) : static_cast<std::uint64_t>(v.i)) : v.u;
    if (is_unsigned_int(t)) {
        if (neg) return false;
        const int bits = static_cast<int>(itemsize(t)) * 8;
        return bits == 64 || mag < (std::uint64_t{1} << bits);
    }
    const int bits = static_cast<int>(itemsize(t)) * 8 - 1;
    return neg ? mag <= (std::uint64_t{1} << bits) : mag < (std::uint64_t{1} << bits);
}

ir::NodeId Lowerer::add(Node n) {
    if (p_.nodes.size() >= kMaxNodes)
        throw ValueError(fmt::format("program too large (more than {} operations)", kMaxNodes), text_, n.span);
    p_.nodes.push_back(std::move(n));
    return ir::NodeId(p_.nodes.size() - 1);
}

ir::NodeId Lowerer::constant(const ir::Value& v, SourceSpan span) {
    Node n;
    n.kind = NodeKind::Const;
    n.dtype = v.dtype;
    n.value = v;
    n.span = span;
    return add(std::move(n));
}

Shape Lowerer::broadcast(const Shape& a, const Shape& b, SourceSpan span) const {
    const std::size_t nd = std::max(a.size(), b.size());
    Shape r(nd);
    for (std::size_t k = 0; k < nd; ++k) {
        const std::int64_t x = k < nd - a.size() ? 1 : a[k - (nd - a.size())];
        const std::int64_t y = k < nd - b.size() ? 1 : b[k - (nd - b.size())];
        if (x != y && x != 1 && y != 1)
            // NumPy's words, which code written for NumPy and numexpr looks for.
            throw ShapeError(fmt::format("operands could not be broadcast together with shapes {} {}",
                                         shape_to_string(a), shape_to_string(b)),
                             text_, span);
        r[k] = x == 1 ? y : x;
    }
    if (static_cast<int>(r.size()) > kMaxDims)
        throw ShapeError(fmt::format("more than {} dimensions", kMaxDims), text_, span);
    return r;
}

// An expression of host integers (weak, not a lone scalar) meeting dtype t: its Python value
// must fit t, checked when the scalars are bound (api/runtime.cpp's check_scalar_fits).
void Lowerer::check_fit(const Val& v, DType t) {
    const Node& n = node(v.node);
    if (v.weak != Weak::Int || (n.kind != NodeKind::Op && n.kind != NodeKind::Cast)) return;
    auto& fits_ = p_.scalar_fits;
    if (std::none_of(fits_.begin(), fits_.end(),
                     [&](const ir::ScalarFitCheck& c) { return c.node == v.node && c.dtype == t; }))
        fits_.push_back(ir::ScalarFitCheck{v.node, t, n.span});
}

// Converts v to dtype t (folding constants; a weak integer must fit).
ir::NodeId Lowerer::cast(const Val& v, DType t, SourceSpan span) {
    if (is_temporal(t) || is_temporal(node(v.node).dtype)) return temporal_cast(v, t, span);
    const Node& n = node(v.node);
    if (is_string(n.dtype) && n.dtype != t)
        type_error(fmt::format("strings ({}) do not convert to {}: jitexpr reads strings only in the comparisons and "
                               "contains, startswith, endswith, find and str_len",
                               dtype_name(n.dtype), dtype_name(t)),
                   span);
    if (auto big = big_.find(v.node); big != big_.end()) {
        if (is_integer(t))
            throw ValueError(fmt::format("integer {} is out of bounds for {}", big->second.digits, dtype_name(t)),
                             text_, n.span);
        if (is_bool(t)) return constant(ir::Value::of_bool(true), n.span);
        if (!big->second.as_float)
            throw ValueError(fmt::format("integer {} is too large to convert to a float", big->second.digits), text_,
                             n.span);
        return constant(ir::Value::of_float(*big->second.as_float).cast(t), n.span);
    }
    check_fit(v, t);
    if (n.dtype == t) return v.node;
    if (n.kind == NodeKind::Scalar && v.weak == Weak::Int && is_integer(t) && t != DType::Int64) {
        // A host integer meeting a narrower integer dtype must fit it, checked when bound.
        auto& fit = p_.scalars[static_cast<std::size_t>(n.slot)].must_fit;
        if (std::find(fit.begin(), fit.end(), t) == fit.end()) fit.push_back(t);
    }
    if (n.kind == NodeKind::Const) {
        if (v.weak == Weak::Int && is_integer(t) && !fits(n.value, t))
            throw ValueError(fmt::format("integer {} is out of bounds for {}", n.value.to_string(), dtype_name(t)),
                             text_, n.span);
        return constant(n.value.cast(t), n.span);
    }
    Node c;
    c.kind = NodeKind::Cast;
    c.dtype = t;
    c.shape = n.shape;
    c.args[0] = v.node;
    c.nargs = 1;
    c.span = span;
    return add(std::move(c));
}

// An identity cast that gives an output a node of its own, with the output's shape.
ir::NodeId Lowerer::fresh(ir::NodeId v, const Shape& s, SourceSpan span) {
    Node c;
    c.kind = NodeKind::Cast;
    c.dtype = node(v).dtype;
    c.shape = s;
    c.args[0] = v;
    c.nargs = 1;
    c.span = span;
    return add(std::move(c));
}

ir::NodeId Lowerer::half_rounded(ir::NodeId v, SourceSpan span) {
    const Node& n = node(v);
    if (n.kind != NodeKind::Op || (n.dtype != DType::Float16 && n.dtype != DType::BFloat16)) return v;
    // prod(a ** e) of float16 a: 30000 ** e is inf in float16 and 0 * inf is NaN, as in NumPy;
    // unrounded (1.4e12 in float32) the product was 0.
    return fresh(v, n.shape, span);
}

namespace {

// Ops whose result jumps where an operand crosses a float16/bfloat16 rounding boundary (or
// overflows or underflows in it): comparisons, predicates, rounding, floor division and
// remainders, signs and steps, the exponent and mantissa views. Such an op reads a 16-bit chain's
// value rounded to its type, as NumPy reads a float16 array: isinf(a * a) is true where a * a
// overflows float16 (in the float32 carrier it was a finite 112057), and nextafter of that value
// was NaN. The arithmetic around them keeps the unrounded carrier (docs/language.md).
bool reads_rounded(Op op) {
    switch (ir::info(op).rule) {
        case ir::Rule::IntDiv:
        case ir::Rule::Compare:
        case ir::Rule::RoundUnary:
        case ir::Rule::SignUnary:
        case ir::Rule::Predicate:
        case ir::Rule::Fmod:
        case ir::Rule::Ldexp:
        case ir::Rule::FrexpExponent: return true;
        default: break;
    }
    switch (op) {
        case Op::Rint:
        case Op::Nextafter:
        case Op::Heaviside:
        case Op::Spacing:
        case Op::FrexpMantissa:
        case Op::ModfFraction:
        case Op::ModfIntegral: return true;
        default: return false;
    }
}

}  // namespace

ir::NodeId Lowerer::op_node(Op op, DType result, Shape s, std::initializer_list<ir::NodeId> args, SourceSpan span) {
    Node n;
    n.kind = NodeKind::Op;
    n.op = op;
    n.dtype = result;
    n.shape = std::move(s);
    const bool rounded = reads_rounded(op);
    for (ir::NodeId a : args) n.args[n.nargs++] = rounded ? half_rounded(a, span) : a;
    n.span = span;
    return add(std::move(n));
}

// Promotes several values (strong and weak) to one dtype, NEP 50 style.
DType Lowerer::promote_all(std::initializer_list<const Val*> vals, Weak* weak_out) const {
    std::optional<DType> strong;
    Weak weak = Weak::None;
    for (const Val* v : vals) {
        if (is_temporal(dt(*v))) throw InternalError("lowering: a date or duration in numeric promotion");
        if (v->weak != Weak::None) {
            weak = std::max(weak, v->weak);
        } else {
            strong = strong ? promote(*strong, dt(*v)) : dt(*v);
        }
    }
    if (weak_out) *weak_out = strong ? Weak::None : weak;
    if (!strong) return default_dtype(weak);
    return weak == Weak::None ? *strong : promote_weak(*strong, weak);
}

Typed Lowerer::rule(Op op, DType p, SourceSpan span) const {
    std::string err;
    auto t = apply_rule(op, p, &err);
    if (!t) type_error(err, span);
    return *t;
}

bool Lowerer::negative_const(const Node& n) {
    if (n.kind != NodeKind::Const) return false;
    if (is_signed_int(n.value.dtype)) return n.value.i < 0;
    return false;
}

ir::NodeId Lowerer::divide_by_count(ir::NodeId v, std::int64_t count, SourceSpan span) {
    const DType t = node(v).dtype;
    const ir::NodeId c = constant(ir::Value::of_float(static_cast<double>(count)).cast(t), span);
    return op_node(Op::Div, t, node(v).shape, {v, c}, span);
}

ir::NodeId Lowerer::isnan_of(ir::NodeId x, SourceSpan span) {
    return op_node(Op::Isnan, DType::Bool, node(x).shape, {x}, span);
}

ir::NodeId Lowerer::select(ir::NodeId c, ir::NodeId a, ir::NodeId b, SourceSpan span) {
    Shape s = broadcast(broadcast(node(c).shape, node(a).shape, span), node(b).shape, span);
    return op_node(Op::Where, node(a).dtype, std::move(s), {c, a, b}, span);
}

ir::NodeId Lowerer::binop(Op op, ir::NodeId a, ir::NodeId b, SourceSpan span) {
    DType t = node(a).dtype;
    if (ir::info(op).rule == ir::Rule::Compare || ir::info(op).rule == ir::Rule::Logical) t = DType::Bool;
    return op_node(op, t, broadcast(node(a).shape, node(b).shape, span), {a, b}, span);
}

// |v|**2 in v's real dtype (NumPy's var: x * conj(x), its real part).
ir::NodeId Lowerer::abs2(ir::NodeId v, SourceSpan span) {
    const DType t = node(v).dtype;
    if (!is_complex(t)) return binop(Op::Mul, v, v, span);
    const DType r = real_of(t);
    const ir::NodeId re = op_node(Op::Real, r, node(v).shape, {v}, span);
    const ir::NodeId im = op_node(Op::Imag, r, node(v).shape, {v}, span);
    return binop(Op::Add, binop(Op::Mul, re, re, span), binop(Op::Mul, im, im, span), span);
}

}  // namespace jit::dsl::lowering

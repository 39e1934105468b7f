#include "dsl/lower.hpp"
#include "core/stack.hpp"

#include "dsl/literal.hpp"
#include "dsl/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <set>

namespace jit::dsl {

using ir::Node;
using ir::NodeKind;
using ir::Op;
using ir::OpKind;
using syntax::Expr;
using syntax::ExprKind;

namespace {

constexpr std::size_t kMaxNodes = 1'000'000;

const std::map<std::string_view, double, std::less<>>& named_constants() {
    static const std::map<std::string_view, double, std::less<>> c = {
        {"pi", std::numbers::pi},
        {"e", std::numbers::e},
        {"inf", std::numeric_limits<double>::infinity()},
        {"nan", std::numeric_limits<double>::quiet_NaN()},
    };
    return c;
}

// Functions (and reductions) called `name`, any arity, in table order.
const std::vector<const ir::OpInfo*>& functions_named(std::string_view name) {
    static const auto by_name = [] {
        std::map<std::string_view, std::vector<const ir::OpInfo*>, std::less<>> m;
        for (const ir::OpInfo& i : ir::op_table())
            for (std::string_view names = i.names; !names.empty();) {
                const std::size_t bar = names.find('|');
                m[names.substr(0, bar)].push_back(&i);
                if (bar == std::string_view::npos) break;
                names.remove_prefix(bar + 1);
            }
        return m;
    }();
    static const std::vector<const ir::OpInfo*> none;
    const auto it = by_name.find(name);
    return it == by_name.end() ? none : it->second;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// The candidate closest to `name`, if it is close enough to be a likely typo: at most a third of
// the letters differ (at least one may), and not every letter.
std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(1, name.size() / 3) + 1;
    for (const std::string& c : candidates) {
        const std::size_t d = edit_distance(name, c);
        if (d < best_d && d < std::max(name.size(), c.size())) best_d = d, best = c;
    }
    return best;
}

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

struct Val {
    Val() = default;
    Val(ir::NodeId n, Weak w) : node(n), weak(w) {}
    ir::NodeId node;
    Weak weak = Weak::None;
    // A boolean-mask selection (b[m]) not yet stored: `node` holds the values before selection
    // (over the full shape S), `mask` the Bool mask with S's rank (extent 1 past its own axes),
    // `mask_axes` the number k of leading axes of S it selects along. Element-wise work is
    // done on the values (so (b * 2)[m] is b[m] * 2, one pass), a reduction becomes a masked one
    // (sum(b[m]) is sum(where(m, b, 0))), and only a selection stored as a value is compacted.
    ir::NodeId mask;
    std::int32_t mask_axes = 0;
    bool selected() const { return mask.valid(); }
};

// An integer literal (or literal-only expression) that fits no integer dtype, such as 2**64:
// usable where it meets a float, an error where it must become an integer.
struct BigLiteral {
    std::string digits;
    std::optional<double> as_float;
};

class Lowerer {
public:
    Lowerer(std::string_view text, const Lookup& lookup, const BoundNames& bound)
        : text_(text),
          lookup_(lookup),
          bound_(bound),
          folder_(text, [this](std::string_view n) { return unshadowed_constant(n); }) {
        p_.text = std::string(text);
    }

    ir::Program run(const syntax::Module& m) {
        for (std::size_t s = 0; s < m.statements.size(); ++s) statement(m.statements[s], s + 1 == m.statements.size());
        // The run-time checks, as unnamed outputs after every other.
        for (PendingCheck& c : checks_) {
            p_.checks.push_back(
                ir::RunCheck{static_cast<std::int32_t>(p_.outputs.size()), std::move(c.message), c.span});
            p_.outputs.push_back(ir::OutputDecl{"", c.node, -1});
        }
        return std::move(p_);
    }

private:
    // ---- node construction
    const Node& node(ir::NodeId n) const { return p_.node(n); }
    DType dt(const Val& v) const { return node(v.node).dtype; }
    const Shape& shape(const Val& v) const { return node(v.node).shape; }

    ir::NodeId add(Node n) {
        if (p_.nodes.size() >= kMaxNodes)
            throw ValueError(fmt::format("program too large (more than {} operations)", kMaxNodes), text_, n.span);
        p_.nodes.push_back(std::move(n));
        return ir::NodeId(p_.nodes.size() - 1);
    }

    ir::NodeId constant(const ir::Value& v, SourceSpan span) {
        Node n;
        n.kind = NodeKind::Const;
        n.dtype = v.dtype;
        n.value = v;
        n.span = span;
        return add(std::move(n));
    }

    Shape broadcast(const Shape& a, const Shape& b, SourceSpan span) const {
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
    void check_fit(const Val& v, DType t) {
        const Node& n = node(v.node);
        if (v.weak != Weak::Int || (n.kind != NodeKind::Op && n.kind != NodeKind::Cast)) return;
        auto& fits_ = p_.scalar_fits;
        if (std::none_of(fits_.begin(), fits_.end(),
                         [&](const ir::ScalarFitCheck& c) { return c.node == v.node && c.dtype == t; }))
            fits_.push_back(ir::ScalarFitCheck{v.node, t, n.span});
    }

    // Converts v to dtype t (folding constants; a weak integer must fit).
    ir::NodeId cast(const Val& v, DType t, SourceSpan span) {
        const Node& n = node(v.node);
        if (auto big = big_.find(v.node); big != big_.end()) {
            if (is_integer(t))
                throw ValueError(fmt::format("integer {} is out of bounds for {}", big->second.digits, dtype_name(t)),
                                 text_, n.span);
            if (is_bool(t)) return constant(ir::Value::of_bool(true), n.span);
            if (!big->second.as_float)
                throw ValueError(fmt::format("integer {} is too large to convert to a float", big->second.digits),
                                 text_, n.span);
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
    ir::NodeId fresh(ir::NodeId v, const Shape& s, SourceSpan span) {
        Node c;
        c.kind = NodeKind::Cast;
        c.dtype = node(v).dtype;
        c.shape = s;
        c.args[0] = v;
        c.nargs = 1;
        c.span = span;
        return add(std::move(c));
    }

    ir::NodeId op_node(Op op, DType result, Shape s, std::initializer_list<ir::NodeId> args, SourceSpan span) {
        Node n;
        n.kind = NodeKind::Op;
        n.op = op;
        n.dtype = result;
        n.shape = std::move(s);
        for (ir::NodeId a : args) n.args[n.nargs++] = a;
        n.span = span;
        return add(std::move(n));
    }

    // Promotes several values (strong and weak) to one dtype, NEP 50 style.
    DType promote_all(std::initializer_list<const Val*> vals, Weak* weak_out) const {
        std::optional<DType> strong;
        Weak weak = Weak::None;
        for (const Val* v : vals) {
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

    [[noreturn]] void type_error(const std::string& msg, SourceSpan span) const { throw TypeError(msg, text_, span); }

    Typed rule(Op op, DType p, SourceSpan span) const {
        std::string err;
        auto t = apply_rule(op, p, &err);
        if (!t) type_error(err, span);
        return *t;
    }

    static bool negative_const(const Node& n) {
        if (n.kind != NodeKind::Const) return false;
        if (is_signed_int(n.value.dtype)) return n.value.i < 0;
        return false;
    }

    // ---- operators
    Val binary(Op op, const Val& a, const Val& b, SourceSpan span) {
        if (a.selected() || b.selected()) {
            Val x = a, y = b;
            const Sel sel = unselect({&x, &y}, span);
            return reselect(binary(op, x, y, span), sel);
        }
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
            if (negative_const(e))
                throw ValueError("integers to negative integer powers are not allowed", text_, e.span);
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

    static Op mirrored(Op op) {
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
    Val all_bool(ir::NodeId x, bool v, SourceSpan span) {
        return Val{op_node(v ? Op::Eq : Op::Ne, DType::Bool, node(x).shape, {x, x}, span), Weak::None};
    }

    // Comparisons of integers are exact, as NumPy 2's: against any Python integer (an integer
    // array compared with 2**64 or -1 needs no common dtype), and uint64 against signed
    // integers (whose common dtype, float64, would round both). Nullopt for comparisons that
    // are not between integers (and bool).
    std::optional<Val> integer_compare(Op op, const Val& a, const Val& b, SourceSpan span) {
        // (A bool array meets a Python int as int64, as in NumPy: b >= 2**63 is out of bounds.)
        auto integral = [&](const Val& v) {
            return v.weak == Weak::Int || (v.weak == Weak::None && is_integer(dt(v)));
        };
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
            return Val{cmp(o, u, constant(ir::Value::of_uint(static_cast<std::uint64_t>(v)), node(sg).span)),
                       Weak::None};
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

    // Marks the host scalar behind `n` (possibly through casts) as an exponent that must not be negative.
    void mark_nonnegative_scalar(ir::NodeId n) {
        while (node(n).kind == NodeKind::Cast) n = node(n).args[0];
        const Node& s = node(n);
        if (s.kind == NodeKind::Scalar) {
            ir::ScalarDecl& d = p_.scalars[static_cast<std::size_t>(s.slot)];
            d.must_be_nonnegative = true;
            d.span = s.span;
        }
    }

    Val unary(Op op, const Val& a, SourceSpan span) {
        if (a.selected()) {
            Val x = a;
            const Sel sel = unselect({&x}, span);
            return reselect(unary(op, x, span), sel);
        }
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

    // ---- expressions
    // A literal-only expression, folded exactly (dsl/literal.hpp), as one weak constant.
    Val literal(const Folded& f, SourceSpan span) {
        const ir::NodeId n = constant(f.value, span);
        if (f.big) big_.emplace(n, BigLiteral{f.shown, f.as_float});
        switch (f.kind) {
            case Folded::Kind::Bool: return Val{n, Weak::Bool};
            case Folded::Kind::Int: return Val{n, Weak::Int};
            case Folded::Kind::Float: return Val{n, Weak::Float};
            case Folded::Kind::Complex: return Val{n, Weak::Complex};
        }
        return Val{n, Weak::Int};
    }

    // The value as a strong array of its own dtype: a literal past every integer dtype cannot
    // be one (NumPy would make an object array of 2**64).
    Val strong(const Val& v) {
        if (auto big = big_.find(v.node); big != big_.end())
            throw ValueError(fmt::format("integer {} fits no integer dtype ({})", big->second.digits,
                                         big->second.digits[0] == '-' ? "int64 holds down to -9223372036854775808"
                                                                      : "uint64 holds up to 18446744073709551615"),
                             text_, node(v.node).span);
        check_fit(v, node(v.node).dtype);  // an array of its default dtype, int64: the value must fit
        return typed(v);
    }
    // v typed (not weak), a selection staying one.
    static Val typed(Val v) {
        v.weak = Weak::None;
        return v;
    }

    // ---- boolean-mask selections (see Val::mask)
    struct Sel {
        ir::NodeId mask;
        std::int32_t axes = 0;
    };
    // Whether two nodes compute the same value (the masks of b[a > 0] + c[a > 0] are two nodes).
    bool same_value(ir::NodeId a, ir::NodeId b) const {
        if (a == b) return true;
        const Node& x = node(a);
        const Node& y = node(b);
        if (x.kind != y.kind || x.dtype != y.dtype || x.shape != y.shape || x.nargs != y.nargs ||
            (x.slot != y.slot && x.kind != NodeKind::Input) || x.axis != y.axis)
            return false;
        if ((x.kind == NodeKind::Op || x.kind == NodeKind::Reduce) && x.op != y.op) return false;
        if (x.kind == NodeKind::Const && x.value.to_string() != y.value.to_string()) return false;
        if (x.kind == NodeKind::Input && x.slot != y.slot) {  // two slots of one view of one name
            const ir::InputDecl& p = p_.inputs[static_cast<std::size_t>(x.slot)];
            const ir::InputDecl& q = p_.inputs[static_cast<std::size_t>(y.slot)];
            return p.name == q.name && p.dtype == q.dtype && p.shape == q.shape && p.strides == q.strides &&
                   p.view == q.view && p.offset == q.offset;
        }
        for (int k = 0; k < x.nargs; ++k)
            if (!same_value(x.args[k], y.args[k])) return false;
        return true;
    }
    // The operands of an element-wise operation of which some are selections, rewritten to their
    // values before selection; returns the mask they share. Another operand must broadcast
    // without meeting the selection's first axis, whose length only the data knows: fewer
    // dimensions than the selection, or as many with extent 1 first.
    Sel unselect(std::initializer_list<Val*> vals, SourceSpan span) {
        Sel sel;
        for (Val* v : vals) {
            if (!v->selected()) continue;
            if (!sel.mask.valid()) {
                sel = Sel{v->mask, v->mask_axes};
            } else if (sel.axes != v->mask_axes || !same_value(sel.mask, v->mask)) {
                throw ValueError(
                    "operands selected by different boolean masks: their lengths are known only when the program "
                    "runs (select once: (b + c)[m])",
                    text_, span);
            }
        }
        const std::size_t rank = 1 + node(sel.mask).shape.size() - static_cast<std::size_t>(sel.axes);
        for (Val* v : vals) {
            if (v->selected()) {
                v->mask = ir::NodeId();
                v->mask_axes = 0;
                continue;
            }
            const Shape& x = shape(*v);
            if (x.size() < rank || (x.size() == rank && x[0] == 1)) continue;
            throw ShapeError(fmt::format("a boolean-mask selection, whose length the data decides, does not broadcast "
                                         "with shape {}",
                                         shape_to_string(x)),
                             text_, span);
        }
        return sel;
    }
    static Val reselect(Val v, const Sel& s) {
        v.mask = s.mask;
        v.mask_axes = s.axes;
        return v;
    }

    std::optional<double> unshadowed_constant(std::string_view name) const {
        if (locals_.find(name) != locals_.end() || (lookup_ && lookup_(name))) return std::nullopt;
        if (auto c = named_constants().find(name); c != named_constants().end()) return c->second;
        return std::nullopt;
    }

    Val expr(const Expr& e) {
        if (folder_.is_literal(e)) return literal(folder_.fold(e), e.span);
        switch (e.kind) {
            case ExprKind::Int:
            case ExprKind::Float:
            case ExprKind::Imag:
            case ExprKind::Bool: break;  // literals are folded above
            case ExprKind::Name: return name(e);
            case ExprKind::Unary: {
                const Val a = expr(*e.operands.at(0));
                return unary(e.ops.at(0), a, e.span);
            }
            case ExprKind::Chain: return chain(e);
            case ExprKind::Ternary: {
                const Val c = expr(*e.operands.at(0));
                const Val x = expr(*e.operands.at(1));
                const Val y = expr(*e.operands.at(2));
                return where(c, x, y, e.span);
            }
            case ExprKind::Call: return call(e);
            case ExprKind::Subscript: return subscript(e);
            case ExprKind::Tuple:
                throw TypeError("a tuple is not a value here (only a reduction's axis is one: sum(x, axis=(0, 1)))",
                                text_, e.span);
        }
        throw InternalError("unknown expression kind");
    }

    Val name(const Expr& e) {
        if (e.text == "None")
            throw TypeError("None is not a value here (it is only a reduction's axis: sum(x, axis=None))", text_,
                            e.span);
        if (auto it = locals_.find(e.text); it != locals_.end()) return it->second;
        if (const Binding* b = lookup_ ? lookup_(e.text) : nullptr) {
            if (b->kind == Binding::Kind::Array) {
                if (static_cast<int>(b->shape.size()) > kMaxDims)
                    throw ShapeError(fmt::format("'{}' has more than {} dimensions", e.text, kMaxDims), text_, e.span);
                auto [it, inserted] = input_slot_.try_emplace(e.text, -1);
                if (inserted) {
                    it->second = static_cast<std::int32_t>(p_.inputs.size());
                    p_.inputs.push_back(ir::InputDecl{e.text, b->dtype, b->shape, b->strides, false, 0});
                    Node n;
                    n.kind = NodeKind::Input;
                    n.dtype = b->dtype;
                    n.shape = b->shape;
                    n.slot = it->second;
                    n.span = e.span;
                    input_node_[e.text] = add(std::move(n));
                }
                return Val{input_node_.at(e.text), Weak::None};
            }
            auto [it, inserted] = scalar_slot_.try_emplace(e.text, -1);
            if (inserted) {
                it->second = static_cast<std::int32_t>(p_.scalars.size());
                p_.scalars.push_back(ir::ScalarDecl{e.text, b->dtype, false, {}, e.span});
                Node n;
                n.kind = NodeKind::Scalar;
                n.dtype = b->dtype;
                n.slot = it->second;
                n.span = e.span;
                scalar_node_[e.text] = add(std::move(n));
            }
            return Val{scalar_node_.at(e.text), weak_kind_of(b->dtype)};
        }
        unknown_name(e.text, e.span);
    }

    [[noreturn]] void unknown_name(const std::string& name, SourceSpan span) const {
        // Did you mean: the closest known name within a small edit distance.
        std::vector<std::string> candidates = builtin_names();
        for (const auto& [n, v] : locals_) candidates.push_back(n);
        if (bound_)
            for (std::string& n : bound_()) candidates.push_back(std::move(n));
        const std::string best = closest(name, candidates);
        const bool is_fn = !functions_named(name).empty() || dtype_from_name(name);
        std::string msg = is_fn ? fmt::format("'{}' is a function: call it as {}(...)", name, name)
                                : fmt::format("unknown name '{}'", name);
        if (!is_fn && !best.empty()) msg += fmt::format(" (did you mean '{}'?)", best);
        throw NameError(msg, text_, span);
    }

    Val chain(const Expr& e) {
        const auto& ops = e.ops;
        if (ops.empty()) return expr(*e.operands.at(0));
        auto lit = [&](std::size_t k) { return folder_.is_literal(*e.operands[k]); };
        // Literal runs are computed exactly first, as Python evaluates them: the leading
        // operands of a left-assoc chain (2**8 * 3 + x), the trailing ones of x ** 2 ** 3, and
        // each comparison between two literals.
        if (ir::is_comparison(ops[0])) {
            // a < b < c  ==  (a < b) and (b < c), each operand evaluated once.
            Val left = expr(*e.operands[0]);
            std::optional<Val> acc;
            for (std::size_t k = 0; k < ops.size(); ++k) {
                const Val right = expr(*e.operands[k + 1]);
                const SourceSpan span = join(e.operands[k]->span, e.operands[k + 1]->span);
                Val c = lit(k) && lit(k + 1) ? literal(folder_.fold_chain(e, k, k + 1), span)
                                             : binary(ops[k], left, right, span);
                acc = acc ? binary(Op::And, *acc, c, join(e.operands[0]->span, e.operands[k + 1]->span)) : c;
                left = right;
            }
            return *acc;
        }
        if (ir::is_right_assoc(ops[0])) {  // operands checked left to right (as Python), folded from the right
            std::size_t first = ops.size();
            while (first > 0 && lit(first - 1) && lit(ops.size())) --first;
            std::vector<Val> base;
            for (std::size_t k = 0; k < first; ++k) base.push_back(expr(*e.operands[k]));
            Val acc = first < ops.size() ? literal(folder_.fold_chain(e, first, ops.size()),
                                                   join(e.operands[first]->span, e.operands.back()->span))
                                         : expr(*e.operands.back());
            for (std::size_t k = first; k-- > 0;) {
                const SourceSpan sp = join(e.operands[k]->span, e.operands.back()->span);
                acc = ops[k] == Op::Pow ? power(base[k], acc, sp, true) : binary(ops[k], base[k], acc, sp);
            }
            return acc;
        }
        std::size_t run = 0;
        while (run < e.operands.size() && lit(run)) ++run;
        if (run >= 2) {
            const std::size_t last = run - 1;
            Val acc = literal(folder_.fold_chain(e, 0, last), join(e.operands[0]->span, e.operands[last]->span));
            for (std::size_t k = last; k < ops.size(); ++k) {
                const Val right = expr(*e.operands[k + 1]);
                acc = binary(ops[k], acc, right, join(e.operands[0]->span, e.operands[k + 1]->span));
            }
            return acc;
        }
        Val acc = expr(*e.operands[0]);
        for (std::size_t k = 0; k < ops.size(); ++k) {
            const Val right = expr(*e.operands[k + 1]);
            acc = binary(ops[k], acc, right, join(e.operands[0]->span, e.operands[k + 1]->span));
        }
        return acc;
    }

    // x ** y with y a Python number (a literal or a host scalar) and x an inexact array, as
    // NumPy computes it: ndarray.__pow__ takes a float exponent of 0.5 as sqrt and an int one of
    // 2 as square and of -1 as reciprocal (`operator_form`; a complex ** 2.0 is pow), and
    // np.power's float32 and float64 loops take a scalar 0.5 as sqrt (2 as square: the same
    // values). Where these differ from pow is in special values and rounding:
    // (-inf) ** 0.5 is nan and (-0.0) ** 0.5 is -0.0, a complex square or reciprocal has its own
    // infinities, and CUDA's pow is not correctly rounded. A host scalar (or an expression of
    // them) is chosen by its value per call (a select of the candidates).
    Val power(const Val& a, const Val& b, SourceSpan span, bool operator_form) {
        const Val r = binary(Op::Pow, a, b, span);
        if (a.weak != Weak::None || b.weak == Weak::None || b.weak == Weak::Bool || a.selected() || b.selected() ||
            r.selected() || !is_inexact(dt(a)))
            return r;
        const DType t = node(r.node).dtype;
        const Node& bn = node(b.node);
        if (!is_inexact(t) || is_complex(bn.dtype) || is_bool(bn.dtype)) return r;
        std::vector<std::pair<double, Op>> shortcuts;
        const bool int_exponent = b.weak == Weak::Int;
        if (operator_form && int_exponent) shortcuts = {{2.0, Op::Square}, {-1.0, Op::Reciprocal}};
        else if (operator_form) shortcuts = {{0.5, Op::Sqrt}};
        else if (t == DType::Float32 || t == DType::Float64)
            shortcuts = int_exponent ? std::vector<std::pair<double, Op>>{{2.0, Op::Square}}
                                     : std::vector<std::pair<double, Op>>{{0.5, Op::Sqrt}, {2.0, Op::Square}};
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

    Val where(const Val& c, const Val& x, const Val& y, SourceSpan span) {
        if (c.selected() || x.selected() || y.selected()) {
            Val c1 = c, x1 = x, y1 = y;
            const Sel sel = unselect({&c1, &x1, &y1}, span);
            return reselect(where(c1, x1, y1, span), sel);
        }
        const ir::NodeId cb = cast(c, DType::Bool, span);
        Weak weak = Weak::None;
        const DType p = promote_all({&x, &y}, &weak);
        const ir::NodeId xs = cast(x, p, span), ys = cast(y, p, span);
        Shape s = broadcast(broadcast(node(cb).shape, node(xs).shape, span), node(ys).shape, span);
        // Typed even when both branches are literals, as np.where's result: where(c, 2, -1) is
        // int64, so u8 * where(c, 2, -1) is int64 (not a weak value that u8 would absorb).
        return Val{op_node(Op::Where, p, std::move(s), {cb, xs, ys}, span), Weak::None};
    }

    Val call(const Expr& e) {
        std::vector<Val> one = call(e, nullptr);
        return one.front();
    }

    // A call. With `several` null the call must give one value (a function of several results
    // is a TypeError); otherwise it must be a function of several, whose results are returned.
    std::vector<Val> call(const Expr& e, const syntax::Statement* several) {
        const std::string& fname = e.text;
        const std::size_t nargs = e.operands.size();
        // dtype casts: float32(x), int64(x), bool(x), ...; complex(re, im) with two arguments
        // is the function of the op table (numexpr's constructor), complex(x) the cast.
        const bool complex_function = fname == "complex" && nargs == 2 && e.keywords.empty();
        if (auto t = complex_function ? std::nullopt : dtype_from_name(fname)) {
            if (nargs != 1 || !e.keywords.empty())
                throw TypeError(fmt::format("{}() takes exactly 1 argument ({} given)", fname, nargs), text_, e.span);
            if (locals_.count(fname) == 0 && !(lookup_ && lookup_(fname))) {
                // A literal must fit an integer dtype it is cast to (np.uint8(300) is an error);
                // arrays and host scalars convert with NumPy's casting.
                if (several) not_several(*several);
                Val a = expr(*e.operands[0]);
                const bool literal_int = a.weak == Weak::Int && node(a.node).kind == NodeKind::Const;
                if (a.selected()) {
                    const Sel sel = unselect({&a}, e.span);
                    return {reselect(Val{cast(Val{a.node, Weak::None}, *t, e.span), Weak::None}, sel)};
                }
                return {Val{cast(Val{a.node, literal_int ? Weak::Int : Weak::None}, *t, e.span), Weak::None}};
            }
        }
        const auto& candidates = functions_named(fname);
        if (candidates.empty()) {
            if (locals_.count(fname) || (lookup_ && lookup_(fname)) || named_constants().count(fname))
                throw NameError(fmt::format("'{}' is not a function", fname), text_, e.name_span);
            const std::string best = closest(fname, builtin_names());
            throw NameError(fmt::format("unknown function '{}'{}", fname,
                                        best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best)),
                            text_, e.name_span);
        }
        const ir::OpInfo* fn = nullptr;
        for (const ir::OpInfo* c : candidates)
            if (static_cast<std::size_t>(c->arity) == nargs && !takes_axis(*c)) fn = c;
        // A reduction or scan takes its axis (and a statistic its other arguments) positionally
        // too; max(x, y) stays the element-wise maximum.
        if (!fn && nargs >= 1)
            for (const ir::OpInfo* c : candidates)
                if (takes_axis(*c)) fn = c;
        if (!fn) {
            std::string arities;
            for (const ir::OpInfo* c : candidates)
                arities += (arities.empty() ? "" : " or ") + std::to_string(c->arity);
            throw TypeError(
                fmt::format("{}() takes {} argument{} ({} given)", fname, arities, arities == "1" ? "" : "s", nargs),
                text_, e.span);
        }
        if (fn->kind == OpKind::Result && !several) {
            const ir::Results res = ir::results_of(fn->op);
            type_error(fmt::format("{}() gives {} values; assign them to {} names, as in '{}'", fname, res.count,
                                   res.count, several_example(e, res.count)),
                       e.span);
        }
        if (several) {
            if (fn->kind != OpKind::Result) not_several(*several);
            const std::size_t want = ir::results_of(fn->op).count, have = several->more_targets.size() + 1;
            if (want != have)
                type_error(fmt::format("{}() gives {} values, but {} names are assigned", fname, want, have),
                           SourceSpan{several->target_span.begin, several->more_targets.back().span.end});
        }
        if (fn->kind == OpKind::Reduction) return {reduction_call(*fn, e)};
        if (fn->kind == OpKind::Scan) return {scan_call(*fn, e)};
        // Keywords: only on reductions and scans.
        if (!e.keywords.empty())
            throw TypeError(fmt::format("{}() got an unexpected keyword argument '{}'", fname, e.keywords[0].name),
                            text_, e.keywords[0].name_span);
        std::vector<Val> args;
        args.reserve(nargs);
        for (const auto& a : e.operands) args.push_back(expr(*a));

        // A ufunc of Python scalars alone makes each an array of its default dtype first
        // (np.power(True, True) is int8, as bool ** bool), and its result is typed.
        // np.clip is the exception: it makes its first operand an array and leaves the bounds
        // Python numbers, so clip(-143, 2**64 - 1, 9) is NumPy's OverflowError, not a float64.
        if (std::all_of(args.begin(), args.end(), [](const Val& v) { return v.weak != Weak::None; }) &&
            fn->op != Op::Where) {
            if (fn->op == Op::Clip) args[0] = strong(args[0]);
            else
                for (Val& a : args) a = strong(a);
        }
        if (fn->kind == OpKind::Result) {
            // Each result is an op of its own over the same operand nodes: one kernel computes them all.
            const ir::Results res = ir::results_of(fn->op);
            std::vector<Val> out;
            for (std::size_t k = res.first; k < res.first + res.count; ++k) {
                const Op op = ir::op_table()[k].op;
                out.push_back(fn->arity == 1 ? unary(op, strong(args[0]), e.span)
                                             : typed(binary(op, args[0], args[1], e.span)));
            }
            return out;
        }
        if (ir::info(fn->op).rule == ir::Rule::Ldexp) return {ldexp(args[0], args[1], e)};
        if (ir::info(fn->op).rule == ir::Rule::Logical && fn->arity == 2) {
            // NumPy's logical_and/or/xor convert a Python int beside an array to a C long
            // (OverflowError past int64, whatever the array's dtype); the operators `and` and
            // `or` take each operand as a bool (docs/language.md).
            for (std::size_t k = 0; k < args.size(); ++k) {
                const Val& v = args[k];
                if (v.weak != Weak::Int) continue;
                const Node& n = node(v.node);
                std::string digits;
                if (auto big = big_.find(v.node); big != big_.end()) digits = big->second.digits;
                else if (n.kind == NodeKind::Const && is_unsigned_int(n.value.dtype) &&
                         n.value.u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                    digits = n.value.to_string();
                if (!digits.empty())
                    throw ValueError(fmt::format("integer {} is out of bounds for int64 ({}() takes a Python int "
                                                 "as a C long, as NumPy does)",
                                                 digits, fname),
                                     text_, e.operands[k]->span);
            }
        }
        switch (fn->arity) {
            case 1: return {unary(fn->op, strong(args[0]), e.span)};
            case 2:  // power(): typed
                if (fn->op == Op::Pow) return {typed(power(args[0], args[1], e.span, false))};
                return {typed(binary(fn->op, args[0], args[1], e.span))};
            default: break;
        }
        if (fn->op == Op::Where) return {where(args[0], args[1], args[2], e.span)};
        // clip(x, lo, hi)
        if (args[0].selected() || args[1].selected() || args[2].selected()) {
            std::vector<Val> plain = args;
            const Sel sel = unselect({&plain[0], &plain[1], &plain[2]}, e.span);
            return {reselect(clip(*fn, plain, e), sel)};
        }
        return {clip(*fn, args, e)};
    }

    Val clip(const ir::OpInfo& fnr, const std::vector<Val>& args, const Expr& e) {
        const ir::OpInfo* fn = &fnr;
        Weak weak = Weak::None;
        const DType p = promote_all({&args[0], &args[1], &args[2]}, &weak);
        const Typed t = rule(fn->op, p, e.span);
        const ir::NodeId x = cast(args[0], t.operand, e.span), lo = cast(args[1], t.operand, e.span),
                         hi = cast(args[2], t.operand, e.span);
        Shape s = broadcast(broadcast(node(x).shape, node(lo).shape, e.span), node(hi).shape, e.span);
        return Val{op_node(fn->op, t.result, std::move(s), {x, lo, hi}, e.span), Weak::None};  // a ufunc: typed
    }

    // `a, b = f(x)`, for a message (not the call's own text: a caller may have rewritten parts
    // of it, as the CLI does its constructors).
    static std::string several_example(const Expr& call, std::size_t results) {
        static constexpr std::string_view kNames[] = {"a", "b", "c", "d"};
        std::string names, args;
        for (std::size_t k = 0; k < results; ++k)
            names += fmt::format("{}{}", k ? ", " : "", k < 4 ? std::string(kNames[k]) : fmt::format("r{}", k));
        const std::size_t n = call.operands.size();
        for (std::size_t k = 0; k < n; ++k)
            args += n == 1 ? std::string("x") : fmt::format("{}x{}", k ? ", " : "", k + 1);
        return fmt::format("{} = {}({})", names, call.text, args);
    }

    [[noreturn]] void not_several(const syntax::Statement& st) const {
        type_error(fmt::format("{} names are assigned one value; only a function of several results (divmod, frexp, "
                               "modf) can be assigned to several names",
                               st.more_targets.size() + 1),
                   st.value->span);
    }

    // ldexp(x1, x2): NumPy's loops take a float x1 and an int32 or int64 x2, so x2 is not
    // promoted with x1: it must be bool or an integer int64 holds (a Python integer one int32
    // holds), and a Python number x1 takes x2's dtype first (ldexp(3, i8) is float16).
    Val ldexp(const Val& x, const Val& n, const Expr& e) {
        if (x.selected() || n.selected()) {
            Val x1 = x, n1 = n;
            const Sel sel = unselect({&x1, &n1}, e.span);
            return reselect(ldexp(x1, n1, e), sel);
        }
        const SourceSpan n_span = e.operands.at(1)->span;
        Val xv = x, nv = n;
        if (nv.weak != Weak::None) {
            if (nv.weak != Weak::Int && nv.weak != Weak::Bool)
                type_error(fmt::format("ldexp() takes an integer exponent, not a Python {}",
                                       nv.weak == Weak::Float ? "float" : "complex"),
                           n_span);
            if (nv.weak == Weak::Int) nv = Val{cast(nv, DType::Int32, n_span), Weak::None};
            else nv = Val{cast(nv, DType::Bool, n_span), Weak::None};
        } else if (!(is_integer(dt(nv)) || is_bool(dt(nv))) || dt(nv) == DType::UInt64) {
            type_error(fmt::format("ldexp() takes an integer exponent that int64 holds, not {}", dtype_name(dt(nv))),
                       n_span);
        }
        if (xv.weak != Weak::None) {
            // NumPy's first loop a Python number fits: a Python int or bool takes float16 ('e'),
            // a Python float float64; an int against a bool exponent float64 (NumPy's int64).
            if (xv.weak == Weak::Complex) type_error("ldexp() is not supported for complex", e.operands.at(0)->span);
            const DType t =
                xv.weak == Weak::Float || (xv.weak == Weak::Int && is_bool(dt(nv))) ? DType::Float64 : DType::Float16;
            xv = Val{cast(Val{xv.node, Weak::None}, t, e.operands.at(0)->span), Weak::None};
        }
        const Typed t = rule(Op::Ldexp, dt(xv), e.span);
        const ir::NodeId a = cast(xv, t.operand, e.span), b = cast(nv, t.operand, e.span);
        Shape s = broadcast(node(a).shape, node(b).shape, e.span);
        return Val{op_node(Op::Ldexp, t.result, std::move(s), {a, b}, e.span), Weak::None};
    }

    std::int64_t constant_int(const Expr& e) const {
        if (e.kind == ExprKind::Int && !e.int_big && e.int_value <= static_cast<std::uint64_t>(kMaxDims))
            return static_cast<std::int64_t>(e.int_value);
        if (e.kind == ExprKind::Unary && e.ops.at(0) == Op::Neg && e.operands.at(0)->kind == ExprKind::Int &&
            !e.operands[0]->int_big && e.operands[0]->int_value <= static_cast<std::uint64_t>(kMaxDims))
            return -static_cast<std::int64_t>(e.operands[0]->int_value);
        throw ValueError("axis must be a small integer literal, a tuple of them, or None", text_, e.span);
    }

    // ---- reductions
    // The axes a reduction folds: every one (no axis, or axis=None), or a set (axis=1,
    // axis=(0, 2); the language has no empty tuple).
    struct Axes {
        bool all = true;
        std::vector<std::int32_t> list;  // sorted, distinct, each in [0, ndim)
        bool has(std::size_t d) const {
            return all || std::binary_search(list.begin(), list.end(), static_cast<std::int32_t>(d));
        }
    };

    static bool takes_ddof(Op op) { return op == Op::Var || op == Op::Std || op == Op::NanVar || op == Op::NanStd; }
    // NumPy's positional parameters after the array (only those jitexpr reads).
    static std::vector<std::string_view> positional_params(Op op) {
        if (op == Op::Average) return {"axis", "weights"};
        if (takes_q(op)) return {"q", "axis"};
        return {"axis"};
    }
    static bool takes_axis(const ir::OpInfo& i) { return i.kind == OpKind::Reduction || i.kind == OpKind::Scan; }
    static bool takes_q(Op op) {
        return op == Op::Percentile || op == Op::Quantile || op == Op::NanPercentile || op == Op::NanQuantile;
    }
    static bool is_order_stat(Op op) { return takes_q(op) || op == Op::Median || op == Op::NanMedian; }
    static bool takes_keyword(Op op, std::string_view k) {
        if (k == "axis") return true;
        if (k == "keepdims") return ir::info(op).kind == OpKind::Reduction;
        if (k == "ddof") return takes_ddof(op);
        if (k == "weights") return op == Op::Average;
        if (k == "q") return takes_q(op);
        return false;
    }

    Axes axes_of(const Expr* e, std::int32_t nd, bool one_only, const std::string& fname) const {
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

    // ---- indexing: a[1:], m[:, 0], a[None, ::-1], a[..., -1] with constant bounds
    //
    // An index makes a view: the Input nodes under the indexed value become new input slots
    // that read the same bound array with another offset, shape and strides (InputDecl::view);
    // operations between them and the index are applied to the views of their operands, so no
    // value is copied or computed twice as large. NumPy's rules: slices clip their bounds, an
    // integer index past its axis is an IndexError.

    // How one axis of the indexed value is read: position start + step * j, where j runs over
    // result axis `out` (-1: a fixed position, the axis is dropped).
    struct ViewAxis {
        std::int64_t start = 0, step = 1;
        std::int32_t out = -1;
    };
    struct View {
        Shape out;                   // the result's shape
        std::vector<ViewAxis> axes;  // one per axis of the indexed value
    };

    // The constant integer an index part must be (folded as Python folds literals).
    std::int64_t index_constant(const Expr& e, bool in_slice) {
        if (!folder_.is_literal(e)) {
            const Val v = expr(e);
            if (is_bool(dt(v)) && !in_slice)
                throw ValueError(
                    "a boolean mask must be the only index (b[m]); with other indices (b[m, 0], b[:, m]) "
                    "it is not supported",
                    text_, e.span);
            throw ValueError(fmt::format("{} must be a constant integer: jitexpr indexes with constant bounds "
                                         "(integer-array indexing is not supported)",
                                         in_slice ? "a slice bound" : "an index"),
                             text_, e.span);
        }
        const Folded f = folder_.fold(e);
        if (f.kind == Folded::Kind::Bool && !in_slice)
            throw ValueError("a boolean scalar index (a[True]) is not supported", text_, e.span);
        if (f.kind != Folded::Kind::Int && f.kind != Folded::Kind::Bool && in_slice)
            type_error("slice indices must be integers or None", e.span);
        if (f.kind != Folded::Kind::Int && f.kind != Folded::Kind::Bool)
            throw IndexError("only integers, slices (':'), ellipsis ('...'), None and boolean arrays are valid indices",
                             text_, e.span);
        constexpr std::int64_t kBig = std::numeric_limits<std::int64_t>::max();
        if (f.big) return f.digits[0] == '-' ? -kBig : kBig;  // past every axis: clipped, or out of bounds
        if (f.kind == Folded::Kind::Bool) return f.value.b ? 1 : 0;
        if (f.value.dtype == DType::UInt64) return kBig;
        return f.value.i;
    }

    Val subscript(const Expr& e) {
        const Val base = expr(*e.operands.at(0));
        if (base.weak != Weak::None) type_error("a scalar cannot be indexed (only arrays are)", e.operands[0]->span);
        if (e.index.size() == 1 && e.index[0].kind == syntax::IndexItem::Kind::Index) {
            const Expr& x = *e.operands.at(static_cast<std::size_t>(e.index[0].start));
            if (!is_none(x) && !folder_.is_literal(x)) {
                const Val m = expr(x);
                if (is_bool(dt(m))) return mask_select(base, m, e, x);
            }
        }
        // A boolean-mask selection is indexed along its other axes only (c[m][:, 0] is c[:, 0][m]):
        // its first axis, whose length the data decides, stays whole.
        Shape sel_full, sel_shape;
        if (base.selected()) {
            sel_full = broadcast(shape(base), node(base.mask).shape, e.span);
            sel_shape.assign(1, 1);
            for (std::size_t d = 0; d < sel_full.size(); ++d) {
                if (static_cast<std::int32_t>(d) < base.mask_axes) sel_shape[0] *= sel_full[d];
                else sel_shape.push_back(sel_full[d]);
            }
            const syntax::IndexItem& first = e.index.front();
            auto omitted = [&](std::int32_t k) { return k < 0 || is_none(*e.operands[static_cast<std::size_t>(k)]); };
            const bool whole = (first.kind == syntax::IndexItem::Kind::Slice && omitted(first.start) &&
                                omitted(first.stop) && omitted(first.step)) ||
                               (first.kind == syntax::IndexItem::Kind::Ellipsis &&
                                count_consumed(e) < static_cast<std::int64_t>(sel_shape.size()));
            if (!whole)
                throw ValueError(
                    "a boolean-mask selection can be indexed along its other axes only (c[m][:, 0]): its first axis "
                    "has the length the data decides (index the array and its mask before selecting: b[1:][m[1:]])",
                    text_, e.span);
        }
        const Shape& in = base.selected() ? sel_shape : shape(base);
        const auto nd = static_cast<std::int64_t>(in.size());
        // The items: how many axes they consume, and a single ellipsis.
        std::int64_t consumed = 0;
        const syntax::IndexItem* ellipsis = nullptr;
        for (const syntax::IndexItem& it : e.index) {
            if (it.kind == syntax::IndexItem::Kind::Ellipsis) {
                if (ellipsis) throw IndexError("an index can only have a single ellipsis ('...')", text_, it.span);
                ellipsis = &it;
            } else if (!(it.kind == syntax::IndexItem::Kind::Index &&
                         is_none(*e.operands[static_cast<std::size_t>(it.start)]))) {
                if (++consumed > nd)
                    throw IndexError(
                        fmt::format("too many indices for array: array is {}-dimensional, but {} were indexed", nd,
                                    count_consumed(e)),
                        text_, it.span);
            }
        }
        View v;
        v.axes.resize(static_cast<std::size_t>(nd));
        std::int64_t axis = 0;
        auto full = [&] {
            const std::int64_t n = in[static_cast<std::size_t>(axis)];
            v.axes[static_cast<std::size_t>(axis++)] = ViewAxis{0, 1, static_cast<std::int32_t>(v.out.size())};
            v.out.push_back(n);
        };
        for (const syntax::IndexItem& it : e.index) {
            const auto part = [&](std::int32_t k) -> const Expr* {
                return k < 0 ? nullptr : e.operands[static_cast<std::size_t>(k)].get();
            };
            if (it.kind == syntax::IndexItem::Kind::Ellipsis) {
                for (std::int64_t k = 0; k < nd - consumed; ++k) full();
                continue;
            }
            if (it.kind == syntax::IndexItem::Kind::Index) {
                const Expr& x = *part(it.start);
                if (is_none(x)) {
                    v.out.push_back(1);  // a new axis of length 1
                    continue;
                }
                const std::int64_t n = in[static_cast<std::size_t>(axis)];
                std::int64_t i = index_constant(x, false);
                if (i < -n || i >= n)
                    throw IndexError(
                        fmt::format("index {} is out of bounds for axis {} with size {}",
                                    i == std::numeric_limits<std::int64_t>::max() ||
                                            i == -std::numeric_limits<std::int64_t>::max()
                                        ? std::string(text_.substr(x.span.begin, x.span.end - x.span.begin))
                                        : std::to_string(i),
                                    axis, n),
                        text_, x.span);
                if (i < 0) i += n;
                v.axes[static_cast<std::size_t>(axis++)] = ViewAxis{i, 1, -1};
                continue;
            }
            // start:stop:step as Python's slice.indices(n) reads it.
            const std::int64_t n = in[static_cast<std::size_t>(axis)];
            std::int64_t step = 1;
            if (const Expr* s = part(it.step)) {
                if (!is_none(*s)) step = index_constant(*s, true);
                if (step == 0) throw ValueError("slice step cannot be zero", text_, s->span);
                step = std::max(step, -std::numeric_limits<std::int64_t>::max());  // -step stays an int64
            }
            auto bound = [&](std::int32_t k, std::int64_t dflt) {
                const Expr* b = part(k);
                if (!b || is_none(*b)) return dflt;
                std::int64_t x = index_constant(*b, true);
                if (x < 0) {
                    x = x < -n ? (step < 0 ? -1 : 0) : x + n;
                } else if (x >= n) {
                    x = step < 0 ? n - 1 : n;
                }
                return x;
            };
            const std::int64_t start = bound(it.start, step < 0 ? n - 1 : 0);
            const std::int64_t stop = bound(it.stop, step < 0 ? -1 : n);
            std::int64_t count = 0;
            if (step > 0 && stop > start) count = (stop - start - 1) / step + 1;
            if (step < 0 && start > stop) count = (start - stop - 1) / (-step) + 1;
            v.axes[static_cast<std::size_t>(axis++)] =
                ViewAxis{count > 0 ? start : 0, step, static_cast<std::int32_t>(v.out.size())};
            v.out.push_back(count);
        }
        while (axis < nd) full();
        if (static_cast<int>(v.out.size()) > kMaxDims)
            throw ShapeError(fmt::format("more than {} dimensions", kMaxDims), text_, e.span);
        view_memo_.clear();
        if (base.selected()) return selection_view(base, sel_full, v, e.span);
        return Val{view_of(base.node, v, e.span), Weak::None};
    }

    // The view v of a selection (its axis 0 whole) as a view of its values, of shape `full`,
    // and of its mask (extent 1 past the mask's axes), still selected by the mask's axes.
    Val selection_view(const Val& base, const Shape& full, const View& v, SourceSpan span) {
        const auto k = static_cast<std::size_t>(base.mask_axes);
        View w;
        for (std::size_t d = 0; d < k; ++d) {
            w.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
            w.out.push_back(full[d]);
        }
        w.out.insert(w.out.end(), v.out.begin() + 1, v.out.end());
        for (std::size_t d = 1; d < v.axes.size(); ++d) {
            ViewAxis x = v.axes[d];
            if (x.out >= 0) x.out += static_cast<std::int32_t>(k) - 1;
            w.axes.push_back(x);
        }
        if (static_cast<int>(w.out.size()) > kMaxDims)
            throw ShapeError(fmt::format("more than {} dimensions", kMaxDims), text_, span);
        const ir::NodeId values = shape(base) == full ? base.node : fresh(base.node, full, span);
        Val r{view_of(values, w, span), Weak::None};
        // The mask's axes past its own are of extent 1 (it broadcasts over them): they stay so,
        // or go where the view indexes them away.
        View mv;
        mv.out = w.out;
        for (std::size_t d = k; d < mv.out.size(); ++d) mv.out[d] = 1;
        for (std::size_t d = 0; d < w.axes.size(); ++d)
            mv.axes.push_back(d < k ? w.axes[d] : ViewAxis{0, 1, w.axes[d].out});
        if (node(base.mask).shape.size() != w.axes.size())
            throw InternalError("lower: a selection's mask of another rank than its values");
        view_memo_.clear();
        r.mask = view_of(base.mask, mv, span);
        r.mask_axes = base.mask_axes;
        return r;
    }

    static bool is_none(const Expr& x) { return x.kind == ExprKind::Name && x.text == "None"; }

    // b[m] for a bool array m: NumPy's rules (m's shape is that of b's leading axes), the
    // selection kept as a masked value (Val::mask) until it is reduced or stored.
    Val mask_select(const Val& base, const Val& m, const Expr& e, const Expr& mx) {
        if (base.selected())
            throw ValueError("a boolean-mask selection cannot be indexed again (combine the masks: b[m1 & m2])", text_,
                             e.span);
        if (m.selected())
            throw ValueError("a mask cannot itself be a boolean-mask selection (combine the masks: b[m1 & m2])", text_,
                             mx.span);
        const Shape ms = shape(m);
        const Shape bs = shape(base);
        if (m.weak != Weak::None || ms.empty())
            throw ValueError("a 0-d boolean index (b[flag]) is not supported: a mask is a bool array", text_, mx.span);
        if (ms.size() > bs.size())
            throw IndexError(fmt::format("too many indices for array: array is {}-dimensional, but {} were indexed",
                                         bs.size(), ms.size()),
                             text_, mx.span);
        // NumPy lets a mask axis of no element stand against an axis of any extent (its selection
        // is then empty: ones(3)[zeros(0) > 1] has shape (0,)); any other mismatch is an error.
        bool empty_axis = false;
        for (std::size_t d = 0; d < ms.size(); ++d) {
            if (ms[d] == bs[d]) continue;
            if (ms[d] != 0)
                throw IndexError(fmt::format("boolean index did not match indexed array along axis {}; size of axis is "
                                             "{} but size of corresponding boolean axis is {}",
                                             d, bs[d], ms[d]),
                                 text_, mx.span);
            empty_axis = true;
        }
        if (empty_axis) {
            // The values cut to the mask's extents (a view of no element), then selected as usual.
            View v;
            v.out = ms;
            v.out.insert(v.out.end(), bs.begin() + static_cast<std::ptrdiff_t>(ms.size()), bs.end());
            for (std::size_t d = 0; d < bs.size(); ++d) v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
            view_memo_.clear();
            Val cut{view_of(base.node, v, e.span), Weak::None};
            return mask_select(cut, m, e, mx);
        }
        // The mask with the array's other axes as extent 1, so that it broadcasts over them.
        ir::NodeId mk = m.node;
        if (ms.size() < bs.size()) {
            View v;
            v.out = ms;
            v.out.resize(bs.size(), 1);
            for (std::size_t d = 0; d < ms.size(); ++d) v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
            view_memo_.clear();
            mk = view_of(m.node, v, mx.span);
        }
        Val r{base.node, Weak::None};
        r.mask = mk;
        r.mask_axes = static_cast<std::int32_t>(ms.size());
        return r;
    }

    // A selection stored to memory: the Compact node of its values where its mask is true, both
    // over their common shape.
    // A selection whose rows hold no element (b of shape (4, 0) under a mask of shape (4,)) still
    // has a row for each true mask element, (count, 0) as in NumPy: its stage runs over the
    // mask's own axes (the other axes of extent 1), counting rows, with values that read
    // nothing of the empty array, and stores no element (ir::verify and both backends know the
    // form: the values' trailing axes are 1 where the Compact node's hold no element).
    ir::NodeId compact(const Val& v, SourceSpan span) {
        Shape full = broadcast(shape(v), node(v.mask).shape, span);
        const auto k = static_cast<std::size_t>(v.mask_axes);
        Node c;
        c.kind = NodeKind::Compact;
        c.dtype = dt(v);
        c.shape.assign(1, 1);
        for (std::size_t d = 0; d < full.size(); ++d) {
            if (d < k) c.shape[0] *= full[d];
            else c.shape.push_back(full[d]);
        }
        const bool empty_rows = shape_size(full) == 0 && c.shape[0] > 0;
        if (empty_rows)
            for (std::size_t d = k; d < full.size(); ++d) full[d] = 1;
        // One broadcast mask node per mask and shape: selections by one mask share a stage.
        std::string key = std::to_string(v.mask.value());
        for (const std::int64_t e : full) key += fmt::format(",{}", e);
        if (empty_rows) key += ",rows";
        auto [it, fresh_mask] = compact_masks_.try_emplace(std::move(key), v.mask);
        if (fresh_mask && node(v.mask).shape != full) it->second = fresh(v.mask, full, span);
        const ir::NodeId mask = it->second;
        const ir::NodeId values = empty_rows         ? cast(Val{mask, Weak::None}, c.dtype, span)
                                  : shape(v) == full ? v.node
                                                     : fresh(v.node, full, span);
        c.args[0] = values;
        c.args[1] = mask;
        c.nargs = 2;
        c.axis = v.mask_axes;
        c.span = span;
        return add(std::move(c));
    }

    static std::int64_t count_consumed(const Expr& e) {
        std::int64_t k = 0;
        for (const syntax::IndexItem& it : e.index)
            if (it.kind == syntax::IndexItem::Kind::Slice ||
                (it.kind == syntax::IndexItem::Kind::Index &&
                 !is_none(*e.operands[static_cast<std::size_t>(it.start)])))
                ++k;
        return k;
    }

    // The view `v` of an operand of shape `a`, read by a node of shape `s` under view `v`:
    // the operand's broadcast axes stay of length 1 (and read position 0).
    static View operand_view(const View& v, const Shape& s, const Shape& a) {
        View r;
        r.out.assign(v.out.size(), 1);
        const std::size_t lead = s.size() - a.size();
        for (std::size_t i = 0; i < a.size(); ++i) {
            ViewAxis x = v.axes[lead + i];
            if (a[i] != s[lead + i]) x = ViewAxis{0, 0, x.out};  // broadcast: always position 0
            else if (x.out >= 0) r.out[static_cast<std::size_t>(x.out)] = v.out[static_cast<std::size_t>(x.out)];
            r.axes.push_back(x);
        }
        return r;
    }

    static bool identity(const View& v, const Shape& s) {
        if (v.out != s) return false;
        for (std::size_t d = 0; d < v.axes.size(); ++d)
            if (v.axes[d].start != 0 || v.axes[d].step != 1 || v.axes[d].out != static_cast<std::int32_t>(d))
                return false;
        return true;
    }

    // The node computing `n` read through view `v` (a new node; `n` itself when v is the identity).
    ir::NodeId view_of(ir::NodeId n, const View& v, SourceSpan span) {
        const Node src = node(n);
        if (identity(v, src.shape)) return n;
        std::string key = std::to_string(n.value());
        for (auto x : v.out) key += fmt::format(",{}", x);
        for (const ViewAxis& x : v.axes) key += fmt::format(";{},{},{}", x.start, x.step, x.out);
        if (auto it = view_memo_.find(key); it != view_memo_.end()) return it->second;
        ir::NodeId r;
        if (src.shape.empty()) {
            // A 0-d value under new axes: broadcast by a cast to the result's shape.
            Node c;
            c.kind = NodeKind::Cast;
            c.dtype = src.dtype;
            c.shape = v.out;
            c.args[0] = n;
            c.nargs = 1;
            c.span = span;
            r = add(std::move(c));
        } else if (src.kind == NodeKind::Input) {
            r = view_input(src, v, span);
        } else if (src.kind == NodeKind::Op || src.kind == NodeKind::Cast) {
            Node m = src;
            m.shape = v.out;
            for (int k = 0; k < src.nargs; ++k) {
                const ir::NodeId a = src.args[k];
                const Shape& as = node(a).shape;
                m.args[k] = as.empty() ? a : view_of(a, operand_view(v, src.shape, as), span);
            }
            r = add(std::move(m));
        } else if (src.kind == NodeKind::Reduce && src.axis >= 0 &&
                   src.shape.size() + 1 == node(src.args[0]).shape.size()) {  // not a keepdims result
            // The reduced axis stays whole, as a last axis of the operand's view.
            const ir::NodeId a = src.args[0];
            const Shape& as = node(a).shape;
            View w;
            w.out = v.out;
            const auto reduced = static_cast<std::int32_t>(w.out.size());
            w.out.push_back(as[static_cast<std::size_t>(src.axis)]);
            for (std::size_t d = 0, k = 0; d < as.size(); ++d)
                w.axes.push_back(static_cast<std::int32_t>(d) == src.axis ? ViewAxis{0, 1, reduced} : v.axes[k++]);
            Node m = src;
            m.shape = v.out;
            m.axis = reduced;
            m.args[0] = view_of(a, w, span);
            r = add(std::move(m));
        } else if (src.kind == NodeKind::Scan) {
            r = view_of_scan(src, v, span);
        } else {
            throw ValueError("this expression cannot be indexed (index the arrays it is computed from)", text_, span);
        }
        view_memo_.emplace(std::move(key), r);
        return r;
    }

    // A view of a scan that keeps the scanned axis from its start, in order (the axis whole, or
    // a prefix: cumsum(a)[:k] is cumsum(a[:k])): the same scan of the operand's view, the same
    // values bit for bit. Any other view of the scanned axis would read the running values at
    // other positions, which only the scan's stored result holds.
    ir::NodeId view_of_scan(const Node& src, const View& v, SourceSpan span) {
        if (shape_size(v.out) == 0) {
            // A view of no element reads no running value (a selection by a mask axis of no
            // element: cumsum(1)[zeros(0) > 1]): a zero of the scan's dtype broadcast to it.
            Node c;
            c.kind = NodeKind::Cast;
            c.dtype = src.dtype;
            c.shape = v.out;
            c.args[0] = constant(ir::Value::of_int(0).cast(src.dtype), span);
            c.nargs = 1;
            c.span = span;
            return add(std::move(c));
        }
        const ir::NodeId a = src.args[0];
        const Shape& as = node(a).shape;
        const bool flat_of_many = src.axis < 0 && as.size() != 1;  // a 1-d result of a 0-d or n-d operand
        const std::size_t sa = src.axis < 0 ? 0 : static_cast<std::size_t>(src.axis);
        const ViewAxis& x = v.axes.at(sa);
        if (flat_of_many || x.out < 0 || x.start != 0 || x.step != 1)
            throw ValueError(
                std::string("a scan's result can be indexed along its scanned axis only by a prefix slice ([:k], "
                            "the scan of the prefix): the running values at other positions exist only once the "
                            "whole scan is stored"),
                text_, span);
        Node m = src;
        m.shape = v.out;
        m.args[0] = view_of(a, v, span);
        m.axis = v.out.size() <= 1 ? -1 : x.out;
        return add(std::move(m));
    }

    // A view of an input: the same bound array at another offset, shape and strides.
    ir::NodeId view_input(const Node& src, const View& v, SourceSpan span) {
        const ir::InputDecl d = p_.inputs[static_cast<std::size_t>(src.slot)];
        const Strides st = d.strides.size() == d.shape.size() ? d.strides : contiguous_strides(d.shape);
        ir::InputDecl w;
        w.name = d.name;
        w.dtype = d.dtype;
        w.shape = v.out;
        w.strides.assign(v.out.size(), 0);
        w.view = true;
        std::int64_t offset = d.offset;
        for (std::size_t a = 0; a < v.axes.size(); ++a) {
            offset += v.axes[a].start * st[a];
            if (v.axes[a].out >= 0) w.strides[static_cast<std::size_t>(v.axes[a].out)] = v.axes[a].step * st[a];
        }
        w.offset = shape_size(v.out) == 0 ? 0 : offset;
        std::string key = fmt::format("{}@{}", w.name, w.offset);
        for (std::size_t k = 0; k < w.shape.size(); ++k) key += fmt::format(",{}:{}", w.shape[k], w.strides[k]);
        if (auto it = view_inputs_.find(key); it != view_inputs_.end()) return it->second;
        Node m;
        m.kind = NodeKind::Input;
        m.dtype = d.dtype;
        m.shape = v.out;
        m.slot = static_cast<std::int32_t>(p_.inputs.size());
        m.span = span;
        p_.inputs.push_back(std::move(w));
        const ir::NodeId r = add(std::move(m));
        view_inputs_.emplace(std::move(key), r);
        return r;
    }

    bool keepdims_of(const Expr* e) const {
        if (!e) return false;
        if (e->kind == ExprKind::Bool) return e->bool_value;
        if (e->kind == ExprKind::Int && !e->int_big && e->int_value <= 1) return e->int_value == 1;
        throw ValueError("keepdims must be True or False", text_, e->span);
    }

    double number_of(const Expr& e, std::string_view what) const {
        const Expr* x = &e;
        const bool neg = x->kind == ExprKind::Unary && x->ops.at(0) == Op::Neg;
        if (neg) x = x->operands.at(0).get();
        double v = 0;
        if (x->kind == ExprKind::Int && !x->int_big) v = static_cast<double>(x->int_value);
        else if (x->kind == ExprKind::Float) v = x->float_value;
        else throw ValueError(fmt::format("{} must be a number literal", what), text_, e.span);
        return neg ? -v : v;
    }

    static Shape reduced_shape(const Shape& in, const Axes& ax, bool keepdims) {
        Shape r;
        for (std::size_t d = 0; d < in.size(); ++d) {
            if (!ax.has(d)) r.push_back(in[d]);
            else if (keepdims) r.push_back(1);
        }
        return r;
    }
    static std::int64_t reduced_count(const Shape& in, const Axes& ax) {
        std::int64_t n = 1;
        for (std::size_t d = 0; d < in.size(); ++d)
            if (ax.has(d)) n *= in[d];
        return n;
    }

    // A reduction without an identity (min, max, argmin, ptp, nanmin) of no element: NumPy's error.
    void check_nonempty(Op op, const Shape& in, const Axes& ax, SourceSpan span) const {
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
    ir::NodeId reduce_nodes(Op op, ir::NodeId x, DType result, const Axes& ax, bool keepdims, SourceSpan span) {
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

    [[noreturn]] static void internal_error(const std::string& what) { throw InternalError("lowering: " + what); }

    ir::NodeId divide_by_count(ir::NodeId v, std::int64_t count, SourceSpan span) {
        const DType t = node(v).dtype;
        const ir::NodeId c = constant(ir::Value::of_float(static_cast<double>(count)).cast(t), span);
        return op_node(Op::Div, t, node(v).shape, {v, c}, span);
    }

    ir::NodeId const_of(double v, DType t, SourceSpan span) { return constant(ir::Value::of_float(v).cast(t), span); }
    ir::NodeId isnan_of(ir::NodeId x, SourceSpan span) {
        return op_node(Op::Isnan, DType::Bool, node(x).shape, {x}, span);
    }
    ir::NodeId select(ir::NodeId c, ir::NodeId a, ir::NodeId b, SourceSpan span) {
        Shape s = broadcast(broadcast(node(c).shape, node(a).shape, span), node(b).shape, span);
        return op_node(Op::Where, node(a).dtype, std::move(s), {c, a, b}, span);
    }
    ir::NodeId binop(Op op, ir::NodeId a, ir::NodeId b, SourceSpan span) {
        DType t = node(a).dtype;
        if (ir::info(op).rule == ir::Rule::Compare || ir::info(op).rule == ir::Rule::Logical) t = DType::Bool;
        return op_node(op, t, broadcast(node(a).shape, node(b).shape, span), {a, b}, span);
    }
    // |v|**2 in v's real dtype (NumPy's var: x * conj(x), its real part).
    ir::NodeId abs2(ir::NodeId v, SourceSpan span) {
        const DType t = node(v).dtype;
        if (!is_complex(t)) return binop(Op::Mul, v, v, span);
        const DType r = real_of(t);
        const ir::NodeId re = op_node(Op::Real, r, node(v).shape, {v}, span);
        const ir::NodeId im = op_node(Op::Imag, r, node(v).shape, {v}, span);
        return binop(Op::Add, binop(Op::Mul, re, re, span), binop(Op::Mul, im, im, span), span);
    }

    // The arguments after the array of a reduction's or scan's call, by parameter name:
    // positional ones (positional_params) and keywords (takes_keyword), each given once.
    std::map<std::string_view, const Expr*> axis_call_arguments(const ir::OpInfo& fn, const Expr& e) const {
        const std::string& fname = e.text;
        const Op op = fn.op;
        const auto params = positional_params(op);
        if (e.operands.size() > params.size() + 1)
            throw TypeError(fmt::format("{}() takes at most {} positional arguments ({} given)", fname,
                                        params.size() + 1, e.operands.size()),
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

    Val reduction_call(const ir::OpInfo& fn, const Expr& e) {
        const std::string& fname = e.text;
        const Op op = fn.op;
        const SourceSpan span = e.span;
        const std::map<std::string_view, const Expr*> given = axis_call_arguments(fn, e);
        auto arg = [&](std::string_view n) -> const Expr* {
            const auto it = given.find(n);
            return it == given.end() ? nullptr : it->second;
        };
        const Val a = strong(expr(*e.operands[0]));
        if (a.selected()) return masked_reduction(op, fname, a, arg, span);
        if (is_order_stat(op)) return order_statistic(op, a, arg, fname, span);
        rule(op, dt(a), span);  // the operand's dtype first, as NumPy finds no loop before it checks an axis
        const Axes ax = axes_of(arg("axis"), static_cast<std::int32_t>(shape(a).size()),
                                op == Op::ArgMin || op == Op::ArgMax, fname);
        return plain_reduction(op, a, ax, keepdims_of(arg("keepdims")), arg, fname, span, nullptr);
    }

    // The reduction `op` of a (no selection) along ax. `sel`: the selection a was taken from,
    // when a reduction of it along its other axes is this one of its values (then selected).
    template <class Arg>
    Val plain_reduction(Op op, const Val& a, const Axes& ax, bool keep, Arg&& arg, const std::string& fname,
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
                    floating ? select(isnan_of(x, span), const_of(op == Op::NanSum ? 0 : 1, t.operand, span), x, span)
                             : x;
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
                const ir::NodeId filled =
                    select(nan, const_of(op == Op::NanMin ? inf : -inf, t.operand, span), x, span);
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
    static ir::Value extreme(DType t, bool largest) {
        if (is_bool(t)) return ir::Value::of_bool(largest);
        if (is_inexact(t))
            return ir::Value::of_float(largest ? std::numeric_limits<double>::infinity()
                                               : -std::numeric_limits<double>::infinity())
                .cast(t);
        const int bits = static_cast<int>(itemsize(t)) * 8;
        if (is_unsigned_int(t))
            return ir::Value::of_uint(largest ? (bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1) : 0,
                                      t);
        const std::int64_t hi =
            bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (bits - 1)) - 1;
        return ir::Value::of_int(largest ? hi : -hi - 1, t);
    }

    // A reduction of a boolean-mask selection (sum(b[m]), mean(b[a > 0]), ...): a reduction of
    // the values before selection with the unselected ones made neutral (sum(where(m, b, 0)),
    // min with the dtype's largest value, a mean divided by the mask's count), fused with the
    // mask and the values in one pass; nothing is compacted. Over every element, or along the
    // selection's first axis (axis=0: the mask's axes); min and max of an empty selection are
    // NumPy's ValueError, raised when the program has run (ir::RunCheck).
    template <class Arg>
    Val masked_reduction(Op op, const std::string& fname, const Val& a, Arg&& arg, SourceSpan span) {
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
            counted =
                binop(Op::And, mask, op_node(Op::Not, DType::Bool, node(x).shape, {isnan_of(x, span)}, span), span);
        auto full_shape = [&](ir::NodeId m) { return node(m).shape == full ? m : cast_to_shape(m, full, span); };
        auto count = [&](DType d, bool keepdims) {
            const ir::NodeId ones = cast(Val{full_shape(counted), Weak::None}, DType::Int64, span);
            return cast(Val{reduce_nodes(Op::Sum, ones, DType::Int64, ax, keepdims, span), Weak::None}, d, span);
        };
        auto neutral = [&](double v) { return select(counted, x, const_of(v, t.operand, span), span); };
        auto require_selection = [&] {
            const ir::NodeId any = reduce_nodes(Op::Any, full_shape(mask), DType::Bool, Axes{}, false, span);
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
                        throw ValueError("Shape of weights must be consistent with shape of a along specified axis.",
                                         text_, we->span);
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
            default:
                throw ValueError(fmt::format("{}() of a boolean-mask selection is not supported", fname), text_, span);
        }
        if (node(r).dtype != final_result) r = cast(Val{r, Weak::None}, final_result, span);
        return Val{r, Weak::None};
    }

    // cumsum(x), cumsum(x, axis), cumsum(x, axis=k | None) and the other scans: one Scan node
    // over x's expression (the stage that scans computes it), NumPy's dtypes (those of sum and
    // prod). Without an axis, or on a 0-d or 1-d x, the scan runs over every element in C order
    // and gives a 1-d result (NumPy takes a 0-d x as 1-d, so its axis may be 0 or -1).
    // nancumsum/nancumprod scan x with NaN replaced by 0/1 first (what NumPy does).
    Val scan_call(const ir::OpInfo& fn, const Expr& e) {
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
        ir::NodeId x = cast(Val{a.node, Weak::None}, t.operand, span);
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
    Val order_statistic(Op op, const Val& a, Arg&& arg, const std::string& fname, SourceSpan span) {
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
            if (!qe)
                throw TypeError(fmt::format("{}() missing 1 required positional argument: 'q'", fname), text_, span);
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
            throw IndexError(
                fmt::format("{}() of an empty array: index -1 is out of bounds for axis 0 with size 0", fname), text_,
                span);
        ir::OrderStatDecl d;
        d.q = std::move(qs);
        d.q_axis = q_axis;
        for (std::size_t k = 0; k < in.size(); ++k)
            if (ax.has(k)) d.axes |= 1u << k;
        d.keepdims = keep;
        ir::NodeId x = cast(Val{a.node, Weak::None}, t.operand, span);
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
        n.dtype = take                            ? t.operand
                  : q_axis && is_float(t.operand) ? DType::Float64
                                                  : t.result;  // an array q is float64
        n.shape = s;
        n.args[0] = x;
        n.nargs = 1;
        n.slot = static_cast<std::int32_t>(p_.order_stats.size());
        n.span = span;
        p_.order_stats.push_back(std::move(d));
        const ir::NodeId r = add(std::move(n));
        return Val{fresh(r, s, span), Weak::None};
    }

    // The number of elements where `mask` is false, in dtype t, shaped as a reduction over ax.
    ir::NodeId count_where_not(ir::NodeId mask, DType t, const Axes& ax, bool keep, SourceSpan span) {
        const ir::NodeId ones =
            cast(Val{op_node(Op::Not, DType::Bool, node(mask).shape, {mask}, span), Weak::None}, DType::Int64, span);
        return cast(Val{reduce_nodes(Op::Sum, ones, DType::Int64, ax, keep, span), Weak::None}, t, span);
    }

    // var, std, nanvar, nanstd: two passes (the mean, then the sum of squared deviations from
    // it), each fused with x's expression; the mean is kept with the reduced axes so that it
    // broadcasts against x.
    ir::NodeId variance(Op op, ir::NodeId x, const Typed& t, const Axes& ax, bool keep, double ddof, SourceSpan span) {
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
            const ir::NodeId m = binop(
                Op::Div, reduce_nodes(Op::Sum, select(nan, zero, x, span), t.operand, ax, true, span), cnt_k, span);
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
    ir::NodeId arg_extreme(Op op, ir::NodeId x, const Axes& ax, bool keep, SourceSpan span) {
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
    ir::NodeId average(ir::NodeId x, const Typed& t, const Expr* weights, const Expr* axis_e, const Axes& ax, bool keep,
                       const std::string& fname, SourceSpan span, const Sel* sel = nullptr) {
        if (!weights) return reduce_nodes(Op::Mean, x, t.result, ax, keep, span);
        const Val w0 = strong(expr(*weights));
        Val w = selected_weights(w0, sel, *weights, fname);
        DType p = promote(t.operand, dt(w));
        if (is_bool(p) || is_integer(p)) p = DType::Float64;
        const Shape in = node(x).shape;  // a copy: adding nodes moves them
        const std::int32_t shift = sel ? sel->axes - 1 : 0;
        if (w0.selected() || (!sel && shape(w) == in)) {
            if (shape(w) != in)
                throw ValueError(
                    fmt::format("{}(): the weights of a boolean-mask selection must have its shape", fname), text_,
                    weights->span);
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
    void require_nonzero_weights(ir::NodeId den, const std::string& fname, SourceSpan span) {
        ir::NodeId ok = binop(Op::Ne, den, const_of(0, node(den).dtype, span), span);
        if (!node(ok).shape.empty()) ok = reduce_nodes(Op::All, ok, DType::Bool, Axes{}, false, span);
        checks_.push_back(PendingCheck{ok, fmt::format("{}(): weights sum to zero, can't be normalized", fname), span});
    }

    ir::NodeId cast_to_shape(ir::NodeId v, const Shape& s, SourceSpan span) { return fresh(v, s, span); }

    // average()'s weights: a selection only where the array is one, by the same mask; its
    // values (before selection) are returned.
    Val selected_weights(Val w, const Sel* sel, const Expr& we, const std::string& fname) {
        if (!w.selected()) return w;
        if (!sel)
            throw ValueError(fmt::format("{}(): weights are a boolean-mask selection but the array is not one", fname),
                             text_, we.span);
        if (w.mask_axes != sel->axes || !same_value(w.mask, sel->mask))
            throw ValueError(
                fmt::format("{}(): the weights of a boolean-mask selection must be selected by the same mask "
                            "(weights=w[m])",
                            fname),
                text_, we.span);
        return Val{w.node, Weak::None};
    }

    ir::NodeId scan_sum(ir::NodeId x, std::int32_t axis, SourceSpan span) {
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

    // ---- statements
    void statement(const syntax::Statement& st, bool last) {
        if (!st.more_targets.empty()) {
            // `m, e = frexp(x)`: the results of one call, to the names in order.
            if (st.value->kind != ExprKind::Call || folder_.is_literal(*st.value)) not_several(st);
            const std::vector<Val> vals = call(*st.value, &st);
            assign(st.target, st.target_span, vals.at(0), st, false);
            for (std::size_t k = 0; k < st.more_targets.size(); ++k)
                assign(st.more_targets[k].name, st.more_targets[k].span, vals.at(k + 1), st,
                       last && k + 1 == st.more_targets.size());
            return;
        }
        const Val v = expr(*st.value);
        const bool into = !st.target.empty() && in_place_target(st.target, v) != nullptr;
        if (big_.count(v.node) && !into) strong(v);  // an integer past every dtype is no array
        // A value of host integers alone is stored as an int64 (into a bound array, cast() checks
        // it against that array's dtype).
        if (!into) check_fit(v, node(v.node).dtype);
        if (st.target.empty()) {
            if (last && v.selected()) {
                const ir::NodeId n = compact(v, st.span);
                p_.outputs.push_back(ir::OutputDecl{"", n, -1});
                output_nodes_.insert(n);
                p_.result = n;
            } else if (last) {
                ir::NodeId n = v.node;
                const NodeKind k = node(n).kind;
                if (k == NodeKind::Input || k == NodeKind::Scalar || output_nodes_.count(n))
                    n = fresh(n, node(n).shape, st.span);
                p_.outputs.push_back(ir::OutputDecl{"", n, -1});
                output_nodes_.insert(n);
                p_.result = n;
            }
            return;
        }
        assign(st.target, st.target_span, v, st, last);
    }

    // Assigns v to `target` (one of the statement's targets).
    void assign(const std::string& target, SourceSpan target_span, const Val& v, const syntax::Statement& st,
                bool last) {
        if (target == "None") throw NameError("cannot assign to None", text_, target_span);
        if (dtype_from_name(target) || !functions_named(target).empty()) {
            // Allowed (a variable may shadow a function name only as a variable), but warn by error:
            // calling it later would be ambiguous. Keep it simple: forbid.
            throw NameError(fmt::format("cannot assign to '{}': it is a function name", target), text_, target_span);
        }
        if (v.selected()) {
            // A selection's length is the data's: the name is bound to a new array (never written
            // in place), and later statements read it as the selection it is (sum(c) stays fused).
            const ir::NodeId n = compact(v, st.span);
            std::erase_if(p_.outputs, [&](const ir::OutputDecl& o) {
                if (o.name != target) return false;
                output_nodes_.erase(o.node);
                return true;
            });
            alias_of_.erase(target);
            alias_binding_.erase(target);
            p_.outputs.push_back(ir::OutputDecl{target, n, -1});
            output_nodes_.insert(n);
            locals_[target] = typed(v);
            if (last) p_.result = n;
            return;
        }
        ir::NodeId n = v.node;
        std::int32_t alias = -1;
        if (const Binding* bound = in_place_target(target, v)) {
            if (bound->read_only)
                throw ReadOnlyError(
                    target == "(out)"
                        ? fmt::format("out= is read-only ({} {}): jitexpr does not write into it; pass a writable "
                                      "array",
                                      dtype_name(bound->dtype), shape_to_string(bound->shape))
                        : fmt::format("'{}' is read-only ({} {}): assigning to it would write into it; assign to "
                                      "another name, or bind a writable copy",
                                      target, dtype_name(bound->dtype), shape_to_string(bound->shape)),
                    text_, target_span);
            // Written in place: the value must fit the array's dtype (same kind) and shape.
            if (!can_cast_same_kind(dt(v), bound->dtype)) {
                // run_into's target is the caller's out= (Runtime::run_into binds it as "(out)").
                if (target == "(out)")
                    throw TypeError(fmt::format("cannot store a {} result in out= ({} {}) under same-kind casting; "
                                                "pass casting='unsafe' (jitexpr.numexpr) or cast it with {}(...)",
                                                dtype_name(dt(v)), dtype_name(bound->dtype),
                                                shape_to_string(bound->shape), dtype_name(bound->dtype)),
                                    text_, st.value->span);
                throw TypeError(fmt::format("cannot store a {} value in '{}' ({} {}) in place; cast it with {}(...)",
                                            dtype_name(dt(v)), target, dtype_name(bound->dtype),
                                            shape_to_string(bound->shape), dtype_name(bound->dtype)),
                                text_, st.value->span);
            }
            const Shape bs = broadcast(shape(v), bound->shape, st.value->span);
            if (bs != bound->shape)
                throw ShapeError(fmt::format("cannot store a value of shape {} in '{}' of shape {}",
                                             shape_to_string(shape(v)), target, shape_to_string(bound->shape)),
                                 text_, st.value->span);
            n = cast(Val{n, v.weak}, bound->dtype, st.value->span);
            // The input slot of the array (created if the program never reads it).
            alias = input_slot_for(target, *bound);
            alias_of_[target] = alias;
            alias_binding_[target] = bound;
            if (node(n).shape != bound->shape || node(n).kind == NodeKind::Input || node(n).kind == NodeKind::Scalar ||
                output_nodes_.count(n))
                n = fresh(n, bound->shape, st.span);
        } else {
            // A new array under the name: a bound array of another dtype or shape is left as it
            // was, and later statements read the new value.
            alias_of_.erase(target);
            alias_binding_.erase(target);
            const NodeKind k = node(n).kind;
            if (k == NodeKind::Input || k == NodeKind::Scalar || output_nodes_.count(n))
                n = fresh(n, node(n).shape, st.span);
        }
        // A name assigned twice keeps only its last value as the output.
        std::erase_if(p_.outputs, [&](const ir::OutputDecl& o) {
            if (o.name != target) return false;
            output_nodes_.erase(o.node);
            return true;
        });
        p_.outputs.push_back(ir::OutputDecl{target, n, alias});
        output_nodes_.insert(n);
        // An assigned name is an array, typed like a NumPy 0-d array even when its value was a
        // literal: `t = 2; i8 + t` is int64 in one program as in two statements of the REPL.
        locals_[target] = Val{n, Weak::None};
        if (last) p_.result = n;
    }

    // The bound array an assignment of `v` to `target` writes into, or null when it binds the
    // name to a new array. An array bound by the caller (or written by an earlier statement of
    // this program) is written when the value has its dtype and shape, or whatever the value
    // when the binding is strict (the value is then cast and broadcast into it, or refused).
    const Binding* in_place_target(const std::string& target, const Val& v) const {
        const Binding* b = nullptr;
        if (!locals_.count(target)) b = lookup_ ? lookup_(target) : nullptr;
        else if (auto it = alias_binding_.find(target); it != alias_binding_.end()) b = it->second;
        if (!b || b->kind != Binding::Kind::Array) return nullptr;
        if (b->strict) return b;
        return dt(v) == b->dtype && shape(v) == b->shape ? b : nullptr;
    }

    std::int32_t input_slot_for(const std::string& name, const Binding& b) {
        auto [it, inserted] = input_slot_.try_emplace(name, -1);
        if (inserted) {
            it->second = static_cast<std::int32_t>(p_.inputs.size());
            p_.inputs.push_back(ir::InputDecl{name, b.dtype, b.shape, b.strides, false, 0});
        }
        return it->second;
    }

    std::string_view text_;
    const Lookup& lookup_;
    const BoundNames& bound_;
    ir::Program p_;
    std::map<std::string, Val, std::less<>> locals_;
    std::map<std::string, std::int32_t, std::less<>> input_slot_, scalar_slot_;
    std::map<std::string, ir::NodeId, std::less<>> input_node_, scalar_node_;
    std::map<std::string, std::int32_t, std::less<>> alias_of_;
    std::map<std::string, const Binding*, std::less<>> alias_binding_;
    std::set<ir::NodeId> output_nodes_;
    std::map<ir::NodeId, BigLiteral> big_;  // Const nodes of integers past every dtype
    LiteralFolder folder_;
    std::map<std::string, ir::NodeId> view_memo_;    // one subscript's views of nodes
    std::map<std::string, ir::NodeId> view_inputs_;  // view inputs by name, offset, shape, strides
    struct PendingCheck {
        ir::NodeId node;  // a 0-d Bool that must be true when the program has run
        std::string message;
        SourceSpan span;
    };
    std::vector<PendingCheck> checks_;
    std::map<std::string, ir::NodeId> compact_masks_;  // a Compact node's mask by mask node and shape
};

std::vector<std::string> read_names_here(const syntax::Module& module, bool constants);

void collect_parameters(const Expr& e, const std::set<std::string, std::less<>>& assigned, bool constants,
                        std::vector<std::string>& out, std::set<std::string, std::less<>>& seen) {
    if (e.kind == ExprKind::Name) {
        if (e.text == "None") return;  // a reduction's axis=None, never a variable (as in Python)
        if (!assigned.count(e.text) && (constants || !named_constants().count(e.text)) && !seen.count(e.text)) {
            seen.insert(e.text);
            out.push_back(e.text);
        }
        return;
    }
    for (const auto& o : e.operands) collect_parameters(*o, assigned, constants, out, seen);
    for (const auto& k : e.keywords) collect_parameters(*k.value, assigned, constants, out, seen);
}

std::vector<std::string> read_names(const syntax::Module& module, bool constants) {
    // The walk recurses once per nesting level, as the lowering does: on a stack of known size.
    return core::with_stack(core::kFrontStackBytes, [&] { return read_names_here(module, constants); });
}

std::vector<std::string> read_names_here(const syntax::Module& module, bool constants) {
    std::vector<std::string> out;
    std::set<std::string, std::less<>> assigned, seen;
    for (const syntax::Statement& st : module.statements) {
        collect_parameters(*st.value, assigned, constants, out, seen);
        if (!st.target.empty()) assigned.insert(st.target);
        for (const syntax::Target& t : st.more_targets) assigned.insert(t.name);
    }
    return out;
}

}  // namespace

ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const BoundNames& bound_names) {
    // The lowering recurses once per nesting level: on a stack of known size (core/stack.hpp).
    return core::with_stack(core::kFrontStackBytes, [&] {
        Lowerer l(text, lookup, bound_names);
        return l.run(module);
    });
}

ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const std::vector<std::string>& bound_names) {
    BoundNames names;
    if (!bound_names.empty()) names = [&bound_names] { return bound_names; };
    return lower(module, text, lookup, names);
}

std::vector<std::string> parameters(const syntax::Module& module) { return read_names(module, false); }

std::vector<std::string> free_names(const syntax::Module& module) { return read_names(module, true); }

std::optional<double> named_constant(std::string_view name) {
    auto c = named_constants().find(name);
    if (c == named_constants().end()) return std::nullopt;
    return c->second;
}

std::vector<std::string> targets(const syntax::Module& module) {
    std::vector<std::string> out;
    auto add = [&out](const std::string& t) {
        if (!t.empty() && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    };
    for (const syntax::Statement& st : module.statements) {
        add(st.target);
        for (const syntax::Target& t : st.more_targets) add(t.name);
    }
    return out;
}

std::vector<std::string> builtin_names() {
    std::vector<std::string> r;
    for (const ir::OpInfo& i : ir::op_table()) {
        std::string_view names = i.names;
        std::size_t pos = 0;
        while (!names.empty() && pos <= names.size()) {
            std::size_t bar = names.find('|', pos);
            if (bar == std::string_view::npos) bar = names.size();
            r.emplace_back(names.substr(pos, bar - pos));
            pos = bar + 1;
        }
    }
#define JIT_DTYPE_NAME_LIST(Id, lower, spelled, size) r.emplace_back(spelled);
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_NAME_LIST)
#undef JIT_DTYPE_NAME_LIST
    for (const auto& [n, v] : named_constants()) r.emplace_back(n);
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    return r;
}

}  // namespace jit::dsl

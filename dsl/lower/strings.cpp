// jitexpr — lowering, strings: string and bytes literals, the string ops (comparisons of strings,
// contains, startswith, endswith, find, str_len) and the refusal of strings anywhere else (the
// class: dsl/lower/lowerer.hpp).
//
// A string value is an Input of a string dtype (an S or U array, an Arrow string column) or a
// Const of one (a literal, its bytes in Program::strings). Kinds meet as NumPy's ufuncs let them:
// bytes with bytes (S), text with text (U, Arrow string, str literals); bytes against text is
// NumPy's TypeError ("no loop"), and so is a string against a number. A literal is encoded for
// the column it meets: bytes as they are, UCS-4 for a U array, UTF-8 for an Arrow column, with
// the trailing NULs of a fixed-width (S, U) value cut as NumPy's conversion to that dtype cuts
// them. Two literals are compared here, by the same functions the backends run.
#include "dsl/lower/lowerer.hpp"

#include "dsl/semantics.h"

#include <cstring>

namespace jit::dsl::lowering {

namespace {

// "bytes (S)" / "str (U)" / "an Arrow string column", for messages.
std::string kind_words(DType t) {
    switch (t) {
        case DType::Bytes: return "bytes";
        case DType::Str: return "str";
        case DType::Utf8: return "str (an Arrow string column)";
        default: return std::string(dtype_name(t));
    }
}

// Code points of UTF-8 text (the parser's Str literals), leniently: a malformed byte is its own
// code point.
std::vector<std::uint32_t> code_points(std::string_view utf8) {
    std::vector<std::uint32_t> out;
    const auto* p = reinterpret_cast<const jx::u8*>(utf8.data());
    const auto n = static_cast<jx::i64>(utf8.size());
    for (jx::i64 i = 0; i < n;) out.push_back(jx::str::utf8_next(p, n, i));
    return out;
}

std::string ucs4_bytes(const std::vector<std::uint32_t>& cps) {
    std::string out(cps.size() * 4, '\0');
    if (!cps.empty()) std::memcpy(out.data(), cps.data(), out.size());
    return out;
}

}  // namespace

// A literal 'abc' (dtype Str, its code points) or b'abc' (Bytes, its bytes); encoded again for
// the column it meets (string_for).
Val Lowerer::string_literal(const Expr& e) {
    const bool bytes = e.kind == ExprKind::Bytes;
    std::string enc = bytes ? e.text : ucs4_bytes(code_points(e.text));
    const ir::NodeId n = string_const(std::move(enc), bytes ? DType::Bytes : DType::Str, e.span);
    literal_text_.emplace(n, e.text);
    return Val{n, Weak::None};
}

ir::NodeId Lowerer::string_const(std::string bytes, DType t, SourceSpan span) {
    Node n;
    n.kind = NodeKind::Const;
    n.dtype = t;
    n.slot = static_cast<std::int32_t>(p_.strings.size());
    n.span = span;
    p_.strings.push_back(std::move(bytes));
    return add(std::move(n));
}

bool Lowerer::is_string_literal(const Val& v) const { return node(v.node).kind == NodeKind::Const && is_string(dt(v)); }

// Literal `v` encoded for dtype `t` (of the column it meets): NULs at the end cut for S and U.
ir::NodeId Lowerer::string_for(const Val& v, DType t, SourceSpan span) {
    const std::string& text = literal_text_.at(v.node);
    switch (t) {
        case DType::Bytes: {
            std::string b = text;
            while (!b.empty() && b.back() == '\0') b.pop_back();
            return string_const(std::move(b), t, span);
        }
        case DType::Str: {
            std::vector<std::uint32_t> cps = code_points(text);
            while (!cps.empty() && cps.back() == 0) cps.pop_back();
            return string_const(ucs4_bytes(cps), t, span);
        }
        case DType::Utf8: return string_const(text, t, span);
        default: break;
    }
    throw InternalError("lowering: a string literal encoded for a dtype that holds no strings");
}

// A TypeError for strings where no string op reads them: `what` is the operation ("operator '+'",
// "where()").
void Lowerer::no_strings(std::initializer_list<const Val*> vals, std::string_view what, SourceSpan span) const {
    for (const Val* v : vals)
        if (is_text(*v))
            type_error(fmt::format("{} is not supported for strings ({}): jitexpr computes no string-valued result; "
                                   "strings take part in the comparisons (== != < <= > >=) and contains, startswith, "
                                   "endswith, find and str_len",
                                   what, dtype_name(dt(*v))),
                       span);
}

// op (a comparison or a string function) of string operands.
Val Lowerer::string_op(Op op, const std::vector<Val>& in, SourceSpan span) {
    const ir::OpInfo& oi = ir::info(op);
    const std::string what =
        oi.kind == OpKind::Operator ? fmt::format("operator '{}'", oi.token) : fmt::format("{}()", ir::spelling(op));
    if (std::any_of(in.begin(), in.end(), [](const Val& v) { return v.selected(); })) {
        std::vector<Val> plain = in;
        const Sel sel = in.size() == 1 ? unselect({&plain[0]}, span) : unselect({&plain[0], &plain[1]}, span);
        return reselect(string_op(op, plain, span), sel);
    }
    for (const Val& v : in)
        if (!is_text(v))
            type_error(fmt::format("{} has no loop for {}: {} takes strings on both sides (NumPy's TypeError; "
                                   "compare a string column with a string literal or another string column)",
                                   what, in.size() == 1 ? std::string(dtype_name(dt(v))) : kinds(in), what),
                       span);
    const DType result = oi.rule == ir::Rule::StrFind || oi.rule == ir::Rule::StrLen ? DType::Int64 : DType::Bool;
    if (in.size() == 1) {
        const Val& s = in[0];
        if (is_string_literal(s)) {
            // str_len of a literal: its length as NumPy's str_len of it (NULs at the end cut).
            const ir::NodeId n = string_for(s, dt(s), span);
            const std::string& b = p_.strings[static_cast<std::size_t>(node(n).slot)];
            const auto len = static_cast<std::int64_t>(dt(s) == DType::Str ? b.size() / 4 : b.size());
            return Val{constant(ir::Value::of_int(len), span), Weak::None};
        }
        return Val{op_node(op, result, shape(s), {s.node}, span), Weak::None};
    }
    const Val& a = in[0];
    const Val& b = in[1];
    const DType ta = dt(a), tb = dt(b);
    if ((ta == DType::Bytes) != (tb == DType::Bytes))
        type_error(fmt::format("{} has no loop for {}: NumPy does not mix bytes and str (write b'...' for an S "
                               "column, '...' for a U or Arrow string column)",
                               what, kinds(in)),
                   span);
    const bool la = is_string_literal(a), lb = is_string_literal(b);
    if (la && lb) {
        // Two literals: computed now, as NumPy computes them on 0-d arrays of their dtype.
        const DType t = ta;  // Bytes or Str (a literal is never Utf8 before it meets a column)
        const ir::NodeId x = string_for(a, t, span), y = string_for(b, t, span);
        const std::string& sx = p_.strings[static_cast<std::size_t>(node(x).slot)];
        const std::string& sy = p_.strings[static_cast<std::size_t>(node(y).slot)];
        ir::Value v;
        auto run = [&](auto u, auto w) {
            switch (op) {
                case Op::Lt: v = ir::Value::of_bool(jx::op::Lt(u, w)); break;
                case Op::Le: v = ir::Value::of_bool(jx::op::Le(u, w)); break;
                case Op::Eq: v = ir::Value::of_bool(jx::op::Eq(u, w)); break;
                case Op::Ne: v = ir::Value::of_bool(jx::op::Ne(u, w)); break;
                case Op::Ge: v = ir::Value::of_bool(jx::op::Ge(u, w)); break;
                case Op::Gt: v = ir::Value::of_bool(jx::op::Gt(u, w)); break;
                case Op::Contains: v = ir::Value::of_bool(jx::op::Contains(u, w)); break;
                case Op::Startswith: v = ir::Value::of_bool(jx::op::Startswith(u, w)); break;
                case Op::Endswith: v = ir::Value::of_bool(jx::op::Endswith(u, w)); break;
                case Op::Find: v = ir::Value::of_int(jx::op::Find(u, w)); break;
                default: throw InternalError(fmt::format("lowering: {} is no string op", oi.id));
            }
        };
        if (t == DType::Bytes) {
            run(jx::sb{reinterpret_cast<const jx::u8*>(sx.data()), static_cast<jx::i64>(sx.size())},
                jx::sb{reinterpret_cast<const jx::u8*>(sy.data()), static_cast<jx::i64>(sy.size())});
        } else {
            std::vector<std::uint32_t> ux(sx.size() / 4), uy(sy.size() / 4);
            if (!ux.empty()) std::memcpy(ux.data(), sx.data(), sx.size());
            if (!uy.empty()) std::memcpy(uy.data(), sy.data(), sy.size());
            run(jx::su{ux.data(), static_cast<jx::i64>(ux.size())}, jx::su{uy.data(), static_cast<jx::i64>(uy.size())});
        }
        return Val{constant(v, span), Weak::None};
    }
    // A literal takes the column's encoding.
    const ir::NodeId x = la ? string_for(a, tb, span) : a.node;
    const ir::NodeId y = lb ? string_for(b, ta, span) : b.node;
    Shape s = broadcast(node(x).shape, node(y).shape, span);
    return Val{op_node(op, result, std::move(s), {x, y}, span), Weak::None};
}

// "bytes and str" for a message about operands `in`.
std::string Lowerer::kinds(const std::vector<Val>& in) const {
    std::string r;
    for (std::size_t k = 0; k < in.size(); ++k) {
        if (k) r += k + 1 == in.size() ? " and " : ", ";
        const DType t = dt(in[k]);
        r += is_string(t) ? kind_words(t) : std::string(dtype_name(t));
    }
    return r;
}

}  // namespace jit::dsl::lowering

// jitexpr tests — a compact, fully parenthesized rendering of a syntax tree, so a test can
// state a tree's whole shape in one string: Chain "(a + b - c)", Unary "(- a)",
// Ternary "(c ? x : y)", Call "f(a, axis=1)", literals and names as written.
#pragma once

#include "dsl/syntax.hpp"

#include <string>
#include <vector>

namespace jit::syntax::testing {

// The tokens of a Chain's or a Unary's operators ("-", "**", "not").
inline std::vector<std::string> spellings(const Expr& e) {
    std::vector<std::string> r;
    for (const ir::Op op : e.ops) r.emplace_back(ir::spelling(op));
    return r;
}

inline std::string dump(const Expr& e) {
    switch (e.kind) {
        case ExprKind::Int:
        case ExprKind::Float:
        case ExprKind::Imag:
        case ExprKind::Name: return e.text;
        case ExprKind::Bool: return e.bool_value ? "True" : "False";
        case ExprKind::Str: return "'" + e.text + "'";
        case ExprKind::Bytes: return "b'" + e.text + "'";
        case ExprKind::Chain: {
            std::string s = "(" + dump(*e.operands[0]);
            for (std::size_t i = 0; i < e.ops.size(); ++i)
                s += " " + std::string(ir::spelling(e.ops[i])) + " " + dump(*e.operands[i + 1]);
            return s + ")";
        }
        case ExprKind::Unary: return "(" + std::string(ir::spelling(e.ops[0])) + " " + dump(*e.operands[0]) + ")";
        case ExprKind::Ternary:
            return "(" + dump(*e.operands[0]) + " ? " + dump(*e.operands[1]) + " : " + dump(*e.operands[2]) + ")";
        case ExprKind::Tuple: {
            std::string s = "(";
            for (const auto& a : e.operands) s += dump(*a) + ", ";
            if (e.operands.size() > 1) s.resize(s.size() - 2);
            return s + ")";
        }
        case ExprKind::Call: {
            std::string s = e.text + "(";
            const char* sep = "";
            for (const auto& a : e.operands) {
                s += sep + dump(*a);
                sep = ", ";
            }
            for (const auto& k : e.keywords) {
                s += sep + k.name + "=" + dump(*k.value);
                sep = ", ";
            }
            return s + ")";
        }
        case ExprKind::Subscript: {
            auto part = [&](std::int32_t k) {
                return k < 0 ? std::string() : dump(*e.operands[static_cast<std::size_t>(k)]);
            };
            std::string s = dump(*e.operands[0]) + "[";
            const char* sep = "";
            for (const IndexItem& it : e.index) {
                s += sep;
                sep = ", ";
                switch (it.kind) {
                    case IndexItem::Kind::Index: s += part(it.start); break;
                    case IndexItem::Kind::Ellipsis: s += "..."; break;
                    case IndexItem::Kind::Slice:
                        s += part(it.start) + ":" + part(it.stop);
                        if (it.step >= 0) s += ":" + part(it.step);
                        break;
                }
            }
            return s + "]";
        }
    }
    return "?";
}

inline std::string dump(const Module& m) {
    std::string s;
    for (const auto& st : m.statements) {
        if (!s.empty()) s += "; ";
        if (!st.target.empty()) s += st.target + " = ";
        s += dump(*st.value);
    }
    return s;
}

}  // namespace jit::syntax::testing

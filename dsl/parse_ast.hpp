// jitexpr — the X3 syntax tree (internal to dsl/parse*). The grammar in parse_grammar_def.hpp
// fills it; parse.cpp turns it into the plain jit::syntax tree. Operator sequences are flat lists
// (first operand, then operator/operand links), so a long sum is one vector, not a deep tree. Positions live in an x3::position_cache: each position_tagged node holds two indices
// into it.
#pragma once

#include "dsl/ops.hpp"
#include "dsl/syntax.hpp"

#include <boost/fusion/include/adapt_struct.hpp>
#include <boost/spirit/home/x3/support/ast/position_tagged.hpp>
#include <boost/spirit/home/x3/support/ast/variant.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit::syntax::x3ast {

namespace x3 = boost::spirit::x3;

// Operator and punctuation tokens the grammar records with a position: every operator token of
// the op table (dsl/ops.def), in table order and each once, then "(" and "?". A Tok indexes
// kTokens.
using Tok = std::uint8_t;

namespace detail {
constexpr bool first_of_its_token(std::size_t k) {
    if (ir::kOpTable[k].token.empty()) return false;
    for (std::size_t j = 0; j < k; ++j)
        if (ir::kOpTable[j].token == ir::kOpTable[k].token) return false;
    return true;
}
constexpr std::size_t count_operator_tokens() {
    std::size_t n = 0;
    for (std::size_t k = 0; k < ir::kNumOps; ++k) n += first_of_its_token(k) ? 1 : 0;
    return n;
}
}  // namespace detail

inline constexpr std::size_t kNumOperatorTokens = detail::count_operator_tokens();
inline constexpr Tok kLParen = static_cast<Tok>(kNumOperatorTokens);
inline constexpr Tok kQuestion = static_cast<Tok>(kNumOperatorTokens + 1);
// Subscripts: a[i, 1:n:2, ..., None]
inline constexpr Tok kLBracket = static_cast<Tok>(kNumOperatorTokens + 2);
inline constexpr Tok kColon = static_cast<Tok>(kNumOperatorTokens + 3);
inline constexpr Tok kEllipsis = static_cast<Tok>(kNumOperatorTokens + 4);
inline constexpr std::size_t kNumTokens = kNumOperatorTokens + 5;
static_assert(kNumTokens <= 255);

inline constexpr std::array<std::string_view, kNumTokens> kTokens = [] {
    std::array<std::string_view, kNumTokens> t{};
    std::size_t n = 0;
    for (std::size_t k = 0; k < ir::kNumOps; ++k)
        if (detail::first_of_its_token(k)) t[n++] = ir::kOpTable[k].token;
    t[kLParen] = "(";
    t[kQuestion] = "?";
    t[kLBracket] = "[";
    t[kColon] = ":";
    t[kEllipsis] = "...";
    return t;
}();

constexpr std::string_view spelling(Tok t) { return kTokens[t]; }
constexpr bool is_operator_token(Tok t) { return t < kNumOperatorTokens; }

// Where in the grammar an operator token stands, and so which operator it is there ("-" is Sub
// between operands, Neg before one).
enum class Role : std::uint8_t {
    Binary,     // the flat list of binary operators below **
    Power,      // **
    Prefix,     // unary - + ~ (kPrefixPrec), also on the operand of a power
    LowPrefix,  // a prefix that binds a lower level (not)
    Count
};

constexpr bool in_role(const ir::OpInfo& i, Role r) {
    switch (r) {
        case Role::Binary: return ir::is_binary_operator(i) && i.prec < ir::kPowerPrec;
        case Role::Power: return ir::is_binary_operator(i) && i.prec == ir::kPowerPrec;
        case Role::Prefix: return ir::is_prefix_operator(i) && i.prec == ir::kPrefixPrec;
        case Role::LowPrefix: return ir::is_prefix_operator(i) && i.prec < ir::kPrefixPrec;
        case Role::Count: break;
    }
    return false;
}

// kRoleOp[role][tok]: the op the token is in that role, or -1.
inline constexpr auto kRoleOp = [] {
    std::array<std::array<int, kNumTokens>, static_cast<std::size_t>(Role::Count)> m{};
    for (auto& row : m)
        for (int& v : row) v = -1;
    for (std::size_t r = 0; r < m.size(); ++r)
        for (std::size_t t = 0; t < kNumOperatorTokens; ++t)
            for (const ir::OpInfo& i : ir::kOpTable)
                if (i.token == kTokens[t] && in_role(i, static_cast<Role>(r))) m[r][t] = static_cast<int>(i.op);
    return m;
}();

// Whether the token is an operator in that role.
constexpr bool has_role(Tok t, Role r) { return kRoleOp[static_cast<std::size_t>(r)][t] >= 0; }
constexpr ir::Op op_in_role(Tok t, Role r) { return static_cast<ir::Op>(kRoleOp[static_cast<std::size_t>(r)][t]); }

struct OpToken : x3::position_tagged {
    Tok tok = kLParen;
    ir::Op op = ir::Op::Add;  // the operator it is where it stands (operator tokens only)
};

// A number, True/False or a string. `text` points into the parsed text; a string's value
// (escapes decoded, adjacent literals joined) is in `value`.
struct Literal : x3::position_tagged {
    ExprKind kind = ExprKind::Int;
    std::string value;
    std::uint64_t int_value = 0;
    bool int_big = false;  // past uint64: the value is in text (exact literal arithmetic reads it)
    double float_value = 0.0;
    bool bool_value = false;
    std::string_view text;
};

struct Identifier : x3::position_tagged {
    std::string_view name;
};

struct Group;
struct Argument;

// `name` or `name(args)`; args is engaged for a call (possibly empty: `f()`).
struct NameOrCall : x3::position_tagged {
    Identifier name;
    std::optional<std::vector<Argument>> args;
};

struct Atom : x3::variant<Literal, NameOrCall, x3::forward_ast<Group>> {
    using base_type::base_type;
    using base_type::operator=;
};

template <typename Operand>
struct Chain;
struct Operand;

// One item of a subscript: `...`, or [first] (':' [part])*: an index when there is no colon, a
// slice start:stop:step otherwise (parse.cpp checks the count). The optional parts are vectors
// of at most one element because the expression type is not complete here.
struct SlicePart {
    OpToken colon;
    std::vector<Chain<Operand>> value;
};

struct IndexItem : x3::position_tagged {
    std::vector<OpToken> ellipsis;  // at most one
    std::vector<Chain<Operand>> first;
    std::vector<SlicePart> rest;
};

struct Subscript : x3::position_tagged {
    OpToken open;
    std::vector<IndexItem> items;
    // Set instead for an attribute, `.real` or `.imag` (its name; the position spans from the
    // '.'): parse.cpp makes it the call real(x) or imag(x).
    std::string_view attribute;
};

// An atom and the subscripts and attributes after it: m[1][2:], (a - 10).real.
struct Primary : x3::position_tagged {
    Atom atom;
    std::vector<Subscript> subscripts;
};

template <typename Operand>
struct Link {
    OpToken op;
    Operand operand;
};

// first (op operand)*
template <typename Operand>
struct Chain : x3::position_tagged {
    Operand first;
    std::vector<Link<Operand>> rest;
};

// The right operand of `**`: it may carry unary operators (a ** -b).
struct PowerOperand : x3::position_tagged {
    std::vector<OpToken> prefix;
    Primary base;
};

struct Power : x3::position_tagged {
    Primary first;
    std::vector<Link<PowerOperand>> rest;
};

struct Unary : x3::position_tagged {
    std::vector<OpToken> prefix;  // - + ~, outermost first
    Power operand;
};

// An operand of the binary operators: optional low prefixes (`not`), then a unary expression.
struct Operand : x3::position_tagged {
    std::vector<OpToken> nots;  // Role::LowPrefix operators, outermost first
    Unary unary;
};

// All binary operators from `or` down to `* / // %` in one flat list; parse.cpp groups it by
// precedence (dsl/syntax.hpp) without recursion.
using Binary = Chain<Operand>;

struct TernaryLink;

// cond (? then : otherwise)*, right-assoc: a ? b : c ? d : e is a ? b : (c ? d : e).
struct Ternary : x3::position_tagged {
    Binary cond;
    std::vector<TernaryLink> rest;
};

struct TernaryLink {
    OpToken question;
    Ternary then;
    Binary otherwise;
};

// ( x ), or a tuple: ( x, y ), ( x, ) (an axis tuple of a reduction; () is no expression).
struct GroupBody {
    std::vector<Ternary> items;  // at least one
    bool trailing_comma = false;
};

struct Group : x3::position_tagged {
    OpToken open;
    GroupBody body;
};

struct KeywordArg : x3::position_tagged {
    Identifier name;
    Ternary value;
};

struct Argument : x3::variant<KeywordArg, Ternary> {
    using base_type::base_type;
    using base_type::operator=;
};

}  // namespace jit::syntax::x3ast

BOOST_FUSION_ADAPT_TPL_STRUCT((Operand), (jit::syntax::x3ast::Link)(Operand), op, operand)
BOOST_FUSION_ADAPT_TPL_STRUCT((Operand), (jit::syntax::x3ast::Chain)(Operand), first, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::NameOrCall, name, args)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::SlicePart, colon, value)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::IndexItem, ellipsis, first, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Subscript, open, items)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Primary, atom, subscripts)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::PowerOperand, prefix, base)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Power, first, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Unary, prefix, operand)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Operand, nots, unary)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Ternary, cond, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::TernaryLink, question, then, otherwise)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::GroupBody, items, trailing_comma)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Group, open, body)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::KeywordArg, name, value)

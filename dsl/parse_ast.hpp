// jitexpr — the X3 syntax tree (internal to dsl/parse*). The grammar in parse_grammar_def.hpp
// fills it; parse.cpp turns it into the plain jit::syntax tree. Operator sequences are flat lists
// (first operand, then operator/operand links), so a long sum is one vector, not a deep tree. Positions live in an x3::position_cache: each position_tagged node holds two indices
// into it.
#pragma once

#include "dsl/syntax.hpp"

#include <boost/fusion/include/adapt_struct.hpp>
#include <boost/spirit/home/x3/support/ast/position_tagged.hpp>
#include <boost/spirit/home/x3/support/ast/variant.hpp>

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

namespace jit::syntax::x3ast {

namespace x3 = boost::spirit::x3;

// Operator and punctuation tokens the grammar records with a position.
enum class Tok : std::uint8_t {
    Or, And, Not,
    Lt, Le, Eq, Ne, Ge, Gt,
    BitOr, Xor, BitAnd, Shl, Shr,
    Plus, Minus, Star, Slash, FloorDiv, Percent,
    Tilde, Pow,
    LParen, Question,
    Count
};

inline constexpr std::string_view kTokSpelling[] = {
    "or", "and", "not",
    "<", "<=", "==", "!=", ">=", ">",
    "|", "^", "&", "<<", ">>",
    "+", "-", "*", "/", "//", "%",
    "~", "**",
    "(", "?",
};
static_assert(std::size(kTokSpelling) == static_cast<std::size_t>(Tok::Count));

inline constexpr std::string_view spelling(Tok t) { return kTokSpelling[static_cast<std::size_t>(t)]; }

struct OpToken : x3::position_tagged {
    Tok tok = Tok::Plus;
};

// A number or True/False. `text` points into the parsed text.
struct Literal : x3::position_tagged {
    ExprKind kind = ExprKind::Int;
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

struct Primary : x3::variant<Literal, NameOrCall, x3::forward_ast<Group>> {
    using base_type::base_type;
    using base_type::operator=;
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

// An operand of the binary operators: optional `not`s, then a unary expression.
struct Operand : x3::position_tagged {
    std::vector<OpToken> nots;  // outermost first
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

struct Group : x3::position_tagged {
    OpToken open;
    Ternary inner;
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
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::PowerOperand, prefix, base)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Power, first, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Unary, prefix, operand)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Operand, nots, unary)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Ternary, cond, rest)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::TernaryLink, question, then, otherwise)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::Group, open, inner)
BOOST_FUSION_ADAPT_STRUCT(jit::syntax::x3ast::KeywordArg, name, value)

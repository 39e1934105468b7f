// jitexpr — the expression grammar (internal to dsl/parse*): the parse state carried in the X3
// context, the skipper, the lexical helpers shared with parse.cpp, and the declaration of the
// top rule. The rules are defined in parse_grammar_def.hpp and instantiated in parse.cpp.
#pragma once

#include "dsl/parse_ast.hpp"

#include <boost/spirit/home/x3.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jit::syntax::grammar {

namespace x3 = boost::spirit::x3;
using x3ast::Tok;

using iterator_type = const char*;
// Starts with room for a statement or two, so a short program allocates it once.
struct Positions : std::vector<iterator_type> {
    Positions() { reserve(128); }
};
using position_cache = x3::position_cache<Positions>;

// What the grammar needs besides the iterators; reached through x3::get<state_tag>(context).
struct ParseState {
    ParseState(iterator_type first, iterator_type last) : text_begin(first), text_end(last), positions(first, last) {}
    iterator_type text_begin;
    iterator_type text_end;
    position_cache positions;
    int depth = 0;                 // open groups, call argument lists and ternary branches
    int brackets = 0;              // open groups and call argument lists: newlines are blanks
    Tok last_op = x3ast::kLParen;  // the last operator token matched, for "after '+'" messages
    iterator_type last_op_end = nullptr;

    std::string_view text() const { return {text_begin, static_cast<std::size_t>(text_end - text_begin)}; }
};
struct state_tag;

// Throws jit::ParseError for the bytes [first, last) of the state's text.
[[noreturn]] void fail(const ParseState& state, iterator_type first, iterator_type last, std::string message);

// "expression nested too deeply (more than 200 levels)"
std::string nesting_message();

// ---- lexical helpers ---------------------------------------------------------------------

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// The end of the identifier-like word starting at p (p itself if none).
inline iterator_type scan_word(iterator_type p, iterator_type last) {
    if (p == last || !is_ident_start(*p)) return p;
    while (p != last && is_ident_char(*p)) ++p;
    return p;
}

// True, False and the operators spelt as words (and, or, not: dsl/ops.def).
inline bool is_keyword(std::string_view w) {
    if (w == "True" || w == "False") return true;
    for (std::size_t t = 0; t < x3ast::kNumOperatorTokens; ++t)
        if (x3ast::kTokens[t] == w) return true;
    return false;
}

// Skips spaces, tabs, carriage returns and comments; newlines too when `newlines`.
inline iterator_type skip_blanks(iterator_type p, iterator_type last, bool newlines) {
    while (p != last) {
        char c = *p;
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            ++p;
        } else if (c == '#') {
            while (p != last && *p != '\n') ++p;
        } else {
            break;
        }
    }
    return p;
}

// The operator or punctuation token at p by maximal munch; returns its length (0: none).
std::size_t lex_token(iterator_type p, iterator_type last, Tok& out);

// ---- string literals: 'abc', "abc", b'abc', r'\d', '''...''' (Python's forms) -------------

// Where a string literal starts at p, a word's first character: after its prefix (b, r, u, br,
// rb in either case, as Python allows), the opening quote. nullptr when p starts none.
iterator_type string_quote(iterator_type p, iterator_type last);
// The end of the string literal whose opening quote is at q (past its closing quote or quotes),
// or nullptr when it is not closed: a single-quoted literal ends with its line. A backslash
// always takes the character after it, in raw literals too, as in Python.
iterator_type string_end(iterator_type q, iterator_type last);
// Appends the value of the literal [p, end) (prefix and quotes included) to `out`: bytes for a
// bytes literal, UTF-8 otherwise; `bytes` says which it is. Escapes as Python reads them.
// Throws jit::ParseError (a caret under the escape or character) for what Python refuses, and
// for what jitexpr cannot hold: a lone surrogate, a \N{...} name.
void decode_string(const ParseState& st, iterator_type p, iterator_type end, std::string& out, bool& bytes);

// True when the text at p (after blanks) can begin an expression.
bool starts_expression(iterator_type p, iterator_type last);

// ---- the skipper: blanks and comments; newlines too inside ( ... ) ------------------------

struct skipper_parser : x3::parser<skipper_parser> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    const ParseState* state;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const&, RContext&, Attribute&) const {
        Iterator p = skip_blanks(first, last, state->brackets > 0);
        bool moved = p != first;
        first = p;
        return moved;
    }
};

// ---- the top rule --------------------------------------------------------------------------

struct expression_class;
using expression_type = x3::rule<expression_class, x3ast::Ternary>;

using skipper_context_type = x3::context<x3::skipper_tag, skipper_parser const, x3::unused_type>;
using context_type = x3::context<state_tag, ParseState, skipper_context_type>;

BOOST_SPIRIT_DECLARE(expression_type)

expression_type const& expression();

}  // namespace jit::syntax::grammar

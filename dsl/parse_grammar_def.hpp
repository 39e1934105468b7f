// jitexpr — the expression grammar, defined. Included by parse.cpp only.
//
// Shape: the binary operators of every precedence level form one flat list
// `operand *(op > operand)` (parse.cpp groups it by precedence, iteratively); unary operators
// are prefix lists `*op > operand`; `**` is its own list. The only recursion is through groups
// `( ... )`, call argument lists and the middle branch of a ternary; each passes the `nest`
// guard, which stops at kMaxNesting levels. Few rules per level keep the stack small.
// Tokens (operators, names, literals) are small hand-written X3 parsers: maximal munch, exact
// positions, and specific errors for malformed numbers and over-long names.
#pragma once

#include "dsl/parse_grammar.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace jit::syntax::grammar {

using x3::lit;

inline ParseState& state_of(auto const& context) { return x3::get<state_tag>(context); }

// ---- handlers: positions on success, one place that turns expectation failures into errors --

// The extent of the token at p, for a caret under the whole token.
inline iterator_type token_end(iterator_type p, iterator_type last) {
    if (p == last) return p;
    if (const iterator_type q = string_quote(p, last)) {
        if (const iterator_type e = string_end(q, last)) return e;
    }
    if (is_ident_start(*p)) return scan_word(p, last);
    if (is_digit(*p) || *p == '.') {
        iterator_type q = p + 1;
        while (q != last && (is_ident_char(*q) || *q == '.')) ++q;
        return q;
    }
    Tok t;
    std::size_t n = lex_token(p, last, t);
    return p + (n ? n : 1);
}

using x3ast::is_operator_token;

[[noreturn]] inline void report_expectation(const ParseState& st, iterator_type where, const std::string& which) {
    // The caret goes under the next token; inside ( ... ) that may be on a later line, unless
    // the text ends first (then it stays right after the last token).
    iterator_type at = skip_blanks(where, st.text_end, false);
    if (st.brackets > 0) {
        iterator_type next = skip_blanks(where, st.text_end, true);
        if (next != st.text_end) at = next;
    }
    iterator_type end = token_end(at, st.text_end);
    std::string message;
    // Right after an operator when only blanks lie between the two.
    bool after_op = st.last_op_end != nullptr && st.last_op_end <= where && is_operator_token(st.last_op) &&
                    skip_blanks(st.last_op_end, st.text_end, true) == skip_blanks(where, st.text_end, true);
    if (which == "an operand") {
        message = after_op ? fmt::format("expected an operand after '{}'", x3ast::spelling(st.last_op))
                           : std::string("expected an expression");
    } else {
        message = "expected " + which;
    }
    // A few spellings from other languages get a hint.
    if (at != st.text_end) {
        char c = *at;
        char next = (at + 1 != st.text_end) ? at[1] : '\0';
        if (c == '!' && next != '=') {
            message += " ('!' is not an operator here: write 'not' for logical negation)";
            end = at + 1;
        } else if (after_op && x3ast::spelling(st.last_op) == "&" && c == '&') {
            message += " (write 'and' for logical and)";
        } else if (after_op && x3ast::spelling(st.last_op) == "|" && c == '|') {
            message += " (write 'or' for logical or)";
        } else if (after_op && c == '=' && next != '=') {
            message += " ('=' assigns; compare with '==')";
        } else if (c == '?' && which == "',' or ']'") {
            message += " (a conditional cannot stand in an index: its bounds are constants)";
        }
    }
    fail(st, at, end, std::move(message));
}

struct error_handler {
    template <typename Iterator, typename Exception, typename Context>
    x3::error_handler_result on_error(Iterator&, Iterator const&, Exception const& x, Context const& context) {
        report_expectation(state_of(context), x.where(), x.which());
    }
};

struct annotate_position {
    template <typename T, typename Iterator, typename Context>
    void on_success(Iterator const& first, Iterator const& last, T& ast, Context const& context) {
        state_of(context).positions.annotate(ast, first, last);
    }
};

// ---- tokens --------------------------------------------------------------------------------

using x3ast::Role;

// The token at the position by maximal munch (so `*` never matches the start of `**`): an
// operator of the op table in one role (dsl/parse_ast.hpp), or one punctuation token.
struct op_parser : x3::parser<op_parser> {
    using attribute_type = x3ast::OpToken;
    static bool const has_attribute = true;
    Role role;
    Tok punctuation;
    constexpr explicit op_parser(Role r) : role(r), punctuation(x3ast::kNumTokens) {}
    constexpr explicit op_parser(Tok t) : role(Role::Count), punctuation(t) {}

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute& attr) const {
        x3::skip_over(first, last, context);
        Tok t;
        std::size_t n = lex_token(first, last, t);
        if (n == 0) return false;
        x3ast::OpToken tok;
        tok.tok = t;
        if (role == Role::Count) {
            if (t != punctuation) return false;
        } else {
            if (!x3ast::has_role(t, role)) return false;
            tok.op = x3ast::op_in_role(t, role);
        }
        ParseState& st = state_of(context);
        st.positions.annotate(tok, first, first + n);
        first += n;
        st.last_op = t;
        st.last_op_end = first;
        x3::traits::move_to(std::move(tok), attr);
        return true;
    }
};

inline constexpr op_parser op_low_prefix{Role::LowPrefix};  // not
inline constexpr op_parser op_binary{Role::Binary};         // or, and, comparisons, | ^ &, shifts, + -, * / // %
inline constexpr op_parser op_prefix{Role::Prefix};         // - + ~
inline constexpr op_parser op_pow{Role::Power};             // **
inline constexpr op_parser op_lparen{x3ast::kLParen};
inline constexpr op_parser op_question{x3ast::kQuestion};
inline constexpr op_parser op_lbracket{x3ast::kLBracket};
inline constexpr op_parser op_colon{x3ast::kColon};
inline constexpr op_parser op_ellipsis{x3ast::kEllipsis};

// An identifier that is not a keyword, at most kMaxIdentifier bytes.
struct identifier_parser : x3::parser<identifier_parser> {
    using attribute_type = x3ast::Identifier;
    static bool const has_attribute = true;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute& attr) const {
        x3::skip_over(first, last, context);
        Iterator end = scan_word(first, last);
        if (end == first) return false;
        std::string_view word(first, static_cast<std::size_t>(end - first));
        if (is_keyword(word)) return false;
        ParseState& st = state_of(context);
        if (word.size() > kMaxIdentifier) {
            fail(st, first, end,
                 fmt::format("identifier too long ({} characters; at most {} are allowed)", word.size(),
                             kMaxIdentifier));
        }
        x3ast::Identifier id;
        id.name = word;
        st.positions.annotate(id, first, end);
        first = end;
        x3::traits::move_to(std::move(id), attr);
        return true;
    }
};

inline int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Scans the number at p (a digit, or '.' before a digit) into `lit`; returns its end.
inline iterator_type scan_number(const ParseState& st, iterator_type p, iterator_type last, x3ast::Literal& lit) {
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    iterator_type q = p;
    auto reject_suffix = [&] {
        if (q != last && (is_ident_char(*q) || *q == '.')) {
            iterator_type e = q;
            while (e != last && (is_ident_char(*e) || *e == '.')) ++e;
            fail(st, p, e,
                 fmt::format("invalid number literal '{}'", std::string_view(p, static_cast<std::size_t>(e - p))));
        }
    };
    // Integers past uint64 are exact Python integers: lowering folds them with the literals
    // around them (2**64 // 2**60 is 16) and rejects one that reaches an integer dtype.
    auto too_large = [&] {
        if (static_cast<std::size_t>(q - p) > kMaxIntegerDigits)
            fail(st, p, q, fmt::format("integer literal too long (more than {} digits)", kMaxIntegerDigits));
        lit.int_big = true;
    };
    // Python's prefixed integers: 0x, 0o and 0b, an underscore allowed after the prefix and
    // between digits (0x_ff, 0b1010_1010).
    if (*q == '0' && q + 1 != last && std::strchr("xXoObB", q[1]) && q[1] != '\0') {
        const char kind = static_cast<char>(q[1] | 0x20);
        const int shift = kind == 'x' ? 4 : kind == 'o' ? 3 : 1;
        const char* const name = kind == 'x' ? "hexadecimal" : kind == 'o' ? "octal" : "binary";
        q += 2;
        iterator_type digits = q;
        std::uint64_t v = 0;
        bool overflow = false;
        for (;;) {
            if (q != last && *q == '_' && q + 1 != last && hex_value(q[1]) >= 0 && hex_value(q[1]) < (1 << shift)) ++q;
            int d;
            if (q == last || (d = hex_value(*q)) < 0 || d >= (1 << shift)) break;
            if (v > (kMax >> shift)) overflow = true;
            v = (v << shift) | static_cast<std::uint64_t>(d);
            ++q;
        }
        if (q == digits) {
            reject_suffix();
            fail(st, p, q, fmt::format("{} literal '0{}' has no digits", name, kind));
        }
        reject_suffix();
        lit.kind = ExprKind::Int;
        lit.int_value = overflow ? 0 : v;
        if (overflow) too_large();
        return q;
    }
    // Decimal digits with Python's single underscores between them (1_000_000, 1_0.5e1_0).
    bool underscores = false;
    auto digits = [&] {
        while (q != last &&
               (is_digit(*q) || (*q == '_' && q != p && is_digit(q[-1]) && q + 1 != last && is_digit(q[1])))) {
            underscores = underscores || *q == '_';
            ++q;
        }
    };
    bool is_float = false;
    digits();
    if (q != last && *q == '.') {
        is_float = true;
        ++q;
        digits();
    }
    if (q != last && (*q == 'e' || *q == 'E')) {
        is_float = true;
        ++q;
        if (q != last && (*q == '+' || *q == '-')) ++q;
        if (q == last || !is_digit(*q)) {
            fail(st, p, q,
                 fmt::format("malformed number '{}': the exponent has no digits",
                             std::string_view(p, static_cast<std::size_t>(q - p))));
        }
        digits();
    }
    // The digits as Python reads them: without the underscores.
    std::string plain;
    if (underscores) {
        for (iterator_type i = p; i != q; ++i)
            if (*i != '_') plain.push_back(*i);
    }
    const char* const np = underscores ? plain.data() : &*p;
    const char* const nq = underscores ? plain.data() + plain.size() : &*p + (q - p);
    if (q != last && (*q == 'j' || *q == 'J')) {
        // An imaginary literal, as in Python: decimal digits (leading zeros allowed), a fraction
        // or an exponent, then j or J; its value is a complex with a zero real part.
        double imag = 0.0;
        auto [ptr, ec] = std::from_chars(np, nq, imag, std::chars_format::general);
        if (ec == std::errc::result_out_of_range) {
            // Past a double: inf (1e400j is infj in Python); below: zero or a subnormal.
            std::string copy(np, nq);
            imag = std::strtod(copy.c_str(), nullptr);
        } else if (ec != std::errc() || ptr != nq) {
            fail(st, p, q + 1, "malformed imaginary literal");
        }
        ++q;
        reject_suffix();
        lit.kind = ExprKind::Imag;
        lit.float_value = imag;
        return q;
    }
    reject_suffix();
    if (!is_float) {
        std::uint64_t v = 0;
        bool overflow = false;
        for (const char* i = np; i != nq && !overflow; ++i) {
            auto d = static_cast<std::uint64_t>(*i - '0');
            if (v > (kMax - d) / 10) overflow = true;
            else v = v * 10 + d;
        }
        lit.kind = ExprKind::Int;
        lit.int_value = overflow ? 0 : v;
        if (overflow) too_large();
        return q;
    }
    double value = 0.0;
    auto [ptr, ec] = std::from_chars(np, nq, value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
        // As Python reads a float literal: past a double it is inf (1e400), below it rounds to
        // zero or a subnormal.
        std::string copy(np, nq);
        value = std::strtod(copy.c_str(), nullptr);
    } else if (ec != std::errc() || ptr != nq) {
        fail(st, p, q, "malformed float literal");
    }
    lit.kind = ExprKind::Float;
    lit.float_value = value;
    return q;
}

// A number, True, False, or a string literal: adjacent ones ('a' 'b', "a" r'\b') are one, as in
// Python, and a bytes literal beside a str one is Python's error.
struct literal_parser : x3::parser<literal_parser> {
    using attribute_type = x3ast::Literal;
    static bool const has_attribute = true;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute& attr) const {
        x3::skip_over(first, last, context);
        if (first == last) return false;
        ParseState& st = state_of(context);
        x3ast::Literal lit;
        Iterator end;
        char c = *first;
        if (iterator_type q = string_quote(first, last)) {
            iterator_type p = first;
            for (bool first_part = true;; first_part = false) {
                end = string_end(q, last);  // check_bytes has refused an unterminated one
                if (!end) fail(st, p, q + 1, "unterminated string literal");
                bool bytes = false;
                decode_string(st, p, end, lit.value, bytes);
                const ExprKind kind = bytes ? ExprKind::Bytes : ExprKind::Str;
                if (!first_part && kind != lit.kind)
                    fail(st, first, end, "cannot mix bytes and str literals (b'...' beside '...')");
                lit.kind = kind;
                p = skip_blanks(end, last, st.brackets > 0);
                if (p == last || !(q = string_quote(p, last))) break;
            }
        } else if (is_ident_start(c)) {
            end = scan_word(first, last);
            std::string_view word(first, static_cast<std::size_t>(end - first));
            if (word != "True" && word != "False") return false;
            lit.kind = ExprKind::Bool;
            lit.bool_value = word == "True";
        } else if (is_digit(c) || (c == '.' && first + 1 != last && is_digit(first[1]))) {
            end = scan_number(st, first, last, lit);
        } else {
            return false;
        }
        lit.text = std::string_view(first, static_cast<std::size_t>(end - first));
        st.positions.annotate(lit, first, end);
        first = end;
        x3::traits::move_to(std::move(lit), attr);
        return true;
    }
};

// Succeeds, consuming nothing, where an expression can begin.
struct expr_start_parser : x3::parser<expr_start_parser> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute&) const {
        Iterator p = first;
        x3::skip_over(p, last, context);
        return starts_expression(p, last);
    }
};

// `.name` after an operand: an attribute (numexpr's `.real` and `.imag`; parse.cpp checks the
// name). Blanks may sit on either side of the '.', as in Python; `...` is not an attribute.
struct attribute_parser : x3::parser<attribute_parser> {
    using attribute_type = x3ast::Subscript;
    static bool const has_attribute = true;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute& attr) const {
        Iterator dot = first;
        x3::skip_over(dot, last, context);
        if (dot == last || *dot != '.' || (dot + 1 != last && dot[1] == '.')) return false;
        ParseState& st = state_of(context);
        Iterator name = skip_blanks(dot + 1, last, st.brackets > 0);
        Iterator end = scan_word(name, last);
        if (end == name) fail(st, dot, dot + 1, "expected an attribute name after '.' (.real or .imag)");
        x3ast::Subscript sub;
        sub.attribute = std::string_view(name, static_cast<std::size_t>(end - name));
        st.positions.annotate(sub, dot, end);
        first = end;
        x3::traits::move_to(std::move(sub), attr);
        return true;
    }
};

inline constexpr identifier_parser identifier{};
inline constexpr attribute_parser attribute_access{};
inline constexpr literal_parser literal{};
inline constexpr expr_start_parser expr_start{};

// ---- nesting guard -------------------------------------------------------------------------

// Counts one nesting level around its subject and stops past kMaxNesting; with Brackets, the
// subject also sits inside ( ... ), where newlines are blanks.
template <typename Subject, bool Brackets>
struct nest_directive : x3::unary_parser<Subject, nest_directive<Subject, Brackets>> {
    using base_type = x3::unary_parser<Subject, nest_directive<Subject, Brackets>>;
    static bool const is_pass_through_unary = true;
    static bool const handles_container = Subject::handles_container;
    constexpr nest_directive(Subject const& s) : base_type(s) {}

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext& rcontext,
               Attribute& attr) const {
        ParseState& st = state_of(context);
        if (st.depth >= kMaxNesting) {
            Iterator at = skip_blanks(first, last, true);
            fail(st, at, token_end(at, last), nesting_message());
        }
        struct Level {
            ParseState& st;
            explicit Level(ParseState& s) : st(s) {
                ++st.depth;
                if (Brackets) ++st.brackets;
            }
            ~Level() {
                --st.depth;
                if (Brackets) --st.brackets;
            }
        } level(st);
        return this->subject.parse(first, last, context, rcontext, attr);
    }
};

template <bool Brackets>
struct nest_gen {
    template <typename Subject>
    constexpr nest_directive<typename x3::extension::as_parser<Subject>::value_type, Brackets> operator[](
        Subject const& subject) const {
        return {x3::as_parser(subject)};
    }
};
inline constexpr nest_gen<false> nest{};
inline constexpr nest_gen<true> brackets{};

}  // namespace jit::syntax::grammar

// An expectation failure at nest[r] reports r's name.
template <typename Subject, bool Brackets>
struct boost::spirit::x3::get_info<jit::syntax::grammar::nest_directive<Subject, Brackets>> {
    using result_type = std::string;
    std::string operator()(jit::syntax::grammar::nest_directive<Subject, Brackets> const& p) const {
        return x3::what(p.subject);
    }
};

namespace jit::syntax::grammar {

// ---- rules ---------------------------------------------------------------------------------

struct expression_class : error_handler, annotate_position {};
struct ternary_then_class : error_handler, annotate_position {};
struct binary_class : error_handler, annotate_position {};
struct operand_class : error_handler, annotate_position {};
struct unary_class : error_handler, annotate_position {};
struct power_class : error_handler, annotate_position {};
struct power_operand_class : error_handler, annotate_position {};
struct primary_class : error_handler, annotate_position {};
struct atom_class : error_handler {};
struct subscript_class : error_handler, annotate_position {};
struct index_list_class : error_handler {};
struct index_item_class : error_handler, annotate_position {};
struct slice_part_class : error_handler {};
struct close_bracket_class : error_handler {};
struct name_or_call_class : error_handler, annotate_position {};
struct group_class : error_handler, annotate_position {};
struct group_body_class : error_handler {};
struct call_body_class : error_handler {};
struct argument_class : error_handler {};
struct keyword_argument_class : error_handler, annotate_position {};
struct close_paren_class : error_handler {};
struct close_call_class : error_handler {};
struct colon_class : error_handler {};

// A rule's name is what an expectation failure at it reports: "expected <name>".
expression_type const ternary = "an expression";
x3::rule<ternary_then_class, x3ast::Ternary> const ternary_then = "an expression";
x3::rule<binary_class, x3ast::Binary> const binary = "an operand";
x3::rule<operand_class, x3ast::Operand> const operand = "an operand";
x3::rule<unary_class, x3ast::Unary> const unary_expr = "an operand";
x3::rule<power_class, x3ast::Power> const power = "an operand";
x3::rule<power_operand_class, x3ast::PowerOperand> const power_operand = "an operand";
x3::rule<primary_class, x3ast::Primary> const primary = "an operand";
x3::rule<atom_class, x3ast::Atom> const atom = "an operand";
x3::rule<subscript_class, x3ast::Subscript> const subscript = "'['";
x3::rule<index_list_class, std::vector<x3ast::IndexItem>> const index_list = "an index";
x3::rule<index_item_class, x3ast::IndexItem> const index_item = "an index";
x3::rule<slice_part_class, x3ast::SlicePart> const slice_part = "':'";
x3::rule<close_bracket_class> const close_bracket = "',' or ']'";
x3::rule<name_or_call_class, x3ast::NameOrCall> const name_or_call = "a name";
x3::rule<group_class, x3ast::Group> const group = "'('";
x3::rule<group_body_class, x3ast::GroupBody> const group_body = "an expression";
x3::rule<call_body_class, std::vector<x3ast::Argument>> const call_body = "an argument or ')'";
x3::rule<argument_class, x3ast::Argument> const argument = "an argument";
x3::rule<keyword_argument_class, x3ast::KeywordArg> const keyword_argument = "a keyword argument";
x3::rule<close_paren_class> const close_paren = "')'";
x3::rule<close_call_class> const close_call = "',' or ')'";
x3::rule<colon_class> const colon = "':' to complete 'condition ? x : y'";

auto const ternary_def = binary >> *(op_question > ternary_then > colon > binary);
auto const ternary_then_def = nest[ternary];
auto const binary_def = operand >> *(op_binary > operand);
auto const operand_def = *op_low_prefix > unary_expr;
auto const unary_expr_def = *op_prefix > power;
auto const power_def = primary >> *(op_pow > power_operand);
auto const power_operand_def = *op_prefix > primary;
auto const primary_def = atom >> *(subscript | attribute_access);
auto const atom_def = literal | name_or_call | group;
// A part of an index: a binary expression where one begins (binary expects the rest of it once
// it starts), else nothing.
struct index_part_parser : x3::parser<index_part_parser> {
    using attribute_type = std::vector<x3ast::Binary>;
    static bool const has_attribute = true;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext& rcontext,
               Attribute& attr) const {
        Iterator p = first;
        x3::skip_over(p, last, context);
        if (!starts_expression(p, last)) return true;
        x3ast::Binary b;
        if (!binary.parse(first, last, context, rcontext, b)) return false;
        attr.push_back(std::move(b));
        return true;
    }
};
inline constexpr index_part_parser index_part{};

// a[i, j:k:s, ..., None]: the parts are binary expressions (a conditional needs parentheses,
// as its ':' would read as a slice's).
auto const subscript_def = op_lbracket > brackets[index_list];
auto const index_list_def = index_item % lit(',') > close_bracket;
auto const index_item_def = x3::repeat(0, 1)[op_ellipsis] >> index_part >> *slice_part;
auto const slice_part_def = op_colon >> index_part;
auto const close_bracket_def = lit(']');
auto const name_or_call_def = identifier >> -(lit('(') > brackets[call_body]);
auto const group_def = op_lparen > brackets[group_body];
auto const group_body_def = (ternary % (lit(',') >> !lit(')'))) >> x3::matches[lit(',')] > close_paren;
auto const call_body_def = lit(')') | (argument >> *((lit(',') >> !lit(')')) > argument) > close_call);
auto const argument_def = expr_start >> (keyword_argument | ternary);
auto const keyword_argument_def = identifier >> (lit('=') >> !lit('=')) > ternary;
auto const close_paren_def = lit(')');
auto const close_call_def = -lit(',') >> lit(')');
auto const colon_def = lit(':');

BOOST_SPIRIT_DEFINE(ternary, ternary_then, binary, operand, unary_expr, power, power_operand, primary, atom, subscript,
                    index_list, index_item, slice_part, close_bracket, name_or_call, group, group_body, call_body,
                    argument, keyword_argument, close_paren, close_call, colon)

expression_type const& expression() { return ternary; }

}  // namespace jit::syntax::grammar

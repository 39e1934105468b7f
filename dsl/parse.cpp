// jitexpr — parse(): checks the bytes, splits statements, runs the X3 expression grammar
// (instantiated here) and converts its tree into the plain jit::syntax tree with byte spans.
#include "core/stack.hpp"
#include "dsl/parse_grammar_def.hpp"
#include "dsl/syntax.hpp"
#include "dsl/tree_walk.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace jit::syntax {

namespace grammar {

void fail(const ParseState& state, iterator_type first, iterator_type last, std::string message) {
    auto offset = [&](iterator_type p) { return static_cast<std::uint32_t>(p - state.text_begin); };
    throw ParseError(std::move(message), state.text(), SourceSpan{offset(first), offset(last)});
}

std::string nesting_message() { return fmt::format("expression nested too deeply (more than {} levels)", kMaxNesting); }

// The tokens of x3ast::kTokens (the op table's operators, "(" and "?"): a word token only as a
// whole word, a symbol token by maximal munch.
std::size_t lex_token(iterator_type p, iterator_type last, Tok& out) {
    if (p == last) return 0;
    if (is_ident_start(*p)) {
        const std::string_view word(p, static_cast<std::size_t>(scan_word(p, last) - p));
        for (std::size_t t = 0; t < x3ast::kNumTokens; ++t) {
            if (x3ast::kTokens[t] == word) {
                out = static_cast<Tok>(t);
                return word.size();
            }
        }
        return 0;
    }
    const std::string_view rest(p, static_cast<std::size_t>(last - p));
    std::size_t best = 0;
    for (std::size_t t = 0; t < x3ast::kNumTokens; ++t) {
        const std::string_view s = x3ast::kTokens[t];
        if (s.size() > best && !is_ident_start(s[0]) && rest.substr(0, s.size()) == s) {
            best = s.size();
            out = static_cast<Tok>(t);
        }
    }
    return best;
}

iterator_type string_quote(iterator_type p, iterator_type last) {
    bool b = false, r = false, u = false;
    iterator_type q = p;
    for (; q != last && q - p < 2; ++q) {
        const char c = *q;
        if ((c == 'b' || c == 'B') && !b && !u) {
            b = true;
        } else if ((c == 'r' || c == 'R') && !r && !u) {
            r = true;
        } else if ((c == 'u' || c == 'U') && q == p) {
            u = true;
        } else {
            break;
        }
    }
    return q != last && (*q == '\'' || *q == '"') ? q : nullptr;
}

iterator_type string_end(iterator_type q, iterator_type last) {
    const char quote = *q;
    const bool triple = last - q >= 3 && q[1] == quote && q[2] == quote;
    for (iterator_type p = q + (triple ? 3 : 1); p != last;) {
        const char c = *p;
        if (c == '\\') {
            if (last - p < 2) return nullptr;
            p += 2;
            continue;
        }
        if (c == '\n' && !triple) return nullptr;
        if (c == quote && (!triple || (last - p >= 3 && p[1] == quote && p[2] == quote))) return p + (triple ? 3 : 1);
        ++p;
    }
    return nullptr;
}

bool starts_expression(iterator_type p, iterator_type last) {
    if (p == last) return false;
    const char c = *p;
    if (is_digit(c)) return true;
    if (c == '.') return p + 1 != last && is_digit(p[1]);
    if (string_quote(p, last)) return true;
    // An operator token begins an expression when it is a prefix operator (a word that is a
    // binary operator, `and`, does not); any other word is a name.
    Tok t;
    if (lex_token(p, last, t) != 0)
        return t == x3ast::kLParen || x3ast::has_role(t, x3ast::Role::Prefix) ||
               x3ast::has_role(t, x3ast::Role::LowPrefix);
    return is_ident_start(c);
}

BOOST_SPIRIT_INSTANTIATE(expression_type, iterator_type, context_type)

}  // namespace grammar

namespace {

namespace x3 = boost::spirit::x3;
using grammar::fail;
using grammar::iterator_type;
using grammar::nesting_message;
using grammar::ParseState;

// ---- the byte check before parsing ---------------------------------------------------------

// Characters that look like an ASCII operator; named in the error to help.
struct LookAlike {
    char32_t code;
    const char* ascii;
};
constexpr LookAlike kLookAlikes[] = {
    {0x2212, "-"}, {0x2010, "-"},  {0x2011, "-"},  {0x2013, "-"},  {0x2014, "-"},       {0xFE63, "-"},
    {0xFF0D, "-"}, {0x00D7, "*"},  {0x2217, "*"},  {0x22C5, "*"},  {0xFF0A, "*"},       {0x00F7, "/"},
    {0x2215, "/"}, {0xFF0F, "/"},  {0xFF0B, "+"},  {0xFF1D, "="},  {0xFF08, "("},       {0xFF09, ")"},
    {0xFF0C, ","}, {0x2264, "<="}, {0x2265, ">="}, {0x2260, "!="}, {0x00A0, "a space"}, {0x3000, "a space"},
    {0x2018, "'"}, {0x2019, "'"},  {0x201C, "\""}, {0x201D, "\""}, {0x2026, "..."},
};

// Decodes one UTF-8 character at p; returns its length (0 if the bytes are not valid UTF-8).
std::size_t decode_utf8(iterator_type p, iterator_type last, char32_t& code) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
    const auto avail = static_cast<std::size_t>(last - p);
    const unsigned char b0 = byte(0);
    std::size_t len;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
        code = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        code = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        code = b0 & 0x07;
    } else {
        return 0;
    }
    if (avail < len) return 0;
    for (std::size_t i = 1; i < len; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return 0;
        code = (code << 6) | (byte(i) & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not characters.
    if ((len == 3 && code < 0x800) || (len == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF)) {
        return 0;
    }
    return len;
}

[[noreturn]] void reject_character(const ParseState& st, iterator_type p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x80) {
        if (c < 0x20 || c == 0x7F) fail(st, p, p + 1, fmt::format("unexpected control character 0x{:02X}", c));
        fail(st, p, p + 1, fmt::format("unexpected character '{}'", static_cast<char>(c)));
    }
    char32_t code = 0;
    std::size_t len = decode_utf8(p, st.text_end, code);
    if (len == 0) fail(st, p, p + 1, fmt::format("unexpected byte 0x{:02X} (the text is not valid UTF-8)", c));
    std::string hint;
    for (const LookAlike& l : kLookAlikes) {
        if (l.code == code) {
            hint = std::strcmp(l.ascii, "a space") == 0 ? std::string("looks like a space; ")
                                                        : fmt::format("looks like '{}'; ", l.ascii);
            break;
        }
    }
    fail(st, p, p + len,
         fmt::format("unexpected character U+{:04X} ({}only ASCII is allowed outside comments)",
                     static_cast<std::uint32_t>(code), hint));
}

void append_utf8(std::string& out, char32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

}  // namespace

namespace grammar {

void decode_string(const ParseState& st, iterator_type p, iterator_type end, std::string& out, bool& bytes) {
    const iterator_type quote = string_quote(p, end);
    bytes = false;
    bool raw = false;
    for (iterator_type c = p; c != quote; ++c) {
        bytes = bytes || *c == 'b' || *c == 'B';
        raw = raw || *c == 'r' || *c == 'R';
    }
    const bool triple = end - quote >= 6 && quote[1] == *quote && quote[2] == *quote;
    const iterator_type body_end = end - (triple ? 3 : 1);
    const char* kind = bytes ? "bytes" : "string";
    for (iterator_type c = quote + (triple ? 3 : 1); c < body_end;) {
        const auto ch = static_cast<unsigned char>(*c);
        if (ch == '\\' && !raw) {
            const iterator_type e = c + 1;  // a backslash never ends the body (string_end)
            const char k = *e;
            switch (k) {
                case '\n': c = e + 1; continue;  // a line continued
                case '\\':
                case '\'':
                case '"':
                    out += k;
                    c = e + 1;
                    continue;
                case 'a':
                    out += '\a';
                    c = e + 1;
                    continue;
                case 'b':
                    out += '\b';
                    c = e + 1;
                    continue;
                case 'f':
                    out += '\f';
                    c = e + 1;
                    continue;
                case 'n':
                    out += '\n';
                    c = e + 1;
                    continue;
                case 'r':
                    out += '\r';
                    c = e + 1;
                    continue;
                case 't':
                    out += '\t';
                    c = e + 1;
                    continue;
                case 'v':
                    out += '\v';
                    c = e + 1;
                    continue;
                case 'x':
                case 'u':
                case 'U': {
                    if (k != 'x' && bytes) break;  // not an escape in bytes: kept as written
                    const int digits = k == 'x' ? 2 : k == 'u' ? 4 : 8;
                    char32_t v = 0;
                    iterator_type d = e + 1;
                    for (int i = 0; i < digits; ++i, ++d) {
                        const int h = d < body_end ? hex_value(*d) : -1;
                        if (h < 0)
                            fail(st, c, d < body_end ? d + 1 : d,
                                 fmt::format("truncated \\{}{} escape in a {} literal ({} hexadecimal digits)", k,
                                             std::string(static_cast<std::size_t>(digits), 'X'), kind, digits));
                        v = v * 16 + static_cast<char32_t>(h);
                    }
                    if (v > 0x10FFFF) fail(st, c, d, "illegal Unicode character: past U+10FFFF");
                    if (v >= 0xD800 && v <= 0xDFFF)
                        fail(st, c, d,
                             fmt::format("a lone surrogate (U+{:04X}) cannot be in a jitexpr string",
                                         static_cast<std::uint32_t>(v)));
                    if (bytes) out += static_cast<char>(v);
                    else append_utf8(out, v);
                    c = d;
                    continue;
                }
                case 'N':
                    if (bytes) break;
                    fail(st, c, e + 1, "\\N{...} escapes are not supported: write the character itself, or \\uXXXX");
                default:
                    if (k >= '0' && k <= '7') {
                        char32_t v = 0;
                        iterator_type d = e;
                        for (int i = 0; i < 3 && d < body_end && *d >= '0' && *d <= '7'; ++i, ++d)
                            v = v * 8 + static_cast<char32_t>(*d - '0');
                        if (v > 0xFF && bytes)
                            fail(st, c, d, "octal escape past \\377 in a bytes literal (a byte is at most 255)");
                        if (bytes) out += static_cast<char>(v);
                        else append_utf8(out, v);
                        c = d;
                        continue;
                    }
                    break;
            }
            // Not an escape: the backslash stays, and what follows is read as written (Python's rule).
            out += '\\';
            c = e;
            continue;
        }
        if (ch < 0x80) {
            // Control bytes are written as escapes: jitexpr's messages quote the text and must
            // not drive a terminal (a newline stands in a triple-quoted literal).
            if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7F)
                fail(st, c, c + 1,
                     fmt::format("control character 0x{:02X} in a {} literal: write it as the escape \\x{:02x}", ch,
                                 kind, ch));
            out += static_cast<char>(ch);
            ++c;
            continue;
        }
        if (bytes) {
            char32_t code = 0;
            const std::size_t len = decode_utf8(c, body_end, code);
            fail(st, c, c + (len ? len : 1), "bytes can only contain ASCII literal characters: write others as \\xNN");
        }
        char32_t code = 0;
        const std::size_t len = decode_utf8(c, body_end, code);
        if (len == 0) fail(st, c, c + 1, fmt::format("unexpected byte 0x{:02X} (the text is not valid UTF-8)", ch));
        out.append(c, len);
        c += len;
    }
}

}  // namespace grammar

namespace {

// Rejects bytes the language never uses (outside comments and string literals) and parentheses
// nested past the limit, before the grammar recurses into them.
void check_bytes(const ParseState& st, std::size_t skip) {
    int depth = 0;
    for (iterator_type p = st.text_begin + skip; p != st.text_end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c == '#') {
            while (p + 1 != st.text_end && p[1] != '\n') ++p;
            continue;
        }
        // A string literal (at a word's start for a prefixed one) is the grammar's to read.
        if (c == '\'' || c == '"' ||
            (grammar::is_ident_start(static_cast<char>(c)) && (p == st.text_begin || !grammar::is_ident_char(p[-1])))) {
            if (const iterator_type q = grammar::string_quote(p, st.text_end)) {
                const iterator_type e = grammar::string_end(q, st.text_end);
                if (!e) {
                    const bool triple = st.text_end - q >= 3 && q[1] == *q && q[2] == *q;
                    iterator_type eol = q;
                    while (eol != st.text_end && *eol != '\n') ++eol;
                    fail(st, p, triple ? q + 3 : eol,
                         triple ? "unterminated triple-quoted string literal" : "unterminated string literal");
                }
                p = e - 1;
                continue;
            }
        }
        if (c == '(' || c == '[') {
            if (++depth > kMaxNesting) fail(st, p, p + 1, nesting_message());
            continue;
        }
        if (c == ')' || c == ']') {
            if (depth > 0) --depth;
            continue;
        }
        if (c == '\n' || c == '\t' || c == '\r') continue;
        if (c < 0x20 || c >= 0x7F || std::strchr("$@`\"'{}\\", static_cast<int>(c)) != nullptr) {
            reject_character(st, p);
        }
    }
}

// ---- X3 tree -> syntax tree ----------------------------------------------------------------

// Binding strength of an operator token where it stands (dsl/ops.def, Prec).
int precedence(const x3ast::OpToken& t) { return ir::info(t.op).prec; }

class Converter {
public:
    explicit Converter(const ParseState& st) : st_(st) {}

    ExprPtr convert(const x3ast::Ternary& t, int depth) {
        if (t.rest.empty()) return convert(t.cond, depth);
        const std::size_t n = t.rest.size();
        // Ternary k (0-based) sits at depth + k + 1: a ? b : (c ? d : e) nests the second.
        if (depth + static_cast<int>(n) > kMaxNesting) {
            const auto& q = t.rest[static_cast<std::size_t>(kMaxNesting - depth)].question;
            too_deep(span(q));
        }
        // Convert in text order, then fold from the right.
        std::vector<ExprPtr> conds, thens;
        conds.reserve(n);
        thens.reserve(n);
        for (std::size_t k = 0; k < n; ++k) {
            const int d = depth + static_cast<int>(k) + 1;
            conds.push_back(convert(k == 0 ? t.cond : t.rest[k - 1].otherwise, d));
            thens.push_back(convert(t.rest[k].then, d));
        }
        ExprPtr acc = convert(t.rest[n - 1].otherwise, depth + static_cast<int>(n));
        const std::uint32_t end = span(t).end;
        for (std::size_t k = n; k-- > 0;) {
            const std::uint32_t begin = k == 0 ? span(t).begin : span(t.rest[k - 1].otherwise).begin;
            ExprPtr node = make(ExprKind::Ternary, {begin, end});
            node->operands.reserve(3);
            node->operands.push_back(std::move(conds[k]));
            node->operands.push_back(std::move(thens[k]));
            node->operands.push_back(std::move(acc));
            acc = std::move(node);
        }
        return acc;
    }

    // The flat list of binary operators, grouped by precedence with an operator stack (no
    // recursion): operators of one level in a row extend one Chain; a low prefix (`not`) binds
    // the levels above its own (below the comparisons and above `and`).
    ExprPtr convert(const x3ast::Binary& b, int depth) {
        if (b.rest.empty() && b.first.nots.empty()) return convert(b.first.unary, depth);
        struct Value {
            ExprPtr node;
            std::uint32_t begin, end;  // the text it covers, parentheses included
            int chain_prec;            // a Chain still open to more operators of this level; 0 if none
        };
        struct Pending {
            int prec;
            const x3ast::OpToken* op;  // a binary operator, or a low prefix
        };
        std::vector<Value> values;
        std::vector<Pending> ops;
        int open_nots = 0;

        auto pop_value = [&] {
            Value v = std::move(values.back());
            values.pop_back();
            return v;
        };
        auto reduce = [&] {
            const Pending top = ops.back();
            ops.pop_back();
            if (ir::info(top.op->op).arity == 1) {
                Value v = pop_value();
                --open_nots;
                const SourceSpan op = span(*top.op);
                ExprPtr node = make(ExprKind::Unary, {op.begin, v.end});
                push_op(*node, *top.op);
                node->operands.push_back(std::move(v.node));
                values.push_back({std::move(node), op.begin, v.end, 0});
                return;
            }
            Value rhs = pop_value();
            Value lhs = pop_value();
            if (lhs.chain_prec != top.prec) {
                ExprPtr node = make(ExprKind::Chain, {lhs.begin, rhs.end});
                node->operands.push_back(std::move(lhs.node));
                lhs.node = std::move(node);
                lhs.chain_prec = top.prec;
            }
            push_op(*lhs.node, *top.op);
            lhs.node->operands.push_back(std::move(rhs.node));
            lhs.node->span.end = lhs.end = rhs.end;
            values.push_back(std::move(lhs));
        };
        auto push_operand = [&](const x3ast::Operand& o, const x3ast::OpToken* before) {
            // `a < not b` would group as `(a < not) b`: a low prefix after an operator that binds
            // tighter than it needs parentheses.
            if (!o.nots.empty() && before != nullptr && precedence(*before) > precedence(o.nots.front())) {
                const SourceSpan s = span(o.nots.front());
                fail(st_, pointer(s.begin), pointer(s.end),
                     fmt::format("expected an operand after '{}' (put '{} ...' in parentheses)",
                                 x3ast::spelling(before->tok), x3ast::spelling(o.nots.front().tok)));
            }
            for (const x3ast::OpToken& n : o.nots) {
                if (depth + open_nots + 1 > kMaxNesting) too_deep(span(n));
                ops.push_back({precedence(n), &n});
                ++open_nots;
            }
            const SourceSpan extent = span(o.unary);
            values.push_back({convert(o.unary, depth + open_nots), extent.begin, extent.end, 0});
        };

        push_operand(b.first, nullptr);
        for (const auto& link : b.rest) {
            const int prec = precedence(link.op);
            while (!ops.empty() && ops.back().prec >= prec) reduce();
            ops.push_back({prec, &link.op});
            push_operand(link.operand, &link.op);
        }
        while (!ops.empty()) reduce();
        return std::move(values.back().node);
    }

    ExprPtr convert(const x3ast::Unary& u, int depth) {
        const std::uint32_t end = span(u).end;
        return prefixed(u.prefix, end, depth, [&](int d) { return convert(u.operand, d); });
    }

    // p0 ** p1 ** ... is right-assoc; an operand carrying unary operators applies them to the
    // rest of the chain: a ** -b ** c is a ** (-(b ** c)). Each run without unary operators
    // becomes one flat Chain.
    ExprPtr convert(const x3ast::Power& p, int depth) {
        if (p.rest.empty()) return convert(p.first, depth);
        const std::size_t n = p.rest.size();
        const SourceSpan whole = span(p);
        std::vector<ExprPtr> prims;
        prims.reserve(n + 1);
        std::vector<std::size_t> starts{0};  // operand indices where a run begins
        int d = depth;
        prims.push_back(convert(p.first, d));
        for (std::size_t i = 1; i <= n; ++i) {
            const x3ast::PowerOperand& op = p.rest[i - 1].operand;
            if (!op.prefix.empty()) {
                starts.push_back(i);
                const auto k = static_cast<int>(op.prefix.size());
                if (d + k > kMaxNesting) too_deep(span(op.prefix[static_cast<std::size_t>(kMaxNesting - d)]));
                d += k;
            }
            prims.push_back(convert(op.base, d));
        }
        ExprPtr acc;
        for (std::size_t s = starts.size(); s-- > 0;) {
            const std::size_t start = starts[s];
            const std::size_t stop = s + 1 < starts.size() ? starts[s + 1] : n + 1;  // [start, stop)
            ExprPtr node;
            if (stop - start == 1 && !acc) {
                node = std::move(prims[start]);
            } else {
                std::uint32_t begin = whole.begin;
                if (start > 0) {
                    const auto& prefix = p.rest[start - 1].operand.prefix;
                    begin = offset(grammar::skip_blanks(pointer(span(prefix.back()).end), st_.text_end, true));
                }
                node = make(ExprKind::Chain, {begin, whole.end});
                for (std::size_t i = start; i < stop; ++i) {
                    if (i > start) push_op(*node, p.rest[i - 1].op);
                    node->operands.push_back(std::move(prims[i]));
                }
                if (acc) {
                    push_op(*node, p.rest[stop - 1].op);
                    node->operands.push_back(std::move(acc));
                }
            }
            if (start > 0) {
                node = wrap_unary(p.rest[start - 1].operand.prefix, whole.end, std::move(node));
            }
            acc = std::move(node);
        }
        return acc;
    }

    // atom[...][...].real: each subscript or attribute is one nesting level around what it
    // applies to. Its span starts where the primary does, so that `(a * 2)[1:]` covers its
    // parentheses (the atom's own span, a group's content, does not).
    ExprPtr convert(const x3ast::Primary& p, int depth) {
        const auto k = static_cast<int>(p.subscripts.size());
        if (depth + k > kMaxNesting) {
            const x3ast::Subscript& at = p.subscripts[static_cast<std::size_t>(kMaxNesting - depth)];
            too_deep(at.attribute.empty() ? span(at.open) : span(at));
        }
        ExprPtr acc = convert(p.atom, depth + k);
        const std::uint32_t begin = std::min(span(p).begin, acc->span.begin);
        for (std::size_t j = 0; j < p.subscripts.size(); ++j) {
            const x3ast::Subscript& sub = p.subscripts[j];
            acc = sub.attribute.empty() ? subscript(std::move(acc), sub, depth + k - static_cast<int>(j))
                                        : attribute(std::move(acc), sub, begin);
            acc->span.begin = begin;
        }
        return acc;
    }

    ExprPtr convert(const x3ast::Atom& p, int depth) {
        struct Visitor {
            using result_type = ExprPtr;
            Converter& self;
            int depth;
            ExprPtr operator()(const x3ast::Literal& l) const { return self.literal(l); }
            ExprPtr operator()(const x3ast::NameOrCall& c) const { return self.name_or_call(c, depth); }
            ExprPtr operator()(const x3::forward_ast<x3ast::Group>& g) const {
                if (depth + 1 > kMaxNesting) self.too_deep(self.span(g.get().open));
                const x3ast::GroupBody& b = g.get().body;
                if (b.items.size() == 1 && !b.trailing_comma) return self.convert(b.items[0], depth + 1);
                ExprPtr t = self.make(ExprKind::Tuple, self.span(g.get()));
                for (const x3ast::Ternary& m : b.items) t->operands.push_back(self.convert(m, depth + 1));
                return t;
            }
        };
        return boost::apply_visitor(Visitor{*this, depth}, p);
    }

private:
    // base.real, base.imag: the calls real(base), imag(base) (NumPy's attributes, which numexpr
    // takes too); any other attribute is an error under its name.
    // `begin`: where the primary starts (a group's '(' included, which its node's span is not).
    ExprPtr attribute(ExprPtr base, const x3ast::Subscript& sub, std::uint32_t begin) {
        const SourceSpan whole = span(sub);
        const SourceSpan name{whole.end - static_cast<std::uint32_t>(sub.attribute.size()), whole.end};
        if (sub.attribute != "real" && sub.attribute != "imag") {
            fail(st_, pointer(name.begin), pointer(name.end),
                 fmt::format("unknown attribute '.{}' (the attributes are .real and .imag)", sub.attribute));
        }
        ExprPtr node = make(ExprKind::Call, {std::min(begin, base->span.begin), whole.end});
        node->text.assign(sub.attribute);
        node->name_span = name;
        node->operands.push_back(std::move(base));
        return node;
    }

    // base[items]: the parts of the items become operands 1.. of the Subscript node.
    ExprPtr subscript(ExprPtr base, const x3ast::Subscript& sub, int depth) {
        ExprPtr node = make(ExprKind::Subscript, {base->span.begin, span(sub).end});
        node->operands.push_back(std::move(base));
        auto part = [&](const std::vector<x3ast::Binary>& v) -> std::int32_t {
            if (v.empty()) return -1;
            node->operands.push_back(convert(v.front(), depth));
            return static_cast<std::int32_t>(node->operands.size() - 1);
        };
        for (std::size_t i = 0; i < sub.items.size(); ++i) {
            const x3ast::IndexItem& it = sub.items[i];
            IndexItem item;
            item.span = span(it);
            const bool empty = it.ellipsis.empty() && it.first.empty() && it.rest.empty();
            if (empty) {
                if (i > 0 && i + 1 == sub.items.size()) continue;  // a trailing comma: a[1,]
                const iterator_type at = grammar::skip_blanks(pointer(item.span.begin), st_.text_end, true);
                fail(st_, at, grammar::token_end(at, st_.text_end), "expected an index");
            }
            if (!it.ellipsis.empty()) {
                if (!it.first.empty() || !it.rest.empty()) {
                    const SourceSpan e = span(it.ellipsis.front());
                    fail(st_, pointer(e.begin), pointer(item.span.end), "'...' stands alone in an index");
                }
                item.kind = IndexItem::Kind::Ellipsis;
            } else if (it.rest.empty()) {
                item.kind = IndexItem::Kind::Index;
                item.start = part(it.first);
            } else {
                if (it.rest.size() > 2) {
                    const SourceSpan c = span(it.rest[2].colon);
                    fail(st_, pointer(c.begin), pointer(c.end), "a slice has at most two ':' (start:stop:step)");
                }
                item.kind = IndexItem::Kind::Slice;
                item.start = part(it.first);
                item.stop = part(it.rest[0].value);
                if (it.rest.size() == 2) item.step = part(it.rest[1].value);
            }
            node->index.push_back(item);
        }
        return node;
    }

    ExprPtr literal(const x3ast::Literal& l) {
        ExprPtr node = make(l.kind, span(l));
        if (l.kind == ExprKind::Str || l.kind == ExprKind::Bytes) node->text = l.value;
        else node->text.assign(l.text);
        node->int_value = l.int_value;
        node->int_big = l.int_big;
        node->float_value = l.float_value;
        node->bool_value = l.bool_value;
        return node;
    }

    ExprPtr name_or_call(const x3ast::NameOrCall& c, int depth) {
        if (!c.args) {
            ExprPtr node = make(ExprKind::Name, span(c.name));
            node->text.assign(c.name.name);
            return node;
        }
        ExprPtr node = make(ExprKind::Call, span(c));
        node->text.assign(c.name.name);
        node->name_span = span(c.name);
        if (depth + 1 > kMaxNesting) too_deep(node->name_span);
        struct Visitor {
            using result_type = void;
            Converter& self;
            Expr& call;
            int depth;
            void operator()(const x3ast::KeywordArg& k) const {
                for (const Keyword& prev : call.keywords) {
                    if (prev.name == k.name.name) {
                        fail(self.st_, self.pointer(self.span(k.name).begin), self.pointer(self.span(k.name).end),
                             fmt::format("keyword argument '{}' repeated", k.name.name));
                    }
                }
                call.keywords.push_back(
                    Keyword{std::string(k.name.name), self.span(k.name), self.convert(k.value, depth)});
            }
            void operator()(const x3ast::Ternary& t) const {
                if (!call.keywords.empty()) {
                    const SourceSpan s = self.span(t);
                    fail(self.st_, self.pointer(s.begin), self.pointer(s.end),
                         "positional argument follows keyword argument");
                }
                call.operands.push_back(self.convert(t, depth));
            }
        };
        node->operands.reserve(c.args->size());
        for (const x3ast::Argument& a : *c.args) boost::apply_visitor(Visitor{*this, *node, depth + 1}, a);
        return node;
    }

    // op1 op2 ... operand -> Unary(op1, Unary(op2, ... operand)); each operator is one level.
    template <typename Inner>
    ExprPtr prefixed(const std::vector<x3ast::OpToken>& prefix, std::uint32_t end, int depth, Inner inner) {
        const auto k = static_cast<int>(prefix.size());
        if (depth + k > kMaxNesting) too_deep(span(prefix[static_cast<std::size_t>(kMaxNesting - depth)]));
        return wrap_unary(prefix, end, inner(depth + k));
    }

    ExprPtr wrap_unary(const std::vector<x3ast::OpToken>& prefix, std::uint32_t end, ExprPtr operand) {
        for (std::size_t j = prefix.size(); j-- > 0;) {
            const SourceSpan op = span(prefix[j]);
            ExprPtr node = make(ExprKind::Unary, {op.begin, end});
            node->ops.push_back(prefix[j].op);
            node->op_spans.push_back(op);
            node->operands.push_back(std::move(operand));
            operand = std::move(node);
        }
        return operand;
    }

    void push_op(Expr& node, const x3ast::OpToken& op) {
        node.ops.push_back(op.op);
        node.op_spans.push_back(span(op));
    }

    [[noreturn]] void too_deep(SourceSpan at) const {
        fail(st_, pointer(at.begin), pointer(at.end), nesting_message());
    }

    static ExprPtr make(ExprKind kind, SourceSpan s) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->span = s;
        return e;
    }

    SourceSpan span(const x3::position_tagged& node) const {
        auto range = st_.positions.position_of(node);
        return {offset(range.begin()), offset(range.end())};
    }
    std::uint32_t offset(iterator_type p) const { return static_cast<std::uint32_t>(p - st_.text_begin); }
    iterator_type pointer(std::uint32_t off) const { return st_.text_begin + off; }

    const ParseState& st_;
};

// ---- statements ----------------------------------------------------------------------------

[[noreturn]] void reject_statement_end(const ParseState& st, iterator_type at, const Expr& value, bool has_target) {
    const char c = *at;
    const char next = at + 1 != st.text_end ? at[1] : '\0';
    if (c == '=' && next != '=') {
        if (has_target) fail(st, at, at + 1, "only one '=' is allowed in a statement");
        const iterator_type b = st.text_begin + value.span.begin;
        const iterator_type e = st.text_begin + value.span.end;
        if (value.kind == ExprKind::Int || value.kind == ExprKind::Float || value.kind == ExprKind::Imag ||
            value.kind == ExprKind::Bool || value.kind == ExprKind::Str || value.kind == ExprKind::Bytes) {
            fail(st, b, e, "cannot assign to a literal");
        }
        if (value.kind == ExprKind::Subscript)
            fail(st, b, e,
                 "cannot assign to a subscript: jitexpr writes whole arrays (the left side of '=' must be a name)");
        fail(st, b, e, "cannot assign to an expression (the left side of '=' must be a name)");
    }
    if (c == ')') fail(st, at, at + 1, "unmatched ')'");
    if (c == ':') fail(st, at, at + 1, "unexpected ':' (a conditional is written 'condition ? x : y')");
    grammar::report_expectation(st, at, "an operator or end of statement");
}

}  // namespace

bool is_variable_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxIdentifier || !grammar::is_ident_start(name[0])) return false;
    for (char c : name)
        if (!grammar::is_ident_char(c)) return false;
    return !grammar::is_keyword(name);
}

Expr::~Expr() { tree::take_apart(*this); }

namespace {
Module parse_here(std::string_view text);
}  // namespace

// The grammar recurses once per nesting level: on a stack of known size, whatever the caller's.
Module parse(std::string_view text) {
    return core::with_stack(core::kFrontStackBytes, [&] { return parse_here(text); });
}

namespace {
Module parse_here(std::string_view text) {
    if (text.size() > kMaxTextBytes) {
        throw ParseError(
            fmt::format("program too large ({} bytes; at most {} are allowed)", text.size(), kMaxTextBytes),
            std::string_view{}, SourceSpan{});
    }
    const iterator_type first = text.data();
    const iterator_type last = text.data() + text.size();
    ParseState st(first, last);
    // A UTF-8 byte-order mark (editors on Windows write one) starts the text, not a statement:
    // it is skipped, and spans still count from the text's first byte.
    const std::size_t bom = has_bom(text) ? kBom.size() : 0;
    check_bytes(st, bom);

    const grammar::skipper_parser skipper{{}, &st};
    auto const skipper_context = x3::make_context<x3::skipper_tag>(skipper);
    auto const context = x3::make_context<grammar::state_tag>(st, skipper_context);
    static_assert(std::is_same_v<std::remove_const_t<decltype(context)>, grammar::context_type>);

    Module module;
    Converter converter(st);
    iterator_type p = first + bom;
    for (;;) {
        // Blank statements, separators and comments.
        for (;;) {
            p = grammar::skip_blanks(p, last, true);
            if (p != last && *p == ';') {
                ++p;
                continue;
            }
            break;
        }
        if (p == last) break;

        Statement stmt;
        const iterator_type begin = p;
        // `name =` (but not `name ==`) makes an assignment; `name, name, ... =` one of several
        // targets (a comma after a leading name can start nothing else).
        const iterator_type word_end = grammar::scan_word(p, last);
        if (word_end != p) {
            const iterator_type eq = grammar::skip_blanks(word_end, last, false);
            const bool several = eq != last && *eq == ',';
            if (several || (eq != last && *eq == '=' && (eq + 1 == last || eq[1] != '='))) {
                auto check_target = [&](iterator_type b, iterator_type e) {
                    std::string_view word(b, static_cast<std::size_t>(e - b));
                    if (word == "True" || word == "False") fail(st, b, e, "cannot assign to a literal");
                    if (grammar::is_keyword(word)) fail(st, b, e, fmt::format("cannot assign to keyword '{}'", word));
                    if (word.size() > kMaxIdentifier) {
                        fail(st, b, e,
                             fmt::format("identifier too long ({} characters; at most {} are allowed)", word.size(),
                                         kMaxIdentifier));
                    }
                    return Target{std::string(word),
                                  {static_cast<std::uint32_t>(b - first), static_cast<std::uint32_t>(e - first)}};
                };
                Target t0 = check_target(p, word_end);
                stmt.target = std::move(t0.name);
                stmt.target_span = t0.span;
                iterator_type q = eq;
                while (q != last && *q == ',') {
                    const iterator_type nb = grammar::skip_blanks(q + 1, last, false);
                    const iterator_type ne = grammar::scan_word(nb, last);
                    if (ne == nb) {
                        if (nb == last || *nb == '\n' || *nb == ';' || *nb == '=')
                            fail(st, q, q + 1, "a name must follow ',' in the targets of an assignment");
                        fail(st, nb, nb + 1, "the targets of an assignment must be names");
                    }
                    if (stmt.more_targets.size() + 2 > kMaxTargets)
                        fail(st, nb, ne, fmt::format("too many targets (at most {} are allowed)", kMaxTargets));
                    stmt.more_targets.push_back(check_target(nb, ne));
                    q = grammar::skip_blanks(ne, last, false);
                }
                if (q == last || *q != '=' || (q + 1 != last && q[1] == '=')) {
                    const iterator_type tb = first + stmt.target_span.begin;
                    fail(st, tb, first + stmt.more_targets.back().span.end,
                         "several names must be assigned the results of a function, as in 'm, e = frexp(x)' "
                         "(an expression cannot list values)");
                }
                p = q + 1;
            }
        }

        const iterator_type expr_begin = grammar::skip_blanks(p, last, false);
        if (!grammar::starts_expression(expr_begin, last)) grammar::report_expectation(st, p, "an expression");
        x3ast::Ternary ast;
        iterator_type it = p;
        if (!grammar::expression().parse(it, last, context, x3::unused, ast)) {
            grammar::report_expectation(st, p, "an expression");
        }
        stmt.value = converter.convert(ast, 0);

        const iterator_type end = grammar::skip_blanks(it, last, false);
        if (end != last && *end != '\n' && *end != ';')
            reject_statement_end(st, end, *stmt.value, !stmt.target.empty());
        stmt.span = {static_cast<std::uint32_t>(begin - first), stmt.value->span.end};
        module.statements.push_back(std::move(stmt));
        p = end;
    }
    return module;
}
}  // namespace

}  // namespace jit::syntax

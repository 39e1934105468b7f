// jitexpr — the syntax tree the parser produces and lowering consumes. Plain C++: no Boost types
// leave dsl/parse*.cpp. Every node carries the byte span of its text.
//
// Precedence, lowest first (Python's, plus a C-style ternary; the Prec column of dsl/ops.def):
//   cond ? x : y      (right-assoc)
//   or
//   and
//   not x
//   < <= == != >= >   (chained: a < b < c means (a < b) and (b < c))
//   |
//   ^
//   &
//   << >>
//   + -
//   * / // %
//   unary - + ~
//   **                (right-assoc; binds tighter than a unary on its left: -a**2 is -(a**2),
//                      and its right operand may carry a unary: a**-b)
//   postfix: primary[index, ...]   (binds tightest: -a[0] is -(a[0]), a[0]**2 is (a[0])**2)
//   primary: number, string ('s', "s", b's', r's', '''s'''), name, True/False,
//            call f(args, axis=k), ( expr ), tuple ( a, b ) / ( a, )
// An index is an expression, a slice start:stop:step (each part optional), ... or None.
// Statements: [name [, name]* =] expr, separated by ';' or newlines; '#' starts a comment to end
// of line. Several names take the results of a function of several (`m, e = frexp(x)`).
#pragma once

#include "dsl/ops.hpp"

#include <jit/error.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jit::syntax {

enum class ExprKind : std::uint8_t {
    Int,        // integer literal: int_value (decimal or 0x hex); text is the literal
    Float,      // float literal: float_value
    Bool,       // True / False: bool_value
    Name,       // identifier: text
    Chain,      // operands[0] ops[0] operands[1] ops[1] ... operands[n], binary operators of one
                // level: left-assoc except Pow (right-assoc) and comparisons (chained)
    Unary,      // ops[0] operands[0]; ops[0] is a prefix operator (Neg, Pos, Invert, Not)
    Ternary,    // operands[0] ? operands[1] : operands[2]
    Call,       // text(operands...) with keyword arguments in keywords
    Imag,       // imaginary literal (2.5j, 3J): float_value is the imaginary part; text as written
    Subscript,  // operands[0][index...]: each item of `index` names its parts by position in
                // operands (so a walk over operands sees every sub-expression)
    Tuple,      // ( operands... ) with a comma: only a reduction's axis takes one (axis=(0, 2))
    Str,        // string literal 'abc' / "abc" (adjacent ones joined): text is its value, UTF-8
    Bytes,      // bytes literal b'abc': text is its value, one char per byte
};

// One item between the brackets of a subscript.
struct IndexItem {
    enum class Kind : std::uint8_t {
        Index,     // a single expression: operands[start]
        Slice,     // start:stop:step, each part an operand index or -1 when omitted
        Ellipsis,  // ...
    };
    Kind kind = Kind::Index;
    SourceSpan span;
    std::int32_t start = -1, stop = -1, step = -1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
    std::string name;
    SourceSpan name_span;
    ExprPtr value;
};

struct Expr {
    ExprKind kind = ExprKind::Int;
    SourceSpan span;       // the whole expression
    std::string text;      // Name/Call: identifier; Int/Float: literal as written
    SourceSpan name_span;  // Call: the function name
    std::uint64_t int_value = 0;
    bool int_big = false;  // Int: past uint64 (int_value is 0; the value is in text)
    double float_value = 0.0;
    bool bool_value = false;
    std::vector<ExprPtr> operands;
    std::vector<ir::Op> ops;           // Chain/Unary: the operators (ir::spelling gives the token)
    std::vector<SourceSpan> op_spans;  // span of each token in ops
    std::vector<Keyword> keywords;     // Call only
    std::vector<IndexItem> index;      // Subscript only

    Expr() = default;
    Expr(Expr&&) noexcept = default;
    Expr& operator=(Expr&&) noexcept = default;
    // Takes the tree apart without recursing: a tree kMaxNesting levels deep is destroyed in a
    // few frames, on whatever thread drops it (a cache eviction, a host's small stack).
    ~Expr();
};

struct Target {
    std::string name;
    SourceSpan span;
};

struct Statement {
    std::string target;  // empty: a bare expression; else the first (or only) target
    SourceSpan target_span;
    std::vector<Target> more_targets;  // `m, e = frexp(x)`: the targets after the first, in order
    ExprPtr value;
    SourceSpan span;  // the whole statement
};

struct Module {
    std::vector<Statement> statements;
};

// Limits that keep parsing, lowering and destruction bounded (ParseError past them).
inline constexpr int kMaxNesting = 200;  // parentheses/calls/unary nesting depth
inline constexpr std::size_t kMaxTextBytes = 1 << 20;
inline constexpr std::size_t kMaxIdentifier = 256;
inline constexpr std::size_t kMaxIntegerDigits = 2000;
inline constexpr std::size_t kMaxTargets =
    16;  // names in one assignment: a, b = f(x)  // an integer literal's digits (decimal or hex)

// A UTF-8 byte-order mark: parse() skips one at the start of the text.
inline constexpr std::string_view kBom = "\xEF\xBB\xBF";
inline bool has_bom(std::string_view text) { return text.substr(0, kBom.size()) == kBom; }

// Parses a whole program. Throws jit::ParseError (with a caret) on any syntax error.
Module parse(std::string_view text);

// Whether a program can read and assign a variable of this name: an identifier of at most
// kMaxIdentifier bytes that is not a keyword (and, or, not, True, False).
bool is_variable_name(std::string_view name);

}  // namespace jit::syntax

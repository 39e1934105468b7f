// jitexpr — the language as data, for tools built on it (the CLI's completion and array
// constructors, bindings, documentation): its functions and names, and the syntax tree of a text.
#pragma once

#include <jit/error.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit {

struct FunctionInfo {
    // Result: one result of a function of several (`m, e = frexp(x)`); the function's entries
    // are adjacent, one per result in the order of the targets, and share its names. Scan: a
    // running fold along an axis (cumsum).
    enum class Kind : std::uint8_t { Operator, Function, Reduction, Result, Scan };
    Kind kind = Kind::Function;
    std::string id;                  // "Arcsin"
    std::vector<std::string> names;  // "arcsin", "asin"; operators: their ufunc names ("add"), if any
    std::string token;               // operators: "+"; otherwise empty
    int arity = 0;
    std::string doc;
};
// Every operator, function, reduction and scan of the language, in the op table's order.
const std::vector<FunctionInfo>& functions();
// Every name the language knows (functions, dtype names used as casts, constants), sorted.
std::vector<std::string> builtin_names();
// The longest identifier the language accepts, in bytes.
inline constexpr std::size_t kMaxIdentifierBytes = 256;
// Whether a program can read and assign a variable of this name: an identifier of at most
// kMaxIdentifierBytes that is not a keyword (and, or, not, True, False).
bool is_variable_name(std::string_view name);

// A literal-only expression as the language folds it: Python's exact arithmetic on literals and
// the named constants before NumPy's rules see the number (2**8 is 256, 7 // -2 is -4, 2**-1 is
// 0.5; docs/language.md, "Literals").
struct LiteralNumber {
    enum class Kind : std::uint8_t { Bool, Int, Float, Complex };
    Kind kind = Kind::Int;
    bool b = false;          // Bool
    bool fits_int64 = true;  // Int: the value is `i`; else it fits uint64 (`u`) or neither (`big`)
    std::int64_t i = 0;
    std::uint64_t u = 0;
    bool big = false;  // Int past uint64: `digits` holds it
    std::string digits;
    double f = 0.0, im = 0.0;  // Float (f), Complex (f + im j)
};
// Folds `text`, one expression, when it is made only of literals, named constants and Python
// operators; nullopt when it is anything else (a name, a function call). `shadowed(name)` says
// whether a binding shadows a named constant (then the name is a variable and nothing folds).
// Throws ParseError, and ValueError or TypeError (division by zero, an integer past the fold's
// limit) with a caret into `text`.
std::optional<LiteralNumber> fold_literal(std::string_view text,
                                          const std::function<bool(std::string_view)>& shadowed = {});

// The syntax tree of a text: plain data, with byte spans into the text. Operators are spelled
// as written ("+", "//", "and").
namespace parsed {

enum class ExprKind : std::uint8_t {
    Int,        // integer literal: int_value; text is the literal
    Float,      // float literal: float_value
    Bool,       // True / False: bool_value
    Name,       // identifier: text
    Chain,      // operands[0] ops[0] operands[1] ... operands[n] (binary operators of one level)
    Unary,      // ops[0] operands[0]: "-", "+", "~" or "not"
    Ternary,    // operands[0] ? operands[1] : operands[2]
    Call,       // text(operands...) with keyword arguments
    Imag,       // imaginary literal: float_value is the imaginary part
    Subscript,  // operands[0][index...]: the parts of each index item are operands
    Tuple,      // ( operands... ) with a comma: a reduction's axis, axis=(0, 2)
    Str,        // string literal 'abc' (adjacent ones joined): text is its value in UTF-8
    Bytes,      // bytes literal b'abc': text is its value, one char per byte
};

// One item between the brackets of a Subscript.
struct IndexItem {
    enum class Kind : std::uint8_t { Index, Slice, Ellipsis };
    Kind kind = Kind::Index;
    SourceSpan span;
    // Operand positions: Index uses start; Slice start:stop:step, -1 where omitted.
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
    double float_value = 0.0;
    bool bool_value = false;
    std::vector<ExprPtr> operands;
    std::vector<std::string> ops;      // Chain/Unary: operator spellings
    std::vector<SourceSpan> op_spans;  // span of each operator
    std::vector<Keyword> keywords;     // Call only
    std::vector<IndexItem> index;      // Subscript only

    Expr() = default;
    Expr(Expr&&) noexcept = default;
    Expr& operator=(Expr&&) noexcept = default;
    // Takes the tree apart without recursing: destroying the deepest tree parse() accepts
    // needs a few frames of stack on any thread.
    ~Expr();
};

struct Target {
    std::string name;
    SourceSpan span;
};

struct Statement {
    std::string target;  // empty: a bare expression; else the first (or only) target
    SourceSpan target_span;
    std::vector<Target> more_targets;  // `m, e = frexp(x)`: the targets after the first
    ExprPtr value;
    SourceSpan span;  // the whole statement
};

struct Module {
    std::vector<Statement> statements;
};

// Parses a whole program. Throws ParseError (with a caret) on any syntax error. Runs on a
// stack of its own when the caller's is short (see with_front_stack).
Module parse(std::string_view text);

}  // namespace parsed

// Runs fn on a stack deep enough for a recursive walk of any tree parse() accepts (one level of
// recursion per level of nesting, up to 200 levels): right here when this thread has that much
// stack left, otherwise on a thread of jitexpr's own with such a stack, waiting for it. What fn
// throws comes back to the caller. The runtime runs its own walks so; a tool that walks a tree
// recursively (the CLI's constructors) should too, so that a host thread with a small stack (a
// Python thread after threading.stack_size(), `ulimit -s 64`) cannot overflow. Throws
// OutOfMemoryError when the thread cannot be made.
void with_front_stack(const std::function<void()>& fn);

}  // namespace jit

// jitexpr — a program checked without running or compiling anything.
//
// For callers that must know what a program gives before any data exists: a graph builder
// (jitexpr.dask) sets a result's dtype and shape when the graph is made, and splits a program
// at its reductions. check() parses and checks exactly as Runtime::run does (the same parser and
// checker, the same errors with a caret), from dtypes and shapes alone: no kernel is emitted,
// compiled or run, no memory is allocated for arrays.
//
//   jit::Specs s{{"a", jit::ValueSpec::array(jit::DType::Float32, {1000, 3})},
//                {"x", jit::ValueSpec::host_scalar(jit::DType::Float64)}};
//   jit::CheckedProgram p = jit::check("c = a * x; s = sum(c, axis=0)", s);
//   // p.assigned: c float32 [1000, 3], s float32 [3]; p.result: s
#pragma once

#include <jit/array.hpp>
#include <jit/dtype.hpp>
#include <jit/error.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jit {

// What a name is bound to, for check(): an array of a dtype and shape, or a host scalar, which is
// weakly typed as in jit::Runtime (Bool, Int64, Float64 or Complex128: a Python bool, int, float
// or complex).
struct ValueSpec {
    bool scalar = false;
    DType dtype = DType::Float64;
    Shape shape;  // arrays only; C-contiguous is assumed (layout never changes a dtype or shape)
    // String arrays: the width (S, U: bytes per element) or offset width (Utf8: 4 or 8), which
    // the row sizes of CheckedProgram::rows count; 0 for the other dtypes.
    std::size_t itemsize = 0;

    static ValueSpec array(DType d, Shape s) { return ValueSpec{false, d, std::move(s)}; }
    static ValueSpec strings(DType d, std::size_t itemsize, Shape s) {
        return ValueSpec{false, d, std::move(s), itemsize};
    }
    static ValueSpec host_scalar(DType d) { return ValueSpec{true, d, {}}; }
};
using Specs = std::map<std::string, ValueSpec, std::less<>>;

struct CheckedValue {
    std::string name;  // empty for the value of a last statement that assigns nothing
    DType dtype = DType::Float64;
    Shape shape;
    // A boolean-mask selection (b[a > 0]): shape[0] is the most it can hold, its length is the
    // data's (known only when the program runs).
    bool length_from_data = false;
};

// How the program splits into row blocks along its iteration shape's axis 0: the analysis that
// streaming host data through a GPU goes by (dsl/rows), for a graph builder that splits work the
// same way. Its reasons are worded as streaming's (they are what explain prints).
struct CheckedRows {
    enum class How : std::uint8_t {
        Rows,     // an input whose rows go with each block; an output computed block by block
        Whole,    // an input every block reads whole (broadcast along the rows)
        Combine,  // an output reduced over every element: one partial per block, then combined
        Refused,  // an output no block computes alone (why says why)
    };
    struct Input {
        std::string name;
        How how = How::Rows;
        std::size_t row_bytes = 0;  // Rows: bytes of one row
    };
    struct Output {
        std::string name;  // empty for the value of a last statement that assigns nothing
        How how = How::Rows;
        std::string reduction;  // Combine: the reduction ("sum", "mean", ...) its partials are combined with
        std::string why;        // Refused: a sentence
    };
    bool splits = false;  // every input and output is one of the above but Refused
    std::string why_not;  // !splits: the first reason, a sentence
    std::vector<Input> inputs;
    std::vector<Output> outputs;
};

struct CheckedProgram {
    std::vector<std::string> parameters;  // names read before assigned, in order (jit::parameters)
    std::vector<CheckedValue> assigned;   // every assigned name, its last value, in order of first assignment
    std::optional<CheckedValue> result;   // the last statement's value; none for an empty program
    bool reduces = false;                 // whether any statement reduces (sum, mean, ...)
    bool scans = false;                   // whether any statement has a scan (cumsum, cumprod, ...)
    CheckedRows rows;                     // how it splits into row blocks (an empty program: not at all)
};

// Parses and checks `text` with the names bound as `names` says. Throws what Runtime::run
// would: ParseError, NameError (an unbound name, with a suggestion), TypeError, ShapeError,
// ValueError, each with the caret. Values that only the data decides (an integer scalar's sign
// as an exponent) are not checked here.
CheckedProgram check(std::string_view text, const Specs& names);

// Where things are in the text (byte offsets), from the syntax alone.
struct OutlineStatement {
    std::string target;                     // empty: a bare expression; else the first (or only) target
    SourceSpan span;                        // the whole statement
    SourceSpan target_span;                 // the target name
    SourceSpan value_span;                  // the expression
    std::vector<std::string> more_targets;  // `m, e = frexp(x)`: the targets after the first
};
struct OutlineReduction {
    std::string function;  // the first spelling in the op table: "sum", "min", "var", "argmin", ...
    int statement = 0;     // index into Outline::statements
    SourceSpan span;       // the whole call
    SourceSpan operand;    // the reduced expression
    // The arguments after the operand, each ("axis", span of its value): keywords as written, and
    // the positional ones under their names (sum(x, 1) lists ("axis", span of 1)).
    std::vector<std::pair<std::string, SourceSpan>> keywords;
};
// One item between a subscript's brackets, its bounds folded as the checker folds them (Python's
// arithmetic on literals; an integer past int64 clamped to +-(2^63 - 1), as out of every axis).
struct OutlineIndexItem {
    enum class Kind : std::uint8_t {
        Integer,   // a constant integer: `value`
        Slice,     // start:stop:step: each part folded, none where omitted (or None)
        Ellipsis,  // ...
        NewAxis,   // None
        Array,     // any other expression (a boolean mask, or what the checker refuses as an index)
    };
    Kind kind = Kind::Integer;
    SourceSpan span;
    std::int64_t value = 0;
    std::optional<std::int64_t> start, stop, step;
    bool constant = true;  // Slice: false where a given part is not a constant integer
};
struct OutlineSubscript {
    int statement = 0;  // index into Outline::statements
    SourceSpan span;    // the whole subscript: a[1:, 0]
    SourceSpan base;    // the indexed expression: a
    SourceSpan index;   // the brackets and what is between them: [1:, 0]
    std::vector<OutlineIndexItem> items;
};
struct Outline {
    std::vector<OutlineStatement> statements;
    std::vector<OutlineReduction> reductions;  // in text order; a reduction inside another's operand comes after it
    std::vector<OutlineSubscript> subscripts;  // in text order; one inside another's base or index comes after it
};

// Parses `text` (ParseError with the caret) and lists its statements, reduction calls and
// subscripts.
Outline outline(std::string_view text);

}  // namespace jit

// jitexpr — how a program runs over row blocks on several devices (jit::ShardedRuntime): the
// shards, and what each statement gives — split as its inputs are, one whole value combined
// from the shards' partials, or replicated — decided before any device runs anything.
//
// Pure functions (no driver, no device), as chunks.hpp is for streaming: run::decide
// (decide.hpp) returns their answer as Way::Sharded, run::sharded (sharded.cpp) runs it, and
// tests check the decisions on any machine. What the checker, the syntax and the row split say
// of each statement (its values' dtypes and shapes over the whole arrays and over each shard,
// the names it reads, its reductions and subscripts, whether its own nodes select by the data
// or scan) is the caller's to give (Request): the API layer asks jit::check and jit::outline,
// which this layer cannot name, and dsl::split_rows of the program checked over the whole
// arrays (dsl/rows.hpp: RowSplit::own, read off the node kinds).
//
// A statement's value is
//   * Split when it is computed row by row from split inputs (its axis 0 is theirs; a
//     reduction over other axes keeps the rows);
//   * Whole when the statement's whole value is a reduction over the split rows that the CPU
//     kernel table combines (cpu::combine: sum, prod, min, max, any, all, mean);
//   * Replicated when it reads no split data.
// Anything else is refused with a reason (an ArgumentError): a reduction inside a larger
// expression, a statement reading a combined value, a slice or a scan over split rows, ...
#pragma once

#include "dsl/ops.hpp"

#include <jit/array.hpp>
#include <jit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace jit::run::shards {

// A name bound to pieces over devices (jit::Sharded's kinds).
struct Input {
    enum class Kind : std::uint8_t { Split, Replicated, Whole };
    std::string name;
    Kind kind = Kind::Split;
    std::span<const Array> parts;  // per shard (Whole: the one array)
};

// The shards of the inputs: how many, on which devices, and the row counts of the split ones.
struct Layout {
    std::size_t k = 0;
    std::vector<int> devices;        // per shard
    std::vector<std::int64_t> rows;  // per shard, of the split inputs
    std::int64_t total_rows = 0;
    std::set<std::string, std::less<>> split_names;
};

// The layout of `inputs` on `backend`, each shard on one of `devices` (the runtime's); an
// ArgumentError (or a DeviceMismatchError) for inputs that do not make one.
Layout layout(std::span<const Input> inputs, Backend backend, std::span<const int> devices);

// A value as the checker gives it.
struct Value {
    DType dtype = DType::Float32;
    Shape shape;
};

// What the checker and the syntax say of one statement of the program.
struct Statement {
    std::string target;              // empty: a bare value
    bool several_targets = false;    // m, e = frexp(x)
    std::string text;                // the statement, as written
    std::string value;               // its value's text
    std::vector<std::string> reads;  // the names its value reads
    bool slices = false;             // its value indexes or slices an array (a[1:], a[a > 0])
    bool scans = false;              // its value has a scan (cumsum, ...)
    struct Reduction {
        std::string function;      // the op table's spelling
        bool whole_value = false;  // the call is the statement's whole value
    };
    std::vector<Reduction> reductions;
    // Its value (the target's, or a bare value's) over the whole arrays and over each shard's
    // part of them; none where the checker reported none.
    std::optional<Value> whole;
    std::vector<std::optional<Value>> per_shard;
};

struct Request {
    Layout layout;
    std::vector<Statement> statements;  // in order
};

// What one statement gives.
struct StatementPlan {
    enum class Out : std::uint8_t { Split, Whole, Replicated };
    std::string name;           // empty: the last statement's bare value
    std::size_t statement = 0;  // its index in Request::statements
    Out out = Out::Split;
    ir::Op reduction = ir::Op::Sum;  // Whole: the reduction its partials are combined with
    Value whole;                     // Whole: the combined value's dtype and shape
};

struct Sharding {
    Layout layout;
    std::vector<StatementPlan> statements;  // the statements that give a value (a dropped bare value gives none)
    std::string result;                     // the name the last statement assigns (empty: a bare value)
};

// How the program of `r` runs over its shards; an ArgumentError saying why for a statement
// sharding does not take.
Sharding plan(const Request& r);

// The decision in words, as ShardedRuntime::explain prints it before a shard's own plan: the
// shards (rows and devices, named as `backend` names them) and what each statement gives.
std::string describe(const Sharding& s, const Request& r, Backend backend);

}  // namespace jit::run::shards

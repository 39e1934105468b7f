// jitexpr — the op table (dsl/ops.def) as C++: ir::Op and, for each op, what the table says of
// it, at compile time, so that the parser's token tables and the backends' kernel tables can be
// built from it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace jit::ir {

// Result: one result of a function of several (`m, e = frexp(x)`; dsl/ops.def). Scan: a running
// fold along an axis (cumsum).
enum class OpKind : std::uint8_t { Operator, Function, Reduction, Result, Scan };

enum class Rule : std::uint8_t {
    Arith,
    Subtract,
    TrueDiv,
    IntDiv,
    Power,
    Bitwise,
    Shift,
    Compare,
    Logical,
    Negate,
    Identity,
    Invert,
    FloatUnary,
    RealUnary,
    RoundUnary,
    AbsUnary,
    SignUnary,
    IntOkUnary,
    Predicate,
    PartUnary,
    FloatBinary,
    Fmod,
    MinMax,
    Where,
    Clip,
    OnesLike,
    SumProd,
    MinMaxReduce,
    MeanReduce,
    AnyAll,
    MakeComplex,
    FloatPower,
    IntegerBinary,
    Ldexp,
    BitCount,
    FrexpExponent,
    ArgFirst,
    VarReduce,
    ArgReduce,
    CountReduce,
    PtpReduce,
    MedianReduce,
    QuantileReduce,
    OrderStat,
    StrSearch,
    StrFind,
    StrLen
};

// What a reduction does with its accumulated value.
enum class Finish : std::uint8_t {
    Keep,           // the accumulator is the result
    DivideByCount,  // divided by the number of elements reduced, in the result's dtype (mean)
    Lowered,        // expanded by dsl/lower/ into other reductions and ops; never in a Program
    Select,         // no accumulator: the elements of given ranks of each row (OrderStat)
};

enum class Op : std::uint16_t {
#define JIT_OP(Id, ...) Id,
#include "dsl/ops.def"
#undef JIT_OP
};

struct OpInfo {
    Op op;
    std::string_view id;  // "Add"
    OpKind kind;
    int arity;
    Rule rule;
    std::string_view token;  // an operator's token ("+"), else ""
    int prec;                // an operator's binding strength (dsl/ops.def), else 0
    std::string_view names;  // "arcsin|asin" or ""
    Op accumulate;           // a reduction's or scan's accumulator (jx::red::<id of accumulate>); else op
    Finish finish;           // a reduction's last step (a scan: Keep or Lowered); else Keep
    std::string_view doc;
};

inline constexpr OpInfo kOpTable[] = {
#define JIT_OP(Id, Kind, Arity, RuleId, Token, Prec, Names, Accumulate, FinishId, Doc) \
    OpInfo{Op::Id, #Id, OpKind::Kind, Arity, Rule::RuleId, Token, Prec, Names, Op::Accumulate, Finish::FinishId, Doc},
#include "dsl/ops.def"
#undef JIT_OP
};
inline constexpr std::size_t kNumOps = std::size(kOpTable);

// The table, indexed by static_cast<size_t>(Op).
constexpr std::span<const OpInfo> op_table() { return kOpTable; }
constexpr const OpInfo& info(Op op) { return kOpTable[static_cast<std::size_t>(op)]; }
// The first name of a function, or the token of an operator ("arcsin", "+").
constexpr std::string_view spelling(Op op) {
    const OpInfo& i = info(op);
    if (!i.token.empty()) return i.token;
    return i.names.substr(0, i.names.find('|'));
}

// The grammar's fixed levels (dsl/ops.def, "Prec").
inline constexpr int kPrefixPrec = 11;  // unary - + ~: on the operand of a power, below it
inline constexpr int kPowerPrec = 12;   // **: right-assoc, its own list in the grammar

// A function of several results (its OpKind::Result rows), by any of its rows.
struct Results {
    std::size_t first = 0, count = 0;  // rows first .. first + count - 1 of the table
};
constexpr Results results_of(Op op) {
    std::size_t k = static_cast<std::size_t>(op);
    if (kOpTable[k].kind != OpKind::Result) return {k, 1};
    while (k > 0 && kOpTable[k - 1].kind == OpKind::Result && kOpTable[k - 1].names == kOpTable[k].names) --k;
    std::size_t n = 1;
    while (k + n < kNumOps && kOpTable[k + n].kind == OpKind::Result && kOpTable[k + n].names == kOpTable[k].names) ++n;
    return {k, n};
}

// Operators as the grammar sees them.
constexpr bool is_binary_operator(const OpInfo& i) { return i.kind == OpKind::Operator && i.arity == 2; }
constexpr bool is_prefix_operator(const OpInfo& i) { return i.kind == OpKind::Operator && i.arity == 1; }
// Operators of one level in a row: a power chain folds from the right, comparisons chain
// pairwise (a < b < c is a < b and b < c), every other level folds from the left.
constexpr bool is_right_assoc(Op op) { return info(op).prec == kPowerPrec; }
constexpr bool is_comparison(Op op) { return info(op).rule == Rule::Compare; }
// The ops of string operands: contains, startswith, endswith, find, str_len (the comparisons
// take strings too).
constexpr bool is_string_function(Op op) {
    const Rule r = info(op).rule;
    return r == Rule::StrSearch || r == Rule::StrFind || r == Rule::StrLen;
}

namespace detail {
constexpr bool table_is_consistent() {
    for (std::size_t k = 0; k < kNumOps; ++k) {
        const OpInfo& i = kOpTable[k];
        if (static_cast<std::size_t>(i.op) != k) return false;  // rows in enum order
        if (i.kind == OpKind::Operator) {
            if (i.token.empty() || i.prec < 1 || i.prec > kPowerPrec) return false;
            if (i.arity == 1 && i.prec == kPowerPrec) return false;
            if (i.arity == 2 && i.prec == kPrefixPrec) return false;
            if (i.arity != 1 && i.arity != 2) return false;
            // A prefix operator below the unary level binds a level of its own.
            for (const OpInfo& j : kOpTable)
                if (i.arity == 1 && i.prec < kPrefixPrec && j.kind == OpKind::Operator && j.arity == 2 &&
                    j.prec == i.prec)
                    return false;
        } else if (!i.token.empty() || i.prec != 0 || (i.names.empty() && i.kind != OpKind::Reduction)) {
            return false;
        }
        if (i.kind == OpKind::Result) {
            // Adjacent to the other results of its function, which share its names and arity;
            // no other op carries those names.
            const bool first = k == 0 || kOpTable[k - 1].kind != OpKind::Result || kOpTable[k - 1].names != i.names;
            const bool last =
                k + 1 == kNumOps || kOpTable[k + 1].kind != OpKind::Result || kOpTable[k + 1].names != i.names;
            if (first && last) return false;  // a function of one result is a Function
            if (!first && kOpTable[k - 1].arity != i.arity) return false;
            for (std::size_t j = 0; j < kNumOps; ++j)
                if (kOpTable[j].kind != OpKind::Result && kOpTable[j].names == i.names) return false;
        }
        if (i.kind == OpKind::Reduction || i.kind == OpKind::Scan) {
            const OpInfo& a = kOpTable[static_cast<std::size_t>(i.accumulate)];
            if (i.arity != 1 || a.kind != OpKind::Reduction || a.accumulate != a.op ||
                (a.finish != Finish::Keep && a.finish != Finish::Select))
                return false;
            // A scan carries a running value: it is kept or its operand rewritten, never divided.
            if (i.kind == OpKind::Scan && (i.names.empty() || i.finish == Finish::DivideByCount)) return false;
        } else if (i.accumulate != i.op || i.finish != Finish::Keep) {
            return false;
        }
    }
    return true;
}
}  // namespace detail
static_assert(detail::table_is_consistent(), "dsl/ops.def: a row breaks the rules in its header");

}  // namespace jit::ir

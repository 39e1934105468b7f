// jitexpr — the checked, typed program that every backend consumes.
//
// A Program is a vector of nodes in topological order (children have smaller indices), built
// only by dsl::lower after checking. Invariants every backend may rely on:
//   * every node has its final dtype and broadcast shape (a Cast may broadcast its operand);
//   * operands of an Op node already have the op's operand dtype (lowering inserted the casts):
//       - most ops: every operand has the node's dtype;
//       - Compare ops, Predicate ops: operands share one dtype, the node is Bool;
//       - And/Or/Not: operands are Bool;
//       - Where: operand 0 is Bool, operands 1 and 2 have the node's dtype;
//       - Abs/Real/Imag on complex: operand complex, node its real dtype;
//   * Reduce nodes: operand dtype == node dtype, except Any/All (operand Bool);
//     Mean divides by the count in the node's dtype;
//   * Scan nodes (CumSum, CumProd): operand dtype == node dtype; axis >= 0: the running fold
//     along that axis, node shape == operand shape; axis -1: over every element in C order,
//     node shape {operand's element count}. Each step is rounded to the node's dtype (a 16-bit
//     float accumulates in its own format, as NumPy);
//   * float16/bfloat16 values are computed in float32 and rounded when stored to memory or
//     when a Cast leaves or enters a 16-bit float type (explicit or from promotion);
//   * integer arithmetic wraps; integer // and % by zero give 0.
//   * strings (DType::Bytes, Str, Utf8): a string node is an Input of a string dtype or a Const
//     of one (a literal: its `slot` indexes Program::strings, the bytes encoded for its dtype).
//     Only the string ops read string nodes: the comparisons (Lt Le Eq Ne Ge Gt) and the
//     StrSearch/StrFind/StrLen ops, whose operands are all string nodes of one kind (Bytes with
//     Bytes; Str and Utf8 with either) and whose result is Bool (Int64 for Find and StrLen). No
//     node of a string dtype is ever cast, stored, reduced or an output;
//   * Compact nodes (boolean-mask selection, b[m]): args[0] the values and args[1] the Bool
//     mask, both of one shape S (the stage's iteration space); `axis` is k, the number of
//     leading axes of S the mask selects along (the mask is constant along S[k:]). The node's
//     shape is (prod(S[:k]), S[k:]...): the most the selection can hold. Its first extent is
//     decided by the data (the number of true mask rows) and known only when the program runs.
//     A Compact node is only ever an output: no node reads it.
// User names never reach a backend's generated code: inputs, scalars and outputs are referred
// to by index; the names are kept only for diagnostics and binding.
#pragma once

#include "dsl/ops.hpp"

#include <jit/array.hpp>
#include <jit/dtype.hpp>
#include <jit/error.hpp>

#include <fmt/format.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace jit::ir {

// A constant's value. Integers are kept exactly; floats as double; complex as two doubles.
struct Value {
    DType dtype = DType::Float64;
    bool b = false;
    std::int64_t i = 0;   // signed integers
    std::uint64_t u = 0;  // unsigned integers
    double f = 0.0;       // floats; real part of complex
    double im = 0.0;      // imaginary part of complex

    static Value of_bool(bool v);
    static Value of_int(std::int64_t v, DType t = DType::Int64);
    static Value of_uint(std::uint64_t v, DType t = DType::UInt64);
    static Value of_float(double v, DType t = DType::Float64);
    static Value of_complex(std::complex<double> v, DType t = DType::Complex128);
    // A datetime64/timedelta64 count (i) of dtype t (kNaT for NaT).
    static Value of_temporal(std::int64_t v, DType t);
    // The same number converted to `t` with NumPy's casting (wrapping for integers).
    Value cast(DType t) const;
    double as_double() const;
    std::string to_string() const;  // exact, round-trips ("0.1" -> "0.10000000000000001")
};

// A node's index in Program::nodes: a type of its own, so that a node cannot be taken for one
// of the IR's other indices (input, scalar and output slots, stages) and indexes per-node tables
// (NodeMap) without casts. NodeId() is no node.
class NodeId {
public:
    constexpr NodeId() = default;
    constexpr explicit NodeId(std::int32_t v) : v_(v) {}
    constexpr explicit NodeId(std::size_t i) : v_(static_cast<std::int32_t>(i)) {}
    constexpr std::int32_t value() const { return v_; }
    constexpr std::size_t index() const { return static_cast<std::size_t>(v_); }
    constexpr bool valid() const { return v_ >= 0; }
    friend constexpr auto operator<=>(NodeId, NodeId) = default;
    friend std::ostream& operator<<(std::ostream& os, NodeId n) { return os << n.v_; }

private:
    std::int32_t v_ = -1;
};

// One value per node of a program, indexed by NodeId.
template <class T>
class NodeMap {
public:
    NodeMap() = default;
    explicit NodeMap(std::size_t nodes, const T& value = T{}) : v_(nodes, value) {}
    void assign(std::size_t nodes, const T& value) { v_.assign(nodes, value); }
    T& operator[](NodeId n) { return v_[n.index()]; }
    const T& operator[](NodeId n) const { return v_[n.index()]; }
    std::size_t size() const { return v_.size(); }
    bool empty() const { return v_.empty(); }
    auto begin() { return v_.begin(); }
    auto end() { return v_.end(); }
    auto begin() const { return v_.begin(); }
    auto end() const { return v_.end(); }
    bool operator==(const NodeMap&) const = default;

private:
    static_assert(!std::is_same_v<T, bool>, "NodeMap<bool> would be a std::vector<bool>: use std::uint8_t");
    std::vector<T> v_;
};

// The ids of a program's nodes, in order: for (NodeId n : program.ids()).
class NodeIds {
public:
    class iterator {
    public:
        constexpr explicit iterator(std::int32_t v) : v_(v) {}
        constexpr NodeId operator*() const { return NodeId(v_); }
        constexpr iterator& operator++() {
            ++v_;
            return *this;
        }
        constexpr bool operator==(const iterator&) const = default;

    private:
        std::int32_t v_;
    };
    constexpr explicit NodeIds(std::size_t n) : n_(static_cast<std::int32_t>(n)) {}
    constexpr iterator begin() const { return iterator(0); }
    constexpr iterator end() const { return iterator(n_); }

private:
    std::int32_t n_;
};

enum class NodeKind : std::uint8_t {
    Input,    // slot: index into Program::inputs (an array read with broadcasting)
    Scalar,   // slot: index into Program::scalars (a host value passed as a kernel parameter)
    Const,    // value
    Op,       // op, args
    Cast,     // args[0] converted to dtype
    Reduce,   // op (a Reduction), args[0], axis (-1: every element); OrderStat: slot (see OrderStatDecl)
    Compact,  // args[0] where args[1] (a boolean-mask selection), axis: the mask's axes
    Scan,     // op (a Scan), args[0], axis (-1: every element in C order, a 1-d result)
};

// Reduce and Scan nodes: each is computed by a stage of its own, which computes its operand
// inline; every other stage reads its value from that stage's buffer.
constexpr bool is_stage_root(NodeKind k) { return k == NodeKind::Reduce || k == NodeKind::Scan; }

struct Node {
    NodeKind kind = NodeKind::Const;
    Op op = Op::Add;
    DType dtype = DType::Float64;
    Shape shape;
    NodeId args[3];
    std::uint8_t nargs = 0;
    std::int32_t slot = -1;
    std::int32_t axis = -1;
    Value value;
    SourceSpan span;
};

struct InputDecl {
    std::string name;  // for messages only
    DType dtype = DType::Float32;
    Shape shape;
    Strides strides;  // in elements
    // A view that the program's text takes of the array bound to `name` (a[1:], m[:, 0]):
    // its element 0 is `offset` elements past the bound array's element 0, and `shape` and
    // `strides` are the view's. Bind it with the array's memory seen so; the same name can
    // have several view slots and one plain slot.
    bool view = false;
    std::int64_t offset = 0;
    // Bytes per element of the bound array: a string input's width (S, U) or offset width
    // (Utf8: 4 or 8); the dtype's own for the others.
    std::size_t itemsize = 0;
    // Set when the array is a datetime64/timedelta64 one: its dtype, whose int64 counts the
    // program reads (`dtype` is then Int64, all a backend sees). The runtime binds the array's
    // memory as int64 (dsl/lower/ lowered every operation on it to int64 work).
    std::optional<DType> temporal = std::nullopt;
};

struct ScalarDecl {
    std::string name;  // for messages only
    DType dtype = DType::Float64;
    // Set when the scalar is an integer exponent of an integer base: a negative value is a
    // ValueError at bind time (pointing at `span`), as for a negative literal. An exponent made
    // of the scalar by conversions (uint16(n), int8(n)) is tested as converted: each use's casts,
    // innermost first, are a list of exponent_casts (empty: the value as it is).
    bool must_be_nonnegative = false;
    std::vector<std::vector<DType>> exponent_casts;
    // Integer dtypes a weak integer scalar is converted to: its value must fit each (a
    // ValueError at bind time, as NumPy 2 raises for a Python int out of an array's range).
    std::vector<DType> must_fit;
    SourceSpan span;
};

struct OutputDecl {
    std::string name;               // the variable assigned
    NodeId node;                    // the value
    std::int32_t alias_input = -1;  // >= 0: writes in place into that input's memory
    // Set when the value is a datetime64/timedelta64: its dtype as the caller sees it; the node
    // computes its int64 counts (the node's dtype is Int64), which the runtime labels so.
    std::optional<DType> temporal = std::nullopt;
};

// A condition only the data can decide, checked after the program has run (min() of a
// boolean-mask selection that selects nothing is NumPy's ValueError): `output` is a 0-d Bool
// output (unnamed, never bound to a name) that must be true, else a ValueError with `message`
// pointing at `span`.
struct RunCheck {
    std::int32_t output = -1;
    std::string message;
    SourceSpan span;
};

// A weak integer expression of host scalars (`s | 8`, `k * 2`) where it meets a dtype: when the
// scalars are bound, its value computed as Python computes it (exactly) must fit `dtype` if that
// is an integer dtype (NumPy 2's OverflowError for a Python int out of an array's range), and
// the int64 arithmetic the kernels do must not have wrapped on the way. A ValueError otherwise,
// pointing at `span`, before anything runs.
struct ScalarFitCheck {
    NodeId node;
    DType dtype = DType::Int64;
    SourceSpan span;
};

// What an OrderStat node (a Reduce node; its `slot` indexes Program::order_stats) computes. Its
// operand is read in its own dtype; a row is the operand's elements along the reduced axes (in
// C order of those axes), one row per element of the other axes. Per row and per q, the
// statistic of the row's elements; the node's shape is (q.size(),) when q_axis, then the
// operand's shape without the reduced axes (with extent 1 where keepdims). Its dtype is the
// statistic's: float64 for integer and bool operands, else the operand's (float64 for a float
// operand with q_axis: NumPy's array q). The node is never an output itself (lowering copies
// it), so its buffer is always a C-contiguous temporary.
struct OrderStatDecl {
    std::vector<double> q;   // fractions in [0, 1], in result order (median: 0.5)
    bool q_axis = false;     // q given as a tuple: the result's leading axis
    std::uint32_t axes = 0;  // bit d: operand axis d is reduced (never 0 for an operand of >= 1 axis)
    bool keepdims = false;
    bool skip_nan = false;  // nanmedian, nanpercentile, nanquantile: NaNs are left out of each row
    bool median = false;    // NumPy's median: the mean of the middle one or two (else linear interpolation)
    // quantile of q given as Python integers only (0 or 1: NumPy's integer virtual index): the
    // first or last element itself, in the operand's dtype (bool too), no interpolation.
    bool take = false;
};

struct Program {
    std::vector<Node> nodes;
    std::vector<InputDecl> inputs;
    std::vector<ScalarDecl> scalars;
    std::vector<OutputDecl> outputs;
    std::vector<RunCheck> checks;
    std::vector<ScalarFitCheck> scalar_fits;  // checked when the scalars are bound
    NodeId result;                            // node of the last statement (what eval returns), or none
    std::string text;                         // the user's text, for messages
    // What each OrderStat node selects, indexed by the node's `slot`.
    std::vector<OrderStatDecl> order_stats;
    // The string constants (the needles of contains(s, 'x')), indexed by a string Const node's
    // `slot`, encoded for the node's dtype: Bytes the bytes, Utf8 UTF-8, Str UCS-4 code points
    // (4 bytes each, native order). Backends pass them as data, never as kernel text.
    std::vector<std::string> strings;

    // The dtype output `o` has for the caller: its datetime64/timedelta64 dtype, else its node's.
    DType output_dtype(std::size_t o) const {
        return outputs[o].temporal ? *outputs[o].temporal : node(outputs[o].node).dtype;
    }
    const Node& node(NodeId n) const { return nodes[n.index()]; }
    Node& node(NodeId n) { return nodes[n.index()]; }
    NodeIds ids() const { return NodeIds(nodes.size()); }
    bool has_reductions() const;  // Reduce nodes
    bool has_scans() const;       // Scan nodes
    // Whether an output's first extent is decided by the data (a Compact node).
    bool is_dynamic(NodeId n) const { return node(n).kind == NodeKind::Compact; }
    bool has_compactions() const;
    // Stable text of the program without names: equal for programs that compute the same thing
    // with the same dtypes and shapes. Used in cache keys and golden tests.
    std::string canonical() const;
};

// Readable dump for tests and :source.
std::string dump(const Program& p);

}  // namespace jit::ir

// Node ids print as their index ("v{}" in generated code, "%{}" in dumps).
template <>
struct fmt::formatter<jit::ir::NodeId> : fmt::formatter<std::int32_t> {
    auto format(jit::ir::NodeId n, fmt::format_context& ctx) const {
        return fmt::formatter<std::int32_t>::format(n.value(), ctx);
    }
};

namespace jit::ir {
// The op table as Markdown tables (operators, functions, reductions) for docs/language.md.
std::string op_reference_markdown();
}  // namespace jit::ir

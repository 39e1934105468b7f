// jitexpr — the lowering's class, private to dsl/lower/ (dsl/lower.hpp is the interface, defined in
// dsl/lower/lower.cpp). Its members are defined by job, one file of dsl/lower/ each, as the groups
// below say.
#pragma once

#include "dsl/lower.hpp"

#include "dsl/literal.hpp"
#include "dsl/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace jit::dsl::lowering {

using ir::Node;
using ir::NodeKind;
using ir::Op;
using ir::OpKind;
using syntax::Expr;
using syntax::ExprKind;

constexpr std::size_t kMaxNodes = 1'000'000;

const std::map<std::string_view, double, std::less<>>& named_constants();
// The op table's functions spelled `name`, in table order (empty: none).
std::span<const ir::OpInfo* const> functions_named(std::string_view name);
std::string closest(const std::string& name, const std::vector<std::string>& candidates);
SourceSpan join(SourceSpan a, SourceSpan b);
bool fits(const ir::Value& v, DType t);

struct Val {
    Val() = default;
    Val(ir::NodeId n, Weak w) : node(n), weak(w) {}
    ir::NodeId node;
    Weak weak = Weak::None;
    // A boolean-mask selection (b[m]) not yet stored: `node` holds the values before selection
    // (over the full shape S), `mask` the Bool mask with S's rank (extent 1 past its own axes),
    // `mask_axes` the number k of leading axes of S it selects along. Element-wise work is
    // done on the values (so (b * 2)[m] is b[m] * 2, one pass), a reduction becomes a masked one
    // (sum(b[m]) is sum(where(m, b, 0))), and only a selection stored as a value is compacted.
    ir::NodeId mask;
    std::int32_t mask_axes = 0;
    bool selected() const { return mask.valid(); }
};

// An integer literal (or literal-only expression) that fits no integer dtype, such as 2**64:
// usable where it meets a float, an error where it must become an integer.
struct BigLiteral {
    std::string digits;
    std::optional<double> as_float;
};

class Lowerer {
public:
    Lowerer(std::string_view text, const Lookup& lookup, const BoundNames& bound)
        : text_(text),
          lookup_(lookup),
          bound_(bound),
          folder_(text, [this](std::string_view n) { return unshadowed_constant(n); }) {
        p_.text = std::string(text);
    }
    ir::Program run(const syntax::Module& m);

private:
    // boolean-mask selections (see Val::mask)
    struct Sel {
        ir::NodeId mask;
        std::int32_t axes = 0;
    };

    // The axes a reduction folds: every one (no axis, or axis=None), or a set (axis=1,
    // axis=(0, 2); the language has no empty tuple).
    struct Axes {
        bool all = true;
        std::vector<std::int32_t> list;  // sorted, distinct, each in [0, ndim)
        bool has(std::size_t d) const {
            return all || std::binary_search(list.begin(), list.end(), static_cast<std::int32_t>(d));
        }
    };

    // ---- indexing: a[1:], m[:, 0], a[None, ::-1], a[..., -1] with constant bounds
    //
    // An index makes a view: the Input nodes under the indexed value become new input slots
    // that read the same bound array with another offset, shape and strides (InputDecl::view);
    // operations between them and the index are applied to the views of their operands, so no
    // value is copied or computed twice as large. NumPy's rules: slices clip their bounds, an
    // integer index past its axis is an IndexError.

    // How one axis of the indexed value is read: position start + step * j, where j runs over
    // result axis `out` (-1: a fixed position, the axis is dropped).
    struct ViewAxis {
        std::int64_t start = 0, step = 1;
        std::int32_t out = -1;
    };

    struct View {
        Shape out;                   // the result's shape
        std::vector<ViewAxis> axes;  // one per axis of the indexed value
    };

    // ---- builder.cpp: node construction: constants, casts, broadcasting, promotion, the small node helpers
    const Node& node(ir::NodeId n) const { return p_.node(n); }
    DType dt(const Val& v) const { return node(v.node).dtype; }
    const Shape& shape(const Val& v) const { return node(v.node).shape; }
    ir::NodeId add(Node n);
    ir::NodeId constant(const ir::Value& v, SourceSpan span);
    Shape broadcast(const Shape& a, const Shape& b, SourceSpan span) const;
    void check_fit(const Val& v, DType t);
    ir::NodeId cast(const Val& v, DType t, SourceSpan span);
    ir::NodeId fresh(ir::NodeId v, const Shape& s, SourceSpan span);
    // A float16/bfloat16 value computed by an op (carried unrounded in float32) rounded to its
    // type, as a store would: what a reduction, scan or order statistic reads (NumPy's operand
    // is a float16 array). Other values are returned as they are.
    ir::NodeId half_rounded(ir::NodeId v, SourceSpan span);
    ir::NodeId op_node(Op op, DType result, Shape s, std::initializer_list<ir::NodeId> args, SourceSpan span);
    DType promote_all(std::initializer_list<const Val*> vals, Weak* weak_out) const;
    [[noreturn]] void type_error(const std::string& msg, SourceSpan span) const { throw TypeError(msg, text_, span); }
    Typed rule(Op op, DType p, SourceSpan span) const;
    static bool negative_const(const Node& n);
    ir::NodeId divide_by_count(ir::NodeId v, std::int64_t count, SourceSpan span);
    ir::NodeId const_of(double v, DType t, SourceSpan span) { return constant(ir::Value::of_float(v).cast(t), span); }
    ir::NodeId isnan_of(ir::NodeId x, SourceSpan span);
    ir::NodeId select(ir::NodeId c, ir::NodeId a, ir::NodeId b, SourceSpan span);
    ir::NodeId binop(Op op, ir::NodeId a, ir::NodeId b, SourceSpan span);
    ir::NodeId abs2(ir::NodeId v, SourceSpan span);

    // ---- operators.cpp: unary and binary operators, exact comparisons of integers, powers, where
    // (`function_form`: called as a function, add(a, b), not an operator: NumPy's ufunc, which
    // lacks the operator's fallbacks)
    Val binary(Op op, const Val& a, const Val& b, SourceSpan span, bool function_form = false);
    static Op mirrored(Op op);
    Val all_bool(ir::NodeId x, bool v, SourceSpan span);
    std::optional<Val> integer_compare(Op op, const Val& a, const Val& b, SourceSpan span);
    void mark_nonnegative_scalar(ir::NodeId n);
    Val unary(Op op, const Val& a, SourceSpan span);
    Val power(const Val& a, const Val& b, SourceSpan span, bool operator_form);
    Val where(const Val& c, const Val& x, const Val& y, SourceSpan span);

    // ---- expressions.cpp: literals, names (with the suggestion for an unknown one) and comparison chains
    Val literal(const Folded& f, SourceSpan span);
    Val strong(const Val& v);
    static Val typed(Val v);
    std::optional<double> unshadowed_constant(std::string_view name) const;
    Val expr(const Expr& e);
    Val name(const Expr& e);
    [[noreturn]] void unknown_name(const std::string& name, SourceSpan span) const;
    Val chain(const Expr& e);

    // ---- strings.cpp: string and bytes literals, the string ops (comparisons of strings, contains,
    // startswith, endswith, find, str_len), the refusal of strings anywhere else
    bool is_text(const Val& v) const { return is_string(dt(v)); }
    bool is_string_literal(const Val& v) const;
    Val string_literal(const Expr& e);
    ir::NodeId string_const(std::string bytes, DType t, SourceSpan span);
    ir::NodeId string_for(const Val& literal, DType t, SourceSpan span);
    void no_strings(std::initializer_list<const Val*> vals, std::string_view what, SourceSpan span) const;
    Val string_op(Op op, const std::vector<Val>& args, SourceSpan span);
    std::string kinds(const std::vector<Val>& in) const;

    // ---- masks.cpp: boolean-mask selections (b[m]): operands unselected and reselected, views of them,
    // compaction
    bool same_value(ir::NodeId a, ir::NodeId b) const;
    Sel unselect(std::initializer_list<Val*> vals, SourceSpan span);
    static Val reselect(Val v, const Sel& s);
    Val selection_view(const Val& base, const Shape& full, const View& v, SourceSpan span);
    Val mask_select(const Val& base, const Val& m, const Expr& e, const Expr& mx);
    ir::NodeId compact(const Val& v, SourceSpan span);
    static std::int64_t count_consumed(const Expr& e);

    // ---- calls.cpp: function calls: arity and keyword checks, functions of several results, clip, ldexp
    Val call(const Expr& e);
    std::vector<Val> call(const Expr& e, const syntax::Statement* several);
    Val clip(const ir::OpInfo& fnr, const std::vector<Val>& args, const Expr& e);
    static std::string several_example(const Expr& call, std::size_t results);
    [[noreturn]] void not_several(const syntax::Statement& st) const;
    Val ldexp(const Val& x, const Val& n, const Expr& e);
    std::int64_t constant_int(const Expr& e) const;

    // ---- indexing.cpp: subscripts with constant bounds: views of inputs and of the nodes under them
    std::int64_t index_constant(const Expr& e, bool in_slice);
    Val subscript(const Expr& e);
    static bool is_none(const Expr& x) { return x.kind == ExprKind::Name && x.text == "None"; }
    static View operand_view(const View& v, const Shape& s, const Shape& a);
    static bool identity(const View& v, const Shape& s);
    ir::NodeId view_of(ir::NodeId n, const View& v, SourceSpan span);
    ir::NodeId view_of_scan(ir::NodeId n, const Node& src, const View& v, SourceSpan span);
    ir::NodeId view_input(const Node& src, const View& v, SourceSpan span);

    // ---- reductions.cpp: reductions and scans: their axes and arguments, plain and masked reductions, order
    // statistics
    static bool takes_ddof(Op op) { return op == Op::Var || op == Op::Std || op == Op::NanVar || op == Op::NanStd; }
    static std::vector<std::string_view> positional_params(Op op);
    static bool takes_axis(const ir::OpInfo& i) { return i.kind == OpKind::Reduction || i.kind == OpKind::Scan; }
    static bool takes_q(Op op);
    static bool is_order_stat(Op op) { return takes_q(op) || op == Op::Median || op == Op::NanMedian; }
    static bool takes_keyword(Op op, std::string_view k);
    Axes axes_of(const Expr* e, std::int32_t nd, bool one_only, const std::string& fname) const;
    bool keepdims_of(const Expr* e) const;
    double number_of(const Expr& e, std::string_view what) const;
    static Shape reduced_shape(const Shape& in, const Axes& ax, bool keepdims);
    static std::int64_t reduced_count(const Shape& in, const Axes& ax);
    void check_nonempty(Op op, const Shape& in, const Axes& ax, SourceSpan span) const;
    ir::NodeId reduce_nodes(Op op, ir::NodeId x, DType result, const Axes& ax, bool keepdims, SourceSpan span);
    [[noreturn]] static void internal_error(const std::string& what) { throw InternalError("lowering: " + what); }
    std::map<std::string_view, const Expr*> axis_call_arguments(const ir::OpInfo& fn, const Expr& e) const;
    Val reduction_call(const ir::OpInfo& fn, const Expr& e);
    template <class Arg>
    Val plain_reduction(Op op, const Val& a, const Axes& ax, bool keep, Arg&& arg, const std::string& fname,
                        SourceSpan span, const Sel* sel);
    static ir::Value extreme(DType t, bool largest);
    template <class Arg>
    Val masked_reduction(Op op, const std::string& fname, const Val& a, Arg&& arg, SourceSpan span);
    Val scan_call(const ir::OpInfo& fn, const Expr& e);
    template <class Arg>
    Val order_statistic(Op op, const Val& a, Arg&& arg, const std::string& fname, SourceSpan span);
    template <class Arg>
    Val temporal_reduction(Op op, const std::string& fname, const Val& a, Arg&& arg, SourceSpan span);
    ir::NodeId scan_sum(ir::NodeId x, std::int32_t axis, SourceSpan span);

    // ---- statistics.cpp: the statistics built of several passes: var/std, argmin/argmax, average and its
    // weights
    ir::NodeId count_where_not(ir::NodeId mask, DType t, const Axes& ax, bool keep, SourceSpan span);
    ir::NodeId variance(Op op, ir::NodeId x, const Typed& t, const Axes& ax, bool keep, double ddof, SourceSpan span);
    ir::NodeId arg_extreme(Op op, ir::NodeId x, const Axes& ax, bool keep, SourceSpan span);
    ir::NodeId average(ir::NodeId x, const Typed& t, const Expr* weights, const Expr* axis_e, const Axes& ax, bool keep,
                       const std::string& fname, SourceSpan span, const Sel* sel = nullptr);
    void require_nonzero_weights(ir::NodeId den, const std::string& fname, SourceSpan span);
    ir::NodeId cast_to_shape(ir::NodeId v, const Shape& s, SourceSpan span) { return fresh(v, s, span); }
    Val selected_weights(Val w, const Sel* sel, const Expr& we, const std::string& fname);

    // ---- dates.cpp: datetime64 and timedelta64 (NumPy 2's rules, dsl/dates.hpp), every operation
    // lowered to int64 work (a unit change a multiply or floor division, NaT INT64_MIN and its rules
    // compares and selects); erase_temporal() leaves their dtypes only at the program's edges
    bool temporal(const Val& v) const { return is_temporal(dt(v)); }
    Val date_call(const Expr& e, bool datetime);
    Val compare_with_text(Op op, const Val& a, const Val& b, SourceSpan span, bool function_form);
    Val isnat_call(const Expr& e);
    Val temporal_binary(Op op, const Val& a, const Val& b, SourceSpan span, bool function_form);
    Val temporal_unary(Op op, const Val& a, SourceSpan span);
    Val temporal_where(const Val& c, const Val& x, const Val& y, SourceSpan span);
    Val temporal_clip(const std::vector<Val>& args, const Expr& e);
    ir::NodeId temporal_cast(const Val& v, DType t, SourceSpan span);
    ir::NodeId convert_unit(ir::NodeId x, DType to, SourceSpan span);
    ir::NodeId nat_const(DType t, SourceSpan span) { return constant(ir::Value::of_temporal(kNaT, t), span); }
    bool can_be_nat(ir::NodeId x) const;
    std::optional<ir::NodeId> nat_mask(ir::NodeId x, SourceSpan span);
    ir::NodeId with_nat(std::optional<ir::NodeId> mask, ir::NodeId value, DType label, SourceSpan span);
    ir::NodeId int64_op(Op op, ir::NodeId a, ir::NodeId b, SourceSpan span);
    ir::NodeId int64_const(std::int64_t v, SourceSpan span) { return constant(ir::Value::of_int(v), span); }
    ir::NodeId trunc_div(ir::NodeId x, ir::NodeId n, SourceSpan span);
    ir::NodeId all_of_shape(bool v, Shape s, SourceSpan span);
    std::string describe(const Val& v) const;
    void check_binding(const std::string& name, const Binding& b, SourceSpan span) const;
    void erase_temporal();

    // ---- statements.cpp: statements and assignments: outputs, in-place targets, the run-time checks
    void statement(const syntax::Statement& st, bool last);
    void assign(const std::string& target, SourceSpan target_span, const Val& v, const syntax::Statement& st,
                bool last);
    const Binding* in_place_target(const std::string& target, const Val& v) const;
    std::int32_t input_slot_for(const std::string& name, const Binding& b);

    std::string_view text_;
    const Lookup& lookup_;
    const BoundNames& bound_;
    ir::Program p_;
    std::map<std::string, Val, std::less<>> locals_;
    std::map<std::string, std::int32_t, std::less<>> input_slot_, scalar_slot_;
    std::map<std::string, ir::NodeId, std::less<>> input_node_, scalar_node_;
    std::map<std::string, std::int32_t, std::less<>> alias_of_;
    std::map<std::string, const Binding*, std::less<>> alias_binding_;
    std::set<ir::NodeId> output_nodes_;
    std::map<ir::NodeId, BigLiteral> big_;  // Const nodes of integers past every dtype
    LiteralFolder folder_;
    std::map<std::string, ir::NodeId> view_memo_;    // one subscript's views of nodes
    std::map<std::string, ir::NodeId> view_inputs_;  // view inputs by name, offset, shape, strides
    struct PendingCheck {
        ir::NodeId node;  // a 0-d Bool that must be true when the program has run
        std::string message;
        SourceSpan span;
    };
    std::vector<PendingCheck> checks_;
    std::map<std::string, ir::NodeId> compact_masks_;  // a Compact node's mask by mask node and shape
    std::map<ir::NodeId, std::string> literal_text_;   // string literals: their text (UTF-8 or bytes)
};

}  // namespace jit::dsl::lowering

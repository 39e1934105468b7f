#include "dsl/verify.hpp"

#include "dsl/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace jit::ir {

namespace {

[[noreturn]] void broken(const std::string& what) { throw InternalError("ir::verify: " + what); }

std::string describe(const Program& p, NodeId n) {
    const Node& nd = p.node(n);
    switch (nd.kind) {
        case NodeKind::Input: return fmt::format("node {} (input {})", n, nd.slot);
        case NodeKind::Scalar: return fmt::format("node {} (scalar {})", n, nd.slot);
        case NodeKind::Const: return fmt::format("node {} (constant)", n);
        case NodeKind::Op:
        case NodeKind::Reduce:
        case NodeKind::Scan: return fmt::format("node {} ({})", n, info(nd.op).id);
        case NodeKind::Cast: return fmt::format("node {} (cast to {})", n, dtype_name(nd.dtype));
        case NodeKind::Compact: return fmt::format("node {} (compaction)", n);
    }
    return fmt::format("node {}", n);
}

// NumPy's broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
    Shape r(std::max(a.size(), b.size()), 1);
    for (std::size_t k = 0; k < r.size(); ++k) {
        const std::int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
        const std::int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
        if (x != y && x != 1 && y != 1) return std::nullopt;
        r[r.size() - 1 - k] = x == 1 ? y : x;
    }
    return r;
}

// An OrderStat node against its Program::order_stats entry (dsl/ir.hpp, OrderStatDecl).
void check_order_stat(const Program& p, NodeId n) {
    const Node& nd = p.node(n);
    if (nd.axis != -1)
        broken(fmt::format("{}: axis {} (its axes are in Program::order_stats)", describe(p, n), nd.axis));
    if (nd.slot < 0 || static_cast<std::size_t>(nd.slot) >= p.order_stats.size())
        broken(fmt::format("{}: order statistic {} of {}", describe(p, n), nd.slot, p.order_stats.size()));
    const OrderStatDecl& d = p.order_stats[static_cast<std::size_t>(nd.slot)];
    const Node& x = p.node(nd.args[0]);
    const std::size_t nd_in = x.shape.size();
    if (d.q.empty()) broken(fmt::format("{}: no q", describe(p, n)));
    if (d.median && (d.q.size() != 1 || d.q[0] != 0.5 || d.q_axis))
        broken(fmt::format("{}: a median of q other than 0.5", describe(p, n)));
    for (const double q : d.q)
        if (!(q >= 0.0 && q <= 1.0)) broken(fmt::format("{}: q {} outside [0, 1]", describe(p, n), q));
    if ((nd_in < 32 && (d.axes >> nd_in) != 0) || (nd_in > 0 && d.axes == 0))
        broken(fmt::format("{}: axes 0x{:x} of an operand of {} dimensions", describe(p, n), d.axes, nd_in));
    Shape want;
    if (d.q_axis) want.push_back(static_cast<std::int64_t>(d.q.size()));
    for (std::size_t k = 0; k < nd_in; ++k) {
        if (!((d.axes >> k) & 1u)) want.push_back(x.shape[k]);
        else if (d.keepdims) want.push_back(1);
    }
    if (nd.shape != want)
        broken(fmt::format("{}: shape {}, its operand and selection give {}", describe(p, n), shape_to_string(nd.shape),
                           shape_to_string(want)));
    if (d.take && (d.median || std::any_of(d.q.begin(), d.q.end(), [](double q) { return q != 0.0 && q != 1.0; })))
        broken(fmt::format("{}: an element taken at q other than 0 or 1", describe(p, n)));
    const bool integral = is_bool(x.dtype) || is_integer(x.dtype);
    const DType result = d.take ? x.dtype : integral || (d.q_axis && is_float(x.dtype)) ? DType::Float64 : x.dtype;
    if (nd.dtype != result || (is_complex(x.dtype) && !d.median) || (is_bool(x.dtype) && !d.median && !d.take))
        broken(fmt::format("{}: dtype {} from an operand of {}", describe(p, n), dtype_name(nd.dtype),
                           dtype_name(x.dtype)));
    for (const OutputDecl& o : p.outputs)
        if (o.node == n) broken(fmt::format("{}: an order statistic that is an output itself", describe(p, n)));
}

// The dtypes an op node's operands must have, given its own dtype (dsl/ir.hpp's list).
void check_operand_dtypes(const Program& p, NodeId n) {
    const Node& nd = p.node(n);
    const OpInfo& i = info(nd.op);
    auto dt = [&](int k) { return p.node(nd.args[k]).dtype; };
    auto need = [&](bool ok, const char* what) {
        if (!ok)
            broken(fmt::format("{}: {} (its dtype {}, operands {})", describe(p, n), what, dtype_name(nd.dtype), [&] {
                std::string s;
                for (int k = 0; k < nd.nargs; ++k) s += (k ? ", " : "") + std::string(dtype_name(dt(k)));
                return s;
            }()));
    };
    auto all_operands = [&](DType t) {
        for (int k = 0; k < nd.nargs; ++k)
            if (dt(k) != t) return false;
        return true;
    };
    // Strings: the comparisons and string functions over string operands of one kind.
    auto one_kind = [&] {
        for (int k = 0; k < nd.nargs; ++k)
            if (!is_string(dt(k)) || (dt(k) == DType::Bytes) != (dt(0) == DType::Bytes)) return false;
        return true;
    };
    if (i.rule == Rule::Compare && nd.nargs > 0 && is_string(dt(0))) {
        need(nd.dtype == DType::Bool && one_kind(), "string operands of one kind and a bool result");
        return;
    }
    for (int k = 0; k < nd.nargs; ++k)
        if (is_string(dt(k)) && !ir::is_string_function(nd.op)) need(false, "no string operand");
    switch (i.rule) {
        case Rule::StrSearch:
            need(nd.dtype == DType::Bool && one_kind(), "string operands of one kind and a bool result");
            return;
        case Rule::StrFind:
        case Rule::StrLen:
            need(nd.dtype == DType::Int64 && one_kind(), "string operands of one kind and an int64 result");
            return;
        case Rule::Compare:
        case Rule::Predicate:
            need(nd.dtype == DType::Bool && all_operands(dt(0)), "operands of one dtype and a bool result");
            return;
        case Rule::Logical:
            need(nd.dtype == DType::Bool && all_operands(DType::Bool), "bool operands and result");
            return;
        case Rule::Where:
            need(dt(0) == DType::Bool && dt(1) == nd.dtype && dt(2) == nd.dtype,
                 "a bool condition and two operands of its dtype");
            return;
        case Rule::AbsUnary:
        case Rule::PartUnary:
            need(is_complex(dt(0)) ? nd.dtype == dsl::real_of(dt(0)) : dt(0) == nd.dtype,
                 "an operand of its dtype, or a complex one of its real dtype");
            return;
        case Rule::BitCount:
            need(nd.dtype == DType::UInt8 && is_integer(dt(0)), "an integer operand and a uint8 result");
            return;
        case Rule::FrexpExponent:
            need(nd.dtype == DType::Int32 && is_float(dt(0)), "a float operand and an int32 result");
            return;
        default: need(all_operands(nd.dtype), "operands of its dtype"); return;
    }
}

void check_node(const Program& p, NodeId n) {
    const Node& nd = p.node(n);
    if (nd.nargs > 3) broken(fmt::format("{}: {} operands", describe(p, n), nd.nargs));
    for (int k = 0; k < nd.nargs; ++k)
        if (!nd.args[k].valid() || nd.args[k] >= n)
            broken(fmt::format("{}: operand {} is node {}, not an earlier node", describe(p, n), k, nd.args[k]));
    auto shape_is = [&](const Shape& want, const char* what) {
        if (nd.shape != want)
            broken(fmt::format("{}: shape {}, {} is {}", describe(p, n), shape_to_string(nd.shape), what,
                               shape_to_string(want)));
    };
    auto arity_is = [&](int k) {
        if (nd.nargs != k) broken(fmt::format("{}: {} operands, not {}", describe(p, n), nd.nargs, k));
    };
    switch (nd.kind) {
        case NodeKind::Input: {
            arity_is(0);
            if (nd.slot < 0 || static_cast<std::size_t>(nd.slot) >= p.inputs.size())
                broken(fmt::format("node {}: input slot {} of {}", n, nd.slot, p.inputs.size()));
            const InputDecl& d = p.inputs[static_cast<std::size_t>(nd.slot)];
            if (nd.dtype != d.dtype)
                broken(fmt::format("{}: dtype {}, declared {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(d.dtype)));
            shape_is(d.shape, "its declaration's");
            if (!d.strides.empty() && d.strides.size() != d.shape.size())
                broken(
                    fmt::format("{}: {} strides for {} dimensions", describe(p, n), d.strides.size(), d.shape.size()));
            return;
        }
        case NodeKind::Scalar: {
            arity_is(0);
            if (nd.slot < 0 || static_cast<std::size_t>(nd.slot) >= p.scalars.size())
                broken(fmt::format("node {}: scalar slot {} of {}", n, nd.slot, p.scalars.size()));
            const ScalarDecl& d = p.scalars[static_cast<std::size_t>(nd.slot)];
            if (nd.dtype != d.dtype)
                broken(fmt::format("{}: dtype {}, declared {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(d.dtype)));
            shape_is({}, "a scalar's");
            return;
        }
        case NodeKind::Const:
            arity_is(0);
            shape_is({}, "a constant's");
            if (is_string(nd.dtype)) {
                if (nd.slot < 0 || static_cast<std::size_t>(nd.slot) >= p.strings.size())
                    broken(fmt::format("{}: string slot {} of {}", describe(p, n), nd.slot, p.strings.size()));
                if (nd.dtype == DType::Str && p.strings[static_cast<std::size_t>(nd.slot)].size() % 4 != 0)
                    broken(fmt::format("{}: UCS-4 text of {} bytes", describe(p, n),
                                       p.strings[static_cast<std::size_t>(nd.slot)].size()));
                return;
            }
            if (nd.value.dtype != nd.dtype)
                broken(fmt::format("{}: dtype {}, value of {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(nd.value.dtype)));
            return;
        case NodeKind::Cast: {
            // A cast may broadcast too: an assignment into a bound array converts the value to
            // the array's dtype and shape in one node.
            arity_is(1);
            if (is_string(nd.dtype) || is_string(p.node(nd.args[0]).dtype))
                broken(fmt::format("{}: a cast of strings", describe(p, n)));
            const auto b = broadcast(p.node(nd.args[0]).shape, nd.shape);
            if (!b || *b != nd.shape)
                broken(fmt::format("{}: shape {}, which its operand's {} does not broadcast to", describe(p, n),
                                   shape_to_string(nd.shape), shape_to_string(p.node(nd.args[0]).shape)));
            return;
        }
        case NodeKind::Op: {
            const OpInfo& i = info(nd.op);
            if (i.kind == OpKind::Reduction) broken(fmt::format("{}: a reduction in an Op node", describe(p, n)));
            if (i.kind == OpKind::Scan) broken(fmt::format("{}: a scan in an Op node", describe(p, n)));
            arity_is(i.arity);
            Shape s;
            for (int k = 0; k < nd.nargs; ++k) {
                auto b = broadcast(s, p.node(nd.args[k]).shape);
                if (!b) broken(fmt::format("{}: operand shapes do not broadcast", describe(p, n)));
                s = std::move(*b);
            }
            shape_is(s, "the broadcast of its operands'");
            check_operand_dtypes(p, n);
            return;
        }
        case NodeKind::Reduce: {
            const OpInfo& i = info(nd.op);
            if (i.kind != OpKind::Reduction)
                broken(fmt::format("{}: not a reduction in a Reduce node", describe(p, n)));
            if (i.finish == Finish::Lowered)
                broken(fmt::format("{}: a statistic lowering should have expanded", describe(p, n)));
            arity_is(1);
            if (i.finish == Finish::Select) {
                check_order_stat(p, n);
                return;
            }
            const Node& x = p.node(nd.args[0]);
            if (is_string(x.dtype)) broken(fmt::format("{}: a reduction of strings", describe(p, n)));
            const auto nd_in = static_cast<std::int32_t>(x.shape.size());
            if (nd.axis < -1 || nd.axis >= nd_in)
                broken(fmt::format("{}: axis {} of an operand of {} dimensions", describe(p, n), nd.axis, nd_in));
            Shape want;
            if (nd.axis >= 0)
                for (std::int32_t d = 0; d < nd_in; ++d)
                    if (d != nd.axis) want.push_back(x.shape[static_cast<std::size_t>(d)]);
            // keepdims: the result may hold extra (or fewer) axes of extent 1; its elements, in C
            // order, are those of the operand's shape without the reduced axis.
            auto squeezed = [](const Shape& v) {
                Shape r;
                for (const std::int64_t e : v)
                    if (e != 1) r.push_back(e);
                return r;
            };
            if (nd.shape.size() == want.size() || squeezed(nd.shape) != squeezed(want))
                shape_is(want, "its operand's without the reduced axes");
            const bool ok = i.rule == Rule::AnyAll     ? x.dtype == DType::Bool && nd.dtype == DType::Bool
                            : i.rule == Rule::ArgFirst ? x.dtype == DType::Bool && nd.dtype == DType::Int64
                                                       : x.dtype == nd.dtype;
            if (!ok)
                broken(fmt::format("{}: dtype {} from an operand of {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(x.dtype)));
            return;
        }
        case NodeKind::Compact: {
            arity_is(2);
            const Node& v = p.node(nd.args[0]);
            const Node& m = p.node(nd.args[1]);
            if (m.dtype != DType::Bool)
                broken(fmt::format("{}: a mask of {}, not bool", describe(p, n), dtype_name(m.dtype)));
            if (is_string(v.dtype)) broken(fmt::format("{}: a selection of strings", describe(p, n)));
            if (v.dtype != nd.dtype)
                broken(fmt::format("{}: dtype {} from values of {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(v.dtype)));
            if (m.shape != v.shape)
                broken(fmt::format("{}: mask of shape {} over values of shape {}", describe(p, n),
                                   shape_to_string(m.shape), shape_to_string(v.shape)));
            const auto k = static_cast<std::size_t>(nd.axis);
            if (nd.axis < 1 || k > v.shape.size())
                broken(fmt::format("{}: {} mask axes over {} dimensions", describe(p, n), nd.axis, v.shape.size()));
            Shape want{1};
            for (std::size_t d = 0; d < v.shape.size(); ++d) {
                if (d < k) want[0] *= v.shape[d];
                else want.push_back(v.shape[d]);
            }
            // A selection of rows that hold no element (dsl/lower/masks.cpp's compact): values of extent 1
            // past the mask's axes, the node's own extents there with no element.
            bool empty_rows = nd.shape.size() == want.size() && !nd.shape.empty() && nd.shape[0] == want[0] &&
                              want[0] > 0 && shape_size(nd.shape) == 0;
            for (std::size_t d = 1; empty_rows && d < want.size(); ++d) empty_rows = want[d] == 1;
            if (!empty_rows) shape_is(want, "the most its values can select");
            return;
        }
        case NodeKind::Scan: {
            const OpInfo& i = info(nd.op);
            if (i.kind != OpKind::Scan) broken(fmt::format("{}: not a scan in a Scan node", describe(p, n)));
            if (i.finish != Finish::Keep)
                broken(fmt::format("{}: a NaN-ignoring scan should have been lowered", describe(p, n)));
            arity_is(1);
            const Node& x = p.node(nd.args[0]);
            const auto nd_in = static_cast<std::int32_t>(x.shape.size());
            if (nd.axis < -1 || nd.axis >= nd_in)
                broken(fmt::format("{}: axis {} of an operand of {} dimensions", describe(p, n), nd.axis, nd_in));
            // Along an axis: the operand's shape; over every element: one axis of them all.
            if (nd.axis >= 0) shape_is(x.shape, "its operand's");
            else shape_is(Shape{shape_size(x.shape)}, "one axis of its operand's elements");
            if (x.dtype != nd.dtype)
                broken(fmt::format("{}: dtype {} from an operand of {}", describe(p, n), dtype_name(nd.dtype),
                                   dtype_name(x.dtype)));
            // NumPy's result dtypes (SumProd): a scan of bool or a narrow integer is lowered to an
            // int64 (uint64) one.
            if (nd.dtype == DType::Bool ||
                ((is_signed_int(nd.dtype) || is_unsigned_int(nd.dtype)) && itemsize(nd.dtype) != 8))
                broken(fmt::format("{}: a scan of {}, which NumPy widens", describe(p, n), dtype_name(nd.dtype)));
            return;
        }
    }
    broken(fmt::format("node {}: unknown kind", n));
}

}  // namespace

void verify(const Program& p) {
    if (p.nodes.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) broken("too many nodes");
    for (const NodeId n : p.ids()) check_node(p, n);
    const auto valid = [&](NodeId n) { return n.valid() && n.index() < p.nodes.size(); };
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const OutputDecl& od = p.outputs[o];
        if (!valid(od.node)) broken(fmt::format("output {} is node {}", o, od.node));
        if (is_string(p.node(od.node).dtype)) broken(fmt::format("output {} is strings", o));
        if (od.alias_input < -1 || (od.alias_input >= 0 && static_cast<std::size_t>(od.alias_input) >= p.inputs.size()))
            broken(fmt::format("output {} aliases input {} of {}", o, od.alias_input, p.inputs.size()));
    }
    if (p.result != NodeId() && !valid(p.result)) broken(fmt::format("the result is node {}", p.result));
    // Compact nodes are outputs only: nothing reads a value whose length the data decides.
    for (const NodeId n : p.ids())
        for (int a = 0; a < p.node(n).nargs; ++a)
            if (p.node(p.node(n).args[a]).kind == NodeKind::Compact)
                broken(fmt::format("{} reads {}", describe(p, n), describe(p, p.node(n).args[a])));
    for (const NodeId n : p.ids()) {
        if (p.node(n).kind != NodeKind::Compact) continue;
        bool out = false;
        for (const OutputDecl& od : p.outputs) out = out || (od.node == n && od.alias_input < 0);
        if (!out) broken(fmt::format("{} is no output of its own (or one written in place)", describe(p, n)));
    }
    for (const RunCheck& c : p.checks) {
        if (c.output < 0 || static_cast<std::size_t>(c.output) >= p.outputs.size())
            broken(fmt::format("a run-time check of output {} of {}", c.output, p.outputs.size()));
        const OutputDecl& od = p.outputs[static_cast<std::size_t>(c.output)];
        const Node& nd = p.node(od.node);
        if (!od.name.empty() || od.alias_input >= 0 || nd.dtype != DType::Bool || !nd.shape.empty())
            broken(fmt::format("run-time check of output {}: not an unnamed 0-d bool", c.output));
    }
}

void verify(const Program& p, const Schedule& s) {
    verify(p);
    const std::size_t nn = p.nodes.size();
    if (s.stored_by.size() != nn || s.output_of.size() != nn)
        broken(fmt::format("schedule of {} nodes for a program of {}", s.stored_by.size(), nn));
    if (!s.spilled.empty() && s.spilled.size() != nn) broken("spilled flags for another program");
    const auto nstages = static_cast<std::int32_t>(s.stages.size());
    // Every stored node is stored by the stage stored_by names, and only there.
    NodeMap<int> stores(nn, 0);
    for (std::int32_t k = 0; k < nstages; ++k) {
        const Stage& st = s.stages[static_cast<std::size_t>(k)];
        auto stored_here = [&](NodeId n) {
            if (!n.valid() || n.index() >= nn) broken(fmt::format("stage {} stores node {}", k, n));
            if (s.stored_by[n] != k)
                broken(fmt::format("stage {} stores {}, which stored_by gives to stage {}", k, describe(p, n),
                                   s.stored_by[n]));
            ++stores[n];
        };
        if (st.kind == Stage::Kind::Compact) {
            if (st.stores.empty()) broken(fmt::format("compact stage {} stores nothing", k));
            for (const NodeId n : st.stores) {
                stored_here(n);
                const Node& nd = p.node(n);
                if (nd.kind != NodeKind::Compact) broken(fmt::format("compact stage {} stores {}", k, describe(p, n)));
                const Node& first = p.node(st.stores[0]);
                if (nd.args[1] != first.args[1] || nd.axis != first.axis)
                    broken(fmt::format("compact stage {} stores selections by different masks", k));
                if (p.node(nd.args[0]).shape != st.shape)
                    broken(fmt::format("compact stage {} over {} selects from {} of shape {}", k,
                                       shape_to_string(st.shape), describe(p, nd.args[0]),
                                       shape_to_string(p.node(nd.args[0]).shape)));
            }
        } else if (st.has_root()) {
            const bool scan = st.kind == Stage::Kind::Scan;
            const char* what = scan ? "scan" : "reduce";
            if (!st.reduce.valid() || st.reduce.index() >= nn ||
                p.node(st.reduce).kind != (scan ? NodeKind::Scan : NodeKind::Reduce))
                broken(fmt::format("{} stage {} without a {} node", what, k, scan ? "Scan" : "Reduce"));
            if (!st.stores.empty()) broken(fmt::format("{} stage {} stores element-wise values too", what, k));
            stored_here(st.reduce);
            if (st.shape != p.node(p.node(st.reduce).args[0]).shape)
                broken(fmt::format("{} stage {} iterates {}, its operand has {}", what, k, shape_to_string(st.shape),
                                   shape_to_string(p.node(p.node(st.reduce).args[0]).shape)));
        } else {
            if (st.stores.empty()) broken(fmt::format("element-wise stage {} stores nothing", k));
            for (const NodeId n : st.stores) {
                stored_here(n);
                if (p.node(n).shape != st.shape)
                    broken(fmt::format("stage {} over {} stores {} of shape {}", k, shape_to_string(st.shape),
                                       describe(p, n), shape_to_string(p.node(n).shape)));
            }
        }
    }
    for (const NodeId n : p.ids()) {
        const std::int32_t by = s.stored_by[n];
        if (by < -1 || by >= nstages)
            broken(fmt::format("{} is stored by stage {} of {}", describe(p, n), by, nstages));
        if ((by >= 0) != (stores[n] == 1))
            broken(fmt::format("{}: stored_by {}, stored {} times", describe(p, n), by, stores[n]));
        if ((is_stage_root(p.node(n).kind) || p.node(n).kind == NodeKind::Compact) && by < 0)
            broken(fmt::format("{} is stored by no stage", describe(p, n)));
        if (p.node(n).kind == NodeKind::Compact && by >= 0 &&
            s.stages[static_cast<std::size_t>(by)].kind != Stage::Kind::Compact)
            broken(fmt::format("{} is stored by stage {}, which is no compact stage", describe(p, n), by));
    }
    // Outputs: output_of names each output's node, every output is stored.
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const NodeId n = p.outputs[o].node;
        const std::int32_t first = s.output_of[n];
        if (first < 0 || static_cast<std::size_t>(first) > o || p.outputs[static_cast<std::size_t>(first)].node != n)
            broken(fmt::format("output {} ({}) has output_of {}", o, describe(p, n), first));
        if (s.stored_by[n] < 0) broken(fmt::format("output {} ({}) is stored by no stage", o, describe(p, n)));
    }
    for (const NodeId n : p.ids()) {
        const std::int32_t o = s.output_of[n];
        if (o >= 0 &&
            (static_cast<std::size_t>(o) >= p.outputs.size() || p.outputs[static_cast<std::size_t>(o)].node != n))
            broken(fmt::format("{} has output_of {}", describe(p, n), o));
    }
    // Temporaries: exactly the stored nodes that are no output, each once.
    NodeMap<int> temp(nn, 0);
    for (const NodeId n : s.temps) {
        if (!n.valid() || n.index() >= nn) broken(fmt::format("temporary of node {}", n));
        ++temp[n];
    }
    for (const NodeId n : p.ids()) {
        const bool needs = s.stored_by[n] >= 0 && s.output_of[n] < 0;
        if (temp[n] != (needs ? 1 : 0)) broken(fmt::format("{}: {} temporaries", describe(p, n), temp[n]));
    }
    // Passes: the stages in order, each in one pass.
    std::vector<std::int32_t> pass_of(static_cast<std::size_t>(nstages), -1);
    {
        std::int32_t next = 0;
        for (std::size_t q = 0; q < s.passes.size(); ++q) {
            const Pass& ps = s.passes[q];
            if (ps.first != next || ps.end <= ps.first || ps.end > nstages)
                broken(fmt::format("pass {} is stages [{}, {}); stage {} comes next of {}", q, ps.first, ps.end, next,
                                   nstages));
            for (std::int32_t k = ps.first; k < ps.end; ++k) pass_of[static_cast<std::size_t>(k)] = ps.first;
            next = ps.end;
        }
        if (next != nstages) broken(fmt::format("the passes cover {} of {} stages", next, nstages));
    }
    auto shares_pass = [&](std::int32_t k) {
        const std::int32_t first = pass_of[static_cast<std::size_t>(k)];
        return first != k || (k + 1 < nstages && pass_of[static_cast<std::size_t>(k + 1)] == first);
    };
    // Inputs an output overwrites (and views of their arrays): no stage sharing a pass reads one.
    std::vector<char> overwritten(p.inputs.size(), 0);
    for (const auto& o : p.outputs)
        if (o.alias_input >= 0)
            for (std::size_t j = 0; j < p.inputs.size(); ++j)
                if (p.inputs[j].name == p.inputs[static_cast<std::size_t>(o.alias_input)].name) overwritten[j] = 1;
    for (std::int32_t k = 0; k < nstages; ++k) {
        if (!shares_pass(k)) continue;
        const Stage& st = s.stages[static_cast<std::size_t>(k)];
        const Stage& first = s.stages[static_cast<std::size_t>(pass_of[static_cast<std::size_t>(k)])];
        if (st.shape != first.shape)
            broken(fmt::format("stage {} over {} shares a pass over {}", k, shape_to_string(st.shape),
                               shape_to_string(first.shape)));
        if (!shares_passes(p, st)) {
            const std::string what = st.kind == Stage::Kind::Compact ? std::string("is a mask selection")
                                     : st.kind == Stage::Kind::Scan  ? std::string("is a scan")
                                     : info(p.node(st.reduce).op).finish == Finish::Select
                                         ? std::string("is an order statistic")
                                         : fmt::format("reduces axis {}", p.node(st.reduce).axis);
            broken(fmt::format("stage {} {} and shares a pass", k, what));
        }
    }
    // Each stage reads from memory (Reduce and Scan results, spilled nodes stored elsewhere) only
    // what an earlier stage stored, and of a pass it shares, nothing another stage of it stores.
    NodeMap<std::uint32_t> mark(nn, 0);
    std::vector<NodeId> stack;
    for (std::int32_t k = 0; k < nstages; ++k) {
        const bool shared = shares_pass(k);
        const std::int32_t pass_first = pass_of[static_cast<std::size_t>(k)];
        walk_stage(
            p, s, static_cast<std::size_t>(k), mark, stack,
            [&](NodeId n, const Node& nd) {
                if (shared && nd.kind == NodeKind::Input && nd.slot >= 0 &&
                    static_cast<std::size_t>(nd.slot) < overwritten.size() &&
                    overwritten[static_cast<std::size_t>(nd.slot)])
                    broken(fmt::format("stage {} shares a pass and reads {}, which an output overwrites", k,
                                       describe(p, n)));
            },
            [&](NodeId n, std::int32_t by) {
                if (by > k)
                    broken(fmt::format("stage {} reads {}, which the later stage {} stores", k, describe(p, n), by));
                if (shared && by >= pass_first)
                    broken(fmt::format("stage {} reads {}, which stage {} of its pass stores", k, describe(p, n), by));
            });
    }
}

void verify(const Plan& plan) {
    verify(plan.program, plan.schedule);
    if (plan.direct_alias.size() != plan.program.outputs.size())
        broken(
            fmt::format("{} in-place decisions for {} outputs", plan.direct_alias.size(), plan.program.outputs.size()));
    for (std::size_t o = 0; o < plan.direct_alias.size(); ++o)
        if (plan.direct_alias[o] && plan.program.outputs[o].alias_input < 0)
            broken(fmt::format("output {} is written in place into no input", o));
    const auto r = plan.result_output;
    if (r < -1 || (r >= 0 && (static_cast<std::size_t>(r) >= plan.program.outputs.size() ||
                              plan.program.outputs[static_cast<std::size_t>(r)].node != plan.program.result)))
        broken(fmt::format("result output {}", r));
}

}  // namespace jit::ir

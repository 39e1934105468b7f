// jitexpr — the row split of a program (see rows.hpp).
#include "dsl/rows.hpp"

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace jit::dsl {

namespace {

RowSplit refuse(std::string why) {
    RowSplit r;
    r.why_not = std::move(why);
    return r;
}

// What a part needs to compute a node of each kind, one line a kind: nothing beyond its own
// rows (Own), or every part first (`streamed` says why, in streaming's words) because the node
// selects by the data (Select: its length) or runs along the rows (Scan: each part's values
// need the parts before). A Reduce node computes a partial from its rows; its further rules
// (it folds only as a statement's value) are split_rows'. An Input node reads its own rows
// unless it is a view of its array (InputDecl::view), which is the input's answer (streaming's).
struct KindRows {
    enum class Part : std::uint8_t { Own, Select, Scan };
    Part part = Part::Own;
    std::string_view streamed;  // Select, Scan: why the program is not streamed
};

KindRows kind_rows(ir::NodeKind kind) {
    using Part = KindRows::Part;
    switch (kind) {
        case ir::NodeKind::Input:
        case ir::NodeKind::Scalar:
        case ir::NodeKind::Const:
        case ir::NodeKind::Op:
        case ir::NodeKind::Cast:
        case ir::NodeKind::Reduce: return {Part::Own, ""};
        case ir::NodeKind::Compact:
            return {Part::Select, "a boolean-mask selection's length is known only once all of its data is read"};
        case ir::NodeKind::Scan:
            return {Part::Scan, "a scan (cumsum, cumprod) is not streamed (each chunk needs the ones before)"};
    }
    return {Part::Select, "a node of an unknown kind"};
}

std::string_view needs_every_part(const ir::Node& node) { return kind_rows(node.kind).streamed; }

// Per output, what its own nodes need (rows.hpp, OwnRows): the nodes its value reaches without
// passing through another output's node.
std::vector<OwnRows> own_rows(const ir::Program& prog) {
    ir::NodeMap<std::uint8_t> is_output(prog.nodes.size(), 0);
    for (const auto& od : prog.outputs) is_output[od.node] = 1;
    std::vector<OwnRows> out;
    for (const auto& od : prog.outputs) {
        OwnRows own;
        ir::NodeMap<std::uint8_t> seen(prog.nodes.size(), 0);
        std::vector<ir::NodeId> todo{od.node};
        seen[od.node] = 1;
        while (!todo.empty()) {
            const ir::Node& node = prog.node(todo.back());
            todo.pop_back();
            const KindRows k = kind_rows(node.kind);
            own.selects = own.selects || k.part == KindRows::Part::Select;
            own.scans = own.scans || k.part == KindRows::Part::Scan;
            for (int a = 0; a < node.nargs; ++a) {
                const ir::NodeId arg = node.args[a];
                if (seen[arg] || is_output[arg]) continue;
                seen[arg] = 1;
                todo.push_back(arg);
            }
        }
        out.push_back(own);
    }
    return out;
}

// Whether input shape `in` (right-aligned against `s`) has S's full extent (1), is broadcast (2),
// or neither (0) on the leading `k` axes of `s`.
int role_on(const Shape& in, const Shape& s, int k) {
    const int off = static_cast<int>(s.size()) - static_cast<int>(in.size());
    bool full = true, broadcast = true;
    for (int j = 0; j < k; ++j) {
        const std::int64_t e = j < off ? 1 : in[static_cast<std::size_t>(j - off)];
        const std::int64_t se = s[static_cast<std::size_t>(j)];
        if (!(j >= off && e == se)) full = false;
        if (e != 1) broadcast = false;
    }
    if (full && !broadcast) return 1;
    if (broadcast) return 2;
    return 0;
}

}  // namespace

bool RowSplit::splits() const { return first_refusal().empty(); }

std::string RowSplit::first_refusal() const {
    if (!why_not.empty()) return why_not;
    for (const InputRows& i : inputs)
        if (!i.why.empty()) return i.why;
    for (const OutputRows& o : outputs)
        if (o.how == OutputRows::How::Refused) return o.why;
    return "";
}

RowSplit split_rows(const ir::Program& prog, const RowsOptions& options) {
    RowSplit r = split_rows(prog, options.small_row_bytes);
    if (options.per_output) r.own = own_rows(prog);
    return r;
}

RowSplit split_rows(const ir::Program& prog, std::size_t small_row_bytes) {
    if (prog.outputs.empty()) return refuse("the program has no output");
    for (const ir::Node& node : prog.nodes)
        if (node.kind == ir::NodeKind::Compact) return refuse(std::string(needs_every_part(node)));
    if (!prog.checks.empty())
        return refuse("a reduction of a boolean-mask selection is checked once all of its data is read");

    ir::NodeMap<std::uint8_t> is_output_root(prog.nodes.size(), 0);
    for (const auto& od : prog.outputs) is_output_root[od.node] = 1;
    for (ir::NodeId n : prog.ids()) {
        const ir::Node& node = prog.node(n);
        for (int a = 0; a < node.nargs; ++a)
            if (prog.node(node.args[a]).kind == ir::NodeKind::Reduce)
                return refuse("a reduction's value is used in further arithmetic (it needs every chunk first)");
        if (const std::string_view why = needs_every_part(node); !why.empty()) return refuse(std::string(why));
        if (node.kind == ir::NodeKind::Reduce) {
            if (node.axis >= 0) return refuse("a reduction along one axis is not streamed");
            if (ir::info(node.op).rule == ir::Rule::ArgFirst)
                return refuse("a positional reduction (argmin, argmax) is not streamed");
            if (!is_output_root[n]) return refuse("a reduction that is not a statement's value is not streamed");
        }
    }

    // S: the shape of the element-wise outputs and of what the reductions read.
    RowSplit r;
    bool have_shape = false;
    auto take_shape = [&](const Shape& s) {
        if (!have_shape) {
            r.shape = s;
            have_shape = true;
            return true;
        }
        return r.shape == s;
    };
    for (const auto& od : prog.outputs) {
        const ir::Node& node = prog.node(od.node);
        if (node.kind == ir::NodeKind::Reduce) {
            if (!take_shape(prog.node(node.args[0]).shape))
                return refuse("the program's outputs and reductions are of different shapes");
        } else if (!take_shape(node.shape)) {
            return refuse("the program's outputs are of different shapes");
        }
    }
    if (r.shape.empty()) return refuse("the program computes a single element");
    if (shape_size(r.shape) == 0) return refuse("the program computes no element");

    // The split: as many leading axes as every input allows (each full or broadcast on them),
    // but no more than needed to make a row small (collapsing more axes only shrinks rows).
    const int nd = static_cast<int>(r.shape.size());
    std::size_t element_bytes = 0;  // one element of every operand together
    for (const auto& od : prog.outputs) element_bytes += itemsize(prog.node(od.node).dtype);
    for (const auto& in : prog.inputs) element_bytes += in.itemsize ? in.itemsize : itemsize(in.dtype);
    int split = 0;
    for (int k = 1; k <= nd; ++k) {
        bool ok = true;
        for (const auto& in : prog.inputs)
            if (role_on(in.shape, r.shape, k) == 0) ok = false;
        if (!ok) break;
        split = k;
        std::int64_t row_elems = 1;
        for (int j = k; j < nd; ++j) row_elems *= r.shape[static_cast<std::size_t>(j)];
        if (static_cast<std::size_t>(row_elems) * element_bytes <= small_row_bytes) break;
    }
    if (split == 0) return refuse("an input is broadcast along the outer axis on one part and not on another");
    r.split = split;
    r.rows = 1;
    for (int j = 0; j < split; ++j) r.rows *= r.shape[static_cast<std::size_t>(j)];
    r.row_elements = 1;
    for (int j = split; j < nd; ++j) r.row_elements *= r.shape[static_cast<std::size_t>(j)];

    std::vector<bool> read(prog.inputs.size(), false);
    for (const ir::Node& node : prog.nodes)
        if (node.kind == ir::NodeKind::Input && node.slot >= 0) read[static_cast<std::size_t>(node.slot)] = true;
    for (std::size_t i = 0; i < prog.inputs.size(); ++i) {
        const ir::InputDecl& in = prog.inputs[i];
        InputRows ir;
        ir.read = read[i];
        // Parts re-bind each name to rows of its array, which a slice of it does not follow.
        if (in.view) ir.why = fmt::format("the program reads a slice of '{}'", in.name);
        ir.chunked = role_on(in.shape, r.shape, split) == 1;
        if (ir.chunked) {
            ir.row_shape.assign(in.shape.begin() + split, in.shape.end());
            // (an S or U array's rows are its width times their elements, as numbers' are)
            ir.row_bytes =
                static_cast<std::size_t>(shape_size(ir.row_shape)) * (in.itemsize ? in.itemsize : itemsize(in.dtype));
        }
        // An Arrow string column's rows are of no one size and its bytes are a buffer apart from
        // its offsets: no part reads a block of it as bytes.
        if (in.dtype == DType::Utf8 && ir.why.empty())
            ir.why = fmt::format(
                "'{}' is an Arrow string column, whose rows have no fixed size: it is not cut into chunks (evaluate "
                "it whole, or pass a NumPy S or U array)",
                in.name);
        r.inputs.push_back(std::move(ir));
    }

    for (const auto& od : prog.outputs) {
        const ir::Node& node = prog.node(od.node);
        OutputRows o;
        o.dtype = node.dtype;
        if (node.kind == ir::NodeKind::Reduce) {
            o.how = OutputRows::How::Combine;
            o.reduction = node.op;
            const ir::Finish f = ir::info(node.op).finish;
            if (f != ir::Finish::Keep && f != ir::Finish::DivideByCount) {
                o.how = OutputRows::How::Refused;
                o.why = fmt::format("the reduction {} is not streamed", ir::spelling(node.op));
            }
        } else {
            o.row_bytes = static_cast<std::size_t>(r.row_elements) * itemsize(node.dtype);
        }
        r.outputs.push_back(std::move(o));
    }
    return r;
}

}  // namespace jit::dsl

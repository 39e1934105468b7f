#include "dsl/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jit::ir {

namespace {
// Compact stages, in output order: one per mask node and iteration space (the Compact nodes
// of b[m] and (b * 2)[m] share the pass that evaluates m).
void add_compact_stages(const Program& p, Schedule& s) {
    for (const OutputDecl& od : p.outputs) {
        const NodeId node = od.node;
        const Node& nd = p.node(node);
        if (nd.kind != NodeKind::Compact || s.stored_by[node] >= 0) continue;
        const Shape& space = p.node(nd.args[0]).shape;
        std::int32_t stage = -1;
        for (std::size_t k = 0; k < s.stages.size(); ++k) {
            const Stage& st = s.stages[k];
            if (st.kind == Stage::Kind::Compact && st.shape == space && p.node(st.stores[0]).args[1] == nd.args[1] &&
                p.node(st.stores[0]).axis == nd.axis)
                stage = static_cast<std::int32_t>(k);
        }
        if (stage < 0) {
            Stage st;
            st.kind = Stage::Kind::Compact;
            st.shape = space;
            stage = static_cast<std::int32_t>(s.stages.size());
            s.stages.push_back(std::move(st));
        }
        s.stages[static_cast<std::size_t>(stage)].stores.push_back(node);
        s.stored_by[node] = stage;
    }
}
}  // namespace

Schedule schedule(const Program& p) {
    Schedule s;
    const std::size_t n = p.nodes.size();
    s.stored_by.assign(n, -1);
    s.output_of.assign(n, -1);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const NodeId node = p.outputs[o].node;
        if (s.output_of[node] < 0) s.output_of[node] = static_cast<std::int32_t>(o);
    }
    // Reductions and scans first, in node order: each reads only inputs and earlier ones.
    for (const NodeId i : p.ids()) {
        const Node& nd = p.node(i);
        if (!is_stage_root(nd.kind)) continue;
        Stage st;
        st.kind = nd.kind == NodeKind::Scan ? Stage::Kind::Scan : Stage::Kind::Reduce;
        st.shape = p.node(nd.args[0]).shape;
        st.reduce = i;
        s.stored_by[i] = static_cast<std::int32_t>(s.stages.size());
        s.stages.push_back(std::move(st));
        if (s.output_of[i] < 0) s.temps.push_back(i);
    }
    add_compact_stages(p, s);
    // Then the other outputs, one stage per distinct shape, in output order.
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const NodeId node = p.outputs[o].node;
        if (s.stored_by[node] >= 0) continue;  // a reduction or scan, or stored already
        const Shape& shape = p.node(node).shape;
        std::int32_t stage = -1;
        for (std::size_t k = 0; k < s.stages.size(); ++k)
            if (s.stages[k].kind == Stage::Kind::Elementwise && s.stages[k].shape == shape)
                stage = static_cast<std::int32_t>(k);
        if (stage < 0) {
            Stage st;
            st.kind = Stage::Kind::Elementwise;
            st.shape = shape;
            stage = static_cast<std::int32_t>(s.stages.size());
            s.stages.push_back(std::move(st));
        }
        s.stages[static_cast<std::size_t>(stage)].stores.push_back(node);
        s.stored_by[node] = stage;
    }
    s.passes = find_passes(p, s);
    return s;
}

bool shares_passes(const Program& p, const Stage& st) {
    if (st.kind == Stage::Kind::Elementwise) return true;
    if (st.kind != Stage::Kind::Reduce) return false;  // Compact, Scan
    const Node& r = p.node(st.reduce);
    return r.axis < 0 && info(r.op).finish != Finish::Select;
}

std::vector<Pass> find_passes(const Program& p, const Schedule& s) {
    const std::size_t n = p.nodes.size();
    // Inputs that an output overwrites, and views of their arrays: a pass reading one would read
    // and write it in one sweep.
    std::vector<char> overwritten(p.inputs.size(), 0);
    for (const auto& o : p.outputs)
        if (o.alias_input >= 0 && static_cast<std::size_t>(o.alias_input) < p.inputs.size())
            for (std::size_t j = 0; j < p.inputs.size(); ++j)
                if (p.inputs[j].name == p.inputs[static_cast<std::size_t>(o.alias_input)].name) overwritten[j] = 1;
    NodeMap<std::uint32_t> mark(n, 0);
    std::vector<NodeId> stack;
    std::vector<Pass> passes;
    bool open = false;  // whether the last pass may take more stages
    for (std::size_t k = 0; k < s.stages.size(); ++k) {
        const Stage& st = s.stages[k];
        const auto stage = static_cast<std::int32_t>(k);
        // Whether the stage may share a pass at all, and the latest earlier stage whose stored
        // value it reads from memory.
        bool joinable = shares_passes(p, st);
        std::int32_t reads_from = -1;
        walk_stage(
            p, s, k, mark, stack,
            [&](NodeId, const Node& nd) {
                if (nd.kind == NodeKind::Input && nd.slot >= 0 &&
                    static_cast<std::size_t>(nd.slot) < overwritten.size() &&
                    overwritten[static_cast<std::size_t>(nd.slot)])
                    joinable = false;
            },
            [&](NodeId, std::int32_t by) { reads_from = std::max(reads_from, by); });
        if (open && joinable && st.shape == s.stages[static_cast<std::size_t>(passes.back().first)].shape &&
            reads_from < passes.back().first) {
            passes.back().end = stage + 1;
            continue;
        }
        passes.push_back(Pass{stage, stage + 1});
        open = joinable;
    }
    return passes;
}

namespace {

// Nodes a stage computes inline for `root`: the root and its operands, transitively, stopping at
// values read from memory (Reduce and Scan results, spilled nodes; each counts one: the load).
class Closure {
public:
    Closure(const Program& p, const NodeMap<std::uint8_t>& spilled)
        : p_(p), spilled_(spilled), mark_(p.nodes.size(), 0) {}

    // The nodes, in no particular order; stops early once more than `limit` were found.
    const std::vector<NodeId>& of(NodeId root, std::size_t limit) {
        ++stamp_;
        found_.clear();
        stack_.assign(1, root);
        while (!stack_.empty() && found_.size() <= limit) {
            const NodeId x = stack_.back();
            stack_.pop_back();
            auto& m = mark_[x];
            if (m == stamp_) continue;
            m = stamp_;
            found_.push_back(x);
            const Node& nd = p_.node(x);
            // Read from memory; a Reduce or Scan root too (its operand belongs to its own stage).
            if (is_stage_root(nd.kind) || (x != root && spilled_[x])) continue;
            for (int a = 0; a < nd.nargs; ++a) stack_.push_back(nd.args[a]);
        }
        return found_;
    }

private:
    const Program& p_;
    const NodeMap<std::uint8_t>& spilled_;
    NodeMap<std::uint32_t> mark_;
    std::uint32_t stamp_ = 0;
    std::vector<NodeId> found_, stack_;
};

bool computed(const Node& n) { return n.kind == NodeKind::Op || n.kind == NodeKind::Cast; }
// A node whose operands a stage computes inline, and so counts against the limit.
bool costed(const Node& n) { return computed(n) || n.kind == NodeKind::Compact; }

}  // namespace

Schedule split_large_stages(const Program& p, const Schedule& s, std::size_t max_nodes) {
    if (max_nodes < 8) throw InternalError(fmt::format("split_large_stages: limit {} is below 8 nodes", max_nodes));
    const std::size_t n = p.nodes.size();
    if (n <= max_nodes) return s;  // no stage can be larger than the program
    if (s.stored_by.size() != n || s.output_of.size() != n)
        throw InternalError("split_large_stages: the schedule is not the program's");

    // Nodes some stage computes: from every output and every reduction's operand.
    NodeMap<std::uint8_t> live(n, 0);
    {
        std::vector<NodeId> stack;
        for (const auto& o : p.outputs) stack.push_back(o.node);
        for (const NodeId i : p.ids())
            if (is_stage_root(p.node(i).kind)) stack.push_back(i);
        while (!stack.empty()) {
            const NodeId x = stack.back();
            stack.pop_back();
            if (live[x]) continue;
            live[x] = 1;
            const Node& nd = p.node(x);
            for (int a = 0; a < nd.nargs; ++a) {
                if (!nd.args[a].valid() || nd.args[a] >= x)
                    throw InternalError("split_large_stages: nodes out of order");
                stack.push_back(nd.args[a]);
            }
        }
    }

    // In node order, an upper bound of the nodes computed inline for each value (its operands'
    // bounds added: exact for trees, more where operands share nodes; then the exact count is
    // taken). Where a value would exceed the limit, its largest operands are spilled (stored by
    // a stage of their own) until it fits: each spilled operand then costs one load.
    NodeMap<std::uint8_t> spilled(n, 0);
    NodeMap<std::size_t> cost(n, 1);
    Closure closure(p, spilled);
    auto read_cost = [&](NodeId a) { return is_stage_root(p.node(a).kind) || spilled[a] ? std::size_t{1} : cost[a]; };
    auto bound = [&](const Node& nd) {
        std::size_t c = 1;
        for (int a = 0; a < nd.nargs; ++a) {
            bool repeat = false;
            for (int b = 0; b < a; ++b) repeat = repeat || nd.args[b] == nd.args[a];
            if (!repeat) c += read_cost(nd.args[a]);
        }
        return std::min(c, max_nodes + 1);
    };
    for (const NodeId i : p.ids()) {
        const Node& nd = p.node(i);
        if (!live[i] || !costed(nd)) continue;
        std::size_t c = bound(nd);
        if (c > max_nodes) {
            const std::size_t exact = closure.of(i, max_nodes).size();
            if (exact <= max_nodes) c = exact;
        }
        while (c > max_nodes) {
            NodeId heaviest;
            for (int a = 0; a < nd.nargs; ++a) {
                const NodeId x = nd.args[a];
                if (!computed(p.node(x)) || spilled[x]) continue;
                if (!heaviest.valid() || cost[x] > cost[heaviest]) heaviest = x;
            }
            if (!heaviest.valid()) throw InternalError("split_large_stages: no operand left to spill");
            spilled[heaviest] = 1;
            c = bound(nd);
        }
        cost[i] = c;
    }

    Schedule r;
    r.stored_by.assign(n, -1);
    r.output_of = s.output_of;
    // Reductions, scans and spilled nodes in node order: each reads only what lower nodes hold.
    for (const NodeId node : p.ids()) {
        const Node& nd = p.node(node);
        Stage st;
        if (is_stage_root(nd.kind)) {
            st.kind = nd.kind == NodeKind::Scan ? Stage::Kind::Scan : Stage::Kind::Reduce;
            st.shape = p.node(nd.args[0]).shape;
            st.reduce = node;
        } else if (spilled[node]) {
            st.kind = Stage::Kind::Elementwise;
            st.shape = nd.shape;
            st.stores.push_back(node);
        } else {
            continue;
        }
        r.stored_by[node] = static_cast<std::int32_t>(r.stages.size());
        r.stages.push_back(std::move(st));
        if (r.output_of[node] < 0) r.temps.push_back(node);
    }
    // Compact stages as they were (each Compact node fits: the spilling above saw to it).
    for (const Stage& old : s.stages) {
        if (old.kind != Stage::Kind::Compact) continue;
        for (const NodeId x : old.stores) r.stored_by[x] = static_cast<std::int32_t>(r.stages.size());
        r.stages.push_back(old);
    }
    // Then the outputs of each former element-wise stage, divided where together they would
    // compute more than the limit (each alone fits: the spilling above saw to it).
    NodeMap<std::uint32_t> in_group(n, 0);
    std::uint32_t group_id = 1;
    for (const Stage& old : s.stages) {
        if (old.kind != Stage::Kind::Elementwise) continue;
        Stage st;
        st.kind = Stage::Kind::Elementwise;
        st.shape = old.shape;
        std::size_t used = 0;
        auto flush = [&] {
            if (st.stores.empty()) return;
            for (const NodeId x : st.stores) r.stored_by[x] = static_cast<std::int32_t>(r.stages.size());
            r.stages.push_back(st);
            st.stores.clear();
            used = 0;
            ++group_id;
        };
        for (const NodeId x : old.stores) {
            if (r.stored_by[x] >= 0) continue;  // spilled: stored already
            const auto& nodes = closure.of(x, max_nodes);
            std::size_t added = 0;
            for (const NodeId y : nodes) added += in_group[y] != group_id;
            if (used + added > max_nodes) {
                flush();
                added = nodes.size();
            }
            for (const NodeId y : nodes) in_group[y] = group_id;
            st.stores.push_back(x);
            used += added;
        }
        flush();
    }
    if (std::any_of(spilled.begin(), spilled.end(), [](std::uint8_t v) { return v != 0; }))
        r.spilled = std::move(spilled);
    r.passes = find_passes(p, r);
    return r;
}

TempLayout layout_temps(const Program& p, const Schedule& s, std::size_t align) {
    if (align == 0 || (align & (align - 1)) != 0) throw InternalError("layout_temps: alignment is not a power of two");
    const std::size_t n = p.nodes.size();
    // The last stage reading each node from memory: Reduce results of other stages, and values
    // spilled by other stages (what codegen reads as buffers).
    NodeMap<std::int32_t> last_read(n, -1);
    NodeMap<std::uint32_t> mark(n, 0);
    std::vector<NodeId> stack;
    for (std::size_t k = 0; k < s.stages.size(); ++k) {
        const auto stage = static_cast<std::int32_t>(k);
        walk_stage(
            p, s, k, mark, stack, [](NodeId, const Node&) {},
            [&](NodeId x, std::int32_t) { last_read[x] = std::max(last_read[x], stage); });
    }
    // First fit, in the order the temporaries are stored: a block is reused once its last
    // occupant's last reader has run (lifetimes that merely touch do not share: a stage may read
    // one temporary while it writes another).
    struct Block {
        std::size_t offset, bytes;
        std::int32_t free_after;  // the stage after which the block may be reused
    };
    std::vector<Block> blocks;
    std::vector<std::size_t> order(s.temps.size());
    for (std::size_t t = 0; t < order.size(); ++t) order[t] = t;
    auto start = [&](std::size_t t) { return s.stored_by[s.temps[t]]; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return start(a) < start(b); });
    TempLayout out;
    out.offset.assign(s.temps.size(), 0);
    for (std::size_t t : order) {
        const Node& nd = p.node(s.temps[t]);
        std::size_t bytes =
            std::max<std::size_t>(1, static_cast<std::size_t>(shape_size(nd.shape)) * itemsize(nd.dtype));
        bytes = (bytes + align - 1) / align * align;
        const std::int32_t from = start(t);
        const std::int32_t until = std::max(from, last_read[s.temps[t]]);
        Block* fit = nullptr;
        for (auto& b : blocks)
            if (b.free_after < from && b.bytes >= bytes && (!fit || b.bytes < fit->bytes)) fit = &b;
        if (!fit) {
            blocks.push_back(Block{out.bytes, bytes, until});
            out.bytes += bytes;
            fit = &blocks.back();
        }
        fit->free_after = until;
        out.offset[t] = fit->offset;
    }
    return out;
}

Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target) {
    Strides r;
    broadcast_strides(shape, strides, target, r);
    return r;
}

void broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target, Strides& r) {
    r.assign(target.size(), 0);
    if (shape.size() > target.size()) throw InternalError("broadcast_strides: source has more dimensions than target");
    const std::size_t off = target.size() - shape.size();
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == target[k + off]) {
            r[k + off] = shape[k] == 1 ? 0 : strides[k];
        } else if (shape[k] == 1) {
            r[k + off] = 0;
        } else {
            throw InternalError(
                fmt::format("broadcast_strides: extent {} does not broadcast to {}", shape[k], target[k + off]));
        }
    }
}

}  // namespace jit::ir

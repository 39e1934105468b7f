// jitexpr — how a checked program is split into passes over memory. Shared by every backend so
// that they agree on what is fused and what is stored.
//
//   * Every Reduce node is its own Reduce stage: its operand's expression is evaluated inline,
//     fused into the reduction, over the operand's shape. Every Scan node likewise is its own
//     Scan stage (the operand fused into the scan); what reads a scan's value is a later stage.
//   * Every other output is stored by an Elementwise stage; outputs of one shape share a stage
//     (one kernel writes them all).
//   * Stages run in order; Reduce and Scan stages come first (in node order), so a stage only
//     reads values of earlier stages. A Reduce or Scan result used by later expressions is read
//     from its buffer (an output, or a temporary) with broadcasting, like an input.
//   * Compact nodes (boolean-mask selections) sharing one mask and iteration space share a
//     Compact stage, after the reductions: it evaluates the mask and the values over the
//     space and writes the values where the mask is true, in C order, packed. How many that
//     is the data decides: the stage's outputs are allocated by the backend once it has
//     counted (detail::RunArgs::allocate).
//   * Everything else (inputs, scalars, constants, casts, ops) is computed inline in registers,
//     recomputed in every stage that needs it.
//   * Consecutive stages over one iteration space form a pass (Schedule::passes) when each is
//     element-wise or a reduction of every axis (not an order statistic), none reads what
//     another of the pass stores, and none reads an input that an output overwrites. A Compact,
//     Scan or order-statistic stage is always a pass of its own: the length of a selection is
//     the data's, a scan and a selection of ranks go through their rows in an order of their own. A backend may evaluate a pass in one sweep
//     over the data, each value its stages share computed once per element (the CPU backend
//     does: one block program with several roots, its stores and its reductions' operands).
//     The CUDA backend launches one kernel per stage today; a kernel of a whole pass (stores and
//     grid-wide reductions together) would follow the same passes.
#pragma once

#include "dsl/ir.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jit::ir {

struct Stage {
    enum class Kind : std::uint8_t { Elementwise, Reduce, Compact, Scan };
    Kind kind = Kind::Elementwise;
    Shape shape;                 // iteration space (Reduce, Scan: the shape of the operand; Compact: of the values)
    std::vector<NodeId> stores;  // Elementwise: nodes written to memory, in output order; Compact: the
                                 // Compact nodes, all of one mask (args[1]) and one `axis`
    NodeId reduce;               // Reduce: the Reduce node; Scan: the Scan node
    // Whether the stage computes one node of its own, `reduce` (a Reduce or Scan stage: the
    // schedule's stage roots, is_stage_root), whose operand it evaluates inline.
    bool has_root() const { return kind == Kind::Reduce || kind == Kind::Scan; }
};

// Whether `st` may share a pass with other stages (see above): an element-wise stage, or a
// reduction of every axis that accumulates (no order statistic).
bool shares_passes(const Program& program, const Stage& st);

// Stages [first, end) of Schedule::stages.
struct Pass {
    std::int32_t first = 0, end = 0;
};

struct Schedule {
    std::vector<Stage> stages;
    // The stages in order, in runs that may be evaluated in one sweep (see above); every stage in
    // exactly one pass. schedule() and split_large_stages() fill it (find_passes).
    std::vector<Pass> passes;
    // Per node: index of the stage that stores it, or -1 if it is computed inline where used.
    NodeMap<std::int32_t> stored_by;
    // Per node: index into Program::outputs if the node is an output, else -1. A node may be
    // several outputs (c = a + b; d = c): the first one is recorded here and the others are
    // copies the API layer makes.
    NodeMap<std::int32_t> output_of;
    // Stored nodes that are not outputs (Reduce and Scan results read by later stages, and nodes
    // split_large_stages stores): each needs a temporary buffer of the node's dtype and shape,
    // C-contiguous.
    std::vector<NodeId> temps;
    // Per node, or empty: 1 for a node that split_large_stages stores in a stage of its own so
    // that later stages read it from memory (its output, or a temporary) instead of recomputing
    // it. schedule() never sets it.
    NodeMap<std::uint8_t> spilled;
    bool is_spilled(NodeId node) const { return !spilled.empty() && spilled[node] != 0; }
};

// What stage k of `s` computes, once each node: from its root's operand and its stores through
// the operands, stopping at the values it reads from memory (a Reduce or Scan result, or a
// spilled node, that another stage stores). visit(node, Node) is called for each node the stage
// computes inline, read(node, stored_by) for each value it reads from memory. `mark` (one entry
// per node, zero before the first stage walked) tells seen nodes by the value k + 1, so one map
// serves every stage of a schedule; `stack` is scratch.
template <class Visit, class Read>
void walk_stage(const Program& p, const Schedule& s, std::size_t k, NodeMap<std::uint32_t>& mark,
                std::vector<NodeId>& stack, Visit&& visit, Read&& read) {
    const Stage& st = s.stages[k];
    const auto stage = static_cast<std::int32_t>(k);
    const auto seen = static_cast<std::uint32_t>(k + 1);
    stack.clear();
    if (st.has_root()) stack.push_back(p.node(st.reduce).args[0]);
    for (const NodeId x : st.stores) stack.push_back(x);
    while (!stack.empty()) {
        const NodeId x = stack.back();
        stack.pop_back();
        if (mark[x] == seen) continue;
        mark[x] = seen;
        const Node& nd = p.node(x);
        const std::int32_t by = s.stored_by[x];
        if ((is_stage_root(nd.kind) || s.is_spilled(x)) && by != stage) {
            read(x, by);
            continue;
        }
        visit(x, nd);
        if (is_stage_root(nd.kind)) continue;  // the stage's own root: its operand is pushed above
        for (int a = 0; a < nd.nargs; ++a) stack.push_back(nd.args[a]);
    }
}

Schedule schedule(const Program& program);

// The longest runs of consecutive stages of `s` that may share a pass (the rules above).
std::vector<Pass> find_passes(const Program& program, const Schedule& s);

// `s` (a schedule() of `program`) with no stage computing more than `max_nodes` nodes inline
// (max_nodes >= 8): where a value would need more, some of its operands are stored first by
// Elementwise stages of their own (marked in `spilled`; a temporary, or the output's memory
// when the node is an output) and read back from memory, and output stages holding too much
// are divided. Stages stay in an order where each reads only what earlier stages stored.
// Returns `s` unchanged when the program has at most `max_nodes` nodes. The cost: a
// temporary of the node's shape per spilled node (layout_temps lets those whose lifetimes do not
// overlap share memory: a long chain needs two), and a 16-bit float value is rounded to its
// dtype where it is stored (as NumPy rounds every operation), not kept in float32.
// (dsl::plan calls it with the backend's limit, e.g. cuda::kMaxStageNodes.)
Schedule split_large_stages(const Program& program, const Schedule& s, std::size_t max_nodes);

// Where the temporaries of a schedule live in one workspace. Each temporary lives from the stage
// that stores it to the last stage that reads it (both included); temporaries whose lifetimes do
// not overlap share memory, so a split chain needs two buffers, not one per split.
struct TempLayout {
    std::vector<std::size_t> offset;  // per entry of Schedule::temps: bytes from the start, aligned
    std::size_t bytes = 0;            // the workspace size the temporaries need
};
// `align` (a power of two) aligns every offset and size; an empty temporary takes one unit.
TempLayout layout_temps(const Program& program, const Schedule& s, std::size_t align = 256);

// Strides (in elements) for reading an array of `shape`/`strides` broadcast to `target`
// (NumPy rules: trailing axes aligned, extent-1 axes get stride 0). Size target.size().
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target);
// The same into `out` (its capacity reused: no allocation once it has grown).
void broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target, Strides& out);

}  // namespace jit::ir

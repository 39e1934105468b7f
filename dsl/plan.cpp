#include "dsl/plan.hpp"

#include "dsl/verify.hpp"

#include <algorithm>

namespace jit::dsl {

namespace {

// Inputs each stage reads, directly or through the values it computes inline. A stage reads
// from memory only the values that every backend reads from memory: Reduce results and spilled
// nodes that another stage stores. Any other value, an output stored by another stage included,
// is computed again where it is used, and so reads the inputs it is computed from.
std::vector<std::vector<bool>> inputs_read_by_stage(const ir::Program& p, const ir::Schedule& s) {
    std::vector<std::vector<bool>> r(s.stages.size(), std::vector<bool>(p.inputs.size(), false));
    std::vector<ir::NodeId> stack;
    ir::NodeMap<std::uint32_t> mark(p.nodes.size(), 0);
    for (std::size_t k = 0; k < s.stages.size(); ++k)
        ir::walk_stage(
            p, s, k, mark, stack,
            [&](ir::NodeId, const ir::Node& nd) {
                if (nd.kind == ir::NodeKind::Input) r[k][static_cast<std::size_t>(nd.slot)] = true;
            },
            [](ir::NodeId, std::int32_t) {});  // read from its buffer
    return r;
}

// In-place outputs: direct only when no other elementwise stage reads the array (reduction
// stages run before and are safe), and the stage writing it either stores nothing else or does
// not read the array itself: a stage of several outputs may then write each into its array
// (the analytics example's `speed = ...; tip_pct = ...` over existing columns: no fresh
// arrays to fault in, no copy back).
std::vector<std::uint8_t> decide_aliasing(const ir::Program& p, const ir::Schedule& s) {
    const auto reads = inputs_read_by_stage(p, s);
    std::vector<std::uint8_t> direct(p.outputs.size(), 0);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const ir::OutputDecl& od = p.outputs[o];
        if (od.alias_input < 0) continue;
        const std::int32_t stage = s.stored_by[od.node];
        const ir::Stage& st = s.stages[static_cast<std::size_t>(stage)];
        const std::size_t alias = static_cast<std::size_t>(od.alias_input);
        // A reduction writes its result after reading all of its operand, so it may write
        // into an array that no stage reads (`s = sum(x)` into an existing s: no copy,
        // nothing allocated, and so capturable into a CUDA graph). A scan likewise, into an
        // array it does not read itself (its kernels read a tile before writing it, but a
        // two-pass scan reads its operand twice).
        const bool reduce = st.has_root();
        bool ok = p.inputs[alias].shape == p.node(od.node).shape &&
                  (reduce ? !reads[static_cast<std::size_t>(stage)][alias]
                          : (st.stores.size() == 1 || !reads[static_cast<std::size_t>(stage)][alias]) &&
                                p.inputs[alias].shape == st.shape);
        for (std::size_t k = 0; k < s.stages.size() && ok; ++k)
            if (static_cast<std::int32_t>(k) != stage && reads[k][alias] &&
                (reduce || s.stages[k].kind != ir::Stage::Kind::Reduce))
                ok = false;
        // A view of the same array (a = a[::-1]) reads other elements than the one written.
        for (std::size_t k = 0; k < s.stages.size() && ok; ++k)
            for (std::size_t j = 0; j < p.inputs.size() && ok; ++j)
                if (j != alias && p.inputs[j].view && p.inputs[j].name == p.inputs[alias].name && reads[k][j])
                    ok = false;
        direct[o] = ok ? 1 : 0;
    }
    return direct;
}

}  // namespace

ir::Plan plan(ir::Program program, const Limits& limits) {
    ir::Plan r;
    r.program = std::move(program);
    const ir::Program& p = r.program;
    ir::Schedule s = ir::schedule(p);
    // Aliasing is decided on the schedule before the stage limits apply: splitting only adds
    // stages that store operands of an output before the stage that writes it, and an operand
    // of an output written in place is computed from the input's old values, so a decision
    // that holds for this schedule holds for the split one.
    r.direct_alias = decide_aliasing(p, s);
    r.schedule = limits.max_stage_nodes > 0 ? ir::split_large_stages(p, s, limits.max_stage_nodes) : std::move(s);
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (p.outputs[o].node == p.result) r.result_output = static_cast<std::int32_t>(o);
#ifndef NDEBUG
    ir::verify(r);  // debug builds check every plan a backend is given
#endif
    return r;
}

ir::Plan plan(const syntax::Module& module, std::string_view text, const Bindings& bindings, const Limits& limits) {
    return plan(lower(module, text, bindings.lookup, bindings.names), limits);
}

ir::Plan plan(std::string_view text, const Bindings& bindings, const Limits& limits) {
    return plan(syntax::parse(text), text, bindings, limits);
}

}  // namespace jit::dsl

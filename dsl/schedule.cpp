#include "dsl/schedule.hpp"

#include <fmt/format.h>

namespace jit::ir {

Schedule schedule(const Program& p) {
    Schedule s;
    const std::size_t n = p.nodes.size();
    s.stored_by.assign(n, -1);
    s.output_of.assign(n, -1);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const auto node = static_cast<std::size_t>(p.outputs[o].node);
        if (s.output_of[node] < 0) s.output_of[node] = static_cast<std::int32_t>(o);
    }
    // Reductions first, in node order: each reads only inputs and earlier reductions.
    for (std::size_t i = 0; i < n; ++i) {
        const Node& nd = p.nodes[i];
        if (nd.kind != NodeKind::Reduce) continue;
        Stage st;
        st.kind = Stage::Kind::Reduce;
        st.shape = p.nodes[static_cast<std::size_t>(nd.args[0])].shape;
        st.reduce = static_cast<std::int32_t>(i);
        s.stored_by[i] = static_cast<std::int32_t>(s.stages.size());
        s.stages.push_back(std::move(st));
        if (s.output_of[i] < 0) s.temps.push_back(static_cast<std::int32_t>(i));
    }
    // Then the other outputs, one stage per distinct shape, in output order.
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const std::int32_t node = p.outputs[o].node;
        const auto ni = static_cast<std::size_t>(node);
        if (s.stored_by[ni] >= 0) continue;  // a reduction, or stored already
        const Shape& shape = p.nodes[ni].shape;
        std::int32_t stage = -1;
        for (std::size_t k = 0; k < s.stages.size(); ++k)
            if (s.stages[k].kind == Stage::Kind::Elementwise && s.stages[k].shape == shape) stage = static_cast<std::int32_t>(k);
        if (stage < 0) {
            Stage st;
            st.kind = Stage::Kind::Elementwise;
            st.shape = shape;
            stage = static_cast<std::int32_t>(s.stages.size());
            s.stages.push_back(std::move(st));
        }
        s.stages[static_cast<std::size_t>(stage)].stores.push_back(node);
        s.stored_by[ni] = stage;
    }
    return s;
}

Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target) {
    Strides r(target.size(), 0);
    if (shape.size() > target.size()) throw InternalError("broadcast_strides: source has more dimensions than target");
    const std::size_t off = target.size() - shape.size();
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == target[k + off]) {
            r[k + off] = shape[k] == 1 ? 0 : strides[k];
        } else if (shape[k] == 1) {
            r[k + off] = 0;
        } else {
            throw InternalError(fmt::format("broadcast_strides: extent {} does not broadcast to {}", shape[k], target[k + off]));
        }
    }
    return r;
}

}  // namespace jit::ir

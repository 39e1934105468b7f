// jitexpr — how a checked program is split into passes over memory. Shared by every backend so
// that they agree on what is fused and what is stored.
//
//   * Every Reduce node is its own Reduce stage: its operand's expression is evaluated inline,
//     fused into the reduction, over the operand's shape.
//   * Every other output is stored by an Elementwise stage; outputs of one shape share a stage
//     (one kernel writes them all).
//   * Stages run in order; Reduce stages come first (in node order), so a stage only reads
//     values of earlier stages. A Reduce result used by later expressions is read from its
//     buffer (an output, or a temporary) with broadcasting, like an input.
//   * Everything else (inputs, scalars, constants, casts, ops) is computed inline in registers,
//     recomputed in every stage that needs it.
#pragma once

#include "dsl/ir.hpp"

#include <cstdint>
#include <vector>

namespace jit::ir {

struct Stage {
    enum class Kind : std::uint8_t { Elementwise, Reduce };
    Kind kind = Kind::Elementwise;
    Shape shape;                       // iteration space (Reduce: the shape of the operand)
    std::vector<std::int32_t> stores;  // Elementwise: nodes written to memory, in output order
    std::int32_t reduce = -1;          // Reduce: the Reduce node
};

struct Schedule {
    std::vector<Stage> stages;
    // Per node: index of the stage that stores it, or -1 if it is computed inline where used.
    std::vector<std::int32_t> stored_by;
    // Per node: index into Program::outputs if the node is an output, else -1. A node may be
    // several outputs (c = a + b; d = c): the first one is recorded here and the others are
    // copies the API layer makes.
    std::vector<std::int32_t> output_of;
    // Stored nodes that are not outputs (Reduce results read by later stages): each needs a
    // temporary buffer of the node's dtype and shape, C-contiguous.
    std::vector<std::int32_t> temps;
};

Schedule schedule(const Program& program);

// Strides (in elements) for reading an array of `shape`/`strides` broadcast to `target`
// (NumPy rules: trailing axes aligned, extent-1 axes get stride 0). Size target.size().
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target);

}  // namespace jit::ir

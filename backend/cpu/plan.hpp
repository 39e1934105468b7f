// jitexpr — the CPU backend's plan of a stage (private to backend/cpu/; planned by planner.cpp).
//
// Plan of a stage: the nodes its stored values (or its reduction operand) need, in node order,
// each turned into one instruction over a block: Load (an input or an earlier stage's buffer;
// contiguous inputs are read in place), Fill (constants and scalars, filled once per run and
// thread), Compute (a kernel from the table; an op with a scalar operand feeding one op with a
// block operand is one fused kernel, KernelTable::fused). Instruction results live in
// per-thread slots of kBlock elements, reused once their last reader has run.
#pragma once

#include "backend/cpu/kernels.hpp"
#include "backend/cpu/strings.hpp"
#include "dsl/ir.hpp"

#include <cstdint>
#include <vector>

namespace jit::cpu::impl {

using i64 = std::int64_t;

struct Instr {
    enum class Kind : std::uint8_t { Load, Fill, Compute };
    Kind kind = Kind::Compute;
    OpFn fn = nullptr;  // Compute
    int out = -1;       // slot written
    int in[3] = {-1, -1, -1};
    int nin = 0;
    ir::NodeId node;             // the node loaded, filled or computed
    int load = -1;               // Load: index into StagePlan::loads
    int store = -1;              // Compute: index into StagePlan::stores of the output it may write in place
    ir::NodeId inner;            // Compute, a fused pair: the node computed inside it (its first op)
    bool full = true;            // Fill: some reader needs the whole block (else only element 0 is written)
    std::uint8_t scalar_in = 0;  // Compute: bit k set when in[k] is read as one value (op_vs/op_sv)
    // Compute, a string op read straight from its column (strings.hpp): the column is
    // StagePlan::loads[load] (no block of it is loaded), in[0] the literal it meets.
    StringScanFn scan = nullptr;
};

struct LoadPlan {
    bool is_input = true;  // else an earlier stage's buffer (a Reduce or Scan node)
    int input = -1;        // is_input: the input's index
    ir::NodeId node;       // else: the Reduce or Scan node
    DType dtype = DType::Float32;
};

struct StorePlan {
    ir::NodeId node;
    int slot = -1;
    DType dtype = DType::Float32;
    int output = -1;  // index into args.outputs
};

// A stage root's plan: a reduction (or order statistic) or a scan, and where its result goes.
struct ReducePlan {
    ir::NodeId reduce_node;  // the Reduce or Scan node
    ir::NodeId operand;      // the value reduced or scanned (a root of the plan)
    int axis = -1;           // -1: every element
    Red red = Red::Sum;      // a scan: its accumulator's slot
    bool mean = false;
    int value_slot = -1;           // the operand's slot once the code has run
    DType dtype = DType::Float64;  // the register dtype (Bool for Any/All; an order statistic: the operand's)
    // A reduction's kernel for one block of the values in value_slot, of value_dtype: the slot's
    // own (KernelTable::reduce), or count_true for a sum of booleans cast to int64, which then
    // reads the booleans (the cast's operand) and computes no cast.
    ReduceFn block = nullptr;
    DType value_dtype = DType::Float64;
    int output = -1;  // args.outputs index, or -1 for a temporary
    int temp = -1;    // index into Schedule::temps
    int select = -1;  // an order statistic: its index into Program::order_stats (run_select)
};

// The block program of one stage, or of the stages of one pass (Schedule::passes) together: one
// instruction per value any of them needs, so a value they share is computed once per element.
struct StagePlan {
    // The stage's kind; a pass of several stages (element-wise stores and reductions of every
    // axis) is Elementwise.
    ir::Stage::Kind kind = ir::Stage::Kind::Elementwise;
    int first_stage = 0, end_stage = 0;  // the stages planned, [first, end)
    Shape shape;                         // iteration space (Reduce, Scan: the operand's shape)
    std::vector<LoadPlan> loads;
    std::vector<Instr> fills;  // run once per run and thread
    std::vector<Instr> code;   // per block
    std::vector<StorePlan> stores;
    // A Reduce or Scan stage's root, or a pass's reductions in stage order.
    std::vector<ReducePlan> reduces;
    int nslots = 0;
    // Bytes between consecutive slots: a block of the widest register type of the stage, plus
    // one cache line so that slots do not all start at the same L1 set.
    i64 slot_bytes = 0;
    // Compact stages: the mask's slot, and per Compact node where its values are.
    int mask_slot = -1;
    std::vector<StorePlan> compacts;
    int stages() const { return end_stage - first_stage; }
    const ReducePlan& root() const {
        if (reduces.size() != 1) throw InternalError("cpu backend: a stage without its one root");
        return reduces[0];
    }
    bool is_select() const { return kind == ir::Stage::Kind::Reduce && root().select >= 0; }
};

// Stage `k` alone (mask_only: a Compact stage's counting pass).
StagePlan plan_stage(const ir::Program& p, const ir::Schedule& s, std::size_t k, const KernelTable& kt,
                     bool mask_only = false);

// The stages of a pass together.
StagePlan plan_pass(const ir::Program& p, const ir::Schedule& s, const ir::Pass& pass, const KernelTable& kt);

}  // namespace jit::cpu::impl

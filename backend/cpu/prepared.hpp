// jitexpr — the CPU backend's prepared program (private to backend/cpu/): the run-time iteration
// spaces (space.cpp), the scan kernels (scans.cpp) and CpuPrepared, which binds a stage to a run's
// memory (bind.cpp) and runs it (run.cpp).
#pragma once

#include "backend/backend.hpp"
#include "backend/cpu/plan.hpp"
#include "backend/cpu/thread_pool.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace jit::cpu::impl {

// ---- run-time iteration spaces (space.cpp)
struct Operand {
    const char* base = nullptr;   // element (0, ..., 0)
    i64 item = 0;                 // bytes per stored element
    Strides strides;              // over the collapsed iteration space, in elements
    bool direct = false;          // contiguous and stored as its register type: read in place
    const char* chars = nullptr;  // a Utf8 column's data buffer (base: its offsets)
};

struct Space {
    Shape shape;  // collapsed
    i64 size = 0;
};

// Drops extent-1 axes and merges axes that every operand walks contiguously. With
// keep_last, the last axis (a reduction axis) stays apart. In place (axis k moves to w <= k),
// so binding a stage allocates nothing once the vectors have grown.
void collapse(Shape& shape, std::span<Strides* const> strides, bool keep_last);

// Copies `len` elements starting at flat index `start` (C order over `shape`) through `fn`
// (a load: memory -> block, or a store: block -> memory).
template <class Fn>
void walk(const Shape& shape, const Strides& strides, i64 start, i64 len, Fn&& fn) {
    const int nd = static_cast<int>(shape.size());
    if (nd == 0) {
        fn(i64{0}, i64{0}, i64{0}, len);
        return;
    }
    i64 idx[kMaxDims];
    i64 rem = start;
    for (int k = nd - 1; k >= 0; --k) {
        idx[k] = rem % shape[static_cast<std::size_t>(k)];
        rem /= shape[static_cast<std::size_t>(k)];
    }
    const i64 inner = shape[static_cast<std::size_t>(nd - 1)];
    const i64 inner_stride = strides[static_cast<std::size_t>(nd - 1)];
    i64 done = 0;
    while (done < len) {
        i64 off = 0;
        for (int k = 0; k < nd; ++k) off += idx[k] * strides[static_cast<std::size_t>(k)];
        const i64 run = std::min(len - done, inner - idx[nd - 1]);
        fn(off, inner_stride, done, run);
        done += run;
        idx[nd - 1] += run;
        for (int k = nd - 1; k > 0 && idx[k] == shape[static_cast<std::size_t>(k)]; --k) {
            idx[k] = 0;
            ++idx[k - 1];
        }
    }
}

i64 offset_of(i64 flat, const Shape& shape, const Strides& strides);

// A register value from an ir::Value of dtype t.
void value_to_reg(const ir::Value& v0, DType t, void* out);

// Per-thread block buffers of at least `bytes`, kept between runs.
std::byte* thread_scratch(std::size_t bytes);

// ---- scans (scans.cpp)
// out[i] = *carry = combine(*carry, in[i]), i < n, in order, over register values; with
// `first`, in[0] starts the row (out[0] = in[0], not identity + in[0]: -0.0 stays -0.0, as in
// NumPy). A 16-bit float's running value is rounded to its format at every step (NumPy's
// float16 cumsum).
using ScanFn = void (*)(const void* in, i64 n, void* out, void* carry, bool first);

// The scan of accumulator slot `r` (Sum or Prod) over register values of `t`; null for the
// dtypes lowering never scans (bool and the narrow integers become int64 or uint64 first).
ScanFn scan_kernel(Red r, DType t);

// ---- the prepared program
class CpuPrepared final : public detail::Prepared {
public:
    CpuPrepared(const ir::Program& p, const ir::Schedule& s, ThreadPool* pool)
        : program_(p), schedule_(s), kt_(kernels()), pool_(pool) {
        for (std::size_t k = 0; k < s.stages.size(); ++k) {
            plans_.push_back(plan_stage(program_, schedule_, k, kt_));
            count_plans_.push_back(s.stages[k].kind == ir::Stage::Kind::Compact
                                       ? plan_stage(program_, schedule_, k, kt_, true)
                                       : StagePlan{});
        }
        for (const auto& o : p.outputs)
            if (o.alias_input >= 0) aliased_inputs_.push_back(o.alias_input);
        pass_of_.assign(plans_.size(), -1);
        for (const ir::Pass& pass : s.passes) {
            if (pass.end - pass.first < 2) continue;
            for (int k = pass.first; k < pass.end; ++k)
                pass_of_[static_cast<std::size_t>(k)] = static_cast<int>(passes_.size());
            passes_.push_back(plan_pass(program_, schedule_, pass, kt_));
        }
    }

    void run(const detail::RunArgs& args) override;
    SourceSpan span_of(const StagePlan& sp) const;

    // What explain shows of each stage: the plan as run() will run it.
    std::vector<detail::KernelReport> reports() const;

private:
    struct Ctx {
        const detail::RunArgs* args;
        std::vector<std::shared_ptr<Storage>>* temps;
    };
    struct Bound {  // a stage bound to this run's memory
        const detail::RunArgs* args = nullptr;
        Space space;
        std::vector<Operand> loads;
        std::vector<Operand> stores;
        // Reduce, Scan
        i64 rows = 1, row_len = 0;
        Operand scan_out;  // Scan: the result over the (collapsed) iteration space
        char* out_base = nullptr;
        Shape out_shape;
        Strides out_strides;
        i64 out_item = 0;
        Strides temp_strides;  // a temporary's (contiguous) strides, while binding
    };

    void bind(const StagePlan& sp, const Ctx& ctx, Bound& b) const;
    void run_elementwise(const StagePlan& sp, const Bound& b) const;
    void run_reduce(const StagePlan& sp, const Bound& b) const;
    // A Compact stage: counts the mask per block, has the outputs allocated for the total, then
    // writes each block's selected values at the count of the blocks before it.
    void run_compact(std::size_t stage, const Ctx& ctx, Bound& b) const;
    void run_scan(const StagePlan& sp, const Bound& b) const;
    // An OrderStat stage: per row, the operand's values gathered block by block, then selected.
    void run_select(const StagePlan& sp, const Bound& b) const;
    template <class T, int H, class R>
    void select_rows(const StagePlan& sp, const Bound& b) const;
    void combine_partials(const ReducePlan& rp, const std::byte* partials, i64 n, std::byte* acc) const;
    // A pass of several stages (passes_) in one sweep over its iteration space.
    void run_pass(const StagePlan& pp, const Ctx& ctx, Bound& b) const;
    // Where a reduction's or scan's result goes (a whole output checked against it, or a temporary).
    char* reduce_target(const ReducePlan& rp, const Ctx& ctx) const;
    // Stores what eval_block computed for the block at `start` to the stage's outputs that the
    // kernels did not write in place.
    void store_block(const StagePlan& sp, const Bound& b, const void* const* ptr, i64 start, i64 len) const;
    // Evaluates one block; returns per-slot pointers in `ptr`.
    void eval_block(const StagePlan& sp, const Bound& b, std::byte* scratch, const void** ptr, i64 start,
                    i64 len) const;
    void fill(const StagePlan& sp, const Ctx& ctx, std::byte* scratch, const void** ptr) const;
    // Calls body(next) on each participating thread; next(u0, u1) takes the next run of units
    // [u0, u1) and returns false when none are left.
    template <class Body>
    void parallel(i64 units, i64 elements, detail::CallControl* control, Body&& body) const;

    ir::Program program_;
    ir::Schedule schedule_;
    const KernelTable& kt_;
    ThreadPool* pool_;
    std::vector<StagePlan> plans_;        // per stage
    std::vector<StagePlan> count_plans_;  // per stage: a Compact stage's counting pass (else empty)
    std::vector<int> aliased_inputs_;
    // The passes of several stages (Schedule::passes), each planned as one block program whose
    // roots are all their stores and reductions' operands: a statement's columns and the sums
    // over them (examples/analytics.cpp) read each block of their inputs once and compute each
    // value they share once per element. The blocks, their order and each reduction's combining
    // order are those of the stages run one by one, and the block kernels are the same: same
    // results, bit for bit. A pass over at most one block runs stage by stage (plans_).
    std::vector<StagePlan> passes_;
    std::vector<int> pass_of_;  // per stage: its index into passes_, or -1
};

}  // namespace jit::cpu::impl

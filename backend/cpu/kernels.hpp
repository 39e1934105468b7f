// jitexpr CPU backend — the table of block kernels. Every entry processes up to kBlock elements
// of "register" values (the C++ type an IR value is computed in: bool, the integer types,
// float for float16/bfloat16/float32, double, jx::c64, jx::c128) held in plain arrays.
//
// The table is instantiated from dsl/semantics.h by kernels.inc, compiled twice (baseline
// x86-64 and AVX2+FMA with glibc's libmvec for transcendentals); kernels() picks one at run time.
#pragma once

#include "dsl/ir.hpp"

#include <jit/dtype.hpp>

#include <cstdint>

namespace jit::cpu {

// Elements per block: every temporary of a block is this long. 512 keeps a float64 chain of
// temporaries in L1 (docs/cpu-performance.md has the measurements).
inline constexpr std::int64_t kBlock = 512;
// Bytes of the widest register type (complex128).
inline constexpr std::int64_t kMaxRegBytes = 16;

inline constexpr int kNumOps = static_cast<int>(ir::kNumOps);

// Register bytes of an IR value of dtype `t`.
constexpr std::int64_t reg_size(DType t) {
    if (is_half(t)) return 4;
    if (is_string(t)) return 16;  // a string value: pointer and length (backend/cpu/strings.hpp)
    return static_cast<std::int64_t>(itemsize(t));
}

// out[i] = op(in[0][i], in[1][i], ...), i < n. In the scalar-operand variants of binary ops
// (KernelTable::op_vs / op_sv) one input points to a single register value used for every i.
using OpFn = void (*)(const void* const* in, void* out, std::int64_t n);
// dst[i] = register(src[i * stride]) (stride in elements; 0 broadcasts one element).
using LoadFn = void (*)(const void* src, std::int64_t stride, void* dst, std::int64_t n);
// dst[i * stride] = storage(src[i]).
using StoreFn = void (*)(const void* src, void* dst, std::int64_t stride, std::int64_t n);
// *acc = combine(*acc, reduce(in[0..n))) in a fixed order (pairwise for float sums). `first` is
// the position of in[0] (flat, or along the reduced axis), which a positional reduction
// (ArgFirst) folds; the others ignore it.
using ReduceFn = void (*)(const void* in, std::int64_t n, void* acc, std::int64_t first);
// *acc = identity.
using IdentityFn = void (*)(void* acc);
// *acc = combine(*acc, *x), two accumulators (of the slot's accumulator type: the register
// type of the operand, int64 for ArgFirst).
using CombineFn = void (*)(void* acc, const void* x);
// *acc = *acc / count, in the register type (Mean).
using DivideFn = void (*)(void* acc, std::int64_t count);
// Convert one register value of `t` to a double (test and debugging aid) — not needed at run time.

// Fused pairs of arithmetic ops (docs/cpu-performance.md, "Fused scalar-then-block pairs"):
// t = op1(x, s) or op1(s, x) with one scalar operand s, then out = op2(t, y) or op2(y, t) with a
// block y, in one loop without storing t. in[0] = x (block), in[1] = s (one value), in[2] = y
// (block). Same jx::op calls in the same order, each result rounded: bitwise the two-pass result.
inline constexpr int kNumFuseOps = 4;  // Add, Sub, Mul, Div
constexpr int fuse_index(ir::Op op) {
    switch (op) {
        case ir::Op::Add: return 0;
        case ir::Op::Sub: return 1;
        case ir::Op::Mul: return 2;
        case ir::Op::Div: return 3;
        default: return -1;
    }
}
// Variant bits of KernelTable::fused.
inline constexpr int kFuseScalarLeft = 1;  // op1(s, x) rather than op1(x, s)
inline constexpr int kFuseTempRight = 2;   // op2(y, t) rather than op2(t, y)

// One slot of reduction kernels per reduction of the op table; a reduction that accumulates
// with another's functor (Mean with Sum's) runs that one's kernels (red_slot).
enum class Red : std::uint8_t {
#define JX_RED_Operator(Id)
#define JX_RED_Function(Id)
#define JX_RED_Result(Id) JX_RED_Function(Id)
#define JX_RED_Reduction(Id) Id,
#define JX_RED_Scan(Id)
#define JIT_OP(Id, Kind, ...) JX_RED_##Kind(Id)
#include "dsl/ops.def"
#undef JIT_OP
    Count
};
inline constexpr int kNumRed = static_cast<int>(Red::Count);

// The slot of a reduction op, Red::Count for any other op.
constexpr Red red_of_op(ir::Op op) {
    switch (op) {
#undef JX_RED_Reduction
#define JX_RED_Reduction(Id) \
    case ir::Op::Id:         \
        return Red::Id;
#define JIT_OP(Id, Kind, ...) JX_RED_##Kind(Id)
#include "dsl/ops.def"
#undef JIT_OP
        default: return Red::Count;
    }
}
#undef JX_RED_Operator
#undef JX_RED_Function
#undef JX_RED_Result
#undef JX_RED_Reduction
#undef JX_RED_Scan
// The kernels a reduction runs: its accumulator's (dsl/ops.def, Accumulate).
constexpr Red red_slot(ir::Op op) { return red_of_op(ir::info(op).accumulate); }
// Bytes of a slot's accumulator for operands of register dtype `t` (ArgFirst: an int64 position).
constexpr std::int64_t acc_size(Red r, DType t) { return r == Red::ArgFirst ? 8 : reg_size(t); }

struct KernelTable {
    const char* name = "";
    OpFn op[kNumOps][kNumDTypes] = {};  // [op][operand dtype]
    // Binary ops with one scalar operand: out[i] = op(in[0][i], *in[1]) (op_vs) and
    // out[i] = op(*in[0], in[1][i]) (op_sv). Null where only the two-block loop exists.
    OpFn op_vs[kNumOps][kNumDTypes] = {};
    OpFn op_sv[kNumOps][kNumDTypes] = {};
    // [fuse_index(op1)][fuse_index(op2)][variant bits][operand dtype]; float32/float64 only,
    // null elsewhere.
    OpFn fused[kNumFuseOps][kNumFuseOps][4][kNumDTypes] = {};
    OpFn cast[kNumDTypes][kNumDTypes] = {};  // [from][to]
    LoadFn load[kNumDTypes] = {};
    StoreFn store[kNumDTypes] = {};
    ReduceFn reduce[kNumRed][kNumDTypes] = {};
    IdentityFn identity[kNumRed][kNumDTypes] = {};
    CombineFn combine[kNumRed][kNumDTypes] = {};
    DivideFn divide[kNumDTypes] = {};
    // where(c, x, y) with x (bit 1) and/or y (bit 2) one value (in[1], in[2] point to it);
    // [operand dtype]. Index 0 is unused (op[Where]).
    OpFn where_scalar[4][kNumDTypes] = {};
    // A Sum slot's block reduction of a boolean block into an int64 accumulator: the count of
    // its true elements (sum(x > 0) without casting the block to int64 first).
    ReduceFn count_true = nullptr;
};

// The best table for this CPU (AVX2 when available, else baseline). Set JITEXPR_CPU_KERNELS=base
// to force the baseline.
const KernelTable& kernels();
const KernelTable& kernels_base();
const KernelTable* kernels_avx2();  // nullptr where not built

}  // namespace jit::cpu

// jitexpr — the CPU backend (see cpu_backend.hpp).
//
// Plan of a stage: the nodes its stored values (or its reduction operand) need, in node order,
// each turned into one instruction over a block: Load (an input or an earlier stage's buffer;
// contiguous inputs are read in place), Fill (constants and scalars, filled once per run and
// thread), Compute (a kernel from the table; an op with a scalar operand feeding one op with a
// block operand is one fused kernel, KernelTable::fused). Instruction results live in
// per-thread slots of kBlock elements, reused once their last reader has run.
//
// Run: the iteration space of a stage is split into blocks of kBlock elements; blocks are split
// in contiguous chunks over the thread pool. Block boundaries never depend on the thread count,
// so results (reductions included) are bitwise the same with 1 or N threads. A scan stage runs
// its rows in parallel and each row in order, element after element (NumPy's order: the same
// rounding as NumPy's cumsum).
#include "backend/cpu/cpu_backend.hpp"

#include "backend/cpu/kernels.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "core/device.hpp"
#include "dsl/semantics.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <boost/container/small_vector.hpp>

#if defined(JX_CPU_HAVE_AVX2)
#include <cpuid.h>
#endif

namespace jit::cpu {

const KernelTable& kernels() {
    static const KernelTable* chosen = [] {
        const char* env = std::getenv("JITEXPR_CPU_KERNELS");
        const bool force_base = env && std::string(env) == "base";
#if defined(JX_CPU_HAVE_AVX2)
        __builtin_cpu_init();
        // F16C through CPUID (leaf 1, ECX bit 29): clang before 15 has no "f16c" for
        // __builtin_cpu_supports.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
        if (!force_base && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)
            return kernels_avx2();
#else
        (void)force_base;
#endif
        return &kernels_base();
    }();
    return *chosen;
}

const char* kernels_name() { return kernels().name; }

#if !defined(JX_CPU_HAVE_AVX2)
const KernelTable* kernels_avx2() { return nullptr; }
#endif

namespace {

using i64 = std::int64_t;

// Most units (blocks) one thread takes from the shared counter at a time.
constexpr i64 kRunUnits = 128;
// ... and at most about this many elements, so that a stop is seen within a short time when a
// unit is large (a row of a reduction along an axis: 128 rows of 10^6 elements took seconds
// between two polls in a Debug build).
constexpr i64 kRunElements = i64{1} << 20;

// ---------------------------------------------------------------- plan
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

bool is_fill(const ir::Node& n) { return n.kind == ir::NodeKind::Const || n.kind == ir::NodeKind::Scalar; }

// The dtype an op's kernel is chosen by (its operands' common dtype).
DType operand_dtype(const ir::Program& p, const ir::Node& n) {
    if (n.op == ir::Op::Where) return p.node(n.args[1]).dtype;
    return p.node(n.args[0]).dtype;
}

// Plans the stages [first, end) of a schedule as one block program (one stage, or the stages of
// a pass), a planning step at a time (run() calls them in order; each reads what the earlier
// ones found).
class StagePlanner {
public:
    // mask_only: a Compact stage's counting pass (the mask alone).
    StagePlanner(const ir::Program& program, const ir::Schedule& schedule, int first, int end, const KernelTable& kt,
                 bool mask_only = false)
        : p(program), s(schedule), first(first), end(end), kt(kt), mask_only(mask_only) {
        if (first < 0 || end <= first || end > static_cast<int>(s.stages.size()))
            throw InternalError(fmt::format("cpu backend: no stages [{}, {}) to plan", first, end));
        const ir::Stage& st = s.stages[static_cast<std::size_t>(first)];
        sp.kind = end - first == 1 ? st.kind : ir::Stage::Kind::Elementwise;
        sp.first_stage = first;
        sp.end_stage = end;
        sp.shape = st.shape;
    }

    StagePlan run() {
        find_roots();
        mark_needed();
        pick_representatives();
        fuse_pairs();
        find_last_uses();
        select_instructions();
        size_slots();
        mark_full_fills();
        plan_stores();
        return std::move(sp);
    }

private:
    struct Fuse {
        OpFn fn = nullptr;
        ir::NodeId reads[3];  // x, s, y
        ir::NodeId inner;     // t, computed inside
    };
    static constexpr int kForever = std::numeric_limits<int>::max();

    void find_roots();
    void add_root_stage(const ir::Stage& stage);
    void mark_needed();
    void pick_representatives();
    void fuse_pairs();
    void find_last_uses();
    void select_instructions();
    void size_slots();
    void mark_full_fills();
    void plan_stores();
    int reads(ir::NodeId n, ir::NodeId* r) const;

    const ir::Program& p;
    const ir::Schedule& s;
    const int first, end;
    const KernelTable& kt;
    bool mask_only = false;
    StagePlan sp;
    std::vector<ir::NodeId> roots;  // what the stages store, and their reductions' operands
    ir::NodeMap<char> need;         // the roots need it
    ir::NodeMap<ir::NodeId> rep;    // the node whose value it is (casts to the same dtype)
    std::vector<ir::NodeId> order;  // the representatives needed, in node order
    ir::NodeMap<Fuse> fuse;         // the fused kernel computing it with its operand
    ir::NodeMap<char> fused_away;   // computed inside its reader's fused instruction
    ir::NodeMap<int> last;          // per value: position in `order` of its last reader
    ir::NodeMap<int> slot;          // the slot holding its value
};

// The roots of the stages: what they store, their reductions' and scans' operands (with where
// each result goes), a Compact stage's mask and values.
void StagePlanner::find_roots() {
    for (int k = first; k < end; ++k) {
        const ir::Stage& stage = s.stages[static_cast<std::size_t>(k)];
        if (stage.shape != sp.shape) throw InternalError("cpu backend: the stages of a pass differ in shape");
        if (end - first > 1 && !ir::shares_passes(p, stage))
            throw InternalError(fmt::format("cpu backend: stage {} cannot share a pass", k));
        if (stage.has_root()) {
            add_root_stage(stage);
        } else if (stage.kind == ir::Stage::Kind::Compact) {
            roots.push_back(p.node(stage.stores.at(0)).args[1]);  // the mask
            if (!mask_only)
                for (const ir::NodeId n : stage.stores) {
                    if (p.node(n).kind != ir::NodeKind::Compact || s.output_of[n] < 0)
                        throw InternalError("cpu backend: compact stage stores a node that is no compacted output");
                    roots.push_back(p.node(n).args[0]);
                }
        } else {
            for (const ir::NodeId n : stage.stores) {
                const int out = s.output_of[n];
                if (out < 0) throw InternalError("cpu backend: element-wise stage stores a node that is no output");
                roots.push_back(n);
            }
        }
    }
}

// A Reduce or Scan stage's root: what it reduces or scans, how, and where the result goes.
void StagePlanner::add_root_stage(const ir::Stage& stage) {
    const bool scan = stage.kind == ir::Stage::Kind::Scan;
    const ir::Node& r = p.node(stage.reduce);
    if (r.kind != (scan ? ir::NodeKind::Scan : ir::NodeKind::Reduce) || r.nargs != 1)
        throw InternalError(scan ? "cpu backend: scan stage without a Scan node"
                                 : "cpu backend: reduce stage without a Reduce node");
    ReducePlan rp;
    rp.reduce_node = stage.reduce;
    rp.operand = r.args[0];
    rp.axis = r.axis;
    rp.dtype = p.node(r.args[0]).dtype;
    rp.output = s.output_of[stage.reduce];
    if (rp.output < 0) {
        auto it = std::find(s.temps.begin(), s.temps.end(), stage.reduce);
        if (it == s.temps.end()) throw InternalError("cpu backend: a reduction or scan result has no buffer");
        rp.temp = static_cast<int>(it - s.temps.begin());
    }
    if (p.node(r.args[0]).shape != sp.shape) throw InternalError("cpu backend: a stage root over another shape");
    if (scan) {
        rp.red = red_slot(r.op);
        if (rp.red != Red::Sum && rp.red != Red::Prod)
            throw InternalError(fmt::format("cpu backend: {} is not a scan", ir::info(r.op).id));
        if (rp.axis >= static_cast<int>(sp.shape.size()))
            throw InternalError(fmt::format("cpu backend: scan axis {} out of range", rp.axis));
        if (rp.dtype != r.dtype) throw InternalError("cpu backend: scan operand dtype differs from the result's");
    } else if (ir::info(r.op).finish == ir::Finish::Select) {
        // A selection (run_select): the operand's values, no accumulator kernels.
        rp.select = r.slot;
        if (r.slot < 0 || static_cast<std::size_t>(r.slot) >= p.order_stats.size())
            throw InternalError("cpu backend: an order statistic without its description");
    } else {
        rp.red = red_slot(r.op);
        if (rp.red == Red::Count)
            throw InternalError(fmt::format("cpu backend: {} is not a reduction", ir::info(r.op).id));
        rp.mean = ir::info(r.op).finish == ir::Finish::DivideByCount;
        if (rp.axis >= static_cast<int>(sp.shape.size()))
            throw InternalError(fmt::format("cpu backend: reduction axis {} out of range", rp.axis));
        const int d = static_cast<int>(rp.dtype);
        if (!kt.reduce[static_cast<int>(rp.red)][d] || (rp.mean && !kt.divide[static_cast<int>(r.dtype)]))
            throw InternalError(
                fmt::format("cpu backend: no {} reduction for {}", ir::info(r.op).id, dtype_name(rp.dtype)));
        if (rp.dtype != r.dtype && ir::info(r.op).rule != ir::Rule::AnyAll && ir::info(r.op).rule != ir::Rule::ArgFirst)
            throw InternalError("cpu backend: reduction operand dtype differs from the result's");
        rp.block = kt.reduce[static_cast<int>(rp.red)][d];
        rp.value_dtype = rp.dtype;
        const ir::Node& x = p.node(rp.operand);
        if (rp.red == Red::Sum && rp.dtype == DType::Int64 && x.kind == ir::NodeKind::Cast &&
            p.node(x.args[0]).dtype == DType::Bool && kt.count_true) {
            rp.block = kt.count_true;
            rp.value_dtype = DType::Bool;
            rp.operand = x.args[0];
        }
    }
    sp.reduces.push_back(rp);
    roots.push_back(rp.operand);
}

// Nodes needed, in node (topological) order. Reduce and Scan nodes other than this stage's own
// are read from their buffers and not descended into.
void StagePlanner::mark_needed() {
    need.assign(p.nodes.size(), 0);
    std::vector<ir::NodeId> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
        const ir::NodeId n = stack.back();
        stack.pop_back();
        if (need[n]) continue;
        need[n] = 1;
        const ir::Node& nd = p.node(n);
        if (nd.kind == ir::NodeKind::Op || nd.kind == ir::NodeKind::Cast)
            for (int k = 0; k < nd.nargs; ++k) stack.push_back(nd.args[k]);
    }
}

// Representative of each node's value: a cast to the same dtype is its operand, a constant
// equal to an earlier one (same dtype, same bits) is that one, and an op or a cast that repeats
// an earlier one (the same op of the same operands' values: the text wrote `distance > 5`
// twice) is that one, so the value is computed once per element. (Every op of the table is a
// pure function of its operands.)
void StagePlanner::pick_representatives() {
    rep.assign(p.nodes.size(), ir::NodeId());
    // (kind, op, dtype, operands' representatives) -> the first node computing it
    using Key = std::tuple<ir::NodeKind, ir::Op, DType, std::int32_t, std::int32_t, std::int32_t, int>;
    std::map<Key, ir::NodeId> seen;
    using ConstKey = std::tuple<DType, bool, std::int64_t, std::uint64_t, std::uint64_t, std::uint64_t>;
    std::map<ConstKey, ir::NodeId> consts;
    auto bits = [](double v) {
        std::uint64_t u;
        std::memcpy(&u, &v, sizeof u);
        return u;
    };
    auto index_of = [](ir::NodeId x) { return x.valid() ? static_cast<std::int32_t>(x.index()) : -1; };
    for (const ir::NodeId n : p.ids()) {
        if (!need[n]) continue;
        const ir::Node& nd = p.node(n);
        if (nd.kind == ir::NodeKind::Cast && p.node(nd.args[0]).dtype == nd.dtype) {
            rep[n] = rep[nd.args[0]];
            continue;
        }
        if (nd.kind == ir::NodeKind::Const) {
            const ir::Value& v = nd.value;
            const auto [it, fresh] = consts.emplace(ConstKey{nd.dtype, v.b, v.i, v.u, bits(v.f), bits(v.im)}, n);
            if (!fresh && v.dtype == p.node(it->second).value.dtype && p.node(it->second).shape == nd.shape) {
                rep[n] = it->second;
                continue;
            }
        }
        if (nd.kind == ir::NodeKind::Op || nd.kind == ir::NodeKind::Cast) {
            ir::NodeId a[3];
            for (int k = 0; k < nd.nargs; ++k) a[k] = rep[nd.args[k]];
            const Key key{nd.kind,        nd.kind == ir::NodeKind::Op ? nd.op : ir::Op{},
                          nd.dtype,       index_of(a[0]),
                          index_of(a[1]), index_of(a[2]),
                          nd.nargs};
            const auto [it, fresh] = seen.emplace(key, n);
            if (!fresh && p.node(it->second).shape == nd.shape) {
                rep[n] = it->second;
                continue;
            }
        }
        rep[n] = n;
        order.push_back(n);
    }
}

// Fused pairs (KernelTable::fused): an arithmetic op t with one constant/scalar operand s and
// one block operand x, whose value is read only by one arithmetic op m of the same dtype whose
// other operand y is a block. t gets no instruction; m's reads x, s and y (in that order).
void StagePlanner::fuse_pairs() {
    ir::NodeMap<char> is_root(p.nodes.size(), 0);
    for (const ir::NodeId r : roots) is_root[rep[r]] = 1;
    ir::NodeMap<int> uses(p.nodes.size(), 0);
    for (const ir::NodeId n : order) {
        const ir::Node& nd = p.node(n);
        if (nd.kind == ir::NodeKind::Op || nd.kind == ir::NodeKind::Cast)
            for (int k = 0; k < nd.nargs; ++k) ++uses[rep[nd.args[k]]];
    }
    fuse.assign(p.nodes.size(), Fuse{});
    fused_away.assign(p.nodes.size(), 0);
    for (const ir::NodeId m : order) {
        const ir::Node& mn = p.node(m);
        if (mn.kind != ir::NodeKind::Op || mn.nargs != 2 || fuse_index(mn.op) < 0) continue;
        const DType od = operand_dtype(p, mn);
        for (int k = 0; k < 2; ++k) {
            const ir::NodeId t = rep[mn.args[k]];
            const ir::NodeId y = rep[mn.args[1 - k]];
            const ir::Node& tn = p.node(t);
            if (t == y || is_fill(p.node(y)) || tn.kind != ir::NodeKind::Op || tn.nargs != 2 || fuse_index(tn.op) < 0 ||
                tn.dtype != od || operand_dtype(p, tn) != od || uses[t] != 1 || is_root[t] || fuse[t].fn)
                continue;
            const ir::NodeId a0 = rep[tn.args[0]], a1 = rep[tn.args[1]];
            const bool s0 = is_fill(p.node(a0)), s1 = is_fill(p.node(a1));
            if (s0 == s1) continue;
            const int variant = (s0 ? kFuseScalarLeft : 0) | (k == 1 ? kFuseTempRight : 0);
            const OpFn fn = kt.fused[fuse_index(tn.op)][fuse_index(mn.op)][variant][static_cast<int>(od)];
            if (!fn) continue;
            Fuse& f = fuse[m];
            f.fn = fn;
            f.inner = t;
            f.reads[0] = s0 ? a1 : a0;
            f.reads[1] = s0 ? a0 : a1;
            f.reads[2] = y;
            fused_away[t] = 1;
            break;
        }
    }
}

// The values an instruction for node n reads (representatives), in operand order.
int StagePlanner::reads(ir::NodeId n, ir::NodeId* r) const {
    const Fuse& f = fuse[n];
    if (f.fn) {
        std::copy(f.reads, f.reads + 3, r);
        return 3;
    }
    const ir::Node& nd = p.node(n);
    if (nd.kind != ir::NodeKind::Op && nd.kind != ir::NodeKind::Cast) return 0;
    for (int k = 0; k < nd.nargs; ++k) r[k] = rep[nd.args[k]];
    return static_cast<int>(nd.nargs);
}

// Last use (position in `order`) of each value; roots live to the end.
void StagePlanner::find_last_uses() {
    last.assign(p.nodes.size(), -1);
    for (int pos = 0; pos < static_cast<int>(order.size()); ++pos) {
        const ir::NodeId n = order[static_cast<std::size_t>(pos)];
        if (fused_away[n]) continue;
        ir::NodeId r[3];
        const int nr = reads(n, r);
        for (int k = 0; k < nr; ++k) last[r[k]] = pos;
    }
    for (const ir::NodeId r : roots) last[rep[r]] = kForever;
}

// One instruction per value in `order`: loads, fills (constants and scalars) and kernels, each
// writing a slot that is reused once the value's last reader has run.
void StagePlanner::select_instructions() {
    slot.assign(p.nodes.size(), -1);
    std::vector<int> free_slots;
    auto take = [&] {
        if (!free_slots.empty()) {
            int k = free_slots.back();
            free_slots.pop_back();
            return k;
        }
        return sp.nslots++;
    };
    for (int pos = 0; pos < static_cast<int>(order.size()); ++pos) {
        const ir::NodeId n = order[static_cast<std::size_t>(pos)];
        const ir::Node& nd = p.node(n);
        if (fused_away[n]) continue;  // computed inside its reader's instruction
        Instr ins;
        ins.node = n;
        switch (nd.kind) {
            case ir::NodeKind::Const:
            case ir::NodeKind::Scalar:
                ins.kind = Instr::Kind::Fill;
                ins.out = sp.nslots++;  // never reused: filled once per run
                slot[n] = ins.out;
                sp.fills.push_back(ins);
                continue;
            case ir::NodeKind::Input:
            case ir::NodeKind::Reduce:
            case ir::NodeKind::Scan: {
                LoadPlan lp;
                lp.is_input = nd.kind == ir::NodeKind::Input;
                if (lp.is_input) lp.input = nd.slot;
                else lp.node = n;
                lp.dtype = lp.is_input ? p.inputs[static_cast<std::size_t>(nd.slot)].dtype : nd.dtype;
                if (lp.dtype != nd.dtype)
                    throw InternalError("cpu backend: input node dtype differs from its declaration");
                ins.kind = Instr::Kind::Load;
                ins.load = static_cast<int>(sp.loads.size());
                sp.loads.push_back(lp);
                break;
            }
            case ir::NodeKind::Op: {
                if (fuse[n].fn) {
                    ins.fn = fuse[n].fn;
                    ins.nin = 3;
                    ins.scalar_in = 2;
                    ins.inner = fuse[n].inner;
                    break;
                }
                const DType od = operand_dtype(p, nd);
                ins.fn = kt.op[static_cast<int>(nd.op)][static_cast<int>(od)];
                if (!ins.fn)
                    throw InternalError(
                        fmt::format("cpu backend: no kernel for {} on {}", ir::info(nd.op).id, dtype_name(od)));
                ins.nin = nd.nargs;
                // A binary op with exactly one constant/scalar operand reads it as one value.
                if (nd.nargs == 2) {
                    const bool s0 = is_fill(p.node(rep[nd.args[0]]));
                    const bool s1 = is_fill(p.node(rep[nd.args[1]]));
                    const OpFn vs = kt.op_vs[static_cast<int>(nd.op)][static_cast<int>(od)];
                    const OpFn sv = kt.op_sv[static_cast<int>(nd.op)][static_cast<int>(od)];
                    if (s1 && !s0 && vs) {
                        ins.fn = vs;
                        ins.scalar_in = 2;
                    } else if (s0 && !s1 && sv) {
                        ins.fn = sv;
                        ins.scalar_in = 1;
                    }
                } else if (nd.op == ir::Op::Where && nd.nargs == 3) {
                    // where(c, x, 0): a constant or scalar value operand is read as one value.
                    const int v =
                        (is_fill(p.node(rep[nd.args[1]])) ? 1 : 0) | (is_fill(p.node(rep[nd.args[2]])) ? 2 : 0);
                    if (v != 0 && kt.where_scalar[v][static_cast<int>(od)]) {
                        ins.fn = kt.where_scalar[v][static_cast<int>(od)];
                        ins.scalar_in = static_cast<std::uint8_t>(v << 1);
                    }
                }
                break;
            }
            case ir::NodeKind::Cast: {
                const DType from = p.node(nd.args[0]).dtype;
                ins.fn = kt.cast[static_cast<int>(from)][static_cast<int>(nd.dtype)];
                ins.nin = 1;
                break;
            }
            case ir::NodeKind::Compact: throw InternalError("cpu backend: a Compact node read as a value");
        }
        ir::NodeId rd[3];
        const int nr = reads(n, rd);
        for (int k = 0; k < ins.nin; ++k) ins.in[k] = slot[rd[k]];
        ins.out = take();
        slot[n] = ins.out;
        sp.code.push_back(ins);
        // Free the slots whose last reader this was (after taking `out`: kernels' pointers are restrict).
        for (int k = 0; k < nr; ++k) {
            const ir::NodeId a = rd[k];
            if (last[a] == pos && p.node(a).kind != ir::NodeKind::Const && p.node(a).kind != ir::NodeKind::Scalar) {
                const int sl = slot[a];
                if (std::find(free_slots.begin(), free_slots.end(), sl) == free_slots.end()) free_slots.push_back(sl);
            }
        }
    }
    for (const ir::NodeId n : p.ids())
        if (need[n] && slot[n] < 0) slot[n] = slot[rep[n]];
}

// Slot size from the widest register value the stage computes or loads.
void StagePlanner::size_slots() {
    i64 widest = 1;
    for (const ir::NodeId n : order) widest = std::max(widest, reg_size(p.node(n).dtype));
    sp.slot_bytes = (kBlock * widest + 63) / 64 * 64 + 64;
}

// Fills read only as scalars need one element; any block reader or a root needs them all.
void StagePlanner::mark_full_fills() {
    std::vector<char> block_read(static_cast<std::size_t>(sp.nslots), 0);
    for (const Instr& ins : sp.code)
        for (int k = 0; k < ins.nin; ++k)
            if (!(ins.scalar_in & (1u << k))) block_read[static_cast<std::size_t>(ins.in[k])] = 1;
    for (const ir::NodeId r : roots) block_read[static_cast<std::size_t>(slot[r])] = 1;
    for (Instr& f : sp.fills) f.full = block_read[static_cast<std::size_t>(f.out)] != 0;
}

// Where the stored values, the reductions' and scans' operands and a selection's mask and
// values are found once the code has run.
void StagePlanner::plan_stores() {
    for (ReducePlan& rp : sp.reduces) rp.value_slot = slot[rp.operand];
    for (int k = first; k < end; ++k) {
        const ir::Stage& stage = s.stages[static_cast<std::size_t>(k)];
        if (stage.has_root()) continue;
        if (stage.kind == ir::Stage::Kind::Compact) {
            sp.mask_slot = slot[p.node(stage.stores.at(0)).args[1]];
            if (!mask_only)
                for (const ir::NodeId n : stage.stores) {
                    StorePlan st;
                    st.node = n;
                    st.slot = slot[p.node(n).args[0]];
                    st.dtype = p.node(n).dtype;
                    st.output = s.output_of[n];
                    sp.compacts.push_back(st);
                }
            continue;
        }
        for (const ir::NodeId n : stage.stores) {
            StorePlan st;
            st.node = n;
            st.slot = slot[n];
            st.dtype = p.node(n).dtype;
            st.output = s.output_of[n];
            for (Instr& ins : sp.code)
                if (ins.kind == Instr::Kind::Compute && ins.node == n) ins.store = static_cast<int>(sp.stores.size());
            sp.stores.push_back(st);
        }
    }
}

// Stage `k` alone (mask_only: a Compact stage's counting pass).
StagePlan plan_stage(const ir::Program& p, const ir::Schedule& s, std::size_t k, const KernelTable& kt,
                     bool mask_only = false) {
    return StagePlanner(p, s, static_cast<int>(k), static_cast<int>(k) + 1, kt, mask_only).run();
}

// The stages of a pass together.
StagePlan plan_pass(const ir::Program& p, const ir::Schedule& s, const ir::Pass& pass, const KernelTable& kt) {
    return StagePlanner(p, s, pass.first, pass.end, kt).run();
}

}  // namespace

int count_fused_instructions(const ir::Program& program, const ir::Schedule& schedule, const KernelTable& kt) {
    int count = 0;
    for (std::size_t k = 0; k < schedule.stages.size(); ++k)
        for (const Instr& ins : plan_stage(program, schedule, k, kt).code)
            for (const auto& row : kt.fused)
                for (const auto& col : row)
                    for (const auto& var : col)
                        if (ins.fn && std::find(std::begin(var), std::end(var), ins.fn) != std::end(var)) ++count;
    return count;
}

std::vector<int> computations_per_element(const ir::Program& program, const ir::Schedule& schedule) {
    std::vector<int> count(program.nodes.size(), 0);
    for (const ir::Pass& pass : schedule.passes)
        for (const Instr& ins : plan_pass(program, schedule, pass, kernels()).code) {
            if (ins.kind != Instr::Kind::Compute) continue;
            ++count[ins.node.index()];
            if (ins.inner.valid()) ++count[ins.inner.index()];
        }
    return count;
}

namespace {

// ---------------------------------------------------------------- run-time iteration spaces
struct Operand {
    const char* base = nullptr;  // element (0, ..., 0)
    i64 item = 0;                // bytes per stored element
    Strides strides;             // over the collapsed iteration space, in elements
    bool direct = false;         // contiguous and stored as its register type: read in place
};

struct Space {
    Shape shape;  // collapsed
    i64 size = 0;
};

// Drops extent-1 axes and merges axes that every operand walks contiguously. With
// keep_last, the last axis (a reduction axis) stays apart. In place (axis k moves to w <= k),
// so binding a stage allocates nothing once the vectors have grown.
void collapse(Shape& shape, std::span<Strides* const> strides, bool keep_last) {
    const std::size_t nd = shape.size();
    std::size_t w = 0;
    for (std::size_t k = 0; k < nd; ++k) {
        const bool last_axis = keep_last && k + 1 == nd;
        if (shape[k] == 1 && !last_axis) continue;
        bool merge = w > 0 && !last_axis;
        if (merge) {
            for (Strides* st : strides)
                if ((*st)[w - 1] != (*st)[k] * shape[k]) merge = false;
        }
        if (merge) {
            shape[w - 1] *= shape[k];
            for (Strides* st : strides) (*st)[w - 1] = (*st)[k];
        } else {
            shape[w] = shape[k];
            for (Strides* st : strides) (*st)[w] = (*st)[k];
            ++w;
        }
    }
    shape.resize(w);
    for (Strides* st : strides) st->resize(w);
}

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

i64 offset_of(i64 flat, const Shape& shape, const Strides& strides) {
    i64 off = 0;
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
        const i64 e = shape[static_cast<std::size_t>(k)];
        off += (flat % e) * strides[static_cast<std::size_t>(k)];
        flat /= e;
    }
    return off;
}

// A register value from an ir::Value of dtype t.
void value_to_reg(const ir::Value& v0, DType t, void* out) {
    const ir::Value v = v0.dtype == t ? v0 : v0.cast(t);
    switch (t) {
        // clang-format off
        case DType::Bool: { bool b = v.b; std::memcpy(out, &b, 1); break; }
#define JX_SINT(D, T) case DType::D: { T x = static_cast<T>(v.i); std::memcpy(out, &x, sizeof x); break; }
#define JX_UINT(D, T) case DType::D: { T x = static_cast<T>(v.u); std::memcpy(out, &x, sizeof x); break; }
        JX_SINT(Int8, jx::i8) JX_SINT(Int16, jx::i16) JX_SINT(Int32, jx::i32) JX_SINT(Int64, jx::i64)
        JX_UINT(UInt8, jx::u8) JX_UINT(UInt16, jx::u16) JX_UINT(UInt32, jx::u32) JX_UINT(UInt64, jx::u64)
#undef JX_SINT
#undef JX_UINT
        case DType::Float16: { float x = jx::round_f16(v.f); std::memcpy(out, &x, 4); break; }
        case DType::BFloat16: { float x = jx::round_bf16(v.f); std::memcpy(out, &x, 4); break; }
        case DType::Float32: { float x = static_cast<float>(v.f); std::memcpy(out, &x, 4); break; }
        case DType::Float64: { double x = v.f; std::memcpy(out, &x, 8); break; }
        // clang-format on
        case DType::Complex64: {
            jx::c64 x{static_cast<float>(v.f), static_cast<float>(v.im)};
            std::memcpy(out, &x, 8);
            break;
        }
        case DType::Complex128: {
            jx::c128 x{v.f, v.im};
            std::memcpy(out, &x, 16);
            break;
        }
    }
}

// Per-thread block buffers, kept between runs.
struct alignas(64) CacheLine {
    std::byte b[64];
};
std::byte* thread_scratch(std::size_t bytes) {
    thread_local std::vector<CacheLine> buf;
    const std::size_t lines = (bytes + 63) / 64;
    if (buf.size() < lines) {
        try {
            buf.resize(lines);
        } catch (const std::bad_alloc&) {
            throw OutOfMemoryError(lines * 64, core::host_memory_available(), "a kernel thread's block buffers");
        }
    }
    return buf.empty() ? nullptr : buf.data()->b;
}

// ---------------------------------------------------------------- scans
// out[i] = *carry = combine(*carry, in[i]), i < n, in order, over register values; with
// `first`, in[0] starts the row (out[0] = in[0], not identity + in[0]: -0.0 stays -0.0, as in
// NumPy). A 16-bit float's running value is rounded to its format at every step (NumPy's
// float16 cumsum).
using ScanFn = void (*)(const void* in, i64 n, void* out, void* carry, bool first);

template <class R, class T, DType D>
void kscan(const void* in, i64 n, void* out, void* carry, bool first) {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    T c;
    std::memcpy(&c, carry, sizeof c);
    for (i64 i = 0; i < n; ++i) {
        c = first && i == 0 ? x[0] : R::combine(c, x[i]);
        if constexpr (D == DType::Float16) c = jx::round_f16(c);
        else if constexpr (D == DType::BFloat16) c = jx::round_bf16(c);
        y[i] = c;
    }
    std::memcpy(carry, &c, sizeof c);
}

template <class T, DType D>
ScanFn scan_of(Red r) {
    return r == Red::Prod ? &kscan<jx::red::Prod<T>, T, D> : &kscan<jx::red::Sum<T>, T, D>;
}

// The scan of accumulator slot `r` (Sum or Prod) over register values of `t`; null for the
// dtypes lowering never scans (bool and the narrow integers become int64 or uint64 first).
ScanFn scan_kernel(Red r, DType t) {
    if (r != Red::Sum && r != Red::Prod) return nullptr;
    switch (t) {
        case DType::Int64: return scan_of<jx::i64, DType::Int64>(r);
        case DType::UInt64: return scan_of<jx::u64, DType::UInt64>(r);
        case DType::Float16: return scan_of<float, DType::Float16>(r);
        case DType::BFloat16: return scan_of<float, DType::BFloat16>(r);
        case DType::Float32: return scan_of<float, DType::Float32>(r);
        case DType::Float64: return scan_of<double, DType::Float64>(r);
        case DType::Complex64: return scan_of<jx::c64, DType::Complex64>(r);
        case DType::Complex128: return scan_of<jx::c128, DType::Complex128>(r);
        default: return nullptr;
    }
}

// ---------------------------------------------------------------- the prepared program
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
    std::vector<detail::KernelReport> reports() const {
        std::vector<detail::KernelReport> out;
        const bool avx2 = std::string_view(kt_.name) == "avx2";
        auto instructions = [&](const StagePlan& sp) {
            int fused = 0;
            for (const Instr& ins : sp.code) fused += ins.inner.valid() ? 1 : 0;
            return fmt::format("{} instruction{} per block of {} elements ({} fused pair{}), kernels {}",
                               sp.code.size(), sp.code.size() == 1 ? "" : "s", kBlock, fused, fused == 1 ? "" : "s",
                               kt_.name);
        };
        for (std::size_t k = 0; k < plans_.size(); ++k) {
            const StagePlan& sp = plans_[k];
            detail::KernelReport r;
            r.stage = static_cast<int>(k);
            r.kind = sp.is_select() ? "select rows"
                     : sp.kind == ir::Stage::Kind::Reduce
                         ? (sp.root().axis >= 0 ? "reduce-axis blocks" : "reduce blocks")
                     : sp.kind == ir::Stage::Kind::Compact ? "compact blocks"
                     : sp.kind == ir::Stage::Kind::Scan    ? (sp.root().axis >= 0 ? "scan rows" : "scan in order")
                                                           : "blocks";
            r.index = "64-bit";
            // The widest value the stage holds in registers decides the lanes of its loops.
            std::size_t widest = 1;
            for (const StorePlan& st : sp.stores) widest = std::max(widest, itemsize(st.dtype));
            for (const LoadPlan& lp : sp.loads) widest = std::max(widest, itemsize(lp.dtype));
            for (const ReducePlan& rp : sp.reduces) widest = std::max(widest, itemsize(rp.dtype));
            r.vector = avx2 ? fmt::format("AVX2, 256-bit ({} lanes of {} bytes)",
                                          32 / std::min<std::size_t>(widest, 32), widest)
                            : std::string("portable loops (as the compiler vectorises them)");
            // The operand's instructions run over blocks; the scan itself goes element after element.
            if (sp.kind == ir::Stage::Kind::Scan) r.vector += "; the scan itself in order, one element after another";
            r.tier = "-";
            r.cache = "nothing to compile (block kernels built in)";
            const int pass = pass_of_[k];
            if (pass >= 0 && shape_size(sp.shape) > kBlock) {
                // One block program for the pass: its instructions are shown at its first stage.
                const StagePlan& pp = passes_[static_cast<std::size_t>(pass)];
                if (static_cast<int>(k) == pp.first_stage)
                    r.detail = fmt::format("stages {}-{} run in one pass: {}; a value they share is computed once",
                                           pp.first_stage, pp.end_stage - 1, instructions(pp));
                else
                    r.detail = fmt::format("in the pass of stages {}-{} (its instructions at stage {})", pp.first_stage,
                                           pp.end_stage - 1, pp.first_stage);
                r.pass = pp.first_stage;
            } else {
                r.detail = instructions(sp);
            }
            if (sp.kind == ir::Stage::Kind::Compact)
                r.detail += fmt::format(
                    "; two passes: the mask's true elements counted per block ({} instruction{}), the result "
                    "allocated for their total, then each block's selected values written at its offset (C order)",
                    count_plans_[k].code.size(), count_plans_[k].code.size() == 1 ? "" : "s");
            out.push_back(std::move(r));
        }
        return out;
    }

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

// Units are handed out in small runs from a shared counter, in increasing order: a thread that
// is slowed down (the machine is shared, or one core is busy) takes fewer runs instead of
// holding up the others, and the threads stream through neighbouring memory. Which thread
// evaluates a unit never changes what it computes, so results stay the same for any thread count.
template <class Body>
void CpuPrepared::parallel(i64 units, i64 elements, detail::CallControl* ctl, Body&& body) const {
    if (units <= 0) return;
    int threads = pool_ ? pool_->size() : 1;
    if (elements < kParallelThreshold) threads = 1;
    threads = static_cast<int>(std::min<i64>(threads, units));
    // Cancellation: every thread asks before each run of units it takes (two relaxed loads) and
    // takes no more once a stop is requested; the calling thread also ticks the control (its
    // poll function and progress callback). A stage cut short throws CancelledError here, after
    // every thread has finished its current run; one whose units were all taken completes.
    std::atomic<bool> cut{false};
    const double per_unit = static_cast<double>(elements) / static_cast<double>(units);
    const i64 run_cap =
        std::clamp<i64>(static_cast<i64>(static_cast<double>(kRunElements) / std::max(per_unit, 1.0)), 1, kRunUnits);
    auto account = [&](i64 u0, i64 u1) {
        if (ctl) ctl->add_done(static_cast<std::uint64_t>(static_cast<double>(u1 - u0) * per_unit));
    };
    if (threads <= 1) {
        // The whole range at once, unless someone may stop the call: then runs of run_cap units.
        const i64 run = ctl ? run_cap : units;
        i64 next_unit = 0;
        body([&](i64& u0, i64& u1) {
            if (next_unit >= units) return false;
            if (ctl && (ctl->wants_ticks() ? ctl->tick() : ctl->stop_requested())) {
                cut.store(true, std::memory_order_relaxed);
                return false;
            }
            u0 = next_unit;
            u1 = next_unit = std::min(units, u0 + run);
            account(u0, u1);
            return true;
        });
    } else {
        // About 8 runs per thread at least, and at most kRunUnits units (kRunElements elements) per run.
        const i64 run = std::clamp<i64>(units / (i64{threads} * 8), 1, run_cap);
        std::atomic<i64> next_unit{0};
        pool_->run([&](int t) {
            if (t >= threads) return;
            const bool ticks = t == 0 && ctl && ctl->wants_ticks();
            body([&](i64& u0, i64& u1) {
                if (ctl && (ticks ? ctl->tick() : ctl->stop_requested())) {
                    if (next_unit.load(std::memory_order_relaxed) < units) cut.store(true, std::memory_order_relaxed);
                    return false;
                }
                u0 = next_unit.fetch_add(run, std::memory_order_relaxed);
                if (u0 >= units) return false;
                u1 = std::min(units, u0 + run);
                account(u0, u1);
                return true;
            });
        });
    }
    if (cut.load(std::memory_order_relaxed)) detail::CallControl::throw_cancelled();
}

// Fills `b` for this run. Everything goes into b's own vectors, which keep their capacity from
// run to run (CpuPrepared::run keeps one Bound per thread): a repeated run allocates nothing here.
void CpuPrepared::bind(const StagePlan& sp, const Ctx& ctx, Bound& b) const {
    const auto& args = *ctx.args;
    b.args = ctx.args;
    Shape& shape = b.space.shape;
    shape.assign(sp.shape.begin(), sp.shape.end());
    if (b.loads.size() < sp.loads.size()) b.loads.resize(sp.loads.size());
    if (b.stores.size() < sp.stores.size()) b.stores.resize(sp.stores.size());
    for (std::size_t i = 0; i < sp.loads.size(); ++i) {
        const LoadPlan& lp = sp.loads[i];
        Operand& op = b.loads[i];
        op.item = static_cast<i64>(itemsize(lp.dtype));
        const Shape* src_shape = nullptr;
        const Strides* src_strides = nullptr;
        if (lp.is_input) {
            const Array& a = args.inputs[static_cast<std::size_t>(lp.input)];
            if (a.dtype() != lp.dtype)
                throw ArgumentError(fmt::format("input {} is {}, the program expects {}", lp.input,
                                                dtype_name(a.dtype()), dtype_name(lp.dtype)));
            op.base = static_cast<const char*>(a.data());
            src_shape = &a.shape();
            src_strides = &a.strides();
        } else {
            const int out = schedule_.output_of[lp.node];
            src_shape = &program_.node(lp.node).shape;
            if (out >= 0) {
                const Array& a = args.outputs[static_cast<std::size_t>(out)];
                op.base = static_cast<const char*>(a.data());
                src_strides = &a.strides();
            } else {
                auto it = std::find(schedule_.temps.begin(), schedule_.temps.end(), lp.node);
                op.base = reinterpret_cast<const char*>(
                    (*ctx.temps)[static_cast<std::size_t>(it - schedule_.temps.begin())]->data());
                b.temp_strides = contiguous_strides(*src_shape);
                src_strides = &b.temp_strides;
            }
        }
        ir::broadcast_strides(*src_shape, *src_strides, shape, op.strides);
    }
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        const StorePlan& st = sp.stores[i];
        const Array& a = args.outputs[static_cast<std::size_t>(st.output)];
        if (a.dtype() != st.dtype)
            throw ArgumentError(fmt::format("output {} is {}, the program computes {}", st.output,
                                            dtype_name(a.dtype()), dtype_name(st.dtype)));
        if (a.shape() != shape)
            throw ArgumentError(fmt::format("output {} has shape {}, the program computes {}", st.output,
                                            shape_to_string(a.shape()), shape_to_string(shape)));
        b.stores[i].base = static_cast<const char*>(a.data());
        b.stores[i].item = static_cast<i64>(itemsize(st.dtype));
        b.stores[i].strides.assign(a.strides().begin(), a.strides().end());
    }

    bool keep_last = false;
    b.rows = 1;
    b.row_len = 0;
    b.out_base = nullptr;
    b.out_item = 0;
    if (sp.kind == ir::Stage::Kind::Scan) {
        // The result over the iteration space: along an axis it has the operand's shape; over
        // every element it is 1-d, element k the k-th of the operand in C order.
        const ReducePlan& rp = sp.root();
        const ir::Node& r = program_.node(rp.reduce_node);
        Operand& o = b.scan_out;
        o.item = static_cast<i64>(itemsize(r.dtype));
        Strides rs;
        if (rp.output >= 0) {
            const Array& a = args.outputs[static_cast<std::size_t>(rp.output)];
            if (a.dtype() != r.dtype || a.shape() != r.shape)
                throw ArgumentError(fmt::format("output {} is {} {}, the program computes {} {}", rp.output,
                                                dtype_name(a.dtype()), shape_to_string(a.shape()), dtype_name(r.dtype),
                                                shape_to_string(r.shape)));
            o.base = static_cast<const char*>(a.data());
            rs.assign(a.strides().begin(), a.strides().end());
        } else {
            o.base = reinterpret_cast<const char*>((*ctx.temps)[static_cast<std::size_t>(rp.temp)]->data());
            rs = contiguous_strides(r.shape);
        }
        if (rp.axis >= 0) {
            o.strides.assign(rs.begin(), rs.end());
        } else {
            o.strides.assign(shape.size(), 0);
            i64 step = rs.empty() ? 1 : rs[0];
            for (std::size_t k = shape.size(); k-- > 0;) {
                o.strides[k] = step;
                step *= shape[k];
            }
        }
        const i64 n = shape_size(shape);
        if (rp.axis >= 0) {
            const std::size_t ax = static_cast<std::size_t>(rp.axis);
            b.row_len = shape[ax];
            b.rows = b.row_len == 0 ? 0 : n / b.row_len;
            auto move_last = [&](auto& v) {
                auto x = v[ax];
                v.erase(v.begin() + rp.axis);
                v.push_back(x);
            };
            move_last(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) move_last(b.loads[i].strides);
            move_last(o.strides);
            keep_last = true;
        } else {
            b.row_len = n;
            b.rows = 1;
        }
    } else if (sp.kind == ir::Stage::Kind::Reduce) {
        const ReducePlan& rp = sp.root();
        const i64 n = shape_size(shape);
        if (rp.select >= 0) {
            // The reduced axes last, in order: each row of the iteration space is one row of
            // the statistic (its elements in C order of the reduced axes).
            const std::uint32_t axes = program_.order_stats[static_cast<std::size_t>(rp.select)].axes;
            const std::size_t nd = shape.size();
            b.row_len = 1;
            b.rows = 1;
            for (std::size_t d = 0; d < nd; ++d) ((axes >> d) & 1u ? b.row_len : b.rows) *= shape[d];
            auto reorder = [&](auto& v) {
                auto kept = v;
                kept.clear();
                auto moved = kept;
                for (std::size_t d = 0; d < nd; ++d) ((axes >> d) & 1u ? moved : kept).push_back(v[d]);
                for (auto x : moved) kept.push_back(x);
                v.assign(kept.begin(), kept.end());
            };
            reorder(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) reorder(b.loads[i].strides);
            keep_last = true;
        } else if (rp.axis >= 0) {
            // Move the reduced axis last: each row of the iteration space is one result.
            const std::size_t ax = static_cast<std::size_t>(rp.axis);
            b.row_len = shape[ax];
            b.rows = b.row_len == 0 ? shape_size([&] {
                Shape s = shape;
                s.erase(s.begin() + rp.axis);
                return s;
            }())
                                    : n / b.row_len;
            auto move_last = [&](auto& v) {
                auto x = v[ax];
                v.erase(v.begin() + rp.axis);
                v.push_back(x);
            };
            move_last(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) move_last(b.loads[i].strides);
            keep_last = true;
        } else {
            b.row_len = n;
            b.rows = 1;
        }
        const ir::Node& r = program_.node(rp.reduce_node);
        b.out_shape.assign(r.shape.begin(), r.shape.end());
        b.out_item = static_cast<i64>(itemsize(r.dtype));
        b.out_base = reduce_target(rp, ctx);
        if (rp.output >= 0) {
            const Array& a = args.outputs[static_cast<std::size_t>(rp.output)];
            b.out_shape.assign(a.shape().begin(), a.shape().end());
            b.out_strides.assign(a.strides().begin(), a.strides().end());
        } else {
            b.out_strides = contiguous_strides(r.shape);
        }
    }

    boost::container::small_vector<Strides*, 16> all;
    for (std::size_t i = 0; i < sp.loads.size(); ++i) all.push_back(&b.loads[i].strides);
    for (std::size_t i = 0; i < sp.stores.size(); ++i) all.push_back(&b.stores[i].strides);
    if (sp.kind == ir::Stage::Kind::Scan) all.push_back(&b.scan_out.strides);
    collapse(shape, std::span<Strides* const>(all.data(), all.size()), keep_last);
    b.space.size = shape_size(shape);
    const bool flat = shape.size() <= 1;
    for (std::size_t i = 0; i < sp.loads.size(); ++i) {
        Operand& op = b.loads[i];
        const LoadPlan& lp = sp.loads[i];
        const bool aliased =
            lp.is_input && std::find(aliased_inputs_.begin(), aliased_inputs_.end(), lp.input) != aliased_inputs_.end();
        op.direct =
            !keep_last && flat && !is_half(lp.dtype) && !aliased && (shape.empty() ? false : op.strides[0] == 1);
    }
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        Operand& op = b.stores[i];
        // A contiguous output is written by the kernel computing it, no block copy.
        op.direct = flat && !is_half(sp.stores[i].dtype) && !shape.empty() && op.strides[0] == 1;
    }
}

void CpuPrepared::fill(const StagePlan& sp, const Ctx& ctx, std::byte* scratch, const void** ptr) const {
    for (const Instr& f : sp.fills) {
        const ir::Node& nd = program_.node(f.node);
        alignas(16) std::byte one[16];
        if (nd.kind == ir::NodeKind::Scalar) {
            if (static_cast<std::size_t>(nd.slot) >= ctx.args->scalars.size())
                throw ArgumentError(fmt::format("scalar {} is missing", nd.slot));
            value_to_reg(ctx.args->scalars[static_cast<std::size_t>(nd.slot)], nd.dtype, one);
        } else {
            value_to_reg(nd.value, nd.dtype, one);
        }
        const i64 rs = reg_size(nd.dtype);
        std::byte* dst = scratch + f.out * sp.slot_bytes;
        const i64 count = f.full ? kBlock : 1;
        for (i64 i = 0; i < count; ++i) std::memcpy(dst + i * rs, one, static_cast<std::size_t>(rs));
        ptr[f.out] = dst;
    }
}

void CpuPrepared::eval_block(const StagePlan& sp, const Bound& b, std::byte* scratch, const void** ptr, i64 start,
                             i64 len) const {
    for (const Instr& ins : sp.code) {
        std::byte* buf = scratch + ins.out * sp.slot_bytes;
        if (ins.kind == Instr::Kind::Load) {
            const Operand& op = b.loads[static_cast<std::size_t>(ins.load)];
            if (op.direct) {
                ptr[ins.out] = op.base + start * op.item;
                continue;
            }
            const LoadFn load = kt_.load[static_cast<int>(sp.loads[static_cast<std::size_t>(ins.load)].dtype)];
            const i64 rs = reg_size(sp.loads[static_cast<std::size_t>(ins.load)].dtype);
            walk(b.space.shape, op.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
                load(op.base + off * op.item, stride, buf + done * rs, run);
            });
            ptr[ins.out] = buf;
        } else {
            const void* in[3] = {ptr[ins.in[0]], ins.nin > 1 ? ptr[ins.in[1]] : nullptr,
                                 ins.nin > 2 ? ptr[ins.in[2]] : nullptr};
            if (ins.store >= 0 && b.stores[static_cast<std::size_t>(ins.store)].direct) {
                const Operand& o = b.stores[static_cast<std::size_t>(ins.store)];
                buf = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(o.base)) + start * o.item;
            }
            ins.fn(in, buf, len);
            ptr[ins.out] = buf;
        }
    }
}

void CpuPrepared::run_elementwise(const StagePlan& sp, const Bound& b) const {
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    Ctx ctx{b.args, nullptr};
    parallel(blocks, n, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(sp, b, scratch, ptr.data(), start, len);
                store_block(sp, b, ptr.data(), start, len);
            }
    });
}

void CpuPrepared::store_block(const StagePlan& sp, const Bound& b, const void* const* ptr, i64 start, i64 len) const {
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        const StorePlan& st = sp.stores[i];
        const Operand& o = b.stores[i];
        if (o.direct && static_cast<const char*>(ptr[st.slot]) == o.base + start * o.item)
            continue;  // written in place
        const StoreFn store = kt_.store[static_cast<int>(st.dtype)];
        const i64 rs = reg_size(st.dtype);
        const auto* src = static_cast<const std::byte*>(ptr[st.slot]);
        char* base = const_cast<char*>(o.base);
        walk(b.space.shape, o.strides, start, len,
             [&](i64 off, i64 stride, i64 done, i64 run) { store(src + done * rs, base + off * o.item, stride, run); });
    }
}

char* CpuPrepared::reduce_target(const ReducePlan& rp, const Ctx& ctx) const {
    const ir::Node& r = program_.node(rp.reduce_node);
    if (rp.output < 0) return reinterpret_cast<char*>((*ctx.temps)[static_cast<std::size_t>(rp.temp)]->data());
    const Array& a = ctx.args->outputs[static_cast<std::size_t>(rp.output)];
    if (a.dtype() != r.dtype || shape_size(a.shape()) != shape_size(r.shape))
        throw ArgumentError(fmt::format("output {} is {} {}, the program computes {} {}", rp.output,
                                        dtype_name(a.dtype()), shape_to_string(a.shape()), dtype_name(r.dtype),
                                        shape_to_string(r.shape)));
    return static_cast<char*>(a.data());
}

void CpuPrepared::run_pass(const StagePlan& pp, const Ctx& ctx, Bound& b) const {
    bind(pp, ctx, b);
    const detail::RunArgs& args = *ctx.args;
    const std::size_t nred = pp.reduces.size();
    boost::container::small_vector<char*, 8> targets(nred);
    for (std::size_t r = 0; r < nred; ++r) targets[r] = reduce_target(pp.reduces[r], ctx);
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    // Per reduction: one partial per block, combined in block order afterwards (as run_reduce's
    // long rows: every partial is written before it is read, so no zero-fill).
    boost::container::small_vector<std::unique_ptr<std::byte[]>, 8> partials(nred);
    for (std::size_t r = 0; r < nred; ++r)
        partials[r] = core::host_buffer<std::byte>(
            static_cast<std::size_t>(blocks * acc_size(pp.reduces[r].red, pp.reduces[r].dtype)),
            "a reduction's partial results (one per block)");
    parallel(blocks, n * pp.stages(), args.control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(pp.nslots * pp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(pp.nslots), nullptr);
        fill(pp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(pp, b, scratch, ptr.data(), start, len);
                for (std::size_t r = 0; r < nred; ++r) {
                    const ReducePlan& rp = pp.reduces[r];
                    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
                    std::byte* acc = partials[r].get() + blk * acc_size(rp.red, rp.dtype);
                    kt_.identity[k][d](acc);
                    rp.block(ptr[static_cast<std::size_t>(rp.value_slot)], len, acc, start);
                }
                store_block(pp, b, ptr.data(), start, len);
            }
    });
    for (std::size_t r = 0; r < nred; ++r) {
        const ReducePlan& rp = pp.reduces[r];
        const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
        const DType rd = program_.node(rp.reduce_node).dtype;
        if (args.started_outputs && rp.output >= 0) args.started_outputs[rp.output] = true;
        alignas(16) std::byte acc[16];
        kt_.identity[k][d](acc);
        combine_partials(rp, partials[r].get(), blocks, acc);
        if (rp.mean) kt_.divide[static_cast<int>(rd)](acc, n);
        kt_.store[static_cast<int>(rd)](acc, targets[r], 1, 1);
    }
}

// Folds `n` partial accumulators of a stage into `acc`, in order: a reduction of its operand's
// kind where accumulators are values (float sums stay pairwise), combine() for ArgFirst's
// positions.
void CpuPrepared::combine_partials(const ReducePlan& rp, const std::byte* partials, i64 n, std::byte* acc) const {
    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
    if (rp.red != Red::ArgFirst) {
        kt_.reduce[k][d](partials, n, acc, 0);
        return;
    }
    const i64 as = acc_size(rp.red, rp.dtype);
    for (i64 i = 0; i < n; ++i) kt_.combine[k][d](acc, partials + i * as);
}

void CpuPrepared::run_reduce(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
    const ReduceFn reduce = rp.block;
    const IdentityFn identity = kt_.identity[k][d];
    const ir::Node& rnode = program_.node(rp.reduce_node);
    const DType rd = rnode.dtype;
    const StoreFn store = kt_.store[static_cast<int>(rd)];
    const DivideFn divide = rp.mean ? kt_.divide[static_cast<int>(rd)] : nullptr;
    const i64 rs = reg_size(rp.value_dtype), as = acc_size(rp.red, rp.dtype);
    const i64 rows = b.rows, L = b.row_len;
    Ctx ctx{b.args, nullptr};

    // Marks the output (when it is one) as being written, for a stop that cuts the stage short.
    auto writing = [&] {
        if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    };
    auto finish_row = [&](i64 row, std::byte* acc) {
        if (divide) divide(acc, L);
        store(acc, b.out_base + offset_of(row, b.out_shape, b.out_strides) * b.out_item, 1, 1);
    };

    if (L == 0 || b.space.size == 0) {
        writing();
        for (i64 row = 0; row < rows; ++row) {
            alignas(16) std::byte acc[16];
            identity(acc);
            finish_row(row, acc);
        }
        return;
    }

    if (L > kBlock) {
        // Long rows: blocks of a row are reduced in parallel into partials, then each row's
        // partials are reduced in block order.
        const i64 per_row = (L + kBlock - 1) / kBlock;
        const i64 units = rows * per_row;
        // Not zero-filled: every partial is written before it is read, and zeroing n/64 bytes up
        // front (156 MB for 10^10 elements) delayed the first block, and a stop, by that long.
        std::unique_ptr<std::byte[]> partials_buf = core::host_buffer<std::byte>(
            static_cast<std::size_t>(units * as), "a reduction's partial results (one per block)");
        std::byte* const partials_data = partials_buf.get();
        parallel(units, b.space.size, b.args->control, [&](auto&& next) {
            std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
            boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
            fill(sp, ctx, scratch, ptr.data());
            for (i64 u0 = 0, u1 = 0; next(u0, u1);)
                for (i64 u = u0; u < u1; ++u) {
                    const i64 row = u / per_row, j = u % per_row;
                    const i64 start = row * L + j * kBlock, len = std::min(kBlock, L - j * kBlock);
                    eval_block(sp, b, scratch, ptr.data(), start, len);
                    std::byte* acc = partials_data + u * as;
                    identity(acc);
                    reduce(ptr[rp.value_slot], len, acc, j * kBlock);
                }
        });
        writing();  // only now: a stop during the partial sums leaves the output untouched
        for (i64 row = 0; row < rows; ++row) {
            alignas(16) std::byte acc[16];
            identity(acc);
            combine_partials(rp, partials_data + row * per_row * as, per_row, acc);
            finish_row(row, acc);
        }
        return;
    }

    // Short rows: whole rows packed into each block, each row written as soon as it is reduced.
    const i64 per_block = std::max<i64>(1, kBlock / L);
    const i64 units = (rows + per_block - 1) / per_block;
    writing();
    parallel(units, b.space.size, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                const i64 r0 = u * per_block, r1 = std::min(rows, r0 + per_block);
                eval_block(sp, b, scratch, ptr.data(), r0 * L, (r1 - r0) * L);
                const auto* vals = static_cast<const std::byte*>(ptr[rp.value_slot]);
                for (i64 row = r0; row < r1; ++row) {
                    alignas(16) std::byte acc[16];
                    identity(acc);
                    reduce(vals + (row - r0) * L * rs, L, acc, 0);
                    finish_row(row, acc);
                }
            }
    });
}

void CpuPrepared::run_compact(std::size_t stage, const Ctx& ctx, Bound& b) const {
    const detail::RunArgs& args = *ctx.args;
    const StagePlan& cp = count_plans_[stage];
    const StagePlan& sp = plans_[stage];
    if (!args.allocate) throw InternalError("cpu backend: a compaction without an output allocator");
    // Pass 1: the mask's true elements per block (blocks as every pass cuts them: C order).
    bind(cp, ctx, b);
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    std::vector<i64> before;  // then: true elements before each block
    try {
        before.assign(static_cast<std::size_t>(blocks) + 1, 0);
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(static_cast<std::uint64_t>(blocks + 1) * sizeof(i64), core::host_memory_available(),
                               "a mask's counts of selected elements (one per block)");
    }
    parallel(blocks, n, args.control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(cp.nslots * cp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(cp.nslots), nullptr);
        fill(cp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(cp, b, scratch, ptr.data(), start, len);
                const auto* m = static_cast<const bool*>(ptr[cp.mask_slot]);
                i64 c = 0;
                for (i64 i = 0; i < len; ++i) c += m[i] ? 1 : 0;
                before[static_cast<std::size_t>(blk) + 1] = c;
            }
    });
    for (std::size_t i = 1; i < before.size(); ++i) before[i] += before[i - 1];
    const i64 total = before.back();
    // The outputs, now that their length is known: (true mask rows, the values' other axes).
    // Each row counted n / capacity times (once where the rows hold no element, see
    // dsl/lower.cpp's compact).
    bool any_element = false;
    for (const StorePlan& st : sp.compacts) {
        const ir::Node& nd = program_.node(st.node);
        Shape shape = nd.shape;
        const i64 per_row = shape[0] > 0 ? n / shape[0] : 0;
        shape[0] = per_row == 0 ? 0 : total / per_row;
        any_element = any_element || shape_size(shape) > 0;
        args.outputs[static_cast<std::size_t>(st.output)] =
            args.allocate->allocate(static_cast<std::size_t>(st.output), shape);
        if (args.started_outputs) args.started_outputs[st.output] = true;
    }
    if (total == 0 || !any_element) return;
    // Pass 2: each block's selected values, packed, at the count of the blocks before it.
    bind(sp, ctx, b);
    if (b.space.size != n) throw InternalError("cpu backend: the passes of a compaction differ in size");
    parallel(blocks, n * static_cast<i64>(sp.compacts.size()), args.control, [&](auto&& next) {
        const std::size_t slots_bytes = static_cast<std::size_t>(sp.nslots * sp.slot_bytes);
        std::byte* scratch = thread_scratch(slots_bytes + static_cast<std::size_t>(kBlock * kMaxRegBytes));
        std::byte* packed = scratch + slots_bytes;
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 at = before[static_cast<std::size_t>(blk)];
                if (before[static_cast<std::size_t>(blk) + 1] == at) continue;  // nothing selected here
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(sp, b, scratch, ptr.data(), start, len);
                const auto* m = static_cast<const bool*>(ptr[sp.mask_slot]);
                for (const StorePlan& st : sp.compacts) {
                    const i64 rs = reg_size(st.dtype);
                    const auto* src = static_cast<const std::byte*>(ptr[st.slot]);
                    i64 w = 0;
                    for (i64 i = 0; i < len; ++i)
                        if (m[i]) std::memcpy(packed + (w++) * rs, src + i * rs, static_cast<std::size_t>(rs));
                    const Array& out = args.outputs[static_cast<std::size_t>(st.output)];
                    char* dst = static_cast<char*>(out.data()) + at * static_cast<i64>(itemsize(st.dtype));
                    kt_.store[static_cast<int>(st.dtype)](packed, dst, 1, w);
                }
            }
    });
}

void CpuPrepared::run_scan(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const ScanFn scan = scan_kernel(rp.red, rp.dtype);
    if (!scan) throw InternalError(fmt::format("cpu backend: no scan for {}", dtype_name(rp.dtype)));
    const DType rd = program_.node(rp.reduce_node).dtype;
    const StoreFn store = kt_.store[static_cast<int>(rd)];
    const IdentityFn identity = kt_.identity[static_cast<int>(rp.red)][static_cast<int>(rp.dtype)];
    const i64 rs = reg_size(rp.dtype);
    const i64 rows = b.rows, L = b.row_len;
    if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    if (rows == 0 || L == 0 || b.space.size == 0) return;
    Ctx ctx{b.args, nullptr};
    const Operand& out = b.scan_out;
    char* const out_base = const_cast<char*>(out.base);
    // The scanned values of flat positions [start, start + len) go to the result.
    auto put = [&](const std::byte* vals, i64 start, i64 len) {
        walk(b.space.shape, out.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
            store(vals + done * rs, out_base + off * out.item, stride, run);
        });
    };
    // Short rows: whole rows packed into each block; long rows: a row per unit, its blocks in
    // order with the running value carried from one to the next.
    const bool short_rows = L <= kBlock;
    const i64 per_block = short_rows ? kBlock / L : 1;
    const i64 units = (rows + per_block - 1) / per_block;
    const std::size_t scratch_bytes = static_cast<std::size_t>((sp.nslots + 1) * sp.slot_bytes);
    parallel(units, b.space.size, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(scratch_bytes);
        std::byte* result = scratch + sp.nslots * sp.slot_bytes;  // one block of scanned values
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        alignas(16) std::byte carry[16];
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                if (short_rows) {
                    const i64 r0 = u * per_block, r1 = std::min(rows, r0 + per_block);
                    eval_block(sp, b, scratch, ptr.data(), r0 * L, (r1 - r0) * L);
                    const auto* vals = static_cast<const std::byte*>(ptr[rp.value_slot]);
                    for (i64 row = r0; row < r1; ++row) {
                        identity(carry);
                        scan(vals + (row - r0) * L * rs, L, result + (row - r0) * L * rs, carry, true);
                    }
                    put(result, r0 * L, (r1 - r0) * L);
                    continue;
                }
                identity(carry);
                for (i64 j = 0; j < L; j += kBlock) {
                    const i64 start = u * L + j, len = std::min(kBlock, L - j);
                    eval_block(sp, b, scratch, ptr.data(), start, len);
                    scan(ptr[rp.value_slot], len, result, carry, j == 0);
                    put(result, start, len);
                }
            }
    });
}

template <class T, int H, class R>
void CpuPrepared::select_rows(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const ir::OrderStatDecl& d = program_.order_stats[static_cast<std::size_t>(rp.select)];
    const ir::Node& rnode = program_.node(rp.reduce_node);
    const StoreFn store = kt_.store[static_cast<int>(rnode.dtype)];
    const i64 rows = b.rows, L = b.row_len;
    const i64 nq = static_cast<i64>(d.q.size());
    Ctx ctx{b.args, nullptr};
    if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    auto put = [&](i64 qi, i64 row, R v) {
        const i64 flat = qi * rows + row;
        store(&v, b.out_base + offset_of(flat, b.out_shape, b.out_strides) * b.out_item, 1, 1);
    };
    auto less = [](const T& x, const T& y) { return jx::sel::less(x, y); };
    if (rows == 0) return;
    // Whole rows per unit, at least one, about a block of elements.
    const i64 per_unit = L == 0 ? rows : std::max<i64>(1, kBlock / L);
    const i64 units = (rows + per_unit - 1) / per_unit;
    parallel(units, std::max<i64>(b.space.size, rows), b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        std::unique_ptr<T[]> vals;  // not a std::vector: no vector<bool>
        i64 cap = 0;
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                const i64 r0 = u * per_unit, r1 = std::min(rows, r0 + per_unit);
                const i64 total = (r1 - r0) * L;
                if (total > cap) {
                    vals.reset();  // the old buffer is not kept while the new one is asked for
                    vals = core::host_buffer<T>(static_cast<std::size_t>(total),
                                                fmt::format("the copy of {} {} elements an order statistic sorts",
                                                            total, dtype_name(rp.dtype)));
                    cap = total;
                }
                for (i64 done = 0; done < total;) {
                    const i64 len = std::min(kBlock, total - done);
                    eval_block(sp, b, scratch, ptr.data(), r0 * L + done, len);
                    std::memcpy(vals.get() + done, ptr[rp.value_slot], static_cast<std::size_t>(len) * sizeof(T));
                    if constexpr (jx::is_cplx<T>::value)
                        for (i64 k = done; k < done + len; ++k) vals[k] = jx::sel::canon(vals[k]);
                    done += len;
                }
                for (i64 row = r0; row < r1; ++row) {
                    T* v = vals.get() + (row - r0) * L;
                    i64 n = L;
                    bool nan = false;
                    if (d.skip_nan) n = std::partition(v, v + L, [](const T& x) { return !jx::sel::isnan(x); }) - v;
                    else nan = std::any_of(v, v + L, [](const T& x) { return jx::sel::isnan(x); });
                    for (i64 qi = 0; qi < nq; ++qi) {
                        R r;
                        const i64 end = d.q[static_cast<std::size_t>(qi)] == 0.0 ? 0 : n - 1;  // d.take's rank
                        if constexpr (!jx::is_fc<R>::value) {
                            // quantile of an integer q (0 or 1) in the operand's integer or bool dtype
                            if (!d.take || n == 0) throw InternalError("cpu backend: an integer order statistic");
                            std::nth_element(v, v + end, v + n, less);
                            r = v[end];
                        } else if (nan) {
                            // NumPy gives the row's last element in sorted order: a NaN.
                            if constexpr (jx::is_cplx<T>::value)
                                r = *std::max_element(v, v + L, [](T x, T y) { return jx::sel::sort_less(x, y); });
                            else r = jx::sel::nan_of<R>();
                        } else if (n == 0) {
                            r = L == 0 ? jx::sel::nan_of<R>() : jx::sel::all_nan_of<R>();
                        } else if (d.take) {
                            // quantile of an integer q (NumPy's integer virtual index): the element itself
                            std::nth_element(v, v + end, v + n, less);
                            r = static_cast<R>(v[end]);
                        } else if (d.median) {
                            const i64 k = (n - 1) / 2;
                            std::nth_element(v, v + k, v + n, less);
                            const T a = v[k];
                            const bool one = n % 2 == 1;
                            const T c = one ? a : *std::min_element(v + k + 1, v + n, less);
                            r = jx::sel::median<R, H>(a, c, one);
                        } else if constexpr (jx::is_cplx<T>::value || jx::is_bool<T>::value) {
                            throw InternalError("cpu backend: a quantile of complex or bool values");
                        } else {
                            const jx::sel::Ranks k = jx::sel::ranks(n, d.q[static_cast<std::size_t>(qi)]);
                            std::nth_element(v, v + k.lo, v + n, less);
                            const T a = v[k.lo];
                            const T c = k.hi == k.lo ? a : *std::min_element(v + k.lo + 1, v + n, less);
                            r = jx::sel::lerp<R, H>(a, c, k.t);
                        }
                        put(qi, row, r);
                    }
                }
            }
    });
}

void CpuPrepared::run_select(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const DType rd = program_.node(rp.reduce_node).dtype;
    const bool wide = rd == DType::Float64;
    if (rd == rp.dtype && !is_inexact(rd)) {
        // quantile of an integer q: the element in the operand's own integer or bool dtype
        switch (rp.dtype) {
            case DType::Bool: return select_rows<bool, 0, bool>(sp, b);
            case DType::Int8: return select_rows<jx::i8, 0, jx::i8>(sp, b);
            case DType::Int16: return select_rows<jx::i16, 0, jx::i16>(sp, b);
            case DType::Int32: return select_rows<jx::i32, 0, jx::i32>(sp, b);
            case DType::Int64: return select_rows<jx::i64, 0, jx::i64>(sp, b);
            case DType::UInt8: return select_rows<jx::u8, 0, jx::u8>(sp, b);
            case DType::UInt16: return select_rows<jx::u16, 0, jx::u16>(sp, b);
            case DType::UInt32: return select_rows<jx::u32, 0, jx::u32>(sp, b);
            case DType::UInt64: return select_rows<jx::u64, 0, jx::u64>(sp, b);
            default: break;
        }
    }
    switch (rp.dtype) {
        case DType::Bool: return select_rows<bool, 0, double>(sp, b);
        case DType::Int8: return select_rows<jx::i8, 0, double>(sp, b);
        case DType::Int16: return select_rows<jx::i16, 0, double>(sp, b);
        case DType::Int32: return select_rows<jx::i32, 0, double>(sp, b);
        case DType::Int64: return select_rows<jx::i64, 0, double>(sp, b);
        case DType::UInt8: return select_rows<jx::u8, 0, double>(sp, b);
        case DType::UInt16: return select_rows<jx::u16, 0, double>(sp, b);
        case DType::UInt32: return select_rows<jx::u32, 0, double>(sp, b);
        case DType::UInt64: return select_rows<jx::u64, 0, double>(sp, b);
        case DType::Float16: return wide ? select_rows<float, 1, double>(sp, b) : select_rows<float, 1, float>(sp, b);
        case DType::BFloat16: return wide ? select_rows<float, 2, double>(sp, b) : select_rows<float, 2, float>(sp, b);
        case DType::Float32: return wide ? select_rows<float, 0, double>(sp, b) : select_rows<float, 0, float>(sp, b);
        case DType::Float64: return select_rows<double, 0, double>(sp, b);
        case DType::Complex64: return select_rows<jx::c64, 0, jx::c64>(sp, b);
        case DType::Complex128: return select_rows<jx::c128, 0, jx::c128>(sp, b);
    }
    throw InternalError("cpu backend: an order statistic of an unknown dtype");
}

void CpuPrepared::run(const detail::RunArgs& args) {
    if (args.inputs.size() != program_.inputs.size())
        throw ArgumentError(
            fmt::format("the program takes {} inputs, {} given", program_.inputs.size(), args.inputs.size()));
    if (args.outputs.size() != program_.outputs.size())
        throw ArgumentError(
            fmt::format("the program has {} outputs, {} given", program_.outputs.size(), args.outputs.size()));
    if (args.scalars.size() != program_.scalars.size())
        throw ArgumentError(
            fmt::format("the program takes {} scalars, {} given", program_.scalars.size(), args.scalars.size()));
    for (const Array& a : args.inputs)
        if (a.backend() != Backend::Cpu)
            throw ArgumentError("the CPU backend needs inputs in host memory: " + a.describe());
    for (std::size_t o = 0; o < args.outputs.size(); ++o)
        if (args.outputs[o].defined() != !program_.is_dynamic(program_.outputs[o].node))
            throw ArgumentError(
                fmt::format("output {} is {}", o,
                            args.outputs[o].defined() ? "given, but the data decides its length" : "not given"));
    for (const Array& a : args.outputs)
        if (a.defined() && a.backend() != Backend::Cpu)
            throw ArgumentError("the CPU backend needs outputs in host memory: " + a.describe());

    // Host storage like an array's: not zero-filled (every element is written before it is
    // read), and a large one reuses a block freed by an earlier run instead of faulting in
    // fresh pages on every run.
    std::vector<std::shared_ptr<Storage>> temps;
    for (const ir::NodeId n : schedule_.temps) {
        const ir::Node& nd = program_.node(n);
        try {
            temps.push_back(core::host_storage(static_cast<std::size_t>(shape_size(nd.shape)) * itemsize(nd.dtype)));
        } catch (const OutOfMemoryError& e) {
            throw detail::OutOfMemoryAt(OutOfMemoryError(e.requested(), e.available(),
                                                         fmt::format("an intermediate {} array of shape {}",
                                                                     dtype_name(nd.dtype), shape_to_string(nd.shape))),
                                        nd.span);
        }
    }
    Ctx ctx{&args, &temps};
    detail::CallControl* ctl = args.control;
    if (ctl) {
        std::uint64_t total = 0;
        for (const auto& st : schedule_.stages) total += static_cast<std::uint64_t>(shape_size(st.shape));
        ctl->begin(Progress::Phase::Run, Progress::Unit::Elements, total);
    }
    // One Bound per thread, reused by every run (its vectors keep their capacity); a run that
    // starts while this thread's is in use (a nested call) gets its own.
    thread_local Bound kept;
    thread_local bool kept_busy = false;
    Bound nested;
    const bool owner = !kept_busy;
    Bound& b = owner ? kept : nested;
    struct Release {
        bool owner;
        ~Release() {
            if (owner) kept_busy = false;
        }
    } release{owner};
    kept_busy = true;
    for (std::size_t si = 0; si < plans_.size(); ++si) {
        const StagePlan& sp = plans_[si];
        if (ctl) ctl->check();  // between stages
        if (pass_of_[si] >= 0 && shape_size(sp.shape) > kBlock) {
            // A pass of several stages in one sweep. Small iteration spaces run stage by stage:
            // the long-row reduction path (partials per block) is the one a pass shares, and it
            // is for more than one block.
            const StagePlan& pp = passes_[static_cast<std::size_t>(pass_of_[si])];
            if (args.started_outputs)
                for (const StorePlan& st : pp.stores) args.started_outputs[st.output] = true;
            try {
                run_pass(pp, ctx, b);
            } catch (const detail::OutOfMemoryAt&) {
                throw;
            } catch (const OutOfMemoryError& e) {
                throw detail::OutOfMemoryAt(e, span_of(pp));
            } catch (const std::bad_alloc&) {
                throw detail::OutOfMemoryAt(OutOfMemoryError(0, core::host_memory_available(), "a kernel's own work"),
                                            span_of(pp));
            }
            si = static_cast<std::size_t>(pp.end_stage) - 1;
            continue;
        }
        if (args.started_outputs)  // a reduction marks its output where it starts writing it (run_reduce)
            for (const StorePlan& st : sp.stores) args.started_outputs[st.output] = true;
        try {
            if (sp.kind == ir::Stage::Kind::Compact) {
                run_compact(si, ctx, b);
                continue;
            }
            bind(sp, ctx, b);
            if (sp.is_select()) run_select(sp, b);
            else if (sp.kind == ir::Stage::Kind::Reduce) run_reduce(sp, b);
            else if (sp.kind == ir::Stage::Kind::Scan) run_scan(sp, b);
            else run_elementwise(sp, b);
        } catch (const detail::OutOfMemoryAt&) {
            throw;
        } catch (const OutOfMemoryError& e) {
            throw detail::OutOfMemoryAt(e, span_of(sp));
        } catch (const std::bad_alloc&) {
            throw detail::OutOfMemoryAt(OutOfMemoryError(0, core::host_memory_available(), "a kernel's own work"),
                                        span_of(sp));
        }
    }
}

// The text a stage computes, for its messages: its reduction, scan or order statistic (the
// call: `median(x)`), its selection (`x[x > 0]`), else the value it stores first (the
// statement's right-hand side). Empty when no node of it has a span.
SourceSpan CpuPrepared::span_of(const StagePlan& sp) const {
    for (const ReducePlan& r : sp.reduces)
        if (!program_.node(r.reduce_node).span.empty()) return program_.node(r.reduce_node).span;
    for (const auto* list : {&sp.compacts, &sp.stores})
        for (const StorePlan& st : *list)
            if (!program_.node(st.node).span.empty()) return program_.node(st.node).span;
    return {};
}

// ---------------------------------------------------------------- the backend
class CpuBackend final : public detail::BackendImpl {
public:
    explicit CpuBackend(int threads) : pool_(threads) {}
    Backend kind() const override { return Backend::Cpu; }
    std::string setup_note() const override { return pool_.note(); }
    // Stages of any size: a stage is a sequence of block instructions, whose cost is linear.
    dsl::Limits limits() const override { return {}; }
    std::shared_ptr<detail::Prepared> prepare(const ir::Plan& plan, const detail::PrepareOptions&) override {
        return std::make_shared<CpuPrepared>(plan.program, plan.schedule, &pool_);
    }
    std::vector<detail::KernelReport> explain(const ir::Plan& plan, const detail::PrepareOptions&) const override {
        // The same planning as prepare(), which builds nothing that needs compiling.
        return CpuPrepared(plan.program, plan.schedule, const_cast<ThreadPool*>(&pool_)).reports();
    }

private:
    ThreadPool pool_;
};

}  // namespace
}  // namespace jit::cpu

namespace jit::detail {
std::unique_ptr<BackendImpl> make_cpu_backend(int threads) { return std::make_unique<cpu::CpuBackend>(threads); }
}  // namespace jit::detail

// jitexpr — the CPU backend's planner: a stage (or a pass of stages) as one block program (plan.hpp).
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/plan.hpp"
#include "backend/cpu/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace jit::cpu::impl {

namespace {

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
    StagePlanner(const ir::Program& program, const ir::Schedule& schedule, int first_stage, int end_stage,
                 const KernelTable& table, bool counting_only = false)
        : p(program), s(schedule), first(first_stage), end(end_stage), kt(table), mask_only(counting_only) {
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
        scan_strings();
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
    void scan_strings();
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
    std::vector<ir::NodeId> roots;   // what the stages store, and their reductions' operands
    ir::NodeMap<char> need;          // the roots need it
    ir::NodeMap<ir::NodeId> rep;     // the node whose value it is (casts to the same dtype)
    std::vector<ir::NodeId> order;   // the representatives needed, in node order
    ir::NodeMap<Fuse> fuse;          // the fused kernel computing it with its operand
    ir::NodeMap<char> fused_away;    // computed inside its reader's fused instruction
    ir::NodeMap<int> last;           // per value: position in `order` of its last reader
    ir::NodeMap<int> slot;           // the slot holding its value
    ir::NodeMap<StringScanFn> scan;  // a string op read straight from its column (scan_strings)
    ir::NodeMap<char> scanned;       // a string column only such ops read: no block of it is loaded
    ir::NodeMap<int> load_of;        // a scanned column: its index into sp.loads
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
    const bool is_scan = stage.kind == ir::Stage::Kind::Scan;
    const ir::Node& r = p.node(stage.reduce);
    if (r.kind != (is_scan ? ir::NodeKind::Scan : ir::NodeKind::Reduce) || r.nargs != 1)
        throw InternalError(is_scan ? "cpu backend: scan stage without a Scan node"
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
    if (is_scan) {
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
        // (Not for 16-bit floats: an op's value is carried unrounded in float32, and a cast to
        // its own type rounds it, as the lowering asks where a reduction reads it.)
        if (nd.kind == ir::NodeKind::Cast && p.node(nd.args[0]).dtype == nd.dtype && nd.dtype != DType::Float16 &&
            nd.dtype != DType::BFloat16) {
            rep[n] = rep[nd.args[0]];
            continue;
        }
        if (nd.kind == ir::NodeKind::Const && !is_string(nd.dtype)) {
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

// String ops of a column and a literal (==, !=, contains of an Arrow or S column) read the
// column straight from its memory (string_scan_kernel); a column that only such ops read is not
// loaded as a block of string values at all.
void StagePlanner::scan_strings() {
    scan.assign(p.nodes.size(), nullptr);
    scanned.assign(p.nodes.size(), 0);
    load_of.assign(p.nodes.size(), -1);
    ir::NodeMap<int> readers(p.nodes.size(), 0), scan_readers(p.nodes.size(), 0);
    for (const ir::NodeId n : order) {
        const ir::Node& nd = p.node(n);
        if (nd.kind != ir::NodeKind::Op && nd.kind != ir::NodeKind::Cast) continue;
        for (int k = 0; k < nd.nargs; ++k) ++readers[rep[nd.args[k]]];
        if (nd.kind != ir::NodeKind::Op || nd.nargs != 2 || fuse[n].fn) continue;
        const ir::NodeId col = rep[nd.args[0]], lit = rep[nd.args[1]];
        const ir::Node& c = p.node(col);
        if (c.kind != ir::NodeKind::Input || !is_string(c.dtype) || !is_fill(p.node(lit)) ||
            p.node(lit).dtype != c.dtype)
            continue;
        if (const StringScanFn f = string_scan_kernel(nd.op, c.dtype)) {
            scan[n] = f;
            ++scan_readers[col];
        }
    }
    for (const ir::NodeId n : order)
        if (p.node(n).kind == ir::NodeKind::Input && is_string(p.node(n).dtype) && readers[n] > 0 &&
            readers[n] == scan_readers[n])
            scanned[n] = 1;
    // A column another op reads as values is loaded anyway: its scans read the loaded values.
    for (const ir::NodeId n : order)
        if (scan[n] && !scanned[rep[p.node(n).args[0]]]) scan[n] = nullptr;
}

// The values an instruction for node n reads (representatives), in operand order.
int StagePlanner::reads(ir::NodeId n, ir::NodeId* r) const {
    if (scan[n]) {  // the literal alone: the column is read from memory
        r[0] = rep[p.node(n).args[1]];
        return 1;
    }
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
                if (scanned[n]) {  // read by its string ops from memory: a LoadPlan, no instruction
                    LoadPlan lp;
                    lp.input = nd.slot;
                    lp.dtype = nd.dtype;
                    load_of[n] = static_cast<int>(sp.loads.size());
                    sp.loads.push_back(lp);
                    continue;
                }
                [[fallthrough]];
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
                if (scan[n]) {
                    ins.scan = scan[n];
                    ins.load = load_of[rep[nd.args[0]]];
                    ins.nin = 1;
                    ins.scalar_in = 1;  // the literal, one value
                    break;
                }
                if (is_string(p.node(nd.args[0]).dtype)) {
                    // A string op (strings.hpp): a literal operand is read as one value.
                    const DType a = p.node(nd.args[0]).dtype;
                    const DType b = nd.nargs > 1 ? p.node(nd.args[1]).dtype : a;
                    int scalar = 0;
                    for (int k = 0; k < nd.nargs; ++k)
                        if (is_fill(p.node(rep[nd.args[k]]))) scalar |= 1 << k;
                    ins.fn = string_kernel(nd.op, a, b, scalar);
                    if (!ins.fn)
                        throw InternalError(fmt::format("cpu backend: no string kernel for {} on {} and {}",
                                                        ir::info(nd.op).id, dtype_name(a), dtype_name(b)));
                    ins.nin = nd.nargs;
                    ins.scalar_in = static_cast<std::uint8_t>(scalar);
                    break;
                }
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
            if (last[a] == pos && p.node(a).kind != ir::NodeKind::Const && p.node(a).kind != ir::NodeKind::Scalar &&
                slot[a] >= 0) {
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

}  // namespace

// Stage `k` alone (mask_only: a Compact stage's counting pass).
StagePlan plan_stage(const ir::Program& p, const ir::Schedule& s, std::size_t k, const KernelTable& kt,
                     bool mask_only) {
    return StagePlanner(p, s, static_cast<int>(k), static_cast<int>(k) + 1, kt, mask_only).run();
}

// The stages of a pass together.
StagePlan plan_pass(const ir::Program& p, const ir::Schedule& s, const ir::Pass& pass, const KernelTable& kt) {
    return StagePlanner(p, s, pass.first, pass.end, kt).run();
}

}  // namespace jit::cpu::impl

namespace jit::cpu {

using impl::Instr;
using impl::plan_pass;
using impl::plan_stage;

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

}  // namespace jit::cpu

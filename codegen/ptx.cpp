// jitexpr — Flat and full-reduction kernels written directly in PTX, for the first tier of a tiered compile.
//
// NVRTC spends most of a cold compile in its C++ front end, the NVVM optimiser and libdevice;
// a small elementwise kernel written as PTX needs only the PTX assembler (nvJitLink), several
// times faster. Ops whose PTX instructions compute exactly what dsl/semantics.h computes
// (IEEE arithmetic with explicit rounding, so nothing is contracted into an FMA; NumPy's
// NaN-propagating maximum/minimum; saturating float-to-int casts with NaN giving 0) are written
// as instructions. Any other op over int32/int64/float32/float64 (transcendental functions,
// integer division, powers, ...) becomes a call of a device function (device_function in
// emit.cpp) that holds the very expression the C++ kernels inline; NVRTC compiles each such
// function once as relocatable code and nvJitLink links it in. Other dtypes and layouts give
// nullopt and the NVRTC kernel is used. The kernel keeps the parameters and launch of the
// scalar-only kernel it replaces, so the executor launches either alike. Full reductions
// (ReduceAll over flat reads: sum, prod, min, max, any, all, mean) are written too, folding in
// the order of the C++ kernel, so that the first tier and the final kernel give the same bits.
#include "codegen/codegen.hpp"
#include "core/stack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jit::codegen {
namespace {

using ir::Op;

bool supported(DType t) {
    return t == DType::Bool || t == DType::Int32 || t == DType::Int64 || t == DType::Float32 || t == DType::Float64;
}
bool is_f(DType t) { return t == DType::Float32 || t == DType::Float64; }
bool is_i(DType t) { return t == DType::Int32 || t == DType::Int64; }
const char* ty(DType t) {  // instruction type of a register of dtype t
    switch (t) {
        case DType::Float32: return "f32";
        case DType::Float64: return "f64";
        case DType::Int32: return "s32";
        case DType::Int64: return "s64";
        default: return "pred";
    }
}
const char* bits(DType t) { return t == DType::Float64 || t == DType::Int64 ? "b64" : "b32"; }
int bytes(DType t) { return t == DType::Bool ? 1 : (t == DType::Float64 || t == DType::Int64 ? 8 : 4); }

struct V {
    std::string reg;
    DType t = DType::Bool;
};

class Writer {
public:
    Writer(const ir::Program& p, const KernelSource& k) : p_(p), k_(k) {}

    std::optional<std::string> run(const std::string& entry, int sm) {
        try {
            return emit(entry, sm);
        } catch (const Unsupported&) {
            return std::nullopt;
        }
    }

private:
    struct Unsupported {};
    [[noreturn]] static void no() { throw Unsupported{}; }

    std::string reg(DType t) {
        switch (t) {
            case DType::Float32: return fmt::format("%f{}", nf_++);
            case DType::Float64: return fmt::format("%fd{}", nd_++);
            case DType::Int32: return fmt::format("%r{}", nr_++);
            case DType::Int64: return fmt::format("%rd{}", nrd_++);
            case DType::Bool: return fmt::format("%p{}", np_++);
            default: no();
        }
    }
    std::string u32() { return fmt::format("%r{}", nr_++); }
    std::string u64() { return fmt::format("%rd{}", nrd_++); }

    // An immediate of dtype t holding `v` (already of that dtype).
    static std::string imm(const ir::Value& v, DType t) {
        switch (t) {
            case DType::Float32: {
                const float f = static_cast<float>(v.f);
                std::uint32_t b;
                std::memcpy(&b, &f, 4);
                return fmt::format("0f{:08X}", b);
            }
            case DType::Float64: {
                std::uint64_t b;
                std::memcpy(&b, &v.f, 8);
                return fmt::format("0d{:016X}", b);
            }
            case DType::Int32:
            case DType::Int64: return fmt::format("{}", v.i);
            default: no();
        }
    }

    V constant(const ir::Node& n, std::string& out) {
        const ir::Value v = n.value.dtype == n.dtype ? n.value : n.value.cast(n.dtype);
        V r{reg(n.dtype), n.dtype};
        if (n.dtype == DType::Bool) {
            const std::string w = u32();
            out += fmt::format("    mov.u32 {}, {};\n    setp.ne.u32 {}, {}, 0;\n", w, v.b ? 1 : 0, r.reg, w);
            return r;
        }
        out += fmt::format("    mov.{} {}, {};\n", ty(n.dtype), r.reg, imm(v, n.dtype));
        return r;
    }

    V load(const std::string& ptr, DType t, const std::string& index, std::string& out) {
        if (!supported(t)) no();
        std::string addr = ptr;  // element 0 of a broadcast read
        if (!index.empty()) {
            addr = u64();
            out += fmt::format("    mad.lo.u64 {}, {}, {}, {};\n", addr, index, bytes(t), ptr);
        }
        V r{reg(t), t};
        if (t == DType::Bool) {
            const std::string b = u32();
            out += fmt::format("    ld.global.u8 {}, [{}];\n", b, addr);
            out += fmt::format("    setp.ne.u32 {}, {}, 0;\n", r.reg, b);
        } else {
            out += fmt::format("    ld.global.{} {}, [{}];\n", ty(t), r.reg, addr);
        }
        return r;
    }

    void store(const std::string& ptr, const V& v, std::string& out) {
        const std::string addr = u64();
        out += fmt::format("    mad.lo.u64 {}, %rdI, {}, {};\n", addr, bytes(v.t), ptr);
        if (v.t == DType::Bool) {
            const std::string b = u32();
            out += fmt::format("    selp.u32 {}, 1, 0, {};\n", b, v.reg);
            out += fmt::format("    st.global.u8 [{}], {};\n", addr, b);
        } else {
            out += fmt::format("    st.global.{} [{}], {};\n", ty(v.t), addr, v.reg);
        }
    }

    // An array the kernel reads: element i in the loop, or a single element (broadcast) loaded
    // once before it.
    struct Read {
        std::string ptr;
        bool broadcast = false;
        std::optional<V> once;
    };
    V read(Read& r, DType t, std::string& out) {
        if (!r.broadcast) return load(r.ptr, t, "%rdI", out);
        if (!r.once) r.once = load(r.ptr, t, "", prologue_);
        return *r.once;
    }

    V cast(const V& a, DType to, std::string& out) {
        if (!supported(to)) no();
        if (a.t == to) return a;
        V r{reg(to), to};
        if (to == DType::Bool) {  // v != 0 (NaN is true)
            if (is_f(a.t))
                out += fmt::format("    setp.neu.{0} {1}, {2}, {3};\n", ty(a.t), r.reg, a.reg,
                                   a.t == DType::Float32 ? "0f00000000" : "0d0000000000000000");
            else out += fmt::format("    setp.ne.{} {}, {}, 0;\n", ty(a.t), r.reg, a.reg);
        } else if (a.t == DType::Bool) {
            const char* one = to == DType::Float32 ? "0f3F800000" : to == DType::Float64 ? "0d3FF0000000000000" : "1";
            const char* zero = to == DType::Float32 ? "0f00000000" : to == DType::Float64 ? "0d0000000000000000" : "0";
            out += fmt::format("    selp.{} {}, {}, {}, {};\n", ty(to), r.reg, one, zero, a.reg);
        } else if (is_f(to) && is_f(a.t)) {
            out += fmt::format("    cvt{}.{}.{} {}, {};\n", to == DType::Float32 ? ".rn" : "", ty(to), ty(a.t), r.reg,
                               a.reg);
        } else if (is_f(to)) {  // int -> float: to nearest
            out += fmt::format("    cvt.rn.{}.{} {}, {};\n", ty(to), ty(a.t), r.reg, a.reg);
        } else if (is_f(a.t)) {  // float -> int: toward zero, saturating, NaN -> 0
            // cvt saturates, but a NaN gives the most negative value for 64-bit results (as
            // __double2ll_rz documents), so NaN is tested for explicitly.
            const std::string nan = reg(DType::Bool);
            out += fmt::format("    cvt.rzi.{}.{} {}, {};\n", ty(to), ty(a.t), r.reg, a.reg);
            out += fmt::format("    setp.nan.{} {}, {}, {};\n", ty(a.t), nan, a.reg, a.reg);
            out += fmt::format("    selp.{} {}, 0, {}, {};\n", ty(to), r.reg, r.reg, nan);
        } else if (to == DType::Int64) {  // int32 -> int64: sign extension
            out += fmt::format("    cvt.s64.s32 {}, {};\n", r.reg, a.reg);
        } else {  // int64 -> int32: wraps
            out += fmt::format("    cvt.u32.u64 {}, {};\n", r.reg, a.reg);
        }
        return r;
    }

    // NumPy's maximum/minimum as dsl/semantics.h writes them: (a >= b || a != a) ? a : b.
    V minmax(bool max, const V& a, const V& b, std::string& out) {
        V r{reg(a.t), a.t};
        if (a.t == DType::Bool) {
            out += fmt::format("    {}.pred {}, {}, {};\n", max ? "or" : "and", r.reg, a.reg, b.reg);
            return r;
        }
        const std::string c = reg(DType::Bool);
        out += fmt::format("    setp.{}.{} {}, {}, {};\n", max ? "ge" : "le", ty(a.t), c, a.reg, b.reg);
        if (is_f(a.t)) {
            const std::string nan = reg(DType::Bool);
            out += fmt::format("    setp.nan.{} {}, {}, {};\n", ty(a.t), nan, a.reg, a.reg);
            out += fmt::format("    or.pred {}, {}, {};\n", c, c, nan);
        }
        out += fmt::format("    selp.{} {}, {}, {}, {};\n", ty(a.t), r.reg, a.reg, b.reg, c);
        return r;
    }

    V op(const ir::Node& n, std::string& out) {
        std::vector<V> a;
        for (int i = 0; i < n.nargs; ++i) a.push_back(value(n.args[i], out));
        const std::size_t mark = out.size();
        try {
            return instructions(n, a, out);
        } catch (const Unsupported&) {
            out.resize(mark);
            return call(n, a, out);
        }
    }

    // An op PTX has no exact instructions for: a call of the device function that computes it as
    // the C++ kernels do (codegen::device_function), linked in by nvJitLink.
    // `uniform`: every lane of the warp makes the call together (call.uni), which ptxas assembles
    // faster than a call it must allow to diverge.
    V call(const ir::Node& n, const std::vector<V>& a, std::string& out) { return call(n.op, n.dtype, a, out); }
    V call(ir::Op op, DType dtype, const std::vector<V>& a, std::string& out, bool uniform = false) {
        std::vector<DType> types;
        for (const V& v : a) types.push_back(v.t);
        std::optional<KernelSource> f = device_function(op, types, dtype);
        if (!f) no();
        const std::string& symbol = f->entries[0];
        auto param = [](DType t) { return t == DType::Float64 || t == DType::Int64 ? ".b64" : ".b32"; };
        if (!links_.count(symbol)) {
            std::string decl = fmt::format(".extern .func (.param {} jxr) {} (", param(dtype), symbol);
            for (std::size_t i = 0; i < a.size(); ++i)
                decl += fmt::format("{}.param {} jxp{}", i ? ", " : "", param(a[i].t), i);
            declarations_ += decl + ");\n";
            links_.emplace(symbol, std::move(*f));
        }
        V r{reg(dtype), dtype};
        out += "    {\n";
        std::string args;
        for (std::size_t i = 0; i < a.size(); ++i) {
            out += fmt::format("    .param {} jxp{};\n    st.param{} [jxp{}], {};\n", param(a[i].t), i, param(a[i].t),
                               i, a[i].reg);
            args += fmt::format("{}jxp{}", i ? ", " : "", i);
        }
        out += fmt::format("    .param {} jxr;\n    call{} (jxr), {}, ({});\n    ld.param{} {}, [jxr];\n    }}\n",
                           param(dtype), uniform ? ".uni" : "", symbol, args, param(dtype), r.reg);
        return r;
    }

    // The op as PTX instructions, or Unsupported.
    V instructions(const ir::Node& n, std::vector<V> a, std::string& out) {
        const DType t = n.dtype;
        if (!supported(t)) no();
        auto same = [&](std::size_t k) {
            for (std::size_t i = 0; i < k; ++i)
                if (i >= a.size() || a[i].t != a[0].t) no();
        };
        auto binary = [&](const char* f, const char* i, const char* b) {
            same(2);
            if (a[0].t != t) no();
            const char* ins = is_f(t) ? f : is_i(t) ? i : b;
            if (!ins) no();
            V r{reg(t), t};
            out += fmt::format("    {}.{} {}, {}, {};\n", ins, ty(t), r.reg, a[0].reg, a[1].reg);
            return r;
        };
        auto unary = [&](const char* f, const char* i) {
            if (a.size() != 1 || a[0].t != t) no();
            const char* ins = is_f(t) ? f : is_i(t) ? i : nullptr;
            if (!ins) no();
            V r{reg(t), t};
            out += fmt::format("    {}.{} {}, {};\n", ins, ty(t), r.reg, a[0].reg);
            return r;
        };
        auto pred2 = [&](const char* ins) {
            same(2);
            if (t != DType::Bool || a[0].t != DType::Bool) no();
            V r{reg(t), t};
            out += fmt::format("    {}.pred {}, {}, {};\n", ins, r.reg, a[0].reg, a[1].reg);
            return r;
        };
        auto compare = [&](const char* f, const char* i) {
            same(2);
            if (t != DType::Bool) no();
            V r{reg(t), t};
            if (a[0].t == DType::Bool) {
                if (std::strcmp(i, "eq") && std::strcmp(i, "ne")) no();
                out += fmt::format("    xor.pred {}, {}, {};\n", r.reg, a[0].reg, a[1].reg);
                if (!std::strcmp(i, "eq")) out += fmt::format("    not.pred {}, {};\n", r.reg, r.reg);
                return r;
            }
            out += fmt::format("    setp.{}.{} {}, {}, {};\n", is_f(a[0].t) ? f : i, ty(a[0].t), r.reg, a[0].reg,
                               a[1].reg);
            return r;
        };
        switch (n.op) {
            case Op::Add: return t == DType::Bool ? pred2("or") : binary("add.rn", "add", nullptr);
            case Op::Sub: return binary("sub.rn", "sub", nullptr);
            case Op::Mul: return t == DType::Bool ? pred2("and") : binary("mul.rn", "mul.lo", nullptr);
            // IEEE division and square root: ptxas writes each div.rn / sqrt.rn out with its slow
            // path, some 7 ms (div) and 4 ms (sqrt) of assembly a kernel on the development
            // machine, against well under 1 ms for a call of the device function (compiled once a
            // machine) that computes the same bits.
            case Op::Div: no();
            case Op::Square: {
                a.push_back(a.at(0));
                return t == DType::Bool ? a[0] : binary("mul.rn", "mul.lo", nullptr);
            }
            case Op::Neg: return unary("neg", "neg");
            case Op::Pos:
            case Op::Copy:
                if (a.size() != 1 || a[0].t != t) no();
                return a[0];
            case Op::Abs:
                if (t == DType::Bool && a.size() == 1 && a[0].t == t) return a[0];
                return unary("abs", "abs");
            case Op::Sqrt: no();
            case Op::Floor:
            case Op::Ceil:
            case Op::Trunc:
            case Op::Round:
            case Op::Rint: {  // to an integral value in the same float type
                if (a.size() != 1 || !is_f(t) || a[0].t != t) no();
                const char* mode = n.op == Op::Floor   ? "rmi"
                                   : n.op == Op::Ceil  ? "rpi"
                                   : n.op == Op::Trunc ? "rzi"
                                                       : "rni";
                V r{reg(t), t};
                out += fmt::format("    cvt.{}.{}.{} {}, {};\n", mode, ty(t), ty(t), r.reg, a[0].reg);
                return r;
            }
            case Op::Lt: return compare("lt", "lt");
            case Op::Le: return compare("le", "le");
            case Op::Gt: return compare("gt", "gt");
            case Op::Ge: return compare("ge", "ge");
            case Op::Eq: return compare("eq", "eq");
            case Op::Ne: return compare("neu", "ne");
            case Op::And: return pred2("and");
            case Op::Or: return pred2("or");
            case Op::Not:
            case Op::Invert: {
                if (a.size() != 1 || a[0].t != t) no();
                V r{reg(t), t};
                if (t == DType::Bool) out += fmt::format("    not.pred {}, {};\n", r.reg, a[0].reg);
                else if (is_i(t)) out += fmt::format("    not.{} {}, {};\n", bits(t), r.reg, a[0].reg);
                else no();
                return r;
            }
            case Op::BitAnd:
            case Op::BitOr:
            case Op::BitXor: {
                const char* ins = n.op == Op::BitAnd ? "and" : n.op == Op::BitOr ? "or" : "xor";
                if (t == DType::Bool) return pred2(ins);
                same(2);
                if (!is_i(t) || a[0].t != t) no();
                V r{reg(t), t};
                out += fmt::format("    {}.{} {}, {}, {};\n", ins, bits(t), r.reg, a[0].reg, a[1].reg);
                return r;
            }
            case Op::Maximum:
            case Op::Minimum:
                same(2);
                if (a[0].t != t) no();
                return minmax(n.op == Op::Maximum, a[0], a[1], out);
            case Op::Clip: {
                same(3);
                if (a[0].t != t) no();
                return minmax(false, minmax(true, a[0], a[1], out), a[2], out);
            }
            case Op::Where: {
                if (a.size() != 3 || a[0].t != DType::Bool || a[1].t != t || a[2].t != t) no();
                V r{reg(t), t};
                if (t == DType::Bool) {
                    const std::string x = reg(DType::Bool), y = reg(DType::Bool);
                    out += fmt::format("    and.pred {}, {}, {};\n", x, a[0].reg, a[1].reg);
                    out += fmt::format("    not.pred {}, {};\n", y, a[0].reg);
                    out += fmt::format("    and.pred {}, {}, {};\n", y, y, a[2].reg);
                    out += fmt::format("    or.pred {}, {}, {};\n", r.reg, x, y);
                } else {
                    out += fmt::format("    selp.{} {}, {}, {}, {};\n", ty(t), r.reg, a[1].reg, a[2].reg, a[0].reg);
                }
                return r;
            }
            case Op::Isnan:
            case Op::Isinf:
            case Op::Isfinite:
            case Op::Signbit: {
                if (a.size() != 1 || !is_f(a[0].t) || t != DType::Bool) no();
                const DType ft = a[0].t;
                const char* inf = ft == DType::Float32 ? "0f7F800000" : "0d7FF0000000000000";
                V r{reg(t), t};
                if (n.op == Op::Isnan) {
                    out += fmt::format("    setp.nan.{} {}, {}, {};\n", ty(ft), r.reg, a[0].reg, a[0].reg);
                } else if (n.op == Op::Signbit) {
                    const std::string b = ft == DType::Float32 ? u32() : u64();
                    out += fmt::format("    mov.{} {}, {};\n", bits(ft), b, a[0].reg);
                    out += fmt::format("    setp.lt.{} {}, {}, 0;\n", ft == DType::Float32 ? "s32" : "s64", r.reg, b);
                } else {
                    const std::string m = reg(ft);
                    out += fmt::format("    abs.{} {}, {};\n", ty(ft), m, a[0].reg);
                    out += fmt::format("    setp.{}.{} {}, {}, {};\n", n.op == Op::Isinf ? "eq" : "lt", ty(ft), r.reg,
                                       m, inf);
                }
                return r;
            }
            default: no();
        }
    }

    V value(ir::NodeId id, std::string& out) {
        if (auto it = memo_.find(id); it != memo_.end()) return it->second;
        const ir::Node& n = p_.node(id);
        V v;
        if (auto r = node_reads_.find(id); r != node_reads_.end()) {
            v = read(r->second, n.dtype, out);  // stored by an earlier stage
        } else {
            switch (n.kind) {
                case ir::NodeKind::Input: {
                    auto it = input_reads_.find(n.slot);
                    if (it == input_reads_.end()) no();
                    v = read(it->second, n.dtype, out);
                    break;
                }
                case ir::NodeKind::Scalar: {
                    auto it = scalar_regs_.find(n.slot);
                    if (it == scalar_regs_.end()) no();
                    v = cast(it->second, n.dtype, prologue_);
                    break;
                }
                case ir::NodeKind::Const: v = constant(n, prologue_); break;
                case ir::NodeKind::Op: v = op(n, out); break;
                case ir::NodeKind::Cast: {
                    if (n.nargs != 1) no();
                    v = cast(value(n.args[0], out), n.dtype, out);
                    break;
                }
                default: no();
            }
        }
        if (v.t != n.dtype) no();
        memo_.emplace(id, v);
        return v;
    }

    // The kernel's parameters: their declarations, the loads of their values (`setup`), the
    // arrays read (input_reads_, node_reads_) and written (writes_), the scalars, the count and
    // the workspace.
    void parameters() {
        for (std::size_t i = 0; i < k_.params.size(); ++i) {
            const Param& p = k_.params[i];
            const std::string name = fmt::format("jx_param_{}", i);
            auto declare = [&](const std::string& type) {
                params_ += fmt::format("{}    .param .{} {}", params_.empty() ? "" : ",\n", type, name);
            };
            switch (p.kind) {
                case Param::Kind::Array: {
                    if (!supported(p.dtype)) no();
                    declare("u64");
                    const std::string r = u64();
                    setup_ +=
                        fmt::format("    ld.param.u64 {}, [{}];\n    cvta.to.global.u64 {}, {};\n", r, name, r, r);
                    if (p.written) writes_.emplace_back(ir::NodeId(p.array.index), r);
                    else if (p.array.kind == ArrayRef::Kind::Input) input_reads_[p.array.index] = {r, p.broadcast, {}};
                    else node_reads_[ir::NodeId(p.array.index)] = {r, p.broadcast, {}};
                    break;
                }
                case Param::Kind::Scalar: {
                    if (!supported(p.dtype)) no();
                    const bool b = p.dtype == DType::Bool;
                    declare(b ? "u8" : ty(p.dtype));
                    V v{reg(p.dtype), p.dtype};
                    if (b) {
                        const std::string w = u32();
                        setup_ +=
                            fmt::format("    ld.param.u8 {}, [{}];\n    setp.ne.u32 {}, {}, 0;\n", w, name, v.reg, w);
                    } else {
                        setup_ += fmt::format("    ld.param.{} {}, [{}];\n", ty(p.dtype), v.reg, name);
                    }
                    scalar_regs_[p.scalar] = v;
                    break;
                }
                case Param::Kind::Count:
                    declare("u64");
                    count_ = name;
                    break;
                case Param::Kind::Workspace:
                    if (k_.launch.kind != KernelKind::ReduceAll) no();
                    declare("u64");
                    workspace_ = u64();
                    setup_ += fmt::format("    ld.param.u64 {0}, [{1}];\n    cvta.to.global.u64 {0}, {0};\n",
                                          workspace_, name);
                    break;
                default: no();
            }
        }
        if (count_.empty() || writes_.empty()) no();
    }

    // The text around a kernel body: version, the device functions it links, the entry and its
    // registers (`extra` declares more), then `code`.
    std::string wrap(const std::string& what, const std::string& entry, int sm, const std::string& extra,
                     const std::string& code) const {
        std::string s = fmt::format("// jitexpr: {} written as PTX (first tier of a tiered compile)\n", what);
        // The device functions linked in, by symbol and source hash: part of this text's hash, so
        // a changed function is a new module cache key.
        for (const auto& [symbol, f] : links_) s += fmt::format("// links {} {}\n", symbol, f.key);
        s += fmt::format(".version 7.8\n.target sm_{}\n.address_size 64\n\n", sm);
        s += declarations_;
        if (!declarations_.empty()) s += "\n";
        s += fmt::format(".visible .entry {}(\n{}\n)\n.maxntid {}, 1, 1\n{{\n", entry, params_, k_.launch.block);
        auto at_least_one = [](int n) { return std::max(1, n); };
        s += fmt::format("    .reg .pred %p<{}>;\n    .reg .f32 %f<{}>;\n    .reg .f64 %fd<{}>;\n", at_least_one(np_),
                         at_least_one(nf_), at_least_one(nd_));
        s += fmt::format("    .reg .b32 %r<{}>;\n    .reg .b64 %rd<{}>;\n", at_least_one(nr_), at_least_one(nrd_));
        s += "    .reg .b32 %t<4>;\n    .reg .b64 %rdI, %rdN, %rdS, %rdT;\n    .reg .pred %pL;\n";
        s += extra;
        s += setup_;
        s += fmt::format("    ld.param.u64 %rdN, [{}];\n", count_);
        s += prologue_;
        s += "    mov.u32 %t0, %ctaid.x;\n    mov.u32 %t1, %ntid.x;\n    mov.u32 %t2, %tid.x;\n    mov.u32 %t3, "
             "%nctaid.x;\n";
        s += "    mul.wide.u32 %rdI, %t0, %t1;\n    cvt.u64.u32 %rdT, %t2;\n    add.u64 %rdI, %rdI, %rdT;\n";
        s += "    mul.wide.u32 %rdS, %t3, %t1;\n";
        s += code;
        s += "}\n";
        return s;
    }

    std::string emit(const std::string& entry, int sm) {
        if (sm < 70 || sm > 90) no();
        if (k_.launch.kind == KernelKind::ReduceAll) return reduce_all(entry, sm);
        if (k_.launch.kind != KernelKind::Flat || k_.launch.vec != 1) no();
        parameters();
        std::string body;
        std::vector<V> results;
        for (const auto& [node, ptr] : writes_) results.push_back(value(node, body));
        for (std::size_t w = 0; w < writes_.size(); ++w) store(writes_[w].second, results[w], body);
        std::string code = "    setp.ge.u64 %pL, %rdI, %rdN;\n    @%pL bra $Ldone;\n$Lloop:\n";
        code += body;
        code +=
            "    add.u64 %rdI, %rdI, %rdS;\n    setp.lt.u64 %pL, %rdI, %rdN;\n    @%pL bra $Lloop;\n$Ldone:\n    "
            "ret;\n";
        return wrap("a Flat kernel", entry, sm, "", code);
    }

    // ---- full reductions (ReduceAll over flat reads), the scalar kernel of emit_reduce.cpp
    // instruction for instruction in the order it folds: each thread's groups of
    // launch.group elements, then its tail; the warp shuffle tree and the block's warps; one
    // partial per block; the last block (atomic ticket) folds the partials in block order.
    // The same order gives the same bits as the NVRTC kernels of both tiers.

    // R::identity() and R::combine(acc, x) of the reduction `op` (its accumulator) over dtype t.
    std::string identity(ir::Op acc, DType t) {
        const bool hi = acc == Op::ReduceMin || acc == Op::All || acc == Op::Prod;
        if (t == DType::Bool) return hi ? "1" : "0";
        switch (acc) {
            case Op::Sum: return t == DType::Float32 ? "0f00000000" : t == DType::Float64 ? "0d0000000000000000" : "0";
            case Op::Prod: return t == DType::Float32 ? "0f3F800000" : t == DType::Float64 ? "0d3FF0000000000000" : "1";
            case Op::ReduceMin:
                return t == DType::Float32   ? "0f7F800000"
                       : t == DType::Float64 ? "0d7FF0000000000000"
                       : t == DType::Int32   ? "0x7FFFFFFF"
                                             : "0x7FFFFFFFFFFFFFFF";
            case Op::ReduceMax:
                return t == DType::Float32   ? "0fFF800000"
                       : t == DType::Float64 ? "0dFFF0000000000000"
                       : t == DType::Int32   ? "0x80000000"
                                             : "0x8000000000000000";
            default: no();
        }
    }
    void set_identity(ir::Op acc, const V& a, std::string& out) {
        if (a.t == DType::Bool) {
            const std::string w = u32();
            out += fmt::format("    mov.u32 {}, {};\n    setp.ne.u32 {}, {}, 0;\n", w, identity(acc, a.t), a.reg, w);
        } else {
            // Integers as bits: the extremes are written in hex.
            out += fmt::format("    mov.{} {}, {};\n", is_f(a.t) ? ty(a.t) : bits(a.t), a.reg, identity(acc, a.t));
        }
    }
    void combine(ir::Op acc, const V& a, const V& x, std::string& out) {
        const DType t = a.t;
        if (x.t != t) no();
        switch (acc) {
            case Op::Sum:
            case Op::Prod:
                if (t == DType::Bool) no();
                out += fmt::format("    {}.{} {}, {}, {};\n",
                                   acc == Op::Sum ? (is_f(t) ? "add.rn" : "add") : (is_f(t) ? "mul.rn" : "mul.lo"),
                                   ty(t), a.reg, a.reg, x.reg);
                return;
            case Op::ReduceMin:
            case Op::ReduceMax: {
                const V m = minmax(acc == Op::ReduceMax, a, x, out);
                out += fmt::format("    mov.{} {}, {};\n", ty(t), a.reg, m.reg);
                return;
            }
            case Op::Any:
            case Op::All:
                if (t != DType::Bool) no();
                out += fmt::format("    {}.pred {}, {}, {};\n", acc == Op::Any ? "or" : "and", a.reg, a.reg, x.reg);
                return;
            default: no();
        }
    }
    // __shfl_down_sync(0xffffffff, v, d) of any value, 32 bits at a time (jx_shfl_down).
    V shfl_down(const V& v, int d, std::string& out) {
        V r{reg(v.t), v.t};
        if (v.t == DType::Bool) {
            const std::string w = u32(), s = u32();
            out += fmt::format("    selp.u32 {}, 1, 0, {};\n", w, v.reg);
            out += fmt::format("    shfl.sync.down.b32 {}, {}, {}, 31, -1;\n", s, w, d);
            out += fmt::format("    setp.ne.u32 {}, {}, 0;\n", r.reg, s);
        } else if (bytes(v.t) == 4) {
            const std::string w = u32(), s = u32();
            out += fmt::format("    mov.b32 {}, {};\n", w, v.reg);
            out += fmt::format("    shfl.sync.down.b32 {}, {}, {}, 31, -1;\n", s, w, d);
            out += fmt::format("    mov.b32 {}, {};\n", r.reg, s);
        } else {
            const std::string lo = u32(), hi = u32(), slo = u32(), shi = u32();
            out += fmt::format("    mov.b64 {{{}, {}}}, {};\n", lo, hi, v.reg);
            out += fmt::format("    shfl.sync.down.b32 {}, {}, {}, 31, -1;\n", slo, lo, d);
            out += fmt::format("    shfl.sync.down.b32 {}, {}, {}, 31, -1;\n", shi, hi, d);
            out += fmt::format("    mov.b64 {}, {{{}, {}}};\n", r.reg, slo, shi);
        }
        return r;
    }
    // A value of dtype t at [addr] (`space`: global, global.cg or shared) and back.
    void load_at(const std::string& space, const V& v, const std::string& addr, std::string& out) {
        if (v.t == DType::Bool) {
            const std::string b = u32();
            out += fmt::format("    ld.{}.u8 {}, [{}];\n    setp.ne.u32 {}, {}, 0;\n", space, b, addr, v.reg, b);
        } else {
            out += fmt::format("    ld.{}.{} {}, [{}];\n", space, ty(v.t), v.reg, addr);
        }
    }
    void store_at(const std::string& space, const V& v, const std::string& addr, std::string& out) {
        if (v.t == DType::Bool) {
            const std::string b = u32();
            out += fmt::format("    selp.u32 {}, 1, 0, {};\n    st.{}.u8 [{}], {};\n", b, v.reg, space, addr, b);
        } else {
            out += fmt::format("    st.{}.{} [{}], {};\n", space, ty(v.t), addr, v.reg);
        }
    }
    // jx_block_reduce: the warp tree, the warps' values through shared memory, warp 0's tree;
    // the result is valid in thread 0. `tag` makes its labels unique.
    void block_reduce(ir::Op acc, const V& v, const std::string& tag, std::string& out) {
        auto tree = [&] {
            for (int d = 16; d > 0; d >>= 1) combine(acc, v, shfl_down(v, d, out), out);
        };
        tree();
        const std::string lane = u32(), warp = u32(), addr = u32(), warps = u32();
        const std::string p = reg(DType::Bool);
        const int size = bytes(v.t);
        out += "    bar.sync 0;\n";
        out += fmt::format("    and.b32 {}, %t2, 31;\n    shr.u32 {}, %t2, 5;\n", lane, warp);
        out += fmt::format("    setp.ne.u32 {}, {}, 0;\n    @{} bra $Lb{}_lane;\n", p, lane, p, tag);
        out += fmt::format("    mov.u32 {}, jx_sh;\n    mad.lo.u32 {}, {}, {}, {};\n", addr, addr, warp, size, addr);
        store_at("shared", v, addr, out);
        out += fmt::format("$Lb{}_lane:\n    bar.sync 0;\n", tag);
        // The same for every lane of a warp: bra.uni spares ptxas the work of a divergent branch
        // around the second tree's shuffles (its assembly is several milliseconds shorter).
        out += fmt::format("    setp.ne.u32 {}, {}, 0;\n    @{} bra.uni $Lb{}_done;\n", p, warp, p, tag);
        out += fmt::format("    add.u32 {}, %t1, 31;\n    shr.u32 {}, {}, 5;\n", warps, warps, warps);
        out += fmt::format("    setp.lt.u32 {}, {}, {};\n    @!{} bra $Lb{}_id;\n", p, lane, warps, p, tag);
        out += fmt::format("    mov.u32 {}, jx_sh;\n    mad.lo.u32 {}, {}, {}, {};\n", addr, addr, lane, size, addr);
        load_at("shared", v, addr, out);
        out += fmt::format("    bra.uni $Lb{}_tree;\n$Lb{}_id:\n", tag, tag);
        set_identity(acc, v, out);
        out += fmt::format("$Lb{}_tree:\n", tag);
        tree();
        out += fmt::format("$Lb{}_done:\n", tag);
    }

    std::string reduce_all(const std::string& entry, int sm) {
        if (k_.launch.vec != 1 || k_.entries.size() != 1) no();
        parameters();
        if (writes_.size() != 1 || workspace_.empty()) no();
        const ir::Node& r = p_.node(writes_[0].first);
        if (r.kind != ir::NodeKind::Reduce || r.axis >= 0 || r.nargs != 1) no();
        const ir::OpInfo& info = ir::info(r.op);
        if (info.kind != ir::OpKind::Reduction || info.rule == ir::Rule::ArgFirst) no();
        const ir::Op acc_op = info.accumulate;
        const bool mean = info.finish == ir::Finish::DivideByCount;
        if (info.finish != ir::Finish::Keep && !mean) no();
        const DType t = r.dtype;
        if (!supported(t) || p_.node(r.args[0]).dtype != t || (mean && !is_f(t))) no();
        for (const Param& p : k_.params)
            if (p.written && p.dtype != t) no();
        const int group = std::max(1, k_.launch.group);
        const int size = bytes(t);
        if (k_.launch.partial_bytes != size) no();

        // One element: the operand at %rdI folded into acc.
        const V acc{reg(t), t};
        std::string element;
        combine(acc_op, acc, value(r.args[0], element), element);

        std::string code;
        set_identity(acc_op, acc, code);
        code += "    mov.u64 %rdF, %rdI;\n";
        if (group > 1) {  // groups first, a thread's groups step apart, each element in turn
            // group is a power of two (16 / an element's size): a 64-bit division would cost
            // ptxas several milliseconds of its inlined routine.
            if ((group & (group - 1)) != 0) no();
            code += fmt::format("    shr.u64 %rdG, %rdN, {};\n    mov.u64 %rdK, %rdF;\n",
                                std::countr_zero(static_cast<unsigned>(group)));
            code += "$Lgroup:\n    setp.ge.u64 %pL, %rdK, %rdG;\n    @%pL bra $Lgroups_done;\n";
            if (group <= 4) {
                // The group's elements written out (float32 and int32: 4, 64-bit types: 2): a
                // loop of a known count costs ptxas ~4 ms more to assemble (22 -> 18 ms for
                // sum(a*2+b) in float32 on the development machine).
                code += fmt::format("    mul.lo.u64 %rdI, %rdK, {};\n", group);
                for (int e = 0; e < group; ++e) code += element + "    add.u64 %rdI, %rdI, 1;\n";
            } else {
                code += fmt::format("    mul.lo.u64 %rdI, %rdK, {};\n    add.u64 %rdE, %rdI, {};\n$Lelement:\n", group,
                                    group);
                code += element;
                code += "    add.u64 %rdI, %rdI, 1;\n    setp.lt.u64 %pL, %rdI, %rdE;\n    @%pL bra $Lelement;\n";
            }
            code += "    add.u64 %rdK, %rdK, %rdS;\n    bra.uni $Lgroup;\n$Lgroups_done:\n";
            code += fmt::format("    mul.lo.u64 %rdI, %rdG, {};\n    add.u64 %rdI, %rdI, %rdF;\n", group);
        }
        code += "$Ltail:\n    setp.ge.u64 %pL, %rdI, %rdN;\n    @%pL bra $Ltail_done;\n";
        code += element;
        code += "    add.u64 %rdI, %rdI, %rdS;\n    bra.uni $Ltail;\n$Ltail_done:\n";
        block_reduce(acc_op, acc, "0", code);

        // Thread 0 stores the block's partial and takes a ticket; the last block goes on.
        const std::size_t ticket_at = k_.launch.workspace_bytes() - 16;
        const std::string addr = u64(), old = u32(), last = u32(), p = reg(DType::Bool);
        code += "    setp.ne.u32 %pL, %t2, 0;\n    @%pL bra $Lticket_done;\n";
        code += fmt::format("    mad.wide.u32 {}, %t0, {}, {};\n", addr, size, workspace_);
        store_at("global", acc, addr, code);
        code += "    membar.gl;\n";
        code += fmt::format("    add.u64 {}, {}, {};\n", addr, workspace_, ticket_at);
        code += fmt::format("    atom.global.add.u32 {}, [{}], 1;\n", old, addr);
        code += fmt::format("    sub.u32 {}, %t3, 1;\n    setp.eq.u32 {}, {}, {};\n", last, p, old, last);
        code += fmt::format("    selp.u32 {}, 1, 0, {};\n    st.shared.u8 [jx_last], {};\n", last, p, last);
        code += "$Lticket_done:\n    bar.sync 0;\n";
        code += fmt::format("    ld.shared.u8 {}, [jx_last];\n    setp.eq.u32 {}, {}, 0;\n", last, p, last);
        code += fmt::format("    @{} bra.uni $Lreturn;\n    membar.gl;\n", p);  // one answer for the block

        // The last block folds the partials in block order, a thread's slots blockDim apart.
        const V total{reg(t), t};
        const V part{reg(t), t};
        const std::string b = u32();
        set_identity(acc_op, total, code);
        code += fmt::format("    mov.u32 {}, %t2;\n$Lpartial:\n    setp.ge.u32 %pL, {}, %t3;\n", b, b);
        code += "    @%pL bra $Lpartials_done;\n";
        code += fmt::format("    mad.wide.u32 {}, {}, {}, {};\n", addr, b, size, workspace_);
        load_at("global.cg", part, addr, code);
        combine(acc_op, total, part, code);
        code += fmt::format("    add.u32 {}, {}, %t1;\n    bra.uni $Lpartial;\n$Lpartials_done:\n", b, b);
        block_reduce(acc_op, total, "1", code);

        // Thread 0 stores the result (the mean divided by the count) and resets the ticket. A mean
        // is divided by all of warp 0, the same call in every lane (a warp-uniform call.uni: a call
        // under thread 0's branch cost ptxas about 10 ms more); only thread 0's quotient is kept.
        V result = total;
        if (mean) {
            const std::string warp = u32();
            code += fmt::format("    shr.u32 {}, %t2, 5;\n    setp.ne.u32 %pL, {}, 0;\n    @%pL bra.uni $Lreturn;\n",
                                warp, warp);
            const V count{reg(t), t};
            code += fmt::format("    cvt.rn.{}.s64 {}, %rdN;\n", ty(t), count.reg);
            result = call(ir::Op::Div, t, {total, count}, code, /*uniform=*/true);  // as jx::op::Div
        }
        code += "    setp.ne.u32 %pL, %t2, 0;\n    @%pL bra $Lreturn;\n";
        store_at("global", result, writes_[0].second, code);
        code += fmt::format("    add.u64 {}, {}, {};\n    st.global.u32 [{}], 0;\n", addr, workspace_, ticket_at, addr);
        code += "$Lreturn:\n    ret;\n";

        const std::string extra = fmt::format(
            "    .reg .b64 %rdF, %rdG, %rdK, %rdE;\n    .shared .align 16 .b8 jx_sh[{}];\n    .shared .u8 jx_last;\n",
            32 * size);
        return wrap("a full reduction", entry, sm, extra, code);
    }

    const ir::Program& p_;
    const KernelSource& k_;
    int nf_ = 0, nd_ = 0, nr_ = 0, nrd_ = 0, np_ = 0;
    std::map<ir::NodeId, V> memo_;
    std::map<std::int32_t, Read> input_reads_;  // by input slot
    std::map<ir::NodeId, Read> node_reads_;     // by node stored by an earlier stage
    std::map<std::int32_t, V> scalar_regs_;
    std::string params_;                                      // the entry's parameter declarations
    std::string setup_;                                       // their loads
    std::string count_;                                       // the Count parameter's name
    std::string workspace_;                                   // ReduceAll: the workspace pointer's register
    std::vector<std::pair<ir::NodeId, std::string>> writes_;  // node, pointer register
    std::string prologue_;                                    // before the loop: broadcast reads, scalars, constants
    std::map<std::string, KernelSource> links_;               // device functions called, by symbol
    std::string declarations_;                                // their .extern .func lines

public:
    std::vector<KernelSource> links() const {
        std::vector<KernelSource> v;
        for (const auto& [symbol, f] : links_) v.push_back(f);
        return v;
    }
};

}  // namespace

namespace {

// What the PTX tier calls rather than writes (Emitter::call), for operands of one dtype, as
// dsl's promotion leaves them: each op in float32 and float64, or in int32 and int64.
// tests/codegen/test_ptx.cpp checks that every call of a single-op program is listed here.
constexpr Op kFloatCalls[] = {
    Op::Arccos,    Op::Arccosh,    Op::Arcsin,    Op::Arcsinh, Op::Arctan2,   Op::Arctan,   Op::Arctanh, Op::Cbrt,
    Op::Conj,      Op::Copysign,   Op::Cos,       Op::Cosh,    Op::Deg2rad,   Op::Div,      Op::Erf,     Op::Erfc,
    Op::Exp2,      Op::Exp,        Op::Expm1,     Op::Fabs,    Op::FloorDiv,  Op::Fmax,     Op::Fmin,    Op::Fmod,
    Op::Heaviside, Op::Hypot,      Op::Imag,      Op::Ldexp,   Op::Lgamma,    Op::Log10,    Op::Log1p,   Op::Log2,
    Op::Log,       Op::Logaddexp2, Op::Logaddexp, Op::Mod,     Op::Nextafter, Op::OnesLike, Op::Pow,     Op::Rad2deg,
    Op::Real,      Op::Reciprocal, Op::Sign,      Op::Sin,     Op::Sinh,      Op::Spacing,  Op::Sqrt,    Op::Tan,
    Op::Tanh,      Op::Tgamma,
};
constexpr Op kFloat64OnlyCalls[] = {Op::FloatPower};  // float32 operands are promoted first
constexpr Op kIntCalls[] = {
    Op::Ceil, Op::Conj,     Op::Fmax, Op::Fmin, Op::Floor,      Op::FloorDiv, Op::Fmod, Op::Gcd, Op::Imag, Op::Lcm,
    Op::Mod,  Op::OnesLike, Op::Pow,  Op::Real, Op::Reciprocal, Op::Round,    Op::Shl,  Op::Shr, Op::Sign, Op::Trunc,
};

KernelSource library(std::string_view group, const std::vector<std::pair<Op, DType>>& functions) {
    KernelSource k;
    k.relocatable = true;
    k.name = fmt::format("jx_library_{}", group);
    SemanticsNeeds needs;
    std::string bodies;
    for (const auto& [op, t] : functions) {
        const int arity = ir::info(op).arity;
        std::optional<KernelSource> f = device_function(op, std::vector<DType>(static_cast<std::size_t>(arity), t), t);
        if (!f) continue;
        needs.ops.push_back(op);
        k.entries.push_back(f->entries[0]);
        bodies += f->body;
    }
    k.body = bodies;
    k.source = fmt::format("// jitexpr device library {} (linked into PTX kernels)\n#define JX_CUDA 1\n", group);
    k.source += semantics_for(needs);
    k.source += "\n";
    k.source += bodies;
    k.hash = source_hash(k.source);
    k.key = hex64(k.hash);
    return k;
}

}  // namespace

const std::vector<KernelSource>& device_libraries() {
    static const std::vector<KernelSource> libraries = [] {
        auto of = [](std::initializer_list<DType> types, std::initializer_list<std::span<const Op>> lists) {
            std::vector<std::pair<Op, DType>> out;
            for (DType t : types)
                for (std::span<const Op> ops : lists)
                    for (Op op : ops) out.emplace_back(op, t);
            return out;
        };
        std::vector<KernelSource> v;
        v.push_back(library("f32", of({DType::Float32}, {kFloatCalls})));
        v.push_back(library("f64", of({DType::Float64}, {kFloatCalls, kFloat64OnlyCalls})));
        v.push_back(library("int", of({DType::Int32, DType::Int64}, {kIntCalls})));
        return v;
    }();
    return libraries;
}

int device_library_of(std::string_view symbol) {
    static const std::map<std::string, int, std::less<>> index = [] {
        std::map<std::string, int, std::less<>> m;
        const auto& libs = device_libraries();
        for (std::size_t g = 0; g < libs.size(); ++g)
            for (const auto& e : libs[g].entries) m.emplace(e, static_cast<int>(g));
        return m;
    }();
    auto it = index.find(symbol);
    return it == index.end() ? -1 : it->second;
}

std::optional<KernelSource> emit_ptx(const ir::Program& program, const KernelSource& kernel, int sm) {
    if (kernel.entries.size() != 1) return std::nullopt;
    Writer w(program, kernel);
    // value() recurses once per node of a chain (up to a stage's node limit): on a stack of
    // known size, whatever the caller's (core/stack.hpp).
    std::optional<std::string> text =
        core::with_stack(core::kFrontStackBytes, [&] { return w.run(kernel.entries[0], sm); });
    if (!text) return std::nullopt;
    KernelSource k = kernel;
    k.ptx = true;
    k.links = w.links();
    k.body = *text;
    k.source = *text;
    k.hash = source_hash(k.source);
    k.key = hex64(k.hash);
    return k;
}

}  // namespace jit::codegen

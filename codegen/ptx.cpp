// jitexpr — Flat kernels written directly in PTX, for the first tier of a tiered compile.
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
// scalar-only Flat kernel it replaces, so the executor launches either alike.
#include "codegen/codegen.hpp"
#include "core/stack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
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
    V call(const ir::Node& n, const std::vector<V>& a, std::string& out) {
        std::vector<DType> types;
        for (const V& v : a) types.push_back(v.t);
        std::optional<KernelSource> f = device_function(n.op, types, n.dtype);
        if (!f) no();
        const std::string& symbol = f->entries[0];
        auto param = [](DType t) { return t == DType::Float64 || t == DType::Int64 ? ".b64" : ".b32"; };
        if (!links_.count(symbol)) {
            std::string decl = fmt::format(".extern .func (.param {} jxr) {} (", param(n.dtype), symbol);
            for (std::size_t i = 0; i < a.size(); ++i)
                decl += fmt::format("{}.param {} jxp{}", i ? ", " : "", param(a[i].t), i);
            declarations_ += decl + ");\n";
            links_.emplace(symbol, std::move(*f));
        }
        V r{reg(n.dtype), n.dtype};
        out += "    {\n";
        std::string args;
        for (std::size_t i = 0; i < a.size(); ++i) {
            out += fmt::format("    .param {} jxp{};\n    st.param{} [jxp{}], {};\n", param(a[i].t), i, param(a[i].t),
                               i, a[i].reg);
            args += fmt::format("{}jxp{}", i ? ", " : "", i);
        }
        out += fmt::format("    .param {} jxr;\n    call (jxr), {}, ({});\n    ld.param{} {}, [jxr];\n    }}\n",
                           param(n.dtype), symbol, args, param(n.dtype), r.reg);
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
            case Op::Div: return binary("div.rn", nullptr, nullptr);
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
            case Op::Sqrt: return unary("sqrt.rn", nullptr);
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

    std::string emit(const std::string& entry, int sm) {
        if (k_.launch.kind != KernelKind::Flat || k_.launch.vec != 1) no();
        if (sm < 70 || sm > 90) no();
        std::string params, setup;
        std::vector<std::pair<ir::NodeId, std::string>> writes;  // node, pointer register
        std::string count;
        for (std::size_t i = 0; i < k_.params.size(); ++i) {
            const Param& p = k_.params[i];
            const std::string name = fmt::format("jx_param_{}", i);
            switch (p.kind) {
                case Param::Kind::Array: {
                    if (!supported(p.dtype)) no();
                    params += fmt::format("{}    .param .u64 {}", params.empty() ? "" : ",\n", name);
                    const std::string r = u64();
                    setup += fmt::format("    ld.param.u64 {}, [{}];\n    cvta.to.global.u64 {}, {};\n", r, name, r, r);
                    if (p.written) writes.emplace_back(ir::NodeId(p.array.index), r);
                    else if (p.array.kind == ArrayRef::Kind::Input) input_reads_[p.array.index] = {r, p.broadcast, {}};
                    else node_reads_[ir::NodeId(p.array.index)] = {r, p.broadcast, {}};
                    break;
                }
                case Param::Kind::Scalar: {
                    if (!supported(p.dtype)) no();
                    const bool b = p.dtype == DType::Bool;
                    params +=
                        fmt::format("{}    .param .{} {}", params.empty() ? "" : ",\n", b ? "u8" : ty(p.dtype), name);
                    V v{reg(p.dtype), p.dtype};
                    if (b) {
                        const std::string w = u32();
                        setup +=
                            fmt::format("    ld.param.u8 {}, [{}];\n    setp.ne.u32 {}, {}, 0;\n", w, name, v.reg, w);
                    } else {
                        setup += fmt::format("    ld.param.{} {}, [{}];\n", ty(p.dtype), v.reg, name);
                    }
                    scalar_regs_[p.scalar] = v;
                    break;
                }
                case Param::Kind::Count:
                    params += fmt::format("{}    .param .u64 {}", params.empty() ? "" : ",\n", name);
                    count = name;
                    break;
                default: no();
            }
        }
        if (count.empty() || writes.empty()) no();
        std::string body;
        std::vector<V> results;
        for (const auto& [node, ptr] : writes) results.push_back(value(node, body));
        for (std::size_t w = 0; w < writes.size(); ++w) store(writes[w].second, results[w], body);

        std::string s = "// jitexpr: a Flat kernel written as PTX (first tier of a tiered compile)\n";
        // The device functions linked in, by symbol and source hash: part of this text's hash, so
        // a changed function is a new module cache key.
        for (const auto& [symbol, f] : links_) s += fmt::format("// links {} {}\n", symbol, f.key);
        s += fmt::format(".version 7.8\n.target sm_{}\n.address_size 64\n\n", sm);
        s += declarations_;
        if (!declarations_.empty()) s += "\n";
        s += fmt::format(".visible .entry {}(\n{}\n)\n.maxntid {}, 1, 1\n{{\n", entry, params, k_.launch.block);
        auto at_least_one = [](int n) { return std::max(1, n); };
        s += fmt::format("    .reg .pred %p<{}>;\n    .reg .f32 %f<{}>;\n    .reg .f64 %fd<{}>;\n", at_least_one(np_),
                         at_least_one(nf_), at_least_one(nd_));
        s += fmt::format("    .reg .b32 %r<{}>;\n    .reg .b64 %rd<{}>;\n", at_least_one(nr_), at_least_one(nrd_));
        s += "    .reg .b32 %t<4>;\n    .reg .b64 %rdI, %rdN, %rdS, %rdT;\n    .reg .pred %pL;\n";
        s += setup;
        s += fmt::format("    ld.param.u64 %rdN, [{}];\n", count);
        s += prologue_;
        s += "    mov.u32 %t0, %ctaid.x;\n    mov.u32 %t1, %ntid.x;\n    mov.u32 %t2, %tid.x;\n    mov.u32 %t3, "
             "%nctaid.x;\n";
        s += "    mul.wide.u32 %rdI, %t0, %t1;\n    cvt.u64.u32 %rdT, %t2;\n    add.u64 %rdI, %rdI, %rdT;\n";
        s += "    mul.wide.u32 %rdS, %t3, %t1;\n";
        s += "    setp.ge.u64 %pL, %rdI, %rdN;\n    @%pL bra $Ldone;\n$Lloop:\n";
        s += body;
        s += "    add.u64 %rdI, %rdI, %rdS;\n    setp.lt.u64 %pL, %rdI, %rdN;\n    @%pL bra $Lloop;\n$Ldone:\n    "
             "ret;\n}\n";
        return s;
    }

    const ir::Program& p_;
    const KernelSource& k_;
    int nf_ = 0, nd_ = 0, nr_ = 0, nrd_ = 0, np_ = 0;
    std::map<ir::NodeId, V> memo_;
    std::map<std::int32_t, Read> input_reads_;  // by input slot
    std::map<ir::NodeId, Read> node_reads_;     // by node stored by an earlier stage
    std::map<std::int32_t, V> scalar_regs_;
    std::string prologue_;                       // before the loop: broadcast reads, scalars, constants
    std::map<std::string, KernelSource> links_;  // device functions called, by symbol
    std::string declarations_;                   // their .extern .func lines

public:
    std::vector<KernelSource> links() const {
        std::vector<KernelSource> v;
        for (const auto& [symbol, f] : links_) v.push_back(f);
        return v;
    }
};

}  // namespace

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
    k.hash = fnv1a(k.source);
    k.key = hex64(k.hash);
    return k;
}

}  // namespace jit::codegen

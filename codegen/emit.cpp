// jitexpr — CUDA C++ emitter: ir::Program + ir::Schedule -> one kernel source per stage.
//
// Every value is computed inline in registers, in node order, by one generated device
// function `jx_compute` per kernel; the kernel bodies only load, call it and store. Names in the
// text are generated (in0, buf0, out0, s0, v12); user identifiers never appear. Ops are calls to
// jx::op::<Id> and casts jx::cast<T> from dsl/semantics.h, whose text precedes the kernel.
//
// This file: the pieces every kernel shares (types, constants, jx_compute, parameters) and
// emit() itself; the kernel kinds are in emit_elementwise.cpp and emit_reduce.cpp
// (codegen/stage_emitter.hpp).
#include "codegen/codegen.hpp"
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>
#if JITEXPR_HAVE_XXHASH
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace jit::codegen {

namespace {

constexpr std::string_view kOpIds[] = {
#define JIT_OP(Id, ...) #Id,
#include "dsl/ops.def"
#undef JIT_OP
};

// ---- exact constants

std::string float_literal(float x) {
    if (!std::isfinite(x)) return fmt::format("__int_as_float(0x{:08x})", std::bit_cast<std::uint32_t>(x));
    std::string s = fmt::format("{:a}", x) + "f";
    return std::signbit(x) ? "(" + s + ")" : s;
}

std::string double_literal(double x) {
    if (!std::isfinite(x))
        return fmt::format("__longlong_as_double((long long)0x{:016x}ULL)", std::bit_cast<std::uint64_t>(x));
    std::string s = fmt::format("{:a}", x);
    return std::signbit(x) ? "(" + s + ")" : s;
}

// Reads a Value as (real, imag) doubles / int64 / uint64 whatever its own dtype.
struct Num {
    bool is_int = false, is_unsigned = false;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    double re = 0, im = 0;
};
Num read_num(const ir::Value& v) {
    Num n;
    if (is_bool(v.dtype)) {
        n.is_int = true;
        n.i = v.b ? 1 : 0;
        n.u = n.i;
        n.re = static_cast<double>(n.i);
    } else if (is_signed_int(v.dtype)) {
        n.is_int = true;
        n.i = v.i;
        n.u = static_cast<std::uint64_t>(v.i);
        n.re = static_cast<double>(v.i);
    } else if (is_unsigned_int(v.dtype)) {
        n.is_int = true;
        n.is_unsigned = true;
        n.u = v.u;
        n.i = static_cast<std::int64_t>(v.u);
        n.re = static_cast<double>(v.u);
    } else {
        n.re = v.f;
        n.im = is_complex(v.dtype) ? v.im : 0.0;
    }
    return n;
}

std::int64_t to_int_bits(const Num& n) {
    if (n.is_int) return n.i;
    // float -> integer: truncate; NaN -> 0; saturate (as jx::cast does on the device)
    double x = n.re;
    if (std::isnan(x)) return 0;
    if (x >= 9223372036854775807.0) return std::numeric_limits<std::int64_t>::max();
    if (x <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(x);
}

constexpr std::string_view kPrelude = R"(// ---- jitexpr kernel prelude
template <class T, int N> struct __align__(sizeof(T) * N) jx_vec { T v[N]; };

// Any trivially copyable value through warp shuffles, 32 bits at a time.
template <class T> __device__ __forceinline__ T jx_shfl_down(const T& v, int delta) {
    constexpr int W = (sizeof(T) + 3) / 4;
    unsigned w[W];
    T r;
    w[W - 1] = 0u;
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
    memcpy(&r, w, sizeof(T));
    return r;
}

// A load that bypasses L1 (values other blocks wrote during this launch).
template <class T> __device__ __forceinline__ T jx_ldcg(const T* p) {
    T r;
    if constexpr (sizeof(T) % 4 == 0) {
        unsigned w[sizeof(T) / 4];
#pragma unroll
        for (int k = 0; k < (int)(sizeof(T) / 4); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned*>(p) + k);
        memcpy(&r, w, sizeof(T));
    } else {
        unsigned char b[sizeof(T)];
#pragma unroll
        for (int k = 0; k < (int)sizeof(T); ++k) b[k] = __ldcg(reinterpret_cast<const unsigned char*>(p) + k);
        memcpy(&r, b, sizeof(T));
    }
    return r;
}

// Reduces one value per thread of the block; the result is valid in thread 0.
template <class R, class T> __device__ __forceinline__ T jx_block_reduce(T v) {
    __shared__ __align__(16) unsigned char raw[32 * sizeof(T)];
    T* sh = reinterpret_cast<T*>(raw);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = R::combine(v, jx_shfl_down(v, d));
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)((blockDim.x + 31) >> 5) ? sh[lane] : R::identity();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) v = R::combine(v, jx_shfl_down(v, d));
    }
    return v;
}
)";

}  // namespace

namespace emitter {

void internal(const std::string& what) { throw InternalError("codegen: " + what); }

// The C++ type a value of `t` has in registers (16-bit floats compute in float).
std::string reg_type(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::Int8: return "jx::i8";
        case DType::Int16: return "jx::i16";
        case DType::Int32: return "jx::i32";
        case DType::Int64: return "jx::i64";
        case DType::UInt8: return "jx::u8";
        case DType::UInt16: return "jx::u16";
        case DType::UInt32: return "jx::u32";
        case DType::UInt64: return "jx::u64";
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32: return "float";
        case DType::Float64: return "double";
        case DType::Complex64: return "jx::c64";
        case DType::Complex128:
            return "jx::c128";
            JIT_TEMPORAL_CASES break;  // lowered to int64 by dsl/lower/: never here
        // A string value: a pointer and a length (dsl/semantics.h), made from the column by
        // its accessor's operator[] (string_accessor).
        case DType::Bytes: return "jx::sb";
        case DType::Str: return "jx::su";
        case DType::Utf8: return "jx::s8";
    }
    internal("unknown dtype");
}

// The C++ type of an element in memory.
std::string store_type(DType t) { return is_half(t) ? "jx::u16" : reg_type(t); }

std::string load_conv(DType t, const std::string& x) {
    if (t == DType::Float16) return "jx::half_to_float(" + x + ")";
    if (t == DType::BFloat16) return "jx::bf16_to_float(" + x + ")";
    return x;
}

std::string store_conv(DType t, const std::string& v) {
    if (t == DType::Float16) return "jx::float_to_half(" + v + ")";
    if (t == DType::BFloat16) return "jx::float_to_bf16(" + v + ")";
    return v;
}

// Reduction functor of jx::red for a Reduce op: its accumulator's (dsl/ops.def).
std::string red_type(ir::Op op, DType t) {
    const ir::OpInfo& i = ir::info(op);
    if (i.kind != ir::OpKind::Reduction) internal(fmt::format("{} is not a reduction", op_id(op)));
    return fmt::format("jx::red::{}<{}>", ir::info(i.accumulate).id, reg_type(t));
}

std::string string_accessor(const ReadArray& a) {
    switch (a.dtype) {
        case DType::Bytes: return "jx::col_sb";
        case DType::Str: return "jx::col_su";
        case DType::Utf8: return a.item == 8 ? "jx::col_s8l" : "jx::col_s8";
        default: internal(fmt::format("a string accessor for {}", dtype_name(a.dtype)));
    }
}

bool same_flat(const Shape& shape, const Strides& strides, const Shape& target) {
    if (shape_size(target) <= 1 || shape_size(shape) == 1) return true;
    Strides b = ir::broadcast_strides(shape, strides, target);
    Strides c = contiguous_strides(target);
    for (std::size_t d = 0; d < target.size(); ++d)
        if (target[d] != 1 && b[d] != c[d]) return false;
    return true;
}

KernelSource StageEmitter::run() {
    collect();
    choose_kind();
    KernelSource k;
    k.stage = stage_index_;
    k.launch.kind = kind_;
    k.launch.block = opt_.block;
    std::string body = compute_function();
    body += kernel(k);
    k.body = std::move(body);
    k.source = "// jitexpr generated kernel\n#define JX_CUDA 1\n";
    if (opt_.full_semantics) k.source += semantics_source();
    else k.source += semantics_for(semantics_needs());
    k.source += "\n";
    k.source += kPrelude;
    k.source += "\n";
    k.source += k.body;
    k.hash = source_hash(k.source);
    k.key = hex64(k.hash);
    k.name = "jx_" + k.key;
    return k;
}

// The ops this stage computes and the kinds of value it touches (after collect()).
SemanticsNeeds StageEmitter::semantics_needs() const {
    SemanticsNeeds needs;
    auto touch = [&needs](DType t) {
        needs.complex = needs.complex || is_complex(t);
        needs.half = needs.half || t == DType::Float16 || t == DType::BFloat16;
        needs.strings = needs.strings || is_string(t);
    };
    for (const ir::NodeId i : p_.ids()) {
        if (!needed_[i]) continue;
        const ir::Node& node = p_.node(i);
        touch(node.dtype);
        if (node.kind == ir::NodeKind::Op && !is_buffer(i)) needs.ops.push_back(node.op);
        if (node.kind == ir::NodeKind::Input) touch(p_.inputs.at(static_cast<std::size_t>(node.slot)).dtype);
        if (node.kind == ir::NodeKind::Scalar) touch(p_.scalars.at(static_cast<std::size_t>(node.slot)).dtype);
    }
    if (is_root_stage()) {
        const ir::Node& r = p_.node(st_.reduce);
        touch(r.dtype);
        // A scan runs its accumulator's functor (jx::red::Sum for cumsum).
        needs.ops.push_back(r.kind == ir::NodeKind::Scan ? ir::info(r.op).accumulate : r.op);
    }
    for (const auto& w : writes_) touch(w.dtype);
    for (const auto& r : reads_) touch(r.dtype);
    return needs;
}

// A node read from an earlier stage's buffer rather than recomputed.
bool StageEmitter::is_buffer(ir::NodeId n) const {
    if (s_.is_spilled(n)) return s_.stored_by[n] != stage_index_;
    return ir::is_stage_root(p_.node(n).kind) && n != st_.reduce;
}

// Marks `root` and every node it reads in this stage. An explicit stack, not recursion: a
// program may be a 100,000-deep chain (a + a + ... + a), too deep for the thread's stack.
void StageEmitter::visit(ir::NodeId root) {
    std::vector<ir::NodeId> stack{root};
    while (!stack.empty()) {
        const ir::NodeId n = stack.back();
        stack.pop_back();
        if (!n.valid() || n.index() >= p_.nodes.size()) internal("node index out of range");
        if (needed_[n]) continue;
        needed_[n] = 1;
        const ir::Node& node = p_.node(n);
        if (is_buffer(n)) continue;
        if (ir::is_stage_root(node.kind)) internal("nested reduction or scan in a stage");
        for (int a = 0; a < node.nargs; ++a) {
            if (node.args[a] >= n) internal("nodes are not in topological order");
            stack.push_back(node.args[a]);
        }
    }
}

void StageEmitter::collect() {
    needed_.assign(p_.nodes.size(), 0);
    if (is_root_stage()) {
        const ir::Node& r = p_.node(st_.reduce);
        const auto want = st_.kind == ir::Stage::Kind::Scan ? ir::NodeKind::Scan : ir::NodeKind::Reduce;
        if (r.kind != want || r.nargs != 1) internal("reduce or scan stage without its node");
        visit(r.args[0]);
    } else if (is_compact_stage()) {
        if (st_.stores.empty()) internal("compact stage stores nothing");
        visit(p_.node(st_.stores[0]).args[1]);  // the mask, then the values of each selection
        for (auto n : st_.stores) {
            if (p_.node(n).kind != ir::NodeKind::Compact) internal("compact stage stores no Compact node");
            visit(p_.node(n).args[0]);
        }
    } else {
        if (st_.stores.empty()) internal("elementwise stage stores nothing");
        for (auto n : st_.stores) visit(n);
    }
    // Arrays read: inputs by slot, then buffers by node.
    std::set<std::int32_t> slots, scalars, texts;
    std::set<ir::NodeId> bufs;
    for (const ir::NodeId n : p_.ids()) {
        if (!needed_[n]) continue;
        const ir::Node& node = p_.node(n);
        if (is_buffer(n)) bufs.insert(n);
        else if (node.kind == ir::NodeKind::Input) slots.insert(node.slot);
        else if (node.kind == ir::NodeKind::Scalar) scalars.insert(node.slot);
        else if (node.kind == ir::NodeKind::Const && is_string(node.dtype)) {
            texts.insert(node.slot);
            text_dtypes_[node.slot] = node.dtype;
        }
    }
    for (auto slot : slots) {
        if (slot < 0 || slot >= static_cast<std::int32_t>(p_.inputs.size())) internal("input slot out of range");
        const ir::InputDecl& in = p_.inputs[static_cast<std::size_t>(slot)];
        ReadArray r{{ArrayRef::Kind::Input, slot}, in.dtype, in.shape, in.strides, fmt::format("in{}", reads_.size())};
        r.item = in.itemsize;
        if (r.strides.size() != r.shape.size()) r.strides = contiguous_strides(r.shape);
        input_read_[slot] = static_cast<int>(reads_.size());
        reads_.push_back(std::move(r));
    }
    for (auto n : bufs) {
        const ir::Node& node = p_.node(n);
        ReadArray r{{ArrayRef::Kind::Node, n.value()},
                    node.dtype,
                    node.shape,
                    contiguous_strides(node.shape),
                    fmt::format("buf{}", reads_.size())};
        buffer_read_[n] = static_cast<int>(reads_.size());
        reads_.push_back(std::move(r));
    }
    for (auto s : scalars) {
        if (s < 0 || s >= static_cast<std::int32_t>(p_.scalars.size())) internal("scalar slot out of range");
        scalars_.push_back(s);
    }
    for (auto t : texts) {
        if (t < 0 || t >= static_cast<std::int32_t>(p_.strings.size())) internal("string slot out of range");
        texts_.push_back(t);
    }
    // Arrays written.
    auto output_alias = [&](ir::NodeId n) -> std::int32_t {
        if (n.index() >= s_.output_of.size()) return -1;
        const std::int32_t o = s_.output_of[n];
        if (o < 0) return -1;
        return p_.outputs.at(static_cast<std::size_t>(o)).alias_input;
    };
    const std::vector<ir::NodeId> stores = is_root_stage() ? std::vector<ir::NodeId>{st_.reduce} : st_.stores;
    for (auto n : stores) {
        const ir::Node& node = p_.node(n);
        WriteArray w{n, node.dtype, fmt::format("out{}", writes_.size()), contiguous_strides(node.shape)};
        std::int32_t alias = output_alias(n);
        if (alias >= 0) {
            const ir::InputDecl& in = p_.inputs.at(static_cast<std::size_t>(alias));
            if (in.strides.size() == node.shape.size()) w.strides = in.strides;
            w.restrict_ok = false;
            auto it = input_read_.find(alias);
            if (it != input_read_.end()) reads_[static_cast<std::size_t>(it->second)].restrict_ok = false;
        }
        writes_.push_back(std::move(w));
    }
}

std::string StageEmitter::compute_function() {
    std::string params;
    auto sep = [&] {
        if (!params.empty()) params += ", ";
    };
    for (auto& a : reads_) {
        sep();
        params += fmt::format("const {} a_{}", store_type(a.dtype), a.name);
    }
    for (auto s : scalars_) {
        sep();
        params += fmt::format("const {} s{}", reg_type(p_.scalars[static_cast<std::size_t>(s)].dtype), s);
    }
    for (auto t : texts_) {
        sep();
        params += fmt::format("const {} t{}", reg_type(text_dtype(t)), t);
    }
    std::string ret = is_compact_stage() ? "bool" : "void";
    if (is_root_stage()) {
        ret = reg_type(p_.node(p_.node(st_.reduce).args[0]).dtype);
    } else {
        for (auto& w : writes_) {
            sep();
            params += fmt::format("{}& r_{}", store_type(w.dtype), w.name);
        }
    }
    std::string out = fmt::format("__device__ __forceinline__ {} jx_compute({}) {{\n", ret, params);
    for (const ir::NodeId n : p_.ids())
        if (needed_[n]) out += "    " + node_line(n) + "\n";
    if (is_root_stage()) {
        out += fmt::format("    return v{};\n", p_.node(st_.reduce).args[0]);
    } else if (is_compact_stage()) {
        for (auto& w : writes_)
            out += fmt::format("    r_{} = {};\n", w.name,
                               store_conv(w.dtype, fmt::format("v{}", p_.node(w.node).args[0])));
        out += fmt::format("    return v{};\n", p_.node(st_.stores[0]).args[1]);
    } else {
        for (auto& w : writes_)
            out += fmt::format("    r_{} = {};\n", w.name, store_conv(w.dtype, fmt::format("v{}", w.node)));
    }
    out += "}\n\n";
    return out;
}

std::string StageEmitter::node_line(ir::NodeId n) {
    const ir::Node& node = p_.node(n);
    const std::string t = reg_type(node.dtype);
    auto arg = [&](int k) {
        if (k >= node.nargs) internal("missing operand");
        return fmt::format("v{}", node.args[k]);
    };
    std::string e;
    if (is_buffer(n)) {
        e = load_conv(node.dtype, "a_" + reads_[static_cast<std::size_t>(buffer_read_.at(n))].name);
    } else {
        switch (node.kind) {
            case ir::NodeKind::Input: {
                const ReadArray& a = reads_[static_cast<std::size_t>(input_read_.at(node.slot))];
                e = load_conv(a.dtype, "a_" + a.name);
                if (a.dtype != node.dtype) e = fmt::format("jx::cast<{}>({})", t, e);
                break;
            }
            case ir::NodeKind::Scalar: {
                e = fmt::format("s{}", node.slot);
                if (p_.scalars[static_cast<std::size_t>(node.slot)].dtype != node.dtype)
                    e = fmt::format("jx::cast<{}>({})", t, e);
                break;
            }
            case ir::NodeKind::Const:
                // A string constant is a kernel parameter (its bytes are data), never text.
                e = is_string(node.dtype) ? fmt::format("t{}", node.slot) : cuda_literal(node.value, node.dtype);
                break;
            case ir::NodeKind::Op: {
                // nextafter steps in the 16-bit format, not in the float that carries it.
                if (node.op == ir::Op::Nextafter && node.dtype == DType::Float16) e = "jx::nextafter_f16(";
                else if (node.op == ir::Op::Nextafter && node.dtype == DType::BFloat16) e = "jx::nextafter_bf16(";
                else if (node.op == ir::Op::Spacing && node.dtype == DType::Float16) e = "jx::spacing_f16(";
                else if (node.op == ir::Op::Spacing && node.dtype == DType::BFloat16) e = "jx::spacing_bf16(";
                else e = fmt::format("jx::op::{}(", op_id(node.op));
                for (int k = 0; k < node.nargs; ++k) e += (k ? ", " : "") + arg(k);
                e += ")";
                break;
            }
            case ir::NodeKind::Cast: {
                const DType from = p_.node(node.args[0]).dtype;
                // Entering a 16-bit float type rounds once, from the source value; leaving
                // one rounds the (float-carried) value to its type first.
                std::string src = arg(0);
                if (from == DType::Float16) src = fmt::format("jx::round_f16({})", src);
                else if (from == DType::BFloat16) src = fmt::format("jx::round_bf16({})", src);
                if (node.dtype == DType::Float16) e = fmt::format("jx::round_f16({})", src);
                else if (node.dtype == DType::BFloat16) e = fmt::format("jx::round_bf16({})", src);
                else if (reg_type(from) == t) e = src;
                else e = fmt::format("jx::cast<{}>({})", t, src);
                break;
            }
            case ir::NodeKind::Reduce: internal("unexpected Reduce node");
            case ir::NodeKind::Compact: internal("a Compact node read as a value");
            case ir::NodeKind::Scan: internal("unexpected Scan node");
        }
    }
    return fmt::format("const {} v{} = {};", t, n, e);
}

std::string StageEmitter::array_params(bool flat) {
    std::string s;
    for (auto& a : reads_) {
        const char* r = a.restrict_ok ? " __restrict__" : "";
        if (is_string(a.dtype)) s += fmt::format("const {} {}, ", string_accessor(a), a.name);
        else s += fmt::format("const {}*{} {}, ", store_type(a.dtype), r, a.name);
    }
    for (auto& w : writes_) {
        const char* r = w.restrict_ok ? " __restrict__" : "";
        s += fmt::format("{}*{} {}, ", store_type(w.dtype), r, w.name);
    }
    for (auto sc : scalars_)
        s += fmt::format("const {} s{}, ", reg_type(p_.scalars[static_cast<std::size_t>(sc)].dtype), sc);
    for (auto t : texts_) s += fmt::format("const {} t{}, ", reg_type(text_dtype(t)), t);
    return s;
}

std::string StageEmitter::call_args(const std::vector<std::string>& read_exprs,
                                    const std::vector<std::string>& write_exprs) {
    std::string s;
    auto sep = [&] {
        if (!s.empty()) s += ", ";
    };
    for (auto& r : read_exprs) {
        sep();
        s += r;
    }
    for (auto sc : scalars_) {
        sep();
        s += fmt::format("s{}", sc);
    }
    for (auto t : texts_) {
        sep();
        s += fmt::format("t{}", t);
    }
    for (auto& w : write_exprs) {
        sep();
        s += w;
    }
    return s;
}

void StageEmitter::add_array_params(KernelSource& k, bool with_rows) {
    int row = 0;
    for (auto& a : reads_) {
        Param p;
        p.kind = Param::Kind::Array;
        p.array = a.ref;
        p.dtype = a.dtype;
        p.broadcast = a.broadcast;
        p.vectorized = k.launch.vec > 1 && !is_string(a.dtype) &&
                       (((kind_ == KernelKind::Flat || kind_ == KernelKind::ReduceAll) && !a.broadcast) ||
                        (kind_ == KernelKind::Strided && a.inner == InnerClass::Unit) ||
                        (kind_ == KernelKind::Tiled && a.inner == InnerClass::Tile));
        if (with_rows) p.layout_row = row++;
        k.params.push_back(p);
    }
    for (auto& w : writes_) {
        Param p;
        p.kind = Param::Kind::Array;
        p.array = {ArrayRef::Kind::Node, w.node.value()};
        p.dtype = w.dtype;
        p.written = true;
        p.vectorized = k.launch.vec > 1 &&
                       (kind_ == KernelKind::Flat || kind_ == KernelKind::Strided || kind_ == KernelKind::Tiled);
        p.unit_inner = (kind_ == KernelKind::Strided || kind_ == KernelKind::Tiled) && w.inner == InnerClass::Unit;
        if (with_rows) p.layout_row = row++;
        k.params.push_back(p);
    }
    for (auto sc : scalars_) {
        Param p;
        p.kind = Param::Kind::Scalar;
        p.scalar = sc;
        p.dtype = p_.scalars[static_cast<std::size_t>(sc)].dtype;
        k.params.push_back(p);
    }
    for (auto t : texts_) {
        Param p;
        p.kind = Param::Kind::Text;
        p.text = t;
        p.dtype = text_dtype(t);
        k.params.push_back(p);
    }
}

// The parameters of a Flat, Strided or Tiled kernel: arrays and scalars, then `tail` (the
// element count or the layout), then the vector flag when k.launch.vec > 1.
void StageEmitter::add_params(KernelSource& k, bool with_rows, Param::Kind tail) {
    add_array_params(k, with_rows);
    push_param(k, tail);
    if (k.launch.vec > 1) push_param(k, Param::Kind::VectorFlag);
}

std::string StageEmitter::layout_struct(int ndim, int rows) {
    return fmt::format("struct jx_layout {{ long long shape[{}]; long long stride[{}][{}]; }};\n\n", ndim,
                       rows > 0 ? rows : 1, ndim);
}

}  // namespace emitter

using emitter::internal;
using emitter::reg_type;

std::string_view op_id(ir::Op op) {
    auto i = static_cast<std::size_t>(op);
    if (i >= std::size(kOpIds)) internal("op out of range");
    return kOpIds[i];
}

std::string cuda_literal(const ir::Value& value, DType t) {
    const Num n = read_num(value);
    switch (t) {
        case DType::Bool: return (n.is_int ? n.i != 0 : (n.re != 0 || n.im != 0)) ? "true" : "false";
        case DType::Int8: return fmt::format("jx::i8({})", static_cast<std::int8_t>(to_int_bits(n)));
        case DType::Int16: return fmt::format("jx::i16({})", static_cast<std::int16_t>(to_int_bits(n)));
        case DType::Int32: {
            auto v = static_cast<std::int32_t>(to_int_bits(n));
            if (v == std::numeric_limits<std::int32_t>::min()) return "jx::i32(-2147483647 - 1)";
            return fmt::format("jx::i32({})", v);
        }
        case DType::Int64: {
            auto v = to_int_bits(n);
            if (v == std::numeric_limits<std::int64_t>::min()) return "jx::i64(-9223372036854775807LL - 1LL)";
            return fmt::format("jx::i64({}LL)", v);
        }
        case DType::UInt8: return fmt::format("jx::u8({}U)", static_cast<std::uint8_t>(to_int_bits(n)));
        case DType::UInt16: return fmt::format("jx::u16({}U)", static_cast<std::uint16_t>(to_int_bits(n)));
        case DType::UInt32: return fmt::format("jx::u32({}U)", static_cast<std::uint32_t>(to_int_bits(n)));
        case DType::UInt64:
            return fmt::format("jx::u64({}ULL)", n.is_int ? n.u : static_cast<std::uint64_t>(to_int_bits(n)));
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            return float_literal(n.is_int ? (n.is_unsigned ? static_cast<float>(n.u) : static_cast<float>(n.i))
                                          : static_cast<float>(n.re));
        case DType::Float64:
            return double_literal(n.is_int ? (n.is_unsigned ? static_cast<double>(n.u) : static_cast<double>(n.i))
                                           : n.re);
        case DType::Complex64:
            return fmt::format("jx::c64{{{}, {}}}", float_literal(static_cast<float>(n.re)),
                               float_literal(static_cast<float>(n.im)));
        case DType::Complex128:
            return fmt::format("jx::c128{{{}, {}}}", double_literal(n.re), double_literal(n.im));
            JIT_TEMPORAL_CASES break;  // lowered to int64 by dsl/lower/: never here
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;  // never text: a string constant is a kernel parameter
    }
    internal("a literal of a dtype that has none");
}

std::uint64_t fnv1a(std::string_view text, std::uint64_t seed) {
    std::uint64_t h = seed;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

std::uint64_t source_hash(std::string_view text) {
#if JITEXPR_HAVE_XXHASH
    return XXH3_64bits(text.data(), text.size());
#else
    return fnv1a(text);
#endif
}

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

std::optional<KernelSource> device_function(ir::Op op, const std::vector<DType>& args, DType result) {
    auto short_name = [](DType t) -> const char* {
        switch (t) {
            case DType::Int32: return "i32";
            case DType::Int64: return "i64";
            case DType::Float32: return "f32";
            case DType::Float64: return "f64";
            default: return nullptr;
        }
    };
    if (args.empty() || args.size() > 3 || !short_name(result)) return std::nullopt;
    std::string symbol = fmt::format("jxl_{}", op_id(op));
    std::string params, call;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (!short_name(args[i])) return std::nullopt;
        symbol += fmt::format("_{}", short_name(args[i]));
        params += fmt::format("{}const {} x{}", i ? ", " : "", reg_type(args[i]), i);
        call += fmt::format("{}x{}", i ? ", " : "", i);
    }
    symbol += fmt::format("_{}", short_name(result));
    SemanticsNeeds needs;
    needs.ops.push_back(op);
    KernelSource k;
    k.relocatable = true;
    k.entries = {symbol};
    // The expression is the one the C++ kernels write for the node (StageEmitter::node_line),
    // with the result converted to the node's type as their `const T v = ...` does.
    k.body = fmt::format("extern \"C\" __device__ {} {}({}) {{ return jx::op::{}({}); }}\n", reg_type(result), symbol,
                         params, op_id(op), call);
    k.source = "// jitexpr device function (linked into PTX kernels)\n#define JX_CUDA 1\n";
    k.source += semantics_for(needs);
    k.source += "\n";
    k.source += k.body;
    // FNV-1a whatever the build: the key is named in the PTX kernels that link the function
    // (their golden files), and a device function is emitted once per process.
    k.hash = fnv1a(k.source);
    k.key = hex64(k.hash);
    k.name = symbol;
    return k;
}

Emitted emit(const ir::Program& program, const ir::Schedule& schedule, const EmitOptions& options) {
    if (options.block < 32 || options.block > 1024 || options.block % 32 != 0)
        internal(fmt::format("block size {} is not a multiple of 32 in [32, 1024]", options.block));
    if (schedule.stored_by.size() != program.nodes.size()) internal("schedule does not match the program");
    Emitted out;
    std::uint64_t h = fnv1a("jitexpr-emitted");
    for (std::size_t i = 0; i < schedule.stages.size(); ++i) {
        const int stage = static_cast<int>(i);
        if (schedule.stages[i].kind == ir::Stage::Kind::Reduce)
            out.kernels.push_back(emitter::ReduceEmitter(program, schedule, stage, options).run());
        else if (schedule.stages[i].kind == ir::Stage::Kind::Compact)
            out.kernels.push_back(emitter::CompactEmitter(program, schedule, stage, options).run());
        else if (schedule.stages[i].kind == ir::Stage::Kind::Scan)
            out.kernels.push_back(emitter::ScanEmitter(program, schedule, stage, options).run());
        else out.kernels.push_back(emitter::ElementwiseEmitter(program, schedule, stage, options).run());
        h = fnv1a(out.kernels.back().key, h);
    }
    out.key = hex64(h);
    return out;
}

}  // namespace jit::codegen

// jitexpr — CUDA C++ emitter: ir::Program + ir::Schedule -> one kernel source per stage.
//
// Every value is computed inline in registers, in node order, by one generated device
// function `jx_compute` per kernel; the kernel bodies only load, call it and store. Names in the
// text are generated (in0, buf0, out0, s0, v12); user identifiers never appear. Ops are calls to
// jx::op::<Id> and casts jx::cast<T> from backend/semantics.h, whose text precedes the kernel.
#include "codegen/codegen.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace jit::codegen {

namespace {

constexpr std::string_view kOpIds[] = {
#define JIT_OP(Id, Kind, Arity, Rule, Token, Names, Doc) #Id,
#include "dsl/ops.def"
#undef JIT_OP
};

[[noreturn]] void internal(const std::string& what) { throw InternalError("codegen: " + what); }

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
        case DType::Complex128: return "jx::c128";
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

// Reduction functor of jx::red for a Reduce op.
std::string red_type(ir::Op op, DType t) {
    std::string r;
    switch (op) {
        case ir::Op::Sum: r = "Sum"; break;
        case ir::Op::Mean: r = "Sum"; break;
        case ir::Op::Prod: r = "Prod"; break;
        case ir::Op::ReduceMin: r = "ReduceMin"; break;
        case ir::Op::ReduceMax: r = "ReduceMax"; break;
        case ir::Op::Any: r = "Any"; break;
        case ir::Op::All: r = "All"; break;
        default: internal(fmt::format("{} is not a reduction", op_id(op)));
    }
    return "jx::red::" + r + "<" + reg_type(t) + ">";
}

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
    if (is_bool(v.dtype)) { n.is_int = true; n.i = v.b ? 1 : 0; n.u = n.i; n.re = static_cast<double>(n.i); }
    else if (is_signed_int(v.dtype)) { n.is_int = true; n.i = v.i; n.u = static_cast<std::uint64_t>(v.i); n.re = static_cast<double>(v.i); }
    else if (is_unsigned_int(v.dtype)) { n.is_int = true; n.is_unsigned = true; n.u = v.u; n.i = static_cast<std::int64_t>(v.u); n.re = static_cast<double>(v.u); }
    else { n.re = v.f; n.im = is_complex(v.dtype) ? v.im : 0.0; }
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

}  // namespace

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
            return double_literal(n.is_int ? (n.is_unsigned ? static_cast<double>(n.u) : static_cast<double>(n.i)) : n.re);
        case DType::Complex64:
            return fmt::format("jx::c64{{{}, {}}}", float_literal(static_cast<float>(n.re)),
                               float_literal(static_cast<float>(n.im)));
        case DType::Complex128:
            return fmt::format("jx::c128{{{}, {}}}", double_literal(n.re), double_literal(n.im));
    }
    internal("unknown dtype");
}

std::uint64_t fnv1a(std::string_view text, std::uint64_t seed) {
    std::uint64_t h = seed;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

namespace {

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

// How an array moves along the last axis of a strided iteration space.
enum class InnerClass : std::uint8_t {
    Unit,     // stride 1 (or the axis has one element): contiguous, vector loads possible
    Zero,     // stride 0: broadcast along the axis, one value per row
    Tile,     // contiguous along the second-last axis instead (a transposed input): via shared memory
    General,  // any other stride, read from the layout at run time
};

constexpr int kTileThreads = 256;             // Tiled: threads per block (tile-edge lanes x rows)
constexpr std::size_t kTileSharedLimit = 40 * 1024;  // Tiled: shared memory for all tiles of a block
constexpr std::size_t kVectorOpLimit = 128;   // Flat/Strided: more operations per element, no vector loop

struct ReadArray {
    ArrayRef ref;
    DType dtype;
    Shape shape;
    Strides strides;
    std::string name;
    bool broadcast = false;   // Flat: one element
    bool restrict_ok = true;  // false when an output writes the same memory
    InnerClass inner = InnerClass::General;  // Strided / Tiled
};

struct WriteArray {
    std::int32_t node;
    DType dtype;
    std::string name;
    Strides strides;  // layout assumed at emit time (alias: the input's; else C order)
    bool restrict_ok = true;
    InnerClass inner = InnerClass::General;  // Strided / Tiled
};

bool same_flat(const Shape& shape, const Strides& strides, const Shape& target) {
    if (shape_size(target) <= 1 || shape_size(shape) == 1) return true;
    Strides b = ir::broadcast_strides(shape, strides, target);
    Strides c = contiguous_strides(target);
    for (std::size_t d = 0; d < target.size(); ++d)
        if (target[d] != 1 && b[d] != c[d]) return false;
    return true;
}

class StageEmitter {
public:
    StageEmitter(const ir::Program& p, const ir::Schedule& s, int stage, const EmitOptions& o)
        : p_(p), s_(s), stage_index_(stage), st_(s.stages.at(static_cast<std::size_t>(stage))), opt_(o) {}

    KernelSource run() {
        collect();
        choose_kind();
        KernelSource k;
        k.stage = stage_index_;
        k.launch.kind = kind_;
        k.launch.block = opt_.block;
        std::string body = compute_function();
        switch (kind_) {
            case KernelKind::Flat: body += flat_kernel(k); break;
            case KernelKind::Strided: body += strided_kernel(k); break;
            case KernelKind::Tiled: body += tiled_kernel(k); break;
            case KernelKind::ReduceAll: body += reduce_all_kernel(k); break;
            case KernelKind::ReduceAxis: body += reduce_axis_kernel(k); break;
        }
        k.body = std::move(body);
        k.source = "// jitexpr generated kernel\n#define JX_CUDA 1\n";
        if (opt_.full_semantics) k.source += semantics_source();
        else k.source += semantics_for(semantics_needs());
        k.source += "\n";
        k.source += kPrelude;
        k.source += "\n";
        k.source += k.body;
        k.hash = fnv1a(k.source);
        k.key = hex64(k.hash);
        k.name = "jx_" + k.key;
        return k;
    }

private:
    bool is_reduce_stage() const { return st_.kind == ir::Stage::Kind::Reduce; }

    // The ops this stage computes and the kinds of value it touches (after collect()).
    SemanticsNeeds semantics_needs() const {
        SemanticsNeeds needs;
        auto touch = [&needs](DType t) {
            needs.complex = needs.complex || is_complex(t);
            needs.half = needs.half || t == DType::Float16 || t == DType::BFloat16;
        };
        for (std::size_t i = 0; i < needed_.size(); ++i) {
            if (!needed_[i]) continue;
            const ir::Node& node = p_.nodes[i];
            touch(node.dtype);
            if (node.kind == ir::NodeKind::Op && !is_buffer(static_cast<std::int32_t>(i))) needs.ops.push_back(node.op);
            if (node.kind == ir::NodeKind::Input) touch(p_.inputs.at(static_cast<std::size_t>(node.slot)).dtype);
            if (node.kind == ir::NodeKind::Scalar) touch(p_.scalars.at(static_cast<std::size_t>(node.slot)).dtype);
        }
        if (is_reduce_stage()) {
            const ir::Node& r = p_.node(st_.reduce);
            touch(r.dtype);
            needs.ops.push_back(r.op);
        }
        for (const auto& w : writes_) touch(w.dtype);
        for (const auto& r : reads_) touch(r.dtype);
        return needs;
    }

    // A node read from an earlier stage's buffer rather than recomputed.
    bool is_buffer(std::int32_t n) const {
        if (s_.is_spilled(n)) return s_.stored_by[static_cast<std::size_t>(n)] != stage_index_;
        return p_.node(n).kind == ir::NodeKind::Reduce && n != st_.reduce;
    }

    // Marks `root` and every node it reads in this stage. An explicit stack, not recursion: a
    // program may be a 100,000-deep chain (a + a + ... + a), too deep for the thread's stack.
    void visit(std::int32_t root) {
        std::vector<std::int32_t> stack{root};
        while (!stack.empty()) {
            const std::int32_t n = stack.back();
            stack.pop_back();
            if (n < 0 || n >= static_cast<std::int32_t>(p_.nodes.size())) internal("node index out of range");
            if (needed_[static_cast<std::size_t>(n)]) continue;
            needed_[static_cast<std::size_t>(n)] = true;
            const ir::Node& node = p_.node(n);
            if (is_buffer(n)) continue;
            if (node.kind == ir::NodeKind::Reduce) internal("nested reduction in a stage");
            for (int a = 0; a < node.nargs; ++a) {
                if (node.args[a] >= n) internal("nodes are not in topological order");
                stack.push_back(node.args[a]);
            }
        }
    }

    void collect() {
        needed_.assign(p_.nodes.size(), false);
        if (is_reduce_stage()) {
            const ir::Node& r = p_.node(st_.reduce);
            if (r.kind != ir::NodeKind::Reduce || r.nargs != 1) internal("reduce stage without a Reduce node");
            visit(r.args[0]);
        } else {
            if (st_.stores.empty()) internal("elementwise stage stores nothing");
            for (auto n : st_.stores) visit(n);
        }
        // Arrays read: inputs by slot, then buffers by node.
        std::set<std::int32_t> slots, bufs, scalars;
        for (std::size_t i = 0; i < needed_.size(); ++i) {
            if (!needed_[i]) continue;
            const ir::Node& node = p_.nodes[i];
            auto n = static_cast<std::int32_t>(i);
            if (is_buffer(n)) bufs.insert(n);
            else if (node.kind == ir::NodeKind::Input) slots.insert(node.slot);
            else if (node.kind == ir::NodeKind::Scalar) scalars.insert(node.slot);
        }
        for (auto slot : slots) {
            if (slot < 0 || slot >= static_cast<std::int32_t>(p_.inputs.size())) internal("input slot out of range");
            const ir::InputDecl& in = p_.inputs[static_cast<std::size_t>(slot)];
            ReadArray r{{ArrayRef::Kind::Input, slot}, in.dtype, in.shape, in.strides,
                        fmt::format("in{}", reads_.size())};
            if (r.strides.size() != r.shape.size()) r.strides = contiguous_strides(r.shape);
            input_read_[slot] = static_cast<int>(reads_.size());
            reads_.push_back(std::move(r));
        }
        for (auto n : bufs) {
            const ir::Node& node = p_.node(n);
            ReadArray r{{ArrayRef::Kind::Node, n}, node.dtype, node.shape, contiguous_strides(node.shape),
                        fmt::format("buf{}", reads_.size())};
            buffer_read_[n] = static_cast<int>(reads_.size());
            reads_.push_back(std::move(r));
        }
        for (auto s : scalars) {
            if (s < 0 || s >= static_cast<std::int32_t>(p_.scalars.size())) internal("scalar slot out of range");
            scalars_.push_back(s);
        }
        // Arrays written.
        auto output_alias = [&](std::int32_t n) -> std::int32_t {
            if (static_cast<std::size_t>(n) >= s_.output_of.size()) return -1;
            std::int32_t o = s_.output_of[static_cast<std::size_t>(n)];
            if (o < 0) return -1;
            return p_.outputs.at(static_cast<std::size_t>(o)).alias_input;
        };
        std::vector<std::int32_t> stores = is_reduce_stage() ? std::vector<std::int32_t>{st_.reduce} : st_.stores;
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

    void choose_kind() {
        if (is_reduce_stage()) {
            const ir::Node& r = p_.node(st_.reduce);
            const int nd = static_cast<int>(st_.shape.size());
            if (r.axis < 0 || nd <= 1) {
                kind_ = KernelKind::ReduceAll;
                flat_reads_ = true;
                for (auto& a : reads_) flat_reads_ = flat_reads_ && same_flat(a.shape, a.strides, st_.shape);
                if (opt_.force_strided && nd > 0) flat_reads_ = false;
            } else {
                if (r.axis >= nd) internal("reduction axis out of range");
                kind_ = KernelKind::ReduceAxis;
            }
            return;
        }
        bool flat = !opt_.force_strided || st_.shape.empty();
        for (auto& a : reads_) flat = flat && same_flat(a.shape, a.strides, st_.shape);
        for (auto& w : writes_) flat = flat && same_flat(p_.node(w.node).shape, w.strides, st_.shape);
        if (st_.shape.empty()) flat = true;
        kind_ = flat ? KernelKind::Flat : KernelKind::Strided;
        if (kind_ == KernelKind::Strided) {
            classify_inner();
            if (any_inner(InnerClass::Tile)) kind_ = KernelKind::Tiled;
        }
    }

    // ---- the per-element function

    std::string compute_function() {
        std::string params;
        auto sep = [&] { if (!params.empty()) params += ", "; };
        for (auto& a : reads_) { sep(); params += fmt::format("const {} a_{}", store_type(a.dtype), a.name); }
        for (auto s : scalars_) {
            sep();
            params += fmt::format("const {} s{}", reg_type(p_.scalars[static_cast<std::size_t>(s)].dtype), s);
        }
        std::string ret = "void";
        if (is_reduce_stage()) {
            ret = reg_type(p_.node(p_.node(st_.reduce).args[0]).dtype);
        } else {
            for (auto& w : writes_) { sep(); params += fmt::format("{}& r_{}", store_type(w.dtype), w.name); }
        }
        std::string out = fmt::format("__device__ __forceinline__ {} jx_compute({}) {{\n", ret, params);
        for (std::size_t i = 0; i < needed_.size(); ++i) {
            if (!needed_[i]) continue;
            out += "    " + node_line(static_cast<std::int32_t>(i)) + "\n";
        }
        if (is_reduce_stage()) {
            out += fmt::format("    return v{};\n", p_.node(st_.reduce).args[0]);
        } else {
            for (auto& w : writes_) out += fmt::format("    r_{} = {};\n", w.name, store_conv(w.dtype, fmt::format("v{}", w.node)));
        }
        out += "}\n\n";
        return out;
    }

    std::string node_line(std::int32_t n) {
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
                case ir::NodeKind::Const: e = cuda_literal(node.value, node.dtype); break;
                case ir::NodeKind::Op: {
                    // nextafter steps in the 16-bit format, not in the float that carries it.
                    if (node.op == ir::Op::Nextafter && node.dtype == DType::Float16)
                        e = "jx::nextafter_f16(";
                    else if (node.op == ir::Op::Nextafter && node.dtype == DType::BFloat16)
                        e = "jx::nextafter_bf16(";
                    else
                        e = fmt::format("jx::op::{}(", op_id(node.op));
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
                    if (node.dtype == DType::Float16)
                        e = fmt::format("jx::round_f16({})", src);
                    else if (node.dtype == DType::BFloat16)
                        e = fmt::format("jx::round_bf16({})", src);
                    else if (reg_type(from) == t)
                        e = src;
                    else
                        e = fmt::format("jx::cast<{}>({})", t, src);
                    break;
                }
                case ir::NodeKind::Reduce: internal("unexpected Reduce node");
            }
        }
        return fmt::format("const {} v{} = {};", t, n, e);
    }

    // ---- kernel signatures

    std::string array_params(bool flat) {
        std::string s;
        for (auto& a : reads_) {
            const char* r = a.restrict_ok ? " __restrict__" : "";
            s += fmt::format("const {}*{} {}, ", store_type(a.dtype), r, a.name);
        }
        for (auto& w : writes_) {
            const char* r = w.restrict_ok ? " __restrict__" : "";
            s += fmt::format("{}*{} {}, ", store_type(w.dtype), r, w.name);
        }
        for (auto sc : scalars_) s += fmt::format("const {} s{}, ", reg_type(p_.scalars[static_cast<std::size_t>(sc)].dtype), sc);
        return s;
    }

    std::string call_args(const std::vector<std::string>& read_exprs, const std::vector<std::string>& write_exprs) {
        std::string s;
        auto sep = [&] { if (!s.empty()) s += ", "; };
        for (auto& r : read_exprs) { sep(); s += r; }
        for (auto sc : scalars_) { sep(); s += fmt::format("s{}", sc); }
        for (auto& w : write_exprs) { sep(); s += w; }
        return s;
    }

    void add_array_params(KernelSource& k, bool with_rows) {
        int row = 0;
        for (auto& a : reads_) {
            Param p;
            p.kind = Param::Kind::Array;
            p.array = a.ref;
            p.dtype = a.dtype;
            p.broadcast = a.broadcast;
            p.vectorized = k.launch.vec > 1 && ((kind_ == KernelKind::Flat && !a.broadcast) ||
                                                (kind_ == KernelKind::Strided && a.inner == InnerClass::Unit) ||
                                                (kind_ == KernelKind::Tiled && a.inner == InnerClass::Tile));
            if (with_rows) p.layout_row = row++;
            k.params.push_back(p);
        }
        for (auto& w : writes_) {
            Param p;
            p.kind = Param::Kind::Array;
            p.array = {ArrayRef::Kind::Node, w.node};
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
    }

    // The parameters of a Flat, Strided or Tiled kernel: arrays and scalars, then `tail` (the
    // element count or the layout), then the vector flag when k.launch.vec > 1.
    void add_params(KernelSource& k, bool with_rows, Param::Kind tail) {
        add_array_params(k, with_rows);
        Param t;
        t.kind = tail;
        k.params.push_back(t);
        if (k.launch.vec > 1) {
            Param flag;
            flag.kind = Param::Kind::VectorFlag;
            k.params.push_back(flag);
        }
    }

    std::string layout_struct(int ndim, int rows) {
        return fmt::format("struct jx_layout {{ long long shape[{}]; long long stride[{}][{}]; }};\n\n", ndim,
                           rows > 0 ? rows : 1, ndim);
    }

    std::string launch_bounds() const { return fmt::format("__launch_bounds__({})", opt_.block); }

    // ---- Flat

    std::string flat_kernel(KernelSource& k) {
        const Shape& T = st_.shape;
        std::size_t widest = 1;
        for (auto& a : reads_) {
            a.broadcast = shape_size(a.shape) == 1 && shape_size(T) != 1;
            if (!a.broadcast) widest = std::max(widest, itemsize(a.dtype));
        }
        for (auto& w : writes_) widest = std::max(widest, itemsize(w.dtype));
        const int vec = static_cast<int>(16 / widest) >= 2 && !compute_bound() && !opt_.scalar_only ? static_cast<int>(16 / widest) : 1;
        k.launch.vec = vec;
        add_params(k, false, Param::Kind::Count);

        // One entry point with a run-time choice of the vector path, so NVRTC compiles the body
        // once for the vectors and once for the scalars. The launch gives every vector (and every
        // element of the scalar tail) a thread of its own. Where the launch's indices all fit in
        // 32 bits (2^30 elements and more are rare), the kernel is written with 32-bit indices
        // and no loop: measured on the H200 with clocks locked (Nsight Compute), the 64-bit
        // grid-stride form of where(a > .5, sin(a)*b + exp(-b), a*a - b) took 4.8% longer.
        // The choice depends on the element count only through that bound, so kernels are still
        // shared between shapes.
        const std::int64_t count = shape_size(T);
        const bool index32 = 2 * (count + opt_.block) <= std::numeric_limits<std::int32_t>::max();
        std::string params = array_params(true) + "const long long n" + (vec > 1 ? ", const int vectors" : "");
        std::string s = "// flat: contiguous or single-element arrays over one index\n";
        s += fmt::format("extern \"C\" __global__ void {} jx_flat({}) {{\n", launch_bounds(), params);
        s += index32 ? "    using I = int;\n" : "    using I = long long;\n";
        s += "    const I count = static_cast<I>(n);\n";
        s += "    const I first = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);\n";
        if (!index32) s += "    const I step = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n";
        for (auto& a : reads_)
            if (a.broadcast) s += fmt::format("    const {} x_{} = {}[0];\n", store_type(a.dtype), a.name, a.name);
        s += "    I tail = 0;\n";
        if (vec > 1) {
            s += "    if (vectors) {\n";
            s += fmt::format("        const I nvec = count / {};\n", vec);
            if (index32) {
                s += "        if (first < nvec) {\n";
                s += "            const I k = first;\n";
            } else {
                s += "#pragma unroll 1\n";  // see below
                s += "        for (I k = first; k < nvec; k += step) {\n";
            }
            std::vector<std::string> rd;
            for (auto& a : reads_) {
                if (a.broadcast) { rd.push_back("x_" + a.name); continue; }
                s += fmt::format("            const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} + k * {1});\n",
                                 store_type(a.dtype), vec, a.name);
                rd.push_back(fmt::format("x_{}.v[e]", a.name));
            }
            s += vector_compute("            ", vec, rd, [&](int) { return fmt::format("k * {}", vec); });
            if (index32) s += "            return;\n";
            s += "        }\n";
            // 32-bit: the threads past the vectors take the tail's elements, one each.
            s += index32 ? fmt::format("        tail = nvec * {} - nvec;\n", vec) : fmt::format("        tail = nvec * {};\n", vec);
            s += "    }\n";
        }
        {
            std::vector<std::string> rd, wr;
            for (auto& a : reads_) rd.push_back(a.broadcast ? "x_" + a.name : a.name + "[i]");
            for (auto& w : writes_) wr.push_back(w.name + "[i]");
            if (index32) {
                s += "    const I i = tail + first;\n";
                s += fmt::format("    if (i < count) jx_compute({});\n", call_args(rd, wr));
            } else {
                // Not unrolled: the launch gives every element (vector) a thread of its own, so the
                // loop runs once per thread (it covers grids past the 2^31 - 1 block limit), and NVVM
                // unrolling it doubled NVRTC's time for small expressions (a*2+b: 60 -> 33 ms of
                // CPU on the development machine).
                s += "#pragma unroll 1\n";
                s += fmt::format("    for (I i = tail + first; i < count; i += step) jx_compute({});\n", call_args(rd, wr));
            }
        }
        s += "}\n";
        k.entries.push_back("jx_flat");
        return s;
    }

    // Whether the stage computes so much per element that memory is not what limits it: then
    // vector loads gain nothing, and unrolling the body once per vector lane would multiply
    // NVRTC's time (superlinearly: one basic block of lanes x operations).
    bool compute_bound() const {
        std::size_t ops = 0;
        for (std::size_t i = 0; i < needed_.size(); ++i)
            if (needed_[i] && (p_.nodes[i].kind == ir::NodeKind::Op || p_.nodes[i].kind == ir::NodeKind::Cast)) ++ops;
        return ops > kVectorOpLimit;
    }

    // ---- Strided and Tiled

    // How an array moves along the last axis of the iteration space (see InnerClass).
    InnerClass inner_class_of(const Shape& shape, const Strides& strides, bool may_tile) const {
        const Shape& T = st_.shape;
        const int D = static_cast<int>(T.size());
        if (D == 0 || T[static_cast<std::size_t>(D - 1)] == 1) return InnerClass::Unit;
        Strides b = ir::broadcast_strides(shape, strides, T);
        const std::int64_t last = b[static_cast<std::size_t>(D - 1)];
        if (last == 0) return InnerClass::Zero;
        if (last == 1) return InnerClass::Unit;
        if (may_tile && D >= 2 && b[static_cast<std::size_t>(D - 2)] == 1 && T[static_cast<std::size_t>(D - 2)] > 1)
            return InnerClass::Tile;
        return InnerClass::General;
    }

    // Classes of every array (reads then writes); reads that would need more shared memory than
    // a block may use stay General.
    void classify_inner() {
        auto stored_bytes = [](DType t) { return itemsize(t == DType::Float16 || t == DType::BFloat16 ? DType::UInt16 : t); };
        std::size_t widest = 0;
        for (auto& a : reads_) {
            a.inner = inner_class_of(a.shape, a.strides, !opt_.force_strided);
            if (a.inner == InnerClass::Tile) widest = std::max(widest, stored_bytes(a.dtype));
        }
        // Larger tiles keep more loads in flight per thread; 8- and 16-byte elements use the
        // smaller edge to stay within the shared memory budget.
        tile_ = widest > 4 ? 32 : 64;
        std::size_t smem = 0;
        for (auto& a : reads_) {
            if (a.inner != InnerClass::Tile) continue;
            const std::size_t bytes = static_cast<std::size_t>(tile_) * (tile_ + 1) * stored_bytes(a.dtype);
            if (smem + bytes > kTileSharedLimit) a.inner = InnerClass::General;
            else smem += bytes;
        }
        for (auto& w : writes_) {
            w.inner = opt_.force_strided ? InnerClass::General : inner_class_of(p_.node(w.node).shape, w.strides, false);
            if (w.inner == InnerClass::Zero) w.inner = InnerClass::General;  // never a broadcast store
        }
    }

    bool any_inner(InnerClass c) const {
        for (auto& a : reads_) if (a.inner == c) return true;
        for (auto& w : writes_) if (w.inner == c) return true;
        return false;
    }

    // Element expressions for the scalar (one element per call) form of the strided kernels:
    // `pos` is the last-axis coordinate, p<r> the row offset, t<r> the last-axis stride.
    std::string strided_ref(const std::string& name, InnerClass c, int r, const std::string& pos) const {
        switch (c) {
            case InnerClass::Unit: return fmt::format("{}[p{} + {}]", name, r, pos);
            case InnerClass::Zero: return "x_" + name;
            case InnerClass::General:
            case InnerClass::Tile: break;
        }
        return fmt::format("{}[p{} + {} * t{}]", name, r, pos, r);
    }

    // Offsets p<r> of every layout row for the coordinates of dims [0, last) in `rest` (which it
    // consumes), innermost dim first.
    std::string row_offsets(int last, const std::string& indent) const {
        const int R = static_cast<int>(reads_.size() + writes_.size());
        std::string s;
        for (int r = 0; r < R; ++r) s += fmt::format("{}I p{} = 0;\n", indent, r);
        if (last <= 0) return s;
        s += "#pragma unroll\n";
        s += fmt::format("{}for (int d = {}; d >= 0; --d) {{\n", indent, last - 1);
        s += fmt::format("{}    const I extent = static_cast<I>(L.shape[d]);\n", indent);
        s += fmt::format("{}    const I c = rest % extent;\n", indent);
        s += fmt::format("{}    rest /= extent;\n", indent);
        for (int r = 0; r < R; ++r) s += fmt::format("{0}    p{1} += c * static_cast<I>(L.stride[{1}][d]);\n", indent, r);
        s += fmt::format("{}}}\n", indent);
        return s;
    }

    // The entry points of a Strided or Tiled kernel, in IndexEntry order: `body<I>` (a device
    // template taking the arrays, scalars, then `tail_args`) with 64-bit and with 32-bit indices.
    std::string index_entries(KernelSource& k, const std::string& body, const std::string& bounds,
                              const std::string& tail_params, const std::string& tail_args) {
        std::string args;
        for (auto& a : reads_) args += a.name + ", ";
        for (auto& w : writes_) args += w.name + ", ";
        for (auto sc : scalars_) args += fmt::format("s{}, ", sc);
        args += tail_args;
        std::string s;
        const char* suffix[2] = {"_i64", "_i32"};
        const char* index[2] = {"long long", "int"};
        for (int e = 0; e < 2; ++e) {
            const std::string name = body + suffix[e];
            s += fmt::format("extern \"C\" __global__ void {} {}({}const jx_layout L{}) {{ {}<{}>({}); }}\n", bounds,
                             name, array_params(false), tail_params, body, index[e], args);
            k.entries.push_back(name);
        }
        return s;
    }

    // Rows of the last axis: each row's offsets are computed once and the last axis is walked by
    // the threads of x; arrays contiguous along it (Unit) are read and written with vectors when
    // the launch finds them aligned, arrays broadcast along it (Zero) are read once per row.
    std::string strided_kernel(KernelSource& k) {
        const int D = static_cast<int>(st_.shape.size());
        const int R = static_cast<int>(reads_.size() + writes_.size());
        k.launch.ndim = D;
        k.launch.layout_rows = R;
        std::size_t widest = 0;
        for (auto& a : reads_) if (a.inner == InnerClass::Unit) widest = std::max(widest, itemsize(a.dtype));
        for (auto& w : writes_) widest = std::max(widest, itemsize(w.dtype));
        const bool can_vector = !any_inner(InnerClass::General) && widest > 0 && 16 / widest >= 2 && !compute_bound() &&
                                !opt_.scalar_only;
        const int vec = can_vector ? static_cast<int>(16 / widest) : 1;
        k.launch.vec = vec;
        add_params(k, true, Param::Kind::Layout);
        const std::string vparam = vec > 1 ? ", const int vectors" : "";

        std::string s = "// strided: rows of the last axis; per-row offsets once, the last axis walked by threads\n";
        s += layout_struct(D, R);
        s += fmt::format("template <class I>\n__device__ __forceinline__ void jx_rows({}const jx_layout& L{}) {{\n",
                         array_params(false), vparam);
        s += "    I rows = 1;\n";
        s += "#pragma unroll\n";
        s += fmt::format("    for (int d = 0; d < {}; ++d) rows *= static_cast<I>(L.shape[d]);\n", D - 1);
        s += fmt::format("    const I inner = static_cast<I>(L.shape[{}]);\n", D - 1);
        s += "    const I cfirst = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);\n";
        s += "    const I cstep = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n";
        s += "    for (I row = static_cast<I>(blockIdx.y) * static_cast<I>(blockDim.y) + static_cast<I>(threadIdx.y); row < rows;\n";
        s += "         row += static_cast<I>(gridDim.y) * static_cast<I>(blockDim.y)) {\n";
        s += "        I rest = row;\n";
        s += row_offsets(D - 1, "        ");
        int r = 0;
        for (auto& a : reads_) {
            if (a.inner == InnerClass::Zero) s += fmt::format("        const {} x_{} = {}[p{}];\n", store_type(a.dtype), a.name, a.name, r);
            if (a.inner == InnerClass::General) s += fmt::format("        const I t{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 1);
            ++r;
        }
        for (auto& w : writes_) {
            if (w.inner == InnerClass::General) s += fmt::format("        const I t{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 1);
            ++r;
        }
        if (vec > 1) {
            s += "        if (vectors) {\n";
            s += fmt::format("            const I nvec = inner / {};\n", vec);
            s += "            for (I k = cfirst; k < nvec; k += cstep) {\n";
            std::vector<std::string> rd;
            r = 0;
            for (auto& a : reads_) {
                if (a.inner == InnerClass::Zero) rd.push_back("x_" + a.name);
                else {
                    s += fmt::format("                const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} + p{3} + k * {1});\n",
                                     store_type(a.dtype), vec, a.name, r);
                    rd.push_back(fmt::format("x_{}.v[e]", a.name));
                }
                ++r;
            }
            s += vector_compute("                ", vec, rd, [&](int) { return fmt::format("p{} + k * {}", r++, vec); });
            s += "            }\n";
            s += "            continue;\n";
            s += "        }\n";
        }
        {
            std::vector<std::string> rd, wr;
            r = 0;
            for (auto& a : reads_) rd.push_back(strided_ref(a.name, a.inner, r++, "c"));
            for (auto& w : writes_) wr.push_back(strided_ref(w.name, w.inner, r++, "c"));
            s += fmt::format("        for (I c = cfirst; c < inner; c += cstep) jx_compute({});\n", call_args(rd, wr));
        }
        s += "    }\n}\n\n";
        s += index_entries(k, "jx_rows", launch_bounds(), vparam, vec > 1 ? "L, vectors" : "L");
        return s;
    }

    // Tiles of the last two axes for inputs that are contiguous along the second-last axis (a
    // transposed matrix): each such input is read into shared memory with threads adjacent along
    // its own contiguous axis and used from there, so every global access is coalesced.
    std::string tiled_kernel(KernelSource& k) {
        const int D = static_cast<int>(st_.shape.size());
        const int R = static_cast<int>(reads_.size() + writes_.size());
        k.launch.ndim = D;
        k.launch.layout_rows = R;
        k.launch.block = kTileThreads;
        k.launch.tile = tile_;
        // Vector tiles when every tiled input and every output has one element size: each
        // access moves 16 bytes (a 64x64 float tile is loaded and stored as float4), which keeps
        // more bytes in flight per thread; the launch checks alignment and falls back per call.
        std::size_t size = 0;
        bool uniform = true;
        for (auto& a : reads_)
            if (a.inner == InnerClass::Tile) {
                uniform = uniform && (size == 0 || size == itemsize(a.dtype));
                size = itemsize(a.dtype);
            }
        for (auto& w : writes_) {
            uniform = uniform && w.inner == InnerClass::Unit && (size == 0 || size == itemsize(w.dtype));
            size = itemsize(w.dtype);
        }
        const int vec = uniform && size >= 2 && size <= 8 && !compute_bound() && !opt_.scalar_only ? static_cast<int>(16 / size) : 1;
        k.launch.vec = vec;
        add_params(k, true, Param::Kind::Layout);
        const std::string vparam = vec > 1 ? ", const int vectors" : "";
        const int rows_per_pass = kTileThreads / tile_;

        std::string s = fmt::format("// tiled: {0}x{0} tiles of the last two axes; inputs contiguous along the second-last axis pass through shared memory\n", tile_);
        s += layout_struct(D, R);
        s += fmt::format("template <class I>\n__device__ __forceinline__ void jx_tiles({}const jx_layout& L{}) {{\n", array_params(false), vparam);
        for (auto& a : reads_)
            if (a.inner == InnerClass::Tile)
                s += fmt::format("    __shared__ {} sh_{}[{}][{}];\n", store_type(a.dtype), a.name, tile_, tile_ + 1);
        s += fmt::format("    const I nr = static_cast<I>(L.shape[{}]);\n", D - 2);
        s += fmt::format("    const I nc = static_cast<I>(L.shape[{}]);\n", D - 1);
        s += fmt::format("    const I tiles_c = (nc + {0}) / {1};\n", tile_ - 1, tile_);
        s += fmt::format("    const I tiles_r = (nr + {0}) / {1};\n", tile_ - 1, tile_);
        s += "    I total = tiles_c * tiles_r;\n";
        s += "#pragma unroll\n";
        s += fmt::format("    for (int d = 0; d < {}; ++d) total *= static_cast<I>(L.shape[d]);\n", D - 2);
        s += fmt::format("    const int tx = threadIdx.x % {0}, ty = threadIdx.x / {0};\n", tile_);
        s += "    for (I t = blockIdx.x; t < total; t += gridDim.x) {\n";
        s += "        const I c0 = (t % tiles_c) * " + std::to_string(tile_) + ";\n";
        s += "        I rest = t / tiles_c;\n";
        s += "        const I r0 = (rest % tiles_r) * " + std::to_string(tile_) + ";\n";
        s += "        rest /= tiles_r;\n";
        s += row_offsets(D - 2, "        ");
        for (int r = 0; r < R; ++r) {
            s += fmt::format("        const I u{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 2);
            s += fmt::format("        const I t{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 1);
        }
        if (vec > 1) s += vector_tiles(vec);
        // Load the tiles: lanes run along the input's contiguous axis (the tile's rows).
        s += "        {\n";
        s += "            const I lr = r0 + tx;\n";
        s += "#pragma unroll\n";
        s += fmt::format("            for (int j = ty; j < {}; j += {}) {{\n", tile_, rows_per_pass);
        s += "                const I lc = c0 + j;\n";
        s += "                if (lr < nr && lc < nc) {\n";
        int r = 0;
        for (auto& a : reads_) {
            if (a.inner == InnerClass::Tile)
                s += fmt::format("                    sh_{0}[j][tx] = {0}[p{1} + lr * u{1} + lc * t{1}];\n", a.name, r);
            ++r;
        }
        s += "                }\n            }\n        }\n";
        s += "        __syncthreads();\n";
        // Compute: lanes run along the last axis (the output's contiguous axis).
        std::vector<std::string> rd, wr;
        r = 0;
        for (auto& a : reads_) {
            if (a.inner == InnerClass::Tile) rd.push_back(fmt::format("sh_{}[tx][j]", a.name));
            else rd.push_back(fmt::format("{0}[p{1} + rr * u{1} + cc * t{1}]", a.name, r));
            ++r;
        }
        for (auto& w : writes_) { wr.push_back(fmt::format("{0}[p{1} + rr * u{1} + cc * t{1}]", w.name, r)); ++r; }
        s += "        {\n";
        s += "            const I cc = c0 + tx;\n";
        s += "#pragma unroll\n";
        s += fmt::format("            for (int j = ty; j < {}; j += {}) {{\n", tile_, rows_per_pass);
        s += "                const I rr = r0 + j;\n";
        s += fmt::format("                if (rr < nr && cc < nc) jx_compute({});\n", call_args(rd, wr));
        s += "            }\n        }\n";
        s += "        __syncthreads();\n";
        s += "    }\n}\n\n";
        s += index_entries(k, "jx_tiles", fmt::format("__launch_bounds__({})", kTileThreads), vparam,
                           vec > 1 ? "L, vectors" : "L");
        return s;
    }

    // The vector body shared by Flat, Strided and Tiled kernels: one vector result per output,
    // `vec` elements computed by jx_compute from `rd` (expressions of the element index e), and
    // each result stored as one vector at `out + at(i)` (i counts the outputs).
    template <class At>
    std::string vector_compute(const std::string& ind, int vec, const std::vector<std::string>& rd, At&& at) {
        std::string s;
        std::vector<std::string> wr;
        for (auto& w : writes_) {
            s += fmt::format("{}jx_vec<{}, {}> y_{};\n", ind, store_type(w.dtype), vec, w.name);
            wr.push_back(fmt::format("y_{}.v[e]", w.name));
        }
        s += "#pragma unroll\n";
        s += fmt::format("{}for (int e = 0; e < {}; ++e) jx_compute({});\n", ind, vec, call_args(rd, wr));
        int i = 0;
        for (auto& w : writes_)
            s += fmt::format("{0}*reinterpret_cast<jx_vec<{1}, {2}>*>({3} + {4}) = y_{3};\n", ind, store_type(w.dtype), vec,
                             w.name, at(i++));
        return s;
    }

    // The vector branch of a tile (see tiled_kernel): `vec` elements per access, tile rows of
    // tile_ / vec lanes. Tiled inputs are read with stride 1 along the tile's rows and outputs
    // written with stride 1 along its columns (the launch has checked both).
    std::string vector_tiles(int vec) {
        const int lanes = tile_ / vec, rows_per_pass = kTileThreads / lanes;
        std::string s = "        if (vectors) {\n";
        s += fmt::format("            const int vl = threadIdx.x % {0}, vr = threadIdx.x / {0};\n", lanes);
        s += "            {\n";
        s += fmt::format("                const I lr = r0 + vl * {};\n", vec);
        s += "#pragma unroll\n";
        s += fmt::format("                for (int j = vr; j < {}; j += {}) {{\n", tile_, rows_per_pass);
        s += "                    const I lc = c0 + j;\n";
        s += "                    if (lr < nr && lc < nc) {\n";
        int r = 0;
        for (auto& a : reads_) {
            if (a.inner == InnerClass::Tile) {
                s += fmt::format("                        const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} + p{3} + lr + lc * t{3});\n",
                                 store_type(a.dtype), vec, a.name, r);
                s += "#pragma unroll\n";
                s += fmt::format("                        for (int e = 0; e < {0}; ++e) sh_{1}[j][vl * {0} + e] = x_{1}.v[e];\n", vec, a.name);
            }
            ++r;
        }
        s += "                    }\n                }\n            }\n";
        s += "            __syncthreads();\n";
        std::vector<std::string> rd;
        r = 0;
        for (auto& a : reads_) {
            if (a.inner == InnerClass::Tile) rd.push_back(fmt::format("sh_{}[vl * {} + e][j]", a.name, vec));
            else rd.push_back(fmt::format("{0}[p{1} + rr * u{1} + (cc + e) * t{1}]", a.name, r));
            ++r;
        }
        s += "            {\n";
        s += fmt::format("                const I cc = c0 + vl * {};\n", vec);
        s += "#pragma unroll\n";
        s += fmt::format("                for (int j = vr; j < {}; j += {}) {{\n", tile_, rows_per_pass);
        s += "                    const I rr = r0 + j;\n";
        s += "                    if (rr < nr && cc < nc) {\n";
        s += vector_compute("                        ", vec, rd, [&](int) { const int w = r++; return fmt::format("p{0} + rr * u{0} + cc", w); });
        s += "                    }\n                }\n            }\n";
        s += "            __syncthreads();\n";
        s += "            continue;\n";
        s += "        }\n";
        return s;
    }

    // ---- Reductions

    std::string finalize(const std::string& acc, const std::string& count) {
        const ir::Node& r = p_.node(st_.reduce);
        const std::string t = reg_type(r.dtype);
        std::string v = acc;
        if (r.op == ir::Op::Mean) v = fmt::format("jx::op::Div({}, jx::cast<{}>({}))", acc, t, count);
        return store_conv(r.dtype, v);
    }

    void check_reduce_types() {
        const ir::Node& r = p_.node(st_.reduce);
        const DType od = p_.node(r.args[0]).dtype;
        if (r.op == ir::Op::Any || r.op == ir::Op::All) {
            if (od != DType::Bool || r.dtype != DType::Bool) internal("any/all need bool operand and result");
        } else if (od != r.dtype) {
            internal("reduction operand dtype differs from its result");
        }
    }

    std::string reduce_all_kernel(KernelSource& k) {
        check_reduce_types();
        const ir::Node& r = p_.node(st_.reduce);
        const std::string RT = reg_type(r.dtype);
        const std::string red = red_type(r.op, r.dtype);
        const int D = static_cast<int>(st_.shape.size());
        const int R = flat_reads_ ? 0 : static_cast<int>(reads_.size());
        k.launch.max_blocks = 2048;
        k.launch.partial_bytes = static_cast<int>(itemsize(r.dtype == DType::Float16 || r.dtype == DType::BFloat16
                                                               ? DType::Float32 : r.dtype));
        if (r.dtype == DType::Bool) k.launch.partial_bytes = 1;
        const std::size_t partial_area = k.launch.workspace_bytes() - 16;
        if (!flat_reads_) {
            k.launch.ndim = D;
            k.launch.layout_rows = R;
        }
        for (auto& a : reads_) a.broadcast = flat_reads_ && shape_size(a.shape) == 1 && shape_size(st_.shape) != 1;
        add_array_params(k, !flat_reads_);
        for (auto& p : k.params)
            if (p.written) p.layout_row = -1;  // one element: no strides
        Param cnt;
        cnt.kind = Param::Kind::Count;
        k.params.push_back(cnt);
        if (!flat_reads_) {
            Param lay;
            lay.kind = Param::Kind::Layout;
            k.params.push_back(lay);
        }
        Param ws;
        ws.kind = Param::Kind::Workspace;
        k.params.push_back(ws);

        std::string s = "// full reduction: per-thread accumulation, block reduce, partials, last block combines in order\n";
        if (!flat_reads_) s += layout_struct(D, R);
        s += fmt::format("extern \"C\" __global__ void {} jx_kernel({}const long long n, {}void* __restrict__ ws) {{\n",
                         launch_bounds(), array_params(false), flat_reads_ ? "" : "const jx_layout L, ");
        s += fmt::format("    using R = {};\n", red);
        s += fmt::format("    {}* partial = static_cast<{}*>(ws);\n", RT, RT);
        s += fmt::format("    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + {});\n", partial_area);
        s += fmt::format("    {} acc = R::identity();\n", RT);
        s += "    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
        s += "    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
        std::vector<std::string> rd;
        if (flat_reads_) {
            for (auto& a : reads_) {
                if (a.broadcast) {
                    s += fmt::format("    const {} x_{} = {}[0];\n", store_type(a.dtype), a.name, a.name);
                    rd.push_back("x_" + a.name);
                } else {
                    rd.push_back(a.name + "[i]");
                }
            }
            s += fmt::format("    for (long long i = first; i < n; i += step) acc = R::combine(acc, jx_compute({}));\n",
                             call_args(rd, {}));
        } else {
            s += "    for (long long i = first; i < n; i += step) {\n";
            for (int q = 0; q < R; ++q) s += fmt::format("        long long p{} = 0;\n", q);
            s += "        long long rest = i;\n";
            s += "#pragma unroll\n";
            s += fmt::format("        for (int d = {}; d >= 0; --d) {{\n", D - 1);
            s += "            const long long c = rest % L.shape[d];\n";
            s += "            rest /= L.shape[d];\n";
            for (int q = 0; q < R; ++q) s += fmt::format("            p{0} += c * L.stride[{0}][d];\n", q);
            s += "        }\n";
            int q = 0;
            for (auto& a : reads_) rd.push_back(fmt::format("{}[p{}]", a.name, q++));
            s += fmt::format("        acc = R::combine(acc, jx_compute({}));\n", call_args(rd, {}));
            s += "    }\n";
        }
        s += "    acc = jx_block_reduce<R>(acc);\n";
        s += "    __shared__ bool last;\n";
        s += "    if (threadIdx.x == 0) {\n";
        s += "        partial[blockIdx.x] = acc;\n";
        s += "        __threadfence();\n";
        s += "        last = atomicAdd(ticket, 1u) == gridDim.x - 1u;\n";
        s += "    }\n";
        s += "    __syncthreads();\n";
        s += "    if (!last) return;\n";
        s += "    __threadfence();\n";
        s += fmt::format("    {} total = R::identity();\n", RT);
        s += "    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total = R::combine(total, jx_ldcg(partial + b));\n";
        s += "    total = jx_block_reduce<R>(total);\n";
        s += "    if (threadIdx.x == 0) {\n";
        s += fmt::format("        {}[0] = {};\n", writes_.at(0).name, finalize("total", "n"));
        s += "        *ticket = 0u;\n";
        s += "    }\n}\n";
        k.entries.push_back("jx_kernel");
        return s;
    }

    std::string reduce_axis_kernel(KernelSource& k) {
        check_reduce_types();
        const ir::Node& r = p_.node(st_.reduce);
        const std::string RT = reg_type(r.dtype);
        const int D = static_cast<int>(st_.shape.size());
        const int AX = r.axis;
        const int R = static_cast<int>(reads_.size() + writes_.size());
        const bool warp = AX == D - 1;
        k.launch.ndim = D;
        k.launch.layout_rows = R;
        k.launch.axis = AX;
        k.launch.warp_per_output = warp;
        add_array_params(k, true);
        Param lay;
        lay.kind = Param::Kind::Layout;
        k.params.push_back(lay);

        std::string s = warp ? "// axis reduction over the last axis: one warp per output element\n"
                             : "// axis reduction over an outer axis: one thread per output element\n";
        s += layout_struct(D, R);
        s += fmt::format("extern \"C\" __global__ void {} jx_kernel({}const jx_layout L) {{\n", launch_bounds(),
                         array_params(false));
        s += fmt::format("    using R = {};\n", red_type(r.op, r.dtype));
        s += "    long long outputs = 1;\n";
        s += "#pragma unroll\n";
        s += fmt::format("    for (int d = 0; d < {}; ++d) if (d != {}) outputs *= L.shape[d];\n", D, AX);
        s += fmt::format("    const long long len = L.shape[{}];\n", AX);
        s += "    const long long gid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
        s += "    const long long gsize = static_cast<long long>(gridDim.x) * blockDim.x;\n";
        if (warp) {
            s += "    const long long lane = threadIdx.x & 31;\n";
            s += "    for (long long o = gid >> 5; o < outputs; o += gsize >> 5) {\n";
        } else {
            s += "    for (long long o = gid; o < outputs; o += gsize) {\n";
        }
        for (int q = 0; q < R; ++q) s += fmt::format("        long long p{} = 0;\n", q);
        s += "        long long rest = o;\n";
        s += "#pragma unroll\n";
        s += fmt::format("        for (int d = {}; d >= 0; --d) {{\n", D - 1);
        s += fmt::format("            if (d == {}) continue;\n", AX);
        s += "            const long long c = rest % L.shape[d];\n";
        s += "            rest /= L.shape[d];\n";
        for (int q = 0; q < R; ++q) s += fmt::format("            p{0} += c * L.stride[{0}][d];\n", q);
        s += "        }\n";
        for (int q = 0; q < static_cast<int>(reads_.size()); ++q)
            s += fmt::format("        const long long t{0} = L.stride[{0}][{1}];\n", q, AX);
        std::vector<std::string> rd;
        int q = 0;
        for (auto& a : reads_) { rd.push_back(fmt::format("{}[p{} + j * t{}]", a.name, q, q)); ++q; }
        s += fmt::format("        {} acc = R::identity();\n", RT);
        s += fmt::format("        for (long long j = {}; j < len; j += {}) acc = R::combine(acc, jx_compute({}));\n",
                         warp ? "lane" : "0", warp ? "32" : "1", call_args(rd, {}));
        if (warp) {
            s += "#pragma unroll\n";
            s += "        for (int d = 16; d > 0; d >>= 1) acc = R::combine(acc, jx_shfl_down(acc, d));\n";
            s += "        if (lane == 0) ";
        } else {
            s += "        ";
        }
        s += fmt::format("{}[p{}] = {};\n", writes_.at(0).name, R - 1, finalize("acc", "len"));
        s += "    }\n}\n";
        k.entries.push_back("jx_kernel");
        return s;
    }

    const ir::Program& p_;
    const ir::Schedule& s_;
    int stage_index_;
    const ir::Stage& st_;
    EmitOptions opt_;
    std::vector<bool> needed_;
    std::vector<ReadArray> reads_;
    std::vector<WriteArray> writes_;
    std::vector<std::int32_t> scalars_;
    std::map<std::int32_t, int> input_read_, buffer_read_;
    KernelKind kind_ = KernelKind::Flat;
    bool flat_reads_ = true;
    int tile_ = 32;  // Tiled: tile edge
};

}  // namespace

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
        out.kernels.push_back(StageEmitter(program, schedule, static_cast<int>(i), options).run());
        h = fnv1a(out.kernels.back().key, h);
    }
    out.key = hex64(h);
    return out;
}

}  // namespace jit::codegen

// jitexpr — reduction kernels: ReduceAll and ReduceAxis (see codegen/stage_emitter.hpp).
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace jit::codegen::emitter {

void ReduceEmitter::choose_kind() {
    const ir::Node& r = p_.node(st_.reduce);
    const int nd = static_cast<int>(st_.shape.size());
    if (ir::info(r.op).finish == ir::Finish::Select) {
        kind_ = KernelKind::Select;
    } else if (r.axis < 0 || nd <= 1) {
        kind_ = KernelKind::ReduceAll;
        flat_reads_ = true;
        for (auto& a : reads_) flat_reads_ = flat_reads_ && same_flat(a.shape, a.strides, st_.shape);
        if (opt_.force_strided && nd > 0) flat_reads_ = false;
    } else {
        if (r.axis >= nd) internal("reduction axis out of range");
        kind_ = KernelKind::ReduceAxis;
    }
}

std::string ReduceEmitter::kernel(KernelSource& k) {
    if (kind_ == KernelKind::Select) return select_kernel(k);
    return kind_ == KernelKind::ReduceAll ? reduce_all_kernel(k) : reduce_axis_kernel(k);
}

// The value a thread folds for one element: the element itself, or (a positional reduction,
// ArgFirst) the element with its position `pos`.
std::string ReduceEmitter::leaf(const std::string& value, const std::string& pos) const {
    const ir::Node& r = p_.node(st_.reduce);
    if (ir::info(r.op).rule == ir::Rule::ArgFirst) return fmt::format("R::leaf({}, {})", value, pos);
    return value;
}

std::string ReduceEmitter::finalize(const std::string& acc, const std::string& count) {
    const ir::Node& r = p_.node(st_.reduce);
    const std::string t = reg_type(r.dtype);
    std::string v = acc;
    if (ir::info(r.op).finish == ir::Finish::DivideByCount)
        v = fmt::format("jx::op::Div({}, jx::cast<{}>({}))", acc, t, count);
    return store_conv(r.dtype, v);
}

void ReduceEmitter::check_reduce_types() {
    const ir::Node& r = p_.node(st_.reduce);
    const DType od = p_.node(r.args[0]).dtype;
    if (ir::info(r.op).rule == ir::Rule::AnyAll) {
        if (od != DType::Bool || r.dtype != DType::Bool) internal("any/all need bool operand and result");
    } else if (ir::info(r.op).rule == ir::Rule::ArgFirst) {
        if (od != DType::Bool || r.dtype != DType::Int64) internal("argfirst needs a bool operand and an int64 result");
    } else if (od != r.dtype) {
        internal("reduction operand dtype differs from its result");
    }
}

std::string ReduceEmitter::reduce_all_kernel(KernelSource& k) {
    check_reduce_types();
    const ir::Node& r = p_.node(st_.reduce);
    const std::string RT = reg_type(r.dtype);
    const std::string red = red_type(r.op, r.dtype);
    const int D = static_cast<int>(st_.shape.size());
    const int R = flat_reads_ ? 0 : static_cast<int>(reads_.size());
    k.launch.max_blocks = 2048;
    k.launch.partial_bytes =
        static_cast<int>(itemsize(r.dtype == DType::Float16 || r.dtype == DType::BFloat16 ? DType::Float32 : r.dtype));
    if (r.dtype == DType::Bool) k.launch.partial_bytes = 1;
    const std::size_t partial_area = k.launch.workspace_bytes() - 16;
    if (!flat_reads_) {
        k.launch.ndim = D;
        k.launch.layout_rows = R;
    }
    for (auto& a : reads_) a.broadcast = flat_reads_ && shape_size(a.shape) == 1 && shape_size(st_.shape) != 1;
    // Contiguous reads are folded in groups of G = 16 / widest element consecutive elements: a
    // thread takes groups first, first + step, ..., then the tail past the last whole group, one
    // element a step. The group is read as one 16-byte vector per array where the launch finds
    // every such pointer aligned (the VectorFlag), else element by element; the scalar-only
    // kernel of a tiered compile reads it element by element too. The order in which a thread
    // folds its elements depends on G only, so the first tier, the final kernel and an unaligned
    // view give the same bits.
    std::size_t widest = 0;
    for (auto& a : reads_)
        if (!a.broadcast) widest = std::max(widest, itemsize(a.dtype));
    const int group = flat_reads_ && widest > 0 && 16 / widest >= 2 && !compute_bound() && !reads_strings() &&
                              ir::info(r.op).rule != ir::Rule::ArgFirst
                          ? static_cast<int>(16 / widest)
                          : 1;
    const int vec = opt_.scalar_only ? 1 : group;
    k.launch.vec = vec;
    k.launch.group = group;
    add_array_params(k, !flat_reads_);
    for (auto& p : k.params)
        if (p.written) p.layout_row = -1;  // one element: no strides
    push_param(k, Param::Kind::Count);
    if (vec > 1) push_param(k, Param::Kind::VectorFlag);
    if (!flat_reads_) push_param(k, Param::Kind::Layout);
    push_param(k, Param::Kind::Workspace);

    std::string s =
        "// full reduction: per-thread accumulation, block reduce, partials, last block combines in order\n";
    if (!flat_reads_) s += layout_struct(D, R);
    s += fmt::format("extern \"C\" __global__ void {} jx_kernel({}const long long n, {}{}void* __restrict__ ws) {{\n",
                     launch_bounds(), array_params(false), vec > 1 ? "const int vectors, " : "",
                     flat_reads_ ? "" : "const jx_layout L, ");
    s += fmt::format("    using R = {};\n", red);
    s += fmt::format("    {}* partial = static_cast<{}*>(ws);\n", RT, RT);
    s +=
        fmt::format("    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + {});\n", partial_area);
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
        std::string from = "first";
        if (group > 1) {
            // The groups, a vector each where aligned, else element by element in the same order.
            std::vector<std::string> ed;
            for (auto& a : reads_) {
                ed.push_back(a.broadcast ? "x_" + a.name : fmt::format("{}[k * {} + e]", a.name, group));
            }
            s += fmt::format("    const long long groups = n / {};\n", group);
            std::string ind = "    ";
            if (vec > 1) {
                // With -DJX_REDUCE_TWO_STEPS (an experiment until a GPU times it against
                // torch.compile: gpu-session.sh's `ab` step), two steps a turn: every array's two
                // vectors are loaded before either is folded (twice the bytes in flight a thread),
                // folded in the order of one step a turn, so the bits are the same.
                auto loads = [&](const std::string& at, const std::string& suffix) {
                    for (auto& a : reads_) {
                        if (a.broadcast) continue;
                        s += fmt::format(
                            "            const jx_vec<{0}, {1}> v_{2}{4} = *reinterpret_cast<const "
                            "jx_vec<{0}, {1}>*>({2} + ({3}) * {1});\n",
                            store_type(a.dtype), vec, a.name, at, suffix);
                    }
                };
                auto folds = [&](const std::string& suffix) {
                    std::vector<std::string> vs;
                    for (auto& a : reads_)
                        vs.push_back(a.broadcast ? "x_" + a.name : fmt::format("v_{}{}.v[e]", a.name, suffix));
                    s += "#pragma unroll\n";
                    s +=
                        fmt::format("            for (int e = 0; e < {}; ++e) acc = R::combine(acc, jx_compute({}));\n",
                                    vec, call_args(vs, {}));
                };
                s += "    if (vectors) {\n";
                s += "        long long k = first;\n";
                s += "#ifdef JX_REDUCE_TWO_STEPS\n";
                s += "        for (; k + step < groups; k += 2 * step) {\n";
                loads("k", "_0");
                loads("k + step", "_1");
                folds("_0");
                folds("_1");
                s += "        }\n";
                s += "#endif\n";
                s += "        for (; k < groups; k += step) {\n";
                loads("k", "");
                folds("");
                s += "        }\n";
                s += "    } else {\n";
                ind = "        ";
            }
            // Not unrolled: this is the first tier's loop (compiled for speed of compiling) and
            // the final kernel's fallback for unaligned pointers.
            s += ind + "for (long long k = first; k < groups; k += step) {\n";
            s += "#pragma unroll 1\n";
            s += fmt::format("{}    for (int e = 0; e < {}; ++e) acc = R::combine(acc, jx_compute({}));\n", ind, group,
                             call_args(ed, {}));
            s += ind + "}\n";
            if (vec > 1) s += "    }\n";
            from = fmt::format("groups * {} + first", group);
        }
        s += fmt::format("    for (long long i = {}; i < n; i += step) acc = R::combine(acc, {});\n", from,
                         leaf(fmt::format("jx_compute({})", call_args(rd, {})), "i"));
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
        s += fmt::format("        acc = R::combine(acc, {});\n",
                         leaf(fmt::format("jx_compute({})", call_args(rd, {})), "i"));
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
    s += "    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total = R::combine(total, jx_ldcg(partial "
         "+ b));\n";
    s += "    total = jx_block_reduce<R>(total);\n";
    s += "    if (threadIdx.x == 0) {\n";
    s += fmt::format("        {}[0] = {};\n", writes_.at(0).name, finalize("total", "n"));
    s += "        *ticket = 0u;\n";
    s += "    }\n}\n";
    k.entries.push_back("jx_kernel");
    return s;
}

std::string ReduceEmitter::reduce_axis_kernel(KernelSource& k) {
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
    push_param(k, Param::Kind::Layout);

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
    for (auto& a : reads_) {
        rd.push_back(fmt::format("{}[p{} + j * t{}]", a.name, q, q));
        ++q;
    }
    s += fmt::format("        {} acc = R::identity();\n", RT);
    s += fmt::format("        for (long long j = {}; j < len; j += {}) acc = R::combine(acc, {});\n",
                     warp ? "lane" : "0", warp ? "32" : "1",
                     leaf(fmt::format("jx_compute({})", call_args(rd, {})), "j"));
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

}  // namespace jit::codegen::emitter

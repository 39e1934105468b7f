// jitexpr — scan kernels: ScanAll and ScanAxis (see codegen/codegen.hpp, codegen/stage_emitter.hpp).
//
// Both fold with the scan's accumulator (jx::red::Sum for cumsum, jx::red::Prod for cumprod) in
// a fixed order: a warp-level inclusive scan by shuffles, the warps' totals scanned by warp 0,
// each tile's result combined onto the running value of the tiles before it. No step depends on
// timing, so a float scan gives the same bits on every run; an integer one (wrapping) is exact,
// equal to the CPU backend's. A 16-bit float is rounded to its format after every combine, as
// NumPy accumulates float16 in float16.
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>

#include <string>

namespace jit::codegen::emitter {

void ScanEmitter::choose_kind() {
    const ir::Node& r = p_.node(st_.reduce);
    const int nd = static_cast<int>(st_.shape.size());
    if (r.axis < 0) {
        kind_ = KernelKind::ScanAll;
        flat_reads_ = true;
        for (auto& a : reads_) flat_reads_ = flat_reads_ && same_flat(a.shape, a.strides, st_.shape);
        if (opt_.force_strided && nd > 0) flat_reads_ = false;
    } else {
        if (r.axis >= nd) internal("scan axis out of range");
        kind_ = KernelKind::ScanAxis;
    }
}

std::string ScanEmitter::kernel(KernelSource& k) {
    const ir::Node& r = p_.node(st_.reduce);
    if (p_.node(r.args[0]).dtype != r.dtype) internal("scan operand dtype differs from its result");
    if (ir::info(r.op).kind != ir::OpKind::Scan) internal("a Scan node of no scan");
    std::string s = helpers();
    s += kind_ == KernelKind::ScanAll ? scan_all_kernel(k) : scan_axis_kernel(k);
    return s;
}

std::string ScanEmitter::helpers() const {
    const ir::Node& r = p_.node(st_.reduce);
    const std::string T = reg_type(r.dtype);
    const std::string acc = fmt::format("jx::red::{}<{}>", ir::info(ir::info(r.op).accumulate).id, T);
    std::string round = "v";
    if (r.dtype == DType::Float16) round = "jx::round_f16(v)";
    else if (r.dtype == DType::BFloat16) round = "jx::round_bf16(v)";
    std::string s;
    s += "// the scan's fold: its accumulator, each step rounded to the result's dtype\n";
    s += "struct jx_scan_op {\n";
    s += fmt::format("    using T = {};\n", T);
    s += fmt::format("    static __device__ __forceinline__ T identity() {{ return {}::identity(); }}\n", acc);
    s += "    static __device__ __forceinline__ T combine(T a, T b) {\n";
    s += fmt::format("        const T v = {}::combine(a, b);\n", acc);
    s += fmt::format("        return {};\n", round);
    s += "    }\n};\n\n";
    s += R"(template <class T> __device__ __forceinline__ T jx_shfl_up(const T& v, int delta) {
    constexpr int W = (sizeof(T) + 3) / 4;
    unsigned w[W];
    T r;
    w[W - 1] = 0u;
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_up_sync(0xffffffffu, w[k], delta);
    memcpy(&r, w, sizeof(T));
    return r;
}

// Inclusive scan of one value per thread of the block (blockDim.x a multiple of 32), in thread
// order; *total is the block's fold. Every thread of the block calls it.
template <class S> __device__ __forceinline__ typename S::T jx_block_scan(typename S::T v, typename S::T* total) {
    using T = typename S::T;
    __shared__ __align__(16) unsigned char raw[32 * sizeof(T)];
    T* sh = reinterpret_cast<T*>(raw);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (int)(blockDim.x >> 5);
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const T u = jx_shfl_up(v, d);
        if (lane >= d) v = S::combine(u, v);
    }
    if (lane == 31) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = lane < warps ? sh[lane] : S::identity();
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const T u = jx_shfl_up(w, d);
            if (lane >= d) w = S::combine(u, w);
        }
        if (lane < warps) sh[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v = S::combine(sh[warp - 1], v);
    *total = sh[warps - 1];
    __syncthreads();  // sh is free for the next call
    return v;
}

)";
    return s;
}

std::string ScanEmitter::scan_all_kernel(KernelSource& k) {
    const ir::Node& r = p_.node(st_.reduce);
    const std::string RT = reg_type(r.dtype);
    const int D = static_cast<int>(st_.shape.size());
    const int R = flat_reads_ ? 0 : static_cast<int>(reads_.size());
    k.launch.max_blocks = 2048;
    k.launch.partial_bytes = static_cast<int>(itemsize(is_half(r.dtype) ? DType::Float32 : r.dtype));
    const std::size_t partial_area = k.launch.workspace_bytes() - 16;
    if (!flat_reads_) {
        k.launch.ndim = D;
        k.launch.layout_rows = R;
    }
    for (auto& a : reads_) a.broadcast = flat_reads_ && shape_size(a.shape) == 1 && shape_size(st_.shape) != 1;
    add_array_params(k, !flat_reads_);
    for (auto& p : k.params)
        if (p.written) p.layout_row = -1;  // the 1-d result: its stride is OutStride
    push_param(k, Param::Kind::Count);
    push_param(k, Param::Kind::OutStride);
    if (!flat_reads_) push_param(k, Param::Kind::Layout);
    push_param(k, Param::Kind::Workspace);
    push_param(k, Param::Kind::Phase);

    std::string s =
        "// scan of every element: phase 0 chunk totals and their prefixes (last block, in order), phase 1 the "
        "scan\n";
    if (!flat_reads_) s += layout_struct(D, R);
    s += fmt::format(
        "extern \"C\" __global__ void {} jx_kernel({}const long long n, const long long os, {}void* __restrict__ ws, "
        "const int phase) {{\n",
        launch_bounds(), array_params(false), flat_reads_ ? "" : "const jx_layout L, ");
    s += "    using S = jx_scan_op;\n";
    s += fmt::format("    {}* partial = static_cast<{}*>(ws);\n", RT, RT);
    s +=
        fmt::format("    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + {});\n", partial_area);
    s += "    const long long chunk = (n + gridDim.x - 1) / gridDim.x;\n";
    s += "    const long long begin = static_cast<long long>(blockIdx.x) * chunk;\n";
    s += "    const long long end = begin + chunk < n ? begin + chunk : n;\n";
    // `started`: whether anything precedes the tile; the first element of the whole scan is its
    // own value, not identity + value (-0.0 stays -0.0, as in NumPy).
    s += "    bool started = phase == 1 && blockIdx.x > 0;\n";
    s += fmt::format("    {} carry = started ? jx_ldcg(partial + blockIdx.x - 1) : S::identity();\n", RT);
    std::vector<std::string> rd;
    std::string pre;
    if (flat_reads_) {
        for (auto& a : reads_) {
            if (a.broadcast) {
                s += fmt::format("    const {} x_{} = {}[0];\n", store_type(a.dtype), a.name, a.name);
                rd.push_back("x_" + a.name);
            } else {
                rd.push_back(a.name + "[i]");
            }
        }
    } else {
        for (int q = 0; q < R; ++q) pre += fmt::format("            long long p{} = 0;\n", q);
        pre += "            long long rest = i;\n";
        pre += "#pragma unroll\n";
        pre += fmt::format("            for (int d = {}; d >= 0; --d) {{\n", D - 1);
        pre += "                const long long c = rest % L.shape[d];\n";
        pre += "                rest /= L.shape[d];\n";
        for (int q = 0; q < R; ++q) pre += fmt::format("                p{0} += c * L.stride[{0}][d];\n", q);
        pre += "            }\n";
        int q = 0;
        for (auto& a : reads_) rd.push_back(fmt::format("{}[p{}]", a.name, q++));
    }
    s += "    for (long long base = begin; base < end; base += blockDim.x) {\n";
    s += "        const long long i = base + threadIdx.x;\n";
    s += fmt::format("        {} v = S::identity();\n", RT);
    s += "        if (i < end) {\n";
    s += pre;
    s += fmt::format("            v = jx_compute({});\n", call_args(rd, {}));
    s += "        }\n";
    s += fmt::format("        {} total;\n", RT);
    s += "        v = jx_block_scan<S>(v, &total);\n";
    s += fmt::format("        if (phase == 1 && i < end) {}[i * os] = {};\n", writes_.at(0).name,
                     store_conv(r.dtype, "started ? S::combine(carry, v) : v"));
    s += "        carry = started ? S::combine(carry, total) : total;\n";
    s += "        started = true;\n";
    s += "    }\n";
    s += "    if (phase != 0) return;\n";
    s += "    __shared__ bool last;\n";
    s += "    if (threadIdx.x == 0) {\n";
    s += "        partial[blockIdx.x] = carry;\n";
    s += "        __threadfence();\n";
    s += "        last = atomicAdd(ticket, 1u) == gridDim.x - 1u;\n";
    s += "    }\n";
    s += "    __syncthreads();\n";
    s += "    if (!last) return;\n";
    s += "    __threadfence();\n";
    s += "    // the chunks' totals to inclusive prefixes, in block order\n";
    s += fmt::format("    {} run = S::identity();\n", RT);
    s += "    started = false;\n";
    s += "    for (unsigned base = 0; base < gridDim.x; base += blockDim.x) {\n";
    s += "        const unsigned b = base + threadIdx.x;\n";
    s += fmt::format("        {} v = b < gridDim.x ? jx_ldcg(partial + b) : S::identity();\n", RT);
    s += fmt::format("        {} total;\n", RT);
    s += "        v = jx_block_scan<S>(v, &total);\n";
    s += "        if (b < gridDim.x) partial[b] = started ? S::combine(run, v) : v;\n";
    s += "        run = started ? S::combine(run, total) : total;\n";
    s += "        started = true;\n";
    s += "    }\n";
    s += "    if (threadIdx.x == 0) *ticket = 0u;\n";
    s += "}\n";
    k.entries.push_back("jx_kernel");
    return s;
}

std::string ScanEmitter::scan_axis_kernel(KernelSource& k) {
    const ir::Node& r = p_.node(st_.reduce);
    const std::string RT = reg_type(r.dtype);
    const int D = static_cast<int>(st_.shape.size());
    const int AX = r.axis;
    const int R = static_cast<int>(reads_.size() + writes_.size());
    k.launch.ndim = D;
    k.launch.layout_rows = R;
    k.launch.axis = AX;
    // Along the last axis a row is contiguous: a block per row, its lanes on adjacent elements
    // (rows shorter than a warp would leave most of the block idle: a thread per row then).
    // Along another axis the rows are side by side in memory: a thread per row, each scanning
    // its row element after element (NumPy's order), adjacent threads on adjacent elements.
    const bool block_rows = AX == D - 1 && st_.shape[static_cast<std::size_t>(AX)] >= 32;
    k.launch.block_per_row = block_rows;
    add_array_params(k, true);
    push_param(k, Param::Kind::Layout);

    std::string s = block_rows
                        ? "// scan along the last axis: one block per row, tiles scanned block-wide, carried in order\n"
                        : "// scan along an outer axis: one thread per row, in order\n";
    s += layout_struct(D, R);
    s += fmt::format("extern \"C\" __global__ void {} jx_kernel({}const jx_layout L) {{\n", launch_bounds(),
                     array_params(false));
    s += "    using S = jx_scan_op;\n";
    s += "    long long rows = 1;\n";
    s += "#pragma unroll\n";
    s += fmt::format("    for (int d = 0; d < {}; ++d) if (d != {}) rows *= L.shape[d];\n", D, AX);
    s += fmt::format("    const long long len = L.shape[{}];\n", AX);
    if (block_rows) {
        s += "    for (long long o = blockIdx.x; o < rows; o += gridDim.x) {\n";
    } else {
        s += "    const long long gid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
        s += "    const long long gsize = static_cast<long long>(gridDim.x) * blockDim.x;\n";
        s += "    for (long long o = gid; o < rows; o += gsize) {\n";
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
    for (int q = 0; q < R; ++q) s += fmt::format("        const long long t{0} = L.stride[{0}][{1}];\n", q, AX);
    std::vector<std::string> rd;
    int q = 0;
    for (auto& a : reads_) {
        rd.push_back(fmt::format("{}[p{} + j * t{}]", a.name, q, q));
        ++q;
    }
    s += fmt::format("        {} carry = S::identity();\n", RT);
    if (!block_rows) {
        s += "        for (long long j = 0; j < len; ++j) {\n";
        s += fmt::format("            const {} v = jx_compute({});\n", RT, call_args(rd, {}));
        s += "            carry = j == 0 ? v : S::combine(carry, v);\n";
        s += fmt::format("            {}[p{} + j * t{}] = {};\n", writes_.at(0).name, R - 1, R - 1,
                         store_conv(r.dtype, "carry"));
        s += "        }\n";
        s += "    }\n}\n";
        k.entries.push_back("jx_kernel");
        return s;
    }
    s += "        for (long long base = 0; base < len; base += blockDim.x) {\n";
    s += "            const long long j = base + threadIdx.x;\n";
    s += fmt::format("            {} v = j < len ? jx_compute({}) : S::identity();\n", RT, call_args(rd, {}));
    s += fmt::format("            {} total;\n", RT);
    s += "            v = jx_block_scan<S>(v, &total);\n";
    s += fmt::format("            if (j < len) {}[p{} + j * t{}] = {};\n", writes_.at(0).name, R - 1, R - 1,
                     store_conv(r.dtype, "base > 0 ? S::combine(carry, v) : v"));
    s += "            carry = base > 0 ? S::combine(carry, total) : total;\n";
    s += "        }\n";
    s += "    }\n}\n";
    k.entries.push_back("jx_kernel");
    return s;
}

}  // namespace jit::codegen::emitter

// jitexpr — compaction kernels: boolean-mask selection, b[m] (see codegen/codegen.hpp, Compact).
//
// Two entry points over the same grid. Block b owns the contiguous range
// [b * chunk, min(n, (b + 1) * chunk)) of the iteration space in C order, chunk = ceil(n / grid),
// and walks it in tiles of blockDim elements; every thread of a block runs the same number of
// tiles, so the block-wide steps (__syncthreads_count, the ballots) see all of its threads.
//   jx_count    counts[b] = the mask's true elements in b's range; the last block to finish (an
//               atomic ticket, as ReduceAll) writes their total after the counts and resets
//               the ticket. The host reads the total and allocates the outputs.
//   jx_scatter  block b starts at the sum of counts[0 .. b), then per tile: a warp ballot of
//               the mask, each warp's count in shared memory, and each selected element written
//               at the tile's base plus the elements selected before it: the result keeps C order.
// The prefix over the block counts is a sum per block (at most max_blocks counts, read once
// per block), not a separate scan kernel.
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>

#include <string>

namespace jit::codegen::emitter {

namespace {
constexpr int kCompactMaxBlocks = 1024;  // grid cap: the counts the workspace holds
}  // namespace

std::string CompactEmitter::kernel(KernelSource& k) {
    const int D = static_cast<int>(st_.shape.size());
    const int R = static_cast<int>(reads_.size());
    if (D == 0) internal("compaction over a 0-d space");
    for (const auto& w : writes_)
        if (p_.node(w.node).kind != ir::NodeKind::Compact) internal("compact stage writes no Compact node");
    k.launch.max_blocks = kCompactMaxBlocks;
    k.launch.ndim = D;
    k.launch.layout_rows = R;
    add_array_params(k, true);
    for (auto& p : k.params)
        if (p.written) p.layout_row = -1;  // the results are C-contiguous: one flat position
    push_param(k, Param::Kind::Count);
    push_param(k, Param::Kind::Layout);
    push_param(k, Param::Kind::Workspace);

    const std::string params =
        fmt::format("{}const long long n, const jx_layout L, void* __restrict__ ws", array_params(false));
    // The element at flat position i: its read offsets, then the mask and values (v_<k>).
    auto element = [&](const std::string& indent) {
        std::string s;
        for (int q = 0; q < R; ++q) s += fmt::format("{}long long p{} = 0;\n", indent, q);
        s += fmt::format("{}long long rest = i;\n", indent);
        s += "#pragma unroll\n";
        s += fmt::format("{}for (int d = {}; d >= 0; --d) {{\n", indent, D - 1);
        s += fmt::format("{}    const long long c = rest % L.shape[d];\n", indent);
        s += fmt::format("{}    rest /= L.shape[d];\n", indent);
        for (int q = 0; q < R; ++q) s += fmt::format("{0}    p{1} += c * L.stride[{1}][d];\n", indent, q);
        s += fmt::format("{}}}\n", indent);
        std::vector<std::string> rd, wr;
        int q = 0;
        for (auto& a : reads_) rd.push_back(fmt::format("{}[p{}]", a.name, q++));
        for (std::size_t w = 0; w < writes_.size(); ++w) wr.push_back(fmt::format("v_{}", w));
        s += fmt::format("{}f = jx_compute({});\n", indent, call_args(rd, wr));
        return s;
    };
    auto value_decls = [&](const std::string& indent) {
        std::string s;
        for (std::size_t w = 0; w < writes_.size(); ++w)
            s += fmt::format("{}{} v_{}{{}};\n", indent, store_type(writes_[w].dtype), w);
        return s;
    };
    std::string s = "// compaction: per-block counts, their total, then an order-preserving scatter\n";
    s += layout_struct(D, R);
    s += "__device__ __forceinline__ long long jx_block_sum_ll(long long v) {\n";
    s += "    __shared__ long long sh[32];\n";
    s += "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
    s += "#pragma unroll\n";
    s += "    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);\n";
    s += "    __syncthreads();\n";
    s += "    if (lane == 0) sh[warp] = v;\n";
    s += "    __syncthreads();\n";
    s += "    v = 0;\n";
    s += "    if (threadIdx.x == 0)\n";
    s += "        for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) v += sh[w];\n";
    s += "    return v;  // valid in thread 0\n";
    s += "}\n\n";
    // jx_count
    s += fmt::format("extern \"C\" __global__ void {} jx_count({}) {{\n", launch_bounds(), params);
    s += "    long long* counts = static_cast<long long*>(ws);\n";
    s += fmt::format("    unsigned* ticket = reinterpret_cast<unsigned*>(counts + {});\n", kCompactMaxBlocks + 1);
    s += "    const long long chunk = (n + gridDim.x - 1) / gridDim.x;\n";
    s += "    const long long begin = static_cast<long long>(blockIdx.x) * chunk;\n";
    s += "    const long long end = begin + chunk < n ? begin + chunk : n;\n";
    s += "    long long selected = 0;\n";
    s += "    for (long long t = begin; t < end; t += blockDim.x) {\n";
    s += "        const long long i = t + threadIdx.x;\n";
    s += "        bool f = false;\n";
    s += "        if (i < end) {\n";
    s += value_decls("            ");
    s += element("            ");
    s += "        }\n";
    s += "        selected += __syncthreads_count(f);\n";
    s += "    }\n";
    s += "    __shared__ bool last;\n";
    s += "    if (threadIdx.x == 0) {\n";
    s += "        counts[blockIdx.x] = selected;\n";
    s += "        __threadfence();\n";
    s += "        last = atomicAdd(ticket, 1u) == gridDim.x - 1u;\n";
    s += "    }\n";
    s += "    __syncthreads();\n";
    s += "    if (!last) return;\n";
    s += "    __threadfence();\n";
    s += "    long long total = 0;\n";
    s += "    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += jx_ldcg(counts + b);\n";
    s += "    total = jx_block_sum_ll(total);\n";
    s += "    if (threadIdx.x == 0) {\n";
    s += fmt::format("        counts[{}] = total;\n", kCompactMaxBlocks);
    s += "        *ticket = 0u;\n";
    s += "    }\n}\n\n";
    // jx_scatter
    s += fmt::format("extern \"C\" __global__ void {} jx_scatter({}) {{\n", launch_bounds(), params);
    s += "    const long long* counts = static_cast<const long long*>(ws);\n";
    s += "    const long long chunk = (n + gridDim.x - 1) / gridDim.x;\n";
    s += "    const long long begin = static_cast<long long>(blockIdx.x) * chunk;\n";
    s += "    const long long end = begin + chunk < n ? begin + chunk : n;\n";
    s += "    __shared__ long long base;\n";
    s += "    __shared__ int warp_count[32];\n";
    s += "    long long before = 0;\n";
    s += "    for (unsigned b = threadIdx.x; b < blockIdx.x; b += blockDim.x) before += counts[b];\n";
    s += "    before = jx_block_sum_ll(before);\n";
    s += "    if (threadIdx.x == 0) base = before;\n";
    s += "    __syncthreads();\n";
    s += "    long long at = base;\n";
    s += "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
    s += "    const int warps = (int)((blockDim.x + 31) >> 5);\n";
    s += "    for (long long t = begin; t < end; t += blockDim.x) {\n";
    s += "        const long long i = t + threadIdx.x;\n";
    s += "        bool f = false;\n";
    s += value_decls("        ");
    s += "        if (i < end) {\n";
    s += element("            ");
    s += "        }\n";
    s += "        const unsigned ballot = __ballot_sync(0xffffffffu, f);\n";
    s += "        if (lane == 0) warp_count[warp] = __popc(ballot);\n";
    s += "        __syncthreads();\n";
    s += "        int mine = __popc(ballot & ((1u << lane) - 1u)), tile = 0;\n";
    s += "        for (int w = 0; w < warps; ++w) {\n";
    s += "            const int cw = warp_count[w];\n";
    s += "            if (w < warp) mine += cw;\n";
    s += "            tile += cw;\n";
    s += "        }\n";
    s += "        if (f) {\n";
    for (std::size_t w = 0; w < writes_.size(); ++w)
        s += fmt::format("            {}[at + mine] = v_{};\n", writes_[w].name, w);
    s += "        }\n";
    s += "        at += tile;\n";
    s += "        __syncthreads();\n";
    s += "    }\n}\n";
    k.entries.push_back("jx_count");
    k.entries.push_back("jx_scatter");
    return s;
}

}  // namespace jit::codegen::emitter

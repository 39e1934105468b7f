// jitexpr — Select kernels: the order statistics (OrderStat nodes: median, percentile, quantile
// and their nan* forms; see codegen/codegen.hpp and dsl/ir.hpp's OrderStatDecl).
//
// One block per row of the reduced axes (a grid-stride loop over rows). The row's elements are
// the stage's expression at each position of the reduced axes, computed where they are read; the
// kernel reads the row once to count its NaNs, then once per radix pass for each rank it needs:
// each pass histograms one byte of the ordered keys (jx::sel::key, NumPy's sort order) of the
// elements whose higher bytes match the prefix found so far, and thread 0 walks the 256 bins to
// the bin holding the rank. The element of that rank is exact (the same as the CPU backend's
// nth_element), and jx::sel::median / jx::sel::lerp compute the result from it as the CPU does.
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>

#include <string>

namespace jit::codegen::emitter {

std::string ReduceEmitter::select_kernel(KernelSource& k) {
    const ir::Node& r = p_.node(st_.reduce);
    if (r.slot < 0 || static_cast<std::size_t>(r.slot) >= p_.order_stats.size())
        internal("an order statistic without its description");
    const ir::OrderStatDecl& d = p_.order_stats[static_cast<std::size_t>(r.slot)];
    const DType od = p_.node(r.args[0]).dtype;
    const int D = static_cast<int>(st_.shape.size());
    const int R = static_cast<int>(reads_.size());
    if (writes_.size() != 1) internal("a select stage writes one buffer");
    if (D < 32 && (d.axes >> D) != 0) internal("order statistic axes out of range");
    const int H = od == DType::Float16 ? 1 : od == DType::BFloat16 ? 2 : 0;
    k.launch.ndim = D;
    k.launch.layout_rows = R;
    k.launch.select_axes = d.axes;
    add_array_params(k, true);
    for (auto& p : k.params)
        if (p.written) p.layout_row = -1;  // a C-contiguous temporary, written by flat index
    push_param(k, Param::Kind::Layout);

    const std::string T = reg_type(od), RT = reg_type(r.dtype);
    std::string s = "// order statistics: one block per row of the reduced axes, a radix select per rank\n";
    s += layout_struct(D, R);
    s += fmt::format("extern \"C\" __global__ void {} jx_kernel({}const jx_layout L) {{\n", launch_bounds(),
                     array_params(false));
    s += fmt::format("    using T = {};\n    using RT = {};\n", T, RT);
    s += "    typedef unsigned long long K;\n";
    s += fmt::format("    constexpr int H = {};\n", H);
    s += fmt::format("    constexpr unsigned AXES = 0x{:x}u;\n", d.axes);
    s += "    constexpr int W = jx::sel::key_words<T>::value;\n";
    s += "    constexpr int KB = jx::sel::key_bits<T>::value;\n";
    s += fmt::format("    constexpr bool SKIP_NAN = {};\n", d.skip_nan ? "true" : "false");
    std::string qs;
    for (std::size_t i = 0; i < d.q.size(); ++i)
        qs += fmt::format("{}{}", i ? ", " : "", cuda_literal(ir::Value::of_float(d.q[i]), DType::Float64));
    if (!d.median) s += fmt::format("    const double Q[{}] = {{{}}};\n", d.q.size(), qs);
    s += "    __shared__ K hist[256];\n";
    s += "    __shared__ K s_prefix[2];\n";
    s += "    __shared__ long long s_rank;\n";
    s += "    __shared__ unsigned long long s_nans;\n";
    if (is_complex(od)) s += "    __shared__ T s_top;\n";
    s += "    long long rows = 1, len = 1;\n";
    s += "#pragma unroll\n";
    s += fmt::format("    for (int d = 0; d < {}; ++d) {{\n", D);
    s += "        if ((AXES >> d) & 1u) len *= L.shape[d];\n";
    s += "        else rows *= L.shape[d];\n";
    s += "    }\n";
    s += "    const int tid = threadIdx.x, nt = blockDim.x;\n";
    s += "    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n";
    for (int q = 0; q < R; ++q) s += fmt::format("        long long p{} = 0;\n", q);
    s += "        {\n            long long rest = row;\n";
    s += "#pragma unroll\n";
    s += fmt::format("            for (int d = {}; d >= 0; --d) {{\n", D - 1);
    s += "                if ((AXES >> d) & 1u) continue;\n";
    s += "                const long long c = rest % L.shape[d];\n";
    s += "                rest /= L.shape[d];\n";
    for (int q = 0; q < R; ++q) s += fmt::format("                p{0} += c * L.stride[{0}][d];\n", q);
    s += "            }\n        }\n";
    // The j-th element of the row (C order over the reduced axes).
    s += "        auto at = [&](long long j) -> T {\n";
    for (int q = 0; q < R; ++q) s += fmt::format("            long long o{0} = p{0};\n", q);
    s += "            long long rest = j;\n";
    s += "#pragma unroll\n";
    s += fmt::format("            for (int d = {}; d >= 0; --d) {{\n", D - 1);
    s += "                if (!((AXES >> d) & 1u)) continue;\n";
    s += "                const long long c = rest % L.shape[d];\n";
    s += "                rest /= L.shape[d];\n";
    for (int q = 0; q < R; ++q) s += fmt::format("                o{0} += c * L.stride[{0}][d];\n", q);
    s += "            }\n";
    std::vector<std::string> rd;
    for (int q = 0; q < R; ++q) rd.push_back(fmt::format("{}[o{}]", reads_[static_cast<std::size_t>(q)].name, q));
    s += fmt::format("            return jx_compute({});\n", call_args(rd, {}));
    s += "        };\n";
    // NaNs of the row (and, for a complex row with one, NumPy's last element in sorted order).
    s += "        if (tid == 0) s_nans = 0ull;\n";
    s += "        __syncthreads();\n";
    s += "        {\n";
    s += "            unsigned long long mine = 0;\n";
    s += "            for (long long j = tid; j < len; j += nt) mine += jx::sel::isnan(at(j)) ? 1ull : 0ull;\n";
    s += "            if (mine) atomicAdd(&s_nans, mine);\n";
    s += "        }\n";
    s += "        __syncthreads();\n";
    s += "        const long long nans = (long long)s_nans;\n";
    s += "        const long long n = SKIP_NAN ? len - nans : len;\n";
    s += "        const bool nan_row = !SKIP_NAN && nans > 0;\n";
    if (is_complex(od)) {
        s += "        if (nan_row) {\n";
        s += "            if (tid == 0) {\n";
        s += "                T top = at(0);\n";
        s += "                for (long long j = 1; j < len; ++j) {\n";
        s += "                    const T v = at(j);\n";
        s += "                    if (jx::sel::sort_less(top, v)) top = v;\n";
        s += "                }\n";
        s += "                s_top = top;\n";
        s += "            }\n";
        s += "            __syncthreads();\n";
        s += "        }\n";
    }
    // The element of rank k among the row's elements without NaN (every thread of the block).
    s += "        auto select = [&](long long k) -> T {\n";
    s += "            K prefix[2] = {0ull, 0ull}, mask[2] = {0ull, 0ull};\n";
    s += "#pragma unroll\n";
    s += "            for (int w = 0; w < W; ++w) {\n";
    s += "                for (int shift = KB - 8; shift >= 0; shift -= 8) {\n";
    s += "                    for (int b = tid; b < 256; b += nt) hist[b] = 0ull;\n";
    s += "                    __syncthreads();\n";
    s += "                    for (long long j = tid; j < len; j += nt) {\n";
    s += "                        const T v = at(j);\n";
    s += "                        if (jx::sel::isnan(v)) continue;\n";
    s += "                        bool match = true;\n";
    s += "#pragma unroll\n";
    s += "                        for (int u = 0; u < W; ++u)\n";
    s += "                            match = match && (jx::sel::key_word(v, u) & mask[u]) == prefix[u];\n";
    s += "                        if (match) atomicAdd(&hist[(jx::sel::key_word(v, w) >> shift) & 255ull], 1ull);\n";
    s += "                    }\n";
    s += "                    __syncthreads();\n";
    s += "                    if (tid == 0) {\n";
    s += "                        long long below = 0;\n";
    s += "                        int b = 0;\n";
    s += "                        while (b < 255 && below + (long long)hist[b] <= k) below += (long long)hist[b++];\n";
    s += "                        s_rank = k - below;\n";
    s += "                        s_prefix[0] = w == 0 ? (prefix[0] | ((K)b << shift)) : prefix[0];\n";
    s += "                        s_prefix[1] = w == 1 ? (prefix[1] | ((K)b << shift)) : prefix[1];\n";
    s += "                    }\n";
    s += "                    __syncthreads();\n";
    s += "                    k = s_rank;\n";
    s += "                    prefix[0] = s_prefix[0];\n";
    s += "                    prefix[1] = s_prefix[1];\n";
    s += "                    mask[w] |= 255ull << shift;\n";
    s += "                    __syncthreads();\n";
    s += "                }\n";
    s += "            }\n";
    s += "            return jx::sel::decode_key<T>(prefix[0], prefix[1]);\n";
    s += "        };\n";
    s += fmt::format("        for (int qi = 0; qi < {}; ++qi) {{\n", d.q.size());
    if (is_inexact(r.dtype)) s += "            RT r = len == 0 ? jx::sel::nan_of<RT>() : jx::sel::all_nan_of<RT>();\n";
    else s += "            RT r = RT();\n";  // an integer take: every row has its elements
    if (is_complex(od)) s += "            if (nan_row) r = s_top;\n";
    s += "            if (!nan_row && n > 0) {\n";
    if (d.take) {
        s += "                r = select(Q[qi] == 0.0 ? 0 : n - 1);\n";
    } else if (d.median) {
        s += "                const long long k = (n - 1) / 2;\n";
        s += "                const bool one = n % 2 == 1;\n";
        s += "                const T a = select(k);\n";
        s += "                const T c = one ? a : select(k + 1);\n";
        s += "                r = jx::sel::median<RT, H>(a, c, one);\n";
    } else {
        if (is_complex(od) || od == DType::Bool || !is_inexact(r.dtype))
            internal("a quantile of complex or bool values");
        s += "                const jx::sel::Ranks rk = jx::sel::ranks(n, Q[qi]);\n";
        s += "                const T a = select(rk.lo);\n";
        s += "                const T c = rk.hi == rk.lo ? a : select(rk.hi);\n";
        s += "                r = jx::sel::lerp<RT, H>(a, c, rk.t);\n";
    }
    s += "            }\n";
    s += fmt::format("            if (tid == 0) {}[qi * rows + row] = {};\n", writes_.at(0).name,
                     store_conv(r.dtype, "r"));
    s += "        }\n";
    s += "        __syncthreads();\n";
    s += "    }\n}\n";
    k.entries.push_back("jx_kernel");
    return s;
}

}  // namespace jit::codegen::emitter

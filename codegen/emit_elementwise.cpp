// jitexpr — element-wise kernels: Flat, Strided and Tiled (see codegen/stage_emitter.hpp).
#include "codegen/stage_emitter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace jit::codegen::emitter {

void ElementwiseEmitter::choose_kind() {
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

std::string ElementwiseEmitter::kernel(KernelSource& k) {
    switch (kind_) {
        case KernelKind::Flat: return flat_kernel(k);
        case KernelKind::Strided: return strided_kernel(k);
        case KernelKind::Tiled: return tiled_kernel(k);
        default: internal("an element-wise stage with a reduction kernel kind");
    }
}

std::string ElementwiseEmitter::flat_kernel(KernelSource& k) {
    const Shape& T = st_.shape;
    std::size_t widest = 1;
    for (auto& a : reads_) {
        a.broadcast = shape_size(a.shape) == 1 && shape_size(T) != 1;
        if (!a.broadcast) widest = std::max(widest, itemsize(a.dtype));
    }
    for (auto& w : writes_) widest = std::max(widest, itemsize(w.dtype));
    const int vec = static_cast<int>(16 / widest) >= 2 && !compute_bound() && !opt_.scalar_only && !reads_strings()
                        ? static_cast<int>(16 / widest)
                        : 1;
    k.launch.vec = vec;
    add_params(k, false, Param::Kind::Count);

    // One entry point with a run-time choice of the vector path, so NVRTC compiles the body
    // once for the vectors and once for the scalars. The launch gives every vector (and every
    // element of the scalar tail) a thread of its own. Where the launch's indices all fit in
    // 32 bits (2^30 elements and more are rare), the kernel is written with 32-bit indices
    // and no loop: the 64-bit grid-stride form spends more instructions on every element's
    // index, which shows in a kernel whose body is heavy.
    // The choice depends on the element count only through that bound, so kernels are still
    // shared between shapes.
    const std::int64_t count = shape_size(T);
    const bool index32 = 2 * (count + opt_.block) <= std::numeric_limits<std::int32_t>::max();
    k.launch.index_bits = index32 ? 32 : 64;
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
            if (a.broadcast) {
                rd.push_back("x_" + a.name);
                continue;
            }
            s += fmt::format(
                "            const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} + k * "
                "{1});\n",
                store_type(a.dtype), vec, a.name);
            rd.push_back(fmt::format("x_{}.v[e]", a.name));
        }
        s += vector_compute("            ", vec, rd, [&](int) { return fmt::format("k * {}", vec); });
        if (index32) s += "            return;\n";
        s += "        }\n";
        // 32-bit: the threads past the vectors take the tail's elements, one each.
        s += index32 ? fmt::format("        tail = nvec * {} - nvec;\n", vec)
                     : fmt::format("        tail = nvec * {};\n", vec);
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
            // unrolling it would add much to NVRTC's time for a small expression and gain nothing.
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
bool StageEmitter::compute_bound() const {
    std::size_t ops = 0;
    for (const ir::NodeId n : p_.ids())
        if (needed_[n] && (p_.node(n).kind == ir::NodeKind::Op || p_.node(n).kind == ir::NodeKind::Cast)) ++ops;
    return ops > kVectorOpLimit;
}

// How an array moves along the last axis of the iteration space (see InnerClass).
InnerClass ElementwiseEmitter::inner_class_of(const Shape& shape, const Strides& strides, bool may_tile) const {
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
// Larger tiles keep more loads in flight per thread; 8- and 16-byte elements use the
// smaller edge to stay within the shared memory budget.
void ElementwiseEmitter::classify_inner() {
    auto stored_bytes = [](DType t) {
        return itemsize(t == DType::Float16 || t == DType::BFloat16 ? DType::UInt16 : t);
    };
    std::size_t widest = 0;
    for (auto& a : reads_) {
        // (a string array is read through its accessor, never staged through shared memory)
        a.inner = inner_class_of(a.shape, a.strides, !opt_.force_strided && !is_string(a.dtype));
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

bool StageEmitter::reads_strings() const {
    return std::any_of(reads_.begin(), reads_.end(), [](const ReadArray& a) { return is_string(a.dtype); });
}

bool ElementwiseEmitter::any_inner(InnerClass c) const {
    for (auto& a : reads_)
        if (a.inner == c) return true;
    for (auto& w : writes_)
        if (w.inner == c) return true;
    return false;
}

// Element expressions for the scalar (one element per call) form of the strided kernels:
// `pos` is the last-axis coordinate, p<r> the row offset, t<r> the last-axis stride.
std::string ElementwiseEmitter::strided_ref(const std::string& name, InnerClass c, int r,
                                            const std::string& pos) const {
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
std::string ElementwiseEmitter::row_offsets(int last, const std::string& indent) const {
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
std::string ElementwiseEmitter::index_entries(KernelSource& k, const std::string& body, const std::string& bounds,
                                              const std::string& tail_params, const std::string& tail_args) {
    std::string args;
    for (auto& a : reads_) args += a.name + ", ";
    for (auto& w : writes_) args += w.name + ", ";
    for (auto sc : scalars_) args += fmt::format("s{}, ", sc);
    for (auto t : texts_) args += fmt::format("t{}, ", t);
    args += tail_args;
    std::string s;
    const char* suffix[2] = {"_i64", "_i32"};
    const char* index[2] = {"long long", "int"};
    for (int e = 0; e < 2; ++e) {
        const std::string name = body + suffix[e];
        s += fmt::format("extern \"C\" __global__ void {} {}({}const jx_layout L{}) {{ {}<{}>({}); }}\n", bounds, name,
                         array_params(false), tail_params, body, index[e], args);
        k.entries.push_back(name);
    }
    return s;
}

// Rows of the last axis: each row's offsets are computed once and the last axis is walked by
// the threads of x; arrays contiguous along it (Unit) are read and written with vectors when
// the launch finds them aligned, arrays broadcast along it (Zero) are read once per row.
std::string ElementwiseEmitter::strided_kernel(KernelSource& k) {
    const int D = static_cast<int>(st_.shape.size());
    const int R = static_cast<int>(reads_.size() + writes_.size());
    k.launch.ndim = D;
    k.launch.layout_rows = R;
    std::size_t widest = 0;
    for (auto& a : reads_)
        if (a.inner == InnerClass::Unit) widest = std::max(widest, itemsize(a.dtype));
    for (auto& w : writes_) widest = std::max(widest, itemsize(w.dtype));
    const bool can_vector = !any_inner(InnerClass::General) && widest > 0 && 16 / widest >= 2 && !compute_bound() &&
                            !opt_.scalar_only && !reads_strings();
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
    s +=
        "    const I cfirst = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);\n";
    s += "    const I cstep = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n";
    s += "    for (I row = static_cast<I>(blockIdx.y) * static_cast<I>(blockDim.y) + static_cast<I>(threadIdx.y); row "
         "< rows;\n";
    s += "         row += static_cast<I>(gridDim.y) * static_cast<I>(blockDim.y)) {\n";
    s += "        I rest = row;\n";
    s += row_offsets(D - 1, "        ");
    int r = 0;
    for (auto& a : reads_) {
        if (a.inner == InnerClass::Zero)
            s += fmt::format("        const {} x_{} = {}[p{}];\n", store_type(a.dtype), a.name, a.name, r);
        if (a.inner == InnerClass::General)
            s += fmt::format("        const I t{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 1);
        ++r;
    }
    for (auto& w : writes_) {
        if (w.inner == InnerClass::General)
            s += fmt::format("        const I t{0} = static_cast<I>(L.stride[{0}][{1}]);\n", r, D - 1);
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
                s += fmt::format(
                    "                const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} + "
                    "p{3} + k * {1});\n",
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
// Vector tiles when every tiled input and every output has one element size: each
// access moves 16 bytes (a 64x64 float tile is loaded and stored as float4), which keeps
// more bytes in flight per thread; the launch checks alignment and falls back per call.
// Load the tiles: lanes run along the input's contiguous axis (the tile's rows).
// Compute: lanes run along the last axis (the output's contiguous axis).
std::string ElementwiseEmitter::tiled_kernel(KernelSource& k) {
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
    const int vec =
        uniform && size >= 2 && size <= 8 && !compute_bound() && !opt_.scalar_only ? static_cast<int>(16 / size) : 1;
    k.launch.vec = vec;
    add_params(k, true, Param::Kind::Layout);
    const std::string vparam = vec > 1 ? ", const int vectors" : "";
    const int rows_per_pass = kTileThreads / tile_;

    std::string s = fmt::format(
        "// tiled: {0}x{0} tiles of the last two axes; inputs contiguous along the second-last axis pass through "
        "shared memory\n",
        tile_);
    s += layout_struct(D, R);
    s += fmt::format("template <class I>\n__device__ __forceinline__ void jx_tiles({}const jx_layout& L{}) {{\n",
                     array_params(false), vparam);
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
    for (auto& w : writes_) {
        wr.push_back(fmt::format("{0}[p{1} + rr * u{1} + cc * t{1}]", w.name, r));
        ++r;
    }
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
std::string ElementwiseEmitter::vector_compute(const std::string& ind, int vec, const std::vector<std::string>& rd,
                                               At&& at) {
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
std::string ElementwiseEmitter::vector_tiles(int vec) {
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
            s += fmt::format(
                "                        const jx_vec<{0}, {1}> x_{2} = *reinterpret_cast<const jx_vec<{0}, {1}>*>({2} "
                "+ p{3} + lr + lc * t{3});\n",
                store_type(a.dtype), vec, a.name, r);
            s += "#pragma unroll\n";
            s += fmt::format(
                "                        for (int e = 0; e < {0}; ++e) sh_{1}[j][vl * {0} + e] = x_{1}.v[e];\n", vec,
                a.name);
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
    s += vector_compute("                        ", vec, rd, [&](int) {
        const int w = r++;
        return fmt::format("p{0} + rr * u{0} + cc", w);
    });
    s += "                    }\n                }\n            }\n";
    s += "            __syncthreads();\n";
    s += "            continue;\n";
    s += "        }\n";
    return s;
}

}  // namespace jit::codegen::emitter

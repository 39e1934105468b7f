// jitexpr — launching the kernels of a prepared CUDA program (see launch.hpp).
#include "backend/cuda/launch.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace jit::cuda {

using codegen::KernelKind;
using codegen::KernelSource;
using codegen::Param;

// True when an array of `shape`/`strides` is laid out C-contiguously (axes of extent 1 ignored).
bool c_contiguous(const Shape& shape, const Strides& strides) {
    if (shape_size(shape) <= 1) return true;
    if (strides.size() != shape.size()) return false;
    std::int64_t expect = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (shape[d] == 1) continue;
        if (strides[d] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

bool same_layout(const Shape& shape, const Strides& a, const Strides& b) {
    if (a.size() != shape.size() || b.size() != shape.size()) return false;
    if (shape_size(shape) == 0) return true;  // no element is read: strides do not matter
    for (std::size_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1 && a[d] != b[d]) return false;
    return true;
}

bool same_layout_as_declared(const Shape& shape, const Strides& a, const Strides& declared) {
    if (declared.size() == shape.size()) return same_layout(shape, a, declared);
    if (a.size() != shape.size()) return false;
    if (shape_size(shape) == 0) return true;
    std::int64_t expect = 1;  // C-contiguous, compared without making the strides
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (shape[d] != 1 && a[d] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

namespace {

// Bytes of a scalar parameter (the register type of its dtype) from a host value.
std::size_t pack_scalar(const ir::Value& v, DType t, unsigned char* out) {
    auto as_double = [&]() -> double {
        if (is_bool(v.dtype)) return v.b ? 1.0 : 0.0;
        if (is_signed_int(v.dtype)) return static_cast<double>(v.i);
        if (is_unsigned_int(v.dtype)) return static_cast<double>(v.u);
        return v.f;
    };
    auto as_bits = [&]() -> std::uint64_t {
        if (is_bool(v.dtype)) return v.b ? 1 : 0;
        if (is_signed_int(v.dtype)) return static_cast<std::uint64_t>(v.i);
        if (is_unsigned_int(v.dtype)) return v.u;
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(v.f));
    };
    switch (t) {
        case DType::Bool: {
            bool b = is_bool(v.dtype) ? v.b : (as_double() != 0.0 || v.im != 0.0);
            std::memcpy(out, &b, 1);
            return 1;
        }
        case DType::Int8:
        case DType::UInt8:
        case DType::Int16:
        case DType::UInt16:
        case DType::Int32:
        case DType::UInt32:
        case DType::Int64:
        case DType::UInt64: {
            std::uint64_t bits = as_bits();  // little-endian: the low bytes are the narrower value
            std::memcpy(out, &bits, itemsize(t));
            return itemsize(t);
        }
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32: {
            float f = static_cast<float>(as_double());
            std::memcpy(out, &f, 4);
            return 4;
        }
        case DType::Float64: {
            double d = as_double();
            std::memcpy(out, &d, 8);
            return 8;
        }
        case DType::Complex64: {
            float c[2] = {static_cast<float>(as_double()), static_cast<float>(is_complex(v.dtype) ? v.im : 0.0)};
            std::memcpy(out, c, 8);
            return 8;
        }
        case DType::Complex128: {
            double c[2] = {as_double(), is_complex(v.dtype) ? v.im : 0.0};
            std::memcpy(out, c, 16);
            return 16;
        }
            JIT_TEMPORAL_CASES break;  // lowered to int64 by dsl/lower/: never here
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;  // no host scalar is a string
    }
    return 0;
}

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Per-thread scratch for argument arrays: grows once, then no allocation on the launch path.
struct ArgScratch {
    std::vector<void*> argv;
    std::vector<std::array<unsigned char, 16>> values;  // pointers, scalars, counts
    std::vector<std::int64_t> layout;
};

}  // namespace

void* Launcher::array_pointer(const Param& p, const detail::RunArgs& args, const Workspace& ws) const {
    if (p.array.kind == codegen::ArrayRef::Kind::Input) return args.inputs[p.array.input()].data();
    std::int32_t o = schedule.output_of[p.array.node()];
    if (o >= 0) return args.outputs[static_cast<std::size_t>(o)].data();
    auto t = temp_offset.find(p.array.node());
    if (t == temp_offset.end())
        throw InternalError(
            fmt::format("cuda backend: node {} is stored but is neither an output nor a temporary", p.array.index));
    return static_cast<char*>(ws.base) + t->second;
}

void Launcher::write_row(const KernelSource& k, const Param& p, const detail::RunArgs& args, std::int64_t* row) const {
    const int D = k.launch.ndim;
    std::int32_t o = schedule.output_of[p.array.node()];
    const ir::Node& n = program.node(p.array.node());
    // The output's own strides (no copy), or those of a C-contiguous temporary.
    Strides made;
    const Strides* given = o >= 0 ? &args.outputs[static_cast<std::size_t>(o)].strides() : nullptr;
    if (!given || given->size() != n.shape.size()) given = &(made = contiguous_strides(n.shape));
    const Strides& st = *given;
    if (k.launch.kind == KernelKind::ReduceAxis) {
        // The result's axes are the iteration space's without the reduced one, in order; a
        // result with keepdims (or folded from one) may hold other axes of extent 1, which carry
        // no stride: match the axes of extent above 1 on both sides.
        const Shape& it = schedule.stages[static_cast<std::size_t>(k.stage)].shape;
        std::size_t s = 0;
        for (int d = 0; d < D; ++d) {
            row[d] = 0;
            if (d == k.launch.axis || it[static_cast<std::size_t>(d)] == 1) continue;
            while (s < n.shape.size() && n.shape[s] == 1) ++s;
            if (s >= n.shape.size())
                throw InternalError("cuda backend: a reduction's result has fewer axes than its iteration space");
            row[d] = st[s++];
        }
    } else {
        for (int d = 0; d < D; ++d) row[d] = st[static_cast<std::size_t>(d)];
    }
}

void Launcher::pack_strings(const Param& p, const detail::RunArgs& args, void* ptr, unsigned char* slot) const {
    if (p.kind == Param::Kind::Text) {
        if (p.text < 0 || static_cast<std::size_t>(p.text) >= texts.size())
            throw InternalError(fmt::format("cuda backend: string constant {} is not on the device", p.text));
        const auto& [at, units] = texts[static_cast<std::size_t>(p.text)];
        std::memcpy(slot, &at, sizeof at);
        std::memcpy(slot + 8, &units, sizeof units);
        return;
    }
    if (p.array.kind != codegen::ArrayRef::Kind::Input)
        throw InternalError("cuda backend: a string array that is no input");
    const Array& a = args.inputs[p.array.input()];
    std::memcpy(slot, &ptr, sizeof ptr);
    if (p.dtype == DType::Utf8) {
        const void* chars = a.chars();
        std::memcpy(slot + 8, &chars, sizeof chars);
    } else {
        const long long width = static_cast<long long>(a.itemsize());
        std::memcpy(slot + 8, &width, sizeof width);
    }
}

void Launcher::launch_compact(const Loaded& l, const detail::RunArgs& args, const Workspace& ws) const {
    const KernelSource& k = *l.kernel;
    const ir::Stage& st = schedule.stages[static_cast<std::size_t>(k.stage)];
    const std::int64_t n = shape_size(st.shape);
    const unsigned block = static_cast<unsigned>(k.launch.block);
    if (!args.allocate) throw InternalError("cuda backend: a compaction without an output allocator");
    void* wsp = static_cast<char*>(ws.base) + l.workspace_offset;
    std::int64_t total = 0;
    const std::int64_t limit =
        std::min<std::int64_t>(k.launch.max_blocks, static_cast<std::int64_t>(sm_count) * (2048 / block));
    const unsigned grid = static_cast<unsigned>(std::clamp<std::int64_t>(div_up(n, block), 1, limit));
    // Parameters: outputs null until they exist (jx_count writes none).
    const std::size_t np = k.params.size();
    std::vector<std::array<unsigned char, 16>> values(np);
    std::vector<void*> argv(np);
    std::vector<std::int64_t> layout(l.layout.begin(), l.layout.end());
    auto pack = [&] {
        for (std::size_t i = 0; i < np; ++i) {
            const Param& p = k.params[i];
            unsigned char* slot = values[i].data();
            switch (p.kind) {
                case Param::Kind::Array: {
                    void* ptr = nullptr;
                    if (!p.written) {
                        ptr = array_pointer(p, args, ws);
                    } else {
                        const Array& a = args.outputs[static_cast<std::size_t>(schedule.output_of[p.array.node()])];
                        ptr = a.defined() ? a.data() : nullptr;
                    }
                    if (is_string(p.dtype)) pack_strings(p, args, ptr, slot);
                    else std::memcpy(slot, &ptr, sizeof ptr);
                    break;
                }
                case Param::Kind::Scalar:
                    pack_scalar(args.scalars[static_cast<std::size_t>(p.scalar)], p.dtype, slot);
                    break;
                case Param::Kind::Text: pack_strings(p, args, nullptr, slot); break;
                case Param::Kind::Count: {
                    long long c = n;
                    std::memcpy(slot, &c, sizeof c);
                    break;
                }
                case Param::Kind::Workspace: std::memcpy(slot, &wsp, sizeof wsp); break;
                case Param::Kind::Layout:
                case Param::Kind::VectorFlag: break;
                case Param::Kind::Phase:
                case Param::Kind::OutStride: throw InternalError("cuda backend: a compaction with a scan's parameter");
            }
            argv[i] = p.kind == Param::Kind::Layout ? static_cast<void*>(layout.data()) : static_cast<void*>(slot);
        }
    };
    LaunchConfig cfg;
    cfg.stream = args.stream;
    cfg.block[0] = block;
    cfg.grid[0] = grid;
    if (n > 0) {
        pack();
        cuda::launch(l.fn[codegen::kCompactCount], cfg, argv.data());
        cuda::copy_to_host(&total, static_cast<char*>(wsp) + static_cast<std::size_t>(k.launch.max_blocks) * 8,
                           sizeof total, args.stream);
        cuda::synchronize(args.stream);
    }
    // Each true mask row counted n / capacity times (once where the rows hold no element: see
    // dsl/lower/masks.cpp's compact; nothing is scattered then).
    bool any_element = false;
    for (const ir::NodeId node : st.stores) {
        const std::int32_t o = schedule.output_of[node];
        Shape shape = program.node(node).shape;
        const std::int64_t per_row = shape[0] > 0 ? n / shape[0] : 0;
        shape[0] = per_row == 0 ? 0 : total / per_row;
        any_element = any_element || shape_size(shape) > 0;
        args.outputs[static_cast<std::size_t>(o)] = args.allocate->allocate(static_cast<std::size_t>(o), shape);
        if (args.started_outputs) args.started_outputs[o] = true;
    }
    if (total == 0 || !any_element) return;
    pack();
    cuda::launch(l.fn[codegen::kCompactScatter], cfg, argv.data());
}

void Launcher::launch(const Loaded& l, const detail::RunArgs& args, const Workspace& ws) const {
    const KernelSource& k = *l.kernel;
    if (k.launch.kind == KernelKind::Compact) {
        launch_compact(l, args, ws);
        return;
    }
    const ir::Stage& st = schedule.stages[static_cast<std::size_t>(k.stage)];
    const std::int64_t n = shape_size(st.shape);
    const unsigned block = static_cast<unsigned>(k.launch.block);
    const std::int64_t cap = static_cast<std::int64_t>(sm_count) * (2048 / block) * 64;

    thread_local ArgScratch scratch;
    const std::size_t np = k.params.size();
    if (scratch.argv.size() < np) scratch.argv.resize(np);
    if (scratch.values.size() < np) scratch.values.resize(np);
    if (!l.layout.empty()) scratch.layout.assign(l.layout.begin(), l.layout.end());

    bool aligned = k.launch.vec > 1;
    unsigned char* flag_slot = nullptr;   // the VectorFlag argument, set once the layout is known
    unsigned char* phase_slot = nullptr;  // ScanAll's Phase argument, set before each of its launches
    for (std::size_t i = 0; i < np; ++i) {
        const Param& p = k.params[i];
        unsigned char* slot = scratch.values[i].data();
        switch (p.kind) {
            case Param::Kind::Array: {
                void* ptr = array_pointer(p, args, ws);
                if (p.vectorized) {
                    auto need = static_cast<std::uintptr_t>(k.launch.vec) * itemsize(p.dtype);
                    if (reinterpret_cast<std::uintptr_t>(ptr) % need != 0) aligned = false;
                }
                if (p.written && p.layout_row >= 0)
                    write_row(k, p, args, scratch.layout.data() + k.launch.ndim * (1 + p.layout_row));
                if (p.written && args.started_outputs && p.array.kind == codegen::ArrayRef::Kind::Node) {
                    const std::int32_t o = schedule.output_of[p.array.node()];
                    if (o >= 0) args.started_outputs[o] = true;
                }
                if (is_string(p.dtype)) pack_strings(p, args, ptr, slot);
                else std::memcpy(slot, &ptr, sizeof ptr);
                break;
            }
            case Param::Kind::Scalar:
                pack_scalar(args.scalars[static_cast<std::size_t>(p.scalar)], p.dtype, slot);
                break;
            case Param::Kind::Text: pack_strings(p, args, nullptr, slot); break;
            case Param::Kind::Count: {
                long long c = n;
                std::memcpy(slot, &c, sizeof c);
                break;
            }
            case Param::Kind::Workspace: {
                void* ptr = static_cast<char*>(ws.base) + l.workspace_offset;
                std::memcpy(slot, &ptr, sizeof ptr);
                break;
            }
            case Param::Kind::Layout: break;
            case Param::Kind::VectorFlag: flag_slot = slot; break;
            case Param::Kind::Phase: phase_slot = slot; break;
            case Param::Kind::OutStride: {
                // The 1-d result's stride: the output array's, or 1 (a temporary is contiguous).
                long long os = 1;
                for (const Param& w : k.params)
                    if (w.kind == Param::Kind::Array && w.written) {
                        const std::int32_t o = schedule.output_of[w.array.node()];
                        if (o >= 0) {
                            const Array& a = args.outputs[static_cast<std::size_t>(o)];
                            if (a.strides().size() == 1) os = a.strides()[0];
                        }
                    }
                std::memcpy(slot, &os, sizeof os);
                break;
            }
        }
        scratch.argv[i] =
            p.kind == Param::Kind::Layout ? static_cast<void*>(scratch.layout.data()) : static_cast<void*>(slot);
    }

    LaunchConfig cfg;
    cfg.stream = args.stream;
    cfg.block[0] = block;
    void* fn = l.fn[0];
    switch (k.launch.kind) {
        case KernelKind::Flat: {
            if (n == 0) return;
            const std::int64_t vec = aligned ? k.launch.vec : 1;
            // A thread per vector and one per element of the scalar tail, as the hand-written
            // reference kernel: the 64-bit form's loop only covers grids past the 2^31 - 1
            // block limit, and the 32-bit form (up to 2^30 elements) has none.
            const std::int64_t threads = aligned ? n / vec + n % vec : n;
            const std::int64_t grid = std::clamp<std::int64_t>(div_up(threads, block), 1, 0x7fffffff);
            set_flag(flag_slot, aligned);
            cfg.grid[0] = static_cast<unsigned>(grid);
            break;
        }
        case KernelKind::Strided: {
            if (n == 0) return;
            const int D = k.launch.ndim;
            const std::int64_t inner = st.shape.back();
            const std::int64_t rows = n / inner;
            const std::int64_t vec = k.launch.vec;
            bool vector = vec > 1 && aligned && inner % vec == 0;
            for (std::size_t i = 0; vector && i < np; ++i) {
                const Param& p = k.params[i];
                if (!p.vectorized || p.layout_row < 0) continue;
                const std::int64_t* row = scratch.layout.data() + D * (1 + p.layout_row);
                for (int d = 0; d + 1 < D; ++d) vector = vector && row[d] % vec == 0;
            }
            const std::int64_t units = vector ? inner / vec : inner;
            const unsigned bx = static_cast<unsigned>(std::min<std::int64_t>(block, div_up(units, 32) * 32));
            const unsigned by = block / bx;
            // Four units per thread and row, so that a row's offsets are paid for once. (Two
            // vectors a thread were 1% slower on the column+row broadcast to 16384 x 16384 on an
            // H100: 3206 GB/s against 3237, medians of five interleaved rounds, one vector 3184.)
            const std::int64_t gx = std::clamp<std::int64_t>(div_up(units, std::int64_t{bx} * 4), 1,
                                                             std::min<std::int64_t>(cap, 0x7fffffff));
            const std::int64_t gy = std::clamp<std::int64_t>(
                div_up(rows, by), 1, std::max<std::int64_t>(1, std::min<std::int64_t>(65535, cap / gx)));
            cfg.block[0] = bx;
            cfg.block[1] = by;
            cfg.grid[0] = static_cast<unsigned>(gx);
            cfg.grid[1] = static_cast<unsigned>(gy);
            const bool idx32 = fits_int32(k, scratch.layout.data(), n + gx * bx + gy * by);
            fn = l.fn[idx32 ? codegen::kIndex32 : codegen::kIndex64];
            set_flag(flag_slot, vector);
            break;
        }
        case KernelKind::Tiled: {
            if (n == 0) return;
            const int D = k.launch.ndim;
            const std::int64_t nr = st.shape[static_cast<std::size_t>(D - 2)], nc = st.shape.back();
            const std::int64_t edge = k.launch.tile;
            const std::int64_t tiles = n / (nr * nc) * div_up(nr, edge) * div_up(nc, edge);
            const std::int64_t grid = std::clamp<std::int64_t>(tiles, 1, std::min<std::int64_t>(cap, 0x7fffffff));
            cfg.grid[0] = static_cast<unsigned>(grid);
            const bool idx32 = fits_int32(k, scratch.layout.data(), n + 2 * edge * (nr + nc) + tiles + grid);
            fn = l.fn[idx32 ? codegen::kIndex32 : codegen::kIndex64];
            // Vector tiles: aligned pointers, both tile axes a multiple of the width, each
            // vectorized array of stride 1 along its contiguous axis (the tile's rows for
            // inputs, its columns for outputs) and every other stride a multiple of the width.
            const std::int64_t vec = k.launch.vec;
            bool vector = vec > 1 && aligned && nr % vec == 0 && nc % vec == 0;
            for (std::size_t i = 0; vector && i < np; ++i) {
                const Param& p = k.params[i];
                if (!p.vectorized || p.layout_row < 0) continue;
                const std::int64_t* row = scratch.layout.data() + D * (1 + p.layout_row);
                const int unit = p.written ? D - 1 : D - 2;
                for (int d = 0; d < D; ++d) vector = vector && (d == unit ? row[d] == 1 : row[d] % vec == 0);
            }
            set_flag(flag_slot, vector);
            break;
        }
        case KernelKind::ReduceAll: {
            const std::int64_t limit =
                std::min<std::int64_t>(k.launch.max_blocks, static_cast<std::int64_t>(sm_count) * (2048 / block));
            cfg.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(div_up(n, block), 1, limit));
            // Vector loads only where every vectorized pointer is aligned to its width; the
            // argument slot is reused across launches, so it is written on every call.
            set_flag(flag_slot, aligned);
            break;
        }
        case KernelKind::Compact: throw InternalError("cuda backend: a compaction launched as one kernel");
        case KernelKind::ScanAll: {
            if (n == 0) return;
            // The grid, and so each block's chunk, depends only on n and the device: the same
            // association of a float scan on every run.
            const std::int64_t limit =
                std::min<std::int64_t>(k.launch.max_blocks, static_cast<std::int64_t>(sm_count) * (2048 / block));
            cfg.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(div_up(n, block), 1, limit));
            if (!phase_slot) throw InternalError("cuda backend: a scan kernel without its phase parameter");
            const int first = 0, second = 1;
            std::memcpy(phase_slot, &first, sizeof first);
            cuda::launch(fn, cfg, scratch.argv.data());  // chunk totals and their prefixes
            std::memcpy(phase_slot, &second, sizeof second);
            break;  // then the scan itself
        }
        case KernelKind::ScanAxis: {
            if (n == 0) return;
            const std::int64_t len = st.shape[static_cast<std::size_t>(k.launch.axis)];
            const std::int64_t rows = n / len;
            const std::int64_t units = k.launch.block_per_row ? rows : div_up(rows, block);
            cfg.grid[0] =
                static_cast<unsigned>(std::clamp<std::int64_t>(units, 1, std::min<std::int64_t>(cap, 0x7fffffff)));
            break;
        }
        case KernelKind::Select: {
            // One block per row of the reduced axes (grid-stride past the cap).
            std::int64_t rows = 1;
            for (std::size_t d = 0; d < st.shape.size(); ++d)
                if (!((k.launch.select_axes >> d) & 1u)) rows *= st.shape[d];
            if (rows == 0) return;
            cfg.grid[0] =
                static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, std::min<std::int64_t>(cap, 0x7fffffff)));
            break;
        }
        case KernelKind::ReduceAxis: {
            const std::int64_t len = st.shape[static_cast<std::size_t>(k.launch.axis)];
            const std::int64_t outputs = len == 0 ? shape_size(program.node(st.reduce).shape) : n / len;
            if (outputs == 0) return;
            const std::int64_t threads = k.launch.warp_per_output ? outputs * 32 : outputs;
            cfg.grid[0] = static_cast<unsigned>(
                std::clamp<std::int64_t>(div_up(threads, block), 1, std::min<std::int64_t>(cap, 0x7fffffff)));
            break;
        }
    }
    cuda::launch(fn, cfg, scratch.argv.data());
}

void Launcher::set_flag(unsigned char* slot, bool on) {
    if (!slot) return;
    const int v = on ? 1 : 0;
    std::memcpy(slot, &v, sizeof v);
}

bool Launcher::fits_int32(const KernelSource& k, const std::int64_t* layout, std::int64_t counts) {
    constexpr std::int64_t limit = std::int64_t{1} << 31;
    if (counts >= limit) return false;
    const int D = k.launch.ndim;
    for (int r = 0; r < k.launch.layout_rows; ++r) {
        std::int64_t reach = 0;
        for (int d = 0; d < D; ++d) {
            const std::int64_t extent = layout[d];
            const std::int64_t stride = layout[D * (1 + r) + d];
            if (extent <= 1) continue;
            const std::int64_t step = stride < 0 ? -stride : stride;
            if (step >= limit || (extent - 1) > (limit - 1) / std::max<std::int64_t>(step, 1)) return false;
            reach += (extent - 1) * step;
            if (reach >= limit) return false;
        }
    }
    return true;
}

}  // namespace jit::cuda

// jitexpr — the chunk plan of a streamed evaluation (see stream_plan.hpp).
#include "backend/cuda/stream_plan.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

namespace jit::cuda::stream {

std::string_view combine_name(Combine c) {
    switch (c) {
        case Combine::Sum: return "sum";
        case Combine::Prod: return "prod";
        case Combine::Min: return "min";
        case Combine::Max: return "max";
        case Combine::Mean: return "mean";
        case Combine::Any: return "any";
        case Combine::All: return "all";
    }
    return "?";
}

namespace {

bool combine_of(ir::Op op, Combine& c) {
    switch (op) {
        case ir::Op::Sum: c = Combine::Sum; return true;
        case ir::Op::Prod: c = Combine::Prod; return true;
        case ir::Op::ReduceMin: c = Combine::Min; return true;
        case ir::Op::ReduceMax: c = Combine::Max; return true;
        case ir::Op::Mean: c = Combine::Mean; return true;
        case ir::Op::Any: c = Combine::Any; return true;
        case ir::Op::All: c = Combine::All; return true;
        default: return false;
    }
}

ChunkPlan refuse(ChunkPlan p, std::string why) {
    p.streamable = false;
    p.why_not = std::move(why);
    return p;
}

// Whether input shape `in` (right-aligned against `s`) has S's full extent (1), is broadcast (2),
// or neither (0) on the leading `k` axes of `s`.
int role_on(const Shape& in, const Shape& s, int k) {
    const int off = static_cast<int>(s.size()) - static_cast<int>(in.size());
    bool full = true, broadcast = true;
    for (int j = 0; j < k; ++j) {
        const std::int64_t e = j < off ? 1 : in[static_cast<std::size_t>(j - off)];
        const std::int64_t se = s[static_cast<std::size_t>(j)];
        if (!(j >= off && e == se)) full = false;
        if (e != 1) broadcast = false;
    }
    if (full && !broadcast) return 1;
    if (broadcast) return 2;
    return 0;
}

bool overlaps(const Request::Range& a, const Request::Range& b) {
    if (a.begin == a.end || b.begin == b.end) return false;
    return a.begin < b.end && b.begin < a.end;
}

}  // namespace

std::int64_t ChunkPlan::chunk_begin(std::size_t c) const {
    // Balanced: the first (rows % chunks) chunks have one row more.
    const std::int64_t n = static_cast<std::int64_t>(chunks);
    const std::int64_t base = rows / n, extra = rows % n, ci = static_cast<std::int64_t>(c);
    return ci * base + std::min(ci, extra);
}

std::int64_t ChunkPlan::chunk_rows(std::size_t c) const {
    const std::int64_t n = static_cast<std::int64_t>(chunks);
    const std::int64_t base = rows / n, extra = rows % n;
    return base + (static_cast<std::int64_t>(c) < extra ? 1 : 0);
}

Shape ChunkPlan::chunk_shape(std::int64_t r) const {
    Shape out{r};
    for (std::size_t j = static_cast<std::size_t>(split); j < shape.size(); ++j) out.push_back(shape[j]);
    return out;
}

Shape ChunkPlan::input_chunk_shape(std::size_t i, std::int64_t r) const {
    if (!inputs[i].chunked) return inputs[i].device_shape;
    Shape out{r};
    out.insert(out.end(), inputs[i].row_shape.begin(), inputs[i].row_shape.end());
    return out;
}

ChunkPlan plan_stream(const Request& r) {
    ChunkPlan p;
    const ir::Program& prog = *r.program;
    if (prog.outputs.empty()) return refuse(std::move(p), "the program has no output");
    if (prog.has_compactions())
        return refuse(std::move(p), "a boolean-mask selection's length is known only once all of its data is read");
    if (!prog.checks.empty())
        return refuse(std::move(p), "a reduction of a boolean-mask selection is checked once all of its data is read");

    // S: the shape of the element-wise outputs and of what the reductions read.
    bool have_shape = false;
    auto take_shape = [&](const Shape& s) {
        if (!have_shape) {
            p.shape = s;
            have_shape = true;
            return true;
        }
        return p.shape == s;
    };
    // Nodes that are reductions, and whether any node reads one.
    ir::NodeMap<std::uint8_t> is_output_root(prog.nodes.size(), 0);
    for (const auto& od : prog.outputs) is_output_root[od.node] = 1;
    for (ir::NodeId n : prog.ids()) {
        const ir::Node& node = prog.node(n);
        for (int a = 0; a < node.nargs; ++a) {
            const ir::Node& arg = prog.node(node.args[a]);
            if (arg.kind == ir::NodeKind::Reduce)
                return refuse(std::move(p),
                              "a reduction's value is used in further arithmetic (it needs every chunk first)");
        }
        if (node.kind == ir::NodeKind::Scan)
            return refuse(std::move(p), "a scan (cumsum, cumprod) is not streamed (each chunk needs the ones before)");
        if (node.kind == ir::NodeKind::Reduce) {
            if (node.axis >= 0) return refuse(std::move(p), "a reduction along one axis is not streamed");
            if (ir::info(node.op).rule == ir::Rule::ArgFirst)
                return refuse(std::move(p), "a positional reduction (argmin, argmax) is not streamed");
            if (!is_output_root[n])
                return refuse(std::move(p), "a reduction that is not a statement's value is not streamed");
        }
    }
    for (const auto& od : prog.outputs) {
        const ir::Node& node = prog.node(od.node);
        if (node.kind == ir::NodeKind::Reduce) {
            if (!take_shape(prog.node(node.args[0]).shape))
                return refuse(std::move(p), "the program's outputs and reductions are of different shapes");
        } else if (!take_shape(node.shape)) {
            return refuse(std::move(p), "the program's outputs are of different shapes");
        }
    }
    if (p.shape.empty()) return refuse(std::move(p), "the program computes a single element");
    if (shape_size(p.shape) == 0) return refuse(std::move(p), "the program computes no element");

    // The split: as many leading axes as every input allows (each full or broadcast on them),
    // but no more than needed to make a row small (collapsing more axes only shrinks rows).
    const int nd = static_cast<int>(p.shape.size());
    int split = 0;
    for (int k = 1; k <= nd; ++k) {
        bool ok = true;
        for (const auto& in : prog.inputs)
            if (role_on(in.shape, p.shape, k) == 0) ok = false;
        if (!ok) break;
        split = k;
        // Stop once a row is below a tenth of a chunk (the rest of the axes stay inside rows).
        std::int64_t row_elems = 1;
        for (int j = k; j < nd; ++j) row_elems *= p.shape[static_cast<std::size_t>(j)];
        std::size_t row_bytes_all = 0;
        for (const auto& od : prog.outputs) row_bytes_all += itemsize(prog.node(od.node).dtype);
        for (const auto& in : prog.inputs) row_bytes_all += itemsize(in.dtype);
        const std::size_t target = r.target_chunk_bytes ? r.target_chunk_bytes : kDefaultChunkBytes;
        if (static_cast<std::size_t>(row_elems) * row_bytes_all <= target / 10) break;
    }
    if (split == 0)
        return refuse(std::move(p), "an input is broadcast along the outer axis on one part and not on another");
    p.split = split;
    p.rows = 1;
    for (int j = 0; j < split; ++j) p.rows *= p.shape[static_cast<std::size_t>(j)];
    std::int64_t row_elems = 1;
    for (int j = split; j < nd; ++j) row_elems *= p.shape[static_cast<std::size_t>(j)];

    // Inputs.
    std::vector<bool> read(prog.inputs.size(), false);
    for (const ir::Node& node : prog.nodes)
        if (node.kind == ir::NodeKind::Input && node.slot >= 0) read[static_cast<std::size_t>(node.slot)] = true;
    std::size_t row_bytes = 0;
    for (std::size_t i = 0; i < prog.inputs.size(); ++i) {
        const ir::InputDecl& in = prog.inputs[i];
        if (i < r.input_contiguous.size() && !r.input_contiguous[i])
            return refuse(std::move(p), fmt::format("input '{}' is not C-contiguous", in.name));
        // Chunks re-bind each name to rows of its array, which a slice of it does not follow.
        if (in.view) return refuse(std::move(p), fmt::format("the program reads a slice of '{}'", in.name));
        InputPlan ip;
        ip.read = read[i];
        ip.chunked = role_on(in.shape, p.shape, split) == 1;
        if (ip.chunked) {
            ip.row_shape.assign(in.shape.begin() + split, in.shape.end());
            ip.row_bytes = static_cast<std::size_t>(shape_size(ip.row_shape)) * itemsize(in.dtype);
            row_bytes += ip.row_bytes;
        } else {
            ip.bytes = static_cast<std::size_t>(shape_size(in.shape)) * itemsize(in.dtype);
            p.resident_bytes += ip.bytes;
            // Its axes within the split collapse to one axis of extent 1 (when it has any).
            const int off = nd - static_cast<int>(in.shape.size());
            if (off >= split) {
                ip.device_shape = in.shape;
            } else {
                ip.device_shape = {1};
                for (std::size_t j = static_cast<std::size_t>(split - off); j < in.shape.size(); ++j)
                    ip.device_shape.push_back(in.shape[j]);
            }
        }
        p.inputs.push_back(std::move(ip));
    }

    // Outputs.
    std::size_t partial_bytes = 0;
    for (const auto& od : prog.outputs) {
        const ir::Node& node = prog.node(od.node);
        OutputPlan op;
        op.dtype = node.dtype;
        op.alias_input = od.alias_input;
        if (node.kind == ir::NodeKind::Reduce) {
            op.reduction = true;
            if (!combine_of(node.op, op.combine))
                return refuse(std::move(p), fmt::format("the reduction {} is not streamed", ir::spelling(node.op)));
            if (!combinable(op.combine, node.dtype))
                return refuse(std::move(p), fmt::format("a {} of {} is not streamed", combine_name(op.combine),
                                                        dtype_name(node.dtype)));
            partial_bytes += itemsize(node.dtype);
        } else {
            op.row_bytes = static_cast<std::size_t>(row_elems) * itemsize(node.dtype);
            row_bytes += op.row_bytes;
        }
        if (od.alias_input >= 0) {
            const auto a = static_cast<std::size_t>(od.alias_input);
            bool clear = p.inputs[a].chunked && !r.outputs_through_temporaries;
            const Request::Range mine = a < r.input_memory.size() ? r.input_memory[a] : Request::Range{};
            for (std::size_t j = 0; j < prog.inputs.size() && clear; ++j) {
                if (j == a || j >= r.input_memory.size()) continue;
                const Request::Range other = r.input_memory[j];
                // The same memory seen as the same array reads the same rows: still safe.
                const bool same = other.begin == mine.begin && other.end == mine.end &&
                                  prog.inputs[j].shape == prog.inputs[a].shape &&
                                  prog.inputs[j].dtype == prog.inputs[a].dtype;
                if (overlaps(mine, other) && !same) clear = false;
            }
            op.direct = clear;
        }
        p.outputs.push_back(std::move(op));
    }

    // Chunk size within the budget: resident inputs + slots * chunk + slots * partials, with a
    // sixteenth of the budget left for the kernels' own workspace.
    const std::size_t budget = r.device_budget - r.device_budget / 16;
    const std::size_t target = r.target_chunk_bytes ? r.target_chunk_bytes : kDefaultChunkBytes;
    int buffers = std::clamp(r.buffers, 2, 3);
    std::int64_t rows_per_chunk = 0;
    for (; buffers >= 2; --buffers) {
        const std::size_t fixed = p.resident_bytes + static_cast<std::size_t>(buffers) * partial_bytes;
        if (fixed >= budget || row_bytes == 0) {
            if (row_bytes == 0 && fixed < budget) rows_per_chunk = p.rows;
            if (rows_per_chunk) break;
            continue;
        }
        // The target is a preference (rows longer than it still make one-row chunks); the budget is
        // the bound.
        const std::size_t per_slot =
            std::min(std::max(target, row_bytes), (budget - fixed) / static_cast<std::size_t>(buffers));
        rows_per_chunk = static_cast<std::int64_t>(per_slot / row_bytes);
        if (rows_per_chunk >= 1) break;
    }
    if (rows_per_chunk < 1) {
        buffers = 2;
        const std::size_t need = p.resident_bytes + 2 * (row_bytes + partial_bytes);
        return refuse(std::move(p), fmt::format("one row of the program needs {} bytes of device memory and the limit "
                                                "allows {} (resident inputs take {})",
                                                need, r.device_budget, p.resident_bytes));
    }
    rows_per_chunk = std::min(rows_per_chunk, p.rows);
    p.chunks = static_cast<std::size_t>((p.rows + rows_per_chunk - 1) / rows_per_chunk);
    p.rows_per_chunk = (p.rows + static_cast<std::int64_t>(p.chunks) - 1) / static_cast<std::int64_t>(p.chunks);
    p.buffers = std::min<int>(buffers, static_cast<int>(std::max<std::size_t>(p.chunks, 1)));
    p.buffers = std::max(p.buffers, 1);
    p.chunk_bytes = static_cast<std::size_t>(p.rows_per_chunk) * row_bytes;
    p.device_bytes = p.resident_bytes + static_cast<std::size_t>(p.buffers) * (p.chunk_bytes + partial_bytes);
    p.streamable = true;
    return p;
}

namespace {

template <class T>
void fold(Combine c, const T* v, std::size_t n, const std::int64_t* elems, T* out) {
    if constexpr (std::is_floating_point_v<T>) {
        double acc = 0;
        switch (c) {
            case Combine::Sum:
                for (std::size_t i = 0; i < n; ++i) acc += static_cast<double>(v[i]);
                break;
            case Combine::Prod:
                acc = 1;
                for (std::size_t i = 0; i < n; ++i) acc *= static_cast<double>(v[i]);
                break;
            case Combine::Min:
            case Combine::Max: {
                acc = static_cast<double>(v[0]);
                for (std::size_t i = 1; i < n; ++i) {
                    const double x = static_cast<double>(v[i]);
                    if (std::isnan(acc)) break;
                    if (std::isnan(x) || (c == Combine::Min ? x < acc : x > acc)) acc = x;
                }
                break;
            }
            case Combine::Mean: {
                double total = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    acc += static_cast<double>(v[i]) * static_cast<double>(elems[i]);
                    total += static_cast<double>(elems[i]);
                }
                acc = total > 0 ? acc / total : std::numeric_limits<double>::quiet_NaN();
                break;
            }
            default: throw InternalError("combine_partials: any/all of a float");
        }
        *out = static_cast<T>(acc);
    } else if constexpr (std::is_same_v<T, bool>) {
        const bool conj = c == Combine::All || c == Combine::Min;  // min of bools is all, max is any
        bool acc = conj;
        for (std::size_t i = 0; i < n; ++i) acc = conj ? (acc && v[i]) : (acc || v[i]);
        *out = acc;
    } else {
        using U = std::make_unsigned_t<T>;
        switch (c) {
            case Combine::Sum: {  // wraps, as the kernels' integer arithmetic
                U acc = 0;
                for (std::size_t i = 0; i < n; ++i) acc = static_cast<U>(acc + static_cast<U>(v[i]));
                *out = static_cast<T>(acc);
                return;
            }
            case Combine::Prod: {
                U acc = 1;
                for (std::size_t i = 0; i < n; ++i) acc = static_cast<U>(acc * static_cast<U>(v[i]));
                *out = static_cast<T>(acc);
                return;
            }
            case Combine::Min:
            case Combine::Max: {
                T acc = v[0];
                for (std::size_t i = 1; i < n; ++i) acc = c == Combine::Min ? std::min(acc, v[i]) : std::max(acc, v[i]);
                *out = acc;
                return;
            }
            default: throw InternalError("combine_partials: a mean or any/all of integers");
        }
    }
}

}  // namespace

bool combinable(Combine c, DType t) {
    switch (t) {
        case DType::Bool: return c != Combine::Sum && c != Combine::Prod && c != Combine::Mean;
        case DType::Float32:
        case DType::Float64: return c != Combine::Any && c != Combine::All;
        case DType::Int8:
        case DType::Int16:
        case DType::Int32:
        case DType::Int64:
        case DType::UInt8:
        case DType::UInt16:
        case DType::UInt32:
        case DType::UInt64: return c == Combine::Sum || c == Combine::Prod || c == Combine::Min || c == Combine::Max;
        default: return false;
    }
}

void combine_partials(Combine c, DType t, const void* partials, std::size_t n, const std::int64_t* elems, void* out) {
    if (!combinable(c, t))
        throw InternalError(fmt::format("combine_partials: {} of {}", combine_name(c), dtype_name(t)));
    if (n == 0) throw InternalError("combine_partials: no partial");
#define JITEXPR_FOLD(D, T)                              \
    case DType::D: {                                    \
        std::vector<T> v(n);                            \
        std::memcpy(v.data(), partials, n * sizeof(T)); \
        T r{};                                          \
        fold<T>(c, v.data(), n, elems, &r);             \
        std::memcpy(out, &r, sizeof(T));                \
        return;                                         \
    }
    switch (t) {
        JITEXPR_FOLD(Int8, std::int8_t)
        JITEXPR_FOLD(Int16, std::int16_t)
        JITEXPR_FOLD(Int32, std::int32_t)
        JITEXPR_FOLD(Int64, std::int64_t)
        JITEXPR_FOLD(UInt8, std::uint8_t)
        JITEXPR_FOLD(UInt16, std::uint16_t)
        JITEXPR_FOLD(UInt32, std::uint32_t)
        JITEXPR_FOLD(UInt64, std::uint64_t)
        JITEXPR_FOLD(Float32, float)
        JITEXPR_FOLD(Float64, double)
        case DType::Bool: {
            const auto* b = static_cast<const unsigned char*>(partials);
            std::unique_ptr<bool[]> arr(new bool[n]);
            for (std::size_t i = 0; i < n; ++i) arr[i] = b[i] != 0;
            bool r = false;
            fold<bool>(c, arr.get(), n, elems, &r);
            const unsigned char byte = r ? 1 : 0;
            std::memcpy(out, &byte, 1);
            return;
        }
        default: break;
    }
#undef JITEXPR_FOLD
    throw InternalError("combine_partials: unhandled dtype");
}

}  // namespace jit::cuda::stream

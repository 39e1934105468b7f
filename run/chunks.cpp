// jitexpr — the chunk plan of a streamed evaluation (see chunks.hpp).
#include "run/chunks.hpp"

#include "dsl/rows.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace jit::run::chunks {

namespace {

ChunkPlan refuse(ChunkPlan p, std::string why) {
    p.streamable = false;
    p.why_not = std::move(why);
    return p;
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
    const std::size_t target = r.target_chunk_bytes ? r.target_chunk_bytes : kDefaultChunkBytes;
    // Axes collapse into rows until a row is below a tenth of a chunk.
    const dsl::RowSplit rows = dsl::split_rows(prog, target / 10);
    if (!rows.why_not.empty()) return refuse(std::move(p), rows.why_not);
    p.shape = rows.shape;
    p.split = rows.split;
    p.rows = rows.rows;
    const int nd = static_cast<int>(p.shape.size());
    const int split = p.split;

    // Inputs.
    std::size_t row_bytes = 0;
    for (std::size_t i = 0; i < prog.inputs.size(); ++i) {
        const ir::InputDecl& in = prog.inputs[i];
        if (i < r.input_contiguous.size() && !r.input_contiguous[i])
            return refuse(std::move(p), fmt::format("input '{}' is not C-contiguous", in.name));
        const dsl::InputRows& ir = rows.inputs[i];
        if (!ir.why.empty()) return refuse(std::move(p), ir.why);
        InputPlan ip;
        ip.read = ir.read;
        ip.chunked = ir.chunked;
        if (ip.chunked) {
            ip.row_shape = ir.row_shape;
            ip.row_bytes = ir.row_bytes;
            row_bytes += ip.row_bytes;
        } else {
            ip.bytes =
                static_cast<std::size_t>(shape_size(in.shape)) * (in.itemsize ? in.itemsize : itemsize(in.dtype));
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
        const dsl::OutputRows& orow = rows.outputs[static_cast<std::size_t>(&od - prog.outputs.data())];
        OutputPlan op;
        op.dtype = orow.dtype;
        op.alias_input = od.alias_input;
        if (orow.how == dsl::OutputRows::How::Refused) return refuse(std::move(p), orow.why);
        if (orow.how == dsl::OutputRows::How::Combine) {
            op.reduction = true;
            op.op = orow.reduction;
            // A chunk's partial is stored in the result's dtype, which a 16-bit float or complex
            // kernel does not accumulate in.
            if (is_half(orow.dtype) || is_complex(orow.dtype))
                return refuse(std::move(p), fmt::format("a {} of {} is not streamed", ir::spelling(orow.reduction),
                                                        dtype_name(orow.dtype)));
            partial_bytes += itemsize(orow.dtype);
        } else {
            op.row_bytes = orow.row_bytes;
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

}  // namespace jit::run::chunks

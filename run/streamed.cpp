// jitexpr — host arrays through the GPU in chunks (see ways.hpp): the chunk programs, the
// transport's specification, the partials of reductions combined in chunk order.
#include "run/ways.hpp"

#include "backend/cpu/combine.hpp"
#include "backend/cuda/stream.hpp"
#include "core/device.hpp"

#include <boost/container/small_vector.hpp>

#include <chrono>
#include <memory>

namespace jit::run {

Environment chunk_environment(const ir::Program& p, const chunks::ChunkPlan& cp, std::int64_t rows,
                              const Environment& env) {
    Environment chunk_env;
    for (const ir::ScalarDecl& sd : p.scalars) chunk_env.insert_or_assign(sd.name, env.find(sd.name)->second);
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        chunk_env.insert_or_assign(
            p.inputs[i].name,
            Arg(core::prototype(p.inputs[i].temporal.value_or(p.inputs[i].dtype), cp.input_chunk_shape(i, rows),
                                Backend::Cuda, is_string(p.inputs[i].dtype) ? p.inputs[i].itemsize : 0)));
    return chunk_env;
}

std::optional<Array> streamed(const Decision& d, const Entry& host, Programs& programs, Environment& env,
                              const Call& call) {
    using Clock = std::chrono::steady_clock;
    const ir::Program& p = host.plan.program;
    const chunks::ChunkPlan& cp = d.chunks;
    std::vector<Array> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        inputs[i] = bound_input(p.inputs[i], env.find(p.inputs[i].name)->second.array());

    const auto t_run = Clock::now();
    boost::container::small_vector<ir::Value, 4> scalars(p.scalars.size());
    bind_scalars(p, env, std::span<ir::Value>(scalars.data(), scalars.size()));
    // The chunk programs: the same text over chunk-shaped device arrays, at most two shapes
    // (balanced chunks differ by at most one row), each asked for once here and prepared once
    // by the runtime's entry cache, which keys it by its shapes: a call of many chunks plans the
    // text once per shape, never per chunk, and a repeated call not at all. One plan re-bound to
    // both shapes cannot be had: a prepared program runs only over the shapes it was planned
    // for (the CUDA executor checks them), and dsl::plan's choices (index width, kernel kind)
    // depend on the extents.
    auto chunk_entry = [&](std::int64_t rows) -> std::shared_ptr<const Entry> {
        auto e = programs.entry(chunk_environment(p, cp, rows, env), /*timed=*/false);
        const ir::Program& q = e->plan.program;
        bool same = q.inputs.size() == p.inputs.size() && q.outputs.size() == p.outputs.size() &&
                    q.scalars.size() == p.scalars.size();
        for (std::size_t i = 0; same && i < p.inputs.size(); ++i) same = q.inputs[i].name == p.inputs[i].name;
        for (std::size_t o = 0; same && o < p.outputs.size(); ++o)
            same = q.outputs[o].name == p.outputs[o].name &&
                   q.node(q.outputs[o].node).dtype == p.node(p.outputs[o].node).dtype;
        return same ? e : nullptr;
    };
    const std::int64_t small_rows = cp.chunk_rows(cp.chunks - 1);
    const std::shared_ptr<const Entry> e_full = chunk_entry(cp.rows_per_chunk);
    const std::shared_ptr<const Entry> e_small = small_rows == cp.rows_per_chunk ? e_full : chunk_entry(small_rows);
    if (!e_full || !e_small) return std::nullopt;  // its chunks make a different program

    // Outputs on the host: in place where the plan allows, else fresh (copied in at the end).
    std::vector<Array> outputs(p.outputs.size());
    std::vector<std::size_t> copy_back;
    std::vector<std::vector<unsigned char>> partials(p.outputs.size());
    cuda::StreamSpec spec;
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        spec.inputs.push_back(
            {inputs[i].data(), cp.inputs[i].chunked, cp.inputs[i].row_bytes, cp.inputs[i].bytes, cp.inputs[i].read});
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const chunks::OutputPlan& op = cp.outputs[o];
        if (op.alias_input >= 0 && op.direct) {
            outputs[o] = inputs[static_cast<std::size_t>(op.alias_input)];
        } else {
            outputs[o] = core::with_storage(host.output_shapes[o], core::host_storage(host.output_shapes[o].nbytes()));
            if (op.alias_input >= 0) copy_back.push_back(o);
        }
        if (op.reduction) {
            partials[o].resize(cp.chunks * itemsize(op.dtype));
            spec.outputs.push_back({partials[o].data(), true, 0, itemsize(op.dtype)});
        } else {
            spec.outputs.push_back({outputs[o].data(), false, op.row_bytes, 0});
        }
    }
    spec.rows = cp.rows;
    spec.chunks = cp.chunks;
    spec.rows_per_chunk = cp.rows_per_chunk;
    spec.slots = cp.buffers;
    spec.chunk_begin = [&cp](std::size_t c) { return cp.chunk_begin(c); };
    spec.chunk_rows = [&cp](std::size_t c) { return cp.chunk_rows(c); };
    spec.launch = [&](std::size_t, std::int64_t rows, const std::vector<void*>& in, const std::vector<void*>& out,
                      void* st) {
        const Entry& ce = rows == cp.rows_per_chunk ? *e_full : *e_small;
        boost::container::small_vector<Array, 8> ins(p.inputs.size()), outs(p.outputs.size());
        for (std::size_t i = 0; i < p.inputs.size(); ++i) {
            Shape sh = cp.input_chunk_shape(i, rows);
            Strides str = contiguous_strides(sh);
            ins[i] = is_string(p.inputs[i].dtype)  // (an S or U chunk: rows of the array's width)
                         ? Array::view(in[i], p.inputs[i].dtype, p.inputs[i].itemsize, std::move(sh), std::move(str),
                                       Backend::Cuda)
                         : Array::view(in[i], p.inputs[i].dtype, std::move(sh), std::move(str), Backend::Cuda);
        }
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            Shape sh = cp.outputs[o].reduction ? Shape{} : cp.chunk_shape(rows);
            Strides str = contiguous_strides(sh);
            outs[o] = Array::view(out[o], cp.outputs[o].dtype, std::move(sh), std::move(str), Backend::Cuda);
        }
        detail::RunArgs ra;
        ra.inputs = std::span<const Array>(ins.data(), ins.size());
        ra.scalars = std::span<const ir::Value>(scalars.data(), scalars.size());
        ra.outputs = std::span<Array>(outs.data(), outs.size());
        ra.stream = st;
        ce.prepared->run(ra);
    };
    spec.control = call.control;
    std::unique_ptr<bool[]> started(new bool[p.outputs.size() + 1]());
    spec.started_outputs = started.get();
    try {
        (void)cuda::stream_run(spec);
    } catch (const CancelledError&) {
        std::vector<std::string> partly;
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            const ir::OutputDecl& od = p.outputs[o];
            if (od.alias_input >= 0 && cp.outputs[o].direct && started[o])
                partly.push_back(od.name.empty() ? p.inputs[static_cast<std::size_t>(od.alias_input)].name : od.name);
        }
        throw CancelledError(std::move(partly));
    }
    // Reductions: the partials folded in chunk order.
    const std::int64_t row_elems = shape_size(cp.shape) / cp.rows;
    std::vector<std::int64_t> elems(cp.chunks);
    for (std::size_t c = 0; c < cp.chunks; ++c) elems[c] = cp.chunk_rows(c) * row_elems;
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (cp.outputs[o].reduction)
            cpu::combine(cp.outputs[o].op, cp.outputs[o].dtype, partials[o].data(), cp.chunks, 1, elems.data(),
                         outputs[o].data());
    for (std::size_t o : copy_back) {
        const Array& target = inputs[static_cast<std::size_t>(p.outputs[o].alias_input)];
        core::copy(target, outputs[o]);
        outputs[o] = target;
    }
    label_outputs(p, std::span<Array>(outputs.data(), outputs.size()));
    if (call.run_ms) *call.run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
    if (call.write_back)
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (!p.outputs[o].name.empty()) env.insert_or_assign(p.outputs[o].name, Arg(outputs[o]));
    return host.plan.result_output >= 0 ? outputs[static_cast<std::size_t>(host.plan.result_output)] : Array();
}

}  // namespace jit::run

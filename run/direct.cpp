// jitexpr — a prepared program over the arrays as they are (see ways.hpp).
#include "run/ways.hpp"

#include "backend/cuda/cuda.hpp"
#include "core/device.hpp"
#include "dsl/scalars.hpp"

#include <fmt/format.h>

#include <boost/container/small_vector.hpp>

#include <chrono>
#include <complex>
#include <span>
#include <utility>
#include <vector>

namespace jit::run {

namespace {

using Clock = std::chrono::steady_clock;

// A new array shaped as `proto` (sharing its dimensions, so nothing is allocated for them), on
// fresh storage; on CUDA, storage first written by work on the legacy default stream (which
// may reuse a freed block without a driver call) when `default_stream`.
Array empty_like(const Array& proto, bool default_stream) {
    const std::size_t bytes = proto.nbytes();
    if (proto.backend() == Backend::Cuda)
        return core::with_storage(
            proto, default_stream ? cuda::make_storage_for_default_stream(bytes) : cuda::make_storage(bytes));
    return core::with_storage(proto, core::host_storage(bytes));
}

ir::Value scalar_value(const Arg& a) {
    const auto& v = a.value();
    switch (v.index()) {
        case 1: return ir::Value::of_bool(std::get<bool>(v));
        case 2: return ir::Value::of_int(std::get<std::int64_t>(v));
        case 3: return ir::Value::of_float(std::get<double>(v));
        default: return ir::Value::of_complex(std::get<std::complex<double>>(v));
    }
}

// The arrays of a program's outputs whose length the data decides (boolean-mask selections),
// made when the backend has counted: fresh storage of the runtime's backend.
class ResultAllocator final : public detail::OutputAllocator {
public:
    ResultAllocator(const std::vector<Array>& prototypes, bool default_stream)
        : prototypes_(prototypes), default_stream_(default_stream) {}
    Array allocate(std::size_t output, const Shape& shape) override {
        const Array& proto = prototypes_.at(output);
        try {
            return empty_like(core::prototype(proto.dtype(), shape, proto.backend()), default_stream_);
        } catch (const OutOfMemoryError& e) {
            // The backend puts the caret under the selection; the message says what it makes.
            throw OutOfMemoryError(e.requested(), e.available(),
                                   fmt::format("a selection's result, a {} array of shape {}",
                                               dtype_name(proto.dtype()), shape_to_string(shape)));
        }
    }

private:
    const std::vector<Array>& prototypes_;
    bool default_stream_;
};

// The conditions only the data decides (ir::RunCheck), once the program has run: min() of a
// selection that selected nothing is a ValueError pointing at the call. (Each is a 0-d Bool
// output, read as it is: no conversion, which api/array_convert.cpp would make.)
void enforce_checks(const ir::Program& p, std::span<const Array> outputs) {
    for (const ir::RunCheck& c : p.checks) {
        bool ok = false;
        outputs[static_cast<std::size_t>(c.output)].copy_to_host(&ok);
        if (!ok) throw ValueError(c.message, p.text, c.span);
    }
}

// The bytes [lo, hi) an array's elements reach; empty for an empty array or a string array
// (never written in place). Addresses are unique across host and devices (CUDA's unified
// addressing), so arrays of different places never overlap.
struct Reach {
    std::intptr_t lo = 0, hi = 0;
    bool empty() const { return lo == hi; }
};
inline __attribute__((always_inline)) Reach reach_of(const Array& x) {
    if (is_string(x.dtype())) return {};
    const Shape& shape = x.shape();
    const Strides& strides = x.strides();
    std::int64_t lo = 0, hi = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == 0) return {};
        (strides[k] < 0 ? lo : hi) += (shape[k] - 1) * strides[k];
    }
    const auto base = reinterpret_cast<std::intptr_t>(x.data());
    const auto item = static_cast<std::int64_t>(x.itemsize());
    return {base + lo * item, base + (hi + 1) * item};
}

// Whether `b` (reaching rb) reaches memory `a` (reaching ra) reaches other than as the very same
// view: an array bound under two names (`a = a + b` with b = a[::-1], or a[1:] and a[:-1]). The
// same view is safe: element i is read where it is written, as `a = a + a` reads it.
bool overlaps_otherwise(const Array& a, Reach ra, const Array& b, Reach rb) {
    if (ra.empty() || rb.empty() || ra.hi <= rb.lo || rb.hi <= ra.lo) return false;
    return !(ra.lo == rb.lo && a.shape() == b.shape() && a.strides() == b.strides() && a.itemsize() == b.itemsize());
}

// Whether a statement after the one that assigns output `o` reads input `slot` itself (not
// through a value computed before that assignment, which NumPy computed before the write too):
// from output `m`'s value, the nodes that `o`'s value does not reach and that were made after
// the first operation `o`'s value reaches (nodes are made in statement order).
bool read_after(const ir::Program& p, std::size_t o, std::size_t m, std::int32_t slot) {
    ir::NodeMap<std::uint8_t> before(p.nodes.size(), 0);
    std::vector<ir::NodeId> stack{p.outputs[o].node};
    ir::NodeId first(static_cast<std::int32_t>(p.nodes.size()));
    while (!stack.empty()) {
        const ir::NodeId n = stack.back();
        stack.pop_back();
        if (before[n]) continue;
        before[n] = 1;
        const ir::Node& nd = p.node(n);
        if (nd.kind != ir::NodeKind::Input && nd.kind != ir::NodeKind::Const && nd.kind != ir::NodeKind::Scalar)
            first = std::min(first, n);
        for (int k = 0; k < nd.nargs; ++k) stack.push_back(nd.args[k]);
    }
    const ir::Node& start = p.node(p.outputs[m].node);
    if (start.kind == ir::NodeKind::Input && start.slot == slot) return true;  // `...; b` read as it is
    ir::NodeMap<std::uint8_t> seen(p.nodes.size(), 0);
    stack.assign(1, p.outputs[m].node);
    while (!stack.empty()) {
        const ir::NodeId n = stack.back();
        stack.pop_back();
        if (seen[n] || before[n] || n < first) continue;
        seen[n] = 1;
        const ir::Node& nd = p.node(n);
        for (int k = 0; k < nd.nargs; ++k) {
            const ir::Node& arg = p.node(nd.args[k]);
            if (arg.kind == ir::NodeKind::Input && arg.slot == slot) return true;
            stack.push_back(nd.args[k]);
        }
    }
    return false;
}

// The outputs written into an input's memory that another input (under another name) reaches
// in another way: they are computed apart and copied in at the end, as NumPy computes an
// overlapping ufunc, unless a later statement reads that other input, which NumPy would read
// as the earlier statement left it: that is refused before anything runs (an output assigned
// twice is the last assignment, so a statement between the two is "later" only from the
// first operation its value reaches: conservative).
boost::container::small_vector<bool, 8> outputs_apart(const ir::Program& p, std::span<const Array* const> inputs) {
    boost::container::small_vector<bool, 8> apart(p.outputs.size(), false);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const std::int32_t alias = p.outputs[o].alias_input;
        if (alias < 0) continue;
        const auto a = static_cast<std::size_t>(alias);
        const Reach target = reach_of(*inputs[a]);
        if (target.empty()) continue;
        for (std::size_t j = 0; j < p.inputs.size(); ++j) {
            // The target's own views (a = a[::-1]) are the plan's to order.
            if (j == a || !overlaps_otherwise(*inputs[a], target, *inputs[j], reach_of(*inputs[j])) ||
                p.inputs[j].name == p.inputs[a].name)
                continue;
            apart[o] = true;
            for (std::size_t m = 0; m < p.outputs.size(); ++m)
                if (m != o && read_after(p, o, m, static_cast<std::int32_t>(j)))
                    throw ArgumentError(fmt::format(
                        "'{}' and '{}' share memory: the program writes '{}' in place and a later statement "
                        "reads '{}', which would see that write; bind a copy of '{}' or run the statements "
                        "one at a time",
                        p.inputs[a].name, p.inputs[j].name, p.inputs[a].name, p.inputs[j].name, p.inputs[j].name));
        }
    }
    return apart;
}

}  // namespace

std::shared_ptr<Entry> prepare(ir::Plan plan, detail::BackendImpl& backend, const detail::PrepareOptions& options) {
    auto e = std::make_shared<Entry>();
    e->plan = std::move(plan);
    e->backend = backend.kind();
    for (const ir::OutputDecl& od : e->plan.program.outputs) {
        const ir::Node& n = e->plan.program.node(od.node);
        e->output_shapes.push_back(core::prototype(n.dtype, n.shape, e->backend));
    }
    e->prepared = backend.prepare(e->plan, options);
    return e;
}

std::shared_ptr<Entry> host_plan(ir::Plan plan) {
    auto h = std::make_shared<Entry>();
    h->plan = std::move(plan);
    for (const ir::OutputDecl& od : h->plan.program.outputs) {
        const ir::Node& n = h->plan.program.node(od.node);
        h->output_shapes.push_back(core::prototype(n.dtype, n.shape, Backend::Cpu));
    }
    return h;
}

Array bound_input(const ir::InputDecl& d, const Array& a) {
    const Array v = d.view ? core::restrided(a, d.offset, d.shape, d.strides) : a;
    // A date or duration array: the int64 counts the program computes with.
    return d.temporal ? core::relabelled(v, d.dtype) : v;
}

void label_outputs(const ir::Program& p, std::span<Array> outputs) {
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (p.outputs[o].temporal && outputs[o].defined())
            outputs[o] = core::relabelled(outputs[o], *p.outputs[o].temporal);
}

void bind_scalars(const ir::Program& p, const Environment& env, std::span<ir::Value> scalars) {
    for (std::size_t s = 0; s < p.scalars.size(); ++s) scalars[s] = scalar_value(env.find(p.scalars[s].name)->second);
    dsl::check_scalars(p, scalars);
}

Array direct(const Entry& entry, Environment& env, const Call& call) {
    const ir::Program& p = entry.plan.program;
    boost::container::small_vector<const Arg*, 8> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i) inputs[i] = &env.find(p.inputs[i].name)->second;
    boost::container::small_vector<const Arg*, 4> scalars(p.scalars.size());
    for (std::size_t s = 0; s < p.scalars.size(); ++s) scalars[s] = &env.find(p.scalars[s].name)->second;
    return direct(entry, Slots{{inputs.data(), inputs.size()}, {scalars.data(), scalars.size()}}, call, &env);
}

Array direct(const Entry& entry, const Slots& slots, const Call& call, Environment* env) {
    const Entry* e = &entry;
    const ir::Program& p = e->plan.program;
    void* const stream = call.stream;
    const bool all_or_nothing = call.all_or_nothing;
    const auto t_run = call.run_ms ? Clock::now() : Clock::time_point();  // a hit reads no clock untimed
    // Small vectors: no heap allocation for programs of up to 8 inputs/outputs. An input read
    // as it is bound is passed where the caller holds it; a view of it (a[1:]) or its int64
    // counts (dates) are made here.
    boost::container::small_vector<Array, 8> made;
    made.reserve(p.inputs.size());  // no reallocation: `inputs` points into it
    boost::container::small_vector<const Array*, 8> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
        const ir::InputDecl& d = p.inputs[i];
        const Array& a = slots.inputs[i]->array();
        if (!d.view && !d.temporal) {
            inputs[i] = &a;
        } else {
            made.push_back(bound_input(d, a));
            inputs[i] = &made.back();
        }
    }
    boost::container::small_vector<ir::Value, 4> scalars(p.scalars.size());
    for (std::size_t s = 0; s < p.scalars.size(); ++s) scalars[s] = scalar_value(*slots.scalars[s]);
    dsl::check_scalars(p, std::span<ir::Value>(scalars.data(), scalars.size()));
    boost::container::small_vector<Array, 8> outputs(p.outputs.size());
    boost::container::small_vector<std::size_t, 4> copy_back;
    const boost::container::small_vector<bool, 8> apart =
        outputs_apart(p, std::span<const Array* const>(inputs.data(), inputs.size()));
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const ir::OutputDecl& od = p.outputs[o];
        if (p.is_dynamic(od.node)) continue;  // the backend has it made once it has counted
        if (od.alias_input >= 0 && e->plan.direct_alias[o] && !all_or_nothing && !apart[o]) {
            outputs[o] = *inputs[static_cast<std::size_t>(od.alias_input)];
        } else {
            try {
                outputs[o] = empty_like(e->output_shapes[o], stream == nullptr);
            } catch (const OutOfMemoryError& oom) {
                const Array& shape = e->output_shapes[o];
                throw detail::OutOfMemoryAt(
                    OutOfMemoryError(oom.requested(), oom.available(),
                                     fmt::format("{}a {} array of shape {}",
                                                 od.name.empty() ? "the value, " : fmt::format("'{}', ", od.name),
                                                 dtype_name(shape.dtype()), shape_to_string(shape.shape()))),
                    p.node(od.node).span);
            }
            if (od.alias_input >= 0) copy_back.push_back(o);
        }
    }
    detail::RunArgs ra;
    ra.inputs = detail::RunInputs::at(std::span<const Array* const>(inputs.data(), inputs.size()));
    ra.scalars = std::span<const ir::Value>(scalars.data(), scalars.size());
    ra.outputs = std::span<Array>(outputs.data(), outputs.size());
    ra.stream = stream;
    ra.control = call.control;
    ResultAllocator allocate(e->output_shapes, stream == nullptr);
    ra.allocate = &allocate;
    boost::container::small_vector<bool, 8> started(p.outputs.size(), false);
    ra.started_outputs = started.data();
    try {
        e->prepared->run(ra);
    } catch (const CancelledError&) {
        // New arrays are dropped with `outputs`; in-place targets written directly may be partial.
        std::vector<std::string> partly;
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            const ir::OutputDecl& od = p.outputs[o];
            if (od.alias_input >= 0 && e->plan.direct_alias[o] && !all_or_nothing && !apart[o] && started[o])
                partly.push_back(od.name.empty() ? p.inputs[static_cast<std::size_t>(od.alias_input)].name : od.name);
        }
        throw CancelledError(std::move(partly));
    }
    // Results that could not be written in place: copied into the arrays now, on the stream, by
    // the backend's copy (same dtype and shape; the target may be strided). The program is
    // complete, so these copies are not cancelled: an in-place write finishes or never starts.
    for (std::size_t o : copy_back) {
        const Array& target = *inputs[static_cast<std::size_t>(p.outputs[o].alias_input)];
        core::copy(target, outputs[o], stream);
        outputs[o] = target;
    }
    enforce_checks(p, std::span<const Array>(outputs.data(), outputs.size()));
    label_outputs(p, std::span<Array>(outputs.data(), outputs.size()));
    if (call.run_ms) {
        if (e->backend == Backend::Cuda) cuda::synchronize(stream);
        *call.run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
    }
    if (env && call.write_back)
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (!p.outputs[o].name.empty()) env->insert_or_assign(p.outputs[o].name, Arg(outputs[o]));
    return e->plan.result_output >= 0 ? std::move(outputs[static_cast<std::size_t>(e->plan.result_output)]) : Array();
}

}  // namespace jit::run

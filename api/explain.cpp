// jitexpr — Runtime::explain: what a program becomes over the given variables, without running it
// (its names, dtypes and shapes, its stages and kernels, the bytes each moves and the time that
// takes, the cache state, and where host data would run).
#include <jit/runtime.hpp>

#include "api/runtime_impl.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <thread>

namespace jit {

namespace {

std::string shape_text(const Shape& s) {
    if (s.empty()) return "()";
    std::string t = "(";
    for (std::size_t i = 0; i < s.size(); ++i) t += fmt::format("{}{}", i ? ", " : "", s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
}

// Decimal units, as the GB/s figures are.
std::string mb(std::uint64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (bytes < 1000) return fmt::format("{} B", bytes);
    if (bytes < 1000000) return fmt::format("{:.1f} kB", b / 1e3);
    if (bytes < 1000000000) return fmt::format("{:.1f} MB", b / 1e6);
    return fmt::format("{:.2f} GB", b / 1e9);
}

std::string ms_at(std::uint64_t bytes, double gbs) {
    const double ms = static_cast<double>(bytes) / (gbs * 1e6);
    return ms < 1 ? fmt::format("{:.2f} us", ms * 1e3) : fmt::format("{:.2f} ms", ms);
}

// A node's shape as explain shows it: a compaction's first extent is the data's ("(<= 1000, 3)").
std::string node_shape_text(const ir::Node& n) {
    if (n.kind != ir::NodeKind::Compact) return shape_text(n.shape);
    std::string t = fmt::format("(<= {}", n.shape[0]);
    for (std::size_t i = 1; i < n.shape.size(); ++i) t += fmt::format(", {}", n.shape[i]);
    return t + (n.shape.size() == 1 ? ",)" : ")");
}

std::uint64_t node_bytes(const ir::Node& n) {
    return static_cast<std::uint64_t>(shape_size(n.shape)) * itemsize(n.dtype);
}

// What one stage reads and writes, and the operations it computes inline.
struct StageTraffic {
    std::uint64_t read = 0, written = 0;
    std::vector<std::pair<std::string, std::uint64_t>> reads;  // what and how many bytes
    std::vector<std::string> writes;                           // "a 24.0 MB"
    std::vector<std::string> ops;                              // spellings, each once, in node order
    int inline_ops = 0;
};

std::string stored_name(const ir::Plan& plan, ir::NodeId node) {
    const std::int32_t o = plan.schedule.output_of[node];
    if (o < 0) return "a temporary";
    const ir::OutputDecl& od = plan.program.outputs[static_cast<std::size_t>(o)];
    for (const ir::RunCheck& c : plan.program.checks)
        if (c.output == o) return "a run-time check (whether the selection is empty)";
    return od.name.empty() ? std::string("the result") : od.name;
}

StageTraffic stage_traffic(const ir::Plan& plan, std::size_t s) {
    const ir::Program& p = plan.program;
    const ir::Stage& st = plan.schedule.stages[s];
    StageTraffic t;
    ir::NodeMap<char> seen(p.nodes.size(), 0);
    std::vector<char> input_seen(p.inputs.size(), 0);
    std::vector<ir::NodeId> todo;
    std::vector<ir::NodeId> order;  // the nodes the stage computes
    auto root = [&](ir::NodeId n) {
        const ir::Node& node = p.node(n);
        for (int a = 0; a < node.nargs; ++a) todo.push_back(node.args[a]);
        order.push_back(n);
        t.written += node_bytes(node);
        t.writes.push_back(fmt::format("{} {}{}", stored_name(plan, n),
                                       node.kind == ir::NodeKind::Compact ? "up to " : "", mb(node_bytes(node))));
    };
    if (st.has_root()) root(st.reduce);
    else
        for (ir::NodeId n : st.stores) {
            seen[n] = 1;
            root(n);
        }
    // Roots of this stage read inline; so is every node nobody stores, down to the inputs.
    while (!todo.empty()) {
        const ir::NodeId n = todo.back();
        todo.pop_back();
        if (seen[n]) continue;
        seen[n] = 1;
        order.push_back(n);
        const ir::Node& node = p.node(n);
        // Read from memory where every backend reads it (dsl/plan.cpp): a Reduce result or a
        // spilled node another stage stores; anything else is computed again here.
        const std::int32_t by = plan.schedule.stored_by[n];
        const bool from_memory = ir::is_stage_root(node.kind) || plan.schedule.is_spilled(n);
        if (from_memory && by >= 0 && by != static_cast<std::int32_t>(s)) {
            t.read += node_bytes(node);
            t.reads.emplace_back(stored_name(plan, n), node_bytes(node));
            continue;
        }
        if (node.kind == ir::NodeKind::Input) {
            if (input_seen[static_cast<std::size_t>(node.slot)]++) continue;
            const ir::InputDecl& in = p.inputs[static_cast<std::size_t>(node.slot)];
            // (a string input's width, S and U; an Arrow column's offsets, its text being data's)
            const std::uint64_t b =
                static_cast<std::uint64_t>(shape_size(in.shape)) * (in.itemsize ? in.itemsize : itemsize(in.dtype));
            t.read += b;
            t.reads.emplace_back(in.name, b);
            continue;
        }
        for (int a = 0; a < node.nargs; ++a) todo.push_back(node.args[a]);
    }
    // Operations in node order (the walk above is depth first).
    std::sort(order.begin(), order.end());
    for (ir::NodeId n : order) {
        const ir::Node& node = p.node(n);
        const std::int32_t by = plan.schedule.stored_by[n];
        const bool from_memory = ir::is_stage_root(node.kind) || plan.schedule.is_spilled(n);
        if (from_memory && by >= 0 && by != static_cast<std::int32_t>(s)) continue;
        if (node.kind != ir::NodeKind::Op && !ir::is_stage_root(node.kind)) continue;
        ++t.inline_ops;
        const std::string sp(ir::spelling(node.op));
        if (std::find(t.ops.begin(), t.ops.end(), sp) == t.ops.end()) t.ops.push_back(sp);
    }
    return t;
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
    return s;
}

// The checked program: its names with dtypes and shapes, its statements and what each makes.
void explain_program(std::string& out, const ir::Plan& plan, const syntax::Module& module, std::string_view text,
                     const Environment& env) {
    const ir::Program& p = plan.program;
    out += "program\n";
    for (const ir::InputDecl& in : p.inputs) {
        const Array a = run::bound_input(in, env.find(in.name)->second.array());
        out +=
            fmt::format("  input  {:<12} {:<10} {:<16} {}{}{}\n", in.name, dtype_name(in.temporal.value_or(in.dtype)),
                        shape_text(in.shape), a.backend() == Backend::Cpu ? "host" : fmt::format("cuda:{}", a.device()),
                        a.is_contiguous() ? "" : ", strided", in.view ? ", a slice of it (no copy)" : "");
    }
    for (const ir::ScalarDecl& sd : p.scalars)
        out += fmt::format("  scalar {:<12} {:<10} (a kernel parameter: a new value compiles nothing)\n", sd.name,
                           dtype_name(sd.dtype));
    std::size_t line = 0;
    for (const syntax::Statement& st : module.statements) {
        ++line;
        std::string_view stmt = text.substr(st.span.begin, st.span.end - st.span.begin);
        std::string shown(stmt.substr(0, 60));
        for (char& c : shown)
            if (c == '\n' || c == '\t' || c == '\r') c = ' ';
        if (stmt.size() > 60) shown += "...";
        std::string made;
        if (!st.target.empty()) {
            for (const ir::OutputDecl& od : p.outputs)
                if (od.name == st.target) {
                    const ir::Node& n = p.node(od.node);
                    made = fmt::format("-> {} {} {}, {}", st.target, dtype_name(od.temporal.value_or(n.dtype)),
                                       node_shape_text(n),
                                       od.alias_input >= 0 ? "in place into the existing array"
                                       : n.kind == ir::NodeKind::Compact
                                           ? "a new array (a boolean-mask selection: its length is the data's)"
                                           : "a new array");
                }
        } else if (line == module.statements.size() && p.result.valid()) {
            const ir::Node& n = p.node(p.result);
            DType t = n.dtype;
            for (const ir::OutputDecl& od : p.outputs)
                if (od.node == p.result && od.temporal) t = *od.temporal;
            made = fmt::format("-> the value, {} {}", dtype_name(t), node_shape_text(n));
        }
        out += fmt::format("  {:>2}: {}{}{}\n", line, shown, made.empty() ? "" : "   ", made);
    }
}

}  // namespace

namespace {

// The stages and kernels of `plan`, with `reports` (BackendImpl::explain) and each stage's bytes
// timed at `gbs`. Returns the bytes of every stage together.
std::uint64_t explain_stages(std::string& out, const ir::Plan& plan, const std::vector<detail::KernelReport>& reports,
                             double gbs) {
    const ir::Program& p = plan.program;
    std::uint64_t total = 0;
    int current_pass = -1;
    std::vector<std::string> read_in_pass;
    for (std::size_t s = 0; s < plan.schedule.stages.size(); ++s) {
        const ir::Stage& st = plan.schedule.stages[s];
        const StageTraffic t = stage_traffic(plan, s);
        if (st.kind == ir::Stage::Kind::Reduce && p.node(st.reduce).op == ir::Op::OrderStat) {
            // A selection: which statistic, of which q, along which axes.
            const ir::Node& r = p.node(st.reduce);
            const ir::OrderStatDecl& d = p.order_stats.at(static_cast<std::size_t>(r.slot));
            std::vector<std::string> axes, qs;
            for (std::size_t a = 0; a < st.shape.size(); ++a)
                if ((d.axes >> a) & 1u) axes.push_back(std::to_string(a));
            for (const double q : d.q) qs.push_back(fmt::format("{}", q));
            out += fmt::format(
                "  stage {}: order statistic ({}{}) over {} along axes ({}), a selection per row, "
                "into {}",
                s, d.median ? "median" : fmt::format("linear quantile, q {}", join(qs)),
                d.skip_nan ? ", NaN left out" : "", shape_text(st.shape), join(axes), stored_name(plan, st.reduce));
        } else if (st.kind == ir::Stage::Kind::Reduce) {
            const ir::Node& r = p.node(st.reduce);
            out +=
                fmt::format("  stage {}: reduction {} over {}{}, into {}", s, ir::spelling(r.op), shape_text(st.shape),
                            r.axis >= 0 ? fmt::format(" along axis {}", r.axis) : std::string(" (every element)"),
                            stored_name(plan, st.reduce));
        } else if (st.kind == ir::Stage::Kind::Compact) {
            std::vector<std::string> names;
            for (ir::NodeId n : st.stores) names.push_back(stored_name(plan, n));
            out += fmt::format(
                "  stage {}: compaction (boolean-mask selection) over {}, stores {} where the mask is true, in C "
                "order (the result's length is counted when it runs)",
                s, shape_text(st.shape), join(names));
        } else if (st.kind == ir::Stage::Kind::Scan) {
            const ir::Node& r = p.node(st.reduce);
            out += fmt::format(
                "  stage {}: scan {} over {}{}, into {}", s, ir::spelling(r.op), shape_text(st.shape),
                r.axis >= 0 ? fmt::format(" along axis {}", r.axis) : std::string(" (every element, in order)"),
                stored_name(plan, st.reduce));
        } else {
            std::vector<std::string> names;
            for (ir::NodeId n : st.stores) names.push_back(stored_name(plan, n));
            out += fmt::format("  stage {}: elementwise over {}, stores {}", s, shape_text(st.shape), join(names));
        }
        out += fmt::format("; fuses {} operation{}{}\n", t.inline_ops, t.inline_ops == 1 ? "" : "s",
                           t.ops.empty() ? "" : " (" + join(t.ops, " ") + ")");
        for (const detail::KernelReport& k : reports) {
            if (k.stage != static_cast<int>(s)) continue;
            out += fmt::format("    kernel {}{}: index {}; vector {}; tier {}\n", k.kind,
                               k.name.empty() ? "" : " " + k.name, k.index, k.vector, k.tier);
            out += fmt::format("    cache: {}\n", k.cache);
            if (!k.detail.empty()) out += fmt::format("    {}\n", k.detail);
        }
        // Stages run in one pass read each input from memory once: the first stage that reads it.
        int pass = -1;
        for (const detail::KernelReport& k : reports)
            if (k.stage == static_cast<int>(s)) pass = k.pass;
        if (pass != current_pass) {
            current_pass = pass;
            read_in_pass.clear();
        }
        std::uint64_t bytes = t.written;
        std::vector<std::string> reads;
        for (const auto& [name, b] : t.reads) {
            const bool again = pass >= 0 && name != "a temporary" &&
                               std::find(read_in_pass.begin(), read_in_pass.end(), name) != read_in_pass.end();
            if (again) {
                reads.push_back(name + " (in cache: read once per pass)");
                continue;
            }
            if (pass >= 0) read_in_pass.push_back(name);
            bytes += b;
            reads.push_back(fmt::format("{} {}", name, mb(b)));
        }
        total += bytes;
        out +=
            fmt::format("    moves {} (reads {}; writes {}): {} at {:.1f} GB/s\n", mb(bytes),
                        reads.empty() ? std::string("nothing") : join(reads), join(t.writes), ms_at(bytes, gbs), gbs);
    }
    return total;
}

}  // namespace

std::string Runtime::Impl::explain(std::string_view text, const Front& f, const Environment& env,
                                   const ExplainOptions& o) {
    if (f.module.statements.empty()) return "an empty program: nothing to run\n";
    const std::optional<run::AxisOrder> order = order_of(text, f, env, Bound(f, env));
    if (!order) return explain_placed(text, f, env, o);
    // As run() does: the program over the arrays seen in their shared order.
    std::string axes;
    for (std::size_t i = 0; i < order->axes.size(); ++i) axes += fmt::format("{}{}", i ? ", " : "", order->axes[i]);
    std::string out = fmt::format(
        "axis order: every array lies in memory in the axis order ({}), not C's; the program reads and writes "
        "them as C-contiguous views of shape {} and its new arrays keep that order (NumPy's order 'K'); the shapes "
        "below are the views'\n",
        axes, shape_to_string(order->ordered_shape));
    return out + explain_placed(text, f, run::in_order(*order, f.names, env), o);
}

std::string Runtime::Impl::explain_placed(std::string_view text, const Front& f, const Environment& env,
                                          const ExplainOptions& o) {
    std::string out;
    // Explaining says which backend: under Auto it starts (the CUDA driver, when there is one).
    const Backend backend = machine.backend();
    const Bound b(f, env);
    const run::Where where = where_of(b);
    const bool host_path = !run::runs_direct(options.backend, backend, where);
    if (!host_path) check_devices(f, b);
    run::OnDevice on(backend, machine.device());
    const ir::Plan plan = plan_of(text, f, env, machine.limits());
    explain_program(out, plan, f.module, text, env);

    // The backend, and why.
    if (backend == Backend::Cpu) {
        out += options.backend == Backend::Cpu
                   ? "backend: cpu (asked for)\n"
                   : fmt::format("backend: cpu (auto: CUDA is not available: {})\n", machine.fallback());
    } else {
        out += fmt::format("backend: cuda:{} ({}){}\n", machine.device(), machine.device_text(),
                           options.backend == Backend::Auto ? " (auto: a driver and a device are present)" : "");
    }
    // The backend's bandwidth, measured (a device copy on CUDA) only when a part printed needs it.
    std::string bw_source = "given";
    double gbs_value = o.bandwidth_gbs;
    auto gbs = [&] {
        if (!(gbs_value > 0)) gbs_value = machine.bandwidth(backend, &bw_source);
        return gbs_value;
    };
    const detail::PrepareOptions po = prepare_options();
    auto stages_of = [&](const ir::Plan& pl, const std::vector<detail::KernelReport>& ks, double at,
                         const std::string& src) {
        out += fmt::format("stages and kernels: {}\n", pl.schedule.stages.size());
        const std::uint64_t total = explain_stages(out, pl, ks, at);
        out += fmt::format("total: {} in {} stage{}: {} at {:.1f} GB/s ({})\n", mb(total), pl.schedule.stages.size(),
                           pl.schedule.stages.size() == 1 ? "" : "s", ms_at(total, at), at, src);
    };

    // The decision a run takes (run::decide), over the plan it reads.
    const std::shared_ptr<const run::Entry> host = host_path ? host_plan(text, f, env, b) : nullptr;
    const ir::Plan& decided = host ? host->plan : plan;
    std::vector<Array> inputs;
    for (const ir::InputDecl& in : decided.program.inputs)
        inputs.push_back(run::bound_input(in, env.find(in.name)->second.array()));
    run::Request r;
    r.asked = options.backend;
    r.backend = backend;
    r.where = where;
    r.plan = &decided;
    r.inputs = inputs;
    r.device_memory_limit = options.device_memory_limit;
    const run::Decision d = run::decide(r, machine);

    if (d.way == run::Way::Direct) {
        std::string key;
        entry_key(key, text, f, b);
        out += entries.contains(std::string_view(key))
                   ? "program cache: prepared in memory (a run skips parsing, checking and planning)\n"
                   : fmt::format("program cache: not prepared yet (the first run plans it{})\n",
                                 backend == Backend::Cuda ? " and finds or compiles its kernels" : "");
        out += fmt::format("stages and kernels: {}\n", plan.schedule.stages.size());
        const double at = gbs();
        const std::uint64_t total = explain_stages(out, plan, machine.main().explain(plan, po), at);
        out += fmt::format("total: {} in {} stage{}: {} at {:.1f} GB/s ({})\n", mb(total), plan.schedule.stages.size(),
                           plan.schedule.stages.size() == 1 ? "" : "s", ms_at(total, at), at, bw_source);
    }

    // Host data under Auto on a machine without CUDA: what a GPU would do with it.
    if (d.on_a_gpu) {
        const run::OnAGpu& g = *d.on_a_gpu;
        out += "on a GPU (none here), backend=auto would:\n";
        const std::uint64_t bytes = d.in_bytes + d.out_bytes;
        if (g.small) {
            out += fmt::format(
                "  keep these host arrays on the CPU: {} of host data is below {} (the GPU is not worth its "
                "copies)\n",
                run::human(bytes), run::human(run::kAutoMinBytes));
        } else {
            out += fmt::format(
                "  weigh {} of host data with its cost model: the copies of the {} of inputs at the link's "
                "bandwidth against the CPU's time for all of it, both measured once on that machine; the "
                "GPU only when {}x faster\n",
                run::human(bytes), run::human(d.in_bytes), run::kAutoMargin);
            if (g.limit) {
                out +=
                    g.chunks.streamable
                        ? "  if it chose the GPU, stream them: " +
                              run::stream_text(g.chunks, g.device_memory_limit, "device_memory_limit") + "\n"
                        : fmt::format("  if it chose the GPU, copy them whole (not streamed: {})\n", g.chunks.why_not);
            } else {
                out +=
                    "  if it chose the GPU, stream them through it in chunks sized to 80% of the device memory free "
                    "then (device_memory_limit is not set)\n";
            }
        }
        // The kernels a GPU would run: the same plan within CUDA's limits, built as prepare() builds them.
        const ir::Plan cplan = plan_of(text, f, env, run::Machine::cuda_limits());
        for (const detail::KernelReport& k : run::Machine::cuda_kernels(cplan))
            out += fmt::format("  stage {}: kernel {} {}: index {}; vector {}\n", k.stage, k.kind, k.name, k.index,
                               k.vector);
        out += "  (cache state: unknown without a device: the architecture is part of each kernel's key)\n";
    }

    if (host_path) {
        const std::string budget_source =
            options.device_memory_limit ? "device_memory_limit" : "80% of the free device memory";
        out += fmt::format("host data: {} in, {} out, on the host; backend={}\n", run::human(d.in_bytes),
                           run::human(d.out_bytes), backend_name(options.backend));
        switch (d.way) {
            case run::Way::Direct:
            case run::Way::Sharded: break;  // (a Runtime's call is never sharded)
            case run::Way::Cpu: {
                out += "placement: cpu: " + d.why + "\n";
                std::string cpu_src = "given";
                const double cpu_at = o.bandwidth_gbs > 0 ? o.bandwidth_gbs : machine.bandwidth(Backend::Cpu, &cpu_src);
                const ir::Plan cp = plan_of(text, f, env, machine.cpu_limits());
                stages_of(cp, machine.cpu().explain(cp, po), cpu_at, cpu_src);
                break;
            }
            case run::Way::TooLarge:
                out += fmt::format(
                    "placement: none: the program cannot be streamed ({}) and needs {} of device memory, "
                    "more than the {} it may use ({}): a run is an OutOfMemoryError\n",
                    d.why, run::human(d.in_bytes + d.out_bytes), run::human(d.budget), budget_source);
                break;
            case run::Way::Copied:
                out += d.model.empty() ? "" : "placement: " + d.model + "\n";
                out += "placement: cuda, copied whole (not streamed: " + d.why + ")\n";
                stages_of(host->plan, machine.main().explain(host->plan, po), gbs(), bw_source);
                break;
            case run::Way::Streamed: {
                out += d.model.empty() ? "" : "placement: " + d.model + "\n";
                out += "placement: cuda, streamed: " + run::stream_text(d.chunks, d.budget, budget_source) + "\n";
                const ir::Plan chunk =
                    plan_of(text, f, run::chunk_environment(host->plan.program, d.chunks, d.chunks.rows_per_chunk, env),
                            machine.limits());
                out += fmt::format("each chunk of {} rows runs:\n", d.chunks.rows_per_chunk);
                stages_of(chunk, machine.main().explain(chunk, po), gbs(), bw_source);
                const run::HostModel& m = machine.host_model();
                out += fmt::format("link: {} host->device at {:.1f} GB/s ({}): {}; the copies back overlap it\n",
                                   run::human(d.in_bytes), m.link_gbs, m.source, ms_at(d.in_bytes, m.link_gbs));
                break;
            }
        }
    }
    return out;
}

std::string Runtime::explain(std::string_view text, const Environment& env, const ExplainOptions& options) {
    if (options.bandwidth_gbs < 0 || !std::isfinite(options.bandwidth_gbs))
        throw ArgumentError(
            fmt::format("ExplainOptions::bandwidth_gbs is {}: use a positive figure in GB/s, or 0 for "
                        "the backend's own",
                        options.bandwidth_gbs));
    const Front& f = impl_->front(text, /*strict=*/false, /*into=*/false);
    return impl_->explain(text, f, env, options);
}

}  // namespace jit

// jitexpr — how a call runs (see decide.hpp).
#include "run/decide.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

namespace jit::run {

namespace {

// The streaming request for `plan` over `inputs` as bound: their memory (for overlaps) and
// whether each is C-contiguous.
chunks::ChunkPlan plan_chunks(const ir::Plan& plan, std::span<const Array> inputs, std::size_t budget,
                              bool all_or_nothing) {
    chunks::Request req;
    req.program = &plan.program;
    for (const Array& a : inputs) {
        const bool contiguous = a.is_contiguous();
        req.input_contiguous.push_back(contiguous);
        const auto b = reinterpret_cast<std::uintptr_t>(a.data());
        req.input_memory.push_back(contiguous ? chunks::Request::Range{b, b + a.nbytes()} : chunks::Request::Range{});
    }
    req.device_budget = budget;
    req.outputs_through_temporaries = all_or_nothing;
    return chunks::plan_stream(req);
}

Decision on_cpu(Decision d, std::string why) {
    d.way = Way::Cpu;
    d.why = std::move(why);
    return d;
}

// The cost model over `d`'s bytes: its sentence, and whether it keeps them on the CPU (the GPU
// is chosen only when its copies are expected kAutoMargin times faster than the CPU's work).
struct Weighed {
    bool cpu = true;
    std::string text;
};
Weighed weigh(const Decision& d, const HostModel& m) {
    const std::uint64_t bytes = d.in_bytes + d.out_bytes;
    const double gpu_ms = static_cast<double>(d.in_bytes) / (m.link_gbs * 1e6);
    const double cpu_ms = static_cast<double>(bytes) / (m.cpu_gbs * 1e6);
    Weighed w;
    w.cpu = gpu_ms * kAutoMargin >= cpu_ms;
    w.text = fmt::format(
        "cost model: the GPU's copies {:.1f} ms at {:.1f} GB/s, the CPU {:.1f} ms "
        "at {:.1f} GB/s ({})",
        gpu_ms, m.link_gbs, cpu_ms, m.cpu_gbs, m.source);
    return w;
}

}  // namespace

Decision not_streamed(Decision d, std::string why, Backend asked) {
    // Whole arrays to the device and back: only when they fit under the limit.
    const std::uint64_t bytes = d.in_bytes + d.out_bytes;
    if (bytes > d.budget) {
        if (asked == Backend::Auto)
            return on_cpu(std::move(d),
                          fmt::format("the program cannot be streamed ({}) and needs {} of device memory, "
                                      "more than the {} it may use",
                                      why, human(bytes), human(d.budget)));
        d.way = Way::TooLarge;
    } else {
        d.way = Way::Copied;
    }
    d.why = std::move(why);
    return d;
}

Decision decide(const Request& request, Probe& probe) {
    Request r = request;
    Decision d;
    auto count_bytes = [&] {
        d.in_bytes = d.out_bytes = 0;
        for (const Array& a : r.inputs)
            d.in_bytes += a.nbytes() + a.chars_bytes();  // an Arrow string column's text too
        for (const ir::OutputDecl& od : r.plan->program.outputs) {
            const ir::Node& n = r.plan->program.node(od.node);
            d.out_bytes += static_cast<std::uint64_t>(shape_size(n.shape)) * itemsize(n.dtype);
        }
    };
    auto too_small = [&] {
        const std::uint64_t bytes = d.in_bytes + d.out_bytes;
        return on_cpu(std::move(d), fmt::format("host data of {} (below {}, the GPU is not worth its copies)",
                                                human(bytes), human(kAutoMinBytes)));
    };
    if (r.backend == Backend::Auto) {
        // Under Auto, nothing started yet: host data too small for the GPU stays on the CPU from
        // the plan alone, and larger data the known host model keeps there too; only data the
        // GPU may be worth starts the backend (the CUDA driver).
        if (!r.where.on_device) {
            count_bytes();
            if (d.in_bytes + d.out_bytes < kAutoMinBytes) return too_small();
            // Data the GPU may be worth: where the host model is known without the driver (the
            // disk cache's figures of this machine) and keeps it on the CPU, nothing starts.
            if (const HostModel* m = probe.known_host_model()) {
                Weighed w = weigh(d, *m);
                if (w.cpu) return on_cpu(std::move(d), std::move(w.text));
            }
        }
        r.backend = probe.start();
        d = Decision{};
    }
    if (r.backend == Backend::Cpu && r.asked == Backend::Auto && r.plan) {
        // No GPU here: what one would do with this host data.
        count_bytes();
        OnAGpu g;
        g.small = d.in_bytes + d.out_bytes < kAutoMinBytes;
        if (!g.small && r.device_memory_limit) {
            g.limit = true;
            g.device_memory_limit = r.device_memory_limit;
            g.chunks = plan_chunks(*r.plan, r.inputs, r.device_memory_limit, false);
        }
        d.on_a_gpu = std::move(g);
    }
    if (runs_direct(r.asked, r.backend, r.where)) return d;

    // Host arrays on a CUDA runtime (or, under Auto, no arrays at all).
    const ir::Plan& plan = *r.plan;
    count_bytes();
    const std::uint64_t bytes = d.in_bytes + d.out_bytes;
    // Backend::Auto: the CPU unless the cost model expects the GPU clearly faster; too little
    // data is kept there before the device is asked anything.
    if (r.asked == Backend::Auto && bytes < kAutoMinBytes) return too_small();
    d.budget = probe.device_budget();
    if (r.asked == Backend::Auto) {
        Weighed w = weigh(d, probe.host_model());
        if (w.cpu) return on_cpu(std::move(d), std::move(w.text));
        d.model = std::move(w.text) + "; ";
    }
    if (bytes < kCopyWholeBelow && bytes <= d.budget) {
        d.way = Way::Copied;
        d.why = fmt::format("host data of {} (below {}, not worth a pipeline)", human(bytes), human(kCopyWholeBelow));
        return d;
    }
    d.chunks = plan_chunks(plan, r.inputs, d.budget, r.all_or_nothing);
    if (!probe.can_stream())
        return not_streamed(std::move(d), "the CUDA driver lacks streams, events or pinned memory", r.asked);
    if (!d.chunks.streamable) {
        std::string why = d.chunks.why_not;
        return not_streamed(std::move(d), std::move(why), r.asked);
    }
    d.way = Way::Streamed;
    return d;
}

Decision decide(const shards::Request& r) {
    Decision d;
    d.way = Way::Sharded;
    d.sharding = shards::plan(r);
    return d;
}

std::string placement(const Decision& d) {
    switch (d.way) {
        case Way::Direct: return {};
        case Way::Cpu: return "cpu: " + d.why;
        case Way::Copied:
        case Way::TooLarge: return d.model + "cuda, copied whole: " + d.why;
        case Way::Streamed: {
            const chunks::ChunkPlan& cp = d.chunks;
            return d.model + fmt::format(
                                 "cuda, streamed: {} chunk{} of {} ({} in flight), {} of device memory "
                                 "(limit {})",
                                 cp.chunks, cp.chunks == 1 ? "" : "s", human(cp.chunk_bytes), cp.buffers,
                                 human(cp.device_bytes), human(d.budget));
        }
        case Way::Sharded: {
            const shards::Layout& l = d.sharding->layout;
            std::string devices;
            for (int v : l.devices) devices += fmt::format("{}{}", devices.empty() ? "" : ", ", v);
            return fmt::format("sharded: {} shard{} (devices {}) of {} row{}", l.k, l.k == 1 ? "" : "s", devices,
                               l.total_rows, l.total_rows == 1 ? "" : "s");
        }
    }
    return {};
}

std::string stream_text(const chunks::ChunkPlan& cp, std::size_t budget, const std::string& budget_source) {
    return fmt::format("{} chunk{} of {} ({} in flight) along {} row{}, {} of device memory (limit {}: {})", cp.chunks,
                       cp.chunks == 1 ? "" : "s", human(cp.chunk_bytes), cp.buffers, cp.rows, cp.rows == 1 ? "" : "s",
                       human(cp.device_bytes), human(budget), budget_source);
}

std::string human(std::uint64_t bytes) {
    if (bytes >= (std::uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
    if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
    return fmt::format("{} bytes", bytes);
}

}  // namespace jit::run

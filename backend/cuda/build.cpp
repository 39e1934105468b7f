// jitexpr — the kernels of a plan for the CUDA backend, and precompiling them (see build.hpp).
#include "backend/cuda/build.hpp"

#include "backend/cuda/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

namespace jit::cuda {

dsl::Limits limits() {
    dsl::Limits l;
    l.max_stage_nodes = kMaxStageNodes;
    return l;
}

codegen::Emitted build_kernels(const ir::Plan& plan, const KernelOptions& options, Tier tier) {
    codegen::EmitOptions eo;
    eo.block = options.block;
    eo.scalar_only = tier == Tier::ScalarOnly;
    eo.force_strided = tier == Tier::Strided;
    codegen::Emitted emitted = codegen::emit(plan.program, plan.schedule, eo);
    // Flat kernels of the ops PTX expresses exactly, written as PTX and assembled by nvJitLink:
    // several times faster to build than through NVRTC.
    if (tier == Tier::ScalarOnly && options.ptx_sm > 0)
        for (auto& k : emitted.kernels)
            if (auto pk = codegen::emit_ptx(plan.program, k, options.ptx_sm)) k = std::move(*pk);
    return emitted;
}

std::vector<detail::KernelReport> describe_kernels(const ir::Plan& plan, const codegen::Emitted& emitted) {
    using codegen::KernelKind;
    std::vector<detail::KernelReport> out;
    for (const codegen::KernelSource& k : emitted.kernels) {
        detail::KernelReport r;
        r.stage = k.stage;
        r.name = k.name;
        const codegen::LaunchPolicy& l = k.launch;
        switch (l.kind) {
            case KernelKind::Flat: r.kind = "flat"; break;
            case KernelKind::Strided: r.kind = "strided"; break;
            case KernelKind::Tiled: r.kind = fmt::format("tiled ({0}x{0} tiles through shared memory)", l.tile); break;
            case KernelKind::ReduceAll: r.kind = "reduce-all"; break;
            case KernelKind::Select: r.kind = "select (a block per row, radix select per rank)"; break;
            case KernelKind::ReduceAxis:
                r.kind = fmt::format("reduce-axis (axis {}, a {} per output)", l.axis,
                                     l.warp_per_output ? "warp" : "thread");
                break;
            case KernelKind::Compact: r.kind = "compact (count, then an order-preserving scatter)"; break;
            case KernelKind::ScanAll: r.kind = "scan-all (two passes: chunk totals, then the scan)"; break;
            case KernelKind::ScanAxis:
                r.kind = fmt::format("scan-axis (axis {}, a {} per row)", l.axis, l.block_per_row ? "block" : "thread");
                break;
        }
        if (l.kind == KernelKind::Flat) r.index = l.index_bits == 32 ? "32-bit" : "64-bit";
        else if (k.entries.size() == 2 && l.kind != KernelKind::Compact)
            r.index = "32-bit when every offset fits, else 64-bit";
        else r.index = "64-bit";
        // The widest element the kernel stores or loads with vectors decides the width.
        std::size_t widest = 0;
        for (const codegen::Param& p : k.params)
            if (p.kind == codegen::Param::Kind::Array && p.vectorized) widest = std::max(widest, itemsize(p.dtype));
        if (l.vec > 1 && widest > 0)
            r.vector = fmt::format("{} elements ({}-bit loads and stores when aligned)", l.vec, l.vec * widest * 8);
        else r.vector = "none (one element per thread and step)";
        r.detail = fmt::format("{} threads per block", l.block);
        if (k.ptx) r.detail += ", PTX assembled by nvJitLink";
        if (l.kind == KernelKind::ReduceAll || l.kind == KernelKind::ScanAll)
            r.detail += fmt::format(", at most {} blocks, combined in a fixed order", l.max_blocks);
        if (l.kind == KernelKind::Compact)
            r.detail += fmt::format(
                ", two launches over at most {} blocks (a contiguous range each): jx_count counts the mask per "
                "block and totals it, the host reads the total (the stream is synchronised) and allocates the "
                "result, jx_scatter writes each block's selected values at the counts before it",
                l.max_blocks);
        (void)plan;
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<PrecompiledKernel> precompile(const ir::Plan& plan, const CompileOptions& options, const ImageStore& store,
                                          int block) {
    KernelOptions ko;
    ko.block = block;
    const codegen::Emitted emitted = build_kernels(plan, ko, Tier::Full);
    std::vector<PrecompiledKernel> out(emitted.kernels.size());
    std::mutex store_mutex;  // the store's callbacks are called from one thread at a time
    parallel_for(emitted.kernels.size(), [&](std::size_t i) {
        const codegen::KernelSource& k = emitted.kernels[i];
        PrecompiledKernel& pk = out[i];
        pk.name = k.name;
        pk.disk_key = ModuleCache::disk_key(k, options);
        std::optional<std::string> present;
        if (store.get) {
            std::lock_guard<std::mutex> lock(store_mutex);
            try {
                present = store.get(pk.disk_key);
            } catch (...) {
                present.reset();
            }
        }
        if (present && decode_image(*present, options)) {
            pk.already_stored = true;
            pk.image_bytes = present->size();
        } else {
            Image img = compile(k.source, k.name, options);
            pk.compile_ms = img.compile_ms;
            std::string bytes = encode_image(img);
            pk.image_bytes = bytes.size();
            std::lock_guard<std::mutex> lock(store_mutex);
            if (store.put) store.put(pk.disk_key, bytes);
        }
    });
    return out;
}

}  // namespace jit::cuda

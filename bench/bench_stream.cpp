// Host data through the GPU, in one run: the link references (pinned cuMemcpy both ways, the
// pipeline's multi-threaded staging of pageable memory into pinned buffers, a direct pageable
// copy) and the streamed `c = a*2+b` on host inputs from pinned and from pageable memory, and
// out-of-core under a device-memory limit. GB/s = host->device bytes / wall time (the result's
// device->host copy overlaps: the link is full duplex). Prints a table and, with --json FILE,
// writes the figures and the goals of issue 21 with pass/fail.
//
//   bench_stream [--gib N (inputs together, default 8)] [--reps R (default 3)] [--json FILE]
//                [--staging-threads T (the pipeline's copy threads; default 3/4 of the hardware's, <= 16)]
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"
#include "backend/cuda/host_copy.hpp"
#include "backend/cuda/stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void fill(float* p, std::int64_t n, float scale) {
    const unsigned t = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> ts;
    for (unsigned k = 0; k < t; ++k)
        ts.emplace_back([=] {
            for (std::int64_t i = n * k / t; i < n * (k + 1) / t; ++i) p[i] = static_cast<float>(i % 1021) * scale;
        });
    for (auto& x : ts) x.join();
}

// Best GB/s (host->device bytes over wall time) of `reps` runs of c = a*2+b into `c`.
double streamed(jit::Runtime& rt, const jit::Array& a, const jit::Array& b, const jit::Array& c, int reps,
                std::string* placement) {
    jit::Environment env{{"a", jit::Arg(a)}, {"b", jit::Arg(b)}};
    double best = 0;
    for (int r = 0; r < reps + 1; ++r) {  // the first run compiles the chunk kernels
        jit::Timing t;
        jit::CallOptions o;
        o.timing = &t;
        const auto t0 = Clock::now();
        rt.run_into("a*2+b", env, c, o);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (r > 0) best = std::max(best, static_cast<double>(a.nbytes() + b.nbytes()) / s / 1e9);
        *placement = t.placement;
    }
    return best;
}

jit::Runtime runtime(std::size_t limit) {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cuda;
    o.device_memory_limit = limit;
    return jit::Runtime(o);
}

}  // namespace

int main(int argc, char** argv) {
    double gib = 8;
    int reps = 3;
    std::string json;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--gib" && i + 1 < argc) gib = std::stod(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
        else if (a == "--json" && i + 1 < argc) json = argv[++i];
        else if (a == "--staging-threads" && i + 1 < argc)
            jit::cuda::set_staging_threads(static_cast<unsigned>(std::max(0, std::stoi(argv[++i]))));
        else {
            std::fprintf(stderr, "usage: bench_stream [--gib N] [--reps R] [--json FILE] [--staging-threads T]\n");
            return 2;
        }
    }
    std::string why;
    if (!jit::cuda::available(&why)) {
        std::printf("bench_stream: skipped, no CUDA device: %s\n", why.c_str());
        return 0;
    }
    const jit::cuda::LinkMeasure link = jit::cuda::measure_link(std::size_t{256} << 20, 5);
    std::printf("pinned host->device      %7.1f GB/s\n", link.pinned_to_device_gbs);
    std::printf("pinned device->host      %7.1f GB/s\n", link.pinned_to_host_gbs);
    std::printf("staging pageable->pinned %7.1f GB/s (%u threads)\n", link.staging_gbs, link.staging_threads);
    std::printf("staging, streaming stores %6.1f GB/s\n", link.staging_streaming_gbs);
    std::printf("direct pageable->device  %7.1f GB/s\n", link.pageable_to_device_gbs);
    std::printf("pin in place (register + unregister), 256 MiB at once %7.1f GB/s, in 16 MiB pieces %7.1f GB/s\n",
                link.register_gbs, link.register_pieces_gbs);
    std::printf("pin in place, copy to device, unpin      %7.1f GB/s\n", link.registered_to_device_gbs);

    const std::int64_t n = static_cast<std::int64_t>(gib * (1 << 30) / 8);  // two float32 inputs
    const std::size_t bytes = static_cast<std::size_t>(n) * 4;
    std::string place_pageable, place_pinned, place_ooc;
    double pageable = 0, pageable_memcpy = 0, pinned = 0, ooc = 0;
    {
        jit::Array a = jit::Array::empty(jit::DType::Float32, {n}, jit::Backend::Cpu);
        jit::Array b = jit::Array::empty(jit::DType::Float32, {n}, jit::Backend::Cpu);
        jit::Array c = jit::Array::empty(jit::DType::Float32, {n}, jit::Backend::Cpu);
        fill(static_cast<float*>(a.data()), n, 1.f);
        fill(static_cast<float*>(b.data()), n, .5f);
        fill(static_cast<float*>(c.data()), n, 0.f);
        jit::Runtime rt = runtime(0);
        pageable = streamed(rt, a, b, c, reps, &place_pageable);
        jit::cuda::set_streaming_stores(false);  // the same with the host copies by memcpy
        std::string ignored;
        pageable_memcpy = streamed(rt, a, b, c, reps, &ignored);
        jit::cuda::set_streaming_stores(true);
        // Out-of-core: the device may hold a quarter of the inputs.
        jit::Runtime small = runtime(static_cast<std::size_t>(static_cast<double>(bytes) * 2 / 4));
        ooc = streamed(small, a, b, c, reps, &place_ooc);
        const float* pc = static_cast<const float*>(c.data());
        for (std::int64_t i = 0; i < n; i += 9973)
            if (pc[i] != static_cast<float>(i % 1021) * 2.5f) {
                std::printf("bench_stream: wrong result at %lld\n", static_cast<long long>(i));
                return 1;
            }
    }
    {
        void* pa = jit::cuda::alloc_pinned(bytes);
        void* pb = jit::cuda::alloc_pinned(bytes);
        void* pc = jit::cuda::alloc_pinned(bytes);
        fill(static_cast<float*>(pa), n, 1.f);
        fill(static_cast<float*>(pb), n, .5f);
        auto view = [&](void* p) { return jit::Array::view(p, jit::DType::Float32, {n}, {}, jit::Backend::Cpu); };
        jit::Runtime rt = runtime(0);
        pinned = streamed(rt, view(pa), view(pb), view(pc), reps, &place_pinned);
        jit::cuda::free_pinned(pa);
        jit::cuda::free_pinned(pb);
        jit::cuda::free_pinned(pc);
    }
    const double stage_ref = std::min(link.staging_gbs, link.pinned_to_device_gbs);
    std::printf("c = a*2+b, %.1f GiB of host inputs:\n", gib);
    std::printf("  from pinned memory     %7.1f GB/s = %3.0f%% of the pinned link (goal >= 80%%)   [%s]\n", pinned,
                100 * pinned / link.pinned_to_device_gbs, place_pinned.c_str());
    std::printf(
        "  from pageable memory   %7.1f GB/s = %3.0f%% of staging into pinned (goal >= 80%%), %.1fx the direct "
        "pageable copy (goal >= 1)   [%s]\n",
        pageable, 100 * pageable / stage_ref, pageable / link.pageable_to_device_gbs, place_pageable.c_str());
    // Every byte of a*2+b crosses the host twice (inputs into the pinned buffers, the result out
    // of them): 1.5x the input bytes are staged.
    std::printf("  from pageable memory, host copies by memcpy %7.1f GB/s (%.2fx)\n", pageable_memcpy,
                pageable / pageable_memcpy);
    std::printf("  host bytes staged (inputs and result) per second %7.1f GB/s = %3.0f%% of streaming-store staging\n",
                1.5 * pageable, 100 * 1.5 * pageable / link.staging_streaming_gbs);
    std::printf("  out-of-core (limit = a quarter of the inputs) %7.1f GB/s = %3.0f%% of staging   [%s]\n", ooc,
                100 * ooc / stage_ref, place_ooc.c_str());
    if (!json.empty()) {
        std::FILE* f = std::fopen(json.c_str(), "w");
        if (!f) {
            std::perror(json.c_str());
            return 1;
        }
        std::fprintf(
            f,
            "{\n  \"input_gib\": %.2f,\n  \"pinned_to_device_gbs\": %.2f,\n  \"pinned_to_host_gbs\": %.2f,\n"
            "  \"staging_gbs\": %.2f,\n  \"staging_threads\": %u,\n  \"pageable_direct_gbs\": %.2f,\n"
            "  \"register_gbs\": %.2f,\n  \"register_pieces_gbs\": %.2f,\n  \"registered_to_device_gbs\": %.2f,\n"
            "  \"axpb_pinned_gbs\": %.2f,\n  \"axpb_pageable_gbs\": %.2f,\n  \"axpb_pageable_memcpy_gbs\": %.2f,\n  "
            "\"staging_streaming_gbs\": %.2f,\n  \"axpb_out_of_core_gbs\": %.2f,\n"
            "  \"goal_pinned_80pct_of_link\": %s,\n  \"goal_pageable_80pct_of_staging\": %s,\n"
            "  \"goal_pageable_above_direct\": %s,\n  \"goal_out_of_core_80pct_of_staging\": %s\n}\n",
            gib, link.pinned_to_device_gbs, link.pinned_to_host_gbs, link.staging_gbs, link.staging_threads,
            link.pageable_to_device_gbs, link.register_gbs, link.register_pieces_gbs, link.registered_to_device_gbs,
            pinned, pageable, ooc, pinned >= 0.8 * link.pinned_to_device_gbs ? "true" : "false",
            pageable >= 0.8 * stage_ref ? "true" : "false", pageable >= link.pageable_to_device_gbs ? "true" : "false",
            ooc >= 0.8 * stage_ref ? "true" : "false");
        std::fclose(f);
    }
    return 0;
}

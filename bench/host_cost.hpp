// The one way jitexpr's benchmarks measure the host cost of a call (bench_gpu, bench_compile,
// bench_hit): batches of `batch` back-to-back calls timed on the host's steady clock, with
// `sync` (the device's synchronisation) run between batches, outside the timing.
//
// Why batches: a launch returns once the work is queued, and the queue holds about a thousand
// launches. Timed over millions of calls without a synchronisation (Google Benchmark's plain
// loop), the queue fills and every launch then waits for a slot: the figure becomes the GPU's
// rate for tiny kernels, not the host's cost (bench_gpu's 6.05 us against bench_compile's
// 4.23 us for the same eval, and a "bare launch" slower than a whole eval, on 2026-12-01).
// A batch well inside the queue measures what the host spends per call.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace jit::bench {

struct HostCost {
    double p50_us = 0, p99_us = 0, min_us = 0;
};

inline constexpr int kHostCostBatch = 200;  // calls per timed batch: far from a full launch queue

// Microseconds per call of one batch of `batch` calls (the clock read twice per batch).
template <class Call>
double time_batch_us(Call&& call, int batch = kHostCostBatch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) call();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / batch;
}

// The median, 99th percentile and minimum of per-call times of batches. Every benchmark reports
// the median: a mean over batches moves with the few that the system interrupted (bench_gpu's
// mean was 0.9-1.0 us above bench_compile's median for the same call on the H100).
inline HostCost percentiles_of(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
        return v[std::min(v.size() - 1, static_cast<std::size_t>(q * double(v.size() - 1) + 0.5))];
    };
    return {at(0.5), at(0.99), v.front()};
}

// Percentiles over `reps` batches, after two batches of warm-up.
template <class Call, class Sync>
HostCost host_cost(Call&& call, Sync&& sync, int reps = 30, int batch = kHostCostBatch) {
    for (int w = 0; w < 2; ++w) {
        (void)time_batch_us(call, batch);
        sync();
    }
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
        v.push_back(time_batch_us(call, batch));
        sync();
    }
    return percentiles_of(std::move(v));
}

}  // namespace jit::bench

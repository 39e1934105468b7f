// Host data through the GPU: host arrays given to a CUDA runtime stream in chunks (out-of-core
// under a device-memory limit), reductions combine across chunks, in-place outputs, stops and
// faults between chunks. Every result is checked against the CPU backend. Skips without a device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"
#include "backend/cuda/stream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace jit;
using Clock = std::chrono::steady_clock;

#define SKIP_WITHOUT_GPU()                                                          \
    do {                                                                            \
        std::string why;                                                            \
        if (!jit::cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

constexpr std::size_t MiB = std::size_t{1} << 20;

Runtime gpu(std::size_t limit) {
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.disk_cache = false;
    o.device_memory_limit = limit;
    return Runtime(o);
}

Runtime cpu() {
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    return Runtime(o);
}

template <class T>
Array host_array(std::int64_t n, std::uint32_t seed, double lo = -1, double hi = 1) {
    std::vector<T> v(static_cast<std::size_t>(n));
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = static_cast<T>(d(g));
    return Array::from(v, {n}, Backend::Cpu);
}

template <class T>
void expect_same(const Array& got, const Array& want) {
    ASSERT_EQ(got.backend(), Backend::Cpu);
    ASSERT_EQ(got.shape(), want.shape());
    const auto g = got.to_vector<T>(), w = want.to_vector<T>();
    for (std::size_t i = 0; i < g.size(); ++i)
        if (!(g[i] == w[i] || (std::isnan(static_cast<double>(g[i])) && std::isnan(static_cast<double>(w[i])))))
            FAIL() << "element " << i << ": " << g[i] << " != " << w[i];
}

// The chunk rows under a small limit: 8 MiB of device memory, float32 a, b and the result
// (12 bytes an element) in three slots.
constexpr std::size_t kSmallLimit = 8 * MiB;

TEST(StreamGpu, ElementwiseMatchesTheCpuAtSizesAroundTheChunk) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    // Find the chunk size of this limit from a run, then try sizes around it.
    Timing t0;
    CallOptions o0;
    o0.timing = &t0;
    const std::int64_t big = 4'000'037;
    (void)rt.eval("a*2+b", {host_array<float>(big, 1), host_array<float>(big, 2)}, o0);
    ASSERT_TRUE(t0.streamed) << t0.placement;
    ASSERT_GT(t0.stream_chunks, 1u) << t0.placement;
    EXPECT_LE(t0.stream_device_bytes, kSmallLimit);
    const std::int64_t per =
        (big + static_cast<std::int64_t>(t0.stream_chunks) - 1) / static_cast<std::int64_t>(t0.stream_chunks);
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, per - 1, per, per + 1, 2 * per + 1, 3 * per - 1, big}) {
        SCOPED_TRACE(n);
        Array a = host_array<float>(n, 3), b = host_array<float>(n, 4);
        Timing t;
        CallOptions o;
        o.timing = &t;
        Array c = rt.eval("a*2+b", {a, b}, o);
        // Below a mebibyte of host data the arrays are copied whole (no pipeline to start).
        if (n * 12 >= (std::int64_t{1} << 20)) EXPECT_TRUE(t.streamed) << t.placement;
        else EXPECT_NE(t.placement.find("cuda, copied whole: host data of"), std::string::npos) << t.placement;
        expect_same<float>(c, ref.eval("a*2+b", {a, b}));
    }
}

// The text is planned once per chunk shape (at most two: balanced chunks differ by at most one
// row), never once per chunk: a streamed call of many chunks prepares at most two programs, and
// the same call again prepares none.
TEST(StreamGpu, EachChunkShapeIsPlannedOncePerRuntime) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit);
    const std::int64_t big = 4'000'037;
    const Array a = host_array<float>(big, 5), b = host_array<float>(big, 6);
    Timing t;
    CallOptions o;
    o.timing = &t;
    (void)rt.eval("a*2+b", {a, b}, o);
    ASSERT_TRUE(t.streamed) << t.placement;
    ASSERT_GT(t.stream_chunks, 2u) << t.placement;
    const CacheStats first = rt.stats();
    EXPECT_GE(first.misses, 1u);
    EXPECT_LE(first.misses, 2u);
    (void)rt.eval("a*2+b", {a, b});
    EXPECT_EQ(rt.stats().misses, first.misses);
}

TEST(StreamGpu, BroadcastsAcrossChunksMatchTheCpu) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    const std::int64_t rows = 100'003, cols = 37;
    std::vector<double> m(static_cast<std::size_t>(rows * cols)), r(static_cast<std::size_t>(cols)),
        col(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<double>(i % 1013) * 0.25;
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = 1.0 + static_cast<double>(i);
    for (std::size_t i = 0; i < col.size(); ++i) col[i] = static_cast<double>(i % 7);
    Array M = Array::from(m, {rows, cols}, Backend::Cpu), R = Array::from(r, {cols}, Backend::Cpu),
          C = Array::from(col, {rows, 1}, Backend::Cpu);
    Timing t;
    CallOptions o;
    o.timing = &t;
    Array got = rt.eval("m*r + c", {M, R, C}, o);
    ASSERT_TRUE(t.streamed) << t.placement;
    EXPECT_GT(t.stream_chunks, 1u);
    expect_same<double>(got, ref.eval("m*r + c", {M, R, C}));
}

TEST(StreamGpu, ReductionsCombineAcrossChunks) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    const std::int64_t n = 3'000'017;
    Array a = host_array<double>(n, 5), b = host_array<double>(n, 6);
    Environment env{{"a", Arg(a)}, {"b", Arg(b)}}, want_env = env;
    const char* text = "s = sum(a*b); hi = max(a); lo = min(b); m = mean(a); p = any(a > 0.999999); q = all(b < 2)";
    Timing t;
    CallOptions o;
    o.timing = &t;
    rt.run(text, env, o);
    ASSERT_TRUE(t.streamed) << t.placement;
    EXPECT_GT(t.stream_chunks, 3u);
    ref.run(text, want_env);
    auto scalar = [](const Environment& e, const char* k) { return e.at(k).array().to_vector<double>()[0]; };
    EXPECT_NEAR(scalar(env, "s"), scalar(want_env, "s"), 1e-9 * std::abs(scalar(want_env, "s")) + 1e-9);
    EXPECT_EQ(scalar(env, "hi"), scalar(want_env, "hi"));
    EXPECT_EQ(scalar(env, "lo"), scalar(want_env, "lo"));
    EXPECT_NEAR(scalar(env, "m"), scalar(want_env, "m"), 1e-12);
    EXPECT_EQ(env.at("p").array().to_vector<std::uint8_t>(), want_env.at("p").array().to_vector<std::uint8_t>());
    EXPECT_EQ(env.at("q").array().to_vector<std::uint8_t>()[0], 1);
    // Integer sums are exact (and wrap alike).
    std::vector<std::int64_t> iv(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<std::int64_t>(i * 2654435761u % 100000) - 50000;
    Array ia = Array::from(iv, {n}, Backend::Cpu);
    EXPECT_EQ(rt.eval("sum(k*3)", {ia}).to_vector<std::int64_t>(),
              ref.eval("sum(k*3)", {ia}).to_vector<std::int64_t>());
}

TEST(StreamGpu, InPlaceOutputIsWrittenIntoTheCallersHostArray) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    const std::int64_t n = 2'500'001;
    Array a = host_array<float>(n, 7), b = host_array<float>(n, 8);
    Array want = ref.eval("a*2 + b", {a, b});
    void* const before = a.data();
    Environment env{{"a", Arg(a)}, {"b", Arg(b)}};
    Timing t;
    CallOptions o;
    o.timing = &t;
    rt.run("a = a*2 + b", env, o);
    ASSERT_TRUE(t.streamed) << t.placement;
    EXPECT_EQ(env.at("a").array().data(), before);  // the same memory, written chunk by chunk
    expect_same<float>(a, want);
    // And through run_into into a host `out` that is also an input.
    Array c = host_array<float>(n, 9);
    Array want_c = ref.eval("c*c - 1", {c});
    Environment e2{{"c", Arg(c)}};
    rt.run_into("c*c - 1", e2, c);
    expect_same<float>(c, want_c);
}

TEST(StreamGpu, AReadOnlyHostArrayIsNeverWrittenStreamedOrCopiedWhole) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit);
    const std::int64_t n = 2'500'001;
    const Array a = host_array<float>(n, 11).as_read_only();
    const std::vector<float> before = a.to_vector<float>();
    Environment env{{"a", Arg(a)}};
    EXPECT_THROW(rt.run("a = a*2 + 1", env), ReadOnlyError);      // would stream
    EXPECT_THROW(rt.run("a = a - mean(a)", env), ReadOnlyError);  // would be copied whole
    EXPECT_THROW(rt.run_into("a*2", env, a), ReadOnlyError);      // out=
    EXPECT_EQ(a.to_vector<float>(), before);
    const Array d = a.to(Backend::Cuda).as_read_only();  // device memory too
    Environment de{{"d", Arg(d)}};
    EXPECT_THROW(rt.run("d = d + 1", de), ReadOnlyError);
    EXPECT_EQ(d.to_vector<float>(), before);
}

TEST(StreamGpu, ProgramsThatCannotStreamAreCopiedWholeAndStillRight) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(256 * MiB), ref = cpu();
    Array a = host_array<double>(1'000'003, 10);
    Timing t;
    CallOptions o;
    o.timing = &t;
    Array got = rt.eval("a - mean(a)", {a}, o);
    EXPECT_FALSE(t.streamed);
    EXPECT_NE(t.placement.find("copied whole"), std::string::npos) << t.placement;
    const auto g = got.to_vector<double>(), w = ref.eval("a - mean(a)", {a}).to_vector<double>();
    for (std::size_t i = 0; i < g.size(); i += 997) EXPECT_NEAR(g[i], w[i], 1e-12);
    // Too large for the limit: a clear OutOfMemoryError naming the reason.
    Runtime tiny = gpu(1 * MiB);
    try {
        (void)tiny.eval("a - mean(a)", {a});
        FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be streamed"), std::string::npos) << e.what();
    }
}

TEST(StreamGpu, AStopBetweenChunksEndsTheCallAndTheRuntimeStaysUsable) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(64 * MiB);
    const std::int64_t n = std::int64_t{1} << 30;  // 4 GiB of float32 per input: hundreds of chunks
    Array a = Array::zeros(DType::Float32, {n}, Backend::Cpu), b = Array::zeros(DType::Float32, {n}, Backend::Cpu);
    CancelToken stop;
    CallOptions o;
    o.cancel = stop;
    std::atomic<bool> started{false};
    // Once the first chunks are back (not during the compile of the chunk kernels).
    o.progress = [&](const Progress& p) {
        if (p.phase == Progress::Phase::Run && p.done > 0) started = true;
    };
    Clock::time_point asked{};
    std::thread canceller([&] {
        while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        asked = Clock::now();
        stop.cancel();
    });
    Environment env{{"a", Arg(a)}, {"b", Arg(b)}};
    bool cancelled = false;
    try {
        rt.run("a = a*2 + b", env, o);
    } catch (const CancelledError& e) {
        cancelled = true;
        const auto waited = std::chrono::duration<double>(Clock::now() - asked).count();
        EXPECT_LT(waited, 1.0);
        ASSERT_EQ(e.partly_written().size(), 1u);
        EXPECT_EQ(e.partly_written()[0], "a");
    }
    canceller.join();
    EXPECT_TRUE(cancelled);
    // Usable: the next streamed call is right.
    Runtime ref = cpu();
    Array x = host_array<float>(5'000'000, 11), y = host_array<float>(5'000'000, 12);
    expect_same<float>(rt.eval("x*2+y", {x, y}), ref.eval("x*2+y", {x, y}));
}

TEST(StreamGpu, AFaultInTheMiddleIsAClearErrorAndThePipelineStaysUsable) {
    SKIP_WITHOUT_GPU();
    ASSERT_TRUE(cuda::streaming_supported());
    const std::int64_t rows = 1'000'003;
    std::vector<float> in(static_cast<std::size_t>(rows)), out(static_cast<std::size_t>(rows), -1.f);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    auto spec_for = [&](std::size_t fail_at) {
        cuda::StreamSpec s;
        s.inputs.push_back({in.data(), true, 4, 0});
        s.outputs.push_back({out.data(), false, 4, 0});
        s.rows = rows;
        s.chunks = 10;
        s.rows_per_chunk = (rows + 9) / 10;
        s.slots = 3;
        s.chunk_begin = [=](std::size_t c) {
            const std::int64_t base = rows / 10, extra = rows % 10, ci = static_cast<std::int64_t>(c);
            return ci * base + std::min(ci, extra);
        };
        s.chunk_rows = [=](std::size_t c) { return rows / 10 + (static_cast<std::int64_t>(c) < rows % 10 ? 1 : 0); };
        // The "kernel" is a device copy, failing at chunk `fail_at`.
        s.launch = [=](std::size_t c, std::int64_t r, const std::vector<void*>& i, const std::vector<void*>& o,
                       void* st) {
            if (c == fail_at) throw ArgumentError("injected fault at chunk 5");
            cuda::copy_device(o[0], i[0], static_cast<std::size_t>(r) * 4, st);
        };
        return s;
    };
    try {
        (void)cuda::stream_run(spec_for(5));
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("chunk 5"), std::string::npos);
    }
    const cuda::StreamStats st = cuda::stream_run(spec_for(~std::size_t{0}));
    EXPECT_EQ(st.chunks, 10u);
    EXPECT_EQ(out, in);
    // And the runtime on top of it.
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    Array a = host_array<float>(3'000'000, 13);
    expect_same<float>(rt.eval("a*a", {a}), ref.eval("a*a", {a}));
}

TEST(StreamGpu, PinnedCallerMemoryIsReadInPlace) {
    SKIP_WITHOUT_GPU();
    Runtime rt = gpu(kSmallLimit), ref = cpu();
    const std::int64_t n = 4'000'000;
    void* pa = cuda::alloc_pinned(static_cast<std::size_t>(n) * 4);
    void* pb = cuda::alloc_pinned(static_cast<std::size_t>(n) * 4);
    struct Free {
        void* p;
        ~Free() { cuda::free_pinned(p); }
    } fa{pa}, fb{pb};
    for (std::int64_t i = 0; i < n; ++i) {
        static_cast<float*>(pa)[i] = static_cast<float>(i % 1000);
        static_cast<float*>(pb)[i] = 0.5f;
    }
    Array a = Array::view(pa, DType::Float32, {n}, {}, Backend::Cpu),
          b = Array::view(pb, DType::Float32, {n}, {}, Backend::Cpu);
    expect_same<float>(rt.eval("a*2+b", {a, b}), ref.eval("a*2+b", {a, b}));
}

TEST(StreamGpu, AutoKeepsSmallHostDataOnTheCpu) {
    SKIP_WITHOUT_GPU();
    RuntimeOptions o;
    o.backend = Backend::Auto;
    o.disk_cache = false;
    Runtime rt(o);
    ASSERT_EQ(rt.backend(), Backend::Cuda);
    Array a = host_array<float>(1000, 14);
    Timing t;
    CallOptions co;
    co.timing = &t;
    Array r = rt.eval("a+1", {a}, co);
    EXPECT_EQ(r.backend(), Backend::Cpu);
    EXPECT_EQ(t.placement.rfind("cpu:", 0), 0u) << t.placement;
}

std::uint64_t available_host_memory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

void parallel_fill(float* p, std::int64_t n, float scale) {
    const unsigned t = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> ts;
    for (unsigned k = 0; k < t; ++k)
        ts.emplace_back([=] {
            for (std::int64_t i = n * k / t; i < n * (k + 1) / t; ++i) p[i] = static_cast<float>(i % 4099) * scale;
        });
    for (auto& x : ts) x.join();
}

TEST(StreamGpu, SixteenGiBOfInputsThroughAFourGiBDeviceLimit) {
    SKIP_WITHOUT_GPU();
    const std::int64_t n = std::int64_t{1} << 31;  // 8 GiB per float32 array; a, b and c: 24 GiB
    if (available_host_memory() < (std::uint64_t{28} << 30))
        GTEST_SKIP() << "needs 28 GiB of available host memory, " << (available_host_memory() >> 30) << " GiB here";
    const std::size_t limit = std::size_t{4} << 30;
    Runtime rt = gpu(limit);
    Array a = Array::empty(DType::Float32, {n}, Backend::Cpu), b = Array::empty(DType::Float32, {n}, Backend::Cpu);
    parallel_fill(static_cast<float*>(a.data()), n, 1.0f);
    parallel_fill(static_cast<float*>(b.data()), n, 0.5f);
    Timing t;
    CallOptions o;
    o.timing = &t;
    const auto t0 = Clock::now();
    Array c = rt.eval("a*2+b", {a, b}, o);
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    ASSERT_TRUE(t.streamed) << t.placement;
    EXPECT_LE(t.stream_device_bytes, limit);
    EXPECT_GT(t.stream_chunks, 4u);
    std::printf("16 GiB in, 4 GiB limit: %.2f s, %.1f GB/s host->device (%s)\n", sec, 16.0 * (1 << 30) / sec / 1e9,
                t.placement.c_str());
    const float* pc = static_cast<const float*>(c.data());
    std::mt19937_64 g(15);
    for (int k = 0; k < 1'000'000; ++k) {
        const std::int64_t i = static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(n));
        const float want = static_cast<float>(i % 4099) * 2.0f + static_cast<float>(i % 4099) * 0.5f;
        ASSERT_EQ(pc[i], want) << "element " << i;
    }
    EXPECT_EQ(pc[n - 1], static_cast<float>((n - 1) % 4099) * 2.5f);
}

// A program that cannot stream is copied whole to the device and back; a stop is honoured between
// the pieces of those copies too (issue 23: between chunks, never mid-write). The target is
// written in place, so whenever the stop comes the caller's array keeps its old values.
TEST(StreamGpu, AStopDuringTheWholeCopyLeavesTheHostArrayUntouched) {
    SKIP_WITHOUT_GPU();
    const std::int64_t n = std::int64_t{1} << 30;  // 4 GiB of float32: the copy in takes over 100 ms
    if (available_host_memory() < (std::uint64_t{8} << 30))
        GTEST_SKIP() << "needs 8 GiB of available host memory, " << (available_host_memory() >> 30) << " GiB here";
    Runtime rt = gpu(std::size_t{16} << 30);
    {
        // Compiled first (and checked to be copied whole), so that the stop below falls in a copy.
        Timing t;
        CallOptions o;
        o.timing = &t;
        Environment small{{"a", Arg(host_array<float>(4096, 20))}};
        rt.run("a = a - mean(a)", small, o);
        ASSERT_NE(t.placement.find("copied whole"), std::string::npos) << t.placement;
    }
    Array a = Array::empty(DType::Float32, {n}, Backend::Cpu);
    parallel_fill(static_cast<float*>(a.data()), n, 1.0f);
    // The poll runs at the first tick (the copy's first piece) and then about every 20 ms: the
    // second poll asks for the stop, 20 ms into a copy of over 100 ms.
    std::atomic<int> polls{0};
    Clock::time_point asked{};
    CallOptions o;
    o.cancel.emplace([&] {
        if (++polls < 2) return false;
        if (asked == Clock::time_point{}) asked = Clock::now();
        return true;
    });
    Environment env{{"a", Arg(a)}};
    bool cancelled = false;
    try {
        rt.run("a = a - mean(a)", env, o);
    } catch (const CancelledError& e) {
        cancelled = true;
        EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), 1.0);
        EXPECT_TRUE(e.partly_written().empty()) << e.what();
    }
    ASSERT_TRUE(cancelled);
    EXPECT_EQ(env.at("a").array().data(), a.data());
    const float* pa = static_cast<const float*>(a.data());
    for (std::int64_t i = 0; i < n; i += 4093) ASSERT_EQ(pa[i], static_cast<float>(i % 4099)) << "element " << i;
    EXPECT_EQ(pa[n - 1], static_cast<float>((n - 1) % 4099));
    // Usable, and right: the same call without a stop.
    o.cancel.reset();
    rt.run("a = a - mean(a)", env, o);
    double mean = 0;
    for (std::int64_t k = 0; k < 4099; ++k) mean += static_cast<double>(k);
    mean /= 4099;  // n is not a multiple of 4099: the mean is close to, not exactly, this
    EXPECT_NEAR(pa[0], -mean, 1.0);
}

}  // namespace

// Stopping a call on the GPU: a multi-GiB program of many kernels stops at a kernel boundary,
// within about one kernel's time, and the runtime stays usable; compile progress counts the
// kernels that need compiling. Skips without a CUDA device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

#define SKIP_WITHOUT_GPU()                                                       \
    do {                                                                         \
        std::string why;                                                         \
        if (!jit::cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

jit::Runtime gpu_runtime() {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cuda;
    o.disk_cache = false;
    o.tiered_compile = false;  // the final kernels from the first call: the timing below is theirs
    return jit::Runtime(o);
}

// kStatements reductions over the same 4 GiB array, each its own kernel (or a few, when the
// stage is split), with a host scalar each (kernel parameters: one compile serves them all).
constexpr int kStatements = 200;
std::string many_kernels_program() {
    std::string text;
    for (int k = 0; k < kStatements; ++k) text += fmt::format("s{} = sum(x * c{})\n", k, k);
    return text;
}

jit::Environment many_kernels_env() {
    jit::Environment env;
    const std::int64_t n = std::int64_t{1} << 30;  // float32: 4 GiB
    env.insert_or_assign("x", jit::Arg(jit::Array::zeros(jit::DType::Float32, {n}, jit::Backend::Cuda)));
    for (int k = 0; k < kStatements; ++k) env.insert_or_assign(fmt::format("c{}", k), jit::Arg(0.5 + k));
    return env;
}

}  // namespace

TEST(CancelGpu, ProgramOfManyKernelsStopsAtAKernelBoundaryAndTheRuntimeStaysUsable) {
    SKIP_WITHOUT_GPU();
    jit::Runtime rt = gpu_runtime();
    const std::string text = many_kernels_program();
    jit::Environment env = many_kernels_env();

    // Warm-up: compiles, and gives the time of the whole program (hence of one kernel).
    rt.run(text, env);
    jit::cuda::synchronize();
    const auto t0 = Clock::now();
    rt.run(text, env);
    jit::cuda::synchronize();
    const double whole_ms = ms(Clock::now() - t0);
    const double kernel_ms = whole_ms / kStatements;
    for (int k = 0; k < kStatements; ++k) env.erase(fmt::format("s{}", k));

    jit::CancelToken stop;
    jit::CallOptions o;
    o.cancel = stop;
    Clock::time_point cancelled_at;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(whole_ms / 4));
        cancelled_at = Clock::now();
        stop.cancel();
    });
    const auto started = Clock::now();
    bool stopped = false;
    try {
        rt.run(text, env, o);
    } catch (const jit::CancelledError& e) {
        stopped = true;
        EXPECT_TRUE(e.partly_written().empty()) << e.what();
    }
    const auto returned = Clock::now();
    canceller.join();
    ASSERT_TRUE(stopped) << "the program ran to its end (" << ms(returned - started) << " ms)";
    const double latency_ms = ms(returned - cancelled_at);
    std::printf("whole program %.2f ms (%d kernels, %.3f ms each); returned %.3f ms after cancel()\n", whole_ms,
                kStatements, kernel_ms, latency_ms);
    // One kernel's time, with room for the host thread's scheduling.
    EXPECT_LE(latency_ms, 2 * kernel_ms + 5.0);
    EXPECT_LT(ms(returned - started), whole_ms * 0.75);
    for (int k = 0; k < kStatements; ++k) EXPECT_EQ(env.count(fmt::format("s{}", k)), 0u) << k;

    // Usable: the same program runs to its end with the right values, and so does a new one.
    stop.reset();
    rt.run(text, env, o);
    EXPECT_EQ(env.at("s0").array().to_vector<float>(), std::vector<float>{0.0f});
    jit::Environment small{{"a", jit::Arg(jit::Array::from(std::vector<float>{1, 2, 3}).to(jit::Backend::Cuda))}};
    rt.run("b = a * 2 + 1", small);
    EXPECT_EQ(small.at("b").array().to_vector<float>(), (std::vector<float>{3, 5, 7}));
}

TEST(CancelGpu, CompileProgressCountsTheKernelsToCompile) {
    SKIP_WITHOUT_GPU();
    // 64 reductions with different constants: 64 distinct kernels, several hundred ms of NVRTC
    // on any machine, so that progress (reported every ~100 ms) is seen during the compiles.
    std::string text;
    for (int k = 0; k < 64; ++k) text += fmt::format("s{} = sum(a * {}.25)\n", k, k);
    jit::Environment env{{"a", jit::Arg(jit::Array::from(std::vector<double>{1, 2, 3}).to(jit::Backend::Cuda))}};
    std::uint64_t compile_total = 0, compile_done = 0;
    jit::CallOptions o;
    o.progress = [&](const jit::Progress& p) {
        if (p.phase != jit::Progress::Phase::Compile) return;
        EXPECT_EQ(p.unit, jit::Progress::Unit::Kernels);
        EXPECT_LE(p.done, p.total);
        compile_total = p.total;
        compile_done = std::max(compile_done, p.done);
    };
    jit::Runtime rt = gpu_runtime();  // its own module cache, and no disk: everything compiles
    rt.run(text, env, o);
    // The kernels the program has, from its generated source (another runtime, another cache).
    jit::Runtime other = gpu_runtime();
    const std::string src = other.source(text, env);
    std::uint64_t kernels = 0;
    for (std::size_t at = 0; (at = src.find("// ---- stage ", at)) != std::string::npos; ++at) ++kernels;
    EXPECT_EQ(compile_total, kernels);
    EXPECT_GT(kernels, 0u);
    EXPECT_LE(compile_done, compile_total);
    EXPECT_EQ(env.at("s1").array().to_vector<double>(), std::vector<double>{7.5});
}

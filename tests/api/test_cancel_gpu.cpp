// Stopping a call on the GPU: a multi-GiB program of many kernels stops at a kernel boundary,
// within about one kernel's time, and the runtime stays usable; compile progress counts the
// kernels that need compiling. Skips without a CUDA device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

#define SKIP_WITHOUT_GPU()                                                          \
    do {                                                                            \
        std::string why;                                                            \
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

// The whole program's time, from a second run of `text` over a copy of `env` (the first one
// compiles). The copy matters: a run over `env` itself would bind the s_k there, and a later run
// with them bound writes them in place, which is another prepared program (other kernels, all
// compiled again): the time measured would be mostly NVRTC's, and a stop timed from it would
// come after the program had long ended (issue 23's failure on the H200 was this).
double whole_program_ms(jit::Runtime& rt, const std::string& text, const jit::Environment& env) {
    jit::Environment warm = env;
    rt.run(text, warm);
    jit::cuda::synchronize();
    jit::Environment timed = env;
    jit::Timing t;
    jit::CallOptions o;
    o.timing = &t;
    const auto t0 = Clock::now();
    rt.run(text, timed, o);
    jit::cuda::synchronize();
    const double whole = ms(Clock::now() - t0);
    EXPECT_TRUE(t.cache_hit) << "the timed run prepared the program again";
    return whole;
}

// Cancels `stop` `after_ms` from now, from another thread; joined by the destructor.
struct Canceller {
    jit::CancelToken stop;
    std::atomic<std::int64_t> at{0};
    std::thread thread;
    Canceller(jit::CancelToken token, double after_ms) : stop(std::move(token)) {
        thread = std::thread([this, after_ms] {
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(after_ms));
            at = Clock::now().time_since_epoch().count();
            stop.cancel();
        });
    }
    ~Canceller() { thread.join(); }
    Clock::time_point cancelled_at() const { return Clock::time_point(Clock::duration(at.load())); }
};

}  // namespace

TEST(CancelGpu, ProgramOfManyKernelsStopsAtAKernelBoundaryAndTheRuntimeStaysUsable) {
    SKIP_WITHOUT_GPU();
    jit::Runtime rt = gpu_runtime();
    const std::string text = many_kernels_program();
    jit::Environment env = many_kernels_env();
    const double whole_ms = whole_program_ms(rt, text, env);
    const double kernel_ms = whole_ms / kStatements;
    std::printf("whole program %.2f ms (%d kernels, %.3f ms each)\n", whole_ms, kStatements, kernel_ms);
    ASSERT_GT(whole_ms, 20.0) << "too short to be stopped in its middle";

    jit::CancelToken stop;
    jit::CallOptions o;
    o.cancel = stop;
    bool stopped = false;
    Clock::time_point started, returned, cancelled_at;
    {
        Canceller canceller(stop, whole_ms / 4);
        started = Clock::now();
        try {
            rt.run(text, env, o);
        } catch (const jit::CancelledError& e) {
            stopped = true;
            EXPECT_TRUE(e.partly_written().empty()) << e.what();
        }
        returned = Clock::now();
        cancelled_at = canceller.cancelled_at();  // set before cancel(), so seen once the call stopped
    }
    ASSERT_TRUE(stopped) << "the program ran to its end (" << ms(returned - started) << " ms, whole program "
                         << whole_ms << " ms)";
    const double latency_ms = ms(returned - cancelled_at);
    std::printf("returned %.3f ms after cancel()\n", latency_ms);
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

// The path the first test took by accident: the s_k already bound, so the program writes them in
// place. It stops all the same, and names the targets whose kernels had started.
TEST(CancelGpu, ProgramWritingInPlaceStopsAndNamesTheTargetsItStarted) {
    SKIP_WITHOUT_GPU();
    jit::Runtime rt = gpu_runtime();
    const std::string text = many_kernels_program();
    jit::Environment env = many_kernels_env();
    for (int k = 0; k < kStatements; ++k)
        env.insert_or_assign(fmt::format("s{}", k),
                             jit::Arg(jit::Array::zeros(jit::DType::Float32, {}, jit::Backend::Cuda)));
    std::vector<const void*> targets;
    for (int k = 0; k < kStatements; ++k) targets.push_back(env.at(fmt::format("s{}", k)).array().data());
    const double whole_ms = whole_program_ms(rt, text, env);
    ASSERT_GT(whole_ms, 20.0) << "too short to be stopped in its middle";

    jit::CancelToken stop;
    jit::CallOptions o;
    o.cancel = stop;
    std::vector<std::string> partly;
    bool stopped = false;
    {
        Canceller canceller(stop, whole_ms / 4);
        try {
            rt.run(text, env, o);
        } catch (const jit::CancelledError& e) {
            stopped = true;
            partly = e.partly_written();
        }
    }
    ASSERT_TRUE(stopped) << "the program ran to its end (whole program " << whole_ms << " ms)";
    // Some were started, not all; each name is one of the targets, once.
    EXPECT_FALSE(partly.empty());
    EXPECT_LT(partly.size(), static_cast<std::size_t>(kStatements));
    std::set<std::string> names(partly.begin(), partly.end());
    EXPECT_EQ(names.size(), partly.size());
    for (const std::string& n : partly) EXPECT_TRUE(env.count(n) && n[0] == 's') << n;
    // In place: still the caller's arrays, none replaced.
    for (int k = 0; k < kStatements; ++k)
        EXPECT_EQ(env.at(fmt::format("s{}", k)).array().data(), targets[static_cast<std::size_t>(k)]);
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

// The reductions and statistics on CUDA against the CPU backend, on arrays large enough for
// several blocks, partials and warps: bit for bit where the operation is exact (min, max, ptp,
// argmin, argmax, count_nonzero, any, all, nanmin, nanmax), within a few ulps where it is a
// floating sum (sum, mean, var, std, nan*), and the same bits run after run on each backend.
// (NumPy agreement is the differential suite's, tests/diff; this is CPU against CUDA.)
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace jit;

namespace {

// float64 (2000, 513): NaN in one column, an all-NaN row, inf, repeated extremes.
Array make_data() {
    const std::int64_t rows = 2000, cols = 513;
    std::vector<double> v(static_cast<std::size_t>(rows * cols));
    std::mt19937_64 rng(7);
    std::normal_distribution<double> nd(3.0, 10.0);
    for (auto& x : v) x = std::round(nd(rng) * 4) / 4;  // repeated values: first occurrences matter
    for (std::int64_t r = 0; r < rows; ++r) v[static_cast<std::size_t>(r * cols + 17)] = NAN;
    for (std::int64_t c = 0; c < cols; ++c) v[static_cast<std::size_t>(1234 * cols + c)] = NAN;
    v[static_cast<std::size_t>(99 * cols + 300)] = INFINITY;
    v[static_cast<std::size_t>(1999 * cols + 512)] = -INFINITY;
    return Array::from(v, Shape{rows, cols}, Backend::Cpu);
}

std::vector<unsigned char> bytes(const Array& a) {
    std::vector<unsigned char> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}

Array run(Runtime& rt, const std::string& text, const Array& a) {
    Environment env;
    env.insert_or_assign("a", Arg(a));
    return rt.run(text, env);
}

// amin/amax: min(x, 0) and max(x, 0) are the element-wise minimum and maximum.
const char* const kExact[] = {"amin",          "amax", "ptp", "argmin", "argmax",
                              "count_nonzero", "any",  "all", "nanmin", "nanmax"};
const char* const kSums[] = {"sum", "mean", "var", "std", "nansum", "nanmean", "nanvar", "nanstd"};
const char* const kForms[] = {
    "", ", axis=0", ", axis=1", ", axis=-1, keepdims=True", ", axis=(0, 1)", ", 0, keepdims=True"};

RuntimeOptions options(Backend b) {
    RuntimeOptions o = RuntimeOptions::from_environment();
    o.backend = b;
    o.disk_cache = false;
    return o;
}

class ReductionsGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }
};

// The operand: the data itself, a strided view of it, and an expression fused into the pass.
std::vector<std::pair<std::string, Array>> operands(const Array& host, Backend b) {
    const Array d = host.to(b);
    return {{"a", d}, {"a", d.slice(1, 1, 513, 2)}, {"a * 2 - 1", d}};
}

std::string call(const char* f, const std::string& operand, const char* form) {
    const std::string op = std::string(f);
    if ((op == "argmin" || op == "argmax") && std::string(form).find('(') != std::string::npos) return {};
    return op + "(" + operand + form + ")";
}

}  // namespace

TEST_F(ReductionsGpu, ExactReductionsGiveTheCpuBackendsBits) {
    const Array host = make_data();
    Runtime cpu(options(Backend::Cpu));
    Runtime gpu(options(Backend::Cuda));
    const auto cpu_ops = operands(host, Backend::Cpu), gpu_ops = operands(host, Backend::Cuda);
    for (std::size_t k = 0; k < cpu_ops.size(); ++k)
        for (const char* f : kExact)
            for (const char* form : kForms) {
                const std::string text = call(f, cpu_ops[k].first, form);
                if (text.empty()) continue;
                const Array c = run(cpu, text, cpu_ops[k].second), g = run(gpu, text, gpu_ops[k].second);
                ASSERT_EQ(c.dtype(), g.dtype()) << text;
                ASSERT_EQ(c.shape(), g.shape()) << text;
                EXPECT_EQ(bytes(c), bytes(g)) << text << " (operand " << k << ")";
            }
}

TEST_F(ReductionsGpu, FloatingReductionsAgreeWithTheCpuBackendAndRepeatTheirBits) {
    const Array host = make_data();
    Runtime cpu(options(Backend::Cpu));
    Runtime gpu(options(Backend::Cuda));
    const auto cpu_ops = operands(host, Backend::Cpu), gpu_ops = operands(host, Backend::Cuda);
    for (std::size_t k = 0; k < cpu_ops.size(); ++k)
        for (const char* f : kSums)
            for (const char* form : kForms) {
                const std::string text = call(f, cpu_ops[k].first, form);
                const Array c = run(cpu, text, cpu_ops[k].second);
                const Array g1 = run(gpu, text, gpu_ops[k].second), g2 = run(gpu, text, gpu_ops[k].second);
                EXPECT_EQ(bytes(g1), bytes(g2)) << text << ": CUDA differs run to run";
                EXPECT_EQ(bytes(c), bytes(run(cpu, text, cpu_ops[k].second))) << text << ": CPU differs run to run";
                ASSERT_EQ(c.shape(), g1.shape()) << text;
                const Array cd = cpu.eval("float64(x)", {Arg(c)}),
                            gd = cpu.eval("float64(x)", {Arg(g1.to(Backend::Cpu))});
                std::vector<double> cv(static_cast<std::size_t>(cd.size())), gv(cv.size());
                cd.copy_to_host(cv.data());
                gd.copy_to_host(gv.data());
                for (std::size_t i = 0; i < cv.size(); ++i) {
                    if (std::isnan(cv[i]) || std::isinf(cv[i])) {
                        EXPECT_TRUE(std::memcmp(&cv[i], &gv[i], sizeof(double)) == 0 ||
                                    (std::isnan(cv[i]) && std::isnan(gv[i])))
                            << text << " [" << i << "] cpu " << cv[i] << " cuda " << gv[i];
                        continue;
                    }
                    EXPECT_NEAR(gv[i], cv[i], 1e-9 * std::max(1.0, std::fabs(cv[i])) * 64) << text << " [" << i << "]";
                }
            }
}

// One runtime, one program of two stages (the mean passes to the second stage through the
// program's workspace), called from eight threads at once on the default stream, each on its own
// data: every call gives its own data's answer. (Kernels of calls from two threads queued between
// each other made one call's second stage read the other's mean.)
TEST_F(ReductionsGpu, CallsFromManyThreadsOfAProgramOfStagesEachReadTheirOwnTemporaries) {
    Runtime gpu(options(Backend::Cuda));
    constexpr int kThreads = 8, kCalls = 150;
    constexpr std::int64_t n = 4096;
    std::vector<Array> data;
    for (int t = 0; t < kThreads; ++t) {
        std::vector<double> v(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 1000.0 * t + static_cast<double>(i % 7);
        data.push_back(Array::from(v, Shape{n}, Backend::Cpu).to(Backend::Cuda));
    }
    const std::string text = "a - mean(a) + sum(a) / 1000";
    std::vector<std::vector<unsigned char>> want;
    for (int t = 0; t < kThreads; ++t) want.push_back(bytes(run(gpu, text, data[static_cast<std::size_t>(t)])));
    std::vector<int> wrong(kThreads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t] {
            for (int k = 0; k < kCalls; ++k)
                if (bytes(run(gpu, text, data[static_cast<std::size_t>(t)])) != want[static_cast<std::size_t>(t)])
                    ++wrong[static_cast<std::size_t>(t)];
        });
    for (auto& th : pool) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

// The order statistics (median, percentile, quantile and their nan* forms) on CUDA against the
// CPU backend, bit for bit (a NaN's own bits aside, see nan_blind_bytes): the selected elements are exact and both backends compute the
// interpolation with dsl/semantics.h's jx::sel, so every dtype, axis form and q gives the same
// bytes; and the same bytes run after run. Arrays large enough for many blocks, rows longer
// than a block's threads, NaN columns, an all-NaN row, infinities and repeated values.
// (NumPy agreement is the differential suite's, tests/diff, which runs on CUDA as test_diff_cuda.)
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace jit;

namespace {

// float64 (rows, 301): NaN in one column, an all-NaN row, inf, -inf, many repeated values. The
// rows of axis=1 are longer than a block's threads, those of axis=0 as long as `rows`.
Array make_data(std::int64_t rows = 700) {
    const std::int64_t cols = 301;
    const std::int64_t nan_row = rows > 123 ? 123 : rows / 2, inf_row = rows > 99 ? 99 : 1;
    std::vector<double> v(static_cast<std::size_t>(rows * cols));
    std::mt19937_64 rng(11);
    std::normal_distribution<double> nd(3.0, 10.0);
    for (auto& x : v) x = std::round(nd(rng) * 4) / 4;
    for (std::int64_t r = 0; r < rows; ++r) v[static_cast<std::size_t>(r * cols + 17)] = NAN;
    for (std::int64_t c = 0; c < cols; ++c) v[static_cast<std::size_t>(nan_row * cols + c)] = NAN;
    v[static_cast<std::size_t>(inf_row * cols + 300)] = INFINITY;
    v[static_cast<std::size_t>((rows - 1) * cols + 3)] = -INFINITY;
    return Array::from(v, Shape{rows, cols}, Backend::Cpu);
}

std::vector<unsigned char> bytes(const Array& a) {
    std::vector<unsigned char> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}

// The bytes with every NaN written as one pattern. A NaN that arithmetic makes (the result of an
// all-NaN row) carries the processor's own sign and payload, x86's negative quiet NaN on the CPU
// and 0x7fffffff on NVIDIA GPUs; no operation tells them apart and NumPy leaves them open. Every
// other value must have the same bits. (A NaN passed through keeps its bits on both backends.)
std::vector<unsigned char> nan_blind_bytes(const Array& a) {
    std::vector<unsigned char> b = bytes(a);
    const DType t = a.dtype();
    if (!is_inexact(t)) return b;
    const std::size_t unit = is_complex(t) ? itemsize(t) / 2 : itemsize(t);
    for (std::size_t k = 0; k + unit <= b.size(); k += unit) {
        bool nan = false;
        if (unit == 8) {
            double v;
            std::memcpy(&v, &b[k], 8);
            nan = std::isnan(v);
        } else if (unit == 4) {
            float v;
            std::memcpy(&v, &b[k], 4);
            nan = std::isnan(v);
        } else {
            std::uint16_t h;
            std::memcpy(&h, &b[k], 2);
            nan = t == DType::BFloat16 ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
        }
        if (nan) std::memset(&b[k], 0xff, unit);
    }
    return b;
}

Array run(Runtime& rt, const std::string& text, const Array& a) {
    Environment env;
    env.insert_or_assign("a", Arg(a));
    return rt.run(text, env);
}

RuntimeOptions options(Backend b) {
    RuntimeOptions o = RuntimeOptions::from_environment();
    o.backend = b;
    o.disk_cache = false;
    return o;
}

class QuantileGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }
};

const char* const kCalls[] = {"median(X{})",
                              "nanmedian(X{})",
                              "percentile(X, 0{})",
                              "percentile(X, 100{})",
                              "percentile(X, 37.5{})",
                              "quantile(X, (0.1, 0.5, 0.9){})",
                              "nanpercentile(X, 30{})",
                              "nanquantile(X, (0.0, 0.25, 1.0){})"};
const char* const kForms[] = {"", ", axis=0", ", axis=1", ", axis=-1, keepdims=True", ", axis=(0, 1)"};
// The operand in each dtype the functions take (bool, integers, floats; complex for the median).
const char* const kOperands[] = {
    "a",     "a * 2 - 1",        "float32(a)", "float16(a / 8)", "int8(a)", "uint16(abs(a))", "int64(a * 1e12)",
    "a > 3", "complex(a, a / 3)"};

std::string call(const char* pattern, const std::string& operand, const char* form) {
    std::string s = pattern;
    s.replace(s.find('X'), 1, operand);
    s.replace(s.find("{}"), 2, form);
    return s;
}

}  // namespace

// One test per function (the calls of kCalls): about 40 programs each, so that a run under
// compute-sanitizer's racecheck (scripts/gpu-sanitize.sh, one process per test) stays in minutes.
class QuantileGpuCall : public QuantileGpu, public ::testing::WithParamInterface<const char*> {};

namespace {

void expect_every_operand_and_axis_as_the_cpu(const char* pattern, const Array& host) {
    Runtime cpu(options(Backend::Cpu));
    Runtime gpu(options(Backend::Cuda));
    const Array dev = host.to(Backend::Cuda);
    const bool median = std::string(pattern).find("median") != std::string::npos;
    for (const char* operand : kOperands) {
        const std::string op = operand;
        if (!median && (op == "a > 3" || op.rfind("complex", 0) == 0)) continue;  // TypeError, as NumPy
        for (const char* form : kForms) {
            const std::string text = call(pattern, op, form);
            const Array c = run(cpu, text, host), g = run(gpu, text, dev);
            ASSERT_EQ(c.dtype(), g.dtype()) << text;
            ASSERT_EQ(c.shape(), g.shape()) << text;
            EXPECT_EQ(nan_blind_bytes(c), nan_blind_bytes(g)) << text;
        }
    }
}

}  // namespace

TEST_P(QuantileGpuCall, EveryOperandAndAxisGivesTheCpuBackendsBits) {
    expect_every_operand_and_axis_as_the_cpu(GetParam(), make_data());
}

// The same programs on 6 rows: every kernel path of the first (a row longer than a block along
// axis=1, shorter along axis=0, the all-NaN row, both infinities) in a few seconds under
// compute-sanitizer's racecheck, where the 700 rows take minutes a test (scripts/gpu-sanitize.sh,
// part slow, runs these).
TEST_P(QuantileGpuCall, EveryOperandAndAxisOfAFewRowsGivesTheCpuBackendsBits) {
    expect_every_operand_and_axis_as_the_cpu(GetParam(), make_data(6));
}

INSTANTIATE_TEST_SUITE_P(EveryCall, QuantileGpuCall, ::testing::ValuesIn(kCalls));

TEST_F(QuantileGpu, AStridedViewGivesTheCpuBackendsBits) {
    const Array host = make_data();
    Runtime cpu(options(Backend::Cpu));
    Runtime gpu(options(Backend::Cuda));
    const Array hv = host.slice(1, 1, 301, 2), dv = host.to(Backend::Cuda).slice(1, 1, 301, 2);
    for (const char* text : {"median(a, axis=0)", "percentile(a, (5, 95), axis=1)", "nanmedian(a * a)"}) {
        const Array c = run(cpu, text, hv), g = run(gpu, text, dv);
        EXPECT_EQ(nan_blind_bytes(c), nan_blind_bytes(g)) << text;
    }
}

TEST_F(QuantileGpu, ARowLongerThanABlockAndEveryElementAtOnce) {
    std::vector<float> v(3'000'001);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1e3f, 1e3f);
    for (auto& x : v) x = u(rng);
    const Array host = Array::from(v, Shape{static_cast<std::int64_t>(v.size())}, Backend::Cpu);
    Runtime cpu(options(Backend::Cpu));
    Runtime gpu(options(Backend::Cuda));
    for (const char* text : {"median(a)", "percentile(a, (0, 1, 50, 99, 100))", "nanquantile(a * 3 + 1, 0.3)"}) {
        const Array c = run(cpu, text, host), g = run(gpu, text, host.to(Backend::Cuda));
        EXPECT_EQ(nan_blind_bytes(c), nan_blind_bytes(g)) << text;
    }
}

TEST_F(QuantileGpu, RunsRepeatTheirBits) {
    const Array dev = make_data().to(Backend::Cuda);
    Runtime gpu(options(Backend::Cuda));
    for (const char* text : {"median(a, axis=1)", "nanpercentile(a, (10, 50, 90), axis=0)"}) {
        const auto first = bytes(run(gpu, text, dev));
        for (int k = 0; k < 3; ++k) EXPECT_EQ(bytes(run(gpu, text, dev)), first) << text;
    }
}

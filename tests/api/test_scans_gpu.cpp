// The scans on CUDA against the CPU backend, on arrays long enough for several tiles, several
// chunks of the two-pass scan of every element, and both row kernels (a block per row along
// the last axis, a thread per row along another): integer scans bit for bit (wrapping included),
// float scans within a few ulps of the running value's magnitude (another association than the
// CPU's element-after-element order), and the same bits run after run on each backend.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace jit;

namespace {

RuntimeOptions options(Backend b) {
    RuntimeOptions o = RuntimeOptions::from_environment();
    o.backend = b;
    o.disk_cache = false;
    return o;
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

// (rows, cols) of int64 in [-50, 50] with a few huge values (wrapping), or float64 in [-1, 1].
Array make(bool integer, std::int64_t rows, std::int64_t cols) {
    std::mt19937_64 rng(11);
    if (integer) {
        std::vector<std::int64_t> v(static_cast<std::size_t>(rows * cols));
        std::uniform_int_distribution<std::int64_t> d(-50, 50);
        for (auto& x : v) x = d(rng);
        v[v.size() / 3] = std::numeric_limits<std::int64_t>::max();
        return Array::from(v, Shape{rows, cols}, Backend::Cpu);
    }
    std::vector<double> v(static_cast<std::size_t>(rows * cols));
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto& x : v) x = d(rng);
    return Array::from(v, Shape{rows, cols}, Backend::Cpu);
}

class ScansGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }
};

const char* const kForms[] = {"cumsum(a)",         "cumsum(a, axis=1)",          "cumsum(a, axis=0)",
                              "cumsum(a * 3 - 1)", "cumprod(a % 3 - 1, axis=1)", "nancumsum(a, 1) - 1"};

}  // namespace

TEST_F(ScansGpu, IntegerScansGiveTheCpuBackendsBits) {
    Runtime cpu(options(Backend::Cpu)), gpu(options(Backend::Cuda));
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{3, 100000}, {4000, 7}, {1, 3000000}}) {
        const Array h = make(true, rows, cols), d = h.to(Backend::Cuda);
        const Array strided_h = h.slice(1, 0, cols, 2), strided_d = d.slice(1, 0, cols, 2);
        for (const char* f : kForms) {
            EXPECT_EQ(bytes(run(cpu, f, h)), bytes(run(gpu, f, d))) << f << " on " << rows << "x" << cols;
            EXPECT_EQ(bytes(run(cpu, f, strided_h)), bytes(run(gpu, f, strided_d)))
                << f << " on a strided " << rows << "x" << cols;
        }
    }
}

TEST_F(ScansGpu, FloatScansAgreeWithTheCpuBackendAndRepeatTheirBits) {
    Runtime cpu(options(Backend::Cpu)), gpu(options(Backend::Cuda));
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{3, 100000}, {4000, 7}, {1, 3000000}}) {
        const Array h = make(false, rows, cols), d = h.to(Backend::Cuda);
        for (const char* f : {"cumsum(a)", "cumsum(a, axis=1)", "cumsum(a, axis=0)", "cumsum(float32(a) * 2)"}) {
            const Array c = run(cpu, f, h), g1 = run(gpu, f, d), g2 = run(gpu, f, d);
            EXPECT_EQ(bytes(g1), bytes(g2)) << f << ": CUDA differs run to run";
            const Array cd = cpu.eval("float64(x)", {Arg(c)}), gd = cpu.eval("float64(x)", {Arg(g1.to(Backend::Cpu))});
            const std::vector<double> cv = cd.to_vector<double>(), gv = gd.to_vector<double>();
            ASSERT_EQ(cv.size(), gv.size()) << f;
            // The running sums of n values in [-1, 1] move by at most n; float32 is the coarser.
            const double tol = (std::string(f).find("float32") != std::string::npos ? 1e-3 : 1e-9) *
                               std::sqrt(static_cast<double>(cv.size()));
            std::size_t bad = 0;
            for (std::size_t i = 0; i < cv.size(); ++i)
                if (!(std::fabs(cv[i] - gv[i]) <= tol * std::max(1.0, std::fabs(cv[i])))) ++bad;
            EXPECT_EQ(bad, 0u) << f << " on " << rows << "x" << cols;
        }
    }
}

// Float16 scans round every step to float16; their association is the block-wide scan's, not
// NumPy's element-after-element one (2048 + 1 + 1 is 2050 here, 2048 in NumPy), so only values
// exact in every order are compared.
TEST_F(ScansGpu, Float16ScansAreFloat16) {
    Runtime gpu(options(Backend::Cuda));
    const Array a = Array::from(std::vector<double>{0.5, 0.25, 1, 2, -0.75}, {5}, Backend::Cpu).to(Backend::Cuda);
    const Array h = run(gpu, "cumsum(float16(a))", a);
    EXPECT_EQ(h.dtype(), DType::Float16);
    const Array r = run(gpu, "float64(cumsum(float16(a)))", a).to(Backend::Cpu);
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{0.5, 0.75, 1.75, 3.75, 3}));
}

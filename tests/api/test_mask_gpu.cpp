// Boolean-mask selection on CUDA against the CPU backend: the compaction kernels (jx_count, then
// the host reads the total and allocates, then jx_scatter) on sizes of one element, one block,
// many blocks and more than the grid cap's blocks, every dtype class, strided and 2-d inputs, a
// mask of the leading axes, the empty and the full selection, two selections by one mask, and the
// masked reductions with their empty-selection error. Exact: a compaction moves values, so CPU
// and CUDA agree bit for bit. Skips without a device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace jit;

namespace {

std::vector<unsigned char> bytes(const Array& a) {
    std::vector<unsigned char> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}

class MaskGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
        RuntimeOptions g;
        g.backend = Backend::Cuda;
        g.disk_cache = false;
        gpu_ = std::make_unique<Runtime>(g);
        RuntimeOptions c;
        c.backend = Backend::Cpu;
        c.disk_cache = false;
        cpu_ = std::make_unique<Runtime>(c);
    }
    // `text` over host arrays on the CPU and over device copies on CUDA; the results' dtype,
    // shape and bytes must be equal.
    void same(const std::string& text, const Environment& host) {
        SCOPED_TRACE(text);
        Environment dev;
        for (const auto& [n, v] : host) dev.insert_or_assign(n, v.is_array() ? Arg(v.array().to(Backend::Cuda)) : v);
        Environment h = host;
        const Array want = cpu_->run(text, h);
        const Array got = gpu_->run(text, dev);
        ASSERT_EQ(got.backend(), Backend::Cuda);
        EXPECT_EQ(got.dtype(), want.dtype());
        EXPECT_EQ(got.shape(), want.shape());
        EXPECT_EQ(bytes(got), bytes(want));
    }
    std::unique_ptr<Runtime> gpu_, cpu_;
};

Array data(std::int64_t n, DType t, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> nd(0.0, 4.0);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = std::round(nd(rng));
    const Array d = Array::from(v, Shape{n}, Backend::Cpu);
    RuntimeOptions c;
    c.backend = Backend::Cpu;
    c.disk_cache = false;
    static Runtime cpu(c);
    Environment env{{"d", Arg(d)}};
    return cpu.run(std::string(dtype_name(t)) + "(d)", env);
}

}  // namespace

TEST_F(MaskGpu, SelectionsOfEverySizeMatchTheCpu) {
    for (std::int64_t n : {1, 7, 255, 256, 257, 10000, 1000003, 40000000}) {
        SCOPED_TRACE(n);
        same("b[(a > 0) & (b < 2)]", {{"a", Arg(data(n, DType::Float32, 1))}, {"b", Arg(data(n, DType::Float32, 2))}});
    }
}

TEST_F(MaskGpu, EveryDtypeClass) {
    for (DType t : {DType::Bool, DType::Int8, DType::UInt16, DType::Int64, DType::Float16, DType::BFloat16,
                    DType::Float64, DType::Complex64, DType::Complex128}) {
        SCOPED_TRACE(dtype_name(t));
        same("a[a != 0]", {{"a", Arg(data(5000, t, 3))}});
    }
}

TEST_F(MaskGpu, EmptyFullStridedAndRows) {
    const Array a = data(3000, DType::Float64, 4);
    same("a[a > 1000]", {{"a", Arg(a)}});
    same("a[a == a]", {{"a", Arg(a)}});
    const Array m = a.reshape({300, 10});
    same("t[t > 0]", {{"t", Arg(m.transpose())}});
    same("m[m[:, 0] > 0]", {{"m", Arg(m)}});
    same("x = m[m > 0]\ny = (m * 2)[m > 0]\ny", {{"m", Arg(m)}});
}

TEST_F(MaskGpu, MaskedReductionsMatchTheCpuAndEmptyMinRaises) {
    const Array a = data(100000, DType::Float64, 5);
    for (const char* text : {"sum(a[a > 0])", "count_nonzero(a[a > 2])", "max(a[a < 0])", "any(a[a > 9])",
                             "mean(a[a > 0])", "var(a[a > 0])"}) {
        Environment h{{"a", Arg(a)}}, d{{"a", Arg(a.to(Backend::Cuda))}};
        const double want = cpu_->run(text, h).item<double>();
        const double got = gpu_->run(text, d).item<double>();
        EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << text;
    }
    Environment d{{"a", Arg(a.to(Backend::Cuda))}};
    EXPECT_THROW(gpu_->run("min(a[a > 1000])", d), ValueError);
}

// Issue 16's gaps on CUDA: a selection of rows of no element (count, 0), argmin/argmax of a
// selection (two running counts: ScanAll or ScanAxis kernels), weighted averages of selections,
// reductions and indices along a selection's other axes, and prefix views of scans. Integer
// results and compactions are exact: the bytes must be the CPU's.
TEST_F(MaskGpu, ArgExtremesRowsOfNoElementAndOtherAxesMatchTheCpu) {
    const Array a = data(100003, DType::Float64, 6);
    const Array m = data(3000, DType::Int32, 7).reshape({300, 10});
    const Array e = data(0, DType::Float32, 8).reshape({0});
    for (const char* text :
         {"argmin(a[a > 0])", "argmax(a[a < 3])", "argmax(a[(a > 1) & (a < 4)])", "argmin(a[a > 0], keepdims=True)"})
        same(text, {{"a", Arg(a)}});
    for (const char* text :
         {"argmax(m[m[:, 0] > 0], axis=0)", "argmin(m[m[:, 1] > 0], axis=1)", "argmin(m[m > 2])",
          "sum(m[m[:, 0] > 0], axis=1)", "m[m[:, 0] > 0][:, ::-3]", "cumsum(m, axis=1)[:, :4]", "cumsum(m[0])[:7] * 2"})
        same(text, {{"m", Arg(m)}});
    Environment h{{"a", Arg(a)}}, d{{"a", Arg(a.to(Backend::Cuda))}};
    const char* avg = "average(a[a > 0], weights=abs(a)[a > 0])";
    EXPECT_NEAR(gpu_->run(avg, d).item<double>(), cpu_->run(avg, h).item<double>(), 1e-12);
    const Array rows = m.reshape({3000, 1});
    Environment hr{{"r", Arg(cpu_->eval("r[:, :0]", Named{{"r", rows}}))}, {"m", Arg(m.reshape({3000}))}};
    Environment dr;
    for (const auto& [n, v] : hr) dr.insert_or_assign(n, Arg(v.array().to(Backend::Cuda)));
    const Array want = cpu_->run("r[m > 0]", hr);
    const Array got = gpu_->run("r[m > 0]", dr);
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_GT(want.shape()[0], 0);
    EXPECT_EQ(want.shape()[1], 0);
    Environment de{{"e", Arg(e.to(Backend::Cuda))}};
    EXPECT_THROW(gpu_->run("argmin(e[e > 0])", de), ValueError);
}

// New arrays in the axis order of the arrays they are computed from (run/order.hpp): NumPy's
// order 'K' for element-wise work, at Runtime::eval, run, run_into and explain, on the CPU
// backend. (test_layouts_gpu runs the same calls on CUDA against the CPU, bit for bit.)
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

std::vector<double> iota(std::int64_t n, double from = 0) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = from + static_cast<double>(i);
    return v;
}

// A (rows, cols) array in Fortran order: the transpose of a C-contiguous (cols, rows) one.
Array fortran(std::int64_t rows, std::int64_t cols, double from = 0) {
    return Array::from(iota(rows * cols, from), {cols, rows}, Backend::Cpu).transpose();
}

// The values of `a` in C order.
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

std::vector<double> expected(const Array& a, double mul, double add) {
    std::vector<double> v = values(a);
    for (double& x : v) x = x * mul + add;
    return v;
}

TEST(AxisOrder, ANewArrayKeepsItsInputsFortranOrder) {
    const Array a = fortran(3, 5);
    const Array r = cpu().eval("a * 2 + 1", {{"a", a}});
    EXPECT_EQ(r.shape(), (Shape{3, 5}));
    EXPECT_EQ(r.strides(), (Strides{1, 3}));
    EXPECT_EQ(values(r), expected(a, 2, 1));
}

TEST(AxisOrder, EveryArrayInOnePermutationOfThreeAxesGivesThatPermutation) {
    // C-contiguous memory of shape (4, 2, 3) seen as (2, 3, 4): strides (3, 1, 6), axis order
    // (2, 0, 1) by decreasing stride.
    const Array pm = Array::from(iota(24), {4, 2, 3}, Backend::Cpu);
    const Array qm = Array::from(iota(24, 100), {4, 2, 3}, Backend::Cpu);
    const Array p = Array::view(pm.data(), DType::Float64, {2, 3, 4}, {3, 1, 6}, Backend::Cpu);
    const Array q = Array::view(qm.data(), DType::Float64, {2, 3, 4}, {3, 1, 6}, Backend::Cpu);
    const Array r = cpu().eval("p - q / 4", {{"p", p}, {"q", q}});
    EXPECT_EQ(r.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(r.strides(), (Strides{3, 1, 6}));
    std::vector<double> want = values(p), qv = values(q);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] -= qv[i] / 4;
    EXPECT_EQ(values(r), want);
}

TEST(AxisOrder, ArraysInDifferentOrdersGiveCOrder) {
    const Array f = fortran(4, 6);
    const Array c = Array::from(iota(24), {4, 6}, Backend::Cpu);
    const Array r = cpu().eval("f + c", {{"f", f}, {"c", c}});
    EXPECT_TRUE(r.is_contiguous());
    std::vector<double> want = values(f), cv = values(c);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += cv[i];
    EXPECT_EQ(values(r), want);
}

TEST(AxisOrder, ScalarsCastsAndZeroDimensionalArraysKeepTheOrder) {
    const Array a = fortran(5, 7);
    const Array z = Array::empty(DType::Float64, {}, Backend::Cpu);  // 0-d, as a NumPy scalar is
    *static_cast<double*>(z.data()) = 1.0;
    Environment env{{"a", Arg(a)}, {"s", Arg(3.0)}, {"z", Arg(z)}};
    const Array r = cpu().run("int32(a * s + z) > 20", env);
    EXPECT_EQ(r.dtype(), DType::Bool);
    EXPECT_EQ(r.strides(), (Strides{1, 5}));
    std::vector<std::uint8_t> want;
    for (double x : values(a)) want.push_back(static_cast<std::int32_t>(x * 3 + 1) > 20);
    EXPECT_EQ(r.to_vector<std::uint8_t>(), want);
    EXPECT_EQ(env.at("z").array().data(), z.data());
    EXPECT_EQ(env.at("z").array().ndim(), 0);
}

TEST(AxisOrder, ReductionsSlicesAndBroadcastsKeepCOrder) {
    const Array a = fortran(4, 6);
    const Array total = cpu().eval("a * 2 + sum(a)", {{"a", a}});
    EXPECT_TRUE(total.is_contiguous());
    const Array sliced = cpu().eval("a[1:] * 2", {{"a", a}});
    EXPECT_TRUE(sliced.is_contiguous());
    EXPECT_EQ(values(sliced), expected(a.slice(0, 1, 4), 2, 0));
    const Array row = Array::from(iota(6), {6}, Backend::Cpu);
    const Array broadcast = cpu().eval("a + r", {{"a", a}, {"r", row}});
    EXPECT_TRUE(broadcast.is_contiguous());
    const Array cumulative = cpu().eval("cumsum(a, axis=1)", {{"a", a}});
    EXPECT_TRUE(cumulative.is_contiguous());
}

TEST(AxisOrder, AnAssignedNewNameKeepsTheOrderAndTheLastValueToo) {
    const Array a = fortran(3, 4);
    Environment env{{"a", Arg(a)}};
    const Array r = cpu().run("c = a + 1; c * 10", env);
    const Array& c = env.at("c").array();
    EXPECT_EQ(c.strides(), (Strides{1, 3}));
    EXPECT_EQ(values(c), expected(a, 1, 1));
    EXPECT_EQ(r.strides(), (Strides{1, 3}));
    EXPECT_EQ(values(r), expected(a, 10, 10));
}

TEST(AxisOrder, AWriteInPlaceKeepsTheCallersArray) {
    const Array a = fortran(3, 4);
    const std::vector<double> before = values(a);
    Environment env{{"a", Arg(a)}};
    cpu().run("a = a * 2", env);
    const Array& now = env.at("a").array();
    EXPECT_EQ(now.data(), a.data());
    EXPECT_EQ(now.strides(), a.strides());
    std::vector<double> want = before;
    for (double& x : want) x *= 2;
    EXPECT_EQ(values(a), want);
}

TEST(AxisOrder, RunIntoAFortranOutWritesItsMemory) {
    const Array a = fortran(3, 4);
    const Array out = fortran(3, 4, 50);
    Environment env{{"a", Arg(a)}};
    const Array r = cpu().run_into("a - 1", env, out);
    EXPECT_EQ(r.data(), out.data());
    EXPECT_EQ(values(out), expected(a, 1, -1));
}

TEST(AxisOrder, RunIntoACOrderOutFromFortranInputs) {
    const Array a = fortran(3, 4);
    const Array out = Array::zeros(DType::Float64, {3, 4}, Backend::Cpu);
    Environment env{{"a", Arg(a)}};
    cpu().run_into("a - 1", env, out);
    EXPECT_EQ(values(out), expected(a, 1, -1));
}

TEST(AxisOrder, ExplainSaysTheOrder) {
    const Array a = fortran(3, 4);
    const std::string text = cpu().explain("a * 2", {{"a", Arg(a)}});
    EXPECT_NE(text.find("axis order: every array lies in memory in the axis order (1, 0)"), std::string::npos) << text;
    const std::string mixed =
        cpu().explain("a * b", {{"a", Arg(a)}, {"b", Arg(Array::zeros(DType::Float64, {3, 4}, Backend::Cpu))}});
    EXPECT_EQ(mixed.find("axis order"), std::string::npos) << mixed;
}

TEST(AxisOrder, AnErrorPointsAtTheTextAsWithoutTheOrder) {
    const Array a = fortran(3, 4);
    try {
        cpu().eval("a + nosuch", {{"a", a}});
        FAIL() << "no error";
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("nosuch"), std::string::npos) << e.what();
    }
}

}  // namespace

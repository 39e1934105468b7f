// The scans on the CPU backend through Runtime::run: values against a running fold written out
// here (NumPy's order, element after element), rows longer than one block, strided and
// transposed operands, the fused producer and consumer, NumPy's float16 rounding, NaN scans,
// in-place assignment, and the same bits whatever the thread count. (NumPy itself is the
// reference of the differential suite, tests/python/test_scans_numpy_diff.py.)
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu(int threads = 0) {
    auto make = [](int t) {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        if (t > 0) o.cpu_threads = t;
        return o;
    };
    static Runtime one(make(1)), many(make(0));
    return threads == 1 ? one : many;
}

Array run(const std::string& text, const Array& a, int threads = 0) {
    Environment env;
    env.insert_or_assign("a", Arg(a));
    return cpu(threads).run(text, env);
}

std::vector<double> iota(std::size_t n, double from = 1) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<double>(i % 7);
    return v;
}

// The running sum of each row of a rows x cols matrix along its last axis.
std::vector<double> row_sums(const std::vector<double>& x, std::size_t rows, std::size_t cols) {
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < rows; ++i) {
        double c = 0;
        for (std::size_t j = 0; j < cols; ++j) r[i * cols + j] = c += x[i * cols + j];
    }
    return r;
}

}  // namespace

TEST(ScansCpu, CumsumOfAMatrixRunsOverEveryElementInCOrder) {
    const Array a = Array::from(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    const Array r = run("cumsum(a)", a);
    EXPECT_EQ(r.shape(), (Shape{6}));
    EXPECT_EQ(r.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3, 6, 10, 15, 21}));
}

TEST(ScansCpu, CumprodAlongEachAxis) {
    const Array a = Array::from(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    EXPECT_EQ(run("cumprod(a, axis=0)", a).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 3, 4, 10, 18}));
    EXPECT_EQ(run("cumprod(a, -1)", a).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 6, 4, 20, 120}));
}

TEST(ScansCpu, NarrowIntegersScanAsInt64AndWrapThere) {
    const Array a = Array::from(std::vector<std::int8_t>{100, 100, 100}, {3}, Backend::Cpu);
    const Array r = run("cumsum(a)", a);
    EXPECT_EQ(r.dtype(), DType::Int64);
    EXPECT_EQ(r.to_vector<std::int64_t>(), (std::vector<std::int64_t>{100, 200, 300}));
    const Array big =
        Array::from(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), 1}, {2}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a)", big).to_vector<std::int64_t>()[1], std::numeric_limits<std::int64_t>::min());
}

TEST(ScansCpu, RowsLongerThanABlockCarryFromBlockToBlock) {
    const std::size_t rows = 3, cols = 2000;
    const std::vector<double> x = iota(rows * cols);
    const Array a = Array::from(x, {3, 2000}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a, axis=1)", a).to_vector<double>(), row_sums(x, rows, cols));
    // Every element in one row: the flattened matrix.
    EXPECT_EQ(run("cumsum(a)", a).to_vector<double>(), row_sums(x, 1, rows * cols));
}

TEST(ScansCpu, ManyShortRowsShareBlocks) {
    const std::size_t rows = 1000, cols = 3;
    const std::vector<double> x = iota(rows * cols);
    const Array a = Array::from(x, {1000, 3}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a, axis=1)", a).to_vector<double>(), row_sums(x, rows, cols));
}

TEST(ScansCpu, AnOuterAxisOfATransposedViewIsScannedInItsOwnOrder) {
    const std::vector<double> x = iota(12);
    const Array a = Array::from(x, {3, 4}, Backend::Cpu).transpose();  // (4, 3), strides (1, 4)
    std::vector<double> t(12);                                         // the transposed values in C order
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 3; ++j) t[i * 3 + j] = x[j * 4 + i];
    EXPECT_EQ(run("cumsum(a, axis=1)", a).to_vector<double>(), row_sums(t, 4, 3));
    EXPECT_EQ(run("cumsum(a)", a).to_vector<double>(), row_sums(t, 1, 12));
}

TEST(ScansCpu, AStridedOperandIsScannedThroughItsStrides) {
    const std::vector<double> x = iota(20);
    const Array a = Array::from(x, {20}, Backend::Cpu).slice(0, 1, 20, 3);  // x[1::3]
    std::vector<double> picked;
    for (std::size_t i = 1; i < 20; i += 3) picked.push_back(x[i]);
    EXPECT_EQ(run("cumsum(a)", a).to_vector<double>(), row_sums(picked, 1, picked.size()));
}

TEST(ScansCpu, TheProducerAndTheConsumerAreComputedAroundTheScan) {
    const std::vector<double> x = iota(6);
    const Array a = Array::from(x, {2, 3}, Backend::Cpu);
    std::vector<double> twice(6);
    for (std::size_t i = 0; i < 6; ++i) twice[i] = x[i] * 2 + 1;
    std::vector<double> want = row_sums(twice, 2, 3);
    for (double& w : want) w /= 4;
    EXPECT_EQ(run("cumsum(a * 2 + 1, axis=1) / 4", a).to_vector<double>(), want);
}

TEST(ScansCpu, Float16AccumulatesInFloat16AsNumPy) {
    // 2048 + 1 rounds back to 2048 in float16 at every step: NumPy gives [2048, 2048, 2048].
    const Array a = run("float16(a)", Array::from(std::vector<double>{2048, 1, 1}, {3}, Backend::Cpu));
    const Array r = run("float64(cumsum(a))", a);
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{2048, 2048, 2048}));
}

TEST(ScansCpu, NanScansCountNanAsTheIdentity) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Array a = Array::from(std::vector<double>{2, nan, 3}, {3}, Backend::Cpu);
    EXPECT_EQ(run("nancumsum(a)", a).to_vector<double>(), (std::vector<double>{2, 2, 5}));
    EXPECT_EQ(run("nancumprod(a)", a).to_vector<double>(), (std::vector<double>{2, 2, 6}));
    const std::vector<double> plain = run("cumsum(a)", a).to_vector<double>();
    EXPECT_EQ(plain[0], 2);
    EXPECT_TRUE(std::isnan(plain[1]) && std::isnan(plain[2]));
}

TEST(ScansCpu, TheFirstElementOfARowIsItsOwnValue) {
    // NumPy copies it: a row starting with -0.0 keeps the sign (0.0 + -0.0 would not).
    const Array a = Array::from(std::vector<double>{-0.0, -0.0, -0.0, 1}, {2, 2}, Backend::Cpu);
    const std::vector<double> rows = run("cumsum(a, axis=1)", a).to_vector<double>();
    EXPECT_TRUE(std::signbit(rows[0]) && std::signbit(rows[1]) && std::signbit(rows[2]));
    EXPECT_TRUE(std::signbit(run("cumsum(a)", a).to_vector<double>()[0]));
}

TEST(ScansCpu, AZeroDimensionalOperandGivesOneElement) {
    const Array a = Array::from(std::vector<double>{5}, {}, Backend::Cpu);
    const Array r = run("cumsum(a, axis=-1)", a);
    EXPECT_EQ(r.shape(), (Shape{1}));
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{5}));
}

TEST(ScansCpu, AnEmptyOperandGivesAnEmptyResult) {
    const Array a = Array::zeros(DType::Float64, {0, 3}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a, axis=0)", a).shape(), (Shape{0, 3}));
    EXPECT_EQ(run("cumsum(a)", a).shape(), (Shape{0}));
}

TEST(ScansCpu, AssigningAScanToItsOperandReadsTheOldValues) {
    const Array a = Array::from(std::vector<double>{1, 2, 3, 4}, {4}, Backend::Cpu);
    Environment env;
    env.insert_or_assign("a", Arg(a));
    cpu().run("a = cumsum(a)", env);
    EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1, 3, 6, 10}));
}

TEST(ScansCpu, OneThreadAndManyGiveTheSameBits) {
    std::vector<double> x(64 * 3000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i)) * 1e3;
    const Array a = Array::from(x, {64, 3000}, Backend::Cpu);
    for (const char* text : {"cumsum(a * 0.5, axis=1)", "cumsum(a, axis=0)", "cumprod(1 + a * 1e-6)"}) {
        const Array one = run(text, a, 1), many = run(text, a);
        ASSERT_EQ(one.nbytes(), many.nbytes()) << text;
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.nbytes()), 0) << text;
    }
}

// A view that keeps the scanned axis from its start is the scan of the operand's view, the same
// bits (cumsum(a)[:k] is cumsum(a[:k]), cumsum(c, axis=1)[0] is cumsum(c[0])); any other index of
// the scanned axis is a ValueError with a caret under the indexed scan (issue 16: it was
// refused for every view, and a view of a mask made from a scan too).
TEST(ScansCpu, AViewKeepingTheScannedAxisFromItsStartIsTheScanOfTheView) {
    const Array a = Array::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a, axis=1)[1]", a).to_vector<double>(), (std::vector<double>{4, 9, 15}));
    EXPECT_EQ(run("cumsum(a, axis=1)[:, :2]", a).to_vector<double>(), (std::vector<double>{1, 3, 4, 9}));
    EXPECT_EQ(run("cumsum(a, axis=0)[None, :, ::-1]", a).shape(), (Shape{1, 2, 3}));
    EXPECT_EQ(run("cumsum(a, axis=0)[None, :, ::-1]", a).to_vector<double>(), (std::vector<double>{3, 2, 1, 9, 7, 5}));
    const Array v = Array::from(std::vector<std::int64_t>{3, 1, 4, 1, 5}, {5}, Backend::Cpu);
    EXPECT_EQ(run("cumsum(a)[:3]", v).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 4, 8}));
    EXPECT_EQ(run("cumprod(a)[None, :2]", v).shape(), (Shape{1, 2}));
    EXPECT_EQ(run("a[cumsum(a) > 4]", v).to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 1, 5}));
    EXPECT_EQ(run("sum(cumsum(a)[:-1])", v).item<std::int64_t>(), 3 + 4 + 8 + 9);
}

TEST(ScansCpu, AnyOtherIndexOfTheScannedAxisIsAValueErrorWithACaret) {
    const Array v = Array::from(std::vector<double>{3, 1, 4, 1, 5}, {5}, Backend::Cpu);
    const Array m = Array::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    for (const char* text :
         {"cumsum(a)[-1]", "cumsum(a)[1:] - cumsum(a)[:-1]", "cumsum(a)[::-1]", "nancumprod(a)[::2]"}) {
        SCOPED_TRACE(text);
        try {
            run(text, v);
            FAIL() << "no error";
        } catch (const ValueError& e) {
            EXPECT_NE(std::string(e.message()).find("only by a prefix slice"), std::string::npos) << e.message();
            EXPECT_EQ(e.span().begin, 0u);
        }
    }
    EXPECT_THROW(run("cumsum(a)[:2]", m), ValueError);  // the flattened matrix: no view of a's own
    EXPECT_THROW(run("cumsum(a, axis=1)[:, -1]", m), ValueError);
}

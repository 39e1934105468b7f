// Boolean-mask selection (a[a > 0], b[(a > 0) & (b < 1)], b[m] with m over b's leading axes) at
// the C++ entry points: Runtime::run, jit::eval (by name and positionally), jit::compile,
// run_into, explain and jit::check. Values are NumPy 2's for the same Python code; the NumPy
// differential tests (tests/python/test_mask.py) cover every dtype, strided inputs and the
// empty and full selections.
#include <jit/check.hpp>
#include <jit/jit.hpp>

#include "dsl/plan.hpp"
#include "dsl/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
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

template <class T>
Array host(std::vector<T> v, Shape s = {}) {
    return Array::from(v, std::move(s), Backend::Cpu);
}

const std::vector<double> kA{-1, 2, -3, 4, 5, -6};
const std::vector<double> kB{0.5, 1.5, 0.25, 0.75, 2.0, -1.0};

// `text` over a and b (run() takes names the program does not use; eval by name does not).
Array eval_ab(const std::string& text) {
    Environment env{{"a", Arg(host(kA))}, {"b", Arg(host(kB))}};
    return cpu().run(text, env);
}

// The plan of `text` over float64 arrays a and b of shape `s` and a bool array m of shape `ms`.
ir::Plan plan_of(const std::string& text, const Shape& s, const Shape& ms = {6}) {
    dsl::Binding f, m;
    f.kind = m.kind = dsl::Binding::Kind::Array;
    f.dtype = DType::Float64;
    m.dtype = DType::Bool;
    f.shape = s;
    f.strides = contiguous_strides(s);
    m.shape = ms;
    m.strides = contiguous_strides(ms);
    dsl::Bindings bs;
    bs.lookup = [f, m](std::string_view n) -> const dsl::Binding* {
        if (n == "a" || n == "b") return &f;
        return n == "m" ? &m : nullptr;
    };
    return dsl::plan(text, bs, {});
}

int stages_of(const ir::Plan& p, ir::Stage::Kind k) {
    int n = 0;
    for (const ir::Stage& st : p.schedule.stages) n += st.kind == k ? 1 : 0;
    return n;
}

}  // namespace

TEST(Mask, SelectsTheTrueElementsInOrder) {
    const Array r = eval_ab("a[a > 0]");
    EXPECT_EQ(r.shape(), (Shape{3}));
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{2, 4, 5}));
    EXPECT_EQ(eval_ab("b[(a > 0) & (b < 1)]").to_vector<double>(), (std::vector<double>{0.75}));
    EXPECT_EQ(eval_ab("b[(a < 0) | (b > 1)]").to_vector<double>(), (std::vector<double>{0.5, 1.5, 0.25, 2.0, -1.0}));
}

TEST(Mask, ATwoDimensionalMaskSelectsInCOrder) {
    const Array a = host(std::vector<std::int32_t>{1, -2, 3, -4, 5, 6}, {2, 3});
    const Array r = cpu().eval("a[a > 0]", Named{{"a", a}});
    EXPECT_EQ(r.shape(), (Shape{4}));
    EXPECT_EQ(r.dtype(), DType::Int32);
    EXPECT_EQ(r.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 3, 5, 6}));
}

TEST(Mask, AMaskOfTheLeadingAxesSelectsRows) {
    const Array b = host(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8}, {3, 3});
    const Array m = host(std::vector<std::uint8_t>{1, 0, 1}, {3});
    const Array mb = cpu().eval("m != 0", Named{{"m", m}});
    const Array r = cpu().eval("b[m]", Named{{"b", b}, {"m", mb}});
    EXPECT_EQ(r.shape(), (Shape{2, 3}));
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 1, 2, 6, 7, 8}));
    // Reductions along the selected rows, and over every element.
    EXPECT_EQ(cpu().eval("sum(b[m], axis=0)", Named{{"b", b}, {"m", mb}}).to_vector<float>(),
              (std::vector<float>{6, 8, 10}));
    EXPECT_EQ(cpu().eval("sum(b[m])", Named{{"b", b}, {"m", mb}}).item<float>(), 24.0f);
    EXPECT_EQ(cpu().eval("b[m] * b[0]", Named{{"b", b}, {"m", mb}}).to_vector<float>(),
              (std::vector<float>{0, 1, 4, 0, 7, 16}));
}

TEST(Mask, EmptyAndFullSelections) {
    const Array none = eval_ab("a[a > 100]");
    EXPECT_EQ(none.shape(), (Shape{0}));
    EXPECT_EQ(none.dtype(), DType::Float64);
    EXPECT_EQ(eval_ab("a[a == a]").to_vector<double>(), kA);
    EXPECT_EQ(eval_ab("sum(a[a > 100])").item<double>(), 0.0);
    EXPECT_EQ(eval_ab("count_nonzero(a[a > 100])").item<std::int64_t>(), 0);
    EXPECT_TRUE(std::isnan(eval_ab("mean(a[a > 100])").item<double>()));
    EXPECT_TRUE(std::isnan(eval_ab("var(a[a > 100])").item<double>()));
    EXPECT_FALSE(eval_ab("any(a[a > 100])").item<bool>());
    EXPECT_TRUE(eval_ab("all(a[a > 100])").item<bool>());
}

TEST(Mask, LargeSelectionKeepsOrderAcrossBlocksAndThreads) {
    const int n = 300001;
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (i * 7919LL) % 1000 - 500;
    std::vector<std::int64_t> want;
    for (auto x : v)
        if (x % 3 == 0) want.push_back(x * 2);
    const Array r = cpu().eval("(a * 2)[a % 3 == 0]", Named{{"a", host(v)}});
    EXPECT_EQ(r.to_vector<std::int64_t>(), want);
}

TEST(Mask, ReductionsOfSelectionsAreMaskedReductions) {
    EXPECT_EQ(eval_ab("sum(b[a > 0])").item<double>(), 1.5 + 0.75 + 2.0);
    EXPECT_EQ(eval_ab("prod(b[a > 0])").item<double>(), 1.5 * 0.75 * 2.0);
    EXPECT_DOUBLE_EQ(eval_ab("mean(b[a > 0])").item<double>(), (1.5 + 0.75 + 2.0) / 3);
    EXPECT_EQ(eval_ab("min(b[a > 0])").item<double>(), 0.75);
    EXPECT_EQ(eval_ab("max(b[a < 0])").item<double>(), 0.5);
    EXPECT_EQ(eval_ab("ptp(a[a > 0])").item<double>(), 3.0);
    EXPECT_EQ(eval_ab("count_nonzero(b[a > 0] > 1)").item<std::int64_t>(), 2);
    EXPECT_TRUE(eval_ab("any(b[a > 0] > 1.9)").item<bool>());
    EXPECT_FALSE(eval_ab("all(b[a > 0] > 1)").item<bool>());
    const double m = (1.5 + 0.75 + 2.0) / 3;
    const double ss = (1.5 - m) * (1.5 - m) + (0.75 - m) * (0.75 - m) + (2.0 - m) * (2.0 - m);
    EXPECT_DOUBLE_EQ(eval_ab("var(b[a > 0])").item<double>(), ss / 3);
    EXPECT_DOUBLE_EQ(eval_ab("std(b[a > 0], ddof=1)").item<double>(), std::sqrt(ss / 2));
    // An integer selection's sum is int64 and its mean float64, as NumPy's.
    const Array i8 = host(std::vector<std::int8_t>{100, 100, -5, 100});
    const Array s = cpu().eval("sum(i[i > 0])", Named{{"i", i8}});
    EXPECT_EQ(s.dtype(), DType::Int64);
    EXPECT_EQ(s.item<std::int64_t>(), 300);
    EXPECT_EQ(cpu().eval("max(i[i < 0])", Named{{"i", i8}}).item<std::int64_t>(), -5);
}

TEST(Mask, AReductionOfASelectionComputesNoCompaction) {
    for (const char* text : {"sum(b[a > 0])", "mean(b[(a > 0) & (b < 1)])", "min(a[a > 0])", "var(b[a > 0])",
                             "c = b[a > 0]\ns = sum(c)"}) {
        SCOPED_TRACE(text);
        const ir::Plan p = plan_of(text, {6});
        const bool stores_c = std::string(text).find("c =") != std::string::npos;  // c itself is stored
        EXPECT_EQ(stages_of(p, ir::Stage::Kind::Compact), stores_c ? 1 : 0);
        EXPECT_GE(stages_of(p, ir::Stage::Kind::Reduce), 1);
    }
}

TEST(Mask, MinOfAnEmptySelectionIsAValueErrorWithACaret) {
    const std::string text = "s = min(a[a > 100])";
    Environment env{{"a", Arg(host(kA))}};
    try {
        cpu().run(text, env);
        FAIL() << "no error";
    } catch (const ValueError& e) {
        EXPECT_EQ(e.message(), "min() of an empty array has no value");
        EXPECT_EQ(e.span().begin, 4u);
        EXPECT_EQ(e.span().end, text.size());
    }
    EXPECT_EQ(env.count("s"), 0u);  // nothing is bound by a call that raised
    EXPECT_THROW(eval_ab("max(a[a > 100])"), ValueError);
    EXPECT_THROW(eval_ab("ptp(a[a > 100])"), ValueError);
    EXPECT_EQ(eval_ab("max(a[a > 4])").item<double>(), 5.0);  // one element is enough
}

TEST(Mask, ElementwiseWorkOnASelectionWorksOnTheResult) {
    EXPECT_EQ(eval_ab("b[a > 0] * 2").to_vector<double>(), (std::vector<double>{3, 1.5, 4}));
    EXPECT_EQ(eval_ab("b[a > 0] - a[a > 0]").to_vector<double>(), (std::vector<double>{-0.5, -3.25, -3}));
    EXPECT_EQ(eval_ab("where(a[a > 0] > 3, 1.0, b[a > 0])").to_vector<double>(), (std::vector<double>{1.5, 1, 1}));
    EXPECT_EQ(eval_ab("float32(a[a > 0]) + 1").dtype(), DType::Float32);
    EXPECT_EQ(eval_ab("b[a > 0] - mean(b[a > 0])").to_vector<double>().size(), 3u);
    // Two selections by the same mask are compacted in one pass.
    const ir::Plan p = plan_of("x = a[m]\ny = b[m] * 2", {6});
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Compact), 1);
}

TEST(Mask, AnAssignedSelectionIsANewArrayAndStaysFusedLater) {
    Environment env{{"a", Arg(host(kA))}, {"b", Arg(host(kB))}, {"c", Arg(host(std::vector<double>{9, 9, 9}))}};
    const Array c_before = env.at("c").array();
    const Array s = cpu().run("c = b[a > 0]\nd = c * 10\ns = sum(c)", env);
    EXPECT_EQ(s.item<double>(), 4.25);
    EXPECT_EQ(env.at("c").array().to_vector<double>(), (std::vector<double>{1.5, 0.75, 2}));
    EXPECT_EQ(env.at("d").array().to_vector<double>(), (std::vector<double>{15, 7.5, 20}));
    // Rebound, not written in place: the old array is as it was.
    EXPECT_EQ(c_before.to_vector<double>(), (std::vector<double>{9, 9, 9}));
    // A name bound to a selection of itself.
    cpu().run("a = a[a > 0]", env);
    EXPECT_EQ(env.at("a").array().to_vector<double>(), (std::vector<double>{2, 4, 5}));
}

TEST(Mask, StridedInputsAreSelectedThroughTheirStrides) {
    const Array m = host(std::vector<double>{1, -2, 3, -4, 5, -6, 7, -8}, {4, 2});
    const Array t = m.transpose();  // (2, 4): rows 1, 3, 5, 7 and -2, -4, -6, -8
    EXPECT_EQ(cpu().eval("t[t > 0]", Named{{"t", t}}).to_vector<double>(), (std::vector<double>{1, 3, 5, 7}));
    EXPECT_EQ(cpu().eval("t[::-1][t[::-1] < -3]", Named{{"t", t}}).to_vector<double>(),
              (std::vector<double>{-4, -6, -8}));
    EXPECT_EQ(cpu().eval("sum(t[t < 0])", Named{{"t", t}}).item<double>(), -20.0);
}

TEST(Mask, EveryEntryPointSelects) {
    const Array a = host(kA);
    EXPECT_EQ(cpu().eval("a[a > 0]", std::vector<Arg>{a}).to_vector<double>(), (std::vector<double>{2, 4, 5}));
    const Kernel k = jit::compile("x[x < 0] * y", cpu());
    EXPECT_EQ(k(a, 2.0).to_vector<double>(), (std::vector<double>{-2, -6, -12}));
    EXPECT_EQ(k({{"x", a}, {"y", 1.0}}).to_vector<double>(), (std::vector<double>{-1, -3, -6}));
    Environment env{{"a", Arg(a)}};
    try {
        cpu().run_into("a[a > 0]", env, host(std::vector<double>(3)));
        FAIL() << "no error";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.message()).find("out= cannot take a boolean-mask selection"), std::string::npos);
    }
}

TEST(Mask, CheckSaysTheLengthIsTheDatas) {
    const CheckedProgram c =
        jit::check("r = b[b > 0]\ns = sum(b[b > 0])", {{"b", ValueSpec::array(DType::Float32, {4, 5})}});
    ASSERT_EQ(c.assigned.size(), 2u);
    EXPECT_EQ(c.assigned[0].shape, (Shape{20}));
    EXPECT_TRUE(c.assigned[0].length_from_data);
    EXPECT_FALSE(c.assigned[1].length_from_data);
    EXPECT_EQ(c.assigned[1].shape, (Shape{}));
}

TEST(Mask, ExplainDescribesTheCompaction) {
    Environment env{{"a", Arg(host(kA))}};
    ExplainOptions o;
    o.bandwidth_gbs = 10;
    const std::string text = cpu().explain("r = a[a > 0] * 2", env, o);
    EXPECT_NE(text.find("compaction (boolean-mask selection) over (6,), stores r"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel compact blocks"), std::string::npos) << text;
    EXPECT_NE(text.find("-> r float64 (<= 6,)"), std::string::npos) << text;
}

TEST(Mask, IndexErrorsAreNumPys) {
    const Array a = host(kA);
    const Array m3 = cpu().eval("x > 0", Named{{"x", host(std::vector<double>{1, 2, 3})}});
    try {
        cpu().eval("a[m]", Named{{"a", a}, {"m", m3}});
        FAIL() << "no error";
    } catch (const IndexError& e) {
        EXPECT_EQ(e.message(),
                  "boolean index did not match indexed array along axis 0; size of axis is 6 but size of "
                  "corresponding boolean axis is 3");
        EXPECT_EQ(e.span().begin, 2u);
        EXPECT_EQ(e.span().end, 3u);
    }
    EXPECT_THROW(cpu().eval("a[a > 0][0]", Named{{"a", a}}), ValueError);
    EXPECT_THROW(cpu().eval("a[a]", Named{{"a", a}}), ValueError);  // not bool: no mask
}

TEST(Mask, EveryMaskPlanKeepsTheIrInvariants) {
    for (const char* text :
         {"a[a > 0]", "b[(a > 0) & (b < 1)]", "sum(b[a > 0])", "mean(a[m], axis=0)", "c = a[m]\nd = c + 1",
          "a[m] * b[m] + 1", "nanmax(a[m])", "std(a[a > 0], ddof=1, keepdims=True)", "x, y = divmod(a[m], 2)",
          "a = a[a > 0]", "max(a[m]) + min(b[m])"}) {
        SCOPED_TRACE(text);
        EXPECT_NO_THROW(ir::verify(plan_of(text, {6})));
    }
    EXPECT_NO_THROW(ir::verify(plan_of("a[m]", {6, 2})));
    EXPECT_NO_THROW(ir::verify(plan_of("sum(a[m], axis=0)", {6, 2})));
    // issue 16's forms: rows of no element, argmin/argmax (two scans), weighted averages,
    // reductions and views along the other axes, prefix views of scans
    for (const char* text : {"a[m]", "c = (a * 2)[m]\nd = b[m]", "sum(a[m], axis=1)"}) {
        SCOPED_TRACE(text);
        EXPECT_NO_THROW(ir::verify(plan_of(text, {6, 0})));
    }
    for (const char* text :
         {"argmin(a[m])", "argmax(a[m], axis=0)", "argmin(a[m], axis=1, keepdims=True)", "average(a[m], weights=b[m])",
          "average(a[m], axis=0, weights=b[m])", "sum(a[m], axis=1)", "a[m][:, ::-1] + 1", "std(a[m], axis=-1, ddof=1)",
          "cumsum(a, axis=1)[:, :1]", "a[cumsum(a, axis=0)[:, 0] > 0]"}) {
        SCOPED_TRACE(text);
        EXPECT_NO_THROW(ir::verify(plan_of(text, {6, 2})));
    }
    EXPECT_NO_THROW(ir::verify(plan_of("argmax(a[a > 0], keepdims=True) + argmin(b[m])", {6})));
}

// A scan or an order statistic of a selection would run over the unselected values too: both
// are refused (found after the merge with the scans: cumsum(a[a > 2]) scanned all of a).
TEST(Mask, AScanOrOrderStatisticOfASelectionIsAValueError) {
    EXPECT_THROW(eval_ab("cumsum(a[a > 2])"), ValueError);
    EXPECT_THROW(eval_ab("nancumprod(b[a > 2], axis=0)"), ValueError);
    EXPECT_THROW(eval_ab("median(a[a > 2])"), ValueError);
}

// b[m] where b's other axes hold no element: NumPy's (count, 0), not (0, 0) (issue 16); every
// zero-size form of a selection keeps NumPy's shape.
TEST(Mask, RowsOfNoElementAreCountedAsNumPyCountsThem) {
    const Array a = host(std::vector<double>{1, -2, 3, 0.5}, {4});
    const Array m = cpu().eval("a > 0", Named{{"a", a}});
    const Array b = host(std::vector<double>{}, {4, 0});
    const Array r = cpu().eval("b[m]", Named{{"b", b}, {"m", m}});
    EXPECT_EQ(r.shape(), (Shape{3, 0}));
    EXPECT_EQ(r.dtype(), DType::Float64);
    const Array c = host(std::vector<std::int16_t>{}, {4, 2, 0});
    EXPECT_EQ(cpu().eval("c[a > 0] + 1", Named{{"c", c}, {"a", a}}).shape(), (Shape{3, 2, 0}));
    EXPECT_EQ(cpu().eval("c[a > 5]", Named{{"c", c}, {"a", a}}).shape(), (Shape{0, 2, 0}));
    Environment env{{"b", Arg(b)}, {"a", Arg(a)}};
    EXPECT_EQ(cpu().run("r = b[a > 0]\ns = b[a < 0]", env).shape(), (Shape{1, 0}));
    EXPECT_EQ(env.at("r").array().shape(), (Shape{3, 0}));
    EXPECT_EQ(jit::compile("x[y > 0]", cpu())({{"x", b}, {"y", a}}).shape(), (Shape{3, 0}));
    const Array z = host(std::vector<double>{}, {0, 3});
    const Array mz = cpu().eval("z[:, 0] > 0", Named{{"z", z}});
    EXPECT_EQ(cpu().eval("z[mz]", Named{{"z", z}, {"mz", mz}}).shape(), (Shape{0, 3}));
    EXPECT_EQ(cpu().eval("sum(b[m], axis=0)", Named{{"b", b}, {"m", m}}).shape(), (Shape{0}));
    EXPECT_EQ(cpu().eval("sum(b[m], axis=1)", Named{{"b", b}, {"m", m}}).to_vector<double>(),
              (std::vector<double>{0, 0, 0}));
}

// NumPy takes a mask axis of no element against an axis of any extent: the selection is empty
// (ones(3)[zeros(0, bool)] has shape (0,)); a mask axis of another nonzero extent stays an error.
TEST(Mask, AMaskAxisOfNoElementSelectsNothingAsNumPyDoes) {
    const Array a = host(std::vector<double>{1, 2, 3}, {3});
    const Array none = host(std::vector<std::uint8_t>{}, {0});
    const Array none_b = cpu().eval("m != 0", Named{{"m", none}});
    const Array r = cpu().eval("a[m]", Named{{"a", a}, {"m", none_b}});
    EXPECT_EQ(r.shape(), (Shape{0}));
    EXPECT_EQ(r.dtype(), DType::Float64);
    EXPECT_EQ(cpu().eval("sum(a[m])", Named{{"a", a}, {"m", none_b}}).to_vector<double>(), (std::vector<double>{0}));
    const Array c = host(std::vector<double>(24, 1.0), {2, 3, 4});
    const Array m03 = cpu().eval("z != 0", Named{{"z", host(std::vector<std::uint8_t>{}, {0, 3})}});
    EXPECT_EQ(cpu().eval("c[m]", Named{{"c", c}, {"m", m03}}).shape(), (Shape{0, 4}));
    const Array m20 = cpu().eval("z != 0", Named{{"z", host(std::vector<std::uint8_t>{}, {2, 0})}});
    EXPECT_EQ(cpu().eval("c[m] * 2", Named{{"c", c}, {"m", m20}}).shape(), (Shape{0, 4}));
    const Array m05 = cpu().eval("z != 0", Named{{"z", host(std::vector<std::uint8_t>{}, {0, 5})}});
    EXPECT_THROW(cpu().eval("c[m]", Named{{"c", c}, {"m", m05}}), IndexError);
    const Array one = cpu().eval("z != 0", Named{{"z", host(std::vector<std::uint8_t>{1}, {1})}});
    EXPECT_THROW(cpu().eval("e[m]", Named{{"e", host(std::vector<double>{}, {0})}, {"m", one}}), IndexError);
}

// A mask axis of no element against a scan's result (cumsum(1) has one element): the empty
// selection, as NumPy gives; it reads none of the running values (seed 16 of the fuzzer: a
// ValueError that the scan could be indexed by a prefix only).
TEST(Mask, AMaskOfNoElementSelectsNothingOfAScan) {
    const Array none_b = cpu().eval("m != 0", Named{{"m", host(std::vector<std::uint8_t>{}, {0})}});
    const Array r = cpu().eval("cumsum(1)[m]", Named{{"m", none_b}});
    EXPECT_EQ(r.shape(), (Shape{0}));
    EXPECT_EQ(r.dtype(), DType::Int64);
    const Array q =
        cpu().eval("nancumprod(a)[m]", Named{{"a", host(std::vector<double>{2, 3, 4}, {3})}, {"m", none_b}});
    EXPECT_EQ(q.shape(), (Shape{0}));
    EXPECT_EQ(q.dtype(), DType::Float64);
}

// argmin/argmax of a selection: the index into the selected values (NumPy), the first of ties,
// the first NaN; along the selected axis of a row selection too (issue 16: refused before).
TEST(Mask, ArgminAndArgmaxOfASelectionIndexTheSelectedValues) {
    EXPECT_EQ(eval_ab("argmin(b[a > 0])").item<std::int64_t>(), 1);  // 1.5, 0.75, 2.0
    EXPECT_EQ(eval_ab("argmax(b[a > 0])").item<std::int64_t>(), 2);
    EXPECT_EQ(eval_ab("argmax(a[a < 0])").item<std::int64_t>(), 0);  // -1, -3, -6
    EXPECT_EQ(eval_ab("argmin(a[a < 0], keepdims=True)").shape(), (Shape{1}));
    const Array t = host(std::vector<double>{5, 1, 7, 1, NAN, 0, NAN}, {7});
    EXPECT_EQ(cpu().eval("argmin(t[t > 0])", Named{{"t", t}}).item<std::int64_t>(), 1);   // 5, 1, 7, 1: first tie
    EXPECT_EQ(cpu().eval("argmax(t[t != 7])", Named{{"t", t}}).item<std::int64_t>(), 3);  // first NaN
    const Array c = host(std::vector<std::int32_t>{0, 9, 2, 3, 4, 5, 6, 1, 8, 9, 10, 11}, {4, 3});
    const Array m = cpu().eval("x > 0", Named{{"x", host(std::vector<double>{1, -1, 1, 1})}});
    // rows 0, 2, 3: [0 9 2], [6 1 8], [9 10 11]
    EXPECT_EQ(cpu().eval("argmax(c[m], axis=0)", Named{{"c", c}, {"m", m}}).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{2, 2, 2}));
    EXPECT_EQ(cpu().eval("argmin(c[m], axis=0)", Named{{"c", c}, {"m", m}}).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{0, 1, 0}));
    EXPECT_EQ(cpu().eval("argmin(c[m], axis=1)", Named{{"c", c}, {"m", m}}).to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{0, 1, 0}));
    EXPECT_EQ(cpu().eval("argmin(c[m])", Named{{"c", c}, {"m", m}}).item<std::int64_t>(), 0);
    EXPECT_EQ(cpu().eval("argmin(c[m][:, 1:])", Named{{"c", c}, {"m", m}}).item<std::int64_t>(), 2);
    try {
        eval_ab("argmin(a[a > 100])");
        FAIL() << "no error";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.message()).find("empty"), std::string::npos) << e.message();
    }
}

TEST(Mask, AverageOfASelectionTakesWeightsSelectedByTheSameMask) {
    // a > 0 selects b = 1.5, 0.75, 2.0 with weights a = 2, 4, 5
    EXPECT_DOUBLE_EQ(eval_ab("average(b[a > 0], weights=a[a > 0])").item<double>(),
                     (1.5 * 2 + 0.75 * 4 + 2.0 * 5) / 11);
    const Array c = host(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
    const Array w = host(std::vector<double>{1, 2, 3, 4}, {4});
    const Named n{{"c", c}, {"w", w}};
    EXPECT_EQ(cpu().eval("average(c[w != 2], axis=0, weights=w[w != 2])", n).to_vector<double>(),
              (std::vector<double>{(0 + 18 + 36) / 8.0, (1 + 21 + 40) / 8.0, (2 + 24 + 44) / 8.0}));
    EXPECT_EQ(cpu().eval("average(c[w != 2], axis=1, weights=w[:3])", n).to_vector<double>(),
              (std::vector<double>{8 / 6.0, 44 / 6.0, 62 / 6.0}));
    EXPECT_THROW(cpu().eval("average(c[w > 1], weights=c[w > 2])", n), ValueError);  // another mask
    EXPECT_THROW(cpu().eval("average(c[w > 1], weights=c)", n), ValueError);         // not selected
    EXPECT_THROW(cpu().eval("average(c, weights=c[w > 1])", n), ValueError);         // only the weights
}

// A selection is indexed, and reduced, along its other axes: c[m][:, 0] is c[:, 0][m] and
// sum(c[m], axis=1) is sum(c, axis=1)[m]; its own first axis is a ValueError with a caret.
TEST(Mask, ASelectionIsIndexedAndReducedAlongItsOtherAxes) {
    const Array c = host(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
    const Array w = host(std::vector<double>{1, -2, 3, 4}, {4});
    const Named n{{"c", c}, {"w", w}};
    EXPECT_EQ(cpu().eval("c[w > 0][:, 0]", n).to_vector<double>(), (std::vector<double>{0, 6, 9}));
    EXPECT_EQ(cpu().eval("c[w > 0][..., ::-2]", n).to_vector<double>(), (std::vector<double>{2, 0, 8, 6, 11, 9}));
    EXPECT_EQ(cpu().eval("c[w > 0][:, None, 1]", n).shape(), (Shape{3, 1}));
    EXPECT_EQ(cpu().eval("sum(c[w > 0], axis=1)", n).to_vector<double>(), (std::vector<double>{3, 21, 30}));
    EXPECT_EQ(cpu().eval("max(c[w > 0], axis=-1, keepdims=True)", n).shape(), (Shape{3, 1}));
    EXPECT_EQ(cpu().eval("std(c[w > 0] * 2, axis=1, ddof=1)", n).to_vector<double>(), (std::vector<double>{2, 2, 2}));
    for (const char* text : {"c[w > 0][0]", "c[w > 0][1:]", "c[w > 0][None]", "c[w > 0][::2]"}) {
        SCOPED_TRACE(text);
        try {
            cpu().eval(text, n);
            FAIL() << "no error";
        } catch (const ValueError& e) {
            EXPECT_NE(std::string(e.message()).find("along its other axes only"), std::string::npos) << e.message();
            EXPECT_EQ(e.span().begin, 0u);
        }
    }
}

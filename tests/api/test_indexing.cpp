// Slicing and simple indexing (a[1:], m[:, 0], a[None, ::-1]) at the C++ entry points:
// Runtime::run, jit::eval (by name and positionally), jit::compile / Kernel, jit::check. The
// values are NumPy 2's for the same Python code; the NumPy differential suite (tests/diff)
// covers every form over every dtype, contiguous and strided.
#include <jit/check.hpp>
#include <jit/jit.hpp>

#include "dsl/plan.hpp"
#include "dsl/verify.hpp"

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

template <class T>
Array host(std::vector<T> v, Shape s = {}) {
    return Array::from(v, std::move(s), Backend::Cpu);
}

std::vector<double> iota(int n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i * i;
    return v;
}

// The view inputs of a plan: the slots that read the bound array through a slice. (The plain
// slot of the name stays declared, read by no stage, when only its slices are used.)
std::vector<ir::InputDecl> views(const ir::Plan& p) {
    std::vector<ir::InputDecl> r;
    for (const ir::InputDecl& in : p.program.inputs)
        if (in.view) r.push_back(in);
    return r;
}

// The plan dsl::plan makes for `text` over one float64 array `a` of shape `s` (C order).
ir::Plan plan_of(const std::string& text, const Shape& s) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = DType::Float64;
    b.shape = s;
    b.strides = contiguous_strides(s);
    dsl::Bindings bs;
    bs.lookup = [b](std::string_view n) -> const dsl::Binding* { return n == "a" ? &b : nullptr; };
    return dsl::plan(text, bs, {});
}

}  // namespace

TEST(Indexing, DifferenceOfShiftedSlicesHasOneElementLess) {
    Environment env{{"a", Arg(host(iota(6)))}};
    const Array r = cpu().run("d = a[1:] - a[:-1]", env);
    EXPECT_EQ(r.shape(), (Shape{5}));
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1, 3, 5, 7, 9}));
}

TEST(Indexing, StepsNegativeStepsAndClippedBounds) {
    const Array a = host(iota(6));
    EXPECT_EQ(jit::eval("a[::2]", {{"a", a}}).to_vector<double>(), (std::vector<double>{0, 4, 16}));
    EXPECT_EQ(jit::eval("a[::-1]", {{"a", a}}).to_vector<double>(), (std::vector<double>{25, 16, 9, 4, 1, 0}));
    EXPECT_EQ(jit::eval("a[4:100]", {{"a", a}}).to_vector<double>(), (std::vector<double>{16, 25}));
    EXPECT_EQ(jit::eval("a[-100:1]", {{"a", a}}).to_vector<double>(), (std::vector<double>{0}));
    EXPECT_EQ(jit::eval("a[5:1:-2]", {{"a", a}}).to_vector<double>(), (std::vector<double>{25, 9}));
    EXPECT_EQ(jit::eval("a[3:1]", {{"a", a}}).shape(), (Shape{0}));
}

TEST(Indexing, IntegerIndexDropsItsAxisAndNoneAddsOne) {
    const Array m = host(iota(12), {3, 4});
    EXPECT_EQ(jit::eval("m[:, 0]", {{"m", m}}).to_vector<double>(), (std::vector<double>{0, 16, 64}));
    EXPECT_EQ(jit::eval("m[1]", {{"m", m}}).to_vector<double>(), (std::vector<double>{16, 25, 36, 49}));
    const Array last = jit::eval("m[-1, -1]", {{"m", m}});
    EXPECT_EQ(last.shape(), Shape{});
    EXPECT_EQ(last.item<double>(), 121.0);
    EXPECT_EQ(jit::eval("m[..., 1]", {{"m", m}}).to_vector<double>(), (std::vector<double>{1, 25, 81}));
    EXPECT_EQ(jit::eval("m[None, :, 1:3]", {{"m", m}}).shape(), (Shape{1, 3, 2}));
    EXPECT_EQ(jit::eval("m[1][2:]", {{"m", m}}).to_vector<double>(), (std::vector<double>{36, 49}));
}

TEST(Indexing, PositionalAndCompiledCallsIndexTheirArguments) {
    const Array a = host(iota(5));
    EXPECT_EQ(jit::eval("a[1:] * 2", a).to_vector<double>(), (std::vector<double>{2, 8, 18, 32}));
    Kernel k = jit::compile("x[::-1] + y[0]");
    const Array y = host(std::vector<double>{100, 200});
    EXPECT_EQ(k(a, y).to_vector<double>(), (std::vector<double>{116, 109, 104, 101, 100}));
}

TEST(Indexing, InsideReductions) {
    const Array a = host(iota(5)), b = host(std::vector<double>{1, 2, 3, 4, 5});
    // sum(a[1:] * b[:-1]) = 1*1 + 4*2 + 9*3 + 16*4
    EXPECT_EQ(jit::eval("sum(a[1:] * b[:-1])", {{"a", a}, {"b", b}}).item<double>(), 100.0);
    const Array m = host(iota(6), {2, 3});
    EXPECT_EQ(jit::eval("sum(m, axis=1)[::-1]", {{"m", m}}).to_vector<double>(), (std::vector<double>{50, 5}));
    EXPECT_EQ(jit::eval("sum(m[:, 1:], axis=0)", {{"m", m}}).to_vector<double>(), (std::vector<double>{17, 29}));
}

TEST(Indexing, AnIndexOfAnExpressionIndexesItsOperands) {
    const Array m = host(iota(6), {2, 3});
    const Array v = host(std::vector<double>{1, 2, 3});
    // (m + v)[:, ::-1]: v is broadcast along axis 0 and reversed along axis 1.
    EXPECT_EQ(jit::eval("(m + v)[:, ::-1]", {{"m", m}, {"v", v}}).to_vector<double>(),
              (std::vector<double>{7, 3, 1, 28, 18, 10}));
    EXPECT_EQ(jit::eval("(m * 2)[1]", {{"m", m}}).to_vector<double>(), (std::vector<double>{18, 32, 50}));
}

TEST(Indexing, StridedInputsAreIndexedThroughTheirStrides) {
    // b = every other element of 0..11 (a view with stride 2), then b[::-1][1:].
    const Array base = host(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    const Array b = base.slice(0, 0, 12, 2);
    ASSERT_FALSE(b.is_contiguous());
    EXPECT_EQ(jit::eval("b[::-1][1:]", {{"b", b}}).to_vector<double>(), (std::vector<double>{8, 6, 4, 2, 0}));
    const Array t = host(iota(6), {2, 3}).transpose();  // (3, 2), Fortran order
    EXPECT_EQ(jit::eval("t[1:, 0]", {{"t", t}}).to_vector<double>(), (std::vector<double>{1, 4}));
}

TEST(Indexing, SlicesAreViewsOfTheBoundArrayNotCopies) {
    const ir::Plan p = plan_of("a[1:] - a[:-1]", {8});
    const auto v = views(p);
    ASSERT_EQ(v.size(), 2u);  // two views of `a`, each read by the one kernel
    for (const ir::InputDecl& in : v) {
        EXPECT_EQ(in.name, "a");
        EXPECT_EQ(in.shape, (Shape{7}));
        EXPECT_EQ(in.strides, (Strides{1}));
    }
    EXPECT_EQ(v[0].offset, 1);
    EXPECT_EQ(v[1].offset, 0);
    EXPECT_EQ(p.schedule.stages.size(), 1u);
}

TEST(Indexing, ReversedViewHasANegativeStrideFromTheLastElement) {
    const auto v = views(plan_of("a[::-1, None]", {3, 4}));
    ASSERT_EQ(v.size(), 1u);
    const ir::InputDecl& in = v[0];
    EXPECT_EQ(in.shape, (Shape{3, 1, 4}));
    EXPECT_EQ(in.strides, (Strides{-4, 0, 1}));
    EXPECT_EQ(in.offset, 8);
}

TEST(Indexing, EveryIndexedPlanKeepsTheIrInvariants) {
    for (const char* text :
         {"a[1:, ::-1] * a[:-1, None, 0]", "(a * 2 + 1)[::2, 1]", "sum(a, axis=0)[::-1] - a[0]", "sum(a[1:] * a[:-1])",
          "max(a[:, ::-2], axis=1)", "where(a[0] > a[1], a[2], -a[0])", "(a + a[0])[None, ..., 1:]",
          "sum(a, axis=1)[None]", "sum(a)[None, None]", "a[5:, 9:]", "float32(a)[::-1][1:3]", "a = a[::-1] + a"}) {
        SCOPED_TRACE(text);
        const ir::Plan p = plan_of(text, {4, 6});
        EXPECT_NO_THROW(ir::verify(p));
    }
}

TEST(Indexing, BoundsPastEveryIntegerAreClippedOrOutOfBounds) {
    const Array a = host(iota(4));
    EXPECT_EQ(jit::eval("a[-2**70:2**70]", {{"a", a}}).to_vector<double>(), (std::vector<double>{0, 1, 4, 9}));
    EXPECT_EQ(jit::eval("a[::-2**63]", {{"a", a}}).to_vector<double>(), (std::vector<double>{9}));
    EXPECT_EQ(jit::eval("a[::2**63]", {{"a", a}}).to_vector<double>(), (std::vector<double>{0}));
    try {
        jit::eval("a[2**70]", {{"a", a}});
        FAIL() << "no error";
    } catch (const IndexError& e) {
        EXPECT_EQ(e.message(), "index 2**70 is out of bounds for axis 0 with size 4");
    }
}

TEST(Indexing, TheSameSliceTwiceIsOneInput) { EXPECT_EQ(views(plan_of("a[1:] * a[1:] + a[1:]", {5})).size(), 1u); }

TEST(Indexing, WritingAReversedViewIntoItsOwnArrayUsesATemporary) {
    Array a = host(std::vector<double>{1, 2, 3, 4});
    Environment env{{"a", Arg(a)}};
    cpu().run("a = a[::-1]", env);
    EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{4, 3, 2, 1}));
    cpu().run("a = a - a[0]", env);  // a[0] is read before any element is written
    EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0, -1, -2, -3}));
}

TEST(Indexing, CheckReportsTheIndexedShape) {
    const CheckedProgram c = jit::check("r = m[1:, ::2]", {{"m", ValueSpec::array(DType::Float32, {4, 5})}});
    ASSERT_EQ(c.assigned.size(), 1u);
    EXPECT_EQ(c.assigned[0].shape, (Shape{3, 3}));
    EXPECT_EQ(c.assigned[0].dtype, DType::Float32);
}

TEST(Indexing, OutOfRangeIntegerIndexIsAnIndexErrorWithACaret) {
    const Array a = host(iota(5));
    try {
        jit::eval("a[1] + a[5]", {{"a", a}});
        FAIL() << "no error";
    } catch (const IndexError& e) {
        EXPECT_EQ(e.message(), "index 5 is out of bounds for axis 0 with size 5");
        EXPECT_EQ(e.span().begin, 9u);
        EXPECT_EQ(e.span().end, 10u);
    }
    EXPECT_THROW(jit::eval("a[-6]", {{"a", a}}), IndexError);
    EXPECT_THROW(jit::eval("a[0, 0]", {{"a", a}}), IndexError);
}

TEST(Indexing, UnsupportedIndicesAreErrorsWithACaret) {
    const Array a = host(iota(5));
    EXPECT_THROW(jit::eval("a[k:]", {{"a", a}, {"k", Arg(std::int64_t{1})}}), ValueError);
    EXPECT_THROW(jit::eval("a[a > 1, ...]", {{"a", a}}), ValueError);  // a mask with another index
    EXPECT_THROW(jit::eval("a[::0]", {{"a", a}}), ValueError);
    EXPECT_THROW(jit::eval("a[1.5]", {{"a", a}}), IndexError);
    EXPECT_THROW(jit::eval("a[1:] + a", {{"a", a}}), ShapeError);
    EXPECT_THROW(jit::eval("2[0]", {}), TypeError);
}

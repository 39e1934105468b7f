// The reductions' arguments (positional axis, negative axes, axis tuples, axis=None, keepdims)
// and the statistics lowering expands (var, std, argmin, nan*, count_nonzero, ptp, average):
// shapes, dtypes, the nodes they become, their errors, and ir::verify on each.
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"
#include "dsl/verify.hpp"
#include "parse_dump.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace jit;

namespace {

struct Vars {
    std::map<std::string, dsl::Binding, std::less<>> b;
    Vars& array(const std::string& name, DType t, Shape s) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = t;
        x.strides = contiguous_strides(s);
        x.shape = std::move(s);
        b[name] = x;
        return *this;
    }
};

ir::Program lower(const std::string& text, const Vars& v) {
    auto m = syntax::parse(text);
    std::vector<std::string> names;
    for (const auto& [n, b] : v.b) names.push_back(n);
    ir::Program p = dsl::lower(
        m, text,
        [&](std::string_view n) -> const dsl::Binding* {
            auto it = v.b.find(n);
            return it == v.b.end() ? nullptr : &it->second;
        },
        names);
    ir::verify(p, ir::schedule(p));
    return p;
}

const Vars& cube(DType t = DType::Float32) {
    static std::map<DType, Vars> v;
    auto [it, fresh] = v.try_emplace(t);
    if (fresh) it->second.array("a", t, {3, 4, 5});
    return it->second;
}

Shape shape_of(const std::string& text, const Vars& v = cube()) {
    auto p = lower(text, v);
    return p.node(p.result).shape;
}
DType result_dtype_of(const std::string& text, const Vars& v) {
    auto p = lower(text, v);
    return p.node(p.result).dtype;
}
int reduce_nodes(const ir::Program& p) {
    return static_cast<int>(std::count_if(p.nodes.begin(), p.nodes.end(),
                                          [](const ir::Node& n) { return n.kind == ir::NodeKind::Reduce; }));
}

}  // namespace

TEST(ReductionSyntax, ParenthesesWithACommaAreATuple) {
    EXPECT_EQ(syntax::testing::dump(syntax::parse("sum(a, axis=(0, 2))")), "sum(a, axis=(0, 2))");
    EXPECT_EQ(syntax::parse("(0,)").statements[0].value->kind, syntax::ExprKind::Tuple);
    EXPECT_EQ(syntax::parse("(0, 1, )").statements[0].value->operands.size(), 2u);
    EXPECT_NE(syntax::parse("(0)").statements[0].value->kind, syntax::ExprKind::Tuple);
    EXPECT_THROW(syntax::parse("()"), ParseError);
    EXPECT_THROW(syntax::parse("(,)"), ParseError);
}

TEST(ReductionShapes, PositionalAxisIsTheAxis) { EXPECT_EQ(shape_of("sum(a, 1)"), (Shape{3, 5})); }
TEST(ReductionShapes, NegativeAxisCountsFromTheEnd) { EXPECT_EQ(shape_of("prod(a, axis=-2)"), (Shape{3, 5})); }
TEST(ReductionShapes, AxisTupleDropsEveryAxisInIt) { EXPECT_EQ(shape_of("mean(a, axis=(0, -1))"), (Shape{4})); }
TEST(ReductionShapes, AxisNoneReducesEverything) { EXPECT_EQ(shape_of("max(a, axis=None)"), (Shape{})); }
TEST(ReductionShapes, OneAxisTupleIsThatAxis) { EXPECT_EQ(shape_of("sum(a, axis=(1,))"), (Shape{3, 5})); }
TEST(ReductionShapes, KeepdimsKeepsReducedAxesOfExtentOne) {
    EXPECT_EQ(shape_of("sum(a, axis=1, keepdims=True)"), (Shape{3, 1, 5}));
    EXPECT_EQ(shape_of("any(a, axis=(0, 2), keepdims=True)"), (Shape{1, 4, 1}));
    EXPECT_EQ(shape_of("min(a, keepdims=True)"), (Shape{1, 1, 1}));
    EXPECT_EQ(shape_of("var(a, 2, keepdims=True)"), (Shape{3, 4, 1}));
    EXPECT_EQ(shape_of("argmax(a, axis=0, keepdims=True)"), (Shape{1, 4, 5}));
}
TEST(ReductionShapes, KeepdimsResultBroadcastsAgainstItsOperand) {
    EXPECT_EQ(shape_of("a - mean(a, axis=(0, 2), keepdims=True)"), (Shape{3, 4, 5}));
}

TEST(ReductionCalls, MinAndMaxWithTwoArgumentsStayElementwise) {
    auto p = lower("max(a, 1)", cube());
    EXPECT_EQ(p.node(p.result).kind, ir::NodeKind::Op);
    EXPECT_EQ(p.node(p.result).op, ir::Op::Maximum);
}
TEST(ReductionCalls, AminWithTwoArgumentsReducesAlongTheAxis) {
    auto p = lower("amin(a, 1)", cube());
    EXPECT_EQ(p.node(p.result).kind, ir::NodeKind::Reduce);
    EXPECT_EQ(p.node(p.result).shape, (Shape{3, 5}));
}
TEST(ReductionCalls, AxisTupleIsOneReduceNodePerAxisHighestFirst) {
    auto p = lower("sum(a, axis=(0, 2))", cube());
    ASSERT_EQ(reduce_nodes(p), 2);
    EXPECT_EQ(p.node(p.result).axis, 0);
    EXPECT_EQ(p.node(p.node(p.result).args[0]).axis, 2);
}
TEST(ReductionCalls, AxisTupleOfEveryAxisIsOneFullReduction) {
    auto p = lower("sum(a, axis=(2, 0, 1))", cube());
    EXPECT_EQ(reduce_nodes(p), 1);
    EXPECT_EQ(p.node(p.result).axis, -1);
}
TEST(ReductionCalls, VarIsAMeanThenASumOfSquaredDeviations) {
    auto p = lower("var(a, axis=1)", cube());
    const auto s = ir::schedule(p);
    std::vector<ir::Op> ops;
    for (const auto& st : s.stages)
        if (st.kind == ir::Stage::Kind::Reduce) ops.push_back(p.node(st.reduce).op);
    EXPECT_EQ(ops, (std::vector<ir::Op>{ir::Op::Mean, ir::Op::Sum}));
}
TEST(ReductionCalls, ArgminIsAMinimumThenTheFirstPositionHoldingIt) {
    auto p = lower("argmin(a, axis=2)", cube());
    EXPECT_EQ(p.node(p.result).op, ir::Op::ArgFirst);
    EXPECT_EQ(p.node(p.result).axis, 2);
    EXPECT_EQ(reduce_nodes(p), 2);
}

TEST(ReductionDtypes, NumPysResultDtypes) {
    EXPECT_EQ(result_dtype_of("var(a)", cube(DType::Int8)), DType::Float64);
    EXPECT_EQ(result_dtype_of("std(a)", cube(DType::Complex64)), DType::Float32);
    EXPECT_EQ(result_dtype_of("var(a)", cube(DType::Float16)), DType::Float16);
    EXPECT_EQ(result_dtype_of("argmin(a)", cube(DType::UInt8)), DType::Int64);
    EXPECT_EQ(result_dtype_of("count_nonzero(a, axis=1)", cube(DType::Complex128)), DType::Int64);
    EXPECT_EQ(result_dtype_of("nanmean(a)", cube(DType::Int8)), DType::Float64);
    EXPECT_EQ(result_dtype_of("nansum(a)", cube(DType::Bool)), DType::Int64);
    EXPECT_EQ(result_dtype_of("nanmin(a)", cube(DType::Float16)), DType::Float16);
    EXPECT_EQ(result_dtype_of("ptp(a)", cube(DType::UInt8)), DType::UInt8);
    EXPECT_EQ(result_dtype_of("average(a)", cube(DType::Int32)), DType::Float64);
}

TEST(ReductionErrors, RepeatedAxisIsAValueError) { EXPECT_THROW(lower("sum(a, axis=(1, -2))", cube()), ValueError); }
TEST(ReductionErrors, AxisPastTheEndInATupleIsAShapeError) {
    EXPECT_THROW(lower("sum(a, axis=(0, 3))", cube()), ShapeError);
}
TEST(ReductionErrors, ArgminTakesOneAxis) { EXPECT_THROW(lower("argmin(a, axis=(0, 1))", cube()), TypeError); }
TEST(ReductionErrors, KeepdimsMustBeABool) { EXPECT_THROW(lower("sum(a, keepdims=a)", cube()), ValueError); }
TEST(ReductionErrors, DdofOnlyOnTheVariances) { EXPECT_THROW(lower("mean(a, ddof=1)", cube()), TypeError); }
TEST(ReductionErrors, AxisGivenTwice) { EXPECT_THROW(lower("sum(a, 0, axis=1)", cube()), TypeError); }
TEST(ReductionErrors, TooManyPositionalArguments) { EXPECT_THROW(lower("sum(a, 0, 1)", cube()), TypeError); }
TEST(ReductionErrors, ATupleIsNoValue) { EXPECT_THROW(lower("a + (1, 2)", cube()), TypeError); }
TEST(ReductionErrors, ArgmaxOfNoElementHasNoValue) {
    EXPECT_THROW(lower("argmax(a, axis=0)", Vars().array("a", DType::Float32, {0, 3})), ValueError);
    EXPECT_EQ(shape_of("argmax(a, axis=1)", Vars().array("a", DType::Float32, {0, 3})), (Shape{0}));
}
TEST(ReductionErrors, PtpOfBoolIsATypeError) { EXPECT_THROW(lower("ptp(a)", cube(DType::Bool)), TypeError); }

TEST(ReductionVerify, EveryStatisticLowersToAVerifiedProgram) {
    for (const char* f : {"var",     "std",     "nanvar", "nanstd", "argmin",        "argmax", "nansum",
                          "nanprod", "nanmean", "nanmin", "nanmax", "count_nonzero", "ptp",    "average",
                          "sum",     "prod",    "min",    "max",    "mean",          "any",    "all"})
        for (const char* args : {"", ", 1", ", axis=-1, keepdims=True", ", axis=None"})
            for (DType t : {DType::Float32, DType::Int16, DType::Float16}) {
                const std::string text = std::string(f) + "(a" + args + ") + 1";
                EXPECT_NO_THROW(lower(text, cube(t))) << text << " " << dtype_name(t);
            }
}

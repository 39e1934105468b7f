// The scans (cumsum, cumprod, nancumsum, nancumprod): their arguments, NumPy 2's shapes and
// dtypes, the Scan node and stage they become, their errors with the caret, and ir::verify on
// each (every program here is verified with its schedule and its plan).
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"
#include "dsl/verify.hpp"

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

ir::Plan plan_of(const std::string& text, const Vars& v) {
    ir::Plan p = dsl::plan(text, dsl::bindings_of(v.b), dsl::Limits{});
    ir::verify(p);
    return p;
}

const Vars& vars(DType t = DType::Float32) {
    static std::map<DType, Vars> v;
    auto [it, fresh] = v.try_emplace(t);
    if (fresh) it->second.array("a", t, {3, 4, 5}).array("b", t, {4, 5}).array("z", t, {}).array("v", t, {7});
    return it->second;
}

const ir::Node& result(const ir::Plan& p) { return p.program.node(p.program.result); }
Shape shape_of(const std::string& text, const Vars& v = vars()) { return result(plan_of(text, v)).shape; }
DType scan_dtype(const std::string& text, DType t) { return result(plan_of(text, vars(t))).dtype; }

template <class E>
SourceSpan error_span(const std::string& text) {
    try {
        plan_of(text, vars());
    } catch (const E& e) {
        return e.span();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "another error: " << e.what();
        return {};
    }
    ADD_FAILURE() << "no error for " << text;
    return {};
}
std::string spanned(const std::string& text, SourceSpan s) { return text.substr(s.begin, s.end - s.begin); }

int stages_of(const ir::Plan& p, ir::Stage::Kind k) {
    return static_cast<int>(std::count_if(p.schedule.stages.begin(), p.schedule.stages.end(),
                                          [k](const ir::Stage& s) { return s.kind == k; }));
}

}  // namespace

TEST(ScanShapes, WithoutAnAxisTheResultIsTheFlattenedOperand) { EXPECT_EQ(shape_of("cumsum(a)"), (Shape{60})); }
TEST(ScanShapes, AxisNoneIsTheFlattenedOperand) { EXPECT_EQ(shape_of("cumprod(a, axis=None)"), (Shape{60})); }
TEST(ScanShapes, AlongAnAxisTheShapeIsKept) {
    EXPECT_EQ(shape_of("cumsum(a, axis=1)"), (Shape{3, 4, 5}));
    EXPECT_EQ(shape_of("cumsum(a, 2)"), (Shape{3, 4, 5}));
    EXPECT_EQ(shape_of("nancumsum(a, axis=-3)"), (Shape{3, 4, 5}));
}
TEST(ScanShapes, AZeroDimensionalOperandIsOneElement) {
    EXPECT_EQ(shape_of("cumsum(z)"), (Shape{1}));
    EXPECT_EQ(shape_of("cumsum(z, axis=0)"), (Shape{1}));
    EXPECT_EQ(shape_of("cumprod(z, -1)"), (Shape{1}));
    EXPECT_EQ(shape_of("cumsum(3)"), (Shape{1}));
}
TEST(ScanShapes, TheResultBroadcastsInLaterArithmetic) {
    EXPECT_EQ(shape_of("cumsum(b, axis=1) / sum(b, axis=1, keepdims=True)"), (Shape{4, 5}));
}

TEST(ScanNodes, AScanOfOneDimensionRunsOverEveryElement) {
    const auto p = plan_of("cumsum(v, axis=0)", vars());
    EXPECT_EQ(result(p).kind, ir::NodeKind::Scan);
    EXPECT_EQ(result(p).axis, -1);
}
TEST(ScanNodes, NegativeAxisIsStoredAsItsIndex) {
    const auto p = plan_of("cumprod(a, axis=-1)", vars());
    EXPECT_EQ(result(p).op, ir::Op::CumProd);
    EXPECT_EQ(result(p).axis, 2);
}
TEST(ScanNodes, NanScansReplaceNanBeforeScanning) {
    const auto p = plan_of("nancumprod(a, 1)", vars());
    ASSERT_EQ(result(p).kind, ir::NodeKind::Scan);
    EXPECT_EQ(result(p).op, ir::Op::CumProd);
    const ir::Node& w = p.program.node(result(p).args[0]);
    ASSERT_EQ(w.op, ir::Op::Where);
    EXPECT_EQ(p.program.node(w.args[0]).op, ir::Op::Isnan);
    EXPECT_EQ(p.program.node(w.args[1]).value.f, 1.0);
}
TEST(ScanNodes, NanScansOfIntegersAreScans) {
    const auto p = plan_of("nancumsum(a)", vars(DType::Int32));
    EXPECT_EQ(result(p).op, ir::Op::CumSum);
    EXPECT_EQ(p.program.node(result(p).args[0]).kind, ir::NodeKind::Cast);
}

TEST(ScanDtypes, NumPysResultDtypes) {
    EXPECT_EQ(scan_dtype("cumsum(a)", DType::Bool), DType::Int64);
    EXPECT_EQ(scan_dtype("cumsum(a)", DType::Int8), DType::Int64);
    EXPECT_EQ(scan_dtype("cumprod(a)", DType::Int32), DType::Int64);
    EXPECT_EQ(scan_dtype("cumsum(a)", DType::UInt8), DType::UInt64);
    EXPECT_EQ(scan_dtype("nancumprod(a)", DType::UInt32), DType::UInt64);
    EXPECT_EQ(scan_dtype("cumsum(a)", DType::Float16), DType::Float16);
    EXPECT_EQ(scan_dtype("cumsum(a)", DType::Float32), DType::Float32);
    EXPECT_EQ(scan_dtype("nancumsum(a)", DType::Float64), DType::Float64);
    EXPECT_EQ(scan_dtype("cumprod(a)", DType::Complex64), DType::Complex64);
    EXPECT_EQ(scan_dtype("nancumprod(a)", DType::Complex128), DType::Complex128);
}

TEST(ScanPlan, TheProducerIsComputedInTheScansStage) {
    const auto p = plan_of("cumsum(a * 2 + 1, axis=1)", vars());
    ASSERT_EQ(p.schedule.stages.size(), 1u);
    EXPECT_EQ(p.schedule.stages[0].kind, ir::Stage::Kind::Scan);
    EXPECT_EQ(p.schedule.stages[0].shape, (Shape{3, 4, 5}));
    EXPECT_TRUE(p.schedule.temps.empty());  // written straight into the output
}
TEST(ScanPlan, AConsumerReadsTheScanFromATemporaryInALaterStage) {
    const auto p = plan_of("cumsum(b) / 20", vars());
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    EXPECT_EQ(p.schedule.stages[0].kind, ir::Stage::Kind::Scan);
    EXPECT_EQ(p.schedule.stages[1].kind, ir::Stage::Kind::Elementwise);
    ASSERT_EQ(p.schedule.temps.size(), 1u);
    EXPECT_EQ(p.program.node(p.schedule.temps[0]).kind, ir::NodeKind::Scan);
}
TEST(ScanPlan, ScansOfScansAreStagesInOrder) {
    const auto p = plan_of("cumsum(cumprod(b, axis=0), axis=1)", vars());
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Scan), 2);
    EXPECT_EQ(p.schedule.stored_by[p.program.result], 1);
}
TEST(ScanPlan, AScanAndAReductionOfTheSameOperandAreStagesOfTheirOwn) {
    const auto p = plan_of("cumsum(b, axis=1) - sum(b)", vars());
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Scan), 1);
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Reduce), 1);
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Elementwise), 1);
}
TEST(ScanPlan, StageLimitsKeepTheScanStage) {
    std::string text = "b";
    for (int k = 0; k < 40; ++k) text = "sin(" + text + ") + b";
    ir::Plan p = dsl::plan("cumsum(" + text + ", axis=1)", dsl::bindings_of(vars().b), dsl::Limits{16});
    ir::verify(p);
    EXPECT_EQ(stages_of(p, ir::Stage::Kind::Scan), 1);
    EXPECT_GT(stages_of(p, ir::Stage::Kind::Elementwise), 0);
    EXPECT_EQ(p.schedule.stages.back().kind, ir::Stage::Kind::Scan);
}

TEST(ScanErrors, AxisOutOfBoundsIsAShapeErrorUnderTheAxis) {
    const std::string text = "cumsum(a, axis=3)";
    EXPECT_EQ(spanned(text, error_span<ShapeError>(text)), "3");
    EXPECT_EQ(spanned("cumsum(a, -4)", error_span<ShapeError>("cumsum(a, -4)")), "-4");
}
TEST(ScanErrors, AZeroDimensionalOperandHasOneAxis) {
    EXPECT_EQ(spanned("cumsum(z, 1)", error_span<ShapeError>("cumsum(z, 1)")), "1");
}
TEST(ScanErrors, AnAxisTupleIsATypeError) {
    EXPECT_EQ(spanned("cumsum(a, axis=(0, 1))", error_span<TypeError>("cumsum(a, axis=(0, 1))")), "(0, 1)");
}
TEST(ScanErrors, KeepdimsIsNoArgumentOfAScan) {
    EXPECT_EQ(spanned("cumsum(a, keepdims=True)", error_span<TypeError>("cumsum(a, keepdims=True)")), "keepdims");
}
TEST(ScanErrors, TooManyPositionalArguments) { EXPECT_NO_FATAL_FAILURE(error_span<TypeError>("cumsum(a, 0, 1)")); }
TEST(ScanErrors, AFloatAxisIsAValueError) { EXPECT_NO_FATAL_FAILURE(error_span<ValueError>("cumsum(a, 1.0)")); }
// A view that keeps the scanned axis from its start is the scan of the operand's view (issue 16);
// any other index of the scanned axis, or of a flattened scan of a matrix, is a ValueError.
TEST(ScanErrors, AScanResultIndexedElsewhereOnItsScannedAxisIsAValueError) {
    for (const char* text : {"cumsum(b, 1)[:, -1]", "cumsum(b, 1)[:, 1:]", "cumsum(v)[::-1]", "cumsum(b)[:3]"}) {
        SCOPED_TRACE(text);
        EXPECT_NO_FATAL_FAILURE(error_span<ValueError>(text));
    }
}
TEST(ScanShapes, AViewKeepingTheScannedAxisFromItsStartIsAScanOfTheView) {
    EXPECT_EQ(shape_of("cumsum(b, 1)[0]"), (Shape{5}));
    EXPECT_EQ(result(plan_of("cumsum(b, 1)[0]", vars())).kind, ir::NodeKind::Scan);
    EXPECT_EQ(result(plan_of("cumsum(b, 1)[0]", vars())).axis, -1);
    EXPECT_EQ(shape_of("cumsum(a, axis=2)[None, 1, :, :3]"), (Shape{1, 4, 3}));
    EXPECT_EQ(result(plan_of("cumsum(a, axis=2)[None, 1, :, :3]", vars())).axis, 2);
    EXPECT_EQ(shape_of("cumsum(v)[:4]"), (Shape{4}));
}

TEST(ScanShapes, AScanOfOneElementReadThroughABroadcastIsThatElementSpread) {
    // The scan's one element meets the 7 of v[None, :] as a broadcast (a view of step 0 along
    // the scanned axis), which then the slice reads: fuzzer seed 68, case 332153.
    EXPECT_EQ(shape_of("(cumsum(z) * v[None, :])[:, 2:]"), (Shape{1, 5}));
    EXPECT_EQ(shape_of("(cumprod(v[:1]) * b)[1:, ::2]"), (Shape{3, 3}));
}

TEST(ScanVerify, AScanInAnOpNodeIsBroken) {
    auto p = plan_of("cumsum(b, axis=1)", vars());
    p.program.nodes[p.program.result.index()].kind = ir::NodeKind::Op;
    EXPECT_THROW(ir::verify(p.program), InternalError);
}
TEST(ScanVerify, ANarrowIntegerScanIsBroken) {
    auto p = plan_of("cumsum(b, axis=1)", vars(DType::Int64));
    for (auto& n : p.program.nodes) n.dtype = n.kind == ir::NodeKind::Input ? n.dtype : DType::Int32;
    EXPECT_THROW(ir::verify(p.program), InternalError);
}
TEST(ScanVerify, AFlatScanOfTheWrongLengthIsBroken) {
    auto p = plan_of("cumsum(b)", vars());
    p.program.nodes[p.program.result.index()].shape = {19};
    EXPECT_THROW(ir::verify(p.program), InternalError);
}
TEST(ScanVerify, AScanStageMustHoldAScanNode) {
    auto p = plan_of("cumsum(b, axis=1) + sum(b)", vars());
    for (auto& st : p.schedule.stages)
        if (st.kind == ir::Stage::Kind::Reduce) st.kind = ir::Stage::Kind::Scan;
    EXPECT_THROW(ir::verify(p), InternalError);
}

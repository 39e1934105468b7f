// ir::verify: every plan dsl::plan makes passes it, and each kind of broken program or schedule
// is caught, with the node or stage named.
#include "dsl/plan.hpp"
#include "dsl/verify.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace jit;

namespace {

dsl::Binding array(DType t, Shape shape) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = t;
    b.strides = contiguous_strides(shape);
    b.shape = std::move(shape);
    return b;
}

dsl::Binding scalar(DType t) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Scalar;
    b.dtype = t;
    return b;
}

const std::map<std::string, dsl::Binding> kEnv = {
    {"a", array(DType::Float32, {4})},  {"b", array(DType::Float64, {3, 4})}, {"i", array(DType::Int32, {4})},
    {"u", array(DType::UInt8, {3, 1})}, {"h", array(DType::Float16, {4})},    {"z", array(DType::Complex64, {4})},
    {"m", array(DType::Bool, {3, 4})},  {"e", array(DType::Float64, {0, 4})}, {"x", scalar(DType::Float64)},
    {"n", scalar(DType::Int64)},        {"q", scalar(DType::Bool)},
};

ir::Plan plan(const std::string& text, std::size_t max_stage_nodes = 0) {
    dsl::Limits limits;
    limits.max_stage_nodes = max_stage_nodes;
    return dsl::plan(text, dsl::bindings_of(kEnv), limits);
}

// The message of verify's InternalError ("" when the plan passes).
std::string failure(const ir::Plan& p) {
    try {
        ir::verify(p);
    } catch (const InternalError& e) {
        return e.what();
    }
    return "";
}

TEST(Verify, AcceptsThePlansOfEveryKindOfProgram) {
    const char* texts[] = {
        "a * 2 + b",
        "c = a * x + n; d = c - 1",
        "sum(b, axis=0) + mean(b)",
        "b - sum(b, axis=0)",
        "where(m, b, -b)",
        "abs(z) + real(z) * imag(z)",
        "a < b < 3",
        "not (m and q) or isnan(b)",
        "h * 2 + sqrt(h)",
        "i // 3 + i % 3 + i ** 2",
        "u + 200 + i",
        "any(m) and all(b > 0, axis=0)",
        "min(a) + max(b, axis=1)",
        "clip(b, 0, 1) + maximum(a, 0.5)",
        "sum(e, axis=1)",
        "a = a * 2",
        "b = b - mean(b)",
        "y = sin(a); z2 = y * y; w = sum(z2)",
        "float32(i) + a",
        "fr, ex = frexp(b)",
        "fr, ex = frexp(h); g = ldexp(fr, ex)",
        "fp, ip = modf(a)",
        "qq, rr = divmod(i, 3)",
        "bitwise_count(i) + bitwise_count(u)",
        "complex(a, a) * z",
        "ldexp(a, i)",
        "var(b, axis=0) + std(b, ddof=1)",
        "argmin(b, axis=1) + argmax(a)",
        "ptp(b, axis=0) + count_nonzero(m)",
        "average(b, axis=1, weights=a)",
        "nansum(b, axis=0, keepdims=True) + nanmean(b)",
        "b[1:, ::2] * 2",
        "hypot(a, a) + arctan2(b, 1) + copysign(a, -1)",
        "float_power(i, 2) + heaviside(a, 0.5)",
        "gcd(i, 6) + lcm(i, 4) + left_shift(i, 1)",
        "isfinite(z) | isinf(b) | signbit(a)",
        "conj(z) + real(z) + absolute(z)",
        "y = b * 2; w = b + 1; s = sum(y); t = max(w); k = argmin(y)",
        "a = a * 2; s = sum(a)",
        "y = a * 2; s = sum(y); v = sum((a - s) * (a - s))",
        "s = sum(a); t = max(a); c = cumsum(a); k = min(a); md = median(a); y = a * 2; sel = a[a > 0]; w = a - 1",
    };
    for (const char* text : texts) {
        for (std::size_t limit : {std::size_t{0}, std::size_t{8}}) {
            ir::Plan p;
            ASSERT_NO_THROW(p = plan(text, limit)) << text;
            EXPECT_EQ(failure(p), "") << text << " (stage limit " << limit << ")";
        }
    }
}

TEST(Verify, AcceptsASplitSchedule) {
    std::string text = "y = a";
    for (int k = 0; k < 300; ++k) text += " + sin(a) * " + std::to_string(k);
    const ir::Plan p = plan(text, 64);
    ASSERT_GT(p.schedule.stages.size(), 2u);
    EXPECT_EQ(failure(p), "");
}

TEST(Verify, RejectsAnOperandThatIsNotAnEarlierNode) {
    ir::Plan p = plan("a * 2 + 1");
    ir::Node& last = p.program.nodes.back();
    last.args[0] = ir::NodeId(p.program.nodes.size() - 1);
    EXPECT_NE(failure(p).find("not an earlier node"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAnOperandOfAnotherDtype) {
    ir::Plan p = plan("a + a");
    for (ir::Node& n : p.program.nodes)
        if (n.kind == ir::NodeKind::Op) n.dtype = DType::Float64;  // the operands stay float32
    EXPECT_NE(failure(p).find("operands of its dtype"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAShapeThatIsNotTheBroadcast) {
    ir::Plan p = plan("a + b");
    for (ir::Node& n : p.program.nodes)
        if (n.kind == ir::NodeKind::Op) n.shape = {4};
    EXPECT_NE(failure(p).find("broadcast of its operands"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAComparisonThatIsNotBool) {
    ir::Plan p = plan("a < 1");
    for (ir::Node& n : p.program.nodes)
        if (n.kind == ir::NodeKind::Op) n.dtype = DType::Float32;
    EXPECT_NE(failure(p).find("bool result"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAStageThatReadsWhatALaterStageStores) {
    ir::Plan p = plan("b - mean(b)");
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    std::swap(p.schedule.stages[0], p.schedule.stages[1]);
    for (std::int32_t& by : p.schedule.stored_by)
        if (by >= 0) by = 1 - by;
    EXPECT_NE(failure(p).find("later stage"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAStoredNodeWithoutItsTemporary) {
    ir::Plan p = plan("b - mean(b)");
    ASSERT_FALSE(p.schedule.temps.empty());
    p.schedule.temps.clear();
    EXPECT_NE(failure(p).find("temporaries"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAnOutputOfNoNode) {
    ir::Plan p = plan("c = a * 2");
    p.program.outputs.at(0).node = ir::NodeId(p.program.nodes.size());
    EXPECT_NE(failure(p).find("output 0 is node"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAnInputNodeThatDisagreesWithItsDeclaration) {
    ir::Plan p = plan("a * 2");
    p.program.inputs.at(0).dtype = DType::Int8;
    EXPECT_NE(failure(p).find("declared int8"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsPassesThatLeaveAStageOut) {
    ir::Plan p = plan("b - mean(b)");
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    p.schedule.passes.pop_back();
    EXPECT_NE(failure(p).find("the passes cover 1 of 2 stages"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAPassWhoseStageReadsWhatAnotherOfItStores) {
    ir::Plan p = plan("b - mean(b)");
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("which stage 0 of its pass stores"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAPassOverTwoShapes) {
    ir::Plan p = plan("c = sum(b); d = a * 2");
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("shares a pass over"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAReductionOfOneAxisInAPass) {
    ir::Plan p = plan("c = sum(b, axis=0); d = b * 2");
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("reduces axis 0 and shares a pass"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAScanInAPass) {
    ir::Plan p = plan("c = cumsum(a); d = a * 2");
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("stage 0 is a scan and shares a pass"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAnOrderStatisticInAPass) {
    ir::Plan p = plan("c = median(a); d = sum(a)");
    ASSERT_EQ(p.schedule.passes.size(), 3u) << "the median, the sum, the median's 0-d cast";
    p.schedule.passes = {ir::Pass{0, 2}, ir::Pass{2, 3}};
    EXPECT_NE(failure(p).find("stage 0 is an order statistic and shares a pass"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAMaskSelectionInAPass) {
    ir::Plan p = plan("c = a[a > 0]; d = a * 2");
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("stage 0 is a mask selection and shares a pass"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsAPassReadingAnInputThatAnOutputOverwrites) {
    ir::Plan p = plan("a = a * 2; s = sum(a)");
    ASSERT_EQ(p.schedule.passes.size(), 2u);
    p.schedule.passes = {ir::Pass{0, 2}};
    EXPECT_NE(failure(p).find("which an output overwrites"), std::string::npos) << failure(p);
}

}  // namespace

TEST(Verify, AcceptsBooleanMaskSelectionsAndTheirSplitSchedules) {
    for (const char* text : {"b[m]", "b[(b > 0) & m] * 2", "sum(b[m])", "min(b[b > 0])", "c = b[m]\nd = (b + 1)[m]",
                             "u[u[:, 0] > 1]", "mean(b[m], axis=0)"}) {
        SCOPED_TRACE(text);
        EXPECT_EQ(failure(plan(text)), "");
    }
    std::string text = "y = (b";
    for (int k = 0; k < 100; ++k) text += " + sin(b) * " + std::to_string(k);
    text += ")[m]";
    const ir::Plan p = plan(text, 64);
    EXPECT_EQ(failure(p), "");
}

TEST(Verify, RejectsANodeThatReadsACompaction) {
    ir::Plan p = plan("b[m]");
    ir::NodeId compact;
    for (const ir::NodeId n : p.program.ids())
        if (p.program.node(n).kind == ir::NodeKind::Compact) compact = n;
    ASSERT_TRUE(compact.valid());
    ir::Node reader;
    reader.kind = ir::NodeKind::Cast;
    reader.dtype = DType::Float64;
    reader.shape = p.program.node(compact).shape;
    reader.args[0] = compact;
    reader.nargs = 1;
    p.program.nodes.push_back(reader);
    p.schedule.stored_by.assign(p.program.nodes.size(), -1);
    EXPECT_NE(failure(p).find("reads node"), std::string::npos) << failure(p);
}

TEST(Verify, RejectsACompactionWhoseMaskIsNotBool) {
    ir::Plan p = plan("b[m]");
    for (ir::Node& n : p.program.nodes)
        if (n.kind == ir::NodeKind::Compact) n.args[1] = n.args[0];  // the float64 values as the mask
    EXPECT_NE(failure(p).find("a mask of float64, not bool"), std::string::npos) << failure(p);
}

// dsl::plan: text to the plan a backend runs — the schedule within the backend's stage limits,
// the in-place decisions, the output eval returns.
#include "dsl/plan.hpp"

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

ir::Plan plan(const std::string& text, const std::map<std::string, dsl::Binding>& env, dsl::Limits limits = {}) {
    return dsl::plan(text, dsl::bindings_of(env), limits);
}

std::string repeat(const std::string& s, int n) {
    std::string r;
    for (int i = 0; i < n; ++i) r += s;
    return r;
}

// The direct-alias flag of the output assigned to `name`.
bool direct(const ir::Plan& p, const std::string& name) {
    for (std::size_t o = 0; o < p.program.outputs.size(); ++o)
        if (p.program.outputs[o].name == name) return p.direct_alias.at(o) != 0;
    ADD_FAILURE() << "no output " << name;
    return false;
}

const std::map<std::string, dsl::Binding> kVectors = {{"a", array(DType::Float32, {4})},
                                                      {"x", array(DType::Float64, {4})},
                                                      {"col", array(DType::Float64, {3, 1})},
                                                      {"s", array(DType::Float64, {})}};

TEST(Plan, StageLimitSplitsALargeElementwiseStage) {
    const std::string text = "y = a" + repeat(" + a", 3000);
    EXPECT_EQ(plan(text, kVectors).schedule.stages.size(), 1u) << "no limit: one stage";
    dsl::Limits limits;
    limits.max_stage_nodes = 1024;
    const ir::Plan split = plan(text, kVectors, limits);
    EXPECT_GE(split.schedule.stages.size(), 3u);
    EXPECT_EQ(split.schedule.stored_by.size(), split.program.nodes.size());
}

TEST(Plan, ASmallProgramIsTheSameWithAndWithoutALimit) {
    dsl::Limits limits;
    limits.max_stage_nodes = 2048;
    const ir::Plan a = plan("y = a * 2 + 1", kVectors), b = plan("y = a * 2 + 1", kVectors, limits);
    EXPECT_EQ(a.schedule.stages.size(), b.schedule.stages.size());
    EXPECT_EQ(a.schedule.stored_by, b.schedule.stored_by);
}

TEST(Plan, AnArrayReadOnlyByTheStageWritingItIsWrittenInPlace) {
    EXPECT_TRUE(direct(plan("a = a * 2", kVectors), "a"));
}

TEST(Plan, AStageStoringTwoOutputsDoesNotWriteInPlace) {
    EXPECT_FALSE(direct(plan("b = a + 0; a = a * 10", kVectors), "a"));
}

TEST(Plan, AStageStoringTwoOutputsWritesInPlaceIntoArraysItDoesNotRead) {
    // Derived columns over existing arrays (the analytics example): nothing reads them.
    const ir::Plan p = plan(
        "a = x * 2; s2 = x + 1; x2 = a - 1",
        {{"a", array(DType::Float64, {4})}, {"x", array(DType::Float64, {4})}, {"x2", array(DType::Float64, {4})}});
    EXPECT_TRUE(direct(p, "a"));
    EXPECT_TRUE(direct(p, "x2"));
}

TEST(Plan, AnOutputThatALaterStageRecomputesFromTheInputIsNotWrittenInPlace) {
    // z's stage (shape (3, 4)) computes x + 1 again from the input x: writing x in place first
    // would make it read the new values.
    EXPECT_FALSE(direct(plan("x = x + 1; z = x * col", kVectors), "x"));
}

TEST(Plan, AReductionIntoAnArrayNoStageReadsIsWrittenInPlace) {
    EXPECT_TRUE(direct(plan("s = sum(x * 2)", kVectors), "s"));
    EXPECT_FALSE(direct(plan("s = sum(x + s)", kVectors), "s"));
}

TEST(Plan, ResultIsTheLastStatementsOutput) {
    const ir::Plan p = plan("b = a + 1\nc = b * 2", kVectors);
    ASSERT_GE(p.result_output, 0);
    EXPECT_EQ(p.program.outputs[static_cast<std::size_t>(p.result_output)].name, "c");
    EXPECT_EQ(plan("a + 1", kVectors).program.outputs.size(), 1u);
}

TEST(Plan, UnknownNameSuggestsABoundName) {
    try {
        plan("y = colx + 1", kVectors);
        FAIL() << "no NameError";
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("did you mean 'col'"), std::string::npos) << e.what();
    }
}

TEST(Plan, BoundNamesAreListedOnlyForAMessage) {
    int listed = 0;
    auto b = std::make_shared<dsl::Binding>(array(DType::Float32, {4}));
    dsl::Bindings bindings;
    bindings.lookup = [b](std::string_view n) -> const dsl::Binding* { return n == "a" ? b.get() : nullptr; };
    bindings.names = [&listed] {
        ++listed;
        return std::vector<std::string>{"a"};
    };
    dsl::plan("y = a * 2", bindings, {});
    EXPECT_EQ(listed, 0);
    EXPECT_THROW(dsl::plan("y = q * 2", bindings, {}), NameError);
    EXPECT_EQ(listed, 1);
}

}  // namespace

// `m, e = frexp(x)`: both results are stored by one elementwise stage (one fused kernel),
// which reads x once.
TEST(Plan, TwoResultsOfOneFunctionAreStoredByOneStage) {
    const ir::Plan p = plan("m, e = frexp(x)", kVectors);
    ASSERT_EQ(p.schedule.stages.size(), 1u);
    ASSERT_EQ(p.schedule.stages[0].stores.size(), 2u);
    ASSERT_EQ(p.program.outputs.size(), 2u);
    EXPECT_EQ(p.program.outputs[0].name, "m");
    EXPECT_EQ(p.program.outputs[1].name, "e");
    EXPECT_EQ(p.program.node(p.program.outputs[0].node).dtype, DType::Float64);
    EXPECT_EQ(p.program.node(p.program.outputs[1].node).dtype, DType::Int32);
    EXPECT_EQ(p.program.inputs.size(), 1u);
}

TEST(Plan, TwoResultsFeedALaterStatementInTheSameStage) {
    const ir::Plan p = plan("q, r = divmod(x, 3.0); y = q * 3.0 + r", kVectors);
    EXPECT_EQ(p.schedule.stages.size(), 1u);
    EXPECT_EQ(p.program.outputs.size(), 3u);
}

// ---------------------------------------------------------------- passes (Schedule::passes)

namespace {

std::vector<std::pair<int, int>> passes(const ir::Plan& p) {
    std::vector<std::pair<int, int>> r;
    for (const ir::Pass& ps : p.schedule.passes) r.emplace_back(ps.first, ps.end);
    return r;
}
using Passes = std::vector<std::pair<int, int>>;

TEST(Plan, ColumnsAndTheSumsOverThemShareAPass) {
    const ir::Plan p = plan("y = x * 2; z = x + 1; s = sum(y); m = max(z)", kVectors);
    ASSERT_EQ(p.schedule.stages.size(), 3u);
    EXPECT_EQ(passes(p), (Passes{{0, 3}}));
}

TEST(Plan, AReductionReadingAnEarlierOneStartsAPass) {
    const ir::Plan p = plan("m = mean(x); v = sum((x - m) * (x - m))", kVectors);
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    EXPECT_EQ(passes(p), (Passes{{0, 1}, {1, 2}}));
}

TEST(Plan, StagesOverAnotherShapeStartAPass) {
    const ir::Plan p = plan("s = sum(col); y = x * 2", kVectors);
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    EXPECT_EQ(passes(p), (Passes{{0, 1}, {1, 2}}));
}

TEST(Plan, AReductionOfOneAxisIsAPassOfItsOwn) {
    const std::map<std::string, dsl::Binding> env = {{"m", array(DType::Float64, {3, 4})}};
    const ir::Plan p = plan("s = sum(m, axis=0); t = sum(m); y = m * 2", env);
    ASSERT_EQ(p.schedule.stages.size(), 3u);
    EXPECT_EQ(passes(p), (Passes{{0, 1}, {1, 3}}));
}

// A pass would read and overwrite x in one sweep; stage by stage, the sum reads x first.
TEST(Plan, StagesReadingAnInputThatAnOutputOverwritesAreNotJoined) {
    const ir::Plan p = plan("x = x * 2; s = sum(x)", kVectors);
    ASSERT_EQ(p.schedule.stages.size(), 2u);
    EXPECT_EQ(passes(p), (Passes{{0, 1}, {1, 2}}));
    EXPECT_EQ(passes(plan("y = x * 2; s = sum(y)", kVectors)), (Passes{{0, 2}}));
}

// A mask selection's length is the data's, a scan and an order statistic go through their rows
// in orders of their own: each is a pass alone, and the reductions of every axis around them
// still share theirs.
TEST(Plan, ASelectionAScanAndAnOrderStatisticAreEachAPassOfTheirOwn) {
    const ir::Plan p = plan(
        "s = sum(x); t = max(x); c = cumsum(x); k = min(x); u = sum(x * x); md = median(x); y = x * 2; sel = x[x > 0]",
        kVectors);
    // The median's value is stored by a 0-d element-wise stage (its cast to the result dtype).
    ASSERT_EQ(p.schedule.stages.size(), 9u);
    using K = ir::Stage::Kind;
    const K kinds[] = {K::Reduce, K::Reduce,  K::Scan,        K::Reduce,     K::Reduce,
                       K::Reduce, K::Compact, K::Elementwise, K::Elementwise};
    for (std::size_t k = 0; k < 9; ++k) EXPECT_EQ(p.schedule.stages[k].kind, kinds[k]) << "stage " << k;
    EXPECT_EQ(passes(p), (Passes{{0, 2}, {2, 3}, {3, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 9}}));
}

TEST(Plan, AnElementwiseStageAfterASelectionOrAScanStartsAPass) {
    EXPECT_EQ(passes(plan("c = cumsum(x); y = x * 2; s = sum(x)", kVectors)), (Passes{{0, 1}, {1, 3}}));
    EXPECT_EQ(passes(plan("sel = x[x > 0]; y = x * 2", kVectors)), (Passes{{0, 1}, {1, 2}}));
    EXPECT_EQ(passes(plan("q = quantile(x, 0.25); s = sum(x); y = x * 2", kVectors)),
              (Passes{{0, 1}, {1, 2}, {2, 3}, {3, 4}}))
        << "the quantile, the sum, the quantile's 0-d cast, y";
}

TEST(Plan, ASplitScheduleHasPassesToo) {
    dsl::Limits limits;
    limits.max_stage_nodes = 64;
    const ir::Plan p = plan("y = a" + repeat(" + sin(a) * 3", 100) + "; s = sum(y)", kVectors, limits);
    ASSERT_GT(p.schedule.stages.size(), 2u);
    int covered = 0;
    for (const ir::Pass& ps : p.schedule.passes) {
        EXPECT_EQ(ps.first, covered);
        covered = ps.end;
    }
    EXPECT_EQ(covered, static_cast<int>(p.schedule.stages.size()));
}

}  // namespace

// jit::check and jit::outline: what a program gives, from dtypes and shapes alone.
#include <jit/check.hpp>
#include <jit/jit.hpp>

#include <gtest/gtest.h>

namespace {

using jit::DType;
using jit::ValueSpec;

TEST(Check, ResultDtypeAndShapeFollowPromotionAndBroadcasting) {
    const jit::CheckedProgram p = jit::check(
        "a * 2 + b", {{"a", ValueSpec::array(DType::Float32, {4, 1})}, {"b", ValueSpec::array(DType::Int16, {3})}});
    ASSERT_TRUE(p.result);
    EXPECT_EQ(p.result->dtype, DType::Float32);
    EXPECT_EQ(p.result->shape, (jit::Shape{4, 3}));
    EXPECT_EQ(p.parameters, (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(p.reduces);
}

TEST(Check, HostScalarsAreWeakAsInRun) {
    const auto p = jit::check(
        "x * s", {{"x", ValueSpec::array(DType::Float32, {8})}, {"s", ValueSpec::host_scalar(DType::Float64)}});
    EXPECT_EQ(p.result->dtype, DType::Float32);
}

TEST(Check, EveryAssignedNameHasItsLastValue) {
    const auto p =
        jit::check("t = a * 2; t = t > 1; s = sum(a, axis=0)", {{"a", ValueSpec::array(DType::Int32, {5, 6})}});
    ASSERT_EQ(p.assigned.size(), 2u);
    EXPECT_EQ(p.assigned[0].name, "t");
    EXPECT_EQ(p.assigned[0].dtype, DType::Bool);
    EXPECT_EQ(p.assigned[1].name, "s");
    EXPECT_EQ(p.assigned[1].dtype, DType::Int64);
    EXPECT_EQ(p.assigned[1].shape, (jit::Shape{6}));
    EXPECT_EQ(p.result->name, "s");
    EXPECT_TRUE(p.reduces);
}

TEST(Check, AgreesWithEvaluation) {
    jit::Runtime rt([] {
        jit::RuntimeOptions o;
        o.backend = jit::Backend::Cpu;
        return o;
    }());
    jit::Environment env{{"a", jit::Arg(jit::Array::from(std::vector<std::int8_t>{1, 2, 3}, {}, jit::Backend::Cpu))},
                         {"k", jit::Arg(2.5)}};
    const jit::Array r = rt.run("where(a > 1, a * k, -1)", env);
    const auto p = jit::check("where(a > 1, a * k, -1)", {{"a", ValueSpec::array(DType::Int8, {3})},
                                                          {"k", ValueSpec::host_scalar(DType::Float64)}});
    EXPECT_EQ(p.result->dtype, r.dtype());
    EXPECT_EQ(p.result->shape, r.shape());
}

TEST(Check, ErrorsAreTheCheckersWithTheCaret) {
    try {
        jit::check("a + b",
                   {{"a", ValueSpec::array(DType::Float64, {3})}, {"b", ValueSpec::array(DType::Float64, {4})}});
        FAIL() << "no ShapeError";
    } catch (const jit::ShapeError& e) {
        EXPECT_EQ(e.span().begin, 0u);
        EXPECT_EQ(e.span().end, 5u);
    }
    EXPECT_THROW(jit::check("a + c", {{"a", ValueSpec::array(DType::Float64, {3})}}), jit::NameError);
    EXPECT_THROW(jit::check("a & a", {{"a", ValueSpec::array(DType::Float32, {3})}}), jit::TypeError);
    EXPECT_THROW(jit::check("a +", {}), jit::ParseError);
}

TEST(Check, EmptyProgramHasNoResult) { EXPECT_FALSE(jit::check("", {}).result); }

using How = jit::CheckedRows::How;

TEST(CheckRows, ElementwiseWorkAndFullReductionsSplitIntoRowBlocks) {
    const jit::CheckedProgram p =
        jit::check("c = a * r; s = mean(a)",
                   {{"a", ValueSpec::array(DType::Float32, {1000, 3})}, {"r", ValueSpec::array(DType::Float32, {3})}});
    ASSERT_TRUE(p.rows.splits) << p.rows.why_not;
    ASSERT_EQ(p.rows.inputs.size(), 2u);
    for (const auto& in : p.rows.inputs) {
        if (in.name == "a") {
            EXPECT_EQ(in.how, How::Rows);
            EXPECT_EQ(in.row_bytes, 12u);
        } else {
            EXPECT_EQ(in.name, "r");
            EXPECT_EQ(in.how, How::Whole);
        }
    }
    ASSERT_EQ(p.rows.outputs.size(), 2u);
    EXPECT_EQ(p.rows.outputs[0].name, "c");
    EXPECT_EQ(p.rows.outputs[0].how, How::Rows);
    EXPECT_EQ(p.rows.outputs[1].name, "s");
    EXPECT_EQ(p.rows.outputs[1].how, How::Combine);
    EXPECT_EQ(p.rows.outputs[1].reduction, "mean");
}

TEST(CheckRows, AProgramThatNeedsEveryRowFirstSaysWhy) {
    const jit::CheckedProgram p = jit::check("cumsum(a)", {{"a", ValueSpec::array(DType::Float32, {1000})}});
    EXPECT_FALSE(p.rows.splits);
    EXPECT_EQ(p.rows.why_not, "a scan (cumsum, cumprod) is not streamed (each chunk needs the ones before)");
    EXPECT_FALSE(jit::check("", {}).rows.splits);
}

TEST(Outline, StatementsAndNestedReductionsWithTheirSpans) {
    const std::string text = "t = a*2\ns = sum(max(t, axis=1)) + mean(a)";
    const jit::Outline o = jit::outline(text);
    ASSERT_EQ(o.statements.size(), 2u);
    EXPECT_EQ(o.statements[1].target, "s");
    auto slice = [&](jit::SourceSpan s) { return text.substr(s.begin, s.end - s.begin); };
    EXPECT_EQ(slice(o.statements[0].value_span), "a*2");
    ASSERT_EQ(o.reductions.size(), 3u);
    EXPECT_EQ(o.reductions[0].function, "sum");
    EXPECT_EQ(slice(o.reductions[0].operand), "max(t, axis=1)");
    EXPECT_EQ(o.reductions[1].function, "max");
    ASSERT_EQ(o.reductions[1].keywords.size(), 1u);
    EXPECT_EQ(slice(o.reductions[1].keywords[0].second), "1");
    EXPECT_EQ(o.reductions[2].function, "mean");
    EXPECT_EQ(o.reductions[2].statement, 1);
}

TEST(Outline, TwoArgumentMinIsElementwiseNotAReduction) {
    EXPECT_TRUE(jit::outline("min(a, b) + amax(a)").reductions.size() == 1);
    EXPECT_EQ(jit::outline("min(a, b) + amax(a)").reductions[0].function, "max");
}

TEST(Outline, SubscriptsWithTheirFoldedItems) {
    const std::string text = "t = a[2*3:-1:2, 0, ..., None]\nu = (t * 2)[::-1][a > 0]";
    const jit::Outline o = jit::outline(text);
    auto slice = [&](jit::SourceSpan s) { return text.substr(s.begin, s.end - s.begin); };
    ASSERT_EQ(o.subscripts.size(), 3u);
    const jit::OutlineSubscript& s0 = o.subscripts[0];
    EXPECT_EQ(s0.statement, 0);
    EXPECT_EQ(slice(s0.base), "a");
    EXPECT_EQ(slice(s0.index), "[2*3:-1:2, 0, ..., None]");
    ASSERT_EQ(s0.items.size(), 4u);
    using K = jit::OutlineIndexItem::Kind;
    EXPECT_EQ(s0.items[0].kind, K::Slice);
    EXPECT_EQ(s0.items[0].start, 6);
    EXPECT_EQ(s0.items[0].stop, -1);
    EXPECT_EQ(s0.items[0].step, 2);
    EXPECT_EQ(s0.items[1].kind, K::Integer);
    EXPECT_EQ(s0.items[1].value, 0);
    EXPECT_EQ(s0.items[2].kind, K::Ellipsis);
    EXPECT_EQ(s0.items[3].kind, K::NewAxis);
    // The outer subscript first, then the one in its base; a subscript of a parenthesized
    // expression covers the parentheses (its base, a group's content, does not).
    EXPECT_EQ(slice(o.statements[1].value_span), "(t * 2)[::-1][a > 0]");
    EXPECT_EQ(slice(o.subscripts[1].span), "(t * 2)[::-1][a > 0]");
    EXPECT_EQ(slice(o.subscripts[1].base), "(t * 2)[::-1]");
    EXPECT_EQ(slice(o.subscripts[1].index), "[a > 0]");
    EXPECT_EQ(o.subscripts[1].items[0].kind, K::Array);
    EXPECT_EQ(slice(o.subscripts[1].items[0].span), "a > 0");
    EXPECT_EQ(slice(o.subscripts[2].span), "(t * 2)[::-1]");
    EXPECT_EQ(slice(o.subscripts[2].base), "t * 2");
    EXPECT_EQ(slice(o.subscripts[2].index), "[::-1]");
    EXPECT_FALSE(o.subscripts[2].items[0].start);
    EXPECT_FALSE(o.subscripts[2].items[0].stop);
    EXPECT_EQ(o.subscripts[2].items[0].step, -1);
    EXPECT_TRUE(o.subscripts[2].items[0].constant);
}

TEST(Outline, ASliceBoundReadFromANameIsNotConstant) {
    const jit::Outline o = jit::outline("a[k:]");
    ASSERT_EQ(o.subscripts.size(), 1u);
    EXPECT_FALSE(o.subscripts[0].items[0].constant);
}

}  // namespace

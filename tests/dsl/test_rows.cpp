// dsl::split_rows (dsl/rows.hpp): how a program splits into rows, read off the IR and the op
// table, for streaming, sharding and jit::check's program info.
#include "dsl/plan.hpp"
#include "dsl/rows.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace {

using namespace jit;
using dsl::OutputRows;

struct Var {
    DType dtype;
    Shape shape;
};

ir::Program program_of(const std::string& text, const std::map<std::string, Var>& vars) {
    std::map<std::string, dsl::Binding> b;
    for (const auto& [name, v] : vars) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = v.dtype;
        x.shape = v.shape;
        x.strides = contiguous_strides(v.shape);
        b.emplace(name, x);
    }
    return dsl::plan(text, dsl::bindings_of(b), dsl::Limits{}).program;
}

std::size_t input_index(const ir::Program& p, const std::string& name) {
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        if (p.inputs[i].name == name) return i;
    ADD_FAILURE() << "no input " << name;
    return 0;
}

TEST(Rows, ElementwiseOutputsAndFullInputsSplitByRows) {
    const ir::Program p =
        program_of("c = a * b", {{"a", {DType::Float32, {100, 8}}}, {"b", {DType::Float64, {100, 8}}}});
    const dsl::RowSplit r = dsl::split_rows(p);
    ASSERT_TRUE(r.splits()) << r.first_refusal();
    EXPECT_EQ(r.shape, (Shape{100, 8}));
    EXPECT_EQ(r.split, 1);
    EXPECT_EQ(r.rows, 100);
    EXPECT_TRUE(r.inputs[input_index(p, "a")].chunked);
    EXPECT_EQ(r.inputs[input_index(p, "a")].row_bytes, 8u * 4);
    EXPECT_EQ(r.inputs[input_index(p, "b")].row_bytes, 8u * 8);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].how, OutputRows::How::Rows);
    EXPECT_EQ(r.outputs[0].row_bytes, 8u * 8);  // float64: a * b promotes
}

TEST(Rows, AnInputBroadcastAlongTheRowsIsReadWhole) {
    const ir::Program p = program_of("a - r", {{"a", {DType::Float32, {100, 8}}}, {"r", {DType::Float32, {8}}}});
    const dsl::RowSplit r = dsl::split_rows(p);
    ASSERT_TRUE(r.splits()) << r.first_refusal();
    EXPECT_TRUE(r.inputs[input_index(p, "a")].chunked);
    EXPECT_FALSE(r.inputs[input_index(p, "r")].chunked);
}

TEST(Rows, MoreAxesCollapseOnlyWhileRowsAreLong) {
    const ir::Program p = program_of("a + 1", {{"a", {DType::Float32, {4, 5, 6}}}});
    EXPECT_EQ(dsl::split_rows(p).split, 1);          // axis 0 alone by default
    EXPECT_EQ(dsl::split_rows(p, 0).split, 3);       // every axis while a row has bytes
    EXPECT_EQ(dsl::split_rows(p, 30 * 8).split, 1);  // a row of 5*6 elements of 8 bytes (in + out) is 240
    EXPECT_EQ(dsl::split_rows(p, 30 * 8 - 1).split, 2);
    EXPECT_EQ(dsl::split_rows(p, 0).rows, 4 * 5 * 6);
}

TEST(Rows, FullReductionsCombineWithTheirOwnOp) {
    const ir::Program p =
        program_of("s = sum(a); m = mean(a); t = max(a); k = any(a > 0)", {{"a", {DType::Float32, {100, 8}}}});
    const dsl::RowSplit r = dsl::split_rows(p);
    ASSERT_TRUE(r.splits()) << r.first_refusal();
    ASSERT_EQ(r.outputs.size(), 4u);
    EXPECT_EQ(r.outputs[0].how, OutputRows::How::Combine);
    EXPECT_EQ(r.outputs[0].reduction, ir::Op::Sum);
    EXPECT_EQ(r.outputs[1].reduction, ir::Op::Mean);
    EXPECT_EQ(r.outputs[2].reduction, ir::Op::ReduceMax);
    EXPECT_EQ(r.outputs[3].reduction, ir::Op::Any);
    EXPECT_EQ(r.outputs[3].dtype, DType::Bool);
}

TEST(Rows, ProgramsThatNeedEveryRowFirstAreRefusedWithAReason) {
    const std::map<std::string, Var> v{{"a", {DType::Float32, {100, 8}}}};
    const std::map<std::string, std::string> why{
        {"sum(a) * 2", "a reduction that is not a statement's value is not streamed"},
        {"s = sum(a); t = s * 2", "a reduction's value is used in further arithmetic (it needs every chunk first)"},
        {"sum(a, axis=1)", "a reduction along one axis is not streamed"},
        {"cumsum(a)", "a scan (cumsum, cumprod) is not streamed (each chunk needs the ones before)"},
        {"a[a > 0]", "a boolean-mask selection's length is known only once all of its data is read"},
        {"argmax(a)", "a reduction that is not a statement's value is not streamed"},
        {"a[:, 1:]", "the program reads a slice of 'a'"},
    };
    for (const auto& [text, reason] : why) {
        const dsl::RowSplit r = dsl::split_rows(program_of(text, v));
        EXPECT_FALSE(r.splits()) << text;
        EXPECT_EQ(r.first_refusal(), reason) << text;
    }
}

TEST(Rows, AReductionThatSelectsRatherThanFoldsIsRefusedAsAnOutput) {
    // An OrderStat node as a program's value (lowering never makes one; the table's Finish
    // Select alone refuses it).
    ir::Program p = program_of("sum(a)", {{"a", {DType::Float32, {100}}}});
    ir::Node& root = p.node(p.outputs.at(0).node);
    ASSERT_EQ(root.kind, ir::NodeKind::Reduce);
    root.op = ir::Op::OrderStat;
    const dsl::RowSplit r = dsl::split_rows(p);
    EXPECT_TRUE(r.why_not.empty()) << r.why_not;
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].how, OutputRows::How::Refused);
    EXPECT_FALSE(r.splits());
    EXPECT_EQ(r.first_refusal(), "the reduction  is not streamed");
}

TEST(Rows, OutputsOfDifferentShapesAreRefused) {
    const ir::Program p =
        program_of("x = a*2; y = b+1", {{"a", {DType::Float32, {100, 10}}}, {"b", {DType::Float32, {10}}}});
    EXPECT_EQ(dsl::split_rows(p).first_refusal(), "the program's outputs are of different shapes");
}

TEST(Rows, AnInputFullOnOneSplitAxisAndBroadcastOnAnotherLimitsTheSplit) {
    const ir::Program p = program_of("a * c", {{"a", {DType::Float32, {4, 5, 6}}}, {"c", {DType::Float32, {4, 1, 6}}}});
    const dsl::RowSplit r = dsl::split_rows(p, 0);
    ASSERT_TRUE(r.splits()) << r.first_refusal();
    EXPECT_EQ(r.split, 1);
}

TEST(Rows, PerOutputTheOwnNodesSayWhetherTheySelectOrScan) {
    // Sharding runs every statement on every part: each output answers for its own nodes, down
    // to the nodes of the outputs it reads.
    const ir::Program p =
        program_of("c = cumsum(a); d = c + 1; e = sum(cumprod(a)) * 2; f = a[a > 0]; g = f * 2; h = a[::-1]",
                   {{"a", {DType::Float32, {100}}}});
    EXPECT_TRUE(dsl::split_rows(p).own.empty());
    const dsl::RowSplit r = dsl::split_rows(p, dsl::RowsOptions{.per_output = true});
    EXPECT_FALSE(r.splits());  // the program as a whole does not split
    ASSERT_EQ(r.own.size(), p.outputs.size());
    auto own = [&](const std::string& name) {
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (p.outputs[o].name == name) return r.own[o];
        ADD_FAILURE() << "no output " << name;
        return dsl::OwnRows{};
    };
    EXPECT_TRUE(own("c").scans);
    EXPECT_FALSE(own("d").scans);  // c's scan is c's
    EXPECT_TRUE(own("e").scans);
    EXPECT_TRUE(own("f").selects);
    EXPECT_FALSE(own("f").scans);
    EXPECT_TRUE(own("g").selects);                     // f read as the selection it is
    EXPECT_FALSE(own("h").selects || own("h").scans);  // a view: the text's subscripts say it
}

}  // namespace

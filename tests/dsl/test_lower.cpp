// Checking and lowering: names, NumPy 2 dtype promotion (NEP 50), shapes, errors.
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"
#include "dsl/types.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace jit;

namespace {

struct Vars {
    std::map<std::string, dsl::Binding, std::less<>> b;
    // `strict`: an assignment always writes into the array (CallOptions::strict_in_place).
    Vars& array(const std::string& name, DType t, Shape s = {8}, bool strict = false, bool read_only = false) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = t;
        x.strict = strict;
        x.read_only = read_only;
        x.strides = contiguous_strides(s);
        x.shape = std::move(s);
        b[name] = x;
        return *this;
    }
    Vars& scalar(const std::string& name, DType t) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Scalar;
        x.dtype = t;
        b[name] = x;
        return *this;
    }
    dsl::Lookup lookup() const {
        return [this](std::string_view n) -> const dsl::Binding* {
            auto it = b.find(n);
            return it == b.end() ? nullptr : &it->second;
        };
    }
};

ir::Program lower(const std::string& text, const Vars& v) {
    auto m = syntax::parse(text);
    std::vector<std::string> names;
    for (const auto& [n, b] : v.b) names.push_back(n);
    return dsl::lower(m, text, v.lookup(), names);
}

DType result_dtype(const std::string& text, const Vars& v) {
    auto p = lower(text, v);
    return p.node(p.result).dtype;
}

Shape result_shape(const std::string& text, const Vars& v) {
    auto p = lower(text, v);
    return p.node(p.result).shape;
}

}  // namespace

TEST(Promotion, WeakIntLiteralKeepsInt8) {
    EXPECT_EQ(result_dtype("a + 1", Vars().array("a", DType::Int8)), DType::Int8);
}

TEST(Promotion, WeakFloatLiteralKeepsFloat32) {
    EXPECT_EQ(result_dtype("a * 2.5", Vars().array("a", DType::Float32)), DType::Float32);
}

TEST(Promotion, WeakFloatLiteralWithIntArrayGivesFloat64) {
    EXPECT_EQ(result_dtype("a * 2.5", Vars().array("a", DType::Int16)), DType::Float64);
}

TEST(Promotion, Int64WithFloat32GivesFloat64) {
    EXPECT_EQ(result_dtype("a + b", Vars().array("a", DType::Int64).array("b", DType::Float32)), DType::Float64);
}

TEST(Promotion, Int8WithUInt8GivesInt16) {
    EXPECT_EQ(result_dtype("a + b", Vars().array("a", DType::Int8).array("b", DType::UInt8)), DType::Int16);
}

TEST(Promotion, UInt64WithInt64GivesFloat64) { EXPECT_EQ(dsl::promote(DType::UInt64, DType::Int64), DType::Float64); }

TEST(Promotion, Int16WithFloat16GivesFloat32) { EXPECT_EQ(dsl::promote(DType::Int16, DType::Float16), DType::Float32); }

TEST(Promotion, Complex64WithFloat64GivesComplex128) {
    EXPECT_EQ(dsl::promote(DType::Complex64, DType::Float64), DType::Complex128);
}

TEST(Promotion, TrueDivisionOfInt32GivesFloat64) {
    EXPECT_EQ(result_dtype("a / b", Vars().array("a", DType::Int32).array("b", DType::Int32)), DType::Float64);
}

TEST(Promotion, SinOfInt8GivesFloat16) {
    EXPECT_EQ(result_dtype("sin(a)", Vars().array("a", DType::Int8)), DType::Float16);
}

TEST(Promotion, HostFloatScalarIsWeak) {
    EXPECT_EQ(result_dtype("a * x", Vars().array("a", DType::Float32).scalar("x", DType::Float64)), DType::Float32);
}

TEST(Promotion, LiteralsAloneGiveDefaultDtypes) {
    EXPECT_EQ(result_dtype("2 + 3", Vars()), DType::Int64);
    EXPECT_EQ(result_dtype("2 + 3.0", Vars()), DType::Float64);
}

TEST(Promotion, WeakExpressionOfLiteralsStaysWeak) {
    EXPECT_EQ(result_dtype("a * (2.5 * 2)", Vars().array("a", DType::Float32)), DType::Float32);
}

TEST(Promotion, SumOfInt8GivesInt64) {
    EXPECT_EQ(result_dtype("sum(a)", Vars().array("a", DType::Int8)), DType::Int64);
}

TEST(Promotion, SumOfUInt16GivesUInt64) {
    EXPECT_EQ(result_dtype("sum(a)", Vars().array("a", DType::UInt16)), DType::UInt64);
}

TEST(Promotion, MeanOfInt32GivesFloat64) {
    EXPECT_EQ(result_dtype("mean(a)", Vars().array("a", DType::Int32)), DType::Float64);
}

TEST(Promotion, ComparisonGivesBool) {
    EXPECT_EQ(result_dtype("a < b", Vars().array("a", DType::Int8).array("b", DType::Float64)), DType::Bool);
}

TEST(Promotion, ComparisonWithOutOfRangeLiteralWidens) {
    auto p = lower("a < 300", Vars().array("a", DType::Int8));
    const ir::Node& cmp = p.node(p.result);
    EXPECT_EQ(cmp.dtype, DType::Bool);
    EXPECT_EQ(p.node(cmp.args[0]).dtype, DType::Int64);
}

TEST(Promotion, BoolPlusBoolStaysBool) {
    EXPECT_EQ(result_dtype("a + b", Vars().array("a", DType::Bool).array("b", DType::Bool)), DType::Bool);
}

TEST(Promotion, CastFunctionGivesItsDtype) {
    EXPECT_EQ(result_dtype("float32(a) + 1", Vars().array("a", DType::Int64)), DType::Float32);
}

TEST(Lowering, ConstantsAreCastToTheOperandDtype) {
    auto p = lower("a * 2", Vars().array("a", DType::Float32));
    const ir::Node& mul = p.node(p.result);
    const ir::Node& two = p.node(mul.args[1]);
    EXPECT_EQ(two.kind, ir::NodeKind::Const);
    EXPECT_EQ(two.dtype, DType::Float32);
}

TEST(Lowering, NamedConstantPi) {
    auto p = lower("pi", Vars());
    const ir::Node& n = p.node(p.node(p.result).kind == ir::NodeKind::Cast ? p.node(p.result).args[0] : p.result);
    EXPECT_EQ(n.kind, ir::NodeKind::Const);
    EXPECT_DOUBLE_EQ(n.value.f, 3.141592653589793);
}

TEST(Lowering, VariableShadowsNamedConstant) {
    auto p = lower("a * e", Vars().array("a", DType::Float32).array("e", DType::Float32));
    ASSERT_EQ(p.inputs.size(), 2u);
    EXPECT_EQ(p.inputs[1].name, "e");
}

TEST(Lowering, ChainedComparisonIsAnd) {
    auto p =
        lower("a < b < c", Vars().array("a", DType::Float32).array("b", DType::Float32).array("c", DType::Float32));
    const ir::Node& r = p.node(p.result);
    EXPECT_EQ(r.op, ir::Op::And);
    EXPECT_EQ(p.node(r.args[0]).op, ir::Op::Lt);
    EXPECT_EQ(p.node(r.args[1]).op, ir::Op::Lt);
    EXPECT_EQ(p.inputs.size(), 3u);  // b is read once
}

TEST(Lowering, PowerIsRightAssociative) {
    auto p =
        lower("a ** b ** c", Vars().array("a", DType::Float64).array("b", DType::Float64).array("c", DType::Float64));
    const ir::Node& r = p.node(p.result);
    EXPECT_EQ(r.op, ir::Op::Pow);
    EXPECT_EQ(p.node(r.args[0]).kind, ir::NodeKind::Input);
    EXPECT_EQ(p.node(r.args[1]).op, ir::Op::Pow);
}

TEST(Lowering, TernaryIsWhere) {
    auto p = lower("a > 0 ? a : 0.5", Vars().array("a", DType::Float32));
    EXPECT_EQ(p.node(p.result).op, ir::Op::Where);
    EXPECT_EQ(p.node(p.result).dtype, DType::Float32);
}

TEST(Lowering, MaxWithTwoArgumentsIsElementwise) {
    auto p = lower("max(a, b)", Vars().array("a", DType::Float32).array("b", DType::Float32));
    EXPECT_EQ(p.node(p.result).op, ir::Op::Maximum);
}

TEST(Lowering, MaxWithOneArgumentIsReduction) {
    auto p = lower("max(a)", Vars().array("a", DType::Float32));
    EXPECT_EQ(p.node(p.result).kind, ir::NodeKind::Reduce);
    EXPECT_EQ(p.node(p.result).op, ir::Op::ReduceMax);
}

TEST(Lowering, AliasesAreAccepted) {
    auto p = lower("asin(a) + atan2(a, a) + fabs(a) + pow(a, 2)", Vars().array("a", DType::Float32));
    EXPECT_EQ(p.node(p.result).dtype, DType::Float32);
}

TEST(Lowering, StatementsFeedLaterStatements) {
    auto p = lower("t = a * 2; c = t + b", Vars().array("a", DType::Float32).array("b", DType::Float32));
    ASSERT_EQ(p.outputs.size(), 2u);
    EXPECT_EQ(p.outputs[0].name, "t");
    EXPECT_EQ(p.outputs[1].name, "c");
    EXPECT_EQ(p.result, p.outputs[1].node);
}

TEST(Lowering, ReassignedNameKeepsOneOutput) {
    auto p = lower("t = a * 2; t = t + 1", Vars().array("a", DType::Float32));
    ASSERT_EQ(p.outputs.size(), 1u);
    EXPECT_EQ(p.outputs[0].name, "t");
}

TEST(Lowering, AssignmentToBoundArrayIsInPlace) {
    auto p = lower("a = a * 2", Vars().array("a", DType::Int32));
    ASSERT_EQ(p.outputs.size(), 1u);
    EXPECT_EQ(p.outputs[0].alias_input, 0);
}

TEST(Lowering, StrictInPlaceBroadcastsToTheArrayShape) {
    auto p = lower("a = b", Vars().array("a", DType::Float32, {4, 3}, true).array("b", DType::Float32, {3}));
    EXPECT_EQ(p.node(p.outputs[0].node).shape, (Shape{4, 3}));
    EXPECT_GE(p.outputs[0].alias_input, 0) << "written into a";
}

TEST(Lowering, AValueOfAnotherShapeRebindsTheName) {
    auto p = lower("a = b", Vars().array("a", DType::Float32, {4, 3}).array("b", DType::Float32, {3}));
    EXPECT_EQ(p.node(p.outputs[0].node).shape, (Shape{3}));
    EXPECT_EQ(p.outputs[0].alias_input, -1);
}

TEST(Lowering, AValueOfAnotherDtypeRebindsTheName) {
    auto p = lower("a = a * 2.5", Vars().array("a", DType::Int32));
    EXPECT_EQ(p.node(p.outputs[0].node).dtype, DType::Float64);
    EXPECT_EQ(p.outputs[0].alias_input, -1);
}

TEST(Lowering, AReadOnlyArrayIsNotWrittenButMayBeRebound) {
    EXPECT_THROW(lower("a = a * 2", Vars().array("a", DType::Int32, {8}, false, true)), ReadOnlyError);
    EXPECT_THROW(lower("a = sum(a)", Vars().array("a", DType::Int32, {8}, true, true)), ReadOnlyError);
    auto p = lower("a = sum(a)", Vars().array("a", DType::Int32, {8}, false, true));
    EXPECT_EQ(p.outputs[0].alias_input, -1);
}

TEST(Lowering, CopyOfAnInputGetsItsOwnNode) {
    auto p = lower("c = a", Vars().array("a", DType::Float32));
    EXPECT_EQ(p.node(p.outputs[0].node).kind, ir::NodeKind::Cast);
}

TEST(Shapes, BroadcastColumnWithRow) {
    EXPECT_EQ(result_shape("a + b", Vars().array("a", DType::Float32, {3, 1}).array("b", DType::Float32, {1, 4})),
              (Shape{3, 4}));
}

TEST(Shapes, BroadcastWithZeroDim) {
    EXPECT_EQ(result_shape("a + b", Vars().array("a", DType::Float32, {}).array("b", DType::Float32, {2, 5})),
              (Shape{2, 5}));
}

TEST(Shapes, ReductionAlongAxisDropsIt) {
    EXPECT_EQ(result_shape("sum(a, axis=1)", Vars().array("a", DType::Float32, {3, 4, 5})), (Shape{3, 5}));
    EXPECT_EQ(result_shape("sum(a, axis=-1)", Vars().array("a", DType::Float32, {3, 4, 5})), (Shape{3, 4}));
}

TEST(Shapes, FullReductionIsZeroDim) {
    EXPECT_EQ(result_shape("sum(a * b)", Vars().array("a", DType::Float32, {7}).array("b", DType::Float32, {7})),
              Shape{});
}

TEST(Errors, NonBroadcastableShapesAreShapeError) {
    EXPECT_THROW(lower("a + b", Vars().array("a", DType::Float32, {3}).array("b", DType::Float32, {4})), ShapeError);
}

TEST(Errors, UnknownNameSuggestsClosest) {
    try {
        lower("c = alpha * 2", Vars().array("alpa", DType::Float32));
        FAIL();
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("did you mean 'alpa'"), std::string::npos) << e.what();
        EXPECT_EQ(e.span().begin, 4u);
        EXPECT_EQ(e.span().end, 9u);
    }
}

TEST(Errors, UnknownFunctionSuggestsClosest) {
    try {
        lower("sine(a)", Vars().array("a", DType::Float32));
        FAIL();
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("did you mean 'sin'"), std::string::npos) << e.what();
    }
}

TEST(Typing, RoundOfComplexRoundsEachPartCeilRefusesIt) {
    EXPECT_EQ(result_dtype("round(z)", Vars().array("z", DType::Complex64)), DType::Complex64);
    EXPECT_THROW(lower("ceil(z)", Vars().array("z", DType::Complex128)), TypeError);
}

TEST(Typing, RealAndImagAttributesAreTheFunctions) {
    EXPECT_EQ(result_dtype("(z - 1).real", Vars().array("z", DType::Complex128)), DType::Float64);
    EXPECT_EQ(result_dtype("a.imag", Vars().array("a", DType::Int32)), DType::Int32);
}

TEST(Errors, WrongArityIsTypeError) { EXPECT_THROW(lower("sin(a, a)", Vars().array("a", DType::Float32)), TypeError); }

TEST(Errors, BitwiseOnFloatsIsTypeError) {
    EXPECT_THROW(lower("a & b", Vars().array("a", DType::Float32).array("b", DType::Float32)), TypeError);
}

TEST(Errors, BoolSubtractionIsTypeError) {
    EXPECT_THROW(lower("a - b", Vars().array("a", DType::Bool).array("b", DType::Bool)), TypeError);
}

TEST(Errors, IntegerToNegativeLiteralPowerIsValueError) {
    try {
        lower("a ** -2", Vars().array("a", DType::Int32));
        FAIL();
    } catch (const ValueError& e) {
        EXPECT_EQ(e.span().begin, 5u);
    }
}

TEST(Errors, IntegerExponentScalarIsMarked) {
    auto p = lower("a ** n", Vars().array("a", DType::Int32).scalar("n", DType::Int64));
    ASSERT_EQ(p.scalars.size(), 1u);
    EXPECT_TRUE(p.scalars[0].must_be_nonnegative);
}

TEST(Errors, OutOfRangeLiteralIsValueError) {
    try {
        lower("a + 300", Vars().array("a", DType::Int8));
        FAIL();
    } catch (const ValueError& e) {
        EXPECT_EQ(e.span().begin, 4u);
        EXPECT_EQ(e.span().end, 7u);
    }
}

TEST(Errors, NegativeLiteralIntoUnsignedIsValueError) {
    EXPECT_THROW(lower("a + -1", Vars().array("a", DType::UInt8)), ValueError);
}

TEST(Errors, StrictInPlaceFloatIntoIntIsTypeError) {
    EXPECT_THROW(lower("a = a * 2.5", Vars().array("a", DType::Int32, {8}, true)), TypeError);
}

TEST(Errors, StrictInPlaceLargerShapeIsShapeError) {
    EXPECT_THROW(lower("a = b", Vars().array("a", DType::Float32, {3}, true).array("b", DType::Float32, {2, 3})),
                 ShapeError);
}

TEST(Errors, AxisOutOfRangeIsShapeError) {
    EXPECT_THROW(lower("sum(a, axis=2)", Vars().array("a", DType::Float32, {3, 4})), ShapeError);
}

TEST(Errors, MinOfEmptyIsValueError) {
    EXPECT_THROW(lower("min(a)", Vars().array("a", DType::Float32, {0})), ValueError);
}

TEST(Errors, UnexpectedKeywordIsTypeError) {
    EXPECT_THROW(lower("sin(a, axis=0)", Vars().array("a", DType::Float32)), TypeError);
}

TEST(Errors, AssigningToAFunctionNameIsNameError) {
    EXPECT_THROW(lower("sin = a", Vars().array("a", DType::Float32)), NameError);
}

TEST(Parameters, InOrderOfFirstAppearance) {
    auto m = syntax::parse("c = b * 2 + a; d = c + b + x");
    EXPECT_EQ(dsl::parameters(m), (std::vector<std::string>{"b", "a", "x"}));
}

TEST(Parameters, LeaveOutNamedConstantsAndFunctions) {
    auto m = syntax::parse("sin(a) * pi + float32(b)");
    EXPECT_EQ(dsl::parameters(m), (std::vector<std::string>{"a", "b"}));
}

TEST(Canonical, NamesDoNotMatter) {
    auto p1 = lower("x * 2 + y", Vars().array("x", DType::Float32).array("y", DType::Float32));
    auto p2 = lower("a * 2 + b", Vars().array("a", DType::Float32).array("b", DType::Float32));
    EXPECT_EQ(p1.canonical(), p2.canonical());
}

TEST(Canonical, DtypesMatter) {
    auto p1 = lower("x * 2 + y", Vars().array("x", DType::Float32).array("y", DType::Float32));
    auto p2 = lower("x * 2 + y", Vars().array("x", DType::Float64).array("y", DType::Float64));
    EXPECT_NE(p1.canonical(), p2.canonical());
}

TEST(Schedule, ReductionComesBeforeElementwiseUse) {
    auto p = lower("m = mean(a); d = a - m", Vars().array("a", DType::Float32, {16}));
    auto s = ir::schedule(p);
    ASSERT_EQ(s.stages.size(), 2u);
    EXPECT_EQ(s.stages[0].kind, ir::Stage::Kind::Reduce);
    EXPECT_EQ(s.stages[1].kind, ir::Stage::Kind::Elementwise);
    EXPECT_EQ(s.stages[1].stores.size(), 1u);
}

TEST(Schedule, OutputsOfOneShapeShareAStage) {
    auto p = lower("c = a + 1; d = a * 2", Vars().array("a", DType::Float32, {16}));
    auto s = ir::schedule(p);
    ASSERT_EQ(s.stages.size(), 1u);
    EXPECT_EQ(s.stages[0].stores.size(), 2u);
}

TEST(Schedule, ReductionReadByLaterStageNeedsTemp) {
    auto p = lower("d = a - mean(a)", Vars().array("a", DType::Float32, {16}));
    auto s = ir::schedule(p);
    EXPECT_EQ(s.temps.size(), 1u);
}

TEST(Schedule, BroadcastStridesZeroForExpandedAxes) {
    EXPECT_EQ(ir::broadcast_strides({3, 1}, {1, 1}, {3, 4}), (Strides{1, 0}));
    EXPECT_EQ(ir::broadcast_strides({4}, {2}, {3, 4}), (Strides{0, 2}));
}

// The order statistics (median, percentile, quantile and their nan* forms) as lowering makes
// them: one OrderStat node (a Reduce node whose selection Program::order_stats describes) over
// the operand in its own dtype, copied as the value; its shapes for every axis form and q,
// NumPy's result dtypes, the operand's expression fused into the selection's stage, and
// ir::verify's checks of the node against its description.
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"
#include "dsl/verify.hpp"

#include <gtest/gtest.h>

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

Vars cube(DType t = DType::Float32) { return Vars().array("a", t, {3, 4, 5}).array("b", t, {3, 4, 5}); }

const ir::Node& result(const ir::Program& p) { return p.node(p.result); }

ir::NodeId the_order_stat(const ir::Program& p) {
    ir::NodeId found;
    for (const ir::NodeId n : p.ids())
        if (p.node(n).kind == ir::NodeKind::Reduce && p.node(n).op == ir::Op::OrderStat) {
            EXPECT_FALSE(found.valid()) << "more than one OrderStat node";
            found = n;
        }
    EXPECT_TRUE(found.valid());
    return found;
}

}  // namespace

TEST(OrderStats, ShapesOfEveryAxisFormAndQ) {
    const Vars v = cube();
    EXPECT_EQ(result(lower("median(a)", v)).shape, Shape{});
    EXPECT_EQ(result(lower("median(a, axis=0)", v)).shape, (Shape{4, 5}));
    EXPECT_EQ(result(lower("median(a, -1)", v)).shape, (Shape{3, 4}));
    EXPECT_EQ(result(lower("nanmedian(a, axis=(0, 2))", v)).shape, Shape{4});
    EXPECT_EQ(result(lower("median(a, axis=(0, 2), keepdims=True)", v)).shape, (Shape{1, 4, 1}));
    EXPECT_EQ(result(lower("percentile(a, 50, axis=1)", v)).shape, (Shape{3, 5}));
    EXPECT_EQ(result(lower("quantile(a, (0.1, 0.5, 0.9), axis=1)", v)).shape, (Shape{3, 3, 5}));
    EXPECT_EQ(result(lower("quantile(a, (0.5,))", v)).shape, Shape{1});
    EXPECT_EQ(result(lower("nanpercentile(a, (1, 99), axis=None, keepdims=True)", v)).shape, (Shape{2, 1, 1, 1}));
    EXPECT_EQ(result(lower("quantile(a, q=0.5, axis=2)", v)).shape, (Shape{3, 4}));
    EXPECT_EQ(result(lower("percentile(a, 30, 0)", v)).shape, (Shape{4, 5}));
}

TEST(OrderStats, ResultDtypesAreNumPys) {
    auto dt = [](const std::string& text, DType t) { return result(lower(text, cube(t))).dtype; };
    EXPECT_EQ(dt("median(a)", DType::Int8), DType::Float64);
    EXPECT_EQ(dt("median(a)", DType::Bool), DType::Float64);
    EXPECT_EQ(dt("median(a)", DType::Float16), DType::Float16);
    EXPECT_EQ(dt("median(a)", DType::Complex64), DType::Complex64);
    EXPECT_EQ(dt("percentile(a, 50)", DType::UInt64), DType::Float64);
    EXPECT_EQ(dt("percentile(a, 50)", DType::Float32), DType::Float32);
    EXPECT_EQ(dt("quantile(a, (0.5,))", DType::Float32), DType::Float64);  // an array q: float64, as NumPy
    EXPECT_EQ(dt("nanquantile(a, (0.5, 1))", DType::Float16), DType::Float64);
    EXPECT_EQ(dt("nanquantile(a, 0.5)", DType::Float16), DType::Float16);
}

TEST(OrderStats, OneSelectionNodeHoldsItsQAxesAndNanRule) {
    const ir::Program p = lower("nanpercentile(a, (5, 50, 37.5), axis=(0, 2))", cube(DType::Float64));
    const ir::Node& n = p.node(the_order_stat(p));
    ASSERT_GE(n.slot, 0);
    const ir::OrderStatDecl& d = p.order_stats.at(static_cast<std::size_t>(n.slot));
    EXPECT_EQ(d.q, (std::vector<double>{0.05, 0.5, 0.375}));  // q / 100 in float64, as np.true_divide
    EXPECT_TRUE(d.q_axis);
    EXPECT_EQ(d.axes, 0x5u);
    EXPECT_TRUE(d.skip_nan);
    EXPECT_FALSE(d.median);
    EXPECT_EQ(n.dtype, DType::Float64);
    EXPECT_NE(p.canonical().find("OrderStat %0 axis=-1 stat=linear axes=0x5 skipnan qaxis q=[0.05,0.5,0.375]"),
              std::string::npos)
        << p.canonical();
    // The nan* forms of integers have no NaN to leave out.
    const ir::Program q = lower("nanmedian(a)", cube(DType::Int32));
    const ir::OrderStatDecl& e = q.order_stats.at(static_cast<std::size_t>(q.node(the_order_stat(q)).slot));
    EXPECT_FALSE(e.skip_nan);
    EXPECT_TRUE(e.median);
    EXPECT_EQ(e.q, std::vector<double>{0.5});
}

TEST(OrderStats, DifferentQGiveDifferentCanonicalText) {
    const Vars v = cube();
    EXPECT_NE(lower("quantile(a, 0.25)", v).canonical(), lower("quantile(a, 0.75)", v).canonical());
    EXPECT_NE(lower("quantile(a, 0.5)", v).canonical(), lower("median(a)", v).canonical());
    EXPECT_NE(lower("median(a)", v).canonical(), lower("nanmedian(a)", v).canonical());
}

TEST(OrderStats, TheOperandIsFusedIntoTheSelectionAndAConsumerReadsItsBuffer) {
    const ir::Program p = lower("r = median(a * 2 + b, axis=1) + 1", cube());
    const ir::Schedule s = ir::schedule(p);
    const ir::NodeId os = the_order_stat(p);
    ASSERT_EQ(s.stages.size(), 2u);
    EXPECT_EQ(s.stages[0].kind, ir::Stage::Kind::Reduce);
    EXPECT_EQ(s.stages[0].reduce, os);
    EXPECT_EQ(s.stages[0].shape, (Shape{3, 4, 5}));
    EXPECT_EQ(s.stages[1].kind, ir::Stage::Kind::Elementwise);
    // a * 2 + b is computed inside the selection's stage, never stored.
    for (const ir::NodeId n : p.ids()) {
        if (p.node(n).kind == ir::NodeKind::Op && n < os) {
            EXPECT_EQ(s.stored_by[n], -1) << n;
        }
    }
    // The selection's result is a temporary (never an output itself), read by the second stage.
    EXPECT_EQ(s.output_of[os], -1);
    EXPECT_EQ(s.temps, std::vector<ir::NodeId>{os});
}

TEST(OrderStats, AZeroDimensionalOperandIsARowOfOne) {
    Vars v;
    v.array("s", DType::Float64, {});
    const ir::Program p = lower("percentile(s, (10, 90), keepdims=True)", v);
    const ir::Node& n = p.node(the_order_stat(p));
    EXPECT_EQ(p.node(n.args[0]).shape, Shape{1});
    EXPECT_EQ(result(p).shape, Shape{2});
}

TEST(OrderStats, VerifyRejectsANodeThatBreaksItsDescription) {
    const ir::Program good = lower("quantile(a, (0.25, 0.75), axis=1)", cube());
    const ir::NodeId n = the_order_stat(good);
    auto broken = [&](auto&& change) {
        ir::Program p = good;
        change(p);
        EXPECT_THROW(ir::verify(p), InternalError);
    };
    broken([](ir::Program& p) { p.order_stats[0].q[1] = 1.5; });
    broken([](ir::Program& p) { p.order_stats[0].axes = 0x8; });
    broken([](ir::Program& p) { p.order_stats[0].q_axis = false; });
    broken([&](ir::Program& p) { p.node(n).dtype = DType::Float32; });
    broken([&](ir::Program& p) { p.node(n).slot = 3; });
    broken([&](ir::Program& p) { p.order_stats[0].median = true; });
    broken([&](ir::Program& p) { p.outputs.push_back(ir::OutputDecl{"x", n, -1}); });
    EXPECT_NO_THROW(ir::verify(good));
}

TEST(OrderStats, ErrorsAreNumPysKinds) {
    EXPECT_THROW(lower("percentile(a, 50)", cube(DType::Bool)), TypeError);
    EXPECT_THROW(lower("quantile(a, 0.5)", cube(DType::Complex128)), TypeError);
    EXPECT_THROW(lower("percentile(a, 100.5)", cube()), ValueError);
    EXPECT_THROW(lower("quantile(a, (0.5, -0.1))", cube()), ValueError);
    EXPECT_THROW(lower("quantile(a)", cube()), TypeError);
    EXPECT_THROW(lower("median(a, q=0.5)", cube()), TypeError);
    EXPECT_THROW(lower("median(a, axis=3)", cube()), ShapeError);
    EXPECT_THROW(lower("quantile(a, b)", cube()), ValueError);
    Vars e;
    e.array("a", DType::Float32, {0, 3});
    EXPECT_THROW(lower("quantile(a, 0.5, axis=0)", e), IndexError);
    EXPECT_NO_THROW(lower("nanquantile(a, 0.5, axis=0)", e));
    EXPECT_NO_THROW(lower("median(a, axis=0)", e));
    EXPECT_NO_THROW(lower("quantile(a, 0.5, axis=1)", e));  // rows of 3, none of them
}

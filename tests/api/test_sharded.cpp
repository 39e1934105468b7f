// Sharded evaluation on the CPU: two or three shards of the host (device 0 named more than once)
// go through the same splitting, concurrent evaluation and combining as shards on GPUs, and
// must equal one evaluation of the whole.
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::Sharded;

jit::RuntimeOptions cpu_options() {
    jit::RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = 1;
    return o;
}

// Small integers as floats: sums and products are exact, so results compare bit for bit.
std::vector<float> ramp(std::size_t n, int mod, int offset = 0) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % mod) + offset);
    return v;
}

std::vector<unsigned char> bytes_of(const Array& x) {
    std::vector<unsigned char> out(x.nbytes());
    x.copy_to_host(out.data());
    return out;
}

struct Fixture : ::testing::Test {
    jit::Runtime one{cpu_options()};
    jit::ShardedRuntime two{{0, 0}, cpu_options()};
    Array a = Array::from(ramp(12 * 5, 7, -3), {12, 5}, Backend::Cpu);
    Array b = Array::from(ramp(12 * 5, 5, 1), {12, 5}, Backend::Cpu);
    Sharded sa = Sharded::split(a, {0, 0}, Backend::Cpu);
    Sharded sb = Sharded::split(b, {0, 0}, Backend::Cpu);
};

using ShardedEval = Fixture;

TEST_F(ShardedEval, SplitPutsRowBlocksOnTheDevicesInOrder) {
    Sharded s = Sharded::split(a, {0, 0, 0}, Backend::Cpu);
    ASSERT_EQ(s.shards().size(), 3u);
    EXPECT_EQ(s.shards()[0].shape(), (jit::Shape{4, 5}));
    EXPECT_EQ(s.shape(), a.shape());
    EXPECT_EQ(s.gather().to_vector<float>(), a.to_vector<float>());
    Sharded uneven = Sharded::split(a, {0, 0, 0, 0, 0}, Backend::Cpu);  // 12 rows: 3, 3, 2, 2, 2
    EXPECT_EQ(uneven.shards()[0].shape()[0], 3);
    EXPECT_EQ(uneven.shards()[4].shape()[0], 2);
    EXPECT_EQ(uneven.gather().to_vector<float>(), a.to_vector<float>());
}

TEST_F(ShardedEval, ElementwiseIsSplitAndEqualsOneEvaluation) {
    Sharded c = two.eval("c = a*2 + b", {{"a", sa}, {"b", sb}});
    EXPECT_EQ(c.kind(), Sharded::Kind::Split);
    ASSERT_EQ(c.shards().size(), 2u);
    EXPECT_EQ(c.shards()[0].shape(), (jit::Shape{6, 5}));
    EXPECT_EQ(c.gather().to_vector<float>(), one.eval("a*2 + b", {a, b}).to_vector<float>());
}

TEST_F(ShardedEval, AReplicatedRowBroadcastsToEveryShard) {
    Array row = Array::from(ramp(5, 5, 10), {5}, Backend::Cpu);
    Array col1 = Array::from(ramp(5, 5, 2), {1, 5}, Backend::Cpu);
    Sharded r = Sharded::replicate(row, {0, 0}, Backend::Cpu);
    Sharded r1 = Sharded::replicate(col1, {0, 0}, Backend::Cpu);
    Sharded c = two.eval("a * r - r1", {{"a", sa}, {"r", r}, {"r1", r1}});
    EXPECT_EQ(c.kind(), Sharded::Kind::Split);
    EXPECT_EQ(c.gather().to_vector<float>(), one.eval("a * r - r1", {a, row, col1}).to_vector<float>());
}

TEST_F(ShardedEval, ASplitColumnBroadcastsAlongTheRows) {
    Array col = Array::from(ramp(12, 4, 1), {12, 1}, Backend::Cpu);
    Sharded sc = Sharded::split(col, {0, 0}, Backend::Cpu);
    Sharded c = two.eval("a / c", {{"a", sa}, {"c", sc}});
    EXPECT_EQ(c.gather().to_vector<float>(), one.eval("a / c", {a, col}).to_vector<float>());
}

TEST_F(ShardedEval, SumOfAProductIsCombinedAcrossTheShards) {
    Sharded s = two.eval("sum(a*b)", {{"a", sa}, {"b", sb}});
    ASSERT_EQ(s.kind(), Sharded::Kind::Whole);
    EXPECT_EQ(s.whole().dtype(), jit::DType::Float32);
    EXPECT_EQ(s.whole().to_vector<float>(), one.eval("sum(a*b)", {a, b}).to_vector<float>());
}

TEST_F(ShardedEval, EveryCombinedReductionEqualsOneEvaluation) {
    for (const char* text : {"prod(where(b > 4, 2, 1))", "min(a)", "max(a)", "any(a > 2)", "all(b > 0)",
                             "sum(a, axis=0)", "max(a, axis=0)", "sum(a > 0)"}) {
        Sharded s = two.eval(text, {{"a", sa}, {"b", sb}});
        ASSERT_EQ(s.kind(), Sharded::Kind::Whole) << text;
        jit::Environment env{{"a", a}, {"b", b}};
        Array want = one.run(text, env);
        EXPECT_EQ(s.whole().dtype(), want.dtype()) << text;
        EXPECT_EQ(s.whole().shape(), want.shape()) << text;
        EXPECT_EQ(bytes_of(s.whole()), bytes_of(want)) << text;
    }
}

TEST_F(ShardedEval, TheMeanWeighsUnevenShardsByTheirRows) {
    Sharded three = Sharded::split(a, {0, 0, 0, 0, 0}, Backend::Cpu);  // 3, 3, 2, 2, 2 rows
    jit::ShardedRuntime rt({0}, cpu_options());
    Sharded m = rt.eval("mean(a)", {{"a", three}});
    const double want = one.eval("mean(float64(a))", {a}).to_vector<double>()[0];
    EXPECT_NEAR(m.whole().to_vector<float>()[0], want, 1e-6);
    Sharded m0 = rt.eval("mean(a, axis=0)", {{"a", three}});
    const auto got0 = m0.whole().to_vector<float>();
    const auto want0 = one.eval("mean(a, axis=0)", {a}).to_vector<float>();
    ASSERT_EQ(got0.size(), want0.size());
    for (std::size_t i = 0; i < got0.size(); ++i) EXPECT_NEAR(got0[i], want0[i], 1e-5);
}

TEST_F(ShardedEval, AReductionOverOtherAxesKeepsTheRowsSplit) {
    Sharded s = two.eval("sum(a, axis=1)", {{"a", sa}});
    EXPECT_EQ(s.kind(), Sharded::Kind::Split);
    EXPECT_EQ(s.gather().to_vector<float>(), one.eval("sum(a, axis=1)", {a}).to_vector<float>());
}

TEST_F(ShardedEval, ProgramsAssignSplitAndCombinedNames) {
    jit::ShardedResult r = two.run("c = a * b; s = sum(c); t = a + 1", {{"a", sa}, {"b", sb}});
    EXPECT_EQ(r.assigned.at("c").kind(), Sharded::Kind::Split);
    EXPECT_EQ(r.assigned.at("s").kind(), Sharded::Kind::Whole);
    EXPECT_EQ(r.value.kind(), Sharded::Kind::Split);  // t
    EXPECT_EQ(r.assigned.at("s").whole().to_vector<float>(), one.eval("sum(a * b)", {a, b}).to_vector<float>());
    EXPECT_EQ(r.assigned.at("c").gather().to_vector<float>(), one.eval("a * b", {a, b}).to_vector<float>());
}

TEST_F(ShardedEval, ScalarsAreShared) {
    Sharded c = two.eval("a * x + y", {{"a", sa}, {"x", jit::Arg(3.0)}, {"y", jit::Arg(2)}});
    EXPECT_EQ(c.gather().to_vector<float>(), one.eval("a * x + y", {a, 3.0, 2}).to_vector<float>());
}

std::string argument_error(const std::function<void()>& f) {
    try {
        f();
    } catch (const jit::ArgumentError& e) {
        return e.what();
    }
    return "(no ArgumentError)";
}

TEST_F(ShardedEval, AReductionInsideAnExpressionIsRefusedBeforeAnythingRuns) {
    const std::string m = argument_error([&] { two.eval("sum(a) * 2", {{"a", sa}}); });
    EXPECT_NE(m.find("make it a statement of its own"), std::string::npos) << m;
}

TEST_F(ShardedEval, AScanOverSplitRowsIsRefused) {
    // Each shard would scan its own rows alone: cumsum(a, axis=0) restarts at every shard.
    for (const char* text : {"cumsum(a, axis=0)", "c = cumsum(a) * 2", "sum(cumprod(a, 1))"}) {
        const std::string m = argument_error([&] { two.eval(text, {{"a", sa}}); });
        EXPECT_NE(m.find("has a scan"), std::string::npos) << text << ": " << m;
    }
}

TEST_F(ShardedEval, ReadingACombinedValueIsRefused) {
    const std::string m = argument_error([&] { two.eval("s = sum(a); t = a - s", {{"a", sa}}); });
    EXPECT_NE(m.find("second program"), std::string::npos) << m;
}

TEST_F(ShardedEval, ExplainSaysWhatEachStatementGivesThenShardZerosPlan) {
    const std::string e = two.explain("c = a * b; s = sum(c)", {{"a", sa}, {"b", sb}});
    EXPECT_EQ(e.rfind("sharded: 2 shards of 12 rows (6 + 6)\n", 0), 0u) << e;
    EXPECT_NE(e.find("  split by rows: a, b\n"), std::string::npos) << e;
    EXPECT_NE(e.find("   1: c = a * b   -> split by rows, each shard its own\n"), std::string::npos) << e;
    EXPECT_NE(e.find("   2: s = sum(c)   -> one value float32 (): sum of 2 partials, combined on the host\n"),
              std::string::npos)
        << e;
    // Shard 0's own plan, over its 6 rows, indented under the decision.
    EXPECT_NE(e.find("the plan of shard 0:\n  program\n    input  a            float32    (6, 5)"), std::string::npos)
        << e;
    EXPECT_EQ(two.runtime(0).stats().hits + two.runtime(0).stats().misses, 0u) << "explain runs nothing";
}

TEST_F(ShardedEval, ExplainRefusesWhatRunRefusesWithTheSameWords) {
    const std::string ran = argument_error([&] { two.eval("s = sum(a); t = a - s", {{"a", sa}}); });
    const std::string explained = argument_error([&] { (void)two.explain("s = sum(a); t = a - s", {{"a", sa}}); });
    EXPECT_EQ(explained, ran);
}

TEST_F(ShardedEval, InputsOfDifferentRowBlocksAreRefused) {
    Sharded three = Sharded::split(b, {0, 0, 0}, Backend::Cpu);
    EXPECT_NE(argument_error([&] { two.eval("a + b", {{"a", sa}, {"b", three}}); }).find("shards"), std::string::npos);
    Sharded other = Sharded::from_shards({a.slice(0, 0, 4), a.slice(0, 4, 12)});
    EXPECT_NE(argument_error([&] {
                  two.eval("a + b", {{"a", sa}, {"b", other}});
              }).find("different row counts"),
              std::string::npos);
}

TEST_F(ShardedEval, APlainArrayOrAWholeValueIsNotCopiedSilently) {
    EXPECT_NE(argument_error([&] {
                  two.eval("a + b", {{"a", sa}, {"b", jit::Arg(b)}});
              }).find("Sharded::split"),
              std::string::npos);
    EXPECT_NE(argument_error([&] {
                  two.eval("a + b", {{"a", sa}, {"b", Sharded::from_whole(b)}});
              }).find("replicate"),
              std::string::npos);
}

TEST_F(ShardedEval, ASplitInputWhoseRowsAreNotTheResultsIsRefused) {
    Array v = Array::from(ramp(5, 5), {5}, Backend::Cpu);  // split along its only axis, the result's last
    Sharded sv = Sharded::split(v, {0, 0}, Backend::Cpu);
    Sharded r = Sharded::replicate(Array::from(ramp(15, 4), {3, 5}, Backend::Cpu), {0, 0}, Backend::Cpu);
    const std::string m = argument_error([&] { two.eval("r + v", {{"r", r}, {"v", sv}}); });
    EXPECT_NE(m.find("fits the whole arrays but not the rows of shard 0"), std::string::npos) << m;
    EXPECT_NE(m.find("axis 0"), std::string::npos) << m;
}

TEST_F(ShardedEval, ShardsOnAnotherBackendAreADeviceMismatch) {
    float x[60] = {};
    Sharded gpu = Sharded::from_shards({Array::view(x, jit::DType::Float32, {6, 5}, {}, Backend::Cuda, 0),
                                        Array::view(x, jit::DType::Float32, {6, 5}, {}, Backend::Cuda, 1)});
    EXPECT_THROW(two.eval("a + b", {{"a", sa}, {"b", gpu}}), jit::DeviceMismatchError);
}

TEST_F(ShardedEval, ParseAndShapeErrorsAreTheCheckersWithTheCaret) {
    EXPECT_THROW(two.eval("a +* b", {{"a", sa}, {"b", sb}}), jit::ParseError);
    EXPECT_THROW(two.eval("a + q", {{"a", sa}}), jit::NameError);
}

}  // namespace

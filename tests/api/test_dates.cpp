// Dates and durations at the C++ entry points: jit::Array of datetime64/timedelta64 dtypes in
// and out of eval, run (in place too), boolean-mask selections, check and explain, sharding on
// CPU shards. The values themselves are checked against NumPy by the differential suite.
#include <jit/check.hpp>
#include <jit/jit.hpp>
#include <jit/runtime.hpp>
#include <jit/sharded.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;
using jit::kNaT;

jit::RuntimeOptions cpu_options() {
    jit::RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = 2;
    return o;
}

// An array of `t` holding these counts of its unit.
Array counts(DType t, std::vector<std::int64_t> v, jit::Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(v.size())};
    Array a = Array::empty(t, shape, Backend::Cpu);
    std::copy(v.begin(), v.end(), static_cast<std::int64_t*>(a.data()));
    return a;
}

std::vector<std::int64_t> counts_of(const Array& a) { return a.to_vector<std::int64_t>(); }

struct Dates : ::testing::Test {
    jit::Runtime rt{cpu_options()};
    // 2024-03-01T00:00:00, NaT, 1970-01-01T00:00:01, 1969-12-31T23:59:59 in seconds
    Array ts = counts(DType::DateTime64_s, {19783LL * 86400, kNaT, 1, -1});
};

TEST_F(Dates, ResultsCarryTheirDTypeAndCounts) {
    const Array r = rt.eval("ts + timedelta64(2, 'ms')", {ts});
    EXPECT_EQ(r.dtype(), DType::DateTime64_ms);
    EXPECT_EQ(counts_of(r), (std::vector<std::int64_t>{19783LL * 86400000 + 2, kNaT, 1002, -998}));
    const Array d = rt.eval("ts - datetime64('1970-01-01')", {ts});
    EXPECT_EQ(d.dtype(), DType::TimeDelta64_s);
    EXPECT_EQ(counts_of(d), (std::vector<std::int64_t>{19783LL * 86400, kNaT, 1, -1}));
}

TEST_F(Dates, ComparisonsWithNaTAreFalseButNotEqual) {
    const Array lt = rt.eval("ts < datetime64('2100-01-01')", {ts});
    EXPECT_EQ(lt.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1, 1}));
    const Array ne = rt.eval("ts != ts", {ts});
    EXPECT_EQ(ne.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 1, 0, 0}));
    EXPECT_EQ(rt.eval("isnat(ts)", {ts}).to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 1, 0, 0}));
}

TEST_F(Dates, TextComparedWithADateIsReadAsADate) {
    // ts is 2024-03-01T00:00:00, NaT, 1970-01-01T00:00:01, 1969-12-31T23:59:59 (seconds).
    auto bools = [&](const char* text) { return rt.eval(text, {ts}).to_vector<std::uint8_t>(); };
    using B = std::vector<std::uint8_t>;
    EXPECT_EQ(bools("ts == '2024-03-01'"), (B{1, 0, 0, 0}));
    EXPECT_EQ(bools("ts != '2024-03-01'"), (B{0, 1, 1, 1}));
    EXPECT_EQ(bools("ts < '2024-03-01'"), (B{0, 0, 1, 1}));
    EXPECT_EQ(bools("ts <= '2024-03-01'"), (B{1, 0, 1, 1}));
    EXPECT_EQ(bools("ts > '1970-01-01'"), (B{1, 0, 1, 0}));
    EXPECT_EQ(bools("ts >= '1970-01-01T00:00:01'"), (B{1, 0, 1, 0}));
    EXPECT_EQ(bools("'1970-01-01' < ts"), (B{1, 0, 1, 0}));  // the literal on the left
    EXPECT_EQ(bools("equal(ts, \"2024-03-01\")"), (B{1, 0, 0, 0}));
    EXPECT_EQ(bools("ts == b'2024-03-01'"), (B{1, 0, 0, 0}));  // bytes too: numexpr's dialect of '...'
    // The text's own unit meets the column's: a date of D (the day's midnight), of M, of ms.
    EXPECT_EQ(bools("ts == '2024-03'"), (B{1, 0, 0, 0}));
    EXPECT_EQ(bools("ts > '1970-01-01T00:00:00.500'"), (B{1, 0, 1, 0}));
    const Array r = rt.eval("ts < '1970-01-01T00:00:00.500'", {ts});
    EXPECT_EQ(r.dtype(), DType::Bool);
    EXPECT_EQ(r.to_vector<std::uint8_t>(), (B{0, 0, 0, 1}));
    // NaT text compares as NaT: False, except != (True).
    EXPECT_EQ(bools("ts == 'NaT'"), (B{0, 0, 0, 0}));
    EXPECT_EQ(bools("ts != ''"), (B{1, 1, 1, 1}));
    // In masks and where, as any bool.
    EXPECT_EQ(counts_of(rt.eval("ts[ts >= '1970-01-01']", {ts})), (std::vector<std::int64_t>{19783LL * 86400, 1}));
    EXPECT_EQ(rt.eval("sum(ts > '1960-01-01')", {ts}).item<std::int64_t>(), 3);
}

TEST_F(Dates, TextThatIsNoDateIsAValueErrorUnderTheLiteral) {
    try {
        rt.eval("ts == '2024-3-1'", {ts});
        FAIL() << "no error";
    } catch (const jit::ValueError& e) {
        const std::string w = e.what();
        EXPECT_NE(w.find("'2024-3-1' is not a date"), std::string::npos) << w;
        EXPECT_NE(w.find("ts == '2024-3-1'\n              ^^^^^^^^^^"), std::string::npos) << w;
    }
    EXPECT_THROW(rt.eval("ts < 'now'", {ts}), jit::ValueError);
    EXPECT_THROW(rt.eval("ts < '2024-03-01Z'", {ts}), jit::ValueError);
    // A date the column's unit cannot hold, as datetime64('...') against that column.
    const Array ns = counts(DType::DateTime64_ns, {0, kNaT});
    EXPECT_THROW(rt.eval("ns < '3000-01-01'", {{"ns", ns}}), jit::ValueError);
    // Durations, a string column and arithmetic do not read text as a date (NumPy's TypeError).
    const Array d = counts(DType::TimeDelta64_s, {1, 2});
    EXPECT_THROW(rt.eval("d < '1'", {{"d", d}}), jit::TypeError);
    EXPECT_THROW(rt.eval("ts - '2024-03-01'", {ts}), jit::TypeError);
}

TEST_F(Dates, AnAssignmentOfTheSameDTypeWritesInPlace) {
    jit::Environment env{{"ts", ts}};
    const void* before = ts.data();
    rt.run("ts = ts + timedelta64(1, 's')", env);
    const Array& after = env.at("ts").array();
    EXPECT_EQ(after.dtype(), DType::DateTime64_s);
    EXPECT_EQ(after.data(), before);
    EXPECT_EQ(counts_of(ts), (std::vector<std::int64_t>{19783LL * 86400 + 1, kNaT, 2, 0}));
}

TEST_F(Dates, AMaskSelectionKeepsTheDType) {
    const Array r = rt.eval("ts[ts > datetime64('1970-01-01')]", {ts});
    EXPECT_EQ(r.dtype(), DType::DateTime64_s);
    EXPECT_EQ(counts_of(r), (std::vector<std::int64_t>{19783LL * 86400, 1}));
    const Array m = rt.eval("max(ts[ts < datetime64('2000-01-01')])", {ts});
    EXPECT_EQ(m.dtype(), DType::DateTime64_s);
    EXPECT_EQ(m.item<std::int64_t>(), 1);
}

TEST_F(Dates, ReductionsPropagateNaTAsNumPy) {
    EXPECT_EQ(rt.eval("max(ts)", {ts}).item<std::int64_t>(), kNaT);
    EXPECT_EQ(rt.eval("min(ts)", {ts}).item<std::int64_t>(), kNaT);
    const Array t = counts(DType::TimeDelta64_m, {-3, 4, 6, -1});
    const Array mean = rt.eval("mean(t)", {t});
    EXPECT_EQ(mean.dtype(), DType::TimeDelta64_m);
    EXPECT_EQ(mean.item<std::int64_t>(), 1);  // 6 / 4, towards zero
    EXPECT_EQ(rt.eval("sum(t)", {t}).item<std::int64_t>(), 6);
    EXPECT_EQ(rt.eval("sum(where(t > 0, t, timedelta64('NaT')))", {t}).item<std::int64_t>(), kNaT);
}

TEST_F(Dates, ArraysOfNoUnitAreRefused) {
    const Array generic = counts(DType::DateTime64_Generic, {kNaT});
    EXPECT_THROW(rt.eval("g", {generic}), jit::TypeError);
}

TEST_F(Dates, CheckReportsTheDateDTypes) {
    const jit::CheckedProgram p =
        jit::check("d = ts - ts; m = mean(d)", {{"ts", jit::ValueSpec::array(DType::DateTime64_us, {10})}});
    ASSERT_EQ(p.assigned.size(), 2u);
    EXPECT_EQ(p.assigned[0].dtype, DType::TimeDelta64_us);
    EXPECT_EQ(p.assigned[1].dtype, DType::TimeDelta64_us);
    EXPECT_EQ(p.result->dtype, DType::TimeDelta64_us);
}

TEST_F(Dates, ExplainNamesTheDateDTypes) {
    jit::Environment env{{"ts", ts}};
    const std::string x = rt.explain("d = ts - datetime64('2024-01-01')", env);
    EXPECT_NE(x.find("datetime64[s]"), std::string::npos) << x;
    EXPECT_NE(x.find("-> d timedelta64[s]"), std::string::npos) << x;
}

TEST_F(Dates, CountsReadBackAsIntegers) {
    // A date's count converts as an int64 (NumPy's astype), NaT as INT64_MIN.
    EXPECT_EQ(ts.to_vector<double>()[2], 1.0);
    EXPECT_EQ(counts_of(rt.eval("int64(ts)", {ts})), counts_of(ts));
}

TEST(DatesSharded, ElementwiseWorkSplitsAndReductionsAreRefused) {
    jit::ShardedRuntime two{{0, 0}, cpu_options()};
    std::vector<std::int64_t> v(12);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i) * 3600;
    v[5] = kNaT;
    const Array ts = counts(DType::DateTime64_s, v);
    jit::ShardedEnvironment env{{"ts", jit::Sharded::split(ts, {0, 0}, Backend::Cpu)}};
    const Array r = two.eval("ts + timedelta64(1, 'h')", env).gather();
    EXPECT_EQ(r.dtype(), DType::DateTime64_s);
    jit::Runtime one{cpu_options()};
    EXPECT_EQ(counts_of(r), counts_of(one.eval("ts + timedelta64(1, 'h')", {ts})));
    EXPECT_THROW(two.eval("max(ts)", env), jit::Error);
}

}  // namespace

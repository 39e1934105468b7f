// Dates and durations in the language: the dtypes' names, the calendar, literals and their
// units, NumPy's unit promotion, and the lowering to int64 work that no backend tells apart from
// numbers. (Their values against NumPy: tests/diff/gen_date_cases.py; their refusals' messages:
// golden/semantic/date_*.)
#include "core/calendar.hpp"
#include "dsl/dates.hpp"
#include "dsl/lower.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace jit;

namespace {

struct Vars {
    std::map<std::string, dsl::Binding, std::less<>> b;
    Vars& array(const std::string& name, DType t, Shape s = {8}) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = t;
        x.strides = contiguous_strides(s);
        x.shape = std::move(s);
        b[name] = x;
        return *this;
    }
};

ir::Program lower(const std::string& text, const Vars& v = {}) {
    auto m = syntax::parse(text);
    return dsl::lower(m, text, [&](std::string_view n) -> const dsl::Binding* {
        auto it = v.b.find(n);
        return it == v.b.end() ? nullptr : &it->second;
    });
}

// The dtype of the program's value as its caller sees it.
DType value_dtype(const std::string& text, const Vars& v = {}) {
    const ir::Program p = lower(text, v);
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (p.outputs[o].node == p.result) return p.output_dtype(o);
    return p.node(p.result).dtype;
}

// The constant a literal-only program computes (its count).
std::int64_t literal_count(const std::string& text) {
    const ir::Program p = lower(text);
    const ir::Node* n = &p.node(p.result);
    while (n->kind == ir::NodeKind::Cast) n = &p.node(n->args[0]);
    EXPECT_EQ(n->kind, ir::NodeKind::Const) << text;
    return n->value.i;
}

}  // namespace

TEST(DateDTypes, NamesRoundTripAsNumPySpellsThem) {
    for (int v = kDateTimeBase; v < kTimeDeltaBase + kNumTimeUnits; ++v) {
        const auto t = static_cast<DType>(v);
        if (!is_temporal(t)) continue;
        EXPECT_EQ(itemsize(t), 8u);
        EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
    }
    EXPECT_EQ(dtype_name(DType::DateTime64_ns), "datetime64[ns]");
    EXPECT_EQ(dtype_name(DType::TimeDelta64_Generic), "timedelta64");
    EXPECT_EQ(dtype_from_name("M8[s]"), DType::DateTime64_s);
    EXPECT_EQ(dtype_from_name("m8[us]"), DType::TimeDelta64_us);
    EXPECT_EQ(dtype_from_name("timedelta64[\u03bcs]"), DType::TimeDelta64_us);
    EXPECT_FALSE(dtype_from_name("datetime64[q]"));
    EXPECT_FALSE(dtype_from_name("datetime64[5s]"));
    EXPECT_FALSE(dtype_from_name("M8s"));
}

TEST(DateDTypes, AreNotComputeDTypes) {
    // The backends' tables are sized by kNumDTypes: no date dtype indexes them.
    EXPECT_GE(static_cast<int>(DType::DateTime64_Generic), kNumDTypes);
    EXPECT_FALSE(is_integer(DType::TimeDelta64_s));
    EXPECT_TRUE(is_datetime(DType::DateTime64_as) && !is_timedelta(DType::DateTime64_as));
    EXPECT_EQ(time_unit(DType::TimeDelta64_W), TimeUnit::W);
    EXPECT_EQ(datetime_of(TimeUnit::ms), DType::DateTime64_ms);
}

TEST(Calendar, DaysAndCivilDatesRoundTripOverMillennia) {
    for (__int128 d = -1'000'000; d <= 1'000'000; d += 997) {
        const core::CivilDate c = core::civil_from_days(d);
        EXPECT_EQ(core::days_from_civil(c.year, c.month, c.day), d);
    }
    EXPECT_EQ(core::days_from_civil(1970, 1, 1), 0);
    EXPECT_EQ(core::days_from_civil(2024, 3, 1), 19783);
    EXPECT_EQ(core::days_from_civil(0, 3, 1), -719468);
    EXPECT_TRUE(core::is_leap(2000) && core::is_leap(-4) && !core::is_leap(1900));
}

TEST(Calendar, DatesPrintAsNumPyPrintsThem) {
    EXPECT_EQ(datetime_string(19783, TimeUnit::D), "2024-03-01");
    EXPECT_EQ(datetime_string(kNaT, TimeUnit::s), "NaT");
    EXPECT_EQ(datetime_string(-1, TimeUnit::ns), "1969-12-31T23:59:59.999999999");
    EXPECT_EQ(datetime_string(-1, TimeUnit::W), "1969-12-25");
    EXPECT_EQ(datetime_string(-1971, TimeUnit::Y), "-001");
    EXPECT_EQ(datetime_string(-24000, TimeUnit::M), "-030-01");
    EXPECT_EQ(datetime_string(123456789, TimeUnit::as), "1970-01-01T00:00:00.000000000123456789");
    EXPECT_EQ(datetime_string(10 * 1000 + 5, TimeUnit::ms), "1970-01-01T00:00:10.005");
}

TEST(DateLiterals, TakeTheUnitOfTheirFinestField) {
    EXPECT_EQ(value_dtype("datetime64('2024')"), DType::DateTime64_Y);
    EXPECT_EQ(value_dtype("datetime64('2024-03')"), DType::DateTime64_M);
    EXPECT_EQ(value_dtype("datetime64('2024-03-01')"), DType::DateTime64_D);
    EXPECT_EQ(value_dtype("datetime64('2024-03-01T12')"), DType::DateTime64_h);
    EXPECT_EQ(value_dtype("datetime64('2024-03-01 12:30')"), DType::DateTime64_m);
    EXPECT_EQ(value_dtype("datetime64('2024-03-01T12:30:15')"), DType::DateTime64_s);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.5')"), DType::DateTime64_ms);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.1234')"), DType::DateTime64_us);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.1234567')"), DType::DateTime64_ns);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.0000000001')"), DType::DateTime64_ps);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.0000000000001')"), DType::DateTime64_fs);
    EXPECT_EQ(value_dtype("datetime64('1970-01-01T00:00:00.000000000000000001')"), DType::DateTime64_as);
    EXPECT_EQ(value_dtype("timedelta64(5, 'm')"), DType::TimeDelta64_m);
}

TEST(DateLiterals, CountFromTheEpoch) {
    EXPECT_EQ(literal_count("datetime64('2024-03-01')"), 19783);
    EXPECT_EQ(literal_count("datetime64('1969-12-31T23:59:59.5')"), -500);
    EXPECT_EQ(literal_count("datetime64('-0001-01')"), (-1 - 1970) * 12);
    EXPECT_EQ(literal_count("datetime64('2024-03-01', 's')"), 19783LL * 86400);
    EXPECT_EQ(literal_count("datetime64('2024-03-15', 'M')"), 54 * 12 + 2);  // floored, as NumPy
    EXPECT_EQ(literal_count("datetime64('1969-12-31', 'W')"), -1);
    EXPECT_EQ(literal_count("datetime64(5, 's')"), 5);
    EXPECT_EQ(literal_count("timedelta64(-5, 'm')"), -5);
    EXPECT_EQ(literal_count("timedelta64('NaT', 's')"), kNaT);
    EXPECT_EQ(literal_count("datetime64('nat', 'D')"), kNaT);
}

TEST(DateLiterals, MalformedTextIsAValueErrorAtTheLiteral) {
    for (const char* text : {"datetime64('2024-3-1')", "datetime64('2024-02-30')", "datetime64('2024-03-01T24:00')",
                             "datetime64('2024-03-01T12:30Z')", "datetime64('now')", "datetime64('24:00')",
                             "datetime64('2024-03-01T12:30:15.1234567890123456789')"}) {
        try {
            lower(text);
            ADD_FAILURE() << text << " was accepted";
        } catch (const ValueError& e) {
            EXPECT_EQ(e.span().begin, 11u) << text;  // the string literal
        }
    }
}

TEST(DateLiterals, AUnitThatDoesNotExistIsATypeError) {
    EXPECT_THROW(lower("timedelta64(1, 'q')"), TypeError);
    EXPECT_THROW(lower("datetime64('2024', 'generic')"), TypeError);
    EXPECT_THROW(lower("timedelta64(1, '5s')"), TypeError);
}

TEST(DateLiterals, AValuePastTheUnitsRangeIsAValueError) {
    // NumPy wraps these silently; a literal is text, so jitexpr says where.
    EXPECT_THROW(lower("datetime64('2300-01-01', 'ns')"), ValueError);
    EXPECT_THROW(lower("datetime64('2024-01-01T00:00:00.000000000001')"), ValueError);  // ps: +-106 days
    EXPECT_THROW(lower("a < datetime64('3000-01-01')", Vars().array("a", DType::DateTime64_ns)), ValueError);
    EXPECT_NO_THROW(lower("datetime64('2262-04-11', 'ns')"));
}

TEST(DatePromotion, TheFinerUnitWins) {
    Vars v;
    v.array("d", DType::DateTime64_D).array("s", DType::DateTime64_s).array("y", DType::DateTime64_Y);
    v.array("td", DType::TimeDelta64_D).array("tm", DType::TimeDelta64_M).array("ty", DType::TimeDelta64_Y);
    v.array("k", DType::Int32);
    EXPECT_EQ(value_dtype("d - s", v), DType::TimeDelta64_s);
    EXPECT_EQ(value_dtype("y - d", v), DType::TimeDelta64_D);  // a date's year converts through the calendar
    EXPECT_EQ(value_dtype("d + td", v), DType::DateTime64_D);
    EXPECT_EQ(value_dtype("y + tm", v), DType::DateTime64_M);
    EXPECT_EQ(value_dtype("ty + tm", v), DType::TimeDelta64_M);
    EXPECT_EQ(value_dtype("d + k", v), DType::DateTime64_D);
    EXPECT_EQ(value_dtype("td * k", v), DType::TimeDelta64_D);
    EXPECT_EQ(value_dtype("td / td", v), DType::Float64);
    EXPECT_EQ(value_dtype("td // td", v), DType::Int64);
    EXPECT_EQ(value_dtype("td % td", v), DType::TimeDelta64_D);
    EXPECT_EQ(value_dtype("where(d > s, d, s)", v), DType::DateTime64_s);
    EXPECT_EQ(value_dtype("mean(td)", v), DType::TimeDelta64_D);
    EXPECT_EQ(value_dtype("max(s)", v), DType::DateTime64_s);
    EXPECT_EQ(value_dtype("datetime64('NaT') - s", v), DType::TimeDelta64_s);  // NaT of no unit takes s's
}

TEST(DatePromotion, NumPysRefusalsAreTypeErrors) {
    Vars v;
    v.array("d", DType::DateTime64_D).array("p", DType::DateTime64_ps);
    v.array("td", DType::TimeDelta64_D).array("tm", DType::TimeDelta64_M);
    EXPECT_THROW(lower("d + d", v), TypeError);
    EXPECT_THROW(lower("d * 2", v), TypeError);
    EXPECT_THROW(lower("td - d", v), TypeError);
    EXPECT_THROW(lower("td + tm", v), TypeError);  // a month has no length in days
    EXPECT_THROW(lower("d + tm", v), TypeError);
    EXPECT_THROW(lower("d - p", v), TypeError);  // NumPy's factor limit
    EXPECT_THROW(lower("d < 5", v), TypeError);
    EXPECT_THROW(lower("sum(d)", v), TypeError);
    EXPECT_THROW(lower("-d", v), TypeError);
}

TEST(DateLowering, NoBackendSeesADateDType) {
    Vars v;
    v.array("d", DType::DateTime64_M).array("s", DType::DateTime64_ns).array("t", DType::TimeDelta64_us);
    const ir::Program p =
        lower("x = d - s; y = max(t) + x; z = where(isnat(d), s, datetime64('2024-01-01')); w = datetime64(s, 'M')", v);
    for (const ir::Node& n : p.nodes) {
        EXPECT_LT(static_cast<int>(n.dtype), kNumDTypes) << ir::dump(p);
        EXPECT_LT(static_cast<int>(n.value.dtype), kNumDTypes) << ir::dump(p);
    }
    for (const ir::InputDecl& in : p.inputs) {
        EXPECT_EQ(in.dtype, DType::Int64);
        ASSERT_TRUE(in.temporal);
    }
    std::map<std::string, DType> labels;
    for (const ir::OutputDecl& o : p.outputs) labels[o.name] = o.temporal.value_or(DType::Bool);
    EXPECT_EQ(labels["x"], DType::TimeDelta64_ns);
    EXPECT_EQ(labels["y"], DType::TimeDelta64_ns);
    EXPECT_EQ(labels["z"], DType::DateTime64_ns);
    EXPECT_EQ(labels["w"], DType::DateTime64_M);
}

TEST(DateLowering, AComparisonWithADateLiteralIsOneCompare) {
    // NaT is INT64_MIN, below every date: `ts > literal` needs no test of its own.
    for (const char* text : {"ts > datetime64('2024-03-01')", "ts >= datetime64('2024-03-01T00:00:00')",
                             "datetime64('2024-03-01') < ts", "ts == datetime64('2024-03-01')"}) {
        const ir::Program p = lower(text, Vars().array("ts", DType::DateTime64_s));
        int ops = 0;
        for (const ir::Node& n : p.nodes) ops += n.kind == ir::NodeKind::Op;
        EXPECT_EQ(ops, 1) << text << "\n" << ir::dump(p);
    }
}

TEST(DateLowering, ArithmeticOfASameUnitIsOneOpAndItsNaTSelect) {
    // d - e: the difference, and NaT where either is (NumPy's loops test each element): one
    // test of minimum(d, e), NaT being the least count.
    const ir::Program p = lower("d - e", Vars().array("d", DType::DateTime64_s).array("e", DType::DateTime64_s));
    std::map<ir::Op, int> ops;
    for (const ir::Node& n : p.nodes)
        if (n.kind == ir::NodeKind::Op) ++ops[n.op];
    EXPECT_EQ(ops[ir::Op::Sub], 1);
    EXPECT_EQ(ops[ir::Op::Where], 1);
    EXPECT_EQ(ops[ir::Op::Minimum], 1);
    EXPECT_EQ(ops[ir::Op::Eq], 1);
}

TEST(DateLowering, MaxOfDatesIsOneReductionOfShiftedCounts) {
    // max must give NaT where NaT is, the least count: max(x - 1) + 1 wraps NaT - 1 back to NaT.
    const ir::Program p = lower("max(ts)", Vars().array("ts", DType::DateTime64_s));
    int reductions = 0;
    for (const ir::Node& n : p.nodes) reductions += n.kind == ir::NodeKind::Reduce;
    EXPECT_EQ(reductions, 1) << ir::dump(p);
}

TEST(DateRules, CommonUnitIsNumPys) {
    using dsl::dates::common_unit;
    using dsl::dates::UnitError;
    UnitError why = UnitError::None;
    EXPECT_EQ(common_unit(TimeUnit::s, false, TimeUnit::ms, false, &why), TimeUnit::ms);
    EXPECT_EQ(common_unit(TimeUnit::Y, false, TimeUnit::M, true, &why), TimeUnit::M);
    EXPECT_EQ(common_unit(TimeUnit::Generic, false, TimeUnit::W, true, &why), TimeUnit::W);
    EXPECT_EQ(common_unit(TimeUnit::M, false, TimeUnit::h, true, &why), TimeUnit::h);
    EXPECT_FALSE(common_unit(TimeUnit::M, true, TimeUnit::h, true, &why));
    EXPECT_EQ(why, UnitError::Nonlinear);
    EXPECT_FALSE(common_unit(TimeUnit::D, false, TimeUnit::ps, false, &why));
    EXPECT_EQ(why, UnitError::Overflow);
    EXPECT_EQ(common_unit(TimeUnit::h, false, TimeUnit::ps, false, &why), TimeUnit::ps);  // 3.6e15 < 2**56
    EXPECT_FALSE(common_unit(TimeUnit::s, false, TimeUnit::as, false, &why));             // 1e18 >= 2**56
}

TEST(DateRules, ConstantsConvertExactly) {
    using dsl::dates::convert;
    EXPECT_EQ(convert(54 * 12 + 2, TimeUnit::M, TimeUnit::D, true), 19783);
    EXPECT_EQ(convert(-1, TimeUnit::s, TimeUnit::D, true), -1);  // floored
    EXPECT_EQ(convert(19783, TimeUnit::D, TimeUnit::Y, true), 54);
    EXPECT_EQ(convert(kNaT, TimeUnit::D, TimeUnit::ns, true), kNaT);
    EXPECT_TRUE(convert(200 * 365, TimeUnit::D, TimeUnit::ns, true));   // 2169: datetime64[ns] holds it
    EXPECT_FALSE(convert(300 * 365, TimeUnit::D, TimeUnit::ns, true));  // 2269: past 2262-04-11
}

TEST(DateNames, AreBuiltinNamesAndNotAssignable) {
    const auto names = dsl::builtin_names();
    for (const char* n : {"datetime64", "timedelta64", "isnat"})
        EXPECT_TRUE(std::binary_search(names.begin(), names.end(), n)) << n;
    // A variable of the name is a variable: the call is then an error, as for any variable.
    Vars v;
    v.array("isnat", DType::Int64);
    EXPECT_THROW(lower("isnat(isnat)", v), NameError);
}

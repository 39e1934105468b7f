#include "dsl/dates.hpp"

#include "core/calendar.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace jit::dsl::dates {

namespace {

// NumPy refuses a conversion factor of 2**56 or more (datetime.c's get_datetime_units_factor).
constexpr __int128 kFactorLimit = static_cast<__int128>(1) << 56;

// The factor between two fixed units (coarse to fine), or 0 past NumPy's limit; a calendar unit
// counts as D.
__int128 limited_factor(TimeUnit coarse, TimeUnit fine) {
    if (is_calendar(coarse)) coarse = TimeUnit::D;
    if (is_calendar(fine)) fine = TimeUnit::D;
    if (static_cast<int>(fine) < static_cast<int>(coarse)) std::swap(coarse, fine);
    const __int128 f = core::units_per(coarse, fine);
    return f >= kFactorLimit ? 0 : f;
}

bool fits_value(__int128 v) {
    return v > std::numeric_limits<std::int64_t>::min() && v <= std::numeric_limits<std::int64_t>::max();
}

}  // namespace

std::optional<TimeUnit> common_unit(TimeUnit a, bool strict_a, TimeUnit b, bool strict_b, UnitError* why) {
    auto fail = [&](UnitError e) -> std::optional<TimeUnit> {
        if (why) *why = e;
        return std::nullopt;
    };
    if (a == TimeUnit::Generic) return b;
    if (b == TimeUnit::Generic || a == b) return a;
    if (is_calendar(a) && is_calendar(b)) return TimeUnit::M;
    if (is_calendar(a) || is_calendar(b)) {
        const bool strict = is_calendar(a) ? strict_a : strict_b;
        const TimeUnit fixed = is_calendar(a) ? b : a;
        if (strict) return fail(UnitError::Nonlinear);
        if (limited_factor(TimeUnit::D, fixed) == 0) return fail(UnitError::Overflow);
        return fixed;
    }
    if (limited_factor(a, b) == 0) return fail(UnitError::Overflow);
    return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

std::optional<ConversionPlan> conversion(TimeUnit from, TimeUnit to, bool datetime, UnitError* why, bool limited) {
    auto fail = [&](UnitError e) -> std::optional<ConversionPlan> {
        if (why) *why = e;
        return std::nullopt;
    };
    if (from == to || from == TimeUnit::Generic) return ConversionPlan{};
    if (to == TimeUnit::Generic) return ConversionPlan{};  // a generic value keeps its count
    if (is_calendar(from) && is_calendar(to))
        return ConversionPlan{from == TimeUnit::Y ? Conversion::Multiply : Conversion::FloorDivide, 12};
    if (is_calendar(from) || is_calendar(to)) {
        if (!datetime) return fail(UnitError::Nonlinear);
        if (limited && limited_factor(TimeUnit::D, is_calendar(from) ? to : from) == 0)
            return fail(UnitError::Overflow);
        return ConversionPlan{is_calendar(from) ? Conversion::FromCalendar : Conversion::ToCalendar, 1};
    }
    const __int128 f = limited_factor(from, to);
    if (f == 0 && limited) return fail(UnitError::Overflow);
    // (past the limit, factor 0: convert() computes its own in 128 bits)
    return ConversionPlan{
        static_cast<int>(to) > static_cast<int>(from) ? Conversion::Multiply : Conversion::FloorDivide,
        static_cast<std::int64_t>(f)};
}

__int128 days_of_month(__int128 months) {
    return core::days_from_civil(1970 + core::floor_div(months, 12), static_cast<int>(core::floor_mod(months, 12)) + 1,
                                 1);
}

__int128 days_of_year(__int128 years) { return core::days_from_civil(1970 + years, 1, 1); }

std::optional<std::int64_t> convert(std::int64_t v, TimeUnit from, TimeUnit to, bool datetime, bool limited) {
    if (v == kNaT) return kNaT;
    const auto plan = conversion(from, to, datetime, nullptr, limited);
    if (!plan) return std::nullopt;
    __int128 r = v;
    // Y and M: 12; fixed units: the factor in 128 bits (a date's text may go from W to as: 6e23)
    const __int128 f = is_calendar(from)                               ? 12
                       : static_cast<int>(to) > static_cast<int>(from) ? core::units_per(from, to)
                                                                       : core::units_per(to, from);
    switch (plan->how) {
        case Conversion::Same: break;
        case Conversion::Multiply:
            if (r > (static_cast<__int128>(1) << 64) || r < -(static_cast<__int128>(1) << 64)) return std::nullopt;
            r *= f;
            break;
        case Conversion::FloorDivide: r = core::floor_div(r, f); break;
        case Conversion::FromCalendar: {
            const __int128 days = from == TimeUnit::Y ? days_of_year(r) : days_of_month(r);
            if (to == TimeUnit::W) r = core::floor_div(days, 7);
            else r = days * core::units_per(TimeUnit::D, to);
            break;
        }
        case Conversion::ToCalendar: {
            const __int128 days = from == TimeUnit::W ? r * 7 : core::floor_div(r, core::units_per(TimeUnit::D, from));
            const core::CivilDate c = core::civil_from_days(days);
            r = to == TimeUnit::Y ? c.year - 1970 : (c.year - 1970) * 12 + (c.month - 1);
            break;
        }
    }
    if (!fits_value(r)) return std::nullopt;
    return static_cast<std::int64_t>(r);
}

namespace {

bool ieq(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
        const char x = a[k] >= 'A' && a[k] <= 'Z' ? static_cast<char>(a[k] - 'A' + 'a') : a[k];
        if (x != b[k]) return false;
    }
    return true;
}

}  // namespace

std::optional<ParsedDate> parse_datetime(std::string_view text, std::string* error, std::optional<TimeUnit> to) {
    auto fail = [&](std::string msg) -> std::optional<ParsedDate> {
        if (error) *error = std::move(msg);
        return std::nullopt;
    };
    std::size_t p = 0;
    while (p < text.size() && text[p] == ' ') ++p;  // NumPy skips leading spaces
    const std::string_view s = text.substr(p);
    if (s.empty() || ieq(s, "nat")) return ParsedDate{};
    if (ieq(s, "now") || ieq(s, "today"))
        return fail(
            fmt::format("'{}' is the time of the call, which a compiled program cannot hold; "
                        "write the date",
                        s));
    std::size_t i = 0;
    auto at = [&](std::string_view what) {
        return fail(i < s.size() ? fmt::format("'{}' is not a date: {} expected at position {} ('{}')", s, what, i + p,
                                               s.substr(i, 1))
                                 : fmt::format("'{}' is not a date: {} expected after its end", s, what));
    };
    auto digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
    // Exactly n digits at i.
    auto fixed = [&](int n, int* out) {
        int v = 0;
        const std::size_t start = i;
        for (int k = 0; k < n; ++k) {
            if (!digit(i)) {
                i = start;  // the field is reported from its start
                return false;
            }
            v = v * 10 + (s[i++] - '0');
        }
        *out = v;
        return true;
    };
    auto zone = [&]() -> std::optional<ParsedDate> {
        return fail(
            fmt::format("'{}' has a time zone; jitexpr's datetime64, as NumPy's, has none: write "
                        "the time in UTC without it",
                        s));
    };
    auto ends_in_zone = [&] { return i < s.size() && (s[i] == 'Z' || s[i] == '+' || s[i] == '-'); };
    // The year: a sign, then digits.
    bool negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
    if (!digit(i)) return at("a year");
    __int128 year = 0;
    while (digit(i)) {
        year = year * 10 + (s[i++] - '0');
        if (year > (static_cast<__int128>(1) << 70)) return fail(fmt::format("'{}': the year is out of range", s));
    }
    if (negative) year = -year;
    auto done = [&](__int128 v, TimeUnit u) -> std::optional<ParsedDate> {
        if (!fits_value(v))
            return fail(fmt::format("'{}' is out of the range of datetime64[{}]: {}", s, time_unit_code(u),
                                    range_text(datetime_of(u))));
        return ParsedDate{static_cast<std::int64_t>(v), u};
    };
    if (i == s.size()) return done(year - 1970, TimeUnit::Y);
    if (s[i] != '-') return at("'-' and a month");
    ++i;
    int month = 0, day = 0;
    if (!fixed(2, &month)) return at("a month of two digits");
    if (month < 1 || month > 12) return fail(fmt::format("'{}': month {} is out of range", s, month));
    if (i == s.size()) return done((year - 1970) * 12 + (month - 1), TimeUnit::M);
    if (s[i] != '-') return at("'-' and a day");
    ++i;
    if (!fixed(2, &day)) return at("a day of two digits");
    if (day < 1 || day > core::days_in_month(year, month))
        return fail(fmt::format("'{}': day {} is out of range for the month", s, day));
    const __int128 days = core::days_from_civil(year, month, day);
    if (i == s.size()) return done(days, TimeUnit::D);
    if (s[i] != 'T' && s[i] != ' ') return at("'T' and a time");
    ++i;
    int hour = 0, minute = 0, second = 0;
    if (!fixed(2, &hour)) return at("an hour of two digits");
    if (hour > 23) return fail(fmt::format("'{}': hour {} is out of range", s, hour));
    __int128 v = days * 24 + hour;
    if (i == s.size()) return done(v, TimeUnit::h);
    if (ends_in_zone()) return zone();
    if (s[i] != ':') return at("':' and minutes");
    ++i;
    if (!fixed(2, &minute)) return at("minutes of two digits");
    if (minute > 59) return fail(fmt::format("'{}': minute {} is out of range", s, minute));
    v = v * 60 + minute;
    if (i == s.size()) return done(v, TimeUnit::m);
    if (ends_in_zone()) return zone();
    if (s[i] != ':') return at("':' and seconds");
    ++i;
    if (!fixed(2, &second)) return at("seconds of two digits");
    if (second > 59) return fail(fmt::format("'{}': second {} is out of range", s, second));
    v = v * 60 + second;
    if (i == s.size()) return done(v, TimeUnit::s);
    if (ends_in_zone()) return zone();
    if (s[i] != '.') return at("'.' and a fraction of a second");
    ++i;
    __int128 frac = 0;
    int digits = 0;
    while (digit(i)) {
        if (++digits > 18) return fail(fmt::format("'{}': more than 18 digits of a second (attoseconds)", s));
        frac = frac * 10 + (s[i++] - '0');
    }
    if (ends_in_zone()) return zone();
    if (i != s.size()) return at("the end of the date");
    // Digits finer than the unit the date goes to are dropped first (NumPy's floor), so that
    // '...:15.1234567890123' as ns is not judged against the range of fs.
    if (to && *to != TimeUnit::Generic) {
        const int kept = 3 * std::max(0, static_cast<int>(*to) - static_cast<int>(TimeUnit::s));
        if (digits > kept) {
            for (; digits > kept; --digits) frac /= 10;
            if (digits == 0) return done(v, TimeUnit::s);
        }
    }
    // 1 to 3 digits: ms, 4 to 6: us, ... (NumPy: an empty fraction is ms too)
    const int groups = digits == 0 ? 1 : (digits + 2) / 3;
    for (int k = digits; k < 3 * groups; ++k) frac *= 10;
    const auto unit = static_cast<TimeUnit>(static_cast<int>(TimeUnit::s) + groups);
    return done(v * core::units_per(TimeUnit::s, unit) + frac, unit);
}

std::string range_text(DType t) {
    const TimeUnit u = time_unit(t);
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min() + 1;
    constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    if (is_datetime(t))
        return fmt::format("{} holds {} to {}", dtype_name(t), datetime_string(lo, u), datetime_string(hi, u));
    return fmt::format("{} holds {} to {} {}", dtype_name(t), lo, hi, time_unit_code(u));
}

}  // namespace jit::dsl::dates

// jitexpr — the rules of dates and durations (NumPy 2's datetime64 and timedelta64): which units
// two values meet in, how a value changes unit, and the text of a date literal. dsl/lower/dates.cpp
// applies them, lowering every operation to int64 work; constants are converted here, exactly.
#pragma once

#include <jit/dtype.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jit::dsl::dates {

// Y and M: units of no fixed length (a month is 28 to 31 days).
constexpr bool is_calendar(TimeUnit u) { return u == TimeUnit::Y || u == TimeUnit::M; }

// The unit two values meet in, as NumPy's compute_datetime_metadata_greatest_common_divisor
// decides it: a Generic unit takes the other; Y with M is M; a calendar unit with a unit of fixed
// length is that unit, except for a timedelta64 operand (`strict`), whose months have no length
// in days (NumPy's "incompatible nonlinear base time units"); two fixed units meet in the finer,
// unless one of the coarser holds 2**56 or more of it (NumPy's "Integer overflow getting a common
// metadata divisor": D and ps, s and as); a calendar unit counts as D there. nullopt, with the
// message in *error, where NumPy raises.
enum class UnitError : std::uint8_t { None, Nonlinear, Overflow };
std::optional<TimeUnit> common_unit(TimeUnit a, bool strict_a, TimeUnit b, bool strict_b, UnitError* why);

// How a value of unit `from` becomes one of unit `to` (datetime64 or timedelta64), as NumPy
// converts: towards finer units exactly, towards coarser ones rounding towards minus infinity; a
// date of Y or M through the calendar. Refused (nullopt, *why set) for a timedelta64 between a
// calendar unit and a fixed one (Nonlinear), and where NumPy's factor limit is passed (Overflow).
enum class Conversion : std::uint8_t {
    Same,          // the value unchanged (the same unit, or from Generic)
    Multiply,      // by factor
    FloorDivide,   // by factor
    FromCalendar,  // a date of Y or M: days through the calendar, then to `to` (W: floor-divided by 7)
    ToCalendar,    // a date of a fixed unit to Y or M: its day through the calendar
};
struct ConversionPlan {
    Conversion how = Conversion::Same;
    std::int64_t factor = 1;
};
// `limited`: NumPy's factor limit applies (between values of two units); a date's text is
// converted without it (datetime64('2024-03', 'fs') is refused only when its value does not fit).
std::optional<ConversionPlan> conversion(TimeUnit from, TimeUnit to, bool datetime, UnitError* why,
                                         bool limited = true);

// A constant converted exactly (NaT stays NaT); nullopt when the result leaves int64 (or is
// INT64_MIN, which would read as NaT), or the conversion is refused (`limited` as above).
std::optional<std::int64_t> convert(std::int64_t v, TimeUnit from, TimeUnit to, bool datetime, bool limited = true);

// A date literal's text, as NumPy's datetime64(str) reads it: ISO 8601 "2024-03-01",
// "2024-03-01T12:30" (or a space for the T), "2024", "2024-03", "...T12", "...:15", a fraction of
// 1 to 18 digits ("...:15.25": ms, 4 to 6 digits us, ..., 16 to 18 as), a signed or long year
// ("-0044-03-15", "+10000-01-01"); "NaT" in any case, and "", are NaT (of Generic unit). The
// unit is the finest field given. Time zones ("Z", "+01:00"), "now" and "today" are refused.
struct ParsedDate {
    std::int64_t value = kNaT;
    TimeUnit unit = TimeUnit::Generic;
};
// `to`: the unit the caller converts the date to; digits of a fraction finer than it are dropped
// (floored) before the range is checked, as NumPy reads datetime64('...:15.1234567890123', 'ns').
std::optional<ParsedDate> parse_datetime(std::string_view text, std::string* error,
                                         std::optional<TimeUnit> to = std::nullopt);

// "datetime64[ns] holds 1677-09-21T00:12:43.145224193 to 2262-04-11T23:47:16.854775807" and the
// like, for messages about a value out of a dtype's range.
std::string range_text(DType t);

// The days since 1970-01-01 of the first day of month `months` since 1970-01 (every int64 month
// count: 128-bit inside), for a date of unit M; of year `years` since 1970 for unit Y.
__int128 days_of_month(__int128 months);
__int128 days_of_year(__int128 years);

}  // namespace jit::dsl::dates

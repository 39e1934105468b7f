// jitexpr — the proleptic Gregorian calendar of datetime64 (part of jitexpr_core): days since
// 1970-01-01 and civil dates, exact over every int64 day count (128-bit where needed), and
// the units' sizes. Used by the language (dsl/dates.cpp: literals, unit conversions) and by the
// formatting of dtype.hpp (datetime_string).
#pragma once

#include <jit/dtype.hpp>

#include <cstdint>

namespace jit::core {

// Division rounding towards minus infinity (b > 0).
constexpr __int128 floor_div(__int128 a, __int128 b) { return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0); }
constexpr __int128 floor_mod(__int128 a, __int128 b) { return a - floor_div(a, b) * b; }

struct CivilDate {
    __int128 year = 1970;
    int month = 1;  // 1..12
    int day = 1;    // 1..31
};

// Days from 1970-01-01 to y-m-d (H. Hinnant's days_from_civil, with floor division, so every year
// works, negative ones too: year 0 is 1 BC, as ISO 8601 and NumPy count).
constexpr __int128 days_from_civil(__int128 y, int m, int d) {
    y -= m <= 2 ? 1 : 0;
    const __int128 era = floor_div(y, 400);
    const __int128 yoe = y - era * 400;                          // [0, 399]
    const int mp = (m + 9) % 12;                                 // March = 0
    const __int128 doy = (153 * mp + 2) / 5 + d - 1;             // [0, 365]
    const __int128 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
    return era * 146097 + doe - 719468;
}

constexpr CivilDate civil_from_days(__int128 z) {
    z += 719468;
    const __int128 era = floor_div(z, 146097);
    const __int128 doe = z - era * 146097;                                       // [0, 146096]
    const __int128 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
    const __int128 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
    const int mp = static_cast<int>((5 * doy + 2) / 153);                        // [0, 11]
    const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);                // [1, 31]
    const int m = mp < 10 ? mp + 3 : mp - 9;                                     // [1, 12]
    return CivilDate{yoe + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

constexpr bool is_leap(__int128 y) {
    return floor_mod(y, 4) == 0 && (floor_mod(y, 100) != 0 || floor_mod(y, 400) == 0);
}
constexpr int days_in_month(__int128 y, int m) {
    constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// How many of unit `fine` make one of unit `coarse`, for the units of fixed size (W and finer;
// D for Y and M is not one); 0 when `fine` is coarser.
constexpr __int128 units_per(TimeUnit coarse, TimeUnit fine) {
    // The size of each unit from W on in the next finer one (NumPy's _datetime_factors).
    constexpr int kNext[kNumTimeUnits] = {1, 1, 1, 7, 24, 60, 60, 1000, 1000, 1000, 1000, 1000, 1000, 1};
    if (static_cast<int>(fine) < static_cast<int>(coarse)) return 0;
    __int128 f = 1;
    for (int u = static_cast<int>(coarse); u < static_cast<int>(fine); ++u) f *= kNext[u];
    return f;
}

}  // namespace jit::core

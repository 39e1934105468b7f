// Element types: names (part of jitexpr_core).
#include <jit/dtype.hpp>

#include "core/calendar.hpp"

#include <fmt/format.h>

namespace jit {

std::optional<TimeUnit> time_unit_from_code(std::string_view code) {
    if (code.empty()) return std::nullopt;
#define JIT_TIME_UNIT_LOOKUP(Id, spelled) \
    if (code == spelled) return TimeUnit::Id;
    JIT_FOR_EACH_TIME_UNIT(JIT_TIME_UNIT_LOOKUP)
#undef JIT_TIME_UNIT_LOOKUP
    if (code == "\u03bcs") return TimeUnit::us;  // NumPy takes the Greek mu too
    return std::nullopt;
}

namespace {

// "datetime64[s]" / "M8[s]" / "datetime64" / "M8" (and the timedelta64 forms): the dtype, or nullopt.
std::optional<DType> temporal_from_name(std::string_view name) {
    bool delta = false;
    std::string_view rest;
    for (const auto& [prefix, is_delta] :
         {std::pair<std::string_view, bool>{"datetime64", false}, {"timedelta64", true}, {"M8", false}, {"m8", true}}) {
        if (name.substr(0, prefix.size()) == prefix) {
            delta = is_delta;
            rest = name.substr(prefix.size());
            if (rest.empty()) return delta ? DType::TimeDelta64_Generic : DType::DateTime64_Generic;
            if (rest.size() < 3 || rest.front() != '[' || rest.back() != ']') return std::nullopt;
            const auto unit = time_unit_from_code(rest.substr(1, rest.size() - 2));
            if (!unit) return std::nullopt;
            return delta ? timedelta_of(*unit) : datetime_of(*unit);
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<DType> dtype_from_name(std::string_view name) {
#define JIT_DTYPE_LOOKUP(Id, lower, spelled, size) \
    if (name == spelled) return DType::Id;
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_LOOKUP)
#undef JIT_DTYPE_LOOKUP
    if (name == "float" || name == "double") return DType::Float64;
    if (name == "half") return DType::Float16;
    if (name == "int") return DType::Int64;
    if (name == "uint") return DType::UInt64;
    if (name == "complex") return DType::Complex128;
    return temporal_from_name(name);
}

namespace {

std::string int128_text(__int128 v) {
    const bool neg = v < 0;
    unsigned __int128 m =
        neg ? static_cast<unsigned __int128>(0) - static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
    std::string r;
    do {
        r.insert(r.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
        m /= 10;
    } while (m != 0);
    return neg ? "-" + r : r;
}

// NumPy prints a year as C's %04d would: 0024, 10000, -001.
std::string year_text(__int128 y) {
    std::string digits = int128_text(y < 0 ? -y : y);
    const std::size_t width = y < 0 ? 3 : 4;
    if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
    return y < 0 ? "-" + digits : digits;
}

}  // namespace

std::string datetime_string(std::int64_t value, TimeUnit unit) {
    if (value == kNaT) return "NaT";
    const __int128 v = value;
    switch (unit) {
        case TimeUnit::Generic: return std::to_string(value);
        case TimeUnit::Y: return year_text(1970 + v);
        case TimeUnit::M:
            return fmt::format("{}-{:02}", year_text(1970 + core::floor_div(v, 12)),
                               static_cast<int>(core::floor_mod(v, 12)) + 1);
        default: break;
    }
    const __int128 per_day = unit == TimeUnit::W ? 1 : core::units_per(TimeUnit::D, unit);
    const __int128 days = unit == TimeUnit::W ? v * 7 : core::floor_div(v, per_day);
    const core::CivilDate c = core::civil_from_days(days);
    std::string r = fmt::format("{}-{:02}-{:02}", year_text(c.year), c.month, c.day);
    if (unit == TimeUnit::W || unit == TimeUnit::D) return r;
    const __int128 rem = v - days * per_day;  // [0, per_day)
    const __int128 per_hour = core::units_per(TimeUnit::h, unit);
    r += fmt::format("T{:02}", static_cast<int>(rem / per_hour));
    if (unit == TimeUnit::h) return r;
    const __int128 per_minute = core::units_per(TimeUnit::m, unit);
    r += fmt::format(":{:02}", static_cast<int>(rem % per_hour / per_minute));
    if (unit == TimeUnit::m) return r;
    const __int128 per_second = core::units_per(TimeUnit::s, unit);
    r += fmt::format(":{:02}", static_cast<int>(rem % per_minute / per_second));
    if (unit == TimeUnit::s) return r;
    // The fraction: 3 digits a unit from ms to as.
    const int digits = 3 * (static_cast<int>(unit) - static_cast<int>(TimeUnit::s));
    std::string frac = int128_text(rem % per_second);
    frac.insert(0, static_cast<std::size_t>(digits) - frac.size(), '0');
    return r + "." + frac;
}

std::string dtype_name(DType t, std::size_t itemsize) {
    switch (t) {
        case DType::Bytes: return fmt::format("S{}", itemsize);
        case DType::Str: return fmt::format("U{}", itemsize / 4);
        case DType::Utf8: return itemsize == 8 ? "large_string" : "string";
        default: return std::string(dtype_name(t));
    }
}

}  // namespace jit

// dsl/semantics.h against NumPy 2: numpy_semantics.py prints the expected result of each op
// and dtype over special values (NaN, +-inf, +-0, subnormals, integer extremes, zero divisors);
// every case is recomputed with jx::op / jx::cast and compared (bitwise, or within the ULP
// bound the script gives for transcendental functions).
#include "dsl/semantics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Case {
    std::string op, dtype;
    int tol = 0;
    std::vector<std::string> args;
    std::string rdtype, result;
    std::string line;
};

std::vector<Case> load_cases(std::string* error) {
    const std::string cmd = std::string(JITEXPR_PYTHON) + " " + JITEXPR_NUMPY_SEMANTICS_SCRIPT + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) {
        *error = "cannot run " + cmd;
        return {};
    }
    std::vector<Case> cases;
    std::string text;
    char buf[4096];
    while (fgets(buf, sizeof buf, f)) text += buf;
    const int rc = pclose(f);
    if (rc != 0) {
        *error = "`" + cmd + "` failed (python3 with numpy >= 2 is required; CI installs it):\n" + text.substr(0, 2000);
        return {};
    }
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::vector<std::string> tok;
        for (std::string t; ls >> t;) tok.push_back(t);
        if (tok.size() < 6) continue;
        Case c;
        c.op = tok[0];
        c.dtype = tok[1];
        c.tol = std::stoi(tok[2]);
        c.args.assign(tok.begin() + 3, tok.end() - 2);
        c.rdtype = tok[tok.size() - 2];
        c.result = tok.back();
        c.line = line;
        cases.push_back(std::move(c));
    }
    return cases;
}

std::uint64_t hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

template <class T>
T reg_from_real(const std::string& s, const std::string& dtype);
template <class T>
struct is_cx : std::false_type {};
template <class R>
struct is_cx<jx::cx<R>> : std::true_type {};

// A register value from the storage bits of `dtype`.
template <class T>
T reg_from_bits(const std::string& s, const std::string& dtype) {
    if constexpr (is_cx<T>::value) {
        const auto colon = s.find(':');
        using R = decltype(T{}.re);
        return T{reg_from_bits<R>(s.substr(0, colon), ""), reg_from_bits<R>(s.substr(colon + 1), "")};
    } else {
        return reg_from_real<T>(s, dtype);
    }
}

template <class T>
T reg_from_real(const std::string& s, const std::string& dtype) {
    if constexpr (std::is_same_v<T, float>) {
        if (dtype == "float16") return jx::half_to_float(static_cast<jx::u16>(hex(s)));
    }
    if constexpr (std::is_same_v<T, bool>) {
        return hex(s) != 0;
    } else {
        const std::uint64_t b = hex(s);
        T v;
        std::memcpy(&v, &b, sizeof v);  // little endian: the low bytes
        return v;
    }
}

// The storage bits of a register value stored as `dtype`, in the script's format.
template <class R>
std::string bits_of(R r, const std::string& dtype) {
    std::uint64_t b = 0;
    if constexpr (is_cx<R>::value) {
        return bits_of(r.re, "") + ":" + bits_of(r.im, "");
    } else if constexpr (std::is_same_v<R, bool>) {
        return r ? "1" : "0";
    } else {
        if constexpr (std::is_same_v<R, float>) {
            if (dtype == "float16") {
                b = jx::float_to_half(r);
                std::ostringstream os;
                os << std::hex << b;
                return os.str();
            }
        }
        std::memcpy(&b, &r, sizeof r);
        std::ostringstream os;
        os << std::hex << b;
        return os.str();
    }
}

// Distance in ULP between two stored floats given as bits (NaN equals NaN); a complex value
// part by part, where a zero matches only a zero of the same sign and an infinity only itself.
bool within(const std::string& got, const std::string& want, const std::string& dtype, int tol, bool part = false) {
    if (got == want) return true;
    if (dtype == "complex64" || dtype == "complex128") {
        const auto g = got.find(':'), w = want.find(':');
        if (g == std::string::npos || w == std::string::npos) return false;
        const std::string real = dtype == "complex64" ? "float32" : "float64";
        return within(got.substr(0, g), want.substr(0, w), real, tol, true) &&
               within(got.substr(g + 1), want.substr(w + 1), real, tol, true);
    }
    if (dtype != "float16" && dtype != "float32" && dtype != "float64") return false;
    const int bitsz = dtype == "float16" ? 16 : dtype == "float32" ? 32 : 64;
    const std::uint64_t g = hex(got), w = hex(want);
    const std::uint64_t sign = std::uint64_t{1} << (bitsz - 1);
    const std::uint64_t mag = sign - 1;
    const std::uint64_t exp_mask = bitsz == 16 ? 0x7c00 : bitsz == 32 ? 0x7f800000 : 0x7ff0000000000000;
    auto isnan = [&](std::uint64_t x) { return (x & exp_mask) == exp_mask && (x & mag & ~exp_mask) != 0; };
    if (isnan(g) || isnan(w)) return isnan(g) && isnan(w);
    auto ordered = [&](std::uint64_t x) {
        const auto m = static_cast<std::int64_t>(x & mag);
        return (x & sign) ? -m : m;
    };
    if (part && ((g & mag) == 0 || (w & mag) == 0)) return false;                // signed zeros: exact
    if (part && ((g & mag) == exp_mask || (w & mag) == exp_mask)) return false;  // infinities: exact
    const std::int64_t d = ordered(g) - ordered(w);
    return (d < 0 ? -d : d) <= tol;
}

template <class T>
bool eval(const Case& c, std::string* got) {
    T a[3] = {};
    std::size_t na = 0;
    for (const auto& s : c.args) {
        if (na == 3) return false;
        a[na++] = reg_from_bits<T>(s, c.dtype);
    }
#define JX_EVAL_Operator(Id, Arity) JX_EVAL(Id, Arity)
#define JX_EVAL_Function(Id, Arity) JX_EVAL(Id, Arity)
#define JX_EVAL_Result(Id, Arity) JX_EVAL_Function(Id, Arity)
#define JX_EVAL_Reduction(Id, Arity)
#define JX_EVAL_Scan(Id, Arity)
#define JX_EVAL(Id, Arity)                                                              \
    if (c.op == #Id) {                                                                  \
        if constexpr (Arity == 1 && requires(T x) { jx::op::Id(x); }) {                 \
            if (na == 1) return *got = bits_of(jx::op::Id(a[0]), c.rdtype), true;       \
        } else if constexpr (Arity == 2 && requires(T x) { jx::op::Id(x, x); }) {       \
            if (na == 2) return *got = bits_of(jx::op::Id(a[0], a[1]), c.rdtype), true; \
        }                                                                               \
        return false;                                                                   \
    }
#define JIT_OP(Id, Kind, Arity, ...) JX_EVAL_##Kind(Id, Arity)
#include "dsl/ops.def"
#undef JIT_OP
#undef JX_EVAL
    return false;
}

template <class From, class To>
std::string cast_bits(From v, const std::string& rdtype) {
    if constexpr (std::is_same_v<To, float>) {
        if (rdtype == "float16") return bits_of(jx::round_f16(v), rdtype);
    }
    return bits_of(jx::cast<To>(v), rdtype);
}

template <class F>
bool with_type(const std::string& dtype, F&& f) {
    if (dtype == "bool") return f(bool{});
    if (dtype == "int8") return f(jx::i8{});
    if (dtype == "int16") return f(jx::i16{});
    if (dtype == "int32") return f(jx::i32{});
    if (dtype == "int64") return f(jx::i64{});
    if (dtype == "uint8") return f(jx::u8{});
    if (dtype == "uint16") return f(jx::u16{});
    if (dtype == "uint32") return f(jx::u32{});
    if (dtype == "uint64") return f(jx::u64{});
    if (dtype == "float16" || dtype == "float32") return f(float{});
    if (dtype == "float64") return f(double{});
    if (dtype == "complex64") return f(jx::c64{});
    if (dtype == "complex128") return f(jx::c128{});
    return false;
}

bool evaluate(const Case& c, std::string* got) {
    if (c.op == "Nextafter" && c.dtype == "float16" && c.args.size() == 2) {
        // 16-bit operands carried as float step in their own format (see semantics.h).
        *got = bits_of(
            jx::nextafter_f16(reg_from_bits<float>(c.args[0], c.dtype), reg_from_bits<float>(c.args[1], c.dtype)),
            c.rdtype);
        return true;
    }
    if (c.op == "Spacing" && c.dtype == "float16" && c.args.size() == 1) {
        *got = bits_of(jx::spacing_f16(reg_from_bits<float>(c.args[0], c.dtype)), c.rdtype);
        return true;
    }
    if (c.op == "Cast") {
        return with_type(c.dtype, [&](auto from) {
            using F = decltype(from);
            const F v = reg_from_bits<F>(c.args[0], c.dtype);
            return with_type(c.rdtype, [&](auto to) {
                *got = cast_bits<F, decltype(to)>(v, c.rdtype);
                return true;
            });
        });
    }
    return with_type(c.dtype, [&](auto t) { return eval<decltype(t)>(c, got); });
}

TEST(Semantics, MatchNumpyOnSpecialValues) {
    std::string error;
    const auto cases = load_cases(&error);
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_GT(cases.size(), 10000u) << "numpy_semantics.py printed too few cases";
    std::map<std::string, int> failures;
    int shown = 0;
    for (const auto& c : cases) {
        std::string got;
        ASSERT_TRUE(evaluate(c, &got)) << "no jx::op for: " << c.line;
        if (!within(got, c.result, c.rdtype, c.tol)) {
            ++failures[c.op + " " + c.dtype];
            if (shown++ < (std::getenv("JITEXPR_SHOW_ALL") ? 1000000 : 40))
                ADD_FAILURE() << c.line << "  -> jx gives " << got;
        }
    }
    for (const auto& [k, n] : failures) ADD_FAILURE() << k << ": " << n << " mismatches";
}

// Choices documented in semantics.h where NumPy raises or is undefined.
TEST(Semantics, IntegerPowerWithNegativeExponent) {
    EXPECT_EQ(jx::op::Pow(jx::i32(2), jx::i32(-1)), 0);
    EXPECT_EQ(jx::op::Pow(jx::i32(1), jx::i32(-5)), 1);
    EXPECT_EQ(jx::op::Pow(jx::i32(-1), jx::i32(-3)), -1);
    EXPECT_EQ(jx::op::Pow(jx::i32(-1), jx::i32(-4)), 1);
}

TEST(Semantics, FloatToIntegerCastSaturatesAndNanIsZero) {
    EXPECT_EQ(jx::cast<jx::i32>(3e9f), 2147483647);
    EXPECT_EQ(jx::cast<jx::i32>(-3e9), -2147483647 - 1);
    EXPECT_EQ(jx::cast<jx::u8>(-5.0f), 0);
    EXPECT_EQ(jx::cast<jx::u64>(1e30), 18446744073709551615ull);
    EXPECT_EQ(jx::cast<jx::i64>(std::nan("")), 0);
}

TEST(Semantics, IntegerReciprocalOfZeroIsZero) {
    EXPECT_EQ(jx::op::Reciprocal(jx::i16(0)), 0);
    EXPECT_EQ(jx::op::Reciprocal(jx::i16(-1)), -1);
    EXPECT_EQ(jx::op::Reciprocal(jx::u8(2)), 0);
}

TEST(Semantics, HalfConversionRoundsToNearestEvenEverywhere) {
    // Every half value round-trips, and every midpoint between neighbours rounds to the even one.
    for (std::uint32_t h = 0; h < 0x7c00; ++h) {
        const float f = jx::half_to_float(static_cast<jx::u16>(h));
        ASSERT_EQ(jx::float_to_half(f), h);
        ASSERT_EQ(jx::float_to_half(-f), h | 0x8000u);
        const float next = jx::half_to_float(static_cast<jx::u16>(h + 1));
        const float mid = (f + next) / 2;  // exact in float
        ASSERT_EQ(jx::float_to_half(mid), (h & 1u) ? h + 1 : h) << std::hex << h;
    }
    EXPECT_EQ(jx::float_to_half(INFINITY), 0x7c00);
    EXPECT_EQ(jx::float_to_half(65520.0f), 0x7c00);
    EXPECT_TRUE(std::isnan(jx::half_to_float(jx::float_to_half(NAN))));
}

TEST(Semantics, DoubleToHalfRoundsOnceNotTwice) {
    // 1 + 2^-11 + 2^-40 is just above the midpoint between half 1 and 1 + 2^-10: rounds up.
    // Through float (which drops the 2^-40) it would be a tie and round down to 1.
    const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    EXPECT_EQ(jx::double_to_half(d), 0x3c01);
    EXPECT_EQ(jx::float_to_half(static_cast<float>(d)), 0x3c00);
}

TEST(Semantics, Float16NextafterStepsInHalfPrecision) {
    EXPECT_EQ(jx::nextafter_f16(1.0f, 2.0f), 1.0f + 0x1p-10f);
    EXPECT_EQ(jx::nextafter_f16(0.0f, -1.0f), -0x1p-24f);
}

}  // namespace

// jitexpr — scalar semantics of every op in dsl/ops.def, shared by the CPU backend and the CUDA
// kernels so that both compute the same thing.
//
// This header is plain C++17. It compiles
//   * on the host (included by backend/cpu), where it may use <cmath>, <cstdint>, <cstring>;
//   * under NVRTC, with JX_CUDA defined: its text is embedded into generated kernels and it
//     includes nothing (device math builtins and bit-cast intrinsics only).
//
// Contents (namespace jx):
//   i8 i16 i32 i64 u8 u16 u32 u64      integer aliases
//   c64 c128                           complex numbers {re, im}
//   half_to_float, float_to_half,      16-bit float conversions (storage is u16, round to
//   double_to_half, bf16_to_float,     nearest even, NaN stays NaN, subnormals and overflow
//   float_to_bf16, double_to_bf16      to inf handled); round_f16/round_bf16 round a value
//                                      through the 16-bit type and give it back as float
//   cast<To>(v)                        conversions between register types
//   op::<Id>(...)                      one function per op of dsl/ops.def, overloaded on the
//                                      operand type; defined only for the operand types the
//                                      typing rule allows (so `requires { jx::op::Id(x) }`
//                                      tells a backend which instantiations exist)
//   red::<Id><T>                       reduction identities and combine steps
//
// Semantics are NumPy 2's, with these documented choices where NumPy is undefined or raises:
//   * integer // % fmod by zero give 0; INT_MIN // -1 wraps to INT_MIN, INT_MIN % -1 is 0;
//   * signed overflow wraps (arithmetic is done in unsigned types);
//   * shifts by a count < 0 or >= the width give 0 (>> of a negative value gives -1);
//   * integer ** negative exponent (only reachable from array data; a literal is rejected by
//     the checker): 0, except base 1 gives 1 and base -1 gives +1 or -1 by the exponent's parity;
//   * reciprocal(0) on integers is 0;
//   * float -> integer casts truncate toward zero, NaN gives 0, out-of-range values saturate
//     to the target's min/max (CUDA's cvt.rzi.sat behaviour; NumPy leaves this undefined);
//     float -> unsigned of a negative value gives 0;
//   * complex functions follow C99 Annex G on infinities, NaNs and signed zeros as NumPy does
//     (glibc's choices where Annex G leaves a sign open); sign, reciprocal, power, log1p,
//     log2, log10 and expm1 follow NumPy's own formulas;
//   * float16/bfloat16 operands arrive as float; Nextafter on them must use nextafter_f16 /
//     nextafter_bf16 (a float nextafter would be rounded away).
#pragma once

// @section base
#ifdef JX_CUDA
#define JX_HD __device__ __forceinline__
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#define JX_HD inline
#endif

namespace jx {

// ---------------------------------------------------------------- integer types
#ifdef JX_CUDA
using i8 = signed char;
using i16 = short;
using i32 = int;
using i64 = long long;
using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
#else
using i8 = std::int8_t;
using i16 = std::int16_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
#endif

// ---------------------------------------------------------------- complex types
template <class R>
struct cx {
    R re, im;
};
using c64 = cx<float>;
using c128 = cx<double>;

// ---------------------------------------------------------------- tiny type traits (no <type_traits> under NVRTC)
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using en = typename enable_if<B, T>::type;

template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };

// Per integer type: its width, signedness, limits and the unsigned type (>= 32 bits, so that
// promotions never make signed arithmetic) that wrapping arithmetic is done in.
template <class T> struct int_traits {
    static constexpr bool is_int = false;
    static constexpr bool is_signed = false;
    static constexpr int bits = 0;
};
#define JX_INT_TRAITS(T, SIGNED, BITS, WIDE, MINV, MAXV)   \
    template <> struct int_traits<T> {                    \
        static constexpr bool is_int = true;              \
        static constexpr bool is_signed = SIGNED;         \
        static constexpr int bits = BITS;                 \
        using wide = WIDE;                                \
        static JX_HD T min() { return (T)(MINV); }        \
        static JX_HD T max() { return (T)(MAXV); }        \
    };
JX_INT_TRAITS(i8, true, 8, u32, -128, 127)
JX_INT_TRAITS(i16, true, 16, u32, -32768, 32767)
JX_INT_TRAITS(i32, true, 32, u32, -2147483647 - 1, 2147483647)
JX_INT_TRAITS(i64, true, 64, u64, -9223372036854775807LL - 1, 9223372036854775807LL)
JX_INT_TRAITS(u8, false, 8, u32, 0, 255)
JX_INT_TRAITS(u16, false, 16, u32, 0, 65535)
JX_INT_TRAITS(u32, false, 32, u32, 0, 4294967295U)
JX_INT_TRAITS(u64, false, 64, u64, 0, 18446744073709551615ULL)
#undef JX_INT_TRAITS

template <class T> struct is_int { static constexpr bool value = int_traits<T>::is_int; };
template <class T> struct is_sint { static constexpr bool value = int_traits<T>::is_int && int_traits<T>::is_signed; };
template <class T> struct is_uint { static constexpr bool value = int_traits<T>::is_int && !int_traits<T>::is_signed; };
template <class T> struct is_flt { static constexpr bool value = same<T, float>::value || same<T, double>::value; };
template <class T> struct is_cplx { static constexpr bool value = same<T, c64>::value || same<T, c128>::value; };
template <class T> struct is_bool { static constexpr bool value = same<T, bool>::value; };
template <class T> struct is_real { static constexpr bool value = is_bool<T>::value || is_int<T>::value || is_flt<T>::value; };
template <class T> struct is_num { static constexpr bool value = is_int<T>::value || is_flt<T>::value || is_cplx<T>::value; };
template <class T> struct is_any { static constexpr bool value = is_real<T>::value || is_cplx<T>::value; };
template <class T> struct is_intb { static constexpr bool value = is_int<T>::value || is_bool<T>::value; };
template <class T> struct is_intf { static constexpr bool value = is_int<T>::value || is_flt<T>::value; };
template <class T> struct is_fc { static constexpr bool value = is_flt<T>::value || is_cplx<T>::value; };

template <class T> struct real_of { using type = T; };
template <class R> struct real_of<cx<R>> { using type = R; };

// ---------------------------------------------------------------- bit casts and float constants
#ifdef JX_CUDA
JX_HD u32 fbits(float x) { return __float_as_uint(x); }
JX_HD float ffrom(u32 b) { return __uint_as_float(b); }
JX_HD u64 dbits(double x) { return (u64)__double_as_longlong(x); }
JX_HD double dfrom(u64 b) { return __longlong_as_double((long long)b); }
#else
JX_HD u32 fbits(float x) { u32 b; std::memcpy(&b, &x, sizeof b); return b; }
JX_HD float ffrom(u32 b) { float x; std::memcpy(&x, &b, sizeof x); return x; }
JX_HD u64 dbits(double x) { u64 b; std::memcpy(&b, &x, sizeof b); return b; }
JX_HD double dfrom(u64 b) { double x; std::memcpy(&x, &b, sizeof x); return x; }
#endif

template <class R> JX_HD R inf();
template <> JX_HD float inf<float>() { return ffrom(0x7f800000u); }
template <> JX_HD double inf<double>() { return dfrom(0x7ff0000000000000ull); }
template <class R> JX_HD R qnan();
template <> JX_HD float qnan<float>() { return ffrom(0x7fc00000u); }
template <> JX_HD double qnan<double>() { return dfrom(0x7ff8000000000000ull); }

// ---------------------------------------------------------------- math wrappers: float stays float
// (::sinf on float, ::sin on double; the same names exist on the host and under NVRTC).
namespace m {
#define JX_M1(name, fn)                                  \
    JX_HD float name(float x) { return ::fn##f(x); }     \
    JX_HD double name(double x) { return ::fn(x); }
#define JX_M2(name, fn)                                            \
    JX_HD float name(float x, float y) { return ::fn##f(x, y); }   \
    JX_HD double name(double x, double y) { return ::fn(x, y); }
JX_M1(sqrt, sqrt) JX_M1(sin, sin) JX_M1(cos, cos) JX_M1(tan, tan)
JX_M1(asin, asin) JX_M1(acos, acos) JX_M1(atan, atan)
JX_M1(sinh, sinh) JX_M1(cosh, cosh) JX_M1(tanh, tanh)
JX_M1(asinh, asinh) JX_M1(acosh, acosh) JX_M1(atanh, atanh)
JX_M1(log, log) JX_M1(log1p, log1p) JX_M1(log10, log10) JX_M1(log2, log2)
JX_M1(exp, exp) JX_M1(expm1, expm1) JX_M1(exp2, exp2) JX_M1(cbrt, cbrt)
JX_M1(erf, erf) JX_M1(erfc, erfc) JX_M1(tgamma, tgamma)
JX_M1(fabs, fabs) JX_M1(ceil, ceil) JX_M1(floor, floor) JX_M1(rint, rint) JX_M1(trunc, trunc)
JX_M2(atan2, atan2) JX_M2(hypot, hypot) JX_M2(copysign, copysign) JX_M2(nextafter, nextafter)
JX_M2(fmod, fmod) JX_M2(pow, pow)
JX_HD float ldexp(float x, int e) { return ::ldexpf(x, e); }
JX_HD double ldexp(double x, int e) { return ::ldexp(x, e); }
JX_HD float frexp(float x, int* e) { return ::frexpf(x, e); }
JX_HD double frexp(double x, int* e) { return ::frexp(x, e); }
JX_HD float fma(float x, float y, float z) { return ::fmaf(x, y, z); }
JX_HD double fma(double x, double y, double z) { return ::fma(x, y, z); }
#undef JX_M1
#undef JX_M2
#ifdef JX_CUDA
JX_HD float lgamma(float x) { return ::lgammaf(x); }
JX_HD double lgamma(double x) { return ::lgamma(x); }
#else
// The reentrant forms: plain lgamma writes the global `signgam` (a data race across threads).
JX_HD float lgamma(float x) { int s; return ::lgammaf_r(x, &s); }
JX_HD double lgamma(double x) { int s; return ::lgamma_r(x, &s); }
#endif
JX_HD bool isnan(float x) { return x != x; }
JX_HD bool isnan(double x) { return x != x; }
JX_HD bool isinf(float x) { return fabs(x) == inf<float>(); }
JX_HD bool isinf(double x) { return fabs(x) == inf<double>(); }
JX_HD bool isfinite(float x) { return fabs(x) < inf<float>(); }
JX_HD bool isfinite(double x) { return fabs(x) < inf<double>(); }
JX_HD bool signbit(float x) { return (fbits(x) >> 31) != 0; }
JX_HD bool signbit(double x) { return (dbits(x) >> 63) != 0; }
}  // namespace m

// @section half
// @dtypes half
// ---------------------------------------------------------------- 16-bit floats
// IEEE binary16 -> float (exact). On the GPU one conversion instruction does each direction,
// except for a NaN, which both backends convert by its bits (same sign and payload top).
JX_HD float half_to_float(u16 h) {
#if defined(JX_CUDA)
    // A NaN is widened by its bits, as below (the payload moves up, as the CPU does): PTX's cvt
    // gives the canonical NaN, and a NaN passed through float16 then differed from the CPU's.
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0u)
        return ffrom(((u32)(h & 0x8000u) << 16) | 0x7f800000u | ((u32)(h & 0x3ffu) << 13));
    float out;
    asm("cvt.f32.f16 %0, %1;" : "=f"(out) : "h"(h));
    return out;
#endif
    u32 sign = (u32)(h & 0x8000u) << 16;
    u32 e = (h >> 10) & 0x1fu;
    u32 mant = h & 0x3ffu;
    if (e == 0x1f) return ffrom(sign | 0x7f800000u | (mant << 13));
    if (e == 0) {
        float v = (float)mant * 5.9604644775390625e-8f;  // mant * 2^-24, exact
        return ffrom(sign | fbits(v));
    }
    return ffrom(sign | ((e + 112u) << 23) | (mant << 13));
}

// float -> binary16, round to nearest even; overflow gives inf; NaN stays a (quiet) NaN.
JX_HD u16 float_to_half(float f) {
#if defined(JX_CUDA)
    // A NaN keeps its sign and the top of its payload, quiet, as below: PTX's cvt gives 0x7fff
    // for every NaN, where the CPU backend (and NumPy) give 0x7e00 for the usual quiet NaN.
    if (f != f) {
        const u32 x = fbits(f);
        return (u16)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
    }
    u16 out;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(out) : "f"(f));
    return out;
#endif
    u32 x = fbits(f);
    u32 sign = (x >> 16) & 0x8000u;
    u32 ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // inf or NaN
        if (ax == 0x7f800000u) return (u16)(sign | 0x7c00u);
        return (u16)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) return (u16)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u) {                              // below 2^-14: subnormal half or 0
        if (ax <= 0x33000000u) return (u16)sign;         // <= 2^-25 rounds to 0 (ties to even)
        u32 e = ax >> 23;
        u32 mant = (ax & 0x7fffffu) | 0x800000u;
        u32 shift = 126u - e;  // 14..24
        u32 r = mant >> shift;
        u32 rem = mant & ((1u << shift) - 1u);
        u32 halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
        return (u16)(sign | r);
    }
    u32 h = (ax - 0x38000000u) >> 13;
    u32 rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return (u16)(sign | h);
}

// bfloat16 <-> float.
JX_HD float bf16_to_float(u16 h) { return ffrom((u32)h << 16); }
JX_HD u16 float_to_bf16(float f) {
#if defined(JX_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (f == f) {  // a NaN by its bits, below, as on the CPU (the cvt gives 0x7fff for all)
        u16 out;
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out) : "f"(f));
        return out;
    }
#endif
    u32 x = fbits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (u16)((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return (u16)(x >> 16);
}

// double -> float rounded to odd: rounding that to a format with at least two bits fewer
// mantissa (half, bfloat16) with round-to-nearest-even gives the correctly rounded result.
JX_HD float double_to_float_odd(double d) {
    float f = (float)d;
    if (m::isnan(d) || (double)f == d) return f;
    u32 b = fbits(f);
    if (b & 1u) return f;
    bool toward_zero = m::fabs((double)f) > m::fabs(d);
    return ffrom(toward_zero ? b - 1u : b + 1u);
}
JX_HD u16 double_to_half(double d) { return float_to_half(double_to_float_odd(d)); }
JX_HD u16 double_to_bf16(double d) { return float_to_bf16(double_to_float_odd(d)); }

// A value rounded through float16/bfloat16, given back as the float that carries it.
JX_HD float round_f16(float v) { return half_to_float(float_to_half(v)); }
JX_HD float round_f16(double v) { return half_to_float(double_to_half(v)); }
JX_HD float round_f16(bool v) { return v ? 1.0f : 0.0f; }
template <class T, class = en<is_int<T>::value>>
JX_HD float round_f16(T v) { return half_to_float(double_to_half((double)v)); }
template <class R> JX_HD float round_f16(cx<R> v) { return round_f16(v.re); }
JX_HD float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }
JX_HD float round_bf16(double v) { return bf16_to_float(double_to_bf16(v)); }
JX_HD float round_bf16(bool v) { return v ? 1.0f : 0.0f; }
template <class T, class = en<is_int<T>::value>>
JX_HD float round_bf16(T v) { return bf16_to_float(double_to_bf16((double)v)); }
template <class R> JX_HD float round_bf16(cx<R> v) { return round_bf16(v.re); }

// nextafter in the 16-bit formats (operands carried as float, exactly representable). NumPy's
// float16 loop gives x where x == y (nextafter(0.0, -0.0) is +0.0), not C's y.
JX_HD float nextafter_f16(float a, float b) {
    if (m::isnan(a) || m::isnan(b)) return a + b;
    if (a == b) return a;
    u16 h = float_to_half(a);
    if ((h & 0x7fffu) == 0) return half_to_float((u16)(b > 0 ? 0x0001u : 0x8001u));
    bool up = (a < b) == ((h & 0x8000u) == 0);  // away from zero
    return half_to_float((u16)(up ? h + 1u : h - 1u));
}
JX_HD float nextafter_bf16(float a, float b) {
    if (m::isnan(a) || m::isnan(b)) return a + b;
    if (a == b) return b;
    u16 h = float_to_bf16(a);
    if ((h & 0x7fffu) == 0) return bf16_to_float((u16)(b > 0 ? 0x0001u : 0x8001u));
    bool up = (a < b) == ((h & 0x8000u) == 0);
    return bf16_to_float((u16)(up ? h + 1u : h - 1u));
}
// NumPy's spacing of a float16 steps towards +inf from every value (so spacing(-1) is +2**-11,
// unlike float32/float64's -eps); inf and NaN give NaN, the largest finite value gives inf.
JX_HD float spacing_f16(float x) {
    if (m::isnan(x) || m::isinf(x)) return qnan<float>();
    return nextafter_f16(x, inf<float>()) - x;
}
// bfloat16 (not NumPy's) steps away from zero as float32 does; +-0 gives the smallest subnormal.
JX_HD float spacing_bf16(float x) {
    if (m::isnan(x) || m::isinf(x)) return qnan<float>();
    if (x == 0.0f) return bf16_to_float((u16)0x0001u);
    return nextafter_bf16(x, x > 0.0f ? inf<float>() : -inf<float>()) - x;
}

// @section base
// ---------------------------------------------------------------- casts between register types
namespace detail {
template <class To, class From, class Enable = void> struct caster;

// to bool: v != 0
template <class From> struct caster<bool, From, en<is_real<From>::value>> {
    static JX_HD bool go(From v) { return v != From(0); }
};
template <class R> struct caster<bool, cx<R>, void> {
    static JX_HD bool go(cx<R> v) { return v.re != R(0) || v.im != R(0); }
};
// bool/int -> int: wraps (two's complement truncation or extension)
template <class To, class From>
struct caster<To, From, en<is_int<To>::value && (is_int<From>::value || is_bool<From>::value)>> {
    static JX_HD To go(From v) { return (To)v; }
};
// float -> int: toward zero, NaN -> 0, saturating
template <class To, class From>
struct caster<To, From, en<is_int<To>::value && is_flt<From>::value>> {
    static JX_HD To go(From v) {
        if (v != v) return To(0);
        constexpr int bits = int_traits<To>::bits;
        if (int_traits<To>::is_signed) {
            const From lim = (From)((u64)1 << (bits - 1));  // 2^(bits-1), exact in float and double
            if (v >= lim) return int_traits<To>::max();
            if (v <= -lim) return int_traits<To>::min();
        } else {
            const From lim = bits == 64 ? (From)18446744073709551616.0 : (From)((u64)1 << (bits & 63));
            if (v >= lim) return int_traits<To>::max();
            if (v <= From(-1)) return To(0);
        }
        return (To)v;
    }
};
// anything real -> float/double
template <class To, class From>
struct caster<To, From, en<is_flt<To>::value && is_real<From>::value>> {
    static JX_HD To go(From v) { return (To)v; }
};
// complex -> real: the real part
template <class To, class R>
struct caster<To, cx<R>, en<is_intf<To>::value>> {
    static JX_HD To go(cx<R> v) { return caster<To, R>::go(v.re); }
};
// real -> complex, complex -> complex
template <class S, class From>
struct caster<cx<S>, From, en<is_real<From>::value>> {
    static JX_HD cx<S> go(From v) { return cx<S>{caster<S, From>::go(v), S(0)}; }
};
template <class S, class R>
struct caster<cx<S>, cx<R>, void> {
    static JX_HD cx<S> go(cx<R> v) { return cx<S>{(S)v.re, (S)v.im}; }
};
}  // namespace detail

template <class To, class From>
JX_HD To cast(From v) { return detail::caster<To, From>::go(v); }

// @section complex
// @dtypes complex
// ---------------------------------------------------------------- complex helpers
template <class R> JX_HD cx<R> cadd(cx<R> a, cx<R> b) { return cx<R>{a.re + b.re, a.im + b.im}; }
template <class R> JX_HD cx<R> csub(cx<R> a, cx<R> b) { return cx<R>{a.re - b.re, a.im - b.im}; }
// The product as NumPy's complex multiply loop computes it on CPUs with FMA (x86-64-v3, as
// GPUs): one rounding per part.
template <class R> JX_HD cx<R> cmul(cx<R> a, cx<R> b) {
    return cx<R>{m::fma(a.re, b.re, -(a.im * b.im)), m::fma(a.re, b.im, a.im * b.re)};
}
// The textbook product (NumPy's scalar code: the integer powers of power()).
template <class R> JX_HD cx<R> cmul_plain(cx<R> a, cx<R> b) {
    return cx<R>{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// C99 Annex G's product (G.5.1): the textbook one, with infinities recovered where it gives
// NaN + iNaN (as the C compiler's complex multiply, which the C library's cpow uses).
template <class R> JX_HD cx<R> cmul_annex_g(cx<R> x, cx<R> y) {
    R a = x.re, b = x.im, c = y.re, d = y.im;
    const R ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    R re = ac - bd, im = ad + bc;
    if (re != re && im != im) {
        bool again = false;
        if (m::isinf(a) || m::isinf(b)) {
            a = m::copysign(m::isinf(a) ? R(1) : R(0), a);
            b = m::copysign(m::isinf(b) ? R(1) : R(0), b);
            if (c != c) c = m::copysign(R(0), c);
            if (d != d) d = m::copysign(R(0), d);
            again = true;
        }
        if (m::isinf(c) || m::isinf(d)) {
            c = m::copysign(m::isinf(c) ? R(1) : R(0), c);
            d = m::copysign(m::isinf(d) ? R(1) : R(0), d);
            if (a != a) a = m::copysign(R(0), a);
            if (b != b) b = m::copysign(R(0), b);
            again = true;
        }
        if (!again && (m::isinf(ac) || m::isinf(bd) || m::isinf(ad) || m::isinf(bc))) {
            if (a != a) a = m::copysign(R(0), a);
            if (b != b) b = m::copysign(R(0), b);
            if (c != c) c = m::copysign(R(0), c);
            if (d != d) d = m::copysign(R(0), d);
            again = true;
        }
        if (again) {
            re = inf<R>() * (a * c - b * d);
            im = inf<R>() * (a * d + b * c);
        }
    }
    return cx<R>{re, im};
}
template <class R> JX_HD cx<R> cscale(cx<R> a, R s) { return cx<R>{a.re * s, a.im * s}; }
// Smith's algorithm (what NumPy uses), avoiding overflow in |b|^2.
template <class R> JX_HD cx<R> cdiv(cx<R> a, cx<R> b) {
    R abr = m::fabs(b.re), abi = m::fabs(b.im);
    if (abr >= abi) {
        if (abr == R(0) && abi == R(0)) return cx<R>{a.re / abr, a.im / abi};
        R rat = b.im / b.re;
        R scl = R(1) / (b.re + b.im * rat);
        return cx<R>{(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
    }
    R rat = b.re / b.im;
    R scl = R(1) / (b.im + b.re * rat);
    return cx<R>{(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
}
template <class R> JX_HD R cabs(cx<R> a) { return m::hypot(a.re, a.im); }
template <class R> JX_HD cx<R> ctimes_i(cx<R> z) { return cx<R>{-z.im, z.re}; }      // i z
template <class R> JX_HD cx<R> ctimes_mi(cx<R> z) { return cx<R>{z.im, -z.re}; }     // -i z
template <class R> JX_HD cx<R> csinh(cx<R> z);
// sin z = -i sinh(i z); a non-finite real part with an infinite imaginary part gives
// NaN + i inf (Annex G leaves the sign open; glibc's choice).
template <class R> JX_HD cx<R> csin(cx<R> z) {
    if (!m::isfinite(z.re) && m::isinf(z.im)) return cx<R>{qnan<R>(), inf<R>()};
    return ctimes_mi(csinh(ctimes_i(z)));
}

// The complex functions follow C99 Annex G (G.6) on infinities, NaNs and signed zeros, as
// NumPy does (through the C library's csqrt, cexp, clog, csinh, ... on Linux); where Annex G
// leaves a sign unspecified, the sign glibc gives. Finite values are computed without
// spurious overflow or cancellation where the textbook formula has them.
template <class R> struct climits;
template <> struct climits<float> {
    static JX_HD float log_max() { return 88.7228390f; }      // log(FLT_MAX)
    static JX_HD float big() { return 1.0e18f; }               // |z| past which z*z overflows soon
    static JX_HD float small() { return 1.0e-18f; }            // |z| below which z*z underflows
    static JX_HD float tanh_big() { return 9.0f; }             // tanh(x) rounds to 1 past this
};
template <> struct climits<double> {
    static JX_HD double log_max() { return 709.782712893384; }
    static JX_HD double big() { return 1.0e150; }
    static JX_HD double small() { return 1.0e-150; }
    static JX_HD double tanh_big() { return 22.0; }
};
template <class R> JX_HD R c_pi() { return R(3.14159265358979323846264338327950288); }
template <class R> JX_HD R c_pi_2() { return R(1.57079632679489661923132169163975144); }
template <class R> JX_HD R c_pi_4() { return R(0.785398163397448309615660845819875721); }
template <class R> JX_HD R c_3pi_4() { return R(2.35619449019234492884698253745962716); }
template <class R> JX_HD R c_ln2() { return R(0.693147180559945309417232121458176568); }

template <class R> JX_HD cx<R> cexp(cx<R> z) {
    const R x = z.re, y = z.im;
    if (!m::isfinite(x) || !m::isfinite(y)) {
        if (m::isnan(x)) return y == R(0) ? cx<R>{x, y} : cx<R>{qnan<R>(), qnan<R>()};
        if (m::isinf(x)) {
            if (x < R(0)) {
                if (!m::isfinite(y)) return cx<R>{R(0), m::copysign(R(0), y)};  // -inf + i(inf|nan): +0 +- i0
                return cx<R>{R(0) * m::cos(y), R(0) * m::sin(y)};
            }
            if (y == R(0)) return cx<R>{x, y};
            if (!m::isfinite(y)) return cx<R>{x, qnan<R>()};
            return cx<R>{x * m::cos(y), x * m::sin(y)};
        }
        return cx<R>{qnan<R>(), qnan<R>()};  // finite x, y inf or nan
    }
    if (y == R(0)) return cx<R>{m::exp(x), y};
    const R c = m::cos(y), s = m::sin(y);
    if (x > climits<R>::log_max()) {  // exp(x) overflows; exp(x) cos(y) may not
        const R h = m::exp(x * R(0.5));
        return cx<R>{(h * c) * h, (h * s) * h};
    }
    const R e = m::exp(x);
    return cx<R>{e * c, e * s};
}

// a + b = s + e exactly (Knuth's two-sum).
template <class R> JX_HD R two_sum(R a, R b, R& e) {
    const R s = a + b, bb = s - a;
    e = (a - (s - bb)) + (b - bb);
    return s;
}
// x^2 + c*x + y^2 (c is 0 or 2) - d (d is 0 or 1), accurately where the terms cancel: the
// squares split exactly with FMA, the sum compensated (a float in double precision).
template <class R> JX_HD R csum_squares(R x, R y, R c, R d) {
    const R hx = x * x, lx = m::fma(x, x, -hx), hy = y * y, ly = m::fma(y, y, -hy);
    R e1, e2, e3;
    R s = two_sum(hx, -d, e1);
    s = two_sum(s, hy, e2);
    s = two_sum(s, c * x, e3);  // c * x is exact (c is 0 or 2)
    return s + (((e1 + e2) + e3) + (lx + ly));
}
template <> JX_HD float csum_squares<float>(float x, float y, float c, float d) {
    const double X = x, Y = y;  // exact squares and sum, rounded once
    return (float)((X * X - (double)d) + (Y * Y + (double)c * X));
}

// log|x + iy| for finite x, y >= 0: near 1 from x^2 + y^2 - 1 computed accurately (no
// rounding of |z| to 1 first), and without overflow where |z| passes the largest float.
template <class R> JX_HD R clog_abs(R ax, R ay) {
    const R big = ax > ay ? ax : ay, lit = ax > ay ? ay : ax;
    if (big > R(0.5) && big < R(2)) return R(0.5) * m::log1p(csum_squares(big, lit, R(0), R(1)));
    if (big > climits<R>::big()) {
        const R r = lit / big;
        return m::log(big) + R(0.5) * m::log1p(r * r);
    }
    return m::log(m::hypot(ax, ay));
}

template <class R> JX_HD cx<R> clog(cx<R> z);
// log(1 + z). Near 0 the real part is log1p(x (2 + x) + y^2) / 2, from z itself: NumPy's
// log(|1 + z|) rounds 1 + z first and loses those digits (log1p(4e-8 - 5e-8j) in complex64 has
// the real part 4e-8, where NumPy gives 0).
template <class R> JX_HD cx<R> clog1p(cx<R> z) {
    const R x = z.re, y = z.im;
    if (m::fabs(x) < R(0.5) && m::fabs(y) < R(0.5))
        return cx<R>{R(0.5) * m::log1p(csum_squares(x, y, R(2), R(0))), m::atan2(y, x + R(1))};
    return clog(cx<R>{x + R(1), y});
}

template <class R> JX_HD cx<R> clog(cx<R> z) {
    const R ax = m::fabs(z.re), ay = m::fabs(z.im);
    const R arg = m::atan2(z.im, z.re);
    if (m::isinf(ax) || m::isinf(ay)) return cx<R>{inf<R>(), arg};
    if (m::isnan(ax) || m::isnan(ay)) return cx<R>{qnan<R>(), qnan<R>()};
    return cx<R>{clog_abs(ax, ay), arg};
}

template <class R> JX_HD cx<R> csqrt(cx<R> z) {
    const R x = z.re, y = z.im;
    if (m::isinf(y)) return cx<R>{inf<R>(), y};
    if (m::isnan(x)) return cx<R>{x, m::isnan(y) ? y : qnan<R>()};
    if (m::isinf(x)) {
        if (x > R(0)) return cx<R>{x, m::isnan(y) ? y : m::copysign(R(0), y)};
        return cx<R>{m::isnan(y) ? m::fabs(y - y) : R(0), m::copysign(inf<R>(), y)};
    }
    if (m::isnan(y)) return cx<R>{qnan<R>(), qnan<R>()};
    if (x == R(0) && y == R(0)) return cx<R>{R(0), y};
    // t = sqrt((|x| + |z|) / 2), scaled so that neither overflows nor loses subnormal bits.
    R ax = m::fabs(x), ay = m::fabs(y), scale = R(1);
    if (ax > climits<R>::big() || ay > climits<R>::big()) {
        ax *= R(0.25), ay *= R(0.25), scale = R(2);
    } else if (ax < climits<R>::small() && ay < climits<R>::small()) {
        ax *= R(4611686018427387904.0), ay *= R(4611686018427387904.0);  // 2^62, subnormals made normal
        scale = R(1.0 / 2147483648.0);                                   // 2^-31 = sqrt(2^-62)
    }
    const R t = m::sqrt((ax + m::hypot(ax, ay)) * R(0.5));
    const R re = t * scale, half = ay / (R(2) * t) * scale;
    if (x >= R(0)) return cx<R>{re, m::copysign(half, y)};
    return cx<R>{half, m::copysign(re, y)};
}

// sinh(x) cos(y) + i cosh(x) sin(y), and cosh(x) cos(y) + i sinh(x) sin(y).
template <class R> JX_HD cx<R> csinh(cx<R> z) {
    const R x = z.re, y = z.im;
    if (m::isfinite(x) && m::isfinite(y)) {
        if (y == R(0)) return cx<R>{m::sinh(x), y};
        const R c = m::cos(y), s = m::sin(y);
        if (m::fabs(x) > climits<R>::log_max()) {
            const R h = m::exp(m::fabs(x) * R(0.5));
            return cx<R>{m::copysign(R(1), x) * ((h * (R(0.5) * c)) * h), (h * (R(0.5) * s)) * h};
        }
        return cx<R>{m::sinh(x) * c, m::cosh(x) * s};
    }
    if (m::isnan(x)) return y == R(0) ? cx<R>{x, y} : cx<R>{x, qnan<R>()};
    if (m::isinf(x)) {
        if (y == R(0)) return cx<R>{x, y};
        if (!m::isfinite(y)) return cx<R>{inf<R>(), qnan<R>()};  // +-inf + iNaN: glibc's +inf
        return cx<R>{x * m::cos(y), inf<R>() * m::sin(y)};
    }
    // finite x, y inf or nan
    if (x == R(0)) return cx<R>{x, qnan<R>()};
    return cx<R>{qnan<R>(), qnan<R>()};
}

template <class R> JX_HD cx<R> ccosh(cx<R> z) {
    const R x = z.re, y = z.im;
    if (m::isfinite(x) && m::isfinite(y)) {
        if (y == R(0)) return cx<R>{m::cosh(x), m::copysign(R(0), x) * y};
        const R c = m::cos(y), s = m::sin(y);
        if (m::fabs(x) > climits<R>::log_max()) {
            const R h = m::exp(m::fabs(x) * R(0.5));
            return cx<R>{(h * (R(0.5) * c)) * h, m::copysign(R(1), x) * ((h * (R(0.5) * s)) * h)};
        }
        return cx<R>{m::cosh(x) * c, m::sinh(x) * s};
    }
    if (m::isnan(x)) return y == R(0) ? cx<R>{x, y} : cx<R>{x, qnan<R>()};
    if (m::isinf(x)) {
        if (y == R(0)) return cx<R>{inf<R>(), m::copysign(R(0), x) * y};
        if (!m::isfinite(y)) return cx<R>{inf<R>(), qnan<R>()};
        return cx<R>{inf<R>() * m::cos(y), x * m::sin(y)};
    }
    // finite x, y inf or nan
    if (x == R(0)) return cx<R>{qnan<R>(), R(0)};
    return cx<R>{qnan<R>(), qnan<R>()};
}

template <class R> JX_HD cx<R> ctanh(cx<R> z) {
    const R x = z.re, y = z.im;
    if (m::isnan(x)) return y == R(0) ? cx<R>{x, y} : cx<R>{x, qnan<R>()};
    if (m::isinf(x)) {
        const R one = m::copysign(R(1), x);
        if (!m::isfinite(y)) return cx<R>{one, m::copysign(R(0), y)};
        return cx<R>{one, m::copysign(R(0), m::sin(y) * m::cos(y))};  // the sign of sin(2y)
    }
    if (!m::isfinite(y)) return cx<R>{x == R(0) ? x : qnan<R>(), qnan<R>()};
    if (m::fabs(x) > climits<R>::tanh_big()) {
        // tanh(x) is +-1 in this precision; the imaginary part 4 sin(y) cos(y) e^(-2|x|).
        const R e = m::exp(R(-2) * m::fabs(x));
        return cx<R>{m::copysign(R(1), x), R(4) * m::sin(y) * m::cos(y) * e};
    }
    // Kahan: with t = tan(y), b = 1 + t^2, s = sinh(x), r = sqrt(1 + s^2):
    // tanh(z) = (b r s + i t) / (1 + b s^2).
    const R t = m::tan(y), b = R(1) + t * t, s = m::sinh(x), r = m::sqrt(R(1) + s * s);
    const R d = R(1) + b * s * s;
    if (m::isinf(t)) return cx<R>{r / s, R(1) / t};
    return cx<R>{(b * r * s) / d, t / d};
}

// asin and acos of x + iy with x, y >= 0 finite (Hull, Fairgrieve and Tang, 1997): both from
// A = (|z+1| + |z-1|) / 2 and B = x / A, choosing for each range the form without cancellation.
// Gives asin's real part, acos's real part and the common |imaginary part|.
template <class R> struct casin_parts {
    R asin_re, acos_re, im;
};
template <class R> JX_HD casin_parts<R> casin_core(R x, R y) {
    casin_parts<R> p;
    if (x > climits<R>::big() || y > climits<R>::big()) {
        // |z| so large that asin(z) = -i log(2iz) to working precision.
        p.asin_re = m::atan2(x, y);
        p.acos_re = m::atan2(y, x);
        p.im = clog_abs(x, y) + c_ln2<R>();
        return p;
    }
    if (x < climits<R>::small() && y < climits<R>::small()) {
        p.asin_re = x;
        p.acos_re = c_pi_2<R>() - x;
        p.im = y;
        return p;
    }
    const R r = m::hypot(x + R(1), y), s = m::hypot(x - R(1), y);
    const R A = R(0.5) * (r + s), B = x / A;
    const R y2 = y * y;
    const R bcross = R(0.6417), across = R(1.5);
    if (B <= bcross) {
        p.asin_re = m::asin(B);
        p.acos_re = m::acos(B);
    } else if (x <= R(1)) {
        const R d = m::sqrt(R(0.5) * (A + x) * (y2 / (r + (x + R(1))) + (s + (R(1) - x))));
        p.asin_re = m::atan(x / d);
        p.acos_re = m::atan(d / x);
    } else {
        const R apx = A + x;
        const R d = y * m::sqrt(R(0.5) * (apx / (r + (x + R(1))) + apx / (s + (x - R(1)))));
        p.asin_re = m::atan(x / d);
        p.acos_re = m::atan(d / x);
    }
    if (x < R(1) && y < climits<R>::small()) {
        // y^2 underflows: asin(x + iy) = asin(x) + i y / sqrt(1 - x^2) to working precision.
        p.asin_re = m::asin(x);
        p.acos_re = m::acos(x);
        p.im = y / m::sqrt((R(1) - x) * (R(1) + x));
        return p;
    }
    if (A <= across) {
        R am1;
        if (x < R(1)) am1 = R(0.5) * (y2 / (r + (x + R(1))) + y2 / (s + (R(1) - x)));
        else am1 = R(0.5) * (y2 / (r + (x + R(1))) + (s + (x - R(1))));
        p.im = m::log1p(am1 + m::sqrt(am1 * (A + R(1))));
    } else {
        p.im = m::log(A + m::sqrt(A * A - R(1)));
    }
    return p;
}

// asinh(x + iy) = i asin(y - ix); asin z = -i asinh(iz) (Annex G defines casin so).
template <class R> JX_HD cx<R> casinh(cx<R> z) {
    const R x = z.re, y = z.im;
    if (!m::isfinite(x) || !m::isfinite(y)) {
        if (m::isinf(x)) {
            if (m::isnan(y)) return cx<R>{x, y};
            return cx<R>{x, m::isinf(y) ? m::copysign(c_pi_4<R>(), y) : m::copysign(R(0), y)};
        }
        if (m::isinf(y)) return cx<R>{m::copysign(inf<R>(), x), m::isnan(x) ? x : m::copysign(c_pi_2<R>(), y)};
        if (m::isnan(x)) return cx<R>{x, y == R(0) ? y : qnan<R>()};
        return cx<R>{qnan<R>(), qnan<R>()};  // finite x, NaN y
    }
    const casin_parts<R> p = casin_core(m::fabs(y), m::fabs(x));
    return cx<R>{m::copysign(p.im, x), m::copysign(p.asin_re, y)};
}
template <class R> JX_HD cx<R> casin(cx<R> z) {
    if (m::isnan(z.re) || m::isnan(z.im)) {
        if (z.re == R(0)) return z;
        if (m::isinf(z.re) || m::isinf(z.im)) return cx<R>{qnan<R>(), m::copysign(inf<R>(), z.im)};
        return cx<R>{qnan<R>(), qnan<R>()};
    }
    const cx<R> w = casinh(cx<R>{-z.im, z.re});
    return cx<R>{w.im, -w.re};
}
// acos z = pi/2 - asin z for the special values (as glibc); from the common core otherwise.
template <class R> JX_HD cx<R> cacos(cx<R> z) {
    const R x = z.re, y = z.im;
    if (!m::isfinite(x) || !m::isfinite(y) || (x == R(0) && y == R(0))) {
        const cx<R> w = casin(z);
        const R re = c_pi_2<R>() - w.re;
        return cx<R>{re == R(0) ? R(0) : re, -w.im};
    }
    const casin_parts<R> p = casin_core(m::fabs(x), m::fabs(y));
    const R re = m::signbit(x) ? c_pi<R>() - p.acos_re : p.acos_re;
    return cx<R>{re, m::signbit(y) ? p.im : -p.im};
}
// acosh z from acos z: the real part |Im acos z|, the imaginary part Re acos z with z's sign.
template <class R> JX_HD cx<R> cacosh(cx<R> z) {
    const cx<R> w = cacos(z);
    return cx<R>{m::fabs(w.im), m::copysign(w.re, z.im)};
}

template <class R> JX_HD cx<R> catanh(cx<R> z) {
    const R x = z.re, y = z.im, ax = m::fabs(x), ay = m::fabs(y);
    if (!m::isfinite(x) || !m::isfinite(y)) {
        if (m::isinf(y)) return cx<R>{m::copysign(R(0), x), m::copysign(c_pi_2<R>(), y)};
        if (m::isinf(x)) return cx<R>{m::copysign(R(0), x), m::isnan(y) ? y : m::copysign(c_pi_2<R>(), y)};
        if (m::isnan(x)) return cx<R>{x, qnan<R>()};
        return cx<R>{x == R(0) ? x : qnan<R>(), qnan<R>()};  // finite x, NaN y
    }
    if (ay == R(0) && ax <= R(1)) {
        // On the real axis: atanh(x) (+-inf at +-1), keeping the sign of the zero.
        return cx<R>{ax == R(1) ? m::copysign(inf<R>(), x) : m::atanh(x), y};
    }
    if (ax > climits<R>::big() || ay > climits<R>::big()) {
        // Re 1/z = x / |z|^2 to working precision (|z|^2 from the parts over the larger one),
        // and the imaginary part +-pi/2.
        const R big = ax > ay ? ax : ay, u = ax / big, v = ay / big;
        return cx<R>{m::copysign((u / (u * u + v * v)) / big, x), m::copysign(c_pi_2<R>(), y)};
    }
    if (ax < climits<R>::small() && ay < climits<R>::small()) return z;
    // re = log1p(4x / ((1 - x)^2 + y^2)) / 4, im = atan2(2y, (1 - x)(1 + x) - y^2) / 2; near
    // z = 1, where (1 - x)^2 + y^2 underflows, the logarithm of the quotient from its parts.
    const R omx = R(1) - ax;
    const R d = m::hypot(omx, ay);
    const R re = d < climits<R>::small() ? R(0.25) * (m::log(R(4) * ax) - R(2) * m::log(d))
                                         : R(0.25) * m::log1p(R(4) * ax / (d * d));
    const R im = R(0.5) * m::atan2(R(2) * ay, omx * (R(1) + ax) - ay * ay);
    return cx<R>{m::copysign(re, x), m::copysign(im, y)};
}

// @section power
// Integer power by squaring, wrapping.
template <class T> JX_HD T ipow(T a, T b) {
    using W = typename int_traits<T>::wide;
    if (int_traits<T>::is_signed && b < T(0)) {
        if (a == T(1)) return T(1);
        if (a == T(-1)) return (b & T(1)) ? T(-1) : T(1);
        return T(0);
    }
    W r = 1, x = (W)a;
    u64 e = (u64)b;
    while (e) {
        if (e & 1u) r = (W)(r * x);
        x = (W)(x * x);
        e >>= 1;
    }
    return (T)r;
}

// @section complex
// Lexicographic complex order with NaN propagation (NumPy's maximum/minimum on complex).
template <class R> JX_HD bool chasnan(cx<R> a) { return m::isnan(a.re) || m::isnan(a.im); }
template <class R> JX_HD bool cge(cx<R> a, cx<R> b) { return a.re > b.re || (a.re == b.re && a.im >= b.im); }
template <class R> JX_HD bool cle(cx<R> a, cx<R> b) { return a.re < b.re || (a.re == b.re && a.im <= b.im); }

// @section strings
// @dtypes strings
// ---------------------------------------------------------------- strings
// A string as the string ops read it: `n` code units at `p`, never written. sb: bytes (NumPy's S),
// units compared unsigned; su: UCS-4 code points (NumPy's U); s8: UTF-8 (Arrow's string), whose
// byte order is its code points' order. A fixed-width S or U element arrives without its
// trailing NULs (the loaders cut them, as NumPy does). No string op reads p[n] or past it.
struct sb { const u8* p; i64 n; };
struct su { const u32* p; i64 n; };
struct s8 { const u8* p; i64 n; };

// The columns a CUDA kernel reads strings from, passed by value (codegen's string_accessor):
// column[i] is element i's string, i in elements of the array's layout. S and U elements of `w`
// bytes lose their trailing NULs; an Arrow column's element i is c[o[i], o[i + 1]).
struct col_sb {
    const u8* p;
    i64 w;
    JX_HD sb operator[](i64 i) const {
        const u8* q = p + i * w;
        i64 n = w;
        while (n > 0 && q[n - 1] == 0) --n;
        return sb{q, n};
    }
};
struct col_su {
    const u8* p;
    i64 w;
    JX_HD su operator[](i64 i) const {
        const u32* q = (const u32*)(p + i * w);
        i64 n = w / 4;
        while (n > 0 && q[n - 1] == 0u) --n;
        return su{q, n};
    }
};
template <class O> struct col_utf8 {
    const O* o;
    const u8* c;
    JX_HD s8 operator[](i64 i) const {
        const i64 b = (i64)o[i];
        return s8{c + b, (i64)o[i + 1] - b};
    }
};
using col_s8 = col_utf8<i32>;   // Arrow string: int32 offsets
using col_s8l = col_utf8<i64>;  // Arrow large_string: int64 offsets

namespace str {
template <class T> struct is_str { static constexpr bool value = false; };
template <> struct is_str<sb> { static constexpr bool value = true; };
template <> struct is_str<su> { static constexpr bool value = true; };
template <> struct is_str<s8> { static constexpr bool value = true; };
template <class A, class B> struct both { static constexpr bool value = is_str<A>::value && is_str<B>::value; };

// The next code point of UTF-8 at p[i] (i < n), advancing i; a sequence cut by the end reads
// what is there (columns are checked to be UTF-8 when imported; this only keeps reads in bounds).
JX_HD u32 utf8_next(const u8* p, i64 n, i64& i) {
    const u32 c = p[i++];
    if (c < 0x80u) return c;
    int extra = c >= 0xF0u ? 3 : c >= 0xE0u ? 2 : 1;
    u32 cp = c & (0x3Fu >> extra);
    for (; extra > 0 && i < n; --extra) cp = (cp << 6) | (p[i++] & 0x3Fu);
    return cp;
}
// Code points of UTF-8 bytes [0, n): the bytes that start one (all but the continuation bytes,
// 10xxxxxx; on the host eight bytes at a time).
JX_HD i64 utf8_count(const u8* p, i64 n) {
    i64 c = 0, i = 0;
#ifndef JX_CUDA
    for (; i + 8 <= n; i += 8) {
        u64 w;
        std::memcpy(&w, p + i, 8);
        const u64 cont = (w & ~(w << 1) & 0x8080808080808080ULL) >> 7;  // bit 7 set, bit 6 clear
        c += 8 - (i64)((cont * 0x0101010101010101ULL) >> 56);            // (their sum: no popcount needed)
    }
#endif
    for (; i < n; ++i) c += (p[i] & 0xC0u) != 0x80u;
    return c;
}

// One code point at a time, for the ops between su and s8.
struct cursor {
    const u8* b;
    const u32* w;
    i64 n, i;
    JX_HD bool done() const { return i >= n; }
    JX_HD u32 next() { return w ? w[i++] : utf8_next(b, n, i); }
};
JX_HD cursor cur(su s) { return cursor{nullptr, s.p, s.n, 0}; }
JX_HD cursor cur(s8 s) { return cursor{s.p, nullptr, s.n, 0}; }
JX_HD i64 points(su s) { return s.n; }
JX_HD i64 points(s8 s) { return utf8_count(s.p, s.n); }
JX_HD i64 points(sb s) { return s.n; }

// Lexicographic order of two strings of one unit type: -1, 0, 1 (a prefix is less).
template <class U> JX_HD int compare_units(const U* a, i64 na, const U* b, i64 nb) {
    const i64 m = na < nb ? na : nb;
#ifndef JX_CUDA
    if (sizeof(U) == 1) {
        const int c = m > 0 ? std::memcmp(a, b, (size_t)m) : 0;
        if (c != 0) return c < 0 ? -1 : 1;
        return na == nb ? 0 : na < nb ? -1 : 1;
    }
#endif
    for (i64 k = 0; k < m; ++k)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return na == nb ? 0 : na < nb ? -1 : 1;
}
template <class U> JX_HD bool equal_units(const U* a, const U* b, i64 n) {
#ifndef JX_CUDA
    if (sizeof(U) == 1) return n == 0 || std::memcmp(a, b, (size_t)n) == 0;
#endif
    for (i64 k = 0; k < n; ++k)
        if (a[k] != b[k]) return false;
    return true;
}
// The first position of s (m units) in h (n units), or -1.
template <class U> JX_HD i64 find_units(const U* h, i64 n, const U* s, i64 m) {
    if (m == 0) return 0;
    if (m > n) return -1;
#ifndef JX_CUDA
    if (sizeof(U) == 1) {
        const void* f = ::memmem(h, (size_t)n, s, (size_t)m);
        return f ? (i64)((const u8*)f - (const u8*)h) : -1;
    }
#endif
    const U first = s[0];
#ifdef JX_CUDA
    // 32-bit places for rows under 2 GiB: one instruction a compare and an increment instead of
    // two. contains() over 30M rows on an H100 took 0.553 ms against 0.573 (sum of it 0.66 against
    // 0.73), interleaved in one call (bench/results/2026-12-06e-h100-strings-find.txt). Aligned
    // words compared four bytes at once (__vcmpeq4) were slower still: 0.96 ms against 0.55
    // (bench/results/2026-12-06g-h100-strings-swar.txt).
    if (n < 0x7fffffff) {
        const int nn = (int)n, mm = (int)m;
        for (int i = 0; i + mm <= nn; ++i) {
            if (h[i] != first) continue;
            int k = 1;
            while (k < mm && h[i + k] == s[k]) ++k;
            if (k == mm) return i;
        }
        return -1;
    }
#endif
    for (i64 i = 0; i + m <= n; ++i) {
        if (h[i] != first) continue;
        i64 k = 1;
        while (k < m && h[i + k] == s[k]) ++k;
        if (k == m) return i;
    }
    return -1;
}

#ifdef JX_CUDA
// contains() of one-byte units (S, Arrow UTF-8) a warp at a time, where the warp's 32 rows lie
// in order in one buffer with gaps of at most 64 bytes (an Arrow column, an S array, a step-2
// view) and share one needle of 1 to 16 bytes: each lane loads 16 aligned bytes of the rows'
// range (one coalesced 16-byte load, the edges byte by byte inside the range), marks the places
// of the 16 where the needle starts (its bytes xor-ed into the shifted words, then a zero-byte
// test: four places an instruction), and each lane tests the marks of its own row's places,
// taken from the lane that holds them. The row-a-thread search below loads each row a byte at
// a time from 32 rows at once (several cache lines an instruction) and runs as long as the
// warp's longest row; this reads each byte once, 512 a warp a step. Returns false (the caller
// searches its row itself) where the warp is not whole or the rows or needle do not fit.
// Taken only with -DJX_CONTAINS_WARP (JITEXPR_NVRTC_OPTIONS, or RuntimeOptions::nvrtc_options):
// on an H100 it ran at 20% of a device copy's rate against the byte loop's 36%
// (bench/results/2026-12-07h-h100-session.txt). -DJX_CONTAINS_WHOLE_BLOCKS is the next try (the
// edge lanes' sixteen predicated byte loads made one load); if bench_strings does not show it
// past the byte loop, the form goes.
__device__ __forceinline__ uint4 load16_in(unsigned long long a, unsigned long long lo, unsigned long long hi) {
#ifdef JX_CONTAINS_WHOLE_BLOCKS
    // The aligned block whole wherever it holds a byte of the range: it cannot leave that
    // byte's page, and the bytes outside the range are never tested (a row's places end where
    // the needle would pass the row). compute-sanitizer's memcheck may still call the read out
    // of bounds where an allocation does not end on a 16-byte boundary.
    if (a < hi && a + 16 > lo) return __ldg((const uint4*)a);
    return make_uint4(0u, 0u, 0u, 0u);
#else
    if (a >= lo && a + 16 <= hi) return __ldg((const uint4*)a);  // a is a multiple of 16
    u32 w[4] = {0u, 0u, 0u, 0u};
    if (a < hi && a + 16 > lo) {
#pragma unroll
        for (int k = 0; k < 16; ++k)
            if (a + k >= lo && a + k < hi) w[k >> 2] |= (u32)__ldg((const u8*)(a + k)) << (8 * (k & 3));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
#endif
}
__device__ __forceinline__ bool warp_contains(const u8* p, i64 n, const u8* s, i64 m, bool& found) {
#ifndef JX_CONTAINS_WARP
    (void)p, (void)n, (void)s, (void)m, (void)found;
    return false;
#else
    const unsigned full = 0xffffffffu;
    if (__activemask() != full) return false;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const unsigned long long hp = (unsigned long long)p, he = hp + (unsigned long long)n;
    const unsigned long long sp = (unsigned long long)s;
    const unsigned long long prev_end = __shfl_up_sync(full, he, 1);
    const i64 m0 = __shfl_sync(full, m, 0);
    const bool fits = sp == __shfl_sync(full, sp, 0) && m == m0 && m >= 1 && m <= 16 &&
                      (lane == 0 || (hp >= prev_end && hp - prev_end <= 64));
    if (!__all_sync(full, fits)) return false;
    const unsigned long long lo = __shfl_sync(full, hp, 0), hi = __shfl_sync(full, he, 31);
    const int nm = (int)m0;
    u32 rep[16];  // needle byte j in each byte of rep[j]
#pragma unroll
    for (int j = 0; j < 16; ++j) rep[j] = j < nm ? (u32)__ldg(s + j) * 0x01010101u : 0u;
    const unsigned long long base = lo & ~15ull;
    const i64 first = (i64)(hp - base), last = (i64)(he - base) - m0 + 1;  // this row's places: [first, last)
    const i64 span = (i64)(hi - base);
    bool hit = false;
    for (i64 w0 = 0; w0 < span; w0 += 512) {  // the same steps in every lane
        const unsigned long long a = base + (unsigned long long)w0 + 16ull * lane;
        const uint4 c = load16_in(a, lo, hi);
        uint4 d = make_uint4(__shfl_down_sync(full, c.x, 1), __shfl_down_sync(full, c.y, 1),
                             __shfl_down_sync(full, c.z, 1), __shfl_down_sync(full, c.w, 1));
        if (lane == 31 && nm > 1) d = load16_in(a + 16, lo, hi);
        const u32 W[8] = {c.x, c.y, c.z, c.w, d.x, d.y, d.z, d.w};
        u32 bits = 0;  // bit k: the needle starts at byte k of this lane's 16
#pragma unroll
        for (int g = 0; g < 4; ++g) {
            u32 diff = 0;
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                if (j >= nm) break;
                const int o = 4 * g + j;
                const u32 u = (o & 3) ? __funnelshift_r(W[o >> 2], W[(o >> 2) + 1], 8 * (o & 3)) : W[o >> 2];
                diff |= u ^ rep[j];
            }
            const u32 zero = ~(((diff & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | diff | 0x7F7F7F7Fu);  // 0x80: a zero byte
            bits |= (((zero >> 7) * 0x01020408u) >> 24) << (4 * g);
        }
        // Even lane 2q: the marks of the step's places [32q, 32q + 32).
        const u32 word = bits | (__shfl_down_sync(full, bits, 1) << 16);
        const i64 ls = first - w0 > 0 ? first - w0 : 0, le = last - w0 < 512 ? last - w0 : 512;
        int q0 = 0, count = 0;
        if (le > ls) {
            q0 = (int)(ls >> 5);
            count = (int)((le - 1) >> 5) - q0 + 1;
        }
        int most = count;
#pragma unroll
        for (int k = 16; k > 0; k >>= 1) {
            const int o = __shfl_xor_sync(full, most, k);
            most = o > most ? o : most;
        }
        for (int t = 0; t < most; ++t) {
            const int q = q0 + t;
            const u32 v = __shfl_sync(full, word, (2 * q) & 31);
            if (t < count) {
                const int from = (int)ls - 32 * q, to = (int)le - 32 * q;
                const unsigned long long lo_bits = (1ull << (from > 0 ? from : 0)) - 1;
                const unsigned long long hi_bits = (1ull << (to < 32 ? to : 32)) - 1;
                hit = hit || (v & (u32)(hi_bits & ~lo_bits)) != 0u;
            }
        }
    }
    found = hit;
    return true;
#endif
}
#endif

// Code point by code point, for su against s8 (either way round).
template <class A, class B> JX_HD int compare_points(A a, B b) {
    cursor x = cur(a), y = cur(b);
    while (!x.done() && !y.done()) {
        const u32 c = x.next(), d = y.next();
        if (c != d) return c < d ? -1 : 1;
    }
    return x.done() ? (y.done() ? 0 : -1) : 1;
}
// Whether s is a prefix of h from h's cursor position on.
JX_HD bool prefix_at(cursor h, cursor s) {
    while (!s.done()) {
        if (h.done() || h.next() != s.next()) return false;
    }
    return true;
}
// The code point index of the first s in h, or -1.
template <class A, class B> JX_HD i64 find_points(A h, B s) {
    cursor c = cur(h);
    for (i64 k = 0;; ++k) {
        if (prefix_at(c, cur(s))) return k;
        if (c.done()) return -1;
        c.next();
    }
}

JX_HD int compare(sb a, sb b) { return compare_units(a.p, a.n, b.p, b.n); }
JX_HD int compare(su a, su b) { return compare_units(a.p, a.n, b.p, b.n); }
JX_HD int compare(s8 a, s8 b) { return compare_units(a.p, a.n, b.p, b.n); }
JX_HD int compare(su a, s8 b) { return compare_points(a, b); }
JX_HD int compare(s8 a, su b) { return compare_points(a, b); }

JX_HD bool equal(sb a, sb b) { return a.n == b.n && equal_units(a.p, b.p, a.n); }
JX_HD bool equal(su a, su b) { return a.n == b.n && equal_units(a.p, b.p, a.n); }
JX_HD bool equal(s8 a, s8 b) { return a.n == b.n && equal_units(a.p, b.p, a.n); }
JX_HD bool equal(su a, s8 b) { return compare_points(a, b) == 0; }
JX_HD bool equal(s8 a, su b) { return compare_points(a, b) == 0; }

// find: the position in code points (bytes for sb), -1 when absent.
JX_HD i64 find(sb h, sb s) { return find_units(h.p, h.n, s.p, s.n); }
JX_HD i64 find(su h, su s) { return find_units(h.p, h.n, s.p, s.n); }
JX_HD i64 find(s8 h, s8 s) {
    const i64 at = find_units(h.p, h.n, s.p, s.n);
    return at <= 0 ? at : utf8_count(h.p, at);
}
JX_HD i64 find(su h, s8 s) { return find_points(h, s); }
JX_HD i64 find(s8 h, su s) { return find_points(h, s); }
// contains: find's answer without counting code points.
template <class A> JX_HD bool contains(A h, A s) {
#ifdef JX_CUDA
    bool found = false;
    if (sizeof(*h.p) == 1 && warp_contains((const u8*)h.p, h.n, (const u8*)s.p, s.n, found)) return found;
#endif
    return find_units(h.p, h.n, s.p, s.n) >= 0;
}
JX_HD bool contains(su h, s8 s) { return find_points(h, s) >= 0; }
JX_HD bool contains(s8 h, su s) { return find_points(h, s) >= 0; }

template <class A> JX_HD bool starts(A h, A s) { return s.n <= h.n && equal_units(h.p, s.p, s.n); }
JX_HD bool starts(su h, s8 s) { return prefix_at(cur(h), cur(s)); }
JX_HD bool starts(s8 h, su s) { return prefix_at(cur(h), cur(s)); }
template <class A> JX_HD bool ends(A h, A s) { return s.n <= h.n && equal_units(h.p + (h.n - s.n), s.p, s.n); }
template <class A, class B> JX_HD bool ends_points(A h, B s) {
    const i64 nh = points(h), ns = points(s);
    if (ns > nh) return false;
    cursor c = cur(h);
    for (i64 k = 0; k < nh - ns; ++k) c.next();
    return prefix_at(c, cur(s));
}
JX_HD bool ends(su h, s8 s) { return ends_points(h, s); }
JX_HD bool ends(s8 h, su s) { return ends_points(h, s); }
}  // namespace str

// @section base
// ================================================================ the ops, one per line of ops.def
namespace op {

// @section arith
// @ops Add Sub Mul Div
// ---- Arith / Subtract
JX_HD bool Add(bool a, bool b) { return a || b; }
template <class T> JX_HD en<is_int<T>::value, T> Add(T a, T b) {
    using W = typename int_traits<T>::wide;
    return (T)(W)((W)a + (W)b);
}
template <class T> JX_HD en<is_flt<T>::value, T> Add(T a, T b) { return a + b; }
template <class R> JX_HD cx<R> Add(cx<R> a, cx<R> b) { return cadd(a, b); }

template <class T> JX_HD en<is_int<T>::value, T> Sub(T a, T b) {
    using W = typename int_traits<T>::wide;
    return (T)(W)((W)a - (W)b);
}
template <class T> JX_HD en<is_flt<T>::value, T> Sub(T a, T b) { return a - b; }
template <class R> JX_HD cx<R> Sub(cx<R> a, cx<R> b) { return csub(a, b); }

JX_HD bool Mul(bool a, bool b) { return a && b; }
template <class T> JX_HD en<is_int<T>::value, T> Mul(T a, T b) {
    using W = typename int_traits<T>::wide;
    return (T)(W)((W)a * (W)b);
}
template <class T> JX_HD en<is_flt<T>::value, T> Mul(T a, T b) { return a * b; }
template <class R> JX_HD cx<R> Mul(cx<R> a, cx<R> b) { return cmul(a, b); }

// ---- TrueDiv (operands are float or complex: lowering casts integers to float64)
template <class T> JX_HD en<is_flt<T>::value, T> Div(T a, T b) { return a / b; }
template <class R> JX_HD cx<R> Div(cx<R> a, cx<R> b) { return cdiv(a, b); }

// @section intdiv
// @needs arith
// @ops FloorDiv Mod Fmod
// ---- IntDiv: floor division and the remainder with the divisor's sign
template <class T> JX_HD en<is_sint<T>::value, T> FloorDiv(T a, T b) {
    if (b == T(0)) return T(0);
    if (b == T(-1)) return Sub(T(0), a);  // INT_MIN // -1 wraps
    T q = (T)(a / b);
    if ((T)(a % b) != T(0) && ((a < T(0)) != (b < T(0)))) q = (T)(q - 1);
    return q;
}
template <class T> JX_HD en<is_uint<T>::value, T> FloorDiv(T a, T b) { return b == T(0) ? T(0) : (T)(a / b); }
template <class T> JX_HD en<is_flt<T>::value, T> FloorDiv(T a, T b) {
    if (b == T(0)) return a / b;
    T mod = m::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0)) {
        if ((b < T(0)) != (mod < T(0))) div -= T(1);
    }
    T fl;
    if (div != T(0)) {
        fl = m::floor(div);
        if (div - fl > T(0.5)) fl += T(1);
    } else {
        fl = m::copysign(T(0), a / b);
    }
    return fl;
}

template <class T> JX_HD en<is_sint<T>::value, T> Mod(T a, T b) {
    if (b == T(0) || b == T(-1)) return T(0);
    T r = (T)(a % b);
    if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = (T)(r + b);
    return r;
}
template <class T> JX_HD en<is_uint<T>::value, T> Mod(T a, T b) { return b == T(0) ? T(0) : (T)(a % b); }
template <class T> JX_HD en<is_flt<T>::value, T> Mod(T a, T b) {
    T mod = m::fmod(a, b);
    if (b == T(0)) return mod;
    if (mod != T(0)) {
        if ((b < T(0)) != (mod < T(0))) mod += b;
    } else {
        mod = m::copysign(T(0), b);
    }
    return mod;
}

// @section power
// @needs arith
// @ops Pow
// ---- Power
template <class T> JX_HD en<is_int<T>::value, T> Pow(T a, T b) { return ipow(a, b); }
template <class T> JX_HD en<is_flt<T>::value, T> Pow(T a, T b) { return m::pow(a, b); }
template <class R> JX_HD cx<R> Pow(cx<R> a, cx<R> b) {
    // NumPy's power for complex: 1 for a zero exponent, 0 or NaN for a zero base, small
    // integer exponents by repeated products (then one division for a negative one), and
    // otherwise cpow: exp(b log a) with C99 Annex G's product.
    if (b.re == R(0) && b.im == R(0)) return cx<R>{R(1), R(0)};
    if (a.re == R(0) && a.im == R(0)) {
        if (b.re > R(0)) return cx<R>{R(0), R(0)};
        return cx<R>{qnan<R>(), qnan<R>()};
    }
    if (b.im == R(0) && b.re == m::trunc(b.re) && m::fabs(b.re) < R(100)) {
        const long long n = (long long)b.re;
        if (n == 1) return a;
        if (n == 2) return cmul_plain(a, a);
        if (n == 3) return cmul_plain(a, cmul_plain(a, a));
        unsigned long long e = (unsigned long long)(n < 0 ? -n : n);
        cx<R> r{R(1), R(0)}, p = a;
        for (unsigned long long mask = 1;; mask <<= 1) {
            if (e & mask) r = cmul_plain(r, p);
            if (e < (mask << 1)) break;
            p = cmul_plain(p, p);
        }
        return n < 0 ? cdiv(cx<R>{R(1), R(0)}, r) : r;
    }
    return cexp(cmul_annex_g(b, clog(a)));
}

// @section operators
// @needs arith
// @ops BitAnd BitOr BitXor Shl Shr Lt Le Eq Ne Ge Gt And Or Not Neg Pos Invert
// ---- Bitwise (bool: logical)
JX_HD bool BitAnd(bool a, bool b) { return a && b; }
JX_HD bool BitOr(bool a, bool b) { return a || b; }
JX_HD bool BitXor(bool a, bool b) { return a != b; }
template <class T> JX_HD en<is_int<T>::value, T> BitAnd(T a, T b) { return (T)(a & b); }
template <class T> JX_HD en<is_int<T>::value, T> BitOr(T a, T b) { return (T)(a | b); }
template <class T> JX_HD en<is_int<T>::value, T> BitXor(T a, T b) { return (T)(a ^ b); }

// ---- Shift
template <class T> JX_HD en<is_int<T>::value, T> Shl(T a, T b) {
    using W = typename int_traits<T>::wide;
    if ((u64)b >= (u64)int_traits<T>::bits) return T(0);
    return (T)(W)((W)a << (unsigned)b);
}
template <class T> JX_HD en<is_int<T>::value, T> Shr(T a, T b) {
    if ((u64)b >= (u64)int_traits<T>::bits) return (int_traits<T>::is_signed && a < T(0)) ? (T)(-1) : T(0);
    return (T)(a >> (unsigned)b);
}

// ---- Compare (result bool; complex only == and !=)
#define JX_CMP(Name, OPR)                                                                 \
    template <class T> JX_HD en<is_real<T>::value, bool> Name(T a, T b) { return a OPR b; }
JX_CMP(Lt, <) JX_CMP(Le, <=) JX_CMP(Eq, ==) JX_CMP(Ne, !=) JX_CMP(Ge, >=) JX_CMP(Gt, >)
#undef JX_CMP
template <class R> JX_HD bool Eq(cx<R> a, cx<R> b) { return a.re == b.re && a.im == b.im; }
template <class R> JX_HD bool Ne(cx<R> a, cx<R> b) { return !(a.re == b.re && a.im == b.im); }

// ---- Logical
JX_HD bool And(bool a, bool b) { return a && b; }
JX_HD bool Or(bool a, bool b) { return a || b; }
JX_HD bool Not(bool a) { return !a; }

// ---- unary operators
template <class T> JX_HD en<is_int<T>::value, T> Neg(T a) { return Sub(T(0), a); }
template <class T> JX_HD en<is_flt<T>::value, T> Neg(T a) { return -a; }
template <class R> JX_HD cx<R> Neg(cx<R> a) { return cx<R>{-a.re, -a.im}; }

template <class T> JX_HD en<is_any<T>::value, T> Pos(T a) { return a; }

JX_HD bool Invert(bool a) { return !a; }
template <class T> JX_HD en<is_int<T>::value, T> Invert(T a) { return (T)~a; }

// @section transcendental
// @ops Sqrt Sin Cos Tan Arcsin Arccos Arctan Sinh Cosh Tanh Arcsinh Arccosh Arctanh Log Log1p Log10 Log2
// @ops Exp Expm1 Exp2 Cbrt Erf Erfc Tgamma Lgamma Arctan2 Hypot Copysign Nextafter
// @ops Deg2rad Rad2deg Logaddexp Logaddexp2 Heaviside
// ---- FloatUnary (float, double, complex)
#define JX_FLOAT_UNARY(Name, fn, cexpr)                                                  \
    template <class T> JX_HD en<is_flt<T>::value, T> Name(T x) { return m::fn(x); }      \
    template <class R> JX_HD cx<R> Name(cx<R> z) { return cexpr; }
JX_FLOAT_UNARY(Sqrt, sqrt, csqrt(z))
JX_FLOAT_UNARY(Sin, sin, csin(z))
JX_FLOAT_UNARY(Cos, cos, ccosh(ctimes_i(z)))               // cos z = cosh(i z)
JX_FLOAT_UNARY(Tan, tan, ctimes_mi(ctanh(ctimes_i(z))))    // tan z = -i tanh(i z)
JX_FLOAT_UNARY(Arcsin, asin, casin(z))
JX_FLOAT_UNARY(Arccos, acos, cacos(z))
JX_FLOAT_UNARY(Arctan, atan, ctimes_mi(catanh(ctimes_i(z))))  // atan z = -i atanh(i z)
JX_FLOAT_UNARY(Sinh, sinh, csinh(z))
JX_FLOAT_UNARY(Cosh, cosh, ccosh(z))
JX_FLOAT_UNARY(Tanh, tanh, ctanh(z))
JX_FLOAT_UNARY(Arcsinh, asinh, casinh(z))
JX_FLOAT_UNARY(Arccosh, acosh, cacosh(z))
JX_FLOAT_UNARY(Arctanh, atanh, catanh(z))
JX_FLOAT_UNARY(Log, log, clog(z))
JX_FLOAT_UNARY(Log1p, log1p, clog1p(z))
JX_FLOAT_UNARY(Log10, log10, cscale(clog(z), R(0.43429448190325182765112891891660508)))
JX_FLOAT_UNARY(Log2, log2, cscale(clog(z), R(1.44269504088896340735992468100189214)))
JX_FLOAT_UNARY(Exp, exp, cexp(z))
JX_FLOAT_UNARY(Expm1, expm1,
               (cx<R>{m::expm1(z.re) * m::cos(z.im) - R(2) * m::sin(z.im * R(0.5)) * m::sin(z.im * R(0.5)),
                      m::exp(z.re) * m::sin(z.im)}))
#undef JX_FLOAT_UNARY

// ---- RealUnary (float, double)
template <class T> JX_HD en<is_flt<T>::value, T> Exp2(T x) { return m::exp2(x); }
template <class T> JX_HD en<is_flt<T>::value, T> Cbrt(T x) { return m::cbrt(x); }
template <class T> JX_HD en<is_flt<T>::value, T> Erf(T x) { return m::erf(x); }
template <class T> JX_HD en<is_flt<T>::value, T> Erfc(T x) { return m::erfc(x); }
template <class T> JX_HD en<is_flt<T>::value, T> Tgamma(T x) { return m::tgamma(x); }
template <class T> JX_HD en<is_flt<T>::value, T> Lgamma(T x) { return m::lgamma(x); }
// NumPy's: one multiplication by pi / 180 (or 180 / pi) computed in T from pi rounded to T.
template <class T> JX_HD en<is_flt<T>::value, T> Deg2rad(T x) {
    return x * (T(3.141592653589793238462643383279502884) / T(180));
}
template <class T> JX_HD en<is_flt<T>::value, T> Rad2deg(T x) {
    return x * (T(180) / T(3.141592653589793238462643383279502884));
}

// @section unary
// @needs arith
// @ops Abs Ceil Floor Round Trunc Rint Sign Square Reciprocal Conj Real Imag Copy OnesLike MakeComplex
// @ops Isnan Isinf Isfinite Signbit
// ---- AbsUnary (complex gives its real type; integer abs(MIN) wraps to MIN)
JX_HD bool Abs(bool a) { return a; }
template <class T> JX_HD en<is_sint<T>::value, T> Abs(T a) { return a < T(0) ? Sub(T(0), a) : a; }
template <class T> JX_HD en<is_uint<T>::value, T> Abs(T a) { return a; }
template <class T> JX_HD en<is_flt<T>::value, T> Abs(T a) { return m::fabs(a); }
template <class R> JX_HD R Abs(cx<R> a) { return cabs(a); }

// ---- RoundUnary (bool and integers unchanged; Round is half to even)
#define JX_ROUND(Name, fn)                                                          \
    template <class T> JX_HD en<is_intb<T>::value, T> Name(T a) { return a; }       \
    template <class T> JX_HD en<is_flt<T>::value, T> Name(T a) { return m::fn(a); }
JX_ROUND(Ceil, ceil) JX_ROUND(Floor, floor) JX_ROUND(Round, rint) JX_ROUND(Trunc, trunc)
#undef JX_ROUND
// Round of a complex number rounds each part (np.round; Ceil, Floor and Trunc refuse complex).
template <class R> JX_HD cx<R> Round(cx<R> z) { return cx<R>{m::rint(z.re), m::rint(z.im)}; }
// Rint: as Round, on the float its RealUnary rule gives (integers arrive converted).
template <class T> JX_HD en<is_flt<T>::value, T> Rint(T a) { return m::rint(a); }

// ---- SignUnary: -1, 0, 1; NaN stays NaN; complex: z / |z| (NumPy 2), 0 for 0
template <class T> JX_HD en<is_int<T>::value, T> Sign(T a) { return (T)((a > T(0)) - (a < T(0))); }
template <class T> JX_HD en<is_flt<T>::value, T> Sign(T a) {
    return a > T(0) ? T(1) : (a < T(0) ? T(-1) : (a == T(0) ? T(0) : a));
}
template <class R> JX_HD cx<R> Sign(cx<R> z) {
    // NumPy 2's loop: z / |z|; when |z| is infinite, the direction of the infinite part (a
    // finite part that made |z| overflow counts as the infinite one when the other is finite).
    const R a = cabs(z);
    if (m::isnan(a)) return cx<R>{qnan<R>(), qnan<R>()};
    if (m::isinf(a)) {
        if (m::isinf(z.re)) {
            if (m::isinf(z.im)) return cx<R>{qnan<R>(), qnan<R>()};
            return cx<R>{z.re > R(0) ? R(1) : R(-1), R(0)};
        }
        return cx<R>{R(0), z.im > R(0) ? R(1) : R(-1)};
    }
    if (a == R(0)) return cx<R>{R(0), R(0)};
    return cx<R>{z.re / a, z.im / a};
}

// ---- IntOkUnary
template <class T> JX_HD en<is_num<T>::value, T> Square(T a) { return Mul(a, a); }
template <class T> JX_HD en<is_int<T>::value, T> Reciprocal(T a) {
    if (a == T(0)) return T(0);
    if (int_traits<T>::is_signed && a == (T)(-1)) return (T)(-1);
    return (T)(T(1) / a);
}
template <class T> JX_HD en<is_flt<T>::value, T> Reciprocal(T a) { return T(1) / a; }
template <class R> JX_HD cx<R> Reciprocal(cx<R> a) {
    // NumPy's loop: scaled by the larger part (1/0 is NaN + iNaN).
    if (m::fabs(a.im) <= m::fabs(a.re)) {
        const R r = a.im / a.re, d = a.re + a.im * r;
        return cx<R>{R(1) / d, -r / d};
    }
    const R r = a.re / a.im, d = a.re * r + a.im;
    return cx<R>{r / d, R(-1) / d};
}

// ---- Identity / PartUnary
template <class T> JX_HD en<is_real<T>::value, T> Conj(T a) { return a; }
template <class R> JX_HD cx<R> Conj(cx<R> a) { return cx<R>{a.re, -a.im}; }
template <class T> JX_HD en<is_real<T>::value, T> Real(T a) { return a; }
template <class R> JX_HD R Real(cx<R> a) { return a.re; }
template <class T> JX_HD en<is_real<T>::value, T> Imag(T) { return T(0); }
template <class R> JX_HD R Imag(cx<R> a) { return a.im; }
// complex(re, im): both operands arrive cast to the result's complex dtype (imaginary part 0).
template <class R> JX_HD cx<R> MakeComplex(cx<R> re, cx<R> im) { return cx<R>{re.re, im.re}; }
template <class T> JX_HD en<is_any<T>::value, T> Copy(T a) { return a; }
template <class T> JX_HD en<is_real<T>::value, T> OnesLike(T) { return T(1); }
template <class R> JX_HD cx<R> OnesLike(cx<R>) { return cx<R>{R(1), R(0)}; }

// ---- Predicate (result bool). Signbit is not defined for complex (NumPy raises TypeError).
template <class T> JX_HD en<is_intb<T>::value, bool> Isnan(T) { return false; }
template <class T> JX_HD en<is_intb<T>::value, bool> Isinf(T) { return false; }
template <class T> JX_HD en<is_intb<T>::value, bool> Isfinite(T) { return true; }
JX_HD bool Signbit(bool) { return false; }
template <class T> JX_HD en<is_int<T>::value, bool> Signbit(T a) { return a < T(0); }
template <class T> JX_HD en<is_flt<T>::value, bool> Isnan(T a) { return m::isnan(a); }
template <class T> JX_HD en<is_flt<T>::value, bool> Isinf(T a) { return m::isinf(a); }
template <class T> JX_HD en<is_flt<T>::value, bool> Isfinite(T a) { return m::isfinite(a); }
template <class T> JX_HD en<is_flt<T>::value, bool> Signbit(T a) { return m::signbit(a); }
template <class R> JX_HD bool Isnan(cx<R> a) { return chasnan(a); }
template <class R> JX_HD bool Isinf(cx<R> a) { return m::isinf(a.re) || m::isinf(a.im); }
template <class R> JX_HD bool Isfinite(cx<R> a) { return m::isfinite(a.re) && m::isfinite(a.im); }

// @section transcendental
// ---- FloatBinary (float, double)
template <class T> JX_HD en<is_flt<T>::value, T> Arctan2(T a, T b) { return m::atan2(a, b); }
template <class T> JX_HD en<is_flt<T>::value, T> Hypot(T a, T b) { return m::hypot(a, b); }
template <class T> JX_HD en<is_flt<T>::value, T> Copysign(T a, T b) { return m::copysign(a, b); }
template <class T> JX_HD en<is_flt<T>::value, T> Nextafter(T a, T b) { return m::nextafter(a, b); }
// NumPy's algorithm: equal operands (infinities too) give x + log(2); otherwise the larger plus
// log1p(exp(-|x1 - x2|)); a NaN difference is returned as it is.
template <class T> JX_HD en<is_flt<T>::value, T> Logaddexp(T a, T b) {
    if (a == b) return a + T(0.693147180559945309417232121458176568);
    const T d = a - b;
    if (d > T(0)) return a + m::log1p(m::exp(-d));
    if (d <= T(0)) return b + m::log1p(m::exp(d));
    return d;
}
template <class T> JX_HD en<is_flt<T>::value, T> Logaddexp2(T a, T b) {
    constexpr T kLog2e = T(1.442695040888963407359924681001892137);
    if (a == b) return a + T(1);
    const T d = a - b;
    if (d > T(0)) return a + kLog2e * m::log1p(m::exp2(-d));
    if (d <= T(0)) return b + kLog2e * m::log1p(m::exp2(d));
    return d;
}
template <class T> JX_HD en<is_flt<T>::value, T> Heaviside(T x, T h0) {
    if (x < T(0)) return T(0);
    if (x > T(0)) return T(1);
    if (x == T(0)) return h0;
    return x;  // NaN
}

// @section intdiv
// ---- Fmod: C fmod; integers: the sign of the dividend, x fmod 0 gives 0
template <class T> JX_HD en<is_sint<T>::value, T> Fmod(T a, T b) {
    if (b == T(0) || b == T(-1)) return T(0);
    return (T)(a % b);
}
template <class T> JX_HD en<is_uint<T>::value, T> Fmod(T a, T b) { return b == T(0) ? T(0) : (T)(a % b); }
template <class T> JX_HD en<is_flt<T>::value, T> Fmod(T a, T b) { return m::fmod(a, b); }

// @section select
// @ops Maximum Minimum Where Clip
// ---- MinMax: NaN propagates (the first NaN operand is returned)
template <class T> JX_HD en<is_intb<T>::value, T> Maximum(T a, T b) { return a >= b ? a : b; }
template <class T> JX_HD en<is_intb<T>::value, T> Minimum(T a, T b) { return a <= b ? a : b; }
template <class T> JX_HD en<is_flt<T>::value, T> Maximum(T a, T b) { return (a >= b || a != a) ? a : b; }
template <class T> JX_HD en<is_flt<T>::value, T> Minimum(T a, T b) { return (a <= b || a != a) ? a : b; }
template <class R> JX_HD cx<R> Maximum(cx<R> a, cx<R> b) {
    if (chasnan(a)) return a;
    if (chasnan(b)) return b;
    return cge(a, b) ? a : b;
}
template <class R> JX_HD cx<R> Minimum(cx<R> a, cx<R> b) {
    if (chasnan(a)) return a;
    if (chasnan(b)) return b;
    return cle(a, b) ? a : b;
}

// ---- Where, Clip
template <class T> JX_HD en<is_any<T>::value, T> Where(bool c, T x, T y) { return c ? x : y; }
// NumPy's clip: max then min with strict comparisons (a tie takes the bound: clip(0.0, -0.0,
// -0.0) is -0.0), a NaN x stays, a NaN bound is taken.
template <class T> JX_HD en<is_intb<T>::value, T> Clip(T x, T lo, T hi) {
    const T t = x > lo ? x : lo;
    return t < hi ? t : hi;
}
template <class T> JX_HD en<is_flt<T>::value, T> Clip(T x, T lo, T hi) {
    const T t = (x != x || x > lo) ? x : lo;
    return (t != t || t < hi) ? t : hi;
}

// ---- the rest of NumPy's numeric ufuncs (issue 16)
// @section operators
// @ops LogicalXor
JX_HD bool LogicalXor(bool a, bool b) { return a != b; }

// @section select
// @ops Fmax Fmin
// ---- fmax/fmin: a NaN operand gives way to the other; ties (+0, -0) give the first operand
template <class T> JX_HD en<is_intb<T>::value, T> Fmax(T a, T b) { return a >= b ? a : b; }
template <class T> JX_HD en<is_intb<T>::value, T> Fmin(T a, T b) { return a <= b ? a : b; }
template <class T> JX_HD en<is_flt<T>::value, T> Fmax(T a, T b) { return (a >= b || b != b) ? a : b; }
template <class T> JX_HD en<is_flt<T>::value, T> Fmin(T a, T b) { return (a <= b || b != b) ? a : b; }
// complex: NumPy's lexicographic order; a NaN (in either part) gives way as in the real loops
template <class R> JX_HD cx<R> Fmax(cx<R> a, cx<R> b) { return (chasnan(b) || (!chasnan(a) && cge(a, b))) ? a : b; }
template <class R> JX_HD cx<R> Fmin(cx<R> a, cx<R> b) { return (chasnan(b) || (!chasnan(a) && cle(a, b))) ? a : b; }

// @section power
// @ops FloatPower
// ---- float_power: operands arrive as float64 or complex128; power's own loops
template <class T> JX_HD en<is_flt<T>::value, T> FloatPower(T a, T b) { return Pow(a, b); }
template <class R> JX_HD cx<R> FloatPower(cx<R> a, cx<R> b) { return Pow(a, b); }

// @section intdiv
// @ops DivmodQuotient DivmodRemainder
// ---- divmod: the two results of NumPy's divmod are its floor_divide and remainder
template <class T> JX_HD en<is_intf<T>::value, T> DivmodQuotient(T a, T b) { return FloorDiv(a, b); }
template <class T> JX_HD en<is_intf<T>::value, T> DivmodRemainder(T a, T b) { return Mod(a, b); }

// @section intbits
// @ops Gcd Lcm BitwiseCount
// ---- gcd, lcm, bitwise_count: on the magnitude |x| as an unsigned integer of the same width
// (so |INT_MIN| is 2**(bits-1)); a result of 2**(bits-1) wraps back to INT_MIN, as NumPy's.
template <class T> JX_HD u64 magnitude(T a) {
    const u64 v = int_traits<T>::is_signed ? (u64)(i64)a : (u64)a;
    return (int_traits<T>::is_signed && a < T(0)) ? (u64)0 - v : v;
}
JX_HD u64 ugcd(u64 x, u64 y) {
    while (x != 0) {
        const u64 r = y % x;
        y = x;
        x = r;
    }
    return y;
}
template <class T> JX_HD en<is_int<T>::value, T> Gcd(T a, T b) { return (T)ugcd(magnitude(a), magnitude(b)); }
template <class T> JX_HD en<is_int<T>::value, T> Lcm(T a, T b) {
    const u64 g = ugcd(magnitude(a), magnitude(b));
    if (g == 0) return T(0);
    return (T)((magnitude(a) / g) * magnitude(b));  // wraps, modulo 2**bits, as NumPy's
}
JX_HD u8 popcount64(u64 v) {
    v = v - ((v >> 1) & 0x5555555555555555ull);
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (u8)((v * 0x0101010101010101ull) >> 56);
}
template <class T> JX_HD en<is_int<T>::value, u8> BitwiseCount(T a) { return popcount64((u64)magnitude(a)); }

// @section floatbits
// @ops Fabs Spacing Ldexp FrexpMantissa FrexpExponent ModfFraction ModfIntegral
// ---- real functions on a float's representation (float16/bfloat16 arrive as float; their
// spacing steps in their own format: spacing_f16, spacing_bf16)
template <class T> JX_HD en<is_flt<T>::value, T> Fabs(T a) { return m::fabs(a); }
// NumPy's float32/float64 spacing: to the next float away from zero (+-0 give the smallest
// subnormal, positive), inf and NaN give NaN, the largest finite value gives inf.
template <class T> JX_HD en<is_flt<T>::value, T> Spacing(T x) {
    if (m::isnan(x) || m::isinf(x)) return qnan<T>();
    if (x == T(0)) return m::nextafter(T(0), T(1));
    return m::nextafter(x, x > T(0) ? inf<T>() : -inf<T>()) - x;
}
// ldexp: the exponent arrives converted to T (exact for every exponent that does not already
// overflow or underflow every value of T, and of the same sign beyond).
template <class T> JX_HD en<is_flt<T>::value, T> Ldexp(T x, T n) {
    const int e = n >= T(4096) ? 4096 : (n <= T(-4096) ? -4096 : (int)n);
    return m::ldexp(x, e);
}
template <class T> JX_HD en<is_flt<T>::value, T> FrexpMantissa(T x) {
    if (!m::isfinite(x) || x == T(0)) return x;
    int e = 0;
    return m::frexp(x, &e);
}
template <class T> JX_HD en<is_flt<T>::value, i32> FrexpExponent(T x) {
    if (!m::isfinite(x) || x == T(0)) return 0;
    int e = 0;
    m::frexp(x, &e);
    return (i32)e;
}
template <class T> JX_HD en<is_flt<T>::value, T> ModfIntegral(T x) { return m::trunc(x); }
template <class T> JX_HD en<is_flt<T>::value, T> ModfFraction(T x) {
    if (m::isinf(x)) return m::copysign(T(0), x);
    return m::copysign(x - m::trunc(x), x);
}

// @section strings
// @ops Contains Startswith Endswith Find StrLen
// ---- strings: comparisons in code-unit (code-point) order, NumPy's np.strings functions.
// Defined for the string types only (sb with sb; su and s8 with either).
#define JX_SCMP(Name, EXPR)                                                              \
    template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Name(A a, B b) { \
        const int c = str::compare(a, b);                                                \
        return EXPR;                                                                     \
    }
JX_SCMP(Lt, c < 0) JX_SCMP(Le, c <= 0) JX_SCMP(Ge, c >= 0) JX_SCMP(Gt, c > 0)
#undef JX_SCMP
template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Eq(A a, B b) { return str::equal(a, b); }
template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Ne(A a, B b) { return !str::equal(a, b); }
template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Contains(A h, B s) { return str::contains(h, s); }
template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Startswith(A h, B s) { return str::starts(h, s); }
template <class A, class B> JX_HD en<str::both<A, B>::value, bool> Endswith(A h, B s) { return str::ends(h, s); }
template <class A, class B> JX_HD en<str::both<A, B>::value, i64> Find(A h, B s) { return str::find(h, s); }
template <class A> JX_HD en<str::is_str<A>::value, i64> StrLen(A s) { return str::points(s); }

// @section base
}  // namespace op

// @section reduce
// @needs arith select
// @ops Sum Prod ReduceMin ReduceMax Mean Any All ArgFirst
// ================================================================ reductions
// Each has identity() and combine(acc, x). Mean is Sum followed by a division by the count in
// the node's dtype; the min/max reductions propagate NaN.
namespace red {
template <class T> struct Sum {
    static JX_HD T identity() { return cast<T>(0); }
    static JX_HD T combine(T a, T b) { return op::Add(a, b); }
};
template <class T> struct Prod {
    static JX_HD T identity() { return cast<T>(1); }
    static JX_HD T combine(T a, T b) { return op::Mul(a, b); }
};
namespace detail {
template <class T, class E = void> struct extreme;
template <class T> struct extreme<T, en<is_int<T>::value>> {
    static JX_HD T lo() { return int_traits<T>::min(); }
    static JX_HD T hi() { return int_traits<T>::max(); }
};
template <> struct extreme<bool, void> {
    static JX_HD bool lo() { return false; }
    static JX_HD bool hi() { return true; }
};
template <class T> struct extreme<T, en<is_flt<T>::value>> {
    static JX_HD T lo() { return -inf<T>(); }
    static JX_HD T hi() { return inf<T>(); }
};
template <class R> struct extreme<cx<R>, void> {
    static JX_HD cx<R> lo() { return cx<R>{-inf<R>(), -inf<R>()}; }
    static JX_HD cx<R> hi() { return cx<R>{inf<R>(), inf<R>()}; }
};
}  // namespace detail
template <class T> struct ReduceMin {
    static JX_HD T identity() { return detail::extreme<T>::hi(); }
    // The accumulator is the first operand, so a NaN already held stays.
    static JX_HD T combine(T a, T b) { return op::Minimum(a, b); }
};
template <class T> struct ReduceMax {
    static JX_HD T identity() { return detail::extreme<T>::lo(); }
    static JX_HD T combine(T a, T b) { return op::Maximum(a, b); }
};
template <class T = bool> struct Any {
    static JX_HD bool identity() { return false; }
    static JX_HD bool combine(bool a, bool b) { return a || b; }
};
template <class T = bool> struct All {
    static JX_HD bool identity() { return true; }
    static JX_HD bool combine(bool a, bool b) { return a && b; }
};
template <class T> struct Mean : Sum<T> {};
// The index of the first true element: a kernel folds leaf(x, i), i the element's position
// (flat, or along the reduced axis); combine is the minimum, so the order of folding does not
// change the result. No true element gives identity() (argmin's lowering always has one).
template <class T = bool> struct ArgFirst {
    static JX_HD long long identity() { return 0x7fffffffffffffffLL; }
    static JX_HD long long leaf(bool x, long long i) { return x ? i : identity(); }
    static JX_HD long long combine(long long a, long long b) { return b < a ? b : a; }
};
}  // namespace red

// @section orderstat
// @needs arith half
// @ops OrderStat
// ================================================================ order statistics
// What OrderStat (median, percentile, quantile and their nan* forms; dsl/ops.def) computes from
// the elements it selects, the same on the host and the device. A row's elements are ordered by
// key(): an unsigned integer whose order is NumPy's sort order (-0.0 before +0.0, every NaN
// last, one key for all NaNs); the backends find the elements of the ranks they need (the k-th
// smallest key) and give them to median() or lerp(). H says how the element type is carried: 0
// as itself, 1 float16 and 2 bfloat16 (in a float, each operation rounded as NumPy's).
namespace red {
template <class T> struct OrderStat;  // no accumulator (declared for the tables over every reduction)
}  // namespace red
namespace sel {
template <int H> JX_HD float rnd(float v) {
    if (H == 1) return round_f16(v);
    if (H == 2) return round_bf16(v);
    return v;
}
template <int H> JX_HD double rnd(double v) { return v; }
template <int H> JX_HD float rnd_from(double v, float) {
    if (H == 1) return round_f16(v);
    if (H == 2) return round_bf16(v);
    return (float)v;
}
template <int H> JX_HD double rnd_from(double v, double) { return v; }

// Keys: 32 significant bits for types of up to 32 bits (floats of 16 bits are carried as float),
// 64 for the others. decode() inverts key() (a NaN key gives a quiet NaN).
JX_HD u64 key(bool x) { return x ? 1u : 0u; }
template <class T> JX_HD en<is_uint<T>::value, u64> key(T x) { return (u64)x; }
template <class T> JX_HD en<is_sint<T>::value && (int_traits<T>::bits < 64), u64> key(T x) {
    return (u64)((u32)(i32)x ^ 0x80000000u);
}
JX_HD u64 key(i64 x) { return (u64)x ^ 0x8000000000000000ull; }
JX_HD u64 key(float x) {
    if (x != x) return 0xffffffffull;
    const u32 b = fbits(x);
    return (u64)((b & 0x80000000u) ? ~b : (b | 0x80000000u));
}
JX_HD u64 key(double x) {
    if (x != x) return 0xffffffffffffffffull;
    const u64 b = dbits(x);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
template <class T> struct key_bits { static constexpr int value = sizeof(T) > 4 ? 64 : 32; };
template <class R> struct key_bits<cx<R>> { static constexpr int value = key_bits<R>::value; };
// Words of a key: complex values order by the real part's key, then the imaginary part's.
template <class T> struct key_words { static constexpr int value = 1; };
template <class R> struct key_words<cx<R>> { static constexpr int value = 2; };
template <class T> JX_HD en<is_bool<T>::value, T> decode(u64 k) { return k != 0; }
template <class T> JX_HD en<is_uint<T>::value, T> decode(u64 k) { return (T)k; }
template <class T> JX_HD en<is_sint<T>::value && (int_traits<T>::bits < 64), T> decode(u64 k) {
    return (T)(i32)((u32)k ^ 0x80000000u);
}
template <class T> JX_HD en<same<T, i64>::value, T> decode(u64 k) { return (i64)(k ^ 0x8000000000000000ull); }
template <class T> JX_HD en<same<T, float>::value, T> decode(u64 k) {
    const u32 b = (u32)k;
    return ffrom((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}
template <class T> JX_HD en<same<T, double>::value, T> decode(u64 k) {
    return dfrom((k & 0x8000000000000000ull) ? (k & 0x7fffffffffffffffull) : ~k);
}
template <class T> JX_HD en<is_fc<T>::value, bool> isnan(T x) {
    if constexpr (is_cplx<T>::value) return x.re != x.re || x.im != x.im;
    else return x != x;
}
template <class T> JX_HD en<!is_fc<T>::value, bool> isnan(T) { return false; }
template <class T> JX_HD en<!is_cplx<T>::value, u64> key_word(T x, int) { return key(x); }
// (complex parts with -0.0 made +0.0 first, see canon: NumPy's complex order has -0.0 == 0.0)
template <class R> JX_HD u64 key_word(cx<R> x, int w) { return w == 0 ? key(x.re + (R)0) : key(x.im + (R)0); }
// The value a row holds for selection: itself; a complex value with -0.0 parts made +0.0, so that
// the order of parts that compare equal (NumPy's lexicographic compare) is one of keys.
template <class T> JX_HD en<!is_cplx<T>::value, T> canon(T x) { return x; }
template <class R> JX_HD cx<R> canon(cx<R> x) { return cx<R>{x.re + (R)0, x.im + (R)0}; }
template <class T> JX_HD en<!is_cplx<T>::value, T> decode_key(u64 k, u64) { return decode<T>(k); }
template <class T> JX_HD en<is_cplx<T>::value, T> decode_key(u64 re, u64 im) {
    using E = typename real_of<T>::type;
    return T{decode<E>(re), decode<E>(im)};
}
// NumPy's complex sort order with NaNs (npysort's): values without NaN lexicographically, then
// x+nanj, then nan+yj, then nan+nanj (a row's last element, the median of a row with a NaN).
template <class R> JX_HD bool sort_less(cx<R> a, cx<R> b) {
    const bool ar = a.re != a.re, ai = a.im != a.im, br = b.re != b.re, bi = b.im != b.im;
    if (a.re < b.re) return !ai || bi;
    if (a.re > b.re) return bi && !ai;
    if (a.re == b.re || (ar && br)) return a.im < b.im || (bi && !ai);
    return br;
}
// NumPy's complex sort order for values without NaN: by the real part, then the imaginary.
template <class R> JX_HD bool less(cx<R> a, cx<R> b) {
    return key_word(a, 0) < key_word(b, 0) || (key_word(a, 0) == key_word(b, 0) && key_word(a, 1) < key_word(b, 1));
}
template <class T> JX_HD en<!is_cplx<T>::value, bool> less(T a, T b) { return key(a) < key(b); }

// The ranks quantile q of n > 0 ordered elements interpolates between (NumPy's 'linear'
// method): lo and hi = lo + 1, or the last one twice, and the weight t of hi.
struct Ranks {
    long long lo, hi;
    double t;
};
JX_HD Ranks ranks(long long n, double q) {
    const double v = (double)(n - 1) * q;
    if (v >= (double)(n - 1)) return Ranks{n - 1, n - 1, v + 1.0};  // NumPy's index -1: t = v - (-1)
    const double f = m::floor(v);
    const long long lo = (long long)f;
    return Ranks{lo, lo + 1, v - f};
}

// NumPy's _lerp(a, b, t) of the selected neighbours: a + (b - a) * t, or b - (b - a) * (1 - t)
// where t >= 0.5. R (the result) is T for a float T and a Python-number q (every step rounded
// to T, t to T first), else double (b - a in T, wrapping for integers, then in double).
template <class R, int H, class T> JX_HD R lerp(T a, T b, double t) {
    if constexpr (same<R, T>::value && is_flt<T>::value) {
        const T d = rnd<H>(op::Sub(b, a));
        if (t >= 0.5) return rnd<H>(b - rnd<H>(d * rnd_from<H>(1.0 - t, T())));
        return rnd<H>(a + rnd<H>(d * rnd_from<H>(t, T())));
    } else {
        double d;
        if constexpr (is_flt<T>::value) d = (double)rnd<H>(op::Sub(b, a));
        else d = (double)op::Sub(b, a);
        if (t >= 0.5) return (double)b - d * (1.0 - t);
        return (double)a + d * t;
    }
}

// NumPy's median: the mean of the middle element (one == 1) or the middle two, in the mean's
// dtype: float64 for bool and integers, float32 for float16 (then rounded), else T.
template <class R, int H, class T> JX_HD R median(T a, T b, bool one) {
    if constexpr (is_cplx<T>::value) {
        // NumPy's complex division loop by (c + 0j): rat = 0, scl = 1 / c.
        using E = typename real_of<T>::type;
        const T s = one ? a : op::Add(a, b);
        const E scl = (E)1 / (E)(one ? 1 : 2);
        return T{(s.re + s.im * (E)0) * scl, (s.im - s.re * (E)0) * scl};
    } else if constexpr (is_flt<T>::value) {
        const T s = one ? a : a + b;  // float16's mean adds in float32 (the float carrying it)
        return rnd<H>(s / (T)(one ? 1 : 2));
    } else {
        const double s = one ? (double)a : (double)a + (double)b;
        return s / (one ? 1.0 : 2.0);
    }
}
// A row whose every element is NaN (the nan* forms): NaN (complex: NaN + 0j, NumPy's fill).
template <class R> JX_HD R all_nan_of() {
    if constexpr (is_cplx<R>::value) {
        using E = typename real_of<R>::type;
        return R{qnan<E>(), (E)0};
    } else {
        return qnan<R>();
    }
}
// The value of a row without elements (NumPy's mean of nothing, 0 / 0) or with a NaN (a real R).
template <class R> JX_HD R nan_of() {
    if constexpr (is_cplx<R>::value) {
        using E = typename real_of<R>::type;  // NumPy's complex 0 / 0: NaN in both parts
        return R{qnan<E>(), qnan<E>()};
    } else {
        return qnan<R>();
    }
}
}  // namespace sel

// @section base
}  // namespace jx

#include "dsl/types.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jit::dsl {

using ir::Op;
using ir::Rule;

DType default_dtype(Weak w) {
    switch (w) {
        case Weak::Bool: return DType::Bool;
        case Weak::Int: return DType::Int64;
        case Weak::Float: return DType::Float64;
        case Weak::Complex: return DType::Complex128;
        case Weak::None: break;
    }
    return DType::Float64;
}

Weak weak_kind_of(DType t) {
    if (is_bool(t)) return Weak::Bool;
    if (is_integer(t)) return Weak::Int;
    if (is_float(t)) return Weak::Float;
    return Weak::Complex;
}

DType float_for(DType t) {
    switch (t) {
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8: return DType::Float16;
        case DType::Int16:
        case DType::UInt16: return DType::Float32;
        case DType::Int32:
        case DType::UInt32:
        case DType::Int64:
        case DType::UInt64: return DType::Float64;
        default: return t;
    }
}

DType real_of(DType t) {
    if (t == DType::Complex64) return DType::Float32;
    if (t == DType::Complex128) return DType::Float64;
    return t;
}

DType complex_of(DType t) {
    if (is_complex(t)) return t;
    return t == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

namespace {

int int_bits(DType t) { return static_cast<int>(itemsize(t)) * 8; }

DType signed_of_bits(int bits) {
    switch (bits) {
        case 8: return DType::Int8;
        case 16: return DType::Int16;
        case 32: return DType::Int32;
        default: return DType::Int64;
    }
}

DType promote_floats(DType a, DType b) {
    if (a == b) return a;
    // bfloat16 and float16 meet in float32; otherwise the wider wins.
    if (is_half(a) && is_half(b)) return DType::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
}

}  // namespace

DType promote(DType a, DType b) {
    if (a == b) return a;
    if (is_bool(a)) return b;
    if (is_bool(b)) return a;
    if (is_complex(a) || is_complex(b)) {
        DType c = is_complex(a) ? a : b, o = is_complex(a) ? b : a;
        if (is_complex(o)) return itemsize(a) >= itemsize(b) ? a : b;
        return complex_of(promote(real_of(c), o));
    }
    if (is_float(a) || is_float(b)) {
        if (is_float(a) && is_float(b)) return promote_floats(a, b);
        DType f = is_float(a) ? a : b, i = is_float(a) ? b : a;
        // bfloat16 holds 8-bit integers like float16 does.
        if (f == DType::BFloat16 && itemsize(i) == 1) return DType::BFloat16;
        if (f == DType::BFloat16) return promote_floats(DType::Float32, float_for(i));
        return promote_floats(f, float_for(i));
    }
    // Two integers.
    if (is_signed_int(a) == is_signed_int(b)) return itemsize(a) >= itemsize(b) ? a : b;
    DType s = is_signed_int(a) ? a : b, u = is_signed_int(a) ? b : a;
    if (int_bits(u) < int_bits(s)) return s;
    if (u == DType::UInt64) return DType::Float64;
    return signed_of_bits(int_bits(u) * 2);
}

DType promote_weak(DType strong, Weak weak) {
    const Weak k = weak_kind_of(strong);
    if (static_cast<int>(k) >= static_cast<int>(weak)) return strong;
    if (weak == Weak::Complex && is_float(strong)) return complex_of(strong);
    return default_dtype(weak);
}

bool can_cast_same_kind(DType from, DType to) {
    if (from == to) return true;
    if (is_temporal(from) || is_temporal(to)) {
        // Dates between units, durations between units of one kind (calendar or fixed), and
        // integers as durations (NumPy's same_kind).
        if (is_temporal(from) && is_temporal(to)) {
            const bool cal_from = time_unit(from) == TimeUnit::Y || time_unit(from) == TimeUnit::M;
            const bool cal_to = time_unit(to) == TimeUnit::Y || time_unit(to) == TimeUnit::M;
            return is_datetime(from) == is_datetime(to) &&
                   (is_datetime(from) || time_unit(from) == TimeUnit::Generic || cal_from == cal_to);
        }
        return is_timedelta(to) && (is_integer(from) || is_bool(from));
    }
    const Weak kf = weak_kind_of(from), kt = weak_kind_of(to);
    if (kf == Weak::Int && kt == Weak::Int) {
        // Signed into unsigned is a different kind; unsigned into signed is fine.
        return !(is_signed_int(from) && is_unsigned_int(to));
    }
    return static_cast<int>(kf) <= static_cast<int>(kt);
}

std::optional<Typed> apply_rule(Op op, DType p, std::string* error) {
    const ir::OpInfo& oi = ir::info(op);
    auto reject = [&](std::string_view what) -> std::optional<Typed> {
        if (error) *error = fmt::format("{} is not supported for {}", what, dtype_name(p));
        return std::nullopt;
    };
    const std::string what = oi.kind == ir::OpKind::Operator ? fmt::format("operator '{}'", oi.token)
                                                             : fmt::format("{}()", ir::spelling(op));
    // Dates and durations have rules of their own (dsl/lower/dates.cpp); an op that reaches here
    // with one is not defined for them.
    if (is_temporal(p)) return reject(what);
    if (is_string(p)) {
        if (error)
            *error = fmt::format(
                "{} is not supported for strings ({}): jitexpr computes no string-valued result; strings take part "
                "in the comparisons (== != < <= > >=) and contains, startswith, endswith, find and str_len",
                what, dtype_name(p));
        return std::nullopt;
    }
    switch (oi.rule) {
        case Rule::Arith:
        case Rule::Identity:
        case Rule::OnesLike:
        case Rule::Clip:
            if (oi.rule == Rule::Clip && is_complex(p)) return reject(what);
            return Typed{p, p};
        case Rule::Subtract:
            if (is_bool(p)) {
                if (error) *error = "operator '-' is not supported for bool (use '^' or 'not')";
                return std::nullopt;
            }
            return Typed{p, p};
        case Rule::TrueDiv:
            if (is_bool(p) || is_integer(p)) return Typed{DType::Float64, DType::Float64};
            return Typed{p, p};
        case Rule::IntDiv:
        case Rule::Fmod:
            if (is_complex(p)) return reject(what);
            if (is_bool(p)) return Typed{DType::Int8, DType::Int8};
            return Typed{p, p};
        case Rule::Power:
            if (is_bool(p)) return Typed{DType::Int8, DType::Int8};
            return Typed{p, p};
        case Rule::Bitwise:
            if (is_inexact(p)) return reject(what);
            return Typed{p, p};
        case Rule::Shift:
            if (is_inexact(p)) return reject(what);
            if (is_bool(p)) return Typed{DType::Int8, DType::Int8};
            return Typed{p, p};
        case Rule::Compare:
            if (is_complex(p) && op != Op::Eq && op != Op::Ne) return reject(what);
            return Typed{p, DType::Bool};
        case Rule::Logical: return Typed{DType::Bool, DType::Bool};
        case Rule::Negate:
            if (is_bool(p)) {
                if (error) *error = "unary '-' is not supported for bool (use 'not' or '~')";
                return std::nullopt;
            }
            return Typed{p, p};
        case Rule::Invert:
            if (is_inexact(p)) return reject(what);
            return Typed{p, p};
        case Rule::FloatUnary: return Typed{float_for(p), float_for(p)};
        case Rule::RealUnary:
            if (is_complex(p)) return reject(what);
            return Typed{float_for(p), float_for(p)};
        case Rule::RoundUnary:
            if (is_complex(p)) {
                if (op == Op::Round) return Typed{p, p};  // each part, as np.round
                return reject(what);
            }
            if (op == Op::Round && is_bool(p))
                return Typed{DType::Float16, DType::Float16};  // NumPy rounds bool via rint
            return Typed{p, p};
        case Rule::MinMax:
            if (is_complex(p) && op != Op::Fmax && op != Op::Fmin) return reject(what);
            return Typed{p, p};
        case Rule::AbsUnary: return Typed{p, real_of(p)};
        case Rule::SignUnary:
            if (is_bool(p)) return reject(what);
            return Typed{p, p};
        case Rule::IntOkUnary:
            if (is_bool(p)) return Typed{DType::Int8, DType::Int8};
            return Typed{p, p};
        case Rule::Predicate:
            if (op == Op::Signbit && is_complex(p)) return reject(what);
            return Typed{p, DType::Bool};
        case Rule::PartUnary: return Typed{p, real_of(p)};
        case Rule::FloatBinary:
            if (is_complex(p)) return reject(what);
            return Typed{float_for(p), float_for(p)};
        case Rule::Where: return Typed{p, p};
        case Rule::SumProd:
            if (is_bool(p) || (is_signed_int(p) && p != DType::Int64)) return Typed{DType::Int64, DType::Int64};
            if (is_unsigned_int(p)) return Typed{DType::UInt64, DType::UInt64};
            return Typed{p, p};
        case Rule::MinMaxReduce:
            if (is_complex(p)) return reject(what);
            return Typed{p, p};
        case Rule::MeanReduce:
            if (is_bool(p) || is_integer(p)) return Typed{DType::Float64, DType::Float64};
            return Typed{p, p};
        case Rule::AnyAll: return Typed{DType::Bool, DType::Bool};
        case Rule::ArgFirst: return Typed{DType::Bool, DType::Int64};
        case Rule::VarReduce:
            if (is_bool(p) || is_integer(p)) return Typed{DType::Float64, DType::Float64};
            return Typed{p, is_complex(p) ? real_of(p) : p};
        case Rule::ArgReduce:
            if (is_complex(p)) return reject(what);
            return Typed{p, DType::Int64};
        case Rule::CountReduce: return Typed{p, DType::Int64};
        case Rule::PtpReduce:
            if (is_complex(p) || is_bool(p)) return reject(what);
            return Typed{p, p};
        case Rule::MakeComplex: {
            // The dtype of re + im*1j in NumPy 2 for two operands of one real dtype: float16 and
            // float32 give complex64; bool, integers and float64 give complex128.
            if (is_complex(p)) return reject(what);
            const DType c = is_float(p) && itemsize(p) <= 4 ? DType::Complex64 : DType::Complex128;
            return Typed{c, c};
        }
        case Rule::FloatPower:
            if (is_complex(p)) return Typed{DType::Complex128, DType::Complex128};
            return Typed{DType::Float64, DType::Float64};
        case Rule::IntegerBinary:
            if (!is_integer(p)) return reject(what);
            return Typed{p, p};
        case Rule::Ldexp:
            // The mantissa's dtype; lowering checks the exponent and casts it to this dtype.
            if (is_complex(p)) return reject(what);
            return Typed{float_for(p), float_for(p)};
        case Rule::BitCount:
            if (is_inexact(p)) return reject(what);
            return Typed{is_bool(p) ? DType::Int8 : p, DType::UInt8};
        case Rule::FrexpExponent:
            if (is_complex(p)) return reject(what);
            return Typed{float_for(p), DType::Int32};
        case Rule::MedianReduce:
            if (is_bool(p) || is_integer(p)) return Typed{p, DType::Float64};
            return Typed{p, p};
        case Rule::QuantileReduce:
            if (is_bool(p) || is_complex(p)) return reject(what);
            if (is_integer(p)) return Typed{p, DType::Float64};
            return Typed{p, p};
        case Rule::OrderStat: return Typed{p, is_bool(p) || is_integer(p) ? DType::Float64 : p};
        case Rule::StrSearch:
        case Rule::StrFind:
        case Rule::StrLen:
            // (strings are typed by dsl/lower/strings.cpp; any other operand is an error)
            if (error)
                *error = fmt::format(
                    "{} takes strings (S, U or Arrow string columns, or string literals), "
                    "not {}",
                    what, dtype_name(p));
            return std::nullopt;
    }
    return Typed{p, p};
}

}  // namespace jit::dsl

// jitexpr — the checks of host scalars' values (see scalars.hpp).
#include "dsl/scalars.hpp"

#include <jit/dtype.hpp>
#include <jit/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace jit::dsl {

namespace {

// Whether a host integer fits integer dtype t.
bool int_fits(std::int64_t v, DType t) {
    if (is_unsigned_int(t))
        return v >= 0 && (t == DType::UInt64 || static_cast<std::uint64_t>(v) >> (8 * itemsize(t)) == 0);
    const int bits = static_cast<int>(itemsize(t)) * 8;
    if (bits == 64) return true;
    const std::int64_t lim = std::int64_t{1} << (bits - 1);
    return v >= -lim && v < lim;
}

// The value of a weak integer expression of host scalars as Python computes it: exact (in 128
// bits; `big` past them), with `wrapped` set where a step's value left int64, so that the
// kernels' int64 arithmetic differs from Python's from there on. nullopt: not an integer
// expression the check can follow (it then checks nothing, as before).
struct ExactInt {
    __int128 v = 0;
    bool big = false;             // past 128 bits: out of every dtype's range
    bool wrapped = false;         // a step before the last left int64
    bool last_ring = true;        // the last step wraps consistently (+ - * << & | ^ ~ neg)
    const char* error = nullptr;  // Python's ValueError for a step (a negative shift count)
    SourceSpan error_span{};
};

constexpr __int128 kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr __int128 kInt64Max = std::numeric_limits<std::int64_t>::max();

std::optional<ExactInt> exact_int(const ir::Program& p, ir::NodeId id, std::span<const ir::Value> scalars,
                                  int depth = 0) {
    if (depth > 64) return std::nullopt;
    const ir::Node& n = p.node(id);
    auto leaf = [](const ir::Value& v) -> std::optional<ExactInt> {
        if (is_bool(v.dtype)) return ExactInt{v.b ? 1 : 0};
        if (is_unsigned_int(v.dtype)) return ExactInt{static_cast<__int128>(v.u)};
        if (is_integer(v.dtype)) return ExactInt{static_cast<__int128>(v.i)};
        return std::nullopt;
    };
    switch (n.kind) {
        case ir::NodeKind::Scalar: return leaf(scalars[static_cast<std::size_t>(n.slot)]);
        case ir::NodeKind::Const: return leaf(n.value);
        case ir::NodeKind::Cast:
            if (!is_integer(n.dtype)) return std::nullopt;
            return exact_int(p, n.args[0], scalars, depth + 1);
        case ir::NodeKind::Op: break;
        default: return std::nullopt;
    }
    std::optional<ExactInt> a = exact_int(p, n.args[0], scalars, depth + 1), b;
    if (!a) return std::nullopt;
    if (n.nargs > 1 && !(b = exact_int(p, n.args[1], scalars, depth + 1))) return std::nullopt;
    if (a->error) return a;
    if (b && b->error) return b;
    ExactInt r;
    r.big = a->big || (b && b->big);
    auto outside = [](const ExactInt& x) { return x.big || x.v < kInt64Min || x.v > kInt64Max; };
    r.wrapped = a->wrapped || outside(*a) || (b && (b->wrapped || outside(*b)));
    if (r.big) return r;
    const __int128 x = a->v, y = b ? b->v : 0;
    if (n.dtype == DType::Bool) {
        // Booleans as NumPy computes them (host bools are weak bools): ~ is not, + is or, * is and.
        switch (n.op) {
            case ir::Op::Invert: r.v = x == 0; break;
            case ir::Op::BitAnd:
            case ir::Op::Mul: r.v = x != 0 && y != 0; break;
            case ir::Op::BitOr:
            case ir::Op::Add: r.v = x != 0 || y != 0; break;
            case ir::Op::BitXor: r.v = (x != 0) != (y != 0); break;
            case ir::Op::Pos: r.v = x != 0; break;
            default: return std::nullopt;
        }
        r.last_ring = false;
        return r;
    }
    bool over = false;
    switch (n.op) {
        case ir::Op::Add: over = __builtin_add_overflow(x, y, &r.v); break;
        case ir::Op::Sub: over = __builtin_sub_overflow(x, y, &r.v); break;
        case ir::Op::Mul: over = __builtin_mul_overflow(x, y, &r.v); break;
        case ir::Op::Neg: over = __builtin_sub_overflow(__int128{0}, x, &r.v); break;
        case ir::Op::Pos: r.v = x; break;
        case ir::Op::Invert: r.v = ~x; break;
        case ir::Op::BitAnd: r.v = x & y; break;
        case ir::Op::BitOr: r.v = x | y; break;
        case ir::Op::BitXor: r.v = x ^ y; break;
        case ir::Op::Shl:
            if (y < 0) {
                r.error = "negative shift count";
                r.error_span = n.span;
                return r;
            }
            if (x == 0) break;
            if (y >= 126) {
                over = true;
                break;
            }
            r.v = x * (__int128{1} << static_cast<int>(y));
            over = (r.v >> static_cast<int>(y)) != x;
            break;
        case ir::Op::Shr:
            if (y < 0) {
                r.error = "negative shift count";
                r.error_span = n.span;
                return r;
            }
            r.v = y >= 127 ? (x < 0 ? -1 : 0) : x >> static_cast<int>(y);
            r.last_ring = false;
            break;
        case ir::Op::FloorDiv:
        case ir::Op::Mod: {
            if (y == 0) {  // 0, as the kernels compute it (NumPy's integer division by zero)
                r.v = 0;
                r.last_ring = false;
                break;
            }
            __int128 q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                q -= 1;
                m += y;
            }
            r.v = n.op == ir::Op::FloorDiv ? q : m;
            r.last_ring = false;
            break;
        }
        case ir::Op::Pow: {
            if (y < 0) return std::nullopt;  // a negative exponent is refused where it is bound
            __int128 acc = 1, base = x;
            for (__int128 e = y; e > 0 && !over; e >>= 1) {
                if (e & 1) over = __builtin_mul_overflow(acc, base, &acc);
                if (e > 1 && !over) over = __builtin_mul_overflow(base, base, &base);
            }
            r.v = acc;
            r.last_ring = false;
            break;
        }
        default: return std::nullopt;
    }
    if (over) r.big = true;
    return r;
}

std::string int128_text(__int128 v) {
    if (v == 0) return "0";
    const bool negative = v < 0;
    unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
    std::string s;
    while (u != 0) {
        s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
        u /= 10;
    }
    return negative ? "-" + s : s;
}

// Each weak integer expression of host scalars against the dtype it meets (ir::ScalarFitCheck).
void check_scalar_fits(const ir::Program& p, std::span<const ir::Value> scalars) {
    for (const ir::ScalarFitCheck& c : p.scalar_fits) {
        const std::optional<ExactInt> r = exact_int(p, c.node, scalars);
        if (!r) continue;
        if (r->error)
            throw ValueError(
                fmt::format("{} in this expression of host scalars (Python's error for its integers)", r->error),
                p.text, r->error_span);
        const bool integer_target = is_integer(c.dtype) && !is_bool(c.dtype);
        if (r->big)
            throw ValueError("this expression of host scalars has an integer value past 128 bits, out of bounds for " +
                                 std::string(dtype_name(integer_target ? c.dtype : DType::Int64)),
                             p.text, c.span);
        if (integer_target) {
            const bool fits =
                is_unsigned_int(c.dtype)
                    ? r->v >= 0 && (c.dtype == DType::UInt64
                                        ? r->v <= static_cast<__int128>(std::numeric_limits<std::uint64_t>::max())
                                        : (r->v >> (8 * itemsize(c.dtype))) == 0)
                    : r->v >= kInt64Min && r->v <= kInt64Max && int_fits(static_cast<std::int64_t>(r->v), c.dtype);
            if (!fits)
                throw ValueError(fmt::format("integer {} (this expression of host scalars) is out of bounds for {}",
                                             int128_text(r->v), dtype_name(c.dtype)),
                                 p.text, c.span);
        }
        // The kernels compute the expression in int64: where Python's value left int64 on the
        // way (or at the end, unless a uint64 takes the same bits), their result would differ.
        const bool end_outside = r->v < kInt64Min || r->v > kInt64Max;
        const bool same_bits = c.dtype == DType::UInt64 && r->last_ring;
        if (r->wrapped || (end_outside && !same_bits))
            throw ValueError(fmt::format("this expression of host scalars leaves int64 (its value is {}), where "
                                         "jitexpr computes it; Python's exact integers are not followed there",
                                         int128_text(r->v)),
                             p.text, c.span);
    }
}

// A host integer as `casts` (innermost first) convert it: an integer dtype keeps the low bits (as
// NumPy's astype does), bool is v != 0, a float keeps the sign (all that is asked of it here).
__int128 converted(std::int64_t value, const std::vector<DType>& casts) {
    __int128 v = value;
    for (const DType t : casts) {
        if (is_bool(t)) {
            v = v != 0;
        } else if (is_integer(t)) {
            const int bits = 8 * static_cast<int>(itemsize(t));
            const unsigned __int128 low =
                static_cast<unsigned __int128>(v) & ((static_cast<unsigned __int128>(1) << bits) - 1);
            if (is_unsigned_int(t)) v = static_cast<__int128>(low);
            else v = static_cast<__int128>(low << (128 - bits)) >> (128 - bits);  // sign-extended
        }
    }
    return v;
}

// A negative integer exponent made of host scalar `s`: NumPy's ValueError.
void check_exponent(const ir::Program& p, const ir::ScalarDecl& d, const ir::Value& value) {
    if (!d.must_be_nonnegative || !is_signed_int(value.dtype)) return;
    if (d.exponent_casts.empty() && value.i < 0)
        throw ValueError(
            fmt::format("integers to negative integer powers are not allowed ('{}' is {})", d.name, value.i), p.text,
            d.span);
    for (const std::vector<DType>& casts : d.exponent_casts) {
        const __int128 v = converted(value.i, casts);
        if (v >= 0) continue;
        if (casts.empty())
            throw ValueError(
                fmt::format("integers to negative integer powers are not allowed ('{}' is {})", d.name, value.i),
                p.text, d.span);
        throw ValueError(fmt::format("integers to negative integer powers are not allowed ('{}' is {}, {} as {})",
                                     d.name, value.i, int128_text(v), dtype_name(casts.back())),
                         p.text, d.span);
    }
}

}  // namespace

void check_scalars(const ir::Program& p, std::span<const ir::Value> scalars) {
    for (std::size_t s = 0; s < p.scalars.size(); ++s) {
        const ir::ScalarDecl& d = p.scalars[s];
        check_exponent(p, d, scalars[s]);
        for (DType t : d.must_fit)
            if (!int_fits(scalars[s].i, t))
                throw ValueError(
                    fmt::format("integer {} ('{}') is out of bounds for {}", scalars[s].i, d.name, dtype_name(t)),
                    p.text, d.span);
    }
    if (!p.scalar_fits.empty()) check_scalar_fits(p, scalars);
}

}  // namespace jit::dsl

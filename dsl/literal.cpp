// Exact literal arithmetic with Python's semantics (see literal.hpp).
//
// Integers are Boost.Multiprecision cpp_int: header-only, already a dependency through Boost,
// exact at any size, with floor-consistent shifts and two's-complement bitwise operators on
// negative values like Python's int. The fold is bounded (kMaxLiteralBits) so that `2**2**40`
// is an error, not an allocation of gigabytes.
#include "dsl/literal.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <boost/multiprecision/cpp_int.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <unordered_map>

namespace jit::dsl {

namespace {

using Big = boost::multiprecision::cpp_int;
using ir::Op;
using syntax::Expr;
using syntax::ExprKind;
using Kind = Folded::Kind;

// A Python number: bool, int, float or complex.
struct Num {
    Kind kind = Kind::Int;
    bool b = false;
    Big i;
    double f = 0.0;
    std::complex<double> c;
};

Num of_bool(bool v) {
    Num n;
    n.kind = Kind::Bool;
    n.b = v;
    return n;
}
Num of_int(Big v) {
    Num n;
    n.kind = Kind::Int;
    n.i = std::move(v);
    return n;
}
Num of_float(double v) {
    Num n;
    n.kind = Kind::Float;
    n.f = v;
    return n;
}
Num of_complex(std::complex<double> v) {
    Num n;
    n.kind = Kind::Complex;
    n.c = v;
    return n;
}

std::size_t bit_length(const Big& v) { return v == 0 ? 0 : boost::multiprecision::msb(abs(v)) + 1; }

const char* type_name(Kind k) {
    switch (k) {
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::Complex: return "complex";
    }
    return "?";
}

std::string short_digits(const Big& v) {
    std::string s = v.str();
    const std::size_t n = s.size() - (s[0] == '-' ? 1 : 0);
    if (n <= 40) return s;
    return fmt::format("{}...{} ({} digits)", s.substr(0, s.size() - n + 12), s.substr(s.size() - 6), n);
}

// The double nearest to v (ties to even), or nullopt past the largest finite double.
std::optional<double> to_double(const Big& v) {
    if (v == 0) return 0.0;
    const bool neg = v < 0;
    const Big m = neg ? Big(-v) : v;
    const std::size_t bits = bit_length(m);
    double d;
    if (bits <= 64) {
        d = static_cast<double>(m.convert_to<std::uint64_t>());  // one rounding, to nearest even
    } else {
        // The top 64 bits, the rest folded into the lowest as a sticky bit: rounding that to 53
        // bits rounds v correctly.
        const auto shift = static_cast<unsigned>(bits - 64);
        std::uint64_t top = Big(m >> shift).convert_to<std::uint64_t>();
        if (boost::multiprecision::lsb(m) < shift) top |= 1;
        if (shift > 2000) return std::nullopt;
        d = std::ldexp(static_cast<double>(top), static_cast<int>(shift));
    }
    if (std::isinf(d)) return std::nullopt;
    return neg ? -d : d;
}

class Evaluator {
public:
    Evaluator(std::string_view text, const ConstantLookup& constant) : text_(text), constant_(constant) {}

    Num eval(const Expr& e) {
        switch (e.kind) {
            case ExprKind::Int:
                if (!e.int_big) return of_int(Big(e.int_value));
                return of_int(parse_big(e));
            case ExprKind::Float: return of_float(e.float_value);
            case ExprKind::Imag: return of_complex({0.0, e.float_value});
            case ExprKind::Bool: return of_bool(e.bool_value);
            case ExprKind::Name: {
                auto v = constant_ ? constant_(e.text) : std::nullopt;
                if (!v) throw InternalError("literal fold: not a constant: " + e.text);
                return of_float(*v);
            }
            case ExprKind::Unary: return unary(e.ops.at(0), eval(*e.operands.at(0)), e.span);
            case ExprKind::Chain: return chain(e, 0, e.operands.size() - 1);
            default: break;
        }
        throw InternalError("literal fold: not a literal expression");
    }

    Num chain(const Expr& e, std::size_t first, std::size_t last) {
        if (first == last) return eval(*e.operands.at(first));
        const Op op0 = e.ops.at(first);
        auto span_of = [&](std::size_t a, std::size_t b) {
            return SourceSpan{e.operands[a]->span.begin, e.operands[b]->span.end};
        };
        if (ir::is_comparison(op0)) {
            // a < b < c: every adjacent pair, each operand evaluated once.
            Num left = eval(*e.operands[first]);
            bool all = true;
            for (std::size_t k = first; k < last; ++k) {
                Num right = eval(*e.operands[k + 1]);
                all = compare(e.ops[k], left, right, span_of(k, k + 1)) && all;
                left = std::move(right);
            }
            return of_bool(all);
        }
        if (ir::is_right_assoc(op0)) {
            Num acc = eval(*e.operands[last]);
            for (std::size_t k = last; k-- > first;)
                acc = binary(e.ops[k], eval(*e.operands[k]), acc, span_of(k, last));
            return acc;
        }
        Num acc = eval(*e.operands[first]);
        for (std::size_t k = first; k < last; ++k)
            acc = binary(e.ops[k], acc, eval(*e.operands[k + 1]), span_of(first, k + 1));
        return acc;
    }

private:
    [[noreturn]] void value_error(const std::string& m, SourceSpan s) const { throw ValueError(m, text_, s); }
    [[noreturn]] void type_error(const std::string& m, SourceSpan s) const { throw TypeError(m, text_, s); }

    static Big parse_big(const Expr& e) {
        // A literal past uint64 (the parser bounds its length): decimal, or 0x, 0o or 0b, with
        // Python's underscores between digits (dropped here).
        std::string digits;
        for (const char c : e.text)
            if (c != '_') digits.push_back(c);
        std::string_view t = digits;
        if (t.size() > 2 && t[0] == '0' && (t[1] == 'o' || t[1] == 'O' || t[1] == 'b' || t[1] == 'B')) {
            const unsigned base = (t[1] == 'o' || t[1] == 'O') ? 8 : 2;
            Big v = 0;
            for (const char c : t.substr(2)) v = v * base + static_cast<unsigned>(c - '0');
            return v;
        }
        // cpp_int reads a leading 0 as octal: a decimal literal's leading zeros are dropped.
        if (t.size() > 1 && t[0] == '0' && t[1] != 'x' && t[1] != 'X')
            t.remove_prefix(t.find_first_not_of('0') == std::string_view::npos ? t.size() - 1
                                                                               : t.find_first_not_of('0'));
        return Big(std::string(t));
    }

    [[noreturn]] void too_large(SourceSpan span) const {
        value_error(fmt::format("integer too large (more than {} bits)", kMaxLiteralBits), span);
    }
    void check_bits(const Big& v, SourceSpan span) const {
        if (bit_length(v) > static_cast<std::size_t>(kMaxLiteralBits)) too_large(span);
    }

    double int_to_float(const Big& v, SourceSpan span) const {
        auto d = to_double(v);
        if (!d) value_error(fmt::format("integer {} is too large to convert to a float", short_digits(v)), span);
        return *d;
    }

    double as_float(const Num& n, SourceSpan span) const {
        switch (n.kind) {
            case Kind::Bool: return n.b ? 1.0 : 0.0;
            case Kind::Int: return int_to_float(n.i, span);
            case Kind::Float: return n.f;
            case Kind::Complex: break;
        }
        throw InternalError("literal fold: complex as float");
    }
    std::complex<double> as_complex(const Num& n, SourceSpan span) const {
        return n.kind == Kind::Complex ? n.c : std::complex<double>(as_float(n, span), 0.0);
    }
    static Big as_int(const Num& n) { return n.kind == Kind::Bool ? Big(n.b ? 1 : 0) : n.i; }
    static bool truth(const Num& n) {
        switch (n.kind) {
            case Kind::Bool: return n.b;
            case Kind::Int: return n.i != 0;
            case Kind::Float: return n.f != 0.0;
            case Kind::Complex: return n.c != std::complex<double>(0.0, 0.0);
        }
        return false;
    }

    Num unary(Op op, const Num& a, SourceSpan span) const {
        if (op == Op::Not) return of_bool(!truth(a));
        if (a.kind == Kind::Bool) {  // NumPy's bool rules, as for bool arrays
            if (op == Op::Pos) return a;
            if (op == Op::Invert) return of_bool(!a.b);
            type_error("unary '-' is not supported for bool (use 'not' or '~')", span);
        }
        if (op == Op::Pos) return a;
        if (op == Op::Neg) {
            switch (a.kind) {
                case Kind::Int: return of_int(-a.i);
                case Kind::Float: return of_float(-a.f);
                default: return of_complex(-a.c);
            }
        }
        if (op == Op::Invert) {
            if (a.kind != Kind::Int)
                type_error(fmt::format("bad operand type for unary ~: '{}'", type_name(a.kind)), span);
            return of_int(-a.i - 1);
        }
        throw InternalError(fmt::format("literal fold: unknown unary operator {}", ir::info(op).id));
    }

    // -1, 0, 1 for a < b, a == b, a > b; 2 when unordered (a NaN).
    int order(const Num& a, const Num& b, SourceSpan span) const {
        const bool ai = a.kind == Kind::Int || a.kind == Kind::Bool, bi = b.kind == Kind::Int || b.kind == Kind::Bool;
        if (ai && bi) {
            const Big x = as_int(a), y = as_int(b);
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        if (!ai && !bi) {
            const double x = as_float(a, span), y = as_float(b, span);
            if (std::isnan(x) || std::isnan(y)) return 2;
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        // An int against a float, exactly (Python does not round the int).
        const bool flip = !ai;
        const Big x = as_int(flip ? b : a);
        const double y = flip ? a.f : b.f;
        int r;
        if (std::isnan(y)) return 2;
        if (std::isinf(y)) {
            r = y > 0 ? -1 : 1;
        } else if (y == std::trunc(y)) {
            const Big yi(y);
            r = x < yi ? -1 : (x > yi ? 1 : 0);
        } else {
            r = x <= Big(std::floor(y)) ? -1 : 1;
        }
        return flip ? -r : r;
    }

    bool compare(Op op, const Num& a, const Num& b, SourceSpan span) const {
        if (a.kind == Kind::Complex || b.kind == Kind::Complex) {
            if (op != Op::Eq && op != Op::Ne)
                type_error(fmt::format("'{}' is not supported for complex numbers", ir::spelling(op)), span);
            const bool eq = as_complex(a, span) == as_complex(b, span);
            return op == Op::Eq ? eq : !eq;
        }
        const int o = order(a, b, span);
        if (o == 2) return op == Op::Ne;
        switch (op) {
            case Op::Lt: return o < 0;
            case Op::Le: return o <= 0;
            case Op::Eq: return o == 0;
            case Op::Ne: return o != 0;
            case Op::Ge: return o >= 0;
            case Op::Gt: return o > 0;
            default: throw InternalError(fmt::format("literal fold: {} is not a comparison", ir::info(op).id));
        }
    }

    Num binary(Op op, const Num& a, const Num& b, SourceSpan span) const {
        if (op == Op::And) return of_bool(truth(a) && truth(b));
        if (op == Op::Or) return of_bool(truth(a) || truth(b));
        if (ir::is_comparison(op)) return of_bool(compare(op, a, b, span));
        if (a.kind == Kind::Bool && b.kind == Kind::Bool) {
            // Two bools follow NumPy's bool rules where they have one; otherwise they count as
            // the integers 0 and 1, as in Python.
            if (op == Op::Add || op == Op::BitOr) return of_bool(a.b || b.b);
            if (op == Op::Mul || op == Op::BitAnd) return of_bool(a.b && b.b);
            if (op == Op::BitXor) return of_bool(a.b != b.b);
            if (op == Op::Sub) type_error("operator '-' is not supported for bool (use '^' or 'not')", span);
        }
        if (a.kind == Kind::Complex || b.kind == Kind::Complex)
            return complex_binary(op, as_complex(a, span), as_complex(b, span), span);
        if (a.kind == Kind::Float || b.kind == Kind::Float)
            return float_binary(op, as_float(a, span), as_float(b, span), span);
        return int_binary(op, as_int(a), as_int(b), span);
    }

    Num int_binary(Op op, const Big& a, const Big& b, SourceSpan span) const {
        Big r;
        if (op == Op::Add) r = a + b;
        else if (op == Op::Sub) r = a - b;
        else if (op == Op::Mul) {
            if (bit_length(a) + bit_length(b) > static_cast<std::size_t>(kMaxLiteralBits) + 1) too_large(span);
            r = a * b;
        } else if (op == Op::Div) {
            if (b == 0) value_error("division by zero", span);
            return of_float(true_divide(a, b, span));
        } else if (op == Op::FloorDiv || op == Op::Mod) {
            if (b == 0) value_error("integer division or modulo by zero", span);
            Big q = a / b, m = a % b;  // truncating
            if (m != 0 && ((m < 0) != (b < 0))) {
                q -= 1;
                m += b;
            }
            r = op == Op::FloorDiv ? q : m;
        } else if (op == Op::Pow) {
            return int_power(a, b, span);
        } else if (op == Op::BitAnd) r = a & b;
        else if (op == Op::BitOr) r = a | b;
        else if (op == Op::BitXor) r = a ^ b;
        else if (op == Op::Shl || op == Op::Shr) {
            if (b < 0) value_error("negative shift count", span);
            if (op == Op::Shr) {
                if (b >= Big(bit_length(a))) r = a < 0 ? Big(-1) : Big(0);
                else r = a >> b.convert_to<unsigned>();  // floors, as Python's
            } else if (a == 0) {
                r = 0;
            } else {
                if (b > Big(kMaxLiteralBits)) too_large(span);
                r = a << b.convert_to<unsigned>();
            }
        } else {
            throw InternalError(fmt::format("literal fold: unknown operator {}", ir::info(op).id));
        }
        check_bits(r, span);
        return of_int(std::move(r));
    }

    Num int_power(const Big& a, const Big& b, SourceSpan span) const {
        if (b < 0) {  // Python: a float power
            if (a == 0) value_error("0.0 cannot be raised to a negative power", span);
            return float_binary(Op::Pow, int_to_float(a, span), int_to_float(b, span), span);
        }
        if (a == 0) return of_int(b == 0 ? 1 : 0);
        if (a == 1) return of_int(1);
        if (a == -1) return of_int(boost::multiprecision::bit_test(b, 0) ? -1 : 1);
        // |a| >= 2: the result has at least b bits.
        if (b > Big(kMaxLiteralBits) ||
            (bit_length(a) - 1) * b.convert_to<std::size_t>() >= static_cast<std::size_t>(kMaxLiteralBits))
            too_large(span);
        Big r = boost::multiprecision::pow(a, b.convert_to<unsigned>());
        check_bits(r, span);
        return of_int(std::move(r));
    }

    // a / b correctly rounded, as Python's int / int.
    double true_divide(Big a, Big b, SourceSpan span) const {
        const bool neg = (a < 0) != (b < 0);
        a = abs(a);
        b = abs(b);
        if (a == 0) return neg ? -0.0 : 0.0;
        double q;
        if (bit_length(a) <= 53 && bit_length(b) <= 53) {
            q = a.convert_to<double>() / b.convert_to<double>();  // both exact: one rounding
        } else {
            // A quotient of 55 or 56 bits with a sticky bit, rounded once to a double. (A
            // subnormal quotient may round twice; Python does the same in ldexp's place.)
            const long shift = static_cast<long>(bit_length(b)) - static_cast<long>(bit_length(a)) + 55;
            const Big n = shift >= 0 ? Big(a << static_cast<unsigned>(shift)) : a;
            const Big d = shift >= 0 ? b : Big(b << static_cast<unsigned>(-shift));
            Big rem;
            Big quo;
            boost::multiprecision::divide_qr(n, d, quo, rem);
            std::uint64_t top = quo.convert_to<std::uint64_t>();
            if (rem != 0) top |= 1;
            if (shift > 1200) {
                q = 0.0;
            } else {
                q = std::ldexp(static_cast<double>(top), static_cast<int>(-shift));
            }
        }
        if (std::isinf(q)) value_error("integer division result too large for a float", span);
        return neg ? -q : q;
    }

    Num float_binary(Op op, double a, double b, SourceSpan span) const {
        if (op == Op::Add) return of_float(a + b);
        if (op == Op::Sub) return of_float(a - b);
        if (op == Op::Mul) return of_float(a * b);
        if (op == Op::Div) {
            if (b == 0.0) value_error("float division by zero", span);
            return of_float(a / b);
        }
        if (op == Op::FloorDiv || op == Op::Mod) {
            if (b == 0.0)
                value_error(op == Op::FloorDiv ? "float floor division by zero" : "float modulo by zero", span);
            // Python's float divmod: the remainder takes the divisor's sign.
            double mod = std::fmod(a, b);
            double div = (a - mod) / b;
            if (mod != 0.0) {
                if ((b < 0) != (mod < 0)) {
                    mod += b;
                    div -= 1.0;
                }
            } else {
                mod = std::copysign(0.0, b);
            }
            double floordiv;
            if (div != 0.0) {
                floordiv = std::floor(div);
                if (div - floordiv > 0.5) floordiv += 1.0;
            } else {
                floordiv = std::copysign(0.0, a / b);
            }
            return of_float(op == Op::FloorDiv ? floordiv : mod);
        }
        if (op == Op::Pow) return float_power(a, b, span);
        type_error(fmt::format("operator '{}' is not supported for float", ir::spelling(op)), span);
    }

    Num float_power(double a, double b, SourceSpan span) const {
        if (b == 0.0) return of_float(1.0);
        if (a == 0.0 && b < 0.0) value_error("0.0 cannot be raised to a negative power", span);
        if (std::isfinite(a) && std::isfinite(b) && a < 0.0 && b != std::floor(b))
            return complex_binary(Op::Pow, {a, 0.0}, {b, 0.0}, span);  // Python gives a complex
        const double r = std::pow(a, b);
        if (std::isinf(r) && std::isfinite(a) && std::isfinite(b)) value_error("float power result too large", span);
        return of_float(r);
    }

    Num complex_binary(Op op, std::complex<double> a, std::complex<double> b, SourceSpan span) const {
        const double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
        if (op == Op::Add) return of_complex({ar + br, ai + bi});
        if (op == Op::Sub) return of_complex({ar - br, ai - bi});
        if (op == Op::Mul) return of_complex({ar * br - ai * bi, ar * bi + ai * br});
        if (op == Op::Div) {
            if (br == 0.0 && bi == 0.0) value_error("complex division by zero", span);
            return of_complex(divide(a, b));
        }
        if (op == Op::Pow) {
            if (br == 0.0 && bi == 0.0) return of_complex({1.0, 0.0});
            if (ar == 0.0 && ai == 0.0) {
                if (bi != 0.0 || br < 0.0) value_error("0.0 cannot be raised to a negative or complex power", span);
                return of_complex({0.0, 0.0});
            }
            std::complex<double> r;
            if (bi == 0.0 && br == std::floor(br) && std::fabs(br) <= 100.0) {
                // Small integer powers by repeated squaring, as Python does.
                long n = static_cast<long>(br);
                std::complex<double> x = a, p(1.0, 0.0);
                for (unsigned long e = static_cast<unsigned long>(n < 0 ? -n : n); e; e >>= 1) {
                    if (e & 1)
                        p = {p.real() * x.real() - p.imag() * x.imag(), p.real() * x.imag() + p.imag() * x.real()};
                    x = {x.real() * x.real() - x.imag() * x.imag(), 2 * x.real() * x.imag()};
                }
                r = n < 0 ? divide({1.0, 0.0}, p) : p;
            } else {
                const double vabs = std::hypot(ar, ai);
                double len = std::pow(vabs, br);
                const double at = std::atan2(ai, ar);
                double phase = at * br;
                if (bi != 0.0) {
                    len /= std::exp(at * bi);
                    phase += bi * std::log(vabs);
                }
                r = {len * std::cos(phase), len * std::sin(phase)};
            }
            if (!std::isfinite(r.real()) || !std::isfinite(r.imag()))
                value_error("complex power result too large", span);
            return of_complex(r);
        }
        type_error(fmt::format("operator '{}' is not supported for complex", ir::spelling(op)), span);
    }

    static std::complex<double> divide(std::complex<double> a, std::complex<double> b) {
        // Scaled by the larger part of the divisor (Smith), as Python's complex division.
        const double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
        if (std::fabs(br) >= std::fabs(bi)) {
            const double ratio = bi / br, denom = br + bi * ratio;
            return {(ar + ai * ratio) / denom, (ai - ar * ratio) / denom};
        }
        const double ratio = br / bi, denom = br * ratio + bi;
        return {(ar * ratio + ai) / denom, (ai * ratio - ar) / denom};
    }

    std::string_view text_;
    const ConstantLookup& constant_;
};

Folded to_folded(const Num& n) {
    Folded f;
    f.kind = n.kind;
    switch (n.kind) {
        case Kind::Bool: f.value = ir::Value::of_bool(n.b); break;
        case Kind::Float: f.value = ir::Value::of_float(n.f); break;
        case Kind::Complex: f.value = ir::Value::of_complex(n.c); break;
        case Kind::Int:
            if (n.i >= std::numeric_limits<std::int64_t>::min() && n.i <= std::numeric_limits<std::int64_t>::max()) {
                f.value = ir::Value::of_int(n.i.convert_to<std::int64_t>());
            } else if (n.i > 0 && n.i <= std::numeric_limits<std::uint64_t>::max()) {
                f.value = ir::Value::of_uint(n.i.convert_to<std::uint64_t>());
            } else {
                f.big = true;
                f.value = ir::Value::of_int(0);
                f.digits = n.i.str();
                f.shown = short_digits(n.i);
                f.as_float = to_double(n.i);
            }
            break;
    }
    return f;
}

}  // namespace

namespace {
// The operators the Evaluator computes as Python does: an operator of the op table it does not
// know leaves its literal operands to lowering (NumPy's rules on weak scalars).
bool python_folds(Op op) {
    switch (op) {
        case Op::Add:
        case Op::Sub:
        case Op::Mul:
        case Op::Div:
        case Op::FloorDiv:
        case Op::Mod:
        case Op::Pow:
        case Op::BitAnd:
        case Op::BitOr:
        case Op::BitXor:
        case Op::Shl:
        case Op::Shr:
        case Op::Lt:
        case Op::Le:
        case Op::Eq:
        case Op::Ne:
        case Op::Ge:
        case Op::Gt:
        case Op::And:
        case Op::Or:
        case Op::Neg:
        case Op::Pos:
        case Op::Invert:
        case Op::Not: return true;
        default: return false;
    }
}
}  // namespace

bool LiteralFolder::is_literal(const Expr& e) const {
    switch (e.kind) {
        case ExprKind::Int:
        case ExprKind::Float:
        case ExprKind::Imag:
        case ExprKind::Bool: return true;
        case ExprKind::Name: return constant_ && constant_(e.text).has_value();
        case ExprKind::Unary:
        case ExprKind::Chain: {
            // Remembered: lowering asks at every level of a nested expression.
            if (auto it = memo_.find(&e); it != memo_.end()) return it->second;
            bool all = std::all_of(e.ops.begin(), e.ops.end(), python_folds);
            for (const auto& o : e.operands) all = all && is_literal(*o);
            memo_.emplace(&e, all);
            return all;
        }
        default: return false;
    }
}

Folded LiteralFolder::fold(const Expr& e) const {
    Evaluator ev(text_, constant_);
    return to_folded(ev.eval(e));
}

Folded LiteralFolder::fold_chain(const Expr& chain, std::size_t first, std::size_t last) const {
    Evaluator ev(text_, constant_);
    return to_folded(ev.chain(chain, first, last));
}

}  // namespace jit::dsl

// jitexpr — lowering, dates and durations: datetime64 and timedelta64 with NumPy 2's rules
// (dsl/dates.hpp), every operation lowered to int64 work, so that no backend knows them (the
// class: dsl/lower/lowerer.hpp).
//
// A value of a date or duration dtype is a node of that dtype, whose int64 count the backends
// compute; its operations are int64 nodes built here: a change of unit is a multiply or a floor
// division (a date of Y or M goes through the calendar), and NaT (INT64_MIN) follows NumPy's
// rules through compares and selects: arithmetic with NaT gives NaT, a comparison with NaT is
// False (!= True). The nodes keep their date dtypes while the program is checked; erase_temporal()
// makes them int64 at the end, leaving the dtypes only on the inputs and outputs (InputDecl and
// OutputDecl::temporal), where the runtime relabels the arrays.
#include "dsl/lower/lowerer.hpp"

#include "core/calendar.hpp"
#include "dsl/dates.hpp"

#include <functional>

namespace jit::dsl::lowering {

namespace {

// How a value takes part in date arithmetic.
enum class Kind : std::uint8_t { Date, Delta, Int, Float, Other };

std::string unit_pair(DType a, DType b) { return fmt::format("{} and {}", dtype_name(a), dtype_name(b)); }

// The name an op is called by as a function (equal, not ==).
std::string_view function_name(const ir::OpInfo& oi) {
    const std::string_view names = oi.names;
    return names.empty() ? ir::spelling(oi.op) : names.substr(0, names.find('|'));
}

bool is_int_like(DType t) { return is_integer(t) || is_bool(t); }

// How many of unit u (finer than D) make a day; below NumPy's factor limit wherever asked.
std::int64_t core_units_per_day(TimeUnit u) { return static_cast<std::int64_t>(core::units_per(TimeUnit::D, u)); }

}  // namespace

// ---- small builders

ir::NodeId Lowerer::int64_op(Op op, ir::NodeId a, ir::NodeId b, SourceSpan span) {
    const bool predicate = ir::info(op).rule == ir::Rule::Compare || ir::info(op).rule == ir::Rule::Logical;
    return op_node(op, predicate ? DType::Bool : DType::Int64, broadcast(node(a).shape, node(b).shape, span), {a, b},
                   span);
}

// Whether x may be NaT: not when it is a constant of another value.
bool Lowerer::can_be_nat(ir::NodeId x) const {
    const Node& n = node(x);
    return n.kind != NodeKind::Const || n.value.i == kNaT;
}

// True where x is NaT: none when x is a constant that is not (so the caller adds no test).
std::optional<ir::NodeId> Lowerer::nat_mask(ir::NodeId x, SourceSpan span) {
    if (node(x).kind == NodeKind::Const) {
        if (node(x).value.i != kNaT) return std::nullopt;
        return constant(ir::Value::of_bool(true), span);
    }
    const ir::NodeId nat = nat_const(node(x).dtype, span);  // (adding a node moves the others)
    return op_node(Op::Eq, DType::Bool, node(x).shape, {x, nat}, span);
}

namespace {
std::optional<ir::NodeId> either(std::optional<ir::NodeId> a, std::optional<ir::NodeId> b,
                                 const std::function<ir::NodeId(ir::NodeId, ir::NodeId)>& or_) {
    if (!a) return b;
    if (!b) return a;
    return or_(*a, *b);
}
}  // namespace

// `value` labelled `label` (a node of its own when it has another dtype), NaT where `mask`.
ir::NodeId Lowerer::with_nat(std::optional<ir::NodeId> mask, ir::NodeId value, DType label, SourceSpan span) {
    if (!mask) {
        if (node(value).dtype == label) return value;
        Node c;
        c.kind = NodeKind::Cast;  // the same int64 once erased: only the label changes
        c.dtype = label;
        c.shape = node(value).shape;
        c.args[0] = value;
        c.nargs = 1;
        c.span = span;
        return add(std::move(c));
    }
    const ir::NodeId nat = is_temporal(label) ? nat_const(label, span) : int64_const(0, span);
    Shape s = broadcast(node(*mask).shape, node(value).shape, span);
    return op_node(Op::Where, label, std::move(s), {*mask, nat, value}, span);
}

// x / n rounded towards zero (C's division, as NumPy's timedelta64 / int), for n != 0 and x not
// INT64_MIN: (x - fmod(x, n)) // n, an exact division.
ir::NodeId Lowerer::trunc_div(ir::NodeId x, ir::NodeId n, SourceSpan span) {
    const ir::NodeId r = int64_op(Op::Fmod, x, n, span);
    return int64_op(Op::FloorDiv, int64_op(Op::Sub, x, r, span), n, span);
}

// A Bool array of shape s, every element v.
ir::NodeId Lowerer::all_of_shape(bool v, Shape s, SourceSpan span) {  // (s by value: nodes move)
    const ir::NodeId c = constant(ir::Value::of_bool(v), span);
    return s.empty() ? c : fresh(c, s, span);
}

std::string Lowerer::describe(const Val& v) const {
    switch (v.weak) {
        case Weak::Bool: return "a Python bool";
        case Weak::Int: return "a Python int";
        case Weak::Float: return "a Python float";
        case Weak::Complex: return "a Python complex";
        case Weak::None: break;
    }
    return std::string(dtype_name(dt(v)));
}

void Lowerer::check_binding(const std::string& name, const Binding& b, SourceSpan span) const {
    if (!is_temporal(b.dtype)) return;
    if (b.kind == Binding::Kind::Scalar)
        type_error(fmt::format("'{}' is a host scalar of {}; a host scalar is a bool, int, float or complex (bind "
                               "a 0-d array for a date)",
                               name, dtype_name(b.dtype)),
                   span);
    if (time_unit(b.dtype) == TimeUnit::Generic)
        type_error(fmt::format("'{}' is a {} array of no unit (NumPy's generic unit); jitexpr takes {}64 of a unit: "
                               "convert it first, e.g. with .astype('{}[s]')",
                               name, dtype_name(b.dtype), is_datetime(b.dtype) ? "datetime" : "timedelta",
                               dtype_name(b.dtype)),
                   span);
}

// ---- conversions

// x (a date or duration) in dtype `to` of the same kind, as NumPy converts (dsl/dates.hpp).
ir::NodeId Lowerer::convert_unit(ir::NodeId x, DType to, SourceSpan span) {
    const DType from = node(x).dtype;
    if (from == to) return x;
    dates::UnitError why = dates::UnitError::None;
    const auto plan = dates::conversion(time_unit(from), time_unit(to), is_datetime(to), &why);
    if (!plan)
        type_error(why == dates::UnitError::Nonlinear
                       ? fmt::format("cannot convert {} to {}: a month or a year has no fixed length in days (NumPy: "
                                     "incompatible nonlinear base time units)",
                                     dtype_name(from), dtype_name(to))
                       : fmt::format("cannot convert {} to {}: the units are too far apart (NumPy: integer overflow "
                                     "getting a common metadata divisor)",
                                     dtype_name(from), dtype_name(to)),
                   span);
    const Node& n = node(x);
    if (n.kind == NodeKind::Const) {
        const auto v = dates::convert(n.value.i, time_unit(from), time_unit(to), is_datetime(to));
        if (!v) {
            const std::string shown = is_datetime(from)
                                          ? fmt::format("'{}'", datetime_string(n.value.i, time_unit(from)))
                                          : fmt::format("{} {}", n.value.i, time_unit_code(time_unit(from)));
            throw ValueError(fmt::format("{} does not fit {}: {}", shown, dtype_name(to), dates::range_text(to)), text_,
                             n.span);
        }
        return constant(ir::Value::of_temporal(*v, to), n.span);
    }
    const std::optional<ir::NodeId> nat = nat_mask(x, span);
    auto k = [&](std::int64_t v) { return int64_const(v, span); };
    auto op = [&](Op o, ir::NodeId a, ir::NodeId b) { return int64_op(o, a, b, span); };
    ir::NodeId r = x;
    switch (plan->how) {
        case dates::Conversion::Same: return with_nat(std::nullopt, x, to, span);
        case dates::Conversion::Multiply: r = op(Op::Mul, x, k(plan->factor)); break;
        case dates::Conversion::FloorDivide: r = op(Op::FloorDiv, x, k(plan->factor)); break;
        case dates::Conversion::FromCalendar: {
            // The first day of the year or month: with y the year and mp the month counted from
            // March (so that a leap day ends the year), days = 365 y + y//4 - y//100 + y//400 +
            // (153 mp + 2)//5 - 719468 (H. Hinnant's days_from_civil).
            ir::NodeId y, doy;
            if (time_unit(from) == TimeUnit::Y) {
                y = op(Op::Add, x, k(1969));  // January belongs to the March year before
                doy = k((153 * 10 + 2) / 5);
            } else {
                const ir::NodeId b = op(Op::Add, x, k(1970 * 12 - 2));  // months since 0000-03
                y = op(Op::FloorDiv, b, k(12));
                const ir::NodeId mp = op(Op::Sub, b, op(Op::Mul, y, k(12)));
                doy = op(Op::FloorDiv, op(Op::Add, op(Op::Mul, mp, k(153)), k(2)), k(5));
            }
            ir::NodeId days = op(Op::Mul, y, k(365));
            days = op(Op::Add, days, op(Op::FloorDiv, y, k(4)));
            days = op(Op::Sub, days, op(Op::FloorDiv, y, k(100)));
            days = op(Op::Add, days, op(Op::FloorDiv, y, k(400)));
            days = op(Op::Add, days, op(Op::Sub, doy, k(719468)));
            const TimeUnit u = time_unit(to);
            if (u == TimeUnit::W) r = op(Op::FloorDiv, days, k(7));
            else if (u == TimeUnit::D) r = days;
            else r = op(Op::Mul, days, k(static_cast<std::int64_t>(core_units_per_day(u))));
            break;
        }
        case dates::Conversion::ToCalendar: {
            // The civil date of the day (H. Hinnant's civil_from_days), then its year or month.
            const TimeUnit u = time_unit(from);
            const ir::NodeId days = u == TimeUnit::W   ? op(Op::Mul, x, k(7))
                                    : u == TimeUnit::D ? x
                                                       : op(Op::FloorDiv, x, k(core_units_per_day(u)));
            const ir::NodeId z = op(Op::Add, days, k(719468));
            const ir::NodeId era = op(Op::FloorDiv, z, k(146097));
            const ir::NodeId doe = op(Op::Sub, z, op(Op::Mul, era, k(146097)));
            ir::NodeId yoe = op(Op::Sub, doe, op(Op::FloorDiv, doe, k(1460)));
            yoe = op(Op::Add, yoe, op(Op::FloorDiv, doe, k(36524)));
            yoe = op(Op::Sub, yoe, op(Op::FloorDiv, doe, k(146096)));
            yoe = op(Op::FloorDiv, yoe, k(365));
            ir::NodeId doy = op(Op::Add, op(Op::Mul, yoe, k(365)), op(Op::FloorDiv, yoe, k(4)));
            doy = op(Op::Sub, doe, op(Op::Sub, doy, op(Op::FloorDiv, yoe, k(100))));
            const ir::NodeId mp = op(Op::FloorDiv, op(Op::Add, op(Op::Mul, doy, k(5)), k(2)), k(153));
            // January and February (mp 10, 11) belong to the next civil year.
            const ir::NodeId jan_feb = cast(Val{op(Op::Ge, mp, k(10)), Weak::None}, DType::Int64, span);
            const ir::NodeId year = op(Op::Add, op(Op::Add, yoe, op(Op::Mul, era, k(400))), jan_feb);
            const ir::NodeId years = op(Op::Sub, year, k(1970));
            if (time_unit(to) == TimeUnit::Y) {
                r = years;
            } else {
                const ir::NodeId month0 = op(Op::Mod, op(Op::Add, mp, k(2)), k(12));  // January = 0
                r = op(Op::Add, op(Op::Mul, years, k(12)), month0);
            }
            break;
        }
    }
    return with_nat(nat, r, to, span);
}

// Converts v to t where either is a date or duration (Lowerer::cast calls this).
ir::NodeId Lowerer::temporal_cast(const Val& v, DType t, SourceSpan span) {
    const Node& n = node(v.node);
    const DType f = n.dtype;
    if (f == t) return v.node;
    if (is_temporal(f) && is_temporal(t)) {
        if (is_datetime(f) != is_datetime(t))
            type_error(fmt::format("cannot convert {} to {}: a date is not a duration", dtype_name(f), dtype_name(t)),
                       span);
        return convert_unit(v.node, t, span);
    }
    if (is_temporal(t)) {  // a count of the unit
        if (!is_int_like(f))
            type_error(fmt::format("cannot convert {} to {}: a date or duration is an integer count of its unit",
                                   describe(v), dtype_name(t)),
                       span);
        const ir::NodeId x = cast(v, DType::Int64, span);  // a Python int must fit int64
        if (node(x).kind == NodeKind::Const) return constant(ir::Value::of_temporal(node(x).value.i, t), node(x).span);
        return with_nat(std::nullopt, x, t, span);
    }
    // A date or duration as a number: its count, as NumPy's astype (NaT is INT64_MIN).
    const ir::NodeId x = n.kind == NodeKind::Const ? constant(ir::Value::of_int(n.value.i), n.span)
                                                   : with_nat(std::nullopt, v.node, DType::Int64, span);
    return t == DType::Int64 ? x : cast(Val{x, Weak::None}, t, span);
}

// ---- datetime64(...) and timedelta64(...)

Val Lowerer::date_call(const Expr& e, bool datetime) {
    const std::string& fname = e.text;
    if (!e.keywords.empty())
        throw TypeError(fmt::format("{}() got an unexpected keyword argument '{}'", fname, e.keywords[0].name), text_,
                        e.keywords[0].name_span);
    if (e.operands.empty() || e.operands.size() > 2)
        type_error(
            fmt::format("{}() takes 1 or 2 arguments, the value and a unit ({} given)", fname, e.operands.size()),
            e.span);
    const Expr& value = *e.operands[0];
    std::optional<TimeUnit> unit;
    if (e.operands.size() == 2) {
        const Expr& u = *e.operands[1];
        if (u.kind != ExprKind::Str)
            type_error(fmt::format("the unit of {}() is a string literal: 'Y', 'M', 'W', 'D', 'h', 'm', 's', 'ms', "
                                   "'us', 'ns', 'ps', 'fs' or 'as'",
                                   fname),
                       u.span);
        unit = time_unit_from_code(u.text);
        if (!unit) {
            const bool multiple = !u.text.empty() && u.text[0] >= '0' && u.text[0] <= '9';
            type_error(multiple ? fmt::format("'{}' is a multiple of a unit, which jitexpr does not take: use one unit "
                                              "('s', 'ms', ...) and scale the count",
                                              u.text)
                                : fmt::format("'{}' is not a unit of {}: 'Y', 'M', 'W', 'D', 'h', 'm', 's', 'ms', "
                                              "'us', 'ns', 'ps', 'fs' or 'as'",
                                              u.text, fname),
                       u.span);
        }
    }
    auto kind_of = [&](TimeUnit u) { return datetime ? datetime_of(u) : timedelta_of(u); };
    auto literal_of = [&](std::int64_t v, TimeUnit u) {
        if (unit && *unit != u) {
            const auto c = dates::convert(v, u, *unit, datetime, /*limited=*/false);
            if (!c) {
                dates::UnitError why = dates::UnitError::None;
                if (!dates::conversion(u, *unit, datetime, &why, /*limited=*/false))
                    type_error(fmt::format("{}: {} cannot be converted to {}", fname, dtype_name(kind_of(u)),
                                           dtype_name(kind_of(*unit))),
                               e.span);
                throw ValueError(
                    fmt::format("{}() of {} does not fit {}: {}", fname,
                                value.kind == ExprKind::Str ? fmt::format("'{}'", value.text) : std::to_string(v),
                                dtype_name(kind_of(*unit)), dates::range_text(kind_of(*unit))),
                    text_, e.span);
            }
            v = *c;
            u = *unit;
        }
        return Val{constant(ir::Value::of_temporal(v, kind_of(u)), e.span), Weak::None};
    };
    if (value.kind == ExprKind::Str) {
        if (datetime) {
            std::string err;
            const auto d = dates::parse_datetime(value.text, &err, unit);
            if (!d) throw ValueError(err, text_, value.span);
            return literal_of(d->value, d->unit);
        }
        // timedelta64('NaT'), timedelta64('5', 'm'): NaT or an integer count
        std::string_view s = value.text;
        if (s.empty() || s == "NaT" || s == "nat" || s == "NAT") return literal_of(kNaT, TimeUnit::Generic);
        const bool neg = s[0] == '-';
        if (neg || s[0] == '+') s.remove_prefix(1);
        __int128 v = 0;
        bool ok = !s.empty();
        for (const char c : s) {
            ok = ok && c >= '0' && c <= '9' && v < (static_cast<__int128>(1) << 64);
            if (ok) v = v * 10 + (c - '0');
        }
        if (neg) v = -v;
        if (!ok || v > std::numeric_limits<std::int64_t>::max() || v < std::numeric_limits<std::int64_t>::min())
            throw ValueError(fmt::format("'{}' is not a count of a duration: an integer or 'NaT'", value.text), text_,
                             value.span);
        return literal_of(static_cast<std::int64_t>(v), unit ? *unit : TimeUnit::Generic);
    }
    if (value.kind == ExprKind::Bytes)
        type_error(fmt::format("{}() takes a str (a date, a count or 'NaT'), not bytes", fname), value.span);
    if (folder_.is_literal(value)) {
        const Folded f = folder_.fold(value);
        if (f.kind == Folded::Kind::Float || f.kind == Folded::Kind::Complex)
            throw ValueError(fmt::format("{}() takes an integer count of the unit, not a Python {}", fname,
                                         f.kind == Folded::Kind::Float ? "float" : "complex"),
                             text_, value.span);
        if (f.big || (is_unsigned_int(f.value.dtype) &&
                      f.value.u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
            throw ValueError(fmt::format("{}() of {}: the count does not fit int64", fname, f.shown), text_,
                             value.span);
        if (datetime && !unit)
            throw ValueError("datetime64() of an integer needs a unit, as in datetime64(0, 's') (NumPy's rule)", text_,
                             e.span);
        const std::int64_t v = f.kind == Folded::Kind::Bool ? (f.value.b ? 1 : 0) : f.value.cast(DType::Int64).i;
        return Val{constant(ir::Value::of_temporal(v, kind_of(unit ? *unit : TimeUnit::Generic)), e.span), Weak::None};
    }
    // An expression: its values in the unit (NumPy's astype): a date or duration of another
    // unit converted, an integer taken as a count of the unit.
    Val a = expr(value);
    const Sel sel = a.selected() ? unselect({&a}, e.span) : Sel{};
    const DType from = dt(a);
    if (is_temporal(from) && is_datetime(from) != datetime)
        type_error(fmt::format("{}() of a {} array: a date is not a duration", fname, dtype_name(from)), value.span);
    if (!is_temporal(from) && !is_int_like(from))
        type_error(fmt::format("{}() of {}: a date or duration is an integer count of its unit", fname, describe(a)),
                   value.span);
    if (!unit && !is_temporal(from))
        type_error(fmt::format("{}() of an integer array needs a unit, as in {}(n, 's')", fname, fname), e.span);
    const DType to = unit ? kind_of(*unit) : from;
    Val r{cast(a, to, e.span), Weak::None};
    return sel.mask.valid() ? reselect(r, sel) : r;
}

// A comparison of a date or duration with a string literal. Text against a date is the date it
// writes, read as datetime64('...') reads it (its own unit, which then meets the date's as two
// dates' units do): `ts == '2024-03-01'` is `ts == datetime64('2024-03-01')`, as pandas reads such
// text against a datetime Series (NumPy 2's operators have no loop for it: its == is False
// everywhere and its < raises, which no filter means). A bytes literal is read the same way (it
// is what numexpr's dialect makes of '2024-03-01'; np.datetime64(b'...') reads bytes too). A
// duration against text stays NumPy's TypeError.
Val Lowerer::compare_with_text(Op op, const Val& a, const Val& b, SourceSpan span, bool function_form) {
    const bool left = is_string_literal(a);
    const Val& text = left ? a : b;
    const Val& other = left ? b : a;
    const ir::OpInfo& oi = ir::info(op);
    const std::string what = oi.kind == OpKind::Operator && !function_form ? fmt::format("operator '{}'", oi.token)
                                                                           : fmt::format("{}()", function_name(oi));
    if (!is_datetime(dt(other)))
        type_error(fmt::format("{} has no loop for {} and {}: text is read as a date only against a datetime64 (write "
                               "a duration as timedelta64(5, 'm'))",
                               what, dtype_name(dt(other)), dt(text) == DType::Bytes ? "bytes" : "str"),
                   span);
    const SourceSpan at = node(text.node).span;
    std::string err;
    const auto d = dates::parse_datetime(literal_text_.at(text.node), &err);
    if (!d)
        throw ValueError(fmt::format("{} (text compared with {} is read as a date, as datetime64() reads it)", err,
                                     dtype_name(dt(other))),
                         text_, at);
    const Val date{constant(ir::Value::of_temporal(d->value, datetime_of(d->unit)), at), Weak::None};
    return left ? binary(op, date, other, span, function_form) : binary(op, other, date, span, function_form);
}

Val Lowerer::isnat_call(const Expr& e) {
    if (!e.keywords.empty())
        throw TypeError(fmt::format("isnat() got an unexpected keyword argument '{}'", e.keywords[0].name), text_,
                        e.keywords[0].name_span);
    if (e.operands.size() != 1)
        type_error(fmt::format("isnat() takes 1 argument ({} given)", e.operands.size()), e.span);
    Val a = expr(*e.operands[0]);
    const Sel sel = a.selected() ? unselect({&a}, e.span) : Sel{};
    if (!temporal(a))
        type_error(
            fmt::format("isnat() is defined for datetime64 and timedelta64 only, not {} (NumPy's rule)", describe(a)),
            e.span);
    const auto m = nat_mask(a.node, e.span);
    const Val r{
        m ? (node(*m).shape == shape(a) ? *m : fresh(*m, shape(a), e.span)) : all_of_shape(false, shape(a), e.span),
        Weak::None};
    return sel.mask.valid() ? reselect(r, sel) : r;
}

// ---- operators and the functions of two operands

Val Lowerer::temporal_binary(Op op0, const Val& a, const Val& b, SourceSpan span, bool function_form) {
    const Op op = op0 == Op::DivmodQuotient ? Op::FloorDiv : op0 == Op::DivmodRemainder ? Op::Mod : op0;
    auto kind = [&](const Val& v) {
        const DType t = dt(v);
        if (is_datetime(t)) return Kind::Date;
        if (is_timedelta(t)) return Kind::Delta;
        if (v.weak == Weak::Int || v.weak == Weak::Bool || (v.weak == Weak::None && is_int_like(t))) return Kind::Int;
        if (v.weak == Weak::Float || (v.weak == Weak::None && is_float(t))) return Kind::Float;
        return Kind::Other;
    };
    const Kind ka = kind(a), kb = kind(b);
    const ir::OpInfo& oi = ir::info(op0);
    const std::string what = oi.kind == OpKind::Operator && !function_form ? fmt::format("operator '{}'", oi.token)
                                                                           : fmt::format("{}()", function_name(oi));
    auto refuse = [&](std::string_view hint = {}) -> Val {
        type_error(fmt::format("{} is not supported between {} and {}{}", what, describe(a), describe(b), hint), span);
    };
    const bool a_bool = is_bool(dt(a)) || a.weak == Weak::Bool, b_bool = is_bool(dt(b)) || b.weak == Weak::Bool;
    // The unit two values meet in, with NumPy's errors.
    auto meet = [&](const Val& x, const Val& y) -> TimeUnit {
        dates::UnitError why = dates::UnitError::None;
        const DType tx = dt(x), ty = dt(y);
        const auto u = dates::common_unit(time_unit(tx), is_timedelta(tx), time_unit(ty), is_timedelta(ty), &why);
        if (u) return *u;
        if (why == dates::UnitError::Nonlinear)
            type_error(fmt::format("{} has no common unit for {}: a month or a year has no fixed length in days "
                                   "(NumPy: incompatible nonlinear base time units)",
                                   what, unit_pair(tx, ty)),
                       span);
        type_error(fmt::format("{} has no common unit for {}: the units are too far apart for int64 (NumPy: integer "
                               "overflow getting a common metadata divisor)",
                               what, unit_pair(tx, ty)),
                   span);
    };
    auto shape_of = [&](ir::NodeId x, ir::NodeId y) { return broadcast(node(x).shape, node(y).shape, span); };
    auto either_nat = [&](ir::NodeId x, ir::NodeId y) -> std::optional<ir::NodeId> {
        if (node(x).kind != NodeKind::Const && node(y).kind != NodeKind::Const) {
            // minimum(x, y) is NaT, the least count, exactly where either is: one test
            const ir::NodeId m = int64_op(Op::Minimum, x, y, span);
            const ir::NodeId nat = int64_const(kNaT, span);
            return op_node(Op::Eq, DType::Bool, node(m).shape, {m, nat}, span);
        }
        return either(nat_mask(x, span), nat_mask(y, span),
                      [&](ir::NodeId p, ir::NodeId q) { return int64_op(Op::Or, p, q, span); });
    };

    // and, or, logical_xor: each operand as a bool (NumPy's logical_and takes a duration so).
    if (oi.rule == ir::Rule::Logical) {
        const Val x = temporal(a) ? Val{cast(a, DType::Bool, span), Weak::None} : a;
        const Val y = temporal(b) ? Val{cast(b, DType::Bool, span), Weak::None} : b;
        return binary(op0, x, y, span, function_form);
    }

    // Two values of one kind (or a duration and an integer) in their common dtype.
    auto pair = [&](bool allow_int) -> std::optional<std::pair<ir::NodeId, ir::NodeId>> {
        if ((ka == Kind::Date && kb == Kind::Date) || (ka == Kind::Delta && kb == Kind::Delta)) {
            const TimeUnit u = meet(a, b);
            const DType t = ka == Kind::Date ? datetime_of(u) : timedelta_of(u);
            return std::pair{cast(a, t, span), cast(b, t, span)};
        }
        if (allow_int && ((ka == Kind::Delta && kb == Kind::Int) || (ka == Kind::Int && kb == Kind::Delta))) {
            const DType t = ka == Kind::Delta ? dt(a) : dt(b);
            return std::pair{cast(a, t, span), cast(b, t, span)};
        }
        return std::nullopt;
    };

    if (oi.rule == ir::Rule::Compare) {
        // NumPy's == and != between values it cannot compare are False and True (the
        // operator's fallback, not the ufunc's).
        const bool eq = op == Op::Eq || op == Op::Ne;
        const auto xy = pair(true);
        if (!xy) {
            if (eq && !function_form)
                return Val{all_of_shape(op == Op::Ne, broadcast(shape(a), shape(b), span), span), Weak::None};
            return refuse(ka == Kind::Date || kb == Kind::Date ? " (a date compares with a date only)" : "");
        }
        const auto [x, y] = *xy;
        ir::NodeId r = op_node(op, DType::Bool, shape_of(x, y), {x, y}, span);
        // NaT is INT64_MIN, below every count and equal to itself: the comparisons it would pass
        // are taken back. == and != are wrong only where both are NaT, < and <= where the left
        // one is, > and >= where the right one is; a constant that is not NaT needs no test.
        const bool both = can_be_nat(x) && can_be_nat(y);
        auto unless_nat = [&](ir::NodeId v) {  // r and v != NaT
            const ir::NodeId nat = nat_const(node(v).dtype, span);
            r = int64_op(Op::And, r, op_node(Op::Ne, DType::Bool, node(v).shape, {v, nat}, span), span);
        };
        switch (op) {
            case Op::Eq:
                if (both) unless_nat(x);
                break;
            case Op::Ne:
                if (both) r = int64_op(Op::Or, r, *nat_mask(x, span), span);
                break;
            case Op::Lt:
            case Op::Le:
                if (can_be_nat(x)) unless_nat(x);
                break;
            case Op::Gt:
            case Op::Ge:
                if (can_be_nat(y)) unless_nat(y);
                break;
            default: break;
        }
        if (node(r).shape != broadcast(shape(a), shape(b), span))
            r = fresh(r, broadcast(shape(a), shape(b), span), span);
        return Val{r, Weak::None};
    }

    if (op == Op::Maximum || op == Op::Minimum || op == Op::Fmax || op == Op::Fmin) {
        const auto xy = pair(true);
        if (!xy) return refuse();
        const auto [x, y] = *xy;
        const DType t = node(x).dtype;
        const ir::NodeId r = op_node(op == Op::Fmin   ? Op::Minimum
                                     : op == Op::Fmax ? Op::Maximum
                                                      : op,
                                     t, shape_of(x, y), {x, y}, span);
        switch (op) {
            case Op::Maximum: {
                // NaT must win, but is the least count: maximum(x - 1, y - 1) + 1 in wrapping
                // int64, where NaT - 1 is the greatest count and + 1 makes it NaT again.
                if (!can_be_nat(x) && !can_be_nat(y)) return Val{r, Weak::None};
                const ir::NodeId one = int64_const(1, span);
                const ir::NodeId m = op_node(Op::Maximum, DType::Int64, shape_of(x, y),
                                             {int64_op(Op::Sub, x, one, span), int64_op(Op::Sub, y, one, span)}, span);
                return Val{op_node(Op::Add, t, node(m).shape, {m, one}, span), Weak::None};
            }
            case Op::Minimum:  // NaT, the smallest count, wins already
            case Op::Fmax:     // NaT, the smallest count, loses already
                return Val{r, Weak::None};
            default: {  // fmin: the other where one is NaT
                const auto nx = nat_mask(x, span), ny = nat_mask(y, span);
                ir::NodeId v = r;
                if (ny) v = select(*ny, x, v, span);
                if (nx) v = select(*nx, y, v, span);
                return Val{with_nat(std::nullopt, v, t, span), Weak::None};
            }
        }
    }

    // A date plus or minus a duration (an integer is one of the date's unit).
    auto shifted = [&](const Val& date, const Val& delta, Op o) -> Val {
        const DType td = dt(date);
        const DType tdelta = is_temporal(dt(delta)) ? dt(delta) : DType::TimeDelta64_Generic;
        dates::UnitError why = dates::UnitError::None;
        const auto u = dates::common_unit(time_unit(td), false, time_unit(tdelta), false, &why);
        if (!u)
            type_error(fmt::format("{} has no common unit for {}: the units are too far apart for int64 (NumPy: "
                                   "integer overflow getting a common metadata divisor)",
                                   what, unit_pair(td, tdelta)),
                       span);
        if (!dates::conversion(time_unit(tdelta), *u, false, nullptr))
            type_error(fmt::format("{} between {}: the duration cannot be made {}, as a month or a year has no fixed "
                                   "length in days (NumPy: cannot cast {} to {})",
                                   what, unit_pair(td, tdelta), dtype_name(timedelta_of(*u)), dtype_name(tdelta),
                                   dtype_name(timedelta_of(*u))),
                       span);
        const ir::NodeId x = cast(date, datetime_of(*u), span), y = cast(delta, timedelta_of(*u), span);
        const ir::NodeId r = op_node(o, datetime_of(*u), shape_of(x, y), {x, y}, span);
        return Val{with_nat(either_nat(x, y), r, datetime_of(*u), span), Weak::None};
    };

    switch (op) {
        case Op::Add:
        case Op::Sub: {
            if (ka == Kind::Date && (kb == Kind::Delta || kb == Kind::Int)) return shifted(a, b, op);
            if (op == Op::Add && kb == Kind::Date && (ka == Kind::Delta || ka == Kind::Int)) return shifted(b, a, op);
            if (op == Op::Sub && ka == Kind::Date && kb == Kind::Date) {
                const auto [x, y] = *pair(false);
                const DType t = timedelta_of(time_unit(node(x).dtype));
                const ir::NodeId r = op_node(Op::Sub, t, shape_of(x, y), {x, y}, span);
                return Val{with_nat(either_nat(x, y), r, t, span), Weak::None};
            }
            if (const auto xy = pair(true); xy && ka != Kind::Date) {
                const auto [x, y] = *xy;
                const DType t = node(x).dtype;
                const ir::NodeId r = op_node(op, t, shape_of(x, y), {x, y}, span);
                return Val{with_nat(either_nat(x, y), r, t, span), Weak::None};
            }
            if (ka == Kind::Date && kb == Kind::Date)
                return refuse(" (a date plus a date has no meaning: add a timedelta64, or subtract the dates)");
            if (ka == Kind::Date || kb == Kind::Date)
                return refuse(op == Op::Sub && kb == Kind::Date ? " (a duration minus a date has no meaning)" : "");
            return refuse();
        }
        case Op::Mul:
        case Op::Div:
        case Op::FloorDiv: {
            // A duration scaled by a number: `op` of the duration and the number, in that order
            // (a multiplication either way round).
            const bool delta_first = ka == Kind::Delta;
            const Val& d = delta_first ? a : b;
            const Val& n = delta_first ? b : a;
            const Kind kn = delta_first ? kb : ka;
            if (op != Op::Mul && ka == Kind::Delta && kb == Kind::Delta) {
                const auto [x, y] = *pair(false);
                const auto nat = either_nat(x, y);
                if (op == Op::Div) {  // float64, NaN where either is NaT
                    const ir::NodeId xf = cast(Val{x, Weak::None}, DType::Float64, span);
                    const ir::NodeId yf = cast(Val{y, Weak::None}, DType::Float64, span);
                    const ir::NodeId r = op_node(Op::Div, DType::Float64, shape_of(x, y), {xf, yf}, span);
                    if (!nat) return Val{r, Weak::None};
                    return Val{
                        select(*nat, const_of(std::numeric_limits<double>::quiet_NaN(), DType::Float64, span), r, span),
                        Weak::None};
                }
                // int64 floor division, 0 where either is NaT (and, as for integers, x // 0)
                return Val{with_nat(nat, int64_op(Op::FloorDiv, x, y, span), DType::Int64, span), Weak::None};
            }
            const bool ok = (ka == Kind::Delta) != (kb == Kind::Delta) && (kn == Kind::Int || kn == Kind::Float) &&
                            (op == Op::Mul || delta_first) && !(op != Op::Mul && (delta_first ? b_bool : a_bool));
            if (!ok) {
                if (ka == Kind::Date || kb == Kind::Date)
                    return refuse(" (a date is not scaled: only a timedelta64 is multiplied or divided)");
                if (op != Op::Mul && (delta_first ? b_bool : a_bool))
                    return refuse(" (NumPy divides a duration by an integer or a float, not a bool)");
                return refuse();
            }
            const DType t = dt(d);
            const ir::NodeId x = d.node;
            const auto nat = nat_mask(x, span);
            if (kn == Kind::Int) {
                const ir::NodeId m = cast(n, DType::Int64, span);
                if (op == Op::Mul) return Val{with_nat(nat, int64_op(Op::Mul, x, m, span), t, span), Weak::None};
                // timedelta64 / int and // int: C's division, towards zero; NaT for a divisor of 0
                const auto zero = node(m).kind == NodeKind::Const
                                      ? (node(m).value.i == 0 ? std::optional(constant(ir::Value::of_bool(true), span))
                                                              : std::nullopt)
                                      : std::optional(int64_op(Op::Eq, m, int64_const(0, span), span));
                const auto bad =
                    either(nat, zero, [&](ir::NodeId p, ir::NodeId q) { return int64_op(Op::Or, p, q, span); });
                return Val{with_nat(bad, trunc_div(x, m, span), t, span), Weak::None};
            }
            // A float: the count times (or over) it in float64, rounded towards zero; NaT where
            // that is NaN or past int64 (NumPy's loops).
            const ir::NodeId xf = cast(Val{x, Weak::None}, DType::Float64, span);
            const ir::NodeId f = cast(n, DType::Float64, span);
            const ir::NodeId r =
                op_node(op == Op::Mul ? Op::Mul : Op::Div, DType::Float64, shape_of(xf, f), {xf, f}, span);
            const ir::NodeId lo = const_of(-9223372036854775808.0, DType::Float64, span);
            const ir::NodeId hi = const_of(9223372036854775808.0, DType::Float64, span);
            const ir::NodeId inside = int64_op(Op::And, op_node(Op::Gt, DType::Bool, node(r).shape, {r, lo}, span),
                                               op_node(Op::Lt, DType::Bool, node(r).shape, {r, hi}, span), span);
            const ir::NodeId outside = op_node(Op::Not, DType::Bool, node(inside).shape, {inside}, span);
            const auto bad =
                either(nat, outside, [&](ir::NodeId p, ir::NodeId q) { return int64_op(Op::Or, p, q, span); });
            return Val{with_nat(bad, cast(Val{r, Weak::None}, DType::Int64, span), t, span), Weak::None};
        }
        case Op::Mod: {
            if (ka != Kind::Delta || kb != Kind::Delta)
                return refuse(ka == Kind::Delta ? " (NumPy's remainder of a duration is by a duration)" : "");
            const auto [x, y] = *pair(false);
            // NaT where either is NaT or the divisor is 0
            std::optional<ir::NodeId> zero;
            if (node(y).kind != NodeKind::Const) zero = int64_op(Op::Eq, y, int64_const(0, span), span);
            else if (node(y).value.i == 0) zero = constant(ir::Value::of_bool(true), span);
            const auto bad = either(either_nat(x, y), zero,
                                    [&](ir::NodeId p, ir::NodeId q) { return int64_op(Op::Or, p, q, span); });
            const DType t = node(x).dtype;
            return Val{with_nat(bad, int64_op(Op::Mod, x, y, span), t, span), Weak::None};
        }
        default: break;
    }
    return refuse();
}

Val Lowerer::temporal_unary(Op op, const Val& a, SourceSpan span) {
    const DType t = dt(a);
    auto refuse = [&]() -> Val {
        const ir::OpInfo& oi = ir::info(op);
        const std::string what =
            oi.kind == OpKind::Operator ? fmt::format("unary '{}'", oi.token) : fmt::format("{}()", ir::spelling(op));
        type_error(fmt::format("{} is not supported for {}", what, dtype_name(t)), span);
    };
    const auto shaped = [&](std::optional<ir::NodeId> m, bool v) {
        if (!m) return all_of_shape(v, shape(a), span);
        return node(*m).shape == shape(a) ? *m : fresh(*m, shape(a), span);
    };
    switch (op) {
        case Op::Pos:
            if (is_datetime(t)) return refuse();
            return a;
        case Op::Neg:
        case Op::Abs:
            // -NaT and abs(NaT) are NaT in int64's wrapping arithmetic, as in NumPy
            if (is_datetime(t)) return refuse();
            return Val{op_node(op, t, shape(a), {a.node}, span), Weak::None};
        case Op::Copy: return Val{op_node(op, t, shape(a), {a.node}, span), Weak::None};
        case Op::Isnan: return Val{shaped(nat_mask(a.node, span), false), Weak::None};
        case Op::Isfinite: {
            const auto m = nat_mask(a.node, span);
            if (!m) return Val{all_of_shape(true, shape(a), span), Weak::None};
            return Val{shaped(op_node(Op::Not, DType::Bool, node(*m).shape, {*m}, span), true), Weak::None};
        }
        case Op::Isinf: return Val{all_of_shape(false, shape(a), span), Weak::None};
        default: break;
    }
    return refuse();
}

// where(c, x, y) of dates or durations: the branches in their common dtype (NumPy's result_type).
Val Lowerer::temporal_where(const Val& c, const Val& x, const Val& y, SourceSpan span) {
    const DType tx = dt(x), ty = dt(y);
    const bool int_x = x.weak == Weak::Int || x.weak == Weak::Bool || (x.weak == Weak::None && is_int_like(tx));
    const bool int_y = y.weak == Weak::Int || y.weak == Weak::Bool || (y.weak == Weak::None && is_int_like(ty));
    DType t = tx;
    if (is_temporal(tx) && is_temporal(ty)) {
        if (is_datetime(tx) != is_datetime(ty))
            type_error(fmt::format("where() of {}: a date and a duration have no common dtype in jitexpr (NumPy "
                                   "would read the duration's count as a date)",
                                   unit_pair(tx, ty)),
                       span);
        dates::UnitError why = dates::UnitError::None;
        const auto u = dates::common_unit(time_unit(tx), is_timedelta(tx), time_unit(ty), is_timedelta(ty), &why);
        if (!u)
            type_error(
                fmt::format("where() has no common unit for {}{}", unit_pair(tx, ty),
                            why == dates::UnitError::Nonlinear ? ": a month or a year has no fixed length in days"
                                                               : ": the units are too far apart for int64"),
                span);
        t = is_datetime(tx) ? datetime_of(*u) : timedelta_of(*u);
    } else {
        const bool date = is_datetime(tx) || is_datetime(ty);
        if (date || !(is_temporal(tx) ? int_y : int_x))
            type_error(fmt::format("where() has no common dtype for {} and {}", describe(x), describe(y)), span);
        t = is_temporal(tx) ? tx : ty;
    }
    const ir::NodeId cb = cast(c, DType::Bool, span);
    const ir::NodeId xs = cast(x, t, span), ys = cast(y, t, span);
    Shape s = broadcast(broadcast(node(cb).shape, node(xs).shape, span), node(ys).shape, span);
    return Val{op_node(Op::Where, t, std::move(s), {cb, xs, ys}, span), Weak::None};
}

// clip(x, lo, hi) of dates or durations: minimum(maximum(x, lo), hi), NaT propagating (NumPy's).
Val Lowerer::temporal_clip(const std::vector<Val>& args, const Expr& e) {
    const Val lo = temporal_binary(Op::Maximum, args[0], args[1], e.span, true);
    return temporal_binary(Op::Minimum, lo, args[2], e.span, true);
}

// ---- the end of lowering: the program as the backends take it

void Lowerer::erase_temporal() {
    for (ir::OutputDecl& o : p_.outputs) {
        const Node& n = node(o.node);
        if (!is_temporal(n.dtype)) continue;
        if (time_unit(n.dtype) == TimeUnit::Generic)
            type_error(fmt::format("this value is a {} of no unit (NumPy's generic unit), which no array holds: give "
                                   "it one, as in {}64('NaT', 's')",
                                   dtype_name(n.dtype), is_datetime(n.dtype) ? "datetime" : "timedelta"),
                       n.span);
        o.temporal = n.dtype;
    }
    for (ir::InputDecl& in : p_.inputs)
        if (is_temporal(in.dtype)) {
            in.temporal = in.dtype;
            in.dtype = DType::Int64;
        }
    for (Node& n : p_.nodes) {
        if (is_temporal(n.dtype)) n.dtype = DType::Int64;
        if (is_temporal(n.value.dtype)) n.value.dtype = DType::Int64;
    }
}

}  // namespace jit::dsl::lowering

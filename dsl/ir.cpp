#include "dsl/ir.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace jit::ir {

Value Value::of_bool(bool v) {
    Value r;
    r.dtype = DType::Bool;
    r.b = v;
    return r;
}
Value Value::of_int(std::int64_t v, DType t) {
    Value r;
    r.dtype = DType::Int64;
    r.i = v;
    return t == DType::Int64 ? r : r.cast(t);
}
Value Value::of_uint(std::uint64_t v, DType t) {
    Value r;
    r.dtype = DType::UInt64;
    r.u = v;
    return t == DType::UInt64 ? r : r.cast(t);
}
Value Value::of_float(double v, DType t) {
    Value r;
    r.dtype = DType::Float64;
    r.f = v;
    return t == DType::Float64 ? r : r.cast(t);
}
Value Value::of_complex(std::complex<double> v, DType t) {
    Value r;
    r.dtype = DType::Complex128;
    r.f = v.real();
    r.im = v.imag();
    return t == DType::Complex128 ? r : r.cast(t);
}

namespace {

// Float to integer: truncate toward zero, NaN -> 0, saturate out of range (the CUDA
// conversion instructions' behaviour; dsl/semantics.h does the same).
template <class I>
I saturating_from_double(double v) {
    if (std::isnan(v)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
    if (v <= lo) return std::numeric_limits<I>::min();
    if (v >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(v);
}

float round_to_half(double v) {
    // Round a double to the nearest float16 value (ties to even), returned as float.
    float f = static_cast<float>(v);
    if (std::isnan(f) || std::isinf(f)) return f;
    float a = std::fabs(f);
    if (a >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), f);
    int e;
    std::frexp(a, &e);               // a = m * 2^e, m in [0.5, 1)
    int exp = std::max(e - 1, -14);  // unbiased exponent, subnormals below -14
    double quantum = std::ldexp(1.0, exp - 10);
    double q = std::nearbyint(static_cast<double>(v) / quantum) * quantum;  // default mode: ties to even
    return static_cast<float>(q);
}

float round_to_bfloat16(double v) {
    float f = static_cast<float>(v);
    if (std::isnan(f)) return f;
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::uint32_t lsb = (bits >> 16) & 1u;
    bits += 0x7FFFu + lsb;
    bits &= 0xFFFF0000u;
    float r;
    std::memcpy(&r, &bits, 4);
    return r;
}

}  // namespace

Value Value::of_temporal(std::int64_t v, DType t) {
    Value r;
    r.dtype = t;
    r.i = v;
    return r;
}

Value Value::cast(DType t) const {
    // A date or duration converts as its int64 count (the unit is dsl/lower/'s business); a value
    // becomes one as an int64.
    if (is_temporal(dtype)) return of_int(i).cast(t);
    if (is_temporal(t)) return of_temporal(cast(DType::Int64).i, t);
    Value r;
    r.dtype = t;
    // Source as the widest representations.
    const bool src_signed = is_signed_int(dtype), src_unsigned = is_unsigned_int(dtype);
    const bool src_bool = is_bool(dtype), src_complex = is_complex(dtype);
    auto as_i64 = [&]() -> std::int64_t {
        if (src_bool) return b ? 1 : 0;
        if (src_signed) return i;
        if (src_unsigned) return static_cast<std::int64_t>(u);
        return saturating_from_double<std::int64_t>(f);
    };
    auto as_u64 = [&]() -> std::uint64_t {
        if (src_bool) return b ? 1 : 0;
        if (src_signed) return static_cast<std::uint64_t>(i);
        if (src_unsigned) return u;
        return saturating_from_double<std::uint64_t>(f);
    };
    auto as_f64 = [&]() -> double {
        if (src_bool) return b ? 1.0 : 0.0;
        if (src_signed) return static_cast<double>(i);
        if (src_unsigned) return static_cast<double>(u);
        return f;
    };
    switch (t) {
        case DType::Bool:
            r.b = src_bool ? b
                           : (src_signed     ? i != 0
                              : src_unsigned ? u != 0
                                             : (f != 0.0 || (src_complex && im != 0.0)));
            break;
        case DType::Int8:
            r.i = is_inexact(dtype) ? saturating_from_double<std::int8_t>(f) : static_cast<std::int8_t>(as_i64());
            break;
        case DType::Int16:
            r.i = is_inexact(dtype) ? saturating_from_double<std::int16_t>(f) : static_cast<std::int16_t>(as_i64());
            break;
        case DType::Int32:
            r.i = is_inexact(dtype) ? saturating_from_double<std::int32_t>(f) : static_cast<std::int32_t>(as_i64());
            break;
        case DType::Int64: r.i = as_i64(); break;
        case DType::UInt8:
            r.u = is_inexact(dtype) ? saturating_from_double<std::uint8_t>(f) : static_cast<std::uint8_t>(as_u64());
            break;
        case DType::UInt16:
            r.u = is_inexact(dtype) ? saturating_from_double<std::uint16_t>(f) : static_cast<std::uint16_t>(as_u64());
            break;
        case DType::UInt32:
            r.u = is_inexact(dtype) ? saturating_from_double<std::uint32_t>(f) : static_cast<std::uint32_t>(as_u64());
            break;
        case DType::UInt64: r.u = as_u64(); break;
        case DType::Float16: r.f = round_to_half(as_f64()); break;
        case DType::BFloat16: r.f = round_to_bfloat16(as_f64()); break;
        case DType::Float32: r.f = static_cast<float>(as_f64()); break;
        case DType::Float64: r.f = as_f64(); break;
        case DType::Complex64:
            r.f = static_cast<float>(as_f64());
            r.im = src_complex ? static_cast<float>(im) : 0.0;
            break;
        case DType::Complex128:
            r.f = as_f64();
            r.im = src_complex ? im : 0.0;
            break;
            JIT_TEMPORAL_CASES break;  // above
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: throw InternalError(fmt::format("a number cast to {}", dtype_name(t)));
    }
    return r;
}

double Value::as_double() const {
    if (is_bool(dtype)) return b ? 1.0 : 0.0;
    if (is_signed_int(dtype) || is_temporal(dtype)) return static_cast<double>(i);
    if (is_unsigned_int(dtype)) return static_cast<double>(u);
    return f;
}

namespace {
std::string exact_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
    return std::string(buf, res.ptr);
}
}  // namespace

std::string Value::to_string() const {
    if (is_bool(dtype)) return b ? "True" : "False";
    if (is_signed_int(dtype) || is_temporal(dtype)) return std::to_string(i);
    if (is_unsigned_int(dtype)) return std::to_string(u);
    if (is_complex(dtype))
        return fmt::format("({}{}{}j)", exact_double(f), im < 0 || std::signbit(im) ? "" : "+", exact_double(im));
    return exact_double(f);
}

bool Program::has_reductions() const {
    for (const Node& n : nodes)
        if (n.kind == NodeKind::Reduce) return true;
    return false;
}

bool Program::has_compactions() const {
    for (const Node& n : nodes)
        if (n.kind == NodeKind::Compact) return true;
    return false;
}

bool Program::has_scans() const {
    for (const Node& n : nodes)
        if (n.kind == NodeKind::Scan) return true;
    return false;
}

namespace {
std::string shape_key(const Shape& s) {
    std::string r = "(";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) r += ',';
        r += std::to_string(s[i]);
    }
    r += ')';
    return r;
}

// An OrderStat node's selection (Program::order_stats), as exact text: part of the cache key.
std::string order_stat_text(const Program& p, const Node& n) {
    if (n.slot < 0 || static_cast<std::size_t>(n.slot) >= p.order_stats.size()) return " stat=?";
    const OrderStatDecl& d = p.order_stats[static_cast<std::size_t>(n.slot)];
    std::string r =
        fmt::format(" stat={} axes=0x{:x}{}{}{} q=[",
                    d.median ? "median"
                    : d.take ? "take"
                             : "linear",
                    d.axes, d.keepdims ? " keepdims" : "", d.skip_nan ? " skipnan" : "", d.q_axis ? " qaxis" : "");
    for (std::size_t k = 0; k < d.q.size(); ++k) {
        if (k) r += ',';
        r += Value::of_float(d.q[k]).to_string();
    }
    r += ']';
    return r;
}

std::string node_text(const Program& p, const Node& n, bool with_names) {
    std::string r;
    switch (n.kind) {
        case NodeKind::Input:
            r = with_names ? fmt::format("input {} \"{}\"", n.slot, p.inputs[static_cast<std::size_t>(n.slot)].name)
                           : fmt::format("input {}", n.slot);
            break;
        case NodeKind::Scalar:
            r = with_names ? fmt::format("scalar {} \"{}\"", n.slot, p.scalars[static_cast<std::size_t>(n.slot)].name)
                           : fmt::format("scalar {}", n.slot);
            break;
        case NodeKind::Const:
            if (is_string(n.dtype)) {
                // The bytes as hex: part of the program's text (a needle is data to the kernels).
                std::string hex;
                if (n.slot >= 0 && static_cast<std::size_t>(n.slot) < p.strings.size())
                    for (unsigned char c : p.strings[static_cast<std::size_t>(n.slot)]) hex += fmt::format("{:02x}", c);
                r = fmt::format("const str{} x\"{}\"", n.slot, hex);
            } else {
                r = fmt::format("const {}", n.value.to_string());
            }
            break;
        case NodeKind::Cast: r = fmt::format("cast %{}", n.args[0]); break;
        case NodeKind::Compact: r = fmt::format("compact %{} where %{} axes={}", n.args[0], n.args[1], n.axis); break;
        case NodeKind::Op:
        case NodeKind::Reduce:
        case NodeKind::Scan: {
            r = std::string(info(n.op).id);
            for (int a = 0; a < n.nargs; ++a) r += fmt::format(" %{}", n.args[a]);
            if (n.kind != NodeKind::Op) r += fmt::format(" axis={}", n.axis);
            if (n.kind == NodeKind::Reduce && n.op == Op::OrderStat) r += order_stat_text(p, n);
            break;
        }
    }
    return fmt::format("{} : {}{}", r, dtype_name(n.dtype), shape_key(n.shape));
}
}  // namespace

std::string Program::canonical() const {
    std::string r;
    for (const InputDecl& in : inputs) {
        r += fmt::format("in {}{} [", is_string(in.dtype) ? dtype_name(in.dtype, in.itemsize) : dtype_name(in.dtype),
                         shape_key(in.shape));
        for (auto s : in.strides) r += std::to_string(s) + ",";
        r += "]";
        if (in.view) r += fmt::format(" view @{}", in.offset);
        r += "\n";
    }
    for (const ScalarDecl& s : scalars) r += fmt::format("sc {}\n", dtype_name(s.dtype));
    for (std::size_t i = 0; i < nodes.size(); ++i) r += fmt::format("%{} = {}\n", i, node_text(*this, nodes[i], false));
    for (const OutputDecl& o : outputs) r += fmt::format("out %{} alias {}\n", o.node, o.alias_input);
    for (const RunCheck& c : checks) r += fmt::format("check out {}\n", c.output);
    return r;
}

std::string dump(const Program& p) {
    std::string r;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) r += fmt::format("%{} = {}\n", i, node_text(p, p.nodes[i], true));
    for (const OutputDecl& o : p.outputs)
        r += fmt::format("{} <- %{}{}{}\n", o.name.empty() ? "(value)" : o.name, o.node,
                         o.alias_input >= 0 ? fmt::format(" (in place into input {})", o.alias_input) : "",
                         o.temporal ? fmt::format(" as {}", dtype_name(*o.temporal)) : "");
    for (const RunCheck& c : p.checks) r += fmt::format("check output {}: {}\n", c.output, c.message);
    return r;
}

}  // namespace jit::ir

namespace jit::ir {

namespace {
std::string_view rule_text(Rule r) {
    switch (r) {
        case Rule::Arith: return "promoted; bool allowed";
        case Rule::Subtract: return "promoted; not bool";
        case Rule::TrueDiv: return "promoted; integers and bool give float64";
        case Rule::IntDiv: return "promoted; bool gives int8; not complex";
        case Rule::Power: return "promoted; bool gives int8; integer ** negative integer is an error";
        case Rule::Bitwise: return "promoted; bool and integers only";
        case Rule::Shift: return "promoted; integers (bool gives int8)";
        case Rule::Compare: return "promoted; gives bool (complex: == and != only)";
        case Rule::Logical: return "operands as bool; gives bool";
        case Rule::Negate: return "same dtype; not bool";
        case Rule::Identity: return "same dtype";
        case Rule::Invert: return "bool and integers only";
        case Rule::FloatUnary: return "float; integers give the smallest float that holds them";
        case Rule::RealUnary: return "as float functions; not complex";
        case Rule::RoundUnary: return "same dtype; integers unchanged; complex only for round";
        case Rule::AbsUnary: return "same dtype; complex gives its real dtype";
        case Rule::SignUnary: return "same dtype; not bool (complex: z / |z|)";
        case Rule::IntOkUnary: return "same dtype; bool gives int8";
        case Rule::Predicate: return "any dtype; gives bool";
        case Rule::PartUnary: return "complex gives its real dtype";
        case Rule::FloatBinary:
            return "the float type of each operand, promoted (int8, uint8 give float16); not complex";
        case Rule::Fmod: return "promoted; bool gives int8; not complex";
        case Rule::MinMax: return "promoted; not complex";
        case Rule::Where: return "condition as bool; the other two promoted";
        case Rule::Clip: return "promoted; not complex";
        case Rule::OnesLike: return "same dtype";
        case Rule::SumProd: return "bool and signed give int64, unsigned give uint64";
        case Rule::MinMaxReduce: return "same dtype; not complex; empty is an error";
        case Rule::MeanReduce: return "bool and integers give float64";
        case Rule::ArgFirst: return "bool gives int64";
        case Rule::VarReduce: return "bool and integers give float64, complex its real dtype";
        case Rule::ArgReduce: return "gives int64; not complex; empty is an error";
        case Rule::CountReduce: return "any dtype; gives int64";
        case Rule::PtpReduce: return "same dtype; not bool, not complex; empty is an error";
        case Rule::MakeComplex:
            return "the complex of the promoted real dtype (float16, float32 give complex64, others complex128); not "
                   "complex";
        case Rule::AnyAll: return "gives bool";
        case Rule::FloatPower: return "promoted, then float64 (complex128 for complex)";
        case Rule::IntegerBinary: return "promoted; integers only";
        case Rule::Ldexp: return "x1 as float functions; x2 bool or an integer int64 holds (a literal: int32)";
        case Rule::BitCount: return "integers and bool; gives uint8";
        case Rule::FrexpExponent: return "as float functions; gives int32";
        case Rule::MedianReduce: return "bool and integers give float64; complex allowed";
        case Rule::QuantileReduce:
            return "integers give float64, a tuple q float64; not bool, not complex; percentile and quantile of an "
                   "empty array are an error";
        case Rule::OrderStat: return "the operand's dtype; gives the statistic's";
        case Rule::StrSearch: return "strings of one kind (bytes with bytes, str with str); gives bool";
        case Rule::StrFind: return "strings of one kind; gives int64";
        case Rule::StrLen: return "a string; gives int64";
    }
    return "";
}

std::string names_text(std::string_view names) {
    std::string r;
    std::size_t pos = 0;
    while (pos <= names.size()) {
        std::size_t bar = names.find('|', pos);
        if (bar == std::string_view::npos) bar = names.size();
        r += (r.empty() ? "" : ", ") + fmt::format("`{}`", names.substr(pos, bar - pos));
        pos = bar + 1;
    }
    return r;
}
}  // namespace

std::string op_reference_markdown() {
    std::string r;
    r += "### Operators\n\n| operator | operands | meaning | dtypes |\n|---|---|---|---|\n";
    for (const OpInfo& i : op_table())
        if (i.kind == OpKind::Operator)
            r += fmt::format("| `{}` | {} | {} | {} |\n", i.token == "|" ? "\\|" : std::string(i.token), i.arity, i.doc,
                             rule_text(i.rule));
    r += "\n### Functions\n\n| name | arguments | meaning | dtypes |\n|---|---|---|---|\n";
    for (const OpInfo& i : op_table())
        if (i.kind == OpKind::Function || (i.kind == OpKind::Operator && !i.names.empty()))
            r += fmt::format("| {} | {} | {} | {} |\n", names_text(i.names), i.arity, i.doc, rule_text(i.rule));
    r += "\n### Functions of two results\n\nAssigned to as many names as they have results, in one statement: "
         "`m, e = frexp(x)`, `q, r = divmod(a, b)`. Every result is computed in the same kernel; such a "
         "function cannot stand where one value is expected.\n\n"
         "| name | arguments | results, in order | dtypes |\n|---|---|---|---|\n";
    for (std::size_t k = 0; k < op_table().size(); ++k) {
        const OpInfo& i = op_table()[k];
        if (i.kind != OpKind::Result || results_of(i.op).first != k) continue;
        const Results res = results_of(i.op);
        std::string docs, rules;
        for (std::size_t j = res.first; j < res.first + res.count; ++j) {
            docs += fmt::format("{}{}. {}", j == res.first ? "" : "; ", j - res.first + 1, op_table()[j].doc);
            rules +=
                fmt::format("{}{}. {}", j == res.first ? "" : "; ", j - res.first + 1, rule_text(op_table()[j].rule));
        }
        r += fmt::format("| {} | {} | {} | {} |\n", names_text(i.names), i.arity, docs, rules);
    }
    r += "\n### Reductions\n\n`f(x)` reduces every element to a 0-d result; `f(x, axis=k)` or `f(x, k)` reduces "
         "axis `k` (negative counts from the end), `f(x, axis=(j, k))` several axes and `axis=None` every one; "
         "`keepdims=True` keeps each reduced axis with extent 1. `var`, `std`, `nanvar` and `nanstd` take "
         "`ddof=` (default 0), `average` takes `weights=`. `min`/`max` with two arguments are the element-wise "
         "`minimum`/`maximum`; `amin(x, 1)` is the reduction along axis 1. `percentile(x, q)` and "
         "`quantile(x, q)` (and their nan* forms) take q second, a number literal or a tuple of them (the "
         "result then has a leading axis of one entry per q), and use NumPy's default method ('linear'); "
         "where NumPy warns (an empty or all-NaN row) the result is NaN without a warning.\n\n"
         "| name | meaning | dtypes |\n|---|---|---|\n";
    for (const OpInfo& i : op_table())
        if (i.kind == OpKind::Reduction && !i.names.empty())
            r += fmt::format("| {} | {} | {} |\n", names_text(i.names), i.doc, rule_text(i.rule));
    r += "\n### Scans\n\n`f(x)` runs over every element in C order and gives a 1-d result (a 0-d `x` gives one "
         "element); `f(x, axis=k)` or `f(x, k)` runs along axis `k` (negative counts from the end) and keeps `x`'s "
         "shape; `axis=None` is `f(x)`. Each is computed in one pass with its element-wise operand, as "
         "NumPy computes it: every step rounded to the result dtype. The CPU backend combines left to right, "
         "as NumPy does. CUDA does too along an axis other than the last and along rows shorter than 32; a scan "
         "of every element, or along a last axis of 32 or more, it combines in blocks, in a fixed order (the "
         "same bits run after run; integers exact, floats within rounding of NumPy's sequence), so where a "
         "complex running product overflows there, a part that NumPy leaves infinite can be NaN.\n\n"
         "| name | meaning | dtypes |\n|---|---|---|\n";
    for (const OpInfo& i : op_table())
        if (i.kind == OpKind::Scan)
            r += fmt::format("| {} | {} | {} |\n", names_text(i.names), i.doc, rule_text(i.rule));
    return r;
}

}  // namespace jit::ir

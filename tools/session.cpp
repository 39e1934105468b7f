#include "session.hpp"

#include "host_values.hpp"
#include "random.hpp"
#include "statements.hpp"

#include <jit/language.hpp>

#include <jit/error.hpp>
#include <jit/npy.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

namespace jit::cli {
namespace {

SourceSpan span_of(std::size_t begin, std::size_t end) {
    return {static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
}
SourceSpan shifted(SourceSpan s, std::size_t offset) { return span_of(s.begin + offset, s.end + offset); }

// Rethrows an error about a statement's text as the same kind of error about the whole program.
[[noreturn]] void rethrow_in(const SourceError& e, std::string_view full, std::size_t offset) {
    const SourceSpan s = shifted(e.span(), offset);
    const std::string& k = e.kind();
    if (k == "syntax error") throw ParseError(e.message(), full, s);
    if (k == "name error") throw NameError(e.message(), full, s);
    if (k == "type error") throw TypeError(e.message(), full, s);
    if (k == "shape error") throw ShapeError(e.message(), full, s);
    if (k == "value error") throw ValueError(e.message(), full, s);
    if (k == "index error") throw IndexError(e.message(), full, s);
    throw SourceError(k, e.message(), full, s);
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A tiny cursor over a statement's text (assignment targets, constructors' shape tuples).
struct Cursor {
    std::string_view s;
    std::size_t p = 0;
    void ws() {
        while (p < s.size() && is_space(s[p])) ++p;
    }
    std::string_view ident() {
        std::size_t b = p;
        if (p < s.size() && is_ident_start(s[p]))
            while (p < s.size() && is_ident_char(s[p])) ++p;
        return s.substr(b, p - b);
    }
    bool eat(char c) {
        if (p < s.size() && s[p] == c) {
            ++p;
            return true;
        }
        return false;
    }
    bool at_end() const { return p >= s.size(); }
};

// `name =` at the start of a statement (not `==`): the target and where the rest begins.
std::string_view assignment_target(std::string_view s, std::size_t* rest) {
    Cursor c{s};
    c.ws();
    std::string_view name = c.ident();
    c.ws();
    if (!name.empty() && c.p < s.size() && s[c.p] == '=' && (c.p + 1 >= s.size() || s[c.p + 1] != '=')) {
        *rest = c.p + 1;
        return name;
    }
    *rest = 0;
    return {};
}

// ---- constructor arguments

struct Arg1 {
    Number value;
    SourceSpan span;  // in the whole program
};

DType parse_dtype_name(const parsed::Expr& e, std::string_view full, std::size_t offset) {
    if (e.kind == parsed::ExprKind::Name) {
        if (auto t = dtype_from_name(e.text)) return *t;
        throw TypeError(fmt::format("unknown dtype '{}'", e.text), full, shifted(e.span, offset));
    }
    throw TypeError("dtype= takes a dtype name, such as dtype=float32", full, shifted(e.span, offset));
}

std::int64_t checked_count(const Arg1& a, std::string_view what, std::string_view full) {
    if (!a.value.is_integral()) throw TypeError(fmt::format("{} must be an integer", what), full, a.span);
    const std::int64_t v = a.value.kind == Number::Kind::Bool ? a.value.b : a.value.i;
    if (v < 0) throw ValueError(fmt::format("{} must not be negative", what), full, a.span);
    return v;
}

}  // namespace

const std::vector<std::string>& constructor_names() {
    static const std::vector<std::string> names{"arange", "linspace", "zeros", "ones", "full",
                                                "rand",   "randn",    "load",  "save"};
    return names;
}

// Under backend=auto nothing of CUDA starts here: a statement placed on the GPU starts it.
Session::Session(RuntimeOptions options) : runtime_(std::make_unique<Runtime>(options)) {}

std::optional<Array> Session::variable(std::string_view name) const {
    auto it = env_.find(name);
    if (it == env_.end()) return std::nullopt;
    const Arg& a = it->second;
    if (a.is_array()) return a.array();
    return std::visit(
        [&](const auto& v) -> std::optional<Array> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, Array>) {
                return v;
            } else {
                // Python-like scalars: bool, int64, float64, complex128.
                return Array::from_host(&v, dtype_of_v<T>, {}, Backend::Cpu);
            }
        },
        a.value());
}

void Session::set_backend(Backend backend) {
    RuntimeOptions o = runtime_->options();
    o.backend = backend;
    auto fresh = std::make_unique<Runtime>(o);
    (void)fresh->backend();  // throws NoDeviceError for cuda without a device
    // Variables live in host memory whatever evaluates them: nothing moves.
    runtime_ = std::move(fresh);
}

void Session::keep_on_host(const Chunk& chunk) {
    // A program over no arrays (scalars alone) ran on the device: its result comes to the host,
    // where the session keeps every variable. (Host inputs give host results already.) Only the
    // statement's own target can be new: the rest of the environment is not looked at, so a
    // statement costs the same however many variables there are.
    std::size_t rest = 0;
    const std::string_view target = assignment_target(chunk.text, &rest);
    if (target.empty()) return;
    auto it = env_.find(target);
    if (it != env_.end() && it->second.is_array() && it->second.array().backend() != Backend::Cpu)
        it->second = Arg(it->second.array().to(Backend::Cpu));
}

void Session::run(std::string_view text, const std::function<void(const Array&)>& print, Timing* timing) {
    using Clock = std::chrono::steady_clock;
    for (const Chunk& c : split_statements(text)) {
        // Between statements: a stop asked for during the last one (or before) stops here.
        if (call_.cancel && call_.cancel->poll()) throw CancelledError();
        bool bare = false;
        Timing local;
        Timing* t = timing ? timing : (report_ ? &local : nullptr);
        if (t) *t = Timing{};
        const auto t0 = Clock::now();
        // The statement's parse, its walks for constructors (which recurse once per nesting
        // level, as do constructors nested in constructors) and its tree's destruction run on
        // a stack deep enough for the deepest text the language accepts, whatever this thread's.
        std::optional<Array> value;
        with_front_stack([&] { value = run_statement(c, text, t, &bare); });
        // Device results only where the statement ran on a GPU (which then started the runtime).
        if (const std::optional<Backend> b = runtime_->started_backend(); b && *b != Backend::Cpu) {
            keep_on_host(c);
            if (value && value->defined() && value->backend() != Backend::Cpu) value = value->to(Backend::Cpu);
        }
        const auto t1 = Clock::now();
        if (bare && value && value->defined() && print) print(*value);
        if (report_) {
            StatementTime st;
            st.line = 1 + static_cast<std::size_t>(
                              std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(c.offset), '\n'));
            st.timing = *t;
            st.kind = kind_;
            st.print_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
            st.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            report_(st);
        }
    }
}

void Session::set_threads(int threads) {
    RuntimeOptions o = runtime_->options();
    o.cpu_threads = threads;
    auto fresh = std::make_unique<Runtime>(o);
    // A started backend stays as it was (under auto, one not yet started is left so).
    if (const std::optional<Backend> b = runtime_->started_backend(); b && fresh->backend() != *b)
        throw InternalError("a runtime with new thread count changed its backend");
    runtime_ = std::move(fresh);
}

namespace {

using Range = std::pair<std::size_t, std::size_t>;  // [open paren, close paren]
std::optional<Range> tuple_of(const parsed::Expr& call, std::string_view text, const std::vector<Range>& tuples);

struct CtorContext;
Array run_constructor(const parsed::Expr& call, const CtorContext& cx);
Array run_with_constructors(const CtorContext& cx, std::size_t begin, std::size_t end,
                            const std::vector<const parsed::Expr*>& roots, Timing* timing);

// What a constructor statement needs from the session.
struct CtorContext {
    Runtime& runtime;
    Environment& env;
    Backend backend;
    std::string_view full;
    std::size_t offset;                // of the statement in `full`
    std::string_view stmt;             // the statement's (tuple-blanked) text
    const std::vector<Range>* tuples;  // shape tuples blanked in stmt
    const CallOptions& call;           // the session's token and progress, and the statement's timing
};

Number number_of_array(const Array& a, std::string_view what, std::string_view full, SourceSpan span) {
    if (a.size() != 1)
        throw ValueError(
            fmt::format("{} must be a single number, not an array of shape {}", what, shape_to_string(a.shape())), full,
            span);
    std::unique_ptr<unsigned char[]> buf(new unsigned char[a.nbytes()]);
    a.copy_to_host(buf.get());
    Number n = load(buf.get(), a.dtype());
    if (a.dtype() == DType::UInt64 && n.i < 0)
        n = Number::of_float(static_cast<double>(static_cast<std::uint64_t>(n.i)));
    if (a.dtype() == DType::Bool) n = Number::of_int(n.b);
    return n;
}

// The number an argument expression stands for: literals and literal-only arithmetic are
// folded here, exactly as the language folds them (dsl/literal.hpp: arange(2**8) is 256,
// zeros(2**64) an error); anything else (variables, functions) is evaluated by the runtime
// and must give one value.
Number eval_number(const parsed::Expr& e, const CtorContext& cx, std::string_view what) {
    using K = parsed::ExprKind;
    const SourceSpan full_span = shifted(e.span, cx.offset);
    switch (e.kind) {
        case K::Int:
            if (e.int_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                throw ValueError(fmt::format("{} is too large", what), cx.full, full_span);
            return Number::of_int(static_cast<std::int64_t>(e.int_value));
        case K::Float: return Number::of_float(e.float_value);
        case K::Bool: return Number::of_bool(e.bool_value);
        case K::Unary:
        case K::Chain: {
            // A name the session binds shadows the named constant, as in the runtime.
            const std::string_view sub = cx.stmt.substr(e.span.begin, e.span.end - e.span.begin);
            std::optional<LiteralNumber> f;
            try {
                f = fold_literal(sub, [&cx](std::string_view n) { return cx.env.find(n) != cx.env.end(); });
            } catch (const SourceError& err) {
                rethrow_in(err, cx.full, cx.offset + e.span.begin);
            }
            if (!f) break;
            switch (f->kind) {
                case LiteralNumber::Kind::Bool: return Number::of_bool(f->b);
                case LiteralNumber::Kind::Float: return Number::of_float(f->f);
                case LiteralNumber::Kind::Complex: return Number::of_complex({f->f, f->im});
                case LiteralNumber::Kind::Int:
                    if (!f->fits_int64) throw ValueError(fmt::format("{} is too large", what), cx.full, full_span);
                    return Number::of_int(f->i);
            }
            break;
        }
        case K::Name:
            if (auto it = cx.env.find(e.text); it != cx.env.end()) {
                const Arg& a = it->second;
                if (!a.is_array()) {
                    return std::visit(
                        [](const auto& v) -> Number {
                            using T = std::decay_t<decltype(v)>;
                            if constexpr (std::is_same_v<T, bool>) return Number::of_int(v);
                            else if constexpr (std::is_same_v<T, std::int64_t>) return Number::of_int(v);
                            else if constexpr (std::is_same_v<T, double>) return Number::of_float(v);
                            else if constexpr (std::is_same_v<T, std::complex<double>>) return Number::of_complex(v);
                            else return Number{};
                        },
                        a.value());
                }
                return number_of_array(a.array(), what, cx.full, full_span);
            }
            break;
        default: break;
    }
    if (e.kind == K::Call &&
        (e.text == "arange" || e.text == "linspace" || e.text == "zeros" || e.text == "ones" || e.text == "full" ||
         e.text == "rand" || e.text == "randn" || e.text == "load" || e.text == "save")) {
        return number_of_array(run_constructor(e, cx), what, cx.full, full_span);
    }
    // Evaluate the argument's text with the runtime.
    Array value = run_with_constructors(cx, e.span.begin, e.span.end, {&e}, nullptr);
    if (!value.defined()) throw ValueError(fmt::format("{} has no value", what), cx.full, full_span);
    return number_of_array(value, what, cx.full, full_span);
}

// Host loops of the constructors: asks the session's token about every 65536 elements and
// reports Progress::Phase::Create to its callback about every 100 ms.
class HostLoopWatch {
public:
    HostLoopWatch(const CallOptions& o, std::int64_t total) : o_(o), total_(total) {}
    void step(std::int64_t done) {
        if (done % 65536 != 0) return;
        const auto now = Clock::now();
        if (o_.cancel && o_.cancel->poll()) throw CancelledError();
        if (o_.progress && now - last_ >= std::chrono::milliseconds(100)) {
            last_ = now;
            Progress p;
            p.phase = Progress::Phase::Create;
            p.unit = Progress::Unit::Elements;
            p.done = static_cast<std::uint64_t>(done);
            p.total = static_cast<std::uint64_t>(total_);
            p.elapsed_s = std::chrono::duration<double>(now - start_).count();
            o_.progress(p);
        }
    }

private:
    using Clock = std::chrono::steady_clock;
    const CallOptions& o_;
    std::int64_t total_;
    Clock::time_point start_ = Clock::now(), last_ = start_;
};

// A new array of `shape` filled by `element`, made in host memory (then moved to the session's
// backend), watched by the session's token and progress. Running out of memory is an
// OutOfMemoryError with a caret under the call.
Array make_array(DType t, const Shape& shape, const CtorContext& cx, SourceSpan call,
                 const std::function<Number(std::int64_t)>& element) {
    try {
        Array a = Array::empty(t, shape, Backend::Cpu);
        const std::int64_t n = shape_size(shape);
        const std::size_t isz = itemsize(t);
        auto* p = static_cast<unsigned char*>(a.data());
        HostLoopWatch watch(cx.call, n);
        for (std::int64_t i = 0; i < n; ++i) {
            watch.step(i);
            store(p + static_cast<std::size_t>(i) * isz, t, element(i));
        }
        return cx.backend == Backend::Cpu ? a : a.to(cx.backend);
    } catch (const OutOfMemoryError& e) {
        throw OutOfMemoryError(e.requested(), e.available(),
                               fmt::format("a {} array of shape {}", dtype_name(t), shape_to_string(shape)))
            .at(cx.full, call);
    }
}

// Elements beyond this are refused before allocating (2^40: a 8 TiB float64 array).
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

Array run_constructor(const parsed::Expr& call, const CtorContext& cx) {
    const std::optional<Range> tuple = tuple_of(call, cx.stmt, *cx.tuples);
    if (call.text == "load" || call.text == "save")
        throw ParseError(call.text == "load" ? "use load(\"file.npy\"), with the file name in quotes"
                                             : "use save(x, \"file.npy\"), with the file name in quotes",
                         cx.full, shifted(call.span, cx.offset));
    const std::string& name = call.text;
    const SourceSpan call_span = shifted(call.span, cx.offset);

    // Keywords.
    std::optional<DType> dtype;
    std::optional<std::uint64_t> seed;
    std::optional<Arg1> num_kw;
    for (const auto& kw : call.keywords) {
        const SourceSpan ks = shifted(kw.name_span, cx.offset);
        const bool allowed = kw.name == "dtype" || (kw.name == "seed" && (name == "rand" || name == "randn")) ||
                             (kw.name == "num" && name == "linspace");
        if (!allowed) throw NameError(fmt::format("{}() takes no keyword '{}'", name, kw.name), cx.full, ks);
        if (kw.name == "dtype") {
            dtype = parse_dtype_name(*kw.value, cx.full, cx.offset);
        } else if (kw.name == "seed") {
            Arg1 a{eval_number(*kw.value, cx, "seed"), shifted(kw.value->span, cx.offset)};
            seed = static_cast<std::uint64_t>(checked_count(a, "seed", cx.full));
        } else {
            num_kw = Arg1{eval_number(*kw.value, cx, "num"), shifted(kw.value->span, cx.offset)};
        }
    }

    // Positional arguments; those inside a (tuple) are the shape.
    std::vector<Arg1> shape_args, args;
    for (const auto& op : call.operands) {
        Arg1 a{eval_number(*op, cx, "an argument"), shifted(op->span, cx.offset)};
        const bool in_tuple = tuple && op->span.begin > tuple->first && op->span.end <= tuple->second;
        (in_tuple ? shape_args : args).push_back(a);
    }

    auto arity_error = [&](std::string_view usage) -> NameError {
        return NameError(fmt::format("wrong arguments: use {}", usage), cx.full, call_span);
    };
    auto shape_from = [&](const std::vector<Arg1>& dims) {
        if (dims.size() > static_cast<std::size_t>(kMaxDims))
            throw ValueError(fmt::format("an array has at most {} dimensions", kMaxDims), cx.full, call_span);
        Shape s;
        std::int64_t total = 1;
        for (const Arg1& d : dims) {
            s.push_back(checked_count(d, "a dimension", cx.full));
            if (s.back() != 0 && total > kMaxElements / s.back())
                throw ValueError("the array would be too large", cx.full, call_span);
            total *= s.back();
        }
        if (total > kMaxElements) throw ValueError("the array would be too large", cx.full, call_span);
        return s;
    };
    // zeros(3, 4) and zeros((3, 4)) give the same shape.
    auto split_shape = [&](std::size_t trailing, std::string_view usage) {
        std::vector<Arg1> dims;
        if (tuple) {
            if (args.size() != trailing) throw arity_error(usage);
            dims = shape_args;
        } else {
            if (args.size() < trailing + 1) throw arity_error(usage);
            dims.assign(args.begin(), args.end() - static_cast<std::ptrdiff_t>(trailing));
            args.erase(args.begin(), args.end() - static_cast<std::ptrdiff_t>(trailing));
        }
        return shape_from(dims);
    };

    if (name == "zeros" || name == "ones") {
        Shape shape =
            split_shape(0, fmt::format("{}(shape), {}(3, 4) or {}((3, 4)), optionally dtype=...", name, name, name));
        const DType t = dtype.value_or(DType::Float64);
        const Number v = Number::of_int(name == "ones" ? 1 : 0);
        return make_array(t, shape, cx, call_span, [&](std::int64_t) { return v; });
    }
    if (name == "full") {
        Shape shape = split_shape(1, "full(shape, value), full(3, 4, value) or full((3, 4), value)");
        const Number v = args.back().value;
        const DType t = dtype.value_or(v.natural_dtype());
        return make_array(t, shape, cx, call_span, [&](std::int64_t) { return v; });
    }
    if (name == "rand" || name == "randn") {
        Shape shape = split_shape(
            0, fmt::format("{}(shape), {}(3, 4) or {}((3, 4)), optionally seed=... and dtype=...", name, name, name));
        const DType t = dtype.value_or(DType::Float64);
        if (!is_float(t))
            throw TypeError(fmt::format("{}() makes floating-point arrays, not {}", name, dtype_name(t)), cx.full,
                            call_span);
        Xoshiro256 rng(seed.value_or(0));
        const bool normal = name == "randn";
        return make_array(t, shape, cx, call_span,
                          [&](std::int64_t) { return Number::of_float(normal ? rng.normal() : rng.uniform()); });
    }
    if (name == "arange") {
        if (tuple || args.empty() || args.size() > 3)
            throw arity_error("arange(stop), arange(start, stop) or arange(start, stop, step)");
        Number start = Number::of_int(0), step = Number::of_int(1), stop;
        if (args.size() == 1) stop = args[0].value;
        else {
            start = args[0].value;
            stop = args[1].value;
            if (args.size() == 3) step = args[2].value;
        }
        for (const Arg1& a : args)
            if (a.value.kind == Number::Kind::Complex) throw TypeError("arange() takes real numbers", cx.full, a.span);
        const bool ints = start.is_integral() && stop.is_integral() && step.is_integral();
        const DType t = dtype.value_or(ints ? DType::Int64 : DType::Float64);
        std::int64_t n = 0;
        if (ints) {
            const std::int64_t a = start.kind == Number::Kind::Bool ? start.b : start.i;
            const std::int64_t b = stop.kind == Number::Kind::Bool ? stop.b : stop.i;
            const std::int64_t s = step.kind == Number::Kind::Bool ? step.b : step.i;
            if (s == 0) throw ValueError("the step of arange() must not be zero", cx.full, args.back().span);
            const long double span = static_cast<long double>(b) - static_cast<long double>(a);
            const long double cnt = std::ceil(span / static_cast<long double>(s));
            if (cnt > static_cast<long double>(kMaxElements))
                throw ValueError("the array would be too large", cx.full, call_span);
            n = cnt > 0 ? static_cast<std::int64_t>(cnt) : 0;
            return make_array(t, {n}, cx, call_span, [&](std::int64_t i) {
                return Number::of_int(static_cast<std::int64_t>(
                    static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(s)));
            });
        }
        const double a = start.as_double(), b = stop.as_double(), s = step.as_double();
        if (s == 0) throw ValueError("the step of arange() must not be zero", cx.full, args.back().span);
        const double cnt = std::ceil((b - a) / s);
        if (std::isnan(cnt)) throw ValueError("arange() needs finite start, stop and step", cx.full, call_span);
        if (cnt > static_cast<double>(kMaxElements))
            throw ValueError("the array would be too large", cx.full, call_span);
        n = cnt > 0 ? static_cast<std::int64_t>(cnt) : 0;
        // As NumPy fills it: a, a + s, then a + i * ((a + s) - a), the step as the first two
        // elements hold it (a + i * s differs in the last bits: arange(1, 0, -0.3)).
        const double delta = (a + s) - a;
        return make_array(t, {n}, cx, call_span, [&](std::int64_t i) {
            return Number::of_float(i == 1 ? a + s : a + static_cast<double>(i) * delta);
        });
    }
    if (name == "linspace") {
        if (tuple || args.size() < 2 || args.size() > 3 || (args.size() == 3 && num_kw))
            throw arity_error("linspace(start, stop, num) (num defaults to 50)");
        Arg1 num = args.size() == 3 ? args[2] : num_kw.value_or(Arg1{Number::of_int(50), call_span});
        const std::int64_t n = checked_count(num, "the number of samples", cx.full);
        if (n > kMaxElements) throw ValueError("the array would be too large", cx.full, num.span);
        for (std::size_t k = 0; k < 2; ++k)
            if (args[k].value.kind == Number::Kind::Complex)
                throw TypeError("linspace() takes real numbers", cx.full, args[k].span);
        const double a = args[0].value.as_double(), b = args[1].value.as_double();
        const DType t = dtype.value_or(DType::Float64);
        const double step = n > 1 ? (b - a) / static_cast<double>(n - 1) : 0.0;
        return make_array(t, {n}, cx, call_span, [&](std::int64_t i) {
            return Number::of_float(i == n - 1 && n > 1 ? b : a + static_cast<double>(i) * step);
        });
    }
    throw InternalError(fmt::format("constructor '{}' is not implemented", name));
}

// For every zeros/ones/full/rand/randn call whose first argument is a parenthesised tuple:
// blanks the tuple's parentheses (and a trailing comma) so that the expression grammar reads
// its items as arguments, and returns the tuples' ranges. Offsets do not move.
std::vector<Range> blank_shape_tuples(std::string& s) {
    std::vector<Range> out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\'' || s[i] == '"') {  // a string literal's text is its own: never a tuple
            const std::size_t end = string_literal_end(s, i);
            if (end == std::string::npos) break;
            i = end - 1;
            continue;
        }
        if (!is_ident_start(s[i]) || (i > 0 && is_ident_char(s[i - 1]))) continue;
        Cursor c{s, i};
        std::string_view name = c.ident();
        i = c.p - 1;
        if (name != "zeros" && name != "ones" && name != "full" && name != "rand" && name != "randn") continue;
        c.ws();
        if (!c.eat('(')) continue;
        c.ws();
        if (c.at_end() || s[c.p] != '(') continue;
        const std::size_t open = c.p;
        int depth = 0;
        std::size_t close = std::string::npos;
        for (std::size_t k = open; k < s.size(); ++k) {
            if (s[k] == '(' || s[k] == '[') ++depth;
            else if ((s[k] == ')' || s[k] == ']') && --depth == 0) {
                close = k;
                break;
            }
        }
        if (close == std::string::npos) continue;
        // Only a tuple if it has a top-level comma or is empty: (3) is just a parenthesised 3.
        bool comma = false, empty = true;
        depth = 0;
        for (std::size_t k = open + 1; k < close; ++k) {
            if (!is_space(s[k])) empty = false;
            if (s[k] == '(' || s[k] == '[') ++depth;
            else if (s[k] == ')' || s[k] == ']') --depth;
            else if (s[k] == ',' && depth == 0) comma = true;
        }
        if (!comma && !empty) continue;
        s[open] = ' ';
        s[close] = ' ';
        std::size_t k = close;
        while (k > open + 1 && is_space(s[k - 1])) --k;
        if (k > open + 1 && s[k - 1] == ',') s[k - 1] = ' ';
        if (empty) {  // full((), v): the comma after an empty tuple has nothing before it
            std::size_t j = close + 1;
            while (j < s.size() && is_space(s[j])) ++j;
            if (j < s.size() && s[j] == ',') s[j] = ' ';
        }
        out.emplace_back(open, close);
    }
    return out;
}

// The shape tuple that is the first argument of `call`, if any.
std::optional<Range> tuple_of(const parsed::Expr& call, std::string_view text, const std::vector<Range>& tuples) {
    Cursor c{text, call.name_span.end};
    c.ws();
    if (!c.eat('(')) return std::nullopt;
    // The tuple's own '(' is blank now: only blanks may lie between the call's '(' and it.
    for (const Range& r : tuples) {
        if (r.first < c.p) continue;
        bool adjacent = true;
        for (std::size_t k = c.p; k < r.first; ++k) adjacent &= is_space(text[k]);
        if (adjacent) return r;
    }
    return std::nullopt;
}

bool is_constructor(const std::string& name) {
    const auto& n = constructor_names();
    return std::find(n.begin(), n.end(), name) != n.end();
}

// Runs the statement text [begin, end) with the runtime. Constructor calls inside `roots` are
// made first and bound to temporary names written over their call text, padded with spaces so
// that offsets hold (sum(arange(5)) runs as sum(_jx0     )). The temporaries are dropped after.
Array run_with_constructors(const CtorContext& cx, std::size_t begin, std::size_t end,
                            const std::vector<const parsed::Expr*>& roots, Timing* timing) {
    std::vector<std::string> temps;
    struct TempGuard {
        Environment& env;
        std::vector<std::string>& names;
        ~TempGuard() {
            for (const auto& n : names) env.erase(n);
        }
    } guard{cx.env, temps};
    std::string program(cx.stmt.substr(begin, end - begin));
    std::function<void(const parsed::Expr&)> visit = [&](const parsed::Expr& e) {
        if (e.kind == parsed::ExprKind::Call && is_constructor(e.text)) {
            Array a = run_constructor(e, cx);
            std::string name = fmt::format("_jx{}", temps.size());
            while (cx.env.count(name)) name += "_";
            const std::size_t len = e.span.end - e.span.begin;
            if (name.size() > len || e.span.begin < begin || e.span.end > end)
                throw InternalError("a constructor call does not fit its temporary name");
            cx.env.insert_or_assign(name, Arg(a));
            temps.push_back(name);
            program.replace(e.span.begin - begin, len, name + std::string(len - name.size(), ' '));
            return;
        }
        for (const auto& op : e.operands) visit(*op);
        for (const auto& kw : e.keywords) visit(*kw.value);
    };
    for (const parsed::Expr* r : roots) visit(*r);
    try {
        CallOptions o = cx.call;
        o.timing = timing;
        return cx.runtime.run(program, cx.env, o);
    } catch (const SourceError& e) {
        rethrow_in(e, cx.full, cx.offset + begin);
    } catch (const OutOfMemoryError& e) {
        // The runtime's caret is under the part of the statement that asked (median(x)): the
        // same part of the whole text. Without one, the statement.
        if (e.located()) throw e.at(cx.full, shifted(e.span(), cx.offset + begin));
        throw e.at(cx.full, span_of(cx.offset + begin, cx.offset + end));
    }
}

// The value of the expression `expr` (a bare expression, constructors allowed) that starts at
// `offset` in `full`.
Array evaluate_expression(Runtime& runtime, Environment& env, Backend backend, std::string_view full,
                          std::size_t offset, std::string_view expr, const CallOptions& call, Timing* timing) {
    std::string text(expr);
    const auto tuples = blank_shape_tuples(text);
    parsed::Module m;
    try {
        m = parsed::parse(text);
    } catch (const SourceError& e) {
        rethrow_in(e, full, offset);
    }
    if (m.statements.size() != 1 || !m.statements[0].target.empty() || !m.statements[0].value)
        throw ParseError("save() takes one value to save, not statements", full, span_of(offset, offset + expr.size()));
    CtorContext cx{runtime, env, backend, full, offset, text, &tuples, call};
    const parsed::Expr& value = *m.statements[0].value;
    if (value.kind == parsed::ExprKind::Call && is_constructor(value.text)) return run_constructor(value, cx);
    return run_with_constructors(cx, 0, text.size(), {&value}, timing);
}

}  // namespace

std::optional<Array> Session::run_statement(const Chunk& chunk, std::string_view full, Timing* timing, bool* bare) {
    const std::size_t off = chunk.offset;
    const std::string& st = chunk.text;

    // Constructors, load("file") and save(x, "file"); everything else goes to the runtime (string
    // literals too: contains(s, 'x')).
    std::string text = st;
    const auto tuples = blank_shape_tuples(text);
    parsed::Module m;
    try {
        m = parsed::parse(text);
    } catch (const SourceError& e) {
        rethrow_in(e, full, off);
    }
    if (m.statements.size() == 1 && m.statements[0].value && m.statements[0].value->kind == parsed::ExprKind::Call &&
        (m.statements[0].value->text == "load" || m.statements[0].value->text == "save")) {
        const parsed::Statement& s = m.statements[0];
        const parsed::Expr& call = *s.value;
        const SourceSpan fn_span = shifted(call.name_span, off);
        const SourceSpan whole = shifted(call.span, off);
        // The file name: a str literal, the last argument.
        const parsed::Expr* file = call.operands.empty() ? nullptr : call.operands.back().get();
        const bool named = file && file->kind == parsed::ExprKind::Str && call.keywords.empty();
        if (call.text == "load") {
            if (!named || call.operands.size() != 1) throw ParseError("use load(\"file.npy\")", full, whole);
            if (!s.more_targets.empty())
                throw TypeError("load() gives one array; assign it to one name", full, shifted(s.span, off));
            Array a;
            try {
                a = load_npy(file->text, Backend::Cpu, call_);
            } catch (const IOError& e) {
                throw IOError(std::string(e.what()) + "\n" + render_caret(full, fn_span));
            }
            *bare = s.target.empty();
            if (!s.target.empty()) env_.insert_or_assign(s.target, Arg(a));
            kind_ = StatementTime::Kind::Load;
            return a;
        }
        // save(expr, "file")
        if (!s.target.empty()) throw ParseError("save() gives no value to assign", full, shifted(s.span, off));
        if (!named || call.operands.size() != 2) throw ParseError("use save(x, \"file.npy\")", full, whole);
        const parsed::Expr& what = *call.operands[0];
        const std::string_view expr = std::string_view(st).substr(what.span.begin, what.span.end - what.span.begin);
        Array value;
        if (what.kind == parsed::ExprKind::Name && env_.count(what.text)) {
            value = *variable(what.text);
        } else {
            // Any expression, constructors included: save(arange(3), "f.npy").
            value =
                evaluate_expression(*runtime_, env_, Backend::Cpu, full, off + what.span.begin, expr, call_, timing);
        }
        if (!value.defined()) throw ValueError("there is no value to save", full, shifted(what.span, off));
        try {
            save_npy(file->text, value, call_);
        } catch (const IOError& e) {
            throw IOError(std::string(e.what()) + "\n" + render_caret(full, fn_span));
        }
        *bare = false;
        kind_ = StatementTime::Kind::Save;
        return std::nullopt;
    }
    // A name alone shows its array as it is bound: an S or U array too, which no program computes.
    if (m.statements.size() == 1 && m.statements[0].target.empty() && m.statements[0].more_targets.empty() &&
        m.statements[0].value && m.statements[0].value->kind == parsed::ExprKind::Name) {
        auto it = env_.find(m.statements[0].value->text);
        if (it != env_.end() && it->second.is_array() && is_string(it->second.array().dtype())) {
            *bare = true;
            kind_ = StatementTime::Kind::Runtime;
            return it->second.array();
        }
    }
    CtorContext cx{*runtime_, env_, Backend::Cpu, full, off, text, &tuples, call_};
    if (m.statements.size() == 1 && m.statements[0].value && m.statements[0].value->kind == parsed::ExprKind::Call &&
        is_constructor(m.statements[0].value->text)) {
        const parsed::Statement& s = m.statements[0];
        if (!s.more_targets.empty())
            throw TypeError(fmt::format("{} names are assigned one value; only a function of several results (divmod, "
                                        "frexp, modf) can be assigned to several names",
                                        s.more_targets.size() + 1),
                            full, span_of(off + s.value->span.begin, off + s.value->span.end));
        Array a = run_constructor(*s.value, cx);
        *bare = s.target.empty();
        if (!s.target.empty()) env_.insert_or_assign(s.target, Arg(a));
        kind_ = StatementTime::Kind::Constructor;
        return a;
    }
    *bare = m.statements.size() == 1 && m.statements[0].target.empty();

    std::vector<const parsed::Expr*> roots;
    for (const auto& stmt : m.statements)
        if (stmt.value) roots.push_back(stmt.value.get());
    kind_ = StatementTime::Kind::Runtime;
    return run_with_constructors(cx, 0, text.size(), roots, timing);
}

std::string Session::explain(std::string_view text, const ExplainOptions& options) {
    std::string out;
    with_front_stack([&] { out = explain_here(text, options); });
    return out;
}

std::string Session::explain_here(std::string_view text, const ExplainOptions& options) {
    parsed::Module m = parsed::parse(text);
    std::function<void(const parsed::Expr&)> visit = [&](const parsed::Expr& e) {
        if (e.kind == parsed::ExprKind::Call && (e.text == "load" || e.text == "save"))
            throw ArgumentError(
                "explain shows programs the runtime compiles; load(\"...\") and save(...) are not: run them "
                "first as statements of their own\n" +
                render_caret(text, e.span));
        if (e.kind == parsed::ExprKind::Call && is_constructor(e.text))
            throw ArgumentError(
                fmt::format("explain shows programs the runtime compiles; {}(...) is made by the command "
                            "line, not compiled: bind it first (-e 'x = {}(...)', or a statement of its "
                            "own) and explain what uses it\n{}",
                            e.text, e.text, render_caret(text, e.name_span)));
        for (const auto& o : e.operands)
            if (o) visit(*o);
        for (const auto& k : e.keywords)
            if (k.value) visit(*k.value);
    };
    for (const auto& st : m.statements)
        if (st.value) visit(*st.value);
    return runtime_->explain(text, env_, options);
}

}  // namespace jit::cli

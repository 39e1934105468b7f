// jitexpr — jit::Runtime: the front of every call. Options, the caches (a text's parse, the
// program prepared for a binding signature), one front() for eval, run and run_into, and the
// dispatch of each call to the way run::decide chose (run/ways.hpp).
#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include "api/runtime_impl.hpp"

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "core/device.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace jit {

namespace runtime_private {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Appends the binding of `name` (absent, scalar kind, or array dtype/backend/shape/strides) as
// raw bytes: the part of the front-cache key that the arguments contribute.
namespace {
// An undefined Array (what a program with no value returns) bound to a name: an ArgumentError
// naming it, before anything reads its null memory.
[[noreturn]] void undefined_argument(const std::string& name) {
    throw ArgumentError(
        fmt::format("'{}' is bound to an undefined array (jit::Array(), or the value of a program "
                    "that gave none)",
                    printable_name(name)));
}
}  // namespace

Bound::Bound(const Front& f, const Environment& env) {
    at.reserve(f.names.size());
    for (const std::string& n : f.names) {
        auto it = env.find(n);
        if (it != env.end() && it->second.is_array() && !it->second.array().defined()) undefined_argument(n);
        at.push_back(it == env.end() ? nullptr : &it->second);
    }
}

Bound::Bound(const Front& f, const std::vector<Arg>& args) {
    at.resize(f.names.size());
    for (std::size_t i = 0; i < f.names.size(); ++i) {
        const std::int32_t p = f.positional[i];
        at[i] = p >= 0 && static_cast<std::size_t>(p) < args.size() ? &args[static_cast<std::size_t>(p)] : nullptr;
        if (at[i] && at[i]->is_array() && !at[i]->array().defined()) undefined_argument(f.names[i]);
    }
}

void append_signature(std::string& key, const Arg* bound) {
    if (!bound) {
        key += '-';
        return;
    }
    const Arg& a = *bound;
    if (!a.is_array()) {
        key += 's';
        key += static_cast<char>(a.value().index());
        return;
    }
    const Array& arr = a.array();
    const Shape& shape = arr.shape();
    const Strides& strides = arr.strides();
    // Written into the key's own storage at once (one resize, no per-byte capacity checks: this
    // is on every call's path).
    const std::size_t at = key.size();
    const std::size_t dims = shape.size() + strides.size();
    const bool width = is_string(arr.dtype());  // a string array's width
    key.resize(at + 5 + 8 * dims + (width ? sizeof(std::size_t) : 0));
    char* out = key.data() + at;
    out[0] = 'a';
    out[1] = static_cast<char>(arr.dtype());
    out[2] = static_cast<char>(arr.backend());
    out[3] = static_cast<char>(arr.ndim());
    out[4] = static_cast<char>(arr.read_only());  // a read-only target is refused when checked
    out += 5;
    for (const std::int64_t e : shape) {  // fixed-size copies, inlined (a few axes)
        std::memcpy(out, &e, 8);
        out += 8;
    }
    for (const std::int64_t e : strides) {
        std::memcpy(out, &e, 8);
        out += 8;
    }
    if (width) {
        const std::size_t item = arr.itemsize();
        std::memcpy(out, &item, sizeof item);
    }
}

namespace {
std::int64_t array_word(const Array& arr) {
    return 2 | static_cast<std::int64_t>(arr.dtype()) << 8 | static_cast<std::int64_t>(arr.backend()) << 16 |
           static_cast<std::int64_t>(arr.read_only()) << 24 | static_cast<std::int64_t>(arr.shape().size()) << 32 |
           static_cast<std::int64_t>(arr.strides().size()) << 48;
}
std::int64_t scalar_word(const Arg& a) { return 1 | static_cast<std::int64_t>(a.value().index()) << 8; }
}  // namespace

bool same_signature(const Signature& s, const Bound& b) {
    const std::int64_t* w = s.data();
    const std::int64_t* const end = w + s.size();
    for (const Arg* a : b.at) {
        if (w == end) return false;
        if (!a) {
            if (*w++ != 0) return false;
            continue;
        }
        if (!a->is_array()) {
            if (*w++ != scalar_word(*a)) return false;
            continue;
        }
        const Array& arr = a->array();
        const Shape& shape = arr.shape();
        const Strides& strides = arr.strides();
        if (w[0] != array_word(arr)) return false;  // the same ranks: the words that follow line up
        if (end - w < static_cast<std::ptrdiff_t>(3 + shape.size() + strides.size())) return false;
        if (w[1] != arr.device() || w[2] != static_cast<std::int64_t>(arr.itemsize())) return false;
        w += 3;
        for (const std::int64_t e : shape)
            if (*w++ != e) return false;
        for (const std::int64_t e : strides)
            if (*w++ != e) return false;
    }
    return w == end;
}

void signature_of(Signature& out, const Bound& b) {
    out.clear();
    for (const Arg* a : b.at) {
        if (!a) {
            out.push_back(0);
            continue;
        }
        if (!a->is_array()) {
            out.push_back(scalar_word(*a));
            continue;
        }
        const Array& arr = a->array();
        const std::size_t at = out.size();
        const std::size_t nd = arr.shape().size(), ns = arr.strides().size();
        out.resize(at + 3 + nd + ns);
        std::int64_t* w = out.data() + at;
        w[0] = array_word(arr);
        w[1] = arr.device();
        w[2] = static_cast<std::int64_t>(arr.itemsize());
        std::copy(arr.shape().begin(), arr.shape().end(), w + 3);
        std::copy(arr.strides().begin(), arr.strides().end(), w + 3 + nd);
    }
}

DType scalar_dtype(const Arg& a) {
    switch (a.value().index()) {
        case 1: return DType::Bool;
        case 2: return DType::Int64;
        case 3: return DType::Float64;
        default: return DType::Complex128;
    }
}

}  // namespace runtime_private

namespace {

RuntimeOptions checked(RuntimeOptions options) {
    if (options.cpu_threads < 0)
        throw ArgumentError(fmt::format("RuntimeOptions::cpu_threads is {}: use 0 for every core, or a positive count",
                                        options.cpu_threads));
    options.cpu_threads = std::min(options.cpu_threads, settings::kMaxCpuThreads);  // documented clamp
    if (options.device < 0)
        throw ArgumentError(fmt::format("RuntimeOptions::device is {}: use a device ordinal from 0", options.device));
    if (options.backend == Backend::Cpu && options.device != 0)
        throw ArgumentError(
            fmt::format("device {} was asked for (RuntimeOptions::device, JITEXPR_DEVICE or --device) "
                        "but the backend is cpu, which has one device (0); choose the cuda backend for "
                        "a GPU",
                        options.device));
    return options;
}

std::uint64_t next_runtime_serial() {
    static std::atomic<std::uint64_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

run::MachineOptions machine_options(const RuntimeOptions& o) {
    run::MachineOptions m;
    m.backend = o.backend;
    m.device = o.device;
    m.cpu_threads = o.cpu_threads;
    m.disk_cache = o.disk_cache;
    m.cache_dir = o.cache_dir;
    m.memory_cache_entries = o.memory_cache_entries;
    m.device_memory_limit = o.device_memory_limit;
    return m;
}

// "'a' is on cuda:1 but this runtime evaluates on cuda:0; ..." for an array not on this runtime's device.
std::string mismatch_message(Backend backend, int device, const std::string& name, const Array& a) {
    const std::string here = backend == Backend::Cuda ? fmt::format("cuda:{}", device) : std::string("cpu");
    const std::string there = a.backend() == Backend::Cuda ? fmt::format("cuda:{}", a.device()) : std::string("cpu");
    const std::string move =
        backend == Backend::Cuda ? fmt::format("Backend::Cuda, {}", device) : std::string("Backend::Cpu");
    return fmt::format(
        "'{}' is on {} but this runtime evaluates on {}; jitexpr does not copy between devices "
        "by itself: copy it with .to({}), or evaluate on a runtime of {}",
        name, there, here, move, there);
}

// The span of a program's statement (of its first, when it has several).
SourceSpan statements_span(const Front& f) {
    return f.module.statements.empty() ? SourceSpan{} : f.module.statements.front().span;
}

// run_into's out= cannot be sized for the data's length.
void check_out(const ir::Program& p, std::string_view text) {
    for (const ir::OutputDecl& od : p.outputs)
        if (od.name == kOutName && p.is_dynamic(od.node))
            throw ValueError("out= cannot take a boolean-mask selection: its length is known only when it runs", text,
                             p.node(od.node).span);
}

}  // namespace

// ---- the front: parse, plan and prepare, each cached

Runtime::Impl::Impl(RuntimeOptions o)
    : options(std::move(o)),
      machine(machine_options(options)),
      fronts(options.memory_cache_entries),
      entries(options.memory_cache_entries),
      cpu_entries(options.memory_cache_entries),
      serial(next_runtime_serial()) {}

const Front& Runtime::Impl::front(std::string_view text, bool strict, bool into, double* parse_ms) {
    return *fronts.fetch(runtime_private::FrontKeyView{text, strict, into}, [&] {
        const auto t0 = Clock::now();
        auto f = std::make_shared<Front>();
        f->module = syntax::parse(text);
        if (into) {
            // run_into: the text's last statement assigned to kOutName, the name under which
            // run_into binds its `out` array.
            if (f->module.statements.empty())
                throw ArgumentError("out= needs a program whose last statement is an expression; this one is empty");
            syntax::Statement& last = f->module.statements.back();
            if (!last.target.empty())
                throw ArgumentError(
                    fmt::format("out= needs a program whose last statement is an expression, not an "
                                "assignment to '{}'",
                                last.target));
            last.target = std::string(kOutName);
            last.target_span = last.value ? last.value->span : last.span;
        }
        f->params = dsl::parameters(f->module);
        // By name, a bound `pi` shadows the constant: the names that matter include the
        // constants the program reads, while the positional parameters leave them out.
        f->names = dsl::free_names(f->module);
        for (auto& t : dsl::targets(f->module))
            if (std::find(f->names.begin(), f->names.end(), t) == f->names.end()) f->names.push_back(t);
        for (const std::string& n : f->names) {
            const auto p = std::find(f->params.begin(), f->params.end(), n);
            f->positional.push_back(p == f->params.end() ? -1 : static_cast<std::int32_t>(p - f->params.begin()));
        }
        f->strict = strict;
        if (parse_ms) *parse_ms = ms_since(t0);
        return std::shared_ptr<const Front>(std::move(f));
    });
}

void Runtime::Impl::entry_key(std::string& key, std::string_view text, const Front& f, const Bound& b) {
    key.assign(text);
    key += '\0';
    if (f.strict) key += '!';
    for (const Arg* a : b.at) runtime_private::append_signature(key, a);
}

// ---- a repeated call
//
// A loop that evaluates one text over arrays of the same kinds asks the same questions on every
// call: the axis order, the placement, the devices, the entry key and its cache. Each thread
// keeps the answers of its last few direct runs; a call of the same parse (the same Front)
// with the same bindings (Signature) on the same runtime, backend started as then, runs the
// program it ran then. The entries are held weakly: a program the cache dropped (evicted,
// cleared) is looked up again, and a runtime destroyed leaves nothing alive here.

namespace {

struct Repeat {
    std::uint64_t serial = 0;  // the runtime's (0: empty)
    Backend started = Backend::Auto;
    const Front* front = nullptr;
    std::weak_ptr<const Front> front_memory;  // keeps `front`'s address from being reused
    runtime_private::Signature signature;
    runtime_private::EntryCache::Handle entry;
    // Per input and scalar slot of the entry's program: the index of its name in Front::names.
    boost::container::small_vector<std::uint32_t, 8> input_at;
    boost::container::small_vector<std::uint32_t, 4> scalar_at;
};

struct Repeats {
    std::array<Repeat, 4> slots;
    unsigned next = 0;
};

// Where each of `names` is in f.names; false when one is not there.
template <class Decls, class Out>
bool positions(const Front& f, const Decls& decls, Out& out) {
    out.clear();
    for (const auto& d : decls) {
        const auto it = std::find(f.names.begin(), f.names.end(), d.name);
        if (it == f.names.end()) return false;
        out.push_back(static_cast<std::uint32_t>(it - f.names.begin()));
    }
    return true;
}

Repeats& repeats() {
    thread_local Repeats r;
    return r;
}

}  // namespace

bool Runtime::Impl::repeat(const Front& f, const Bound& b, Repeated& r) {
    for (const Repeat& s : repeats().slots) {
        if (s.front != &f || s.serial != serial || s.started != machine.started_backend() ||
            !runtime_private::same_signature(s.signature, b))
            continue;
        r.entry = entries.again(s.entry);
        if (!r.entry) return false;  // dropped from the cache: looked up again
        r.inputs.resize(s.input_at.size());
        for (std::size_t i = 0; i < s.input_at.size(); ++i) r.inputs[i] = b.at[s.input_at[i]];
        r.scalars.resize(s.scalar_at.size());
        for (std::size_t i = 0; i < s.scalar_at.size(); ++i) r.scalars[i] = b.at[s.scalar_at[i]];
        return true;
    }
    return false;
}

void Runtime::Impl::remember(const Front& f, const Bound& b, const run::Entry& e, const EntryCache::Handle& h) {
    Repeats& r = repeats();
    Repeat* slot = nullptr;
    for (Repeat& s : r.slots)
        if (s.front == &f && s.serial == serial) slot = &s;  // this text's last signature replaced
    if (!slot) slot = &r.slots[r.next++ % r.slots.size()];
    const ir::Program& p = e.plan.program;
    if (!positions(f, p.inputs, slot->input_at) || !positions(f, p.scalars, slot->scalar_at)) {
        *slot = Repeat{};  // a slot bound under a name the text does not use: not remembered
        return;
    }
    slot->serial = serial;
    slot->started = machine.started_backend();
    slot->front = &f;
    slot->front_memory = f.weak_from_this();
    runtime_private::signature_of(slot->signature, b);
    slot->entry = h;
}

const std::shared_ptr<const run::Entry>& Runtime::Impl::entry(On on, std::string_view text, const Front& f,
                                                              const Environment& env, const Bound& b, Timing* timing,
                                                              detail::CallControl* control,
                                                              EntryCache::Handle* handle) {
    thread_local std::string key;  // reused: no allocation once it has grown
    entry_key(key, text, f, b);
    bool created = false;
    auto prepare = [&] {
        const auto t0 = Clock::now();
        detail::BackendImpl& backend = on == On::Main ? machine.main() : machine.cpu();
        ir::Plan plan = plan_of(text, f, env, on == On::Main ? machine.limits() : machine.cpu_limits());
        const double check_ms = ms_since(t0);
        detail::PrepareOptions po = prepare_options();
        po.control = control;
        std::shared_ptr<const run::Entry> e = run::prepare(std::move(plan), backend, po);
        if (options.show_kernels) {
            const std::string src = e->prepared->source();
            if (!src.empty()) std::fprintf(stderr, "jitexpr: generated CUDA source:\n%s\n", src.c_str());
        }
        const detail::PrepareInfo info = e->prepared->info();
        if (timing) {
            timing->check_ms = check_ms;
            timing->emit_ms = info.emit_ms;
            timing->compile_ms = info.compile_ms;
            timing->load_ms = info.load_ms;
            timing->module_cache_hit = info.module_cache_hit;
        }
        return e;
    };
    const std::shared_ptr<const run::Entry>& e = on == On::Main
                                                     ? entries.fetch(std::string_view(key), prepare, &created, handle)
                                                     : cpu_entries.fetch(std::string_view(key), prepare, &created);
    if (!created && timing) timing->cache_hit = true;
    return e;
}

ir::Plan Runtime::Impl::plan_of(std::string_view text, const Front& f, const Environment& env,
                                const dsl::Limits& limits) const {
    // Bindings the checker sees: each name's dtype/shape/strides, arrays on this backend only.
    std::unordered_map<std::string, dsl::Binding> bindings;
    for (const std::string& n : f.names) {
        auto it = env.find(n);
        if (it == env.end()) continue;
        dsl::Binding b;
        if (it->second.is_array()) {
            const Array& a = it->second.array();
            b.kind = dsl::Binding::Kind::Array;
            b.dtype = a.dtype();
            b.shape = a.shape();
            b.strides = a.strides();
            b.itemsize = a.itemsize();
            b.read_only = a.read_only();
            // run_into's out= is always written in place (cast and broadcast into it).
            b.strict = f.strict || n == kOutName;
        } else {
            b.kind = dsl::Binding::Kind::Scalar;
            b.dtype = runtime_private::scalar_dtype(it->second);
        }
        bindings.emplace(n, std::move(b));
    }
    dsl::Bindings db;
    db.lookup = [&](std::string_view name) -> const dsl::Binding* {
        auto it = bindings.find(std::string(name));
        return it == bindings.end() ? nullptr : &it->second;
    };
    // Every bound name, only if a message needs them: a statement costs nothing per
    // variable of the environment.
    db.names = [&env] {
        std::vector<std::string> bound;
        for (const auto& [n, v] : env) bound.push_back(n);
        return bound;
    };
    return dsl::plan(f.module, text, db, limits);
}

std::shared_ptr<const run::Entry> Runtime::Impl::host_plan(std::string_view text, const Front& f,
                                                           const Environment& env, const Bound& b) {
    std::string key;
    entry_key(key, text, f, b);
    return host_plans.fetch(std::string_view(key), [&] {
        return std::shared_ptr<const run::Entry>(run::host_plan(plan_of(text, f, env, machine.host_limits())));
    });
}

detail::PrepareOptions Runtime::Impl::prepare_options() const {
    detail::PrepareOptions po;
    po.fast_math = options.fast_math;
    po.nvrtc_options = options.nvrtc_options;
    po.tiered = options.tiered_compile;
    return po;
}

run::Where Runtime::Impl::where_of(const Bound& b) {
    run::Where r;
    for (const Arg* a : b.at) {
        if (!a || !a->is_array()) continue;
        (a->array().backend() == Backend::Cpu ? r.host : r.on_device) = true;
    }
    return r;
}

void Runtime::Impl::check_devices(const Front& f, const Bound& b) const {
    const Backend backend = machine.started_backend();  // started: a call that runs directly
    const int device = machine.device();
    for (std::size_t i = 0; i < b.at.size(); ++i) {
        if (!b.at[i] || !b.at[i]->is_array()) continue;
        const Array& a = b.at[i]->array();
        if (a.backend() != backend || (backend == Backend::Cuda && a.device() != device))
            throw DeviceMismatchError(mismatch_message(backend, device, f.names[i], a));
    }
}

// ---- a call: decided, then run that way

class Runtime::Impl::CallPrograms final : public run::Programs {
public:
    CallPrograms(Runtime::Impl& rt, std::string_view text, const Front& f, Timing* timing, detail::CallControl* control)
        : rt_(rt), text_(text), f_(f), timing_(timing), control_(control) {}
    std::shared_ptr<const run::Entry> entry(const Environment& env, bool timed) override {
        return rt_.entry(Runtime::Impl::On::Main, text_, f_, env, Bound(f_, env), timed ? timing_ : nullptr, control_);
    }

private:
    Runtime::Impl& rt_;
    std::string_view text_;
    const Front& f_;
    Timing* timing_;
    detail::CallControl* control_;
};

namespace {

// `fn(call)` with the run-time arguments of a call with options `o`. Memory that could not be had
// is an OutOfMemoryError with a caret under what asked for it: the node a backend names (an
// order statistic, a reduction), else the statement.
template <class Fn>
Array guarded(std::string_view text, const Front& f, const CallOptions& o, bool write_back,
              std::atomic<std::uint64_t>& cancel_epoch, Fn&& fn) {
    detail::CallControl control(o.cancel ? &*o.cancel : nullptr, &cancel_epoch, &o.progress);
    run::Call c;
    c.stream = o.stream;
    c.control = &control;
    c.all_or_nothing = o.in_place_all_or_nothing;
    c.write_back = write_back;
    c.run_ms = o.timing ? &o.timing->run_ms : nullptr;
    try {
        return fn(c);
    } catch (const detail::OutOfMemoryAt& e) {
        throw e.at(text, e.where.empty() ? statements_span(f) : e.where);
    } catch (const OutOfMemoryError& e) {
        if (e.located()) throw;
        throw e.at(text, statements_span(f));
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(0, core::host_memory_available(), "evaluating the program").at(text, statements_span(f));
    }
}

}  // namespace

Array Runtime::Impl::call(std::string_view text, const Front& f, Environment& env, const CallOptions& o,
                          bool write_back) {
    return guarded(text, f, o, write_back, cancel_epoch,
                   [&](const run::Call& c) { return run(text, f, env, c, o.timing); });
}

Array Runtime::Impl::call(std::string_view text, const Front& f, const Repeated& r, const CallOptions& o) {
    return guarded(text, f, o, /*write_back=*/false, cancel_epoch, [&](const run::Call& c) {
        c.control->check();  // cancelled before it began
        run::OnDevice on(machine.started_backend(), machine.device());
        return run::direct(**r.entry, r.slots(), c, nullptr);
    });
}

Array Runtime::Impl::run(std::string_view text, const Front& f, Environment& env, const run::Call& c, Timing* timing) {
    if (f.module.statements.empty()) return Array();
    if (c.control) c.control->check();  // cancelled before it began
    const Bound b(f, env);
    if (Repeated r; !timing && repeat(f, b, r)) {
        run::OnDevice on(machine.started_backend(), machine.device());
        return run::direct(**r.entry, r.slots(), c, &env);
    }
    const std::optional<run::AxisOrder> order = order_of(text, f, env, b);
    if (!order) return run_placed(text, f, env, b, c, timing, /*remember=*/true);
    Environment ordered = run::in_order(*order, f.names, env);
    const Array r = run_placed(text, f, ordered, Bound(f, ordered), c, timing);
    if (c.write_back) run::assign_back(*order, f.names, ordered, env);
    return run::restored(*order, r);
}

std::optional<run::AxisOrder> Runtime::Impl::order_of(std::string_view text, const Front& f, const Environment& env,
                                                      const Bound& b) {
    std::optional<run::AxisOrder> order = run::shared_order(std::span<const Arg* const>(b.at.data(), b.at.size()));
    if (!order) return order;
    // Whether the program keeps the order: read off its plan over the arrays as they are. A text
    // that does not plan is left to the call itself, which reports why.
    std::shared_ptr<const run::Entry> plan;
    try {
        plan = host_plan(text, f, env, b);
    } catch (const Error&) {
        return std::nullopt;
    }
    if (!run::order_free(plan->plan.program, order->shape)) return std::nullopt;
    return order;
}

Array Runtime::Impl::run_placed(std::string_view text, const Front& f, Environment& env, const Bound& b,
                                const run::Call& c, Timing* timing, bool remember) {
    // Under Auto, Backend::Auto until a call needs the GPU: host data is decided (run_host)
    // before anything of CUDA starts; device arrays mean the driver is up already.
    Backend backend = machine.started_backend();
    run::Where where;
    if (backend != Backend::Cpu) {
        where = where_of(b);
        if (backend == Backend::Auto && where.on_device) backend = machine.start();
    }
    if (!run::runs_direct(options.backend, backend, where)) return run_host(text, f, env, b, c, timing);
    return run_direct(text, f, env, b, c, timing, remember);
}

Array Runtime::Impl::run_direct(std::string_view text, const Front& f, Environment& env, const Bound& b,
                                const run::Call& c, Timing* timing, bool remember) {
    check_devices(f, b);
    run::OnDevice on(machine.started_backend(), machine.device());
    EntryCache::Handle h;
    const run::Entry& e = *entry(On::Main, text, f, env, b, timing, c.control, remember ? &h : nullptr);
    check_out(e.plan.program, text);
    if (remember) this->remember(f, b, e, h);
    return run::direct(e, env, c);
}

Array Runtime::Impl::run_host(std::string_view text, const Front& f, Environment& env, const Bound& b,
                              const run::Call& c, Timing* timing) {
    // The pipeline's streams, buffers and kernels are this device's (a scope only: it starts nothing).
    run::OnDevice on(Backend::Cuda, machine.device());
    const std::shared_ptr<const run::Entry> host = host_plan(text, f, env, b);
    const ir::Program& p = host->plan.program;
    check_out(p, text);
    std::vector<Array> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        inputs[i] = run::bound_input(p.inputs[i], env.find(p.inputs[i].name)->second.array());
    run::Request r;
    r.asked = options.backend;
    r.backend = machine.started_backend();
    r.where = where_of(b);
    r.plan = &host->plan;
    r.inputs = inputs;
    r.all_or_nothing = c.all_or_nothing;
    r.device_memory_limit = options.device_memory_limit;
    const run::Decision d = run::decide(r, machine);
    // Under Auto, the backend this call started is the CPU (no CUDA here): the runtime's own.
    if (d.way == run::Way::Direct && machine.started_backend() == Backend::Cpu)
        return run_direct(text, f, env, b, c, timing);
    return execute(d, *host, text, f, env, b, c, timing);
}

Array Runtime::Impl::execute(const run::Decision& d, const run::Entry& host, std::string_view text, const Front& f,
                             Environment& env, const Bound& b, const run::Call& c, Timing* timing) {
    Array r;
    switch (d.way) {
        case run::Way::Direct:
        case run::Way::Sharded: throw InternalError("Runtime: host data decided to run directly or sharded");
        case run::Way::Cpu: {
            // The CPU backend's program over the host arrays, on the calling thread (no stream).
            run::Call on_cpu = c;
            on_cpu.stream = nullptr;
            if (c.control) c.control->check();
            r = run::direct(*entry(On::Cpu, text, f, env, b, timing, c.control), env, on_cpu);
            break;
        }
        case run::Way::Copied:
        case run::Way::TooLarge: {
            CallPrograms programs(*this, text, f, timing, c.control);
            r = run::copied(d, programs, f.names, dsl::targets(f.module), machine.device(), env, c);
            break;
        }
        case run::Way::Streamed: {
            CallPrograms programs(*this, text, f, timing, c.control);
            std::optional<Array> s = run::streamed(d, host, programs, env, c);
            if (!s)
                return execute(run::not_streamed(d, "its chunks make a different program", options.backend), host, text,
                               f, env, b, c, timing);
            r = std::move(*s);
            if (timing) {
                timing->streamed = true;
                timing->stream_chunks = d.chunks.chunks;
                timing->stream_device_bytes = d.chunks.device_bytes;
            }
            break;
        }
    }
    if (timing) timing->placement = run::placement(d);
    return r;
}

// ---- jit::Runtime

namespace {
// A call's Timing describes that call alone: emptied before it starts (a caller may pass the same
// one to every call), its parse time filled by front() on a miss. Where the parse's time goes.
double* fresh_timing(const CallOptions& o) {
    if (!o.timing) return nullptr;
    *o.timing = Timing{};
    return &o.timing->parse_ms;
}
}  // namespace

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>(checked(std::move(options)))) {}

Runtime::~Runtime() = default;

Backend Runtime::backend() const { return impl_->machine.backend(); }
std::optional<Backend> Runtime::started_backend() const {
    const Backend b = impl_->machine.started_backend();
    return b == Backend::Auto ? std::nullopt : std::optional<Backend>(b);
}
int Runtime::device() const { return impl_->machine.device(); }

void Runtime::wait_for_compiles() const { impl_->machine.wait_for_compiles(); }
void Runtime::synchronize(void* stream) const {
    run::OnDevice on(impl_->machine.started_backend(), impl_->machine.device());
    impl_->machine.synchronize(stream);
}
std::string Runtime::setup_note() const { return impl_->machine.setup_note(); }
std::string Runtime::fallback_reason() const {
    return impl_->machine.backend() == Backend::Cpu ? impl_->machine.fallback() : std::string();
}
const RuntimeOptions& Runtime::options() const { return impl_->options; }

CacheStats Runtime::stats() const {
    cache::MemoryStats es = impl_->entries.stats();
    if (impl_->machine.started_backend() != Backend::Cuda) {
        // Under Auto before CUDA started (and on the CPU it then started), host data kept on the
        // CPU is this runtime's own work: its programs count. A CUDA runtime's do not.
        const cache::MemoryStats cs = impl_->cpu_entries.stats();
        es.hits += cs.hits;
        es.coalesced += cs.coalesced;
        es.coalesced_failures += cs.coalesced_failures;
        es.misses += cs.misses;
        es.failures += cs.failures;
        es.entries += cs.entries;
    }
    CacheStats s;
    s.hits = es.hits + es.coalesced - es.coalesced_failures;
    s.misses = es.misses - es.failures;
    s.entries = es.entries;
    const run::CompileCounts cc = impl_->machine.compile_counts();
    s.compiles = cc.compiles;
    s.compile_ms = cc.compile_ms;
    s.disk_hits = cc.disk_hits;
    return s;
}

void Runtime::clear_memory_cache() {
    impl_->entries.clear();
    impl_->fronts.clear();
    impl_->host_plans.clear();
    impl_->cpu_entries.clear();
}

void Runtime::cancel() noexcept { impl_->cancel_epoch.fetch_add(1, std::memory_order_acq_rel); }

Array Runtime::eval(std::string_view text, const std::vector<Arg>& args, void* stream) {
    CallOptions o;
    o.stream = stream;
    return eval(text, args, o);
}

Array Runtime::eval(std::string_view text, const std::vector<Arg>& args, const CallOptions& options) {
    const Front* f = &impl_->front(text, options.strict_in_place, /*into=*/false, fresh_timing(options));
    if (args.size() != f->params.size()) {
        std::string names;
        for (auto& p : f->params) names += (names.empty() ? "" : ", ") + p;
        throw ArgumentError(fmt::format("the program reads {} variable{} ({}) but {} argument{} given",
                                        f->params.size(), f->params.size() == 1 ? "" : "s",
                                        names.empty() ? "none" : names, args.size(),
                                        args.size() == 1 ? " was" : "s were"));
    }
    // The same text over arguments like those of a recent call: no environment is needed.
    if (Repeated r; !options.timing && impl_->repeat(*f, Bound(*f, args), r)) return impl_->call(text, *f, r, options);
    // The bindings live in a per-thread environment that keeps its nodes from call to call, so
    // evaluating the same text again allocates nothing here. Names of other programs are dropped
    // first (a stale binding would change the program), and the values are released afterwards
    // (the thread must not keep the caller's arrays alive). A nested eval on the same thread
    // (none is expected) gets an environment of its own.
    thread_local Environment shared_env;
    thread_local bool busy = false;
    Environment local_env;
    Environment& env = busy ? local_env : shared_env;
    struct Release {
        Environment& env;
        bool& busy;
        bool owner;
        ~Release() {
            for (auto& kv : env) kv.second = Arg(false);
            if (owner) busy = false;
        }
    } release{env, busy, !busy};
    busy = true;
    for (auto it = env.begin(); it != env.end();) {
        if (std::find(f->params.begin(), f->params.end(), it->first) == f->params.end()) it = env.erase(it);
        else ++it;
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (auto it = env.find(f->params[i]); it != env.end()) it->second = args[i];
        else env.emplace(f->params[i], args[i]);
    }
    return impl_->call(text, *f, env, options, /*write_back=*/false);
}

Array Runtime::eval(std::string_view text, const Named& named, void* stream) {
    CallOptions o;
    o.stream = stream;
    return eval(text, named, o);
}

Array Runtime::eval(std::string_view text, const Named& named, const CallOptions& options) {
    const Front* f = &impl_->front(text, options.strict_in_place, /*into=*/false, fresh_timing(options));
    const Environment& names = named.values();
    for (const auto& [n, v] : names) {
        if (std::find(f->names.begin(), f->names.end(), n) != f->names.end()) continue;
        std::string used;
        for (const std::string& u : f->names) used += (used.empty() ? "" : ", ") + u;
        throw ArgumentError(fmt::format("'{}' is bound but the program neither reads nor assigns it (it uses: {})",
                                        printable_name(n), used.empty() ? "no names" : used));
    }
    Environment env = names;  // read only (nothing is written back): the caller's names stay as they are
    return impl_->call(text, *f, env, options, /*write_back=*/false);
}

Array Runtime::run(std::string_view text, Environment& env, void* stream, Timing* timing) {
    CallOptions o;
    o.stream = stream;
    o.timing = timing;
    return run(text, env, o);
}

Array Runtime::run(std::string_view text, Environment& env, const CallOptions& options) {
    const Front& f = impl_->front(text, options.strict_in_place, /*into=*/false, fresh_timing(options));
    return impl_->call(text, f, env, options, /*write_back=*/true);
}

Array Runtime::run_into(std::string_view text, Environment& env, const Array& out, void* stream) {
    CallOptions o;
    o.stream = stream;
    return run_into(text, env, out, o);
}

Array Runtime::run_into(std::string_view text, Environment& env, const Array& out, const CallOptions& options) {
    if (!out.defined()) throw ArgumentError("run_into: the out array is undefined");
    const Front* f = &impl_->front(text, options.strict_in_place, /*into=*/true, fresh_timing(options));
    // Bound for this call only: the name leaves env however the call ends. Its node is kept for
    // the thread's next call (emptied: it holds no array), so a repeated call allocates none.
    thread_local Environment::node_type spare;
    struct Unbind {
        Environment& env;
        ~Unbind() {
            auto it = env.find(kOutName);
            if (it == env.end()) return;
            Environment::node_type n = env.extract(it);
            n.mapped() = Arg(false);
            if (!spare) spare = std::move(n);
        }
    } unbind{env};
    if (auto it = env.find(kOutName); it != env.end()) {
        it->second = Arg(out);
    } else if (spare) {
        spare.mapped() = Arg(out);
        env.insert(std::move(spare));
    } else {
        env.emplace(std::string(kOutName), Arg(out));
    }
    Array r = impl_->call(text, *f, env, options, /*write_back=*/true);
    return r.defined() ? r : out;
}

std::string Runtime::source(std::string_view text, const Environment& env) {
    const Front& f = impl_->front(text, /*strict=*/false, /*into=*/false);
    run::OnDevice on(impl_->machine.backend(), impl_->machine.device());  // starts the backend under Auto
    return impl_->entry(Impl::On::Main, text, f, env, Bound(f, env), nullptr, nullptr)->prepared->source();
}

Runtime& Runtime::default_runtime() {
    static Runtime rt(RuntimeOptions::from_environment());
    return rt;
}

}  // namespace jit

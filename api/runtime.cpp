#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include "api/runtime_impl.hpp"

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "backend/cpu/combine.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/build.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "backend/cuda/stream.hpp"
#include "backend/cuda/stream_plan.hpp"
#include "core/device.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"

#include <fmt/format.h>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace jit {

namespace runtime_private {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The array an input slot reads: the bound array, or the view of it that the text takes
// (a[1:]), made from its memory without a copy.
Array bound_input(const ir::InputDecl& d, const Array& a) {
    if (!d.view) return a;
    return core::restrided(a, d.offset, d.shape, d.strides);
}

template <class T>
void append_raw(std::string& key, const T& v) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Appends the binding of `name` (absent, scalar kind, or array dtype/backend/shape/strides) as
// raw bytes: the part of the front-cache key that the arguments contribute.
void append_signature(std::string& key, const std::string& name, const Environment& env) {
    auto it = env.find(name);
    if (it == env.end()) {
        key += '-';
        return;
    }
    const Arg& a = it->second;
    if (!a.is_array()) {
        key += 's';
        key += static_cast<char>(a.value().index());
        return;
    }
    const Array& arr = a.array();
    key += 'a';
    key += static_cast<char>(arr.dtype());
    key += static_cast<char>(arr.backend());
    key += static_cast<char>(arr.ndim());
    key += static_cast<char>(arr.read_only());  // a read-only target is refused when checked
    for (auto e : arr.shape()) append_raw(key, e);
    for (auto e : arr.strides()) append_raw(key, e);
    if (is_string(arr.dtype())) append_raw(key, arr.itemsize());  // a string array's width
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

// Whether a host integer fits integer dtype t.
bool int_fits(std::int64_t v, DType t) {
    if (is_unsigned_int(t))
        return v >= 0 && (t == DType::UInt64 || static_cast<std::uint64_t>(v) >> (8 * itemsize(t)) == 0);
    const int bits = static_cast<int>(itemsize(t)) * 8;
    if (bits == 64) return true;
    const std::int64_t lim = std::int64_t{1} << (bits - 1);
    return v >= -lim && v < lim;
}

// A new array shaped as `proto` (sharing its dimensions, so nothing is allocated for them), on
// fresh storage; on CUDA, storage first written by work on the legacy default stream (which
// may reuse a freed block without a driver call) when `default_stream`.
Array empty_like(const Array& proto, bool default_stream) {
    const std::size_t bytes = proto.nbytes();
    if (proto.backend() == Backend::Cuda)
        return core::with_storage(
            proto, default_stream ? cuda::make_storage_for_default_stream(bytes) : cuda::make_storage(bytes));
    return core::with_storage(proto, core::host_storage(bytes));
}

ir::Value scalar_value(const Arg& a) {
    const auto& v = a.value();
    switch (v.index()) {
        case 1: return ir::Value::of_bool(std::get<bool>(v));
        case 2: return ir::Value::of_int(std::get<std::int64_t>(v));
        case 3: return ir::Value::of_float(std::get<double>(v));
        default: return ir::Value::of_complex(std::get<std::complex<double>>(v));
    }
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

std::optional<ExactInt> exact_int(const ir::Program& p, ir::NodeId id,
                                  const boost::container::small_vector<ir::Value, 4>& scalars, int depth = 0) {
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
            if (y == 0) return std::nullopt;  // 0 in the kernels, as NumPy's integer division by zero
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
void check_scalar_fits(const ir::Program& p, const boost::container::small_vector<ir::Value, 4>& scalars) {
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

// The program's scalars from `env`, checked (a negative integer exponent is a ValueError).
void bind_scalars(const ir::Program& p, const Environment& env, boost::container::small_vector<ir::Value, 4>& scalars) {
    for (std::size_t s = 0; s < p.scalars.size(); ++s) {
        const ir::ScalarDecl& d = p.scalars[s];
        scalars[s] = scalar_value(env.find(d.name)->second);
        if (d.must_be_nonnegative && is_signed_int(scalars[s].dtype) && scalars[s].i < 0)
            throw ValueError(
                fmt::format("integers to negative integer powers are not allowed ('{}' is {})", d.name, scalars[s].i),
                p.text, d.span);
        for (DType t : d.must_fit)
            if (!int_fits(scalars[s].i, t))
                throw ValueError(
                    fmt::format("integer {} ('{}') is out of bounds for {}", scalars[s].i, d.name, dtype_name(t)),
                    p.text, d.span);
    }
    if (!p.scalar_fits.empty()) check_scalar_fits(p, scalars);
}

// The arrays of a program's outputs whose length the data decides (boolean-mask selections),
// made when the backend has counted: fresh storage of the runtime's backend.
class ResultAllocator final : public detail::OutputAllocator {
public:
    ResultAllocator(const std::vector<Array>& prototypes, bool default_stream)
        : prototypes_(prototypes), default_stream_(default_stream) {}
    Array allocate(std::size_t output, const Shape& shape) override {
        const Array& proto = prototypes_.at(output);
        try {
            return empty_like(core::prototype(proto.dtype(), shape, proto.backend()), default_stream_);
        } catch (const OutOfMemoryError& e) {
            // The backend puts the caret under the selection; the message says what it makes.
            throw OutOfMemoryError(e.requested(), e.available(),
                                   fmt::format("a selection's result, a {} array of shape {}",
                                               dtype_name(proto.dtype()), shape_to_string(shape)));
        }
    }

private:
    const std::vector<Array>& prototypes_;
    bool default_stream_;
};

// The conditions only the data decides (ir::RunCheck), once the program has run: min() of a
// selection that selected nothing is a ValueError pointing at the call.
void enforce_checks(const ir::Program& p, std::span<const Array> outputs) {
    for (const ir::RunCheck& c : p.checks)
        if (!outputs[static_cast<std::size_t>(c.output)].item<bool>()) throw ValueError(c.message, p.text, c.span);
}

}  // namespace

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
}  // namespace

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>(checked(std::move(options)))) {
    std::string why;
    switch (impl_->options.backend) {
        case Backend::Cpu:
            impl_->backend = Backend::Cpu;
            impl_->fallback.clear();
            break;
        case Backend::Cuda:
            if (!cuda::available(&why)) throw NoDeviceError(why);
            impl_->backend = Backend::Cuda;
            break;
        case Backend::Auto:
            impl_->backend = cuda::available(&why) ? Backend::Cuda : Backend::Cpu;
            impl_->fallback = why;
            // Device N was asked for: the CPU is not a silent stand-in for a GPU that is not there.
            if (impl_->backend == Backend::Cpu && impl_->options.device != 0)
                throw NoDeviceError(fmt::format("CUDA device {} was asked for but CUDA is not available: {}",
                                                impl_->options.device, why));
            break;
    }
    if (impl_->backend == Backend::Cuda) {
        const int n = cuda::device_count();
        if (impl_->options.device >= n)
            throw ArgumentError(fmt::format("no CUDA device {}: this machine has {} (ordinals 0 to {})",
                                            impl_->options.device, n, n - 1));
        impl_->device = impl_->options.device;
        // NVRTC is not started here: a process whose kernels all come from the disk cache never
        // loads it (the executor starts its warm-up at the first miss of a tiered compile).
        cuda::ExecutorOptions eo;
        eo.device = impl_->device;
        eo.cache = std::make_shared<cuda::ModuleCache>(impl_->options.memory_cache_entries);
        if (impl_->options.disk_cache) {
            cache::DiskCacheOptions dco;
            dco.dir = impl_->options.cache_dir;
            auto disk = std::make_shared<cache::DiskCache>(dco);
            if (disk->enabled()) {
                impl_->disk = disk;
                eo.cache->set_image_store(
                    cuda::ImageStore{[disk](const std::string& key) { return disk->get(cache::digest(key)); },
                                     [disk](const std::string& key, const std::string& bytes) {
                                         disk->put(cache::digest(key), bytes);
                                     }});
            }
        }
        impl_->modules = eo.cache;
        impl_->impl = cuda::make_cuda_backend(eo);
    } else {
        impl_->impl = detail::make_cpu_backend(impl_->options.cpu_threads);
    }
    impl_->limits = impl_->impl->limits();
}

Runtime::~Runtime() = default;

Backend Runtime::backend() const { return impl_->backend; }
int Runtime::device() const { return impl_->device; }

void Runtime::wait_for_compiles() const {
    if (impl_->backend == Backend::Cuda) cuda::wait_for_upgrades();
}
void Runtime::synchronize(void* stream) const {
    OnDevice on(impl_->backend, impl_->device);
    if (impl_->backend == Backend::Cuda) cuda::synchronize(stream);
}
std::string Runtime::setup_note() const { return impl_->impl ? impl_->impl->setup_note() : std::string(); }
std::string Runtime::fallback_reason() const {
    return impl_->backend == Backend::Cpu ? impl_->fallback : std::string();
}
const RuntimeOptions& Runtime::options() const { return impl_->options; }

CacheStats Runtime::stats() const {
    const cache::MemoryStats es = impl_->entries.stats();
    CacheStats s;
    s.hits = es.hits + es.coalesced - es.coalesced_failures;
    s.misses = es.misses - es.failures;
    s.entries = es.entries;
    if (impl_->modules) {
        const auto ms = impl_->modules->stats();
        s.compiles = ms.compiles;
        s.compile_ms = ms.compile_ms;
        s.disk_hits = ms.disk_hits;
    }
    return s;
}

void Runtime::clear_memory_cache() {
    impl_->entries.clear();
    impl_->fronts.clear();
}

void Runtime::cancel() noexcept { impl_->cancel_epoch.fetch_add(1, std::memory_order_acq_rel); }

Array Runtime::eval(std::string_view text, const std::vector<Arg>& args, void* stream) {
    CallOptions o;
    o.stream = stream;
    return eval(text, args, o);
}

Array Runtime::eval(std::string_view text, const std::vector<Arg>& args, const CallOptions& options) {
    const Front* f = &impl_->front(text, nullptr, options.strict_in_place);
    if (args.size() != f->params.size()) {
        std::string names;
        for (auto& p : f->params) names += (names.empty() ? "" : ", ") + p;
        throw ArgumentError(fmt::format("the program reads {} variable{} ({}) but {} argument{} given",
                                        f->params.size(), f->params.size() == 1 ? "" : "s",
                                        names.empty() ? "none" : names, args.size(),
                                        args.size() == 1 ? " was" : "s were"));
    }
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
    return impl_->run(text, *f, env, options, /*write_back=*/false);
}

Array Runtime::eval(std::string_view text, const Named& named, void* stream) {
    CallOptions o;
    o.stream = stream;
    return eval(text, named, o);
}

Array Runtime::eval(std::string_view text, const Named& named, const CallOptions& options) {
    const Front* f = &impl_->front(text, nullptr, options.strict_in_place);
    const Environment& names = named.values();
    for (const auto& [n, v] : names) {
        if (std::find(f->names.begin(), f->names.end(), n) != f->names.end()) continue;
        std::string used;
        for (const std::string& u : f->names) used += (used.empty() ? "" : ", ") + u;
        throw ArgumentError(fmt::format("'{}' is bound but the program neither reads nor assigns it (it uses: {})", n,
                                        used.empty() ? "no names" : used));
    }
    Environment env = names;  // read only (nothing is written back): the caller's names stay as they are
    return impl_->run(text, *f, env, options, /*write_back=*/false);
}

Array Runtime::run(std::string_view text, Environment& env, void* stream, Timing* timing) {
    CallOptions o;
    o.stream = stream;
    o.timing = timing;
    return run(text, env, o);
}

Array Runtime::run(std::string_view text, Environment& env, const CallOptions& options) {
    double parse_ms = 0;
    const Front& f = impl_->front(text, &parse_ms, options.strict_in_place);
    if (options.timing) options.timing->parse_ms = parse_ms;
    return impl_->run(text, f, env, options, /*write_back=*/true);
}

Array Runtime::Impl::run(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
                         bool write_back, detail::CallControl* control, bool all_or_nothing) {
    const Front* f = &front;
    if (f->module.statements.empty()) return Array();
    if (control) control->check();  // cancelled before it began

    // Host arrays on a CUDA runtime: streamed through the GPU (or, under Auto, maybe the CPU).
    if (backend == Backend::Cuda) {
        const auto [host, on_device] = placement_of(*f, env);
        if (host && !on_device) return run_host(text, front, env, stream, timing, write_back, control, all_or_nothing);
    }
    check_devices(*f, env);
    OnDevice on(backend, device);
    const Entry* e = &entry(text, *f, env, timing, control);
    const ir::Program& p = e->plan.program;
    for (const ir::OutputDecl& od : p.outputs)  // run_into's out= cannot be sized for the data's length
        if (od.name == kOutName && p.is_dynamic(od.node))
            throw ValueError("out= cannot take a boolean-mask selection: its length is known only when it runs", text,
                             p.node(od.node).span);

    const auto t_run = timing ? Clock::now() : Clock::time_point();  // a hit reads no clock untimed
    // Small vectors: no heap allocation for programs of up to 8 inputs/outputs.
    boost::container::small_vector<Array, 8> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        inputs[i] = bound_input(p.inputs[i], env.find(p.inputs[i].name)->second.array());
    boost::container::small_vector<ir::Value, 4> scalars(p.scalars.size());
    bind_scalars(p, env, scalars);
    boost::container::small_vector<Array, 8> outputs(p.outputs.size());
    boost::container::small_vector<std::size_t, 4> copy_back;
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const ir::OutputDecl& od = p.outputs[o];
        if (p.is_dynamic(od.node)) continue;  // the backend has it made once it has counted
        if (od.alias_input >= 0 && e->plan.direct_alias[o] && !all_or_nothing) {
            outputs[o] = inputs[static_cast<std::size_t>(od.alias_input)];
        } else {
            try {
                outputs[o] = empty_like(e->output_shapes[o], stream == nullptr);
            } catch (const OutOfMemoryError& oom) {
                const Array& shape = e->output_shapes[o];
                throw detail::OutOfMemoryAt(
                    OutOfMemoryError(oom.requested(), oom.available(),
                                     fmt::format("{}a {} array of shape {}",
                                                 od.name.empty() ? "the value, " : fmt::format("'{}', ", od.name),
                                                 dtype_name(shape.dtype()), shape_to_string(shape.shape()))),
                    p.node(od.node).span);
            }
            if (od.alias_input >= 0) copy_back.push_back(o);
        }
    }
    detail::RunArgs ra;
    ra.inputs = std::span<const Array>(inputs.data(), inputs.size());
    ra.scalars = std::span<const ir::Value>(scalars.data(), scalars.size());
    ra.outputs = std::span<Array>(outputs.data(), outputs.size());
    ra.stream = stream;
    ra.control = control;
    ResultAllocator allocate(e->output_shapes, stream == nullptr);
    ra.allocate = &allocate;
    boost::container::small_vector<bool, 8> started(p.outputs.size(), false);
    ra.started_outputs = started.data();
    try {
        e->prepared->run(ra);
    } catch (const CancelledError&) {
        // New arrays are dropped with `outputs`; in-place targets written directly may be partial.
        std::vector<std::string> partly;
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            const ir::OutputDecl& od = p.outputs[o];
            if (od.alias_input >= 0 && e->plan.direct_alias[o] && !all_or_nothing && started[o])
                partly.push_back(od.name.empty() ? p.inputs[static_cast<std::size_t>(od.alias_input)].name : od.name);
        }
        throw CancelledError(std::move(partly));
    }
    // Results that could not be written in place: copied into the arrays now, on the stream, by
    // the backend's copy (same dtype and shape; the target may be strided). The program is
    // complete, so these copies are not cancelled: an in-place write finishes or never starts.
    for (std::size_t o : copy_back) {
        const Array& target = inputs[static_cast<std::size_t>(p.outputs[o].alias_input)];
        core::copy(target, outputs[o], stream);
        outputs[o] = target;
    }
    enforce_checks(p, std::span<const Array>(outputs.data(), outputs.size()));
    if (timing) {
        if (backend == Backend::Cuda) cuda::synchronize(stream);
        timing->run_ms = ms_since(t_run);
    }
    if (write_back)
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (!p.outputs[o].name.empty()) env.insert_or_assign(p.outputs[o].name, Arg(outputs[o]));
    return e->plan.result_output >= 0 ? outputs[static_cast<std::size_t>(e->plan.result_output)] : Array();
}

// ---- host data on a CUDA runtime

namespace runtime_private {

std::string human(std::uint64_t bytes) {
    if (bytes >= (std::uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
    if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
    return fmt::format("{} bytes", bytes);
}

}  // namespace runtime_private

Runtime& Runtime::Impl::cpu_runtime() {
    std::lock_guard<std::mutex> lock(cpu_mutex);
    if (!cpu) {
        RuntimeOptions o = options;
        o.backend = Backend::Cpu;
        cpu = std::make_unique<Runtime>(o);
    }
    return *cpu;
}

std::size_t Runtime::Impl::device_budget() const {
    std::size_t free = 0, total = 0;
    cuda::device_memory(&free, &total);
    const std::size_t usable = free - free / 10;
    if (options.device_memory_limit) return std::min(options.device_memory_limit, usable);
    return free / 10 * 8;
}

const Runtime::Impl::HostModel& Runtime::Impl::host_model() {
    std::call_once(model_once, [&] {
        const cuda::DeviceInfo& dev = cuda::device_info();
        const std::string key = cache::digest(fmt::format("jitexpr host model v1|{}|{}|{}|{}|{}", dev.name,
                                                          dev.total_memory, std::thread::hardware_concurrency(),
                                                          options.cpu_threads, cuda::driver_version()));
        if (disk) {
            if (auto v = disk->get(key)) {
                double link = 0, cpu_gbs = 0;
                std::istringstream in(*v);
                if (in >> link >> cpu_gbs && link > 0 && cpu_gbs > 0) {
                    model = {link, cpu_gbs, "the disk cache"};
                    return;
                }
            }
        }
        const cuda::LinkMeasure m = cuda::measure_link(std::size_t{64} << 20, 3);
        // Pageable memory (NumPy's) is the common case: the link as the pipeline sees it.
        model.link_gbs = std::min(m.pinned_to_device_gbs, m.staging_gbs);
        // The CPU backend on c = a*2+b, float32, 2^23 elements (96 MiB read and written), best of 3.
        Runtime& c = cpu_runtime();
        const std::int64_t n = std::int64_t{1} << 23;
        Array a = Array::zeros(DType::Float32, {n}, Backend::Cpu), b = Array::zeros(DType::Float32, {n}, Backend::Cpu);
        c.eval("a*2+b", {a, b});
        double best = 0;
        for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            c.eval("a*2+b", {a, b});
            const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
            if (sec > 0) best = std::max(best, 12.0 * static_cast<double>(n) / sec / 1e9);
        }
        model.cpu_gbs = best > 0 ? best : 1;
        model.source = "measured";
        if (disk) disk->put(key, fmt::format("{} {}\n", model.link_gbs, model.cpu_gbs));
    });
    return model;
}

std::shared_ptr<const Entry> Runtime::Impl::entry_shared(std::string_view text, const Front& f, const Environment& env,
                                                         detail::CallControl* control) {
    std::string key(text);
    key += '\0';
    if (f.strict) key += '!';
    for (const std::string& n : f.names) append_signature(key, n, env);
    return entries.fetch(std::string_view(key), [&] { return prepare(text, f, env, nullptr, control); });
}

std::shared_ptr<const Runtime::Impl::HostEntry> Runtime::Impl::host_entry(std::string_view text, const Front& f,
                                                                          const Environment& env) {
    std::string key("\x02");
    key.append(text);
    key += '\0';
    if (f.strict) key += '!';
    for (const std::string& n : f.names) append_signature(key, n, env);
    return host_entries.fetch(std::string_view(key), [&] {
        auto h = std::make_shared<HostEntry>();
        h->plan = plan_of(text, f, env);
        for (const ir::OutputDecl& od : h->plan.program.outputs) {
            const ir::Node& n = h->plan.program.node(od.node);
            h->output_shapes.push_back(core::prototype(n.dtype, n.shape, Backend::Cpu));
        }
        return std::shared_ptr<const HostEntry>(std::move(h));
    });
}

Runtime::Impl::HostChoice Runtime::Impl::choose_host(const HostEntry& he, const std::vector<Array>& inputs,
                                                     bool all_or_nothing, std::size_t budget) {
    const ir::Program& p = he.plan.program;
    HostChoice c;
    for (const Array& a : inputs) c.in_bytes += a.nbytes();
    for (const Array& o : he.output_shapes) c.out_bytes += o.nbytes();
    const std::uint64_t bytes = c.in_bytes + c.out_bytes;
    c.budget = budget;
    auto cpu_because = [&](std::string why) {
        c.kind = HostChoice::Kind::Cpu;
        c.why = std::move(why);
        return c;
    };
    // Backend::Auto: the CPU unless the cost model expects the GPU clearly faster.
    if (options.backend == Backend::Auto) {
        if (bytes < kAutoMinBytes)
            return cpu_because(fmt::format("host data of {} (below {}, the GPU is not worth its copies)", human(bytes),
                                           human(kAutoMinBytes)));
        const HostModel& m = host_model();
        const double gpu_ms = static_cast<double>(c.in_bytes) / (m.link_gbs * 1e6);
        const double cpu_ms = static_cast<double>(bytes) / (m.cpu_gbs * 1e6);
        const std::string model_text = fmt::format(
            "cost model: the GPU's copies {:.1f} ms at {:.1f} GB/s, the CPU {:.1f} ms "
            "at {:.1f} GB/s ({})",
            gpu_ms, m.link_gbs, cpu_ms, m.cpu_gbs, m.source);
        if (gpu_ms * kAutoMargin >= cpu_ms) return cpu_because(model_text);
        c.model = model_text + "; ";
    }
    cuda::stream::Request req;
    req.program = &p;
    for (const Array& a : inputs) {
        const bool contiguous = a.is_contiguous();
        req.input_contiguous.push_back(contiguous);
        const auto b = reinterpret_cast<std::uintptr_t>(a.data());
        req.input_memory.push_back(contiguous ? cuda::stream::Request::Range{b, b + a.nbytes()}
                                              : cuda::stream::Request::Range{});
    }
    req.device_budget = budget;
    req.outputs_through_temporaries = all_or_nothing;
    c.cp = cuda::stream::plan_stream(req);
    auto copied = [&](std::string why) {
        // Whole arrays to the device and back: only when they fit under the limit.
        if (bytes > budget) {
            if (options.backend == Backend::Auto)
                return cpu_because(
                    fmt::format("the program cannot be streamed ({}) and needs {} of device memory, more "
                                "than the {} it may use",
                                why, human(bytes), human(budget)));
            c.kind = HostChoice::Kind::TooLarge;
        } else {
            c.kind = HostChoice::Kind::Copied;
        }
        c.why = std::move(why);
        return c;
    };
    if (!cuda::streaming_supported()) return copied("the CUDA driver lacks streams, events or pinned memory");
    if (!c.cp.streamable) return copied(c.cp.why_not);
    c.kind = HostChoice::Kind::Streamed;
    return c;
}

Array Runtime::Impl::run_host(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
                              bool write_back, detail::CallControl* control, bool all_or_nothing) {
    const Front* f = &front;
    OnDevice on(backend, device);  // the pipeline's streams, buffers and kernels are this device's
    const std::shared_ptr<const HostEntry> he = host_entry(text, *f, env);
    const ir::Program& p = he->plan.program;
    std::vector<Array> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        inputs[i] = bound_input(p.inputs[i], env.find(p.inputs[i].name)->second.array());

    auto on_cpu = [&](const std::string& why) {
        Array r = cpu_runtime().impl_->run(text, front, env, nullptr, timing, write_back, control, all_or_nothing);
        if (timing) timing->placement = "cpu: " + why;
        return r;
    };
    const HostChoice choice = choose_host(*he, inputs, all_or_nothing, device_budget());
    const std::string& placement = choice.model;
    const cuda::stream::ChunkPlan& cp = choice.cp;
    const std::size_t budget = choice.budget;
    auto copied = [&](const std::string& why) {
        if (choice.in_bytes + choice.out_bytes > budget) {
            if (options.backend == Backend::Auto)
                return on_cpu(
                    fmt::format("the program cannot be streamed ({}) and needs {} of device memory, more than "
                                "the {} it may use",
                                why, human(choice.in_bytes + choice.out_bytes), human(budget)));
            throw OutOfMemoryError(
                choice.in_bytes + choice.out_bytes, budget,
                fmt::format("evaluating on CUDA a program over host arrays that cannot be streamed ({}); "
                            "raise the device memory limit (JITEXPR_DEVICE_MEMORY) or use the CPU backend",
                            why));
        }
        Array r = run_copied(text, front, env, stream, timing, write_back, control, all_or_nothing);
        if (timing) timing->placement = placement + "cuda, copied whole: " + why;
        return r;
    };
    switch (choice.kind) {
        case HostChoice::Kind::Cpu: return on_cpu(choice.why);
        case HostChoice::Kind::Copied:
        case HostChoice::Kind::TooLarge: return copied(choice.why);
        case HostChoice::Kind::Streamed: break;
    }

    const auto t_run = Clock::now();
    boost::container::small_vector<ir::Value, 4> scalars(p.scalars.size());
    bind_scalars(p, env, scalars);
    // The chunk programs: the same text over chunk-shaped device arrays (at most two shapes).
    Environment chunk_env;
    for (const ir::ScalarDecl& d : p.scalars) chunk_env.insert_or_assign(d.name, env.find(d.name)->second);
    auto chunk_entry = [&](std::int64_t rows) -> std::shared_ptr<const Entry> {
        for (std::size_t i = 0; i < p.inputs.size(); ++i)
            chunk_env.insert_or_assign(
                p.inputs[i].name,
                Arg(core::prototype(p.inputs[i].dtype, cp.input_chunk_shape(i, rows), Backend::Cuda)));
        auto e = entry_shared(text, *f, chunk_env, control);
        const ir::Program& q = e->plan.program;
        bool same = q.inputs.size() == p.inputs.size() && q.outputs.size() == p.outputs.size() &&
                    q.scalars.size() == p.scalars.size();
        for (std::size_t i = 0; same && i < p.inputs.size(); ++i) same = q.inputs[i].name == p.inputs[i].name;
        for (std::size_t o = 0; same && o < p.outputs.size(); ++o)
            same = q.outputs[o].name == p.outputs[o].name &&
                   q.node(q.outputs[o].node).dtype == p.node(p.outputs[o].node).dtype;
        return same ? e : nullptr;
    };
    const std::int64_t small_rows = cp.chunk_rows(cp.chunks - 1);
    const std::shared_ptr<const Entry> e_full = chunk_entry(cp.rows_per_chunk);
    const std::shared_ptr<const Entry> e_small = small_rows == cp.rows_per_chunk ? e_full : chunk_entry(small_rows);
    if (!e_full || !e_small) return copied("its chunks make a different program");

    // Outputs on the host: in place where the plan allows, else fresh (copied in at the end).
    std::vector<Array> outputs(p.outputs.size());
    std::vector<std::size_t> copy_back;
    std::vector<std::vector<unsigned char>> partials(p.outputs.size());
    cuda::StreamSpec spec;
    for (std::size_t i = 0; i < p.inputs.size(); ++i)
        spec.inputs.push_back(
            {inputs[i].data(), cp.inputs[i].chunked, cp.inputs[i].row_bytes, cp.inputs[i].bytes, cp.inputs[i].read});
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const cuda::stream::OutputPlan& op = cp.outputs[o];
        if (op.alias_input >= 0 && op.direct) {
            outputs[o] = inputs[static_cast<std::size_t>(op.alias_input)];
        } else {
            outputs[o] = core::with_storage(he->output_shapes[o], core::host_storage(he->output_shapes[o].nbytes()));
            if (op.alias_input >= 0) copy_back.push_back(o);
        }
        if (op.reduction) {
            partials[o].resize(cp.chunks * itemsize(op.dtype));
            spec.outputs.push_back({partials[o].data(), true, 0, itemsize(op.dtype)});
        } else {
            spec.outputs.push_back({outputs[o].data(), false, op.row_bytes, 0});
        }
    }
    spec.rows = cp.rows;
    spec.chunks = cp.chunks;
    spec.rows_per_chunk = cp.rows_per_chunk;
    spec.slots = cp.buffers;
    spec.chunk_begin = [&cp](std::size_t c) { return cp.chunk_begin(c); };
    spec.chunk_rows = [&cp](std::size_t c) { return cp.chunk_rows(c); };
    spec.launch = [&](std::size_t, std::int64_t rows, const std::vector<void*>& in, const std::vector<void*>& out,
                      void* st) {
        const Entry& ce = rows == cp.rows_per_chunk ? *e_full : *e_small;
        boost::container::small_vector<Array, 8> ins(p.inputs.size()), outs(p.outputs.size());
        for (std::size_t i = 0; i < p.inputs.size(); ++i) {
            Shape sh = cp.input_chunk_shape(i, rows);
            Strides str = contiguous_strides(sh);
            ins[i] = is_string(p.inputs[i].dtype)  // (an S or U chunk: rows of the array's width)
                         ? Array::view(in[i], p.inputs[i].dtype, p.inputs[i].itemsize, std::move(sh), std::move(str),
                                       Backend::Cuda)
                         : Array::view(in[i], p.inputs[i].dtype, std::move(sh), std::move(str), Backend::Cuda);
        }
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            Shape sh = cp.outputs[o].reduction ? Shape{} : cp.chunk_shape(rows);
            Strides str = contiguous_strides(sh);
            outs[o] = Array::view(out[o], cp.outputs[o].dtype, std::move(sh), std::move(str), Backend::Cuda);
        }
        detail::RunArgs ra;
        ra.inputs = std::span<const Array>(ins.data(), ins.size());
        ra.scalars = std::span<const ir::Value>(scalars.data(), scalars.size());
        ra.outputs = std::span<Array>(outs.data(), outs.size());
        ra.stream = st;
        ce.prepared->run(ra);
    };
    spec.control = control;
    std::unique_ptr<bool[]> started(new bool[p.outputs.size() + 1]());
    spec.started_outputs = started.get();
    try {
        (void)cuda::stream_run(spec);
    } catch (const CancelledError&) {
        std::vector<std::string> partly;
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            const ir::OutputDecl& od = p.outputs[o];
            if (od.alias_input >= 0 && cp.outputs[o].direct && started[o])
                partly.push_back(od.name.empty() ? p.inputs[static_cast<std::size_t>(od.alias_input)].name : od.name);
        }
        throw CancelledError(std::move(partly));
    }
    // Reductions: the partials folded in chunk order.
    const std::int64_t row_elems = shape_size(cp.shape) / cp.rows;
    std::vector<std::int64_t> elems(cp.chunks);
    for (std::size_t c = 0; c < cp.chunks; ++c) elems[c] = cp.chunk_rows(c) * row_elems;
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (cp.outputs[o].reduction)
            cpu::combine(cp.outputs[o].op, cp.outputs[o].dtype, partials[o].data(), cp.chunks, 1, elems.data(),
                         outputs[o].data());
    for (std::size_t o : copy_back) {
        const Array& target = inputs[static_cast<std::size_t>(p.outputs[o].alias_input)];
        core::copy(target, outputs[o]);
        outputs[o] = target;
    }
    if (timing) {
        timing->run_ms = ms_since(t_run);
        timing->streamed = true;
        timing->stream_chunks = cp.chunks;
        timing->stream_device_bytes = cp.device_bytes;
        timing->placement = placement + fmt::format(
                                            "cuda, streamed: {} chunk{} of {} ({} in flight), {} of device memory "
                                            "(limit {})",
                                            cp.chunks, cp.chunks == 1 ? "" : "s", human(cp.chunk_bytes), cp.buffers,
                                            human(cp.device_bytes), human(budget));
    }
    if (write_back)
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (!p.outputs[o].name.empty()) env.insert_or_assign(p.outputs[o].name, Arg(outputs[o]));
    return he->plan.result_output >= 0 ? outputs[static_cast<std::size_t>(he->plan.result_output)] : Array();
}

namespace {

// A host array's C-contiguous copy on CUDA device `device`; with a control, copied in pieces that
// a stop request ends between (the copy is then dropped: no one has seen it).
Array copy_to_cuda(const Array& host, int device, detail::CallControl* control) {
    // (strings through Array::to: their width, and an Arrow column's offsets and bytes)
    if (!control || is_string(host.dtype())) return host.to(Backend::Cuda, device);
    const Array h = host.contiguous();
    Array d = Array::empty(h.dtype(), h.shape(), Backend::Cuda, device);
    cuda::copy_to_device(d.data(), h.data(), h.nbytes(), nullptr, control);
    return d;
}

// The same from CUDA to a new host array.
Array copy_to_cpu(const Array& dev, detail::CallControl* control) {
    if (!control) return dev.to(Backend::Cpu);
    const Array d = dev.contiguous();
    Array h = Array::empty(d.dtype(), d.shape(), Backend::Cpu);
    cuda::DeviceScope scope(d.device());
    cuda::copy_to_host(h.data(), d.data(), d.nbytes(), nullptr, control);
    return h;
}

}  // namespace

Array Runtime::Impl::run_copied(std::string_view text, const Front& front, Environment& env, void* stream,
                                Timing* timing, bool write_back, detail::CallControl* control, bool all_or_nothing) {
    // The program's names on the device; the results back on the host. A stop request is
    // honoured between the pieces of the copies both ways and between kernels; whenever it
    // comes, the caller's host arrays are untouched and nothing is bound: the results come back
    // into new host arrays, and only once all of them are back are in-place targets written
    // (host copies, not stopped) and new names bound.
    std::uint64_t in_bytes = 0;
    for (const std::string& n : front.names) {
        auto it = env.find(n);
        if (it != env.end() && it->second.is_array() && it->second.array().backend() == Backend::Cpu)
            in_bytes += it->second.array().nbytes();
    }
    if (control) control->begin(Progress::Phase::Run, Progress::Unit::Bytes, in_bytes);
    Environment dev_env;
    for (const std::string& n : front.names) {
        auto it = env.find(n);
        if (it == env.end()) continue;
        if (it->second.is_array() && it->second.array().backend() == Backend::Cpu) {
            // A copy of a read-only array is read-only too: the copy back would write the original.
            Array copy = copy_to_cuda(it->second.array(), device, control);
            dev_env.insert_or_assign(n, Arg(it->second.array().read_only() ? copy.as_read_only() : copy));
        } else {
            dev_env.insert_or_assign(n, it->second);
        }
    }
    Array r;
    try {
        r = run(text, front, dev_env, stream, timing, /*write_back=*/true, control, all_or_nothing);
    } catch (const CancelledError&) {
        throw CancelledError();  // only device copies were written: the host arrays are untouched
    }
    // Every assigned array back to the host first (stoppable: nothing of the caller's is written yet).
    struct Back {
        std::string name;
        Array device, host;
    };
    std::vector<Back> back;
    std::uint64_t out_bytes = 0;
    for (const std::string& t : dsl::targets(front.module)) {
        auto dv = dev_env.find(t);
        if (dv == dev_env.end() || !dv->second.is_array()) continue;
        back.push_back({t, dv->second.array(), Array()});
        out_bytes += dv->second.array().nbytes();
    }
    const bool result_is_target = r.defined() && std::any_of(back.begin(), back.end(), [&](const Back& b) {
                                      return r.storage() == b.device.storage() && r.offset() == b.device.offset();
                                  });
    if (r.defined() && !result_is_target) out_bytes += r.nbytes();
    if (stream) cuda::synchronize(stream);  // the program ran on the caller's stream; the copies use the default one
    if (control) control->begin(Progress::Phase::Run, Progress::Unit::Bytes, out_bytes);
    for (Back& b : back) b.host = copy_to_cpu(b.device, control);
    Array result;
    if (r.defined() && !result_is_target) result = copy_to_cpu(r, control);
    // Complete: now into the caller's arrays and names.
    for (Back& b : back) {
        Array h = b.host;
        auto hv = env.find(b.name);
        if (hv != env.end() && hv->second.is_array() && hv->second.array().backend() == Backend::Cpu &&
            hv->second.array().dtype() == h.dtype() && hv->second.array().shape() == h.shape()) {
            core::copy(hv->second.array(), h);  // in place, as on the device
            h = hv->second.array();
        } else if (write_back) {
            env.insert_or_assign(b.name, Arg(h));
        }
        if (r.defined() && r.storage() == b.device.storage() && r.offset() == b.device.offset()) result = h;
    }
    return result;
}

Array Runtime::run_into(std::string_view text, Environment& env, const Array& out, void* stream) {
    CallOptions o;
    o.stream = stream;
    return run_into(text, env, out, o);
}

Array Runtime::run_into(std::string_view text, Environment& env, const Array& out, const CallOptions& options) {
    if (!out.defined()) throw ArgumentError("run_into: the out array is undefined");
    const Front* f = &impl_->front_into(text, options.strict_in_place);
    const std::string name(Impl::kOutName);
    // Bound for this call only: the name leaves env however the call ends.
    struct Unbind {
        Environment& env;
        const std::string& name;
        ~Unbind() { env.erase(name); }
    } unbind{env, name};
    env.insert_or_assign(name, Arg(out));
    Array r = impl_->run(text, *f, env, options, /*write_back=*/true);
    return r.defined() ? r : out;
}

std::string Runtime::source(std::string_view text, const Environment& env) {
    const Front& f = impl_->front(text, nullptr);
    OnDevice on(impl_->backend, impl_->device);
    return impl_->entry(text, f, env, nullptr).prepared->source();
}

SystemInfo system_info() {
    SystemInfo si;
    si.hardware_threads = std::max(1u, std::thread::hardware_concurrency());
    // Compilers found, not loaded: a REPL banner or --version must not map NVRTC or nvJitLink in
    // a process that may never compile (NVRTC's version comes from its file names).
    si.cuda = cuda_info(/*load_compilers=*/false);
    return si;
}

Runtime& Runtime::default_runtime() {
    static Runtime rt(RuntimeOptions::from_environment());
    return rt;
}

Kernel::Kernel(std::string text, Runtime* runtime) : text_(std::move(text)), runtime_(runtime) {
    params_ = dsl::parameters(syntax::parse(text_));
}

Kernel compile(std::string_view text, Runtime& runtime) { return Kernel(std::string(text), &runtime); }

std::vector<std::string> parameters(std::string_view text) { return dsl::parameters(syntax::parse(text)); }

std::vector<std::string> targets(std::string_view text) { return dsl::targets(syntax::parse(text)); }

}  // namespace jit

#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include "api/internal.hpp"
#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"
#include "dsl/syntax.hpp"

#include <fmt/format.h>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace jit {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string env_or(const char* name, std::string fallback = {}) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

// The parsed text of a program and the names whose bindings its checking depends on.
struct Front {
    syntax::Module module;
    std::vector<std::string> params;   // positional parameters (no named constants)
    std::vector<std::string> names;    // names read (named constants too), then assigned names
};

// A program prepared for one set of argument dtypes/shapes/layouts.
struct Entry {
    ir::Program program;
    ir::Schedule schedule;
    std::shared_ptr<detail::Prepared> prepared;
    // Per output: write directly into the aliased input (true), or into a fresh array that is
    // then copied into it (false; the input is read elsewhere in the program).
    std::vector<bool> direct_alias;
    std::int32_t result_output = -1;   // index of the output eval returns
    // Per output: its dtype and shape, C-contiguous, without storage; a result shares these
    // dimensions, so making it allocates only its storage.
    std::vector<Array> output_shapes;
};

// Inputs each stage reads (not through a stored value of an earlier stage).
std::vector<std::vector<bool>> inputs_read_by_stage(const ir::Program& p, const ir::Schedule& s) {
    std::vector<std::vector<bool>> r(s.stages.size(), std::vector<bool>(p.inputs.size(), false));
    std::vector<std::int32_t> stack;
    std::vector<char> seen(p.nodes.size());
    for (std::size_t k = 0; k < s.stages.size(); ++k) {
        std::fill(seen.begin(), seen.end(), 0);
        const ir::Stage& st = s.stages[k];
        stack.clear();
        if (st.kind == ir::Stage::Kind::Reduce) stack.push_back(p.node(st.reduce).args[0]);
        for (auto n : st.stores) stack.push_back(n);
        while (!stack.empty()) {
            const std::int32_t n = stack.back();
            stack.pop_back();
            if (seen[static_cast<std::size_t>(n)]) continue;
            seen[static_cast<std::size_t>(n)] = 1;
            const ir::Node& nd = p.node(n);
            const std::int32_t by = s.stored_by[static_cast<std::size_t>(n)];
            if (by >= 0 && by != static_cast<std::int32_t>(k)) continue;  // read from its buffer
            if (by == static_cast<std::int32_t>(k) && st.kind == ir::Stage::Kind::Reduce && n == st.reduce) {
                stack.push_back(nd.args[0]);
                continue;
            }
            if (nd.kind == ir::NodeKind::Input) r[k][static_cast<std::size_t>(nd.slot)] = true;
            for (int a = 0; a < nd.nargs; ++a) stack.push_back(nd.args[a]);
        }
    }
    return r;
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
    for (auto e : arr.shape()) append_raw(key, e);
    for (auto e : arr.strides()) append_raw(key, e);
}

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

DType scalar_dtype(const Arg& a) {
    switch (a.value().index()) {
        case 1: return DType::Bool;
        case 2: return DType::Int64;
        case 3: return DType::Float64;
        default: return DType::Complex128;
    }
}

// Whether a host integer fits integer dtype t.
bool int_fits(std::int64_t v, DType t) {
    if (is_unsigned_int(t)) return v >= 0 && (t == DType::UInt64 || static_cast<std::uint64_t>(v) >> (8 * itemsize(t)) == 0);
    const int bits = static_cast<int>(itemsize(t)) * 8;
    if (bits == 64) return true;
    const std::int64_t lim = std::int64_t{1} << (bits - 1);
    return v >= -lim && v < lim;
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

}  // namespace

RuntimeOptions RuntimeOptions::from_environment() {
    RuntimeOptions o;
    const std::string b = env_or("JITEXPR_BACKEND");
    if (b == "cpu") o.backend = Backend::Cpu;
    else if (b == "cuda") o.backend = Backend::Cuda;
    o.cache_dir = env_or("JITEXPR_CACHE_DIR");
    if (env_or("JITEXPR_DISK_CACHE") == "0") o.disk_cache = false;
    if (const std::string t = env_or("JITEXPR_THREADS"); !t.empty()) o.cpu_threads = std::atoi(t.c_str());
    if (env_or("JITEXPR_FAST_MATH") == "1") o.fast_math = true;
    if (const std::string t = env_or("JITEXPR_TIERED"); t == "0") o.tiered_compile = false;
    else if (t == "1") o.tiered_compile = true;
    if (env_or("JITEXPR_SHOW_KERNELS") == "1") o.show_kernels = true;
    std::istringstream words(env_or("JITEXPR_NVRTC_OPTIONS"));
    for (std::string w; words >> w;) o.nvrtc_options.push_back(w);
    return o;
}

struct Runtime::Impl {
    RuntimeOptions options;
    Backend backend = Backend::Cpu;
    std::string fallback;
    std::unique_ptr<detail::BackendImpl> impl;
    std::shared_ptr<cuda::ModuleCache> modules;  // CUDA: compiled modules (memory, then disk)
    std::shared_ptr<cache::DiskCache> disk;      // CUDA: the disk level, when enabled

    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<const Front>, StringHash, std::equal_to<>> fronts;
    std::unordered_map<std::string, std::shared_ptr<const Entry>, StringHash, std::equal_to<>> entries;
    CacheStats stats;

    std::shared_ptr<const Front> front(std::string_view text, double* parse_ms) {
        {
            std::shared_lock lock(mutex);
            if (auto it = fronts.find(text); it != fronts.end()) return it->second;
        }
        const auto t0 = Clock::now();
        auto f = std::make_shared<Front>();
        f->module = syntax::parse(text);
        f->params = dsl::parameters(f->module);
        // By name, a bound `pi` shadows the constant: the names that matter include the
        // constants the program reads, while the positional parameters leave them out.
        f->names = dsl::free_names(f->module);
        for (auto& t : dsl::targets(f->module))
            if (std::find(f->names.begin(), f->names.end(), t) == f->names.end()) f->names.push_back(t);
        if (parse_ms) *parse_ms = ms_since(t0);
        std::unique_lock lock(mutex);
        // Bounded like the prepared programs: a service fed endless distinct texts must not grow.
        if (fronts.size() >= options.memory_cache_entries) fronts.clear();
        return fronts.emplace(std::string(text), std::move(f)).first->second;
    }

    std::shared_ptr<const Entry> entry(std::string_view text, const Front& f, const Environment& env, Timing* timing,
                                       detail::CallControl* control = nullptr) {
        thread_local std::string key;  // reused: no allocation once it has grown
        key.assign(text);
        key += '\0';
        for (const std::string& n : f.names) append_signature(key, n, env);
        {
            std::shared_lock lock(mutex);
            if (auto it = entries.find(std::string_view(key)); it != entries.end()) {
                ++hits;
                if (timing) timing->cache_hit = true;
                return it->second;
            }
        }
        // Single flight: the first thread to miss on a key prepares it; others wait for it.
        std::shared_ptr<Flight> flight;
        for (;;) {
            std::unique_lock lock(mutex);
            if (auto it = entries.find(std::string_view(key)); it != entries.end()) {
                ++hits;
                if (timing) timing->cache_hit = true;
                return it->second;
            }
            auto [fit, mine] = preparing.try_emplace(key, nullptr);
            if (mine) {
                fit->second = flight = std::make_shared<Flight>();
                break;
            }
            auto other = fit->second->done;
            lock.unlock();
            if (auto e = other.get()) {
                ++hits;
                if (timing) timing->cache_hit = true;
                return e;
            }
            // The other thread failed: prepare here, to report the same error from this thread.
        }
        Landing landing{*this, key, *flight, nullptr};
        auto t0 = Clock::now();
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
            } else {
                b.kind = dsl::Binding::Kind::Scalar;
                b.dtype = scalar_dtype(it->second);
            }
            bindings.emplace(n, std::move(b));
        }
        dsl::Lookup lookup = [&](std::string_view name) -> const dsl::Binding* {
            auto it = bindings.find(std::string(name));
            return it == bindings.end() ? nullptr : &it->second;
        };
        auto e = std::make_shared<Entry>();
        std::vector<std::string> bound;
        for (const auto& [n, v] : env) bound.push_back(n);
        e->program = dsl::lower(f.module, text, lookup, bound);
        e->schedule = ir::schedule(e->program);
        for (std::size_t o = 0; o < e->program.outputs.size(); ++o)
            if (e->program.outputs[o].node == e->program.result) e->result_output = static_cast<std::int32_t>(o);
        for (const ir::OutputDecl& od : e->program.outputs) {
            const ir::Node& n = e->program.node(od.node);
            e->output_shapes.push_back(detail::prototype(n.dtype, n.shape, backend));
        }
        // In-place outputs: direct only when the stage writing it stores nothing else and no
        // other elementwise stage reads the array (reduction stages run before and are safe).
        const auto reads = inputs_read_by_stage(e->program, e->schedule);
        e->direct_alias.assign(e->program.outputs.size(), false);
        for (std::size_t o = 0; o < e->program.outputs.size(); ++o) {
            const ir::OutputDecl& od = e->program.outputs[o];
            if (od.alias_input < 0) continue;
            const std::int32_t stage = e->schedule.stored_by[static_cast<std::size_t>(od.node)];
            const ir::Stage& st = e->schedule.stages[static_cast<std::size_t>(stage)];
            const std::size_t alias = static_cast<std::size_t>(od.alias_input);
            // A reduction writes its result after reading all of its operand, so it may write
            // into an array that no stage reads (`s = sum(x)` into an existing s: no copy,
            // nothing allocated, and so capturable into a CUDA graph).
            const bool reduce = st.kind == ir::Stage::Kind::Reduce;
            bool ok = e->program.inputs[alias].shape == e->program.node(od.node).shape &&
                      (reduce ? !reads[static_cast<std::size_t>(stage)][alias]
                              : st.stores.size() == 1 && e->program.inputs[alias].shape == st.shape);
            for (std::size_t k = 0; k < e->schedule.stages.size() && ok; ++k)
                if (static_cast<std::int32_t>(k) != stage && reads[k][alias] &&
                    (reduce || e->schedule.stages[k].kind == ir::Stage::Kind::Elementwise))
                    ok = false;
            e->direct_alias[o] = ok;
        }
        const double check_ms = ms_since(t0);
        detail::PrepareOptions po;
        po.fast_math = options.fast_math;
        po.nvrtc_options = options.nvrtc_options;
        po.tiered = options.tiered_compile;
        po.control = control;
        e->prepared = impl->prepare(e->program, e->schedule, po);
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
        std::unique_lock lock(mutex);
        ++stats.misses;
        auto [it, inserted] = entries.emplace(key, std::move(e));
        if (entries.size() > options.memory_cache_entries) {
            // Simple bound: drop everything else but this entry (prepared programs are cheap to
            // rebuild when their modules are still cached below).
            auto keep = *it;
            entries.clear();
            it = entries.emplace(keep.first, keep.second).first;
        }
        stats.entries = entries.size();
        return landing.result = it->second;
    }

    // A preparation in progress, and its end: on every exit of the preparing thread the key
    // leaves `preparing` and the waiters get the entry (null when preparation threw).
    struct Flight {
        std::promise<std::shared_ptr<const Entry>> promise;
        std::shared_future<std::shared_ptr<const Entry>> done = promise.get_future().share();
    };
    std::unordered_map<std::string, std::shared_ptr<Flight>, StringHash, std::equal_to<>> preparing;
    struct Landing {
        Impl& self;
        std::string key;
        Flight& flight;
        std::shared_ptr<const Entry> result;
        ~Landing() {
            {
                std::unique_lock lock(self.mutex);
                self.preparing.erase(key);
            }
            flight.promise.set_value(std::move(result));
        }
    };

    std::atomic<std::uint64_t> hits{0};
    // Runtime::cancel() moves it on; a call stops when it differs from its value at the start.
    std::atomic<std::uint64_t> cancel_epoch{0};
    // Binds, runs and (when write_back) stores the assigned names into env. `control` null: the
    // call cannot be stopped (the copies that finish an in-place write).
    // `all_or_nothing`: in-place targets are written through temporaries (CallOptions).
    Array run(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
              bool write_back, detail::CallControl* control, bool all_or_nothing = false);
    Array run(std::string_view text, const Front& front, Environment& env, const CallOptions& o, bool write_back) {
        detail::CallControl control(o.cancel ? &*o.cancel : nullptr, &cancel_epoch, &o.progress);
        return run(text, front, env, o.stream, o.timing, write_back, &control, o.in_place_all_or_nothing);
    }
    // The parsed "dst = src" of in-place copy-backs.
    std::shared_ptr<const Front> front_of_copy() { return front("dst = src", nullptr); }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
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
            break;
    }
    if (impl_->backend == Backend::Cuda) {
        cuda::warm_up_nvrtc();
        cuda::ExecutorOptions eo;
        eo.cache = std::make_shared<cuda::ModuleCache>(impl_->options.memory_cache_entries);
        if (impl_->options.disk_cache) {
            cache::DiskCacheOptions dco;
            dco.dir = impl_->options.cache_dir;
            auto disk = std::make_shared<cache::DiskCache>(dco);
            if (disk->enabled()) {
                impl_->disk = disk;
                eo.cache->set_image_store(cuda::ImageStore{
                    [disk](const std::string& key) { return disk->get(cache::digest(key)); },
                    [disk](const std::string& key, const std::string& bytes) { disk->put(cache::digest(key), bytes); }});
            }
        }
        impl_->modules = eo.cache;
        impl_->impl = cuda::make_cuda_backend(eo);
    } else {
        impl_->impl = detail::make_cpu_backend(impl_->options.cpu_threads);
    }
}

Runtime::~Runtime() = default;

Backend Runtime::backend() const { return impl_->backend; }

void Runtime::wait_for_compiles() const {
    if (impl_->backend == Backend::Cuda) cuda::wait_for_upgrades();
}
std::string Runtime::fallback_reason() const { return impl_->backend == Backend::Cpu ? impl_->fallback : std::string(); }
const RuntimeOptions& Runtime::options() const { return impl_->options; }

CacheStats Runtime::stats() const {
    std::shared_lock lock(impl_->mutex);
    CacheStats s = impl_->stats;
    s.hits = impl_->hits.load();
    s.entries = impl_->entries.size();
    if (impl_->modules) {
        const auto ms = impl_->modules->stats();
        s.compiles = ms.compiles;
        s.compile_ms = ms.compile_ms;
        s.disk_hits = ms.disk_hits;
    }
    return s;
}

void Runtime::clear_memory_cache() {
    std::unique_lock lock(impl_->mutex);
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
    auto f = impl_->front(text, nullptr);
    if (args.size() != f->params.size()) {
        std::string names;
        for (auto& p : f->params) names += (names.empty() ? "" : ", ") + p;
        throw ArgumentError(fmt::format("the program reads {} variable{} ({}) but {} argument{} given",
                                        f->params.size(), f->params.size() == 1 ? "" : "s",
                                        names.empty() ? "none" : names, args.size(), args.size() == 1 ? " was" : "s were"));
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
    auto f = impl_->front(text, nullptr);
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
    auto f = impl_->front(text, &parse_ms);
    if (options.timing) options.timing->parse_ms = parse_ms;
    return impl_->run(text, *f, env, options, /*write_back=*/true);
}

Array Runtime::Impl::run(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
                         bool write_back, detail::CallControl* control, bool all_or_nothing) {
    const Front* f = &front;
    if (f->module.statements.empty()) return Array();
    if (control) control->check();  // cancelled before it began

    // Arrays must live on this runtime's backend: moving them is explicit (Array::to).
    for (const std::string& n : f->names) {
        auto it = env.find(n);
        if (it != env.end() && it->second.is_array() && it->second.array().backend() != backend)
            throw ArgumentError(fmt::format("'{}' is a {} array but this runtime evaluates on {}; move it with .to(Backend::{})",
                                            n, backend_name(it->second.array().backend()), backend_name(backend),
                                            backend == Backend::Cuda ? "Cuda" : "Cpu"));
    }
    auto e = entry(text, *f, env, timing, control);
    const ir::Program& p = e->program;

    const auto t_run = Clock::now();
    // Small vectors: no heap allocation for programs of up to 8 inputs/outputs.
    boost::container::small_vector<Array, 8> inputs(p.inputs.size());
    for (std::size_t i = 0; i < p.inputs.size(); ++i) inputs[i] = env.find(p.inputs[i].name)->second.array();
    boost::container::small_vector<ir::Value, 4> scalars(p.scalars.size());
    for (std::size_t s = 0; s < p.scalars.size(); ++s) {
        const ir::ScalarDecl& d = p.scalars[s];
        scalars[s] = scalar_value(env.find(d.name)->second);
        if (d.must_be_nonnegative && is_signed_int(scalars[s].dtype) && scalars[s].i < 0)
            throw ValueError(fmt::format("integers to negative integer powers are not allowed ('{}' is {})", d.name,
                                         scalars[s].i),
                             p.text, d.span);
        for (DType t : d.must_fit)
            if (!int_fits(scalars[s].i, t))
                throw ValueError(fmt::format("integer {} ('{}') is out of bounds for {}", scalars[s].i, d.name,
                                             dtype_name(t)),
                                 p.text, d.span);
    }
    boost::container::small_vector<Array, 8> outputs(p.outputs.size());
    boost::container::small_vector<std::size_t, 4> copy_back;
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const ir::OutputDecl& od = p.outputs[o];
        if (od.alias_input >= 0 && e->direct_alias[o] && !all_or_nothing) {
            outputs[o] = inputs[static_cast<std::size_t>(od.alias_input)];
        } else {
            outputs[o] = detail::empty_like(e->output_shapes[o], stream == nullptr);
            if (od.alias_input >= 0) copy_back.push_back(o);
        }
    }
    detail::RunArgs ra;
    ra.inputs = std::span<const Array>(inputs.data(), inputs.size());
    ra.scalars = std::span<const ir::Value>(scalars.data(), scalars.size());
    ra.outputs = std::span<Array>(outputs.data(), outputs.size());
    ra.stream = stream;
    ra.control = control;
    boost::container::small_vector<bool, 8> started(p.outputs.size(), false);
    ra.started_outputs = started.data();
    try {
        e->prepared->run(ra);
    } catch (const CancelledError&) {
        // New arrays are dropped with `outputs`; in-place targets written directly may be partial.
        std::vector<std::string> partly;
        for (std::size_t o = 0; o < p.outputs.size(); ++o) {
            const ir::OutputDecl& od = p.outputs[o];
            if (od.alias_input >= 0 && e->direct_alias[o] && !all_or_nothing && started[o])
                partly.push_back(od.name.empty() ? p.inputs[static_cast<std::size_t>(od.alias_input)].name : od.name);
        }
        throw CancelledError(std::move(partly));
    }
    // Results that could not be written in place: copy into the arrays now. The program is
    // complete, so these copies are not cancelled: an in-place write finishes or never starts.
    for (std::size_t o : copy_back) {
        const Array& target = inputs[static_cast<std::size_t>(p.outputs[o].alias_input)];
        Environment ce{{"dst", Arg(target)}, {"src", Arg(outputs[o])}};
        run("dst = src", *front_of_copy(), ce, stream, nullptr, /*write_back=*/true, nullptr);
        outputs[o] = target;
    }
    if (timing) {
        if (backend == Backend::Cuda) cuda::synchronize(stream);
        timing->run_ms = ms_since(t_run);
    }
    if (write_back)
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (!p.outputs[o].name.empty()) env.insert_or_assign(p.outputs[o].name, Arg(outputs[o]));
    return e->result_output >= 0 ? outputs[static_cast<std::size_t>(e->result_output)] : Array();
}

std::string Runtime::source(std::string_view text, const Environment& env) {
    auto f = impl_->front(text, nullptr);
    auto e = impl_->entry(text, *f, env, nullptr);
    return e->prepared->source();
}

SystemInfo system_info() {
    SystemInfo si;
    si.hardware_threads = std::max(1u, std::thread::hardware_concurrency());
    si.nvrtc_version = cuda::nvrtc_version();
    si.nvjitlink = cuda::ptx_assembler_available();
    si.driver_version = cuda::driver_version();
    si.cuda = cuda::available(&si.cuda_reason);
    if (si.cuda) {
        si.cuda_reason.clear();
        const cuda::DeviceInfo& d = cuda::device_info();
        si.device_name = d.name;
        si.cc_major = d.cc_major;
        si.cc_minor = d.cc_minor;
        si.sm_count = d.sm_count;
        si.device_memory = d.total_memory;
    }
    return si;
}

Runtime& Runtime::default_runtime() {
    static Runtime rt(RuntimeOptions::from_environment());
    return rt;
}

namespace detail {
Array copy_contiguous(const Array& a) {
    Runtime& d = Runtime::default_runtime();
    if (d.backend() == a.backend()) return d.eval("copy(x)", {Arg(a)});
    static Runtime other([&] {
        RuntimeOptions o = RuntimeOptions::from_environment();
        o.backend = a.backend();
        return o;
    }());
    return other.eval("copy(x)", {Arg(a)});
}
}  // namespace detail

Kernel::Kernel(std::string text, Runtime* runtime) : text_(std::move(text)), runtime_(runtime) {
    params_ = dsl::parameters(syntax::parse(text_));
}

Kernel compile(std::string_view text, Runtime& runtime) { return Kernel(std::string(text), &runtime); }

std::vector<std::string> parameters(std::string_view text) { return dsl::parameters(syntax::parse(text)); }

}  // namespace jit

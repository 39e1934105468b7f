// jitexpr — the runtime's implementation, private to api/: what it caches (a text's parse, a
// program prepared for a binding signature) and Runtime::Impl, shared by runtime.cpp (running)
// and explain.cpp (Runtime::explain).
#pragma once

#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/module_cache.hpp"
#include "backend/cuda/stream_plan.hpp"
#include "core/device.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jit {

// What both files use, defined in runtime.cpp: in a namespace of their own (they were in the
// unnamed namespace of runtime.cpp, where no type that Runtime::Impl holds may be in a header).
namespace runtime_private {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0);

// The parsed text of a program and the names whose bindings its checking depends on.
struct Front {
    syntax::Module module;
    std::vector<std::string> params;  // positional parameters (no named constants)
    std::vector<std::string> names;   // names read (named constants too), then assigned names
    // CallOptions::strict_in_place: every assignment to a bound array writes into it (same-kind
    // cast, broadcast) instead of rebinding the name when the value's dtype or shape differs.
    bool strict = false;
};

// A program prepared for one set of argument dtypes/shapes/layouts.
struct Entry {
    ir::Plan plan;
    std::shared_ptr<detail::Prepared> prepared;
    // Per output: its dtype and shape, C-contiguous, without storage; a result shares these
    // dimensions, so making it allocates only its storage.
    std::vector<Array> output_shapes;
};

Array bound_input(const ir::InputDecl& d, const Array& a);
void append_signature(std::string& key, const std::string& name, const Environment& env);
DType scalar_dtype(const Arg& a);

// Host data below this many bytes (inputs and outputs) stays on the CPU under Backend::Auto:
// the copies, a kernel compile and the pipeline's start cost more than the CPU's loop.
constexpr std::uint64_t kAutoMinBytes = std::uint64_t{64} << 20;
// Under Auto the GPU is chosen only when the cost model expects it this many times faster.
constexpr double kAutoMargin = 1.5;

std::string human(std::uint64_t bytes);

}  // namespace runtime_private

using runtime_private::append_signature;
using runtime_private::bound_input;
using runtime_private::Clock;
using runtime_private::Entry;
using runtime_private::Front;
using runtime_private::human;
using runtime_private::kAutoMargin;
using runtime_private::kAutoMinBytes;
using runtime_private::ms_since;
using runtime_private::scalar_dtype;

// Makes the runtime's CUDA device current on this thread for one call (nothing on the CPU):
// arrays it allocates, modules it loads and kernels it launches are on that device.
class OnDevice {
public:
    OnDevice(Backend b, int device) {
        if (b == Backend::Cuda) scope_.emplace(device);
    }

private:
    std::optional<cuda::DeviceScope> scope_;
};

struct Runtime::Impl {
    explicit Impl(RuntimeOptions o)
        : options(std::move(o)), fronts(options.memory_cache_entries), entries(options.memory_cache_entries) {}

    RuntimeOptions options;
    Backend backend = Backend::Cpu;
    int device = 0;  // CUDA device ordinal (0 on the CPU)
    std::string fallback;
    std::unique_ptr<detail::BackendImpl> impl;
    dsl::Limits limits;                          // impl's: what one stage may compute
    std::shared_ptr<cuda::ModuleCache> modules;  // CUDA: compiled modules (memory, then disk)
    std::shared_ptr<cache::DiskCache> disk;      // CUDA: the disk level, when enabled

    // Parsed texts, and programs prepared for one binding signature: LRU-bounded, one
    // preparation per key however many threads ask, and a repeated key found without a lock
    // (cache::MemoryCache::fetch). Declared after `impl`: destroyed before the backend.
    cache::MemoryCache<std::string, std::shared_ptr<const Front>> fronts;
    cache::MemoryCache<std::string, std::shared_ptr<const Entry>> entries;

    // The parse of `text` (`strict`: under CallOptions::strict_in_place, kept behind a marker
    // byte no text starts with): valid until this thread's next call of front().
    const Front& front(std::string_view text, double* parse_ms, bool strict = false) {
        auto make = [&] {
            const auto t0 = Clock::now();
            auto f = std::make_shared<Front>();
            f->module = syntax::parse(text);
            f->params = dsl::parameters(f->module);
            // By name, a bound `pi` shadows the constant: the names that matter include the
            // constants the program reads, while the positional parameters leave them out.
            f->names = dsl::free_names(f->module);
            for (auto& t : dsl::targets(f->module))
                if (std::find(f->names.begin(), f->names.end(), t) == f->names.end()) f->names.push_back(t);
            f->strict = strict;
            if (parse_ms) *parse_ms = ms_since(t0);
            return std::shared_ptr<const Front>(std::move(f));
        };
        if (!strict) return *fronts.fetch(text, make);
        thread_local std::string key;
        key.assign(1, '\x03');
        key.append(text);
        return *fronts.fetch(std::string_view(key), make);
    }

    // The front of run_into: the text's last statement assigned to kOutName, the name under
    // which run_into binds its `out` array (no identifier can be spelt so). Kept in `fronts`
    // under the text behind a marker byte that no text starts with. Valid until this thread's
    // next call of front() or front_into().
    static constexpr std::string_view kOutName = "(out)";
    const Front& front_into(std::string_view text, bool strict = false) {
        thread_local std::string key;
        key.assign(1, strict ? '\x04' : '\x01');
        key.append(text);
        return *fronts.fetch(std::string_view(key), [&] {
            auto f = std::make_shared<Front>();
            f->module = syntax::parse(text);
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
            f->params = dsl::parameters(f->module);
            f->names = dsl::free_names(f->module);
            for (auto& t : dsl::targets(f->module))
                if (std::find(f->names.begin(), f->names.end(), t) == f->names.end()) f->names.push_back(t);
            f->strict = strict;
            return std::shared_ptr<const Front>(std::move(f));
        });
    }

    // The program prepared for `text` with the dtypes, shapes and layouts `env` binds to its
    // names: valid until this thread's next call of entry(). `control` (may be null) watches
    // the preparation: compile progress, stop requests between compiles.
    const Entry& entry(std::string_view text, const Front& f, const Environment& env, Timing* timing,
                       detail::CallControl* control = nullptr) {
        thread_local std::string key;  // reused: no allocation once it has grown
        key.assign(text);
        key += '\0';
        if (f.strict) key += '!';
        for (const std::string& n : f.names) append_signature(key, n, env);
        bool created = false;
        const Entry& e = *entries.fetch(
            std::string_view(key), [&] { return prepare(text, f, env, timing, control); }, &created);
        if (!created && timing) timing->cache_hit = true;
        return e;
    }

    // The plan of `text` with the dtypes, shapes and layouts `env` binds to its names.
    ir::Plan plan_of(std::string_view text, const Front& f, const Environment& env) const {
        return plan_of(text, f, env, limits);
    }
    ir::Plan plan_of(std::string_view text, const Front& f, const Environment& env,
                     const dsl::Limits& stage_limits) const {
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
                b.dtype = scalar_dtype(it->second);
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
        return dsl::plan(f.module, text, db, stage_limits);
    }

    std::shared_ptr<const Entry> prepare(std::string_view text, const Front& f, const Environment& env, Timing* timing,
                                         detail::CallControl* control) {
        auto t0 = Clock::now();
        auto e = std::make_shared<Entry>();
        e->plan = plan_of(text, f, env);
        const ir::Program& program = e->plan.program;
        for (const ir::OutputDecl& od : program.outputs) {
            const ir::Node& n = program.node(od.node);
            e->output_shapes.push_back(core::prototype(n.dtype, n.shape, backend));
        }
        const double check_ms = ms_since(t0);
        detail::PrepareOptions po;
        po.fast_math = options.fast_math;
        po.nvrtc_options = options.nvrtc_options;
        po.tiered = options.tiered_compile;
        po.control = control;
        e->prepared = impl->prepare(e->plan, po);
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
    }

    // Runtime::cancel() moves it on; a call stops when it differs from its value at the start.
    std::atomic<std::uint64_t> cancel_epoch{0};
    // Binds, runs and (when write_back) stores the assigned names into env. `control` null: the
    // call cannot be stopped.
    // `all_or_nothing`: in-place targets are written through temporaries (CallOptions).
    Array run(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
              bool write_back, detail::CallControl* control, bool all_or_nothing = false);
    // Whether the arrays bound to the program's names include host arrays, and device arrays.
    struct Placement {
        bool host = false, on_device = false;
    };
    static Placement placement_of(const Front& f, const Environment& env) {
        Placement r;
        for (const std::string& n : f.names) {
            auto it = env.find(n);
            if (it == env.end() || !it->second.is_array()) continue;
            (it->second.array().backend() == Backend::Cpu ? r.host : r.on_device) = true;
        }
        return r;
    }
    // Every array bound to the program's names lives on this runtime's backend and device: moving
    // them is explicit (Array::to), so any other is a DeviceMismatchError.
    void check_devices(const Front& f, const Environment& env) const {
        for (const std::string& n : f.names) {
            auto it = env.find(n);
            if (it == env.end() || !it->second.is_array()) continue;
            const Array& a = it->second.array();
            if (a.backend() != backend || (backend == Backend::Cuda && a.device() != device))
                throw DeviceMismatchError(mismatch_message(n, a));
        }
    }
    // "'a' is on cuda:1 but this runtime evaluates on cuda:0; ..." for an array not on this runtime's device.
    std::string mismatch_message(const std::string& name, const Array& a) const {
        const std::string here = backend == Backend::Cuda ? fmt::format("cuda:{}", device) : std::string("cpu");
        const std::string there =
            a.backend() == Backend::Cuda ? fmt::format("cuda:{}", a.device()) : std::string("cpu");
        const std::string move =
            backend == Backend::Cuda ? fmt::format("Backend::Cuda, {}", device) : std::string("Backend::Cpu");
        return fmt::format(
            "'{}' is on {} but this runtime evaluates on {}; jitexpr does not copy between devices "
            "by itself: copy it with .to({}), or evaluate on a runtime of {}",
            name, there, here, move, there);
    }
    // ---- host data on a CUDA runtime (arrays on the CPU given to a runtime that evaluates on
    // CUDA): streamed through the GPU in chunks, copied whole when the program cannot be
    // streamed, or (Backend::Auto) evaluated on the CPU when the cost model says the CPU is faster.
    struct HostEntry {
        ir::Plan plan;                     // for the host arrays' shapes
        std::vector<Array> output_shapes;  // host prototypes
    };
    cache::MemoryCache<std::string, std::shared_ptr<const HostEntry>> host_entries{256};
    std::mutex cpu_mutex;
    std::unique_ptr<Runtime> cpu;  // Backend::Auto's CPU choice for host data (made when first chosen)
    Runtime& cpu_runtime();
    // Bytes per second of the link and of the CPU backend, measured once per machine (kept in
    // the disk cache) and once per process.
    struct HostModel {
        double link_gbs = 0;  // min(pinned host -> device, staging of pageable memory)
        double cpu_gbs = 0;   // the CPU backend on a memory-bound program, bytes read and written
        std::string source;   // "measured", "the disk cache"
    };
    std::once_flag model_once;
    HostModel model;
    const HostModel& host_model();
    std::size_t device_budget() const;
    std::shared_ptr<const Entry> entry_shared(std::string_view text, const Front& f, const Environment& env,
                                              detail::CallControl* control);
    // Where a call over host arrays runs (run_host's decision, and what explain shows).
    struct HostChoice {
        enum class Kind : std::uint8_t { Cpu, Streamed, Copied, TooLarge };
        Kind kind = Kind::Cpu;
        std::string why;    // Cpu: the reason; Copied / TooLarge: why it is not streamed
        std::string model;  // under Auto, when the GPU was chosen: the cost model's sentence and "; "
        cuda::stream::ChunkPlan cp;
        std::size_t budget = 0;
        std::uint64_t in_bytes = 0, out_bytes = 0;
    };
    std::shared_ptr<const HostEntry> host_entry(std::string_view text, const Front& f, const Environment& env);
    // `budget`: the device memory the call may use (device_budget() when called to run).
    HostChoice choose_host(const HostEntry& he, const std::vector<Array>& inputs, bool all_or_nothing,
                           std::size_t budget);
    Array run_host(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
                   bool write_back, detail::CallControl* control, bool all_or_nothing);
    std::string explain(std::string_view text, const Front& f, const Environment& env, const ExplainOptions& o);
    double explain_bandwidth(std::string* source);
    std::once_flag bandwidth_once;
    double bandwidth_gbs = 0;
    std::string bandwidth_source;
    Array run_copied(std::string_view text, const Front& front, Environment& env, void* stream, Timing* timing,
                     bool write_back, detail::CallControl* control, bool all_or_nothing);

    Array run(std::string_view text, const Front& front, Environment& env, const CallOptions& o, bool write_back) {
        detail::CallControl control(o.cancel ? &*o.cancel : nullptr, &cancel_epoch, &o.progress);
        // Memory that could not be had is an OutOfMemoryError with a caret under what asked for
        // it: the node a backend names (an order statistic, a reduction), else the statement.
        try {
            return run(text, front, env, o.stream, o.timing, write_back, &control, o.in_place_all_or_nothing);
        } catch (const detail::OutOfMemoryAt& e) {
            throw e.at(text, e.where.empty() ? statements_span(front) : e.where);
        } catch (const OutOfMemoryError& e) {
            if (e.located()) throw;
            throw e.at(text, statements_span(front));
        } catch (const std::bad_alloc&) {
            throw OutOfMemoryError(0, core::host_memory_available(), "evaluating the program")
                .at(text, statements_span(front));
        }
    }
    // The span of a program's statement (of its first, when it has several).
    static SourceSpan statements_span(const Front& f) {
        return f.module.statements.empty() ? SourceSpan{} : f.module.statements.front().span;
    }
};

}  // namespace jit

// jitexpr — the runtime's implementation, private to api/: the front of every call (its text
// parsed once, the program prepared once per binding signature, both cached) over the machine
// it runs on and the ways of running (run/). Shared by runtime.cpp (the calls) and explain.cpp
// (Runtime::explain).
#pragma once

#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include "backend/backend.hpp"
#include "backend/cache/cache.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"
#include "run/decide.hpp"
#include "run/machine.hpp"
#include "run/order.hpp"
#include "run/ways.hpp"

#include <boost/container/small_vector.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit {

// What both files use, defined in runtime.cpp: in a namespace of their own (no type that
// Runtime::Impl holds may be in an unnamed namespace of a header).
namespace runtime_private {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0);

// The parsed text of a program and the names whose bindings its checking depends on. (Shared:
// a repeated call remembers it by a weak pointer.)
struct Front : std::enable_shared_from_this<Front> {
    syntax::Module module;
    std::vector<std::string> params;  // positional parameters (no named constants)
    std::vector<std::string> names;   // names read (named constants too), then assigned names
    // Per name of `names`, its index in `params` (a positional argument), or -1.
    std::vector<std::int32_t> positional;
    // CallOptions::strict_in_place: every assignment to a bound array writes into it (same-kind
    // cast, broadcast) instead of rebinding the name when the value's dtype or shape differs.
    bool strict = false;
};

// The key of a parse: the text, and how the call reads it. `into`: run_into's, the text's last
// statement assigned to the out= array; `strict`: CallOptions::strict_in_place.
struct FrontKey {
    std::string text;
    bool strict = false, into = false;
};
struct FrontKeyView {
    std::string_view text;
    bool strict = false, into = false;
    explicit operator FrontKey() const { return FrontKey{std::string(text), strict, into}; }
};
struct FrontKeyHash {
    using is_transparent = void;
    std::size_t operator()(const FrontKeyView& k) const noexcept {
        return std::hash<std::string_view>{}(k.text) ^ (std::size_t{k.strict} << 1) ^ std::size_t{k.into};
    }
    std::size_t operator()(const FrontKey& k) const noexcept { return (*this)(FrontKeyView{k.text, k.strict, k.into}); }
};
inline bool operator==(const FrontKey& a, const FrontKey& b) {
    return a.text == b.text && a.strict == b.strict && a.into == b.into;
}
inline bool operator==(const FrontKey& a, const FrontKeyView& b) {
    return a.text == b.text && a.strict == b.strict && a.into == b.into;
}

// What a call binds to each of a program's names (Front::names), looked up in its environment
// once: at[i] is the binding of names[i], or null. The checks, the placement and the entry key
// of a call read these, not the map again (the environment is not changed while they do).
struct Bound {
    boost::container::small_vector<const Arg*, 8> at;
    Bound(const Front& f, const Environment& env);
    // Positional arguments, in the order of f.params.
    Bound(const Front& f, const std::vector<Arg>& args);
};

// A call's bindings of a program's names as words, for comparing with an earlier call's: kind,
// dtype, place (backend and device), read-only flag, item size, shape and strides of each
// array, the kind of each scalar. Everything the entry key holds, and the device, which the
// key leaves to check_devices.
using Signature = boost::container::small_vector<std::int64_t, 24>;
void signature_of(Signature& out, const Bound& b);
bool same_signature(const Signature& s, const Bound& b);

// The programs prepared for a text and a binding signature.
using EntryCache = cache::MemoryCache<std::string, std::shared_ptr<const run::Entry>>;

// A call found to repeat an earlier one (Runtime::Impl::repeat): the program it ran and where
// the program's inputs and scalars are among the call's bindings.
struct Repeated {
    std::shared_ptr<const std::shared_ptr<const run::Entry>> entry;  // held while it runs
    boost::container::small_vector<const Arg*, 8> inputs;
    boost::container::small_vector<const Arg*, 4> scalars;
    run::Slots slots() const { return run::Slots{{inputs.data(), inputs.size()}, {scalars.data(), scalars.size()}}; }
};

// Appends a binding (absent: null, scalar kind, or array dtype/backend/shape/strides) as raw
// bytes: the part of the entry-cache key that the arguments contribute.
void append_signature(std::string& key, const Arg* a);
DType scalar_dtype(const Arg& a);

// The name under which run_into binds its `out` array (no identifier can be spelt so).
inline constexpr std::string_view kOutName = "(out)";

}  // namespace runtime_private

using runtime_private::Bound;
using runtime_private::Clock;
using runtime_private::Front;
using runtime_private::kOutName;
using runtime_private::ms_since;
using runtime_private::Repeated;

struct Runtime::Impl {
    explicit Impl(RuntimeOptions o);

    RuntimeOptions options;
    // The backends, the compiled modules and the measurements. Declared before the caches:
    // destroyed after them.
    run::Machine machine;

    // Parsed texts, and programs prepared for one binding signature: LRU-bounded, one
    // preparation per key however many threads ask, and a repeated key found without a lock
    // (cache::MemoryCache::fetch).
    cache::MemoryCache<runtime_private::FrontKey, std::shared_ptr<const Front>, runtime_private::FrontKeyHash> fronts;
    using EntryCache = runtime_private::EntryCache;
    EntryCache entries;
    // Host data on a CUDA runtime: the plans decide() reads, and the programs prepared for the
    // CPU backend when a call is kept on the CPU (not counted in stats()).
    cache::MemoryCache<std::string, std::shared_ptr<const run::Entry>> host_plans{256};
    cache::MemoryCache<std::string, std::shared_ptr<const run::Entry>> cpu_entries;

    // Runtime::cancel() moves it on; a call stops when it differs from its value at the start.
    std::atomic<std::uint64_t> cancel_epoch{0};

    // A repeated call (runtime.cpp's repeat()): this runtime among all a thread has used.
    const std::uint64_t serial;
    // Whether a call like one of the last ones of this thread that ran directly: same text,
    // same bindings (Signature), the same started backend; `r` then holds what it ran. When
    // not, the call goes the whole way (order, placement, checks, entry cache).
    bool repeat(const Front& f, const Bound& b, runtime_private::Repeated& r);
    // Remembers that `f` over `b` ran directly as `e`, found in `entries` as `h`.
    void remember(const Front& f, const Bound& b, const run::Entry& e, const EntryCache::Handle& h);

    // The parse of `text` as a call reads it (FrontKey): valid until this thread's next call of
    // front(). `parse_ms` (may be null) gets the parse's time on a miss.
    const Front& front(std::string_view text, bool strict, bool into, double* parse_ms = nullptr);

    // The key of the program prepared for `text` with the dtypes, shapes and layouts `env`
    // binds to its names.
    static void entry_key(std::string& key, std::string_view text, const Front& f, const Bound& b);
    // Which backend a program is prepared for: the runtime's, or (host data kept on the CPU by
    // a CUDA runtime) the CPU backend.
    enum class On : std::uint8_t { Main, Cpu };
    // The program prepared for `text` over `env`, from the cache of `on`: valid until this
    // thread's next call of entry(). `timing` (may be null) records the preparation; `control`
    // (may be null) watches it: compile progress, stop requests between compiles.
    // `b`: env's bindings of f.names.
    // `handle` (may be null): what finds the entry again (On::Main only).
    const std::shared_ptr<const run::Entry>& entry(On on, std::string_view text, const Front& f, const Environment& env,
                                                   const Bound& b, Timing* timing, detail::CallControl* control,
                                                   EntryCache::Handle* handle = nullptr);
    // The plan of `text` with the dtypes, shapes and layouts `env` binds to its names, within
    // `limits`.
    ir::Plan plan_of(std::string_view text, const Front& f, const Environment& env, const dsl::Limits& limits) const;
    // The plan over host arrays of a CUDA runtime's call (cached).
    std::shared_ptr<const run::Entry> host_plan(std::string_view text, const Front& f, const Environment& env,
                                                const Bound& b);
    detail::PrepareOptions prepare_options() const;

    // Where the arrays bound to the program's names are.
    static run::Where where_of(const Bound& b);
    // Every array bound to the program's names lives on this runtime's backend and device: moving
    // them is explicit (Array::to), so any other is a DeviceMismatchError.
    void check_devices(const Front& f, const Bound& b) const;

    // One call: binds, runs and (when write_back) stores the assigned names into env. Memory
    // that could not be had is an OutOfMemoryError with a caret under what asked for it.
    Array call(std::string_view text, const Front& f, Environment& env, const CallOptions& o, bool write_back);
    // The same for a repeated call of eval (nothing written back).
    Array call(std::string_view text, const Front& f, const runtime_private::Repeated& r, const CallOptions& o);
    // The same, without the OutOfMemoryError's caret. `control` null: the call cannot be stopped.
    Array run(std::string_view text, const Front& f, Environment& env, const run::Call& c, Timing* timing);
    // The axis order the call's arrays share when its program keeps it (run/order.hpp): the
    // call then runs over the arrays seen in that order and its new arrays come back in it.
    std::optional<run::AxisOrder> order_of(std::string_view text, const Front& f, const Environment& env,
                                           const Bound& b);
    // run() over the arrays as they are, where they are.
    Array run_placed(std::string_view text, const Front& f, Environment& env, const Bound& b, const run::Call& c,
                     Timing* timing, bool remember = false);
    // Arrays on the runtime's started backend and device (or none), run as they are.
    // `remember`: a later call with the same text and bindings may run the same program at once
    // (repeat()).
    Array run_direct(std::string_view text, const Front& f, Environment& env, const Bound& b, const run::Call& c,
                     Timing* timing, bool remember = false);
    // Host arrays on a CUDA runtime, or under Auto before one started: decided (run::decide),
    // then run that way.
    Array run_host(std::string_view text, const Front& f, Environment& env, const Bound& b, const run::Call& c,
                   Timing* timing);
    // The same text prepared over other arrays, for a way of running (run::Programs).
    class CallPrograms;
    Array execute(const run::Decision& d, const run::Entry& host, std::string_view text, const Front& f,
                  Environment& env, const Bound& b, const run::Call& c, Timing* timing);

    std::string explain(std::string_view text, const Front& f, const Environment& env, const ExplainOptions& o);
    std::string explain_placed(std::string_view text, const Front& f, const Environment& env, const ExplainOptions& o);
};

}  // namespace jit

// A session: one Runtime and one Environment, and statements run in order against them.
// Variables live in host memory (they come from files and constructors and go to files and the
// screen): a CUDA runtime streams them through the GPU, and under backend=auto its cost model
// chooses the CPU or the GPU for each statement (docs/api.md, "Host data on the GPU"), with
// --device-memory bounding what a statement may use on the device.
// Statements whose right-hand side is an array constructor (arange, linspace, zeros, ones,
// full, rand, randn, load, save) are run here; every other statement goes to Runtime::run.
#pragma once

#include "statements.hpp"

#include <jit/runtime.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit::cli {

// Names of the constructor statements (for completion and :help).
const std::vector<std::string>& constructor_names();

// What one statement cost, for --time: the runtime's timing (zero for constructor, load and
// save statements, which do not go through Runtime::run), and the time to print its value
// (copying it to the host included).
struct StatementTime {
    enum class Kind { Runtime, Constructor, Load, Save } kind = Kind::Runtime;
    std::size_t line = 1;  // of the statement in its text
    Timing timing;
    double print_ms = 0;
    double total_ms = 0;
};

class Session {
public:
    explicit Session(RuntimeOptions options);

    Runtime& runtime() { return *runtime_; }
    const Runtime& runtime() const { return *runtime_; }
    const RuntimeOptions& runtime_options() const { return runtime_->options(); }
    Environment& env() { return env_; }
    const Environment& env() const { return env_; }
    // The runtime's backend. Under backend=auto, asking starts CUDA when no statement has yet
    // (Runtime::backend): the REPL asks, a script does not (started_backend()).
    Backend backend() const { return runtime_->backend(); }
    // The backend if a statement (or the options) started one; nullopt under auto until a
    // statement is placed on the GPU.
    std::optional<Backend> started_backend() const { return runtime_->started_backend(); }

    // Runs every statement of `text` in order; the value of each bare expression is passed to
    // `print`. Stops at the first error, which is thrown with its caret pointing into `text`.
    // `timing`, when given, receives the Timing of the last statement run by Runtime::run.
    void run(std::string_view text, const std::function<void(const Array&)>& print, Timing* timing = nullptr);

    // Runtime::explain of `text` over the session's variables. `text` is what Runtime::run
    // compiles: a constructor (arange, load, ...) in it is an ArgumentError with a caret (run it
    // first as a statement of its own and explain what uses it).
    std::string explain(std::string_view text, const ExplainOptions& options = {});

    // Replaces the runtime by one on `backend` (the variables stay in host memory). On failure
    // (no device, ...) nothing changes and the error is thrown.
    void set_backend(Backend backend);

    // The value of a variable as an array (a scalar becomes a 0-d array); nullopt if unbound.
    std::optional<Array> variable(std::string_view name) const;

    // Every statement runs with this token and progress callback (the stream and timing are
    // the session's own). A cancelled token stops the statement running, and any after it,
    // with CancelledError; constructors, load() and save() honour it too.
    void set_call_options(CallOptions options) { call_ = std::move(options); }
    // Called after every statement with its StatementTime (--time); empty: none.
    void set_time_report(std::function<void(const StatementTime&)> report) { report_ = std::move(report); }
    // Replaces the runtime by one with `threads` CPU threads (0: every core); variables stay.
    void set_threads(int threads);

private:
    void keep_on_host(const Chunk& chunk);
    std::string explain_here(std::string_view text, const ExplainOptions& options);
    std::optional<Array> run_statement(const Chunk& chunk, std::string_view full, Timing* timing, bool* bare);

    std::unique_ptr<Runtime> runtime_;
    Environment env_;
    CallOptions call_;
    StatementTime::Kind kind_ = StatementTime::Kind::Runtime;  // of the statement run last
    std::function<void(const StatementTime&)> report_;
};

}  // namespace jit::cli

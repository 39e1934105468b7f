// The CLI's one place for SIGINT (Ctrl-C). The library installs no signal handler; the CLI and
// the REPL install this one for as long as they run statements.
//
// A Ctrl-C cancels the session's token (every statement runs with it, so a running one stops at
// its next safe point and throws jit::CancelledError) and is remembered until taken: the REPL's
// line reader takes it to abandon the line being typed, and anything long (a save writing a
// temporary file) asks interrupted() to stop and clean up. While a statement runs, a second
// Ctrl-C says that jitexpr is still stopping, and a third ends the process at once (exit 130).
#pragma once

#include <jit/cancel.hpp>
#include <jit/error.hpp>

#include <string>

namespace jit::cli {

class InterruptScope {
public:
    // Installs the handler (without SA_RESTART: a blocked read returns EINTR); the previous
    // disposition comes back when the scope ends. One scope at a time.
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
};

// The token the session's statements run with (cancelled by Ctrl-C).
const CancelToken& interrupt_token();

// True once a Ctrl-C came since the last clear_interrupt() (async-signal-safe to read).
bool interrupted() noexcept;
// Forgets past Ctrl-Cs and resets the token: before each statement, and after the reader took one.
void clear_interrupt() noexcept;
// A descriptor that becomes readable at each Ctrl-C, whichever thread the handler ran on (-1
// before the first InterruptScope, or when no pipe could be made): for a wait that must wake.
int interrupt_wake_fd() noexcept;

// Marks a statement as running (the second and third Ctrl-C escalate only then).
class RunningStatement {
public:
    RunningStatement();
    ~RunningStatement();
    RunningStatement(const RunningStatement&) = delete;
    RunningStatement& operator=(const RunningStatement&) = delete;
};

// How the CLI and the REPL say it: "interrupted", and which arrays may be partly written.
std::string interrupted_text(const CancelledError& e);

}  // namespace jit::cli

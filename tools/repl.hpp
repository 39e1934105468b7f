// The interactive read-eval-print loop (see docs/cli.md, "Interactive use").
#pragma once

#include "cli.hpp"
#include "session.hpp"

#include <string>
#include <vector>

namespace jit::cli {

// True when built with GNU readline (line editing, history recall, tab completion).
bool repl_has_readline();

class ProgressLine;

// Runs the REPL on the terminal until :quit or Ctrl-D. Returns the exit status. The caller
// holds an InterruptScope (Ctrl-C stops the statement running, or abandons the line typed).
int run_repl(Session& session, const CliOptions& options, ProgressLine& progress);

// The start-up banner: every line within 80 columns (for tests).
std::string banner_text(const Session& session);

// Completion candidates for `prefix` (commands when the line starts with ':', else variables,
// functions from the op table, constructors, dtype names and keywords), sorted, unique.
std::vector<std::string> completions(const Session& session, const std::string& line_before_word,
                                     const std::string& prefix);

// Where the history is kept: $XDG_STATE_HOME/jitexpr/history (an absolute XDG_STATE_HOME), else
// ~/.jitexpr_history; empty when neither is known.
std::string history_path();

}  // namespace jit::cli

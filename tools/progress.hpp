// The progress line of long statements, loads, saves and compiles on standard error.
//
// Kept small on purpose (one line redrawn with a carriage return and erase-to-end-of-line, cut
// to the terminal's width): a progress-bar library (indicators, for instance) would bring
// threads, colours and bars jitexpr does not need, and no such library is packaged in Debian.
//
// Shown once the statement has run for about a second, and cleared when it ends. On a terminal
// the line is redrawn in place; when forced on something else (--progress into a file or a
// pipe) it is printed as whole lines, at most one a second.
#pragma once

#include <jit/cancel.hpp>

#include <chrono>
#include <string>

namespace jit::cli {

class ProgressLine {
public:
    enum class Mode { Auto, On, Off };  // Auto: only when `fd` is a terminal
    explicit ProgressLine(Mode mode, int fd = 2);
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    bool enabled() const { return enabled_; }
    // A statement (or a load, a save) starts: the one-second clock starts again.
    void begin();
    // The callback for CallOptions::progress.
    void update(const Progress& p);
    // Erases the line if it is shown (when a statement ends, before anything else is printed).
    void clear();
    // What update() shows for `p` (without the terminal's control characters); for tests.
    static std::string text(const Progress& p);

private:
    using Clock = std::chrono::steady_clock;
    int fd_;
    bool enabled_ = false, terminal_ = false, shown_ = false;
    Clock::time_point start_ = Clock::now(), last_line_{};
};

// begin() now and clear() when the scope ends, however it ends.
class ProgressStep {
public:
    explicit ProgressStep(ProgressLine& line) : line_(line) { line_.begin(); }
    ~ProgressStep() { line_.clear(); }
    ProgressStep(const ProgressStep&) = delete;
    ProgressStep& operator=(const ProgressStep&) = delete;

private:
    ProgressLine& line_;
};

}  // namespace jit::cli

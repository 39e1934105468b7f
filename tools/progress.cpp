#include "progress.hpp"

#include <fmt/format.h>

#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

namespace jit::cli {
namespace {

constexpr auto kShowAfter = std::chrono::milliseconds(1000);

std::string amount(double v, Progress::Unit unit) {
    if (unit == Progress::Unit::Bytes) {
        const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int k = 0;
        while (v >= 1024 && k < 4) {
            v /= 1024;
            ++k;
        }
        return k == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[k]);
    }
    const char* units[] = {"", "k", "M", "G", "T"};
    int k = 0;
    while (v >= 1000 && k < 4) {
        v /= 1000;
        ++k;
    }
    return k == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}{}", v, units[k]);
}

std::string seconds(double s) {
    if (s < 60) return fmt::format("{:.0f} s", std::ceil(s));
    if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
    return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s / 60, 60));
}

const char* phase_name(Progress::Phase p) {
    switch (p) {
        case Progress::Phase::Run: return "running";
        case Progress::Phase::Compile: return "compiling";
        case Progress::Phase::Load: return "loading";
        case Progress::Phase::Save: return "saving";
        case Progress::Phase::Create: return "creating";
    }
    return "working";
}

int terminal_width(int fd) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

void write_all(int fd, const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
        const ssize_t r = ::write(fd, s.data() + done, s.size() - done);
        if (r <= 0) return;  // a progress line that cannot be written is not worth an error
        done += static_cast<std::size_t>(r);
    }
}

}  // namespace

ProgressLine::ProgressLine(Mode mode, int fd) : fd_(fd) {
    terminal_ = ::isatty(fd) == 1;
    enabled_ = mode == Mode::On || (mode == Mode::Auto && terminal_);
}

void ProgressLine::begin() {
    start_ = Clock::now();
    last_line_ = {};
}

std::string ProgressLine::text(const Progress& p) {
    if (p.unit == Progress::Unit::Kernels)
        return fmt::format("{}: {} of {} kernels", phase_name(p.phase), p.done, p.total);
    const char* what = p.unit == Progress::Unit::Elements ? " elements" : "";
    std::string s = fmt::format("{}: {}", phase_name(p.phase), amount(static_cast<double>(p.done), p.unit));
    if (p.total > 0) {
        s += fmt::format(" of {}{} ({:.0f}%)", amount(static_cast<double>(p.total), p.unit), what,
                         100.0 * static_cast<double>(p.done) / static_cast<double>(p.total));
    } else {
        s += what;
    }
    if (p.elapsed_s > 0 && p.done > 0) {
        const double rate = static_cast<double>(p.done) / p.elapsed_s;
        s += fmt::format(", {}{}/s", amount(rate, p.unit), what);
        if (p.total > p.done) s += fmt::format(", {} left", seconds(static_cast<double>(p.total - p.done) / rate));
    }
    return s;
}

void ProgressLine::update(const Progress& p) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (now - start_ < kShowAfter) return;
    std::string line = text(p);
    if (terminal_) {
        const std::size_t width = static_cast<std::size_t>(std::max(terminal_width(fd_) - 1, 10));
        if (line.size() > width) line.resize(width);
        write_all(fd_, "\r" + line + "\x1b[K");
        shown_ = true;
    } else if (last_line_ == Clock::time_point{} || now - last_line_ >= std::chrono::seconds(1)) {
        last_line_ = now;
        write_all(fd_, line + "\n");
    }
}

void ProgressLine::clear() {
    if (shown_) write_all(fd_, "\r\x1b[K");
    shown_ = false;
}

}  // namespace jit::cli

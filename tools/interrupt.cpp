#include "interrupt.hpp"

#include <jit/runtime.hpp>

#include <cerrno>
#include <csignal>

#include <fcntl.h>
#include <unistd.h>

namespace jit::cli {
namespace {

volatile std::sig_atomic_t g_count = 0;    // Ctrl-Cs since clear_interrupt()
volatile std::sig_atomic_t g_running = 0;  // a statement is running
const CancelToken* g_token = nullptr;      // set before the handler is installed
struct sigaction g_previous {};
// A self-pipe the handler writes a byte into: the kernel hands a process's SIGINT to any thread
// that does not block it, so the handler may run on a worker thread while the REPL's main thread
// (which blocks SIGINT outside its wait) gets no EINTR; the byte wakes its wait all the same.
// Made once, never closed (the handler may run at any time).
int g_wake[2] = {-1, -1};

extern "C" void on_sigint(int) {
    const int saved_errno = errno;
    g_count = g_count + 1;
    if (g_token) g_token->cancel();  // an atomic store
    if (g_running) {
        if (g_count == 2) {
            static const char m[] = "\njitexpr: stopping at the next safe point; Ctrl-C again quits at once\n";
            [[maybe_unused]] ssize_t w = ::write(STDERR_FILENO, m, sizeof m - 1);
        } else if (g_count >= 3) {
            remove_temporary_files();  // no unwinding from here: a save's temporary file goes now
            ::_exit(130);
        }
    }
    if (g_wake[1] >= 0) {
        const char b = 1;
        [[maybe_unused]] ssize_t w = ::write(g_wake[1], &b, 1);  // non-blocking: a full pipe wakes anyway
    }
    errno = saved_errno;
}

}  // namespace

const CancelToken& interrupt_token() {
    static const CancelToken* token = new CancelToken();  // never destroyed: the handler may use it at exit
    return *token;
}

InterruptScope::InterruptScope() {
    g_token = &interrupt_token();
    if (g_wake[0] < 0 && ::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) g_wake[0] = g_wake[1] = -1;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, &g_previous);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &g_previous, nullptr); }

bool interrupted() noexcept { return g_count != 0; }

void clear_interrupt() noexcept {
    char buf[64];  // the wake bytes first: a Ctrl-C landing meanwhile is then at worst a spurious wake
    if (g_wake[0] >= 0)
        while (::read(g_wake[0], buf, sizeof buf) > 0) {}
    g_count = 0;
    interrupt_token().reset();
}

int interrupt_wake_fd() noexcept { return g_wake[0]; }

std::string interrupted_text(const CancelledError& e) {
    const auto& names = e.partly_written();
    if (names.empty()) return "interrupted";
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) list += i + 1 == names.size() ? " and " : ", ";
        list += names[i];
    }
    return "interrupted; " + list +
           (names.size() == 1 ? " may be partly written (it was" : " may be partly written (they were") +
           " being written in place)";
}

RunningStatement::RunningStatement() { g_running = 1; }
RunningStatement::~RunningStatement() { g_running = 0; }

}  // namespace jit::cli

#include "repl.hpp"

#include "format.hpp"
#include "interrupt.hpp"
#include "progress.hpp"
#include "statements.hpp"

#include <jit/language.hpp>

#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <pthread.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef JITEXPR_HAVE_READLINE
#define JITEXPR_HAVE_READLINE 0
#endif
#if JITEXPR_HAVE_READLINE
#include <readline/history.h>
#include <readline/readline.h>
#endif

#ifndef JITEXPR_VERSION
#define JITEXPR_VERSION "unknown"
#endif

namespace jit::cli {
namespace {

struct ReadResult {
    enum class Kind { Line, Interrupted, Eof } kind = Kind::Eof;
    std::string line;
};

const std::vector<std::string>& command_names() {
    static const std::vector<std::string> c{":help",  ":vars",    ":source",  ":explain", ":time",
                                            ":cache", ":backend", ":threads", ":info",    ":quit"};
    return c;
}

// Whether the history file at `path` may be read, appended to and trimmed (to its last 1000
// entries, which rewrites it): a file jitexpr made, or makes now. One that exists must be a
// regular file (not a symlink, which could name any file), of this user, empty or in the
// format jitexpr writes (readline's: a "#<seconds>" line before each entry). Anything else is
// not jitexpr's to change: the REPL then keeps no history and says so once, on stderr.
bool ensure_history_file(const std::string& path) {
    if (path.empty()) return false;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    std::string why;
    if (fd < 0) {
        why = errno == ELOOP ? "it is a symbolic link" : std::strerror(errno);
    } else {
        struct stat st {};
        char head[32] = {};
        const ssize_t got = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::read(fd, head, sizeof head - 1) : -1;
        ::close(fd);
        if (!S_ISREG(st.st_mode)) {
            why = "it is not a regular file";
        } else if (st.st_uid != ::geteuid()) {
            why = "it belongs to another user";
        } else if (got < 0) {
            why = std::strerror(errno);
        } else if (got > 0) {
            std::size_t k = 1;
            while (k < static_cast<std::size_t>(got) && head[k] >= '0' && head[k] <= '9') ++k;
            if (head[0] != '#' || k == 1 || (k < static_cast<std::size_t>(got) && head[k] != '\n'))
                why = "it is not a jitexpr history file (its first line is not a \"#<seconds>\" timestamp)";
        }
    }
    if (why.empty()) return true;
    std::fprintf(stderr, "jitexpr: keeping no history this session: %s: %s\n", path.c_str(), why.c_str());
    return false;
}

#if JITEXPR_HAVE_READLINE

const Session* g_session = nullptr;
std::vector<std::string> g_matches;
std::optional<std::string> g_line;
bool g_done = false;

extern "C" void on_line(char* line) {
    g_done = true;
    if (line) {
        g_line = std::string(line);
        std::free(line);
    } else {
        g_line.reset();
    }
    rl_callback_handler_remove();
}

extern "C" char* completion_generator(const char*, int state) {
    static std::size_t next = 0;
    if (state == 0) next = 0;
    if (next < g_matches.size()) return strdup(g_matches[next++].c_str());
    return nullptr;
}

extern "C" char** attempt_completion(const char* text, int start, int) {
    std::string before(rl_line_buffer, static_cast<std::size_t>(start));
    // Inside a string (a file name for load/save): let readline complete file names.
    if (std::count(before.begin(), before.end(), '"') % 2 == 1 ||
        std::count(before.begin(), before.end(), '\'') % 2 == 1) {
        rl_attempted_completion_over = 0;
        return nullptr;
    }
    rl_attempted_completion_over = 1;
    g_matches = completions(*g_session, before, text);
    if (g_matches.empty()) return nullptr;
    return rl_completion_matches(text, completion_generator);
}

class LineReader {
public:
    explicit LineReader(const Session& s) : history_(history_path()) {
        g_session = &s;
        rl_readline_name = "jitexpr";
        rl_catch_signals = 0;  // SIGINT is ours (InterruptScope); readline only cleans up
        rl_attempted_completion_function = attempt_completion;
        rl_completer_word_break_characters = const_cast<char*>(" \t\n()[],+-*/%&|^<>=!~?;\"'");
        using_history();
        // A statement of several lines is one entry, in memory and in the file (a timestamp
        // line before each entry keeps its lines together when read back).
        history_write_timestamps = 1;
        history_multiline_entries = 1;
        history_comment_char = '#';  // the timestamps' mark: with readline's default ('\0') none is written
        if (!ensure_history_file(history_)) history_.clear();
        if (!history_.empty()) read_history(history_.c_str());
    }
    ~LineReader() {
        if (!history_.empty()) history_truncate_file(history_.c_str(), 1000);
        g_session = nullptr;
    }

    ReadResult read(const std::string& prompt) {
        g_done = false;
        g_line.reset();
        clear_interrupt();
        rl_callback_handler_install(prompt.c_str(), on_line);
        // SIGINT stays blocked except inside pselect, which unblocks it atomically: a Ctrl-C that
        // lands while readline handles a key is then seen by the next wait instead of being lost
        // before a select() that would block for ever.
        sigset_t sigint_only, outside;
        sigemptyset(&sigint_only);
        sigaddset(&sigint_only, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigint_only, &outside);
        struct RestoreMask {
            const sigset_t& mask;
            ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
        } restore{outside};
        sigset_t waiting = outside;
        sigdelset(&waiting, SIGINT);
        const int wake = interrupt_wake_fd();  // readable at a Ctrl-C handled on another thread
        while (!g_done) {
            fd_set fds;
            FD_ZERO(&fds);
            FD_SET(STDIN_FILENO, &fds);
            if (wake >= 0) FD_SET(wake, &fds);
            int r = ::pselect(std::max(STDIN_FILENO, wake) + 1, &fds, nullptr, nullptr, nullptr, &waiting);
            if (r < 0 && errno != EINTR) break;
            if (r < 0 || (wake >= 0 && FD_ISSET(wake, &fds))) {
                char drained[64];
                if (r > 0 && FD_ISSET(wake, &fds))
                    while (::read(wake, drained, sizeof drained) > 0) {}
                if (interrupted()) {
                    clear_interrupt();
                    // Abandon the line: readline's state, then a fresh prompt on a new line.
                    rl_free_line_state();
                    rl_callback_sigcleanup();
                    rl_callback_handler_remove();
                    std::fputs("^C\n", stdout);
                    std::fflush(stdout);
                    return {ReadResult::Kind::Interrupted, {}};
                }
                if (r < 0 || !FD_ISSET(STDIN_FILENO, &fds)) continue;
            }
            rl_callback_read_char();
        }
        if (!g_done) rl_callback_handler_remove();
        if (!g_line) return {ReadResult::Kind::Eof, {}};
        return {ReadResult::Kind::Line, *g_line};
    }

    void remember(const std::string& line) {
        add_history(line.c_str());
        if (!history_.empty()) append_history(1, history_.c_str());
    }

private:
    std::string history_;
};

#else  // no readline: a plain line reader

class LineReader {
public:
    explicit LineReader(const Session&) : history_(history_path()) {
        if (!ensure_history_file(history_)) history_.clear();
    }

    ReadResult read(const std::string& prompt) {
        std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
        std::string line;
        clear_interrupt();
        while (true) {
            char c;
            ssize_t r = ::read(STDIN_FILENO, &c, 1);
            if (r < 0) {
                if (errno == EINTR) {
                    if (interrupted()) {
                        clear_interrupt();
                        std::fputs("^C\n", stdout);
                        std::fflush(stdout);
                        return {ReadResult::Kind::Interrupted, {}};
                    }
                    continue;
                }
                return {ReadResult::Kind::Eof, {}};
            }
            if (r == 0) {
                if (line.empty()) return {ReadResult::Kind::Eof, {}};
                return {ReadResult::Kind::Line, line};
            }
            if (c == '\n') return {ReadResult::Kind::Line, line};
            line += c;
        }
    }

    // In readline's format (a timestamp line before each entry), so that a later session with
    // readline reads a statement of several lines back as one entry.
    void remember(const std::string& entry) {
        if (history_.empty()) return;
        if (FILE* f = std::fopen(history_.c_str(), "a")) {
            std::fprintf(f, "#%lld\n%s\n", static_cast<long long>(std::time(nullptr)), entry.c_str());
            std::fclose(f);
        }
    }

private:
    std::string history_;
};

#endif

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

void print_value(const Array& a) { std::cout << format_array(a) << '\n' << std::flush; }

std::string help_text() {
    return R"(Statements: name = expression, or an expression to print its value; ';' or
newlines separate statements; a line ending in an operator, ',' or '\', or with
brackets still open, continues on the next line ('... ' prompt).
Constructors: arange(stop), arange(start, stop[, step]), linspace(a, b, n),
  zeros(shape), ones(shape), full(shape, value), rand(shape, seed=0),
  randn(shape, seed=0), with optional dtype=float32; load("x.npy"), save(x, "x.npy").
Commands:
  :help             this text
  :vars             variables: name, dtype, shape, backend, bytes
  :source STMT      the generated CUDA source for STMT
  :explain STMT     what STMT becomes: its names, stages, kernels, bytes, caches
  :time STMT        run STMT and show where the time went
  :cache            cache statistics of the runtime
  :backend [B]      show the backend, or switch to cpu or cuda (variables stay
                    in host memory; cuda streams them through the GPU)
  :threads [N]      show the CPU threads, or use N (0: every core)
  :info             version, backend, threads, CUDA driver/toolkit/device or why not
  :quit             leave (so does Ctrl-D on an empty line)
Ctrl-C abandons the line being typed, or stops the statement running (a new
array is not bound; one written in place finishes or is named as partly
written). Tab completes names.
)";
}

std::string scalar_dtype(const Arg& a) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, Array>) return std::string(dtype_name(v.dtype()));
            else return std::string(dtype_name(dtype_of_v<T>)) + " scalar";
        },
        a.value());
}

void show_vars(Session& s) {
    if (s.env().empty()) {
        std::cout << "no variables\n";
        return;
    }
    std::vector<std::vector<std::string>> rows{{"name", "dtype", "shape", "backend", "bytes"}};
    for (const auto& [name, arg] : s.env()) {
        if (arg.is_array()) {
            const Array& a = arg.array();
            rows.push_back({name, std::string(dtype_name(a.dtype())), shape_text(a.shape()),
                            std::string(backend_name(a.backend())), std::to_string(a.nbytes())});
        } else {
            rows.push_back({name, scalar_dtype(arg), "()", "host", "-"});
        }
    }
    std::vector<std::size_t> w(5, 0);
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            std::string cell = r[i];
            if (i == 4) cell = std::string(w[i] - cell.size(), ' ') + cell;  // bytes right-aligned
            else if (i + 1 < r.size()) cell += std::string(w[i] - cell.size(), ' ');
            line += cell + (i + 1 < r.size() ? "  " : "");
        }
        std::cout << line << '\n';
    }
}

void show_timing(const Timing& t, double total_ms, Backend backend) {
    std::cout << fmt::format(
        "parse {:.3f} ms, check {:.3f} ms, emit {:.3f} ms, compile {:.3f} ms, load {:.3f} ms, run {:.3f} ms\n"
        "total {:.3f} ms; program cache {}",
        t.parse_ms, t.check_ms, t.emit_ms, t.compile_ms, t.load_ms, t.run_ms, total_ms, t.cache_hit ? "hit" : "miss");
    // Modules (compiled kernels) exist on CUDA only; a program cache hit looks none up.
    if (backend == Backend::Cuda && !t.cache_hit)
        std::cout << ", module cache " << (t.module_cache_hit ? "hit" : "miss");
    std::cout << '\n';
}

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

int cpu_threads(const Session& s) {
    const int t = s.runtime_options().cpu_threads;
    return t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // no driver asked
}

// Under auto, what starts CUDA: said where the backend would be named before a statement has
// been placed on the GPU (naming it would start the driver).
constexpr std::string_view kWhenCudaStarts = "CUDA starts with the first statement placed on the GPU";

// The session's backend as far as it is started: "cuda", "cpu", or under auto before any
// statement was placed on the GPU, "auto" (nothing of CUDA asked).
std::string backend_text(const Session& s) {
    const std::optional<Backend> b = s.started_backend();
    return std::string(backend_name(b.value_or(Backend::Auto)));
}

void show_info(Session& s) {
    // Looks for the driver and its devices (the CUDA lines), but starts no backend.
    const CudaInfo c = system_info().cuda;
    const std::string backend =
        s.started_backend() ? backend_text(s) : fmt::format("auto, not started ({})", kWhenCudaStarts);
    std::cout << fmt::format("jitexpr {}\nbackend: {}\nCPU threads: {}\n", JITEXPR_VERSION, backend, cpu_threads(s));
    std::cout << "CUDA driver: " << (c.driver_version ? cuda_version(c.driver_version) : std::string("none")) << '\n';
    std::cout << "CUDA toolkit (NVRTC): "
              << (c.nvrtc.found && c.nvrtc.version ? cuda_version(c.nvrtc.version) : std::string("none"))
              << (c.nvjitlink.found ? ", nvJitLink" : "") << '\n';
    if (c.available && !c.devices.empty())
        std::cout << fmt::format("device 0: {} (sm_{}{}, {} SMs, {:.1f} GiB)\n", c.devices[0].name,
                                 c.devices[0].cc_major, c.devices[0].cc_minor, c.devices[0].sm_count,
                                 static_cast<double>(c.devices[0].memory) / (1024.0 * 1024 * 1024));
    else std::cout << "CUDA not usable: " << c.reason << '\n';
    const RuntimeOptions& o = s.runtime_options();
    std::cout << fmt::format("fast math: {}; tiered compile: {}; disk cache: {}\n", o.fast_math ? "on" : "off",
                             o.tiered_compile ? "on" : "off",
                             o.disk_cache ? (o.cache_dir.empty() ? "default directory" : o.cache_dir) : "off");
}

void show_cache(Session& s) {
    const CacheStats st = s.runtime().stats();
    std::cout << fmt::format(
        "backend {}: {} hits, {} misses, {} programs held, {} compiles ({:.1f} ms), {} modules from disk\n",
        backend_text(s), st.hits, st.misses, st.entries, st.compiles, st.compile_ms, st.disk_hits);
}

// Cuts `text` to at most `width` columns (ASCII), ending in "..." when cut.
std::string fit(std::string text, std::size_t width) {
    if (text.size() <= width) return text;
    text.resize(width - 3);
    return text + "...";
}

// Every line within 80 columns. Under auto before a statement was placed on the GPU, the banner
// says "auto" and what starts CUDA (asking would start it); where auto fell back to the CPU, the
// reason CUDA is not used is on a line of its own, cut short (:info has all of it).
std::string banner_lines(const Session& s) {
    std::string b =
        fit(fmt::format("jitexpr {} on {}. Type :help for help, Ctrl-D to leave.", JITEXPR_VERSION, backend_text(s)),
            80) +
        "\n";
    if (!s.started_backend()) b += fit(std::string(kWhenCudaStarts) + " (:info looks for it)", 80) + "\n";
    if (s.started_backend() == Backend::Cpu && s.runtime().options().backend == Backend::Auto) {
        std::string why = s.runtime().fallback_reason();
        if (!why.empty()) {
            // The reason's first clause: "no CUDA driver (libcuda.so.1 not found)" is kept whole when it fits.
            const std::string tail = " (:info)";
            b += fit("no CUDA: " + why, 80 - tail.size()) + tail + "\n";
        }
    }
    return b;
}

void banner(const Session& s) { std::cout << banner_lines(s); }

// Runs a command line (":..."); returns false for :quit.
bool run_command(Session& s, const std::string& line, const ExplainOptions& explain_options) {
    const auto sp = line.find_first_of(" \t");
    const std::string cmd = line.substr(0, sp);
    const std::string arg = sp == std::string::npos ? std::string() : trim(line.substr(sp));
    if (cmd == ":quit" || cmd == ":q" || cmd == ":exit") return false;
    if (cmd == ":help" || cmd == ":h") {
        std::cout << help_text();
    } else if (cmd == ":vars") {
        show_vars(s);
    } else if (cmd == ":source") {
        if (arg.empty()) throw ArgumentError(":source needs a statement, e.g. :source c = a * 2 + b");
        const std::string src = s.runtime().source(arg, s.env());
        if (src.empty())
            std::cout << "(no generated source: the " << backend_text(s)
                      << " backend evaluates the program directly)\n";
        else std::cout << src << '\n';
    } else if (cmd == ":explain") {
        if (arg.empty()) throw ArgumentError(":explain needs a statement, e.g. :explain c = a * 2 + b");
        std::cout << s.explain(arg, explain_options);
    } else if (cmd == ":time") {
        if (arg.empty()) throw ArgumentError(":time needs a statement, e.g. :time c = a * 2 + b");
        Timing t;
        const auto t0 = std::chrono::steady_clock::now();
        s.run(arg, print_value, &t);
        const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        show_timing(t, total, s.started_backend().value_or(Backend::Cpu));
    } else if (cmd == ":cache") {
        show_cache(s);
    } else if (cmd == ":info") {
        show_info(s);
    } else if (cmd == ":threads") {
        if (!arg.empty()) {
            std::size_t used = 0;
            long long n = -1;
            try {
                n = std::stoll(arg, &used);
            } catch (const std::exception&) {}
            if (used != arg.size() || n < 0 || arg[0] == '+')
                throw ArgumentError(
                    fmt::format(":threads takes a whole number of threads (0: every core), not '{}'", arg));
            s.set_threads(static_cast<int>(std::min<long long>(n, 1024)));
        }
        std::cout << cpu_threads(s) << " CPU thread" << (cpu_threads(s) == 1 ? "" : "s")
                  << (s.started_backend() == Backend::Cuda ? " (the CPU backend's; this session runs on cuda)" : "")
                  << '\n';
    } else if (cmd == ":backend") {
        if (arg.empty()) {
            if (s.started_backend()) std::cout << backend_text(s) << '\n';
            else std::cout << "auto, not started (" << kWhenCudaStarts << ")\n";
        } else if (arg == "cpu" || arg == "cuda") {
            s.set_backend(arg == "cpu" ? Backend::Cpu : Backend::Cuda);
            std::cout << "backend " << backend_name(s.backend()) << '\n';
        } else {
            throw ArgumentError(fmt::format(":backend takes cpu or cuda, not '{}'", arg));
        }
    } else {
        throw ArgumentError(fmt::format("unknown command '{}' (:help lists the commands)", cmd));
    }
    return true;
}

void report(const std::exception& e) { std::cerr << e.what() << '\n' << std::flush; }

}  // namespace

bool repl_has_readline() { return JITEXPR_HAVE_READLINE != 0; }

std::string banner_text(const Session& session) { return banner_lines(session); }

std::string history_path() {
    // A relative XDG_STATE_HOME is ignored (the XDG base directory rule, as for the disk cache's
    // XDG_CACHE_HOME): it would put the history wherever the REPL was started.
    if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x == '/') return std::string(x) + "/jitexpr/history";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.jitexpr_history";
    return {};
}

std::vector<std::string> completions(const Session& session, const std::string& line_before_word,
                                     const std::string& prefix) {
    std::set<std::string> out;
    auto add = [&](std::string_view name) {
        if (name.substr(0, prefix.size()) == prefix) out.insert(std::string(name));
    };
    const std::string head = trim(line_before_word);
    if (head.empty() && !prefix.empty() && prefix[0] == ':') {
        for (const auto& c : command_names()) add(c);
        return {out.begin(), out.end()};
    }
    if (head == ":backend") {
        add("cpu");
        add("cuda");
        return {out.begin(), out.end()};
    }
    for (const auto& [name, value] : session.env()) add(name);
    for (const auto& info : functions())
        for (const auto& n : info.names) add(n);
    for (const auto& c : constructor_names()) add(c);
    for (int t = 0; t < kNumDTypes; ++t) add(dtype_name(static_cast<DType>(t)));
    for (const char* k : {"True", "False", "and", "or", "not", "dtype", "seed", "axis"}) add(k);
    return {out.begin(), out.end()};
}

int run_repl(Session& session, const CliOptions& options, ProgressLine& progress) {
    ExplainOptions explain_options;
    if (options.bandwidth) explain_options.bandwidth_gbs = *options.bandwidth;
    LineReader reader(session);
    if (!options.quiet) banner(session);
    std::string pending;
    while (true) {
        ReadResult r = reader.read(pending.empty() ? ">>> " : "... ");
        if (r.kind == ReadResult::Kind::Interrupted) {
            pending.clear();
            continue;
        }
        if (r.kind == ReadResult::Kind::Eof) {
            if (!pending.empty()) {
                // Ctrl-D inside a statement of several lines drops it, visibly; Ctrl-D again leaves.
                pending.clear();
                std::cout << "\n(unfinished statement discarded; Ctrl-D again leaves)\n" << std::flush;
                continue;
            }
            std::cout << '\n';
            break;
        }
        const std::string line = r.line;
        const bool command = pending.empty() && !trim(line).empty() && trim(line)[0] == ':';
        if (!command) pending += pending.empty() ? line : "\n" + line;
        // One history entry per statement, all its lines together (Up recalls the whole of it).
        if (command) reader.remember(line);
        else if (!needs_more_input(pending) && !trim(pending).empty()) reader.remember(pending);
        if (!command && needs_more_input(pending)) continue;
        const std::string text = std::move(pending);
        pending.clear();
        clear_interrupt();  // a Ctrl-C from before this statement does not stop it
        try {
            RunningStatement running;
            ProgressStep step(progress);
            if (command) {
                if (!run_command(session, trim(line), explain_options)) break;
            } else {
                session.run(text, print_value);
            }
        } catch (const CancelledError& e) {
            std::cerr << interrupted_text(e) << '\n' << std::flush;
        } catch (const std::bad_alloc&) {
            std::cerr << "out of memory\n";
        } catch (const std::exception& e) {
            report(e);
        }
        std::cout << std::flush;
    }
    return kExitOk;
}

}  // namespace jit::cli

#include "cli.hpp"

#include "format.hpp"
#include "interrupt.hpp"
#include "precompile.hpp"
#include "progress.hpp"
#include "repl.hpp"
#include "session.hpp"

#include <jit/disk_cache.hpp>
#include <jit/error.hpp>
#include <jit/language.hpp>
#include <jit/npy.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <new>
#include <optional>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef JITEXPR_VERSION
#define JITEXPR_VERSION "unknown"
#endif

namespace jit::cli {
namespace {

bool is_identifier(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

Backend parse_backend(const std::string& v) {
    try {
        return settings::backend(v, "--backend");  // the same parser as JITEXPR_BACKEND
    } catch (const ArgumentError& e) {
        throw UsageError(e.what());
    }
}

int parse_device(const std::string& v) {
    try {
        return settings::device(v, "--device");  // the same parser as JITEXPR_DEVICE
    } catch (const ArgumentError& e) {
        throw UsageError(e.what());
    }
}

// SIGINT, SIGTERM and SIGHUP end the process as their default action does, after removing the
// temporary files of saves and cache stores in progress (async-signal-safe). SIGXFSZ is
// ignored: a write past `ulimit -f` fails with EFBIG and is reported as an error.
extern "C" void on_terminating_signal(int sig) {
    remove_temporary_files();
    ::signal(sig, SIG_DFL);
    ::raise(sig);  // delivered when the handler returns: the process ends by the signal
}

void install_signal_handlers() {
    ::signal(SIGXFSZ, SIG_IGN);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup: stays ignored
        struct sigaction sa {};
        sa.sa_handler = on_terminating_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        ::sigaction(sig, &sa, nullptr);
    }
}

}  // namespace

std::string read_input_file(const std::string& path, std::size_t limit) {
    const bool in = path == "-";
    const int fd = in ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IOError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    struct Closer {
        int fd;
        bool own;
        ~Closer() {
            if (own) ::close(fd);
        }
    } closer{fd, !in};
    const std::string name = in ? std::string("standard input") : path;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) throw IOError(fmt::format("{}: is a directory", name));
    std::string text;
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) <= limit)
        text.reserve(static_cast<std::size_t>(st.st_size));
    // Read into the string itself (the REPL and scripts run on small stacks: no buffer there).
    constexpr std::size_t kStep = std::size_t{1} << 16;
    std::size_t have = 0;
    while (true) {
        if (have > limit)
            throw IOError(fmt::format("{}: more than {} MiB, the most jitexpr reads as a script", name, limit >> 20));
        text.resize(have + kStep);
        const ssize_t r = ::read(fd, text.data() + have, kStep);
        if (r < 0) {
            if (errno == EINTR) continue;
            throw IOError(fmt::format("{}: cannot read: {}", name, std::strerror(errno)));
        }
        if (r == 0) break;
        have += static_cast<std::size_t>(r);
    }
    text.resize(have);
    return text;
}

namespace {

std::string read_script(const std::string& path) { return read_input_file(path); }

void print_value(const Array& a) { std::cout << format_array(a) << '\n' << std::flush; }

// Runs one program text; an error is reported with `origin` ("-e", the script's name).
struct OriginError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void run_text(Session& s, const std::string& text, const std::string& origin) {
    try {
        s.run(text, print_value);
    } catch (const InternalError&) {
        throw;
    } catch (const CancelledError&) {
        throw;
    } catch (const Error& e) {
        throw OriginError(fmt::format("{}: {}", origin, e.what()));
    }
}

int cache_command(const std::string& command, const std::string& dir) {
    if (command == "stats") {
        const DiskCacheReport r = disk_cache_stats(dir);
        if (!r.enabled) {
            std::cout << "disk cache disabled: " << r.disabled_reason << '\n';
            return kExitOk;
        }
        std::cout << fmt::format("directory: {}\nentries: {}\nbytes: {}\n", r.directory, r.entries, r.bytes);
        return kExitOk;
    }
    const DiskCacheReport r = command == "clear" ? clear_disk_cache(dir) : verify_disk_cache(dir);
    if (!r.enabled) {
        std::cout << "disk cache disabled: " << r.disabled_reason << '\n';
        return kExitError;
    }
    if (command == "clear") {
        // Only files jitexpr wrote go; anything else found in the cache is named and kept.
        for (const auto& l : r.left) std::cout << "left " << printable(l) << '\n';
        for (const auto& l : r.failed) std::cout << "left " << printable(l) << '\n';
        std::cout << fmt::format("removed {} entries from {}", r.removed, printable(r.directory));
        if (r.old_format_removed)
            std::cout << fmt::format(", and {} files of earlier formats (v1, v2)", r.old_format_removed);
        if (!r.left.empty()) std::cout << fmt::format("; left {} files that are not jitexpr's", r.left.size());
        if (!r.failed.empty()) std::cout << fmt::format("; {} entries could not be removed", r.failed.size());
        std::cout << '\n';
        return r.failed.empty() ? kExitOk : kExitError;
    }
    // verify
    for (const auto& p : r.problems) std::cout << "removed " << printable(p) << '\n';
    for (const auto& l : r.left) std::cout << "left " << printable(l) << '\n';
    for (const auto& l : r.failed) std::cout << "left " << printable(l) << '\n';
    std::cout << fmt::format("checked {} entries in {}: {} valid, {} removed", r.checked, printable(r.directory),
                             r.valid, r.removed);
    if (!r.left.empty()) std::cout << fmt::format(", {} left in place (not jitexpr's)", r.left.size());
    if (!r.failed.empty()) std::cout << fmt::format(", {} damaged and not removable", r.failed.size());
    std::cout << '\n';
    return r.failed.empty() ? kExitOk : kExitError;
}

// What -v says once each: why auto uses the CPU backend (once the runtime has looked for CUDA)
// and the CPU backend's setup note (once it exists).
struct VerboseNotes {
    bool fallback_said = false, note_said = false;
    void say(const Session& session, const RuntimeOptions& ro) {
        const std::optional<Backend> b = session.started_backend();
        if (!fallback_said && b && *b == Backend::Cpu && ro.backend == Backend::Auto) {
            fallback_said = true;
            const std::string why = session.runtime().fallback_reason();
            if (!why.empty()) std::cerr << "jitexpr: using the CPU backend: " << why << '\n';
        }
        if (!note_said) {
            const std::string note = session.runtime().setup_note();
            if (!note.empty()) {
                note_said = true;
                std::cerr << "jitexpr: " << note << '\n';
            }
        }
    }
};

int run_mode(const CliOptions& o) {
    const RuntimeOptions ro = runtime_options(o);
    // From here on Ctrl-C stops what runs (the session's token) instead of killing the process.
    InterruptScope interrupt;
    clear_interrupt();
    ProgressLine progress(o.quiet      ? ProgressLine::Mode::Off
                          : o.progress ? ProgressLine::Mode::On
                                       : ProgressLine::Mode::Auto);
    Session session(ro);
    CallOptions call;
    call.cancel = interrupt_token();
    if (progress.enabled()) call.progress = [&progress](const Progress& p) { progress.update(p); };
    session.set_call_options(call);
    // Under backend=auto the runtime starts CUDA only for a statement placed on the GPU, so what
    // -v says of the backend is said when it is known: after the statement that started it (or
    // made the CPU backend), and each statement's placement when it has one.
    VerboseNotes notes;
    if (o.verbose) notes.say(session, ro);
    if (o.time || o.verbose) {
        session.set_time_report([&session, &notes, &o, &ro](const StatementTime& t) {
            const Backend b = session.started_backend().value_or(Backend::Cpu);
            if (o.verbose) notes.say(session, ro);
            if (o.time) std::cerr << "jitexpr: " << time_text(t, b) << '\n';
            else if (!t.timing.placement.empty())
                std::cerr << fmt::format("jitexpr: line {}: {}\n", t.line, t.timing.placement);
        });
    }
    for (const NameFile& l : o.loads) {
        ProgressStep step(progress);
        session.env().insert_or_assign(l.name, Arg(load_npy(l.file, Backend::Cpu, call)));
    }

    const bool interactive = o.exprs.empty() && !o.script && ::isatty(STDIN_FILENO);
    if (interactive) {
        int rc = run_repl(session, o, progress);
        if (rc != kExitOk) return rc;
    } else {
        RunningStatement running;
        for (const std::string& e : o.exprs) {
            ProgressStep step(progress);
            run_text(session, e, "-e");
        }
        if (o.script || o.exprs.empty()) {
            const std::string path = o.script.value_or("-");
            const std::string text = read_script(path);
            if (interrupted()) throw CancelledError();  // a read cut short by Ctrl-C is not the script
            ProgressStep step(progress);
            run_text(session, text, path == "-" ? "<stdin>" : path);
        }
        if (interrupted()) throw CancelledError();  // a Ctrl-C after the last safe point still saves nothing
    }

    // Saves happen only when every statement ran; check every name before writing anything.
    std::vector<Array> values;
    for (const NameFile& s : o.saves) {
        auto v = session.variable(s.name);
        if (!v) throw ArgumentError(fmt::format("--save {}={}: no variable named '{}'", s.name, s.file, s.name));
        values.push_back(*v);
    }
    RunningStatement saving;
    for (std::size_t i = 0; i < o.saves.size(); ++i) {
        ProgressStep step(progress);
        save_npy(o.saves[i].file, values[i], call);
    }
    return kExitOk;
}

// `jitexpr explain`: the session's --loads and -e statements run, then the program is explained.
int explain_mode(const CliOptions& o) {
    const RuntimeOptions ro = runtime_options(o);
    InterruptScope interrupt;
    clear_interrupt();
    Session session(ro);
    CallOptions call;
    call.cancel = interrupt_token();
    session.set_call_options(call);
    for (const NameFile& l : o.loads) session.env().insert_or_assign(l.name, Arg(load_npy(l.file, Backend::Cpu, call)));
    for (const std::string& e : o.exprs) run_text(session, e, "-e");
    ExplainOptions xo;
    if (o.bandwidth) xo.bandwidth_gbs = *o.bandwidth;
    std::string text;
    try {
        text = session.explain(*o.script, xo);
    } catch (const InternalError&) {
        throw;
    } catch (const Error& e) {
        throw OriginError(fmt::format("explain: {}", e.what()));
    }
    std::cout << text << std::flush;
    return kExitOk;
}

}  // namespace

NameFile parse_name_file(const std::string& value, const std::string& option) {
    const auto eq = value.find('=');
    if (eq == std::string::npos) throw UsageError(fmt::format("{} takes NAME=FILE.npy, not '{}'", option, value));
    NameFile nf{value.substr(0, eq), value.substr(eq + 1)};
    // A name no statement could read or assign (a keyword, a name too long) is refused here.
    if (!is_variable_name(nf.name)) {
        const bool word = is_identifier(nf.name) && nf.name.size() <= kMaxIdentifierBytes;
        throw UsageError(fmt::format("{} {}: '{}' is {}", option, printable(value), printable(nf.name),
                                     word ? "a keyword, not a variable name" : "not a variable name"));
    }
    if (nf.file.empty()) throw UsageError(fmt::format("{} {}: the file name is empty", option, value));
    return nf;
}

namespace {

// ---- the option table: parsing, --help, the man page and docs/cli.md come from it

// Checks shared by an option and the JITEXPR_* variable it stands for.
int threads_value(const std::string& v, const std::string& source) {
    std::size_t used = 0;
    long long n = -1;
    try {
        n = std::stoll(v, &used);
    } catch (const std::exception&) {}
    if (v.empty() || used != v.size() || n < 0 || v[0] == '+')
        throw UsageError(fmt::format("{} takes a whole number of threads (0: every core), not '{}'", source, v));
    return static_cast<int>(std::min<long long>(n, 1024));
}

std::string one_of(const std::string& v, const std::string& source, std::initializer_list<const char*> allowed) {
    std::string list;
    for (const char* a : allowed) {
        if (v == a) return v;
        list += (list.empty() ? "" : ", ") + std::string(a);
    }
    throw UsageError(fmt::format("{} takes {}, not '{}'", source, list, v));
}

bool on_off(const std::string& v, const std::string& source) {
    if (v == "on" || v == "1") return true;
    if (v == "off" || v == "0") return false;
    throw UsageError(fmt::format("{} takes on or off, not '{}'", source, v));
}

std::size_t device_memory_value(const std::string& v) {
    try {
        return settings::bytes(v, "--device-memory");
    } catch (const ArgumentError& e) {
        throw UsageError(e.what());
    }
}

double bandwidth_value(const std::string& v) {
    std::size_t used = 0;
    double g = 0;
    try {
        g = std::stod(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (v.empty() || used != v.size() || !(g > 0) || !std::isfinite(g))
        throw UsageError(fmt::format("--bandwidth takes a positive number of GB/s, such as 20 or 3350, not '{}'", v));
    return g;
}

struct Spec {
    std::vector<std::string> names;  // "-t", "--threads"
    std::string arg;                 // "N", or empty for a switch
    std::string env;
    std::string help;
    std::function<void(CliOptions&, const std::string& value)> apply;
};

const std::vector<Spec>& specs() {
    static const std::vector<Spec> table{
        {{"--backend"},
         "B",
         "JITEXPR_BACKEND",
         "cpu, cuda or auto (CUDA when a driver and a device are present, else the CPU). --backend cuda on a machine "
         "without CUDA is an error.",
         [](CliOptions& o, const std::string& v) { o.backend = parse_backend(v); }},
        {{"--device"},
         "N",
         "JITEXPR_DEVICE",
         "The CUDA device to evaluate on, by ordinal (0: the first GPU, as nvidia-smi numbers them unless "
         "CUDA_VISIBLE_DEVICES says otherwise). A device the machine lacks is an error; so is a device other than 0 "
         "with --backend cpu, or when CUDA is not available.",
         [](CliOptions& o, const std::string& v) { o.device = parse_device(v); }},
        {{"-t", "--threads"},
         "N",
         "JITEXPR_THREADS",
         "CPU threads of the CPU backend, the calling one included (0: every core; more than 1024 counts as 1024).",
         [](CliOptions& o, const std::string& v) { o.threads = threads_value(v, "--threads"); }},
        {{"--load"},
         "NAME=FILE",
         "",
         "Binds NAME to the array in FILE (.npy) before any statement runs. Repeatable.",
         [](CliOptions& o, const std::string& v) { o.loads.push_back(parse_name_file(v, "--load")); }},
        {{"-e"},
         "STATEMENTS",
         "",
         "Statements to run (';' or newlines between them). Repeatable; also written -eSTATEMENTS.",
         [](CliOptions& o, const std::string& v) { o.exprs.push_back(v); }},
        {{"--save"},
         "NAME=FILE",
         "",
         "After every statement ran, writes variable NAME to FILE (.npy). Repeatable. Nothing is saved when a "
         "statement failed or Ctrl-C stopped the run.",
         [](CliOptions& o, const std::string& v) { o.saves.push_back(parse_name_file(v, "--save")); }},
        {{"--time"},
         "",
         "",
         "After each statement, prints on standard error where its time went: parse, check, emit, compile (or the "
         "cache hit), load, run, and printing its value (the copy to the host included).",
         [](CliOptions& o, const std::string&) { o.time = true; }},
        {{"--progress"},
         "",
         "",
         "Shows the progress line of long statements, loads, saves and compiles even when standard error is not a "
         "terminal (as whole lines, at most one a second).",
         [](CliOptions& o, const std::string&) { o.progress = true; }},
        {{"-q", "--quiet"},
         "",
         "",
         "No progress line and no start-up banner.",
         [](CliOptions& o, const std::string&) { o.quiet = true; }},
        {{"--cache-dir"},
         "DIR",
         "JITEXPR_CACHE_DIR",
         "The disk cache of compiled kernels (default: $XDG_CACHE_HOME/jitexpr, else ~/.cache/jitexpr).",
         [](CliOptions& o, const std::string& v) {
             if (v.empty()) throw UsageError("--cache-dir takes a directory, not an empty name");
             o.cache_dir = v;
         }},
        {{"--no-disk-cache"},
         "",
         "JITEXPR_DISK_CACHE=0",
         "Keeps compiled kernels in memory only.",
         [](CliOptions& o, const std::string&) { o.no_disk_cache = true; }},
        {{"--fast-math"},
         "",
         "JITEXPR_FAST_MATH=1",
         "Faster, less exact math: -use_fast_math on CUDA, relaxed math on the CPU.",
         [](CliOptions& o, const std::string&) { o.fast_math = true; }},
        {{"--tiered"},
         "on|off",
         "JITEXPR_TIERED",
         "CUDA: start new programs on quickly compiled first-tier kernels while the final ones compile in the "
         "background (on by default).",
         [](CliOptions& o, const std::string& v) { o.tiered = on_off(v, "--tiered"); }},
        {{"--nvrtc-options"},
         "OPTIONS",
         "JITEXPR_NVRTC_OPTIONS",
         "More NVRTC options for every kernel, separated by spaces (e.g. \"--Ofast-compile=max\").",
         [](CliOptions& o, const std::string& v) {
             try {
                 settings::nvrtc_options(v, "--nvrtc-options");  // JITEXPR_NVRTC_OPTIONS's parser: the same refusals
             } catch (const ArgumentError& e) {
                 throw UsageError(e.what());
             }
             o.nvrtc_options = v;
         }},
        {{"--show-kernels"},
         "",
         "JITEXPR_SHOW_KERNELS=1",
         "Prints the CUDA source of every kernel generated, on standard error.",
         [](CliOptions& o, const std::string&) { o.show_kernels = true; }},
        {{"--staging"},
         "MODE",
         "JITEXPR_STAGING",
         "How large copies of pageable host memory reach the device: staged (pinned buffers, the default), "
         "direct (the driver's path) or register (page-locking the caller's memory).",
         [](CliOptions& o, const std::string& v) {
             o.staging = one_of(v, "--staging", {"staged", "direct", "register"});
         }},
        {{"--device-memory"},
         "SIZE",
         "JITEXPR_DEVICE_MEMORY",
         "CUDA, host data: the most device memory one streamed evaluation may use (e.g. 4GiB; 0: 80% of what is "
         "free). Larger inputs stream through it in chunks.",
         [](CliOptions& o, const std::string& v) { o.device_memory = device_memory_value(v); }},
        {{"--bandwidth"},
         "GBS",
         "",
         "explain and :explain: time each stage's bytes at GBS GB/s instead of the backend's own figure (CUDA: a "
         "device-to-device copy measured when asked; the CPU: its own throughput, measured once per machine).",
         [](CliOptions& o, const std::string& v) { o.bandwidth = bandwidth_value(v); }},
        {{"--cpu-kernels"},
         "KIND",
         "JITEXPR_CPU_KERNELS",
         "The CPU backend's block kernels: auto (AVX2 where the processor has it) or base (portable).",
         [](CliOptions& o, const std::string& v) {
             o.cpu_kernels = one_of(v, "--cpu-kernels", {"auto", "base"});
         }},
        {{"-v", "--verbose"},
         "",
         "",
         "Says on standard error where each statement over host data ran and why (under auto, CUDA starts "
         "only for one placed on the GPU), when auto falls back to the CPU because CUDA is not available, "
         "and why, and when the CPU backend runs on fewer threads than asked because the system could not "
         "start one.",
         [](CliOptions& o, const std::string&) { o.verbose = true; }},
        {{"-h", "--help"},
         "",
         "",
         "This text.",
         [](CliOptions& o, const std::string&) { o.mode = CliOptions::Mode::Help; }},
        {{"--version"},
         "",
         "",
         "The version, the CUDA driver and toolkit found (and the device), and the line editor.",
         [](CliOptions& o, const std::string&) { o.mode = CliOptions::Mode::Version; }},
    };
    return table;
}

std::string flags_of(const Spec& sp) {
    std::string f;
    for (const auto& n : sp.names) f += (f.empty() ? "" : ", ") + n;
    if (!sp.arg.empty()) f += " " + sp.arg;
    return f;
}

// Words of `text` wrapped at `width` columns; lines after the first are indented by `indent`;
// the first line starts at column `first_used`.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent, std::size_t first_used) {
    std::string out, line;
    std::size_t used = first_used;
    std::istringstream words(text);
    for (std::string w; words >> w;) {
        if (!line.empty() && used + 1 + w.size() > width) {
            out += line + "\n" + std::string(indent, ' ');
            line.clear();
            used = indent;
        }
        if (!line.empty()) {
            line += ' ';
            ++used;
        }
        line += w;
        used += w.size();
    }
    return out + line;
}

const char* const kSynopsis[] = {
    "jitexpr [OPTION]... [-e STATEMENTS]... [SCRIPT | -]",
    "jitexpr explain [OPTION]... [-e STATEMENTS]... PROGRAM",
    "jitexpr cache stats|clear|verify [--cache-dir DIR]",
    "jitexpr precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math]",
    "jitexpr --help | --version",
};

const char* const kDescription =
    "Evaluates array statements such as \"c = a * 2 + b\" on the GPU (CUDA) or the CPU. With no -e and no SCRIPT, "
    "reads statements interactively when standard input is a terminal, else from standard input. --loads happen "
    "first, then every -e in order, then the script, then every --save. Options override the JITEXPR_* variables "
    "named with them. \"jitexpr explain PROGRAM\" runs the --loads and every -e, then prints what PROGRAM becomes "
    "over those variables without running it: its names, dtypes and shapes, its stages and kernels, the bytes each "
    "moves and the time that takes, the cache state of each kernel, and where host data would run.";

const char* const kInterrupt =
    "Ctrl-C stops a running statement at its next safe point (between blocks on the CPU, between kernels on CUDA, "
    "between chunks of a file): a statement making a new array binds nothing; one writing in place into an "
    "existing array finishes or is named as possibly partly written. The REPL goes on; otherwise jitexpr exits with "
    "status 130 and writes none of its --save files. A second Ctrl-C says it is still stopping, a third quits at once.";

const char* const kExit =
    "0 success; 1 an error in a statement, a file or the device; 2 bad usage; 130 stopped by Ctrl-C.";

const char* const kConstructors =
    "Array constructors: arange(stop), arange(start, stop[, step]), linspace(a, b, n), zeros(shape), ones(shape), "
    "full(shape, value), rand(shape, seed=0), randn(shape, seed=0) (shape: 3, (3, 4) or 3, 4; optional "
    "dtype=float32), load(\"x.npy\"), save(x, \"x.npy\"). A statement without \"name =\" prints its value.";

const char* const kScript = "A file of statements, run after every -e; '-' is standard input.";

std::string roff_escape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else if ((c == '.' || c == '\'') && (i == 0 || s[i - 1] == '\n')) out += "\\&" + std::string(1, c);
        else out += c;
    }
    return out;
}

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

}  // namespace

const std::vector<OptionDoc>& option_docs() {
    static const std::vector<OptionDoc> docs = [] {
        std::vector<OptionDoc> d;
        for (const Spec& sp : specs()) d.push_back({flags_of(sp), sp.env, sp.help});
        return d;
    }();
    return docs;
}

const std::vector<CommandDoc>& repl_command_docs() {
    static const std::vector<CommandDoc> c{
        {":help", "The statements, constructors and commands."},
        {":vars", "Every variable: name, dtype, shape, backend, bytes."},
        {":source STMT", "The CUDA source generated for STMT with the current variables (none on the CPU backend)."},
        {":explain STMT",
         "What STMT becomes with the current variables, without running it: names, dtypes and shapes, "
         "stages and kernels, bytes and time, cache states (as jitexpr explain)."},
        {":time STMT", "Runs STMT and prints the time of each stage and whether the caches hit."},
        {":cache", "The runtime's cache statistics."},
        {":backend [B]",
         "The backend in use; with cpu or cuda, switches (variables stay in host memory: cuda streams them through the "
         "GPU)."},
        {":threads [N]", "The CPU backend's thread count; with N, a new runtime with N threads (0: every core)."},
        {":info",
         "Version, backend, threads, the CUDA driver, toolkit and device, or the full reason CUDA is not used."},
        {":quit", "Leaves (also :q, :exit, and Ctrl-D on an empty line)."},
    };
    return c;
}

CliOptions parse_args(const std::vector<std::string>& args) {
    CliOptions o;
    if (!args.empty() && args[0] == "cache") {
        // jitexpr cache CMD [--cache-dir DIR]: the folder as precompile takes it.
        std::size_t n = args.size();
        if (n == 4 && args[2] == "--cache-dir") {
            if (args[3].empty()) throw UsageError("--cache-dir: the folder is empty");
            o.cache_dir = args[3];
            n = 2;
        } else if (n == 3 && args[2].rfind("--cache-dir=", 0) == 0) {
            o.cache_dir = args[2].substr(12);
            if (o.cache_dir->empty()) throw UsageError("--cache-dir: the folder is empty");
            n = 2;
        }
        if (n != 2) throw UsageError("use: jitexpr cache stats|clear|verify [--cache-dir DIR]");
        if (args[1] != "stats" && args[1] != "clear" && args[1] != "verify")
            throw UsageError(fmt::format("unknown cache command '{}' (use stats, clear or verify)", args[1]));
        o.mode = CliOptions::Mode::Cache;
        o.cache_command = args[1];
        return o;
    }
    if (!args.empty() && args[0] == "precompile") {
        o.mode = CliOptions::Mode::Precompile;
        for (std::size_t i = 1; i < args.size(); ++i) {
            const std::string& a = args[i];
            auto value = [&](const std::string& name) -> std::string {
                if (a.size() > name.size() + 1 && a.compare(0, name.size() + 1, name + "=") == 0)
                    return a.substr(name.size() + 1);
                if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", name));
                return args[++i];
            };
            if (a == "--arch" || a.rfind("--arch=", 0) == 0) o.precompile_arch = value("--arch");
            else if (a == "--cache-dir" || a.rfind("--cache-dir=", 0) == 0)
                o.precompile_cache_dir = value("--cache-dir");
            else if (a == "--fast-math") o.precompile_fast_math = true;
            else if (!a.empty() && a[0] == '-') throw UsageError(fmt::format("unknown precompile option '{}'", a));
            else if (!o.precompile_file.empty())
                throw UsageError(fmt::format("more than one file given ('{}' and '{}')", o.precompile_file, a));
            else o.precompile_file = a;
        }
        if (o.precompile_file.empty())
            throw UsageError("use: jitexpr precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math]");
        return o;
    }
    bool options_done = false;
    std::size_t first = 0;
    if (!args.empty() && args[0] == "explain") {
        o.mode = CliOptions::Mode::Explain;
        first = 1;
    }
    for (std::size_t i = first; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (options_done || a == "-" || a.empty() || a[0] != '-') {
            if (o.script) throw UsageError(fmt::format("more than one script given ('{}' and '{}')", *o.script, a));
            o.script = a;
            continue;
        }
        if (a == "--") {
            options_done = true;
            continue;
        }
        // "--opt VALUE", "--opt=VALUE", and for -e also "-eVALUE"; switches take no value.
        const Spec* found = nullptr;
        std::string value;
        bool inline_value = false;
        for (const Spec& sp : specs()) {
            for (const std::string& n : sp.names) {
                if (a == n) {
                    found = &sp;
                } else if (!sp.arg.empty() && a.size() > n.size() && a.compare(0, n.size(), n) == 0 &&
                           (a[n.size()] == '=' || n == "-e")) {
                    found = &sp;
                    inline_value = true;
                    value = a.substr(n.size() + (a[n.size()] == '=' ? 1 : 0));
                }
                if (found) break;
            }
            if (found) break;
        }
        if (!found) throw UsageError(fmt::format("unknown option '{}'", a));
        if (!found->arg.empty() && !inline_value) {
            if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", a));
            value = args[++i];
        }
        found->apply(o, value);
    }
    if (o.mode == CliOptions::Mode::Explain) {
        if (!o.script)
            throw UsageError("use: jitexpr explain [OPTION]... [-e STATEMENTS]... PROGRAM (the program in quotes)");
        if (!o.saves.empty())
            throw UsageError("explain runs nothing it explains, so it saves nothing: --save is not for explain");
    }
    return o;
}

RuntimeOptions runtime_options(const CliOptions& o) {
    // The backends read these two where they are used; the option sets them for this process.
    if (o.staging) ::setenv("JITEXPR_STAGING", o.staging->c_str(), 1);
    if (o.cpu_kernels) ::setenv("JITEXPR_CPU_KERNELS", o.cpu_kernels->c_str(), 1);
    RuntimeOptions ro = RuntimeOptions::from_environment();
    if (o.backend) ro.backend = *o.backend;
    if (o.threads) ro.cpu_threads = *o.threads;
    if (o.device) ro.device = *o.device;
    if (o.cache_dir) ro.cache_dir = *o.cache_dir;
    if (o.no_disk_cache) ro.disk_cache = false;
    if (o.fast_math) ro.fast_math = true;
    if (o.tiered) ro.tiered_compile = *o.tiered;
    if (o.show_kernels) ro.show_kernels = true;
    if (o.device_memory) ro.device_memory_limit = *o.device_memory;
    if (o.nvrtc_options) {
        ro.nvrtc_options.clear();
        std::istringstream words(*o.nvrtc_options);
        for (std::string w; words >> w;) ro.nvrtc_options.push_back(w);
    }
    return ro;
}

std::string usage_text() {
    std::string s = "usage: " + std::string(kSynopsis[0]) + "\n";
    for (std::size_t k = 1; k < std::size(kSynopsis); ++k) s += "       " + std::string(kSynopsis[k]) + "\n";
    s += "\n" + wrap(kDescription, 79, 0, 0) + "\n\n";
    constexpr std::size_t kCol = 24;
    auto row = [&](const std::string& flags, const std::string& help) {
        const std::string f = "  " + flags;
        if (f.size() + 2 > kCol) s += f + "\n" + std::string(kCol, ' ');
        else s += f + std::string(kCol - f.size(), ' ');
        s += wrap(help, 79, kCol, kCol) + "\n";
    };
    for (const Spec& sp : specs()) row(flags_of(sp), sp.help + (sp.env.empty() ? "" : " [" + sp.env + "]"));
    row("SCRIPT", kScript);
    s += "\n" + wrap(kConstructors, 79, 0, 0) + "\n";
    s += "\nInteractive commands:\n";
    for (const CommandDoc& c : repl_command_docs()) row(c.name, c.help);
    s += "\n" + wrap(kInterrupt, 79, 0, 0) + "\n\n";
    s += wrap(std::string("Exit status: ") + kExit, 79, 0, 0) + "\n";
    s += "See jitexpr(1) and docs/cli.md.\n";
    return s;
}

std::string man_page() {
    std::string m = ".TH JITEXPR 1 \"\" \"jitexpr " JITEXPR_VERSION "\" \"User Commands\"\n";
    m += ".SH NAME\njitexpr \\- evaluate array expressions, compiled at run time for the GPU or run on the CPU\n";
    m += ".SH SYNOPSIS\n";
    for (const char* syn : kSynopsis) m += ".B " + roff_escape(syn) + "\n.br\n";
    m += ".SH DESCRIPTION\n" + roff_escape(kDescription) + "\n";
    m += ".SH OPTIONS\n";
    for (const Spec& sp : specs()) {
        m += ".TP\n.B " + roff_escape(flags_of(sp)) + "\n" + roff_escape(sp.help) + "\n";
        if (!sp.env.empty()) m += "Overrides\n.BR " + roff_escape(sp.env) + " .\n";
    }
    m += ".TP\n.B SCRIPT\n" + roff_escape(kScript) + "\n";
    m += ".SH STATEMENTS\n" + roff_escape(kConstructors) + "\n";
    m += ".SH INTERACTIVE COMMANDS\n";
    for (const CommandDoc& c : repl_command_docs())
        m += ".TP\n.B " + roff_escape(c.name) + "\n" + roff_escape(c.help) + "\n";
    m += ".SH INTERRUPTING\n" + roff_escape(kInterrupt) + "\n";
    m += ".SH ENVIRONMENT\n";
    for (const Spec& sp : specs())
        if (!sp.env.empty())
            m += ".TP\n.B " + roff_escape(sp.env.substr(0, sp.env.find('='))) + "\nAs\n.BR " +
                 roff_escape(flags_of(sp)) + " .\n";
    m +=
        ".TP\n.B XDG_STATE_HOME, HOME\nThe REPL's history: $XDG_STATE_HOME/jitexpr/history, else ~/.jitexpr_history.\n";
    m += ".TP\n.B XDG_CACHE_HOME\nThe default disk cache: $XDG_CACHE_HOME/jitexpr, else ~/.cache/jitexpr.\n";
    m += ".SH EXIT STATUS\n" + roff_escape(kExit) + "\n";
    m += ".SH SEE ALSO\ndocs/cli.md, docs/language.md and docs/cache.md in the jitexpr sources.\n";
    return m;
}

std::string markdown_reference() {
    auto cell = [](const std::string& t) {
        std::string out;
        for (char c : t) out += c == '|' ? std::string("\\|") : std::string(1, c);
        return out;
    };
    std::string md = "| option | variable | meaning |\n|---|---|---|\n";
    for (const Spec& sp : specs())
        md += "| `" + cell(flags_of(sp)) + "` | " + (sp.env.empty() ? "" : "`" + sp.env + "`") + " | " + cell(sp.help) +
              " |\n";
    md += "| `SCRIPT` | | " + cell(kScript) + " |\n";
    md += "| `--` | | Ends the options: the next argument is the script even if it starts with `-`. |\n";
    md += "\n| command | does |\n|---|---|\n";
    for (const CommandDoc& c : repl_command_docs()) md += "| `" + cell(c.name) + "` | " + cell(c.help) + " |\n";
    return md;
}

std::string time_text(const StatementTime& t, Backend backend) {
    const Timing& x = t.timing;
    switch (t.kind) {
        case StatementTime::Kind::Constructor:
            return fmt::format(
                "line {}: made on the host (a constructor, nothing compiled) {:.3f} ms, print {:.3f} ms; total {:.3f} "
                "ms",
                t.line, t.total_ms - t.print_ms, t.print_ms, t.total_ms);
        case StatementTime::Kind::Load:
            return fmt::format("line {}: load (read and transfer) {:.3f} ms, print {:.3f} ms; total {:.3f} ms", t.line,
                               t.total_ms - t.print_ms, t.print_ms, t.total_ms);
        case StatementTime::Kind::Save:
            return fmt::format("line {}: save (evaluate, transfer and write) {:.3f} ms; total {:.3f} ms", t.line,
                               t.total_ms, t.total_ms);
        case StatementTime::Kind::Runtime: break;
    }
    std::string s = fmt::format(
        "line {}: parse {:.3f} ms, check {:.3f} ms, emit {:.3f} ms, compile {:.3f} ms, load {:.3f} ms, "
        "run {:.3f} ms, print {:.3f} ms; total {:.3f} ms; program cache {}",
        t.line, x.parse_ms, x.check_ms, x.emit_ms, x.compile_ms, x.load_ms, x.run_ms, t.print_ms, t.total_ms,
        x.cache_hit ? "hit" : "miss");
    // The CPU backend has no modules: only CUDA's module cache is worth a word.
    if (backend == Backend::Cuda && !x.cache_hit)
        s += fmt::format(", module cache {}", x.module_cache_hit ? "hit" : "miss");
    // Host data on a CUDA runtime: where it ran and why (the cost model, the streamed chunks).
    if (!x.placement.empty()) s += "; " + x.placement;
    return s;
}

std::string version_text() {
    const CudaInfo c = system_info().cuda;
    std::string s = fmt::format("jitexpr {}\n", JITEXPR_VERSION);
    s += "CUDA driver: " + (c.driver_version ? cuda_version(c.driver_version) : std::string("none")) + "\n";
    s += "CUDA toolkit (NVRTC): " +
         (c.nvrtc.found && c.nvrtc.version ? cuda_version(c.nvrtc.version) : std::string("none")) +
         (c.nvjitlink.found ? ", nvJitLink" : "") + "\n";
    if (c.available && !c.devices.empty())
        s += fmt::format("device 0: {} (sm_{}{}, {} SMs, {:.1f} GiB)\n", c.devices[0].name, c.devices[0].cc_major,
                         c.devices[0].cc_minor, c.devices[0].sm_count,
                         static_cast<double>(c.devices[0].memory) / (1024.0 * 1024 * 1024));
    else s += "CUDA not usable: " + c.reason + "\n";
    s += fmt::format("line editing: {}\n", repl_has_readline() ? "readline" : "basic");
    return s;
}

int main(int argc, char** argv) {
    install_signal_handlers();
    CliOptions o;
    try {
        o = parse_args(std::vector<std::string>(argv + 1, argv + argc));
        // Every JITEXPR_* variable is checked before anything runs: a bad one is bad usage.
        (void)RuntimeOptions::from_environment();
    } catch (const UsageError& e) {
        std::cerr << "jitexpr: " << e.what() << "\nTry 'jitexpr --help'.\n";
        return kExitUsage;
    } catch (const ArgumentError& e) {
        std::cerr << "jitexpr: " << e.what() << "\nSee docs/api.md (Settings) for the variables and their values.\n";
        return kExitUsage;
    }
    try {
        switch (o.mode) {
            case CliOptions::Mode::Help: std::cout << usage_text(); return kExitOk;
            case CliOptions::Mode::Version: std::cout << version_text(); return kExitOk;
            case CliOptions::Mode::Cache: return cache_command(o.cache_command, o.cache_dir.value_or(""));
            case CliOptions::Mode::Precompile: {
                PrecompileOptions po;
                po.file = o.precompile_file;
                po.arch = o.precompile_arch;
                po.cache_dir = o.precompile_cache_dir;
                po.fast_math = o.precompile_fast_math;
                return precompile_command(po);
            }
            case CliOptions::Mode::Run: return run_mode(o);
            case CliOptions::Mode::Explain: return explain_mode(o);
        }
    } catch (const CancelledError& e) {
        std::cerr << "jitexpr: " << interrupted_text(e) << (o.saves.empty() ? "" : "; nothing saved") << '\n';
        return kExitInterrupted;
    } catch (const OriginError& e) {
        std::cerr << "jitexpr: " << e.what() << '\n';
    } catch (const InternalError& e) {
        std::cerr << "jitexpr: internal error (a bug in jitexpr): " << e.what() << '\n';
    } catch (const Error& e) {
        std::cerr << "jitexpr: " << e.what() << '\n';
    } catch (const std::bad_alloc&) {
        std::cerr << "jitexpr: out of memory\n";
    } catch (const std::exception& e) {
        std::cerr << "jitexpr: internal error: " << e.what() << '\n';
    } catch (...) {
        std::cerr << "jitexpr: internal error: unknown exception\n";
    }
    return kExitError;
}

}  // namespace jit::cli

#include "cli.hpp"

#include "format.hpp"
#include "precompile.hpp"
#include "repl.hpp"
#include "session.hpp"

#include "backend/cache/cache.hpp"

#include <jit/error.hpp>
#include <jit/npy.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <sstream>

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
    if (v == "cpu") return Backend::Cpu;
    if (v == "cuda") return Backend::Cuda;
    if (v == "auto") return Backend::Auto;
    throw UsageError(fmt::format("--backend takes cpu, cuda or auto, not '{}'", v));
}

std::string read_stream(std::istream& in) {
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_script(const std::string& path) {
    if (path == "-") return read_stream(std::cin);
    std::ifstream f(path, std::ios::binary);
    if (!f) throw IOError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    std::string text = read_stream(f);
    if (f.bad()) throw IOError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    return text;
}

void print_value(const Array& a) {
    std::cout << format_array(a) << '\n' << std::flush;
}

// Runs one program text; an error is reported with `origin` ("-e", the script's name).
struct OriginError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void run_text(Session& s, const std::string& text, const std::string& origin) {
    try {
        s.run(text, print_value);
    } catch (const InternalError&) {
        throw;
    } catch (const Error& e) {
        throw OriginError(fmt::format("{}: {}", origin, e.what()));
    }
}

int cache_command(const std::string& command) {
    cache::DiskCache disk;
    if (!disk.enabled()) {
        std::cout << "disk cache disabled: " << disk.disabled_reason() << '\n';
        return command == "stats" ? kExitOk : kExitError;
    }
    if (command == "stats") {
        const cache::DiskStats st = disk.stats();
        std::cout << fmt::format("directory: {}\nentries: {}\nbytes: {}\n", disk.directory(), st.entries, st.bytes);
        return kExitOk;
    }
    if (command == "clear") {
        const auto before = disk.stats().entries;
        disk.clear();
        std::cout << fmt::format("removed {} entries from {}\n", before, disk.directory());
        return kExitOk;
    }
    // verify
    const cache::VerifyReport r = disk.verify();
    for (const auto& p : r.problems) std::cout << "removed " << p << '\n';
    std::cout << fmt::format("checked {} entries in {}: {} valid, {} removed\n", r.checked, disk.directory(), r.valid,
                             r.removed);
    return kExitOk;
}

int run_mode(const CliOptions& o) {
    RuntimeOptions ro = RuntimeOptions::from_environment();
    if (o.backend) ro.backend = *o.backend;
    Session session(ro);
    if (o.verbose && session.backend() == Backend::Cpu && ro.backend == Backend::Auto) {
        const std::string why = session.runtime().fallback_reason();
        if (!why.empty()) std::cerr << "jitexpr: using the CPU backend: " << why << '\n';
    }
    for (const NameFile& l : o.loads)
        session.env().insert_or_assign(l.name, Arg(load_npy(l.file, session.backend())));

    const bool interactive = o.exprs.empty() && !o.script && ::isatty(STDIN_FILENO);
    if (interactive) {
        int rc = run_repl(session, o);
        if (rc != kExitOk) return rc;
    } else {
        for (const std::string& e : o.exprs) run_text(session, e, "-e");
        if (o.script || o.exprs.empty()) {
            const std::string path = o.script.value_or("-");
            run_text(session, read_script(path), path == "-" ? "<stdin>" : path);
        }
    }

    // Saves happen only when every statement ran; check every name before writing anything.
    std::vector<Array> values;
    for (const NameFile& s : o.saves) {
        auto v = session.variable(s.name);
        if (!v) throw ArgumentError(fmt::format("--save {}={}: no variable named '{}'", s.name, s.file, s.name));
        values.push_back(*v);
    }
    for (std::size_t i = 0; i < o.saves.size(); ++i) save_npy(o.saves[i].file, values[i]);
    return kExitOk;
}

}  // namespace

NameFile parse_name_file(const std::string& value, const std::string& option) {
    const auto eq = value.find('=');
    if (eq == std::string::npos)
        throw UsageError(fmt::format("{} takes NAME=FILE.npy, not '{}'", option, value));
    NameFile nf{value.substr(0, eq), value.substr(eq + 1)};
    if (!is_identifier(nf.name))
        throw UsageError(fmt::format("{} {}: '{}' is not a variable name", option, value, nf.name));
    if (nf.file.empty()) throw UsageError(fmt::format("{} {}: the file name is empty", option, value));
    return nf;
}

CliOptions parse_args(const std::vector<std::string>& args) {
    CliOptions o;
    if (!args.empty() && args[0] == "cache") {
        if (args.size() != 2) throw UsageError("use: jitexpr cache stats|clear|verify");
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
                if (a.size() > name.size() + 1 && a.compare(0, name.size() + 1, name + "=") == 0) return a.substr(name.size() + 1);
                if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", name));
                return args[++i];
            };
            if (a == "--arch" || a.rfind("--arch=", 0) == 0) o.precompile_arch = value("--arch");
            else if (a == "--cache-dir" || a.rfind("--cache-dir=", 0) == 0) o.precompile_cache_dir = value("--cache-dir");
            else if (a == "--fast-math") o.precompile_fast_math = true;
            else if (!a.empty() && a[0] == '-') throw UsageError(fmt::format("unknown precompile option '{}'", a));
            else if (!o.precompile_file.empty()) throw UsageError(fmt::format("more than one file given ('{}' and '{}')", o.precompile_file, a));
            else o.precompile_file = a;
        }
        if (o.precompile_file.empty())
            throw UsageError("use: jitexpr precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math]");
        return o;
    }
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        // The value of an option given as "--opt VALUE", "--opt=VALUE" or (for -e) "-eVALUE".
        auto value = [&](const std::string& name) -> std::string {
            if (a.size() > name.size() && a.compare(0, name.size(), name) == 0) {
                if (a[name.size()] == '=') return a.substr(name.size() + 1);
                if (name == "-e") return a.substr(2);
            }
            if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", name));
            return args[++i];
        };
        auto is = [&](const std::string& name) {
            return a == name || (a.size() > name.size() && a.compare(0, name.size(), name) == 0 &&
                                 (a[name.size()] == '=' || name == "-e"));
        };
        if (options_done || a == "-" || a.empty() || a[0] != '-') {
            if (o.script) throw UsageError(fmt::format("more than one script given ('{}' and '{}')", *o.script, a));
            o.script = a;
        } else if (a == "--") {
            options_done = true;
        } else if (a == "-h" || a == "--help") {
            o.mode = CliOptions::Mode::Help;
        } else if (a == "--version") {
            o.mode = CliOptions::Mode::Version;
        } else if (a == "-v" || a == "--verbose") {
            o.verbose = true;
        } else if (is("--backend")) {
            o.backend = parse_backend(value("--backend"));
        } else if (is("--load")) {
            o.loads.push_back(parse_name_file(value("--load"), "--load"));
        } else if (is("--save")) {
            o.saves.push_back(parse_name_file(value("--save"), "--save"));
        } else if (is("-e")) {
            o.exprs.push_back(value("-e"));
        } else {
            throw UsageError(fmt::format("unknown option '{}'", a));
        }
    }
    return o;
}

std::string usage_text() {
    return R"(usage: jitexpr [--backend cpu|cuda|auto] [--load NAME=FILE.npy]... [-e STATEMENTS]...
               [SCRIPT | -] [--save NAME=FILE.npy]...
       jitexpr cache stats|clear|verify
       jitexpr precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math]
       jitexpr --help | --version

Evaluates array statements such as "c = a * 2 + b" on the GPU (CUDA) or the CPU.
With no -e and no SCRIPT, reads statements interactively when standard input is a
terminal, else reads them from standard input.

  --backend B        cpu, cuda or auto (default: $JITEXPR_BACKEND, else auto:
                     CUDA when a driver and a device are present, else CPU)
  --load NAME=FILE   bind NAME to the array in FILE.npy before any statement
  -e STATEMENTS      run statements (';' or newlines between them); repeatable
  SCRIPT             a file of statements run after every -e; '-' is standard input
  --save NAME=FILE   after every statement ran, write NAME to FILE.npy
  -v, --verbose      say on standard error when auto falls back to the CPU
  -h, --help         this text
  --version          the version

Array constructors: arange(stop), arange(start, stop[, step]), linspace(a, b, n),
zeros(shape), ones(shape), full(shape, value), rand(shape, seed=0),
randn(shape, seed=0) (shape: 3, (3, 4) or 3, 4; optional dtype=float32),
load("x.npy"), save(x, "x.npy").
A statement without "name =" prints its value.

Exit status: 0 success, 1 error in a statement, a file or the device, 2 bad usage.
See docs/cli.md.
)";
}

std::string version_text() {
    return fmt::format("jitexpr {}\nline editing: {}\n", JITEXPR_VERSION, repl_has_readline() ? "readline" : "basic");
}

int main(int argc, char** argv) {
    CliOptions o;
    try {
        o = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError& e) {
        std::cerr << "jitexpr: " << e.what() << "\nTry 'jitexpr --help'.\n";
        return kExitUsage;
    }
    try {
        switch (o.mode) {
            case CliOptions::Mode::Help:
                std::cout << usage_text();
                return kExitOk;
            case CliOptions::Mode::Version:
                std::cout << version_text();
                return kExitOk;
            case CliOptions::Mode::Cache:
                return cache_command(o.cache_command);
            case CliOptions::Mode::Precompile: {
                PrecompileOptions po;
                po.file = o.precompile_file;
                po.arch = o.precompile_arch;
                po.cache_dir = o.precompile_cache_dir;
                po.fast_math = o.precompile_fast_math;
                return precompile_command(po);
            }
            case CliOptions::Mode::Run:
                return run_mode(o);
        }
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

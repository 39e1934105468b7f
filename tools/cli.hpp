// The jitexpr command line: argument parsing and the script mode (see docs/cli.md).
#pragma once

#include <jit/array.hpp>
#include <jit/runtime.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace jit::cli {

// Exit statuses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // user errors, I/O errors, CUDA and internal errors
inline constexpr int kExitUsage = 2;  // bad command line

// A command line that cannot be understood (exit status 2).
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct NameFile {
    std::string name;
    std::string file;
};

inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C (SIGINT): 128 + 2, as shells report it

struct CliOptions {
    enum class Mode { Run, Help, Version, Cache, Precompile, Explain } mode = Mode::Run;
    std::optional<Backend> backend;  // --backend (else RuntimeOptions::from_environment())
    bool verbose = false;            // -v
    // Runtime options over the environment's (each also a JITEXPR_* variable).
    std::optional<int> threads;                // --threads N
    std::optional<int> device;                 // --device N
    std::optional<std::string> cache_dir;      // --cache-dir DIR
    bool no_disk_cache = false;                // --no-disk-cache
    bool fast_math = false;                    // --fast-math
    std::optional<bool> tiered;                // --tiered on|off
    std::optional<std::string> nvrtc_options;  // --nvrtc-options OPTIONS
    bool show_kernels = false;                 // --show-kernels
    std::optional<std::string> staging;        // --staging MODE (sets JITEXPR_STAGING)
    std::optional<std::size_t> device_memory;  // --device-memory SIZE
    std::optional<std::string> cpu_kernels;    // --cpu-kernels KIND (sets JITEXPR_CPU_KERNELS)
    std::optional<double> bandwidth;           // --bandwidth GBS (explain, :explain)
    // What the CLI shows.
    bool time = false;                  // --time: where each statement's time went, on stderr
    bool quiet = false;                 // -q, --quiet: no progress line, no banner
    bool progress = false;              // --progress: a progress line even when stderr is not a terminal
    std::vector<NameFile> loads;        // --load NAME=FILE, in order
    std::vector<NameFile> saves;        // --save NAME=FILE, in order
    std::vector<std::string> exprs;     // -e STATEMENTS, in order
    std::optional<std::string> script;  // SCRIPT, or "-" for standard input; explain: the program
    std::string cache_command;          // stats | clear | verify
    // precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math] (see precompile.hpp)
    std::string precompile_file;
    std::optional<std::string> precompile_arch;
    std::string precompile_cache_dir;
    bool precompile_fast_math = false;
};

// Parses argv[1..] (without the program name). Throws UsageError.
CliOptions parse_args(const std::vector<std::string>& args);

// "NAME=FILE" -> {NAME, FILE}; throws UsageError naming `option` when malformed.
NameFile parse_name_file(const std::string& value, const std::string& option);

std::string usage_text();
std::string version_text();

// The one description of the command line: --help, the man page jitexpr.1 and the reference
// part of docs/cli.md are all made from it (tools/docgen.cpp writes the last two at build time).
struct OptionDoc {
    std::string flags;  // "-t, --threads N"
    std::string env;    // the JITEXPR_* variable it overrides, or empty
    std::string help;   // a paragraph
};
const std::vector<OptionDoc>& option_docs();
struct CommandDoc {    // REPL commands
    std::string name;  // ":threads [N]"
    std::string help;
};
const std::vector<CommandDoc>& repl_command_docs();
std::string man_page();            // roff for jitexpr.1
std::string markdown_reference();  // the generated section of docs/cli.md

struct StatementTime;
// One line of --time for a statement.
std::string time_text(const StatementTime& t, Backend backend);

// RuntimeOptions from the environment with the command line's options over it; sets
// JITEXPR_STAGING / JITEXPR_CPU_KERNELS for --staging / --cpu-kernels.
RuntimeOptions runtime_options(const CliOptions& o);

// The most a script or a precompile file may hold (64 MiB: far past any written by hand).
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;
// The whole of a script or precompile file (`-`: standard input): an IOError naming `path` for a
// directory, a read error, or more than `limit` bytes, which is found when the limit is passed
// (an endless /dev/zero, a pipe that never ends), not after reading it all.
std::string read_input_file(const std::string& path, std::size_t limit = kMaxInputFileBytes);

// The whole program: returns the exit status. Never throws.
int main(int argc, char** argv);

}  // namespace jit::cli

// The jitexpr command line: argument parsing and the script mode (see docs/cli.md).
#pragma once

#include <jit/array.hpp>

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

struct CliOptions {
    enum class Mode { Run, Help, Version, Cache, Precompile } mode = Mode::Run;
    std::optional<Backend> backend;   // --backend (else RuntimeOptions::from_environment())
    bool verbose = false;             // -v
    std::vector<NameFile> loads;      // --load NAME=FILE, in order
    std::vector<NameFile> saves;      // --save NAME=FILE, in order
    std::vector<std::string> exprs;   // -e STATEMENTS, in order
    std::optional<std::string> script;  // SCRIPT, or "-" for standard input
    std::string cache_command;        // stats | clear | verify
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

// The whole program: returns the exit status. Never throws.
int main(int argc, char** argv);

}  // namespace jit::cli

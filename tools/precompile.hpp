// `jitexpr precompile FILE [--arch sm_XY] [--cache-dir DIR] [--fast-math]`: compiles the kernels
// of the statements listed in FILE and stores them in the disk cache under the keys a later run
// on that arch looks up (see docs/cache.md, "Precompiling").
//
// FILE, one program a line (blank lines and lines starting with '#' are skipped):
//   STATEMENTS ; DECL, DECL, ...
// the declarations after the last ';' give each variable the program reads:
//   name: float32[N, 3]     an array (dtype name as in the language, C-contiguous); a dimension
//                           is a positive integer or a symbol (same symbol, same size)
//   name: float32[]         a 0-d array
//   name: float | int | bool | complex      a host scalar
#pragma once

#include <jit/precompile.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit::cli {

struct PrecompileItem {
    int line = 0;            // 1-based line in the file
    std::size_t offset = 0;  // of `statements` in the file's text (for error carets)
    std::string statements;  // as the program will be run
    std::map<std::string, Declaration, std::less<>> bindings;
    std::map<std::string, std::int64_t> symbols;  // a symbolic dimension's stand-in size
};

// Parses the file's text. Throws ArgumentError "FILE:LINE: why" on a malformed line.
std::vector<PrecompileItem> parse_precompile_file(std::string_view text, const std::string& file);

// "sm_90", "sm90", "90" or "9.0" -> {9, 0}; throws ArgumentError otherwise.
std::pair<int, int> parse_arch(const std::string& text);

struct PrecompileOptions {
    std::string file;
    std::optional<std::string> arch;  // absent: the device's (needs a driver and a GPU)
    std::string cache_dir;            // empty: the runtime's default (JITEXPR_CACHE_DIR, ...)
    bool fast_math = false;           // as RuntimeOptions::fast_math / JITEXPR_FAST_MATH=1
};

// The subcommand: prints one line per kernel and a summary; returns the exit status.
int precompile_command(const PrecompileOptions& options);

}  // namespace jit::cli

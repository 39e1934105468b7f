// jitexpr — compiling a program's CUDA kernels ahead of time into the disk cache, for a GPU
// that need not be present (`jitexpr precompile`; docs/cache.md, "Precompiling").
//
//   jit::precompile("c = a*2 + b", {{"a", jit::Declaration::array(jit::DType::Float32, {1000})},
//                                   {"b", jit::Declaration::array(jit::DType::Float32, {1000})}}, {});
//
// A later runtime on that architecture, with the same options, finds every kernel on disk.
#pragma once

#include <jit/array.hpp>
#include <jit/dtype.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jit {

// What a variable will be bound to, without its data: the kernels depend on an array's dtype
// and layout class (sizes beyond that do not change them) and on a scalar's kind.
struct Declaration {
    enum class Kind : std::uint8_t { Array, Scalar };
    Kind kind = Kind::Array;
    DType dtype = DType::Float32;  // Scalar: Bool, Int64, Float64 or Complex128 (a host value's kind)
    Shape shape;                   // Array
    Strides strides;               // Array, in elements; empty: C-contiguous

    static Declaration array(DType dtype, Shape shape, Strides strides = {});
    static Declaration scalar(DType dtype);
};

struct PrecompileOptions {
    // Target GPU architecture {major, minor} (sm_90: {9, 0}); absent: the device's (needs a
    // driver and a GPU).
    std::optional<std::pair<int, int>> arch;
    std::string cache_dir;                   // empty: the runtime's default (RuntimeOptions::cache_dir)
    bool fast_math = false;                  // as RuntimeOptions::fast_math
    std::vector<std::string> nvrtc_options;  // as RuntimeOptions::nvrtc_options: part of the keys
};

struct PrecompiledKernel {
    std::string name;             // the kernel's generated name
    bool already_cached = false;  // the disk cache had it: nothing compiled
    double compile_ms = 0;
    std::size_t image_bytes = 0;
};

// One target architecture and disk cache, for any number of programs.
class Precompiler {
public:
    // Takes the architecture (from the device when options.arch is absent) and opens the disk
    // cache. Throws NoDeviceError without `arch` and without a GPU, IOError when the disk cache
    // is disabled.
    explicit Precompiler(const PrecompileOptions& options);
    ~Precompiler();
    Precompiler(const Precompiler&) = delete;
    Precompiler& operator=(const Precompiler&) = delete;

    int cc_major() const;
    int cc_minor() const;
    const std::string& cache_dir() const;  // where the kernels go

    // Compiles the kernels the CUDA runtime prepares first for `statements` with these
    // variables, in the order it launches them, and stores them. Throws the language's errors
    // for a bad program (pointing into `statements`), IOError when the disk cache cannot be
    // written, CompileError.
    std::vector<PrecompiledKernel> add(std::string_view statements,
                                       const std::map<std::string, Declaration, std::less<>>& variables);
    // Checks `statements` with these variables as add() would, compiling and storing nothing:
    // the same errors. For a caller that checks a whole file before compiling any of it.
    void check(std::string_view statements, const std::map<std::string, Declaration, std::less<>>& variables);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Precompiler(options).add(statements, variables).
std::vector<PrecompiledKernel> precompile(std::string_view statements,
                                          const std::map<std::string, Declaration, std::less<>>& variables,
                                          const PrecompileOptions& options);

}  // namespace jit

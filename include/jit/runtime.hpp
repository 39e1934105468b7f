// jitexpr — the runtime: backend choice, caches, statistics, and evaluation with named variables.
#pragma once

#include <jit/array.hpp>
#include <jit/cancel.hpp>
#include <jit/core/arg.hpp>
#include <jit/error.hpp>

#include <complex>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace jit {

// Arguments bound by name, for eval and Kernel: {{"a", a}, {"x", 2.5}}. (A type of its own, so
// that a braced list of two arrays, {a, b}, still means two positional arguments.)
class Named {
public:
    Named(std::initializer_list<std::pair<const std::string, Arg>> values) : values_(values) {}
    Named(Environment values) : values_(std::move(values)) {}
    const Environment& values() const { return values_; }

private:
    Environment values_;
};

struct CacheStats {
    std::uint64_t hits = 0;       // evals that found a prepared program (no parse/check/emit)
    std::uint64_t misses = 0;     // evals that parsed, checked and prepared
    std::uint64_t compiles = 0;   // kernel images built (CUDA: NVRTC or nvJitLink, device functions too)
    double compile_ms = 0;        // total NVRTC time
    std::uint64_t disk_hits = 0;  // modules loaded from the disk cache
    std::uint64_t entries = 0;    // prepared programs held in memory
};

struct RuntimeOptions {
    // Auto: CUDA when a driver and a device are present, else CPU; for calls over host arrays on
    // such a machine, a per-call choice of the CPU or the GPU by a cost model (docs/api.md,
    // "Host data on the GPU"). CUDA starts only when a call needs it (backend() says more).
    Backend backend = Backend::Auto;
    // The CUDA device ordinal this runtime evaluates on (0: the first GPU). Its arrays must live
    // on that device: an array on another device, or host arrays mixed with device arrays, is a
    // DeviceMismatchError (move it with Array::to(Backend::Cuda, device)); host arrays alone
    // stream through the GPU (docs/api.md, "Host data on the GPU"). A device the machine lacks is an ArgumentError
    // when the runtime is made. The CPU backend has one device, 0; under Backend::Auto with no
    // CUDA a nonzero device is an ArgumentError too, rather than a silent CPU run.
    // JITEXPR_DEVICE sets it from the environment; the CLI's --device.
    int device = 0;
    bool fast_math = false;  // opt-in: -use_fast_math on CUDA, relaxed math on CPU
    int cpu_threads = 0;     // 0: every core
    std::size_t memory_cache_entries = 4096;
    // Disk cache: empty means $JITEXPR_CACHE_DIR, else $XDG_CACHE_HOME/jitexpr, else ~/.cache/jitexpr.
    std::string cache_dir;
    bool disk_cache = true;
    // More NVRTC options for every kernel (CUDA only), after jitexpr's own, e.g.
    // "--Ofast-compile=max". They are part of the module cache key.
    std::vector<std::string> nvrtc_options;
    // CUDA, tiered compile: a program whose kernels are in neither the memory nor the disk cache
    // starts on first-tier kernels (elementwise kernels written as PTX and assembled by
    // nvJitLink, several times faster than NVRTC; scalar-only NVRTC kernels for the rest) while
    // the kernels with vector paths compile in the background and take over once loaded
    // (results are the same). On by default; JITEXPR_TIERED=0 turns it off.
    bool tiered_compile = true;
    // Prints the CUDA source of every kernel the runtime generates on stderr
    // (JITEXPR_SHOW_KERNELS=1; the CLI's --show-kernels).
    bool show_kernels = false;
    // CUDA, host data (arrays on Backend::Cpu given to a runtime that evaluates on CUDA): the
    // most device memory, in bytes, that one streamed evaluation may use for its chunk buffers
    // and resident inputs (JITEXPR_DEVICE_MEMORY; the CLI's --device-memory). Inputs larger than
    // this stream through it in chunks (out-of-core). 0: 80% of the device memory free when the
    // evaluation starts. docs/api.md, "Host data on the GPU".
    std::size_t device_memory_limit = 0;
    // Options from the environment: JITEXPR_BACKEND, JITEXPR_DEVICE, JITEXPR_CACHE_DIR, JITEXPR_DISK_CACHE,
    // JITEXPR_THREADS, JITEXPR_FAST_MATH, JITEXPR_NVRTC_OPTIONS (split at white space),
    // JITEXPR_TIERED, JITEXPR_SHOW_KERNELS, JITEXPR_DEVICE_MEMORY. Every JITEXPR_* variable jitexpr reads is checked (also
    // JITEXPR_STAGING and JITEXPR_CPU_KERNELS, read where they are used): a value that is not one of its documented forms is
    // an ArgumentError naming the variable and the value (docs/api.md, "Settings").
    static RuntimeOptions from_environment();
};

// Removes the temporary files of the saves (.npy) and disk-cache stores in progress in this
// process. Async-signal-safe: for a signal handler that is about to end the process without
// unwinding (the CLI's, on SIGTERM, SIGHUP and a third Ctrl-C). A later run removes what a killed
// process left.
void remove_temporary_files() noexcept;

// The settings the environment and the command line share, parsed in one place. `source`
// names where the text came from ("JITEXPR_THREADS", "--threads"); a bad value is an
// ArgumentError that names the source and the value and says what is allowed.
namespace settings {
// Most CPU threads a runtime starts; more is clamped to this (more threads than cores only
// cost start-up time and memory).
inline constexpr int kMaxCpuThreads = 1024;
// "cpu", "cuda" or "auto".
Backend backend(std::string_view text, std::string_view source);
// A whole number: 0 (every core) up to kMaxCpuThreads; above that clamped to kMaxCpuThreads.
int cpu_threads(std::string_view text, std::string_view source);
// A device ordinal: a whole number from 0, written without a sign. Whether the machine has that
// device is checked when a runtime is made.
int device(std::string_view text, std::string_view source);
// 1/true/on/yes or 0/false/off/no (any case).
bool on_off(std::string_view text, std::string_view source);
// White-space separated words, each starting with '-'.
std::vector<std::string> nvrtc_options(std::string_view text, std::string_view source);
// A size in bytes: a whole number with an optional unit, K/M/G/T (powers of 1024; also written
// KiB, KB, k, ... in any case) or B; "0" means no limit. E.g. "4GiB", "512M", "1048576".
std::size_t bytes(std::string_view text, std::string_view source);
// One of `allowed` (for the backends' own switches: JITEXPR_STAGING, JITEXPR_CPU_KERNELS).
std::string one_of(std::string_view text, std::string_view source, const std::vector<std::string_view>& allowed);
}  // namespace settings

// Where the time of one evaluation went (for :time).
struct Timing {
    bool cache_hit = false;         // prepared program found in memory
    bool module_cache_hit = false;  // CUDA module found in the module cache (memory or disk)
    // emit: generating the kernels' source (CUDA); compile: NVRTC or nvJitLink; load: loading
    // the modules, and for a disk-cache hit reading and checking its entry first.
    double parse_ms = 0, check_ms = 0, emit_ms = 0, compile_ms = 0, load_ms = 0;
    double run_ms = 0;  // launch(es) and, for host data, transfers, until complete
    // Host data on a CUDA runtime: where it ran and why ("cuda, streamed: 12 chunks, ...",
    // "cpu: the cost model ...", "cuda, copied whole: ..."); empty for device data.
    std::string placement;
    bool streamed = false;                  // went through the streamed pipeline
    std::size_t stream_chunks = 0;          // its chunks
    std::uint64_t stream_device_bytes = 0;  // device memory its plan used (within the limit)
};

// What one call of Runtime::run / eval may carry besides its program and variables.
struct CallOptions {
    void* stream = nullptr;             // CUDA: the CUstream to run on (null: the default stream)
    Timing* timing = nullptr;           // receives where the time went (for :time)
    std::optional<CancelToken> cancel;  // stops the call when cancelled (jit/cancel.hpp);
                                        // without one, Runtime::cancel() still stops it
    ProgressFn progress;                // progress of long work, on the calling thread
    // In-place targets (`x = ...` into an existing x of that dtype and shape) are computed into
    // temporaries and copied in only once the whole program has run, so a cancelled call leaves
    // them untouched (all or nothing) at the cost of one more array and copy each. Off: they
    // are written directly, and a cancelled call names them in CancelledError::partly_written().
    bool in_place_all_or_nothing = false;
    // How an assignment to a name bound to an array is written (docs/language.md, "Assignment
    // to an existing array").
    // Off (the rule): into the array when the value has its dtype and shape, else the name is
    // rebound to the new value and the array is left untouched (`x = sum(x)` makes x 0-d).
    // On: always into the array, cast (same kind) and broadcast to it; a value that cannot be
    // is a TypeError / ShapeError. Either way a read-only target (Array::read_only()) is a
    // ReadOnlyError before anything runs.
    bool strict_in_place = false;
};

// How Runtime::explain times the bytes a program moves.
struct ExplainOptions {
    // The bandwidth in GB/s (10^9 bytes a second) every stage's bytes are timed at; 0: the
    // backend's own figure, said where it comes from: CUDA, a device-to-device copy measured once
    // per process (64 MiB, best of 3); the CPU, the CPU backend's own throughput on a*2+b over
    // 2^23 float32 values (bytes read and written, best of 3), measured once per machine and
    // kept in the disk cache (once per process without it).
    double bandwidth_gbs = 0;
};

// What jitexpr finds of CUDA on this machine (jit::cuda_info): the driver and its devices, and
// the two compilers, which are opened at run time (NVRTC for CUDA C++, nvJitLink for the PTX
// first tier) from $JITEXPR_NVRTC / $JITEXPR_NVJITLINK, the system toolkit, or NVIDIA's wheels.
struct CudaLibraryInfo {
    bool found = false;   // the library file was located
    bool loaded = false;  // it is loaded in this process (it is, from the first compile on)
    std::string path;     // the file
    std::string source;   // how it was found: "JITEXPR_NVRTC", "the system toolkit", "an NVIDIA wheel", ...
    int version = 0;      // major*1000 + minor*10 (13000), 0 when unknown
    std::string error;    // why it was not found or does not load, naming what was searched
    // The copies in NVIDIA's wheels that were passed over, and why: a CUDA major jitexpr does not
    // use (11), or one newer than the driver supports (CUDA 13's under a CUDA 12 driver).
    struct Skipped {
        std::string path;
        std::string reason;
    };
    std::vector<Skipped> skipped;
};
struct CudaDeviceInfo {
    std::string name;                // "NVIDIA H200"
    int cc_major = 0, cc_minor = 0;  // compute capability
    int sm_count = 0;
    std::size_t memory = 0;        // bytes
    std::string describe() const;  // "NVIDIA H200 (sm_90, 140 GB)"
};
struct CudaInfo {
    bool available = false;               // a driver and a device: Backend::Auto evaluates on CUDA
    std::string reason;                   // why not, when !available
    int driver_version = 0;               // the CUDA version the driver supports (13000: 13.0); 0: no driver
    std::vector<CudaDeviceInfo> devices;  // by ordinal; empty when !available
    CudaLibraryInfo nvrtc, nvjitlink;
};
// Looks without side effects unless `load_compilers`: then NVRTC and nvJitLink are loaded now
// (otherwise a process loads them only when it compiles a kernel) so that `loaded` and `error`
// say whether they work. Loads the CUDA driver if it can (as a runtime would). Never fails.
CudaInfo cuda_info(bool load_compilers = false);

// What this machine offers jitexpr, for `jitexpr --version` and the REPL's :info: the CPU's
// threads and, as one member, everything of CUDA (cuda_info(), compilers not loaded). The one
// place for CUDA facts is CudaInfo; this does not repeat them.
struct SystemInfo {
    unsigned hardware_threads = 0;  // what cpu_threads = 0 means
    CudaInfo cuda;
};
SystemInfo system_info();

class Runtime {
public:
    explicit Runtime(RuntimeOptions options = RuntimeOptions::from_environment());
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // Returns once no background compile of a tiered compile is in flight (in any runtime of
    // the process): from then on, every program prepared so far runs its final kernels.
    void wait_for_compiles() const;

    // The device ordinal this runtime evaluates on (RuntimeOptions::device; 0 on the CPU).
    int device() const;
    // The backend this runtime evaluates on (Auto resolved). Throws NoDeviceError for an
    // explicit Cuda request on a machine without a driver or device. Under Backend::Auto the
    // CUDA driver starts when a call first needs it (one that the GPU runs, one over device
    // arrays, explain()); asking backend() before then starts it (loads libcuda, cuInit, the
    // device's primary context): started_backend() asks without starting.
    Backend backend() const;
    // backend() if it is known without starting anything: always, except under Backend::Auto
    // before a call needed CUDA (nullopt: nothing of CUDA is loaded by this runtime; calls over
    // small host data, or over scalars alone, run on the CPU without it).
    std::optional<Backend> started_backend() const;
    // Why CUDA is not in use, when backend() is Cpu under Auto ("no CUDA driver (libcuda.so.1 not found)").
    // Starts the backend, as backend() does.
    std::string fallback_reason() const;
    // What could not be set up as asked and how this runtime runs instead: CPU threads the system
    // could not start (`ulimit -v`, a process limit), so that it runs on fewer, down to the
    // calling thread alone (the results are the same). Empty when all is as asked.
    std::string setup_note() const;

    // Evaluates a program with variables bound by name: eval("b*2 + a", {{"a", a}, {"b", b}}).
    // A name bound here shadows a named constant of the same name (pi, e, inf, nan). Every
    // name must be one the program reads or assigns (ArgumentError otherwise: a misspelt name
    // is not silently unused). An assigned name bound to an array is written as in run() (in
    // place when the value has its dtype and shape); nothing is added to `names`. Returns the
    // value of the last statement.
    Array eval(std::string_view text, const Named& names, void* stream = nullptr);
    Array eval(std::string_view text, const Named& names, const CallOptions& options);
    // Evaluates a program with variables bound by position, in order of first appearance of
    // the names the program reads before assigning; the named constants are not parameters
    // and stay constants (eval("2*pi*r", r)). Returns the value of the last statement.
    Array eval(std::string_view text, const std::vector<Arg>& args, void* stream = nullptr);
    Array eval(std::string_view text, const std::vector<Arg>& args, const CallOptions& options);
    // Evaluates with named variables: reads them from `env` (a bound name shadows a named
    // constant), writes every assigned name back: in place into an existing array when the
    // value has its dtype and shape, else the name is rebound to a new array and the old one is
    // left as it was (CallOptions::strict_in_place writes into it whatever the value); a
    // read-only array (Array::read_only()) that would be written is a ReadOnlyError before
    // anything runs. Returns the value of the last statement (an undefined Array if the
    // program is empty).
    Array run(std::string_view text, Environment& env, void* stream = nullptr, Timing* timing = nullptr);
    // On cancellation (jit::CancelledError) no name is bound or rebound in `env`; arrays that
    // were being written in place are named by the error.
    Array run(std::string_view text, Environment& env, const CallOptions& options);

    // Stops every call in flight on this runtime (each throws CancelledError at its next safe
    // point); calls that start afterwards are not affected. Only an atomic increment: safe from
    // any thread and in a signal handler.
    void cancel() noexcept;

    // Evaluates with named variables like run(), and writes the value of the program's last
    // statement, which must be an expression (not an assignment), into `out` in place, as an
    // assignment under CallOptions::strict_in_place is written: same-kind casting into out's
    // dtype, broadcast to out's shape (TypeError / ShapeError with the caret otherwise; a
    // read-only `out` is a ReadOnlyError). `out` may be bound in `env` under a name the program
    // reads. Returns `out`. For numexpr's and NumPy's `out=`.
    Array run_into(std::string_view text, Environment& env, const Array& out, void* stream = nullptr);
    // With options: CallOptions::in_place_all_or_nothing makes `out` untouched or fully written
    // when the call is cancelled.
    Array run_into(std::string_view text, Environment& env, const Array& out, const CallOptions& options);

    // The generated CUDA source for a program with the given variables (for :source).
    std::string source(std::string_view text, const Environment& env);

    // What the program `text` over the variables of `env` becomes, as text for people
    // (`jitexpr explain`, the REPL's :explain; docs/api.md, "Explaining a program"): the checked
    // program (every name with its dtype and shape), the backend and why, the stages of its
    // plan and the kernel each becomes (kind, fusion, index and vector width, tier), the bytes
    // each moves and the time that takes at `options.bandwidth_gbs`, the cache state of each
    // kernel, and, for host arrays on a CUDA machine, where Backend::Auto runs them and why
    // (the cost model, the streamed pipeline and its chunks under device_memory_limit).
    // Goes through the same planning and kernel building as run() but compiles, loads and runs
    // nothing, and leaves the caches and their statistics as they were. Throws what run() would
    // for a program it cannot check (ParseError, NameError, TypeError, ...).
    std::string explain(std::string_view text, const Environment& env = {}, const ExplainOptions& options = {});

    // Waits for the work queued on `stream` (CUDA; null: the whole context) to complete;
    // nothing to wait for on the CPU. For handing results to another library on another stream.
    void synchronize(void* stream = nullptr) const;

    CacheStats stats() const;
    void clear_memory_cache();
    const RuntimeOptions& options() const;

    // The process-wide runtime used by jit::eval and jit::compile.
    static Runtime& default_runtime();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jit

// jitexpr — compiling generated CUDA C++ with NVRTC: CUBIN for the device's arch when NVRTC knows
// it, else PTX for the newest virtual arch it knows below that. NVRTC needs no driver; it is
// opened at run time on the first compile (toolkit.cpp).
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/toolkit.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace jit::cuda {
namespace {

// Destroys the program when the scope ends; declared on the line after nvrtcCreateProgram so no
// return or throw between them can leak it.
struct ProgramGuard {
    const detail::Nvrtc& api;
    nvrtcProgram& prog;
    ~ProgramGuard() {
        if (prog) api.DestroyProgram(&prog);
    }
};

std::string program_log(const detail::Nvrtc& api, nvrtcProgram prog) {
    std::size_t size = 0;
    if (api.GetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0) return {};
    std::string log(size, '\0');
    if (api.GetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return log;
}

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) {
        if (!out.empty()) out += ' ';
        out += w;
    }
    return out;
}

// Compiles `source` with `options` and returns the result; used by the probe and warm-up only.
nvrtcResult try_compile(const char* source, const std::vector<const char*>& options) {
    const detail::Nvrtc& api = detail::nvrtc();
    nvrtcProgram prog = nullptr;
    nvrtcResult r = api.CreateProgram(&prog, source, "jitexpr_probe.cu", 0, nullptr, nullptr);
    ProgramGuard guard{api, prog};
    if (r != NVRTC_SUCCESS) return r;
    return api.CompileProgram(prog, static_cast<int>(options.size()), options.data());
}

// Whether this NVRTC accepts --minimal (omits the runtime API declarations, texture types, ...:
// about half the compile time of a small kernel). Probed once by compiling an empty program.
bool minimal_supported() {
    static const bool supported = try_compile("", {"--minimal"}) == NVRTC_SUCCESS;
    return supported;
}

// State of the detached warm-up thread. Never destroyed: the thread may still use it while the
// process exits.
struct WarmUpState {
    std::once_flag once;
    std::mutex mutex;
    std::condition_variable done;
    bool running = false;
};
WarmUpState& warm_up_state() {
    static WarmUpState* s = new WarmUpState;
    return *s;
}

// A process must not exit while the warm-up thread is inside NVRTC: NVRTC registers its exit-time
// destructors during its first compile, so they run before any atexit handler or static
// destructor we could have registered earlier, and would tear NVRTC down under the thread. The
// destructors of the exiting thread's thread_local objects run before all of those (glibc runs
// them first in exit()), so each thread that asks for the warm-up holds one of these: when it
// exits (or ends), it first waits for the warm-up to finish (bounded).
struct WaitForWarmUp {
    ~WaitForWarmUp() {
        WarmUpState& s = warm_up_state();
        std::unique_lock lock(s.mutex);
        s.done.wait_for(lock, std::chrono::seconds(10), [&s] { return !s.running; });
    }
};

}  // namespace

int nvrtc_version() {
    // From the file names when they tell (no loading: the disk cache's keys need this on every
    // lookup), else from NVRTC itself.
    static const int version = [] {
        if (const detail::Located& l = detail::located_nvrtc(); l.found && l.version > 0) return l.version;
        try {
            int major = 0, minor = 0;
            if (detail::nvrtc().Version(&major, &minor) != NVRTC_SUCCESS) return 0;
            return major * 1000 + minor * 10;
        } catch (const NoDeviceError&) {
            return 0;  // no NVRTC: nothing will be compiled, and no key will match a compiled one
        }
    }();
    return version;
}

std::vector<int> nvrtc_archs() {
    // Never destroyed: the warm-up thread may read it while the process exits.
    static const std::vector<int>* const archs = [] {
        auto* out = new std::vector<int>;
        const detail::Nvrtc& api = detail::nvrtc();
        int n = 0;
        if (api.GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return out;
        out->resize(static_cast<std::size_t>(n));
        if (api.GetSupportedArchs(out->data()) != NVRTC_SUCCESS) out->clear();
        std::sort(out->begin(), out->end());
        return out;
    }();
    return *archs;
}

void warm_up_nvrtc() {
    // Nothing to start without NVRTC (the compile that follows reports why).
    if (!detail::located_nvrtc().found && !detail::nvrtc_loaded()) {
        try {
            (void)detail::nvrtc();
        } catch (const NoDeviceError&) {
            return;
        }
    }
    thread_local WaitForWarmUp wait_before_this_thread_exits;
    (void)wait_before_this_thread_exits;
    WarmUpState& s = warm_up_state();
    std::call_once(s.once, [&s] {
        {
            std::lock_guard lock(s.mutex);
            s.running = true;
        }
        auto work = [&s] {
            // The first NVRTC call in a process loads the library's front end and code
            // generator; a trivial kernel to CUBIN pays for both.
            try {
                const std::vector<int> archs = nvrtc_archs();
                const bool minimal = minimal_supported();
                if (!archs.empty()) {
                    const std::string arch = fmt::format("--gpu-architecture=sm_{}", archs.back());
                    std::vector<const char*> options = {"-std=c++17", arch.c_str(), "-default-device"};
                    if (minimal) options.push_back("--minimal");
                    (void)try_compile("extern \"C\" __global__ void jitexpr_warm_up(float* p) { p[0] = 1.0f; }\n",
                                      options);
                }
            } catch (...) {
                // NVRTC failed to load after all: the compile that asked reports it.
            }
            warm_up_ptx_assembler();  // the PTX first tier of a tiered compile
            std::lock_guard lock(s.mutex);
            s.running = false;
            s.done.notify_all();
        };
        try {
            std::thread(work).detach();
        } catch (...) {
            // No thread to be had: NVRTC simply starts on the first compile instead.
            std::lock_guard lock(s.mutex);
            s.running = false;
        }
    });
}

Image compile(const std::string& source, const std::string& name, const CompileOptions& options, bool relocatable) {
    const auto start = std::chrono::steady_clock::now();
    const detail::Nvrtc& api = detail::nvrtc();
    const std::vector<int> archs = nvrtc_archs();
    const int target = options.cc_major * 10 + options.cc_minor;

    Image image;
    image.is_cubin = std::find(archs.begin(), archs.end(), target) != archs.end();
    int arch = target;
    if (!image.is_cubin) {
        auto below = std::find_if(archs.rbegin(), archs.rend(), [target](int a) { return a <= target; });
        if (below == archs.rend()) {
            throw CompileError(fmt::format("NVRTC {}.{} cannot compile for sm_{}: the oldest architecture it "
                                           "supports is sm_{}",
                                           nvrtc_version() / 1000, nvrtc_version() % 1000 / 10, target,
                                           archs.empty() ? 0 : archs.front()),
                               {}, {}, source);
        }
        arch = *below;
    }
    image.arch = fmt::format("{}_{}", image.is_cubin ? "sm" : "compute", arch);

    std::vector<std::string> words = {"-std=c++17", "--gpu-architecture=" + image.arch, "-default-device"};
    if (minimal_supported()) words.push_back("--minimal");
    // Exact by default: no contraction of a*b+c into FMA (results equal the CPU backend's and
    // NumPy's), IEEE division and square root, denormals kept. Fast math relaxes all of it.
    if (options.fast_math) words.push_back("-use_fast_math");
    else words.push_back("--fmad=false");
    if (options.line_info) words.push_back("-lineinfo");
    if (relocatable) words.push_back("-rdc=true");
    words.insert(words.end(), options.extra.begin(), options.extra.end());
    image.options = join(words);
    std::vector<const char*> argv;
    argv.reserve(words.size());
    for (const auto& w : words) argv.push_back(w.c_str());

    const std::string file = name.empty() ? std::string("jitexpr_kernel.cu") : name;
    nvrtcProgram prog = nullptr;
    nvrtcResult r = api.CreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr);
    ProgramGuard guard{api, prog};
    if (r != NVRTC_SUCCESS) {
        throw CompileError(fmt::format("nvrtcCreateProgram failed for {}: {}", file, api.GetErrorString(r)), {},
                           image.options, source);
    }
    r = api.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
    image.log = program_log(api, prog);
    if (r != NVRTC_SUCCESS) {
        throw CompileError(
            fmt::format("NVRTC could not compile {} for {}: {}", file, image.arch, api.GetErrorString(r)), image.log,
            image.options, source);
    }

    std::size_t size = 0;
    if (image.is_cubin) {
        r = api.GetCUBINSize(prog, &size);
        if (r == NVRTC_SUCCESS) {
            image.data.resize(size);
            r = api.GetCUBIN(prog, image.data.data());
        }
    } else {
        r = api.GetPTXSize(prog, &size);  // counts the terminating NUL
        if (r == NVRTC_SUCCESS) {
            image.data.resize(size);
            r = api.GetPTX(prog, image.data.data());
            while (!image.data.empty() && image.data.back() == '\0') image.data.pop_back();
        }
    }
    if (r != NVRTC_SUCCESS || image.data.empty()) {
        throw CompileError(fmt::format("NVRTC compiled {} but returned no {}: {}", file,
                                       image.is_cubin ? "CUBIN" : "PTX", api.GetErrorString(r)),
                           image.log, image.options, source);
    }
    image.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return image;
}

}  // namespace jit::cuda

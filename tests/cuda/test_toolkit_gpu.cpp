// On a GPU: a process whose kernels all come from the disk cache never loads NVRTC or
// nvJitLink (issue 21), and a process that compiles does. Each process is this binary started
// afresh with one test selected (the first writes the cache, the second reads it).
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/toolkit.hpp"
#include "tests/cache/test_dir.hpp"

#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

bool mapped(const std::string& what) {
    std::ifstream in("/proc/self/maps");
    std::stringstream s;
    s << in.rdbuf();
    return s.str().find(what) != std::string::npos;
}

// Evaluates three programs (elementwise, transcendental, a reduction) on CUDA with the disk
// cache in `dir`, waits for the background compiles, and returns 0 when NVRTC is loaded
// exactly as `expect_nvrtc` says (and nvJitLink is not loaded when NVRTC is not).
int evaluate_in(const std::string& dir, bool expect_nvrtc) {
    jit::RuntimeOptions o = jit::RuntimeOptions::from_environment();
    o.backend = jit::Backend::Cuda;
    o.cache_dir = dir;
    o.disk_cache = true;
    jit::Runtime rt(o);
    jit::Array a = jit::Array::from(std::vector<float>(5000, 1.5f), {}, jit::Backend::Cuda);
    jit::Array b = jit::Array::from(std::vector<float>(5000, 2.f), {}, jit::Backend::Cuda);
    jit::Environment env{{"a", a}, {"b", b}};
    for (const char* text : {"c = a*2 + b", "d = where(a > .5, sin(a)*b + exp(-b), a*a - b)", "s = sum(a*b)"})
        rt.run(text, env);
    rt.wait_for_compiles();
    if (env.at("s").array().to_vector<float>()[0] != 15000.f) return 4;
    const bool nvrtc = jit::cuda::detail::nvrtc_loaded() || mapped("libnvrtc");
    const bool nvjitlink = jit::cuda::detail::nvjitlink_loaded() || mapped("libnvJitLink");
    if (nvrtc != expect_nvrtc) {
        std::fprintf(stderr, "NVRTC loaded: %d, expected %d\n", nvrtc, expect_nvrtc);
        return 1;
    }
    if (!expect_nvrtc && nvjitlink) {
        std::fprintf(stderr, "nvJitLink loaded in a process that compiled nothing\n");
        return 2;
    }
    return rt.stats().compiles == 0 || expect_nvrtc ? 0 : 3;
}

int run_fresh(const char* step, const std::string& dir) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setenv("JITEXPR_TOOLKIT_GPU_STEP", step, 1);
        ::setenv("JITEXPR_TOOLKIT_GPU_DIR", dir.c_str(), 1);
        const char* argv[] = {"test_toolkit_gpu",
                              "--gtest_filter=GpuToolkit.AProcessServedByTheDiskCacheLoadsNoCompiler", nullptr};
        ::execv("/proc/self/exe", const_cast<char* const*>(argv));
        ::_exit(98);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(GpuToolkit, AProcessServedByTheDiskCacheLoadsNoCompiler) {
    if (const char* step = std::getenv("JITEXPR_TOOLKIT_GPU_STEP")) {
        const std::string dir = std::getenv("JITEXPR_TOOLKIT_GPU_DIR");
        std::fflush(nullptr);
        ::_exit(evaluate_in(dir, std::string(step) == "compile"));
    }
    std::string why;
    if (!jit::cuda::available(&why)) GTEST_SKIP() << why;
    TempDir dir;
    EXPECT_EQ(run_fresh("compile", dir.path()), 0) << "the first process compiles and so loads NVRTC";
    EXPECT_EQ(run_fresh("hit", dir.path()), 0) << "the second finds every kernel on disk and loads neither compiler";
}

}  // namespace

// When a runtime starts the CUDA driver (issue 33 item 4): under Backend::Auto, not for work that
// stays on the CPU (small host data, scalars alone), not when the runtime is made; once, for work
// placed on the GPU or when asked. The driver is tests/cuda/fake_libcuda.cpp, first on
// LD_LIBRARY_PATH (ctest sets it), which logs each call to $JITEXPR_FAKE_CUDA_LOG: one device and
// its primary context, every other entry point CUDA_ERROR_NOT_SUPPORTED, so that work that does
// reach the GPU fails with a CudaError after the driver started. Each test runs its work in a
// child process of its own (nothing of CUDA loaded before it), which notes what it saw in the
// same log; the test reads the log.
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include "backend/cache/cache.hpp"
#include "run/machine.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace jit;

// Whether this process loads the stand-in driver (else the tests skip: run them through ctest).
bool fake_driver_first() {
    const char* path = std::getenv("LD_LIBRARY_PATH");
    const std::string dir = JITEXPR_FAKE_CUDA_DIR;
    return path && std::string(path).rfind(dir, 0) == 0 && std::filesystem::exists(dir + "/libcuda.so.1");
}

#define REQUIRE_FAKE_DRIVER()                                      \
    if (!fake_driver_first())                                      \
    GTEST_SKIP() << "needs LD_LIBRARY_PATH=" JITEXPR_FAKE_CUDA_DIR \
                    " (the stand-in libcuda.so.1; ctest sets "     \
                    "it)"

// A line in the log, from the child (one write, as the driver's lines).
void note(const std::string& what) {
    const char* path = std::getenv("JITEXPR_FAKE_CUDA_LOG");
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const std::string line = "test: " + what + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
}

// Runs `work` in a fresh child process and returns the log: the driver's lines and the child's
// notes, then "test: returned" or "test: threw NAME: what".
std::vector<std::string> in_a_fresh_process(const std::function<void()>& work) {
    const std::filesystem::path log =
        std::filesystem::temp_directory_path() / ("jitexpr_lazy_cuda_" + std::to_string(::getpid()) + ".log");
    std::filesystem::remove(log);
    ::setenv("JITEXPR_FAKE_CUDA_LOG", log.c_str(), 1);
    const pid_t child = ::fork();
    if (child == 0) {
        try {
            work();
            note("returned");
        } catch (const CudaError& e) {
            note(std::string("threw CudaError: ") + e.what());
        } catch (const std::exception& e) {
            note(std::string("threw: ") + e.what());
        }
        ::_exit(0);  // no gtest or static destructors in the child
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ::unsetenv("JITEXPR_FAKE_CUDA_LOG");
    std::vector<std::string> lines;
    std::ifstream in(log);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::filesystem::remove(log);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child died";
    return lines;
}

std::size_t count(const std::vector<std::string>& log, const std::string& line) {
    return static_cast<std::size_t>(std::count(log.begin(), log.end(), line));
}

bool has(const std::vector<std::string>& log, const std::string& line) { return count(log, line) > 0; }

// The log as one string, for failure messages.
std::string text(const std::vector<std::string>& log) {
    std::string s;
    for (const std::string& l : log) s += l + "\n";
    return s;
}

RuntimeOptions auto_options() {
    RuntimeOptions o;
    o.backend = Backend::Auto;
    o.disk_cache = false;
    o.cpu_threads = 2;
    return o;
}

Array host_floats(std::int64_t n, float first) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
    return Array::from(v, {n}, Backend::Cpu);
}

// "1 4 7": the values of a float array, whole numbers.
std::string values_text(const Array& a) {
    std::string s;
    for (const double v : a.to_vector<double>()) {
        if (!s.empty()) s += ' ';
        s += std::to_string(static_cast<long>(v));
    }
    return s;
}

std::string started_text(const Runtime& rt) {
    const std::optional<Backend> b = rt.started_backend();
    return b ? std::string(backend_name(*b)) : std::string("not started");
}

TEST(LazyCuda, AnAutoRuntimeLoadsNoDriverWhenMade) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        note("started: " + started_text(rt));
    });
    EXPECT_EQ(log, (std::vector<std::string>{"test: started: not started", "test: returned"})) << text(log);
}

TEST(LazyCuda, SmallHostDataRunsOnTheCpuAndLoadsNoDriver) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        Environment env{{"a", host_floats(8, 0)}, {"b", host_floats(8, 1)}};
        Timing t;
        const Array r = rt.run("c = a*2 + b", env, nullptr, &t);
        note(values_text(env.at("c").array()));
        note("placement: " + t.placement);
        note("started: " + started_text(rt));
    });
    EXPECT_FALSE(has(log, "loaded")) << text(log);
    EXPECT_TRUE(has(log, "test: 1 4 7 10 13 16 19 22")) << text(log);
    EXPECT_TRUE(
        has(log, "test: placement: cpu: host data of 96 bytes (below 64.0 MiB, the GPU is not worth its copies)"))
        << text(log);
    EXPECT_TRUE(has(log, "test: started: not started")) << text(log);
    EXPECT_TRUE(has(log, "test: returned")) << text(log);
}

TEST(LazyCuda, AProgramOfScalarsAloneRunsOnTheCpuAndLoadsNoDriver) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        const Array r = rt.eval("1.5 * 2", std::vector<Arg>{});
        note("result on " + std::string(backend_name(r.backend())) + ": " + std::to_string(r.item<double>()));
    });
    EXPECT_EQ(log, (std::vector<std::string>{"test: result on cpu: 3.000000", "test: returned"})) << text(log);
}

TEST(LazyCuda, ArrowEvaluationOfSmallHostColumnsLoadsNoDriver) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        ArrowColumn a, b;
        a.values = host_floats(4, 0);
        b.values = host_floats(4, 1);
        const std::uint8_t valid[] = {1, 1, 0, 1};
        b.validity = Array::from_host(valid, DType::Bool, {4}, Backend::Cpu);
        b.null_count = 1;
        const ArrowColumn r = eval_arrow("a*2 + b", {a, b}, rt);
        note(values_text(r.values) + " on " + std::string(backend_name(r.values.backend())));
        note("valid: " + values_text(*r.validity));
        note("started: " + started_text(rt));
    });
    EXPECT_EQ(log, (std::vector<std::string>{"test: 1 4 7 10 on cpu", "test: valid: 1 1 0 1",
                                             "test: started: not started", "test: returned"}))
        << text(log);
}

TEST(LazyCuda, HostDataTheGpuMayBeWorthStartsTheDriverOnce) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        // 64 MiB in, 32 MiB out: weighed for the GPU, so CUDA starts; the stand-in then refuses
        // the device's memory figure, and each call is a CudaError.
        const std::int64_t n = std::int64_t{8} << 20;
        Environment env{{"a", Array::empty(DType::Float32, {n}, Backend::Cpu)},
                        {"b", Array::empty(DType::Float32, {n}, Backend::Cpu)}};
        for (int i = 0; i < 2; ++i) {
            try {
                (void)rt.eval("a*2 + b", Named(env));
                note("ran");
            } catch (const CudaError&) {
                note("CudaError");
            }
        }
        note("started: " + started_text(rt));
    });
    EXPECT_EQ(count(log, "loaded"), 1u) << text(log);
    EXPECT_EQ(count(log, "cuInit"), 1u) << text(log);
    EXPECT_EQ(count(log, "cuDevicePrimaryCtxRetain"), 1u) << text(log);
    EXPECT_EQ(count(log, "test: CudaError"), 2u) << text(log);
    EXPECT_TRUE(has(log, "test: started: cuda")) << text(log);
}

// An Auto runtime over a disk cache in a fresh folder that holds `link_gbs` and `cpu_gbs` as this
// machine's host model: what an earlier process that measured them kept there.
RuntimeOptions with_known_model(const std::filesystem::path& dir, double link_gbs, double cpu_gbs) {
    RuntimeOptions o = auto_options();
    o.disk_cache = true;
    o.cache_dir = dir.string();
    cache::DiskCacheOptions dco;
    dco.dir = o.cache_dir;
    dco.fsync = false;
    cache::DiskCache store(dco);
    run::remember_host_model(store, o.cpu_threads, run::HostModel{link_gbs, cpu_gbs, ""});
    return o;
}

// A fresh folder for a disk cache, removed when the test ends.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() / ("jitexpr_lazy_cuda_cache_" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(LazyCuda, LargeHostDataTheKnownModelKeepsOnTheCpuLoadsNoDriver) {
    REQUIRE_FAKE_DRIVER();
    TempDir dir;
    const auto log = in_a_fresh_process([&] {
        // A link no faster than the CPU: 64 MiB in and 32 MiB out stay on the CPU.
        Runtime rt(with_known_model(dir.path, 10.0, 15.0));
        const std::int64_t n = std::int64_t{8} << 20;
        Environment env{{"a", Array::zeros(DType::Float32, {n}, Backend::Cpu)},
                        {"b", Array::zeros(DType::Float32, {n}, Backend::Cpu)}};
        Timing t;
        (void)rt.run("c = a*2 + b", env, nullptr, &t);
        note("placement: " + t.placement);
        note("started: " + started_text(rt));
    });
    EXPECT_FALSE(has(log, "loaded")) << text(log);
    EXPECT_TRUE(has(log,
                    "test: placement: cpu: cost model: the GPU's copies 6.7 ms at 10.0 GB/s, the CPU 6.7 ms at 15.0 "
                    "GB/s (the disk cache's last figures, CUDA not started)"))
        << text(log);
    EXPECT_TRUE(has(log, "test: started: not started")) << text(log);
    EXPECT_TRUE(has(log, "test: returned")) << text(log);
}

TEST(LazyCuda, LargeHostDataTheKnownModelSendsToTheGpuStartsTheDriverOnce) {
    REQUIRE_FAKE_DRIVER();
    TempDir dir;
    const auto log = in_a_fresh_process([&] {
        Runtime rt(with_known_model(dir.path, 100.0, 15.0));
        const std::int64_t n = std::int64_t{8} << 20;
        Environment env{{"a", Array::zeros(DType::Float32, {n}, Backend::Cpu)},
                        {"b", Array::zeros(DType::Float32, {n}, Backend::Cpu)}};
        try {
            (void)rt.eval("a*2 + b", Named(env));
            note("ran");
        } catch (const CudaError&) {
            note("CudaError");
        }
        note("started: " + started_text(rt));
    });
    EXPECT_EQ(count(log, "loaded"), 1u) << text(log);
    EXPECT_EQ(count(log, "cuInit"), 1u) << text(log);
    EXPECT_TRUE(has(log, "test: CudaError")) << text(log);
    EXPECT_TRUE(has(log, "test: started: cuda")) << text(log);
}

TEST(LazyCuda, BackendCudaStartsTheDriverWhenTheRuntimeIsMade) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        RuntimeOptions o = auto_options();
        o.backend = Backend::Cuda;
        Runtime rt(o);
        note("made");
    });
    ASSERT_GE(log.size(), 2u) << text(log);
    EXPECT_EQ(log.front(), "loaded") << text(log);
    EXPECT_EQ(count(log, "cuInit"), 1u) << text(log);
    EXPECT_EQ(count(log, "cuDevicePrimaryCtxRetain"), 1u) << text(log);
    EXPECT_EQ(log[log.size() - 2], "test: made") << text(log);
}

TEST(LazyCuda, AskingTheBackendOfAnAutoRuntimeStartsIt) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        note("before");
        note("backend: " + std::string(backend_name(rt.backend())));
        note("started: " + started_text(rt));
    });
    const auto before = std::find(log.begin(), log.end(), "test: before");
    const auto loaded = std::find(log.begin(), log.end(), "loaded");
    ASSERT_NE(loaded, log.end()) << text(log);
    EXPECT_LT(before, loaded) << text(log);
    EXPECT_EQ(count(log, "cuInit"), 1u) << text(log);
    EXPECT_TRUE(has(log, "test: backend: cuda")) << text(log);
    EXPECT_TRUE(has(log, "test: started: cuda")) << text(log);
}

TEST(LazyCuda, ExplainSaysWhyTheCpuWasChosenAndMeasuresNothingOnTheDevice) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        const std::string x = rt.explain("a*2", Environment{{"a", host_floats(4, 0)}});
        for (std::size_t at = 0, end = 0; at < x.size(); at = end + 1) {
            end = x.find('\n', at);
            if (end == std::string::npos) end = x.size();
            const std::string line = x.substr(at, end - at);
            if (line.rfind("placement:", 0) == 0 || line.rfind("backend:", 0) == 0) note(line);
        }
    });
    EXPECT_TRUE(has(log,
                    "test: backend: cuda:0 (jitexpr test driver device, sm_90) (auto: a driver and a device are "
                    "present)"))
        << text(log);
    EXPECT_TRUE(
        has(log, "test: placement: cpu: host data of 32 bytes (below 64.0 MiB, the GPU is not worth its copies)"))
        << text(log);
    // No device copy timed (the CPU's stages need the CPU's bandwidth only): no refused call.
    for (const std::string& l : log) EXPECT_EQ(l.find("unsupported"), std::string::npos) << text(log);
    EXPECT_TRUE(has(log, "test: returned")) << text(log);
}

TEST(LazyCuda, CallsKeptOnTheCpuBeforeCudaStartsCountInTheStats) {
    REQUIRE_FAKE_DRIVER();
    const auto log = in_a_fresh_process([] {
        Runtime rt(auto_options());
        const Array a = host_floats(4, 0);
        (void)rt.eval("a*2", std::vector<Arg>{a});
        (void)rt.eval("a*2", std::vector<Arg>{a});
        const CacheStats s = rt.stats();
        note("misses " + std::to_string(s.misses) + ", hits " + std::to_string(s.hits));
    });
    EXPECT_EQ(log, (std::vector<std::string>{"test: misses 1, hits 1", "test: returned"})) << text(log);
}

}  // namespace

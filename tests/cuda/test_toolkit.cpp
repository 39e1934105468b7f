// NVRTC and nvJitLink opened at run time (backend/cuda/toolkit.cpp): where they are looked for,
// what is said when they are missing, and that nothing maps them before a compile needs them.
// The cases that change the process (environment variables, what is loaded) run in a child.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/toolkit.hpp"
#include "tests/cache/test_dir.hpp"
#include "tests/cuda/kernels.hpp"

#include <jit/error.hpp>
#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using jit::cuda::detail::locate_in;
using jit::cuda::detail::Located;
using jit::cuda::detail::nvjitlink_spec;
using jit::cuda::detail::nvrtc_spec;

void touch(const std::string& path) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "not a library";
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::string maps() {
    std::ifstream in("/proc/self/maps");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs `body` in a fresh process: this test binary started again (so nothing this process has
// found or loaded is inherited) with only the current test selected, JITEXPR_TEST_FRESH=1 and
// `env` set. There `body` runs and its return value is the exit status (0: passed); messages
// go to stderr, which the test log shows.
bool is_fresh_process() {
    const char* fresh = std::getenv("JITEXPR_TEST_FRESH");
    return fresh && std::string(fresh) == "1";
}

int in_fresh_process(const std::function<int()>& body, const std::vector<std::string>& env = {}) {
    if (is_fresh_process()) {
        int rc = 99;
        try {
            rc = body();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "the fresh process threw: %s\n", e.what());
        }
        std::fflush(nullptr);
        ::_exit(rc);
    }
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setenv("JITEXPR_TEST_FRESH", "1", 1);
        for (const auto& kv : env) {
            const auto eq = kv.find('=');
            ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
        }
        const char* argv[] = {"test_toolkit", filter.c_str(), nullptr};
        ::execv("/proc/self/exe", const_cast<char* const*>(argv));
        ::_exit(98);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ToolkitLocate, EnvironmentFileIsTakenAsIs) {
    TempDir d;
    touch(d / "elsewhere/my-nvrtc.so");
    const Located l = locate_in(nvrtc_spec(), d / "elsewhere/my-nvrtc.so", {d / "sys"}, {});
    EXPECT_TRUE(l.found);
    EXPECT_EQ(l.path, d / "elsewhere/my-nvrtc.so");
    EXPECT_EQ(l.how, "JITEXPR_NVRTC");
}

TEST(ToolkitLocate, EnvironmentFolderIsSearchedForTheNewestMajor) {
    TempDir d;
    touch(d / "tk/libnvrtc.so.12");
    touch(d / "tk/libnvrtc.so.13");
    touch(d / "tk/libnvrtc-builtins.so.13.1");
    touch(d / "tk/libnvrtc-builtins.so.12.8");
    const Located l = locate_in(nvrtc_spec(), d / "tk", {}, {});
    ASSERT_TRUE(l.found) << l.why;
    EXPECT_EQ(l.path, d / "tk/libnvrtc.so.13");
    EXPECT_EQ(l.version, 13010);
}

TEST(ToolkitLocate, AWrongEnvironmentValueIsReportedAndNothingElseIsSearched) {
    TempDir d;
    touch(d / "sys/libnvrtc.so.13");
    const Located l = locate_in(nvrtc_spec(), "/nonexistent/libnvrtc.so", {d / "sys"}, {});
    EXPECT_FALSE(l.found);
    EXPECT_TRUE(contains(l.why, "JITEXPR_NVRTC=/nonexistent/libnvrtc.so names no file or folder")) << l.why;
    TempDir empty;
    const Located e = locate_in(nvrtc_spec(), empty.path(), {d / "sys"}, {});
    EXPECT_FALSE(e.found);
    EXPECT_TRUE(contains(e.why, "is a folder without libnvrtc.so.13")) << e.why;
}

TEST(ToolkitLocate, SystemFoldersComeBeforeWheels) {
    TempDir d;
    touch(d / "sys/libnvrtc.so.12");
    touch(d / "sys/libnvrtc-builtins.so.12.4");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    const Located l = locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cuda_nvrtc/lib"});
    ASSERT_TRUE(l.found);
    EXPECT_EQ(l.path, d / "sys/libnvrtc.so.12");
    EXPECT_EQ(l.how, "the system toolkit");
    EXPECT_EQ(l.version, 12040);
}

TEST(ToolkitLocate, AWheelIsFoundWhenTheSystemHasNone) {
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cu13/lib/libnvJitLink.so.13");
    const Located l = locate_in(nvjitlink_spec(), "", {d / "sys"}, {d / "site/nvidia/cu13/lib"});
    ASSERT_TRUE(l.found);
    EXPECT_EQ(l.path, d / "site/nvidia/cu13/lib/libnvJitLink.so.13");
    EXPECT_EQ(l.how, "an NVIDIA wheel");
}

TEST(ToolkitLocate, TheNewestMajorAmongTheWheelsIsTakenWhicheverFolderHoldsIt) {
    // nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvrtc 13 side by side: nvidia/cuda_nvrtc/lib comes
    // before nvidia/cu13/lib in the folder list, CUDA 13's NVRTC is still the one taken.
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9");
    touch(d / "site/nvidia/cu13/lib/libnvrtc.so.13");
    touch(d / "site/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
    const Located l =
        locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cuda_nvrtc/lib", d / "site/nvidia/cu13/lib"});
    ASSERT_TRUE(l.found) << l.why;
    EXPECT_EQ(l.path, d / "site/nvidia/cu13/lib/libnvrtc.so.13");
    EXPECT_EQ(l.version, 13000);
    EXPECT_EQ(l.how, "an NVIDIA wheel");
}

TEST(ToolkitLocate, AWheelNewerThanTheDriverIsSkippedForAnOlderOne) {
    // Both CUDA majors' wheels under a CUDA 12.4 driver: CUDA 13's NVRTC would write kernels the
    // driver cannot load, so CUDA 12's is taken and the other is reported.
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9");
    touch(d / "site/nvidia/cu13/lib/libnvrtc.so.13");
    touch(d / "site/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
    const Located l =
        locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cu13/lib", d / "site/nvidia/cuda_nvrtc/lib"}, 12040);
    ASSERT_TRUE(l.found) << l.why;
    EXPECT_EQ(l.path, d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    EXPECT_EQ(l.version, 12090);
    ASSERT_EQ(l.skipped.size(), 1u);
    EXPECT_EQ(l.skipped[0].path, d / "site/nvidia/cu13/lib/libnvrtc.so.13");
    EXPECT_TRUE(contains(l.skipped[0].reason, "CUDA 13's NVRTC, newer than the driver, which supports CUDA 12.4"))
        << l.skipped[0].reason;
}

TEST(ToolkitLocate, AWheelOlderThanTheDriverIsTaken) {
    // A CUDA 13 driver runs CUDA 12's kernels: nothing is skipped.
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/nvjitlink/lib/libnvJitLink.so.12");
    const Located l = locate_in(nvjitlink_spec(), "", {d / "sys"}, {d / "site/nvidia/nvjitlink/lib"}, 13000);
    ASSERT_TRUE(l.found) << l.why;
    EXPECT_EQ(l.path, d / "site/nvidia/nvjitlink/lib/libnvJitLink.so.12");
    EXPECT_TRUE(l.skipped.empty());
}

TEST(ToolkitLocate, AWheelOfACudaMajorJitexprDoesNotUseIsSkipped) {
    // CUDA 11's wheel names its library libnvrtc.so.11.2; beside CUDA 12's, with no driver.
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.11.8");
    touch(d / "site/nvidia/cu12/lib/libnvrtc.so.12");
    const Located l =
        locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cu12/lib", d / "site/nvidia/cuda_nvrtc/lib"});
    ASSERT_TRUE(l.found) << l.why;
    EXPECT_EQ(l.path, d / "site/nvidia/cu12/lib/libnvrtc.so.12");
    ASSERT_EQ(l.skipped.size(), 1u);
    EXPECT_EQ(l.skipped[0].path, d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2");
    EXPECT_TRUE(contains(l.skipped[0].reason, "CUDA 11's NVRTC, and jitexpr uses CUDA 12's or 13's"))
        << l.skipped[0].reason;
}

TEST(ToolkitLocate, WhenEveryWheelIsSkippedNotFoundSaysWhy) {
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cu13/lib/libnvJitLink.so.13");
    const Located l = locate_in(nvjitlink_spec(), "", {d / "sys"}, {d / "site/nvidia/cu13/lib"}, 12080);
    EXPECT_FALSE(l.found);
    ASSERT_EQ(l.skipped.size(), 1u);
    EXPECT_TRUE(contains(l.why, d / "site/nvidia/cu13/lib/libnvJitLink.so.13 was skipped: it is CUDA 13's nvJitLink"))
        << l.why;
    EXPECT_TRUE(contains(l.why, "pip install \"jitexpr[cuda12]\"")) << l.why;
}

TEST(ToolkitLocate, ADriverOlderThanEveryMajorJitexprUsesAsksForANewerDriver) {
    TempDir d;
    fs::create_directories(d / "sys");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    const Located l = locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cuda_nvrtc/lib"}, 11080);
    EXPECT_FALSE(l.found);
    ASSERT_EQ(l.skipped.size(), 1u);
    EXPECT_TRUE(contains(l.skipped[0].reason, "update the NVIDIA driver to one of CUDA 12 or newer"))
        << l.skipped[0].reason;
}

TEST(ToolkitLocate, TheSystemToolkitIsNotWeighedAgainstTheDriver) {
    // An installed toolkit is taken as it is: a driver too old for it gives the load-time error
    // that names both versions.
    TempDir d;
    touch(d / "sys/libnvrtc.so.13");
    touch(d / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    const Located l = locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "site/nvidia/cuda_nvrtc/lib"}, 12040);
    ASSERT_TRUE(l.found);
    EXPECT_EQ(l.path, d / "sys/libnvrtc.so.13");
    EXPECT_TRUE(l.skipped.empty());
}

TEST(ToolkitLocate, NotFoundNamesWhatWasSearchedAndHowToGetIt) {
    TempDir d;
    fs::create_directories(d / "sys");
    const Located l = locate_in(nvrtc_spec(), "", {d / "sys"}, {d / "wheel"});
    EXPECT_FALSE(l.found);
    EXPECT_TRUE(contains(l.why, d / "sys")) << l.why;
    EXPECT_TRUE(contains(l.why, d / "wheel")) << l.why;
    EXPECT_TRUE(contains(l.why, "pip install nvidia-cuda-nvrtc")) << l.why;
    EXPECT_TRUE(contains(l.why, "JITEXPR_NVRTC")) << l.why;
}

TEST(ToolkitLoad, ACpuEvaluationMapsNeitherCompiler) {
    EXPECT_EQ(in_fresh_process([] {
                  jit::RuntimeOptions o;
                  o.backend = jit::Backend::Cpu;
                  jit::Runtime rt(o);
                  jit::Array a = jit::Array::from(std::vector<float>{1, 2, 3}, {},
                                                  jit::Backend::Cpu);  // host data: Auto would be CUDA here
                  jit::Environment env{{"a", a}};
                  jit::Array r = rt.run("sin(a) * 2 + a", env);
                  if (r.to_vector<float>().size() != 3) return 2;
                  const std::string m = maps();
                  if (contains(m, "libnvrtc") || contains(m, "libnvJitLink")) {
                      std::fprintf(stderr, "mapped:\n%s\n", m.c_str());
                      return 1;
                  }
                  return jit::cuda::detail::nvrtc_loaded() || jit::cuda::detail::nvjitlink_loaded() ? 3 : 0;
              }),
              0);
}

TEST(ToolkitLoad, TheDiskKeysVersionNeedsNoCompiler) {
    if (!jit::cuda::detail::located_nvrtc().found) GTEST_SKIP() << jit::cuda::detail::located_nvrtc().why;
    EXPECT_EQ(in_fresh_process([] {
                  if (jit::cuda::nvrtc_version() < 11000) return 2;
                  return contains(maps(), "libnvrtc") ? 1 : 0;
              }),
              0);
}

TEST(ToolkitLoad, ABogusEnvironmentPathIsACleanErrorAtTheFirstCompile) {
    EXPECT_EQ(in_fresh_process(
                  [] {
                      try {
                          (void)jit::cuda::compile(jit::test::kAxpbSource, "axpb.cu", {});
                      } catch (const jit::NoDeviceError& e) {
                          const std::string w = e.what();
                          if (!contains(w, "JITEXPR_NVRTC=/nonexistent/libnvrtc.so.13")) {
                              std::fprintf(stderr, "message: %s\n", w.c_str());
                              return 1;
                          }
                          const jit::CudaInfo info = jit::cuda_info();
                          return !info.nvrtc.found && contains(info.nvrtc.error, "names no file") ? 0 : 3;
                      }
                      return 2;
                  },
                  {"JITEXPR_NVRTC=/nonexistent/libnvrtc.so.13"}),
              0);
}

TEST(ToolkitLoad, TheNvrtcOfTheEnvironmentFolderIsTheOneLoaded) {
    // The search done afresh (the process's own, done once, would be inherited by the child).
    const Located sys =
        locate_in(nvrtc_spec(), "", jit::cuda::detail::system_library_dirs(), jit::cuda::detail::wheel_library_dirs());
    if (!sys.found) GTEST_SKIP() << sys.why;
    // A folder the loader knows nothing of, holding links to the real files (made by this
    // process; the fresh one only reads it).
    std::optional<TempDir> d;
    if (!is_fresh_process()) d.emplace();
    const fs::path real = fs::canonical(sys.path);
    for (const auto& e : fs::directory_iterator(real.parent_path())) {
        const std::string name = e.path().filename().string();
        if (name.rfind("libnvrtc.so.", 0) == 0 || name.rfind("libnvrtc-builtins.so.", 0) == 0)
            if (d) fs::create_symlink(e.path(), *d / name);
    }
    const std::string dir = d ? d->path() : std::string();
    // The fresh process gets its own temporary folder name through the environment.
    EXPECT_EQ(
        in_fresh_process(
            [] {
                const std::string env = std::getenv("JITEXPR_NVRTC");
                jit::cuda::CompileOptions o;
                o.cc_major = 9;
                const jit::cuda::Image img = jit::cuda::compile(jit::test::kAxpbSource, "axpb.cu", o);
                if (img.data.empty()) return 1;
                const jit::CudaInfo info = jit::cuda_info();
                if (!info.nvrtc.loaded || info.nvrtc.source != "JITEXPR_NVRTC" || info.nvrtc.path.rfind(env, 0) != 0) {
                    std::fprintf(stderr, "nvrtc: %s (%s) loaded=%d\n", info.nvrtc.path.c_str(),
                                 info.nvrtc.source.c_str(), info.nvrtc.loaded);
                    return 2;
                }
                return 0;  // (the maps show the links' targets, so they cannot tell the folders apart)
            },
            {"JITEXPR_NVRTC=" + dir}),
        0);
}

TEST(ToolkitInfo, SaysWhereEachCompilerIsWithoutLoadingIt) {
    EXPECT_EQ(in_fresh_process([] {
                  const jit::CudaInfo info = jit::cuda_info();
                  if (info.nvrtc.loaded || info.nvjitlink.loaded) return 1;
                  if (info.nvrtc.found == info.nvrtc.path.empty()) return 2;
                  if (!info.nvrtc.found && info.nvrtc.error.empty()) return 3;
                  if (!info.available && info.reason.empty()) return 4;
                  return contains(maps(), "libnvrtc") ? 5 : 0;
              }),
              0);
}

TEST(ToolkitInfo, LoadingTheCompilersOnRequestReportsWhetherTheyWork) {
    if (!jit::cuda::detail::located_nvrtc().found) GTEST_SKIP() << jit::cuda::detail::located_nvrtc().why;
    EXPECT_EQ(in_fresh_process([] {
                  const jit::CudaInfo info = jit::cuda_info(/*load_compilers=*/true);
                  if (!info.nvrtc.loaded || !info.nvrtc.error.empty()) return 1;
                  return info.nvrtc.version >= 11000 ? 0 : 2;
              }),
              0);
}

}  // namespace

// NVRTC compilation: needs the toolkit's NVRTC, no driver and no GPU.
#include "backend/cuda/cuda.hpp"
#include "tests/cuda/kernels.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace {

using jit::cuda::compile;
using jit::cuda::CompileOptions;

CompileOptions sm90() {
    CompileOptions o;
    o.cc_major = 9;
    o.cc_minor = 0;
    return o;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

TEST(Nvrtc, CompilesSmallKernelToCubinForSm90) {
    auto image = compile(jit::test::kAxpbSource, "axpb.cu", sm90());
    EXPECT_TRUE(image.is_cubin);
    EXPECT_EQ(image.arch, "sm_90");
    ASSERT_GE(image.data.size(), 4u);
    EXPECT_EQ(image.data.substr(0, 4), std::string("\x7f"
                                                   "ELF"));
    EXPECT_GT(image.compile_ms, 0.0);
}

TEST(Nvrtc, UnknownArchFallsBackToPtxForHighestKnownVirtualArch) {
    const auto archs = jit::cuda::nvrtc_archs();
    ASSERT_FALSE(archs.empty());
    CompileOptions o;
    o.cc_major = 99;  // sm_999: no NVRTC knows it
    o.cc_minor = 9;
    auto image = compile(jit::test::kAxpbSource, "axpb.cu", o);
    EXPECT_FALSE(image.is_cubin);
    const int highest = *std::max_element(archs.begin(), archs.end());
    EXPECT_EQ(image.arch, "compute_" + std::to_string(highest));
    EXPECT_TRUE(contains(image.options, "--gpu-architecture=compute_" + std::to_string(highest))) << image.options;
    EXPECT_TRUE(contains(image.data, ".target sm_" + std::to_string(highest))) << image.data.substr(0, 400);
    EXPECT_TRUE(contains(image.data, ".entry axpb")) << image.data.substr(0, 400);
    EXPECT_EQ(image.data.find('\0'), std::string::npos) << "PTX text must not carry the terminating NUL";
}

TEST(Nvrtc, ArchOlderThanAnyKnownThrowsCompileError) {
    CompileOptions o;
    o.cc_major = 1;
    o.cc_minor = 0;
    EXPECT_THROW(compile(jit::test::kAxpbSource, "axpb.cu", o), jit::CompileError);
}

TEST(Nvrtc, BrokenSourceThrowsCompileErrorWithLogOptionsAndSource) {
    const std::string source = "extern \"C\" __global__ void broken(float* p) { p[0] = undeclared_name; }\n";
    try {
        compile(source, "broken.cu", sm90());
        FAIL() << "expected CompileError";
    } catch (const jit::CompileError& e) {
        EXPECT_TRUE(contains(e.log(), "undeclared_name")) << e.log();
        EXPECT_TRUE(contains(e.options(), "--gpu-architecture=sm_90")) << e.options();
        EXPECT_EQ(e.source(), source);
        EXPECT_TRUE(contains(e.what(), "broken.cu")) << e.what();
    }
}

TEST(Nvrtc, OptionsContainDefaultDeviceAndStandard) {
    auto image = compile(jit::test::kAxpbSource, "axpb.cu", sm90());
    EXPECT_TRUE(contains(image.options, "-default-device")) << image.options;
    EXPECT_TRUE(contains(image.options, "-std=c++17")) << image.options;
    EXPECT_TRUE(contains(image.options, "--gpu-architecture=sm_90")) << image.options;
}

TEST(Nvrtc, FastMathOnlyWhenAskedFor) {
    auto exact = compile(jit::test::kAxpbSource, "axpb.cu", sm90());
    EXPECT_FALSE(contains(exact.options, "-use_fast_math")) << exact.options;
    auto o = sm90();
    o.fast_math = true;
    auto fast = compile(jit::test::kAxpbSource, "axpb.cu", o);
    EXPECT_TRUE(contains(fast.options, "-use_fast_math")) << fast.options;
}

TEST(Nvrtc, ExtraOptionsReachTheCompiler) {
    const std::string source =
        "#ifndef JITEXPR_TEST_SCALE\n#error JITEXPR_TEST_SCALE not defined\n#endif\n"
        "extern \"C\" __global__ void scale(float* p) { p[0] *= JITEXPR_TEST_SCALE; }\n";
    EXPECT_THROW(compile(source, "scale.cu", sm90()), jit::CompileError);
    auto o = sm90();
    o.extra = {"-DJITEXPR_TEST_SCALE=3.0f"};
    auto image = compile(source, "scale.cu", o);
    EXPECT_TRUE(image.is_cubin);
    EXPECT_TRUE(contains(image.options, "-DJITEXPR_TEST_SCALE=3.0f")) << image.options;
}

TEST(Nvrtc, LogIsKeptOnSuccess) {
    const std::string source =
        "#warning jitexpr_test_warning\n"
        "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n";
    auto image = compile(source, "warn.cu", sm90());
    EXPECT_TRUE(contains(image.log, "jitexpr_test_warning")) << image.log;
}

TEST(Nvrtc, VersionAndArchsAreReported) {
    EXPECT_GE(jit::cuda::nvrtc_version(), 11000);
    const auto archs = jit::cuda::nvrtc_archs();
    EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
    EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(Nvrtc, WarmUpRacesSafelyWithCompiles) {
    std::vector<std::thread> threads;
    std::vector<int> cubins(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t, &cubins] {
            jit::cuda::warm_up_nvrtc();
            cubins[static_cast<std::size_t>(t)] = compile(jit::test::kAxpbSource, "axpb.cu", sm90()).is_cubin ? 1 : 0;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(cubins, std::vector<int>(4, 1));
}

}  // namespace

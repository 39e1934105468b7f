// Device choice without a GPU: the ordinal's parsers and checks, arrays that know their device,
// and the typed error for arrays on another device than the runtime's (views of CUDA memory
// cost no driver call, so the runtime's check is reached on a machine without one).
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;

jit::RuntimeOptions cpu_options() {
    jit::RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    return o;
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const jit::DeviceMismatchError& e) {
        return e.what();
    }
    return "(no DeviceMismatchError)";
}

TEST(DeviceSetting, ParsesOrdinals) {
    EXPECT_EQ(jit::settings::device("0", "--device"), 0);
    EXPECT_EQ(jit::settings::device(" 3 ", "--device"), 3);
}

TEST(DeviceSetting, RefusesWhatIsNotAnOrdinalNamingTheSource) {
    for (const char* bad : {"", "-1", "+1", "1.5", "gpu", "0x1", "99999999999999"}) {
        try {
            jit::settings::device(bad, "JITEXPR_DEVICE");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const jit::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("JITEXPR_DEVICE"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("device ordinal"), std::string::npos) << e.what();
        }
    }
}

TEST(DeviceSetting, TheEnvironmentVariableSetsTheRuntimeDevice) {
    ::setenv("JITEXPR_DEVICE", "2", 1);
    EXPECT_EQ(jit::RuntimeOptions::from_environment().device, 2);
    ::setenv("JITEXPR_DEVICE", "two", 1);
    EXPECT_THROW(jit::RuntimeOptions::from_environment(), jit::ArgumentError);
    ::unsetenv("JITEXPR_DEVICE");
    EXPECT_EQ(jit::RuntimeOptions::from_environment().device, 0);
}

TEST(RuntimeDevice, ANegativeDeviceIsRefused) {
    jit::RuntimeOptions o = cpu_options();
    o.device = -1;
    EXPECT_THROW(jit::Runtime{o}, jit::ArgumentError);
}

TEST(RuntimeDevice, TheCpuBackendHasDeviceZeroOnly) {
    jit::RuntimeOptions o = cpu_options();
    o.device = 1;
    try {
        jit::Runtime rt(o);
        ADD_FAILURE() << "a CPU runtime on device 1 was made";
    } catch (const jit::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("one device"), std::string::npos) << e.what();
    }
    EXPECT_EQ(jit::Runtime(cpu_options()).device(), 0);
}

TEST(RuntimeDevice, AutoWithoutCudaDoesNotStandInForADevice) {
    if (jit::cuda_info().available) GTEST_SKIP() << "CUDA is available here";
    jit::RuntimeOptions o = cpu_options();
    o.backend = Backend::Auto;
    o.device = 1;
    EXPECT_THROW(jit::Runtime{o}, jit::NoDeviceError);
}

namespace {
std::size_t threads_of_this_process() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}
}  // namespace

// Starting the CUDA backend plans and emits a small program on a thread of its own meanwhile
// (run/machine.cpp, FrontWarmUp); that thread ends with the start, also when the start fails.
TEST(RuntimeDevice, AStartThatFailsLeavesNoWarmUpThreadBehind) {
    if (jit::cuda_info().available) GTEST_SKIP() << "CUDA is available here";
    const std::size_t before = threads_of_this_process();
    jit::RuntimeOptions o = cpu_options();
    o.backend = Backend::Cuda;
    EXPECT_THROW(jit::Runtime{o}, jit::NoDeviceError);
    EXPECT_EQ(threads_of_this_process(), before);
}

TEST(ArrayDevice, HostArraysAreOnDeviceZero) {
    Array a = Array::from(std::vector<float>{1, 2, 3}, {}, Backend::Cpu);
    EXPECT_EQ(a.device(), 0);
    EXPECT_EQ(a.place(), "cpu");
    EXPECT_THROW(Array::empty(DType::Float32, {3}, Backend::Cpu, 1), jit::ArgumentError);
    float x[3] = {};
    EXPECT_THROW(Array::view(x, DType::Float32, {3}, {}, Backend::Cpu, 1), jit::ArgumentError);
}

TEST(ArrayDevice, AViewOfCudaMemoryKnowsItsDevice) {
    float x[4] = {};  // never read: only its address is kept
    Array v = Array::view(x, DType::Float32, {4}, {}, Backend::Cuda, 1);
    EXPECT_EQ(v.device(), 1);
    EXPECT_EQ(v.place(), "cuda:1");
    EXPECT_EQ(v.describe(), "float32 (4,) on cuda:1");
    EXPECT_EQ(v.slice(0, 1, 3).device(), 1);  // views keep the device
    EXPECT_EQ(Array::view(x, DType::Float32, {4}, {}, Backend::Cuda, 0).place(), "cuda");
}

TEST(DeviceMismatch, ADeviceArrayOnACpuRuntimeIsATypedErrorNamingBoth) {
    jit::Runtime rt(cpu_options());
    float x[4] = {};
    Array a = Array::view(x, DType::Float32, {4}, {}, Backend::Cuda, 1);
    const std::string m = message_of([&] { rt.eval("a * 2", {a}); });
    EXPECT_NE(m.find("'a' is on cuda:1 but this runtime evaluates on cpu"), std::string::npos) << m;
    EXPECT_NE(m.find(".to(Backend::Cpu)"), std::string::npos) << m;
}

TEST(DeviceMismatch, HostAndDeviceArraysTogetherNameTheDeviceOne) {
    jit::Runtime rt(cpu_options());
    float x[4] = {};
    Array host = Array::from(std::vector<float>{1, 2, 3, 4}, {}, Backend::Cpu);
    Array dev = Array::view(x, DType::Float32, {4}, {}, Backend::Cuda, 0);
    jit::Environment env{{"a", host}, {"b", dev}};
    const std::string m = message_of([&] { rt.run("a + b", env); });
    EXPECT_NE(m.find("'b' is on cuda:0"), std::string::npos) << m;
}

TEST(DeviceMismatch, IsAnArgumentErrorForCodeThatCatchesThose) {
    jit::Runtime rt(cpu_options());
    float x[4] = {};
    Array a = Array::view(x, DType::Float32, {4}, {}, Backend::Cuda, 0);
    EXPECT_THROW(rt.eval("a + 1", {a}), jit::ArgumentError);
}

}  // namespace

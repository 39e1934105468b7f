// The runtime's settings: every JITEXPR_* variable is checked (a clear ArgumentError naming the
// variable and the value, or a documented clamp), through the parsers the command line shares.
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

using namespace jit;

namespace {

// Sets (or unsets, with nullptr) an environment variable for the life of the object.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

// The message of the ArgumentError from_environment throws with `name` set to `value`.
std::string environment_error(const char* name, const char* value) {
    ScopedEnv e(name, value);
    try {
        (void)RuntimeOptions::from_environment();
    } catch (const ArgumentError& err) {
        return err.what();
    }
    return "(no ArgumentError)";
}

}  // namespace

TEST(Settings, ThreadsMustBeAWholeNumber) {
    for (const char* bad : {"abc", "-1", "1.5", "4 threads", "+4", "0x10", "-99999999999999999999"}) {
        const std::string m = environment_error("JITEXPR_THREADS", bad);
        EXPECT_NE(m.find("JITEXPR_THREADS"), std::string::npos) << bad << ": " << m;
        EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << bad << ": " << m;
    }
}

TEST(Settings, ThreadsAboveTheMaximumAreClamped) {
    ScopedEnv e("JITEXPR_THREADS", "100000");
    EXPECT_EQ(RuntimeOptions::from_environment().cpu_threads, settings::kMaxCpuThreads);
    EXPECT_EQ(settings::cpu_threads("99999999999999999999999", "--threads"), settings::kMaxCpuThreads);
    EXPECT_EQ(settings::cpu_threads(" 8 ", "--threads"), 8);
    EXPECT_EQ(settings::cpu_threads("0", "--threads"), 0);
}

TEST(Settings, RuntimeClampsThreadsAndRefusesNegativeOnes) {
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.cpu_threads = 100000;
    Runtime rt(o);  // starts at once: at most kMaxCpuThreads threads
    EXPECT_EQ(rt.options().cpu_threads, settings::kMaxCpuThreads);
    o.cpu_threads = -1;
    EXPECT_THROW(Runtime{o}, ArgumentError);
}

TEST(Settings, BackendIsCpuCudaOrAuto) {
    EXPECT_NE(environment_error("JITEXPR_BACKEND", "gpu").find("use cpu, cuda or auto"), std::string::npos);
    ScopedEnv e("JITEXPR_BACKEND", "CPU");
    EXPECT_EQ(RuntimeOptions::from_environment().backend, Backend::Cpu);
    EXPECT_EQ(settings::backend("auto", "--backend"), Backend::Auto);
}

TEST(Settings, SwitchesAcceptTheDocumentedWordsOnly) {
    for (const char* name : {"JITEXPR_DISK_CACHE", "JITEXPR_FAST_MATH", "JITEXPR_TIERED", "JITEXPR_SHOW_KERNELS"}) {
        const std::string m = environment_error(name, "maybe");
        EXPECT_NE(m.find(name), std::string::npos) << m;
        EXPECT_NE(m.find("'maybe'"), std::string::npos) << m;
    }
    for (const char* off : {"0", "false", "OFF", "no"}) EXPECT_FALSE(settings::on_off(off, "x")) << off;
    for (const char* on : {"1", "true", "On", "YES"}) EXPECT_TRUE(settings::on_off(on, "x")) << on;
    ScopedEnv d("JITEXPR_DISK_CACHE", "off");
    ScopedEnv f("JITEXPR_FAST_MATH", "yes");
    ScopedEnv t("JITEXPR_TIERED", "0");
    const RuntimeOptions o = RuntimeOptions::from_environment();
    EXPECT_FALSE(o.disk_cache);
    EXPECT_TRUE(o.fast_math);
    EXPECT_FALSE(o.tiered_compile);
}

TEST(Settings, NvrtcOptionsMustBeOptions) {
    const std::string m = environment_error("JITEXPR_NVRTC_OPTIONS", "--Ofast-compile=max fast");
    EXPECT_NE(m.find("'fast' is not an NVRTC option"), std::string::npos) << m;
    ScopedEnv e("JITEXPR_NVRTC_OPTIONS", "  --Ofast-compile=max\t-lineinfo ");
    EXPECT_EQ(RuntimeOptions::from_environment().nvrtc_options,
              (std::vector<std::string>{"--Ofast-compile=max", "-lineinfo"}));
}

TEST(Settings, BackendSwitchesAreChecked) {
    EXPECT_NE(environment_error("JITEXPR_STAGING", "fast").find("use staged, 1, direct, 0, register"),
              std::string::npos);
    EXPECT_NE(environment_error("JITEXPR_CPU_KERNELS", "avx512").find("JITEXPR_CPU_KERNELS"), std::string::npos);
    ScopedEnv e("JITEXPR_CPU_KERNELS", "base");
    EXPECT_NO_THROW((void)RuntimeOptions::from_environment());
}

TEST(Settings, EmptyValuesMeanUnset) {
    ScopedEnv t("JITEXPR_THREADS", "");
    ScopedEnv b("JITEXPR_BACKEND", "");
    const RuntimeOptions o = RuntimeOptions::from_environment();
    EXPECT_EQ(o.cpu_threads, 0);
    EXPECT_EQ(o.backend, Backend::Auto);
}

TEST(Settings, ControlCharactersInAValueAreNotEchoed) {
    const std::string m = environment_error("JITEXPR_THREADS", "\x1b[31m");
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
}

TEST(Settings, DeviceMemoryTakesSizesWithBinaryUnits) {
    EXPECT_EQ(settings::bytes("4GiB", "x"), std::size_t{4} << 30);
    EXPECT_EQ(settings::bytes("512M", "x"), std::size_t{512} << 20);
    EXPECT_EQ(settings::bytes(" 64 kb ", "x"), std::size_t{64} << 10);
    EXPECT_EQ(settings::bytes("1048576", "x"), std::size_t{1} << 20);
    EXPECT_EQ(settings::bytes("0", "x"), 0u);
    ScopedEnv e("JITEXPR_DEVICE_MEMORY", "2G");
    EXPECT_EQ(RuntimeOptions::from_environment().device_memory_limit, std::size_t{2} << 30);
}

TEST(Settings, DeviceMemoryRefusesWhatIsNotASize) {
    for (const char* bad : {"-1", "+4G", "4X", "G", "4.5G", "99999999999999999999", "20000000000T"}) {
        const std::string m = environment_error("JITEXPR_DEVICE_MEMORY", bad);
        EXPECT_NE(m.find("JITEXPR_DEVICE_MEMORY"), std::string::npos) << bad << ": " << m;
        EXPECT_NE(m.find("4GiB"), std::string::npos) << bad << ": " << m;
    }
}

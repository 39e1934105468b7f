// Runtime::explain: what a program becomes, without running it (golden files for the text;
// JITEXPR_UPDATE_GOLDEN=1 rewrites them), and that explaining compiles, prepares and counts
// nothing.
#include <jit/jit.hpp>
#include <jit/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// The portable block kernels, whatever this processor has: the golden text names them.
const bool kBaseKernels = [] {
    ::setenv("JITEXPR_CPU_KERNELS", "base", 1);
    return true;
}();

jit::RuntimeOptions cpu_options() {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = 2;
    return o;
}

void expect_golden(const std::string& name, const std::string& got) {
    const std::string path = std::string(JITEXPR_TEST_DATA) + "/golden/explain/" + name + ".txt";
    if (const char* u = std::getenv("JITEXPR_UPDATE_GOLDEN"); u && std::string(u) == "1") {
        std::ofstream(path, std::ios::binary) << got;
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing golden file " << path << " (run with JITEXPR_UPDATE_GOLDEN=1)";
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(got, ss.str()) << "explain output differs from " << path
                             << " (if intended, rerun with JITEXPR_UPDATE_GOLDEN=1)";
}

jit::ExplainOptions at_10_gbs() {
    jit::ExplainOptions x;
    x.bandwidth_gbs = 10;
    return x;
}

TEST(Explain, ElementwiseAndReductionGolden) {
    ASSERT_TRUE(kBaseKernels);
    jit::Runtime rt(cpu_options());
    jit::Environment env{{"a", jit::Array::zeros(jit::DType::Float64, {1000}, jit::Backend::Cpu)},
                         {"b", jit::Array::zeros(jit::DType::Float32, {1000}, jit::Backend::Cpu)},
                         {"x", 2.5}};
    expect_golden("elementwise_reduction", rt.explain("c = a * x + b\ns = sum(c * c)\ns / 2", env, at_10_gbs()));
}

TEST(Explain, InPlaceBroadcastAndAxisReductionGolden) {
    jit::Runtime rt(cpu_options());
    jit::Environment env{{"m", jit::Array::zeros(jit::DType::Float32, {300, 400}, jit::Backend::Cpu)},
                         {"row", jit::Array::zeros(jit::DType::Float32, {400}, jit::Backend::Cpu)}};
    expect_golden("in_place_axis", rt.explain("m = m - row\nmean(m, axis=1)", env, at_10_gbs()));
}

TEST(Explain, AnalyticsProgramGolden) {
    // The shipped example's program: four reductions and two derived columns over one table.
    jit::Runtime rt(cpu_options());
    const std::int64_t n = 3000;
    jit::Environment env{{"distance", jit::Array::zeros(jit::DType::Float64, {n}, jit::Backend::Cpu)},
                         {"duration", jit::Array::zeros(jit::DType::Float64, {n}, jit::Backend::Cpu)},
                         {"fare", jit::Array::zeros(jit::DType::Float64, {n}, jit::Backend::Cpu)},
                         {"tip", jit::Array::zeros(jit::DType::Float64, {n}, jit::Backend::Cpu)},
                         {"passengers", jit::Array::zeros(jit::DType::Int32, {n}, jit::Backend::Cpu)}};
    expect_golden("analytics", rt.explain(R"(speed = distance / (duration / 3600)
tip_pct = where(fare > 0, tip / fare * 100, 0)
mean_long_speed = sum(where(distance > 5, speed, 0)) / sum(distance > 5)
mean_group_tip = sum(where(passengers >= 3, tip_pct, 0)) / sum(passengers >= 3)
)",
                                          env, at_10_gbs()));
}

TEST(Explain, CompilesPreparesAndCountsNothing) {
    jit::Runtime rt(cpu_options());
    jit::Environment env{{"a", jit::Array::zeros(jit::DType::Float32, {64}, jit::Backend::Cpu)}};
    const std::string before = rt.explain("a * 2", env, at_10_gbs());
    const jit::CacheStats s = rt.stats();
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.misses, 0u);
    EXPECT_EQ(s.entries, 0u);
    EXPECT_NE(before.find("program cache: not prepared yet"), std::string::npos) << before;
    rt.run("a * 2", env);
    const std::string after = rt.explain("a * 2", env, at_10_gbs());
    EXPECT_NE(after.find("program cache: prepared in memory"), std::string::npos) << after;
    EXPECT_EQ(rt.stats().hits, 0u);  // explaining a prepared program is no hit
}

TEST(Explain, AnUnboundNameIsTheCheckersNameError) {
    jit::Runtime rt(cpu_options());
    EXPECT_THROW(rt.explain("a * 2", {}, at_10_gbs()), jit::NameError);
}

TEST(Explain, ABandwidthThatIsNotPositiveIsAnArgumentError) {
    jit::Runtime rt(cpu_options());
    jit::ExplainOptions x;
    x.bandwidth_gbs = -1;
    EXPECT_THROW(rt.explain("1 + 2", {}, x), jit::ArgumentError);
}

TEST(Explain, TheCpuFigureSaysWhereItComesFrom) {
    jit::Runtime rt(cpu_options());
    jit::Environment env{{"a", jit::Array::zeros(jit::DType::Float32, {64}, jit::Backend::Cpu)}};
    const std::string text = rt.explain("a * 2", env);
    EXPECT_NE(text.find("the CPU backend's throughput on a*2+b over 2^23 float32 values"), std::string::npos) << text;
    EXPECT_NE(text.find("no disk cache: once per process"), std::string::npos) << text;
}

TEST(Explain, AutoWithoutCudaSaysWhatAGpuWouldDoWithHostData) {
    if (jit::cuda_info().available) GTEST_SKIP() << "a CUDA device is present: auto evaluates host data there";
    jit::RuntimeOptions o = cpu_options();
    o.backend = jit::Backend::Auto;
    o.device_memory_limit = std::size_t{64} << 20;
    jit::Runtime rt(o);
    const std::int64_t n = std::int64_t{1} << 24;  // 128 MiB each, never touched by explain
    jit::Environment env{{"a", jit::Array::empty(jit::DType::Float64, {n}, jit::Backend::Cpu)},
                         {"b", jit::Array::empty(jit::DType::Float64, {n}, jit::Backend::Cpu)}};
    const std::string text = rt.explain("c = a * 2 + b", env, at_10_gbs());
    EXPECT_NE(text.find("backend: cpu (auto: CUDA is not available: "), std::string::npos) << text;
    EXPECT_NE(text.find("weigh 384.0 MiB of host data with its cost model"), std::string::npos) << text;
    EXPECT_NE(text.find("stream them: "), std::string::npos) << text;
    EXPECT_NE(text.find("(limit 64.0 MiB: device_memory_limit)"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel flat jx_"), std::string::npos) << text;
    // Small host data stays on the CPU, said so.
    jit::Environment small{{"a", jit::Array::zeros(jit::DType::Float64, {100}, jit::Backend::Cpu)}};
    EXPECT_NE(rt.explain("a + 1", small, at_10_gbs()).find("keep these host arrays on the CPU"), std::string::npos);
}

}  // namespace

// A fixed-width string input reads its width per element (S8: 8 bytes), not nothing.
TEST(Explain, AStringInputReadsItsWidthPerElement) {
    jit::Runtime rt(cpu_options());
    const jit::Array s = jit::Array::empty(jit::DType::Bytes, 8, {1000}, jit::Backend::Cpu);
    jit::Environment env{{"s", s}};
    const std::string text = rt.explain("contains(s, b'needle')", env, at_10_gbs());
    EXPECT_NE(text.find("reads s 8.0 kB"), std::string::npos) << text;
}

// How a call runs (run/decide): the decision as a value, checked without a GPU. The machine's
// answers (host model, device budget, whether the driver can stream) come from a fake probe,
// and the host arrays are views of made-up memory: decide() reads their sizes and addresses only.
#include "run/decide.hpp"

#include "dsl/plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace jit;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t GiB = std::size_t{1} << 30;

class FakeProbe final : public run::Probe {
public:
    run::HostModel model{10.0, 10.0, "a test's figures"};
    std::size_t budget = 8 * GiB;
    bool streams = true;
    Backend starts_as = Backend::Cuda;    // what start() finds: a GPU, or none (Cpu)
    std::optional<run::HostModel> known;  // what known_host_model() has before the start
    int model_asked = 0, budget_asked = 0, started = 0, known_asked = 0;

    Backend start() override {
        ++started;
        return starts_as;
    }
    const run::HostModel& host_model() override {
        ++model_asked;
        return model;
    }
    const run::HostModel* known_host_model() override {
        ++known_asked;
        return known ? &*known : nullptr;
    }
    std::size_t device_budget() override {
        ++budget_asked;
        return budget;
    }
    bool can_stream() override { return streams; }
};

// `text` over float32 arrays of n elements each, and those arrays as host views of made-up,
// disjoint memory.
struct HostCall {
    ir::Plan plan;
    std::vector<Array> inputs;
};

HostCall call_of(const std::string& text, const std::vector<std::string>& names, std::int64_t n) {
    std::map<std::string, dsl::Binding, std::less<>> b;
    for (const std::string& name : names) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = DType::Float32;
        x.shape = {n};
        x.strides = {1};
        b.emplace(name, x);
    }
    HostCall c;
    c.plan = dsl::plan(text, dsl::bindings_of(b), dsl::Limits{});
    std::uintptr_t at = 0x100000000;
    for (std::size_t i = 0; i < c.plan.program.inputs.size(); ++i) {
        c.inputs.push_back(Array::view(reinterpret_cast<void*>(at), DType::Float32, {n}, {1}, Backend::Cpu));
        at += static_cast<std::uintptr_t>(n) * 4 + 4096;
    }
    return c;
}

run::Request host_request(const HostCall& c, Backend asked) {
    run::Request r;
    r.asked = asked;
    r.backend = Backend::Cuda;
    r.where.host = true;
    r.plan = &c.plan;
    r.inputs = c.inputs;
    return r;
}

TEST(Decide, ArraysOnTheRuntimesDeviceRunDirectlyWithoutAskingTheMachine) {
    const HostCall c = call_of("a*2+b", {"a", "b"}, 1000);
    FakeProbe probe;
    run::Request r = host_request(c, Backend::Cuda);
    r.where = {false, true};
    const run::Decision d = run::decide(r, probe);
    EXPECT_EQ(d.way, run::Way::Direct);
    EXPECT_FALSE(d.on_a_gpu);
    EXPECT_EQ(probe.budget_asked + probe.model_asked, 0);
    EXPECT_EQ(run::placement(d), "");
    // Host and device arrays together run directly too: the device check refuses them.
    r.where = {true, true};
    EXPECT_EQ(run::decide(r, probe).way, run::Way::Direct);
}

TEST(Decide, AutoKeepsSmallHostDataOnTheCpuWithoutMeasuring) {
    const HostCall c = call_of("a*2+b", {"a", "b"}, 1000);
    FakeProbe probe;
    const run::Decision d = run::decide(host_request(c, Backend::Auto), probe);
    EXPECT_EQ(d.way, run::Way::Cpu);
    EXPECT_EQ(d.in_bytes, 8000u);
    EXPECT_EQ(d.out_bytes, 4000u);
    EXPECT_EQ(d.why, "host data of 12000 bytes (below 64.0 MiB, the GPU is not worth its copies)");
    EXPECT_EQ(run::placement(d), "cpu: " + d.why);
    EXPECT_EQ(probe.model_asked + probe.budget_asked, 0);
}

// A runtime under Auto that has not started CUDA (Request::backend Auto).
run::Request unstarted_request(const HostCall& c) {
    run::Request r = host_request(c, Backend::Auto);
    r.backend = Backend::Auto;
    return r;
}

TEST(Decide, AutoDecidesSmallHostDataBeforeStartingTheBackend) {
    const HostCall c = call_of("a*2+b", {"a", "b"}, 1000);
    FakeProbe probe;
    const run::Decision d = run::decide(unstarted_request(c), probe);
    EXPECT_EQ(d.way, run::Way::Cpu);
    EXPECT_EQ(d.why, "host data of 12000 bytes (below 64.0 MiB, the GPU is not worth its copies)");
    EXPECT_EQ(probe.started + probe.model_asked + probe.budget_asked, 0);
}

TEST(Decide, AutoKeepsAProgramOfScalarsAloneOnTheCpuStartedOrNot) {
    HostCall c;
    c.plan =
        dsl::plan("x = 1.5 * 2", dsl::bindings_of(std::map<std::string, dsl::Binding, std::less<>>{}), dsl::Limits{});
    FakeProbe probe;
    run::Request r = unstarted_request(c);
    r.where = {};  // no arrays at all
    run::Decision d = run::decide(r, probe);
    EXPECT_EQ(d.way, run::Way::Cpu) << d.why;
    EXPECT_EQ(d.why, "host data of 8 bytes (below 64.0 MiB, the GPU is not worth its copies)");
    r.backend = Backend::Cuda;  // the same once CUDA started for another call
    d = run::decide(r, probe);
    EXPECT_EQ(d.way, run::Way::Cpu) << d.why;
    EXPECT_EQ(probe.started + probe.model_asked + probe.budget_asked, 0);
    r.asked = Backend::Cuda;  // asked for: it runs on the device
    EXPECT_EQ(run::decide(r, probe).way, run::Way::Direct);
}

TEST(Decide, AutoStartsTheBackendForHostDataTheGpuMayBeWorth) {
    const HostCall big = call_of("a*2+b", {"a", "b"}, std::int64_t{64} << 20);
    FakeProbe probe;
    probe.model = {100.0, 15.0, "a test's figures"};
    run::Decision d = run::decide(unstarted_request(big), probe);
    EXPECT_EQ(probe.started, 1);
    EXPECT_EQ(d.way, run::Way::Streamed) << d.why;
    EXPECT_EQ(d.in_bytes, 512 * MiB);
    // Where the start finds no GPU the call is the CPU runtime's own (direct), with what a GPU
    // would do for explain.
    probe.starts_as = Backend::Cpu;
    d = run::decide(unstarted_request(big), probe);
    EXPECT_EQ(probe.started, 2);
    EXPECT_EQ(d.way, run::Way::Direct);
    ASSERT_TRUE(d.on_a_gpu);
    EXPECT_FALSE(d.on_a_gpu->small);
    EXPECT_EQ(d.in_bytes, 512 * MiB);
}

TEST(Decide, AutoKeepsLargeHostDataOnTheCpuWithoutStartingWhenTheKnownModelSaysSo) {
    const HostCall big = call_of("a*2+b", {"a", "b"}, std::int64_t{64} << 20);  // 512 MiB in, 256 out
    FakeProbe probe;
    // The figures of an earlier process: the link moves the inputs about as fast as the CPU works.
    probe.known = run::HostModel{10.0, 15.0, "known before the start"};
    run::Decision d = run::decide(unstarted_request(big), probe);
    EXPECT_EQ(d.way, run::Way::Cpu) << d.why;
    EXPECT_EQ(d.why.rfind("cost model: the GPU's copies ", 0), 0u) << d.why;
    EXPECT_NE(d.why.find("(known before the start)"), std::string::npos) << d.why;
    EXPECT_EQ(run::placement(d), "cpu: " + d.why);
    EXPECT_EQ(probe.started + probe.model_asked + probe.budget_asked, 0);
    // Known figures that expect the GPU clearly faster start it, and the started machine's own
    // model decides.
    probe.known = run::HostModel{100.0, 15.0, "known before the start"};
    probe.model = {100.0, 15.0, "a test's figures"};
    d = run::decide(unstarted_request(big), probe);
    EXPECT_EQ(probe.started, 1);
    EXPECT_EQ(probe.model_asked, 1);
    ASSERT_EQ(d.way, run::Way::Streamed) << d.why;
    EXPECT_NE(d.model.find("(a test's figures)"), std::string::npos) << d.model;
    // No figures known (a first run, no disk cache): the backend starts and measures.
    probe.known.reset();
    probe.model = {10.0, 15.0, "a test's figures"};
    d = run::decide(unstarted_request(big), probe);
    EXPECT_EQ(probe.started, 2);
    EXPECT_EQ(d.way, run::Way::Cpu);
    EXPECT_NE(d.why.find("(a test's figures)"), std::string::npos) << d.why;
    // Small data asks nothing, known figures included; a started runtime does not read them.
    const HostCall small = call_of("a*2+b", {"a", "b"}, 1000);
    const int known_before = probe.known_asked;
    (void)run::decide(unstarted_request(small), probe);
    (void)run::decide(host_request(big, Backend::Auto), probe);
    EXPECT_EQ(probe.known_asked, known_before);
}

TEST(Decide, AutoTakesTheGpuOnlyWhenTheCostModelExpectsItClearlyFaster) {
    const std::int64_t n = std::int64_t{64} << 20;  // 256 MiB per array
    const HostCall c = call_of("a*2+b", {"a", "b"}, n);
    FakeProbe probe;
    // The link moves the 512 MiB of inputs in about the time the CPU takes for all 768 MiB.
    probe.model = {10.0, 15.0, "a test's figures"};
    run::Decision d = run::decide(host_request(c, Backend::Auto), probe);
    EXPECT_EQ(d.way, run::Way::Cpu);
    EXPECT_NE(d.why.find("cost model: the GPU's copies"), std::string::npos) << d.why;
    EXPECT_NE(d.why.find("(a test's figures)"), std::string::npos) << d.why;
    // A link ten times faster: streamed, and the placement says why.
    probe.model = {100.0, 15.0, "a test's figures"};
    d = run::decide(host_request(c, Backend::Auto), probe);
    ASSERT_EQ(d.way, run::Way::Streamed) << d.why;
    EXPECT_EQ(d.model.rfind("cost model: ", 0), 0u) << d.model;
    EXPECT_EQ(run::placement(d).rfind(d.model + "cuda, streamed: ", 0), 0u) << run::placement(d);
    EXPECT_EQ(probe.model_asked, 2);
}

TEST(Decide, CudaStreamsWhatSplitsByRowsWithinTheBudget) {
    const std::int64_t n = std::int64_t{64} << 20;
    const HostCall c = call_of("a*2+b", {"a", "b"}, n);
    FakeProbe probe;
    probe.budget = 256 * MiB;
    const run::Decision d = run::decide(host_request(c, Backend::Cuda), probe);
    ASSERT_EQ(d.way, run::Way::Streamed) << d.why;
    EXPECT_EQ(d.budget, 256 * MiB);
    EXPECT_TRUE(d.chunks.streamable);
    EXPECT_GT(d.chunks.chunks, 1u);
    EXPECT_LE(d.chunks.device_bytes, d.budget);
    EXPECT_EQ(d.model, "");
    EXPECT_EQ(probe.model_asked, 0);  // only Auto weighs the CPU
    EXPECT_EQ(run::placement(d).rfind("cuda, streamed: ", 0), 0u);
}

TEST(Decide, CudaCopiesHostDataBelowAMebibyteWholeInsteadOfStreamingIt) {
    // 1000 float32 elements of a, b and the result: 12000 bytes, not worth a pipeline's start.
    const HostCall c = call_of("a*2+b", {"a", "b"}, 1000);
    FakeProbe probe;
    run::Decision d = run::decide(host_request(c, Backend::Cuda), probe);
    EXPECT_EQ(d.way, run::Way::Copied) << d.why;
    EXPECT_EQ(run::placement(d), "cuda, copied whole: host data of 12000 bytes (below 1.0 MiB, not worth a pipeline)");
    EXPECT_EQ(probe.model_asked, 0);
    // At a mebibyte the pipeline is worth it.
    const HostCall big = call_of("a*2+b", {"a", "b"}, std::int64_t{1} << 18);  // 3 MiB
    d = run::decide(host_request(big, Backend::Cuda), probe);
    EXPECT_EQ(d.way, run::Way::Streamed) << d.why;
}

TEST(Decide, WhatCannotStreamIsCopiedWholeWhenItFitsElseTooLargeOrTheCpu) {
    const std::int64_t n = std::int64_t{1} << 20;
    // A driver without streams, events or pinned memory sends every program whole.
    const HostCall c = call_of("a*2+b", {"a", "b"}, n);
    FakeProbe probe;
    probe.streams = false;
    run::Decision d = run::decide(host_request(c, Backend::Cuda), probe);
    EXPECT_EQ(d.way, run::Way::Copied);
    EXPECT_EQ(d.why, "the CUDA driver lacks streams, events or pinned memory");
    EXPECT_EQ(run::placement(d), "cuda, copied whole: the CUDA driver lacks streams, events or pinned memory");
    probe.budget = 1 * MiB;  // the 12 MiB do not fit
    d = run::decide(host_request(c, Backend::Cuda), probe);
    EXPECT_EQ(d.way, run::Way::TooLarge);
    // Under Auto the same call stays on the CPU, saying why (the model first chose the GPU).
    const HostCall big = call_of("a*2+b", {"a", "b"}, std::int64_t{64} << 20);
    probe.model = {100.0, 15.0, "a test's figures"};
    d = run::decide(host_request(big, Backend::Auto), probe);
    EXPECT_EQ(d.way, run::Way::Cpu);
    EXPECT_EQ(d.why.rfind("the program cannot be streamed (the CUDA driver lacks streams", 0), 0u) << d.why;
    EXPECT_NE(d.why.find("more than the 1.0 MiB it may use"), std::string::npos) << d.why;
}

// An Arrow string column goes to the device whole (its rows have no fixed size): what it needs
// there is its offsets and its text, and the text decides whether it fits.
TEST(Decide, AnArrowStringColumnCountsItsTextAgainstTheDeviceBudget) {
    constexpr std::int64_t rows = 1024, width = 4096;  // 4 MiB of text
    std::vector<std::int32_t> offsets(rows + 1);
    for (std::int64_t i = 0; i <= rows; ++i)
        offsets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i * width);
    const std::vector<char> text(static_cast<std::size_t>(rows * width), 'a');
    const Array t = Array::view_utf8(offsets.data(), 4, text.data(), text.size(), rows, Backend::Cpu);
    dsl::Binding x;
    x.kind = dsl::Binding::Kind::Array;
    x.dtype = DType::Utf8;
    x.itemsize = 4;
    x.shape = {rows};
    x.strides = {1};
    std::map<std::string, dsl::Binding, std::less<>> b{{"t", x}};
    HostCall c;
    c.plan = dsl::plan("contains(t, 'ab')", dsl::bindings_of(b), dsl::Limits{});
    c.inputs = {t};
    FakeProbe probe;
    probe.budget = 2 * MiB;
    const run::Decision d = run::decide(host_request(c, Backend::Cuda), probe);
    EXPECT_GE(d.in_bytes, static_cast<std::uint64_t>(rows * width));
    EXPECT_EQ(d.way, run::Way::TooLarge) << run::placement(d);
    probe.budget = 64 * MiB;
    EXPECT_EQ(run::decide(host_request(c, Backend::Cuda), probe).way, run::Way::Copied);
}

TEST(Decide, NotStreamedAppliesTheRulesOfDecide) {
    const std::int64_t n = std::int64_t{64} << 20;
    const HostCall c = call_of("a*2+b", {"a", "b"}, n);
    FakeProbe probe;
    probe.budget = 256 * MiB;
    const run::Decision d = run::decide(host_request(c, Backend::Cuda), probe);
    ASSERT_EQ(d.way, run::Way::Streamed);
    const run::Decision whole = run::not_streamed(d, "its chunks make a different program", Backend::Cuda);
    EXPECT_EQ(whole.way, run::Way::TooLarge);  // 768 MiB over a 256 MiB budget
    EXPECT_EQ(whole.why, "its chunks make a different program");
    const run::Decision cpu = run::not_streamed(d, "its chunks make a different program", Backend::Auto);
    EXPECT_EQ(cpu.way, run::Way::Cpu);
    EXPECT_EQ(cpu.why,
              "the program cannot be streamed (its chunks make a different program) and needs 768.0 MiB of device "
              "memory, more than the 256.0 MiB it may use");
    run::Decision roomy = d;
    roomy.budget = 4 * GiB;
    EXPECT_EQ(run::not_streamed(roomy, "why", Backend::Cuda).way, run::Way::Copied);
}

TEST(Decide, ACpuRuntimeUnderAutoSaysWhatAGpuWouldDoWithHostData) {
    FakeProbe probe;
    const HostCall small = call_of("a*2+b", {"a", "b"}, 1000);
    run::Request r = host_request(small, Backend::Auto);
    r.backend = Backend::Cpu;
    run::Decision d = run::decide(r, probe);
    EXPECT_EQ(d.way, run::Way::Direct);
    ASSERT_TRUE(d.on_a_gpu);
    EXPECT_TRUE(d.on_a_gpu->small);
    const HostCall big = call_of("a*2+b", {"a", "b"}, std::int64_t{64} << 20);
    r = host_request(big, Backend::Auto);
    r.backend = Backend::Cpu;
    r.device_memory_limit = 256 * MiB;
    d = run::decide(r, probe);
    ASSERT_TRUE(d.on_a_gpu);
    EXPECT_FALSE(d.on_a_gpu->small);
    EXPECT_TRUE(d.on_a_gpu->limit);
    EXPECT_TRUE(d.on_a_gpu->chunks.streamable) << d.on_a_gpu->chunks.why_not;
    EXPECT_EQ(probe.budget_asked + probe.model_asked, 0);  // no GPU here: nothing measured
    r.asked = Backend::Cpu;
    EXPECT_FALSE(run::decide(r, probe).on_a_gpu);
}

TEST(Decide, HumanSizesAreBinary) {
    EXPECT_EQ(run::human(512), "512 bytes");
    EXPECT_EQ(run::human(96 * MiB), "96.0 MiB");
    EXPECT_EQ(run::human(3 * GiB / 2), "1.5 GiB");
}

}  // namespace

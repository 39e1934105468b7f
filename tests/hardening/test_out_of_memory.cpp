// Running out of memory in a kernel's own work (issue 34, item 4): an order statistic's copy of
// its rows, a mask's counts, a thread's buffers. Each is an OutOfMemoryError that says for what,
// how many bytes were asked and how many were available, with a caret under the part of the
// text that asked -- through Runtime::run and eval, and the C API. The failures come from an
// operator new that refuses large requests (tests/support/allocation_counter.cpp); host arrays
// are not allocated with it, so the inputs are made as usual.
#include "tests/support/allocation_counter.hpp"

#include <jit/c_api.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        o.cpu_threads = 2;
        return o;
    }());
    return rt;
}

// Operator new refuses requests of `bytes` or more while this lives.
struct RefuseFrom {
    explicit RefuseFrom(std::size_t bytes) { test::fail_allocations_from(bytes); }
    ~RefuseFrom() { test::fail_allocations_from(0); }
};

constexpr std::int64_t kN = 1 << 20;  // 8 MiB of float64
Array ramp() {
    std::vector<double> v(kN);
    for (std::int64_t i = 0; i < kN; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>((i * 7919) % kN);
    return Array::from(v, {}, Backend::Cpu);
}

std::string caret_line(std::size_t column, std::size_t width) {
    return std::string(column, ' ') + std::string(width, '^');
}

TEST(OutOfMemory, MedianSaysForWhatHowMuchAndWhereThroughRun) {
    Environment env{{"x", Arg(ramp())}};
    const std::string text = "m = 1\ny = median(x) + m";
    try {
        RefuseFrom refuse(1 << 20);
        cpu().run(text, env);
        FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.requested(), std::uint64_t{8} << 20) << what;
        EXPECT_GT(e.available(), 0u);
        EXPECT_NE(what.find("out of memory: the copy of 1048576 float64 elements an order statistic sorts needs "
                            "8.0 MiB (8388608 bytes); "),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("\nline 2: y = median(x) + m\n" + caret_line(12, 9)), std::string::npos) << what;
        EXPECT_TRUE(e.located());
        EXPECT_EQ(e.span().begin, 10u);
        EXPECT_EQ(e.span().end, 19u);
    }
    // Nothing is left broken: the same program runs once memory is there.
    cpu().run(text, env);
    EXPECT_EQ(env.at("y").array().item<double>(), static_cast<double>(kN - 1) / 2 + 1);
}

TEST(OutOfMemory, QuantileAndNanmedianThroughEval) {
    const Array x = ramp();
    for (const std::string call : {"quantile(x, 0.25)", "nanmedian(x)", "percentile(x, 50)"}) {
        try {
            RefuseFrom refuse(1 << 20);
            cpu().eval(call, {{"x", Arg(x)}});
            ADD_FAILURE() << call << ": no OutOfMemoryError";
        } catch (const OutOfMemoryError& e) {
            const std::string what = e.what();
            EXPECT_EQ(e.requested(), std::uint64_t{8} << 20) << what;
            EXPECT_NE(what.find("an order statistic sorts needs 8.0 MiB"), std::string::npos) << what;
            EXPECT_NE(what.find("line 1: " + call + "\n" + caret_line(8, call.size())), std::string::npos) << what;
        }
    }
}

TEST(OutOfMemory, MaskCountsSayHowMuch) {
    // The counts of a selection are one per 1024-element block: refuse even small requests.
    const Array x = ramp();
    cpu().eval("x[x > 5]", {{"x", Arg(x)}});  // parsed and planned: what is refused next is the run's
    try {
        RefuseFrom refuse(4096);
        cpu().eval("x[x > 5]", {{"x", Arg(x)}});
        FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        const std::string what = e.what();
        EXPECT_GT(e.requested(), 0u) << what;
        EXPECT_NE(what.find("out of memory: "), std::string::npos) << what;
        EXPECT_NE(what.find("line 1: x[x > 5]\n"), std::string::npos) << what;
    }
}

TEST(OutOfMemory, TheCApiGivesTheSameMessage) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr) << jitexpr_last_error();
    DLManagedTensor* x = to_dlpack(ramp());
    jitexpr_arg arg{};
    arg.kind = JITEXPR_ARG_TENSOR;
    arg.value.tensor = x;
    DLManagedTensor* out = nullptr;
    int rc = 0;
    {
        RefuseFrom refuse(1 << 20);
        rc = jitexpr_eval(rt, "median(x)", 1, &arg, &out);
    }
    EXPECT_EQ(rc, JITEXPR_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(out, nullptr);
    const std::string what = jitexpr_last_error();
    EXPECT_NE(what.find("needs 8.0 MiB (8388608 bytes); "), std::string::npos) << what;
    EXPECT_NE(what.find("line 1: median(x)\n" + caret_line(8, 9)), std::string::npos) << what;
    x->deleter(x);
    jitexpr_runtime_destroy(rt);
}

TEST(OutOfMemory, AnErrorWithoutAFigureSaysItCouldNotBeHad) {
    const OutOfMemoryError e(0, 1000, "a kernel's own work");
    EXPECT_STREQ(e.what(), "out of memory: a kernel's own work could not be had; 1000 bytes available");
    EXPECT_FALSE(e.located());
    const OutOfMemoryError at = e.at("y = f(x)", {4, 8}).at("z = 1; y = f(x)", {11, 15});  // moved once more
    EXPECT_EQ(std::string(at.what()),
              "out of memory: a kernel's own work could not be had; 1000 bytes available\nline 1: z = 1; y = f(x)\n"
              "                   ^^^^");
    EXPECT_EQ(at.span().begin, 11u);
}

}  // namespace

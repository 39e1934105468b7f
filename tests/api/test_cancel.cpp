// Stopping a call: CancelToken (from another thread, through its poll function), Runtime::cancel(),
// and what a cancelled call leaves behind (new names unbound, in-place targets named). CPU backend.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

jit::Runtime cpu_runtime(int threads = 0) {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = threads;
    return jit::Runtime(o);
}

// A reduction over 10^10 broadcast elements from 8 MiB of inputs: many seconds of work if
// nothing stopped it (the partial sums of its blocks take 160 MB).
constexpr const char* kEndless = "s = sum(a + b)";

jit::Environment endless_env() {
    return {{"a", jit::Arg(jit::Array::zeros(jit::DType::Float64, {10000, 1}, jit::Backend::Cpu))},
            {"b", jit::Arg(jit::Array::zeros(jit::DType::Float64, {1000000}, jit::Backend::Cpu))}};
}

// Cancels `stop` from another thread once the call's progress callback has been called (the
// call is then well inside its run, past parse, check and prepare).
struct CancelWhenRunning {
    std::atomic<bool> running{false}, ended{false};
    jit::CallOptions options;
    std::thread canceller;
    template <class Stop>
    explicit CancelWhenRunning(Stop stop) {
        options.progress = [this](const jit::Progress& p) {
            if (p.phase == jit::Progress::Phase::Run && p.done > 0) running = true;
        };
        canceller = std::thread([this, stop] {
            while (!running && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (running) stop();
        });
    }
    ~CancelWhenRunning() {
        ended = true;  // a call that failed otherwise: no waiting for ever
        canceller.join();
    }
};

}  // namespace

TEST(CancelToken, CopiesShareOneStateAndResetClearsIt) {
    jit::CancelToken a;
    jit::CancelToken b = a;
    EXPECT_FALSE(b.cancelled());
    a.cancel();
    EXPECT_TRUE(b.cancelled());
    b.reset();
    EXPECT_FALSE(a.cancelled());
}

TEST(CancelToken, PollCancelsWhenTheFunctionSaysSo) {
    bool say = false;
    jit::CancelToken t([&] { return say; });
    EXPECT_FALSE(t.poll());
    say = true;
    EXPECT_TRUE(t.poll());
    EXPECT_TRUE(t.cancelled());
}

TEST(CancelToken, PollThatThrowsCancels) {
    jit::CancelToken t([]() -> bool { throw std::runtime_error("host failure"); });
    EXPECT_TRUE(t.poll());
}

TEST(Cancel, CancelledTokenStopsTheCallBeforeItBegins) {
    jit::Runtime rt = cpu_runtime();
    jit::Environment env{{"x", jit::Arg(jit::Array::from(std::vector<double>{1, 2, 3}, {}, jit::Backend::Cpu))}};
    jit::CallOptions o;
    o.cancel.emplace();
    o.cancel->cancel();
    EXPECT_THROW(rt.run("y = x * 2", env, o), jit::CancelledError);
    EXPECT_EQ(env.count("y"), 0u);
    o.cancel->reset();
    rt.run("y = x * 2", env, o);
    EXPECT_EQ(env.at("y").array().to_vector<double>(), (std::vector<double>{2, 4, 6}));
}

TEST(Cancel, TokenCancelledFromAnotherThreadStopsARunningStatementAndBindsNothing) {
    jit::Runtime rt = cpu_runtime();
    jit::Environment env = endless_env();
    env.insert_or_assign(
        "s", jit::Arg(jit::Array::from(std::vector<float>{7}, {}, jit::Backend::Cpu)));  // another shape: not in place
    jit::CancelToken stop;
    CancelWhenRunning when([stop] { stop.cancel(); });
    when.options.cancel = stop;
    try {
        rt.run(kEndless, env, when.options);
        FAIL() << "the call was not stopped";
    } catch (const jit::CancelledError& e) {
        EXPECT_TRUE(e.partly_written().empty());
        EXPECT_STREQ(e.what(), "cancelled");
    }
    EXPECT_EQ(env.at("s").array().to_vector<float>(), std::vector<float>{7});
}

TEST(Cancel, RuntimeCancelStopsACallInFlightAndLaterCallsRun) {
    jit::Runtime rt = cpu_runtime();
    jit::Environment env = endless_env();
    {
        CancelWhenRunning when([&rt] { rt.cancel(); });
        EXPECT_THROW(rt.run(kEndless, env, when.options), jit::CancelledError);
    }
    EXPECT_EQ(env.count("s"), 0u);
    // The runtime is usable, and a cancel before a call does not stop it.
    jit::Environment small{{"x", jit::Arg(jit::Array::from(std::vector<double>{1, 2}, {}, jit::Backend::Cpu))}};
    rt.run("y = sum(x)", small);
    EXPECT_EQ(small.at("y").array().to_vector<double>(), std::vector<double>{3});
}

TEST(Cancel, PollFunctionRunsOnTheCallingThreadAndStopsTheCall) {
    jit::Runtime rt = cpu_runtime(2);
    jit::Environment env = endless_env();
    const auto caller = std::this_thread::get_id();
    std::atomic<int> polls{0}, elsewhere{0};
    jit::CallOptions o;
    o.cancel.emplace([&] {
        if (std::this_thread::get_id() != caller) ++elsewhere;
        return ++polls >= 3;
    });
    EXPECT_THROW(rt.run(kEndless, env, o), jit::CancelledError);
    EXPECT_GE(polls.load(), 3);
    EXPECT_EQ(elsewhere.load(), 0);
}

TEST(Cancel, EvalWithATokenStops) {
    jit::Runtime rt = cpu_runtime();
    jit::Array a = jit::Array::from(std::vector<double>(10000, 1.0), {}, jit::Backend::Cpu);
    jit::Array b = jit::Array::from(std::vector<double>(1000000, 1.0), {}, jit::Backend::Cpu);
    jit::CancelToken stop;
    CancelWhenRunning when([stop] { stop.cancel(); });
    when.options.cancel = stop;
    // a[:, None] + b through broadcasting of a (10000, 1) view: 10^10 elements.
    jit::Array col = a.reshape({10000, 1});
    EXPECT_THROW(rt.eval("sum(a + b)", {jit::Arg(col), jit::Arg(b)}, when.options), jit::CancelledError);
}

TEST(Cancel, InPlaceWriteCutShortNamesTheTargetAndLeavesItPartlyWritten) {
    // One thread: blocks are written in order, so a stop mid-stage leaves new values at the
    // front and old ones at the back.
    jit::Runtime rt = cpu_runtime(1);
    const std::size_t n = std::size_t{1} << 24;  // ~10 ns an element below: far more than 20 ms
    jit::Environment env{{"x", jit::Arg(jit::Array::from(std::vector<float>(n, 0.5f), {}, jit::Backend::Cpu))}};
    jit::CallOptions o;
    int polls = 0;
    o.cancel.emplace([&polls] { return ++polls == 2; });  // the second poll (~20 ms in) stops the call
    try {
        rt.run("x = sqrt(x * x + 1) * sin(x) + cos(x) * exp(-x) + log(x + 2)", env, o);
        FAIL() << "the call was not stopped";
    } catch (const jit::CancelledError& e) {
        EXPECT_EQ(e.partly_written(), std::vector<std::string>{"x"});
        EXPECT_NE(std::string(e.what()).find("'x' may be partly written"), std::string::npos) << e.what();
    }
    const std::vector<float> x = env.at("x").array().to_vector<float>();
    EXPECT_NE(x.front(), 0.5f);  // written
    EXPECT_EQ(x.back(), 0.5f);   // not reached
}

TEST(Cancel, InPlaceAllOrNothingLeavesTheTargetUntouchedWhenStopped) {
    jit::Runtime rt = cpu_runtime(1);
    const std::size_t n = std::size_t{1} << 24;
    jit::Environment env{{"x", jit::Arg(jit::Array::from(std::vector<float>(n, 0.5f), {}, jit::Backend::Cpu))}};
    jit::CallOptions o;
    o.in_place_all_or_nothing = true;
    int polls = 0;
    o.cancel.emplace([&polls] { return ++polls == 2; });  // mid-stage, as in the test above
    try {
        rt.run("x = sqrt(x * x + 1) * sin(x) + cos(x) * exp(-x) + log(x + 2)", env, o);
        FAIL() << "the call was not stopped";
    } catch (const jit::CancelledError& e) {
        EXPECT_TRUE(e.partly_written().empty()) << e.what();
    }
    const std::vector<float> x = env.at("x").array().to_vector<float>();
    EXPECT_EQ(x.front(), 0.5f);
    EXPECT_EQ(x.back(), 0.5f);
    // Not stopped: the result lands in the same array.
    jit::Array before = env.at("x").array();
    o.cancel.reset();
    rt.run("x = x * 2", env, o);
    EXPECT_EQ(env.at("x").array().data(), before.data());
    EXPECT_EQ(env.at("x").array().to_vector<float>().front(), 1.0f);
}

TEST(Cancel, InPlaceTargetOfAStageNotStartedIsNotNamed) {
    // The reduction runs first and is stopped; the elementwise stage writing x never starts.
    jit::Runtime rt = cpu_runtime();
    jit::Environment env = endless_env();
    env.insert_or_assign("x", jit::Arg(jit::Array::from(std::vector<double>{1, 2, 3}, {}, jit::Backend::Cpu)));
    jit::CancelToken stop;
    CancelWhenRunning when([stop] { stop.cancel(); });
    when.options.cancel = stop;
    try {
        rt.run("x = x + sum(a + b)", env, when.options);
        FAIL() << "the call was not stopped";
    } catch (const jit::CancelledError& e) {
        EXPECT_TRUE(e.partly_written().empty()) << e.what();
    }
    EXPECT_EQ(env.at("x").array().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Cancel, FullReductionIntoAnExistingArrayStoppedBeforeItsResultLeavesTheOldValue) {
    // The partial sums run first; the result is written only once they are all done.
    jit::Runtime rt = cpu_runtime();
    jit::Environment env = endless_env();
    env.insert_or_assign("s", jit::Arg(jit::Array::from(std::vector<double>{1.5}, {}, jit::Backend::Cpu)));
    jit::CancelToken stop;
    CancelWhenRunning when([stop] { stop.cancel(); });
    when.options.cancel = stop;
    try {
        rt.run(kEndless, env, when.options);
        FAIL() << "the call was not stopped";
    } catch (const jit::CancelledError& e) {
        EXPECT_TRUE(e.partly_written().empty()) << e.what();
    }
    EXPECT_EQ(env.at("s").array().to_vector<double>(), std::vector<double>{1.5});
}

TEST(Cancel, ProgressCountsElementsOfTheWholeProgram) {
    jit::Runtime rt = cpu_runtime();
    jit::Environment env = endless_env();
    std::uint64_t total = 0;
    jit::CancelToken stop;
    jit::CallOptions o;
    o.cancel = stop;
    o.progress = [&](const jit::Progress& p) {
        total = p.total;
        EXPECT_LE(p.done, p.total);
        stop.cancel();
    };
    EXPECT_THROW(rt.run(kEndless, env, o), jit::CancelledError);
    EXPECT_EQ(total, std::uint64_t{10000} * 1000000);
}

// A repeated call (api/runtime.cpp's repeat()): the same text over bindings like an earlier
// call's runs the program that call ran without the whole way through the runtime; anything
// that would change the program, its checks or its placement goes the whole way again.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace jit;

namespace {

RuntimeOptions cpu_options() {
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    return o;
}

Array host(std::vector<float> v) { return Array::from(v, {}, Backend::Cpu); }

}  // namespace

TEST(RepeatedCall, CountsAsAMemoryCacheHit) {
    Runtime rt(cpu_options());
    const Array a = host({1, 2}), b = host({3, 4});
    for (int i = 0; i < 5; ++i) (void)rt.eval("a*2 + b", {a, b});
    EXPECT_EQ(rt.stats().misses, 1u);
    EXPECT_EQ(rt.stats().hits, 4u);
}

TEST(RepeatedCall, ReadsTheNewValuesOfItsArguments) {
    Runtime rt(cpu_options());
    EXPECT_EQ(rt.eval("a*2 + b", {host({1, 2}), host({3, 4})}).to_vector<float>(), (std::vector<float>{5, 8}));
    EXPECT_EQ(rt.eval("a*2 + b", {host({5, 6}), host({0, 1})}).to_vector<float>(), (std::vector<float>{10, 13}));
    EXPECT_EQ(rt.eval("a*x", {host({1, 2}), 2.0}).to_vector<float>(), (std::vector<float>{2, 4}));
    EXPECT_EQ(rt.eval("a*x", {host({1, 2}), 3.0}).to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(RepeatedCall, AnotherShapeIsAnotherProgram) {
    Runtime rt(cpu_options());
    (void)rt.eval("a + b", {host({1, 2}), host({3, 4})});
    const Array r = rt.eval("a + b", {host({1, 2, 3}), host({1, 1, 1})});
    EXPECT_EQ(r.shape(), (Shape{3}));
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2, 3, 4}));
    EXPECT_EQ(rt.stats().misses, 2u);
}

TEST(RepeatedCall, AnotherLayoutIsAnotherProgram) {
    Runtime rt(cpu_options());
    const Array m = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    const Array n = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}, Backend::Cpu);
    (void)rt.eval("a + 0", {m.transpose()});
    const Array r = rt.eval("a + 0", {n});  // the same shape (3, 2), C-contiguous this time
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const Array t = rt.eval("a + 0", {m.transpose()});
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(RepeatedCall, AnotherDtypeOrScalarKindIsAnotherProgram) {
    Runtime rt(cpu_options());
    EXPECT_EQ(rt.eval("a*x", {host({1, 2}), 2.0}).dtype(), DType::Float32);
    EXPECT_EQ(rt.eval("a*x", {Array::from(std::vector<double>{1, 2}, {}, Backend::Cpu), 2.0}).dtype(), DType::Float64);
    const Array i = Array::from(std::vector<std::int32_t>{1, 2}, {}, Backend::Cpu);
    EXPECT_EQ(rt.eval("a*x", {i, std::int64_t{2}}).dtype(), DType::Int32);
    EXPECT_EQ(rt.eval("a*x", {i, 2.5}).dtype(), DType::Float64);  // an int array times a float
}

TEST(RepeatedCall, AReadOnlyTargetIsRefusedAfterAWritableOne) {
    Runtime rt(cpu_options());
    Environment env{{"x", host({1, 2})}};
    rt.run("x = x + 1", env);
    EXPECT_EQ(env.at("x").array().to_vector<float>(), (std::vector<float>{2, 3}));
    std::vector<float> memory{1, 2};
    const Array frozen = Array::view(static_cast<const void*>(memory.data()), DType::Float32, {2}, {1}, Backend::Cpu);
    ASSERT_TRUE(frozen.read_only());
    Environment ro{{"x", frozen}};
    EXPECT_THROW(rt.run("x = x + 1", ro), Error);
    EXPECT_EQ(memory, (std::vector<float>{1, 2}));
}

TEST(RepeatedCall, AClearedCacheCompilesAgain) {
    Runtime rt(cpu_options());
    const Array a = host({1, 2});
    (void)rt.eval("a*3", {a});
    rt.clear_memory_cache();
    EXPECT_EQ(rt.eval("a*3", {a}).to_vector<float>(), (std::vector<float>{3, 6}));
    EXPECT_EQ(rt.stats().misses, 2u);
}

TEST(RepeatedCall, AProgramEvictedFromTheCacheIsPreparedAgain) {
    RuntimeOptions o = cpu_options();
    o.memory_cache_entries = 1;
    Runtime rt(o);
    const Array a = host({1, 2});
    (void)rt.eval("a*3", {a});
    (void)rt.eval("a*4", {a});  // evicts a*3's program
    EXPECT_EQ(rt.eval("a*3", {a}).to_vector<float>(), (std::vector<float>{3, 6}));
    EXPECT_EQ(rt.stats().misses, 3u);
}

TEST(RepeatedCall, TwoRuntimesOnOneThreadKeepTheirOwnPrograms) {
    Runtime r1(cpu_options()), r2(cpu_options());
    const Array a = host({1, 2});
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r1.eval("a*2", {a}).to_vector<float>(), (std::vector<float>{2, 4}));
        EXPECT_EQ(r2.eval("a*2", {a}).to_vector<float>(), (std::vector<float>{2, 4}));
    }
    EXPECT_EQ(r1.stats().misses, 1u);
    EXPECT_EQ(r2.stats().misses, 1u);
    EXPECT_EQ(r1.stats().hits, 2u);
}

TEST(RepeatedCall, ARuntimeDestroyedLeavesNothingToRepeat) {
    const Array a = host({1, 2});
    for (int i = 0; i < 3; ++i) {  // the runtimes may share an address
        Runtime rt(cpu_options());
        EXPECT_EQ(rt.eval("a*5", {a}).to_vector<float>(), (std::vector<float>{5, 10}));
        EXPECT_EQ(rt.eval("a*5", {a}).to_vector<float>(), (std::vector<float>{5, 10}));
        EXPECT_EQ(rt.stats().misses, 1u);
    }
}

TEST(RepeatedCall, EvalByPositionAndByNameAndRunShareTheProgram) {
    Runtime rt(cpu_options());
    const Array a = host({1, 2}), b = host({3, 4});
    (void)rt.eval("a - b", {a, b});
    EXPECT_EQ(rt.eval("a - b", Named{{"a", a}, {"b", b}}).to_vector<float>(), (std::vector<float>{-2, -2}));
    Environment env{{"a", a}, {"b", b}};
    EXPECT_EQ(rt.run("a - b", env).to_vector<float>(), (std::vector<float>{-2, -2}));
    EXPECT_EQ(rt.stats().misses, 1u);
}

TEST(RepeatedCall, RunStillAssignsItsTargets) {
    Runtime rt(cpu_options());
    Environment env{{"a", host({1, 2})}};
    for (int i = 0; i < 3; ++i) rt.run("c = a * 2; a = c", env);
    EXPECT_EQ(env.at("a").array().to_vector<float>(), (std::vector<float>{8, 16}));
    EXPECT_EQ(env.at("c").array().to_vector<float>(), (std::vector<float>{8, 16}));
}

TEST(RepeatedCall, ThreadsRepeatTheirOwnCalls) {
    Runtime rt(cpu_options());
    std::vector<std::thread> threads;
    std::vector<int> wrong(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            const Array a = host({static_cast<float>(t), 1});
            for (int i = 0; i < 200; ++i)
                if (rt.eval("a*2 + 1", {a}).to_vector<float>() != std::vector<float>{2.0f * t + 1, 3}) ++wrong[t];
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong, (std::vector<int>(4, 0)));
    EXPECT_EQ(rt.stats().hits + rt.stats().misses, 800u);
}

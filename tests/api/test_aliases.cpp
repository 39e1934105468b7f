// One array bound under two names (issue 31's outside tester: `a = a + b` with b = a[::-1]): an
// in-place target that another name reaches in another way is computed apart and copied in, as
// NumPy computes an overlapping ufunc; the very same view under two names is written directly;
// a later statement that would read the other name after the write is refused before anything
// is written (run/direct.cpp, outputs_apart). CPU backend; the same code runs for CUDA arrays.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

std::vector<double> iota(std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(i);
    return v;
}

}  // namespace

TEST(Aliases, ATargetReadReversedUnderAnotherNameGetsNumPysAnswer) {
    const std::int64_t n = 4096;  // past the sizes one block writes before it reads
    Array x = Array::from(iota(n), {}, Backend::Cpu);
    Environment env{{"a", x}, {"b", x.slice(0, n - 1, -n - 1, -1)}};
    cpu().run("a = a + b", env);
    const std::vector<double> got = x.to_vector<double>();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], static_cast<double>(n - 1)) << i;
    EXPECT_EQ(env.at("a").array().data(), x.data());  // still the caller's array
}

TEST(Aliases, ShiftedViewsOfOneBufferAreNotARunningSum) {
    Array buf = Array::from(iota(6), {}, Backend::Cpu);
    Environment env{{"a", buf.slice(0, 1, 6)}, {"b", buf.slice(0, 0, 5)}};
    cpu().run("a = a + b", env);
    EXPECT_EQ(buf.to_vector<double>(), (std::vector<double>{0, 1, 3, 5, 7, 9}));
}

TEST(Aliases, ASquareArrayAndItsTransposeUnderTwoNames) {
    const std::int64_t n = 64;
    Array m = Array::from(iota(n * n), {n, n}, Backend::Cpu);
    Environment env{{"a", m}, {"b", m.transpose()}};
    cpu().run("a = a + b", env);
    const std::vector<double> got = m.to_vector<double>();
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            ASSERT_EQ(got[static_cast<std::size_t>(i * n + j)], static_cast<double>(i * n + j + j * n + i));
}

TEST(Aliases, TheSameViewUnderTwoNamesIsReadWhereItIsWritten) {
    Array x = Array::from(iota(5), {}, Backend::Cpu);
    Environment env{{"a", x}, {"b", x}};
    cpu().run("a = a + b", env);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 8}));
}

TEST(Aliases, ALaterStatementReadingTheOtherNameIsRefusedAndNothingIsWritten) {
    Array buf = Array::from(iota(6), {}, Backend::Cpu);
    Environment env{{"a", buf.slice(0, 1, 6)}, {"b", buf.slice(0, 0, 5)}};
    EXPECT_THROW(cpu().run("a = a + 1; c = b * 2", env), ArgumentError);
    EXPECT_THROW(cpu().run("a = a + 1; c = b * 2; a = a * 2", env), ArgumentError);
    EXPECT_EQ(buf.to_vector<double>(), iota(6));
}

TEST(Aliases, AValueComputedBeforeTheWriteMayBeUsedAfterIt) {
    Array buf = Array::from(iota(6), {}, Backend::Cpu);
    Environment env{{"a", buf.slice(0, 1, 6)}, {"b", buf.slice(0, 0, 5)}};
    cpu().run("t = b * 2; a = a + t; c = t", env);
    EXPECT_EQ(buf.to_vector<double>(), (std::vector<double>{0, 1, 4, 7, 10, 13}));
    EXPECT_EQ(env.at("c").array().to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 8}));
}

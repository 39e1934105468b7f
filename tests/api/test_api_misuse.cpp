// What an outside tester of the C++ API did wrong on purpose, each a typed error now instead of
// a read past a buffer, a null read or a negative extent: Array::from with another count of
// values than the shape holds, an undefined Array bound or read, slice steps near the int64
// limits, and names that are no text in messages. CPU backend.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <tuple>
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

TEST(ApiMisuse, FromWithAnotherCountOfValuesThanTheShapeHoldsIsAnArgumentError) {
    // Three values for four elements read a fourth past the vector (ASan: heap-buffer-overflow).
    EXPECT_THROW(Array::from(std::vector<float>{1, 2, 3}, {2, 2}, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::from(std::vector<float>{1, 2, 3, 4, 5}, {2, 2}, Backend::Cpu), ArgumentError);
    const std::vector<double> v{1, 2, 3};
    EXPECT_THROW(Array::from(std::span<const double>(v), {4}, Backend::Cpu), ArgumentError);
    EXPECT_EQ(Array::from(std::vector<float>{1, 2, 3, 4}, {2, 2}, Backend::Cpu).to_vector<float>(),
              (std::vector<float>{1, 2, 3, 4}));
}

TEST(ApiMisuse, AnUndefinedArrayBoundToANameIsAnArgumentErrorNamingIt) {
    try {
        cpu().eval("a + 1", {{"a", Array()}});
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("'a' is bound to an undefined array"), std::string::npos) << e.what();
    }
    Kernel k = compile("a * 2", cpu());
    EXPECT_THROW(k(Array()), ArgumentError);
}

TEST(ApiMisuse, ReadingAnUndefinedArrayIsAnArgumentError) {
    Environment env;
    const Array none = cpu().run("# only a comment", env);
    ASSERT_FALSE(none.defined());
    EXPECT_THROW(none.to_vector<float>(), ArgumentError);
    EXPECT_THROW(none.to_vector<double>(), ArgumentError);  // through the conversion too
    float x = 0;
    EXPECT_THROW(none.copy_to_host(&x), ArgumentError);
}

TEST(ApiMisuse, SliceStepsNearTheInt64LimitsTakeNumpysCount) {
    const Array a = Array::from(std::vector<float>{1, 2, 3, 4}, {}, Backend::Cpu);
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    // NumPy: a[0:4:2**63-2], a[0:4:2**63-1], a[1:2**63-1:2**63-1], a[2**63-1:-2**63:-2**63] are one element.
    for (const auto& [start, stop, step, first] :
         std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, float>>{
             {0, 4, kMax - 1, 1.0f}, {0, 4, kMax, 1.0f}, {1, kMax, kMax, 2.0f}, {kMax, kMin, kMin, 4.0f}}) {
        const Array v = a.slice(0, start, stop, step);
        ASSERT_EQ(v.shape(), (Shape{1})) << start << ":" << stop << ":" << step;
        EXPECT_EQ(v.to_vector<float>(), std::vector<float>{first});
        EXPECT_EQ(cpu().eval("sum(x)", {{"x", v}}).item<double>(), first);
    }
    EXPECT_EQ(a.slice(0, 3, -5, -2).to_vector<float>(), (std::vector<float>{4, 2}));
}

TEST(ApiMisuse, ABoundNameInAMessageIsShownPrintableAndCut) {
    const Array a = Array::from(std::vector<float>{1, 2}, {}, Backend::Cpu);
    try {
        cpu().eval("x * 2", {{"x", a}, {"\x1b[2J\x1b]0;title\x07\xff", a}});
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
        EXPECT_EQ(m.find('\x07'), std::string::npos) << m;
        const std::string shown = std::string("'?[2J?]0;title?") + "?' is bound but";  // (not a "??'" trigraph)
        EXPECT_NE(m.find(shown), std::string::npos) << m;
    }
    try {
        cpu().eval("x * 2", {{"x", a}, {std::string(1 << 20, 'q'), a}});
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        EXPECT_LT(std::string(e.what()).size(), 300u);
        EXPECT_NE(std::string(e.what()).find("... (1048576 bytes)"), std::string::npos) << e.what();
    }
}

}  // namespace

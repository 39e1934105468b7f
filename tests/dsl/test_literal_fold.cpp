// Literal-only expressions are computed as Python computes them (dsl/literal.hpp), checked
// against golden/literals.tsv, which tests/dsl/gen_literal_cases.py writes from Python itself.
#include "dsl/literal.hpp"
#include "dsl/lower.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace jit;

namespace {

struct Case {
    std::string text, kind, value;
};

std::vector<Case> cases() {
    std::ifstream in(std::string(JITEXPR_TEST_DATA) + "/golden/literals.tsv");
    std::vector<Case> r;
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        Case c;
        std::getline(ls, c.text, '\t');
        std::getline(ls, c.kind, '\t');
        std::getline(ls, c.value);
        r.push_back(c);
    }
    return r;
}

dsl::Folded fold(const std::string& text) {
    const syntax::Module m = syntax::parse(text);
    dsl::LiteralFolder f(text, [](std::string_view n) { return dsl::named_constant(n); });
    const syntax::Expr& e = *m.statements.at(0).value;
    if (!f.is_literal(e)) throw std::runtime_error("not literal: " + text);
    return f.fold(e);
}

bool same_double(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

TEST(LiteralFold, EveryGoldenCaseMatchesPython) {
    const auto all = cases();
    ASSERT_GE(all.size(), 600u);
    for (const Case& c : all) {
        SCOPED_TRACE(c.text);
        if (c.kind == "ValueError") {
            EXPECT_THROW(fold(c.text), ValueError);
            continue;
        }
        if (c.kind == "TypeError") {
            EXPECT_THROW(fold(c.text), TypeError);
            continue;
        }
        dsl::Folded f;
        ASSERT_NO_THROW(f = fold(c.text));
        if (c.kind == "int") {
            ASSERT_EQ(f.kind, dsl::Folded::Kind::Int);
            EXPECT_EQ(f.big ? f.digits : f.value.to_string(), c.value);
        } else if (c.kind == "bool") {
            ASSERT_EQ(f.kind, dsl::Folded::Kind::Bool);
            EXPECT_EQ(f.value.b, c.value == "1");
        } else if (c.kind == "float") {
            ASSERT_EQ(f.kind, dsl::Folded::Kind::Float);
            EXPECT_TRUE(same_double(f.value.f, std::strtod(c.value.c_str(), nullptr))) << f.value.f;
        } else {
            ASSERT_EQ(f.kind, dsl::Folded::Kind::Complex);
            const auto sp = c.value.find(' ');
            EXPECT_TRUE(same_double(f.value.f, std::strtod(c.value.substr(0, sp).c_str(), nullptr))) << f.value.f;
            EXPECT_TRUE(same_double(f.value.im, std::strtod(c.value.substr(sp + 1).c_str(), nullptr))) << f.value.im;
        }
    }
}

TEST(LiteralFold, IntegerPastUint64KeepsItsNearestDouble) {
    const dsl::Folded f = fold("2**64 + 1");
    EXPECT_TRUE(f.big);
    ASSERT_TRUE(f.as_float.has_value());
    EXPECT_EQ(*f.as_float, 18446744073709551616.0);
    EXPECT_FALSE(fold("2**1024").as_float.has_value());  // past the largest double
}

TEST(LiteralFold, TwoBoolsFollowNumPysBoolRules) {
    EXPECT_EQ(fold("True + True").kind, dsl::Folded::Kind::Bool);
    EXPECT_TRUE(fold("True + True").value.b);
    EXPECT_FALSE(fold("~True").value.b);
    EXPECT_THROW(fold("True - True"), TypeError);
    EXPECT_THROW(fold("-True"), TypeError);
    EXPECT_EQ(fold("True + 1").value.to_string(), "2");  // a bool meeting an int is the int 1
}

TEST(LiteralFold, ResultPast8192BitsIsAValueErrorNotAnAllocation) {
    EXPECT_THROW(fold("2**2**40"), ValueError);
    EXPECT_THROW(fold("1 << 100000"), ValueError);
    EXPECT_THROW(fold("(2**8000) * (2**8000)"), ValueError);
}

TEST(LiteralFold, ShadowedConstantIsNotALiteral) {
    const std::string text = "2 * pi";
    const syntax::Module m = syntax::parse(text);
    dsl::LiteralFolder shadowed(text, [](std::string_view) { return std::nullopt; });
    EXPECT_FALSE(shadowed.is_literal(*m.statements[0].value));
}

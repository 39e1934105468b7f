// The public calls tools are built on (the CLI uses nothing else): the language as data
// (jit/language.hpp), precompiling (jit/precompile.hpp) and the disk cache (jit/disk_cache.hpp).
// NVRTC only: no GPU needed.
#include <jit/disk_cache.hpp>
#include <jit/error.hpp>
#include <jit/language.hpp>
#include <jit/precompile.hpp>

#include "tests/cache/test_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace jit;

namespace {

const FunctionInfo* find_function(std::string_view id) {
    for (const auto& f : functions())
        if (f.id == id) return &f;
    return nullptr;
}

TEST(LanguageApi, FunctionsCarryTheirNamesKindAndArity) {
    const FunctionInfo* asin = find_function("Arcsin");
    ASSERT_NE(asin, nullptr);
    EXPECT_EQ(asin->kind, FunctionInfo::Kind::Function);
    EXPECT_EQ(asin->names, (std::vector<std::string>{"arcsin", "asin"}));
    EXPECT_EQ(asin->arity, 1);
    const FunctionInfo* add = find_function("Add");
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(add->kind, FunctionInfo::Kind::Operator);
    EXPECT_EQ(add->token, "+");
    EXPECT_EQ(add->names, (std::vector<std::string>{"add"}));  // its NumPy ufunc name
    const FunctionInfo* sum = find_function("Sum");
    ASSERT_NE(sum, nullptr);
    EXPECT_EQ(sum->kind, FunctionInfo::Kind::Reduction);
}

TEST(LanguageApi, BuiltinNamesAreSortedAndHoldFunctionsDtypesAndConstants) {
    const auto names = builtin_names();
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    for (const char* n : {"asin", "float32", "pi", "where"})
        EXPECT_TRUE(std::binary_search(names.begin(), names.end(), n)) << n;
}

TEST(LanguageApi, ParsedTreeHasSpansAndOperatorsAsWritten) {
    const parsed::Module m = parsed::parse("y = f(a, axis=1) + a // 2\nb");
    ASSERT_EQ(m.statements.size(), 2u);
    const parsed::Statement& s = m.statements[0];
    EXPECT_EQ(s.target, "y");
    ASSERT_NE(s.value, nullptr);
    EXPECT_EQ(s.value->kind, parsed::ExprKind::Chain);
    EXPECT_EQ(s.value->ops, (std::vector<std::string>{"+"}));  // a chain per precedence level
    EXPECT_EQ(s.value->operands.at(1)->ops, (std::vector<std::string>{"//"}));
    const parsed::Expr& call = *s.value->operands.at(0);
    EXPECT_EQ(call.kind, parsed::ExprKind::Call);
    EXPECT_EQ(call.text, "f");
    ASSERT_EQ(call.keywords.size(), 1u);
    EXPECT_EQ(call.keywords[0].name, "axis");
    EXPECT_EQ(call.keywords[0].value->int_value, 1u);
    EXPECT_EQ(call.span.begin, 4u);
    EXPECT_EQ(call.span.end, 16u);
    EXPECT_TRUE(m.statements[1].target.empty());
}

TEST(LanguageApi, ParseErrorPointsAtTheText) {
    try {
        parsed::parse("y = (a +");
        FAIL() << "no ParseError";
    } catch (const ParseError& e) {
        EXPECT_NE(std::string(e.what()).find('^'), std::string::npos) << e.what();
    }
}

PrecompileOptions sm90(const TempDir& dir) {
    PrecompileOptions o;
    o.arch = std::pair{9, 0};
    o.cache_dir = dir / "cache";
    return o;
}

TEST(PrecompileApi, StoresEachKernelOnceAndTheCacheCommandsSeeThem) {
    TempDir dir;
    Precompiler pc(sm90(dir));
    EXPECT_EQ(pc.cc_major(), 9);
    const std::map<std::string, Declaration, std::less<>> vars = {{"x", Declaration::array(DType::Float64, {100, 7})},
                                                                  {"s", Declaration::scalar(DType::Float64)}};
    const auto first = pc.add("m = x - mean(x, axis=0) * s", vars);
    ASSERT_EQ(first.size(), 2u);
    for (const auto& k : first) EXPECT_FALSE(k.already_cached) << k.name;
    const auto second = pc.add("m = x - mean(x, axis=0) * s", vars);
    for (const auto& k : second) EXPECT_TRUE(k.already_cached) << k.name;

    const DiskCacheReport stats = disk_cache_stats(dir / "cache");
    ASSERT_TRUE(stats.enabled) << stats.disabled_reason;
    EXPECT_EQ(stats.directory, pc.cache_dir());
    EXPECT_EQ(stats.entries, 2u);
    EXPECT_GT(stats.bytes, 0u);
    const DiskCacheReport verify = verify_disk_cache(dir / "cache");
    EXPECT_EQ(verify.checked, 2u);
    EXPECT_EQ(verify.valid, 2u);
    EXPECT_EQ(verify.removed, 0u);
    const DiskCacheReport clear = clear_disk_cache(dir / "cache");
    EXPECT_EQ(clear.removed, 2u);
    EXPECT_EQ(disk_cache_stats(dir / "cache").entries, 0u);
}

TEST(PrecompileApi, ABadProgramThrowsTheLanguagesErrorWithACaret) {
    TempDir dir;
    try {
        precompile("y = q * 2", {{"x", Declaration::array(DType::Float32, {8})}}, sm90(dir));
        FAIL() << "no NameError";
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("unknown name 'q'"), std::string::npos) << e.what();
    }
}

}  // namespace

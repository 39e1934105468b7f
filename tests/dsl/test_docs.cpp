// docs/language.md's reference section is generated from the op table and must stay in step.
#include "dsl/ir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace {
const std::string kBegin = "<!-- BEGIN GENERATED: op table -->\n";
const std::string kEnd = "<!-- END GENERATED: op table -->";
}  // namespace

TEST(LanguageDoc, ReferenceMatchesOpTable) {
    const std::string path = std::string(JITEXPR_SOURCE_DIR) + "/docs/language.md";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "cannot read " << path;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string doc = ss.str();
    const auto b = doc.find(kBegin), e = doc.find(kEnd);
    ASSERT_NE(b, std::string::npos);
    ASSERT_NE(e, std::string::npos);
    const std::string generated = jit::ir::op_reference_markdown();
    const std::string current = doc.substr(b + kBegin.size(), e - b - kBegin.size());
    if (const char* u = std::getenv("JITEXPR_UPDATE_GOLDEN"); u && std::string(u) == "1" && current != generated) {
        doc.replace(b + kBegin.size(), e - b - kBegin.size(), generated);
        std::ofstream(path) << doc;
        GTEST_SKIP() << "rewrote " << path;
    }
    EXPECT_EQ(current, generated) << "run the tests with JITEXPR_UPDATE_GOLDEN=1 to regenerate docs/language.md";
}

TEST(LanguageDoc, EveryOpHasDocumentation) {
    for (const auto& i : jit::ir::op_table()) EXPECT_FALSE(i.doc.empty()) << i.id;
}

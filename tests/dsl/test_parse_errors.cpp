// Parser error messages against golden files: tests/dsl/golden/errors/NAME.input holds the text
// (used byte for byte), NAME.expect the exact what() of the ParseError it must raise.
// JITEXPR_UPDATE_GOLDEN=1 rewrites the .expect files from the current output; review the diff.
#include "dsl/syntax.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool update_mode() {
    const char* v = std::getenv("JITEXPR_UPDATE_GOLDEN");
    return v != nullptr && std::string(v) == "1";
}

TEST(ParseErrorGolden, EveryInputGivesItsExpectedMessage) {
    const fs::path dir = fs::path(JITEXPR_TEST_DATA) / "golden" / "errors";
    std::vector<fs::path> inputs;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() == ".input") inputs.push_back(entry.path());
    }
    std::sort(inputs.begin(), inputs.end());
    ASSERT_GE(inputs.size(), 15u) << "golden cases missing from " << dir;

    for (const fs::path& input : inputs) {
        SCOPED_TRACE(input.filename().string());
        const std::string text = read_file(input);
        std::string got;
        try {
            jit::syntax::parse(text);
            ADD_FAILURE() << "parsed without error";
            continue;
        } catch (const jit::ParseError& e) {
            got = e.what();
        }
        fs::path expect = input;
        expect.replace_extension(".expect");
        if (update_mode()) {
            std::ofstream(expect, std::ios::binary) << got << "\n";
            continue;
        }
        ASSERT_TRUE(fs::exists(expect)) << "no " << expect.filename() << "; run with JITEXPR_UPDATE_GOLDEN=1";
        std::string want = read_file(expect);
        if (!want.empty() && want.back() == '\n') want.pop_back();  // the file ends with a newline
        EXPECT_EQ(got, want);
    }
}

}  // namespace

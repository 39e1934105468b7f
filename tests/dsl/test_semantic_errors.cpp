// Golden files for the messages of checking errors (names, types, shapes, values): each
// golden/semantic/NAME.input holds `#bind NAME DTYPE SHAPE` lines (or `#bind NAME DTYPE scalar`;
// DTYPE a dtype name, or S8, U4, string, large_string for the string columns;
// an array's line may end in `strict` and `read-only`, the Binding's flags) and then the program; NAME.expect holds the exact what() of the error it must raise.
// JITEXPR_UPDATE_GOLDEN=1 rewrites the .expect files.
#include "dsl/lower.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using namespace jit;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Splits the #bind header from the program and builds the bindings.
std::string parse_case(const std::string& input, std::map<std::string, dsl::Binding, std::less<>>& vars) {
    std::istringstream in(input);
    std::string line, program;
    bool header = true;
    while (std::getline(in, line)) {
        if (header && line.rfind("#bind ", 0) == 0) {
            std::istringstream ls(line.substr(6));
            std::string name, dtype, rest;
            ls >> name >> dtype;
            std::getline(ls, rest);
            dsl::Binding b;
            if (auto t = dtype_from_name(dtype)) {
                b.dtype = *t;
            } else if (dtype == "string" || dtype == "large_string") {  // Arrow string columns
                b.dtype = DType::Utf8;
                b.itemsize = dtype == "string" ? 4 : 8;
            } else {  // NumPy's S5 and U3
                b.dtype = dtype.at(0) == 'S' ? DType::Bytes : DType::Str;
                b.itemsize = std::stoul(dtype.substr(1)) * (dtype[0] == 'U' ? 4 : 1);
            }
            if (rest.find("scalar") != std::string::npos) {
                b.kind = dsl::Binding::Kind::Scalar;
            } else {
                for (char& c : rest)
                    if (c == '(' || c == ')' || c == ',') c = ' ';
                std::istringstream ss(rest);
                std::int64_t e;
                while (ss >> e) b.shape.push_back(e);
                b.strides = contiguous_strides(b.shape);
                b.strict = rest.find("strict") != std::string::npos;
                b.read_only = rest.find("read-only") != std::string::npos;
            }
            vars[name] = b;
            continue;
        }
        header = false;
        program += (program.empty() ? "" : "\n") + line;
    }
    return program;
}

}  // namespace

TEST(SemanticErrorGolden, EveryCaseRaisesItsExpectedMessage) {
    const fs::path dir = fs::path(JITEXPR_TEST_DATA) / "golden" / "semantic";
    const bool update =
        std::getenv("JITEXPR_UPDATE_GOLDEN") && std::string(std::getenv("JITEXPR_UPDATE_GOLDEN")) == "1";
    int cases = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".input") continue;
        ++cases;
        std::map<std::string, dsl::Binding, std::less<>> vars;
        const std::string text = parse_case(read(entry.path()), vars);
        std::vector<std::string> names;
        for (const auto& [n, b] : vars) names.push_back(n);
        std::string got = "(no error)";
        try {
            auto m = syntax::parse(text);
            dsl::lower(
                m, text,
                [&](std::string_view n) -> const dsl::Binding* {
                    auto it = vars.find(n);
                    return it == vars.end() ? nullptr : &it->second;
                },
                names);
        } catch (const SourceError& e) {
            got = e.what();
        }
        fs::path expect = entry.path();
        expect.replace_extension(".expect");
        if (update) {
            std::ofstream(expect, std::ios::binary) << got << "\n";
            continue;
        }
        EXPECT_EQ(got + "\n", read(expect)) << entry.path().filename();
    }
    EXPECT_GE(cases, 15);
}

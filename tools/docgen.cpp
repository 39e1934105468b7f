// Writes what is generated from the CLI's one description (tools/cli.cpp's option table), at
// build time and in tests:
//   jitexpr_docgen man FILE              the man page jitexpr.1
//   jitexpr_docgen check-docs docs/cli.md   exit 1 unless its generated section is current
//   jitexpr_docgen update-docs docs/cli.md  rewrite that section
#include "cli.hpp"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

constexpr const char* kBegin =
    "<!-- BEGIN generated from tools/cli.cpp by jitexpr_docgen: edit the option table there -->\n";
constexpr const char* kEnd = "<!-- END generated -->\n";

bool read(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: jitexpr_docgen man FILE | check-docs FILE | update-docs FILE\n";
        return 2;
    }
    const std::string mode = argv[1], path = argv[2];
    if (mode == "man") {
        std::ofstream f(path, std::ios::binary);
        f << jit::cli::man_page();
        return f ? 0 : 1;
    }
    std::string doc;
    if (!read(path, doc)) {
        std::cerr << path << ": cannot read\n";
        return 1;
    }
    const auto b = doc.find(kBegin), e = doc.find(kEnd);
    if (b == std::string::npos || e == std::string::npos || e < b) {
        std::cerr << path << ": no generated section (the BEGIN and END markers)\n";
        return 1;
    }
    const std::string current = doc.substr(b + std::string(kBegin).size(), e - b - std::string(kBegin).size());
    const std::string wanted = jit::cli::markdown_reference();
    if (mode == "check-docs") {
        if (current == wanted) return 0;
        std::cerr << path << ": the option reference is out of date with tools/cli.cpp; run\n"
                  << "  build/tools/jitexpr_docgen update-docs " << path << "\n";
        return 1;
    }
    if (mode == "update-docs") {
        doc.replace(b + std::string(kBegin).size(), current.size(), wanted);
        std::ofstream f(path, std::ios::binary);
        f << doc;
        return f ? 0 : 1;
    }
    std::cerr << "unknown mode '" << mode << "'\n";
    return 2;
}

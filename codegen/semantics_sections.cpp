// jitexpr — the parts of dsl/semantics.h a kernel needs.
//
// semantics.h is split by marker comments (see docs/cache.md, "Fast cold compiles"):
//   // @section NAME        the text up to the next @section belongs to NAME (a name may recur:
//                           its pieces stay in file order)
//   // @needs A B           NAME brings sections A and B along
//   // @ops Id Id ...       the jx::op / jx::red definitions of these ops (dsl/ops.def ids) are in NAME
//   // @dtypes complex|half|strings NAME is needed by every kernel touching a complex / 16-bit float /
//                           string value
// Section `base` is always emitted. Text before the first marker (the header comment) is left
// out, and so are the marker lines themselves. An op no section claims brings every section
// (slower, never wrong); the codegen tests insist that every op is claimed.
#include "codegen/codegen.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace jit::codegen {
namespace {

constexpr std::size_t kMaxSections = 64;  // a kernel's selection is a 64-bit mask

struct Section {
    std::string name;
    std::vector<std::string> needs;
    std::uint64_t closure = 0;  // itself and everything it needs, transitively
};

struct Chunk {
    int section = 0;
    std::string_view text;
};

struct Layout {
    std::vector<Section> sections;
    std::vector<Chunk> chunks;    // file order
    std::vector<int> op_section;  // by ir::Op; -1: no section claims it
    std::uint64_t base = 0, complex = 0, half = 0, strings = 0;
    std::uint64_t all = 0;
    std::string error;  // a malformed marker: reported on use
};

std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
        std::size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' && s[j] != '\n') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

Layout parse(std::string_view text) {
    Layout L;
    const std::size_t nops = ir::op_table().size();
    L.op_section.assign(nops, -1);
    auto section_index = [&](std::string_view name) -> int {
        for (std::size_t k = 0; k < L.sections.size(); ++k)
            if (L.sections[k].name == name) return static_cast<int>(k);
        L.sections.push_back(Section{std::string(name), {}, 0});
        return static_cast<int>(L.sections.size() - 1);
    };
    auto fail = [&](std::string msg) {
        if (L.error.empty()) L.error = std::move(msg);
    };

    int current = -1;
    std::size_t chunk_begin = 0;
    auto close_chunk = [&](std::size_t end) {
        if (current >= 0 && end > chunk_begin)
            L.chunks.push_back(Chunk{current, text.substr(chunk_begin, end - chunk_begin)});
    };
    // Only the lines that start with a marker matter: memchr (vectorised) finds each '@', a rare
    // byte in C++, and one that ends "// @" is a marker where the line holds nothing before it but
    // blanks. (The file is ~80 KB of about 4,000 lines and 56 markers: a line at a time this was
    // 0.4 M instructions of a fresh process's first emit, on the way to a disk hit, and glibc's
    // memmem, which is not vectorised, 0.3 M.)
    constexpr std::string_view kMark = "// @";
    std::size_t search = 0;
    while (search < text.size()) {
        const void* hit = std::memchr(text.data() + search, '@', text.size() - search);
        if (!hit) break;
        const std::size_t sign = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
        search = sign + 1;
        if (sign + 1 < kMark.size() || text.substr(sign + 1 - kMark.size(), kMark.size()) != kMark) continue;
        const std::size_t at = sign + 1 - kMark.size();
        const std::size_t nl = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
        const std::size_t pos = nl == std::string_view::npos ? 0 : nl + 1;  // the line's start
        const std::size_t eol = text.find('\n', at);
        const std::size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
        search = next;
        const std::string_view line = text.substr(pos, next - pos);
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == at - pos) {
            std::vector<std::string_view> w = words(line.substr(first + kMark.size()));
            std::string_view directive = w.empty() ? std::string_view{} : w.front();
            if (directive == "section") {
                if (w.size() != 2) fail(fmt::format("`{}`: @section takes one name", line.substr(0, line.find('\n'))));
                close_chunk(pos);
                current = section_index(w.size() > 1 ? w[1] : "base");
                chunk_begin = next;
            } else if (directive == "needs" || directive == "ops" || directive == "dtypes") {
                close_chunk(pos);
                chunk_begin = next;
                if (current < 0) {
                    fail(fmt::format("@{} before the first @section", directive));
                } else if (directive == "needs") {
                    for (std::size_t k = 1; k < w.size(); ++k)
                        L.sections[static_cast<std::size_t>(current)].needs.emplace_back(w[k]);
                } else if (directive == "ops") {
                    for (std::size_t k = 1; k < w.size(); ++k) {
                        auto it = std::find_if(ir::op_table().begin(), ir::op_table().end(),
                                               [&](const ir::OpInfo& o) { return o.id == w[k]; });
                        if (it == ir::op_table().end()) {
                            fail(fmt::format("@ops names `{}`, which is not an op of dsl/ops.def", w[k]));
                            continue;
                        }
                        int& owner = L.op_section[static_cast<std::size_t>(it->op)];
                        if (owner >= 0 && owner != current)
                            fail(fmt::format("op {} is claimed by sections {} and {}", w[k],
                                             L.sections[static_cast<std::size_t>(owner)].name,
                                             L.sections[static_cast<std::size_t>(current)].name));
                        owner = current;
                    }
                } else {
                    for (std::size_t k = 1; k < w.size(); ++k) {
                        if (w[k] == "complex") L.complex |= std::uint64_t{1} << current;
                        else if (w[k] == "half") L.half |= std::uint64_t{1} << current;
                        else if (w[k] == "strings") L.strings |= std::uint64_t{1} << current;
                        else fail(fmt::format("@dtypes `{}`: expected complex, half or strings", w[k]));
                    }
                }
            }
            // Other "// @word" comments are ordinary text.
        }
    }
    close_chunk(text.size());

    if (L.sections.empty()) {  // no markers: the whole text is the base
        L.sections.push_back(Section{"base", {}, 1});
        L.chunks.push_back(Chunk{0, text});
    }
    if (L.sections.size() > kMaxSections) fail(fmt::format("more than {} sections", kMaxSections));
    const std::size_t n = std::min(L.sections.size(), kMaxSections);
    // Direct edges, then the transitive closure (a handful of sections: iterate to a fixed point).
    for (std::size_t k = 0; k < n; ++k) {
        Section& s = L.sections[k];
        s.closure = std::uint64_t{1} << k;
        for (const auto& need : s.needs) {
            auto it =
                std::find_if(L.sections.begin(), L.sections.end(), [&](const Section& o) { return o.name == need; });
            if (it == L.sections.end()) fail(fmt::format("section {} needs `{}`, which has no @section", s.name, need));
            else if (static_cast<std::size_t>(it - L.sections.begin()) < n)
                s.closure |= std::uint64_t{1} << (it - L.sections.begin());
        }
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t k = 0; k < n; ++k) {
            std::uint64_t c = L.sections[k].closure;
            for (std::size_t j = 0; j < n; ++j)
                if (c & (std::uint64_t{1} << j)) c |= L.sections[j].closure;
            if (c != L.sections[k].closure) {
                L.sections[k].closure = c;
                changed = true;
            }
        }
    }
    for (std::size_t k = 0; k < n; ++k) {
        L.all |= std::uint64_t{1} << k;
        if (L.sections[k].name == "base") L.base = L.sections[k].closure;
    }
    if (L.base == 0) fail("no `base` section");
    return L;
}

const Layout& layout() {
    static const Layout L = parse(semantics_source());
    if (!L.error.empty()) throw InternalError("dsl/semantics.h section markers: " + L.error);
    return L;
}

std::uint64_t closure(const Layout& L, std::uint64_t mask) {
    std::uint64_t out = 0;
    for (std::size_t k = 0; k < L.sections.size() && k < kMaxSections; ++k)
        if (mask & (std::uint64_t{1} << k)) out |= L.sections[k].closure;
    return out;
}

std::uint64_t select(const Layout& L, const SemanticsNeeds& needs) {
    std::uint64_t mask = L.base;
    if (needs.complex) mask |= L.complex;
    if (needs.half) mask |= L.half;
    if (needs.strings) mask |= L.strings;
    for (ir::Op op : needs.ops) {
        const auto i = static_cast<std::size_t>(op);
        const int s = i < L.op_section.size() ? L.op_section[i] : -1;
        mask |= s < 0 ? L.all : std::uint64_t{1} << s;
    }
    return closure(L, mask);
}

}  // namespace

std::vector<std::string> semantics_sections(const SemanticsNeeds& needs) {
    const Layout& L = layout();
    const std::uint64_t mask = select(L, needs);
    std::vector<std::string> out;
    for (std::size_t k = 0; k < L.sections.size() && k < kMaxSections; ++k)
        if (mask & (std::uint64_t{1} << k)) out.push_back(L.sections[k].name);
    return out;
}

std::vector<std::string> semantics_section_names() {
    std::vector<std::string> out;
    for (const auto& s : layout().sections) out.push_back(s.name);
    return out;
}

std::string semantics_section_of(ir::Op op) {
    const Layout& L = layout();
    const auto i = static_cast<std::size_t>(op);
    const int s = i < L.op_section.size() ? L.op_section[i] : -1;
    return s < 0 ? std::string() : L.sections[static_cast<std::size_t>(s)].name;
}

std::string semantics_for(const SemanticsNeeds& needs) {
    const Layout& L = layout();
    const std::uint64_t mask = select(L, needs);
    std::size_t size = 0;
    for (const Chunk& c : L.chunks)
        if (mask & (std::uint64_t{1} << c.section)) size += c.text.size();
    std::string out;
    out.reserve(size);
    for (const Chunk& c : L.chunks)
        if (mask & (std::uint64_t{1} << c.section)) out += c.text;
    return out;
}

}  // namespace jit::codegen

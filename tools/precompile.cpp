// jitexpr precompile: statements + declarations -> lowered programs -> kernels compiled with
// NVRTC -> images in the disk cache under the runtime's keys. See precompile.hpp.
#include "precompile.hpp"

#include "cli.hpp"

#include <jit/error.hpp>
#include <jit/precompile.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <algorithm>

#include <cctype>
#include <iostream>

namespace jit::cli {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool is_name(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

// Splits at commas outside brackets.
std::vector<std::string_view> split_top(std::string_view s) {
    std::vector<std::string_view> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '[') ++depth;
        else if (s[i] == ']') --depth;
        else if (s[i] == ',' && depth == 0) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    out.push_back(trim(s.substr(start)));
    return out;
}

// Stand-in sizes for symbolic dimensions: distinct, greater than 1 (a kernel depends on the
// layout class of its arrays, not on their sizes, so any such size gives the same kernels).
constexpr std::int64_t kSymbolBase = 1021;

// One declaration; nullopt with `why` set when `text` is not one.
std::optional<std::pair<std::string, Declaration>> parse_decl(std::string_view text,
                                                              std::map<std::string, std::int64_t>& symbols,
                                                              std::string& why) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        why = fmt::format("'{}' is not a declaration NAME: TYPE", text);
        return std::nullopt;
    }
    const std::string_view name = trim(text.substr(0, colon));
    std::string_view type = trim(text.substr(colon + 1));
    if (!is_name(name)) {
        why = fmt::format("'{}' is not a variable name", name);
        return std::nullopt;
    }
    Declaration b;
    const auto bracket = type.find('[');
    if (bracket == std::string_view::npos) {
        b.kind = Declaration::Kind::Scalar;
        if (type == "float") b.dtype = DType::Float64;
        else if (type == "int") b.dtype = DType::Int64;
        else if (type == "bool") b.dtype = DType::Bool;
        else if (type == "complex") b.dtype = DType::Complex128;
        else {
            why = fmt::format(
                "{}: '{}' is not a scalar type (float, int, bool, complex); an array is DTYPE[DIMS], "
                "a 0-d array DTYPE[]",
                name, type);
            return std::nullopt;
        }
        return std::make_pair(std::string(name), b);
    }
    // DTYPE[DIMS].T: the transpose of a C-contiguous array, a view of shape DIMS (strides reversed),
    // as `a.T` in NumPy or Array::transpose(): the runtime gives such inputs their own kernels.
    bool transposed = false;
    if (type.size() > 2 && type.substr(type.size() - 2) == ".T") {
        transposed = true;
        type = trim(type.substr(0, type.size() - 2));
    }
    if (type.back() != ']') {
        why = fmt::format("{}: '{}' does not end with ']' (or '].T' for a transposed array)", name, type);
        return std::nullopt;
    }
    // DTYPE[DIMS][SLICES]: a view with steps of a C-contiguous array of shape DIMS, one slice
    // per leading axis, each ':' or '::STEP' (STEP a non-zero integer; negative reverses the
    // axis), as NumPy's a[:, ::2] or a[::-1].
    std::string_view slices;
    if (const auto close = type.find(']', bracket); close + 1 < type.size()) {
        const std::string_view rest = trim(type.substr(close + 1));
        if (rest.size() < 2 || rest.front() != '[' || rest.back() != ']') {
            why = fmt::format("{}: '{}' after the dimensions is not [SLICES] (e.g. [:, ::2])", name, rest);
            return std::nullopt;
        }
        slices = trim(rest.substr(1, rest.size() - 2));
        type = type.substr(0, close + 1);
        if (transposed) {
            why = fmt::format("{}: a view with steps cannot also be declared transposed (.T)", name);
            return std::nullopt;
        }
    }
    const std::string_view dtype = trim(type.substr(0, bracket));
    const auto dt = dtype_from_name(dtype);
    if (!dt) {
        why = fmt::format("{}: '{}' is not a dtype", name, dtype);
        return std::nullopt;
    }
    b.kind = Declaration::Kind::Array;
    b.dtype = *dt;
    const std::string_view dims = trim(type.substr(bracket + 1, type.size() - bracket - 2));
    if (!dims.empty()) {
        for (std::string_view d : split_top(dims)) {
            if (is_name(d)) {
                auto [it, fresh] =
                    symbols.try_emplace(std::string(d), kSymbolBase + 2 * static_cast<std::int64_t>(symbols.size()));
                b.shape.push_back(it->second);
                continue;
            }
            std::int64_t v = 0;
            bool ok = !d.empty() && d.size() < 16;
            for (char c : d) ok = ok && std::isdigit(static_cast<unsigned char>(c));
            if (ok) v = std::stoll(std::string(d));
            if (!ok) {
                why = fmt::format("{}: dimension '{}' is neither a non-negative integer nor a symbol", name, d);
                return std::nullopt;
            }
            b.shape.push_back(v);
        }
    }
    b.strides = contiguous_strides(b.shape);
    if (!slices.empty()) {
        const auto parts = split_top(slices);
        if (parts.size() > b.shape.size()) {
            why = fmt::format("{}: {} slices for {} dimensions", name, parts.size(), b.shape.size());
            return std::nullopt;
        }
        for (std::size_t d = 0; d < parts.size(); ++d) {
            const std::string_view sl = parts[d];
            if (sl == ":" || sl == "::") continue;
            std::string_view step = sl.substr(0, 2) == "::" ? sl.substr(2) : std::string_view();
            bool ok = !step.empty() && step.size() < 16;
            const std::size_t first = !step.empty() && step.front() == '-' ? 1 : 0;
            ok = ok && step.size() > first;
            for (std::size_t i = first; ok && i < step.size(); ++i)
                ok = std::isdigit(static_cast<unsigned char>(step[i]));
            const std::int64_t k = ok ? std::stoll(std::string(step)) : 0;
            if (k == 0) {
                why = fmt::format("{}: slice '{}' is not ':' or '::STEP' with a non-zero integer STEP", name, sl);
                return std::nullopt;
            }
            const std::int64_t n = b.shape[d], m = k < 0 ? -k : k;
            b.shape[d] = (n + m - 1) / m;
            b.strides[d] *= k;
        }
    }
    if (transposed) {
        Shape reversed(b.shape.rbegin(), b.shape.rend());
        Strides c = contiguous_strides(reversed);
        b.strides.assign(c.rbegin(), c.rend());
    }
    return std::make_pair(std::string(name), b);
}

}  // namespace

std::vector<PrecompileItem> parse_precompile_file(std::string_view text, const std::string& file) {
    std::vector<PrecompileItem> out;
    std::size_t pos = 0;
    int line_no = 0;
    while (pos <= text.size()) {
        const auto eol = text.find('\n', pos);
        const std::string_view raw =
            text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
        ++line_no;
        const std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        auto fail = [&](const std::string& why) { throw ArgumentError(fmt::format("{}:{}: {}", file, line_no, why)); };
        PrecompileItem item;
        item.line = line_no;
        item.offset = static_cast<std::size_t>(line.data() - text.data());
        // The declarations follow the last ';' (statements may hold ';' themselves). A program
        // that reads nothing may leave them out.
        const auto semi = line.rfind(';');
        std::string_view decls;
        item.statements = std::string(line);
        if (semi != std::string_view::npos && trim(line.substr(semi + 1)).find(':') != std::string_view::npos) {
            item.statements = std::string(trim(line.substr(0, semi)));
            decls = trim(line.substr(semi + 1));
        }
        if (item.statements.empty()) fail("no statements before ';'");
        std::map<std::string, std::int64_t>& symbols = item.symbols;
        if (!decls.empty()) {
            for (std::string_view d : split_top(decls)) {
                std::string why;
                auto decl = parse_decl(d, symbols, why);
                if (!decl) fail(why);
                if (!item.bindings.emplace(decl->first, decl->second).second)
                    fail(fmt::format("'{}' is declared twice", decl->first));
            }
        }
        out.push_back(std::move(item));
    }
    return out;
}

std::pair<int, int> parse_arch(const std::string& text) {
    std::string s = text;
    if (s.rfind("sm_", 0) == 0) s = s.substr(3);
    else if (s.rfind("sm", 0) == 0) s = s.substr(2);
    if (const auto dot = s.find('.'); dot != std::string::npos && dot + 2 == s.size()) s.erase(dot, 1);
    bool ok = s.size() >= 2 && s.size() <= 3;
    for (char c : s) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (!ok) throw ArgumentError(fmt::format("'{}' is not a GPU architecture (use sm_XY, e.g. sm_90)", text));
    const int v = std::stoi(s);
    return {v / 10, v % 10};
}

namespace {

// A message about shapes in the file's own terms: each symbolic dimension's stand-in size, where
// it is a dimension of a shape ("(1021, 3)"), written as its symbol ("(N, 3)").
std::string with_symbols(std::string message, const std::map<std::string, std::int64_t>& symbols) {
    for (const auto& [name, size] : symbols) {
        const std::string digits = std::to_string(size);
        for (std::size_t at = message.find(digits); at != std::string::npos; at = message.find(digits, at + 1)) {
            const std::size_t end = at + digits.size();
            const bool opens = at > 0 && (message[at - 1] == '(' || message[at - 1] == ' ');
            const bool closes = end < message.size() && (message[end] == ',' || message[end] == ')');
            if (opens && closes) message.replace(at, digits.size(), name);
        }
    }
    return message;
}

}  // namespace

int precompile_command(const PrecompileOptions& o) {
    const std::string text = read_input_file(o.file);
    const std::vector<PrecompileItem> items = parse_precompile_file(text, o.file);

    jit::PrecompileOptions po;
    po.fast_math = o.fast_math;
    po.nvrtc_options = RuntimeOptions::from_environment().nvrtc_options;  // the runtime's, so the keys match
    if (o.arch) po.arch = parse_arch(*o.arch);
    po.cache_dir = o.cache_dir;
    Precompiler pc(po);

    // Every line is checked before anything is compiled: a file with a program that does not
    // check stores nothing. The error quotes the file's own line, with its number.
    auto in_file = [&](const PrecompileItem& item, const SourceError& e) {
        const auto at = [&](std::uint32_t p) { return static_cast<std::uint32_t>(item.offset + p); };
        return ArgumentError(fmt::format("{}:{}: {}: {}\n{}", o.file, item.line, e.kind(),
                                         with_symbols(e.message(), item.symbols),
                                         render_caret(text, SourceSpan{at(e.span().begin), at(e.span().end)})));
    };
    for (const PrecompileItem& item : items) {
        try {
            pc.check(item.statements, item.bindings);
        } catch (const SourceError& e) {
            throw in_file(item, e);
        }
    }
    std::size_t compiled = 0, present = 0;
    double total_ms = 0;
    for (const PrecompileItem& item : items) {
        try {
            for (const auto& k : pc.add(item.statements, item.bindings)) {
                if (k.already_cached) ++present;
                else ++compiled;
                total_ms += k.compile_ms;
                std::cout << fmt::format("{}:{}: {} sm_{}{} {} ({} bytes{})\n", o.file, item.line, k.name,
                                         pc.cc_major(), pc.cc_minor(), k.already_cached ? "already cached" : "compiled",
                                         k.image_bytes,
                                         k.already_cached ? "" : fmt::format(", {:.1f} ms", k.compile_ms));
            }
        } catch (const SourceError& e) {
            throw in_file(item, e);
        }
    }
    std::cout << fmt::format("{} programs: {} kernels compiled ({:.0f} ms), {} already cached, in {}\n", items.size(),
                             compiled, total_ms, present, pc.cache_dir());
    return kExitOk;
}

}  // namespace jit::cli

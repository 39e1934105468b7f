// jitexpr precompile: statements + declarations -> lowered programs -> kernels compiled with
// NVRTC -> images in the disk cache under the runtime's keys. See precompile.hpp.
#include "precompile.hpp"

#include "cli.hpp"

#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "dsl/schedule.hpp"
#include "dsl/syntax.hpp"

#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <algorithm>

#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>

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
std::optional<std::pair<std::string, dsl::Binding>> parse_decl(std::string_view text,
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
    dsl::Binding b;
    const auto bracket = type.find('[');
    if (bracket == std::string_view::npos) {
        b.kind = dsl::Binding::Kind::Scalar;
        if (type == "float") b.dtype = DType::Float64;
        else if (type == "int") b.dtype = DType::Int64;
        else if (type == "bool") b.dtype = DType::Bool;
        else if (type == "complex") b.dtype = DType::Complex128;
        else {
            why = fmt::format("{}: '{}' is not a scalar type (float, int, bool, complex); an array is DTYPE[DIMS], "
                              "a 0-d array DTYPE[]", name, type);
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
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = *dt;
    const std::string_view dims = trim(type.substr(bracket + 1, type.size() - bracket - 2));
    if (!dims.empty()) {
        for (std::string_view d : split_top(dims)) {
            if (is_name(d)) {
                auto [it, fresh] = symbols.try_emplace(std::string(d), kSymbolBase + 2 * static_cast<std::int64_t>(symbols.size()));
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
            for (std::size_t i = first; ok && i < step.size(); ++i) ok = std::isdigit(static_cast<unsigned char>(step[i]));
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
        const std::string_view raw = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
        ++line_no;
        const std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        auto fail = [&](const std::string& why) {
            throw ArgumentError(fmt::format("{}:{}: {}", file, line_no, why));
        };
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
        std::map<std::string, std::int64_t> symbols;
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

int precompile_command(const PrecompileOptions& o) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) throw IOError(fmt::format("cannot read {}", o.file));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const std::vector<PrecompileItem> items = parse_precompile_file(text, o.file);

    cuda::CompileOptions co;
    co.fast_math = o.fast_math;
    co.extra = RuntimeOptions::from_environment().nvrtc_options;  // the runtime's, so the keys match
    if (o.arch) {
        std::tie(co.cc_major, co.cc_minor) = parse_arch(*o.arch);
    } else {
        std::string why;
        if (!cuda::available(&why))
            throw NoDeviceError(fmt::format("no GPU to take the architecture from ({}); give --arch sm_XY", why));
        const cuda::DeviceInfo& dev = cuda::device_info();
        co.cc_major = dev.cc_major;
        co.cc_minor = dev.cc_minor;
    }

    cache::DiskCacheOptions dco;
    dco.dir = o.cache_dir;
    auto disk = std::make_shared<cache::DiskCache>(dco);
    if (!disk->enabled()) throw IOError("the disk cache is disabled: " + disk->disabled_reason());
    // The same store the runtime connects (api/runtime.cpp): the file key is the digest of the
    // module cache's text key.
    const cuda::ImageStore store{
        [disk](const std::string& key) { return disk->get(cache::digest(key)); },
        [disk](const std::string& key, const std::string& bytes) {
            if (!disk->put(cache::digest(key), bytes))
                throw IOError(fmt::format("could not write to the disk cache in {}", disk->directory()));
        }};

    // Every line is checked before anything is compiled: a file with a program that does not
    // check stores nothing. The error quotes the file's own line, with its number.
    struct Checked {
        const PrecompileItem* item;
        ir::Program program;
        ir::Schedule schedule;
    };
    std::vector<Checked> checked;
    checked.reserve(items.size());
    for (const PrecompileItem& item : items) {
        try {
            const syntax::Module module = syntax::parse(item.statements);
            dsl::Lookup lookup = [&item](std::string_view name) -> const dsl::Binding* {
                auto it = item.bindings.find(name);
                return it == item.bindings.end() ? nullptr : &it->second;
            };
            std::vector<std::string> bound;
            for (const auto& [n, b] : item.bindings) bound.push_back(n);
            ir::Program program = dsl::lower(module, item.statements, lookup, bound);
            ir::Schedule schedule = ir::schedule(program);
            checked.push_back(Checked{&item, std::move(program), std::move(schedule)});
        } catch (const SourceError& e) {
            const auto at = [&](std::uint32_t p) { return static_cast<std::uint32_t>(item.offset + p); };
            throw ArgumentError(fmt::format("{}:{}: {}: {}\n{}", o.file, item.line, e.kind(), e.message(),
                                            render_caret(text, SourceSpan{at(e.span().begin), at(e.span().end)})));
        }
    }
    std::size_t compiled = 0, present = 0;
    double total_ms = 0;
    for (const Checked& c : checked) {
        for (const auto& k : cuda::precompile(c.program, c.schedule, co, store)) {
            if (k.already_stored) ++present;
            else ++compiled;
            total_ms += k.compile_ms;
            std::cout << fmt::format("{}:{}: {} sm_{}{} {} ({} bytes{})\n", o.file, c.item->line, k.name, co.cc_major,
                                     co.cc_minor, k.already_stored ? "already cached" : "compiled", k.image_bytes,
                                     k.already_stored ? "" : fmt::format(", {:.1f} ms", k.compile_ms));
        }
    }
    std::cout << fmt::format("{} programs: {} kernels compiled ({:.0f} ms), {} already cached, in {}\n", items.size(),
                             compiled, total_ms, present, disk->directory());
    return kExitOk;
}

}  // namespace jit::cli

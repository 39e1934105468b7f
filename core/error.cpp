#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace jit {

namespace {

// One character of a line as an error echoes it: the bytes [begin, end) and whether it is shown
// as '?' (a control character, a bidi control, or bytes that are not UTF-8).
struct Unit {
    std::size_t begin, end;
    bool hidden;
};

// Characters that can drive a terminal or reorder what it shows: C0 controls (tab is kept by
// the caller), DEL, C1 controls (as raw bytes or as UTF-8), bidi embeddings, overrides and
// isolates, the implicit direction marks, and the Unicode line and paragraph separators.
bool unsafe_code_point(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F || cp == 0x061C || cp == 0x2028 ||
           cp == 0x2029;
}

// Decodes one UTF-8 character at s[i] (strictly: no overlong forms, no surrogates); returns its
// length, or 0 when the bytes there are not UTF-8.
std::size_t utf8_at(std::string_view s, std::size_t i, std::uint32_t* cp) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    std::size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (b(i + 1) < lo || b(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    std::uint32_t v = c & (0xFF >> (n + 1));
    for (std::size_t k = 1; k < n; ++k) v = (v << 6) | (b(i + k) & 0x3F);
    *cp = v;
    return n;
}

std::vector<Unit> units_of(std::string_view s, bool keep_tab) {
    std::vector<Unit> out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = utf8_at(s, i, &cp);
        if (n == 0) {
            out.push_back({i, i + 1, true});
            ++i;
            continue;
        }
        out.push_back({i, i + n, unsafe_code_point(cp) && !(keep_tab && cp == '\t')});
        i += n;
    }
    return out;
}

// An echoed line longer than this many characters is cut to a window around the caret.
constexpr std::size_t kMaxEcho = 120;
constexpr std::size_t kEchoBefore = 40;  // characters kept before the caret in a cut line

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const Unit& u : units_of(text, false)) {
        if (u.hidden) out += '?';
        else out.append(text.substr(u.begin, u.end - u.begin));
    }
    return out;
}

std::string printable_name(std::string_view name) {
    constexpr std::size_t kMost = 64;
    if (name.size() <= kMost) return printable(name);
    return printable(name.substr(0, kMost)) + fmt::format("... ({} bytes)", name.size());
}

std::string render_caret(std::string_view text, SourceSpan span) {
    const std::size_t n = text.size();
    std::size_t begin = std::min<std::size_t>(span.begin, n);
    std::size_t end = std::max<std::size_t>(std::min<std::size_t>(span.end, n), begin);
    // The line holding `begin`.
    // (At offset 0 it is the first line: rfind from npos would find the text's last newline.)
    std::size_t line_start = begin == 0 ? std::string_view::npos : text.rfind('\n', begin - 1);
    line_start = (line_start == std::string_view::npos) ? 0 : line_start + 1;
    if (begin > 0 && begin == n && n > 0 && text[n - 1] == '\n') {  // caret after a final newline
        line_start = n;
    }
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = n;
    const auto line_no = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n');
    // A byte-order mark opening the text takes no column and is not shown.
    if (line_start == 0 && text.substr(0, 3) == "\xEF\xBB\xBF") {
        line_start = 3;
        begin = std::max<std::size_t>(begin, 3);
        end = std::max(end, begin);
        if (line_end < line_start) line_end = line_start;
    }
    // A span running past the line is cut at the line's end; an empty span gets one caret.
    end = std::min(end, line_end);

    // The line as characters: each shown as itself or as '?', one column each (a tab keeps its
    // width under the caret).
    std::string_view line = text.substr(line_start, line_end - line_start);
    const std::vector<Unit> units = units_of(line, true);
    const std::size_t rel_begin = begin - line_start, rel_end = end - line_start;
    std::size_t first = 0;  // the caret's first character
    while (first < units.size() && units[first].end <= rel_begin) ++first;
    std::size_t last = first;  // one past the caret's last character
    while (last < units.size() && units[last].begin < rel_end) ++last;
    if (last == first) last = first + 1;  // one caret, under the character or past the end

    // A long line is cut to a window around the caret, with "..." where it was cut.
    std::size_t from = 0, to = units.size();
    if (units.size() > kMaxEcho) {
        from = first > kEchoBefore ? first - kEchoBefore : 0;
        to = std::min(units.size(), from + kMaxEcho);
        if (last > to) last = to == first ? first + 1 : to;  // a caret run wider than the window
    }
    const bool cut_left = from > 0, cut_right = to < units.size();

    std::string prefix = fmt::format("line {}: ", line_no);
    std::string shown = prefix + (cut_left ? "..." : "");
    std::string pad(shown.size(), ' ');
    for (std::size_t k = from; k < to; ++k) {
        const Unit& u = units[k];
        if (u.hidden) shown += '?';
        else shown.append(line.substr(u.begin, u.end - u.begin));
        if (k < first) pad += line[u.begin] == '\t' ? '\t' : ' ';
    }
    if (cut_right) shown += "...";
    if (first > to) pad.append(first - to, ' ');
    return fmt::format("{}\n{}{}", shown, pad, std::string(last - first, '^'));
}

SourceError::SourceError(std::string_view kind, std::string message, std::string_view text, SourceSpan span)
    : Error(fmt::format("{}: {}\n{}", kind, message, render_caret(text, span))),
      kind_(kind),
      message_(std::move(message)),
      source_(text),
      span_(span) {}

CompileError::CompileError(std::string message, std::string log, std::string options, std::string source)
    : Error(fmt::format("{}\nNVRTC options: {}\nNVRTC log:\n{}\ngenerated source:\n{}", message, options, log, source)),
      log_(std::move(log)),
      options_(std::move(options)),
      source_(std::move(source)) {}

namespace {
std::string byte_count(std::uint64_t n) {
    static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        ++u;
    }
    return u == 0 ? fmt::format("{} bytes", n) : fmt::format("{:.1f} {} ({} bytes)", v, units[u], n);
}
}  // namespace

OutOfMemoryError::OutOfMemoryError(std::uint64_t requested, std::uint64_t available, std::string what_for)
    : Error(requested == 0
                ? fmt::format("out of memory: {} could not be had; {} available", what_for, byte_count(available))
                : fmt::format("out of memory: {} needs {}; {} available", what_for, byte_count(requested),
                              byte_count(available))),
      requested_(requested),
      available_(available),
      what_for_(std::move(what_for)) {}

OutOfMemoryError::OutOfMemoryError(const OutOfMemoryError& e, std::string message, SourceSpan span)
    : Error(message),
      requested_(e.requested_),
      available_(e.available_),
      what_for_(e.what_for_),
      span_(span),
      located_(true) {}

OutOfMemoryError OutOfMemoryError::at(std::string_view text, SourceSpan span) const {
    // Located once: a caller that knows more of the text makes a new error from the figures.
    const OutOfMemoryError bare(requested_, available_, what_for_);
    return OutOfMemoryError(*this, fmt::format("{}\n{}", bare.what(), render_caret(text, span)), span);
}

namespace {
std::string cuda_message(int result, const std::string& name, const std::string& call, const std::string& hint) {
    std::string m = fmt::format("CUDA error {} ({}) in {}", name, result, call);
    if (!hint.empty()) m += ": " + hint;
    return m;
}
}  // namespace

CudaError::CudaError(int result, std::string name, std::string call, std::string hint)
    : Error(cuda_message(result, name, call, hint)), result_(result), name_(std::move(name)), call_(std::move(call)) {}

namespace {
std::string cancelled_message(const std::vector<std::string>& names) {
    if (names.empty()) return "cancelled";
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) list += i + 1 == names.size() ? " and " : ", ";
        list += "'" + names[i] + "'";
    }
    return fmt::format("cancelled; {} may be partly written ({} being written in place)", list,
                       names.size() == 1 ? "it was" : "they were");
}
}  // namespace

CancelledError::CancelledError(std::vector<std::string> partly_written)
    : Error(cancelled_message(partly_written)), partly_written_(std::move(partly_written)) {}

bool CudaError::sticky() const {
    // CUDA_ERROR_ILLEGAL_ADDRESS 700, LAUNCH_FAILED 719, HARDWARE_STACK_ERROR 714,
    // ILLEGAL_INSTRUCTION 715, MISALIGNED_ADDRESS 716, INVALID_ADDRESS_SPACE 717, INVALID_PC 718,
    // ASSERT 710, LAUNCH_TIMEOUT 702, TENSOR_MEMORY_LEAK 721, ECC_UNCORRECTABLE 214, CONTAINED 226
    // (the same list as backend/cuda/driver.cpp is_sticky).
    switch (result_) {
        case 700:
        case 702:
        case 710:
        case 714:
        case 715:
        case 716:
        case 717:
        case 718:
        case 719:
        case 721:
        case 214:
        case 226: return true;
        default: return false;
    }
}

}  // namespace jit

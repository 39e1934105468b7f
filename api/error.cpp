#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace jit {

std::string render_caret(std::string_view text, SourceSpan span) {
    const std::size_t n = text.size();
    std::size_t begin = std::min<std::size_t>(span.begin, n);
    std::size_t end = std::max<std::size_t>(std::min<std::size_t>(span.end, n), begin);
    // The line holding `begin`.
    std::size_t line_start = text.rfind('\n', begin == 0 ? std::string_view::npos : begin - 1);
    line_start = (line_start == std::string_view::npos) ? 0 : line_start + 1;
    if (begin > 0 && begin == n && n > 0 && text[n - 1] == '\n') {  // caret after a final newline
        line_start = n;
    }
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = n;
    const auto line_no = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n');
    // A span running past the line is cut at the line's end; an empty span gets one caret.
    end = std::min(end, line_end);
    std::size_t width = end > begin ? end - begin : 1;

    // Tabs keep their width under the caret; other bytes become spaces. UTF-8 continuation
    // bytes take no column.
    // A byte-order mark opening the text takes no column and is not shown.
    if (line_start == 0 && text.substr(0, 3) == "\xEF\xBB\xBF") {
        line_start = 3;
        begin = std::max<std::size_t>(begin, 3);
        end = std::max(end, begin);
        width = end > begin ? end - begin : 1;
    }
    std::string_view line = text.substr(line_start, line_end - line_start);
    std::string prefix = fmt::format("line {}: ", line_no);
    std::string pad(prefix.size(), ' ');
    for (std::size_t i = line_start; i < begin; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\t') pad += '\t';
        else if ((c & 0xC0) != 0x80) pad += ' ';
    }
    std::size_t carets = 0;
    for (std::size_t i = begin; i < begin + width && i < n; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if ((c & 0xC0) != 0x80) ++carets;
    }
    if (carets == 0) carets = 1;
    // Printable version of the line: control characters other than tab shown as '?'.
    std::string shown;
    shown.reserve(line.size());
    for (char ch : line) {
        unsigned char c = static_cast<unsigned char>(ch);
        shown += (c < 0x20 && c != '\t') || c == 0x7F ? '?' : ch;
    }
    return fmt::format("{}{}\n{}{}", prefix, shown, pad, std::string(carets, '^'));
}

SourceError::SourceError(std::string_view kind, std::string message, std::string_view text, SourceSpan span)
    : Error(fmt::format("{}: {}\n{}", kind, message, render_caret(text, span))),
      kind_(kind), message_(std::move(message)), source_(text), span_(span) {}

CompileError::CompileError(std::string message, std::string log, std::string options, std::string source)
    : Error(fmt::format("{}\nNVRTC options: {}\nNVRTC log:\n{}\ngenerated source:\n{}", message, options, log, source)),
      log_(std::move(log)), options_(std::move(options)), source_(std::move(source)) {}

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
        case 700: case 702: case 710: case 714: case 715: case 716: case 717: case 718: case 719: case 721: case 214:
        case 226:
            return true;
        default:
            return false;
    }
}

}  // namespace jit

#include "statements.hpp"

#include <jit/error.hpp>

#include <cctype>

namespace jit::cli {
namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Does the (comment-free) text of a line, up to `end`, finish with a token that needs more?
bool ends_with_continuation(std::string_view line) {
    std::size_t n = line.size();
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r')) --n;
    if (n == 0) return false;
    const char c = line[n - 1];
    switch (c) {
        case '+':
        case '-':
        case '*':
        case '/':
        case '%':
        case '&':
        case '|':
        case '^':
        case '<':
        case '>':
        case '=':
        case ',':
        case '~':
        case '?':
        case '(':
        case '[':
        case '\\': return true;
        default: break;
    }
    // Word operators.
    std::size_t b = n;
    while (b > 0 && is_ident_char(line[b - 1])) --b;
    std::string_view word = line.substr(b, n - b);
    return word == "and" || word == "or" || word == "not";
}

struct Scan {
    std::string blanked;              // the text with comments etc. turned into spaces
    std::vector<std::size_t> splits;  // positions of statement separators (';' or '\n')
    int depth = 0;                    // open brackets at the end
    bool continues = false;           // the last line ends with a continuation
    bool open_string = false;
    std::size_t string_start = 0;
};

Scan scan(std::string_view text) {
    Scan s;
    s.blanked.assign(text);
    std::size_t line_start = 0;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            if (c == quote) quote = 0;
            else if (c == '\n') {
                s.open_string = true;
                return s;
            }
            continue;
        }
        switch (c) {
            case '\'':
            case '"':
                quote = c;
                s.string_start = i;
                break;
            case '#': {
                std::size_t j = i;
                while (j < text.size() && text[j] != '\n') s.blanked[j++] = ' ';
                i = j - 1;
                break;
            }
            case '(':
            case '[': ++s.depth; break;
            case ')':
            case ']':
                if (s.depth > 0) --s.depth;
                break;
            case ';':
                if (s.depth == 0) s.splits.push_back(i);
                break;
            case '\n': {
                std::string_view line(s.blanked.data() + line_start, i - line_start);
                line_start = i + 1;
                if (s.depth > 0) {
                    s.blanked[i] = ' ';
                } else if (ends_with_continuation(line)) {
                    // Drop a trailing backslash; keep operators.
                    std::size_t k = i;
                    while (k > 0 && (s.blanked[k - 1] == ' ' || s.blanked[k - 1] == '\t' || s.blanked[k - 1] == '\r'))
                        --k;
                    if (k > 0 && s.blanked[k - 1] == '\\') s.blanked[k - 1] = ' ';
                    s.blanked[i] = ' ';
                } else {
                    s.splits.push_back(i);
                }
                break;
            }
            default: break;
        }
    }
    if (quote) {
        s.open_string = true;
        return s;
    }
    s.continues = ends_with_continuation(std::string_view(s.blanked).substr(line_start));
    return s;
}

bool blank(std::string_view s) {
    for (char c : s)
        if (!std::isspace(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

std::vector<Chunk> split_statements(std::string_view text) {
    Scan s = scan(text);
    if (s.open_string) {
        std::size_t end = text.find('\n', s.string_start);
        if (end == std::string_view::npos) end = text.size();
        throw ParseError("this string is not closed on its line", text,
                         {static_cast<std::uint32_t>(s.string_start), static_cast<std::uint32_t>(end)});
    }
    std::vector<Chunk> out;
    std::size_t start = 0;
    s.splits.push_back(text.size());
    for (std::size_t sp : s.splits) {
        std::string_view piece = std::string_view(s.blanked).substr(start, sp - start);
        if (!blank(piece)) out.push_back({std::string(piece), start});
        start = sp + 1;
    }
    return out;
}

bool needs_more_input(std::string_view text) {
    Scan s = scan(text);
    if (s.open_string) return false;  // an error: let the statement run and report it
    return s.depth > 0 || s.continues;
}

}  // namespace jit::cli

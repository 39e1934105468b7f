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
    bool open_multiline = false;  // the open string is triple-quoted: more lines may close it
    std::size_t string_start = 0;
};

Scan scan(std::string_view text) {
    Scan s;
    s.blanked.assign(text);
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        switch (c) {
            case '\'':
            case '"': {
                // A string literal is skipped whole: its '#', ';' and brackets are its text.
                bool multiline = false;
                const std::size_t end = string_literal_end(text, i, &multiline);
                if (end == std::string_view::npos) {
                    s.open_string = true;
                    s.open_multiline = multiline;
                    s.string_start = i;
                    return s;
                }
                i = end - 1;
                break;
            }
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
    s.continues = ends_with_continuation(std::string_view(s.blanked).substr(line_start));
    return s;
}

bool blank(std::string_view s) {
    for (char c : s)
        if (!std::isspace(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

std::size_t string_literal_end(std::string_view text, std::size_t quote, bool* multiline) {
    const char q = text[quote];
    const bool triple = text.compare(quote, 3, std::string(3, q)) == 0;
    if (multiline) *multiline = triple;
    for (std::size_t k = quote + (triple ? 3 : 1); k < text.size();) {
        const char c = text[k];
        if (c == '\\') {
            k += 2;  // the next character is the escape's (or a line continuation)
        } else if (triple ? text.compare(k, 3, std::string(3, q)) == 0 : c == q) {
            return k + (triple ? 3 : 1);
        } else if (c == '\n' && !triple) {
            return std::string_view::npos;
        } else {
            ++k;
        }
    }
    return std::string_view::npos;
}

std::vector<Chunk> split_statements(std::string_view text) {
    Scan s = scan(text);
    if (s.open_string) {
        std::size_t end = s.open_multiline ? text.size() : text.find('\n', s.string_start);
        if (end == std::string_view::npos) end = text.size();
        throw ParseError(
            s.open_multiline ? "this triple-quoted string is not closed" : "this string is not closed on its line",
            text, {static_cast<std::uint32_t>(s.string_start), static_cast<std::uint32_t>(end)});
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
    if (s.open_string) return s.open_multiline;  // a ''' string may close on a later line; else an error to report
    return s.depth > 0 || s.continues;
}

}  // namespace jit::cli

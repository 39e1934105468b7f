// Splitting program text into statements, for the CLI and the REPL.
//
// Statements are separated by ';' and by newlines outside brackets and strings. A line whose
// last token (before any '#' comment) is a binary operator, ',', '=', '(' or a trailing '\'
// continues on the next line. Each statement keeps its byte offset in the whole text so that
// errors point into the text the user wrote.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jit::cli {

struct Chunk {
    // The statement's bytes with comments, line continuations and newlines inside brackets
    // turned into spaces: exactly as long as the original range, so spans carry over.
    std::string text;
    std::size_t offset = 0;  // of text[0] in the whole program
};

// Throws jit::ParseError (with a caret into `text`) for a string that is not closed on its line
// (a triple-quoted one: by the end of the text).
std::vector<Chunk> split_statements(std::string_view text);

// The end (one past the closing quote) of the string literal whose opening quote is text[quote],
// as Python's tokenizer finds it, raw (r'...') or not: a backslash takes the next character
// along, a triple quote (''' or """) is closed only by the same three. npos when it is not
// closed: at a newline (one quote) or at the end of the text; *multiline (may be null) is set
// for a triple-quoted literal.
std::size_t string_literal_end(std::string_view text, std::size_t quote, bool* multiline = nullptr);

// True when `text` cannot end here: brackets still open, or the last line continues
// (operator, ',', '=', or '\' at its end). The REPL keeps reading lines while this holds.
bool needs_more_input(std::string_view text);

}  // namespace jit::cli

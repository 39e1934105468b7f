// jitexpr — the errors it throws. User errors (bad text, names, types, shapes, files, options)
// are apart from environment errors (driver, device, compiler) and from internal bugs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jit {

// A half-open byte range [begin, end) in the user's text.
struct SourceSpan {
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
    bool empty() const { return begin >= end; }
};

// Renders the line of `text` holding `span` with a caret line under it:
//   line 2: c = a +* b
//                  ^
// Characters that could drive a terminal (C0 and C1 controls but tab, DEL, bidi controls,
// bytes that are not UTF-8) are shown as '?'; a line longer than 120 characters is cut to a
// window around the caret, marked "...".
std::string render_caret(std::string_view text, SourceSpan span);

// `text` with the same characters shown as '?' (tab and newline included): for file names and
// other outside text put into a message.
std::string printable(std::string_view text);
// A name the caller gave (a bound variable's), for a message: printable() of its first 64
// bytes, with "... (N bytes)" after a longer one.
std::string printable_name(std::string_view name);

// Base of everything jitexpr throws. what() is the whole message, ready to print.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An error in the user's text: carries the text, the span and the bare message; what() is
// "<kind>: <message>\n<line with caret>".
class SourceError : public Error {
public:
    SourceError(std::string_view kind, std::string message, std::string_view text, SourceSpan span);
    const std::string& message() const { return message_; }
    SourceSpan span() const { return span_; }
    const std::string& source() const { return source_; }
    const std::string& kind() const { return kind_; }

private:
    std::string kind_, message_, source_;
    SourceSpan span_;
};

#define JIT_DECLARE_SOURCE_ERROR(Name, kind)                              \
    class Name : public SourceError {                                     \
    public:                                                               \
        Name(std::string message, std::string_view text, SourceSpan span) \
            : SourceError(kind, std::move(message), text, span) {}        \
    };
JIT_DECLARE_SOURCE_ERROR(ParseError, "syntax error")
JIT_DECLARE_SOURCE_ERROR(NameError, "name error")    // unknown identifier
JIT_DECLARE_SOURCE_ERROR(TypeError, "type error")    // dtype not allowed by the operation, arity, keyword
JIT_DECLARE_SOURCE_ERROR(ShapeError, "shape error")  // shapes that do not broadcast or fit
JIT_DECLARE_SOURCE_ERROR(ValueError, "value error")  // e.g. integer ** negative integer
JIT_DECLARE_SOURCE_ERROR(IndexError, "index error")  // an integer index past an axis, too many indices
// A statement that would write into a read-only array (Array::read_only(): a view of const
// memory, an immutable buffer, an Arrow column), refused before anything runs; the caret is
// under the assignment's target.
JIT_DECLARE_SOURCE_ERROR(ReadOnlyError, "read-only error")
#undef JIT_DECLARE_SOURCE_ERROR

// Arguments given to the API that do not fit the program (count, dtype of an output, ...).
class ArgumentError : public Error {
public:
    using Error::Error;
};

// Arrays on different devices, or on the host and a device, given to one evaluation, or an
// array on another device than the runtime's. jitexpr never copies between devices behind the
// caller's back: the message says where each array is and how to ask for the copy
// (Array::to(backend, device), Python's backend=/device=). An ArgumentError, so code that
// catches those keeps working.
class DeviceMismatchError : public ArgumentError {
public:
    using ArgumentError::ArgumentError;
};

// A file that cannot be read or written, or whose content is not what it claims (.npy).
class IOError : public Error {
public:
    using Error::Error;
};

// NVRTC rejected generated source: always a bug in jitexpr or an unsupported toolkit.
class CompileError : public Error {
public:
    CompileError(std::string message, std::string log, std::string options, std::string source);
    const std::string& log() const { return log_; }
    const std::string& options() const { return options_; }
    const std::string& source() const { return source_; }

private:
    std::string log_, options_, source_;
};

// A CUDA driver call failed. `result` is the CUresult value, `name` its symbolic name.
class CudaError : public Error {
public:
    CudaError(int result, std::string name, std::string call, std::string hint = {});
    int result() const { return result_; }
    const std::string& result_name() const { return name_; }
    const std::string& call() const { return call_; }
    // True for errors that poison the context (illegal address, launch failure, ...).
    bool sticky() const;

private:
    int result_;
    std::string name_, call_;
};

// No usable CUDA driver or device on this machine (the CPU backend still works).
class NoDeviceError : public Error {
public:
    using Error::Error;
};

// A call stopped by a CancelToken, Runtime::cancel() or the token's poll function before it
// finished (see jit/cancel.hpp). Arrays it was creating are dropped; `partly_written()` names
// the existing arrays it had begun writing in place, which may now hold a mix of old and new
// values (empty when none was touched). what() says so in words.
class CancelledError : public Error {
public:
    explicit CancelledError(std::vector<std::string> partly_written = {});
    const std::vector<std::string>& partly_written() const { return partly_written_; }

private:
    std::vector<std::string> partly_written_;
};

// Memory could not be had: for an array, a thread's stack, or a kernel's own work (the buffer
// of an order statistic, a scan's partial sums, a mask's count), in host or device memory.
// what() says for what, how many bytes were asked and how many were available (requested() is
// 0 only when the system did not say how much a failed allocation asked); at() gives the same
// error with a caret under the part of the text that asked (Runtime::run, eval and the CLI
// throw it so), and span() is then that part.
class OutOfMemoryError : public Error {
public:
    OutOfMemoryError(std::uint64_t requested, std::uint64_t available, std::string what_for);
    std::uint64_t requested() const { return requested_; }
    std::uint64_t available() const { return available_; }
    const std::string& what_for() const { return what_for_; }
    OutOfMemoryError at(std::string_view text, SourceSpan span) const;
    // Whether at() made this error, and the span it was given.
    bool located() const { return located_; }
    SourceSpan span() const { return span_; }

private:
    OutOfMemoryError(const OutOfMemoryError& e, std::string message, SourceSpan span);
    std::uint64_t requested_, available_;
    std::string what_for_;
    SourceSpan span_;
    bool located_ = false;
};

// A bug in jitexpr: an invariant did not hold.
class InternalError : public Error {
public:
    using Error::Error;
};

}  // namespace jit

// .npy reading and writing (see include/jit/npy.hpp for the supported forms).
#include <jit/error.hpp>
#include <jit/npy.hpp>
#include <jit/runtime.hpp>

#include "backend/cache/files.hpp"
#include "backend/call_control.hpp"
#include "core/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jit {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kPreludeV1 = 10;            // magic(6) + version(2) + header length(2)
constexpr std::size_t kPreludeV2 = 12;            // magic(6) + version(2) + header length(4)
constexpr std::size_t kMaxHeaderBytes = 1 << 20;  // far above anything a valid header needs

[[noreturn]] void fail(std::string_view name, std::string_view what) {
    throw IOError(fmt::format("{}: {}", printable(name), what));
}

std::string errno_text(int err) { return std::strerror(err); }

// A shown form of header bytes for messages: printable ASCII kept, the rest escaped, cut short.
std::string shown(std::string_view s, std::size_t limit = 60) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7F) out += static_cast<char>(c);
        else out += fmt::format("\\x{:02x}", c);
    }
    if (s.size() > limit) out += "...";
    return out;
}

// ---- the descr string

struct Descr {
    DType dtype;
    bool swap;             // data is in the other byte order than this machine's
    std::size_t item = 0;  // S and U: the width in bytes (S5: 5, U3: 12); else the dtype's
};

std::optional<Descr> parse_descr(std::string_view d) {
    if (d == "bfloat16") return Descr{DType::BFloat16, std::endian::native == std::endian::big};
    // datetime64 and timedelta64 of a unit: '<M8[s]', '>m8[ns]' (not of no unit, 'M8', nor of a
    // multiple of one, 'M8[5s]')
    if (d.size() > 3 && (d.substr(1, 2) == "M8" || d.substr(1, 2) == "m8") && d[0] != '|') {
        const auto t = dtype_from_name(d.substr(1));
        if (!t || time_unit(*t) == TimeUnit::Generic) return std::nullopt;
        const bool little = d[0] == '<' || (d[0] == '=' && std::endian::native == std::endian::little);
        if (d[0] != '<' && d[0] != '>' && d[0] != '=') return std::nullopt;
        return Descr{*t, little != (std::endian::native == std::endian::little)};
    }
    if (d.size() < 3) return std::nullopt;
    char order = d[0];
    std::string_view code = d.substr(1);
    if (code[0] == 'S' || code[0] == 'U') {
        // NumPy's fixed-width strings: '|S5' (bytes), '<U3' (UCS-4 code points, in the given order).
        std::size_t n = 0;
        for (char c : code.substr(1)) {
            if (c < '0' || c > '9' || n > (std::size_t{1} << 31)) return std::nullopt;
            n = n * 10 + static_cast<std::size_t>(c - '0');
        }
        const bool u = code[0] == 'U';
        const bool little =
            order == '<' || ((order == '|' || order == '=') && std::endian::native == std::endian::little);
        if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
        return Descr{u ? DType::Str : DType::Bytes, u && little != (std::endian::native == std::endian::little),
                     u ? n * 4 : n};
    }
    bool little;
    switch (order) {
        case '<': little = true; break;
        case '>': little = false; break;
        case '|':
        case '=': little = std::endian::native == std::endian::little; break;
        default: return std::nullopt;
    }
    struct Code {
        std::string_view code;
        DType dtype;
    };
    static constexpr Code codes[] = {
        {"b1", DType::Bool},      {"i1", DType::Int8},        {"i2", DType::Int16},   {"i4", DType::Int32},
        {"i8", DType::Int64},     {"u1", DType::UInt8},       {"u2", DType::UInt16},  {"u4", DType::UInt32},
        {"u8", DType::UInt64},    {"f2", DType::Float16},     {"f4", DType::Float32}, {"f8", DType::Float64},
        {"c8", DType::Complex64}, {"c16", DType::Complex128},
    };
    for (const Code& c : codes) {
        if (c.code == code) {
            bool swap = itemsize(c.dtype) > 1 && little != (std::endian::native == std::endian::little);
            return Descr{c.dtype, swap};
        }
    }
    return std::nullopt;
}

// ---- the header dictionary: a Python literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }

struct Header {
    DType dtype = DType::Float64;
    std::size_t item = 0;  // bytes per element (a string width for S and U)
    bool swap = false;
    bool fortran = false;
    Shape shape;
    std::size_t data_offset = 0;
    std::size_t data_bytes = 0;
};

class DictParser {
public:
    DictParser(std::string_view text, std::string_view name) : s_(text), name_(name) {}

    Header parse() {
        bool have_descr = false, have_fortran = false, have_shape = false;
        Header h;
        skip_ws();
        expect('{', "the header does not start with '{'");
        skip_ws();
        while (peek() != '}') {
            std::string key = parse_string("a quoted key");
            skip_ws();
            expect(':', fmt::format("expected ':' after key '{}'", key));
            skip_ws();
            if (key == "descr") {
                if (have_descr) bad("key 'descr' appears twice");
                have_descr = true;
                if (peek() == '[') bad("structured dtypes (a list 'descr') are not supported");
                std::string d = parse_string("a quoted string for 'descr'");
                auto descr = parse_descr(d);
                if (!descr) bad(fmt::format("unsupported dtype descr '{}'", shown(d)));
                h.dtype = descr->dtype;
                h.swap = descr->swap;
                h.item = descr->item ? descr->item : itemsize(descr->dtype);
                if (h.item == 0)
                    bad(
                        fmt::format("'descr' is '{}', a string of width 0, which holds nothing (jitexpr takes S "
                                    "and U of width 1 and more)",
                                    shown(d)));
            } else if (key == "fortran_order") {
                if (have_fortran) bad("key 'fortran_order' appears twice");
                have_fortran = true;
                h.fortran = parse_bool();
            } else if (key == "shape") {
                if (have_shape) bad("key 'shape' appears twice");
                have_shape = true;
                h.shape = parse_shape();
            } else {
                bad(fmt::format("unexpected key '{}' (only 'descr', 'fortran_order' and 'shape' are allowed)",
                                shown(key)));
            }
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                skip_ws();
            } else if (peek() != '}') {
                bad("expected ',' or '}' after a value");
            }
        }
        ++pos_;
        skip_ws();
        if (pos_ != s_.size()) bad(fmt::format("unexpected text after the dictionary: '{}'", shown(s_.substr(pos_))));
        if (!have_descr) bad("key 'descr' is missing");
        if (!have_fortran) bad("key 'fortran_order' is missing");
        if (!have_shape) bad("key 'shape' is missing");
        return h;
    }

private:
    [[noreturn]] void bad(std::string_view what) const { fail(name_, fmt::format("malformed .npy header: {}", what)); }

    char peek() const {
        if (pos_ >= s_.size()) bad("the header ends inside the dictionary");
        return s_[pos_];
    }
    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c, std::string_view what) {
        if (peek() != c) bad(what);
        ++pos_;
    }
    std::string parse_string(std::string_view what) {
        char q = peek();
        if (q != '\'' && q != '"') bad(fmt::format("expected {}", what));
        ++pos_;
        std::string out;
        while (true) {
            char c = peek();
            if (c == q) break;
            if (c == '\\') bad("escape sequences in header strings are not supported");
            if (c == '\n') bad("a string in the header is not closed");
            out += c;
            ++pos_;
        }
        ++pos_;
        return out;
    }
    bool parse_bool() {
        if (s_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (s_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        bad("'fortran_order' must be True or False");
    }
    std::int64_t parse_dim() {
        if (peek() == '-') bad("the shape has a negative dimension");
        if (peek() < '0' || peek() > '9') bad("the shape must be a tuple of integers");
        // Checked before each step, so no value wraps (2^64 + 3 is not 3).
        constexpr std::uint64_t kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        std::uint64_t v = 0;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
            const auto digit = static_cast<std::uint64_t>(s_[pos_] - '0');
            if (v > (kMax - digit) / 10) bad("a dimension of the shape is too large");
            v = v * 10 + digit;
            ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long
        return static_cast<std::int64_t>(v);
    }
    Shape parse_shape() {
        expect('(', "the shape must be a tuple of integers");
        Shape shape;
        bool trailing_comma = false;
        skip_ws();
        while (peek() != ')') {
            shape.push_back(parse_dim());
            skip_ws();
            trailing_comma = false;
            if (peek() == ',') {
                ++pos_;
                trailing_comma = true;
                skip_ws();
            } else if (peek() != ')') {
                bad("expected ',' or ')' in the shape");
            }
            if (shape.size() > static_cast<std::size_t>(kMaxDims))
                bad(fmt::format("the shape has more than {} dimensions", kMaxDims));
        }
        ++pos_;
        if (shape.size() == 1 && !trailing_comma) bad("the shape must be a tuple: write (n,) not (n)");
        return shape;
    }

    std::string_view s_;
    std::string_view name_;
    std::size_t pos_ = 0;
};

// Parses the prelude and header at the start of `bytes`. Needs only the header's bytes: the
// data is checked by the caller.
Header parse_header(std::string_view bytes, std::string_view name, std::size_t* header_end_needed) {
    if (bytes.size() < kPreludeV1) fail(name, fmt::format("not a .npy file (only {} bytes)", bytes.size()));
    if (bytes.substr(0, kMagic.size()) != kMagic)
        fail(name, "not a .npy file (the magic string \\x93NUMPY is missing)");
    const auto major = static_cast<unsigned char>(bytes[6]);
    const auto minor = static_cast<unsigned char>(bytes[7]);
    std::size_t prelude, header_len;
    auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i])); };
    if (major == 1 && minor == 0) {
        prelude = kPreludeV1;
        header_len = byte(8) | byte(9) << 8;
    } else if ((major == 2 || major == 3) && minor == 0) {
        prelude = kPreludeV2;
        if (bytes.size() < prelude) fail(name, "the file ends inside the .npy prelude");
        header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    } else {
        fail(name, fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are supported)", major, minor));
    }
    if (header_len > kMaxHeaderBytes)
        fail(name, fmt::format("malformed .npy header: header length {} is too large", header_len));
    if (header_end_needed) *header_end_needed = prelude + header_len;
    if (bytes.size() < prelude + header_len)
        fail(name, fmt::format("the file ends inside the .npy header ({} header bytes expected, {} present)",
                               header_len, bytes.size() - prelude));
    std::string_view text = bytes.substr(prelude, header_len);
    if (major < 3) {
        // Versions 1 and 2 are latin-1; a valid header is plain ASCII.
        for (char c : text)
            if (static_cast<unsigned char>(c) >= 0x80) fail(name, "malformed .npy header: non-ASCII byte");
    }
    Header h = DictParser(text, name).parse();
    h.data_offset = prelude + header_len;

    // Size of the data, checked against overflow. As NumPy does, the extents other than zero
    // must multiply without overflow even when one extent is zero: the strides of an empty
    // array are still computed from them.
    std::uint64_t span = 1;  // product of max(extent, 1)
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    bool overflow = false, empty = false;
    for (std::int64_t d : h.shape) {
        if (d == 0) {
            empty = true;
            continue;
        }
        if (span > limit / static_cast<std::uint64_t>(d)) overflow = true;
        else span *= static_cast<std::uint64_t>(d);
    }
    const std::uint64_t isz = h.item;
    if (overflow || span > limit / isz || span * isz > std::numeric_limits<std::size_t>::max())
        fail(name, fmt::format("malformed .npy header: shape {} is too large", shape_to_string(h.shape)));
    const std::uint64_t count = empty ? 0 : span;
    h.data_bytes = static_cast<std::size_t>(count * isz);
    return h;
}

// ---- data conversions, in place on host memory

void byteswap_elements(unsigned char* p, std::size_t bytes, DType t) {
    // (a U array's code points are 4-byte units; S has bytes only)
    const std::size_t w = t == DType::Str ? 4 : is_complex(t) ? itemsize(t) / 2 : itemsize(t);
    if (w <= 1) return;
    for (std::size_t i = 0; i + w <= bytes; i += w) std::reverse(p + i, p + i + w);
}

// Fortran-order data of `shape` -> C order.
std::unique_ptr<unsigned char[]> fortran_to_c(const unsigned char* src, const Shape& shape, std::size_t isz,
                                              std::size_t bytes) {
    auto dst = std::unique_ptr<unsigned char[]>(new unsigned char[std::max<std::size_t>(bytes, 1)]);
    const int nd = static_cast<int>(shape.size());
    // Source strides (Fortran), in elements.
    std::vector<std::int64_t> fstride(static_cast<std::size_t>(nd));
    std::int64_t s = 1;
    for (int d = 0; d < nd; ++d) {
        fstride[static_cast<std::size_t>(d)] = s;
        s *= shape[static_cast<std::size_t>(d)];
    }
    const std::int64_t n = static_cast<std::int64_t>(bytes / isz);
    std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
    std::int64_t src_off = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        std::memcpy(dst.get() + static_cast<std::size_t>(i) * isz, src + static_cast<std::size_t>(src_off) * isz, isz);
        // Advance the C-order multi-index (last axis fastest).
        for (int d = nd - 1; d >= 0; --d) {
            auto ud = static_cast<std::size_t>(d);
            if (++idx[ud] < shape[ud]) {
                src_off += fstride[ud];
                break;
            }
            src_off -= fstride[ud] * (idx[ud] - 1);
            idx[ud] = 0;
        }
    }
    return dst;
}

// Byte order, bool normalisation and Fortran order, then a new array.
Array finish(const Header& h, const unsigned char* data, Backend backend) {
    std::unique_ptr<unsigned char[]> owned;
    unsigned char* p = nullptr;
    auto own_copy = [&] {
        if (!owned) {
            owned.reset(new unsigned char[std::max<std::size_t>(h.data_bytes, 1)]);
            std::memcpy(owned.get(), data, h.data_bytes);
            p = owned.get();
        }
    };
    if (h.swap) {
        own_copy();
        byteswap_elements(p, h.data_bytes, h.dtype);
    }
    if (h.dtype == DType::Bool) {
        bool normal = std::all_of(data, data + h.data_bytes, [](unsigned char c) { return c <= 1; });
        if (!normal) {
            own_copy();
            for (std::size_t i = 0; i < h.data_bytes; ++i) p[i] = p[i] != 0;
        }
    }
    const unsigned char* src = owned ? owned.get() : data;
    if (h.fortran && h.shape.size() > 1 && h.data_bytes > 0) {
        owned = fortran_to_c(src, h.shape, h.item, h.data_bytes);
        src = owned.get();
    }
    if (is_string(h.dtype)) {
        Array a = Array::empty(h.dtype, h.item, h.shape, Backend::Cpu);
        if (h.data_bytes > 0) std::memcpy(a.data(), src, h.data_bytes);
        return core::resolve(backend) == Backend::Cpu ? a : a.to(backend);
    }
    return Array::from_host(src, h.dtype, h.shape, backend);
}

// ---- writing

std::string make_header(const Array& a) {
    const Shape& shape = a.shape();
    std::string shape_text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) shape_text += ", ";
        shape_text += std::to_string(shape[i]);
    }
    if (shape.size() == 1) shape_text += ",";
    shape_text += ")";
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   npy_descr(a.dtype(), a.itemsize()), shape_text);
    // Pad with spaces and end with '\n' so that the data starts at a multiple of 64 bytes.
    std::size_t total = kPreludeV1 + dict.size() + 1;
    bool v2 = false;
    std::size_t padded = (total + 63) / 64 * 64;
    if (padded - kPreludeV1 > 0xFFFF) {
        v2 = true;
        total = kPreludeV2 + dict.size() + 1;
        padded = (total + 63) / 64 * 64;
    }
    const std::size_t prelude = v2 ? kPreludeV2 : kPreludeV1;
    dict.append(padded - total, ' ');
    dict += '\n';
    const std::size_t len = dict.size();
    std::string out(kMagic);
    out += static_cast<char>(v2 ? 2 : 1);
    out += static_cast<char>(0);
    out += static_cast<char>(len & 0xFF);
    out += static_cast<char>((len >> 8) & 0xFF);
    if (v2) {
        out += static_cast<char>((len >> 16) & 0xFF);
        out += static_cast<char>((len >> 24) & 0xFF);
    }
    out += dict;
    if (out.size() != prelude + len) throw InternalError("npy: header length mismatch");
    return out;
}

// The array's elements in C order, little-endian, in `dst` (a.nbytes() bytes).
void host_bytes(const Array& a, unsigned char* dst) {
    if (a.nbytes() == 0) return;
    a.copy_to_host(dst);
    if constexpr (std::endian::native == std::endian::big) byteswap_elements(dst, a.nbytes(), a.dtype());
}

// Bytes per read: with a control (a call that can be stopped or watched), small enough that a
// stop is seen within a few tens of ms at disk speed and progress moves.
std::size_t io_chunk(const detail::CallControl* ctl) { return ctl ? std::size_t{16} << 20 : std::size_t{1} << 30; }

// Reads up to n bytes (fewer only at end of file). With `ctl`: ticks between chunks (and on a
// read interrupted by a signal) and throws CancelledError on a stop.
std::size_t read_fully(int fd, void* buf, std::size_t n, std::string_view name, detail::CallControl* ctl = nullptr) {
    std::size_t got = 0;
    auto* p = static_cast<unsigned char*>(buf);
    while (got < n) {
        if (ctl && ctl->tick()) detail::CallControl::throw_cancelled();
        ssize_t r = ::read(fd, p + got, std::min(n - got, io_chunk(ctl)));
        if (r < 0) {
            if (errno == EINTR) continue;
            fail(name, fmt::format("cannot read: {}", errno_text(errno)));
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
        if (ctl) ctl->add_done(static_cast<std::uint64_t>(r));
    }
    return got;
}

// `bytes` of memory for the data of `h` read from `name`, or an error that says so.
std::unique_ptr<unsigned char[]> data_buffer(const Header& h, std::string_view name, std::size_t bytes) {
    try {
        return std::unique_ptr<unsigned char[]>(new unsigned char[std::max<std::size_t>(bytes, 1)]);
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(
            bytes, core::host_memory_available(),
            fmt::format("the data of {} ({} {})", printable(name), dtype_name(h.dtype), shape_to_string(h.shape)));
    }
}

}  // namespace

void remove_temporary_files() noexcept { files::remove_temporaries_for_signal(); }

std::string npy_descr(DType t) {
    switch (t) {
        case DType::Bool: return "|b1";
        case DType::Int8: return "|i1";
        case DType::UInt8: return "|u1";
        case DType::BFloat16: return "bfloat16";
        case DType::Int16: return "<i2";
        case DType::Int32: return "<i4";
        case DType::Int64: return "<i8";
        case DType::UInt16: return "<u2";
        case DType::UInt32: return "<u4";
        case DType::UInt64: return "<u8";
        case DType::Float16: return "<f2";
        case DType::Float32: return "<f4";
        case DType::Float64: return "<f8";
        case DType::Complex64: return "<c8";
        case DType::Complex128:
            return "<c16";
            JIT_TEMPORAL_CASES return fmt::format("<{}8[{}]", is_datetime(t) ? 'M' : 'm', time_unit_code(time_unit(t)));
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;  // (a width of its own: npy_descr(t, itemsize))
    }
    throw InternalError("npy_descr: unknown dtype");
}

std::string npy_descr(DType t, std::size_t itemsize) {
    if (t == DType::Bytes) return fmt::format("|S{}", itemsize);
    if (t == DType::Str) return fmt::format("<U{}", itemsize / 4);
    if (t == DType::Utf8)
        throw ArgumentError("an Arrow string column has no .npy dtype (NumPy's are fixed-width S and U)");
    return npy_descr(t);
}

Array parse_npy(std::string_view bytes, Backend backend, std::string_view name) {
    Header h = parse_header(bytes, name, nullptr);
    const std::size_t have = bytes.size() - h.data_offset;
    if (have < h.data_bytes)
        fail(name, fmt::format("the data is truncated: {} {} needs {} bytes, {} present", dtype_name(h.dtype),
                               shape_to_string(h.shape), h.data_bytes, have));
    return finish(h, reinterpret_cast<const unsigned char*>(bytes.data()) + h.data_offset, backend);
}

std::string to_npy_bytes(const Array& a) {
    if (!a.defined()) throw ArgumentError("to_npy_bytes: the array is undefined");
    std::string out = make_header(a);
    const std::size_t off = out.size();
    out.resize(off + a.nbytes());
    host_bytes(a, reinterpret_cast<unsigned char*>(out.data()) + off);
    return out;
}

Array load_npy(const std::string& path, Backend backend) { return load_npy(path, backend, CallOptions{}); }

Array load_npy(const std::string& path, Backend backend, const CallOptions& options) {
    // The token and progress of the options (a load or save belongs to no runtime: no epoch).
    detail::CallControl control(options.cancel ? &*options.cancel : nullptr, nullptr, &options.progress);
    detail::CallControl* ctl = &control;
    ctl->check();
    // Regular files, pipes, FIFOs and character devices, read in order (docs/cli.md). Waiting
    // for a FIFO's writer ends on a stop.
    files::UserFile file = files::open_for_reading(path, [ctl] {
        if (ctl->tick()) detail::CallControl::throw_cancelled();
    });
    const int fd = file.fd.get();

    // The prelude, then the header it announces.
    std::string head(kPreludeV2, '\0');
    head.resize(read_fully(fd, head.data(), head.size(), path));
    std::size_t header_end = 0;
    try {
        parse_header(head, path, &header_end);
    } catch (const IOError&) {
        if (header_end == 0 || header_end <= head.size()) throw;  // a bad prelude or a complete, bad header
    }
    if (header_end > head.size()) {
        const std::size_t had = head.size();
        head.resize(header_end);
        head.resize(had + read_fully(fd, head.data() + had, header_end - had, path));
    }
    Header h = parse_header(head, path, nullptr);
    auto too_short = [&](std::uint64_t present) {
        fail(path, fmt::format("the file is shorter than its data: {} {} needs {} bytes after the header, {} present",
                               dtype_name(h.dtype), shape_to_string(h.shape), h.data_bytes, present));
    };

    std::unique_ptr<unsigned char[]> data;
    if (!file.stream) {
        // A regular file's size is known: a header that claims more than the file holds is an
        // error before anything is allocated.
        const std::uint64_t after = file.size > header_end ? file.size - header_end : 0;
        if (after < h.data_bytes) too_short(after);
        data = data_buffer(h, path, h.data_bytes);
        ctl->begin(Progress::Phase::Load, Progress::Unit::Bytes, h.data_bytes);
        const std::size_t got = read_fully(fd, data.get(), h.data_bytes, path, ctl);
        if (got < h.data_bytes) too_short(got);  // it shrank meanwhile
    } else {
        // A stream says nothing of its length: the buffer grows with what arrives, so a short
        // stream that claims a huge array costs only what it sent.
        std::size_t have = 0, capacity = std::min<std::size_t>(h.data_bytes, std::size_t{1} << 24);
        data = data_buffer(h, path, capacity);
        ctl->begin(Progress::Phase::Load, Progress::Unit::Bytes, h.data_bytes);
        while (have < h.data_bytes) {
            if (have == capacity) {
                const std::size_t grown = std::min<std::size_t>(h.data_bytes, capacity * 2);
                auto bigger = data_buffer(h, path, grown);
                std::memcpy(bigger.get(), data.get(), have);
                data = std::move(bigger);
                capacity = grown;
            }
            const std::size_t got = read_fully(fd, data.get() + have, capacity - have, path, ctl);
            have += got;
            if (have < capacity) break;  // the end of the stream
        }
        if (have < h.data_bytes) too_short(have);
    }
    return finish(h, data.get(), backend);
}

void save_npy(const std::string& path, const Array& a) { save_npy(path, a, CallOptions{}); }

void save_npy(const std::string& path, const Array& a, const CallOptions& options) {
    // The token and progress of the options (a load or save belongs to no runtime: no epoch).
    detail::CallControl control(options.cancel ? &*options.cancel : nullptr, nullptr, &options.progress);
    detail::CallControl* ctl = &control;
    ctl->check();
    if (!a.defined()) throw ArgumentError(fmt::format("{}: cannot save an undefined array", printable(path)));
    if (path.empty()) throw IOError("cannot save: the file name is empty");
    // Everything that can fail before touching the file system happens first.
    const std::string header = make_header(a);
    std::unique_ptr<unsigned char[]> data =
        core::host_buffer<unsigned char>(a.nbytes(), fmt::format("the bytes of {} to write ({} {})", printable(path),
                                                                 dtype_name(a.dtype()), shape_to_string(a.shape())));
    host_bytes(a, data.get());
    // A regular file (or a new name) is replaced atomically, a stream is written in order
    // (backend/cache/files.hpp); the data goes in chunks between which a stop is seen, and a
    // stop leaves no temporary file and the target as it was.
    files::WriteHooks hooks;
    hooks.piece = std::size_t{16} << 20;
    hooks.before_piece = [ctl] {
        if (ctl->tick()) detail::CallControl::throw_cancelled();
    };
    hooks.after_piece = [ctl](std::size_t chunk, std::size_t bytes) {
        if (chunk == 1) ctl->add_done(static_cast<std::uint64_t>(bytes));  // chunk 0 is the header
    };
    hooks.before_commit = [ctl] { ctl->check(); };
    hooks.on_interrupt = hooks.before_piece;
    ctl->begin(Progress::Phase::Save, Progress::Unit::Bytes, a.nbytes());
    files::write_file(path, {header, std::string_view(reinterpret_cast<const char*>(data.get()), a.nbytes())}, &hooks);
}

}  // namespace jit

// The Arrow C data interface: primitive columns in (zero-copy where the layouts agree) and out,
// and evaluation that propagates nulls.
#include <jit/error.hpp>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include "core/device.hpp"
#include "dsl/syntax.hpp"
#include "dsl/tree_walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace jit {

namespace {

constexpr std::string_view kSupportedFormats =
    "c C s S i I l L e f g b; u U (string, large_string); tdD tdm (date32, date64), ts{s,m,u,n}:[zone] (timestamp), "
    "tD{s,m,u,n} (duration)";

// An ArrowArray moved into jitexpr: released once, when the last array viewing it goes.
struct OwnedArrowArray {
    ArrowArray array{};
    OwnedArrowArray() = default;
    OwnedArrowArray(const OwnedArrowArray&) = delete;
    OwnedArrowArray& operator=(const OwnedArrowArray&) = delete;
    ~OwnedArrowArray() {
        if (array.release) array.release(&array);
    }
};

bool bit(const std::uint8_t* bits, std::int64_t i) { return ((bits[i >> 3] >> (i & 7)) & 1) != 0; }

// Unpacks `length` bits starting at bit `offset` (LSB first) into a new bool array; counts the
// zero bits into *zeros.
Array unpack_bits(const void* buffer, std::int64_t offset, std::int64_t length, std::int64_t* zeros) {
    Array out = Array::empty(DType::Bool, {length}, Backend::Cpu);
    const auto* bits = static_cast<const std::uint8_t*>(buffer);
    auto* dst = static_cast<std::uint8_t*>(out.data());
    std::int64_t z = 0;
    for (std::int64_t i = 0; i < length; ++i) {
        const bool v = bit(bits, offset + i);
        dst[i] = v ? 1 : 0;
        z += v ? 0 : 1;
    }
    if (zeros) *zeros = z;
    return out;
}

// Whether bytes [0, n) are UTF-8 (no overlong form, no surrogate, nothing above U+10FFFF); the
// offset of the first bad byte in *bad. Eight bytes at a time while they are ASCII.
bool valid_utf8(const unsigned char* s, std::size_t n, std::size_t* bad) {
    std::size_t i = 0;
    while (i < n) {
        // 64 bytes at a time while they are ASCII (the compiler keeps the words in vector registers).
        while (i + 64 <= n) {
            std::uint64_t w[8];
            std::memcpy(w, s + i, 64);
            const std::uint64_t any = (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) & 0x8080808080808080ULL;
            if (any != 0) break;
            i += 64;
        }
        if (i + 8 <= n) {
            std::uint64_t w;
            std::memcpy(&w, s + i, 8);
            if ((w & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        const unsigned c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;  // no overlong form
            if (c == 0xED) hi = 0x9F;  // no surrogate
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
        }
        bool ok = len != 0 && i + len <= n && s[i + 1] >= lo && s[i + 1] <= hi;
        for (std::size_t k = 2; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
        if (!ok) {
            *bad = i;
            return false;
        }
        i += len;
    }
    return true;
}

// Offset k of an Arrow offsets buffer of `width` bytes per offset.
std::int64_t offset_at(const void* offsets, std::size_t width, std::int64_t k) {
    if (width == 4) {
        std::int32_t v;
        std::memcpy(&v, static_cast<const char*>(offsets) + k * 4, 4);
        return v;
    }
    std::int64_t v;
    std::memcpy(&v, static_cast<const char*>(offsets) + k * 8, 8);
    return v;
}

// Formats jitexpr knows to be strings or bytes it does not take, with what to do about them.
std::optional<std::string> unsupported_string_format(std::string_view f) {
    if (f == "z" || f == "Z" || f == "vz")
        return fmt::format(
            "Arrow binary columns (format \"{}\") are not supported; cast them to string if they hold "
            "UTF-8, or pass a NumPy S array",
            f);
    return std::nullopt;
}

// A string column's offsets (rows offset .. offset + length, and the one after): not below 0,
// never decreasing, and (with the data buffer null) all 0; its bytes UTF-8 for format "u"/"U"
// (Arrow's string is UTF-8 by definition; jitexpr compares code points). The C data interface
// gives no size for the data buffer: the last offset is its size, so an offset past it is one
// that is larger than a later one.
void check_string_offsets(const ArrowSchema* schema, const ArrowArray* array) {
    const std::size_t w = std::string_view(schema->format) == "U" ? 8 : 4;
    const std::int64_t n = array->length, off = array->offset;
    if (n == 0 && !array->buffers[1]) return;
    const void* offsets = array->buffers[1];
    std::int64_t prev = offset_at(offsets, w, off);
    if (prev < 0) throw ArgumentError(fmt::format("Arrow import: string offset of row 0 is {}, below 0", prev));
    const std::int64_t first = prev;
    for (std::int64_t i = 1; i <= n; ++i) {
        const std::int64_t v = offset_at(offsets, w, off + i);
        if (v < prev)
            throw ArgumentError(
                fmt::format("Arrow import: string offsets decrease at row {} ({} after {}): the column is malformed",
                            i - 1, v, prev));
        prev = v;
    }
    if (prev > first && !array->buffers[2])
        throw ArgumentError(
            fmt::format("Arrow import: a string column of {} bytes with a null data buffer", prev - first));
    std::size_t bad = 0;
    if (prev > first && !valid_utf8(static_cast<const unsigned char*>(array->buffers[2]) + first,
                                    static_cast<std::size_t>(prev - first), &bad)) {
        // The row of the bad byte, for the message.
        const std::int64_t at = first + static_cast<std::int64_t>(bad);
        std::int64_t row = 0;
        while (row + 1 < n && offset_at(offsets, w, off + row + 1) <= at) ++row;
        throw ArgumentError(fmt::format(
            "Arrow import: row {} of a string column is not valid UTF-8 (byte {} of the "
            "row, 0x{:02x})",
            row, at - offset_at(offsets, w, off + row), static_cast<const unsigned char*>(array->buffers[2])[at]));
    }
}

// Checks everything about the pair; returns the dtype. Nothing is consumed or allocated.
DType check_import(const ArrowSchema* schema, const ArrowArray* array) {
    if (!schema || !array) throw ArgumentError("Arrow import: null schema or array");
    if (!schema->release) throw ArgumentError("Arrow import: the schema is released");
    if (!array->release) throw ArgumentError("Arrow import: the array is released (already moved or consumed)");
    if (!schema->format) throw ArgumentError("Arrow import: the schema has a null format");
    if (auto why = unsupported_string_format(schema->format)) throw ArgumentError("Arrow import: " + *why);
    const std::optional<DType> dtype = from_arrow_format(schema->format);
    if (!dtype)
        throw ArgumentError(fmt::format("Arrow format \"{}\" is not a primitive type jitexpr supports ({})",
                                        schema->format, kSupportedFormats));
    if (schema->dictionary || array->dictionary)
        throw ArgumentError(
            fmt::format("Arrow import: dictionary-encoded column (format \"{}\" indices); "
                        "decode it first",
                        schema->format));
    if (schema->n_children != 0 || array->n_children != 0)
        throw ArgumentError(fmt::format("Arrow import: a primitive column (format \"{}\") with {} children",
                                        schema->format,
                                        array->n_children != 0 ? array->n_children : schema->n_children));
    const bool strings = *dtype == DType::Utf8;
    if (array->n_buffers != (strings ? 3 : 2))
        throw ArgumentError(strings
                                ? fmt::format("Arrow import: format \"{}\" with {} buffers; string arrays have 3 "
                                              "(validity, offsets, data)",
                                              schema->format, array->n_buffers)
                                : fmt::format("Arrow import: format \"{}\" with {} buffers; primitive arrays have 2 "
                                              "(validity, values)",
                                              schema->format, array->n_buffers));
    if (!array->buffers) throw ArgumentError("Arrow import: null buffers pointer");
    if (array->length < 0 || array->offset < 0)
        throw ArgumentError(fmt::format("Arrow import: negative length {} or offset {}", array->length, array->offset));
    if (array->length > std::numeric_limits<std::int64_t>::max() / 16 - array->offset)
        throw ArgumentError(
            fmt::format("Arrow import: length {} and offset {} are too large", array->length, array->offset));
    if (array->null_count < -1 || array->null_count > array->length)
        throw ArgumentError(fmt::format("Arrow import: null_count {} for length {}", array->null_count, array->length));
    if (array->null_count > 0 && !array->buffers[0])
        throw ArgumentError(fmt::format("Arrow import: null_count {} but no validity bitmap", array->null_count));
    if (array->length > 0 && !array->buffers[1])
        throw ArgumentError(strings ? "Arrow import: null offsets buffer" : "Arrow import: null values buffer");
    if (strings) check_string_offsets(schema, array);
    return *dtype;
}

// A string_view column (format "vu", Polars' strings): its views (16 bytes each: a length, then
// up to 12 bytes inline, or a prefix, a buffer index and an offset into the variadic buffers
// whose sizes the last buffer holds) gathered into a new string column of offsets and bytes.
// Every view is checked against the buffers' sizes before it is read; the bytes must be UTF-8.
// A copy: the array is consumed (released) once copied.
ArrowColumn import_string_view(const ArrowSchema* schema, const ArrowArray* array, ArrowArray* to_own) {
    if (!schema || !array) throw ArgumentError("Arrow import: null schema or array");
    if (!schema->release) throw ArgumentError("Arrow import: the schema is released");
    if (!array->release) throw ArgumentError("Arrow import: the array is released (already moved or consumed)");
    if (schema->dictionary || array->dictionary || schema->n_children != 0 || array->n_children != 0)
        throw ArgumentError("Arrow import: a string_view column with children or a dictionary");
    if (array->n_buffers < 3 || !array->buffers)
        throw ArgumentError(
            fmt::format("Arrow import: a string_view column with {} buffers; it has at least 3 "
                        "(validity, views, the data buffers' sizes)",
                        array->n_buffers));
    if (array->length < 0 || array->offset < 0 ||
        array->length > std::numeric_limits<std::int64_t>::max() / 16 - array->offset)
        throw ArgumentError(fmt::format("Arrow import: length {} and offset {}", array->length, array->offset));
    if (array->null_count < -1 || array->null_count > array->length)
        throw ArgumentError(fmt::format("Arrow import: null_count {} for length {}", array->null_count, array->length));
    if (array->null_count > 0 && !array->buffers[0])
        throw ArgumentError(fmt::format("Arrow import: null_count {} but no validity bitmap", array->null_count));
    const std::int64_t n = array->length, off = array->offset;
    const std::int64_t variadic = array->n_buffers - 3;
    const auto* views = static_cast<const unsigned char*>(array->buffers[1]);
    const auto* sizes = static_cast<const std::int64_t*>(array->buffers[array->n_buffers - 1]);
    if (n > 0 && !views) throw ArgumentError("Arrow import: null views buffer");
    if (variadic > 0 && !sizes) throw ArgumentError("Arrow import: null buffer of the data buffers' sizes");
    ArrowColumn col;
    std::vector<std::uint8_t> valid;
    if (array->null_count != 0 && array->buffers[0]) {
        std::int64_t zeros = 0;
        Array mask = unpack_bits(array->buffers[0], off, n, &zeros);
        col.null_count = zeros;
        if (zeros > 0) {
            valid.assign(static_cast<const std::uint8_t*>(mask.data()),
                         static_cast<const std::uint8_t*>(mask.data()) + n);
            col.validity = std::move(mask);
        }
    }
    struct Buffers {
        std::vector<std::int64_t> offsets;
        std::string chars;
    };
    auto b = std::make_shared<Buffers>();
    b->offsets.reserve(static_cast<std::size_t>(n + 1));
    b->offsets.push_back(0);
    for (std::int64_t i = 0; i < n; ++i) {
        const unsigned char* v = views + (off + i) * 16;
        std::int32_t len = 0;
        std::memcpy(&len, v, 4);
        if (!valid.empty() && !valid[static_cast<std::size_t>(i)]) len = 0;  // a null's view is not read
        if (len < 0) throw ArgumentError(fmt::format("Arrow import: string_view row {} has length {}", i, len));
        if (len <= 12) {
            b->chars.append(reinterpret_cast<const char*>(v + 4), static_cast<std::size_t>(len));
        } else {
            std::int32_t index = 0, at = 0;
            std::memcpy(&index, v + 8, 4);
            std::memcpy(&at, v + 12, 4);
            if (index < 0 || index >= variadic || at < 0 || static_cast<std::int64_t>(at) + len > sizes[index] ||
                !array->buffers[2 + index])
                throw ArgumentError(fmt::format(
                    "Arrow import: string_view row {} points past its data (buffer {}, offset {}, length {})", i, index,
                    at, len));
            b->chars.append(static_cast<const char*>(array->buffers[2 + index]) + at, static_cast<std::size_t>(len));
        }
        b->offsets.push_back(static_cast<std::int64_t>(b->chars.size()));
    }
    std::size_t bad = 0;
    if (!valid_utf8(reinterpret_cast<const unsigned char*>(b->chars.data()), b->chars.size(), &bad)) {
        std::int64_t row = 0;
        while (row + 1 < n && b->offsets[static_cast<std::size_t>(row) + 1] <= static_cast<std::int64_t>(bad)) ++row;
        throw ArgumentError(fmt::format("Arrow import: row {} of a string_view column is not valid UTF-8", row));
    }
    if (to_own) {  // everything is copied: consumed now (released once, here)
        OwnedArrowArray owned;
        owned.array = *to_own;
        to_own->release = nullptr;
    }
    const std::int64_t* offsets = b->offsets.data();
    const char* chars = b->chars.data();
    const std::size_t bytes = b->chars.size();
    col.values = core::view_utf8_checked(offsets, 8, chars, bytes, n, Backend::Cpu, 0, b);  // (made here: in order)
    return col;
}

ArrowColumn import(const ArrowSchema* schema, const ArrowArray* array, ArrowArray* to_own) {
    if (schema && schema->format && std::string_view(schema->format) == "vu")
        return import_string_view(schema, array, to_own);
    const DType dtype = check_import(schema, array);
    const std::int64_t n = array->length, off = array->offset;
    ArrowColumn col;
    // Copies first (validity, booleans, unaligned values), while nothing is consumed.
    if (array->null_count != 0 && array->buffers[0]) {
        std::int64_t zeros = 0;
        Array mask = unpack_bits(array->buffers[0], off, n, &zeros);
        col.null_count = zeros;
        if (zeros > 0) col.validity = std::move(mask);
    }
    const void* values = array->buffers[1];
    const std::size_t size = itemsize(dtype);
    if (dtype == DType::Utf8) {
        // Viewed in place: the offsets from the array's offset on, the data buffer as it is.
        const std::size_t w = std::string_view(schema->format) == "U" ? 8 : 4;
        static const std::int64_t kZeros[2] = {0, 0};
        const void* offsets = n == 0 && !values ? static_cast<const void*>(kZeros)
                                                : static_cast<const char*>(values) + off * static_cast<std::int64_t>(w);
        const std::int64_t last = offset_at(offsets, w, n);
        std::shared_ptr<void> keep;
        if (to_own) {
            auto owned = std::make_shared<OwnedArrowArray>();
            owned->array = *to_own;
            to_own->release = nullptr;
            keep = std::move(owned);
        }
        // (check_import has checked the offsets and the bytes: not again)
        col.values = core::view_utf8_checked(offsets, w, array->buffers[2], static_cast<std::size_t>(last), n,
                                             Backend::Cpu, 0, std::move(keep));
        return col;
    }
    if (std::string_view(schema->format) == "tdD") {
        // date32: int32 days, widened to the int64 of datetime64[D] (a copy)
        Array days = Array::empty(dtype, {n}, Backend::Cpu);
        auto* dst = static_cast<std::int64_t*>(days.data());
        const auto* src = static_cast<const std::byte*>(values);
        for (std::int64_t i = 0; i < n; ++i) {
            std::int32_t d = 0;
            std::memcpy(&d, src + static_cast<std::size_t>(off + i) * 4, 4);
            dst[i] = d;
        }
        col.values = std::move(days);
    } else if (dtype == DType::Bool) {
        col.values = n > 0 ? unpack_bits(values, off, n, nullptr) : Array::empty(DType::Bool, {0}, Backend::Cpu);
    } else {
        const auto* p = n > 0 ? static_cast<const std::byte*>(values) + static_cast<std::size_t>(off) * size : nullptr;
        if (n == 0) {
            col.values = Array::empty(dtype, {0}, Backend::Cpu);
        } else if (reinterpret_cast<std::uintptr_t>(p) % size != 0) {
            col.values = Array::from_host(p, dtype, {n}, Backend::Cpu);  // unaligned: copy
        } else {
            std::shared_ptr<void> keep;
            if (to_own) {
                auto owned = std::make_shared<OwnedArrowArray>();
                owned->array = *to_own;     // the move of the specification: copy the struct,
                to_own->release = nullptr;  // mark the source released
                keep = std::move(owned);
            }
            col.values = Array::view(static_cast<const void*>(p), dtype, {n}, {1}, Backend::Cpu, std::move(keep));
            return col;
        }
    }
    // Everything was copied: an owned array is consumed now (released once, here).
    if (to_own) {
        OwnedArrowArray owned;
        owned.array = *to_own;
        to_own->release = nullptr;
    }
    // Arrow columns are immutable, copied or not: writing a copy would lose the value unseen.
    col.values = col.values.as_read_only();
    return col;
}

// What an exported ArrowArray owns.
struct ArrayExport {
    Array values;                          // host, contiguous (shares storage when it can)
    std::vector<std::uint8_t> value_bits;  // bool values, bit-packed
    std::vector<std::uint8_t> validity;    // bit-packed, empty when there are no nulls
    const void* buffers[2] = {nullptr, nullptr};
};

struct SchemaExport {
    std::string name;
};

void release_array(ArrowArray* a) noexcept {
    delete static_cast<ArrayExport*>(a->private_data);
    a->private_data = nullptr;
    a->release = nullptr;
}

void release_schema(ArrowSchema* s) noexcept {
    delete static_cast<SchemaExport*>(s->private_data);
    s->private_data = nullptr;
    s->release = nullptr;
}

// Packs the bytes of a bool array (nonzero = 1) LSB first; counts the zeros into *zeros.
std::vector<std::uint8_t> pack_bits(const Array& bools, std::int64_t* zeros) {
    const Array h = bools.backend() == Backend::Cpu ? bools.contiguous() : bools.to(Backend::Cpu);
    const std::int64_t n = h.size();
    std::vector<std::uint8_t> out(static_cast<std::size_t>((n + 7) / 8), 0);
    const auto* src = static_cast<const std::uint8_t*>(h.data());
    std::int64_t z = 0, i = 0;
    // Eight bools (bytes 0 or 1, as jitexpr stores them) to one byte, lowest bit first: the multiply
    // gathers bit 0 of byte k into bit k of the top byte. Other nonzero bytes take the loop below.
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, src + i, 8);
        if ((w & ~0x0101010101010101ULL) != 0) break;
        const auto bits = static_cast<std::uint8_t>((w * 0x0102040810204080ULL) >> 56);
        out[static_cast<std::size_t>(i >> 3)] = bits;
        z += 8 - static_cast<std::int64_t>((w * 0x0101010101010101ULL) >> 56);  // (the bytes' sum: the trues)
    }
    for (; i < n; ++i) {
        if (src[i]) out[static_cast<std::size_t>(i >> 3)] |= static_cast<std::uint8_t>(1u << (i & 7));
        else ++z;
    }
    if (zeros) *zeros = z;
    return out;
}

// A valid address for the buffers of empty arrays (some consumers reject NULL ones).
const std::uint64_t kEmpty = 0;

}  // namespace

std::optional<DType> from_arrow_format(std::string_view format) {
    // Temporal types: date32 (int32 days), date64 (int64 milliseconds), timestamp of a unit with an
    // optional time zone (int64 counts since the epoch in UTC, whatever the zone), duration.
    auto unit = [](char c) -> std::optional<TimeUnit> {
        switch (c) {
            case 's': return TimeUnit::s;
            case 'm': return TimeUnit::ms;
            case 'u': return TimeUnit::us;
            case 'n': return TimeUnit::ns;
        }
        return std::nullopt;
    };
    if (format == "tdD") return DType::DateTime64_D;
    if (format == "tdm") return DType::DateTime64_ms;
    if (format.size() >= 4 && format.substr(0, 2) == "ts" && format[3] == ':')
        if (const auto u = unit(format[2])) return datetime_of(*u);
    if (format.size() == 3 && format.substr(0, 2) == "tD")
        if (const auto u = unit(format[2])) return timedelta_of(*u);
    if (format.size() != 1) return std::nullopt;
    switch (format[0]) {
        case 'b': return DType::Bool;
        case 'c': return DType::Int8;
        case 'C': return DType::UInt8;
        case 's': return DType::Int16;
        case 'S': return DType::UInt16;
        case 'i': return DType::Int32;
        case 'I': return DType::UInt32;
        case 'l': return DType::Int64;
        case 'L': return DType::UInt64;
        case 'e': return DType::Float16;
        case 'f': return DType::Float32;
        case 'g': return DType::Float64;
        case 'u':                      // string: UTF-8 with int32 offsets
        case 'U': return DType::Utf8;  // large_string: int64 offsets
    }
    return std::nullopt;
}

const char* to_arrow_format(DType dtype) {
    switch (dtype) {
        case DType::Bool: return "b";
        case DType::Int8: return "c";
        case DType::UInt8: return "C";
        case DType::Int16: return "s";
        case DType::UInt16: return "S";
        case DType::Int32: return "i";
        case DType::UInt32: return "I";
        case DType::Int64: return "l";
        case DType::UInt64: return "L";
        case DType::Float16: return "e";
        case DType::Float32: return "f";
        case DType::Float64: return "g";
        case DType::BFloat16:
        case DType::Complex64:
        case DType::Complex128:
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break; JIT_TEMPORAL_CASES break;  // below
    }
    if (is_temporal(dtype)) {
        // date32 for days (to_arrow narrows the values); timestamp (no zone) and duration of s to ns
        const TimeUnit u = time_unit(dtype);
        if (dtype == DType::DateTime64_D) return "tdD";
        static constexpr const char* kStamp[] = {"tss:", "tsm:", "tsu:", "tsn:"};
        static constexpr const char* kDuration[] = {"tDs", "tDm", "tDu", "tDn"};
        if (u >= TimeUnit::s && u <= TimeUnit::ns) {
            const int k = static_cast<int>(u) - static_cast<int>(TimeUnit::s);
            return is_datetime(dtype) ? kStamp[k] : kDuration[k];
        }
        throw ArgumentError(
            fmt::format("{} has no Arrow type (Arrow's dates are of days, its timestamps and "
                        "durations of s, ms, us or ns): convert it first, as in {}(x, 's')",
                        dtype_name(dtype), is_datetime(dtype) ? "datetime64" : "timedelta64"));
    }
    throw ArgumentError(fmt::format("{} has no Arrow C data interface format", dtype_name(dtype)));
}

ArrowColumn from_arrow(const ArrowSchema* schema, ArrowArray* array) { return import(schema, array, array); }

ArrowColumn view_arrow(const ArrowSchema* schema, const ArrowArray* array) { return import(schema, array, nullptr); }

void to_arrow(const ArrowColumn& column, ArrowArray* out_array, ArrowSchema* out_schema, std::string_view name) {
    if (!out_array || !out_schema) throw ArgumentError("to_arrow: null output array or schema");
    const Array& v = column.values;
    if (!v.defined()) throw ArgumentError("to_arrow: undefined values array");
    if (v.ndim() != 1)
        throw ArgumentError(
            fmt::format("to_arrow: Arrow columns are 1-D; the values have shape {}", shape_to_string(v.shape())));
    const char* format = to_arrow_format(v.dtype());
    if (column.validity) {
        const Array& m = *column.validity;
        if (!m.defined() || m.dtype() != DType::Bool || m.shape() != v.shape())
            throw ArgumentError(fmt::format("to_arrow: the validity must be a bool array of shape {}, not {}",
                                            shape_to_string(v.shape()), m.defined() ? m.describe() : "undefined"));
    }
    auto e = std::make_unique<ArrayExport>();
    auto s = std::make_unique<SchemaExport>();
    s->name = std::string(name);
    const std::int64_t n = v.size();
    std::optional<Array> validity = column.validity;
    if (v.dtype() == DType::Bool) {
        e->value_bits = pack_bits(v, nullptr);
        e->buffers[1] = n > 0 ? static_cast<const void*>(e->value_bits.data()) : &kEmpty;
    } else {
        e->values = v.backend() == Backend::Cpu ? v.contiguous() : v.to(Backend::Cpu);
        e->buffers[1] = n > 0 ? e->values.data() : &kEmpty;
    }
    if (is_temporal(v.dtype())) {
        // NaT is Arrow's null; a date32 holds the days as int32.
        const auto* counts = static_cast<const std::int64_t*>(e->values.data());
        Array valid = Array::empty(DType::Bool, {n}, Backend::Cpu);
        auto* ok = static_cast<std::uint8_t*>(valid.data());
        const Array given = validity ? validity->to(Backend::Cpu) : Array();
        const auto* was = given.defined() ? static_cast<const std::uint8_t*>(given.data()) : nullptr;
        for (std::int64_t i = 0; i < n; ++i) ok[i] = counts[i] != kNaT && (!was || was[i]);
        validity = valid;
        if (v.dtype() == DType::DateTime64_D) {
            Array days = Array::empty(DType::Int32, {n}, Backend::Cpu);
            auto* d = static_cast<std::int32_t*>(days.data());
            for (std::int64_t i = 0; i < n; ++i) {
                if (ok[i] && (counts[i] < std::numeric_limits<std::int32_t>::min() ||
                              counts[i] > std::numeric_limits<std::int32_t>::max()))
                    throw ArgumentError(fmt::format("to_arrow: {} is past the range of an Arrow date32 (int32 days)",
                                                    datetime_string(counts[i], TimeUnit::D)));
                d[i] = ok[i] ? static_cast<std::int32_t>(counts[i]) : 0;
            }
            e->values = days;
            e->buffers[1] = n > 0 ? e->values.data() : &kEmpty;
        }
    }
    std::int64_t nulls = 0;
    if (validity) {
        e->validity = pack_bits(*validity, &nulls);
        if (nulls == 0) e->validity.clear();
    }
    e->buffers[0] = nulls > 0 ? e->validity.data() : nullptr;

    // Nothing below throws.
    ArrowArray& a = *out_array;
    a.length = n;
    a.null_count = nulls;
    a.offset = 0;
    a.n_buffers = 2;
    a.n_children = 0;
    a.buffers = e->buffers;
    a.children = nullptr;
    a.dictionary = nullptr;
    a.release = &release_array;
    a.private_data = e.release();

    ArrowSchema& sc = *out_schema;
    sc.format = format;
    sc.name = s->name.c_str();
    sc.metadata = nullptr;
    sc.flags = ARROW_FLAG_NULLABLE;
    sc.n_children = 0;
    sc.children = nullptr;
    sc.dictionary = nullptr;
    sc.release = &release_schema;
    sc.private_data = s.release();
}

ArrowColumn eval_arrow(std::string_view text, const std::vector<ArrowColumn>& columns, Runtime& runtime) {
    // Positional: the columns bind the program's parameters in order of first appearance.
    const std::vector<std::string> params = parameters(text);
    if (params.size() != columns.size())
        throw ArgumentError(fmt::format("eval_arrow: the program reads {} variable{} but {} column{} given",
                                        params.size(), params.size() == 1 ? "" : "s", columns.size(),
                                        columns.size() == 1 ? " was" : "s were"));
    Environment env;
    std::map<std::string, Array, std::less<>> validity;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        const ArrowColumn& c = columns[i];
        if (!c.values.defined()) throw ArgumentError(fmt::format("eval_arrow: column {} has no values", i));
        if (c.values.ndim() != 1)
            throw ArgumentError(fmt::format("eval_arrow: column {} has shape {}; Arrow columns are 1-D", i,
                                            shape_to_string(c.values.shape())));
        env.emplace(params[i], Arg(c.values));
        if (c.validity) validity.emplace(params[i], *c.validity);
    }
    // Every column must have the others' length: the program is over rows.
    for (std::size_t i = 1; i < columns.size(); ++i)
        if (columns[i].values.shape() != columns[0].values.shape())
            throw ArgumentError(
                fmt::format("eval_arrow: column {} has shape {} but column 0 {}: Arrow columns of one "
                            "program have one length",
                            i, shape_to_string(columns[i].values.shape()), shape_to_string(columns[0].values.shape())));
    ArrowColumn out = eval_arrow(text, env, validity, runtime);
    if (out.validity && out.null_count == -1 && validity.size() == 1 && out.values.ndim() == 1)
        for (const ArrowColumn& c : columns)
            if (c.validity) out.null_count = c.null_count;  // the only input validity is the result's
    return out;
}

namespace {

bool is_reduction_name(std::string_view f) {
    return f == "sum" || f == "prod" || f == "mean" || f == "min" || f == "max" || f == "amin" || f == "amax" ||
           f == "any" || f == "all";
}

using tree::any_node;  // dsl/tree_walk.hpp

// Whether `e` holds a call of a reduction (min/max with two arguments are elementwise).
bool has_reduction(const syntax::Expr& root) {
    return any_node(root, [](const syntax::Expr& e) {
        return e.kind == syntax::ExprKind::Call && is_reduction_name(e.text) &&
               !((e.text == "min" || e.text == "max") && e.operands.size() == 2);
    });
}

// Whether `e` indexes or slices anything (a[1:]).
bool has_subscript(const syntax::Expr& root) {
    return any_node(root, [](const syntax::Expr& e) { return e.kind == syntax::ExprKind::Subscript; });
}

// The rows of a string column where `keep` is true, as a new host column (offsets from 0).
Array compact_strings(const Array& values, const std::vector<std::uint8_t>& keep) {
    const Array h = values.to(Backend::Cpu);  // contiguous, offsets from 0
    const std::size_t w = h.itemsize();
    struct Buffers {
        std::vector<std::int64_t> off64;
        std::vector<std::int32_t> off32;
        std::string chars;
    };
    auto b = std::make_shared<Buffers>();
    const auto* src = static_cast<const char*>(h.chars());
    std::int64_t rows = 0;
    auto push = [&](std::int64_t v) {
        if (w == 8) b->off64.push_back(v);
        else b->off32.push_back(static_cast<std::int32_t>(v));
    };
    push(0);
    for (std::size_t i = 0; i < keep.size(); ++i) {
        if (!keep[i]) continue;
        const std::int64_t s = offset_at(h.data(), w, static_cast<std::int64_t>(i));
        const std::int64_t e = offset_at(h.data(), w, static_cast<std::int64_t>(i) + 1);
        b->chars.append(src + s, static_cast<std::size_t>(e - s));
        push(static_cast<std::int64_t>(b->chars.size()));
        ++rows;
    }
    const void* offsets =
        w == 8 ? static_cast<const void*>(b->off64.data()) : static_cast<const void*>(b->off32.data());
    const char* chars = b->chars.data();
    const std::size_t bytes = b->chars.size();
    return Array::view_utf8(offsets, w, chars, bytes, rows, Backend::Cpu, 0, b);
}

// The rows of a 1-D host array where `keep` is true, as a new contiguous host array.
Array compact(const Array& values, const std::vector<std::uint8_t>& keep, std::int64_t kept) {
    if (values.dtype() == DType::Utf8) return compact_strings(values, keep);
    const Array h = values.backend() == Backend::Cpu ? values.contiguous() : values.to(Backend::Cpu);
    Array out = is_string(h.dtype()) ? Array::empty(h.dtype(), h.itemsize(), {kept}, Backend::Cpu)
                                     : Array::empty(h.dtype(), {kept}, Backend::Cpu);
    const std::size_t size = h.itemsize();
    const auto* src = static_cast<const std::byte*>(h.data());
    auto* dst = static_cast<std::byte*>(out.data());
    for (std::size_t i = 0, j = 0; i < keep.size(); ++i)
        if (keep[i]) std::memcpy(dst + size * j++, src + size * i, size);
    return out;
}

// `a` on backend `b`; a copy of a read-only column is read-only too (a write would be lost).
Array on(const Array& a, Backend b) {
    if (a.backend() == b) return a;
    const Array c = a.to(b);
    return a.read_only() ? c.as_read_only() : c;
}

}  // namespace

ArrowColumn eval_arrow(std::string_view text, const Environment& env,
                       const std::map<std::string, Array, std::less<>>& validity, Runtime& runtime) {
    const syntax::Module module = syntax::parse(text);
    const std::vector<std::string> read = parameters(text);
    const std::vector<std::string> assigned = targets(text);
    // The validity of what the program reads, checked; assigning to a column is refused.
    std::vector<std::pair<std::string, Array>> masks;
    std::int64_t rows = -1;
    for (const auto& [name, m] : validity) {
        auto it = env.find(name);
        if (it == env.end() || !it->second.is_array())
            throw ArgumentError(fmt::format("eval_arrow: '{}' has a validity but no array values", name));
        const Array& v = it->second.array();
        if (!m.defined() || m.dtype() != DType::Bool || m.shape() != v.shape())
            throw ArgumentError(fmt::format("eval_arrow: the validity of '{}' must be a bool array of its shape {}",
                                            name, shape_to_string(v.shape())));
        if (std::find(assigned.begin(), assigned.end(), name) != assigned.end())
            throw ArgumentError(
                fmt::format("eval_arrow: the program assigns to '{}', an Arrow column (Arrow buffers "
                            "are immutable); assign to a new name",
                            name));
        if (std::find(read.begin(), read.end(), name) != read.end()) {
            masks.emplace_back(name, m);
            if (v.ndim() == 1) rows = v.shape()[0];
        }
    }
    // Where the columns are evaluated. Under Auto, host columns stay host arrays and the
    // runtime places each call as it places any host data (small data on the CPU before CUDA
    // starts); device arrays among them start CUDA, and the rest follow them there. Otherwise
    // arrays travel to the runtime's backend explicitly here: Arrow memory is host memory.
    const Backend target = [&] {
        if (runtime.options().backend == Backend::Auto) {
            bool on_device = false;
            for (const auto& [name, a] : env)
                on_device = on_device || (a.is_array() && a.array().backend() != Backend::Cpu);
            if (!on_device) return Backend::Cpu;
        }
        return runtime.backend();
    }();
    Environment bound;
    for (const auto& [name, a] : env) bound.emplace(name, a.is_array() ? Arg(on(a.array(), target)) : a);

    // One reduction over the whole of an expression: evaluated over the rows valid in every
    // variable it reads.
    const bool one_reduction = module.statements.size() == 1 && module.statements[0].value &&
                               module.statements[0].value->kind == syntax::ExprKind::Call &&
                               is_reduction_name(module.statements[0].value->text) &&
                               module.statements[0].value->operands.size() == 1 &&
                               module.statements[0].value->keywords.empty();
    if (!masks.empty() && !one_reduction)
        for (const auto& st : module.statements)
            if (st.value && has_reduction(*st.value))
                throw ArgumentError(
                    fmt::format("eval_arrow: '{}' has a reduction inside a larger program over columns with nulls; "
                                "each reduction skips the null rows of its own columns, so evaluate the reductions "
                                "apart (e.g. m = sum(a), then the rest with m)",
                                text.substr(st.span.begin, st.span.end - st.span.begin)));
    // A slice moves the values of a row to another row; the validity would have to move with it.
    if (!masks.empty())
        for (const auto& st : module.statements)
            if (st.value && has_subscript(*st.value))
                throw ArgumentError(
                    fmt::format("eval_arrow: '{}' indexes or slices a column, which is not supported for "
                                "columns with nulls (fill or drop the nulls first)",
                                text.substr(st.span.begin, st.span.end - st.span.begin)));
    ArrowColumn out;
    if (one_reduction && !masks.empty()) {
        std::vector<std::uint8_t> keep(static_cast<std::size_t>(rows), 1);
        for (const auto& [name, m] : masks) {
            const Array h = on(m, Backend::Cpu).contiguous();
            const auto* b = static_cast<const std::uint8_t*>(h.data());
            for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = keep[i] && b[i];
        }
        std::int64_t kept = 0;
        for (auto k : keep) kept += k;
        Environment compacted;
        for (const auto& [name, a] : env) {
            const bool column = a.is_array() && a.array().ndim() == 1 && a.array().shape()[0] == rows;
            compacted.emplace(name,
                              column ? Arg(on(compact(a.array(), keep, kept), target)) : bound.find(name)->second);
        }
        const std::string_view name = module.statements[0].value->text;
        if (kept == 0 && name != "sum" && name != "prod" && name != "any" && name != "all" && name != "mean") {
            // min/max of nothing: NumPy refuses, SQL gives NULL; the dtype comes from a one-row run.
            Environment one;
            for (const auto& [n, a] : env) {
                const bool column = a.is_array() && a.array().ndim() == 1 && a.array().shape()[0] == rows;
                one.emplace(n, column ? Arg(on(a.array().slice(0, 0, std::min<std::int64_t>(rows, 1)), target))
                                      : bound.find(n)->second);
            }
            out.values = rows > 0 ? runtime.run(text, one) : Array::zeros(DType::Float64, {}, target);
        } else {
            out.values = runtime.run(text, compacted);
        }
        if (kept == 0) {
            out.validity = Array::zeros(DType::Bool, {}, Backend::Cpu);
            out.null_count = 1;
        }
        return out;
    }
    out.values = runtime.run(text, bound);
    if (!out.values.defined()) throw ArgumentError("eval_arrow: the program's last statement has no value");
    if (masks.empty()) return out;
    if (out.values.ndim() != 1 || out.values.shape()[0] != rows)
        throw ArgumentError(
            fmt::format("eval_arrow: the result has shape {} but the columns with nulls have {} rows: "
                        "the program must be elementwise over them, or one reduction",
                        shape_to_string(out.values.shape()), rows));
    if (masks.size() == 1) {
        out.validity = masks[0].second;  // shared: validity arrays are never written
        out.null_count = -1;
        return out;
    }
    Environment menv;
    std::string conj;
    for (std::size_t k = 0; k < masks.size(); ++k) {
        const std::string n = fmt::format("m{}", k);
        conj += (k ? " & " : "") + n;
        menv.emplace(n, Arg(on(masks[k].second, target)));
    }
    out.validity = runtime.run(conj, menv);
    out.null_count = -1;
    return out;
}

}  // namespace jit

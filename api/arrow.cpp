// The Arrow C data interface: primitive columns in (zero-copy where the layouts agree) and out,
// and evaluation that propagates nulls.
#include <jit/error.hpp>
#include <jit/interop.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace jit {

namespace {

constexpr std::string_view kSupportedFormats = "c C s S i I l L e f g b";

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

// Checks everything about the pair; returns the dtype. Nothing is consumed or allocated.
DType check_import(const ArrowSchema* schema, const ArrowArray* array) {
    if (!schema || !array) throw ArgumentError("Arrow import: null schema or array");
    if (!schema->release) throw ArgumentError("Arrow import: the schema is released");
    if (!array->release) throw ArgumentError("Arrow import: the array is released (already moved or consumed)");
    if (!schema->format) throw ArgumentError("Arrow import: the schema has a null format");
    const std::optional<DType> dtype = from_arrow_format(schema->format);
    if (!dtype)
        throw ArgumentError(fmt::format("Arrow format \"{}\" is not a primitive type jitexpr supports ({})",
                                        schema->format, kSupportedFormats));
    if (schema->dictionary || array->dictionary)
        throw ArgumentError(fmt::format("Arrow import: dictionary-encoded column (format \"{}\" indices); "
                                        "decode it first",
                                        schema->format));
    if (schema->n_children != 0 || array->n_children != 0)
        throw ArgumentError(fmt::format("Arrow import: a primitive column (format \"{}\") with {} children",
                                        schema->format, array->n_children != 0 ? array->n_children : schema->n_children));
    if (array->n_buffers != 2)
        throw ArgumentError(fmt::format("Arrow import: format \"{}\" with {} buffers; primitive arrays have 2 "
                                        "(validity, values)",
                                        schema->format, array->n_buffers));
    if (!array->buffers) throw ArgumentError("Arrow import: null buffers pointer");
    if (array->length < 0 || array->offset < 0)
        throw ArgumentError(fmt::format("Arrow import: negative length {} or offset {}", array->length, array->offset));
    if (array->length > std::numeric_limits<std::int64_t>::max() / 16 - array->offset)
        throw ArgumentError(fmt::format("Arrow import: length {} and offset {} are too large", array->length,
                                        array->offset));
    if (array->null_count < -1 || array->null_count > array->length)
        throw ArgumentError(fmt::format("Arrow import: null_count {} for length {}", array->null_count, array->length));
    if (array->null_count > 0 && !array->buffers[0])
        throw ArgumentError(fmt::format("Arrow import: null_count {} but no validity bitmap", array->null_count));
    if (array->length > 0 && !array->buffers[1]) throw ArgumentError("Arrow import: null values buffer");
    return *dtype;
}

ArrowColumn import(const ArrowSchema* schema, const ArrowArray* array, ArrowArray* to_own) {
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
    if (dtype == DType::Bool) {
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
                owned->array = *to_own;       // the move of the specification: copy the struct,
                to_own->release = nullptr;    // mark the source released
                keep = std::move(owned);
            }
            col.values = Array::view(const_cast<std::byte*>(p), dtype, {n}, {1}, Backend::Cpu, std::move(keep));
            return col;
        }
    }
    // Everything was copied: an owned array is consumed now (released once, here).
    if (to_own) {
        OwnedArrowArray owned;
        owned.array = *to_own;
        to_own->release = nullptr;
    }
    return col;
}

// What an exported ArrowArray owns.
struct ArrayExport {
    Array values;                       // host, contiguous (shares storage when it can)
    std::vector<std::uint8_t> value_bits; // bool values, bit-packed
    std::vector<std::uint8_t> validity; // bit-packed, empty when there are no nulls
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
    std::int64_t z = 0;
    for (std::int64_t i = 0; i < n; ++i) {
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
        case DType::Complex128: break;
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
        throw ArgumentError(fmt::format("to_arrow: Arrow columns are 1-D; the values have shape {}",
                                        shape_to_string(v.shape())));
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
    if (v.dtype() == DType::Bool) {
        e->value_bits = pack_bits(v, nullptr);
        e->buffers[1] = n > 0 ? static_cast<const void*>(e->value_bits.data()) : &kEmpty;
    } else {
        e->values = v.backend() == Backend::Cpu ? v.contiguous() : v.to(Backend::Cpu);
        e->buffers[1] = n > 0 ? e->values.data() : &kEmpty;
    }
    std::int64_t nulls = 0;
    if (column.validity) {
        e->validity = pack_bits(*column.validity, &nulls);
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
    std::vector<Arg> args;
    args.reserve(columns.size());
    std::vector<Arg> masks;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        const ArrowColumn& c = columns[i];
        if (!c.values.defined()) throw ArgumentError(fmt::format("eval_arrow: column {} has no values", i));
        // Arrow columns are host memory: on a CUDA runtime they travel to the device (the one
        // copy this path makes; results come back in to_arrow).
        auto on_runtime = [&](const Array& a) { return a.backend() == runtime.backend() ? a : a.to(runtime.backend()); };
        args.emplace_back(on_runtime(c.values));
        if (c.validity) {
            if (!c.validity->defined() || c.validity->dtype() != DType::Bool ||
                c.validity->shape() != c.values.shape())
                throw ArgumentError(fmt::format("eval_arrow: column {}: the validity must be a bool array of the "
                                                "values' shape {}",
                                                i, shape_to_string(c.values.shape())));
            masks.emplace_back(on_runtime(*c.validity));
        }
    }
    ArrowColumn out;
    out.values = runtime.eval(text, args);
    if (!out.values.defined()) throw ArgumentError("eval_arrow: the program's last statement has no value");
    if (out.values.ndim() != 1)
        throw ArgumentError(fmt::format("eval_arrow: the result has shape {}; an Arrow column is 1-D (reductions "
                                        "such as sum() are not elementwise, and nulls have no meaning there)",
                                        shape_to_string(out.values.shape())));
    for (std::size_t i = 0; i < columns.size(); ++i)
        if (columns[i].values.shape() != out.values.shape())
            throw ArgumentError(fmt::format("eval_arrow: column {} has shape {} but the result {}: the program must "
                                            "be elementwise over the columns",
                                            i, shape_to_string(columns[i].values.shape()),
                                            shape_to_string(out.values.shape())));
    if (masks.size() == 1) {
        out.validity = masks[0].array();  // shared: validity arrays are never written
        for (const ArrowColumn& c : columns)
            if (c.validity) out.null_count = c.null_count;
    } else if (masks.size() > 1) {
        std::string conj = "m0";
        for (std::size_t k = 1; k < masks.size(); ++k) conj += fmt::format(" & m{}", k);
        out.validity = runtime.eval(conj, masks);
        out.null_count = -1;
    }
    return out;
}

}  // namespace jit

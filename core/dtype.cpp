// Element types: names (part of jitexpr_core).
#include <jit/dtype.hpp>

#include <fmt/format.h>

namespace jit {

std::optional<DType> dtype_from_name(std::string_view name) {
#define JIT_DTYPE_LOOKUP(Id, lower, spelled, size) \
    if (name == spelled) return DType::Id;
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_LOOKUP)
#undef JIT_DTYPE_LOOKUP
    if (name == "float" || name == "double") return DType::Float64;
    if (name == "half") return DType::Float16;
    if (name == "int") return DType::Int64;
    if (name == "uint") return DType::UInt64;
    if (name == "complex") return DType::Complex128;
    return std::nullopt;
}

std::string dtype_name(DType t, std::size_t itemsize) {
    switch (t) {
        case DType::Bytes: return fmt::format("S{}", itemsize);
        case DType::Str: return fmt::format("U{}", itemsize / 4);
        case DType::Utf8: return itemsize == 8 ? "large_string" : "string";
        default: return std::string(dtype_name(t));
    }
}

}  // namespace jit

// Shape helpers and names: plain functions every layer uses (part of jitexpr_core).
#include <jit/array.hpp>

#include <algorithm>

namespace jit {

std::string_view backend_name(Backend b) {
    switch (b) {
        case Backend::Auto: return "auto";
        case Backend::Cpu: return "cpu";
        case Backend::Cuda: return "cuda";
    }
    return "?";
}

std::int64_t shape_size(const Shape& s) {
    std::int64_t n = 1;
    for (auto e : s) n *= e;
    return n;
}

Strides contiguous_strides(const Shape& s) {
    Strides r(s.size());
    std::int64_t acc = 1;
    for (std::size_t k = s.size(); k-- > 0;) {
        r[k] = acc;
        acc *= std::max<std::int64_t>(s[k], 1);
    }
    return r;
}

std::string shape_to_string(const Shape& s) {
    if (s.empty()) return "()";
    std::string r = "(";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    if (s.size() == 1) r += ",";
    return r + ")";
}

}  // namespace jit

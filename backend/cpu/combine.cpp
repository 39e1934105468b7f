// jitexpr — combining partial results through the CPU kernel table (see combine.hpp).
#include "backend/cpu/combine.hpp"

#include "backend/cpu/kernels.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <cstring>
#include <vector>

namespace jit::cpu {

namespace {

// The register dtype partials of `t` are folded in: the widest of their kind, so that a
// result is rounded once, not once per part.
DType wide_of(DType t) {
    if (is_complex(t)) return DType::Complex128;
    if (is_inexact(t)) return DType::Float64;
    return t;
}

bool folds(ir::Op reduction) {
    const ir::OpInfo& i = ir::info(reduction);
    return i.kind == ir::OpKind::Reduction && i.rule != ir::Rule::ArgFirst &&
           (i.finish == ir::Finish::Keep || i.finish == ir::Finish::DivideByCount);
}

}  // namespace

bool can_combine(ir::Op reduction, DType dtype) {
    if (!folds(reduction) || static_cast<int>(dtype) >= kNumDTypes) return false;  // a compute dtype only
    const KernelTable& kt = kernels();
    const int k = static_cast<int>(red_slot(reduction)), w = static_cast<int>(wide_of(dtype));
    return kt.identity[k][w] && kt.combine[k][w] &&
           (ir::info(reduction).finish != ir::Finish::DivideByCount || kt.divide[w]);
}

void combine(ir::Op reduction, DType dtype, const void* partials, std::size_t count, std::size_t width,
             const std::int64_t* elements, void* out) {
    if (!can_combine(reduction, dtype))
        throw InternalError(
            fmt::format("cpu::combine: partials of {} of {}", ir::spelling(reduction), dtype_name(dtype)));
    if (count == 0) throw InternalError("cpu::combine: no partial");
    const KernelTable& kt = kernels();
    const DType wide = wide_of(dtype);
    const int k = static_cast<int>(red_slot(reduction)), d = static_cast<int>(dtype), w = static_cast<int>(wide);
    const bool mean = ir::info(reduction).finish == ir::Finish::DivideByCount;
    const auto n = static_cast<std::int64_t>(count);
    const std::size_t reg = static_cast<std::size_t>(reg_size(dtype)), wreg = static_cast<std::size_t>(reg_size(wide));
    std::vector<unsigned char> column(count * reg), folded(count * wreg), weights, scaled, acc(wreg), result(reg);
    std::int64_t total = 0;
    if (mean) {
        // Each part's mean times its elements is its sum; the sums fold as the accumulator's.
        weights.resize(count * wreg);
        scaled.resize(count * wreg);
        const void* in[1] = {elements};
        kt.cast[static_cast<int>(DType::Int64)][w](in, weights.data(), n);
        for (std::size_t c = 0; c < count; ++c) total += elements[c];
    }
    const auto* src = static_cast<const unsigned char*>(partials);
    auto* dst = static_cast<unsigned char*>(out);
    for (std::size_t j = 0; j < width; ++j) {
        kt.load[d](src + j * itemsize(dtype), static_cast<std::int64_t>(width), column.data(), n);
        if (wide != dtype) {
            const void* in[1] = {column.data()};
            kt.cast[d][w](in, folded.data(), n);
        } else {
            std::memcpy(folded.data(), column.data(), count * wreg);
        }
        if (mean) {
            const void* in[2] = {folded.data(), weights.data()};
            kt.op[static_cast<int>(ir::Op::Mul)][w](in, scaled.data(), n);
            folded.swap(scaled);
        }
        kt.identity[k][w](acc.data());
        for (std::size_t c = 0; c < count; ++c) kt.combine[k][w](acc.data(), folded.data() + c * wreg);
        if (mean) kt.divide[w](acc.data(), total);
        if (wide != dtype) {
            const void* in[1] = {acc.data()};
            kt.cast[w][d](in, result.data(), 1);
        } else {
            std::memcpy(result.data(), acc.data(), reg);
        }
        kt.store[d](result.data(), dst + j * itemsize(dtype), 1, 1);
    }
}

}  // namespace jit::cpu

// jitexpr — the one combine of partial results: the values a reduction gave over separate
// parts of its operand (chunks streamed through a GPU, shards on several devices) folded into
// the reduction of the whole, through the CPU kernel table's entries for the reduction's
// accumulator (dsl/ops.def: Accumulate and Finish). The CPU backend's own blocks fold their
// accumulators with the same entries.
#pragma once

#include "dsl/ops.hpp"

#include <jit/dtype.hpp>

#include <cstddef>
#include <cstdint>

namespace jit::cpu {

// Whether partials of the Reduce node op `reduction` with result dtype `dtype` can be combined:
// a fold (Finish Keep or DivideByCount) that is not positional (ArgFirst's positions are of
// its part), with kernel-table entries for `dtype`.
bool can_combine(ir::Op reduction, DType dtype);

// Folds `count` partials into `out`. Each partial is `width` values of `dtype` (the Reduce
// node's dtype, storage layout), one partial after the other at `partials`; `out` receives
// `width` values. Per value, the partials are folded in order with the accumulator's
// identity() and combine(): real floats in float64 and complex in complex128, rounded to
// `dtype` once at the end; integers wrap as the kernels' arithmetic does; NaN propagates
// through min and max. DivideByCount (mean): partial c is the mean of `elements[c]` elements
// (or of elements in proportion to it), and the result is their weighted mean. Throws
// InternalError when !can_combine(reduction, dtype) or count == 0.
void combine(ir::Op reduction, DType dtype, const void* partials, std::size_t count, std::size_t width,
             const std::int64_t* elements, void* out);

}  // namespace jit::cpu

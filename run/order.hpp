// jitexpr — new arrays in the axis order of the arrays they are computed from (NumPy's order 'K').
//
// When every array a call binds has the same shape and lies densely in memory in one axis order
// other than C's (Fortran order, a transpose, any permutation of the axes), and the program
// computes each element from the same element of its inputs alone, the call runs over the
// arrays seen in that order: as C-contiguous views of the same memory. The kernels are then the
// contiguous ones (no transposing tiles), and the new arrays come back seen in the inputs' own
// axes, so they have the inputs' layout, as NumPy's and numexpr's results do. Nothing is copied.
#pragma once

#include "dsl/ir.hpp"

#include <jit/core/arg.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jit::run {

struct AxisOrder {
    Shape shape;            // the arrays' common shape
    std::vector<int> axes;  // axes[i]: the axis the in-order view's axis i is (outermost first)
    Shape ordered_shape;    // shape[axes[i]]: the in-order views' shape
};

// An array as the order sees it (a bound Array, or a declaration of jitexpr precompile).
struct ArrayLayout {
    const Shape* shape = nullptr;
    const Strides* strides = nullptr;
    DType dtype = DType::Float64;
};

// The order `arrays` share: when there is at least one that is not 0-d, and of those none is
// C-contiguous, none holds strings, all have one shape of two or more axes of which two or more
// exceed 1, and each is dense (no gaps, strides positive) in the same order. 0-d arrays (a NumPy
// scalar) take no part. nullopt otherwise.
std::optional<AxisOrder> shared_order(std::span<const ArrayLayout> arrays);
// The same for the arrays among a call's bindings (null: unbound): a C-contiguous array among them
// ends the check at once, so the common case pays one test.
std::optional<AxisOrder> shared_order(std::span<const Arg* const> bound);
// `strides` (of an array of o.shape) seen in order `o`.
Strides in_order(const AxisOrder& o, const Strides& strides);

// Whether `p` computes every element of its results from the elements at the same place of its
// inputs and nothing else, over arrays of `shape`: its nodes are inputs, scalars, constants,
// operations and casts only (no reduction, scan, selection or order statistic), its inputs are
// the bound arrays themselves (no slice or index of them) and every array value has `shape` or
// none (0-d).
bool order_free(const ir::Program& p, const Shape& shape);

// `env`'s bindings of `names` (the others are not copied), each array seen in order `o` (0-d
// arrays as they are).
Environment in_order(const AxisOrder& o, std::span<const std::string> names, const Environment& env);

// An array of the in-order views' shape seen back in the arrays' own axes (anything else as it is).
Array restored(const AxisOrder& o, const Array& a);

// What a run over `ordered` (in_order's environment) assigned, bound in `env` seen back in the
// arrays' own axes: each name of `names` whose array there is not the view in_order made of
// `env`'s (arrays written in place are the same views, and keep `env`'s binding as it is).
void assign_back(const AxisOrder& o, std::span<const std::string> names, const Environment& ordered, Environment& env);

}  // namespace jit::run

// Printing arrays NumPy-style (see docs/cli.md, "Printing values"):
//
//   array([1. , 2.5, 3. ], dtype=float32)  # shape (3,)
//
// Floats are printed with the shortest digits that read back to the same value of their own
// dtype, in fixed notation aligned on the decimal point, or in scientific notation when the
// magnitudes call for it (largest >= 1e8, smallest nonzero < 1e-4, or a ratio above 1e3, as
// NumPy decides). Arrays of more than 1000 elements are summarised: 3 items at each edge of
// every axis longer than 6, with "..." between. Lines wrap at 75 columns.
#pragma once

#include <jit/array.hpp>

#include <string>

namespace jit::cli {

struct PrintOptions {
    std::size_t threshold = 1000;  // summarise above this many elements
    int edge_items = 3;
    int line_width = 75;
};

// "(3,)", "(2, 3)", "()".
std::string shape_text(const Shape& s);

// The whole repr: "array(..., dtype=...)  # shape (...)".
std::string format_array(const Array& a, const PrintOptions& options = {});

// One number of dtype `t` as it reads alone: "2.5", "1e-07", "True", "(1+2j)".
std::string format_scalar_bytes(const void* element, DType t);

}  // namespace jit::cli

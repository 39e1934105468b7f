// jitexpr — how a program splits into rows: the one answer streaming (host chunks through the
// GPU), sharding (row blocks on several devices) and jit::check's program info (Dask) read.
//
// The iteration shape S is the shape every element-wise output has (and every reduction
// reads). The leading `split` axes of S are the rows; a part of the program's work is a range
// of rows, so on C-contiguous memory every operand's part is one contiguous byte range.
//   * An input with S's full extent on each of the split axes is *chunked*: its rows go with
//     their part. An input broadcast along all of them (extent 1 or absent) is read *whole* by
//     every part. `split` is at most the count of leading axes on which every input is one or
//     the other.
//   * An element-wise output (shape S) splits by rows like an input.
//   * A reduction over every element is *combined*: each part gives one partial, and the
//     partials fold with the reduction's accumulator and finish (dsl/ops.def: Accumulate,
//     Finish Keep or DivideByCount). A reduction that does not fold (Finish Select, the
//     positional ArgFirst) is refused.
// Sharding runs the whole program on every part, statement by statement, and asks of each
// output what its own nodes need beyond the part's rows (RowsOptions::per_output, RowSplit::own):
// a selection by the data, or a scan.
// Everything here is read off the node kinds and the op table: a new node kind is one line
// (what a part of it needs) in rows.cpp.
#pragma once

#include "dsl/ir.hpp"

#include <jit/array.hpp>
#include <jit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace jit::dsl {

struct InputRows {
    bool chunked = false;       // its rows go with the parts; else read whole by every part
    bool read = true;           // some node reads it (false: only an in-place target)
    std::size_t row_bytes = 0;  // chunked: bytes per row
    Shape row_shape;            // chunked: its axes after the split (a row's shape)
    std::string why;            // not empty: it cannot be split by rows (a slice of an array), why
};

struct OutputRows {
    enum class How : std::uint8_t { Rows, Combine, Refused };
    How how = How::Rows;
    ir::Op reduction = ir::Op::Sum;  // Combine: the Reduce node's op (folded with its Accumulate and Finish)
    DType dtype = DType::Float32;
    std::size_t row_bytes = 0;  // Rows: bytes per row
    std::string why;            // Refused: why, a sentence for the user
};

// What an output's own nodes (its value's, down to the nodes of other outputs, which their own
// statements answer for) need beyond a part's rows, by their kinds, whatever the inputs are cut
// into. Views are not among them: lowering makes views of what the text never indexes (an
// average's weights laid along their axes), and a reduction of a boolean-mask selection is
// fused into a masked reduction of the unselected values, so no node says that it selects.
// Slices are the text's (jit::outline's subscripts), which sharding reads beside these.
struct OwnRows {
    bool selects = false;  // a node whose length is the data's (a boolean-mask selection kept as one)
    bool scans = false;    // a scan (cumsum, cumprod, ...): each part's running values need the parts before
};

struct RowSplit {
    // Empty when the program as a whole splits by rows; else why not (then split, inputs and
    // outputs are empty). Even then an input or an output can refuse (InputRows::why,
    // OutputRows::why): splits() is whether none does.
    std::string why_not;
    Shape shape;                      // S
    int split = 0;                    // leading axes of S that are the rows
    std::int64_t rows = 0;            // product of S's split axes
    std::int64_t row_elements = 0;    // product of S's other axes
    std::vector<InputRows> inputs;    // per Program::inputs
    std::vector<OutputRows> outputs;  // per Program::outputs
    std::vector<OwnRows> own;         // per Program::outputs, with RowsOptions::per_output (else empty)
    bool splits() const;
    // The first refusal: why_not, else the first input's, else the first output's; empty if none.
    std::string first_refusal() const;
};

// Collapse one more leading axis of S into rows only while a row of every operand together
// is above this many bytes (more axes make shorter rows and more of them).
inline constexpr std::size_t kOneAxis = std::numeric_limits<std::size_t>::max();

// How `program` splits into rows: as many leading axes of S as every input allows, but
// collapsing another axis only while the bytes of one row of every operand together exceed
// `small_row_bytes` (kOneAxis: axis 0 alone).
RowSplit split_rows(const ir::Program& program, std::size_t small_row_bytes = kOneAxis);

struct RowsOptions {
    std::size_t small_row_bytes = kOneAxis;  // as split_rows' argument
    // Also answer per output what its own nodes need (RowSplit::own), whether or not the program
    // as a whole splits: sharding, which runs every statement on every part, reads that.
    bool per_output = false;
};
RowSplit split_rows(const ir::Program& program, const RowsOptions& options);

}  // namespace jit::dsl

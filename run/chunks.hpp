// jitexpr — how a program over host arrays is cut into chunks that stream through the GPU.
//
// Pure functions (no driver, no device): run::decide (decide.hpp) asks plan_stream() whether and
// how a call streams, run::streamed (streamed.cpp) runs the chunks through the CUDA transport
// (backend/cuda/stream.hpp, which knows no program), and tests check the decisions on any
// machine.
//
// Which inputs travel with the chunks (chunked) or are copied to the device once and read by
// every chunk (resident), and which outputs are written by rows or combined from one partial
// per chunk, is dsl::split_rows's answer (dsl/rows.hpp), with the leading axes collapsed into
// rows until a row is below a tenth of a chunk. Here, on top of it:
//   * a reduction's partials are combined on the host (cpu::combine, backend/cpu/combine.hpp)
//     in chunk order, so a result depends only on the chunking, never on timing; 16-bit floats
//     and complex, whose kernels accumulate in another type than the partial they store, are
//     not streamed;
//   * an input must be C-contiguous;
//   * an output written in place into an input (`a = a*2`) is written chunk by chunk into the
//     input's memory when no other input overlaps that memory (each chunk reads its rows before
//     it writes them, and no later chunk reads them); otherwise it goes through a temporary that
//     is copied in once the whole program has run.
// Chunks are balanced: ceil(rows / rows_per_chunk) chunks whose sizes differ by at most one row,
// so a program runs with at most two chunk shapes (two compiled variants).
#pragma once

#include "dsl/ir.hpp"

#include <jit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jit::run::chunks {

struct Request {
    const ir::Program* program = nullptr;
    // Per program input: the address range [begin, end) of its host memory (for overlap
    // checks); {0, 0} when unknown (then it overlaps nothing).
    struct Range {
        std::uintptr_t begin = 0, end = 0;
    };
    std::vector<Range> input_memory;
    // Per program input: its memory is C-contiguous (strides as contiguous_strides, no gaps).
    std::vector<bool> input_contiguous;
    std::size_t device_budget = 0;             // bytes of device memory the streamed run may use
    std::size_t target_chunk_bytes = 0;        // bytes one chunk of every chunked operand should move (0: default)
    int buffers = 3;                           // chunks in flight (2: double, 3: triple buffering)
    bool outputs_through_temporaries = false;  // in-place outputs never written directly (all or nothing)
};

struct InputPlan {
    bool chunked = false;       // rows travel with the chunks; else resident on the device
    bool read = true;           // some node reads it (false: only an in-place target; never copied in)
    std::size_t row_bytes = 0;  // chunked: bytes per row
    Shape row_shape;            // chunked: its axes after the split (a row's shape)
    std::size_t bytes = 0;      // resident: bytes of the whole input
    Shape device_shape;         // resident: the shape the chunk program reads (split axes collapsed to 1)
};

struct OutputPlan {
    bool reduction = false;   // one partial per chunk, combined on the host
    ir::Op op = ir::Op::Sum;  // reduction: the Reduce node's op (cpu::combine folds its partials)
    DType dtype = DType::Float32;
    std::size_t row_bytes = 0;      // element-wise: bytes per row
    std::int32_t alias_input = -1;  // the input whose memory it is written into, or -1
    bool direct = false;            // alias_input >= 0: written into it chunk by chunk
};

struct ChunkPlan {
    bool streamable = false;
    std::string why_not;              // when !streamable: a sentence for the user
    Shape shape;                      // S
    int split = 0;                    // leading axes of S collapsed into rows
    std::int64_t rows = 0;            // product of S's split axes
    std::int64_t rows_per_chunk = 0;  // the largest chunk's rows
    std::size_t chunks = 0;
    int buffers = 0;                 // slots in flight actually planned (<= Request::buffers)
    std::size_t chunk_bytes = 0;     // bytes of every chunked operand in the largest chunk
    std::size_t resident_bytes = 0;  // resident inputs together
    std::size_t device_bytes = 0;    // what the run needs on the device: resident + buffers * chunk + partials
    std::vector<InputPlan> inputs;
    std::vector<OutputPlan> outputs;

    // Chunk c: its first row and its row count (c < chunks).
    std::int64_t chunk_begin(std::size_t c) const;
    std::int64_t chunk_rows(std::size_t c) const;
    // The shape the chunk program sees for a chunk of `rows` rows: {rows} followed by S's axes
    // after the split (rows alone when S has no more axes).
    Shape chunk_shape(std::int64_t rows) const;
    // The same for input i (chunked: {rows} and its row_shape; resident: device_shape).
    Shape input_chunk_shape(std::size_t i, std::int64_t rows) const;
};

// Default bytes per chunk (every chunked operand together).
inline constexpr std::size_t kDefaultChunkBytes = std::size_t{96} << 20;

// Decides how `r.program` streams, or why it cannot (a program with a reduction along one
// axis, a reduction whose value feeds further arithmetic, outputs of different shapes, a
// non-contiguous input, an operand that needs more device memory than the budget, ...).
ChunkPlan plan_stream(const Request& r);

}  // namespace jit::run::chunks

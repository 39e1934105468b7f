// jitexpr — the kernel emitters behind codegen::emit (internal to codegen/): one kernel per stage.
//
// StageEmitter holds what every kernel kind shares: the values a stage reads and writes, the
// per-element function jx_compute, parameters, and the kernel's source and key. Its kinds:
// ElementwiseEmitter (emit_elementwise.cpp) writes Flat, Strided and Tiled kernels,
// ReduceEmitter (emit_reduce.cpp) ReduceAll and ReduceAxis ones, ScanEmitter (emit_scan.cpp)
// ScanAll and ScanAxis ones. A new kernel kind is a
// KernelKind, its kernel function in one of them (or a new subclass), and its launch shape in
// backend/cuda/launch.cpp.
#pragma once

#include "codegen/codegen.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace jit::codegen::emitter {

// Appends a parameter that carries no array or scalar (a count, a layout, a workspace, ...).
inline void push_param(KernelSource& k, Param::Kind kind) {
    Param p;
    p.kind = kind;
    k.params.push_back(p);
}

[[noreturn]] void internal(const std::string& what);
// The C++ type a value of `t` has in registers (16-bit floats compute in float).
std::string reg_type(DType t);
// The C++ type of an element in memory.
std::string store_type(DType t);
std::string load_conv(DType t, const std::string& x);
std::string store_conv(DType t, const std::string& v);
// Reduction functor of jx::red for a Reduce op.
std::string red_type(ir::Op op, DType t);
// True when an array of `shape`/`strides` read over `target` walks it in flat C order.
bool same_flat(const Shape& shape, const Strides& strides, const Shape& target);

// How an array moves along the last axis of a strided iteration space.
enum class InnerClass : std::uint8_t {
    Unit,     // stride 1 (or the axis has one element): contiguous, vector loads possible
    Zero,     // stride 0: broadcast along the axis, one value per row
    Tile,     // contiguous along the second-last axis instead (a transposed input): via shared memory
    General,  // any other stride, read from the layout at run time
};

constexpr int kTileThreads = 256;                    // Tiled: threads per block (tile-edge lanes x rows)
constexpr std::size_t kTileSharedLimit = 40 * 1024;  // Tiled: shared memory for all tiles of a block
constexpr std::size_t kVectorOpLimit = 128;          // Flat/Strided: more operations per element, no vector loop

struct ReadArray {
    ArrayRef ref;
    DType dtype;
    Shape shape;
    Strides strides;
    std::string name;
    std::size_t item = 0;                    // a string input's width (S, U) or offset width (Utf8)
    bool broadcast = false;                  // Flat: one element
    bool restrict_ok = true;                 // false when an output writes the same memory
    InnerClass inner = InnerClass::General;  // Strided / Tiled
};

// The by-value accessor a kernel reads a string array through (dsl/semantics.h's col_*):
// `name[i]` is element i's string, whatever the layout.
std::string string_accessor(const ReadArray& a);

struct WriteArray {
    ir::NodeId node;
    DType dtype;
    std::string name;
    Strides strides;  // layout assumed at emit time (alias: the input's; else C order)
    bool restrict_ok = true;
    InnerClass inner = InnerClass::General;  // Strided / Tiled
};

class StageEmitter {
public:
    StageEmitter(const ir::Program& p, const ir::Schedule& s, int stage, const EmitOptions& o)
        : p_(p), s_(s), stage_index_(stage), st_(s.stages.at(static_cast<std::size_t>(stage))), opt_(o) {}
    virtual ~StageEmitter() = default;

    // The stage's kernel: what it reads and writes, its kind, its text, source and key.
    KernelSource run();

protected:
    // Sets kind_ from the stage and the layouts it reads and writes (after collect()).
    virtual void choose_kind() = 0;
    // The kernel function of kind_ (after jx_compute); fills k's entries, parameters and launch.
    virtual std::string kernel(KernelSource& k) = 0;

    bool is_reduce_stage() const { return st_.kind == ir::Stage::Kind::Reduce; }
    bool is_compact_stage() const { return st_.kind == ir::Stage::Kind::Compact; }
    // A Reduce or Scan stage: jx_compute returns its node's operand, and the node is what it writes.
    bool is_root_stage() const { return st_.has_root(); }
    // The ops this stage computes and the kinds of value it touches (after collect()).
    SemanticsNeeds semantics_needs() const;
    // A node read from an earlier stage's buffer rather than recomputed.
    bool is_buffer(ir::NodeId n) const;
    // Marks `root` and every node it reads in this stage. An explicit stack, not recursion: a
    // program may be a 100,000-deep chain (a + a + ... + a), too deep for the thread's stack.
    void visit(ir::NodeId root);
    // Arrays read: inputs by slot, then buffers by node.
    // Arrays written.
    void collect();
    std::string compute_function();
    // nextafter steps in the 16-bit format, not in the float that carries it.
    // Entering or leaving a 16-bit float type rounds once, from the source value.
    std::string node_line(ir::NodeId n);
    std::string array_params(bool flat);
    std::string call_args(const std::vector<std::string>& read_exprs, const std::vector<std::string>& write_exprs);
    void add_array_params(KernelSource& k, bool with_rows);
    // The parameters of a Flat, Strided or Tiled kernel: arrays and scalars, then `tail` (the
    // element count or the layout), then the vector flag when k.launch.vec > 1.
    void add_params(KernelSource& k, bool with_rows, Param::Kind tail);
    std::string layout_struct(int ndim, int rows);
    std::string launch_bounds() const { return fmt::format("__launch_bounds__({})", opt_.block); }
    // Whether the stage computes so much per element that memory is not what limits it: then
    // vector loads gain nothing, and unrolling the body once per vector lane would multiply
    // NVRTC's time (superlinearly: one basic block of lanes x operations).
    bool compute_bound() const;
    // Whether the stage reads a string array: no vector loads then (its elements are read
    // through an accessor, a row at a time).
    bool reads_strings() const;

    const ir::Program& p_;
    const ir::Schedule& s_;
    int stage_index_;
    const ir::Stage& st_;
    EmitOptions opt_;
    ir::NodeMap<std::uint8_t> needed_;
    std::vector<ReadArray> reads_;
    std::vector<WriteArray> writes_;
    std::vector<std::int32_t> scalars_;
    std::vector<std::int32_t> texts_;            // string constants read (Program::strings slots), kernel parameters
    std::map<std::int32_t, DType> text_dtypes_;  // each one's dtype (its encoding)
    DType text_dtype(std::int32_t slot) const { return text_dtypes_.at(slot); }
    std::map<std::int32_t, int> input_read_;  // input slot -> index into reads_
    std::map<ir::NodeId, int> buffer_read_;   // node -> index into reads_
    KernelKind kind_ = KernelKind::Flat;
};

// Flat, Strided and Tiled kernels: the element-wise stages.
class ElementwiseEmitter final : public StageEmitter {
public:
    using StageEmitter::StageEmitter;

private:
    void choose_kind() override;
    std::string kernel(KernelSource& k) override;
    // Contiguous arrays over one index, vectorised where the pointers allow (emit_elementwise.cpp).
    std::string flat_kernel(KernelSource& k);
    // How an array moves along the last axis of the iteration space (see InnerClass).
    InnerClass inner_class_of(const Shape& shape, const Strides& strides, bool may_tile) const;
    // Classes of every array (reads then writes); reads that would need more shared memory than
    // a block may use stay General.
    // Larger tiles keep more loads in flight per thread; 8- and 16-byte elements use the
    // smaller edge to stay within the shared memory budget.
    void classify_inner();
    bool any_inner(InnerClass c) const;
    // Element expressions for the scalar (one element per call) form of the strided kernels:
    // `pos` is the last-axis coordinate, p<r> the row offset, t<r> the last-axis stride.
    std::string strided_ref(const std::string& name, InnerClass c, int r, const std::string& pos) const;
    // Offsets p<r> of every layout row for the coordinates of dims [0, last) in `rest` (which it
    // consumes), innermost dim first.
    std::string row_offsets(int last, const std::string& indent) const;
    // The entry points of a Strided or Tiled kernel, in IndexEntry order: `body<I>` (a device
    // template taking the arrays, scalars, then `tail_args`) with 64-bit and with 32-bit indices.
    std::string index_entries(KernelSource& k, const std::string& body, const std::string& bounds,
                              const std::string& tail_params, const std::string& tail_args);
    // Rows of the last axis: each row's offsets are computed once and the last axis is walked by
    // the threads of x; arrays contiguous along it (Unit) are read and written with vectors when
    // the launch finds them aligned, arrays broadcast along it (Zero) are read once per row.
    std::string strided_kernel(KernelSource& k);
    // Tiles of the last two axes for inputs that are contiguous along the second-last axis (a
    // transposed matrix): each such input is read into shared memory with threads adjacent along
    // its own contiguous axis and used from there, so every global access is coalesced.
    // Vector tiles when every tiled input and every output has one element size: each
    // access moves 16 bytes (a 64x64 float tile is loaded and stored as float4), which keeps
    // more bytes in flight per thread; the launch checks alignment and falls back per call.
    // Load the tiles: lanes run along the input's contiguous axis (the tile's rows).
    // Compute: lanes run along the last axis (the output's contiguous axis).
    std::string tiled_kernel(KernelSource& k);
    // The vector body shared by Flat, Strided and Tiled kernels: one vector result per output,
    // `vec` elements computed by jx_compute from `rd` (expressions of the element index e), and
    // each result stored as one vector at `out + at(i)` (i counts the outputs).
    template <class At>
    std::string vector_compute(const std::string& ind, int vec, const std::vector<std::string>& rd, At&& at);
    // The vector branch of a tile (see tiled_kernel): `vec` elements per access, tile rows of
    // tile_ / vec lanes. Tiled inputs are read with stride 1 along the tile's rows and outputs
    // written with stride 1 along its columns (the launch has checked both).
    std::string vector_tiles(int vec);

    int tile_ = 32;  // Tiled: tile edge
};

// ReduceAll and ReduceAxis kernels: the reduction stages; Select kernels: the order statistics.
class ReduceEmitter final : public StageEmitter {
public:
    using StageEmitter::StageEmitter;

private:
    void choose_kind() override;
    std::string kernel(KernelSource& k) override;
    std::string finalize(const std::string& acc, const std::string& count);
    void check_reduce_types();
    std::string leaf(const std::string& value, const std::string& pos) const;
    std::string reduce_all_kernel(KernelSource& k);
    std::string reduce_axis_kernel(KernelSource& k);
    // An OrderStat stage (emit_select.cpp).
    std::string select_kernel(KernelSource& k);

    bool flat_reads_ = true;
};

// Compact kernels: the boolean-mask selections (emit_compact.cpp). jx_compute returns the mask
// and gives the values of every Compact node of the stage.
class CompactEmitter final : public StageEmitter {
public:
    using StageEmitter::StageEmitter;

private:
    void choose_kind() override { kind_ = KernelKind::Compact; }
    std::string kernel(KernelSource& k) override;
};

// ScanAll and ScanAxis kernels: the scan stages.
class ScanEmitter final : public StageEmitter {
public:
    using StageEmitter::StageEmitter;

private:
    void choose_kind() override;
    std::string kernel(KernelSource& k) override;
    // The scan's functor (jx_scan_op: identity and combine, a 16-bit float rounded at every
    // step) and the block-wide inclusive scan over it.
    std::string helpers() const;
    std::string scan_all_kernel(KernelSource& k);
    std::string scan_axis_kernel(KernelSource& k);

    bool flat_reads_ = true;
};

}  // namespace jit::codegen::emitter

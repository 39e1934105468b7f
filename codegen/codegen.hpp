// jitexpr — CUDA C++ source for a checked program: one kernel per schedule stage.
//
// Pure C++: no driver API here. The output says everything a launcher needs (parameters in
// order, which arrays are vector-loaded, the launch shape), so the executor builds the
// argument array without looking at the program's expressions again.
//
// Kernel shapes ("layout classes"; one kernel per class, shapes are run-time parameters):
//   Flat         every array is C-contiguous over the iteration shape or a single element:
//                flat index, 128-bit vector loads/stores when aligned (a run-time flag), scalar
//                tail. One entry point, so NVRTC compiles the expression twice, not eight times.
//   Strided      shape and strides per array in a by-value `jx_layout` parameter; rows of the
//                last axis: per-row offsets computed once, the last axis walked by threads;
//                arrays with stride 1 along it use vector loads when aligned, arrays with stride
//                0 are read once per row; 32-bit index entry points when every offset fits.
//   Tiled        an input contiguous along the second-last axis (a transposed matrix): 64x64
//                (32x32 for 8- and 16-byte elements)
//                tiles of the last two axes, such inputs staged through shared memory so that
//                both their reads and the output's writes are coalesced.
//   ReduceAll    a full reduction: per-thread accumulation, warp shuffle + shared-memory block
//                reduce, one partial per block in a workspace, the last block (atomic ticket)
//                combines the partials in a fixed order and stores the result: same result on
//                every run.
//   ReduceAxis   one output element per warp (reduced axis is the last one: coalesced lanes) or
//                per thread (another axis: adjacent threads read adjacent memory).
//   Compact      a boolean-mask selection (Stage::Kind::Compact), order-preserving, two entry
//                points over one grid of blocks, block b owning a contiguous range of the
//                iteration space (C order): jx_count counts the mask's true elements of each
//                range into the workspace and the last block (atomic ticket) sums them; the
//                host reads that total, has the outputs allocated, and jx_scatter adds the
//                counts of the blocks before its own and writes each tile's selected values at
//                their prefix (warp ballots, then the warps' counts in shared memory).
//   ScanAxis     a scan along the last axis (of 32 elements or more): one block per row
//                (grid-stride over rows), tiles of blockDim.x elements scanned block-wide (warp
//                shuffles, then the warps' totals), the running value carried from tile to tile;
//                along another axis, or short rows: a thread per row, in order (along an outer
//                axis adjacent threads read adjacent memory). Fixed order: the same bits every run.
//   ScanAll      a scan over every element (C order, 1-d result): two launches of one kernel.
//                Phase 0: each block scans its chunk (one chunk per block, the grid a function
//                of the element count and the device) without storing and writes its total;
//                the last block (atomic ticket) turns the totals into inclusive prefixes, in
//                block order. Phase 1: each block scans its chunk again from the prefix of the
//                chunks before it and stores. Reads the operand twice, writes once; no
//                look-back whose order depends on timing, so float results repeat bit for bit.
//   Select       an OrderStat (median, quantile): one block per row of the reduced axes, a radix
//                select over ordered keys (8 bits a pass, a shared histogram) for each rank
//                needed; the row's expression is evaluated again in each pass (no workspace);
//                the result, a temporary, is written in C order.
#pragma once

#include "dsl/ir.hpp"
#include "dsl/schedule.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit::codegen {

// An array a kernel reads or writes: a program input, or the buffer of a stored node (an
// output's memory when Schedule::output_of[node] >= 0, else the temporary of that node).
struct ArrayRef {
    enum class Kind : std::uint8_t { Input, Node };
    Kind kind = Kind::Input;
    std::int32_t index = -1;                                               // input slot or node index
    ir::NodeId node() const { return ir::NodeId(index); }                  // Kind::Node
    std::size_t input() const { return static_cast<std::size_t>(index); }  // Kind::Input
    bool operator==(const ArrayRef&) const = default;
};

struct Param {
    enum class Kind : std::uint8_t {
        Array,       // pointer: T* (storage type of `dtype`; 16-bit floats as 16-bit words)
        Scalar,      // by value: register type of `dtype` (float for float16/bfloat16, jx::c64 ...)
        Count,       // long long: elements of the iteration space (Flat, ReduceAll flat)
        Layout,      // jx_layout by value: long long shape[ndim]; long long stride[arrays][ndim]
        Workspace,   // void*: ReduceAll/ScanAll partials (max_blocks * partial_bytes) then a 32-bit counter;
                     // Compact: max_blocks 64-bit counts, the total, then the counter
        VectorFlag,  // int: 1 when the vector path may run (Flat/Strided/Tiled with vec > 1)
        Phase,       // int: ScanAll's launch, 0 (chunk totals and their prefixes) then 1 (the scan)
        OutStride,   // long long: ScanAll, elements between consecutive elements of the 1-d result
        Text,        // a string constant by value (jx::sb / su / s8 of `dtype`: a device pointer to its
                     // bytes and its length in code units), Program::strings[text]
    };
    Kind kind = Kind::Array;
    ArrayRef array;                // Array (of a string dtype: the accessor of dsl/semantics.h by value, two pointers
                                   // or a pointer and the width, codegen's string_accessor)
    std::int32_t scalar = -1;      // Scalar: index into Program::scalars
    std::int32_t text = -1;        // Text: index into Program::strings
    DType dtype = DType::Float32;  // Array / Scalar
    bool written = false;          // Array: the kernel stores into it
    bool vectorized = false;       // Array: read/written with `vec`-element vectors (when the flag is set)
    bool broadcast = false;        // Array (Flat): a single element read once
    bool unit_inner = false;       // Array written (Strided/Tiled): assumes stride 1 along the last axis
    std::int32_t layout_row = -1;  // Array (Strided/ReduceAll strided/ReduceAxis): stride row
};

enum class KernelKind : std::uint8_t {
    Flat,
    Strided,
    Tiled,
    ReduceAll,
    ReduceAxis,
    Compact,
    ScanAll,
    ScanAxis,
    Select
};
// The entry points of a Compact kernel (KernelSource::entries).
enum CompactEntry : int { kCompactCount = 0, kCompactScatter = 1 };

// Entry points of Strided and Tiled kernels (KernelSource::entries): the same body with 64-bit
// and with 32-bit indices. Flat, ReduceAll and ReduceAxis kernels have one entry.
enum IndexEntry : int { kIndex64 = 0, kIndex32 = 1 };

struct LaunchPolicy {
    KernelKind kind = KernelKind::Flat;
    int block = 256;                       // threads per block
    int vec = 1;                           // Flat/Strided: elements per vector (1: no vector entries)
    int index_bits = 64;                   // Flat: the width of its indices (32 where every index fits); Strided and
                                           // Tiled have both entries (IndexEntry), reductions 64
    int ndim = 0;                          // Layout: dims of the iteration space
    int layout_rows = 0;                   // Layout: stride rows (one per array with layout_row >= 0)
    int tile = 0;                          // Tiled: edge of the square tile of the last two axes
    int axis = -1;                         // ReduceAxis, ScanAxis: the reduced (scanned) axis of the iteration space
    std::uint32_t select_axes = 0;         // Select: bit d set for each reduced axis of the iteration space
    bool warp_per_output = false;          // ReduceAxis: a warp per output (else a thread)
    bool block_per_row = false;            // ScanAxis: a block per scanned row (else a thread)
    int max_blocks = 0;                    // ReduceAll, ScanAll, Compact: grid cap = number of partial slots
    int partial_bytes = 0;                 // ReduceAll, ScanAll: bytes of one partial (the accumulator type)
    int group = 1;                         // ReduceAll: consecutive elements a thread folds together (in both tiers)
    std::size_t workspace_bytes() const {  // ReduceAll, ScanAll: partials, then the counter
        if (kind == KernelKind::Compact) return static_cast<std::size_t>(max_blocks + 1) * 8 + 16;
        if (kind != KernelKind::ReduceAll && kind != KernelKind::ScanAll) return 0;
        std::size_t p = static_cast<std::size_t>(max_blocks) * static_cast<std::size_t>(partial_bytes);
        p = (p + 15) / 16 * 16;
        return p + 16;
    }
};

struct KernelSource {
    std::string name;                  // "jx_s0_<hash>": stable, generated
    std::vector<std::string> entries;  // entry point symbols (IndexEntry order for Strided/Tiled)
    std::string body;                  // the generated part (golden tests compare this)
    std::string source;                // full text given to NVRTC: semantics.h + prelude + body
    std::vector<Param> params;         // in the order of every entry point's parameters
    LaunchPolicy launch;
    int stage = 0;           // index into Schedule::stages
    std::uint64_t hash = 0;  // source_hash(source)
    std::string key;         // hex of hash: the module cache key
    bool ptx = false;        // `source` is PTX (emit_ptx): assembled, not given to NVRTC
    // A device function, not a kernel (device_function): compiled by NVRTC as relocatable device
    // code, linked into PTX kernels, never loaded by itself.
    bool relocatable = false;
    // PTX kernels: the device functions they call, linked in by nvJitLink.
    std::vector<KernelSource> links;
};

struct EmitOptions {
    bool force_strided = false;  // Strided kernels even where Flat would do (run-time strided outputs)
    int block = 256;             // threads per block (multiple of 32, <= 1024)
    // Embed the whole of dsl/semantics.h instead of the sections the kernel needs (the
    // trimmed text is the default: NVRTC parses less; kept for measurements and as a fallback).
    bool full_semantics = false;
    // No vector paths in Flat, Strided and Tiled kernels: what a tiered compile runs first (about
    // half the NVRTC time for kernels of transcendental functions), while the kernels with vector
    // paths compile in the background. Reductions are emitted as always.
    bool scalar_only = false;
};

struct Emitted {
    std::vector<KernelSource> kernels;  // one per stage, in stage order
    std::string key;                    // hash of every kernel's key
};

// Throws InternalError when the program or schedule breaks an invariant of dsl/ir.hpp.
Emitted emit(const ir::Program& program, const ir::Schedule& schedule, const EmitOptions& options = {});

// `kernel` (a scalar-only Flat kernel of `program`, or a ReduceAll kernel over flat reads other
// than a positional one, as emit gives them with scalar_only) written directly in PTX for
// sm_`sm`: the same entry name, parameters and launch, so that the executor launches it alike,
// and for a reduction the same order of folding (the same bits). For programs of
// bool/int32/int64/float32/float64: arithmetic, comparisons,
// logic, maximum/minimum, where, clip, sqrt, rounding, NaN/inf tests and casts as instructions,
// other ops as calls of device functions (`links`); nullopt for anything else, and for targets
// outside sm_70..sm_90. See codegen/ptx.cpp.
std::optional<KernelSource> emit_ptx(const ir::Program& program, const KernelSource& kernel, int sm);

// The device function the PTX first tier calls for an op it does not write as instructions
// (transcendental functions, integer division and remainder, powers, ...): jx::op::<op> of
// dsl/semantics.h over operands of dtypes `args` giving `result`, exactly the expression the
// C++ kernels inline, as an extern "C" function named by the op and dtypes (no user text). For
// int32/int64/float32/float64 only; nullopt otherwise. Its KernelSource is `relocatable`.
std::optional<KernelSource> device_function(ir::Op op, const std::vector<DType>& args, DType result);

// The device functions the PTX first tier calls, prebuilt together: one relocatable KernelSource
// per group of dtypes (float32, float64, the integers), whose `entries` are the symbols of the
// functions it holds, each the very function device_function gives. A machine compiles each
// group once, in one NVRTC run (the CUDA backend does it in the background and keeps it in its
// disk cache), and then links PTX kernels with the groups holding their calls instead of
// compiling every function on its first use (about 20 ms of NVRTC each). Built on first use.
const std::vector<KernelSource>& device_libraries();
// The index in device_libraries() of the group holding the device function `symbol`; -1: none.
int device_library_of(std::string_view symbol);

// The text of dsl/semantics.h, embedded at build time.
std::string_view semantics_source();

// What a kernel uses from dsl/semantics.h: its ops (element-wise and reductions) and whether
// any value it touches is complex or a 16-bit float.
struct SemanticsNeeds {
    std::vector<ir::Op> ops;
    bool complex = false;
    bool half = false;
    bool strings = false;
};
// The parts of semantics.h (its `// @section` markers, see codegen/semantics_sections.cpp) that `needs`
// asks for, `base` and every `@needs` dependency included, in file order. Throws InternalError
// when the markers are malformed.
std::string semantics_for(const SemanticsNeeds& needs);
// The names of the sections semantics_for(needs) emits, in file order.
std::vector<std::string> semantics_sections(const SemanticsNeeds& needs);
// Every section name, in order of first appearance; the section whose `@ops` claims `op`
// (empty: none does, and a kernel using it gets the whole file).
std::vector<std::string> semantics_section_names();
std::string semantics_section_of(ir::Op op);

// 64-bit FNV-1a, stable across platforms and runs (cache keys).
std::uint64_t fnv1a(std::string_view text, std::uint64_t seed = 1469598103934665603ULL);
// A kernel source's identity (KernelSource::hash): XXH3-64 where the build has xxhash.h (about
// 1 us for a 15 KB kernel against FNV-1a's 20-25, on every emit), else FNV-1a. Stable across
// platforms and runs; builds with and without xxhash.h differ in it, as in their disk-cache keys.
std::uint64_t source_hash(std::string_view text);
std::string hex64(std::uint64_t v);

// Pieces exposed for tests and the executor.
std::string cuda_literal(const ir::Value& value, DType dtype);  // an exact CUDA constant
std::string_view op_id(ir::Op op);                              // "Add", from dsl/ops.def

}  // namespace jit::codegen

// jitexpr — running a prepared CUDA program: its loaded kernels, their workspace, and the
// launch of each (parameter blocks from a run's arrays, launch shapes), without synchronising.
#pragma once

#include "backend/backend.hpp"
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"
#include "dsl/ir.hpp"
#include "dsl/schedule.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace jit::cuda {

// True when an array of `shape`/`strides` is laid out C-contiguously (axes of extent 1 ignored).
bool c_contiguous(const Shape& shape, const Strides& strides);
// True when two layouts of `shape` address the same elements alike.
bool same_layout(const Shape& shape, const Strides& a, const Strides& b);
// same_layout(shape, a, declared) where an empty `declared` stands for C-contiguous strides.
bool same_layout_as_declared(const Shape& shape, const Strides& a, const Strides& declared);

// A kernel ready to launch: its source description, module and entry points.
struct Loaded {
    const codegen::KernelSource* kernel = nullptr;
    ModulePtr module;
    std::array<void*, 2> fn{};
    std::vector<std::int64_t> layout;  // shape then read rows; write rows filled per run
    std::size_t workspace_offset = 0;  // ReduceAll, Compact
};

struct Variant {
    codegen::Emitted emitted;
    std::vector<Loaded> kernels;
};

struct Workspace {
    void* base = nullptr;
    std::size_t bytes = 0;
};

// Launches the kernels of one prepared program.
class Launcher {
public:
    Launcher(const ir::Program& p, const ir::Schedule& s) : program(p), schedule(s) {}
    // One kernel on args.stream: its parameters from the run's arrays, its grid from the shapes.
    void launch(const Loaded& l, const detail::RunArgs& args, const Workspace& ws) const;

    const ir::Program& program;
    const ir::Schedule& schedule;
    int sm_count = 1;
    std::map<ir::NodeId, std::size_t> temp_offset;  // node -> bytes into the workspace
    // Program::strings on the device (the needles of the string ops: data, never kernel text):
    // per slot, the device address of its bytes and its length in code units.
    std::vector<std::pair<const void*, long long>> texts;

private:
    void* array_pointer(const codegen::Param& p, const detail::RunArgs& args, const Workspace& ws) const;
    // Strides (elements) of the array a kernel writes, over the kernel's iteration space.
    void write_row(const codegen::KernelSource& k, const codegen::Param& p, const detail::RunArgs& args,
                   std::int64_t* row) const;
    static void set_flag(unsigned char* slot, bool on);
    // A string input's accessor by value (dsl/semantics.h's col_*): its data address and width
    // (S, U), or its offsets and data addresses (Utf8). A string constant's value (Param::Text).
    void pack_strings(const codegen::Param& p, const detail::RunArgs& args, void* ptr, unsigned char* slot) const;
    // Whether every offset a Strided or Tiled kernel forms (and `counts`, the largest loop bound
    // plus step) fits a 32-bit signed index.
    static bool fits_int32(const codegen::KernelSource& k, const std::int64_t* layout, std::int64_t counts);
    // A Compact kernel: jx_count, the total read back (the stream is synchronised), the outputs
    // made through args.allocate, then jx_scatter into them.
    void launch_compact(const Loaded& l, const detail::RunArgs& args, const Workspace& ws) const;
};

}  // namespace jit::cuda

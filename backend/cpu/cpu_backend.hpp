// jitexpr — the CPU backend: evaluates any checked ir::Program with the semantics of
// dsl/semantics.h (the same as the CUDA kernels).
//
// prepare() builds a plan once per program: per stage, a list of block instructions (function
// pointers to loops instantiated per (op, operand dtype) from the jx::op functions). run()
// evaluates the plan in blocks of kBlock elements on a persistent thread pool; temporaries are
// per-thread block buffers, never full-size arrays.
#pragma once

#include "backend/backend.hpp"

#include <memory>
#include <vector>

namespace jit::detail {

// threads: size of the pool (the calling thread included); 0 = every hardware thread.
std::unique_ptr<BackendImpl> make_cpu_backend(int threads = 0);

}  // namespace jit::detail

namespace jit::cpu {
// Arrays with fewer elements than this run on the calling thread only.
inline constexpr long long kParallelThreshold = 32768;
struct KernelTable;
// The block kernels in use: "avx2" or "base" (JITEXPR_CPU_KERNELS, the processor).
const char* kernels_name();
// Test aid: how many instructions of the plan of `program` with table `kt` are fused pairs
// (KernelTable::fused, docs/cpu-performance.md).
int count_fused_instructions(const ir::Program& program, const ir::Schedule& schedule, const KernelTable& kt);
// Test aid: per node of `program` (by index), how many block instructions compute it for one
// element when the schedule runs over more than one block, each pass of Schedule::passes as one
// block program (a fused pair computes two nodes). A value that several stores and reductions of
// a pass read counts 1; inputs, constants and reduction results read from memory count 0.
std::vector<int> computations_per_element(const ir::Program& program, const ir::Schedule& schedule);
}  // namespace jit::cpu

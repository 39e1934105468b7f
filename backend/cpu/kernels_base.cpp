// jitexpr CPU backend — the baseline kernel table (x86-64 SSE2, or the target's default ISA).
#include "backend/cpu/kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cpu/kernels_loops.inc"
#include "backend/cpu/kernels_table.inc"

namespace jit::cpu {

const KernelTable& kernels_base() {
    static const KernelTable table = build_table("baseline");
    return table;
}

}  // namespace jit::cpu

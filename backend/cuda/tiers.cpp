// jitexpr — tiered compiles of the process (see tiers.hpp).
#include "backend/cuda/tiers.hpp"

namespace jit::cuda {

Tiers& tiers() {
    static Tiers* t = new Tiers;  // never destroyed: upgrades may end during exit
    return *t;
}

KernelOptions first_tier_options(const KernelOptions& full, const CompileOptions& compile, bool ptx_first_tier) {
    KernelOptions first = full;
    if (ptx_assembler_available() && !compile.fast_math && compile.extra.empty() && ptx_first_tier)
        first.ptx_sm = compile.cc_major * 10 + compile.cc_minor;
    return first;
}

TierStats tier_stats() { return tiers().stats(); }
void wait_for_upgrades() { tiers().wait(); }

}  // namespace jit::cuda

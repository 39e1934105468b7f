// jitexpr — tiered compiles of the process (see tiers.hpp).
#include "backend/cuda/tiers.hpp"

namespace jit::cuda {

Tiers& tiers() {
    static Tiers* t = new Tiers;  // never destroyed: upgrades may end during exit
    return *t;
}

TierStats tier_stats() { return tiers().stats(); }
void wait_for_upgrades() { tiers().wait(); }

}  // namespace jit::cuda

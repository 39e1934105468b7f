// jitexpr CPU backend — vector_math() (vector_math.hpp). Compiled for the baseline ISA: it asks the
// AVX2 translation unit only when that table is the one in use.
#include "backend/cpu/vector_math.hpp"

#include "backend/cpu/kernels.hpp"

#include <string_view>

namespace jit::cpu {

VectorMath vector_math() {
#if defined(JX_CPU_HAVE_AVX2)
    if (std::string_view(kernels().name) == "avx2") return vector_math_avx2();
#endif
    return VectorMath{};
}

#if !defined(JX_CPU_HAVE_AVX2)
VectorMath vector_math_avx2() { return VectorMath{}; }
const KernelTable* kernels_avx2_vector_library(const char*, int* resolved) {
    if (resolved) *resolved = 0;
    return nullptr;
}
#endif

}  // namespace jit::cpu

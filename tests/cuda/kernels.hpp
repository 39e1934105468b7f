// Kernel sources shared by the CUDA layer tests.
#pragma once

namespace jit::test {

// c[i] = a[i] * 2 + b[i] for i < n.
inline constexpr const char* kAxpbSource = R"(
extern "C" __global__ void axpb(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * 2.0f + b[i];
}
)";

}  // namespace jit::test

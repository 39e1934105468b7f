// ==== stage 0
__device__ __forceinline__ void jx_compute(const float a_in0, float& r_out0) {
    const float v0 = a_in0;
    const float v1 = 0x1.8p+1f;
    const float v2 = jx::op::Mul(v0, v1);
    r_out0 = v2;
}

// strided: per-array strides; offsets per row computed once, last axis walked by threads
struct jx_layout { long long shape[2]; long long stride[2][2]; };

extern "C" __global__ void __launch_bounds__(256) jx_kernel(const float* __restrict__ in0, float* __restrict__ out0, const jx_layout L) {
    long long rows = 1;
#pragma unroll
    for (int d = 0; d < 1; ++d) rows *= L.shape[d];
    const long long inner = L.shape[1];
    const long long cfirst = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long cstep = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long row = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; row < rows;
         row += static_cast<long long>(gridDim.y) * blockDim.y) {
        long long p0 = 0;
        long long p1 = 0;
        long long rest = row;
#pragma unroll
        for (int d = 0; d >= 0; --d) {
            const long long c = rest % L.shape[d];
            rest /= L.shape[d];
            p0 += c * L.stride[0][d];
            p1 += c * L.stride[1][d];
        }
        const long long t0 = L.stride[0][1];
        const long long t1 = L.stride[1][1];
        for (long long c = cfirst; c < inner; c += cstep) jx_compute(in0[p0 + c * t0], out0[p1 + c * t1]);
    }
}

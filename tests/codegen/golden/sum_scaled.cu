// ==== stage 0
__device__ __forceinline__ float jx_compute(const float a_in0, const double s0) {
    const float v0 = a_in0;
    const double v1 = s0;
    const float v2 = jx::cast<float>(v1);
    const float v3 = jx::op::Mul(v0, v2);
    return v3;
}

// full reduction: per-thread accumulation, block reduce, partials, last block combines in order
extern "C" __global__ void __launch_bounds__(256) jx_kernel(const float* __restrict__ in0, float* __restrict__ out0, const double s0, const long long n, const int vectors, void* __restrict__ ws) {
    using R = jx::red::Sum<float>;
    float* partial = static_cast<float*>(ws);
    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + 8192);
    float acc = R::identity();
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long groups = n / 4;
    if (vectors) {
        long long k = first;
#ifdef JX_REDUCE_TWO_STEPS
        for (; k + step < groups; k += 2 * step) {
            const jx_vec<float, 4> v_in0_0 = *reinterpret_cast<const jx_vec<float, 4>*>(in0 + (k) * 4);
            const jx_vec<float, 4> v_in0_1 = *reinterpret_cast<const jx_vec<float, 4>*>(in0 + (k + step) * 4);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0_0.v[e], s0));
#pragma unroll
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0_1.v[e], s0));
        }
#endif
        for (; k < groups; k += step) {
            const jx_vec<float, 4> v_in0 = *reinterpret_cast<const jx_vec<float, 4>*>(in0 + (k) * 4);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0.v[e], s0));
        }
    } else {
        for (long long k = first; k < groups; k += step) {
#pragma unroll 1
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(in0[k * 4 + e], s0));
        }
    }
    for (long long i = groups * 4 + first; i < n; i += step) acc = R::combine(acc, jx_compute(in0[i], s0));
    acc = jx_block_reduce<R>(acc);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1u;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float total = R::identity();
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total = R::combine(total, jx_ldcg(partial + b));
    total = jx_block_reduce<R>(total);
    if (threadIdx.x == 0) {
        out0[0] = total;
        *ticket = 0u;
    }
}

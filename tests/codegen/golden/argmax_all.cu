// ==== stage 0
__device__ __forceinline__ float jx_compute(const float a_in0) {
    const float v0 = a_in0;
    return v0;
}

// full reduction: per-thread accumulation, block reduce, partials, last block combines in order
extern "C" __global__ void __launch_bounds__(256) jx_kernel(const float* __restrict__ in0, float* __restrict__ out0, const long long n, const int vectors, void* __restrict__ ws) {
    using R = jx::red::ReduceMax<float>;
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
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0_0.v[e]));
#pragma unroll
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0_1.v[e]));
        }
#endif
        for (; k < groups; k += step) {
            const jx_vec<float, 4> v_in0 = *reinterpret_cast<const jx_vec<float, 4>*>(in0 + (k) * 4);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(v_in0.v[e]));
        }
    } else {
        for (long long k = first; k < groups; k += step) {
#pragma unroll 1
            for (int e = 0; e < 4; ++e) acc = R::combine(acc, jx_compute(in0[k * 4 + e]));
        }
    }
    for (long long i = groups * 4 + first; i < n; i += step) acc = R::combine(acc, jx_compute(in0[i]));
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
// ==== stage 1
__device__ __forceinline__ bool jx_compute(const float a_in0, const float a_buf1) {
    const float v0 = a_in0;
    const float v1 = a_buf1;
    const bool v2 = jx::op::Eq(v0, v1);
    const bool v3 = jx::op::Isnan(v1);
    const bool v4 = jx::op::Isnan(v0);
    const bool v5 = jx::op::And(v4, v3);
    const bool v6 = jx::op::Or(v2, v5);
    return v6;
}

// full reduction: per-thread accumulation, block reduce, partials, last block combines in order
extern "C" __global__ void __launch_bounds__(256) jx_kernel(const float* __restrict__ in0, const float* __restrict__ buf1, jx::i64* __restrict__ out0, const long long n, void* __restrict__ ws) {
    using R = jx::red::ArgFirst<jx::i64>;
    jx::i64* partial = static_cast<jx::i64*>(ws);
    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + 16384);
    jx::i64 acc = R::identity();
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    const float x_buf1 = buf1[0];
    for (long long i = first; i < n; i += step) acc = R::combine(acc, R::leaf(jx_compute(in0[i], x_buf1), i));
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
    jx::i64 total = R::identity();
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total = R::combine(total, jx_ldcg(partial + b));
    total = jx_block_reduce<R>(total);
    if (threadIdx.x == 0) {
        out0[0] = total;
        *ticket = 0u;
    }
}

// ==== stage 0
__device__ __forceinline__ float jx_compute(const jx::sb a_in0, const jx::su a_in1, const float a_in2, const jx::sb t1, const jx::su t3) {
    const jx::sb v0 = a_in0;
    const jx::sb v2 = t1;
    const bool v3 = jx::op::Eq(v0, v2);
    const jx::su v4 = a_in1;
    const jx::su v6 = t3;
    const bool v7 = jx::op::Startswith(v4, v6);
    const bool v8 = jx::op::BitOr(v3, v7);
    const float v9 = a_in2;
    const float v11 = 0x1p+1f;
    const float v12 = jx::op::Mul(v9, v11);
    const float v14 = 0x0p+0f;
    const float v15 = jx::op::Where(v8, v12, v14);
    return v15;
}

// full reduction: per-thread accumulation, block reduce, partials, last block combines in order
extern "C" __global__ void __launch_bounds__(256) jx_kernel(const jx::col_sb in0, const jx::col_su in1, const float* __restrict__ in2, float* __restrict__ out0, const jx::sb t1, const jx::su t3, const long long n, void* __restrict__ ws) {
    using R = jx::red::Sum<float>;
    float* partial = static_cast<float*>(ws);
    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + 8192);
    float acc = R::identity();
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = first; i < n; i += step) acc = R::combine(acc, jx_compute(in0[i], in1[i], in2[i], t1, t3));
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

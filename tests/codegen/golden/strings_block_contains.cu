// ==== stage 0
__device__ __forceinline__ void jx_compute(const jx::s8 a_in0, const jx::s8 a_in1, const jx::su a_in2, const jx::sb a_in3, const jx::s8 t1, const jx::s8 t3, const jx::sb t5, const bool h0, const bool h1, bool& r_out0) {
    const jx::s8 v0 = a_in0;
    const jx::s8 v2 = t1;
    const bool v3 = h0;
    const jx::s8 v4 = a_in1;
    const jx::s8 v6 = t3;
    const bool v7 = h1;
    const bool v8 = jx::op::BitAnd(v3, v7);
    const jx::su v9 = a_in2;
    const bool v10 = jx::op::Contains(v9, v0);
    const bool v11 = jx::op::BitOr(v8, v10);
    const jx::sb v12 = a_in3;
    const jx::sb v14 = t5;
    const bool v15 = jx::op::Contains(v12, v14);
    const bool v16 = jx::op::BitOr(v11, v15);
    r_out0 = v16;
}

// flat: contiguous or single-element arrays over one index
extern "C" __global__ void __launch_bounds__(256) jx_flat(const jx::col_s8 in0, const jx::col_s8l in1, const jx::col_su in2, const jx::col_sb in3, bool* __restrict__ out0, const jx::s8 t1, const jx::s8 t3, const jx::sb t5, const long long n) {
    using I = int;
    const I count = static_cast<I>(n);
    const I first = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I tail = 0;
    __shared__ jx::u8 jx_hit0[256];
    jx::str::block_contains(in0, t1, static_cast<long long>(blockIdx.x) * blockDim.x, n, jx_hit0);
    __shared__ jx::u8 jx_hit1[256];
    jx::str::block_contains(in1, t3, static_cast<long long>(blockIdx.x) * blockDim.x, n, jx_hit1);
    const I i = tail + first;
    if (i < count) jx_compute(in0[i], in1[i], in2[i], in3[i], t1, t3, t5, jx_hit0[threadIdx.x], jx_hit1[threadIdx.x], out0[i]);
}
// ==== stage 0
__device__ __forceinline__ jx::i64 jx_compute(const jx::s8 a_in0, const jx::s8 t1, const bool h0) {
    const jx::s8 v0 = a_in0;
    const jx::s8 v2 = t1;
    const bool v3 = h0;
    const jx::i64 v4 = jx::cast<jx::i64>(v3);
    return v4;
}

// full reduction: per-thread accumulation, block reduce, partials, last block combines in order
extern "C" __global__ void __launch_bounds__(256) jx_kernel(const jx::col_s8l in0, jx::i64* __restrict__ out0, const jx::s8 t1, const long long n, void* __restrict__ ws) {
    using R = jx::red::Sum<jx::i64>;
    jx::i64* partial = static_cast<jx::i64*>(ws);
    unsigned* ticket = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + 16384);
    jx::i64 acc = R::identity();
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x; base < n; base += step) {
        __shared__ jx::u8 jx_hit0[256];
        jx::str::block_contains(in0, t1, base, n, jx_hit0);
        const long long i = base + threadIdx.x;
        if (i < n) acc = R::combine(acc, jx_compute(in0[i], t1, jx_hit0[threadIdx.x]));
    }
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

// ==== stage 0
__device__ __forceinline__ bool jx_compute(const float a_in0, const float a_in1, float& r_out0) {
    const float v0 = a_in0;
    const float v1 = a_in1;
    const float v3 = 0x0p+0f;
    const bool v4 = jx::op::Gt(v1, v3);
    const float v6 = 0x1p+0f;
    const bool v7 = jx::op::Lt(v0, v6);
    const bool v8 = jx::op::BitAnd(v4, v7);
    r_out0 = v0;
    return v8;
}

// compaction: per-block counts, their total, then an order-preserving scatter
struct jx_layout { long long shape[1]; long long stride[2][1]; };

__device__ __forceinline__ long long jx_block_sum_ll(long long v) {
    __shared__ long long sh[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) v += sh[w];
    return v;  // valid in thread 0
}

extern "C" __global__ void __launch_bounds__(256) jx_count(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const long long n, const jx_layout L, void* __restrict__ ws) {
    long long* counts = static_cast<long long*>(ws);
    unsigned* ticket = reinterpret_cast<unsigned*>(counts + 1025);
    const long long chunk = (n + gridDim.x - 1) / gridDim.x;
    const long long begin = static_cast<long long>(blockIdx.x) * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;
    long long selected = 0;
    for (long long t = begin; t < end; t += blockDim.x) {
        const long long i = t + threadIdx.x;
        bool f = false;
        if (i < end) {
            float v_0{};
            long long p0 = 0;
            long long p1 = 0;
            long long rest = i;
#pragma unroll
            for (int d = 0; d >= 0; --d) {
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                p0 += c * L.stride[0][d];
                p1 += c * L.stride[1][d];
            }
            f = jx_compute(in0[p0], in1[p1], v_0);
        }
        selected += __syncthreads_count(f);
    }
    __shared__ bool last;
    if (threadIdx.x == 0) {
        counts[blockIdx.x] = selected;
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1u;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    long long total = 0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += jx_ldcg(counts + b);
    total = jx_block_sum_ll(total);
    if (threadIdx.x == 0) {
        counts[1024] = total;
        *ticket = 0u;
    }
}

extern "C" __global__ void __launch_bounds__(256) jx_scatter(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const long long n, const jx_layout L, void* __restrict__ ws) {
    const long long* counts = static_cast<const long long*>(ws);
    const long long chunk = (n + gridDim.x - 1) / gridDim.x;
    const long long begin = static_cast<long long>(blockIdx.x) * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;
    __shared__ long long base;
    __shared__ int warp_count[32];
    long long before = 0;
    for (unsigned b = threadIdx.x; b < blockIdx.x; b += blockDim.x) before += counts[b];
    before = jx_block_sum_ll(before);
    if (threadIdx.x == 0) base = before;
    __syncthreads();
    long long at = base;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (int)((blockDim.x + 31) >> 5);
    for (long long t = begin; t < end; t += blockDim.x) {
        const long long i = t + threadIdx.x;
        bool f = false;
        float v_0{};
        if (i < end) {
            long long p0 = 0;
            long long p1 = 0;
            long long rest = i;
#pragma unroll
            for (int d = 0; d >= 0; --d) {
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                p0 += c * L.stride[0][d];
                p1 += c * L.stride[1][d];
            }
            f = jx_compute(in0[p0], in1[p1], v_0);
        }
        const unsigned ballot = __ballot_sync(0xffffffffu, f);
        if (lane == 0) warp_count[warp] = __popc(ballot);
        __syncthreads();
        int mine = __popc(ballot & ((1u << lane) - 1u)), tile = 0;
        for (int w = 0; w < warps; ++w) {
            const int cw = warp_count[w];
            if (w < warp) mine += cw;
            tile += cw;
        }
        if (f) {
            out0[at + mine] = v_0;
        }
        at += tile;
        __syncthreads();
    }
}

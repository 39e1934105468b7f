// ==== stage 0
__device__ __forceinline__ void jx_compute(const jx::s8 a_in0, const jx::s8 t1, jx::i64& r_out0) {
    const jx::s8 v0 = a_in0;
    const jx::s8 v2 = t1;
    const jx::i64 v3 = jx::op::Find(v0, v2);
    const jx::i64 v4 = jx::op::StrLen(v0);
    const jx::i64 v5 = jx::op::Add(v3, v4);
    r_out0 = v5;
}

// strided: rows of the last axis; per-row offsets once, the last axis walked by threads
struct jx_layout { long long shape[2]; long long stride[2][2]; };

template <class I>
__device__ __forceinline__ void jx_rows(const jx::col_s8l in0, jx::i64* __restrict__ out0, const jx::s8 t1, const jx_layout& L) {
    I rows = 1;
#pragma unroll
    for (int d = 0; d < 1; ++d) rows *= static_cast<I>(L.shape[d]);
    const I inner = static_cast<I>(L.shape[1]);
    const I cfirst = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    const I cstep = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I row = static_cast<I>(blockIdx.y) * static_cast<I>(blockDim.y) + static_cast<I>(threadIdx.y); row < rows;
         row += static_cast<I>(gridDim.y) * static_cast<I>(blockDim.y)) {
        I rest = row;
        I p0 = 0;
        I p1 = 0;
#pragma unroll
        for (int d = 0; d >= 0; --d) {
            const I extent = static_cast<I>(L.shape[d]);
            const I c = rest % extent;
            rest /= extent;
            p0 += c * static_cast<I>(L.stride[0][d]);
            p1 += c * static_cast<I>(L.stride[1][d]);
        }
        const I t0 = static_cast<I>(L.stride[0][1]);
        for (I c = cfirst; c < inner; c += cstep) jx_compute(in0[p0 + c * t0], t1, out0[p1 + c]);
    }
}

extern "C" __global__ void __launch_bounds__(256) jx_rows_i64(const jx::col_s8l in0, jx::i64* __restrict__ out0, const jx::s8 t1, const jx_layout L) { jx_rows<long long>(in0, out0, t1, L); }
extern "C" __global__ void __launch_bounds__(256) jx_rows_i32(const jx::col_s8l in0, jx::i64* __restrict__ out0, const jx::s8 t1, const jx_layout L) { jx_rows<int>(in0, out0, t1, L); }
// ==== stage 0
__device__ __forceinline__ bool jx_compute(const float a_in0, const jx::sb a_in1, const jx::s8 a_in2, const jx::su a_in3, const jx::sb t1, float& r_out0) {
    const float v0 = a_in0;
    const jx::sb v1 = a_in1;
    const jx::sb v3 = t1;
    const bool v4 = jx::op::Endswith(v1, v3);
    const jx::s8 v5 = a_in2;
    const jx::su v6 = a_in3;
    const bool v7 = jx::op::Lt(v5, v6);
    const bool v8 = jx::op::BitAnd(v4, v7);
    r_out0 = v0;
    return v8;
}

// compaction: per-block counts, their total, then an order-preserving scatter
struct jx_layout { long long shape[1]; long long stride[4][1]; };

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

extern "C" __global__ void __launch_bounds__(256) jx_count(const float* __restrict__ in0, const jx::col_sb in1, const jx::col_s8 in2, const jx::col_su in3, float* __restrict__ out0, const jx::sb t1, const long long n, const jx_layout L, void* __restrict__ ws) {
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
            long long p2 = 0;
            long long p3 = 0;
            long long rest = i;
#pragma unroll
            for (int d = 0; d >= 0; --d) {
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                p0 += c * L.stride[0][d];
                p1 += c * L.stride[1][d];
                p2 += c * L.stride[2][d];
                p3 += c * L.stride[3][d];
            }
            f = jx_compute(in0[p0], in1[p1], in2[p2], in3[p3], t1, v_0);
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

extern "C" __global__ void __launch_bounds__(256) jx_scatter(const float* __restrict__ in0, const jx::col_sb in1, const jx::col_s8 in2, const jx::col_su in3, float* __restrict__ out0, const jx::sb t1, const long long n, const jx_layout L, void* __restrict__ ws) {
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
            long long p2 = 0;
            long long p3 = 0;
            long long rest = i;
#pragma unroll
            for (int d = 0; d >= 0; --d) {
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                p0 += c * L.stride[0][d];
                p1 += c * L.stride[1][d];
                p2 += c * L.stride[2][d];
                p3 += c * L.stride[3][d];
            }
            f = jx_compute(in0[p0], in1[p1], in2[p2], in3[p3], t1, v_0);
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

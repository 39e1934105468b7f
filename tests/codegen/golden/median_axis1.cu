// ==== stage 0
__device__ __forceinline__ float jx_compute(const float a_in0) {
    const float v0 = a_in0;
    const float v2 = 0x1p+1f;
    const float v3 = jx::op::Mul(v0, v2);
    const float v5 = 0x1p+0f;
    const float v6 = jx::op::Add(v3, v5);
    return v6;
}

// order statistics: one block per row of the reduced axes, a radix select per rank
struct jx_layout { long long shape[2]; long long stride[1][2]; };

extern "C" __global__ void __launch_bounds__(256) jx_kernel(const float* __restrict__ in0, float* __restrict__ out0, const jx_layout L) {
    using T = float;
    using RT = float;
    typedef unsigned long long K;
    constexpr int H = 0;
    constexpr unsigned AXES = 0x2u;
    constexpr int W = jx::sel::key_words<T>::value;
    constexpr int KB = jx::sel::key_bits<T>::value;
    constexpr bool SKIP_NAN = false;
    __shared__ K hist[256];
    __shared__ K s_prefix[2];
    __shared__ long long s_rank;
    __shared__ unsigned long long s_nans;
    long long rows = 1, len = 1;
#pragma unroll
    for (int d = 0; d < 2; ++d) {
        if ((AXES >> d) & 1u) len *= L.shape[d];
        else rows *= L.shape[d];
    }
    const int tid = threadIdx.x, nt = blockDim.x;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        long long p0 = 0;
        {
            long long rest = row;
#pragma unroll
            for (int d = 1; d >= 0; --d) {
                if ((AXES >> d) & 1u) continue;
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                p0 += c * L.stride[0][d];
            }
        }
        auto at = [&](long long j) -> T {
            long long o0 = p0;
            long long rest = j;
#pragma unroll
            for (int d = 1; d >= 0; --d) {
                if (!((AXES >> d) & 1u)) continue;
                const long long c = rest % L.shape[d];
                rest /= L.shape[d];
                o0 += c * L.stride[0][d];
            }
            return jx_compute(in0[o0]);
        };
        if (tid == 0) s_nans = 0ull;
        __syncthreads();
        {
            unsigned long long mine = 0;
            for (long long j = tid; j < len; j += nt) mine += jx::sel::isnan(at(j)) ? 1ull : 0ull;
            if (mine) atomicAdd(&s_nans, mine);
        }
        __syncthreads();
        const long long nans = (long long)s_nans;
        const long long n = SKIP_NAN ? len - nans : len;
        const bool nan_row = !SKIP_NAN && nans > 0;
        auto select = [&](long long k) -> T {
            K prefix[2] = {0ull, 0ull}, mask[2] = {0ull, 0ull};
#pragma unroll
            for (int w = 0; w < W; ++w) {
                for (int shift = KB - 8; shift >= 0; shift -= 8) {
                    for (int b = tid; b < 256; b += nt) hist[b] = 0ull;
                    __syncthreads();
                    for (long long j = tid; j < len; j += nt) {
                        const T v = at(j);
                        if (jx::sel::isnan(v)) continue;
                        bool match = true;
#pragma unroll
                        for (int u = 0; u < W; ++u)
                            match = match && (jx::sel::key_word(v, u) & mask[u]) == prefix[u];
                        if (match) atomicAdd(&hist[(jx::sel::key_word(v, w) >> shift) & 255ull], 1ull);
                    }
                    __syncthreads();
                    if (tid == 0) {
                        long long below = 0;
                        int b = 0;
                        while (b < 255 && below + (long long)hist[b] <= k) below += (long long)hist[b++];
                        s_rank = k - below;
                        s_prefix[0] = w == 0 ? (prefix[0] | ((K)b << shift)) : prefix[0];
                        s_prefix[1] = w == 1 ? (prefix[1] | ((K)b << shift)) : prefix[1];
                    }
                    __syncthreads();
                    k = s_rank;
                    prefix[0] = s_prefix[0];
                    prefix[1] = s_prefix[1];
                    mask[w] |= 255ull << shift;
                    __syncthreads();
                }
            }
            return jx::sel::decode_key<T>(prefix[0], prefix[1]);
        };
        for (int qi = 0; qi < 1; ++qi) {
            RT r = len == 0 ? jx::sel::nan_of<RT>() : jx::sel::all_nan_of<RT>();
            if (!nan_row && n > 0) {
                const long long k = (n - 1) / 2;
                const bool one = n % 2 == 1;
                const T a = select(k);
                const T c = one ? a : select(k + 1);
                r = jx::sel::median<RT, H>(a, c, one);
            }
            if (tid == 0) out0[qi * rows + row] = r;
        }
        __syncthreads();
    }
}
// ==== stage 1
__device__ __forceinline__ void jx_compute(const float a_buf0, float& r_out0) {
    const float v7 = a_buf0;
    const float v8 = v7;
    r_out0 = v8;
}

// flat: contiguous or single-element arrays over one index
extern "C" __global__ void __launch_bounds__(256) jx_flat(const float* __restrict__ buf0, float* __restrict__ out0, const long long n, const int vectors) {
    using I = int;
    const I count = static_cast<I>(n);
    const I first = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I tail = 0;
    if (vectors) {
        const I nvec = count / 4;
        if (first < nvec) {
            const I k = first;
            const jx_vec<float, 4> x_buf0 = *reinterpret_cast<const jx_vec<float, 4>*>(buf0 + k * 4);
            jx_vec<float, 4> y_out0;
#pragma unroll
            for (int e = 0; e < 4; ++e) jx_compute(x_buf0.v[e], y_out0.v[e]);
            *reinterpret_cast<jx_vec<float, 4>*>(out0 + k * 4) = y_out0;
            return;
        }
        tail = nvec * 4 - nvec;
    }
    const I i = tail + first;
    if (i < count) jx_compute(buf0[i], out0[i]);
}

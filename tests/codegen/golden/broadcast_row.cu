// ==== stage 0
__device__ __forceinline__ void jx_compute(const float a_in0, const float a_in1, float& r_out0) {
    const float v0 = a_in0;
    const float v1 = a_in1;
    const float v2 = jx::op::Add(v0, v1);
    r_out0 = v2;
}

// strided: rows of the last axis; per-row offsets once, the last axis walked by threads
struct jx_layout { long long shape[2]; long long stride[3][2]; };

template <class I>
__device__ __forceinline__ void jx_rows(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const jx_layout& L, const int vectors) {
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
        I p2 = 0;
#pragma unroll
        for (int d = 0; d >= 0; --d) {
            const I extent = static_cast<I>(L.shape[d]);
            const I c = rest % extent;
            rest /= extent;
            p0 += c * static_cast<I>(L.stride[0][d]);
            p1 += c * static_cast<I>(L.stride[1][d]);
            p2 += c * static_cast<I>(L.stride[2][d]);
        }
        if (vectors) {
            const I nvec = inner / 4;
            for (I k = cfirst; k < nvec; k += cstep) {
                const jx_vec<float, 4> x_in0 = *reinterpret_cast<const jx_vec<float, 4>*>(in0 + p0 + k * 4);
                const jx_vec<float, 4> x_in1 = *reinterpret_cast<const jx_vec<float, 4>*>(in1 + p1 + k * 4);
                jx_vec<float, 4> y_out0;
#pragma unroll
                for (int e = 0; e < 4; ++e) jx_compute(x_in0.v[e], x_in1.v[e], y_out0.v[e]);
                *reinterpret_cast<jx_vec<float, 4>*>(out0 + p2 + k * 4) = y_out0;
            }
            continue;
        }
        for (I c = cfirst; c < inner; c += cstep) jx_compute(in0[p0 + c], in1[p1 + c], out0[p2 + c]);
    }
}

extern "C" __global__ void __launch_bounds__(256) jx_rows_i64(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const jx_layout L, const int vectors) { jx_rows<long long>(in0, in1, out0, L, vectors); }
extern "C" __global__ void __launch_bounds__(256) jx_rows_i32(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const jx_layout L, const int vectors) { jx_rows<int>(in0, in1, out0, L, vectors); }

// ==== stage 0
__device__ __forceinline__ void jx_compute(const double a_in0, const double a_in1, double& r_out0) {
    const double v0 = a_in0;
    const double v1 = a_in1;
    const double v2 = 0x0p+0;
    const bool v3 = jx::op::Gt(v0, v2);
    const double v4 = jx::op::Sin(v0);
    const double v5 = jx::op::Where(v3, v4, v1);
    r_out0 = v5;
}

// flat: contiguous or single-element arrays over one index
extern "C" __global__ void __launch_bounds__(256) jx_flat(const double* __restrict__ in0, const double* __restrict__ in1, double* __restrict__ out0, const long long n, const int vectors) {
    using I = int;
    const I count = static_cast<I>(n);
    const I first = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I tail = 0;
    if (vectors) {
        const I nvec = count / 2;
        if (first < nvec) {
            const I k = first;
            const jx_vec<double, 2> x_in0 = *reinterpret_cast<const jx_vec<double, 2>*>(in0 + k * 2);
            const jx_vec<double, 2> x_in1 = *reinterpret_cast<const jx_vec<double, 2>*>(in1 + k * 2);
            jx_vec<double, 2> y_out0;
#pragma unroll
            for (int e = 0; e < 2; ++e) jx_compute(x_in0.v[e], x_in1.v[e], y_out0.v[e]);
            *reinterpret_cast<jx_vec<double, 2>*>(out0 + k * 2) = y_out0;
            return;
        }
        tail = nvec * 2 - nvec;
    }
    const I i = tail + first;
    if (i < count) jx_compute(in0[i], in1[i], out0[i]);
}

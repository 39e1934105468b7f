// ==== stage 0
__device__ __forceinline__ void jx_compute(const jx::s8 a_in0, const jx::s8 t1, bool& r_out0) {
    const jx::s8 v0 = a_in0;
    const jx::s8 v2 = t1;
    const bool v3 = jx::op::Contains(v0, v2);
    r_out0 = v3;
}

// flat: contiguous or single-element arrays over one index
extern "C" __global__ void __launch_bounds__(256) jx_flat(const jx::col_s8 in0, bool* __restrict__ out0, const jx::s8 t1, const long long n) {
    using I = int;
    const I count = static_cast<I>(n);
    const I first = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
    I tail = 0;
    const I i = tail + first;
    if (i < count) jx_compute(in0[i], t1, out0[i]);
}

// jitexpr CPU backend — the AVX2 kernel table, chosen at run time on CPUs that have it.
// Compiled with -mavx2 -mf16c and without -mfma: GCC 12 forms fused multiply-adds for complex
// products even under -ffp-contract=off, so FMA is left out and a*b+c stays
// two rounded operations and results equal the baseline table's for + - * / and compares.
//
// Transcendentals of float32/float64 use glibc's libmvec (8 floats / 4 doubles per call; glibc
// documents these vector variants as accurate to within 4 ULP, special values handled as the
// scalar libm does); the tail of a block uses the scalar function.
#include "backend/cpu/kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#if defined(JX_CPU_HAVE_LIBMVEC)
extern "C" {
#define JX_MVEC_DECL1(name)            \
    __m256 _ZGVdN8v_##name##f(__m256); \
    __m256d _ZGVdN4v_##name(__m256d);
#define JX_MVEC_DECL2(name)                     \
    __m256 _ZGVdN8vv_##name##f(__m256, __m256); \
    __m256d _ZGVdN4vv_##name(__m256d, __m256d);
// clang-format off
JX_MVEC_DECL1(sin) JX_MVEC_DECL1(cos) JX_MVEC_DECL1(tan) JX_MVEC_DECL1(asin) JX_MVEC_DECL1(acos)
JX_MVEC_DECL1(atan) JX_MVEC_DECL1(sinh) JX_MVEC_DECL1(cosh) JX_MVEC_DECL1(tanh) JX_MVEC_DECL1(asinh)
JX_MVEC_DECL1(acosh) JX_MVEC_DECL1(atanh) JX_MVEC_DECL1(log) JX_MVEC_DECL1(log1p) JX_MVEC_DECL1(log10)
JX_MVEC_DECL1(log2) JX_MVEC_DECL1(exp) JX_MVEC_DECL1(expm1) JX_MVEC_DECL1(exp2) JX_MVEC_DECL1(cbrt)
JX_MVEC_DECL1(erf) JX_MVEC_DECL1(erfc)
JX_MVEC_DECL2(atan2) JX_MVEC_DECL2(hypot) JX_MVEC_DECL2(pow)
// clang-format on
#undef JX_MVEC_DECL1
#undef JX_MVEC_DECL2
}
#endif

#include "backend/cpu/kernels_loops.inc"

namespace {

#if defined(JX_CPU_HAVE_LIBMVEC)
template <class F, __m256 (*V)(__m256)>
void mvec1f(const void* const* in, void* out, i64 n) {
    const float* a = static_cast<const float*>(in[0]);
    float* o = static_cast<float*>(out);
    i64 i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, V(_mm256_loadu_ps(a + i)));
    for (; i < n; ++i) o[i] = F::call(a[i]);
}
template <class F, __m256d (*V)(__m256d)>
void mvec1d(const void* const* in, void* out, i64 n) {
    const double* a = static_cast<const double*>(in[0]);
    double* o = static_cast<double*>(out);
    i64 i = 0;
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, V(_mm256_loadu_pd(a + i)));
    for (; i < n; ++i) o[i] = F::call(a[i]);
}
template <class F, __m256 (*V)(__m256, __m256)>
void mvec2f(const void* const* in, void* out, i64 n) {
    const float* a = static_cast<const float*>(in[0]);
    const float* b = static_cast<const float*>(in[1]);
    float* o = static_cast<float*>(out);
    i64 i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, V(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; ++i) o[i] = F::call(a[i], b[i]);
}
template <class F, __m256d (*V)(__m256d, __m256d)>
void mvec2d(const void* const* in, void* out, i64 n) {
    const double* a = static_cast<const double*>(in[0]);
    const double* b = static_cast<const double*>(in[1]);
    double* o = static_cast<double*>(out);
    i64 i = 0;
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, V(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i)));
    for (; i < n; ++i) o[i] = F::call(a[i], b[i]);
}

#define JX_VMATH1(Id, name)                                               \
    template <>                                                           \
    struct vmath1<Fn_##Id, float> {                                       \
        static constexpr OpFn fn = &mvec1f<Fn_##Id, &_ZGVdN8v_##name##f>; \
    };                                                                    \
    template <>                                                           \
    struct vmath1<Fn_##Id, double> {                                      \
        static constexpr OpFn fn = &mvec1d<Fn_##Id, &_ZGVdN4v_##name>;    \
    };
#define JX_VMATH2(Id, name)                                                \
    template <>                                                            \
    struct vmath2<Fn_##Id, float> {                                        \
        static constexpr OpFn fn = &mvec2f<Fn_##Id, &_ZGVdN8vv_##name##f>; \
    };                                                                     \
    template <>                                                            \
    struct vmath2<Fn_##Id, double> {                                       \
        static constexpr OpFn fn = &mvec2d<Fn_##Id, &_ZGVdN4vv_##name>;    \
    };
// clang-format off
JX_VMATH1(Sin, sin) JX_VMATH1(Cos, cos) JX_VMATH1(Tan, tan) JX_VMATH1(Arcsin, asin)
JX_VMATH1(Arccos, acos) JX_VMATH1(Arctan, atan) JX_VMATH1(Sinh, sinh) JX_VMATH1(Cosh, cosh)
JX_VMATH1(Tanh, tanh) JX_VMATH1(Arcsinh, asinh) JX_VMATH1(Arccosh, acosh) JX_VMATH1(Arctanh, atanh)
JX_VMATH1(Log, log) JX_VMATH1(Log1p, log1p) JX_VMATH1(Log10, log10) JX_VMATH1(Log2, log2)
JX_VMATH1(Exp, exp) JX_VMATH1(Expm1, expm1) JX_VMATH1(Exp2, exp2) JX_VMATH1(Cbrt, cbrt)
JX_VMATH1(Erf, erf) JX_VMATH1(Erfc, erfc)
JX_VMATH2(Arctan2, atan2) JX_VMATH2(Hypot, hypot) JX_VMATH2(Pow, pow)
// clang-format on
#undef JX_VMATH1
#undef JX_VMATH2
#endif  // JX_CPU_HAVE_LIBMVEC

}  // namespace

#include "backend/cpu/kernels_table.inc"

namespace jit::cpu {

const KernelTable* kernels_avx2() {
    static const KernelTable table = build_table("avx2");
    return &table;
}

}  // namespace jit::cpu

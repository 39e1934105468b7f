// A stand-in for glibc's libmvec that has three of its functions (expf, sin, powf: a library
// with some of them, as glibc 2.34's has five), for tests/cpu/test_vector_math.cpp. Each computes
// its lanes with the scalar libm function and counts its calls, so that the test sees that a
// table's vector loop called it and that its results are those of the scalar function.
#include <immintrin.h>

#include <math.h>

extern "C" {

__attribute__((visibility("default"))) long jx_fake_libmvec_calls = 0;

__attribute__((visibility("default"))) __m256 _ZGVdN8v_expf(__m256 x) {
    ++jx_fake_libmvec_calls;
    float v[8];
    _mm256_storeu_ps(v, x);
    for (float& e : v) e = ::expf(e);
    return _mm256_loadu_ps(v);
}

__attribute__((visibility("default"))) __m256d _ZGVdN4v_sin(__m256d x) {
    ++jx_fake_libmvec_calls;
    double v[4];
    _mm256_storeu_pd(v, x);
    for (double& e : v) e = ::sin(e);
    return _mm256_loadu_pd(v);
}

__attribute__((visibility("default"))) __m256 _ZGVdN8vv_powf(__m256 x, __m256 y) {
    ++jx_fake_libmvec_calls;
    float a[8], b[8];
    _mm256_storeu_ps(a, x);
    _mm256_storeu_ps(b, y);
    for (int i = 0; i < 8; ++i) a[i] = ::powf(a[i], b[i]);
    return _mm256_loadu_ps(a);
}

}  // extern "C"

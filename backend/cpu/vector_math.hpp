// jitexpr CPU backend — where the AVX2 kernels' float32/float64 transcendentals come from:
// glibc's vector math library libmvec, linked or opened at run time, or the scalar libm
// functions (JITEXPR_LIBMVEC, backend/cpu/CMakeLists.txt; docs/cpu-performance.md).
#pragma once

namespace jit::cpu {

struct KernelTable;

struct VectorMath {
    // "linked" (-lmvec), "dynamic" (libmvec.so.1 opened at run time), "off" (libm's scalar
    // functions for every lane); "none" where the kernels in use are not the AVX2 ones.
    const char* mode = "none";
    int resolved = 0;  // vector functions the kernels call (a float and a double variant count as two)
    int known = 0;     // vector functions the AVX2 kernels have a loop for
};

// Of the kernels in use (kernels()). The dynamic mode looks the functions up when the AVX2 table
// is first used; this call does it if nothing has yet.
VectorMath vector_math();

// Of the AVX2 table; call only where kernels_avx2() is not null and the CPU has AVX2.
VectorMath vector_math_avx2();

// Test hook of the dynamic mode: a copy of the AVX2 table whose vector functions are looked up
// in `library` (a path, or a name dlopen searches for) instead of libmvec.so.1; those not found
// run the loops of a table without libmvec. *resolved: how many were found. Each call replaces
// the table the previous one returned; not thread-safe. Null in the other modes.
const KernelTable* kernels_avx2_vector_library(const char* library, int* resolved);

}  // namespace jit::cpu

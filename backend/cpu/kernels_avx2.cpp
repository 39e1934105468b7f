// jitexpr CPU backend — the AVX2 kernel table, chosen at run time on CPUs that have it.
// Compiled with -mavx2 -mf16c and without -mfma: GCC 12 forms fused multiply-adds for complex
// products even under -ffp-contract=off, so FMA is left out and a*b+c stays
// two rounded operations and results equal the baseline table's for + - * / and compares.
//
// Transcendentals of float32/float64 use glibc's libmvec (8 floats / 4 doubles per call; glibc
// documents these vector variants as accurate to within 4 ULP, special values handled as the
// scalar libm does); the tail of a block uses the scalar function. How the table gets them is
// JITEXPR_LIBMVEC's choice (backend/cpu/CMakeLists.txt), one of three:
//  * linked (JX_CPU_LIBMVEC_LINKED): the loops call the symbols, bound by the linker (-lmvec);
//  * dynamic (JX_CPU_LIBMVEC_DYNAMIC): nothing of libmvec is linked; the table's construction
//    opens libmvec.so.1 and looks each function up, and a loop calls the pointer it found. A
//    function the library lacks (glibc 2.34 has sin, cos, exp, log and pow only; a system may
//    have no libmvec at all) gets the scalar loop a table without libmvec has. The manylinux
//    wheels use this mode: a wheel may not need glibc 2.35's symbol versions, nor link libmvec.a
//    (it refers to the GLIBC_PRIVATE _dl_x86_cpu_features, which a shared object cannot bind);
//  * neither: the scalar libm function serves every lane.
// Both libmvec modes instantiate the same loops (mvec1, mvec2 below); only where the vector
// function comes from (Src::get()) differs, and it is the same function of the same library.
//
// JX_CPU_AVX2_NS names the namespace of this file's functions: jit::cpu, or another for the
// copy of the dynamic mode that the tests build beside a linked one (backend/cpu/CMakeLists.txt).
#include "backend/cpu/kernels.hpp"
#include "backend/cpu/vector_math.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#if defined(JX_CPU_LIBMVEC_DYNAMIC)
#include <dlfcn.h>
#endif

#if !defined(JX_CPU_AVX2_NS)
#define JX_CPU_AVX2_NS jit::cpu
#endif

#if defined(JX_CPU_LIBMVEC_LINKED) && defined(JX_CPU_LIBMVEC_DYNAMIC)
#error "libmvec is either linked or opened at run time, not both"
#endif
#if defined(JX_CPU_LIBMVEC_LINKED) || defined(JX_CPU_LIBMVEC_DYNAMIC)
#define JX_CPU_VECTOR_MATH 1
#endif

// The vector functions the table uses, by op: U(Id, name) unary, B(Id, name) binary. Each has a
// float variant (_ZGVdN8v_<name>f, 8 lanes) and a double one (_ZGVdN4v_<name>, 4 lanes); the
// binary ones are _ZGVdN8vv_ / _ZGVdN4vv_.
// clang-format off
#define JX_MVEC_FUNCTIONS(U, B)                                                                        \
    U(Sin, sin) U(Cos, cos) U(Tan, tan) U(Arcsin, asin) U(Arccos, acos) U(Arctan, atan) U(Sinh, sinh)  \
    U(Cosh, cosh) U(Tanh, tanh) U(Arcsinh, asinh) U(Arccosh, acosh) U(Arctanh, atanh) U(Log, log)      \
    U(Log1p, log1p) U(Log10, log10) U(Log2, log2) U(Exp, exp) U(Expm1, expm1) U(Exp2, exp2)            \
    U(Cbrt, cbrt) U(Erf, erf) U(Erfc, erfc)                                                            \
    B(Arctan2, atan2) B(Hypot, hypot) B(Pow, pow)
// clang-format on

#if defined(JX_CPU_LIBMVEC_LINKED)
extern "C" {
#define JX_MVEC_DECL1(Id, name)        \
    __m256 _ZGVdN8v_##name##f(__m256); \
    __m256d _ZGVdN4v_##name(__m256d);
#define JX_MVEC_DECL2(Id, name)                 \
    __m256 _ZGVdN8vv_##name##f(__m256, __m256); \
    __m256d _ZGVdN4vv_##name(__m256d, __m256d);
JX_MVEC_FUNCTIONS(JX_MVEC_DECL1, JX_MVEC_DECL2)
#undef JX_MVEC_DECL1
#undef JX_MVEC_DECL2
}
#endif

#include "backend/cpu/kernels_loops.inc"

namespace {

#if defined(JX_CPU_VECTOR_MATH)
// One AVX register of A and its unaligned load and store.
template <class A>
struct vec;
template <>
struct vec<float> {
    using type = __m256;
    static constexpr int lanes = 8;
    static JX_ALWAYS_INLINE type load(const float* p) { return _mm256_loadu_ps(p); }
    static JX_ALWAYS_INLINE void store(float* p, type v) { _mm256_storeu_ps(p, v); }
};
template <>
struct vec<double> {
    using type = __m256d;
    static constexpr int lanes = 4;
    static JX_ALWAYS_INLINE type load(const double* p) { return _mm256_loadu_pd(p); }
    static JX_ALWAYS_INLINE void store(double* p, type v) { _mm256_storeu_pd(p, v); }
};
template <class A>
using vfn1 = typename vec<A>::type (*)(typename vec<A>::type);
template <class A>
using vfn2 = typename vec<A>::type (*)(typename vec<A>::type, typename vec<A>::type);
// A source's function as the loop calls it: the symbol's own pointer (linked), or what dlsym gave.
template <class A>
JX_ALWAYS_INLINE vfn1<A> unary(vfn1<A> f) {
    return f;
}
template <class A>
JX_ALWAYS_INLINE vfn1<A> unary(void* f) {
    return reinterpret_cast<vfn1<A>>(f);
}
template <class A>
JX_ALWAYS_INLINE vfn2<A> binary(vfn2<A> f) {
    return f;
}
template <class A>
JX_ALWAYS_INLINE vfn2<A> binary(void* f) {
    return reinterpret_cast<vfn2<A>>(f);
}

// The loops: the vector function over whole registers, the scalar one over the block's tail.
// Src::get() gives the vector function; it is read once per call, before the loop (in the dynamic
// mode one load of a pointer, then an indirect call per register where the linked mode calls
// the symbol through the PLT).
template <class F, class A, class Src>
void mvec1(const void* const* in, void* out, i64 n) {
    using V = vec<A>;
    const A* a = static_cast<const A*>(in[0]);
    A* o = static_cast<A*>(out);
    const vfn1<A> f = unary<A>(Src::get());
    i64 i = 0;
    for (; i + V::lanes <= n; i += V::lanes) V::store(o + i, f(V::load(a + i)));
    for (; i < n; ++i) o[i] = F::call(a[i]);
}
template <class F, class A, class Src>
void mvec2(const void* const* in, void* out, i64 n) {
    using V = vec<A>;
    const A* a = static_cast<const A*>(in[0]);
    const A* b = static_cast<const A*>(in[1]);
    A* o = static_cast<A*>(out);
    const vfn2<A> f = binary<A>(Src::get());
    i64 i = 0;
    for (; i + V::lanes <= n; i += V::lanes) V::store(o + i, f(V::load(a + i), V::load(b + i)));
    for (; i < n; ++i) o[i] = F::call(a[i], b[i]);
}

#endif  // JX_CPU_VECTOR_MATH

// Every vector function by number: <name>f (float) then <name> (double), in list order.
#define JX_MVEC_ENUM(Id, name) kv_##name##f, kv_##name,
enum VectorFn : int { JX_MVEC_FUNCTIONS(JX_MVEC_ENUM, JX_MVEC_ENUM) kNumVectorFns };
#undef JX_MVEC_ENUM

#if defined(JX_CPU_LIBMVEC_LINKED)
// The symbol itself: a direct call, bound by the linker.
template <auto Fn>
struct Linked {
    static constexpr auto get() { return Fn; }
};
#define JX_MVEC_SRC_F1(name) Linked<&_ZGVdN8v_##name##f>
#define JX_MVEC_SRC_D1(name) Linked<&_ZGVdN4v_##name>
#define JX_MVEC_SRC_F2(name) Linked<&_ZGVdN8vv_##name##f>
#define JX_MVEC_SRC_D2(name) Linked<&_ZGVdN4vv_##name>
#elif defined(JX_CPU_LIBMVEC_DYNAMIC)
// What dlsym found, per set of pointers: set 0 serves kernels_avx2()'s table, set 1 the tables of
// the test hook (kernels_avx2_vector_library). A set is written before the table whose loops
// read it is handed out (kernels_avx2(): in its static local's initialisation) and not after.
inline constexpr int kVectorSets = 2;
void* g_vector_fns[kVectorSets][kNumVectorFns] = {};

template <int Set, int Fn>
struct Resolved {
    static void* get() { return g_vector_fns[Set][Fn]; }
};
#define JX_MVEC_SRC_F1(name) Resolved<0, kv_##name##f>
#define JX_MVEC_SRC_D1(name) Resolved<0, kv_##name>
#define JX_MVEC_SRC_F2(name) Resolved<0, kv_##name##f>
#define JX_MVEC_SRC_D2(name) Resolved<0, kv_##name>
#endif

#if defined(JX_CPU_VECTOR_MATH)
// The table's entries (kernels_table.inc's pick_op takes these over k1/k2).
#define JX_VMATH1(Id, name)                                                       \
    template <>                                                                   \
    struct vmath1<Fn_##Id, float> {                                               \
        static constexpr OpFn fn = &mvec1<Fn_##Id, float, JX_MVEC_SRC_F1(name)>;  \
    };                                                                            \
    template <>                                                                   \
    struct vmath1<Fn_##Id, double> {                                              \
        static constexpr OpFn fn = &mvec1<Fn_##Id, double, JX_MVEC_SRC_D1(name)>; \
    };
#define JX_VMATH2(Id, name)                                                       \
    template <>                                                                   \
    struct vmath2<Fn_##Id, float> {                                               \
        static constexpr OpFn fn = &mvec2<Fn_##Id, float, JX_MVEC_SRC_F2(name)>;  \
    };                                                                            \
    template <>                                                                   \
    struct vmath2<Fn_##Id, double> {                                              \
        static constexpr OpFn fn = &mvec2<Fn_##Id, double, JX_MVEC_SRC_D2(name)>; \
    };
JX_MVEC_FUNCTIONS(JX_VMATH1, JX_VMATH2)
#undef JX_VMATH1
#undef JX_VMATH2
#endif  // JX_CPU_VECTOR_MATH

}  // namespace

#include "backend/cpu/kernels_table.inc"

namespace {

#if defined(JX_CPU_LIBMVEC_DYNAMIC)
// Per vector function: its symbol, the table slot it serves, its loop through each set of
// pointers, and the loops a table without libmvec has in that slot (pick_op and pick_op_scalar
// with no vmath entry), which it gets when the function is not found.
struct VectorEntry {
    const char* symbol;
    jit::ir::Op op;
    DType dtype;
    OpFn vector[kVectorSets];
    OpFn scalar, scalar_vs, scalar_sv;
};
template <int Set, int Fn, class F, class A>
constexpr OpFn vector_loop1() {
    return &mvec1<F, A, Resolved<Set, Fn>>;
}
template <int Set, int Fn, class F, class A>
constexpr OpFn vector_loop2() {
    return &mvec2<F, A, Resolved<Set, Fn>>;
}
#define JX_MVEC_ENTRY1(Id, sym, Fn, A, D)                                               \
    VectorEntry{sym,                                                                    \
                jit::ir::Op::Id,                                                        \
                D,                                                                      \
                {vector_loop1<0, Fn, Fn_##Id, A>(), vector_loop1<1, Fn, Fn_##Id, A>()}, \
                &k1<Fn_##Id, A>,                                                        \
                nullptr,                                                                \
                nullptr},
#define JX_MVEC_ENTRY2(Id, sym, Fn, A, D)                                               \
    VectorEntry{sym,                                                                    \
                jit::ir::Op::Id,                                                        \
                D,                                                                      \
                {vector_loop2<0, Fn, Fn_##Id, A>(), vector_loop2<1, Fn, Fn_##Id, A>()}, \
                &k2<Fn_##Id, A>,                                                        \
                &k2_vs<Fn_##Id, A>,                                                     \
                &k2_sv<Fn_##Id, A>},
#define JX_MVEC_ENTRIES1(Id, name)                                                 \
    JX_MVEC_ENTRY1(Id, "_ZGVdN8v_" #name "f", kv_##name##f, float, DType::Float32) \
    JX_MVEC_ENTRY1(Id, "_ZGVdN4v_" #name, kv_##name, double, DType::Float64)
#define JX_MVEC_ENTRIES2(Id, name)                                                  \
    JX_MVEC_ENTRY2(Id, "_ZGVdN8vv_" #name "f", kv_##name##f, float, DType::Float32) \
    JX_MVEC_ENTRY2(Id, "_ZGVdN4vv_" #name, kv_##name, double, DType::Float64)
constexpr VectorEntry kVectorEntries[] = {JX_MVEC_FUNCTIONS(JX_MVEC_ENTRIES1, JX_MVEC_ENTRIES2)};
#undef JX_MVEC_ENTRY1
#undef JX_MVEC_ENTRY2
#undef JX_MVEC_ENTRIES1
#undef JX_MVEC_ENTRIES2
static_assert(std::size(kVectorEntries) == kNumVectorFns);

// Opens `library` and points set `set` at the vector functions it has; each slot of `t` gets the
// vector loop of that set where the function was found and the scalar loops otherwise. The
// library is never closed: the loops call into it for the life of the process. Returns how many
// functions were found.
int resolve_vector_math(jit::cpu::KernelTable& t, int set, const char* library) {
    void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    int found = 0;
    for (int k = 0; k < kNumVectorFns; ++k) {
        const VectorEntry& e = kVectorEntries[k];
        void* fn = lib ? dlsym(lib, e.symbol) : nullptr;
        g_vector_fns[set][k] = fn;
        const int op = static_cast<int>(e.op), d = static_cast<int>(e.dtype);
        t.op[op][d] = fn ? e.vector[set] : e.scalar;
        t.op_vs[op][d] = fn ? nullptr : e.scalar_vs;
        t.op_sv[op][d] = fn ? nullptr : e.scalar_sv;
        found += fn ? 1 : 0;
    }
    return found;
}
#endif  // JX_CPU_LIBMVEC_DYNAMIC

// How many vector functions kernels_avx2()'s table calls; written with the table.
int g_avx2_vector_fns = 0;

jit::cpu::KernelTable make_avx2_table() {
    jit::cpu::KernelTable t = build_table("avx2");
#if defined(JX_CPU_LIBMVEC_DYNAMIC)
    g_avx2_vector_fns = resolve_vector_math(t, 0, "libmvec.so.1");
#elif defined(JX_CPU_LIBMVEC_LINKED)
    g_avx2_vector_fns = kNumVectorFns;
#endif
    return t;
}

const jit::cpu::KernelTable& avx2_table() {
    static const jit::cpu::KernelTable table = make_avx2_table();
    return table;
}

}  // namespace

namespace JX_CPU_AVX2_NS {

const KernelTable* kernels_avx2() { return &avx2_table(); }

VectorMath vector_math_avx2() {
    VectorMath v;
#if defined(JX_CPU_LIBMVEC_DYNAMIC)
    v.mode = "dynamic";
#elif defined(JX_CPU_LIBMVEC_LINKED)
    v.mode = "linked";
#else
    v.mode = "off";
#endif
    avx2_table();  // the count is written with the table
    v.resolved = g_avx2_vector_fns;
    v.known = kNumVectorFns;
    return v;
}

const KernelTable* kernels_avx2_vector_library(const char* library, int* resolved) {
#if defined(JX_CPU_LIBMVEC_DYNAMIC)
    static KernelTable table;
    table = avx2_table();
    table.name = "avx2 (test)";
    const int found = resolve_vector_math(table, 1, library);
    if (resolved) *resolved = found;
    return &table;
#else
    (void)library;
    if (resolved) *resolved = 0;
    return nullptr;
#endif
}

}  // namespace JX_CPU_AVX2_NS

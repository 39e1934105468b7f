// The AVX2 kernels' float32/float64 transcendentals from glibc's libmvec opened at run time
// (JITEXPR_LIBMVEC=DYNAMIC, backend/cpu/vector_math.hpp): against the scalar functions, against
// the linked build's table bit for bit, and with a library that does not exist or that has only
// some of the functions (the test hook kernels_avx2_vector_library).
//
// In a build of the dynamic mode the table is the build's own; in a build of another mode (CI's
// links libmvec) it is the copy of kernels_avx2.cpp built for the tests, in
// jit::cpu::libmvec_dynamic (backend/cpu/CMakeLists.txt).
#include "backend/cpu/kernels.hpp"
#include "backend/cpu/vector_math.hpp"
#include "dsl/semantics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <dlfcn.h>

#if defined(JX_TEST_LIBMVEC_DYNAMIC_COPY)
namespace jit::cpu::libmvec_dynamic {
const KernelTable* kernels_avx2();
VectorMath vector_math_avx2();
const KernelTable* kernels_avx2_vector_library(const char* library, int* resolved);
}  // namespace jit::cpu::libmvec_dynamic
namespace dyn = jit::cpu::libmvec_dynamic;
#else
namespace dyn = jit::cpu;
#endif

namespace {

using jit::DType;
using jit::cpu::kBlock;
namespace ir = jit::ir;

constexpr std::string_view kMode = JX_TEST_LIBMVEC_MODE;  // the build's: linked, dynamic, off
constexpr const char* kNoSuchLibrary = "libjitexpr-test-no-such-library.so.1";

// The functions libmvec serves, as the kernels name them (written out here rather than taken
// from kernels_avx2.cpp, so that a function left out there shows here).
struct VectorOp {
    ir::Op op;
    const char* name;  // libmvec's: _ZGVdN8v_<name>f, _ZGVdN4v_<name> (vv_ for binary ones)
    int arity;
};
constexpr VectorOp kOps[] = {
    {ir::Op::Sin, "sin", 1},       {ir::Op::Cos, "cos", 1},       {ir::Op::Tan, "tan", 1},
    {ir::Op::Arcsin, "asin", 1},   {ir::Op::Arccos, "acos", 1},   {ir::Op::Arctan, "atan", 1},
    {ir::Op::Sinh, "sinh", 1},     {ir::Op::Cosh, "cosh", 1},     {ir::Op::Tanh, "tanh", 1},
    {ir::Op::Arcsinh, "asinh", 1}, {ir::Op::Arccosh, "acosh", 1}, {ir::Op::Arctanh, "atanh", 1},
    {ir::Op::Log, "log", 1},       {ir::Op::Log1p, "log1p", 1},   {ir::Op::Log10, "log10", 1},
    {ir::Op::Log2, "log2", 1},     {ir::Op::Exp, "exp", 1},       {ir::Op::Expm1, "expm1", 1},
    {ir::Op::Exp2, "exp2", 1},     {ir::Op::Cbrt, "cbrt", 1},     {ir::Op::Erf, "erf", 1},
    {ir::Op::Erfc, "erfc", 1},     {ir::Op::Arctan2, "atan2", 2}, {ir::Op::Hypot, "hypot", 2},
    {ir::Op::Pow, "pow", 2},
};
constexpr int kKnown = 2 * static_cast<int>(std::size(kOps));  // a float and a double variant each

std::string symbol(const VectorOp& v, DType dt) {
    const bool f = dt == DType::Float32;
    return std::string(f ? "_ZGVdN8v" : "_ZGVdN4v") + (v.arity == 2 ? "v_" : "_") + v.name + (f ? "f" : "");
}

bool avx2_cpu() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// The scalar function of the kernels (dsl/semantics.h: libm's sinf, sin, ...).
template <class T>
T scalar(ir::Op op, T a, T b) {
    switch (op) {
        case ir::Op::Sin: return jx::op::Sin(a);
        case ir::Op::Cos: return jx::op::Cos(a);
        case ir::Op::Tan: return jx::op::Tan(a);
        case ir::Op::Arcsin: return jx::op::Arcsin(a);
        case ir::Op::Arccos: return jx::op::Arccos(a);
        case ir::Op::Arctan: return jx::op::Arctan(a);
        case ir::Op::Sinh: return jx::op::Sinh(a);
        case ir::Op::Cosh: return jx::op::Cosh(a);
        case ir::Op::Tanh: return jx::op::Tanh(a);
        case ir::Op::Arcsinh: return jx::op::Arcsinh(a);
        case ir::Op::Arccosh: return jx::op::Arccosh(a);
        case ir::Op::Arctanh: return jx::op::Arctanh(a);
        case ir::Op::Log: return jx::op::Log(a);
        case ir::Op::Log1p: return jx::op::Log1p(a);
        case ir::Op::Log10: return jx::op::Log10(a);
        case ir::Op::Log2: return jx::op::Log2(a);
        case ir::Op::Exp: return jx::op::Exp(a);
        case ir::Op::Expm1: return jx::op::Expm1(a);
        case ir::Op::Exp2: return jx::op::Exp2(a);
        case ir::Op::Cbrt: return jx::op::Cbrt(a);
        case ir::Op::Erf: return jx::op::Erf(a);
        case ir::Op::Erfc: return jx::op::Erfc(a);
        case ir::Op::Arctan2: return jx::op::Arctan2(a, b);
        case ir::Op::Hypot: return jx::op::Hypot(a, b);
        case ir::Op::Pow: return jx::op::Pow(a, b);
        default: ADD_FAILURE() << "not a vector function: " << ir::info(op).id; return T(0);
    }
}

// Values as the existing kernel tests draw them (tests/cpu/test_cpu_backend.cpp): multiples of
// 2^-11 in [-4.9, 4.9] and one in 16 a special value. For the ULP bound.
template <class T>
std::vector<T> small_values(std::int64_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    static const T specials[] = {T(0), -T(0), T(1), T(-1), T(0.5), T(2.5), -T(2.5), INFINITY, -INFINITY, NAN};
    std::vector<T> v(static_cast<std::size_t>(n));
    for (T& x : v) {
        const std::uint32_t r = rng();
        x = (r % 16 == 0) ? specials[(r >> 4) % 10] : static_cast<T>(std::ldexp(double(int(r % 20001) - 10000), -11));
    }
    return v;
}

// Values over the whole range, for bitwise comparisons: those above, any magnitude from
// subnormal to the largest (libmvec's slow paths: large arguments of sin, overflow of exp, tiny
// ones of log1p), and the edges of the functions' domains.
template <class T>
std::vector<T> wide_values(std::int64_t n, std::uint32_t seed) {
    using L = std::numeric_limits<T>;
    std::mt19937 rng(seed);
    const T edges[] = {T(0),
                       -T(0),
                       T(1),
                       T(-1),
                       L::infinity(),
                       -L::infinity(),
                       L::quiet_NaN(),
                       L::denorm_min(),
                       -L::denorm_min(),
                       L::min(),
                       L::max(),
                       -L::max(),
                       L::epsilon(),
                       T(1) + L::epsilon(),
                       T(1) - L::epsilon() / 2,
                       T(-1) + L::epsilon() / 2,
                       T(88.7),
                       T(-103.9),
                       T(709.78),
                       T(-745.1),
                       T(1e22),
                       T(0.5)};
    const std::vector<T> small = small_values<T>(n, seed + 1);
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::uint32_t r = rng();
        switch (r % 4) {
            case 0: v[i] = small[i]; break;
            case 1: v[i] = edges[(r >> 2) % std::size(edges)]; break;
            default: {
                const int e = static_cast<int>((r >> 2) % static_cast<std::uint32_t>(L::max_exponent - L::min_exponent +
                                                                                     L::digits)) +
                              L::min_exponent - L::digits;
                const T m = T(1) + static_cast<T>((r >> 12) % 4096) / T(4096);
                v[i] = ((r >> 24) & 1 ? -1 : 1) * std::ldexp(m, e);
            }
        }
    }
    return v;
}

template <class T>
bool within_ulps(T got, T want, int ulps) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    if (got == want) return true;
    if (std::isinf(got) || std::isinf(want)) return false;
    T lo = want, hi = want;
    for (int k = 0; k < ulps; ++k) lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
    return got >= lo && got <= hi;
}

template <class T>
std::vector<T> run(jit::cpu::OpFn fn, const std::vector<T>& a, const std::vector<T>& b) {
    std::vector<T> out(a.size());
    const void* in[2] = {a.data(), b.data()};
    fn(in, out.data(), static_cast<std::int64_t>(a.size()));
    return out;
}

jit::cpu::OpFn entry(const jit::cpu::KernelTable& t, ir::Op op, DType dt) {
    return t.op[static_cast<int>(op)][static_cast<int>(dt)];
}

// How many of the functions libmvec.so.1 has, looked up here.
int functions_in_libmvec() {
    void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    int n = 0;
    for (const VectorOp& v : kOps)
        for (DType dt : {DType::Float32, DType::Float64}) n += dlsym(lib, symbol(v, dt).c_str()) ? 1 : 0;
    dlclose(lib);
    return n;
}

// Every vector function of table `t` gives the scalar function's results bit for bit (n: a
// block and a tail). Binary ones with a scalar operand too, where the table has such loops.
template <class T>
void expect_scalar_results(const jit::cpu::KernelTable& t, DType dt) {
    const std::int64_t n = kBlock + 5;
    const auto a = wide_values<T>(n, 1), b = wide_values<T>(n, 2);
    for (const VectorOp& v : kOps) {
        const auto got = run(entry(t, v.op, dt), a, b);
        for (std::size_t i = 0; i < got.size(); ++i) {
            const T want = scalar(v.op, a[i], b[i]);
            ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(T)), 0)
                << ir::info(v.op).id << " on " << jit::dtype_name(dt) << " at " << i << ": got " << got[i] << ", want "
                << want << " (a=" << a[i] << ", b=" << b[i] << ")";
        }
    }
}

TEST(CpuVectorMath, DynamicModeFindsEveryFunctionLibmvecHas) {
    if (!avx2_cpu()) GTEST_SKIP() << "no AVX2 on this CPU";
    const int in_libmvec = functions_in_libmvec();
#if defined(JX_TEST_LIBMVEC_LINKED)
    // This build links libmvec, which CMake checked has them all (glibc 2.35 or newer).
    EXPECT_EQ(in_libmvec, kKnown);
#endif
    const jit::cpu::VectorMath vm = dyn::vector_math_avx2();
    EXPECT_STREQ(vm.mode, "dynamic");
    EXPECT_EQ(vm.known, kKnown);
    EXPECT_EQ(vm.resolved, in_libmvec);
    // A function found has a loop of its own, not the one a missing function gets.
    const jit::cpu::KernelTable& t = *dyn::kernels_avx2();
    int resolved = -1;
    const jit::cpu::KernelTable& none = *dyn::kernels_avx2_vector_library(kNoSuchLibrary, &resolved);
    void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    for (const VectorOp& v : kOps)
        for (DType dt : {DType::Float32, DType::Float64}) {
            const bool found = lib && dlsym(lib, symbol(v, dt).c_str());
            EXPECT_EQ(entry(t, v.op, dt) != entry(none, v.op, dt), found) << symbol(v, dt);
        }
    if (lib) dlclose(lib);
}

template <class T>
void check_ulps(const jit::cpu::KernelTable& t, DType dt) {
    const std::int64_t n = kBlock + 3;
    const auto a = small_values<T>(n, 1), b = small_values<T>(n, 2);
    for (const VectorOp& v : kOps) {
        const auto got = run(entry(t, v.op, dt), a, b);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(within_ulps(got[i], scalar(v.op, a[i], b[i]), 4))
                << ir::info(v.op).id << " on " << jit::dtype_name(dt) << " at " << i << ": got " << got[i] << ", want "
                << scalar(v.op, a[i], b[i]) << " (a=" << a[i] << ", b=" << b[i] << ")";
    }
}

// The bound of the kernel tests for a vector math library (glibc documents 4 ULP).
TEST(CpuVectorMath, DynamicTableIsWithinFourUlpOfTheScalarFunctions) {
    if (!avx2_cpu()) GTEST_SKIP() << "no AVX2 on this CPU";
    check_ulps<float>(*dyn::kernels_avx2(), DType::Float32);
    check_ulps<double>(*dyn::kernels_avx2(), DType::Float64);
}

template <class T>
void check_same_bits(const jit::cpu::KernelTable& x, const jit::cpu::KernelTable& y, DType dt) {
    const std::int64_t n = 4 * kBlock + 7;
    const auto a = wide_values<T>(n, 3), b = wide_values<T>(n, 4);
    for (const VectorOp& v : kOps) {
        const auto got = run(entry(x, v.op, dt), a, b), want = run(entry(y, v.op, dt), a, b);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0)
                << ir::info(v.op).id << " on " << jit::dtype_name(dt) << " at " << i << ": " << got[i] << " against "
                << want[i] << " (a=" << a[i] << ", b=" << b[i] << ")";
    }
}

TEST(CpuVectorMath, DynamicTableEqualsTheLinkedTableBitwise) {
#if defined(JX_TEST_LIBMVEC_LINKED)
    if (!avx2_cpu()) GTEST_SKIP() << "no AVX2 on this CPU";
    ASSERT_EQ(dyn::vector_math_avx2().resolved, kKnown);
    check_same_bits<float>(*dyn::kernels_avx2(), *jit::cpu::kernels_avx2(), DType::Float32);
    check_same_bits<double>(*dyn::kernels_avx2(), *jit::cpu::kernels_avx2(), DType::Float64);
#else
    GTEST_SKIP() << "this build does not link libmvec (JITEXPR_LIBMVEC=" << kMode << "): no linked table to compare";
#endif
}

TEST(CpuVectorMath, AMissingLibraryGivesTheScalarLoops) {
    if (!avx2_cpu()) GTEST_SKIP() << "no AVX2 on this CPU";
    int resolved = -1;
    const jit::cpu::KernelTable* t = dyn::kernels_avx2_vector_library(kNoSuchLibrary, &resolved);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(resolved, 0);
    expect_scalar_results<float>(*t, DType::Float32);
    expect_scalar_results<double>(*t, DType::Float64);
    // Binary functions get the scalar-operand loops of a table without libmvec, as the baseline
    // table has them.
    const jit::cpu::KernelTable& base = jit::cpu::kernels_base();
    for (ir::Op op : {ir::Op::Arctan2, ir::Op::Hypot, ir::Op::Pow})
        for (DType dt : {DType::Float32, DType::Float64}) {
            const int o = static_cast<int>(op), d = static_cast<int>(dt);
            EXPECT_EQ(t->op_vs[o][d] != nullptr, base.op_vs[o][d] != nullptr) << ir::info(op).id;
            EXPECT_EQ(t->op_sv[o][d] != nullptr, base.op_sv[o][d] != nullptr) << ir::info(op).id;
            EXPECT_NE(t->op_vs[o][d], nullptr) << ir::info(op).id;
        }
    // The table the backend uses is unchanged by the hook.
    EXPECT_EQ(dyn::vector_math_avx2().resolved, functions_in_libmvec());
}

// A library with three of the functions (tests/cpu/fake_libmvec.cpp, which counts its calls):
// those three run the vector loop through it, every other function the scalar loop; all give
// the scalar function's results (the stand-in computes them so).
TEST(CpuVectorMath, APartialLibraryServesItsFunctionsAndTheScalarLoopsTheRest) {
    if (!avx2_cpu()) GTEST_SKIP() << "no AVX2 on this CPU";
    int resolved = -1;
    const jit::cpu::KernelTable* t = dyn::kernels_avx2_vector_library(JX_TEST_FAKE_LIBMVEC, &resolved);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(resolved, 3);
    void* lib = dlopen(JX_TEST_FAKE_LIBMVEC, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    const long* calls = static_cast<const long*>(dlsym(lib, "jx_fake_libmvec_calls"));
    ASSERT_NE(calls, nullptr);
    const std::int64_t n = kBlock + 5;
    auto count = [&](ir::Op op, DType dt) {
        const long before = *calls;
        if (dt == DType::Float32) run(entry(*t, op, dt), wide_values<float>(n, 5), wide_values<float>(n, 6));
        else run(entry(*t, op, dt), wide_values<double>(n, 5), wide_values<double>(n, 6));
        return *calls - before;
    };
    for (const VectorOp& v : kOps)
        for (DType dt : {DType::Float32, DType::Float64}) {
            const std::string s = symbol(v, dt);
            const bool in_fake = s == "_ZGVdN8v_expf" || s == "_ZGVdN4v_sin" || s == "_ZGVdN8vv_powf";
            // One call per whole register of the block; the tail runs the scalar function.
            const long lanes = dt == DType::Float32 ? 8 : 4;
            EXPECT_EQ(count(v.op, dt), in_fake ? n / lanes : 0) << s;
        }
    expect_scalar_results<float>(*t, DType::Float32);
    expect_scalar_results<double>(*t, DType::Float64);
    // The backend's table still calls libmvec's own functions, not the stand-in's.
    const long before = *calls;
    run(entry(*dyn::kernels_avx2(), ir::Op::Exp, DType::Float32), small_values<float>(n, 7), small_values<float>(n, 8));
    EXPECT_EQ(*calls, before);
    dlclose(lib);
}

// vector_math() says how the kernels in use get the functions: this build's mode.
TEST(CpuVectorMath, TheKernelsInUseSayWhereTheirVectorFunctionsComeFrom) {
    const jit::cpu::VectorMath vm = jit::cpu::vector_math();
    if (std::string_view(jit::cpu::kernels().name) != "avx2") {
        EXPECT_STREQ(vm.mode, "none");
        EXPECT_EQ(vm.resolved, 0);
        return;
    }
    EXPECT_EQ(std::string_view(vm.mode), kMode);
    EXPECT_EQ(vm.known, kKnown);
    if (kMode == "linked") EXPECT_EQ(vm.resolved, kKnown);
    else if (kMode == "dynamic") EXPECT_EQ(vm.resolved, functions_in_libmvec());
    else EXPECT_EQ(vm.resolved, 0);
}

}  // namespace

// The CPU backend on hand-built programs: every kernel against the scalar semantics of
// dsl/semantics.h, block boundaries, broadcasting, strided inputs and outputs, several
// outputs, reductions, 16-bit floats, and thread-count independence.
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/kernels.hpp"
#include "backend/cpu/strings.hpp"
#include "dsl/plan.hpp"
#include "dsl/semantics.h"
#include "tests/support/ir_builder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string_view>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;
using jit::Shape;
using jit::cpu::kBlock;
using jxtest::Builder;
namespace ir = jit::ir;

std::unique_ptr<jit::detail::BackendImpl>& backend1() {
    static auto b = jit::detail::make_cpu_backend(1);
    return b;
}
std::unique_ptr<jit::detail::BackendImpl>& backend4() {
    static auto b = jit::detail::make_cpu_backend(4);
    return b;
}

template <class T>
Array host(const std::vector<T>& v, Shape shape) {
    return Array::from_host(v.data(), jit::dtype_of_v<T>, std::move(shape), Backend::Cpu);
}
std::vector<unsigned char> bools(const Array& a) {
    std::vector<unsigned char> v(static_cast<std::size_t>(a.size()));
    a.copy_to_host(v.data());
    return v;
}
std::vector<float> iota_f(std::int64_t n, float scale = 0.25f, float offset = -3.f) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = offset + scale * static_cast<float>(i % 97);
    return v;
}

// ---------------------------------------------------------------- block boundaries

class BlockSizes : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(BlockSizes, AddTimesTwoMatchesScalarSemanticsBitwise) {
    const std::int64_t n = GetParam();
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n}), c = b.input(DType::Float32, {n});
    b.output(b.same(ir::Op::Add, {b.same(ir::Op::Mul, {a, b.fconst(2.0, DType::Float32)}), c}));
    auto av = iota_f(n), cv = iota_f(n, 0.5f, 1.f);
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend4(), b.p, {host(av, {n}), host(cv, {n})}, out);
    auto r = out[0].to_vector<float>();
    ASSERT_EQ(static_cast<std::int64_t>(r.size()), n);
    for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        ASSERT_EQ(r[k], av[k] * 2.0f + cv[k]) << "at " << i;
    }
}
INSTANTIATE_TEST_SUITE_P(Cpu, BlockSizes,
                         ::testing::Values(0, 1, kBlock - 1, kBlock, kBlock + 1, 3 * kBlock + 17, 100003));

// ---------------------------------------------------------------- every kernel vs jx::op

// A plain array (std::vector<bool> has no data()).
template <class T>
struct Buf {
    std::unique_ptr<T[]> p;
    std::size_t n = 0;
    explicit Buf(std::size_t size) : p(new T[size]()), n(size) {}
    T& operator[](std::size_t i) { return p[i]; }
    T* data() { return p.get(); }
    T* begin() { return p.get(); }
    T* end() { return p.get() + n; }
};

// Deterministic values of a register type, special values included.
template <class T>
Buf<T> sample(std::int64_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    Buf<T> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        if constexpr (std::is_same_v<T, bool>) {
            x = rng() & 1u;
        } else if constexpr (std::is_integral_v<T>) {
            const std::uint32_t r = rng();
            x = (r % 8 == 0) ? static_cast<T>(r >> 3) : static_cast<T>(static_cast<int>(r % 19) - 6);
        } else if constexpr (std::is_floating_point_v<T>) {
            const std::uint32_t r = rng();
            static const T specials[] = {T(0), -T(0), T(1), T(-1), T(0.5), T(2.5), -T(2.5), INFINITY, -INFINITY, NAN};
            x = (r % 16 == 0) ? specials[(r >> 4) % 10]
                              : static_cast<T>(std::ldexp(double(int(r % 20001) - 10000), -11));
        } else {
            using R = decltype(x.re);
            x = T{static_cast<R>(int(rng() % 21) - 10) / R(4), static_cast<R>(int(rng() % 21) - 10) / R(4)};
        }
    }
    return v;
}

template <class T>
double as_double(T v) {
    if constexpr (std::is_same_v<T, jx::c64> || std::is_same_v<T, jx::c128>) return double(v.re);
    else return double(v);
}

template <class T>
bool same_value(T a, T b, int ulps) {
    if constexpr (std::is_same_v<T, jx::c64> || std::is_same_v<T, jx::c128>) {
        return same_value(a.re, b.re, ulps) && same_value(a.im, b.im, ulps);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
        if (a == b) return true;
        if (ulps == 0 || std::isinf(a) || std::isinf(b)) return false;
        T lo = a, hi = a;
        for (int k = 0; k < ulps; ++k) {
            lo = std::nextafter(lo, -INFINITY);
            hi = std::nextafter(hi, INFINITY);
        }
        return b >= lo && b <= hi;
    } else {
        return a == b;
    }
}

// Transcendental kernels may come from a vector math library (<= 4 ULP, glibc libmvec).
bool vector_math_op(ir::Op op) {
    switch (op) {
        case ir::Op::Sin:
        case ir::Op::Cos:
        case ir::Op::Tan:
        case ir::Op::Arcsin:
        case ir::Op::Arccos:
        case ir::Op::Arctan:
        case ir::Op::Sinh:
        case ir::Op::Cosh:
        case ir::Op::Tanh:
        case ir::Op::Arcsinh:
        case ir::Op::Arccosh:
        case ir::Op::Arctanh:
        case ir::Op::Log:
        case ir::Op::Log1p:
        case ir::Op::Log10:
        case ir::Op::Log2:
        case ir::Op::Exp:
        case ir::Op::Expm1:
        case ir::Op::Exp2:
        case ir::Op::Cbrt:
        case ir::Op::Erf:
        case ir::Op::Erfc:
        case ir::Op::Arctan2:
        case ir::Op::Hypot:
        case ir::Op::Pow: return true;
        default: return false;
    }
}

template <class T, class F>
void check_kernel(const jit::cpu::KernelTable& kt, ir::Op op, DType dt, int arity, F scalar) {
    const auto fn = kt.op[static_cast<int>(op)][static_cast<int>(dt)];
    if (!fn) return;
    const std::int64_t n = kBlock + 3;
    auto a = sample<T>(n, 1), b = sample<T>(n, 2), c = sample<T>(n, 3);
    auto cond = sample<bool>(n, 4);
    // Shifts: counts in [0, 2 * width) so that over-wide shifts are covered without UB in the
    // reference (which is the same scalar function).
    using R = decltype(scalar(a[0], a[0], a[0], false));
    Buf<R> out(static_cast<std::size_t>(n));
    const void* in[3] = {a.data(), b.data(), c.data()};
    const bool where = op == ir::Op::Where;
    if (where) in[0] = cond.data(), in[1] = a.data(), in[2] = b.data();
    fn(in, out.data(), n);
    const int ulps = vector_math_op(op) ? 4 : 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const R expect = where ? scalar(a[k], b[k], c[k], cond[k]) : scalar(a[k], b[k], c[k], false);
        ASSERT_TRUE(same_value(out[k], expect, ulps))
            << ir::info(op).id << " on " << jit::dtype_name(dt) << " [" << kt.name << "] at " << i << ": got "
            << as_double(out[k]) << ", want " << as_double(expect) << " (a=" << as_double(a[k])
            << ", b=" << as_double(b[k]) << ")";
    }
    (void)arity;
}

template <class T>
void check_all_ops(const jit::cpu::KernelTable& kt, DType dt) {
#define JX_CHECK_Operator(Id, Arity) JX_CHECK(Id, Arity)
#define JX_CHECK_Function(Id, Arity) JX_CHECK(Id, Arity)
#define JX_CHECK_Result(Id, Arity) JX_CHECK_Function(Id, Arity)
#define JX_CHECK_Reduction(Id, Arity)
#define JX_CHECK_Scan(Id, Arity)
#define JX_CHECK(Id, Arity)                                                                                          \
    if constexpr (Arity == 1 && requires(T x) { jx::op::Id(x); }) {                                                  \
        check_kernel<T>(kt, ir::Op::Id, dt, 1, [](T x, T, T, bool) { return jx::op::Id(x); });                       \
    } else if constexpr (Arity == 2 && requires(T x) { jx::op::Id(x, x); }) {                                        \
        check_kernel<T>(kt, ir::Op::Id, dt, 2, [](T x, T y, T, bool) { return jx::op::Id(x, y); });                  \
    } else if constexpr (Arity == 3 && std::string_view(#Id) == "Where" &&                                           \
                         requires(T x, bool c) { jx::op::Id(c, x, x); }) {                                           \
        check_kernel<T>(kt, ir::Op::Id, dt, 3, [](T x, T y, T, bool c) { return jx::op::Id(c, x, y); });             \
    } else if constexpr (Arity == 3 && std::string_view(#Id) != "Where" && requires(T x) { jx::op::Id(x, x, x); }) { \
        check_kernel<T>(kt, ir::Op::Id, dt, 3, [](T x, T y, T z, bool) { return jx::op::Id(x, y, z); });             \
    }
#define JIT_OP(Id, Kind, Arity, ...) JX_CHECK_##Kind(Id, Arity)
#include "dsl/ops.def"
#undef JIT_OP
#undef JX_CHECK
}

void check_table(const jit::cpu::KernelTable& kt) {
    check_all_ops<bool>(kt, DType::Bool);
    check_all_ops<jx::i8>(kt, DType::Int8);
    check_all_ops<jx::i16>(kt, DType::Int16);
    check_all_ops<jx::i32>(kt, DType::Int32);
    check_all_ops<jx::i64>(kt, DType::Int64);
    check_all_ops<jx::u8>(kt, DType::UInt8);
    check_all_ops<jx::u16>(kt, DType::UInt16);
    check_all_ops<jx::u32>(kt, DType::UInt32);
    check_all_ops<jx::u64>(kt, DType::UInt64);
    check_all_ops<float>(kt, DType::Float32);
    check_all_ops<double>(kt, DType::Float64);
    check_all_ops<jx::c64>(kt, DType::Complex64);
    check_all_ops<jx::c128>(kt, DType::Complex128);
}

TEST(CpuKernels, BaselineTableMatchesScalarSemantics) { check_table(jit::cpu::kernels_base()); }

TEST(CpuKernels, Avx2TableMatchesScalarSemantics) {
    const auto* kt = jit::cpu::kernels_avx2();
    if (!kt || !__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU or build";
    check_table(*kt);
}

// op_vs / op_sv (one operand a single value) against the two-block loop with that value filled
// in, byte for byte, for a few values of each operand type, specials included.
template <class T>
void check_scalar_variants(const jit::cpu::KernelTable& kt, DType dt) {
    const std::int64_t n = kBlock + 3;
    const auto a = sample<T>(n, 11);
    const auto values = sample<T>(24, 12);
    for (int op = 0; op < jit::cpu::kNumOps; ++op) {
        const auto full = kt.op[op][static_cast<int>(dt)];
        for (const bool right : {true, false}) {
            const auto one = right ? kt.op_vs[op][static_cast<int>(dt)] : kt.op_sv[op][static_cast<int>(dt)];
            if (!one) continue;
            ASSERT_NE(full, nullptr) << op;
            for (std::size_t v = 0; v < values.n; ++v) {
                Buf<T> filled(static_cast<std::size_t>(n));
                for (auto& x : filled) x = values.p[v];
                const T s = values.p[v];
                std::vector<unsigned char> got(static_cast<std::size_t>(n) * 16), want(got.size());
                const void* in_one[2] = {right ? static_cast<const void*>(a.p.get()) : &s,
                                         right ? static_cast<const void*>(&s) : a.p.get()};
                const void* in_full[2] = {right ? a.p.get() : filled.data(), right ? filled.data() : a.p.get()};
                one(in_one, got.data(), n);
                full(in_full, want.data(), n);
                ASSERT_EQ(got, want) << ir::info(static_cast<ir::Op>(op)).id << " on " << jit::dtype_name(dt) << " ["
                                     << kt.name << "], scalar " << (right ? "right" : "left") << " = " << as_double(s);
            }
        }
    }
}

void check_scalar_variants_table(const jit::cpu::KernelTable& kt) {
    check_scalar_variants<bool>(kt, DType::Bool);
    check_scalar_variants<jx::i8>(kt, DType::Int8);
    check_scalar_variants<jx::i16>(kt, DType::Int16);
    check_scalar_variants<jx::i32>(kt, DType::Int32);
    check_scalar_variants<jx::i64>(kt, DType::Int64);
    check_scalar_variants<jx::u8>(kt, DType::UInt8);
    check_scalar_variants<jx::u16>(kt, DType::UInt16);
    check_scalar_variants<jx::u32>(kt, DType::UInt32);
    check_scalar_variants<jx::u64>(kt, DType::UInt64);
    check_scalar_variants<float>(kt, DType::Float16);
    check_scalar_variants<float>(kt, DType::BFloat16);
    check_scalar_variants<float>(kt, DType::Float32);
    check_scalar_variants<double>(kt, DType::Float64);
    check_scalar_variants<jx::c64>(kt, DType::Complex64);
    check_scalar_variants<jx::c128>(kt, DType::Complex128);
}

TEST(CpuKernels, ScalarOperandLoopsEqualFilledBlockLoopsBitwise) {
    check_scalar_variants_table(jit::cpu::kernels_base());
    const auto* avx2 = jit::cpu::kernels_avx2();
    if (avx2 && __builtin_cpu_supports("avx2")) check_scalar_variants_table(*avx2);
}

// where_scalar (x and/or y one value) against where's three-block loop with the value filled in,
// byte for byte.
template <class T>
void check_where_scalar(const jit::cpu::KernelTable& kt, DType dt) {
    const std::int64_t n = kBlock + 3;
    const auto x = sample<T>(n, 21), y = sample<T>(n, 22), values = sample<T>(8, 23);
    Buf<unsigned char> c(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) c.p[static_cast<std::size_t>(i)] = (i * 7) % 3 == 0 ? 1 : 0;
    const auto full = kt.op[static_cast<int>(ir::Op::Where)][static_cast<int>(dt)];
    ASSERT_NE(full, nullptr) << jit::dtype_name(dt);
    for (int v = 1; v < 4; ++v) {
        const auto one = kt.where_scalar[v][static_cast<int>(dt)];
        ASSERT_NE(one, nullptr) << jit::dtype_name(dt) << " variant " << v;
        for (std::size_t k = 0; k < values.n; ++k) {
            Buf<T> filled(static_cast<std::size_t>(n));
            for (auto& e : filled) e = values.p[k];
            const T s = values.p[k];
            const void* in_one[3] = {c.data(), (v & 1) ? static_cast<const void*>(&s) : x.p.get(),
                                     (v & 2) ? static_cast<const void*>(&s) : y.p.get()};
            const void* in_full[3] = {c.data(), (v & 1) ? filled.data() : x.p.get(),
                                      (v & 2) ? filled.data() : y.p.get()};
            std::vector<unsigned char> got(static_cast<std::size_t>(n) * 16), want(got.size());
            one(in_one, got.data(), n);
            full(in_full, want.data(), n);
            ASSERT_EQ(got, want) << "where on " << jit::dtype_name(dt) << " [" << kt.name << "], variant " << v;
        }
    }
}

void check_where_scalar_table(const jit::cpu::KernelTable& kt) {
    check_where_scalar<bool>(kt, DType::Bool);
    check_where_scalar<jx::i8>(kt, DType::Int8);
    check_where_scalar<jx::i32>(kt, DType::Int32);
    check_where_scalar<jx::i64>(kt, DType::Int64);
    check_where_scalar<jx::u16>(kt, DType::UInt16);
    check_where_scalar<jx::u64>(kt, DType::UInt64);
    check_where_scalar<float>(kt, DType::Float16);
    check_where_scalar<float>(kt, DType::Float32);
    check_where_scalar<double>(kt, DType::Float64);
    check_where_scalar<jx::c64>(kt, DType::Complex64);
    check_where_scalar<jx::c128>(kt, DType::Complex128);
}

TEST(CpuKernels, WhereWithAScalarOperandEqualsTheFilledBlockLoopBitwise) {
    check_where_scalar_table(jit::cpu::kernels_base());
    const auto* avx2 = jit::cpu::kernels_avx2();
    if (avx2 && __builtin_cpu_supports("avx2")) check_where_scalar_table(*avx2);
}

// count_true (a sum of booleans) against Sum<int64> of the block cast to int64.
void check_count_true(const jit::cpu::KernelTable& kt) {
    const int sum = static_cast<int>(jit::cpu::Red::Sum), i64 = static_cast<int>(DType::Int64);
    ASSERT_NE(kt.count_true, nullptr) << kt.name;
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{31}, kBlock}) {
        Buf<unsigned char> c(static_cast<std::size_t>(n));
        std::vector<std::int64_t> wide(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            c.p[static_cast<std::size_t>(i)] = (i * 5) % 7 < 3 ? 1 : 0;
            wide[static_cast<std::size_t>(i)] = c.p[static_cast<std::size_t>(i)];
        }
        std::int64_t got = 40, want = 40;  // an accumulator already holding a partial sum
        kt.count_true(c.data(), n, &got, 0);
        kt.reduce[sum][i64](wide.data(), n, &want, 0);
        EXPECT_EQ(got, want) << kt.name << ", " << n << " elements";
    }
}

TEST(CpuKernels, CountingTrueElementsEqualsTheSumOfTheirInt64Cast) {
    check_count_true(jit::cpu::kernels_base());
    const auto* avx2 = jit::cpu::kernels_avx2();
    if (avx2 && __builtin_cpu_supports("avx2")) check_count_true(*avx2);
}

TEST(CpuKernels, ArithmeticOnFloatsHasScalarOperandLoops) {
    const auto& kt = jit::cpu::kernels();
    for (ir::Op op : {ir::Op::Add, ir::Op::Sub, ir::Op::Mul, ir::Op::Div, ir::Op::Gt})
        for (DType dt : {DType::Float32, DType::Float64}) {
            EXPECT_NE(kt.op_vs[static_cast<int>(op)][static_cast<int>(dt)], nullptr) << ir::info(op).id;
            EXPECT_NE(kt.op_sv[static_cast<int>(op)][static_cast<int>(dt)], nullptr) << ir::info(op).id;
        }
}

// Every fused pair (op1 with a scalar, then op2 with a block) against op_vs/op_sv followed by the
// two-block loop of op2, bitwise.
template <class T>
void check_fused_pairs(const jit::cpu::KernelTable& kt, DType dt) {
    const std::int64_t n = 61;
    const auto x = sample<T>(n, 11), y = sample<T>(n, 12), scalars = sample<T>(24, 13);
    const ir::Op ops[] = {ir::Op::Add, ir::Op::Sub, ir::Op::Mul, ir::Op::Div};
    for (ir::Op op1 : ops)
        for (ir::Op op2 : ops)
            for (int variant = 0; variant < 4; ++variant) {
                const bool scalar_left = variant & jit::cpu::kFuseScalarLeft;
                const bool temp_right = variant & jit::cpu::kFuseTempRight;
                const auto fused =
                    kt.fused[jit::cpu::fuse_index(op1)][jit::cpu::fuse_index(op2)][variant][static_cast<int>(dt)];
                ASSERT_NE(fused, nullptr) << ir::info(op1).id << "," << ir::info(op2).id << " [" << kt.name << "]";
                const auto first = scalar_left ? kt.op_sv[static_cast<int>(op1)][static_cast<int>(dt)]
                                               : kt.op_vs[static_cast<int>(op1)][static_cast<int>(dt)];
                const auto second = kt.op[static_cast<int>(op2)][static_cast<int>(dt)];
                for (std::size_t v = 0; v < scalars.n; ++v) {
                    const T s = scalars.p[v];
                    std::vector<T> t(static_cast<std::size_t>(n)), want(t.size()), got(t.size());
                    const void* in1[2] = {scalar_left ? static_cast<const void*>(&s) : x.p.get(),
                                          scalar_left ? static_cast<const void*>(x.p.get()) : &s};
                    first(in1, t.data(), n);
                    const void* in2[2] = {temp_right ? static_cast<const void*>(y.p.get()) : t.data(),
                                          temp_right ? static_cast<const void*>(t.data()) : y.p.get()};
                    second(in2, want.data(), n);
                    const void* inf[3] = {x.p.get(), &s, y.p.get()};
                    fused(inf, got.data(), n);
                    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)), 0)
                        << ir::info(op1).id << " then " << ir::info(op2).id << " on " << jit::dtype_name(dt) << " ["
                        << kt.name << "], variant " << variant << ", scalar " << as_double(s);
                }
            }
}

TEST(CpuKernels, FusedScalarThenBlockPairsEqualTwoPassesBitwise) {
    check_fused_pairs<float>(jit::cpu::kernels_base(), DType::Float32);
    check_fused_pairs<double>(jit::cpu::kernels_base(), DType::Float64);
    const auto* avx2 = jit::cpu::kernels_avx2();
    if (avx2 && __builtin_cpu_supports("avx2")) {
        check_fused_pairs<float>(*avx2, DType::Float32);
        check_fused_pairs<double>(*avx2, DType::Float64);
    }
}

TEST(CpuKernels, EveryElementwiseOpHasAKernelForSomeDtype) {
    const auto& kt = jit::cpu::kernels();
    for (const auto& info : ir::op_table()) {
        if (info.kind == ir::OpKind::Reduction || info.kind == ir::OpKind::Scan) continue;  // not element-wise
        bool any = false;
        for (int d = 0; d < jit::kNumDTypes; ++d) any |= kt.op[static_cast<int>(info.op)][d] != nullptr;
        // The string functions have kernels over string values only (backend/cpu/strings.hpp).
        if (ir::is_string_function(info.op))
            for (const DType t : {DType::Bytes, DType::Str, DType::Utf8})
                for (int scalar : {0, 1, 2}) any |= jit::cpu::string_kernel(info.op, t, t, scalar) != nullptr;
        EXPECT_TRUE(any) << info.id;
    }
}

TEST(CpuKernels, StringOpsHaveKernelsForEveryPairOfOneKind) {
    const DType text[] = {DType::Str, DType::Utf8};
    for (const auto& info : ir::op_table()) {
        if (!ir::is_string_function(info.op) && !ir::is_comparison(info.op)) continue;
        for (int scalar : {0, 1, 2}) {
            EXPECT_NE(jit::cpu::string_kernel(info.op, DType::Bytes, DType::Bytes, scalar), nullptr) << info.id;
            for (DType a : text)
                for (DType b : text)
                    EXPECT_NE(jit::cpu::string_kernel(info.op, a, b, scalar), nullptr)
                        << info.id << " " << dtype_name(a) << " " << dtype_name(b);
            // bytes never meet text (lowering refuses them before a backend sees them)
            if (info.op != ir::Op::StrLen) {
                EXPECT_EQ(jit::cpu::string_kernel(info.op, DType::Bytes, DType::Str, scalar), nullptr) << info.id;
            }
        }
    }
}

// ---------------------------------------------------------------- programs

TEST(CpuBackend, IntegerFloorDivAndModFollowNumpyWithZeroDivisors) {
    Builder b;
    ir::NodeId a = b.input(DType::Int32, {6}), d = b.input(DType::Int32, {6});
    b.output(b.same(ir::Op::FloorDiv, {a, d}));
    b.output(b.same(ir::Op::Mod, {a, d}));
    std::vector<std::int32_t> av{7, -7, 7, -7, 5, INT32_MIN}, dv{2, 2, -2, 0, 0, -1};
    std::vector<Array> out{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend1(), b.p, {host(av, {6}), host(dv, {6})}, out);
    EXPECT_EQ(out[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, -4, -4, 0, 0, INT32_MIN}));
    EXPECT_EQ(out[1].to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 1, -1, 0, 0, 0}));
}

TEST(CpuBackend, BroadcastsColumnAgainstRowAndZeroDimInput) {
    Builder b;
    ir::NodeId col = b.input(DType::Float64, {3, 1}), row = b.input(DType::Float64, {4}),
               s = b.input(DType::Float64, {});
    b.output(b.same(ir::Op::Add, {b.same(ir::Op::Mul, {col, row}), s}));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p,
                {host(std::vector<double>{1, 2, 3}, {3, 1}), host(std::vector<double>{1, 10, 100, 1000}, {4}),
                 host(std::vector<double>{0.5}, {})},
                out);
    EXPECT_EQ(out[0].shape(), (Shape{3, 4}));
    EXPECT_EQ(out[0].to_vector<double>(),
              (std::vector<double>{1.5, 10.5, 100.5, 1000.5, 2.5, 20.5, 200.5, 2000.5, 3.5, 30.5, 300.5, 3000.5}));
}

TEST(CpuBackend, ReadsTransposedAndSteppedInputs) {
    const std::int64_t R = 37, C = 301;
    std::vector<float> m(static_cast<std::size_t>(R * C));
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i);
    Array mat = host(m, {R, C});
    Array t = mat.transpose();  // (C, R), strides (1, C)
    std::vector<float> w(static_cast<std::size_t>(2 * C * R));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7);
    Array whole = host(w, {2 * C * R});
    Array stepped = Array::view(whole.data(), DType::Float32, {C, R}, {2 * R, 2}, Backend::Cpu, whole.storage());
    Builder b;
    ir::NodeId xi = b.input(DType::Float32, {C, R}), yi = b.input(DType::Float32, {C, R});
    b.p.inputs[0].strides = t.strides();
    b.p.inputs[1].strides = stepped.strides();
    b.output(b.same(ir::Op::Sub, {xi, yi}));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend4(), b.p, {t, stepped}, out);
    auto r = out[0].to_vector<float>();
    for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t k = 0; k < R; ++k) {
            const float x = m[static_cast<std::size_t>(k * C + c)], y = w[static_cast<std::size_t>(c * 2 * R + 2 * k)];
            ASSERT_EQ(r[static_cast<std::size_t>(c * R + k)], x - y) << c << "," << k;
        }
}

TEST(CpuBackend, WritesIntoASteppedOutputViewOnly) {
    const std::int64_t n = 5000;
    Builder b;
    ir::NodeId a = b.input(DType::Int64, {n});
    b.output(b.same(ir::Op::Neg, {a}));
    std::vector<std::int64_t> av(static_cast<std::size_t>(n));
    std::iota(av.begin(), av.end(), 1);
    std::vector<std::int64_t> backing(static_cast<std::size_t>(2 * n), 7);
    Array whole = host(backing, {2 * n});
    std::vector<Array> out{whole.slice(0, 1, 2 * n, 2)};
    jxtest::run(*backend4(), b.p, {host(av, {n})}, out);
    auto w = whole.to_vector<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(w[static_cast<std::size_t>(2 * i)], 7);
        ASSERT_EQ(w[static_cast<std::size_t>(2 * i + 1)], -(i + 1));
    }
}

TEST(CpuBackend, TwoOutputsOfOneStageShareTheirOperands) {
    const std::int64_t n = 3 * kBlock + 5;
    Builder b;
    ir::NodeId a = b.input(DType::Float64, {n}), c = b.input(DType::Float64, {n});
    ir::NodeId sum = b.same(ir::Op::Add, {a, c});
    b.output(b.same(ir::Op::Mul, {sum, sum}));
    b.output(b.op(ir::Op::Gt, DType::Bool, {a, c}));
    std::vector<double> av(static_cast<std::size_t>(n)), cv(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        av[static_cast<std::size_t>(i)] = double(i % 11), cv[static_cast<std::size_t>(i)] = double(i % 5);
    std::vector<Array> out{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend4(), b.p, {host(av, {n}), host(cv, {n})}, out);
    auto sq = out[0].to_vector<double>();
    auto gt = bools(out[1]);
    for (std::size_t i = 0; i < sq.size(); ++i) {
        ASSERT_EQ(sq[i], (av[i] + cv[i]) * (av[i] + cv[i]));
        ASSERT_EQ(gt[i] != 0, av[i] > cv[i]);
    }
}

TEST(CpuBackend, ScalarParameterIsBroadcast) {
    Builder b;
    ir::NodeId a = b.input(DType::Int16, {4}), s = b.scalar(DType::Int16);
    b.output(b.same(ir::Op::Mul, {a, s}));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(std::vector<std::int16_t>{1, -2, 300, 20000}, {4})}, out,
                {ir::Value::of_int(3, DType::Int16)});
    // 20000 * 3 wraps in int16
    EXPECT_EQ(out[0].to_vector<std::int16_t>(),
              (std::vector<std::int16_t>{3, -6, 900, static_cast<std::int16_t>(-5536)}));
}

TEST(CpuBackend, WhereSelectsPerElement) {
    const std::int64_t n = kBlock + 9;
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n});
    ir::NodeId cond = b.op(ir::Op::Gt, DType::Bool, {a, b.fconst(0.5, DType::Float32)});
    b.output(b.same(ir::Op::Where, {cond, b.same(ir::Op::Sin, {a}), b.same(ir::Op::Mul, {a, a})}));
    auto av = iota_f(n, 0.03f, -1.f);
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(av, {n})}, out);
    auto r = out[0].to_vector<float>();
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (av[i] > 0.5f) ASSERT_NEAR(r[i], std::sin(av[i]), 4e-7f) << i;
        else ASSERT_EQ(r[i], av[i] * av[i]) << i;
    }
}

TEST(CpuBackend, ConstantOnTheLeftOfANonCommutativeOpKeepsItsSide) {
    const std::int64_t n = 2 * kBlock + 5;
    Builder b;
    ir::NodeId a = b.input(DType::Float64, {n});
    b.output(b.same(ir::Op::Sub, {b.fconst(2.0, DType::Float64), a}));
    b.output(b.same(ir::Op::Div, {a, b.fconst(3.0, DType::Float64)}));
    std::vector<double> av(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) av[static_cast<std::size_t>(i)] = 0.125 * double(i % 41) - 1.0;
    std::vector<Array> out{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend1(), b.p, {host(av, {n})}, out);
    const auto left = out[0].to_vector<double>(), right = out[1].to_vector<double>();
    for (std::size_t i = 0; i < av.size(); ++i) {
        ASSERT_EQ(left[i], 2.0 - av[i]) << i;
        ASSERT_EQ(right[i], av[i] / 3.0) << i;
    }
}

// a*0.1 + b is one fused instruction and gives jx::op's Mul then Add, each rounded (no FMA).
TEST(CpuBackend, TimesConstantPlusBlockRunsFusedAndMatchesTwoRoundings) {
    const std::int64_t n = 3 * kBlock + 11;
    Builder b;
    ir::NodeId a = b.input(DType::Float64, {n}), c = b.input(DType::Float64, {n});
    b.output(b.same(ir::Op::Add, {b.same(ir::Op::Mul, {a, b.fconst(0.1, DType::Float64)}), c}));
    EXPECT_EQ(jit::cpu::count_fused_instructions(b.p, ir::schedule(b.p), jit::cpu::kernels()), 1);
    std::vector<double> av(static_cast<std::size_t>(n)), cv(av.size());
    for (std::int64_t i = 0; i < n; ++i) {
        av[static_cast<std::size_t>(i)] = 1.0 / double(i + 3) + 1e16;
        cv[static_cast<std::size_t>(i)] = double(i % 7) - 0.3;
    }
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(av, {n}), host(cv, {n})}, out);
    const auto r = out[0].to_vector<double>();
    for (std::size_t i = 0; i < r.size(); ++i) {
        const double want = jx::op::Add(jx::op::Mul(av[i], 0.1), cv[i]);
        ASSERT_EQ(std::memcmp(&r[i], &want, sizeof want), 0) << i;
    }
}

// A scalar-operand result read by two ops (or stored) keeps its own instruction.
TEST(CpuBackend, ScalarOpResultReadTwiceIsNotFused) {
    const std::int64_t n = kBlock + 3;
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n}), c = b.input(DType::Float32, {n});
    ir::NodeId t = b.same(ir::Op::Sub, {b.fconst(1.0, DType::Float32), a});
    b.output(b.same(ir::Op::Add, {t, b.same(ir::Op::Mul, {c, t})}));
    EXPECT_EQ(jit::cpu::count_fused_instructions(b.p, ir::schedule(b.p), jit::cpu::kernels()), 0);
    auto av = iota_f(n), cv = iota_f(n, 0.5f, 1.f);
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(av, {n}), host(cv, {n})}, out);
    const auto r = out[0].to_vector<float>();
    for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i], (1.f - av[i]) + cv[i] * (1.f - av[i])) << i;
}

// One constant read both as a single value (a * k) and as a whole block (where's operand).
TEST(CpuBackend, ConstantReadAsScalarAndAsBlockFillsTheBlock) {
    const std::int64_t n = 3 * kBlock + 7;
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n});
    ir::NodeId k = b.fconst(2.0, DType::Float32);
    ir::NodeId cond = b.op(ir::Op::Gt, DType::Bool, {a, b.fconst(0.0, DType::Float32)});
    b.output(b.same(ir::Op::Where, {cond, b.same(ir::Op::Mul, {a, k}), k}));
    auto av = iota_f(n, 0.5f, -20.f);
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(av, {n})}, out);
    const auto r = out[0].to_vector<float>();
    for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i], av[i] > 0.f ? av[i] * 2.f : 2.f) << i;
}

TEST(CpuBackend, Float16IsComputedInFloatAndRoundedOnStore) {
    const std::int64_t n = 1000;
    std::vector<std::uint16_t> ah(static_cast<std::size_t>(n)), bh(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        ah[static_cast<std::size_t>(i)] = jx::float_to_half(0.001f * float(i) - 0.3f);
        bh[static_cast<std::size_t>(i)] = jx::float_to_half(float(i) * 37.0f);
    }
    Builder b;
    ir::NodeId a = b.input(DType::Float16, {n}), c = b.input(DType::Float16, {n});
    b.output(b.same(ir::Op::Add, {b.same(ir::Op::Mul, {a, c}), a}));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p,
                {Array::from_host(ah.data(), DType::Float16, {n}, Backend::Cpu),
                 Array::from_host(bh.data(), DType::Float16, {n}, Backend::Cpu)},
                out);
    std::vector<std::uint16_t> r(static_cast<std::size_t>(n));
    out[0].copy_to_host(r.data());
    for (std::size_t i = 0; i < r.size(); ++i) {
        const float x = jx::half_to_float(ah[i]), y = jx::half_to_float(bh[i]);
        ASSERT_EQ(r[i], jx::float_to_half(x * y + x)) << i;  // one rounding, at the store
    }
}

TEST(CpuBackend, CastToInt8SaturatesAndNanGivesZero) {
    Builder b;
    ir::NodeId a = b.input(DType::Float64, {6});
    b.output(b.cast(a, DType::Int8));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(std::vector<double>{1.9, -1.9, 300, -300, NAN, -128.5}, {6})}, out);
    EXPECT_EQ(out[0].to_vector<std::int8_t>(), (std::vector<std::int8_t>{1, -1, 127, -128, 0, -128}));
}

TEST(CpuBackend, CastToBFloat16RoundsToNearestEven) {
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {3});
    b.output(b.cast(a, DType::BFloat16));
    std::vector<Array> out{b.make_output(0)};
    // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1); 1 + 3*2^-8 rounds up.
    jxtest::run(*backend1(), b.p, {host(std::vector<float>{1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, NAN}, {3})}, out);
    std::vector<std::uint16_t> r(3);
    out[0].copy_to_host(r.data());
    EXPECT_EQ(r[0], 0x3f80);
    EXPECT_EQ(r[1], 0x3f82);
    EXPECT_TRUE(std::isnan(jx::bf16_to_float(r[2])));
}

TEST(CpuBackend, ComplexMultiplyAndAbs) {
    Builder b;
    ir::NodeId a = b.input(DType::Complex128, {2});
    b.output(b.op(ir::Op::Abs, DType::Float64, {b.same(ir::Op::Mul, {a, a})}));
    std::vector<std::complex<double>> av{{3, 4}, {0, 1}};
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {host(av, {2})}, out);
    EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{25.0, 1.0}));
}

// ---------------------------------------------------------------- reductions

TEST(CpuBackend, FullSumOfInt64IsExact) {
    const std::int64_t n = 300001;
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), -1000);
    Builder b;
    ir::NodeId a = b.input(DType::Int64, {n});
    b.output(b.reduce(ir::Op::Sum, a, DType::Int64, -1));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend4(), b.p, {host(v, {n})}, out);
    EXPECT_EQ(out[0].to_vector<std::int64_t>()[0], std::accumulate(v.begin(), v.end(), std::int64_t{0}));
}

TEST(CpuBackend, FullSumOfFloat32IsPairwiseAccurate) {
    const std::int64_t n = 1 << 22;
    std::vector<float> v(static_cast<std::size_t>(n), 0.1f);
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n});
    b.output(b.reduce(ir::Op::Sum, a, DType::Float32, -1));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend4(), b.p, {host(v, {n})}, out);
    const double exact = double(0.1f) * double(n);
    EXPECT_NEAR(out[0].to_vector<float>()[0], exact, exact * 1e-6);  // naive summation is off by ~10%
}

TEST(CpuBackend, AxisReductionsOverShortAndLongRows) {
    for (auto [R, C] : {std::pair<std::int64_t, std::int64_t>{37, 5000}, {5000, 3}, {4, 1}}) {
        std::vector<double> v(static_cast<std::size_t>(R * C));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(i % 13) - 6;
        for (int axis : {0, 1}) {
            Builder b;
            ir::NodeId a = b.input(DType::Float64, {R, C});
            b.output(b.reduce(ir::Op::Sum, a, DType::Float64, axis));
            b.output(b.reduce(ir::Op::ReduceMax, a, DType::Float64, axis));
            b.output(b.reduce(ir::Op::Mean, a, DType::Float64, axis));
            std::vector<Array> out{b.make_output(0), b.make_output(1), b.make_output(2)};
            jxtest::run(*backend4(), b.p, {host(v, {R, C})}, out);
            auto s = out[0].to_vector<double>(), m = out[1].to_vector<double>(), mean = out[2].to_vector<double>();
            const std::int64_t rows = axis == 0 ? C : R, len = axis == 0 ? R : C;
            ASSERT_EQ(static_cast<std::int64_t>(s.size()), rows);
            for (std::int64_t r = 0; r < rows; ++r) {
                double es = 0, em = -INFINITY;
                for (std::int64_t k = 0; k < len; ++k) {
                    const double x = v[static_cast<std::size_t>(axis == 0 ? k * C + r : r * C + k)];
                    es += x;
                    em = std::max(em, x);
                }
                ASSERT_EQ(s[static_cast<std::size_t>(r)], es) << R << "x" << C << " axis " << axis << " row " << r;
                ASSERT_EQ(m[static_cast<std::size_t>(r)], em);
                ASSERT_DOUBLE_EQ(mean[static_cast<std::size_t>(r)], es / double(len));
            }
        }
    }
}

TEST(CpuBackend, MinAndMaxPropagateNan) {
    std::vector<float> v(10000, 1.0f);
    v[7777] = NAN;
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {10000});
    b.output(b.reduce(ir::Op::ReduceMin, a, DType::Float32, -1));
    b.output(b.reduce(ir::Op::ReduceMax, a, DType::Float32, -1));
    std::vector<Array> out{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend1(), b.p, {host(v, {10000})}, out);
    EXPECT_TRUE(std::isnan(out[0].to_vector<float>()[0]));
    EXPECT_TRUE(std::isnan(out[1].to_vector<float>()[0]));
}

TEST(CpuBackend, AnyAndAllOverAComparison) {
    const std::int64_t n = 50000;
    std::vector<std::int32_t> v(static_cast<std::size_t>(n), 1);
    v[49999] = -5;
    Builder b;
    ir::NodeId a = b.input(DType::Int32, {n});
    ir::NodeId neg = b.op(ir::Op::Lt, DType::Bool, {a, b.constant(ir::Value::of_int(0, DType::Int32))});
    b.output(b.reduce(ir::Op::Any, neg, DType::Bool, -1));
    b.output(b.reduce(ir::Op::All, neg, DType::Bool, -1));
    std::vector<Array> out{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend4(), b.p, {host(v, {n})}, out);
    EXPECT_TRUE(bools(out[0])[0]);
    EXPECT_FALSE(bools(out[1])[0]);
}

TEST(CpuBackend, ReductionResultFeedsALaterStageThroughATemporary) {
    const std::int64_t n = 3 * kBlock + 1;
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(i % 10);
    Builder b;
    ir::NodeId a = b.input(DType::Float64, {n});
    ir::NodeId mean = b.reduce(ir::Op::Mean, a, DType::Float64, -1);
    b.output(b.same(ir::Op::Sub, {a, mean}));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend4(), b.p, {host(v, {n})}, out);
    const double m = std::accumulate(v.begin(), v.end(), 0.0) / double(n);
    auto r = out[0].to_vector<double>();
    for (std::size_t i = 0; i < r.size(); ++i) ASSERT_NEAR(r[i], v[i] - m, 1e-12);
}

TEST(CpuBackend, EmptyAxisSumGivesZeros) {
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {0, 3});
    b.output(b.reduce(ir::Op::Sum, a, DType::Float32, 0));
    std::vector<Array> out{b.make_output(0)};
    jxtest::run(*backend1(), b.p, {Array::zeros(DType::Float32, {0, 3}, Backend::Cpu)}, out);
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

// ---------------------------------------------------------------- threads

TEST(CpuBackend, FourThreadsEqualOneThreadBitwise) {
    const std::int64_t n = (1 << 20) + 77;
    std::vector<float> v(static_cast<std::size_t>(n));
    std::mt19937 rng(5);
    for (auto& x : v) x = float(rng() % 100000) * 1e-3f;
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {n});
    ir::NodeId e = b.same(ir::Op::Add, {b.same(ir::Op::Sin, {a}), b.same(ir::Op::Exp, {b.same(ir::Op::Neg, {a})})});
    b.output(e);
    b.output(b.reduce(ir::Op::Sum, e, DType::Float32, -1));
    std::vector<Array> o1{b.make_output(0), b.make_output(1)}, o4{b.make_output(0), b.make_output(1)};
    jxtest::run(*backend1(), b.p, {host(v, {n})}, o1);
    jxtest::run(*backend4(), b.p, {host(v, {n})}, o4);
    EXPECT_EQ(o1[0].to_vector<float>(), o4[0].to_vector<float>());
    EXPECT_EQ(o1[1].to_vector<float>(), o4[1].to_vector<float>());
}

TEST(CpuBackend, WrongInputCountIsAnArgumentError) {
    Builder b;
    ir::NodeId a = b.input(DType::Float32, {3});
    b.output(b.same(ir::Op::Neg, {a}));
    std::vector<Array> out{b.make_output(0)};
    EXPECT_THROW(jxtest::run(*backend1(), b.p, {}, out), jit::ArgumentError);
}

}  // namespace

// ---------------------------------------------------------------- passes of several stages

namespace pass_tests {

jit::dsl::Binding column(DType t, std::int64_t n) {
    jit::dsl::Binding b;
    b.kind = jit::dsl::Binding::Kind::Array;
    b.dtype = t;
    b.shape = {n};
    b.strides = jit::contiguous_strides(b.shape);
    return b;
}

// How many block instructions compute the node(s) whose op is `op` (summed), per element.
int computed(const ir::Plan& plan, ir::Op op) {
    const std::vector<int> count = jit::cpu::computations_per_element(plan.program, plan.schedule);
    int total = 0;
    for (const ir::NodeId n : plan.program.ids())
        if (plan.program.node(n).kind == ir::NodeKind::Op && plan.program.node(n).op == op) total += count[n.index()];
    return total;
}

// x = a*b feeds two outputs and a sum: one pass of two stages, and a*b computed once per element
// (stage by stage, the sum's stage would compute it again).
TEST(CpuPasses, ASharedSubexpressionIsComputedOncePerElement) {
    const std::map<std::string, jit::dsl::Binding> env = {{"a", column(DType::Float64, 4096)},
                                                          {"b", column(DType::Float64, 4096)},
                                                          {"c", column(DType::Float64, 4096)},
                                                          {"d", column(DType::Float64, 4096)}};
    const ir::Plan plan =
        jit::dsl::plan("x = a*b\ny = x + c\nz = x * d\ns = sum(y)", jit::dsl::bindings_of(env), jit::dsl::Limits{});
    ASSERT_EQ(plan.schedule.stages.size(), 2u);
    ASSERT_EQ(plan.schedule.passes.size(), 1u);
    EXPECT_EQ(computed(plan, ir::Op::Mul), 2) << "a*b and x*d, once each";
    EXPECT_EQ(computed(plan, ir::Op::Add), 1) << "x + c, stored and summed";
    const std::vector<int> count = jit::cpu::computations_per_element(plan.program, plan.schedule);
    for (const ir::NodeId n : plan.program.ids()) EXPECT_LE(count[n.index()], 1) << ir::dump(plan.program);
}

// The analytics example's program: its four sums and two columns are one pass in which every
// node, speed and tip_pct included (read by a column and a sum each), is computed once per
// element.
TEST(CpuPasses, TheAnalyticsProgramComputesEachValueOnce) {
    const std::map<std::string, jit::dsl::Binding> env = {{"distance", column(DType::Float64, 3000)},
                                                          {"duration", column(DType::Float64, 3000)},
                                                          {"fare", column(DType::Float64, 3000)},
                                                          {"tip", column(DType::Float64, 3000)},
                                                          {"passengers", column(DType::Int32, 3000)}};
    const ir::Plan plan = jit::dsl::plan(
        "speed = distance / (duration / 3600)\n"
        "tip_pct = where(fare > 0, tip / fare * 100, 0)\n"
        "mean_long_speed = sum(where(distance > 5, speed, 0)) / sum(distance > 5)\n"
        "mean_group_tip = sum(where(passengers >= 3, tip_pct, 0)) / sum(passengers >= 3)\n",
        jit::dsl::bindings_of(env), jit::dsl::Limits{});
    ASSERT_EQ(plan.schedule.stages.size(), 6u);
    ASSERT_EQ(plan.schedule.passes.size(), 2u);
    EXPECT_EQ(plan.schedule.passes[0].first, 0);
    EXPECT_EQ(plan.schedule.passes[0].end, 5) << "the four sums and the two columns";
    const std::vector<int> count = jit::cpu::computations_per_element(plan.program, plan.schedule);
    for (const ir::NodeId n : plan.program.ids())
        EXPECT_LE(count[n.index()], 1) << "node " << n.index() << " in\n" << ir::dump(plan.program);
    // The text writes distance > 5 and passengers >= 3 twice each: two nodes each (the lowering
    // does not merge repeated expressions), computed once each by the pass's block program.
    EXPECT_EQ(computed(plan, ir::Op::Gt), 2) << "fare > 0 and distance > 5";
    EXPECT_EQ(computed(plan, ir::Op::Ge), 1) << "passengers >= 3";
    EXPECT_EQ(computed(plan, ir::Op::Where), 3);
    // sum(distance > 5) counts the booleans: their cast to int64 is not computed (the casts left
    // are the 0-d stage's, of the counts to float64).
    for (const ir::NodeId n : plan.program.ids())
        if (plan.program.node(n).kind == ir::NodeKind::Cast && !plan.program.node(n).shape.empty()) {
            EXPECT_EQ(count[n.index()], 0) << "node " << n.index() << " in\n" << ir::dump(plan.program);
        }
}

// A repeated expression (the same op of the same operands, constants equal) is one value of
// the block program, also within one stage; results are those of the text as written.
TEST(CpuPasses, ARepeatedExpressionIsComputedOnce) {
    const std::int64_t n = 3 * kBlock + 5;
    const std::map<std::string, jit::dsl::Binding> env = {{"a", column(DType::Float64, n)},
                                                          {"b", column(DType::Float64, n)}};
    const ir::Plan plan = jit::dsl::plan("y = abs(a * b) + abs(a * b) * 2; z = (a * b > 1) & (a * b > 1)",
                                         jit::dsl::bindings_of(env), jit::dsl::Limits{});
    EXPECT_EQ(computed(plan, ir::Op::Mul), 2) << "a * b, and the * 2";
    EXPECT_EQ(computed(plan, ir::Op::Abs), 1);
    EXPECT_EQ(computed(plan, ir::Op::Gt), 1);
    std::vector<double> av(static_cast<std::size_t>(n)), bv(av.size());
    for (std::int64_t i = 0; i < n; ++i) {
        av[static_cast<std::size_t>(i)] = 0.01 * double(i % 301) - 1.0;
        bv[static_cast<std::size_t>(i)] = 0.5 + 0.003 * double(i % 89);
    }
    std::vector<Array> out{Array::zeros(DType::Float64, {n}, Backend::Cpu),
                           Array::zeros(DType::Bool, {n}, Backend::Cpu)};
    auto prepared = backend4()->prepare(plan, {});
    const std::vector<Array> in{host(av, {n}), host(bv, {n})};
    jit::detail::RunArgs args;
    args.inputs = in;
    args.outputs = out;
    prepared->run(args);
    const auto y = out[0].to_vector<double>();
    const auto z = bools(out[1]);
    for (std::size_t i = 0; i < av.size(); ++i) {
        const double s = std::fabs(av[i] * bv[i]);
        ASSERT_EQ(y[i], s + s * 2) << i;
        ASSERT_EQ(z[i] != 0, av[i] * bv[i] > 1) << i;
    }
}

// where with a constant value operand and a sum of a comparison, over several blocks on four
// threads: the values where(c, x, 0), where(c, 0, x) and the count of c, as written.
TEST(CpuPasses, WhereOfAConstantAndACountOfBooleansGiveTheirValues) {
    const std::int64_t n = 7 * kBlock + 3;
    const std::map<std::string, jit::dsl::Binding> env = {{"a", column(DType::Float64, n)}};
    const ir::Plan plan = jit::dsl::plan("p = where(a > 0, a, 0); q = where(a > 0, -1.5, a); k = sum(a > 0)",
                                         jit::dsl::bindings_of(env), jit::dsl::Limits{});
    std::vector<double> av(static_cast<std::size_t>(n));
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        av[static_cast<std::size_t>(i)] = double((i * 37) % 101) - 50.0;
        count += av[static_cast<std::size_t>(i)] > 0;
    }
    std::vector<Array> out{Array::zeros(DType::Float64, {n}, Backend::Cpu),
                           Array::zeros(DType::Float64, {n}, Backend::Cpu),
                           Array::zeros(DType::Int64, {}, Backend::Cpu)};
    auto prepared = backend4()->prepare(plan, {});
    const std::vector<Array> in{host(av, {n})};
    jit::detail::RunArgs args;
    args.inputs = in;
    args.outputs = out;
    prepared->run(args);
    const auto p = out[0].to_vector<double>(), q = out[1].to_vector<double>();
    for (std::size_t i = 0; i < av.size(); ++i) {
        ASSERT_EQ(p[i], av[i] > 0 ? av[i] : 0.0) << i;
        ASSERT_EQ(q[i], av[i] > 0 ? -1.5 : av[i]) << i;
    }
    EXPECT_EQ(out[2].to_vector<std::int64_t>(), std::vector<std::int64_t>{count});
}

}  // namespace pass_tests

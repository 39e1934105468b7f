// Every kind of kernel the generator emits compiles to CUBIN for sm_90 with NVRTC. Needs the
// CUDA toolkit's NVRTC library, not a GPU or a driver.
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"
#include "tests/codegen/programs.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace jit;
using jxtest::Builder;
namespace cg = jit::codegen;

void expect_compiles(const Builder& b, bool force_strided = false, bool scalar_only = false,
                     std::vector<std::string> extra = {}) {
    cg::EmitOptions o;
    o.force_strided = force_strided;
    o.scalar_only = scalar_only;
    auto e = cg::emit(b.p, b.schedule(), o);
    ASSERT_FALSE(e.kernels.empty());
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    co.extra = std::move(extra);
    for (const auto& k : e.kernels) {
        try {
            cuda::Image img = cuda::compile(k.source, k.name, co);
            EXPECT_TRUE(img.is_cubin);
            EXPECT_FALSE(img.data.empty());
        } catch (const CompileError& err) {
            ADD_FAILURE() << "NVRTC rejected stage " << k.stage << ":\n" << err.log() << "\n" << k.body;
        }
    }
}

class AxpbCompiles : public ::testing::TestWithParam<DType> {};

TEST_P(AxpbCompiles, FlatKernelCompilesToCubin) { expect_compiles(jxtest::axpb(GetParam())); }
TEST_P(AxpbCompiles, StridedKernelCompilesToCubin) { expect_compiles(jxtest::axpb(GetParam()), true); }

TEST_P(AxpbCompiles, RowBroadcastKernelCompilesToCubin) { expect_compiles(jxtest::broadcast_add(GetParam())); }
TEST_P(AxpbCompiles, TiledKernelCompilesToCubin) { expect_compiles(jxtest::transposed_scale(GetParam())); }
// The first tier of a tiered compile: the same kinds without vector paths.
TEST_P(AxpbCompiles, ScalarOnlyKernelsCompileToCubin) {
    expect_compiles(jxtest::axpb(GetParam()), false, true);
    expect_compiles(jxtest::axpb(GetParam()), true, true);
    expect_compiles(jxtest::broadcast_add(GetParam()), false, true);
    expect_compiles(jxtest::transposed_scale(GetParam()), false, true);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AxpbCompiles,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Float16,
                                           DType::BFloat16),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

TEST(NvrtcCompiles, WhereWithSine) { expect_compiles(jxtest::where_sin()); }

TEST(ScalarOnly, FlatStridedTiledAndFullReductionKernelsHaveNoVectorPath) {
    cg::EmitOptions o;
    o.scalar_only = true;
    for (const Builder& b : {jxtest::axpb(DType::Float32), jxtest::broadcast_add(DType::Float32),
                             jxtest::transposed_scale(DType::Float32), jxtest::where_sin(), jxtest::sum_scaled()}) {
        for (const auto& k : cg::emit(b.p, b.schedule(), o).kernels) {
            EXPECT_EQ(k.launch.vec, 1) << k.body;
            EXPECT_EQ(k.body.find("jx_vec<"), std::string::npos) << k.body;
            for (const auto& p : k.params) EXPECT_NE(p.kind, cg::Param::Kind::VectorFlag);
        }
        // Without the option the same programs have vector paths (else the test proves nothing).
        bool any = false;
        for (const auto& k : cg::emit(b.p, b.schedule(), {}).kernels) any = any || k.launch.vec > 1;
        EXPECT_TRUE(any);
    }
}
TEST(NvrtcCompiles, BroadcastRow) { expect_compiles(jxtest::broadcast_add()); }
TEST(NvrtcCompiles, TransposedInput) { expect_compiles(jxtest::transposed_scale()); }
TEST(NvrtcCompiles, ColumnPlusRowBroadcast) {
    Builder b;
    auto col = b.input(DType::Float16, {40, 1});
    auto row = b.input(DType::Float32, {1, 48});
    auto c = b.cast(col, DType::Float32);
    b.output(b.op(ir::Op::Add, DType::Float32, {c, row}));
    expect_compiles(b);
}

TEST(NvrtcCompiles, TwoTransposedInputsOfThreeDimensions) {
    Builder b;
    auto x = b.input(DType::Float64, {3, 20, 30}, {600, 1, 20});
    auto y = b.input(DType::Float64, {3, 20, 30}, {600, 1, 20});
    auto z = b.input(DType::Float64, {3, 20, 30});
    b.output(b.op(ir::Op::Add, DType::Float64, {b.op(ir::Op::Mul, DType::Float64, {x, y}), z}));
    expect_compiles(b);
}

TEST(NvrtcCompiles, TransposedComplexInput) { expect_compiles(jxtest::transposed_scale(DType::Complex128)); }
TEST(NvrtcCompiles, FullSumWithScalar) { expect_compiles(jxtest::sum_scaled()); }
// The experiment of two steps a turn (emit_reduce.cpp), taken with -DJX_REDUCE_TWO_STEPS.
TEST(NvrtcCompiles, FullSumTwoStepsATurn) {
    const Builder b = jxtest::sum_scaled();
    ASSERT_NE(cg::emit(b.p, b.schedule(), {}).kernels.at(0).source.find("JX_REDUCE_TWO_STEPS"), std::string::npos);
    expect_compiles(b, false, false, {"-DJX_REDUCE_TWO_STEPS"});
    Builder dot;  // sum(a*b) in float64: two arrays, two vectors each a turn
    auto x = dot.input(DType::Float64, {4096});
    auto y = dot.input(DType::Float64, {4096});
    dot.output(dot.reduce(ir::Op::Sum, dot.op(ir::Op::Mul, DType::Float64, {x, y}), DType::Float64));
    expect_compiles(dot, false, false, {"-DJX_REDUCE_TWO_STEPS"});
}
TEST(NvrtcCompiles, FullSumStridedReads) { expect_compiles(jxtest::sum_scaled(), true); }
TEST(NvrtcCompiles, HalfSum) { expect_compiles(jxtest::sum_scaled(DType::Float16)); }
TEST(NvrtcCompiles, SumLastAxis) { expect_compiles(jxtest::reduce_axis(ir::Op::Sum, 1)); }
TEST(NvrtcCompiles, MaxFirstAxis) { expect_compiles(jxtest::reduce_axis(ir::Op::ReduceMax, 0)); }
TEST(NvrtcCompiles, MeanReadBack) { expect_compiles(jxtest::centered()); }

TEST(NvrtcCompiles, AnyOverBoolComparison) {
    Builder b;
    auto a = b.input(DType::Int8, {10, 20});
    auto z = b.iconst(0, DType::Int8);
    auto lt = b.op(ir::Op::Lt, DType::Bool, {a, z});
    b.output(b.reduce(ir::Op::Any, lt, DType::Bool, 1));
    b.output(b.reduce(ir::Op::All, lt, DType::Bool));
    expect_compiles(b);
}

TEST(NvrtcCompiles, ComplexProductAndCastToHalf) {
    Builder b;
    auto a = b.input(DType::Complex128, {50});
    auto p = b.reduce(ir::Op::Prod, a, DType::Complex128);
    b.output(p);
    auto d = b.input(DType::Float64, {50});
    b.output(b.cast(d, DType::Float16));
    expect_compiles(b);
}

TEST(NvrtcCompiles, NonFiniteConstants) {
    Builder b;
    auto a = b.input(DType::Float32, {10});
    auto inf = b.fconst(std::numeric_limits<double>::infinity(), DType::Float32);
    auto nan = b.fconst(std::numeric_limits<double>::quiet_NaN(), DType::Float64);
    auto m = b.op(ir::Op::Minimum, DType::Float32, {a, inf});
    b.output(m);
    auto d = b.cast(a, DType::Float64);
    b.output(b.op(ir::Op::Add, DType::Float64, {d, nan}));
    expect_compiles(b);
}

}  // namespace

#include "backend/cuda/executor.hpp"

namespace {

TEST(ModuleCacheKey, DiskKeyChangesWithEverythingThatChangesTheBinary) {
    auto b = jxtest::axpb(jit::DType::Float32);
    auto k = jit::codegen::emit(b.p, b.schedule()).kernels.at(0);
    jit::cuda::CompileOptions base;
    const std::string key = jit::cuda::ModuleCache::disk_key(k, base);
    auto other_arch = base;
    other_arch.cc_major = 8;
    auto fast = base;
    fast.fast_math = true;
    EXPECT_NE(jit::cuda::ModuleCache::disk_key(k, other_arch), key);
    EXPECT_NE(jit::cuda::ModuleCache::disk_key(k, fast), key);
    auto extra = base;
    extra.extra = {"--Ofast-compile=max"};
    EXPECT_NE(jit::cuda::ModuleCache::disk_key(k, extra), key);
    auto k64 = jit::codegen::emit(jxtest::axpb(jit::DType::Float64).p, jxtest::axpb(jit::DType::Float64).schedule())
                   .kernels.at(0);
    EXPECT_NE(jit::cuda::ModuleCache::disk_key(k64, base), key);
    EXPECT_EQ(jit::cuda::ModuleCache::disk_key(k, base), key);
}

}  // namespace

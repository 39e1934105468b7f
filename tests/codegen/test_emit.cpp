// Code generator tests that need no GPU and no compiler: golden kernels, layout classes,
// exact constants, and that user names stay out of the generated text.
#include "codegen/codegen.hpp"
#include "tests/codegen/programs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

namespace {

using namespace jit;
using jxtest::Builder;
namespace cg = jit::codegen;

cg::Emitted emit_of(const Builder& b, cg::EmitOptions o = {}) { return cg::emit(b.p, b.schedule(), o); }

std::string bodies(const cg::Emitted& e) {
    std::string s;
    for (const auto& k : e.kernels) s += "// ==== stage " + std::to_string(k.stage) + "\n" + k.body;
    return s;
}

// Compares with tests/codegen/golden/<name>.cu; JITEXPR_UPDATE_GOLDEN=1 rewrites the file.
void expect_golden(const std::string& name, const std::string& actual) {
    const std::string path = std::string(JITEXPR_TEST_DATA) + "/golden/" + name + ".cu";
    const char* update = std::getenv("JITEXPR_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing golden file " << path << " (run with JITEXPR_UPDATE_GOLDEN=1)";
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), actual) << "generated kernel differs from " << path
                                << " (if intended, rerun with JITEXPR_UPDATE_GOLDEN=1)";
}

TEST(CodegenGolden, AxpbFloat32) { expect_golden("axpb_float32", bodies(emit_of(jxtest::axpb(DType::Float32)))); }
// Past 2^30 elements a Flat kernel keeps 64-bit indices and its grid-stride loops.
TEST(CodegenGolden, AxpbFloat32Index64) {
    expect_golden("axpb_float32_index64", bodies(emit_of(jxtest::axpb(DType::Float32, std::int64_t{1} << 31))));
}
TEST(CodegenGolden, AxpbFloat16) { expect_golden("axpb_float16", bodies(emit_of(jxtest::axpb(DType::Float16)))); }
TEST(CodegenGolden, WhereSinFloat64) { expect_golden("where_sin_float64", bodies(emit_of(jxtest::where_sin()))); }
TEST(CodegenGolden, BroadcastRow) { expect_golden("broadcast_row", bodies(emit_of(jxtest::broadcast_add()))); }
TEST(CodegenGolden, TransposedInput) { expect_golden("transposed", bodies(emit_of(jxtest::transposed_scale()))); }
TEST(CodegenGolden, SumWithScalar) { expect_golden("sum_scaled", bodies(emit_of(jxtest::sum_scaled()))); }
TEST(CodegenGolden, SumLastAxis) { expect_golden("sum_axis1", bodies(emit_of(jxtest::reduce_axis(ir::Op::Sum, 1)))); }
TEST(CodegenGolden, MaxFirstAxis) {
    expect_golden("max_axis0", bodies(emit_of(jxtest::reduce_axis(ir::Op::ReduceMax, 0))));
}
TEST(CodegenGolden, MeanReadBackThroughTemporary) { expect_golden("centered", bodies(emit_of(jxtest::centered()))); }

std::vector<Builder> all_programs() {
    std::vector<Builder> v;
    for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16})
        v.push_back(jxtest::axpb(t));
    v.push_back(jxtest::where_sin());
    v.push_back(jxtest::broadcast_add());
    v.push_back(jxtest::transposed_scale());
    v.push_back(jxtest::sum_scaled());
    v.push_back(jxtest::reduce_axis(ir::Op::Sum, 1));
    v.push_back(jxtest::reduce_axis(ir::Op::ReduceMax, 0));
    v.push_back(jxtest::centered());
    return v;
}

TEST(CodegenNames, UserNamesNeverAppearInSource) {
    for (const auto& b : all_programs()) {
        for (bool strided : {false, true}) {
            cg::EmitOptions o;
            o.force_strided = strided;
            for (const auto& k : emit_of(b, o).kernels) {
                for (const auto& in : b.p.inputs) EXPECT_EQ(k.source.find(in.name), std::string::npos) << in.name;
                for (const auto& s : b.p.scalars) EXPECT_EQ(k.source.find(s.name), std::string::npos) << s.name;
                for (const auto& out : b.p.outputs) EXPECT_EQ(k.source.find(out.name), std::string::npos) << out.name;
                EXPECT_EQ(k.source.find("secret"), std::string::npos);
            }
        }
    }
}

TEST(CodegenLayout, ContiguousFloat32IsFlatWithFourWideVectors) {
    auto e = emit_of(jxtest::axpb(DType::Float32));
    ASSERT_EQ(e.kernels.size(), 1u);
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Flat);
    EXPECT_EQ(e.kernels[0].launch.vec, 4);
    EXPECT_EQ(e.kernels[0].entries.size(), 1u);
    EXPECT_EQ(e.kernels[0].params.back().kind, cg::Param::Kind::VectorFlag);
}

TEST(CodegenLayout, VectorWidthIsSixteenBytesOfTheWidestType) {
    EXPECT_EQ(emit_of(jxtest::axpb(DType::Float64)).kernels[0].launch.vec, 2);
    EXPECT_EQ(emit_of(jxtest::axpb(DType::Float16)).kernels[0].launch.vec, 8);
    EXPECT_EQ(emit_of(jxtest::axpb(DType::Int64)).kernels[0].launch.vec, 2);
}

TEST(CodegenLayout, ZeroDimOperandIsReadOnceInFlatKernel) {
    Builder b;
    auto a = b.input(DType::Float32, {100});
    auto z = b.input(DType::Float32, {});
    b.output(b.op(ir::Op::Add, DType::Float32, {a, z}));
    auto e = emit_of(b);
    ASSERT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Flat);
    EXPECT_TRUE(e.kernels[0].params[1].broadcast);
    EXPECT_FALSE(e.kernels[0].params[1].vectorized);
    EXPECT_TRUE(e.kernels[0].params[0].vectorized);
}

TEST(CodegenLayout, RowBroadcastIsStrided) {
    auto e = emit_of(jxtest::broadcast_add());
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Strided);
    EXPECT_EQ(e.kernels[0].launch.ndim, 2);
    EXPECT_EQ(e.kernels[0].launch.layout_rows, 3);
}

TEST(CodegenLayout, RowBroadcastVectorisesTheContiguousArrays) {
    auto e = emit_of(jxtest::broadcast_add());
    const auto& k = e.kernels[0];
    EXPECT_EQ(k.launch.vec, 4);
    ASSERT_EQ(k.entries.size(), 2u);
    EXPECT_EQ(k.params.back().kind, cg::Param::Kind::VectorFlag);
    for (const auto& p : k.params)
        if (p.kind == cg::Param::Kind::Array && p.written) {
            EXPECT_TRUE(p.unit_inner);
        }
}

TEST(CodegenLayout, TransposedInputIsTiled) {
    auto e = emit_of(jxtest::transposed_scale());
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Tiled);
    EXPECT_EQ(e.kernels[0].launch.block, 256);
    EXPECT_EQ(e.kernels[0].entries.size(), 2u);
}

TEST(CodegenLayout, ForceStridedNeverTilesNorAssumesOutputStrides) {
    cg::EmitOptions o;
    o.force_strided = true;
    auto e = emit_of(jxtest::transposed_scale(), o);
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Strided);
    EXPECT_EQ(e.kernels[0].launch.vec, 1);
    for (const auto& p : e.kernels[0].params) EXPECT_FALSE(p.unit_inner);
}

TEST(CodegenLayout, ForceStridedTurnsFlatIntoStrided) {
    cg::EmitOptions o;
    o.force_strided = true;
    EXPECT_EQ(emit_of(jxtest::axpb(DType::Float32), o).kernels[0].launch.kind, cg::KernelKind::Strided);
}

TEST(CodegenLayout, SizeIsNotPartOfTheKernel) {
    EXPECT_EQ(emit_of(jxtest::axpb(DType::Float32, 1000)).key, emit_of(jxtest::axpb(DType::Float32, 77777)).key);
    EXPECT_EQ(emit_of(jxtest::broadcast_add(DType::Float32, 3, 4)).key,
              emit_of(jxtest::broadcast_add(DType::Float32, 300, 41)).key);
}

TEST(CodegenLayout, FlatIndicesAre32BitWhileTwiceTheCountPlusABlockFits) {
    const std::int64_t limit =
        (std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1) / 2 - 256;  // 2 * (n + 256) <= 2^31 - 1
    const auto small = emit_of(jxtest::axpb(DType::Float32, limit - 1));
    const auto large = emit_of(jxtest::axpb(DType::Float32, limit));
    EXPECT_NE(small.kernels[0].body.find("using I = int;"), std::string::npos);
    EXPECT_NE(large.kernels[0].body.find("using I = long long;"), std::string::npos);
    EXPECT_NE(small.key, large.key);
}

TEST(CodegenLayout, DifferentDtypeGivesDifferentKey) {
    EXPECT_NE(emit_of(jxtest::axpb(DType::Float32)).key, emit_of(jxtest::axpb(DType::Float64)).key);
}

TEST(CodegenLayout, AliasedOutputIsNotRestrict) {
    Builder b;
    auto a = b.input(DType::Float32, {64});
    auto one = b.fconst(1.0, DType::Float32);
    b.output(b.op(ir::Op::Add, DType::Float32, {a, one}), "", 0);
    auto e = emit_of(b);
    EXPECT_EQ(e.kernels[0].body.find("__restrict__"), std::string::npos);
}

TEST(CodegenParams, ArraysThenScalarsThenCountThenVectorFlag) {
    Builder b;
    auto a = b.input(DType::Float32, {10});
    auto x = b.scalar(DType::Float32);
    b.output(b.op(ir::Op::Mul, DType::Float32, {a, x}));
    auto k = emit_of(b).kernels[0];
    ASSERT_EQ(k.params.size(), 5u);
    EXPECT_EQ(k.params[0].kind, cg::Param::Kind::Array);
    EXPECT_FALSE(k.params[0].written);
    EXPECT_EQ(k.params[1].kind, cg::Param::Kind::Array);
    EXPECT_TRUE(k.params[1].written);
    EXPECT_EQ(k.params[2].kind, cg::Param::Kind::Scalar);
    EXPECT_EQ(k.params[2].scalar, 0);
    EXPECT_EQ(k.params[3].kind, cg::Param::Kind::Count);
    EXPECT_EQ(k.params[4].kind, cg::Param::Kind::VectorFlag);
}

TEST(CodegenReduce, FullReductionHasWorkspaceAndLastBlockCombine) {
    auto k = emit_of(jxtest::sum_scaled()).kernels[0];
    EXPECT_EQ(k.launch.kind, cg::KernelKind::ReduceAll);
    EXPECT_EQ(k.params.back().kind, cg::Param::Kind::Workspace);
    EXPECT_GT(k.launch.workspace_bytes(), static_cast<std::size_t>(k.launch.max_blocks) * 4);
    EXPECT_NE(k.body.find("atomicAdd"), std::string::npos);
}

TEST(CodegenReduce, FullReductionReadsContiguousArraysAVectorAtATime) {
    auto k = emit_of(jxtest::sum_scaled()).kernels[0];
    EXPECT_EQ(k.launch.vec, 4);
    EXPECT_NE(k.body.find("jx_vec<float, 4>"), std::string::npos) << k.body;
    int flags = 0;
    for (const auto& p : k.params) {
        flags += p.kind == cg::Param::Kind::VectorFlag;
        if (p.kind == cg::Param::Kind::Array) {
            EXPECT_EQ(p.vectorized, !p.written);  // the output is one element
        }
    }
    EXPECT_EQ(flags, 1);
    EXPECT_EQ(k.params.back().kind, cg::Param::Kind::Workspace);
}

TEST(CodegenReduce, MeanDividesByTheCountInTheNodeDtype) {
    auto e = emit_of(jxtest::centered());
    ASSERT_EQ(e.kernels.size(), 2u);
    EXPECT_NE(e.kernels[0].body.find("jx::op::Div(total, jx::cast<double>(n))"), std::string::npos);
}

TEST(CodegenReduce, LaterStageReadsTheReductionBuffer) {
    auto e = emit_of(jxtest::centered());
    const auto& k = e.kernels[1];
    bool reads_node = false;
    for (const auto& p : k.params)
        if (p.kind == cg::Param::Kind::Array && !p.written && p.array.kind == cg::ArrayRef::Kind::Node)
            reads_node = true;
    EXPECT_TRUE(reads_node);
}

TEST(CodegenReduce, LastAxisUsesAWarpPerOutput) {
    EXPECT_TRUE(emit_of(jxtest::reduce_axis(ir::Op::Sum, 1)).kernels[0].launch.warp_per_output);
    EXPECT_FALSE(emit_of(jxtest::reduce_axis(ir::Op::Sum, 0)).kernels[0].launch.warp_per_output);
}

TEST(CodegenLiteral, Float64RoundTripsExactly) {
    ir::Value v = ir::Value::of_float(0.1);
    EXPECT_EQ(cg::cuda_literal(v, DType::Float64), "0x1.999999999999ap-4");
}

TEST(CodegenLiteral, Float32HasSuffix) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_float(1.5, DType::Float32), DType::Float32), "0x1.8p+0f");
}

TEST(CodegenLiteral, NegativeIsParenthesised) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_float(-2.0), DType::Float64), "(-0x1p+1)");
}

TEST(CodegenLiteral, InfinityIsABitPattern) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_float(std::numeric_limits<double>::infinity()), DType::Float32),
              "__int_as_float(0x7f800000)");
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_float(-std::numeric_limits<double>::infinity()), DType::Float64),
              "__longlong_as_double((long long)0xfff0000000000000ULL)");
}

TEST(CodegenLiteral, Int64MinimumIsValidCpp) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_int(std::numeric_limits<std::int64_t>::min()), DType::Int64),
              "jx::i64(-9223372036854775807LL - 1LL)");
}

TEST(CodegenLiteral, UnsignedKeepsAllBits) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_uint(18446744073709551615ULL), DType::UInt64),
              "jx::u64(18446744073709551615ULL)");
}

TEST(CodegenLiteral, ComplexHasBothParts) {
    EXPECT_EQ(cg::cuda_literal(ir::Value::of_complex({1.0, -0.5}, DType::Complex64), DType::Complex64),
              "jx::c64{0x1p+0f, (-0x1p-1f)}");
}

TEST(CodegenErrors, BadBlockSizeIsInternalError) {
    cg::EmitOptions o;
    o.block = 100;
    EXPECT_THROW(emit_of(jxtest::axpb(DType::Float32), o), InternalError);
}

TEST(CodegenErrors, MismatchedScheduleIsInternalError) {
    auto b = jxtest::axpb(DType::Float32);
    ir::Schedule s;
    EXPECT_THROW(cg::emit(b.p, s), InternalError);
}

}  // namespace

// cpu::combine (backend/cpu/combine.hpp): partial results of a reduction over separate parts
// folded through the CPU kernel table, as streaming and sharding combine them.
#include "backend/cpu/combine.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using jit::DType;
using jit::cpu::combine;
using jit::ir::Op;

TEST(CpuCombine, SumsFoldInPartOrder) {
    const std::vector<double> v{1e16, 1.0, -1e16, 1.0};
    double out = 0;
    combine(Op::Sum, DType::Float64, v.data(), v.size(), 1, nullptr, &out);
    EXPECT_EQ(out, ((1e16 + 1.0) + -1e16) + 1.0);
}

TEST(CpuCombine, Float32PartialsFoldInFloat64AndRoundOnce) {
    // 2^24 + 1 + 1: float32 additions would drop each 1; one rounding at the end keeps both.
    const std::vector<float> v{16777216.f, 1.f, 1.f};
    float out = 0;
    combine(Op::Sum, DType::Float32, v.data(), v.size(), 1, nullptr, &out);
    EXPECT_EQ(out, 16777218.f);
}

TEST(CpuCombine, IntegerSumsWrapLikeTheKernels) {
    const std::vector<std::int32_t> v{std::numeric_limits<std::int32_t>::max(), 1};
    std::int32_t out = 0;
    combine(Op::Sum, DType::Int32, v.data(), v.size(), 1, nullptr, &out);
    EXPECT_EQ(out, std::numeric_limits<std::int32_t>::min());
}

TEST(CpuCombine, ProductsOfUnsignedWrap) {
    const std::vector<std::uint8_t> v{16, 16, 3};
    std::uint8_t out = 0;
    combine(Op::Prod, DType::UInt8, v.data(), v.size(), 1, nullptr, &out);
    EXPECT_EQ(out, static_cast<std::uint8_t>(16 * 16 * 3));
}

TEST(CpuCombine, MinAndMaxPropagateNaN) {
    const std::vector<float> v{3.f, std::nanf(""), 1.f};
    float out = 0;
    combine(Op::ReduceMin, DType::Float32, v.data(), v.size(), 1, nullptr, &out);
    EXPECT_TRUE(std::isnan(out));
    const std::vector<float> w{3.f, -2.f, 7.f};
    combine(Op::ReduceMax, DType::Float32, w.data(), w.size(), 1, nullptr, &out);
    EXPECT_EQ(out, 7.f);
    combine(Op::ReduceMin, DType::Float32, w.data(), w.size(), 1, nullptr, &out);
    EXPECT_EQ(out, -2.f);
}

TEST(CpuCombine, MeanWeighsEachPartByItsElements) {
    const std::vector<double> means{1.0, 4.0};
    const std::vector<std::int64_t> elems{3, 1};
    double out = 0;
    combine(Op::Mean, DType::Float64, means.data(), means.size(), 1, elems.data(), &out);
    EXPECT_DOUBLE_EQ(out, (1.0 * 3 + 4.0 * 1) / 4);
}

TEST(CpuCombine, AnyAllAndMinOfBools) {
    const unsigned char v[] = {0, 1, 0};
    unsigned char out = 9;
    combine(Op::Any, DType::Bool, v, 3, 1, nullptr, &out);
    EXPECT_EQ(out, 1);
    combine(Op::All, DType::Bool, v, 3, 1, nullptr, &out);
    EXPECT_EQ(out, 0);
    combine(Op::ReduceMin, DType::Bool, v, 3, 1, nullptr, &out);
    EXPECT_EQ(out, 0);
}

TEST(CpuCombine, PartialsOfSeveralValuesFoldElementByElement) {
    // Two parts, each a partial of three values (a sum along the split axis of a (rows, 3) array).
    const std::vector<std::int64_t> v{1, 2, 3, 10, 20, 30};
    std::vector<std::int64_t> out(3);
    combine(Op::Sum, DType::Int64, v.data(), 2, 3, nullptr, out.data());
    EXPECT_EQ(out, (std::vector<std::int64_t>{11, 22, 33}));
}

TEST(CpuCombine, ComplexMeansFoldInComplex128) {
    const std::vector<float> v{1.f, 2.f, 3.f, 4.f};  // complex64: 1+2i, 3+4i
    const std::vector<std::int64_t> elems{1, 1};
    std::vector<float> out(2);
    combine(Op::Mean, DType::Complex64, v.data(), 2, 1, elems.data(), out.data());
    EXPECT_EQ(out, (std::vector<float>{2.f, 3.f}));
}

TEST(CpuCombine, ReductionsThatDoNotFoldAreRefused) {
    EXPECT_FALSE(jit::cpu::can_combine(Op::ArgFirst, DType::Bool));      // positions are of its part
    EXPECT_FALSE(jit::cpu::can_combine(Op::OrderStat, DType::Float64));  // a selection, not a fold
    EXPECT_FALSE(jit::cpu::can_combine(Op::Var, DType::Float64));        // lowered before any backend
    EXPECT_FALSE(jit::cpu::can_combine(Op::Add, DType::Float64));        // not a reduction
    EXPECT_TRUE(jit::cpu::can_combine(Op::Sum, DType::Float16));
    double out = 0;
    const double v = 1;
    EXPECT_THROW(combine(Op::ArgFirst, DType::Bool, &v, 1, 1, nullptr, &out), jit::InternalError);
    EXPECT_THROW(combine(Op::Sum, DType::Float64, &v, 0, 1, nullptr, &out), jit::InternalError);
}

}  // namespace

// Copies between layouts without a compiler: Array::contiguous(), Array::to() and in-place
// copy-back go through the device of the array's backend (core/device.hpp), host memory here.
#include <jit/jit.hpp>

#include "core/device.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

// An array of `dtype` whose bytes count up (each element distinct).
Array counting(DType dtype, Shape shape) {
    Array a = Array::empty(dtype, std::move(shape), Backend::Cpu);
    auto* p = static_cast<unsigned char*>(a.data());
    for (std::size_t i = 0; i < a.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 7 + 1);
    return a;
}

// The element at C-order index `flat` of a view, read through its strides.
const unsigned char* element(const Array& v, std::int64_t flat) {
    std::int64_t off = 0;
    for (int k = v.ndim() - 1; k >= 0; --k) {
        const std::int64_t e = v.shape()[static_cast<std::size_t>(k)];
        off += (flat % e) * v.strides()[static_cast<std::size_t>(k)];
        flat /= e;
    }
    return static_cast<const unsigned char*>(v.data()) + off * static_cast<std::int64_t>(itemsize(v.dtype()));
}

void expect_same_elements(const Array& contiguous, const Array& view) {
    ASSERT_TRUE(contiguous.is_contiguous());
    ASSERT_EQ(contiguous.shape(), view.shape());
    const std::size_t item = itemsize(view.dtype());
    const auto* c = static_cast<const unsigned char*>(contiguous.data());
    for (std::int64_t i = 0; i < view.size(); ++i)
        ASSERT_EQ(std::memcmp(c + i * static_cast<std::int64_t>(item), element(view, i), item), 0) << "element " << i;
}

const DType kEverySize[] = {DType::Bool, DType::Int16, DType::Float32, DType::Float64, DType::Complex128};

TEST(DeviceCopies, CudaMemoryIsRegisteredBeforeMain) { EXPECT_NO_THROW(core::device(Backend::Cuda)); }

TEST(DeviceCopies, ContiguousCopiesTransposedSteppedReversedAndBroadcastViews) {
    for (DType t : kEverySize) {
        const Array a = counting(t, {6, 5, 4});
        const Array views[] = {a.transpose(), a.slice(1, 0, 5, 2), a.slice(0, 5, -7, -1), a.slice(2, 1, 3),
                               counting(t, {5, 1}).broadcast_to({3, 5, 4})};
        for (const Array& v : views) {
            ASSERT_FALSE(v.is_contiguous()) << v.describe();
            expect_same_elements(v.contiguous(), v);
            expect_same_elements(v.to(Backend::Cpu), v);
        }
    }
}

TEST(DeviceCopies, CopyToHostOfAViewIsInCOrder) {
    const Array a = Array::from(std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}, {2, 3}, Backend::Cpu);
    std::vector<std::int32_t> out(6);
    a.transpose().copy_to_host(out.data());
    EXPECT_EQ(out, (std::vector<std::int32_t>{0, 3, 1, 4, 2, 5}));
}

TEST(DeviceCopies, LayoutMergesAxesBothArraysWalkContiguously) {
    const Array a = counting(DType::Float32, {4, 1, 6, 5});
    const Array c = Array::empty(DType::Float32, {4, 1, 6, 5}, Backend::Cpu);
    const core::CopyLayout same = core::copy_layout(c, a);
    EXPECT_TRUE(same.dense());
    EXPECT_EQ(same.size(), 120);

    const Array t = a.reshape({24, 5}).transpose();  // (5, 24), strides (1, 5)
    const core::CopyLayout tl = core::copy_layout(Array::empty(DType::Float32, {5, 24}, Backend::Cpu), t);
    EXPECT_FALSE(tl.dense());
    EXPECT_EQ(tl.ndim, 2);
    EXPECT_EQ(tl.src_stride[0], 1);
    EXPECT_EQ(tl.src_stride[1], 5);

    const Array rows = a.slice(0, 0, 4, 2);  // every other block of 30: two runs of 30
    const core::CopyLayout rl = core::copy_layout(Array::empty(DType::Float32, rows.shape(), Backend::Cpu), rows);
    EXPECT_EQ(rl.ndim, 2);
    EXPECT_EQ(rl.shape[0], 2);
    EXPECT_EQ(rl.shape[1], 30);
}

TEST(DeviceCopies, CopyRejectsArraysOfAnotherDtypeOrShape) {
    const Array a = counting(DType::Float32, {3});
    EXPECT_THROW(core::copy(Array::empty(DType::Float64, {3}, Backend::Cpu), a), ArgumentError);
    EXPECT_THROW(core::copy(Array::empty(DType::Float32, {4}, Backend::Cpu), a), ArgumentError);
}

TEST(DeviceCopies, InPlaceResultIsCopiedBackThroughTheTargetsStrides) {
    // `a` is a transposed view; the stage writing it also stores `b`, so the result goes to a
    // fresh array and is copied back into a's memory through its strides.
    const Array base = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    const Array a = base.transpose();
    Environment env{{"a", Arg(a)}};
    cpu().run("b = a + 0; a = a * 10", env);
    EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{10, 20, 30, 40, 50, 60}));
    EXPECT_EQ(env.at("a").array().data(), a.data());
    EXPECT_EQ(env.at("b").array().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

}  // namespace

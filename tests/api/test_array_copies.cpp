// Copying an array allocates nothing: an eval copies its arguments several times on its way to
// the launch (into the bindings, into the backend's argument block), so each copy that went to
// the heap for its shape and strides cost host time on every call. Global operator new is
// replaced in this executable to count (tests/support/allocation_counter.cpp).
#include <jit/jit.hpp>

#include "tests/support/allocation_counter.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace jit;

TEST(ArrayCopies, CopyingAndAssigningAnArrayAllocatesNothing) {
    const Array a = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    Array c;
    jit::test::start_counting_allocations();
    Array b = a;
    c = b;
    Array d = std::move(b);
    EXPECT_EQ(jit::test::stop_counting_allocations(), 0u);
    EXPECT_EQ(c.shape(), (Shape{2, 3}));
    EXPECT_EQ(d.strides(), (Strides{3, 1}));
}

TEST(ArrayCopies, AViewHasItsOwnShapeAndLeavesTheOriginalAlone) {
    const Array a = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    const Array t = a.transpose();
    const Array s = a.slice(1, 0, 3, 2);
    EXPECT_EQ(a.shape(), (Shape{2, 3}));
    EXPECT_EQ(a.strides(), (Strides{3, 1}));
    EXPECT_EQ(t.shape(), (Shape{3, 2}));
    EXPECT_EQ(s.shape(), (Shape{2, 2}));
    EXPECT_EQ(s.strides(), (Strides{3, 2}));
}

TEST(ArrayCopies, WithDataRepointsALayoutAllocatingOnlyTheStorage) {
    std::vector<float> first{1, 2, 3, 4, 5, 6}, second{10, 20, 30, 40, 50, 60};
    const Array v = Array::view(first.data(), DType::Float32, {3}, {2}, Backend::Cpu);  // every other element
    jit::test::start_counting_allocations();
    const Array w = v.with_data(second.data());
    EXPECT_EQ(jit::test::stop_counting_allocations(), 1u);  // the storage; the dimensions are v's
    EXPECT_EQ(&w.shape(), &v.shape());
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{10, 30, 50}));
    EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 3, 5}));
    EXPECT_EQ(w.storage()->bytes(), 5 * sizeof(float));  // from element 0 to the last one reached
}

TEST(ArrayCopies, WithDataKeepsTheReadOnlyFlagAndRefusesUtf8) {
    const std::vector<float> frozen{1, 2};
    std::vector<float> other{3, 4};
    const Array r = Array::view(static_cast<const void*>(frozen.data()), DType::Float32, {2}, {1}, Backend::Cpu);
    EXPECT_TRUE(r.with_data(other.data()).read_only());
    const std::int32_t offsets[] = {0, 1, 2};
    const char chars[] = "ab";
    const Array s = Array::view_utf8(offsets, 4, chars, 2, 2, Backend::Cpu);
    EXPECT_THROW((void)s.with_data(other.data()), ArgumentError);
}

TEST(ArrayCopies, ADefaultArrayHasNoDimensions) {
    const Array a;
    EXPECT_FALSE(a.defined());
    EXPECT_TRUE(a.shape().empty());
    EXPECT_TRUE(a.strides().empty());
    EXPECT_EQ(a.ndim(), 0);
}

}  // namespace

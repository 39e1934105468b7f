// Copying an array allocates nothing: an eval copies its arguments several times on its way to
// the launch (into the bindings, into the backend's argument block), so each copy that went to
// the heap for its shape and strides cost host time on every call. Global operator new is
// replaced in this executable to count.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
    if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace jit;

struct Count {
    Count() {
        allocations = 0;
        counting = true;
    }
    long stop() {
        counting = false;
        return allocations.load();
    }
};

TEST(ArrayCopies, CopyingAndAssigningAnArrayAllocatesNothing) {
    const Array a = Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Backend::Cpu);
    Array c;
    Count count;
    Array b = a;
    c = b;
    Array d = std::move(b);
    EXPECT_EQ(count.stop(), 0);
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

TEST(ArrayCopies, ADefaultArrayHasNoDimensions) {
    const Array a;
    EXPECT_FALSE(a.defined());
    EXPECT_TRUE(a.shape().empty());
    EXPECT_TRUE(a.strides().empty());
    EXPECT_EQ(a.ndim(), 0);
}

}  // namespace

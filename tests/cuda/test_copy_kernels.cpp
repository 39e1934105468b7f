// The CUDA backend's strided copy (backend/cuda/copy.cpp): the PTX assembles for sm_90 (no GPU
// needed), and each copy picks the widest word its addresses and element size allow. On a GPU,
// GpuCopies.* (tests/api/test_layouts_gpu.cpp) compare its copies with the CPU's.
#include "backend/cuda/copy.hpp"
#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

using namespace jit;

namespace {

core::CopyLayout layout_of(std::size_t item) {
    core::CopyLayout l;
    l.ndim = 2;
    l.shape[0] = 3;
    l.shape[1] = 1000;
    l.dst_stride[0] = 1000;
    l.dst_stride[1] = 1;
    l.src_stride[0] = 1;
    l.src_stride[1] = 3;
    l.item = item;
    return l;
}

TEST(CopyKernels, PtxAssemblesForSm90) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    const cuda::Image img = cuda::assemble_ptx(cuda::copy_kernels_ptx(), "jx_copy", co);
    EXPECT_TRUE(img.is_cubin);
    EXPECT_FALSE(img.data.empty());
}

TEST(CopyKernels, PtxHasOneEntryPerWordSize) {
    const std::string ptx = cuda::copy_kernels_ptx();
    for (const char* e : {"jx_copy_u1(", "jx_copy_u2(", "jx_copy_u4(", "jx_copy_u8("})
        EXPECT_NE(ptx.find(e), std::string::npos) << e;
}

TEST(CopyKernels, WordIsTheWidestTheElementAndBothAddressesAllow) {
    alignas(64) static char buf[256];
    auto plan = [&](std::size_t item, std::size_t dst_off, std::size_t src_off) {
        return cuda::plan_copy(buf + dst_off, buf + src_off, layout_of(item), 132);
    };
    EXPECT_EQ(plan(16, 0, 0).word_log2, 3);  // complex128: two 8-byte words
    EXPECT_EQ(plan(16, 0, 0).units, 2);
    EXPECT_EQ(plan(8, 0, 4).word_log2, 2);  // complex64 at a 4-byte aligned address: 4-byte words
    EXPECT_EQ(plan(8, 0, 4).units, 2);
    EXPECT_EQ(plan(4, 0, 0).word_log2, 2);
    EXPECT_EQ(plan(2, 2, 0).word_log2, 1);
    EXPECT_EQ(plan(1, 0, 0).word_log2, 0);
    EXPECT_EQ(plan(1, 0, 0).units, 1);
}

TEST(CopyKernels, GridCoversTheElementsUpToABoundPerMultiprocessor) {
    alignas(64) static char buf[64];
    core::CopyLayout small = layout_of(4);
    small.shape[1] = 10;  // 30 elements: one block
    EXPECT_EQ(cuda::plan_copy(buf, buf, small, 132).grid, 1);
    core::CopyLayout big = layout_of(4);
    big.shape[0] = 1 << 20;  // 2^20 * 1000 elements: a grid-stride loop over a bounded grid
    const auto p = cuda::plan_copy(buf, buf, big, 132);
    EXPECT_EQ(p.grid, 132 * 16);
    EXPECT_EQ(p.block, 256);
}

}  // namespace

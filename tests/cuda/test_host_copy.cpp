// The staged transfers' host copies: copy_streaming (non-temporal stores on x86-64) against
// memcpy at every alignment of both ends and lengths around the store width, the 64-byte loop
// and its tail; HostCopier's batches, back to back, of part counts that grow (so the list of
// parts is rebuilt and reallocated while threads that woke late may still be looking).
#include "backend/cuda/host_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

TEST(HostCopy, StreamingCopyMatchesMemcpyAtEveryAlignmentAndLength) {
    std::vector<unsigned char> src(4096 + 64), want(src.size()), got(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (std::size_t s_off = 0; s_off < 16; s_off += 3)
        for (std::size_t d_off = 0; d_off < 16; ++d_off)
            for (std::size_t n : {0, 1, 15, 16, 63, 64, 255, 256, 257, 271, 320, 1000, 4000}) {
                std::memset(want.data(), 0xA5, want.size());
                std::memset(got.data(), 0xA5, got.size());
                std::memcpy(want.data() + d_off, src.data() + s_off, n);
                jit::cuda::copy_streaming(got.data() + d_off, src.data() + s_off, n);
                ASSERT_EQ(want, got) << "source offset " << s_off << ", target offset " << d_off << ", " << n
                                     << " bytes";
            }
}

TEST(HostCopier, BatchesBackToBackCopyEveryByteOfEveryTask) {
    jit::cuda::HostCopier copier(4);
    ASSERT_GE(copier.threads(), 1u);
    std::mt19937 rng(7);
    std::vector<unsigned char> src(1 << 20);
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    std::vector<unsigned char> dst(src.size());
    for (int batch = 0; batch < 3000; ++batch) {
        // 2 to 2 + batch / 20 tasks (up to 151), each its own slice of the buffers.
        const std::size_t tasks = 2 + static_cast<std::size_t>(batch) / 20;
        const std::size_t slice = src.size() / tasks;
        std::vector<jit::cuda::CopyTask> list;
        for (std::size_t t = 0; t < tasks; ++t) {
            const std::size_t n = 1 + rng() % std::min<std::size_t>(slice, 4096);
            list.push_back({dst.data() + t * slice, src.data() + t * slice, n});
        }
        for (const auto& t : list) std::memset(t.dst, 0, t.n);
        copier.run(list, batch % 2 == 0);
        for (const auto& t : list)
            ASSERT_EQ(std::memcmp(t.dst, t.src, t.n), 0) << "batch " << batch << ", " << list.size() << " tasks";
    }
}

TEST(HostCopier, ALargeTaskIsSplitAmongTheThreadsAndCopiedWhole) {
    jit::cuda::HostCopier copier(3);
    std::vector<unsigned char> src(9 * jit::cuda::HostCopier::kPart + 123), dst(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 2654435761u >> 24);
    copier.run({{dst.data(), src.data(), src.size()}});
    EXPECT_EQ(dst, src);
}

}  // namespace

// The staged transfers' host copy (non-temporal stores on x86-64) against memcpy: every
// alignment of both ends and lengths around the store width, the 64-byte loop and its tail.
#include "backend/cuda/host_copy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

}  // namespace

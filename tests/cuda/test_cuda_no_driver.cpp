// Without a usable driver or device: available() says why, every entry point throws
// NoDeviceError with that sentence, and nothing crashes. Skips where CUDA is available.
#include "backend/cuda/cuda.hpp"
#include "tests/cuda/kernels.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace {

class NoDriver : public ::testing::Test {
protected:
    void SetUp() override {
        if (jit::cuda::available(&why_))
            GTEST_SKIP() << "CUDA is available here; these tests are for machines without it";
    }
    std::string why_;
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

TEST_F(NoDriver, AvailableGivesASentenceMentioningTheDriver) {
    EXPECT_NE(lower(why_).find("driver"), std::string::npos) << why_;
}

TEST_F(NoDriver, AvailableGivesTheSameAnswerEveryTime) {
    std::string again;
    EXPECT_FALSE(jit::cuda::available(&again));
    EXPECT_EQ(again, why_);
}

TEST_F(NoDriver, AllocThrowsNoDeviceErrorWithTheReason) {
    try {
        jit::cuda::alloc(1024);
        FAIL() << "expected NoDeviceError";
    } catch (const jit::NoDeviceError& e) {
        EXPECT_EQ(std::string(e.what()), why_);
    }
}

TEST_F(NoDriver, EveryEntryPointThrowsNoDeviceError) {
    int host = 0;
    EXPECT_THROW(jit::cuda::device_info(0), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::make_storage(64), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::make_storage(0), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::copy_to_device(&host, &host, sizeof host), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::copy_to_host(&host, &host, sizeof host), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::copy_device(&host, &host, sizeof host), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::memset(&host, 0, sizeof host), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::synchronize(), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::is_device_pointer(&host), jit::NoDeviceError);
    jit::cuda::LaunchConfig config;
    EXPECT_THROW(jit::cuda::launch(&host, config, nullptr), jit::NoDeviceError);
    EXPECT_THROW(jit::cuda::max_active_blocks_per_sm(&host, 128), jit::NoDeviceError);
}

TEST_F(NoDriver, CompiledImageCannotBeLoaded) {
    // NVRTC works without a driver; loading its output does not.
    auto image = jit::cuda::compile(jit::test::kAxpbSource, "axpb.cu", {});
    EXPECT_THROW(jit::cuda::Module::load(image), jit::NoDeviceError);
}

TEST_F(NoDriver, FreeIsANoOp) {
    int host = 0;
    jit::cuda::free(nullptr);
    jit::cuda::free(&host);  // never allocated by us: without a driver nothing is done
    SUCCEED();
}

}  // namespace

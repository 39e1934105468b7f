// The CUDA module cache with real modules: the LRU bound and single-flight compiles. Skips
// without a device.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "tests/codegen/programs.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

using namespace jit;

#define REQUIRE_GPU()                                                 \
    do {                                                              \
        std::string why;                                              \
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA: " << why; \
    } while (0)

codegen::KernelSource kernel(DType t) {
    auto b = jxtest::axpb(t);
    return codegen::emit(b.p, b.schedule()).kernels.at(0);
}

cuda::CompileOptions device_options() {
    cuda::CompileOptions co;
    co.cc_major = cuda::device_info().cc_major;
    co.cc_minor = cuda::device_info().cc_minor;
    return co;
}

TEST(ModuleCacheGpu, HoldsAtMostCapacityModulesDroppingTheLeastRecentlyUsed) {
    REQUIRE_GPU();
    cuda::ModuleCache cache(2);
    const auto co = device_options();
    const auto f32 = kernel(DType::Float32), f64 = kernel(DType::Float64), i32 = kernel(DType::Int32);
    cache.get(f32, co);
    cache.get(f64, co);
    cache.get(f32, co);  // f32 is now the most recent
    cache.get(i32, co);  // evicts f64
    auto s = cache.stats();
    EXPECT_EQ(s.entries, 2u);
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.compiles, 3u);
    cuda::ModuleCache::Lookup lk;
    cache.get(f32, co, &lk);
    EXPECT_TRUE(lk.hit);
    cache.get(f64, co, &lk);
    EXPECT_FALSE(lk.hit);
    EXPECT_EQ(cache.stats().compiles, 4u);
}

TEST(ModuleCacheGpu, ThreadsAskingForOneKernelShareOneCompile) {
    REQUIRE_GPU();
    cuda::ModuleCache cache(8);
    const auto co = device_options();
    const auto k = kernel(DType::Float32);
    std::vector<cuda::ModulePtr> got(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = cache.get(k, co); });
    for (auto& t : threads) t.join();
    EXPECT_EQ(cache.stats().compiles, 1u);
    for (const auto& m : got) EXPECT_EQ(m, got[0]);
}

}  // namespace

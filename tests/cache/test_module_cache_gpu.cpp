// The CUDA module cache with real modules: the LRU bound and single-flight compiles. Skips
// without a device.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "layout_programs.hpp"
#include "tests/codegen/programs.hpp"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace jit;

#define REQUIRE_GPU()                                                   \
    do {                                                                \
        std::string why;                                                \
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

// What `jitexpr precompile` stores is what preparation loads: for a program of every layout
// class, precompile fills a store (real NVRTC images for this device), then a backend over a
// fresh module cache on that store prepares the plan without compiling anything.
TEST(ModuleCacheGpu, PreparationFindsEveryKernelPrecompileStored) {
    REQUIRE_GPU();
    const auto co = device_options();
    for (bool tiered : {false, true}) {
        for (const auto& lp : jxtest::layout_programs()) {
            const ir::Plan plan = dsl::plan(lp.text, dsl::bindings_of(lp.env), cuda::limits());
            std::mutex m;
            std::map<std::string, std::string> images;
            std::set<std::string> asked;
            cuda::ImageStore store;
            store.get = [&](const std::string& key) -> std::optional<std::string> {
                std::lock_guard<std::mutex> lock(m);
                asked.insert(key);
                auto it = images.find(key);
                if (it == images.end()) return std::nullopt;
                return it->second;
            };
            store.put = [&](const std::string& key, const std::string& bytes) {
                std::lock_guard<std::mutex> lock(m);
                images[key] = bytes;
            };
            std::set<std::string> stored;
            for (const auto& k : cuda::precompile(plan, co, store)) stored.insert(k.disk_key);
            asked.clear();

            cuda::ExecutorOptions eo;
            eo.cache = std::make_shared<cuda::ModuleCache>();
            eo.cache->set_image_store(store);
            auto backend = cuda::make_cuda_backend(eo);
            detail::PrepareOptions po;
            po.tiered = tiered;
            auto prepared = backend->prepare(plan, po);
            EXPECT_EQ(asked, stored) << lp.text << (tiered ? " (tiered)" : "");
            EXPECT_EQ(eo.cache->stats().compiles, 0u) << lp.text;
            EXPECT_TRUE(prepared->info().module_cache_hit) << lp.text;
        }
    }
    cuda::wait_for_upgrades();
}

}  // namespace

// MemoryCache: LRU by entry count, single-flight creation, allocation-free hits.
#include "backend/cache/cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// Counts allocations made by the current thread while `g_counting` is set (for the hit test).
namespace {
thread_local bool g_counting = false;
thread_local std::size_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
    if (g_counting) ++g_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using jit::cache::MemoryCache;
using namespace std::chrono_literals;

namespace {

using Value = std::shared_ptr<const std::string>;

Value make(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

// Polls `done` for up to 5 s.
template <class F>
bool eventually(F done) {
    for (auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;) {
        if (done()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return done();
}

}  // namespace

TEST(MemoryCache, GetOrCreateThenHit) {
    MemoryCache<std::string, Value> cache(8);
    int runs = 0;
    Value a = cache.get_or_create(std::string("k"), [&] { ++runs; return make("v"); });
    Value b = cache.get_or_create(std::string_view("k"), [&] { ++runs; return make("other"); });
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(a, b);
    auto s = cache.stats();
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.entries, 1u);
}

TEST(MemoryCache, GetReportsMissThenHit) {
    MemoryCache<std::string, int> cache(8);
    EXPECT_FALSE(cache.get("absent").has_value());
    cache.put("k", 7);
    EXPECT_EQ(cache.get("k"), 7);
    EXPECT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(cache.stats().misses, 1u);
}

TEST(MemoryCache, EvictsLeastRecentlyUsed) {
    MemoryCache<std::string, int> cache(2);
    cache.put("a", 1);
    cache.put("b", 2);
    ASSERT_TRUE(cache.get("a"));  // a is now the most recent
    cache.put("c", 3);            // evicts b
    EXPECT_TRUE(cache.get("a"));
    EXPECT_FALSE(cache.get("b"));
    EXPECT_TRUE(cache.get("c"));
    EXPECT_EQ(cache.stats().evictions, 1u);
    EXPECT_EQ(cache.keys(), (std::vector<std::string>{"c", "a"}));
}

TEST(MemoryCache, ShrinkingCapacityEvictsOldest) {
    MemoryCache<int, int> cache(4);
    for (int i = 0; i < 4; ++i) cache.put(i, i);
    cache.set_capacity(1);
    EXPECT_EQ(cache.keys(), std::vector<int>{3});
}

TEST(MemoryCache, ZeroCapacityKeepsNothing) {
    MemoryCache<std::string, int> cache(0);
    int runs = 0;
    cache.get_or_create("k", [&] { return ++runs; });
    cache.get_or_create("k", [&] { return ++runs; });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(cache.size(), 0u);
}

TEST(MemoryCache, ClearDropsEntriesKeepsCounters) {
    MemoryCache<std::string, int> cache(8);
    cache.get_or_create("k", [] { return 1; });
    cache.clear();
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.get("k"));
    EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(MemoryCache, HitDoesNotAllocate) {
    MemoryCache<std::string, Value> cache(8);
    const std::string long_key(200, 'k');  // longer than any small-string buffer
    cache.get_or_create(long_key, [] { return make("image"); });
    const std::string_view view = long_key;
    const char* cstr = long_key.c_str();

    g_allocations = 0;
    g_counting = true;
    Value a = cache.get_or_create(view, [] { return make("never"); });
    std::optional<Value> b = cache.get(cstr);
    Value c = cache.get_or_create(long_key, [] { return make("never"); });
    g_counting = false;

    EXPECT_EQ(g_allocations, 0u);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a, "image");
    EXPECT_EQ(cache.stats().hits, 3u);
}

TEST(MemoryCache, SingleFlightRunsFactoryOnceFor16Threads) {
    MemoryCache<std::string, Value> cache(8);
    std::atomic<int> runs{0};
    std::atomic<bool> release{false};
    std::vector<Value> got(16);
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
        threads.emplace_back([&, t] {
            got[t] = cache.get_or_create("shared", [&] {
                ++runs;
                while (!release) std::this_thread::sleep_for(100us);
                return make("built");
            });
        });
    }
    // Hold the factory until the other 15 callers are waiting on it.
    bool all_waiting = eventually([&] { return cache.stats().coalesced == 15; });
    release = true;
    for (auto& th : threads) th.join();
    ASSERT_TRUE(all_waiting);
    EXPECT_EQ(runs, 1);
    for (const auto& v : got) EXPECT_EQ(v, got[0]);
    EXPECT_EQ(*got[0], "built");
}

TEST(MemoryCache, FactoryExceptionReachesAllWaitersAndIsNotCached) {
    MemoryCache<std::string, int> cache(8);
    std::atomic<int> runs{0};
    std::atomic<bool> release{false};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            try {
                cache.get_or_create("k", [&]() -> int {
                    ++runs;
                    while (!release) std::this_thread::sleep_for(100us);
                    throw std::runtime_error("compile failed");
                });
            } catch (const std::runtime_error& e) {
                if (std::string(e.what()) == "compile failed") ++errors;
            }
        });
    }
    bool all_waiting = eventually([&] { return cache.stats().coalesced == 7; });
    release = true;
    for (auto& th : threads) th.join();
    ASSERT_TRUE(all_waiting);
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(errors, 8);
    EXPECT_EQ(cache.size(), 0u);
    // Not cached: the next call runs the factory again.
    EXPECT_EQ(cache.get_or_create("k", [] { return 5; }), 5);
    EXPECT_EQ(cache.stats().failures, 1u);
}

TEST(MemoryCache, DistinctKeysCreateInParallel) {
    MemoryCache<int, int> cache(8);
    constexpr int kThreads = 4;
    std::mutex m;
    std::condition_variable cv;
    int running = 0;
    std::atomic<int> saw_all{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            cache.get_or_create(t, [&] {
                std::unique_lock lock(m);
                ++running;
                cv.notify_all();
                // Serialised factories would never see all four running at once.
                if (cv.wait_for(lock, 5s, [&] { return running == kThreads; })) ++saw_all;
                return t;
            });
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(saw_all, kThreads);
    EXPECT_EQ(cache.size(), static_cast<std::size_t>(kThreads));
}

TEST(MemoryCache, FactoryAskingForItsOwnKeyThrows) {
    MemoryCache<std::string, int> cache(8);
    EXPECT_THROW(cache.get_or_create("k", [&] { return cache.get_or_create("k", [] { return 1; }); }),
                 jit::InternalError);
    EXPECT_EQ(cache.size(), 0u);
}

// MemoryCache: LRU by entry count, single-flight creation, allocation-free hits.
#include "backend/cache/cache.hpp"
#include "tests/support/allocation_counter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using jit::cache::MemoryCache;
using jit::test::start_counting_allocations;
using jit::test::stop_counting_allocations;
using namespace std::chrono_literals;

namespace {

using Value = std::shared_ptr<const std::string>;

Value make(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

// Polls `done` for up to 60 s: the states waited for come within milliseconds, and the bound is
// only for one that never comes (16 threads starting on a loaded 2-core machine under a
// sanitizer took more than the 5 s this once allowed).
template <class F>
bool eventually(F done) {
    for (auto deadline = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < deadline;) {
        if (done()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return done();
}

}  // namespace

TEST(MemoryCache, GetOrCreateThenHit) {
    MemoryCache<std::string, Value> cache(8);
    int runs = 0;
    Value a = cache.get_or_create(std::string("k"), [&] {
        ++runs;
        return make("v");
    });
    Value b = cache.get_or_create(std::string_view("k"), [&] {
        ++runs;
        return make("other");
    });
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

// The counter behind the allocation-free tests counts: a test that expects 0 would pass without it.
TEST(AllocationCounter, CountsTheCallingThreadsAllocations) {
    static void* volatile kept = nullptr;
    std::atomic<int> step{0};
    std::thread other([&] {  // allocates while this thread counts: not counted
        while (step.load() != 1) std::this_thread::yield();
        ::operator delete(::operator new(64));
        step.store(2);
    });
    start_counting_allocations();
    kept = ::operator new(64);
    ::operator delete(kept);
    step.store(1);
    while (step.load() != 2) std::this_thread::yield();
    EXPECT_EQ(stop_counting_allocations(), 1u);
    other.join();
}

TEST(MemoryCache, HitDoesNotAllocate) {
    MemoryCache<std::string, Value> cache(8);
    const std::string long_key(200, 'k');  // longer than any small-string buffer
    cache.get_or_create(long_key, [] { return make("image"); });
    const std::string_view view = long_key;
    const char* cstr = long_key.c_str();

    start_counting_allocations();
    Value a = cache.get_or_create(view, [] { return make("never"); });
    std::optional<Value> b = cache.get(cstr);
    Value c = cache.get_or_create(long_key, [] { return make("never"); });
    EXPECT_EQ(stop_counting_allocations(), 0u);

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
                // Serialised factories would never see all four running at once. (Four threads
                // start within milliseconds; 30 s is for a loaded machine under a sanitizer.)
                if (cv.wait_for(lock, 30s, [&] { return running == kThreads; })) ++saw_all;
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

// ---- fetch: the hot path without a lock, over each thread's table

TEST(MemoryCacheFetch, CreatesOnceThenHitsWithoutAllocating) {
    MemoryCache<std::string, Value> cache(8);
    int runs = 0;
    bool created = false;
    const Value& a = cache.fetch(
        std::string_view("k"),
        [&] {
            ++runs;
            return make("v");
        },
        &created);
    EXPECT_TRUE(created);
    EXPECT_EQ(*a, "v");
    start_counting_allocations();
    const Value& b = cache.fetch(
        std::string_view("k"),
        [&] {
            ++runs;
            return make("other");
        },
        &created);
    EXPECT_EQ(stop_counting_allocations(), 0u);
    EXPECT_FALSE(created);
    EXPECT_EQ(*b, "v");
    EXPECT_EQ(runs, 1);
    const auto s = cache.stats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.hits, 1u);
}

TEST(MemoryCacheFetch, SeesWhatGetOrCreateMadeAndTheReverse) {
    MemoryCache<std::string, int> cache(8);
    cache.get_or_create(std::string("a"), [] { return 1; });
    EXPECT_EQ(cache.fetch(std::string("a"), [] { return 2; }), 1);
    cache.fetch(std::string("b"), [] { return 3; });
    EXPECT_EQ(cache.get_or_create(std::string("b"), [] { return 4; }), 3);
}

TEST(MemoryCacheFetch, AnErasedOrReplacedKeyIsNotServedFromTheThreadsTable) {
    MemoryCache<std::string, int> cache(8);
    cache.fetch(std::string("k"), [] { return 1; });
    cache.put("k", 2);
    EXPECT_EQ(cache.fetch(std::string("k"), [] { return 3; }), 2);
    cache.erase(std::string("k"));
    EXPECT_EQ(cache.fetch(std::string("k"), [] { return 4; }), 4);
    cache.clear();
    EXPECT_EQ(cache.fetch(std::string("k"), [] { return 5; }), 5);
}

TEST(MemoryCacheFetch, AnEvictedValueIsReleasedByTheThreadsNextCall) {
    MemoryCache<int, Value> cache(1);
    std::weak_ptr<const std::string> first;
    first = cache.fetch(1, [] { return make("one"); });
    cache.get_or_create(2, [] { return make("two"); });  // evicts 1
    EXPECT_FALSE(first.expired()) << "this thread's table still holds it";
    cache.fetch(2, [] { return make("x"); });
    EXPECT_TRUE(first.expired());
}

TEST(MemoryCacheFetch, FetchedEntriesSurviveEvictionOfColderOnes) {
    MemoryCache<int, int> cache(3);
    for (int k = 0; k < 3; ++k) cache.fetch(k, [k] { return k; });
    for (int round = 0; round < 5; ++round) {
        cache.fetch(0, [] { return -1; });  // 0 stays hot, through the thread's table only
        cache.get_or_create(100 + round, [round] { return round; });
    }
    int runs = 0;
    EXPECT_EQ(cache.fetch(0,
                          [&] {
                              ++runs;
                              return -1;
                          }),
              0);
    EXPECT_EQ(runs, 0) << "the hot entry was evicted";
    EXPECT_EQ(cache.size(), 3u);
}

TEST(MemoryCacheFetch, ZeroCapacityCreatesEveryTimeAndHoldsTheValueUntilTheNextCall) {
    MemoryCache<int, Value> cache(0);
    int runs = 0;
    const Value& v = cache.fetch(1, [&] {
        ++runs;
        return make("v");
    });
    EXPECT_EQ(*v, "v");
    cache.fetch(1, [&] {
        ++runs;
        return make("w");
    });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(cache.size(), 0u);
}

TEST(MemoryCacheFetch, ThreadsShareOneCreationAndCountTheirHits) {
    MemoryCache<std::string, int> cache(8);
    std::atomic<int> runs{0};
    constexpr int kThreads = 8, kCalls = 100;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kCalls; ++i)
                EXPECT_EQ(cache.fetch(std::string("k"),
                                      [&] {
                                          ++runs;
                                          std::this_thread::sleep_for(10ms);
                                          return 7;
                                      }),
                          7);
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(runs, 1);
    const auto s = cache.stats();  // the threads have ended: their counts were kept
    EXPECT_EQ(s.hits + s.coalesced + s.misses, std::uint64_t{kThreads} * kCalls);
}

TEST(MemoryCacheFetch, DestroyingTheCacheReleasesWhatOtherThreadsHold) {
    std::weak_ptr<const std::string> held;
    std::mutex m;
    std::condition_variable cv;
    bool fetched = false, done = false;
    auto cache = std::make_unique<MemoryCache<int, Value>>(4);
    std::thread other([&] {
        held = cache->fetch(1, [] { return make("v"); });
        std::unique_lock lock(m);
        fetched = true;
        cv.notify_all();
        cv.wait(lock, [&] { return done; });  // alive, idle, its table untouched
    });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return fetched; });
    }
    cache.reset();
    EXPECT_TRUE(held.expired());
    {
        std::lock_guard lock(m);
        done = true;
    }
    cv.notify_all();
    other.join();
}

TEST(MemoryCacheFetch, AWaiterWhoseCreatorFailedCreatesForItself) {
    MemoryCache<std::string, int> cache(8);
    std::atomic<bool> release{false};
    std::thread creator([&] {
        EXPECT_THROW(cache.fetch(std::string("k"),
                                 [&]() -> int {
                                     while (!release) std::this_thread::sleep_for(1ms);
                                     throw std::runtime_error("stopped");
                                 }),
                     std::runtime_error);
    });
    ASSERT_TRUE(eventually([&] { return cache.stats().misses == 1; }));
    std::thread waiter([&] {
        int runs = 0;
        EXPECT_EQ(cache.fetch(std::string("k"),
                              [&] {
                                  ++runs;
                                  return 5;
                              }),
                  5);  // its own creation
        EXPECT_EQ(runs, 1);
    });
    ASSERT_TRUE(eventually([&] { return cache.stats().coalesced == 1; }));
    release = true;
    creator.join();
    waiter.join();
    const auto s = cache.stats();
    EXPECT_EQ(s.coalesced_failures, 1u);
    EXPECT_EQ(s.failures, 1u);
    EXPECT_EQ(s.misses, 2u);
}

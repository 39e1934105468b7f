// Eight processes fill one empty cache directory at once; everything they leave must verify.
#include "race_common.hpp"
#include "test_dir.hpp"

#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>

#include <ctime>
#include <string>
#include <vector>

extern char** environ;

TEST(DiskCacheRace, EightProcessesOnAnEmptyDirectory) {
    TempDir tmp;
    const std::string dir = tmp / "cache";  // does not exist yet: the processes race to create it
    constexpr int kProcesses = 8;
    constexpr int kRounds = 40;
    // Small enough that the processes also evict under each other (entries are 1..4 KiB).
    const std::string max_bytes = std::to_string(96 * 1024);

    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const long long start_ns = ts.tv_sec * 1000000000LL + ts.tv_nsec + 300000000LL;  // in 0.3 s

    std::vector<pid_t> pids;
    for (int i = 0; i < kProcesses; ++i) {
        std::vector<std::string> args = {CACHE_RACE_HELPER,        dir,      std::to_string(i), std::to_string(kRounds),
                                         std::to_string(start_ns), max_bytes};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        ASSERT_EQ(posix_spawn(&pid, CACHE_RACE_HELPER, nullptr, nullptr, argv.data(), environ), 0)
            << "cannot start " << CACHE_RACE_HELPER;
        pids.push_back(pid);
    }
    for (int i = 0; i < kProcesses; ++i) {
        int status = 0;
        ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "process " << i << " failed (status " << status << ")";
    }

    jit::cache::DiskCacheOptions options;
    options.dir = dir;
    options.use_environment = false;
    jit::cache::DiskCache cache(options);
    ASSERT_TRUE(cache.enabled()) << cache.disabled_reason();
    auto report = cache.verify();
    EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
    EXPECT_GT(report.valid, 0u);
    EXPECT_EQ(report.checked, report.valid);
    for (const auto& e : cache.entries()) {
        auto bytes = cache.get(e.key);
        ASSERT_TRUE(bytes.has_value()) << e.key;
        EXPECT_EQ(*bytes, cache_race::payload_for(e.key)) << e.key;
    }
}

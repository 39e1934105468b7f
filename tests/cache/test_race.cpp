// Eight processes fill one empty cache directory at once; everything they leave must verify.
#include "race_common.hpp"
#include "test_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

    // The helpers start together once the last one is running: they wait for the end of this
    // pipe, which comes when its write end (kept from them: close-on-exec) is closed below.
    int start[2];
    ASSERT_EQ(::pipe(start), 0);
    ASSERT_EQ(::fcntl(start[1], F_SETFD, FD_CLOEXEC), 0);

    std::vector<pid_t> pids;
    for (int i = 0; i < kProcesses; ++i) {
        std::vector<std::string> args = {CACHE_RACE_HELPER,        dir,      std::to_string(i), std::to_string(kRounds),
                                         std::to_string(start[0]), max_bytes};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        const int spawned = posix_spawn(&pid, CACHE_RACE_HELPER, nullptr, nullptr, argv.data(), environ);
        if (spawned != 0) {
            ::close(start[1]);  // the helpers already started begin (and end) rather than wait for ever
            ::close(start[0]);
            for (pid_t p : pids) ::waitpid(p, nullptr, 0);
            FAIL() << "cannot start " << CACHE_RACE_HELPER;
        }
        pids.push_back(pid);
    }
    ::close(start[1]);  // go
    ::close(start[0]);
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

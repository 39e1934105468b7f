// A full disk under the kernel cache, simulated: a child process whose files may not grow past a
// few bytes (RLIMIT_FSIZE; SIGXFSZ keeps its default disposition, which would end the child:
// jitexpr holds the signal back in its writing thread, so a write past the limit fails with
// EFBIG as on a full disk). Whatever the disk does, the user sees no error and the cache no bad entry:
// a store fails quietly (one warning at most) and leaves no file behind, later lookups miss,
// and once space returns the same key is stored and found. End to end through `jitexpr
// precompile`'s path (NVRTC, no GPU): compiling never fails because the disk is full.
#include "backend/cache/cache.hpp"
#include "backend/cache/files.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "test_dir.hpp"
#include "tests/hardening/pipeline.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <execinfo.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using jit::cache::digest;
using jit::cache::DiskCache;
using jit::cache::DiskCacheOptions;
namespace fs = std::filesystem;

namespace {

// Checks inside the child process: a failed one is printed on stderr and counted.
int g_failures = 0;
#define CHILD_CHECK(cond)                                                                 \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++g_failures;                                                                 \
        }                                                                                 \
    } while (0)

// Runs `body` in a forked child and expects it to finish with every check passed. The file
// size limit is the child's alone.
void in_child(const std::function<void()>& body) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
        g_failures = 0;
        try {
            body();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child: unexpected exception: %s\n", e.what());
            ++g_failures;
        } catch (...) {
            std::fprintf(stderr, "child: unexpected exception\n");
            ++g_failures;
        }
        std::fflush(nullptr);
        ::_exit(g_failures == 0 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "the child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
    ASSERT_NE(WEXITSTATUS(status), 125) << "a write past the file size limit raised SIGXFSZ outside jitexpr's guard";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "checks failed in the child: see its stderr above";
}

// A SIGXFSZ that reaches a thread not holding it back ends the child as the default action
// would, after printing where that thread was writing (exit status 125 tells the parent).
void died_of_file_size(int) {
    static const char msg[] = "child: SIGXFSZ reached a thread that was not holding it back, writing from:\n";
    (void)!::write(2, msg, sizeof msg - 1);
    void* frames[48];
    ::backtrace_symbols_fd(frames, ::backtrace(frames, 48), 2);
    ::_exit(125);
}

// The disk is "full" past `bytes` per file until restore() (or the end of the child).
class FullDisk {
public:
    explicit FullDisk(rlim_t bytes) {
        ::getrlimit(RLIMIT_FSIZE, &old_);
        CHILD_CHECK(std::signal(SIGXFSZ, SIG_DFL) == SIG_DFL);  // not ignored: the product must cope
        struct sigaction sa {};
        sa.sa_handler = died_of_file_size;
        sigemptyset(&sa.sa_mask);
        CHILD_CHECK(::sigaction(SIGXFSZ, &sa, nullptr) == 0);
        rlimit small = old_;
        small.rlim_cur = bytes;
        CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    }
    void restore() { CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &old_) == 0); }

private:
    rlimit old_{};
};

DiskCacheOptions options(const std::string& dir, std::vector<std::string>* warnings) {
    DiskCacheOptions o;
    o.dir = dir;
    o.use_environment = false;
    o.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
    return o;
}

// Every file under the cache's version directory: no temporary file may be left behind.
std::vector<std::string> files_under(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->is_regular_file(ec)) out.push_back(it->path().filename().string());
    return out;
}

bool has_temp_file(const std::string& dir) {
    for (const auto& f : files_under(dir))
        if (jit::files::is_temporary_name(f)) return true;
    return false;
}

TEST(FullDisk, FailedStoreMissesCleanlyThenSucceedsWhenSpaceReturns) {
    TempDir tmp;
    in_child([&] {
        std::vector<std::string> warnings;
        DiskCache cache(options(tmp / "cache", &warnings));
        CHILD_CHECK(cache.enabled());
        const std::string key = digest("kernel");
        const std::string image(32 * 1024, 'k');

        FullDisk full(100);  // the header fits, the key and the image do not
        CHILD_CHECK(!cache.put(key, image));
        CHILD_CHECK(!cache.put(digest("another kernel"), image));
        CHILD_CHECK(!cache.get(key));  // a clean miss: nothing half-written is found
        CHILD_CHECK(cache.enabled());  // a full disk does not turn the cache off
        CHILD_CHECK(warnings.size() == 1);
        CHILD_CHECK(warnings.empty() || warnings[0].find("full") != std::string::npos);
        CHILD_CHECK(files_under(tmp / "cache/v1").empty());
        CHILD_CHECK(cache.stats().write_failures == 2);
        CHILD_CHECK(cache.stats().corrupt_removed == 0);

        full.restore();
        CHILD_CHECK(cache.put(key, image));
        CHILD_CHECK(cache.get(key) == image);
        CHILD_CHECK(cache.verify().ok());
        CHILD_CHECK(!has_temp_file(tmp / "cache/v1"));
        CHILD_CHECK(warnings.size() == 1);  // the warning is not repeated
    });
}

TEST(FullDisk, ImageCacheKeepsServingFromMemory) {
    TempDir tmp;
    in_child([&] {
        std::vector<std::string> warnings;
        jit::cache::ImageCache cache(16, options(tmp / "cache", &warnings));
        int made = 0;
        auto factory = [&] {
            ++made;
            return std::string(16 * 1024, 'i');
        };
        const std::string key = digest("image");
        FullDisk full(256);
        bool from_disk = true;
        auto first = cache.get_or_create(key, factory, &from_disk);
        CHILD_CHECK(first && first->size() == 16 * 1024 && !from_disk);
        auto again = cache.get_or_create(key, factory, &from_disk);  // memory
        CHILD_CHECK(again == first && made == 1);
        CHILD_CHECK(cache.disk().stats().entries == 0);
        CHILD_CHECK(!has_temp_file(tmp / "cache/v1"));

        full.restore();
        cache.clear_memory();
        cache.get_or_create(key, factory, &from_disk);  // made again, stored this time
        CHILD_CHECK(made == 2 && !from_disk);
        cache.clear_memory();
        auto loaded = cache.get_or_create(key, factory, &from_disk);
        CHILD_CHECK(made == 2 && from_disk && loaded && *loaded == *first);
        CHILD_CHECK(warnings.size() <= 1);
    });
}

// `jitexpr precompile` and the CUDA module cache put images through an ImageStore over the disk
// cache: with the disk full, compiling still succeeds and nothing is stored; with space back,
// the images are stored, and found by the next run.
TEST(FullDisk, PrecompileSucceedsAndStoresOnceSpaceReturns) {
    TempDir tmp;
    in_child([&] {
        // Where a CUDA driver is installed, its own JIT cache (~/.nv/ComputeCache: not jitexpr's
        // file) would meet the full disk too; it is off in this child (as in CudaFullDisk).
        ::setenv("CUDA_CACHE_DISABLE", "1", 1);
        std::vector<std::string> warnings;
        auto disk = std::make_shared<DiskCache>(options(tmp / "cache", &warnings));
        jit::cuda::ImageStore store{
            [disk](const std::string& key) { return disk->get(digest(key)); },
            [disk](const std::string& key, const std::string& bytes) { disk->put(digest(key), bytes); }};
        const auto front = jxharden::run_front("c = a * 2 + b\nd = sum(c)");
        jit::cuda::CompileOptions co;
        co.cc_major = 9;
        co.cc_minor = 0;

        FullDisk full(512);
        const auto first = jit::cuda::precompile(front, co, store);
        CHILD_CHECK(first.size() == 2);
        for (const auto& k : first) CHILD_CHECK(!k.already_stored && k.image_bytes > 512);
        CHILD_CHECK(disk->stats().entries == 0);
        CHILD_CHECK(disk->stats().write_failures == first.size());
        CHILD_CHECK(!has_temp_file(tmp / "cache/v1"));
        CHILD_CHECK(warnings.size() == 1);

        full.restore();
        const auto second = jit::cuda::precompile(front, co, store);
        for (const auto& k : second) CHILD_CHECK(!k.already_stored);
        CHILD_CHECK(disk->stats().entries == second.size());
        const auto third = jit::cuda::precompile(front, co, store);
        for (const auto& k : third) CHILD_CHECK(k.already_stored);
        CHILD_CHECK(disk->verify().ok());
        CHILD_CHECK(warnings.size() == 1);
    });
}

}  // namespace

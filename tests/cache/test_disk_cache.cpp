// DiskCache: round trips, every kind of bad file, unusable directories, eviction, settings.
#include "backend/cache/cache.hpp"
#include "backend/cache/files.hpp"
#include "test_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using jit::cache::digest;
using jit::cache::DiskCache;
using jit::cache::DiskCacheOptions;
using jit::cache::ImageCache;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHeader = 64;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// Sets (or unsets, with nullptr) an environment variable for the life of the object.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

class DiskCacheTest : public ::testing::Test {
protected:
    DiskCacheOptions options(const std::string& dir) {
        DiskCacheOptions o;
        o.dir = dir;
        o.use_environment = false;
        o.on_warning = [this](const std::string& w) { warnings.push_back(w); };
        return o;
    }
    DiskCacheOptions options() { return options(tmp / "cache"); }

    TempDir tmp;
    std::vector<std::string> warnings;
    const std::string key = digest("kernel A");
    const std::string image = std::string(
        "\x7f"
        "ELF cubin bytes\0with a zero",
        28);
};

}  // namespace

// ---- round trips

TEST_F(DiskCacheTest, PutThenGetReturnsTheBytes) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.enabled()) << cache.disabled_reason();
    EXPECT_FALSE(cache.get(key));
    ASSERT_TRUE(cache.put(key, image));
    EXPECT_EQ(cache.get(key), image);
    auto s = cache.stats();
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.entries, 1u);
    EXPECT_EQ(s.bytes, kHeader + key.size() + image.size());
    EXPECT_TRUE(warnings.empty());
}

TEST_F(DiskCacheTest, EntryLivesAtDocumentedPath) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    const std::string path = tmp / ("cache/v3/" + key.substr(0, 2) + "/" + key + ".bin");
    EXPECT_EQ(cache.path_for(key), path);
    const std::string bytes = read_file(path);
    ASSERT_EQ(bytes.size(), kHeader + key.size() + image.size());
    EXPECT_EQ(bytes.substr(0, 8), "JITXCACH");
    EXPECT_EQ(bytes.substr(kHeader, key.size()), key);
    EXPECT_EQ(bytes.substr(kHeader + key.size()), image);
}

TEST_F(DiskCacheTest, SurvivesANewCacheObject) {
    DiskCache(options()).put(key, image);
    DiskCache again(options());
    EXPECT_EQ(again.get(key), image);
}

TEST_F(DiskCacheTest, EmptyPayloadRoundTrips) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, ""));
    EXPECT_EQ(cache.get(key), std::string());
}

TEST_F(DiskCacheTest, PutReplacesTheEntry) {
    DiskCache cache(options());
    cache.put(key, "old");
    cache.put(key, "new");
    EXPECT_EQ(cache.get(key), "new");
    EXPECT_EQ(cache.stats().entries, 1u);
}

TEST_F(DiskCacheTest, InvalidKeyIsAnArgumentError) {
    DiskCache cache(options());
    EXPECT_THROW(cache.get("../../etc/passwd"), jit::ArgumentError);
    EXPECT_THROW(cache.put("ABCDEF0123", "x"), jit::ArgumentError);
    EXPECT_THROW(cache.get("abc"), jit::ArgumentError);
}

TEST_F(DiskCacheTest, EntriesAreListedMostRecentFirst) {
    DiskCache cache(options());
    const std::string k1 = digest("1"), k2 = digest("2"), k3 = digest("3");
    cache.put(k1, "a");
    cache.put(k2, "bb");
    cache.put(k3, "ccc");
    cache.get(k1);
    auto list = cache.entries();
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0].key, k1);
    EXPECT_EQ(list[1].key, k3);
    EXPECT_EQ(list[2].key, k2);
    EXPECT_EQ(list[2].bytes, kHeader + k2.size() + 2);
}

TEST_F(DiskCacheTest, ClearRemovesEveryEntry) {
    DiskCache cache(options());
    cache.put(digest("1"), "a");
    cache.put(digest("2"), "b");
    cache.clear();
    EXPECT_EQ(cache.stats().entries, 0u);
    EXPECT_FALSE(cache.get(digest("1")));
}

// ---- bad files: each is a miss, is removed, is counted, and the compile path runs again

class BadFileTest : public DiskCacheTest {
protected:
    // Stores an entry through ImageCache, damages its file, then asks a fresh ImageCache (empty
    // memory) for it: the factory must run again and the new file must be valid.
    void expect_recovery(const std::function<void(const std::string& path)>& damage) {
        int compiles = 0;
        auto compile = [&] {
            ++compiles;
            return image;
        };
        {
            ImageCache first(16, options());
            first.get_or_create(key, compile);
        }
        ASSERT_EQ(compiles, 1);
        DiskCache probe(options());
        const std::string path = probe.path_for(key);
        damage(path);

        ImageCache second(16, options());
        bool from_disk = true;
        auto bytes = second.get_or_create(key, compile, &from_disk);
        EXPECT_EQ(*bytes, image);
        EXPECT_FALSE(from_disk);
        EXPECT_EQ(compiles, 2) << "the bad file must not be used";
        EXPECT_EQ(second.stats().disk.corrupt_removed, 1u);
        EXPECT_TRUE(second.disk().verify().ok());
        EXPECT_EQ(read_file(path).size(), kHeader + key.size() + image.size());
        EXPECT_TRUE(warnings.empty());
    }

    // Damages the file, then checks a plain get misses and removes it.
    void expect_removed(const std::function<void(const std::string& path)>& damage) {
        DiskCache cache(options());
        ASSERT_TRUE(cache.put(key, image));
        damage(cache.path_for(key));
        EXPECT_FALSE(cache.get(key));
        EXPECT_FALSE(fs::exists(fs::symlink_status(cache.path_for(key))));
        EXPECT_EQ(cache.stats().corrupt_removed, 1u);
        EXPECT_EQ(cache.stats().misses, 1u);
    }
};

void truncate_to_half(const std::string& path) { fs::resize_file(path, fs::file_size(path) / 2); }
void truncate_to_zero(const std::string& path) { fs::resize_file(path, 0); }
void flip_last_byte(const std::string& path) {
    std::string b = read_file(path);
    b.back() ^= 0x01;
    write_file(path, b);
}
void set_other_version(const std::string& path) {  // a version this build does not write
    std::string b = read_file(path);
    b[8] = static_cast<char>(b[8] + 1);
    write_file(path, b);
}
void append_garbage(const std::string& path) { write_file(path, read_file(path) + "extra"); }
void replace_with_text(const std::string& path) {
    write_file(path, "just some text that is long enough to hold a header, and more");
}

TEST_F(BadFileTest, TruncatedFileIsRemoved) { expect_removed(truncate_to_half); }
TEST_F(BadFileTest, TruncatedFileIsRecompiled) { expect_recovery(truncate_to_half); }
TEST_F(BadFileTest, ZeroLengthFileIsRemoved) { expect_removed(truncate_to_zero); }
TEST_F(BadFileTest, ZeroLengthFileIsRecompiled) { expect_recovery(truncate_to_zero); }
TEST_F(BadFileTest, FlippedPayloadByteIsRemoved) { expect_removed(flip_last_byte); }
TEST_F(BadFileTest, FlippedPayloadByteIsRecompiled) { expect_recovery(flip_last_byte); }
TEST_F(BadFileTest, WrongVersionIsRemoved) { expect_removed(set_other_version); }
TEST_F(BadFileTest, WrongVersionIsRecompiled) { expect_recovery(set_other_version); }
TEST_F(BadFileTest, TrailingBytesAreRemoved) { expect_removed(append_garbage); }

TEST_F(BadFileTest, WrongKeyIsRemoved) {
    // Another key's valid file under this key's name.
    expect_removed([&](const std::string& path) {
        DiskCache other(options());
        const std::string k2 = digest("kernel B");
        other.put(k2, image);
        fs::remove(path);
        fs::create_directories(fs::path(path).parent_path());
        fs::copy_file(other.path_for(k2), path);
    });
}

TEST_F(BadFileTest, WrongKeyIsRecompiled) {
    expect_recovery([&](const std::string& path) {
        std::string b = read_file(path);
        b[kHeader] = b[kHeader] == 'a' ? 'b' : 'a';  // the stored key, not the name
        write_file(path, b);
    });
}

// ---- verify

TEST_F(DiskCacheTest, VerifyRemovesOnlyBadFilesOfItsOwn) {
    DiskCache cache(options());
    const std::string good1 = digest("g1"), good2 = digest("g2"), bad = digest("bad");
    cache.put(good1, "one");
    cache.put(good2, "two");
    cache.put(bad, "three");
    flip_last_byte(cache.path_for(bad));
    const std::string stray = fs::path(cache.path_for(good1)).parent_path() / "notes.txt";
    write_file(stray, "hello");

    auto report = cache.verify();
    EXPECT_EQ(report.checked, 3u);
    EXPECT_EQ(report.valid, 2u);
    EXPECT_EQ(report.removed, 1u);
    ASSERT_EQ(report.problems.size(), 1u);
    ASSERT_EQ(report.left.size(), 1u) << "a file that is not jitexpr's is reported, not removed";
    EXPECT_NE(report.left[0].find("notes.txt"), std::string::npos) << report.left[0];
    EXPECT_FALSE(report.ok());
    EXPECT_FALSE(fs::exists(cache.path_for(bad)));
    EXPECT_EQ(read_file(stray), "hello");
    EXPECT_EQ(cache.get(good1), "one");
    EXPECT_EQ(cache.get(good2), "two");
    EXPECT_EQ(cache.verify().removed, 0u);
}

TEST_F(DiskCacheTest, VerifyRemovesTemporaryFilesOfWritersThatAreGone) {
    DiskCache cache(options());
    cache.put(key, image);
    const fs::path shard = fs::path(cache.path_for(key)).parent_path();
    // A writer that died: its process is gone (a child that exited), its file unlocked.
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
    const std::string dead = shard / (".jitexpr-" + std::to_string(child) + "-0123456789abcdef.tmp");
    write_file(dead, "left behind");
    // A writer at work: a live process holding the file's lock.
    const std::string busy = shard / (".jitexpr-" + std::to_string(::getpid()) + "-00000000000000ff.tmp");
    write_file(busy, "in progress");
    const int held = ::open(busy.c_str(), O_RDONLY);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX), 0);
    // Unlocked, of a live process, but new: perhaps just created, not yet locked.
    const std::string fresh = shard / (".jitexpr-" + std::to_string(::getpid()) + "-00000000000000fe.tmp");
    write_file(fresh, "just made");
    // Unlocked, of a live process, and old: nobody is writing it.
    const std::string old = shard / (".jitexpr-" + std::to_string(::getpid()) + "-00000000000000fd.tmp");
    write_file(old, "forgotten");
    timespec long_ago[2] = {{1000000000, 0}, {1000000000, 0}};  // 2001
    ASSERT_EQ(::utimensat(AT_FDCWD, old.c_str(), long_ago, 0), 0);

    auto report = cache.verify();
    ::close(held);
    EXPECT_EQ(report.removed, 2u) << ::testing::PrintToString(report.problems);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_FALSE(fs::exists(old));
    EXPECT_TRUE(fs::exists(busy));
    EXPECT_TRUE(fs::exists(fresh));
}

// ---- eviction

TEST_F(DiskCacheTest, EvictsLeastRecentlyUsedUnderByteBound) {
    const std::string payload(1000, 'x');
    const std::uint64_t entry = kHeader + 64 + payload.size();
    auto o = options();
    o.max_bytes = 3 * entry;
    o.evict_to = 1.0;
    DiskCache cache(o);
    const std::string a = digest("a"), b = digest("b"), c = digest("c"), d = digest("d");
    cache.put(a, payload);
    cache.put(b, payload);
    cache.put(c, payload);
    ASSERT_TRUE(cache.get(a));  // touched: now newer than b and c
    cache.put(d, payload);      // over the bound by one entry: b goes

    EXPECT_TRUE(fs::exists(cache.path_for(a)));
    EXPECT_FALSE(fs::exists(cache.path_for(b)));
    EXPECT_TRUE(fs::exists(cache.path_for(c)));
    EXPECT_TRUE(fs::exists(cache.path_for(d)));
    auto s = cache.stats();
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.bytes, 3 * entry);

    ASSERT_TRUE(cache.get(c));
    cache.put(b, payload);  // now a is the oldest
    EXPECT_FALSE(fs::exists(cache.path_for(a)));
    EXPECT_TRUE(fs::exists(cache.path_for(c)));
}

TEST_F(DiskCacheTest, EvictionCountsFilesOfOtherWriters) {
    // Each writer knows the directory's size as of its last scan plus its own writes; the first
    // whose estimate crosses the bound scans and trims everyone's files, oldest first.
    const std::string payload(1000, 'x');
    const std::uint64_t entry = kHeader + 64 + payload.size();
    auto o = options();
    o.max_bytes = 2 * entry;
    o.evict_to = 1.0;
    DiskCache writer1(o);
    DiskCache writer2(o);
    writer1.put(digest("1"), payload);
    writer2.put(digest("2"), payload);
    writer1.put(digest("3"), payload);
    writer2.put(digest("4"), payload);  // writer2 thinks 3 entries, finds 4, evicts 1 and 2
    EXPECT_EQ(writer1.stats().entries, 2u);
    EXPECT_FALSE(fs::exists(writer1.path_for(digest("1"))));
    EXPECT_FALSE(fs::exists(writer1.path_for(digest("2"))));
    EXPECT_TRUE(fs::exists(writer1.path_for(digest("3"))));
    EXPECT_EQ(writer2.stats().evictions, 2u);
}

TEST_F(DiskCacheTest, EvictionToleratesVanishedFiles) {
    const std::string payload(1000, 'x');
    auto o = options();
    o.max_bytes = 1;
    DiskCache cache(o);
    cache.put(digest("1"), payload);
    // Someone else removed everything, tree included.
    fs::remove_all(tmp / "cache/v3");
    EXPECT_TRUE(cache.put(digest("2"), payload));
    cache.evict();
    EXPECT_EQ(cache.stats().entries, 0u);
}

// ---- unusable directories degrade to no disk cache, with one warning

TEST_F(DiskCacheTest, DirectoryUnderARegularFileDegradesWithOneWarning) {
    write_file(tmp / "file", "not a directory");
    DiskCache cache(options(tmp / "file/cache"));
    EXPECT_FALSE(cache.enabled());
    EXPECT_NE(cache.disabled_reason(), "");
    EXPECT_FALSE(cache.get(key));
    EXPECT_FALSE(cache.put(key, image));
    EXPECT_FALSE(cache.put(digest("other"), image));
    cache.verify();
    cache.clear();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("memory only"), std::string::npos) << warnings[0];
}

TEST_F(DiskCacheTest, ReadOnlyDirectoryDegradesWithOneWarning) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not stop writes";
    const std::string dir = tmp / "ro";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    DiskCache cache(options(dir));
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(cache.put(key, image));
    EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(DiskCacheTest, DirectoryWritableByOthersIsRefused) {
    const std::string dir = tmp / "shared";
    fs::create_directories(dir + "/v3");
    fs::permissions(dir + "/v3", fs::perms::all);
    DiskCache cache(options(dir));
    EXPECT_FALSE(cache.enabled());
    EXPECT_NE(cache.disabled_reason().find("writable by other users"), std::string::npos) << cache.disabled_reason();
    EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(DiskCacheTest, CreatedDirectoriesArePrivate) {
    DiskCache cache(options());
    cache.put(key, image);
    auto mode = [](const std::string& p) { return fs::status(p).permissions() & fs::perms::all; };
    EXPECT_EQ(mode(tmp / "cache/v3"), fs::perms::owner_all);
    EXPECT_EQ(mode(fs::path(cache.path_for(key)).parent_path()), fs::perms::owner_all);
    EXPECT_EQ(mode(cache.path_for(key)) & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

TEST_F(DiskCacheTest, FullDiskDropsTheEntryAndWarnsOnce) {
    // A file size limit makes writes fail like a full disk (EFBIG), without needing a small mount.
    DiskCache cache(options());
    ASSERT_TRUE(cache.enabled());
    // SIGXFSZ keeps its default disposition (it would end this process): the cache holds it
    // back in the writing thread, so the write fails with EFBIG instead.
    ASSERT_EQ(std::signal(SIGXFSZ, SIG_DFL), SIG_DFL);
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    rlimit small = old;
    small.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    const bool stored1 = cache.put(digest("big1"), std::string(64 * 1024, 'x'));
    const bool stored2 = cache.put(digest("big2"), std::string(64 * 1024, 'y'));
    ::setrlimit(RLIMIT_FSIZE, &old);

    EXPECT_FALSE(stored1);
    EXPECT_FALSE(stored2);
    EXPECT_EQ(cache.stats().write_failures, 2u);
    EXPECT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(cache.enabled()) << "a full disk is not a reason to stop using the cache";
    EXPECT_EQ(cache.stats().entries, 0u);
    EXPECT_TRUE(cache.verify().ok()) << "no temporary file may be left behind";
    for (const auto& e : fs::recursive_directory_iterator(tmp / "cache/v3"))
        EXPECT_FALSE(jit::files::is_temporary_name(e.path().filename().string())) << e.path();
    EXPECT_NE(warnings[0].find("file size limit"), std::string::npos) << warnings[0];
    EXPECT_TRUE(cache.put(key, image));  // small entries still fit
}

// ---- settings

TEST_F(DiskCacheTest, DisabledByOption) {
    auto o = options();
    o.enabled = false;
    DiskCache cache(o);
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(cache.put(key, image));
    EXPECT_FALSE(fs::exists(tmp / "cache"));
    EXPECT_TRUE(warnings.empty()) << "turning it off on purpose is not worth a warning";
}

TEST_F(DiskCacheTest, DisabledByEnvironment) {
    ScopedEnv off("JITEXPR_DISK_CACHE", "0");
    auto o = options();
    o.use_environment = true;
    DiskCache cache(o);
    EXPECT_FALSE(cache.enabled());
    EXPECT_NE(cache.disabled_reason().find("JITEXPR_DISK_CACHE"), std::string::npos);
    EXPECT_TRUE(warnings.empty());
}

TEST_F(DiskCacheTest, DirectoryResolutionOrder) {
    ScopedEnv on("JITEXPR_DISK_CACHE", nullptr);
    ScopedEnv dir("JITEXPR_CACHE_DIR", "/from/env");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnv home("HOME", "/home/someone");
    DiskCacheOptions o;
    o.dir = "/explicit";
    EXPECT_EQ(DiskCache::resolve_directory(o), "/explicit");
    o.dir.clear();
    EXPECT_EQ(DiskCache::resolve_directory(o), "/from/env");
    ::unsetenv("JITEXPR_CACHE_DIR");
    EXPECT_EQ(DiskCache::resolve_directory(o), "/xdg/jitexpr");
    ::unsetenv("XDG_CACHE_HOME");
    EXPECT_EQ(DiskCache::resolve_directory(o), "/home/someone/.cache/jitexpr");
    o.use_environment = false;
    EXPECT_EQ(DiskCache::resolve_directory(o), "");
}

TEST_F(DiskCacheTest, EnvironmentKillSwitchBeatsExplicitDirectory) {
    ScopedEnv off("JITEXPR_DISK_CACHE", "0");
    DiskCacheOptions o;
    o.dir = "/explicit";
    EXPECT_EQ(DiskCache::resolve_directory(o), "");
}

// ---- memory in front of disk

TEST_F(DiskCacheTest, ImageCacheServesFromDiskAfterRestart) {
    int compiles = 0;
    auto compile = [&] {
        ++compiles;
        return image;
    };
    {
        ImageCache first(16, options());
        first.get_or_create(key, compile);
        first.get_or_create(key, compile);  // memory hit
    }
    ImageCache second(16, options());
    bool from_disk = false;
    auto bytes = second.get_or_create(key, compile, &from_disk);
    EXPECT_TRUE(from_disk);
    EXPECT_EQ(*bytes, image);
    EXPECT_EQ(compiles, 1);
}

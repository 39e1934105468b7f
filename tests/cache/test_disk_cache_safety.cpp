// The disk cache never touches what is not its own and never blocks (issue 17, items 2, 3, 6):
// symbolic links to folders outside the cache, foreign files with key-shaped names, FIFOs and
// folders in place of entries, the format v3 header, and what `clear` does to v1 and v2 folders.
#include "backend/cache/cache.hpp"
#include "backend/cache/files.hpp"
#include "test_dir.hpp"

#include <gtest/gtest.h>

#if JITEXPR_HAVE_XXHASH
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using jit::cache::digest;
using jit::cache::DiskCache;
using jit::cache::DiskCacheOptions;
namespace fs = std::filesystem;

namespace {

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

std::uint64_t u64_at(const std::string& b, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
}

// Runs `body` in a child process that is killed if it takes longer than `seconds` (a hang is a
// failure, not a stuck test run). The child exits 0 when every check in it held. The callers'
// bodies take milliseconds; their 60 s are for a loaded machine under a sanitizer, and a FIFO
// that blocks blocks for ever.
::testing::AssertionResult finishes_within(int seconds, const std::function<bool()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::alarm(static_cast<unsigned>(seconds));
        ::_exit(body() ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return ::testing::AssertionFailure() << "fork/wait failed";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        return ::testing::AssertionFailure() << "did not finish within " << seconds << " s (it blocked)";
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ::testing::AssertionFailure() << "a check failed in the child (status " << status << ")";
    return ::testing::AssertionSuccess();
}

class CacheSafety : public ::testing::Test {
protected:
    DiskCacheOptions options() {
        DiskCacheOptions o;
        o.dir = tmp / "cache";
        o.use_environment = false;
        o.on_warning = [this](const std::string& w) { warnings.push_back(w); };
        return o;
    }
    // A folder outside the cache with files of every kind of name.
    std::vector<std::string> make_outside(const std::string& shard) {
        fs::create_directories(tmp / "outside");
        std::vector<std::string> names = {digest("x").replace(0, 2, shard) + ".bin", "notes.txt", "photo.jpg",
                                          ".jitexpr-1-0123456789abcdef.tmp"};
        for (const auto& n : names) write_file(tmp / ("outside/" + n), "precious " + n);
        return names;
    }
    void expect_outside_intact(const std::vector<std::string>& names) {
        for (const auto& n : names) EXPECT_EQ(read_file(tmp / ("outside/" + n)), "precious " + n) << n;
    }

    TempDir tmp;
    std::vector<std::string> warnings;
    const std::string key = digest("kernel A");
    const std::string image = std::string(
        "\x7f"
        "ELF cubin bytes\0with a zero",
        28);
};

}  // namespace

// ---- item 2: a symlinked key folder is never followed

TEST_F(CacheSafety, SymlinkedKeyFolderIsNeitherFollowedNorEmptied) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    const std::string shard = key.substr(0, 2);
    // Another key folder made a link to a folder outside the cache.
    const std::string other_shard = shard == "00" ? "01" : "00";
    const auto names = make_outside(other_shard);
    fs::create_directory_symlink(tmp / "outside", tmp / ("cache/v3/" + other_shard));

    const auto report = cache.verify();
    EXPECT_EQ(report.valid, 1u);
    EXPECT_EQ(report.removed, 0u) << ::testing::PrintToString(report.problems);
    ASSERT_EQ(report.left.size(), 1u) << ::testing::PrintToString(report.left);
    EXPECT_NE(report.left[0].find("not followed"), std::string::npos) << report.left[0];
    const auto cleared = cache.clear();
    EXPECT_EQ(cleared.removed, 1u);
    EXPECT_EQ(cache.stats().entries, 0u) << "nothing behind the link is counted as an entry";
    cache.evict();
    expect_outside_intact(names);
    EXPECT_TRUE(fs::is_symlink(tmp / ("cache/v3/" + other_shard)));
}

TEST_F(CacheSafety, KeyFolderThatIsALinkIsNotWrittenThrough) {
    DiskCache cache(options());
    const auto names = make_outside(key.substr(0, 2));
    fs::create_directories(tmp / "cache/v3");
    fs::create_directory_symlink(tmp / "outside", tmp / ("cache/v3/" + key.substr(0, 2)));
    std::string why;
    EXPECT_FALSE(cache.put(key, image, &why));
    EXPECT_NE(why.find("not a directory"), std::string::npos) << why;
    EXPECT_FALSE(cache.get(key));
    EXPECT_FALSE(fs::exists(tmp / ("outside/" + key + ".bin")));
    for (const auto& e : fs::directory_iterator(tmp / "outside"))
        EXPECT_FALSE(jit::files::is_temporary_name(e.path().filename().string()) &&
                     e.path().filename() != ".jitexpr-1-0123456789abcdef.tmp")
            << e.path();
    expect_outside_intact(names);
}

TEST_F(CacheSafety, VersionFolderThatIsALinkTurnsTheCacheOff) {
    fs::create_directories(tmp / "outside");
    fs::create_directories(tmp / "cache");
    fs::create_directory_symlink(tmp / "outside", tmp / "cache/v3");
    DiskCache cache(options());
    EXPECT_FALSE(cache.enabled());
    EXPECT_NE(cache.disabled_reason().find("not a directory"), std::string::npos) << cache.disabled_reason();
    EXPECT_TRUE(fs::is_empty(tmp / "outside"));
}

// ---- item 2: clear and verify remove only files jitexpr wrote

TEST_F(CacheSafety, ForeignFileWithAKeyShapedNameSurvivesEverything) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(digest("other"), "x"));  // makes the tree
    const std::string path = cache.path_for(key);
    fs::create_directories(fs::path(path).parent_path());
    write_file(path, "a user's file that happens to have this name");

    EXPECT_FALSE(cache.get(key));
    std::string why;
    EXPECT_FALSE(cache.put(key, image, &why)) << "a foreign file is never replaced";
    EXPECT_NE(why.find(path), std::string::npos) << why;
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("left in place"), std::string::npos) << warnings[0];
    const auto report = cache.verify();
    EXPECT_EQ(report.removed, 0u);
    ASSERT_EQ(report.left.size(), 1u);
    EXPECT_NE(report.left[0].find("JITXCACH"), std::string::npos) << report.left[0];
    EXPECT_FALSE(cache.erase(key));
    const auto cleared = cache.clear();
    EXPECT_EQ(cleared.removed, 1u);  // the entry of "other"
    ASSERT_EQ(cleared.left.size(), 1u);
    auto o = options();
    o.max_bytes = 1;  // evicts everything of jitexpr's
    DiskCache small(o);
    small.evict();
    EXPECT_EQ(read_file(path), "a user's file that happens to have this name");
}

TEST_F(CacheSafety, SymbolicLinkInPlaceOfAnEntryIsNeitherFollowedNorRemoved) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    const std::string path = cache.path_for(key);
    const std::string target = tmp / "elsewhere.bin";
    fs::copy_file(path, target);  // even a valid entry is not read through a link
    fs::remove(path);
    fs::create_symlink(target, path);

    EXPECT_FALSE(cache.get(key));
    EXPECT_FALSE(cache.put(key, image));
    cache.verify();
    cache.clear();
    EXPECT_TRUE(fs::is_symlink(path));
    EXPECT_EQ(read_file(target).size(), 64 + key.size() + image.size());
}

TEST_F(CacheSafety, ForeignFilesInTheVersionFolderAreReportedNotRemoved) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    write_file(tmp / "cache/v3/README", "mine");
    const auto report = cache.verify();
    ASSERT_EQ(report.left.size(), 1u);
    cache.clear();
    EXPECT_EQ(read_file(tmp / "cache/v3/README"), "mine");
}

// ---- item 3: a FIFO never blocks

TEST_F(CacheSafety, FifoInPlaceOfAnEntryNeverBlocks) {
    {
        DiskCache cache(options());
        ASSERT_TRUE(cache.put(digest("other"), "x"));
    }
    const std::string path = DiskCache(options()).path_for(key);
    fs::create_directories(fs::path(path).parent_path());
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    const std::string shard_fifo = tmp / "cache/v3/fifo-shard";  // and one beside the key folders
    ASSERT_EQ(::mkfifo(shard_fifo.c_str(), 0600), 0);
    EXPECT_TRUE(finishes_within(60, [&] {
        DiskCache cache(options());
        bool ok = !cache.get(key).has_value();
        ok &= !cache.put(key, image);
        const auto report = cache.verify();
        ok &= report.valid == 1 && report.left.size() == 2;
        cache.clear();
        cache.evict();
        ok &= cache.stats().entries == 0;
        return ok;
    }));
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(CacheSafety, FifoAsTheEvictionLockNeverBlocks) {
    fs::create_directories(tmp / "cache/v3");
    fs::permissions(tmp / "cache/v3", fs::perms::owner_all, fs::perm_options::replace);
    ASSERT_EQ(::mkfifo((tmp / "cache/v3/evict.lock").c_str(), 0600), 0);
    EXPECT_TRUE(finishes_within(60, [&] {
        DiskCache cache(options());
        return cache.put(key, image) && cache.get(key) == image;
    }));
}

// ---- item 6: a folder in place of an entry

TEST_F(CacheSafety, EmptyFolderInPlaceOfAnEntryIsRemovedAndTheEntryStored) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(digest("other"), "x"));
    const std::string path = cache.path_for(key);
    fs::create_directories(path);
    const auto report = cache.verify();
    EXPECT_EQ(report.removed, 1u);
    EXPECT_FALSE(fs::exists(path)) << "reported removed, so it must be gone";
    fs::create_directories(path);
    EXPECT_TRUE(cache.put(key, image)) << "an empty folder holds nothing to lose";
    EXPECT_EQ(cache.get(key), image);
}

TEST_F(CacheSafety, FolderWithFilesInPlaceOfAnEntryIsKeptAndNamed) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(digest("other"), "x"));
    const std::string path = cache.path_for(key);
    fs::create_directories(path);
    write_file(path + "/inside.txt", "keep me");
    const auto report = cache.verify();
    EXPECT_EQ(report.removed, 0u);
    ASSERT_EQ(report.left.size(), 1u);
    EXPECT_NE(report.left[0].find("directory"), std::string::npos) << report.left[0];
    std::string why;
    EXPECT_FALSE(cache.put(key, image, &why));
    EXPECT_NE(why.find(path), std::string::npos) << why;
    EXPECT_NE(why.find("remove it"), std::string::npos) << why;
    cache.clear();
    EXPECT_EQ(read_file(path + "/inside.txt"), "keep me");
}

// ---- the format (docs/cache.md)

// The header fields every version-3 entry has; the checksum is checked by the caller.
void expect_version3_header(const std::string& b, const std::string& key, const std::string& image, unsigned algorithm,
                            unsigned sum_len) {
    ASSERT_EQ(b.size(), 64 + key.size() + image.size());
    EXPECT_EQ(b.substr(0, 8), "JITXCACH");
    EXPECT_EQ(u64_at(b, 8, 4), 3u) << "format version";
    EXPECT_EQ(u64_at(b, 12, 2), 64u) << "header length";
    EXPECT_EQ(u64_at(b, 14, 1), algorithm) << "checksum algorithm";
    EXPECT_EQ(u64_at(b, 15, 1), sum_len) << "checksum length";
    EXPECT_EQ(u64_at(b, 16, 4), key.size());
    EXPECT_EQ(u64_at(b, 20, 4), 0u) << "flags";
    EXPECT_EQ(u64_at(b, 24, 8), image.size());
    EXPECT_EQ(b.substr(32 + sum_len, 32 - sum_len), std::string(32 - sum_len, '\0')) << "zero padding";
    EXPECT_EQ(b.substr(64, key.size()), key);
    EXPECT_EQ(b.substr(64 + key.size()), image);
}

#if JITEXPR_HAVE_XXHASH
TEST_F(CacheSafety, EntryFileHasTheDocumentedVersion3HeaderWithXxh3) {
    DiskCache cache(options());
    ASSERT_EQ(DiskCache::default_checksum(), 2u);
    ASSERT_TRUE(cache.put(key, image));
    EXPECT_EQ(cache.path_for(key), tmp / ("cache/v3/" + key.substr(0, 2) + "/" + key + ".bin"));
    const std::string b = read_file(cache.path_for(key));
    expect_version3_header(b, key, image, 2, 16);
    // XXH3-128 (seed 0) of bytes 0..31, the key and the payload, in xxhash's canonical
    // (big-endian) byte order: computed here in one call over the concatenation.
    const std::string covered = b.substr(0, 32) + key + image;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(covered.data(), covered.size()));
    EXPECT_EQ(b.substr(32, 16), std::string(reinterpret_cast<const char*>(c.digest), 16));
}
#endif

TEST_F(CacheSafety, Sha256EntriesAreWrittenOnRequestAndReadByEveryBuild) {
    DiskCacheOptions o = options();
    o.checksum = 1;
    DiskCache sha(o);
    ASSERT_TRUE(sha.put(key, image));
    const std::string b = read_file(sha.path_for(key));
    expect_version3_header(b, key, image, 1, 32);
    const auto sum = jit::cache::Sha256().update(b.substr(0, 32)).update(key).update(image).finish();
    EXPECT_EQ(b.substr(32, 32), std::string(reinterpret_cast<const char*>(sum.data()), 32));
    DiskCache plain(options());
    EXPECT_EQ(plain.get(key), image) << "a SHA-256 entry is a hit for the default cache too";
}

TEST_F(CacheSafety, ChecksumThisBuildDoesNotComputeIsAnArgumentError) {
    DiskCacheOptions o = options();
    o.checksum = 9;
    EXPECT_THROW(DiskCache{o}, jit::ArgumentError);
}

TEST_F(CacheSafety, FlippedHeaderFieldIsDetectedByTheChecksum) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    std::string b = read_file(cache.path_for(key));
    b[20] = 1;  // flags: covered by the checksum
    write_file(cache.path_for(key), b);
    EXPECT_FALSE(cache.get(key));
    EXPECT_FALSE(fs::exists(cache.path_for(key)));
    EXPECT_EQ(cache.stats().corrupt_removed, 1u);
}

TEST_F(CacheSafety, UnknownChecksumAlgorithmIsAMissKeptUntilReplaced) {
    DiskCache cache(options());
    ASSERT_TRUE(cache.put(key, image));
    std::string b = read_file(cache.path_for(key));
    b[14] = 7;  // an algorithm a later jitexpr might use
    b[15] = 16;
    write_file(cache.path_for(key), b);
    EXPECT_FALSE(cache.get(key));
    EXPECT_TRUE(fs::exists(cache.path_for(key))) << "another build's entry is not damage";
    const auto report = cache.verify();
    EXPECT_EQ(report.removed, 0u);
    ASSERT_EQ(report.left.size(), 1u);
    EXPECT_NE(report.left[0].find("checksum algorithm 7"), std::string::npos) << report.left[0];
    EXPECT_TRUE(cache.put(key, image)) << "it is jitexpr's, so a store may replace it";
    EXPECT_EQ(cache.get(key), image);
}

TEST_F(CacheSafety, ClearRemovesOnlyJitexprFilesOfTheOldV1Format) {
    // A v1 tree as an earlier jitexpr left it: an entry, its lock, a stray file of the user's.
    const std::string k = digest("old");
    fs::create_directories(tmp / ("cache/v1/" + k.substr(0, 2)));
    std::string v1 = std::string("JITXCACH") + std::string("\x01\0\0\0", 4) + std::string(44, '\0') + k + "payload";
    write_file(tmp / ("cache/v1/" + k.substr(0, 2) + "/" + k + ".bin"), v1);
    write_file(tmp / "cache/v1/evict.lock", "");
    const std::string foreign = tmp / ("cache/v1/" + k.substr(0, 2) + "/" + digest("mine") + ".bin");
    write_file(foreign, "not a cache file");

    DiskCache cache(options());
    EXPECT_FALSE(cache.get(k)) << "v1 files are not read";
    const auto report = cache.clear();
    EXPECT_EQ(report.old_format_removed, 1u);
    EXPECT_FALSE(fs::exists(tmp / ("cache/v1/" + k.substr(0, 2) + "/" + k + ".bin")));
    EXPECT_EQ(read_file(foreign), "not a cache file");

    fs::remove(foreign);
    cache.clear();
    EXPECT_FALSE(fs::exists(tmp / "cache/v1")) << "an emptied v1 tree goes";
}

TEST_F(CacheSafety, ClearRemovesOnlyJitexprFilesOfTheOldV2Format) {
    // A v2 tree as the previous jitexpr (SHA-256 entries) left it, and a stray file of the user's.
    const std::string k = digest("old2");
    const std::string shard = tmp / ("cache/v2/" + k.substr(0, 2));
    fs::create_directories(shard);
    std::string v2 = std::string("JITXCACH") + std::string("\x02\0\0\0", 4) + std::string(52, '\0') + k + "payload";
    write_file(shard + "/" + k + ".bin", v2);
    write_file(tmp / "cache/v2/evict.lock", "");
    const std::string foreign = shard + "/" + digest("mine") + ".bin";
    write_file(foreign, "not a cache file");

    DiskCache cache(options());
    EXPECT_FALSE(cache.get(k)) << "v2 files are not read";
    EXPECT_TRUE(fs::exists(shard + "/" + k + ".bin")) << "a get leaves the old folder alone";
    const auto report = cache.clear();
    EXPECT_EQ(report.old_format_removed, 1u);
    EXPECT_FALSE(fs::exists(shard + "/" + k + ".bin"));
    EXPECT_EQ(read_file(foreign), "not a cache file");

    fs::remove(foreign);
    cache.clear();
    EXPECT_FALSE(fs::exists(tmp / "cache/v2")) << "an emptied v2 tree goes";
}

// ---- item 6: temporary files of a writer that was killed

TEST_F(CacheSafety, TemporaryFileOfAKilledWriterIsRemovedByALaterRun) {
    {
        DiskCache cache(options());
        ASSERT_TRUE(cache.put(key, image));
    }
    const std::string shard = fs::path(DiskCache(options()).path_for(key)).parent_path();
    // The child starts a store and is killed in the middle of it.
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int dirfd = ::open(shard.c_str(), O_RDONLY | O_DIRECTORY);
        int err = 0;
        auto file = jit::files::TempFile::create(dirfd, &err);
        if (!file) ::_exit(1);
        (void)jit::files::write_all(file->fd(), "JITXCACH", 8);
        ::raise(SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status));
    std::vector<std::string> temps;
    for (const auto& e : fs::directory_iterator(shard))
        if (jit::files::is_temporary_name(e.path().filename().string())) temps.push_back(e.path());
    ASSERT_EQ(temps.size(), 1u) << "the killed writer left its file";

    DiskCache later(options());
    const auto report = later.verify();
    EXPECT_EQ(report.removed, 1u) << ::testing::PrintToString(report.problems);
    EXPECT_FALSE(fs::exists(temps[0]));
    EXPECT_EQ(later.get(key), image);
}

TEST_F(CacheSafety, StaleTemporaryFileInTheVersionFolderIsRemoved) {
    { DiskCache cache(options()); }
    const pid_t gone = ::fork();
    if (gone == 0) ::_exit(0);
    ::waitpid(gone, nullptr, 0);
    const std::string stale = tmp / ("cache/v3/.jitexpr-" + std::to_string(gone) + "-00000000000000aa.tmp");
    write_file(stale, "");
    DiskCache cache(options());
    const auto report = cache.verify();
    EXPECT_EQ(report.removed, 1u) << ::testing::PrintToString(report.problems);
    EXPECT_FALSE(fs::exists(stale));
}

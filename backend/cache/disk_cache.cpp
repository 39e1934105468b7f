// The disk cache: one checksummed file per key, written atomically, LRU by bytes via mtime.
//
// Entry file, format version 3 (docs/cache.md; all integers little-endian):
//   0  magic "JITXCACH"                         8 bytes
//   8  format version (3)                       u32
//  12  header length (64: where the key starts) u16
//  14  checksum algorithm (2: XXH3-128; 1: SHA-256) u8
//  15  checksum length in bytes (16; 32)        u8
//  16  key length                               u32
//  20  flags (0; reserved)                      u32
//  24  payload length                           u64
//  32  checksum of bytes 0..31, the key and the payload, zero-padded to 32 bytes
//  64  key bytes, then payload bytes; the file ends exactly there.
// An entry is a self-contained record: an archive of entries can hold them back to back.
//
// Every path is reached from the cache root's descriptor: the version folder, the key folders
// and the files are opened with O_NOFOLLOW relative to their parent's descriptor, so the cache
// never follows or descends through a symbolic link, and only regular files are ever opened.
// A file is removed or replaced only when it starts with the magic (every file the cache writes
// does), is empty, or is a stale temporary file of jitexpr's: a foreign file survives every
// operation.
#include "backend/cache/cache.hpp"
#include "backend/cache/files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#if JITEXPR_HAVE_XXHASH
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

namespace jit::cache {

std::uint64_t hash64(std::string_view bytes, std::uint64_t seed) {
#if JITEXPR_HAVE_XXHASH
    return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
#else
    std::uint64_t h = seed ^ 1469598103934665603ULL;
    for (const unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
#endif
}

namespace {

using files::Fd;

constexpr char kMagic[8] = {'J', 'I', 'T', 'X', 'C', 'A', 'C', 'H'};
// Version 3 is version 2's layout with XXH3-128 as the checksum: entries of version 2 (SHA-256,
// which cost a disk hit ~0.3 ms per 100 KB of CUBIN) are in their own folder, never read, and
// removed by `clear` as jitexpr's own.
constexpr std::uint32_t kFormatVersion = 3;
constexpr std::size_t kHeaderSize = 64;
constexpr std::size_t kChecksumField = 32;
constexpr std::uint8_t kSha256 = 1;
constexpr std::uint8_t kXxh3 = 2;
#if JITEXPR_HAVE_XXHASH
constexpr std::uint8_t kDefaultChecksum = kXxh3;
#else
constexpr std::uint8_t kDefaultChecksum = kSha256;
#endif
constexpr const char* kVersionDir = "v3";
// The version 2 folder: only `clear` touches it, and only what it can prove is a v2 entry of
// jitexpr's (or its stale temporary files).
constexpr const char* kV2Dir = "v2";
constexpr const char* kSuffix = ".bin";
constexpr const char* kLockName = "evict.lock";
constexpr std::chrono::seconds kRescanInterval{60};
// The format before this one (docs/cache.md): only `clear` touches it, and only what it can
// prove is a v1 entry of jitexpr's.
constexpr const char* kV1Dir = "v1";
constexpr std::int64_t kV1StaleTempNs = std::int64_t(3600) * 1000000000;

enum class Warning { Unusable, NoSpace, WriteError, Foreign, Count };

std::atomic<bool> g_stderr_warned[static_cast<int>(Warning::Count)];

std::string errno_text(int err) { return std::strerror(err); }

std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Access stamps strictly increase within a process, so LRU order is exact even when the
// clock does not move between two touches.
timespec next_stamp() {
    static std::atomic<std::int64_t> last{0};
    std::int64_t now = now_ns();
    std::int64_t prev = last.load();
    std::int64_t want;
    do {
        want = std::max(now, prev + 1);
    } while (!last.compare_exchange_weak(prev, want));
    return timespec{static_cast<time_t>(want / 1000000000), static_cast<long>(want % 1000000000)};
}

std::int64_t mtime_ns(const struct stat& st) {
    return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void touch(int fd) {
    timespec t = next_stamp();
    timespec times[2] = {t, t};
    (void)::futimens(fd, times);  // a stale access time only makes eviction less exact
}

void put_u16(char* p, std::uint16_t v) {
    for (int i = 0; i < 2; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u32(char* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u64(char* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
std::uint16_t get_u16(const char* p) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[1]) << 8);
}
std::uint32_t get_u32(const char* p) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}
std::uint64_t get_u64(const char* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}

bool is_hex_lower(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_shard_name(std::string_view name) { return name.size() == 2 && is_hex_lower(name[0]) && is_hex_lower(name[1]); }

// The key of an entry file name "<key>.bin" in the key folder `shard`, or empty.
std::string_view key_of_name(std::string_view name, std::string_view shard) {
    if (!ends_with(name, kSuffix)) return {};
    std::string_view stem = name.substr(0, name.size() - std::strlen(kSuffix));
    if (!DiskCache::valid_key(stem) || stem.substr(0, 2) != shard) return {};
    return stem;
}

// mkdir -p with mode 0700 for what it creates. Returns 0 or an errno.
int make_dirs(const std::string& path) {
    if (path.empty()) return ENOENT;
    std::size_t pos = 0;
    while (true) {
        pos = path.find('/', pos + 1);
        std::string part = path.substr(0, pos);
        if (!part.empty() && ::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return errno;
        if (pos == std::string::npos) break;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    return 0;
}

// JITEXPR_DISK_CACHE's "off" words, in any case (jit::settings::on_off checks the variable).
bool env_says_off() {
    const char* v = std::getenv("JITEXPR_DISK_CACHE");
    if (!v) return false;
    std::string off = v;
    for (char& c : off) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return off == "0" || off == "false" || off == "off" || off == "no";
}

bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }
bool is_unusable(int err) { return err == EACCES || err == EPERM || err == EROFS || err == ENOTDIR; }

// Opens the folder `name` in `dirfd`, never through a symbolic link.
Fd open_dir_at(int dirfd, const char* name) {
    return Fd(::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// The names in the folder `dirfd` (without . and ..).
std::vector<std::string> list_names(int dirfd) {
    std::vector<std::string> out;
    const int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return out;
    DIR* d = ::fdopendir(copy);
    if (!d) {
        ::close(copy);
        return out;
    }
    ::rewinddir(d);
    while (dirent* e = ::readdir(d)) {
        std::string_view n = e->d_name;
        if (n != "." && n != "..") out.emplace_back(n);
    }
    ::closedir(d);
    return out;
}

// ---- checksums: the algorithm is named in each file, so another can replace SHA-256 later
// without a new layout (docs/cache.md).

std::array<std::uint8_t, kChecksumField> entry_checksum(std::uint8_t algorithm, const char* header,
                                                        std::string_view key, std::string_view payload) {
    std::array<std::uint8_t, kChecksumField> out{};
    if (algorithm == kSha256) {
        auto d = Sha256().update(header, 32).update(key).update(payload).finish();
        std::copy(d.begin(), d.end(), out.begin());
    }
#if JITEXPR_HAVE_XXHASH
    if (algorithm == kXxh3) {
        XXH3_state_t state;
        XXH3_128bits_reset(&state);
        XXH3_128bits_update(&state, header, 32);
        XXH3_128bits_update(&state, key.data(), key.size());
        XXH3_128bits_update(&state, payload.data(), payload.size());
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&state));  // big-endian: high64, low64
        std::memcpy(out.data(), c.digest, sizeof c.digest);
    }
#endif
    return out;
}

// The checksum's length for an algorithm this build computes, else 0.
std::size_t checksum_length(std::uint8_t algorithm) {
    if (algorithm == kSha256) return 32;
#if JITEXPR_HAVE_XXHASH
    if (algorithm == kXxh3) return 16;
#endif
    return 0;
}

// What a file in a key folder is.
enum class Verdict {
    Valid,       // a good entry (payload read when asked)
    Damaged,     // written by jitexpr (its header says so) but truncated, extended or corrupted
    Empty,       // an empty regular file: nothing to lose (a power loss with fsync off leaves these)
    Unreadable,  // written by jitexpr, in a form this build does not read (checksum algorithm, flags)
    Foreign,     // not provably jitexpr's: never removed, never replaced
};

struct Examined {
    Verdict verdict = Verdict::Foreign;
    std::string why;
    struct stat st {};
    bool present = false;  // false: nothing under the name (a plain miss)
};

bool removable(Verdict v) { return v == Verdict::Damaged || v == Verdict::Empty; }
bool ours(Verdict v) { return v != Verdict::Foreign; }

std::string kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

// Examines `name` in the folder `dirfd` as the entry for `key`. `full`: check lengths and the
// checksum (the payload goes to *payload when given); otherwise only what proves whose it is.
// Opens only regular files, without blocking.
Examined examine(int dirfd, const std::string& name, std::string_view key, bool full, std::string* payload,
                 Fd* keep_open = nullptr) {
    Examined x;
    if (::fstatat(dirfd, name.c_str(), &x.st, AT_SYMLINK_NOFOLLOW) != 0) return x;
    x.present = true;
    if (!S_ISREG(x.st.st_mode)) {
        x.why = kind_of(x.st.st_mode);
        return x;
    }
    Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    struct stat st {};
    if (!fd.ok() || ::fstat(fd.get(), &st) != 0) {
        x.present = errno != ENOENT;
        x.why = "cannot open: " + errno_text(errno);
        return x;
    }
    // Another writer may have renamed a new entry over the name since: what was opened is what
    // counts, provided it is a regular file (O_NONBLOCK: opening anything else never waited).
    x.st = st;
    if (!S_ISREG(st.st_mode)) {
        x.why = kind_of(st.st_mode);
        return x;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size == 0) {
        x.verdict = Verdict::Empty;
        x.why = "empty file";
        return x;
    }
    // The proof of ownership is the magic: every file jitexpr's cache writes starts with it.
    // On the stack: a hit allocates only its payload (keys are at most 128 characters).
    const std::size_t proof = kHeaderSize + key.size();
    char head_buf[kHeaderSize + 128];
    const long long got = files::read_up_to(fd.get(), head_buf, std::min<std::uint64_t>(size, proof));
    if (got < 0) {
        x.why = "read error: " + errno_text(errno);
        return x;
    }
    const std::string_view head(head_buf, static_cast<std::size_t>(got));
    if (head.size() < sizeof kMagic || std::memcmp(head.data(), kMagic, sizeof kMagic) != 0) {
        x.why = "not a jitexpr cache file (it does not start with JITXCACH)";
        return x;
    }
    x.verdict = Verdict::Damaged;
    if (head.size() < 12) {
        x.why = "truncated header";
        return x;
    }
    const std::uint32_t version = get_u32(head.data() + 8);
    if (version != kFormatVersion) {
        x.why =
            "format version " + std::to_string(version) + " in the folder of version " + std::to_string(kFormatVersion);
        return x;
    }
    if (head.size() < kHeaderSize) {
        x.why = "truncated header";
        return x;
    }
    if (get_u16(head.data() + 12) != kHeaderSize) {
        x.why =
            "header length " + std::to_string(get_u16(head.data() + 12)) + ", expected " + std::to_string(kHeaderSize);
        return x;
    }
    if (get_u32(head.data() + 16) != key.size() || head.size() < proof ||
        std::memcmp(head.data() + kHeaderSize, key.data(), key.size()) != 0) {
        x.why = head.size() < proof ? "truncated key" : "stored key differs from the file name";
        return x;
    }
    // jitexpr's. Now: is it whole and readable by this build?
    const std::uint8_t algorithm = static_cast<std::uint8_t>(head[14]);
    const std::uint8_t sum_len = static_cast<std::uint8_t>(head[15]);
    const std::uint64_t payload_len = get_u64(head.data() + 24);
    if (payload_len > size || size - proof != payload_len) {
        x.why = "length mismatch: header says " + std::to_string(proof + payload_len) + " bytes, file has " +
                std::to_string(size);
        return x;
    }
    if (checksum_length(algorithm) == 0 || sum_len != checksum_length(algorithm)) {
        x.verdict = Verdict::Unreadable;
        x.why = "checksum algorithm " + std::to_string(algorithm) + " is unknown to this jitexpr";
        return x;
    }
    if (!full) {
        x.verdict = Verdict::Valid;
        if (keep_open) *keep_open = std::move(fd);
        return x;
    }
    std::string data(payload_len, '\0');
    const long long n = files::read_up_to(fd.get(), data.data(), data.size());
    if (n < 0) {
        x.verdict = Verdict::Foreign;  // unknown state: leave it
        x.why = "read error: " + errno_text(errno);
        return x;
    }
    if (static_cast<std::uint64_t>(n) != payload_len) {
        x.why = "truncated payload";
        return x;
    }
    const auto sum = entry_checksum(algorithm, head.data(), key, data);
    if (std::memcmp(sum.data(), head.data() + 32, kChecksumField) != 0) {
        x.why = "checksum mismatch";
        return x;
    }
    if (get_u32(head.data() + 20) != 0) {
        x.verdict = Verdict::Unreadable;
        x.why = "flags this jitexpr does not know";
        return x;
    }
    x.verdict = Verdict::Valid;
    if (payload) *payload = std::move(data);
    if (keep_open) *keep_open = std::move(fd);
    return x;
}

// Removes `name` only if it still is the file that was examined (a writer may have renamed a
// fresh entry over it since). Tolerates it being gone.
// `error`, where given: the errno of an unlink that failed (0 when the file was gone or replaced).
bool remove_if_same(int dirfd, const std::string& name, const struct stat& seen, int* error = nullptr) {
    if (error) *error = 0;
    struct stat now {};
    if (::fstatat(dirfd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return false;
    if (now.st_dev != seen.st_dev || now.st_ino != seen.st_ino) return false;
    if (::unlinkat(dirfd, name.c_str(), S_ISDIR(now.st_mode) ? AT_REMOVEDIR : 0) == 0) return true;
    if (error) *error = errno;
    return false;
}

// Whether a file in a previous format's folder (v1, v2) is jitexpr's: empty, or starting with
// the magic and that version.
bool is_old_file(int dirfd, const std::string& name, std::uint32_t version, struct stat* st) {
    if (::fstatat(dirfd, name.c_str(), st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st->st_mode)) return false;
    if (st->st_size == 0) return true;
    Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd.ok()) return false;
    char head[12];
    if (files::read_up_to(fd.get(), head, sizeof head) != static_cast<long long>(sizeof head)) return false;
    return std::memcmp(head, kMagic, sizeof kMagic) == 0 && get_u32(head + 8) == version;
}

struct FileInfo {
    std::string shard;
    std::string name;
    std::string key;  // entries only
    std::uint64_t size = 0;
    std::int64_t mtime = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

struct DiskCache::Impl {
    DiskCacheOptions opt;
    std::string root;  // <dir>
    std::string base;  // <dir>/v2, for messages
    std::atomic<int> base_fd{-1};
    std::atomic<bool> on{false};
    mutable std::mutex mutex;  // reason, approx_bytes, retired
    std::string reason;
    std::optional<std::uint64_t> approx_bytes;  // at the last scan, plus our puts since
    std::chrono::steady_clock::time_point last_scan;
    std::vector<int> retired;  // earlier base descriptors (other threads may still use them)
    std::atomic<bool> warned[static_cast<int>(Warning::Count)] = {};
    std::atomic<std::uint64_t> hits{0}, misses{0}, corrupt{0}, writes{0}, write_failures{0}, evictions{0};

    ~Impl() {
        if (int fd = base_fd.load(); fd >= 0) ::close(fd);
        for (int fd : retired) ::close(fd);
    }

    void warn(Warning kind, const std::string& text) {
        int k = static_cast<int>(kind);
        if (warned[k].exchange(true)) return;
        if (opt.on_warning) {
            opt.on_warning(text);
            return;
        }
        if (!g_stderr_warned[k].exchange(true)) std::fprintf(stderr, "jitexpr: warning: %s\n", text.c_str());
    }

    void degrade(const std::string& why) {
        {
            std::lock_guard lock(mutex);
            if (!on.load()) return;
            on = false;
            reason = why;
        }
        warn(Warning::Unusable,
             "disk cache at '" + root + "' is not usable (" + why + "); compiled kernels are cached in memory only");
    }

    std::string shard_path(std::string_view shard) const {
        return shard.empty() ? base : base + "/" + std::string(shard);
    }
    static std::string entry_name(std::string_view key) { return std::string(key) + kSuffix; }
    std::string entry_path(std::string_view key) const { return shard_path(key.substr(0, 2)) + "/" + entry_name(key); }

    // Creates <root>/v2 when needed and opens it; checks that it is safe to load code from.
    // Returns the descriptor, or -1 after degrading with the reason.
    int open_base() {
        if (int err = make_dirs(root)) {
            degrade("cannot create " + root + ": " + errno_text(err));
            return -1;
        }
        Fd rootfd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!rootfd.ok()) {
            degrade("cannot open " + root + ": " + errno_text(errno));
            return -1;
        }
        if (::mkdirat(rootfd.get(), kVersionDir, 0700) != 0 && errno != EEXIST) {
            degrade("cannot create " + base + ": " + errno_text(errno));
            return -1;
        }
        Fd fd = open_dir_at(rootfd.get(), kVersionDir);
        if (!fd.ok()) {
            degrade(base + (errno == ELOOP || errno == ENOTDIR ? " is not a directory (a symbolic link or a file)"
                                                               : ": " + errno_text(errno)));
            return -1;
        }
        // The files here are loaded as code: refuse a directory others could write into.
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            degrade(base + " is not a directory");
            return -1;
        }
        if (st.st_uid != ::geteuid()) {
            degrade(base + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
            return -1;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
            degrade(base + " is writable by other users (mode " + mode + ")");
            return -1;
        }
        // A real write test: permission bits do not stop root, and a read-only mount only shows here.
        int err = 0;
        if (auto probe = files::TempFile::create(fd.get(), &err); !probe) {
            degrade("cannot write in " + base + ": " + errno_text(err));
            return -1;
        }
        return fd.release();
    }

    // After the version folder was removed under us: make and open it again, once.
    int reopen_base(int stale) {
        std::unique_lock lock(mutex);
        if (base_fd.load() != stale) return base_fd.load();  // another thread did it
        lock.unlock();
        const int fresh = open_base();  // degrades (taking the lock) when it cannot
        if (fresh < 0) return -1;
        lock.lock();
        if (base_fd.load() != stale) {  // another thread was quicker
            ::close(fresh);
            return base_fd.load();
        }
        retired.push_back(base_fd.exchange(fresh));
        return fresh;
    }

    // The key folder of `key`, made when `create`. Never a symbolic link.
    Fd open_shard(int bfd, std::string_view key, bool create, int* err) const {
        const std::string shard(key.substr(0, 2));
        Fd fd = open_dir_at(bfd, shard.c_str());
        if (!fd.ok() && errno == ENOENT && create) {
            if (::mkdirat(bfd, shard.c_str(), 0700) != 0 && errno != EEXIST) {
                if (err) *err = errno;
                return fd;
            }
            fd = open_dir_at(bfd, shard.c_str());
        }
        if (!fd.ok() && err) *err = errno;
        return fd;
    }

    // Calls entry(shard_fd, info) for every file in the key folders, other(path, why) for
    // everything in the version folder that is not part of the cache's layout.
    template <class Entry, class Other>
    void walk(Entry&& entry, Other&& other) const {
        const int bfd = base_fd.load();
        if (bfd < 0) return;
        std::vector<std::string> top = list_names(bfd);
        std::sort(top.begin(), top.end());
        for (const std::string& n : top) {
            if (!is_shard_name(n)) {
                if (n == kLockName) continue;
                if (files::is_temporary_name(n)) {  // the start-up write test's file
                    FileInfo f;
                    f.name = n;
                    entry(bfd, f);
                    continue;
                }
                other(bfd, base + "/" + n, "not part of the cache");
                continue;
            }
            Fd sfd = open_dir_at(bfd, n.c_str());
            if (!sfd.ok()) {
                if (errno != ENOENT)
                    other(bfd, shard_path(n),
                          errno == ELOOP || errno == ENOTDIR ? "not a directory (not followed)"
                                                             : "cannot open: " + errno_text(errno));
                continue;
            }
            for (const std::string& name : list_names(sfd.get())) {
                FileInfo f;
                f.shard = n;
                f.name = name;
                f.key = std::string(key_of_name(name, n));
                struct stat st {};
                if (::fstatat(sfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
                f.size = static_cast<std::uint64_t>(st.st_size);
                f.mtime = mtime_ns(st);
                if (f.key.empty() || !S_ISREG(st.st_mode)) {
                    if (files::is_temporary_name(name)) {
                        entry(sfd.get(), f);  // the caller decides about temporary files
                        continue;
                    }
                    if (f.key.empty()) {
                        other(sfd.get(), shard_path(n) + "/" + name, "not a cache entry (unexpected name)");
                        continue;
                    }
                }
                entry(sfd.get(), f);
            }
        }
    }

    // Entries with their sizes (entry names of regular files; their owner is checked only where
    // something is removed).
    std::vector<FileInfo> entry_files() const {
        std::vector<FileInfo> out;
        walk(
            [&](int sfd, const FileInfo& f) {
                struct stat st {};
                if (!f.key.empty() && ::fstatat(sfd, f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISREG(st.st_mode))
                    out.push_back(f);
            },
            [](int, const std::string&, const std::string&) {});
        return out;
    }

    // Opens the lock that serialises eviction between processes; invalid when another holds it.
    Fd try_eviction_lock(int bfd) const {
        Fd fd(::openat(bfd, kLockName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600));
        struct stat st {};
        if (!fd.ok() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Fd();
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return Fd();
        return fd;
    }
};

// ---------------------------------------------------------------------------------------------

std::string DiskCache::resolve_directory(const DiskCacheOptions& options) {
    if (!options.enabled) return {};
    auto env = [&](const char* name) -> std::string {
        if (!options.use_environment) return {};
        const char* v = std::getenv(name);
        return v ? std::string(v) : std::string();
    };
    if (options.use_environment && env_says_off()) return {};
    if (!options.dir.empty()) return options.dir;
    if (!options.use_environment) return {};
    if (std::string d = env("JITEXPR_CACHE_DIR"); !d.empty()) return d;
    if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/') return x + "/jitexpr";
    std::string home = env("HOME");
    if (home.empty()) {
        if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) home = pw->pw_dir;
    }
    if (home.empty()) return {};
    return home + "/.cache/jitexpr";
}

std::uint8_t DiskCache::default_checksum() { return kDefaultChecksum; }

std::string DiskCache::checksum(std::uint8_t algorithm, std::string_view covered) {
    const std::size_t len = checksum_length(algorithm);
    if (len == 0 || covered.size() < 32) return {};
    const auto sum = entry_checksum(algorithm, covered.data(), {}, covered.substr(32));
    return std::string(reinterpret_cast<const char*>(sum.data()), len);
}

bool DiskCache::valid_key(std::string_view key) {
    if (key.size() < 8 || key.size() > 128) return false;
    return std::all_of(key.begin(), key.end(), is_hex_lower);
}

static void require_key(std::string_view key) {
    if (!DiskCache::valid_key(key)) {
        throw ArgumentError("disk cache key must be 8 to 128 lowercase hex characters, got '" +
                            std::string(key.substr(0, 140)) + "'");
    }
}

DiskCache::DiskCache(DiskCacheOptions options) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.opt = std::move(options);
    if (m.opt.checksum != 0 && checksum_length(m.opt.checksum) == 0)
        throw ArgumentError("DiskCacheOptions::checksum " + std::to_string(m.opt.checksum) +
                            " is not an algorithm this jitexpr computes (1: SHA-256" +
                            (kDefaultChecksum == kXxh3 ? ", 2: XXH3-128)" : "; built without xxhash.h)"));
    m.root = resolve_directory(m.opt);
    if (m.root.empty()) {
        if (!m.opt.enabled) m.reason = "disabled by option";
        else if (m.opt.use_environment && env_says_off()) m.reason = "disabled by JITEXPR_DISK_CACHE";
        else m.reason = "no cache directory (no option, JITEXPR_CACHE_DIR, XDG_CACHE_HOME or HOME)";
        return;
    }
    while (m.root.size() > 1 && m.root.back() == '/') m.root.pop_back();
    m.base = m.root + "/" + kVersionDir;
    m.on = true;
    m.base_fd = m.open_base();
}

DiskCache::~DiskCache() = default;

bool DiskCache::enabled() const { return impl_->on.load(); }

std::string DiskCache::directory() const { return impl_->on.load() ? impl_->root : std::string(); }

std::string DiskCache::disabled_reason() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->on.load() ? std::string() : impl_->reason;
}

std::string DiskCache::path_for(std::string_view key) const {
    require_key(key);
    if (impl_->base.empty()) return {};
    return impl_->entry_path(key);
}

std::optional<std::string> DiskCache::get(std::string_view key) {
    require_key(key);
    Impl& m = *impl_;
    const int bfd = m.base_fd.load();
    if (!m.on.load() || bfd < 0) {
        ++m.misses;
        return std::nullopt;
    }
    Fd sfd = m.open_shard(bfd, key, false, nullptr);
    if (!sfd.ok()) {
        ++m.misses;
        return std::nullopt;
    }
    const std::string name = Impl::entry_name(key);
    std::string payload;
    Fd open_file;
    Examined x = examine(sfd.get(), name, key, true, &payload, &open_file);
    if (x.verdict == Verdict::Valid) {
        touch(open_file.get());
        ++m.hits;
        return payload;
    }
    if (x.present && removable(x.verdict)) {
        remove_if_same(sfd.get(), name, x.st);
        ++m.corrupt;
    }
    ++m.misses;
    return std::nullopt;
}

bool DiskCache::put(std::string_view key, std::string_view bytes) { return put(key, bytes, nullptr); }

bool DiskCache::put(std::string_view key, std::string_view bytes, std::string* why_not) {
    require_key(key);
    Impl& m = *impl_;
    if (!m.on.load()) {
        if (why_not) *why_not = "the disk cache is off: " + disabled_reason();
        return false;
    }

    auto fail = [&](int err, const std::string& what) {
        ++m.write_failures;
        const std::string text = what + ": " + files::write_error_text(err);
        if (why_not) *why_not = text;
        if (is_no_space(err)) {
            m.warn(Warning::NoSpace, "disk cache at '" + m.root + "' is full (" + files::write_error_text(err) +
                                         "); compiled kernels are not saved to disk");
        } else if (is_unusable(err)) {
            m.degrade(text);
        } else {
            m.warn(Warning::WriteError, "disk cache at '" + m.root + "': " + text + "; the entry was not saved");
        }
        return false;
    };
    auto refuse = [&](const std::string& path, const std::string& why) {
        ++m.write_failures;
        const std::string text = "'" + path + "' is not a jitexpr cache entry (" + why +
                                 "); it is left in place, so this kernel is not stored on disk";
        if (why_not) *why_not = text + " (remove it to store the kernel)";
        m.warn(Warning::Foreign, "disk cache: " + text);
        return false;
    };

    int bfd = m.base_fd.load();
    if (bfd < 0) return fail(ENOENT, "no cache folder");
    int err = 0;
    Fd sfd = m.open_shard(bfd, key, true, &err);
    if (!sfd.ok() && err == ENOENT) {
        // The tree was removed under us: make it again once.
        bfd = m.reopen_base(bfd);
        if (bfd < 0) {
            if (why_not) *why_not = "the disk cache is off: " + disabled_reason();
            return false;
        }
        sfd = m.open_shard(bfd, key, true, &err);
    }
    const std::string shard_path = m.shard_path(key.substr(0, 2));
    if (!sfd.ok()) {
        if (err == ELOOP || err == ENOTDIR) return refuse(shard_path, "not a directory");
        return fail(err, "cannot create " + shard_path);
    }

    std::optional<files::TempFile> tmp = files::TempFile::create(sfd.get(), &err);
    if (!tmp) return fail(err, "cannot create a temporary file in " + shard_path);
    // Entries are private to the user whatever the umask.
    (void)::fchmod(tmp->fd(), 0600);

    char header[kHeaderSize] = {};
    std::memcpy(header, kMagic, sizeof kMagic);
    put_u32(header + 8, kFormatVersion);
    put_u16(header + 12, static_cast<std::uint16_t>(kHeaderSize));
    const std::uint8_t algorithm = m.opt.checksum ? m.opt.checksum : kDefaultChecksum;
    header[14] = static_cast<char>(algorithm);
    header[15] = static_cast<char>(checksum_length(algorithm));
    put_u32(header + 16, static_cast<std::uint32_t>(key.size()));
    put_u32(header + 20, 0);
    put_u64(header + 24, bytes.size());
    const auto sum = entry_checksum(algorithm, header, key, bytes);
    std::memcpy(header + 32, sum.data(), sum.size());

    const std::string temp_path = shard_path + "/" + tmp->name();
    if (int e = files::write_all(tmp->fd(), header, kHeaderSize)) return fail(e, "cannot write " + temp_path);
    if (int e = files::write_all(tmp->fd(), key.data(), key.size())) return fail(e, "cannot write " + temp_path);
    if (int e = files::write_all(tmp->fd(), bytes.data(), bytes.size())) return fail(e, "cannot write " + temp_path);
    if (m.opt.fsync && ::fsync(tmp->fd()) != 0) return fail(errno, "cannot sync " + temp_path);
    touch(tmp->fd());

    // Only an absent name, an empty file, an empty folder or a file of jitexpr's is replaced.
    const std::string name = Impl::entry_name(key);
    const std::string path = m.entry_path(key);
    for (int attempt = 0; attempt < 2; ++attempt) {
        Examined x = examine(sfd.get(), name, key, false, nullptr);
        if (x.present && S_ISDIR(x.st.st_mode)) {
            if (::unlinkat(sfd.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
                return refuse(path, "a directory that is not empty");
            x.present = false;
        } else if (x.present && !ours(x.verdict)) {
            return refuse(path, x.why);
        }
        err = tmp->commit(name, /*no_replace=*/!x.present);
        if (err != EEXIST) break;  // another process stored it meanwhile: look at it once more
    }
    if (err) return fail(err, "cannot rename into " + path);
    if (m.opt.fsync) (void)::fsync(sfd.get());  // best effort: the entry is in place either way
    ++m.writes;

    bool over = false;
    {
        std::lock_guard lock(m.mutex);
        // Other processes write too: rescan when our estimate crosses the bound, on our first
        // put, and at least once a minute.
        if (m.approx_bytes && std::chrono::steady_clock::now() - m.last_scan < kRescanInterval) {
            *m.approx_bytes += kHeaderSize + key.size() + bytes.size();
            over = *m.approx_bytes > m.opt.max_bytes;
        } else {
            over = true;
        }
    }
    if (over) evict();
    return true;
}

bool DiskCache::erase(std::string_view key) {
    require_key(key);
    Impl& m = *impl_;
    const int bfd = m.base_fd.load();
    if (!m.on.load() || bfd < 0) return false;
    Fd sfd = m.open_shard(bfd, key, false, nullptr);
    if (!sfd.ok()) return false;
    const std::string name = Impl::entry_name(key);
    Examined x = examine(sfd.get(), name, key, false, nullptr);
    return x.present && S_ISREG(x.st.st_mode) && ours(x.verdict) && remove_if_same(sfd.get(), name, x.st);
}

void DiskCache::evict() {
    Impl& m = *impl_;
    const int bfd = m.base_fd.load();
    if (!m.on.load() || bfd < 0) return;
    Fd lock = m.try_eviction_lock(bfd);
    if (!lock.ok()) return;  // another process is evicting right now

    std::vector<FileInfo> entries;
    std::uint64_t total = 0;
    m.walk(
        [&](int sfd, const FileInfo& f) {
            if (f.key.empty()) {
                if (files::is_stale_temporary(sfd, f.name.c_str())) ::unlinkat(sfd, f.name.c_str(), 0);
                return;
            }
            total += f.size;
            entries.push_back(f);
        },
        [](int, const std::string&, const std::string&) {});
    if (total > m.opt.max_bytes) {
        double fraction = std::clamp(m.opt.evict_to, 0.0, 1.0);
        auto target = static_cast<std::uint64_t>(static_cast<double>(m.opt.max_bytes) * fraction);
        std::sort(entries.begin(), entries.end(), [](const FileInfo& a, const FileInfo& b) {
            return a.mtime != b.mtime ? a.mtime < b.mtime : a.key < b.key;
        });
        std::string open_shard;
        Fd sfd;
        for (const FileInfo& f : entries) {
            if (total <= target) break;
            if (f.shard != open_shard) {
                sfd = open_dir_at(bfd, f.shard.c_str());
                open_shard = f.shard;
            }
            total -= f.size;  // gone, foreign or removed: either way not ours to count any more
            if (!sfd.ok()) continue;
            Examined x = examine(sfd.get(), f.name, f.key, false, nullptr);
            if (x.present && S_ISREG(x.st.st_mode) && ours(x.verdict) && remove_if_same(sfd.get(), f.name, x.st))
                ++m.evictions;
        }
    }
    std::lock_guard g(m.mutex);
    m.approx_bytes = total;
    m.last_scan = std::chrono::steady_clock::now();
}

DiskStats DiskCache::stats() const {
    const Impl& m = *impl_;
    DiskStats s;
    s.hits = m.hits;
    s.misses = m.misses;
    s.corrupt_removed = m.corrupt;
    s.writes = m.writes;
    s.write_failures = m.write_failures;
    s.evictions = m.evictions;
    if (m.on.load()) {
        for (const auto& f : m.entry_files()) {
            ++s.entries;
            s.bytes += f.size;
        }
    }
    return s;
}

ClearReport DiskCache::clear() {
    Impl& m = *impl_;
    ClearReport report;
    if (!m.on.load()) return report;
    m.walk(
        [&](int sfd, const FileInfo& f) {
            const std::string path = m.shard_path(f.shard) + "/" + f.name;
            if (f.key.empty()) {  // a temporary file: only a stale one is removed
                if (files::is_stale_temporary(sfd, f.name.c_str()) && ::unlinkat(sfd, f.name.c_str(), 0) == 0)
                    ++report.temporaries;
                return;
            }
            Examined x = examine(sfd, f.name, f.key, false, nullptr);
            if (!x.present) return;
            if (S_ISDIR(x.st.st_mode) && ::unlinkat(sfd, f.name.c_str(), AT_REMOVEDIR) == 0) return;  // empty
            if (S_ISREG(x.st.st_mode) && ours(x.verdict)) {
                int error = 0;
                if (remove_if_same(sfd, f.name, x.st, &error)) ++report.removed;
                else if (error != 0) report.failed.push_back(path + ": cannot remove: " + std::strerror(error));
                return;
            }
            report.left.push_back(path + ": " + x.why);
        },
        [&](int, const std::string& path, const std::string& why) { report.left.push_back(path + ": " + why); });

    // The previous formats' folders: their entries that prove to be jitexpr's, then the folders
    // they leave empty.
    if (Fd rootfd(::open(m.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); rootfd.ok()) {
        const std::int64_t now = now_ns();
        for (std::uint32_t version : {1u, 2u}) {
            const char* dir = version == 1 ? kV1Dir : kV2Dir;
            Fd old = open_dir_at(rootfd.get(), dir);
            if (!old.ok()) continue;
            for (const std::string& shard : list_names(old.get())) {
                if (!is_shard_name(shard)) {
                    if (version == 2 && files::is_stale_temporary(old.get(), shard.c_str()) &&
                        ::unlinkat(old.get(), shard.c_str(), 0) == 0)
                        ++report.old_format_removed;  // v2's start-up write test
                    continue;
                }
                Fd sfd = open_dir_at(old.get(), shard.c_str());
                if (!sfd.ok()) continue;
                for (const std::string& name : list_names(sfd.get())) {
                    struct stat st {};
                    bool mine = !key_of_name(name, shard).empty() && is_old_file(sfd.get(), name, version, &st);
                    if (!mine && version == 1 && name.rfind(".tmp-", 0) == 0 &&
                        ::fstatat(sfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                        st.st_uid == ::geteuid() && now - mtime_ns(st) > kV1StaleTempNs)
                        mine = true;  // v1's temporary files, by its own rule: an hour old
                    if (!mine && version == 2 && files::is_stale_temporary(sfd.get(), name.c_str())) {
                        if (::unlinkat(sfd.get(), name.c_str(), 0) == 0) ++report.old_format_removed;
                        continue;
                    }
                    if (mine && remove_if_same(sfd.get(), name, st)) ++report.old_format_removed;
                }
                ::unlinkat(old.get(), shard.c_str(), AT_REMOVEDIR);  // only when empty
            }
            struct stat st {};
            if (::fstatat(old.get(), kLockName, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                st.st_size == 0)
                ::unlinkat(old.get(), kLockName, 0);
            ::unlinkat(rootfd.get(), dir, AT_REMOVEDIR);  // only when empty
        }
    }
    std::lock_guard lock(m.mutex);
    m.approx_bytes.reset();
    return report;
}

VerifyReport DiskCache::verify() {
    Impl& m = *impl_;
    VerifyReport report;
    if (!m.on.load()) return report;
    m.walk(
        [&](int sfd, const FileInfo& f) {
            const std::string path = m.shard_path(f.shard) + "/" + f.name;
            if (f.key.empty()) {
                if (files::is_stale_temporary(sfd, f.name.c_str()) && ::unlinkat(sfd, f.name.c_str(), 0) == 0) {
                    ++report.removed;
                    report.problems.push_back(path + ": temporary file left by a writer that stopped");
                }
                return;
            }
            ++report.checked;
            Examined x = examine(sfd, f.name, f.key, true, nullptr);
            if (!x.present) {
                --report.checked;  // evicted or replaced meanwhile
                return;
            }
            if (x.verdict == Verdict::Valid) {
                ++report.valid;
                return;
            }
            if (S_ISDIR(x.st.st_mode) && ::unlinkat(sfd, f.name.c_str(), AT_REMOVEDIR) == 0) {
                ++report.removed;
                report.problems.push_back(path + ": an empty directory in place of an entry");
                return;
            }
            int error = 0;
            if (removable(x.verdict) && remove_if_same(sfd, f.name, x.st, &error)) {
                ++m.corrupt;
                ++report.removed;
                report.problems.push_back(path + ": " + x.why);
                return;
            }
            if (error != 0) {  // damaged and jitexpr's, but not removable here
                report.failed.push_back(path + ": " + x.why + "; cannot remove: " + std::strerror(error));
                return;
            }
            report.left.push_back(path + ": " + x.why);
        },
        [&](int, const std::string& path, const std::string& why) { report.left.push_back(path + ": " + why); });
    return report;
}

std::vector<DiskEntry> DiskCache::entries() const {
    std::vector<DiskEntry> out;
    if (!impl_->on.load()) return out;
    for (const auto& f : impl_->entry_files()) out.push_back(DiskEntry{f.key, f.size, f.mtime});
    std::sort(out.begin(), out.end(), [](const DiskEntry& a, const DiskEntry& b) {
        return a.last_use_ns != b.last_use_ns ? a.last_use_ns > b.last_use_ns : a.key < b.key;
    });
    return out;
}

// ---------------------------------------------------------------------------------------------

ImageCache::ImageCache(std::size_t memory_entries, DiskCacheOptions disk)
    : memory_(memory_entries), disk_(std::move(disk)) {}

ImageCache::Image ImageCache::get_or_create(const std::string& key, const std::function<std::string()>& factory,
                                            bool* from_disk) {
    bool disk_hit = false;
    Image image = memory_.get_or_create(key, [&]() -> Image {
        if (auto bytes = disk_.get(key)) {
            disk_hit = true;
            return std::make_shared<const std::string>(std::move(*bytes));
        }
        std::string bytes = factory();
        ++created_;
        disk_.put(key, bytes);
        return std::make_shared<const std::string>(std::move(bytes));
    });
    if (from_disk) *from_disk = disk_hit;
    return image;
}

ImageCacheStats ImageCache::stats() const {
    ImageCacheStats s;
    s.memory = memory_.stats();
    s.disk = disk_.stats();
    s.created = created_;
    return s;
}

}  // namespace jit::cache

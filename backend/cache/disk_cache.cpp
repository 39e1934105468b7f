// The disk cache: one checksummed file per key, written atomically, LRU by bytes via mtime.
//
// File layout (all integers little-endian):
//   0  magic "JITXCACH"                8 bytes
//   8  format version (1)              u32
//  12  key length                      u32
//  16  payload length                  u64
//  24  SHA-256 of the payload          32 bytes
//  56  key bytes, then payload bytes; the file ends exactly there.
#include "backend/cache/cache.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace jit::cache {
namespace {

constexpr char kMagic[8] = {'J', 'I', 'T', 'X', 'C', 'A', 'C', 'H'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderSize = 56;
constexpr const char* kVersionDir = "v1";
constexpr const char* kSuffix = ".bin";
constexpr const char* kTempPrefix = ".tmp-";
constexpr const char* kLockName = "evict.lock";
// A temporary file this old belongs to a writer that died; anyone may remove it.
constexpr std::chrono::seconds kRescanInterval{60};
constexpr std::int64_t kStaleTempNs = std::int64_t(3600) * 1000000000;

enum class Warning { Unusable, NoSpace, WriteError, Count };

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

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) ::close(fd_);
            fd_ = other.release();
        }
        return *this;
    }
    int get() const { return fd_; }
    bool ok() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

// Reads up to n bytes; returns how many (short only at end of file), or -1 with errno.
ssize_t read_full(int fd, void* buf, std::size_t n) {
    auto p = static_cast<char*>(buf);
    std::size_t done = 0;
    while (done < n) {
        ssize_t r = ::read(fd, p + done, n - done);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        done += static_cast<std::size_t>(r);
    }
    return static_cast<ssize_t>(done);
}

bool write_full(int fd, const void* buf, std::size_t n) {
    auto p = static_cast<const char*>(buf);
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

void put_u32(char* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u64(char* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
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
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    return 0;
}

bool env_says_off() {
    const char* v = std::getenv("JITEXPR_DISK_CACHE");
    if (!v) return false;
    std::string_view off = v;
    return off == "0" || off == "false" || off == "off" || off == "no";
}

bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }
bool is_unusable(int err) {
    return err == EACCES || err == EPERM || err == EROFS || err == ENOTDIR;
}

// Why the open file `fd` (of size `size`) is not a valid entry for `key`, or empty when it is
// valid; the payload goes to *payload when given.
std::string check_entry(int fd, std::uint64_t size, std::string_view key, std::string* payload) {
    if (size == 0) return "empty file";
    if (size < kHeaderSize) return "truncated header (" + std::to_string(size) + " bytes)";
    char header[kHeaderSize];
    ssize_t got = read_full(fd, header, kHeaderSize);
    if (got < 0) return "read error: " + errno_text(errno);
    if (static_cast<std::size_t>(got) != kHeaderSize) return "truncated header";
    if (std::memcmp(header, kMagic, sizeof kMagic) != 0) return "not a jitexpr cache file (bad magic)";
    std::uint32_t version = get_u32(header + 8);
    if (version != kFormatVersion)
        return "format version " + std::to_string(version) + ", expected " + std::to_string(kFormatVersion);
    std::uint32_t key_len = get_u32(header + 12);
    std::uint64_t payload_len = get_u64(header + 16);
    if (key_len != key.size()) return "key length does not match the file name";
    if (payload_len > size || size - kHeaderSize - key_len != payload_len) {
        return "length mismatch: header says " + std::to_string(kHeaderSize + key_len + payload_len) +
               " bytes, file has " + std::to_string(size);
    }
    std::string stored_key(key_len, '\0');
    if (read_full(fd, stored_key.data(), key_len) != static_cast<ssize_t>(key_len)) return "truncated key";
    if (stored_key != key) return "stored key differs from the file name";
    std::string data(payload_len, '\0');
    got = read_full(fd, data.data(), payload_len);
    if (got < 0) return "read error: " + errno_text(errno);
    if (static_cast<std::uint64_t>(got) != payload_len) return "truncated payload";
    auto sum = Sha256().update(data).finish();
    if (std::memcmp(sum.data(), header + 24, sum.size()) != 0) return "payload checksum mismatch";
    if (payload) *payload = std::move(data);
    return {};
}

// Removes `path` only if it still is the file we examined (a writer may have renamed a fresh
// entry over it since). Tolerates it being gone.
void remove_if_same(const std::string& path, const struct stat& seen) {
    struct stat now{};
    if (::lstat(path.c_str(), &now) != 0) return;
    if (now.st_dev == seen.st_dev && now.st_ino == seen.st_ino) ::unlink(path.c_str());
}

struct FileInfo {
    std::string path;
    std::string key;  // empty for non-entries
    enum Kind { Entry, Temp, Other } kind = Other;
    std::uint64_t size = 0;
    std::int64_t mtime = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

struct DiskCache::Impl {
    DiskCacheOptions opt;
    std::string root;  // <dir>
    std::string base;  // <dir>/v1
    std::atomic<bool> on{false};
    mutable std::mutex mutex;  // reason, approx_bytes
    std::string reason;
    std::optional<std::uint64_t> approx_bytes;  // at the last scan, plus our puts since
    std::chrono::steady_clock::time_point last_scan;
    std::atomic<bool> warned[static_cast<int>(Warning::Count)] = {};
    std::atomic<std::uint64_t> hits{0}, misses{0}, corrupt{0}, writes{0}, write_failures{0}, evictions{0};
    std::atomic<std::uint64_t> temp_counter{0};
    std::uint64_t temp_salt = 0;

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

    std::string shard_dir(std::string_view key) const { return base + "/" + std::string(key.substr(0, 2)); }
    std::string entry_path(std::string_view key) const {
        return shard_dir(key) + "/" + std::string(key) + kSuffix;
    }

    // Every file under base/<2 hex>/. Files that vanish while listing are skipped.
    std::vector<FileInfo> scan() const {
        std::vector<FileInfo> out;
        DIR* top = ::opendir(base.c_str());
        if (!top) return out;
        std::vector<std::string> shards;
        while (dirent* d = ::readdir(top)) {
            std::string_view name = d->d_name;
            if (name.size() == 2 && is_hex_lower(name[0]) && is_hex_lower(name[1])) shards.emplace_back(name);
        }
        ::closedir(top);
        std::sort(shards.begin(), shards.end());
        for (const auto& shard : shards) {
            std::string dir = base + "/" + shard;
            DIR* sd = ::opendir(dir.c_str());
            if (!sd) continue;
            while (dirent* d = ::readdir(sd)) {
                std::string_view name = d->d_name;
                if (name == "." || name == "..") continue;
                FileInfo f;
                f.path = dir + "/" + std::string(name);
                struct stat st{};
                if (::fstatat(::dirfd(sd), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                f.size = static_cast<std::uint64_t>(st.st_size);
                f.mtime = mtime_ns(st);
                if (name.substr(0, std::strlen(kTempPrefix)) == kTempPrefix && S_ISREG(st.st_mode)) {
                    f.kind = FileInfo::Temp;
                } else if (ends_with(name, kSuffix)) {
                    std::string_view stem = name.substr(0, name.size() - std::strlen(kSuffix));
                    if (DiskCache::valid_key(stem) && stem.substr(0, 2) == shard) {
                        f.kind = FileInfo::Entry;
                        f.key = std::string(stem);
                    }
                }
                out.push_back(std::move(f));
            }
            ::closedir(sd);
        }
        return out;
    }

    // Opens the lock that serialises eviction between processes; -1 when another holds it.
    int try_eviction_lock() const {
        std::string path = base + "/" + kLockName;
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) return -1;
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd);
            return -1;
        }
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
    m.temp_salt = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    m.root = resolve_directory(m.opt);
    if (m.root.empty()) {
        if (!m.opt.enabled)
            m.reason = "disabled by option";
        else if (m.opt.use_environment && env_says_off())
            m.reason = "disabled by JITEXPR_DISK_CACHE";
        else
            m.reason = "no cache directory (no option, JITEXPR_CACHE_DIR, XDG_CACHE_HOME or HOME)";
        return;
    }
    while (m.root.size() > 1 && m.root.back() == '/') m.root.pop_back();
    m.base = m.root + "/" + kVersionDir;
    m.on = true;
    if (int err = make_dirs(m.base)) {
        m.degrade("cannot create " + m.base + ": " + errno_text(err));
        return;
    }
    // The files here are loaded as code: refuse a directory others could write into.
    struct stat st{};
    if (::lstat(m.base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        m.degrade(m.base + " is not a directory");
        return;
    }
    if (st.st_uid != ::geteuid()) {
        m.degrade(m.base + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
        return;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        m.degrade(m.base + " is writable by other users (mode " + mode + ")");
        return;
    }
    // A real write test: permission bits do not stop root, and a read-only mount only shows here.
    std::string probe = m.base + "/" + kTempPrefix + "probe-" + std::to_string(::getpid()) + "-" +
                        std::to_string(m.temp_salt);
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        m.degrade("cannot write in " + m.base + ": " + errno_text(errno));
        return;
    }
    ::close(fd);
    ::unlink(probe.c_str());
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
    if (!m.on.load()) {
        ++m.misses;
        return std::nullopt;
    }
    const std::string path = m.entry_path(key);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st{};
    std::string problem;
    if (!fd.ok()) {
        if (errno != ELOOP || ::lstat(path.c_str(), &st) != 0) {
            ++m.misses;  // absent (or unreadable): a plain miss
            return std::nullopt;
        }
        problem = "symbolic link";
    } else if (::fstat(fd.get(), &st) != 0) {
        ++m.misses;
        return std::nullopt;
    } else if (!S_ISREG(st.st_mode)) {
        problem = "not a regular file";
    } else {
        std::string payload;
        problem = check_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), key, &payload);
        if (problem.empty()) {
            touch(fd.get());
            ++m.hits;
            return payload;
        }
    }
    remove_if_same(path, st);
    ++m.corrupt;
    ++m.misses;
    return std::nullopt;
}

bool DiskCache::put(std::string_view key, std::string_view bytes) {
    require_key(key);
    Impl& m = *impl_;
    if (!m.on.load()) return false;

    auto fail = [&](int err, const std::string& what) {
        ++m.write_failures;
        if (is_no_space(err)) {
            m.warn(Warning::NoSpace, "disk cache at '" + m.root + "' is full (" + errno_text(err) +
                                         "); compiled kernels are not saved to disk");
        } else if (is_unusable(err)) {
            m.degrade(what + ": " + errno_text(err));
        } else {
            m.warn(Warning::WriteError, "disk cache at '" + m.root + "': " + what + ": " + errno_text(err) +
                                            "; the entry was not saved");
        }
        return false;
    };

    const std::string dir = m.shard_dir(key);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        int err = errno;
        // The tree may have been removed under us: make it again once.
        if (err != ENOENT || make_dirs(dir) != 0) return fail(err, "cannot create " + dir);
    }

    const std::string path = m.entry_path(key);
    std::string temp;
    Fd fd;
    for (int attempt = 0; attempt < 4 && !fd.ok(); ++attempt) {
        temp = dir + "/" + kTempPrefix + std::string(key.substr(0, 16)) + "-" + std::to_string(::getpid()) + "-" +
               std::to_string(m.temp_salt) + "-" + std::to_string(m.temp_counter++);
        fd = Fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd.ok() && errno != EEXIST) return fail(errno, "cannot create " + temp);
    }
    if (!fd.ok()) return fail(EEXIST, "cannot create a temporary file in " + dir);

    char header[kHeaderSize];
    std::memcpy(header, kMagic, sizeof kMagic);
    put_u32(header + 8, kFormatVersion);
    put_u32(header + 12, static_cast<std::uint32_t>(key.size()));
    put_u64(header + 16, bytes.size());
    auto sum = Sha256().update(bytes).finish();
    std::memcpy(header + 24, sum.data(), sum.size());

    auto abandon = [&](int err, const std::string& what) {
        ::close(fd.release());
        ::unlink(temp.c_str());
        return fail(err, what);
    };
    if (!write_full(fd.get(), header, kHeaderSize) || !write_full(fd.get(), key.data(), key.size()) ||
        !write_full(fd.get(), bytes.data(), bytes.size())) {
        return abandon(errno, "cannot write " + temp);
    }
    if (m.opt.fsync && ::fsync(fd.get()) != 0) return abandon(errno, "cannot sync " + temp);
    touch(fd.get());
    if (::close(fd.release()) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        return fail(err, "cannot close " + temp);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(temp.c_str());
        return fail(err, "cannot rename into " + path);
    }
    if (m.opt.fsync) {
        Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (d.ok()) (void)::fsync(d.get());  // best effort: the entry is in place either way
    }
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
    if (!impl_->on.load()) return false;
    return ::unlink(impl_->entry_path(key).c_str()) == 0;
}

void DiskCache::evict() {
    Impl& m = *impl_;
    if (!m.on.load()) return;
    Fd lock(m.try_eviction_lock());
    if (!lock.ok()) return;  // another process is evicting right now

    std::vector<FileInfo> files = m.scan();
    const std::int64_t now = now_ns();
    std::uint64_t total = 0;
    std::vector<const FileInfo*> entries;
    for (const auto& f : files) {
        if (f.kind == FileInfo::Entry) {
            total += f.size;
            entries.push_back(&f);
        } else if (f.kind == FileInfo::Temp && now - f.mtime > kStaleTempNs) {
            ::unlink(f.path.c_str());
        }
    }
    if (total > m.opt.max_bytes) {
        double fraction = std::clamp(m.opt.evict_to, 0.0, 1.0);
        auto target = static_cast<std::uint64_t>(static_cast<double>(m.opt.max_bytes) * fraction);
        std::sort(entries.begin(), entries.end(), [](const FileInfo* a, const FileInfo* b) {
            return a->mtime != b->mtime ? a->mtime < b->mtime : a->key < b->key;
        });
        for (const FileInfo* f : entries) {
            if (total <= target) break;
            // Gone already (another process evicted or cleared it): its bytes are gone too.
            if (::unlink(f->path.c_str()) == 0) ++m.evictions;
            total -= f->size;
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
        for (const auto& f : m.scan()) {
            if (f.kind != FileInfo::Entry) continue;
            ++s.entries;
            s.bytes += f.size;
        }
    }
    return s;
}

void DiskCache::clear() {
    Impl& m = *impl_;
    if (!m.on.load()) return;
    const std::int64_t now = now_ns();
    for (const auto& f : m.scan()) {
        // A fresh temporary file is another writer's entry in progress: leave it.
        if (f.kind == FileInfo::Entry || (f.kind == FileInfo::Temp && now - f.mtime > kStaleTempNs))
            ::unlink(f.path.c_str());
    }
    std::lock_guard lock(m.mutex);
    m.approx_bytes = 0;
}

VerifyReport DiskCache::verify() {
    Impl& m = *impl_;
    VerifyReport report;
    if (!m.on.load()) return report;
    const std::int64_t now = now_ns();
    for (const auto& f : m.scan()) {
        std::string problem;
        struct stat st{};
        if (f.kind == FileInfo::Temp) {
            if (now - f.mtime <= kStaleTempNs) continue;
            if (::lstat(f.path.c_str(), &st) != 0) continue;
            problem = "temporary file left by a writer that stopped";
        } else if (f.kind == FileInfo::Other) {
            if (::lstat(f.path.c_str(), &st) != 0) continue;
            ++report.checked;
            problem = "not a cache entry (unexpected name)";
        } else {
            ++report.checked;
            Fd fd(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
            if (!fd.ok()) {
                if (errno == ENOENT) {
                    --report.checked;  // evicted or replaced meanwhile
                    continue;
                }
                if (::lstat(f.path.c_str(), &st) != 0) continue;
                problem = errno == ELOOP ? "symbolic link" : "cannot open: " + errno_text(errno);
            } else if (::fstat(fd.get(), &st) != 0) {
                problem = "cannot stat: " + errno_text(errno);
            } else if (!S_ISREG(st.st_mode)) {
                problem = "not a regular file";
            } else {
                problem = check_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), f.key, nullptr);
            }
            if (problem.empty()) {
                ++report.valid;
                continue;
            }
            ++m.corrupt;
        }
        remove_if_same(f.path, st);
        ++report.removed;
        report.problems.push_back(f.path + ": " + problem);
    }
    return report;
}

std::vector<DiskEntry> DiskCache::entries() const {
    std::vector<DiskEntry> out;
    if (!impl_->on.load()) return out;
    for (const auto& f : impl_->scan())
        if (f.kind == FileInfo::Entry) out.push_back(DiskEntry{f.key, f.size, f.mtime});
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

// The file-system rules of backend/cache/files.hpp.
#include "backend/cache/files.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jit::files {

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

std::string errno_text(int err) { return std::strerror(err); }

std::string write_error_text(int err) {
    if (err == EFBIG) return "the file would exceed the file size limit (ulimit -f)";
    if (err == EPIPE) return "the reader closed the pipe";
    return errno_text(err);
}

// ---- signals held back while writing

namespace {

constexpr int kHeldSignals[2] = {SIGXFSZ, SIGPIPE};

}  // namespace

FileSizeSignalGuard::FileSizeSignalGuard() noexcept {
    sigset_t set, old, pending;
    sigemptyset(&set);
    for (int s : kHeldSignals) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, &old) != 0) return;
    sigemptyset(&pending);
    ::sigpending(&pending);
    for (unsigned i = 0; i < 2; ++i) {
        if (sigismember(&old, kHeldSignals[i])) continue;
        unblock_ |= 1u << i;
        if (!sigismember(&pending, kHeldSignals[i])) drain_ |= 1u << i;
    }
}

FileSizeSignalGuard::~FileSizeSignalGuard() {
    if (!unblock_) return;
    const timespec zero{0, 0};
    sigset_t set;
    for (unsigned i = 0; i < 2; ++i) {
        if (!(drain_ & (1u << i))) continue;
        sigemptyset(&set);
        sigaddset(&set, kHeldSignals[i]);
        while (::sigtimedwait(&set, nullptr, &zero) == kHeldSignals[i]) {}
    }
    sigemptyset(&set);
    for (unsigned i = 0; i < 2; ++i)
        if (unblock_ & (1u << i)) sigaddset(&set, kHeldSignals[i]);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

int write_all(int fd, const void* data, std::size_t n) noexcept {
    FileSizeSignalGuard guard;
    auto p = static_cast<const char*>(data);
    while (n > 0) {
        ssize_t w = ::write(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30));
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return 0;
}

long long read_up_to(int fd, void* data, std::size_t n) noexcept {
    auto p = static_cast<char*>(data);
    std::size_t done = 0;
    while (done < n) {
        ssize_t r = ::read(fd, p + done, std::min<std::size_t>(n - done, std::size_t{1} << 30));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        done += static_cast<std::size_t>(r);
    }
    return static_cast<long long>(done);
}

// ---- temporary files

namespace {

constexpr std::string_view kTempPrefix = ".jitexpr-";
constexpr std::string_view kTempSuffix = ".tmp";
// A temporary file whose writer's process is alive but which nobody has locked for this long
// is not being written: its writer locks it right after creating it.
constexpr std::int64_t kUnlockedGraceNs = std::int64_t(60) * 1000000000;

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t random64() {
    static const std::uint64_t salt = [] {
        std::random_device rd;
        return (std::uint64_t(rd()) << 32) ^ rd();
    }();
    static std::atomic<std::uint64_t> counter{0};
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return splitmix(salt ^ splitmix(counter.fetch_add(1) + std::uint64_t(ts.tv_nsec)));
}

// The registry a signal handler empties: fixed slots, lock-free atomics only.
constexpr int kSlots = 256;
struct Slot {
    std::atomic<int> state{0};  // 0 free, 1 claimed (not to be removed), 2 armed
    int dirfd = -1;
    char name[64] = {};
};
static_assert(std::atomic<int>::is_always_lock_free);
Slot g_slots[kSlots];

int claim_slot(int dirfd, const std::string& name) {
    if (name.size() >= sizeof(Slot::name)) return -1;
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
            g_slots[i].dirfd = dirfd;
            std::memcpy(g_slots[i].name, name.c_str(), name.size() + 1);
            return i;
        }
    }
    return -1;  // more temporary files at once than slots: a later run removes a leftover
}

void arm_slot(int i) {
    if (i >= 0) g_slots[i].state.store(2);
}

void free_slot(int i) {
    if (i >= 0) g_slots[i].state.store(0);
}

std::int64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

std::string temporary_name() {
    return fmt::format("{}{}-{:016x}{}", kTempPrefix, static_cast<long>(::getpid()), random64(), kTempSuffix);
}

bool is_temporary_name(std::string_view name, long* pid) {
    if (name.size() < kTempPrefix.size() + 1 + 1 + 16 + kTempSuffix.size()) return false;
    if (name.substr(0, kTempPrefix.size()) != kTempPrefix) return false;
    if (name.substr(name.size() - kTempSuffix.size()) != kTempSuffix) return false;
    std::string_view mid = name.substr(kTempPrefix.size(), name.size() - kTempPrefix.size() - kTempSuffix.size());
    const auto dash = mid.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash > 10 || mid.size() - dash - 1 != 16) return false;
    long value = 0;
    for (char c : mid.substr(0, dash)) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + (c - '0');
    }
    for (char c : mid.substr(dash + 1))
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    if (pid) *pid = value;
    return true;
}

TempFile::TempFile(int dirfd, Fd fd, std::string name, int slot) noexcept
    : dirfd_(dirfd), fd_(std::move(fd)), name_(std::move(name)), slot_(slot) {}

TempFile::TempFile(TempFile&& other) noexcept
    : dirfd_(other.dirfd_),
      fd_(std::move(other.fd_)),
      name_(std::move(other.name_)),
      slot_(other.slot_),
      done_(other.done_) {
    other.slot_ = -1;
    other.done_ = true;
}

std::optional<TempFile> TempFile::create(int dirfd, int* err) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::string name = temporary_name();
        // Armed before the file exists: a signal handler may run on any thread at any moment,
        // so the name must be registered before there is a file to leave behind. (Should the
        // name exist already, a handler running before free_slot could remove that file; the
        // name holds this process's pid and 64 random bits, so nobody else's file has it.)
        const int slot = claim_slot(dirfd, name);
        arm_slot(slot);
        Fd fd(::openat(dirfd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
        if (!fd.ok()) {
            const int e = errno;
            free_slot(slot);
            if (e == EEXIST) continue;
            if (err) *err = e;
            return std::nullopt;
        }
        // Tells other processes that the writer is alive (where locks work at all).
        (void)::flock(fd.get(), LOCK_EX | LOCK_NB);
        return TempFile(dirfd, std::move(fd), std::move(name), slot);
    }
    if (err) *err = EEXIST;
    return std::nullopt;
}

TempFile::~TempFile() { discard(); }

void TempFile::discard() noexcept {
    if (done_) return;
    done_ = true;
    ::unlinkat(dirfd_, name_.c_str(), 0);
    free_slot(slot_);
    slot_ = -1;
}

int TempFile::commit(const std::string& target, bool no_replace) noexcept {
    if (done_) return EINVAL;
    int rc;
    if (no_replace) {
        rc = ::renameat2(dirfd_, name_.c_str(), dirfd_, target.c_str(), RENAME_NOREPLACE);
        if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
            // No RENAME_NOREPLACE on this file system: a hard link fails on an existing name too.
            rc = ::linkat(dirfd_, name_.c_str(), dirfd_, target.c_str(), 0);
            if (rc == 0) ::unlinkat(dirfd_, name_.c_str(), 0);
        }
    } else {
        rc = ::renameat(dirfd_, name_.c_str(), dirfd_, target.c_str());
    }
    if (rc != 0) return errno;
    done_ = true;
    free_slot(slot_);
    slot_ = -1;
    return 0;
}

void remove_temporaries_for_signal() noexcept {
    for (int i = 0; i < kSlots; ++i) {
        Slot& s = g_slots[i];
        if (s.state.load() == 2) ::unlinkat(s.dirfd, s.name, 0);
    }
}

namespace {

// The open, locked file when `name` is a stale temporary file (removing it while holding the
// lock leaves no moment in which a writer could take it over).
Fd open_if_stale(int dirfd, const char* name) {
    long pid = 0;
    if (!is_temporary_name(name, &pid)) return Fd();
    struct stat st {};
    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
        return Fd();
    Fd fd(::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    struct stat again {};
    if (!fd.ok() || ::fstat(fd.get(), &again) != 0 || again.st_ino != st.st_ino || again.st_dev != st.st_dev)
        return Fd();
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return Fd();  // its writer is alive (or no locks here)
    const bool alive = pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    const std::int64_t age = now_ns() - (std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    if (alive && age <= kUnlockedGraceNs) return Fd();  // perhaps between its creation and its lock
    return fd;
}

}  // namespace

bool is_stale_temporary(int dirfd, const char* name) { return open_if_stale(dirfd, name).ok(); }

std::vector<std::string> remove_stale_temporaries(int dirfd) {
    std::vector<std::string> removed;
    const int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return removed;
    DIR* d = ::fdopendir(copy);
    if (!d) {
        ::close(copy);
        return removed;
    }
    ::rewinddir(d);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        if (std::string_view(e->d_name).substr(0, kTempPrefix.size()) == kTempPrefix) names.emplace_back(e->d_name);
    }
    ::closedir(d);
    for (const std::string& n : names) {
        Fd locked = open_if_stale(dirfd, n.c_str());
        if (locked.ok() && ::unlinkat(dirfd, n.c_str(), 0) == 0) removed.push_back(n);
    }
    return removed;
}

// ---- user-named paths

namespace {

[[noreturn]] void fail(const std::string& path, std::string_view what) {
    throw IOError(fmt::format("{}: {}", printable(path), what));
}

std::string kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    return "not a regular file";
}

bool is_stream(mode_t m) { return S_ISFIFO(m) || S_ISCHR(m); }

std::string dir_of(const std::string& p) {
    const auto slash = p.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return p.substr(0, slash);
}

std::string base_of(const std::string& p) {
    const auto slash = p.rfind('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Follows the symbolic links at the end of `path` to the name they finally point at (which may
// not exist). *via_proc: a link of /proc/<pid>/fd was on the way (/dev/stdout, /dev/fd/N).
std::string final_target(const std::string& path, bool* via_proc) {
    std::string p = path;
    *via_proc = false;
    for (int hop = 0; hop < 40; ++hop) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) {
            if (errno == ENOENT) return p;
            fail(path, fmt::format("cannot follow '{}': {}", printable(p), errno_text(errno)));
        }
        if (!S_ISLNK(st.st_mode)) return p;
        if (p.rfind("/proc/", 0) == 0) *via_proc = true;
        std::string target(4096, '\0');
        const ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
        if (n <= 0 || static_cast<std::size_t>(n) >= target.size())
            fail(path, fmt::format("cannot read the symbolic link '{}'", printable(p)));
        target.resize(static_cast<std::size_t>(n));
        p = target[0] == '/' ? target : dir_of(p) + "/" + target;
    }
    fail(path, "too many levels of symbolic links");
}

void write_chunks(int fd, const std::vector<std::string_view>& chunks, const std::string& path,
                  const WriteHooks* hooks) {
    if (!hooks) {
        for (std::string_view c : chunks)
            if (int err = write_all(fd, c.data(), c.size()))
                fail(path, fmt::format("cannot write: {}", write_error_text(err)));
        return;
    }
    FileSizeSignalGuard guard;
    const std::size_t piece = std::max<std::size_t>(hooks->piece, 1);
    for (std::size_t k = 0; k < chunks.size(); ++k) {
        const char* p = chunks[k].data();
        std::size_t n = chunks[k].size();
        while (n > 0) {
            if (hooks->before_piece) hooks->before_piece();
            const ssize_t w = ::write(fd, p, std::min(n, piece));
            if (w < 0) {
                if (errno == EINTR) continue;                   // asks before_piece again
                if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a FIFO whose reader is slow
                    pollfd pf{fd, POLLOUT, 0};
                    (void)::poll(&pf, 1, 20);
                    continue;
                }
                fail(path, fmt::format("cannot write: {}", write_error_text(errno)));
            }
            if (w == 0) fail(path, fmt::format("cannot write: {}", write_error_text(EIO)));
            p += w;
            n -= static_cast<std::size_t>(w);
            if (hooks->after_piece) hooks->after_piece(k, static_cast<std::size_t>(w));
        }
    }
}

void set_blocking(int fd, bool blocking) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) (void)::fcntl(fd, F_SETFL, blocking ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK));
}

// open() for a path that may be a FIFO, which waits for its other end. With `on_wait`, a FIFO
// is opened without blocking and `on_wait` runs about every 20 ms until the other end is there
// (it may throw: a stop); otherwise open() blocks, and a signal that interrupts it is an error.
// A FIFO opened for writing with `on_wait` is left non-blocking (write_chunks waits for room
// the same way); anything else is returned blocking.
Fd open_waiting(const std::string& path, int flags, const InterruptHook& on_wait, const char* waiting_for) {
    struct stat st {};
    const bool fifo = on_wait && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    if (!fifo) {
        while (true) {
            Fd fd(::open(path.c_str(), flags));
            if (fd.ok() || errno != EINTR) return fd;
            if (!on_wait) fail(path, fmt::format("interrupted while waiting for a {}", waiting_for));
            on_wait();
        }
    }
    if ((flags & O_ACCMODE) == O_WRONLY) {
        // Without a reader, a non-blocking open for writing fails with ENXIO: try again.
        while (true) {
            Fd fd(::open(path.c_str(), flags | O_NONBLOCK));
            if (fd.ok() || (errno != ENXIO && errno != EINTR)) return fd;
            on_wait();
            ::poll(nullptr, 0, 20);
        }
    }
    // For reading, a non-blocking open succeeds at once; data (or the hang-up of a writer that
    // came and went) says the other end was there.
    Fd fd(::open(path.c_str(), flags | O_NONBLOCK));
    if (!fd.ok()) return fd;
    while (true) {
        pollfd p{fd.get(), POLLIN, 0};
        const int r = ::poll(&p, 1, 20);
        if (r > 0) break;
        if (r < 0 && errno != EINTR) break;
        on_wait();
    }
    set_blocking(fd.get(), true);
    return fd;
}

// A stream: opened as it is (blocking until the other end opens), written in order.
void write_stream(const std::string& path, const std::vector<std::string_view>& chunks, bool append,
                  const WriteHooks* hooks) {
    const int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (append ? O_APPEND : 0);
    Fd fd = open_waiting(path, flags, hooks ? hooks->on_interrupt : InterruptHook(), "reader");
    if (!fd.ok()) fail(path, fmt::format("cannot open: {}", errno_text(errno)));
    if (!hooks) set_blocking(fd.get(), true);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail(path, fmt::format("cannot stat: {}", errno_text(errno)));
    if (!is_stream(st.st_mode) && !(append && S_ISREG(st.st_mode)))
        fail(path, fmt::format("is {}; only regular files, pipes, FIFOs and character devices are written",
                               kind_of(st.st_mode)));
    write_chunks(fd.get(), chunks, path, hooks);
    if (hooks && hooks->before_commit) hooks->before_commit();
}

// A regular file or a missing name: a temporary file in its folder, renamed over it.
void replace_file(const std::string& path, const std::string& target, const struct stat* existing,
                  const std::vector<std::string_view>& chunks, const WriteHooks* hooks) {
    const std::string dir = dir_of(target), base = base_of(target);
    if (base.empty() || base == "." || base == "..") fail(path, "is not a file name");
    // A rename replaces a file whatever the file's own mode says (only its folder's counts), so
    // the target's is asked first, as open(O_WRONLY) and the shell's `>` would: a file this user
    // may not write is refused and kept. faccessat(AT_EACCESS) answers for the effective ids,
    // so root keeps root's answer; a read-only file system is refused alike.
    auto refused = [](int err) { return err == EACCES || err == EPERM || err == EROFS; };
    auto denial = [](int err) {
        return err == EROFS ? std::string("the file system is read-only") : "permission denied";
    };
    if (existing && ::faccessat(AT_FDCWD, target.c_str(), W_OK, AT_EACCESS) != 0 && refused(errno))
        fail(path, fmt::format("cannot save: {}{}; the file was kept", denial(errno),
                               target == path ? std::string() : fmt::format(" (to '{}')", printable(target))));
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0 && refused(errno))
        fail(path, fmt::format("cannot save: {} in the folder '{}' (a save writes a temporary file there and renames "
                               "it over the file){}",
                               denial(errno), printable(dir), existing ? "; the file was kept" : ""));
    Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dirfd.ok()) fail(path, fmt::format("cannot open the folder '{}': {}", printable(dir), errno_text(errno)));
    (void)remove_stale_temporaries(dirfd.get());  // left by a save that was killed
    int err = 0;
    std::optional<TempFile> tmp = TempFile::create(dirfd.get(), &err);
    if (!tmp)
        fail(path, fmt::format("cannot create a temporary file in '{}' (a save writes one there, then renames it "
                               "over the file): {}",
                               printable(dir), errno_text(err)));
    write_chunks(tmp->fd(), chunks, path, hooks);
    if (hooks && hooks->before_commit) hooks->before_commit();  // a stop here leaves the target as it was
    if (::fsync(tmp->fd()) != 0) fail(path, fmt::format("cannot sync: {}", write_error_text(errno)));
    if (existing) {
        // The replaced file's permissions (set-id bits dropped, as any write drops them) and,
        // where this process may (root), its owner.
        if (::fchmod(tmp->fd(), existing->st_mode & 01777) != 0)
            fail(path, fmt::format("cannot set the file's mode: {}", errno_text(errno)));
        if (::geteuid() == 0 && (existing->st_uid != ::geteuid() || existing->st_gid != ::getegid()))
            (void)::fchown(tmp->fd(), existing->st_uid, existing->st_gid);
    }
    // The name may have changed kind since it was looked at: never rename over anything but a
    // regular file.
    struct stat now {};
    bool present = ::fstatat(dirfd.get(), base.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0;
    if (present && !S_ISREG(now.st_mode))
        fail(path, fmt::format("'{}' became {} during the save; it was not replaced", printable(target),
                               kind_of(now.st_mode)));
    err = tmp->commit(base, /*no_replace=*/!present);
    if (err == EEXIST && !present) {
        if (::fstatat(dirfd.get(), base.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(now.st_mode))
            err = tmp->commit(base);
        else fail(path, fmt::format("'{}' appeared during the save; it was not replaced", printable(target)));
    }
    if (err) fail(path, fmt::format("cannot rename the temporary file over it: {}", errno_text(err)));
    (void)::fsync(dirfd.get());  // the rename is done either way; this makes it durable
}

}  // namespace

UserFile open_for_reading(const std::string& path, const InterruptHook& on_interrupt) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, fmt::format("cannot open: {}", errno_text(errno)));
    if (!S_ISREG(st.st_mode) && !is_stream(st.st_mode))
        fail(path, fmt::format("is {}; only regular files, pipes, FIFOs and character devices are read",
                               kind_of(st.st_mode)));
    UserFile f;
    f.fd = open_waiting(path, O_RDONLY | O_CLOEXEC | O_NOCTTY, on_interrupt, "writer");
    if (!f.fd.ok()) fail(path, fmt::format("cannot open: {}", errno_text(errno)));
    if (::fstat(f.fd.get(), &st) != 0) fail(path, fmt::format("cannot stat: {}", errno_text(errno)));
    if (S_ISREG(st.st_mode)) {
        f.size = static_cast<std::uint64_t>(st.st_size);
    } else if (is_stream(st.st_mode)) {
        f.stream = true;
    } else {
        fail(path, fmt::format("is {}; only regular files, pipes, FIFOs and character devices are read",
                               kind_of(st.st_mode)));
    }
    return f;
}

void write_file(const std::string& path, const std::vector<std::string_view>& chunks, const WriteHooks* hooks) {
    if (path.empty()) throw IOError("cannot save: the file name is empty");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (is_stream(st.st_mode)) return write_stream(path, chunks, false, hooks);
        if (!S_ISREG(st.st_mode))
            fail(path, fmt::format("is {}; only regular files, pipes, FIFOs and character devices are written",
                                   kind_of(st.st_mode)));
        bool via_proc = false;
        const std::string target = final_target(path, &via_proc);
        // A file reached through /proc/<pid>/fd (/dev/stdout redirected to a file) belongs to
        // the redirection: written at its end, as `>` and `>>` expect, not replaced.
        if (via_proc) return write_stream(path, chunks, true, hooks);
        struct stat existing {};
        if (::lstat(target.c_str(), &existing) != 0 || !S_ISREG(existing.st_mode))
            fail(path, fmt::format("'{}' changed during the save; it was not replaced", printable(target)));
        return replace_file(path, target, &existing, chunks, hooks);
    }
    if (errno != ENOENT) fail(path, fmt::format("cannot save: {}", errno_text(errno)));
    bool via_proc = false;
    const std::string target = final_target(path, &via_proc);  // a dangling link: its target
    if (via_proc) fail(path, "cannot save: the link in /proc points nowhere");
    replace_file(path, target, nullptr, chunks, hooks);
}

}  // namespace jit::files

// jitexpr — the file-system rules every file jitexpr writes or reads by name follows: the disk
// cache's entries and the user's .npy files (--load, --save, load(), save(), jit::save_npy).
//
// - Temporary files have short names of one pattern (".jitexpr-<pid>-<16 hex>.tmp"), hold an
//   exclusive flock while their writer lives, and are registered so that a signal handler that
//   ends the process can remove them (remove_temporaries_for_signal). A temporary file whose
//   writer is gone is "stale": any later jitexpr may remove it.
// - Writes hold SIGXFSZ back in the writing thread (never touching the process's signal
//   dispositions, which belong to the host: Python, Dask), so a write past the file size limit
//   (`ulimit -f`) fails with EFBIG instead of killing the process.
// - User-named paths: a regular file or a missing path is replaced atomically (a temporary file
//   in the target's folder, renamed over it; the target's mode kept; a symbolic link written
//   through to its final target). A pipe, FIFO or character device is a stream, read or written
//   in order, never seeked, mapped or replaced. Anything else is an IOError.
// See SECURITY.md and docs/cli.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace jit::files {

// An owned file descriptor.
class Fd {
public:
    explicit Fd(int fd = -1) noexcept : fd_(fd) {}
    ~Fd();
    Fd(Fd&& other) noexcept : fd_(other.release()) {}
    Fd& operator=(Fd&& other) noexcept;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }
    bool ok() const noexcept { return fd_ >= 0; }
    int release() noexcept {
        int f = fd_;
        fd_ = -1;
        return f;
    }

private:
    int fd_;
};

std::string errno_text(int err);

// ---- writing without SIGXFSZ

// Blocks SIGXFSZ and SIGPIPE in the calling thread for its lifetime; on destruction, takes back
// the ones that became pending meanwhile (raised by a write past the file size limit, or to a
// pipe nobody reads) and restores the thread's mask, so the write reports EFBIG or EPIPE
// instead of ending the process. A signal the thread had blocked, or that was pending already,
// is left as it was: it belongs to whoever arranged it.
class FileSizeSignalGuard {
public:
    FileSizeSignalGuard() noexcept;
    ~FileSizeSignalGuard();
    FileSizeSignalGuard(const FileSizeSignalGuard&) = delete;
    FileSizeSignalGuard& operator=(const FileSizeSignalGuard&) = delete;

private:
    unsigned unblock_ = 0;  // bit 0 SIGXFSZ, bit 1 SIGPIPE: blocked by this guard
    unsigned drain_ = 0;    // of those, the ones not pending before
};

// Writes all n bytes (retrying short writes and EINTR) under a FileSizeSignalGuard. Returns 0
// or the errno of the failing write (EFBIG past `ulimit -f`, EPIPE, ENOSPC, EDQUOT, EIO, ...).
int write_all(int fd, const void* data, std::size_t n) noexcept;
// Reads up to n bytes, fewer only at the end of the file. Returns the count, or -1 with errno.
long long read_up_to(int fd, void* data, std::size_t n) noexcept;

// A short sentence for a write error: EFBIG names the file size limit.
std::string write_error_text(int err);

// ---- temporary files

// A fresh name ".jitexpr-<pid>-<16 hex>.tmp" (at most 45 bytes, whatever the target's name).
std::string temporary_name();
// Whether `name` has that pattern; its pid goes to *pid.
bool is_temporary_name(std::string_view name, long* pid = nullptr);

// A temporary file being written in the folder `dirfd` (which must stay open while this object
// lives). Created 0600 with O_EXCL, flock()ed, registered for remove_temporaries_for_signal.
// Unless commit() renamed it into place, the destructor removes it.
class TempFile {
public:
    // nullopt with *err set when the file cannot be created.
    static std::optional<TempFile> create(int dirfd, int* err);
    TempFile(TempFile&& other) noexcept;
    TempFile& operator=(TempFile&&) = delete;
    TempFile(const TempFile&) = delete;
    ~TempFile();

    int fd() const noexcept { return fd_.get(); }
    const std::string& name() const noexcept { return name_; }
    // Renames the file over `target` in the same folder (no_replace: fail with EEXIST when
    // `target` exists). Returns 0 or an errno. The descriptor stays open (and locked) until
    // this object is destroyed.
    int commit(const std::string& target, bool no_replace = false) noexcept;
    // Removes the file now (a failed write); idempotent.
    void discard() noexcept;

private:
    TempFile(int dirfd, Fd fd, std::string name, int slot) noexcept;
    int dirfd_;
    Fd fd_;
    std::string name_;
    int slot_;  // in the signal registry, -1 when none was free
    bool done_ = false;
};

// Unlinks every temporary file registered by TempFile in this process. Async-signal-safe: call
// it from a handler of SIGINT/SIGTERM that then ends the process (the CLI does).
void remove_temporaries_for_signal() noexcept;

// Whether `name` in `dirfd` is a temporary file of a jitexpr writer that is gone: its name has
// the pattern, it is a regular file of this user, nobody holds its lock, and its writer's
// process no longer exists (or the file is older than a minute: a live writer holds the lock).
bool is_stale_temporary(int dirfd, const char* name);
// Removes the stale temporary files in `dirfd`; returns the names removed.
std::vector<std::string> remove_stale_temporaries(int dirfd);

// ---- user-named paths

// What a user's path is for reading: an open descriptor, and whether it is a stream (pipe,
// FIFO, character device) or a regular file of a known size.
struct UserFile {
    Fd fd;
    bool stream = false;
    std::uint64_t size = 0;  // regular files only
};

// Called about every 20 ms while a FIFO waits for its other end (and when a signal interrupts
// the opening of anything else); it may throw (a stop, a CancelledError) and otherwise the wait
// goes on. Without one, opening blocks and an interrupted wait is an IOError.
using InterruptHook = std::function<void()>;

// Opens `path` for reading. A FIFO blocks until a writer opens it (as any reader does).
// Directories, block devices, sockets: IOError naming the path.
UserFile open_for_reading(const std::string& path, const InterruptHook& on_interrupt = {});

// What a caller may watch and stop of a write_file. Each hook may throw to stop: the write is
// then abandoned like a failed one (no temporary file left, an existing file as it was).
struct WriteHooks {
    std::size_t piece = std::size_t{1} << 30;  // bytes per write()
    // Before each piece, and after a write that a signal interrupted.
    std::function<void()> before_piece;
    // After each piece: which of the chunks, and how many of its bytes were written.
    std::function<void(std::size_t chunk, std::size_t bytes)> after_piece;
    // Once every byte is written, before the target changes.
    std::function<void()> before_commit;
    InterruptHook on_interrupt;  // while a FIFO waits for a reader (and while its reader is slow)
};

// Writes the concatenation of `chunks` to `path` by the rule above. Throws IOError naming the
// path and the cause (EFBIG: the file size limit); a failed write leaves an existing file as it
// was and no temporary file.
void write_file(const std::string& path, const std::vector<std::string_view>& chunks,
                const WriteHooks* hooks = nullptr);

}  // namespace jit::files

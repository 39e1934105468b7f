// backend/cache/files.hpp: the rules for every file jitexpr writes or reads by name.
// Writes past `ulimit -f` and into closed pipes fail with an error (the signals keep their
// default dispositions); temporary files; user-named paths (regular files replaced atomically
// with their mode, symbolic links written through, FIFOs and character devices as streams,
// anything else refused). Character devices are made with mknod in a temporary folder (skipped
// where that is not allowed), never the real /dev.
#include "backend/cache/files.hpp"
#include "test_dir.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace files = jit::files;
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

// Runs `body` in a child process; returns its exit status, or 128 + the signal that ended it
// (SIGALRM, 142, after `seconds`: the bodies take milliseconds, the bound is for a hang, wide
// enough for a loaded machine under a sanitizer).
int in_child(const std::function<int()>& body, int seconds = 120) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::alarm(static_cast<unsigned>(seconds));
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> temporaries_in(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (files::is_temporary_name(e.path().filename().string())) out.push_back(e.path());
    return out;
}

mode_t mode_of(const std::string& p) {
    struct stat st {};
    ::lstat(p.c_str(), &st);
    return st.st_mode;
}

}  // namespace

// ---- signals

TEST(FileSignals, WritePastTheFileSizeLimitFailsWithEfbigAndTheProcessLives) {
    TempDir tmp;
    const std::string path = tmp / "big";
    const int rc = in_child([&] {
        if (std::signal(SIGXFSZ, SIG_DFL) != SIG_DFL) return 3;
        rlimit small{4096, 4096};
        if (::setrlimit(RLIMIT_FSIZE, &small) != 0) return 4;
        // Another thread that does not hold the signal back: it must not receive it either. It
        // lives until the write has ended (a fixed sleep could end first on a loaded machine).
        std::atomic<bool> written{false};
        std::thread idle([&written] {
            while (!written.load()) ::usleep(1000);
        });
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
        const std::string data(64 * 1024, 'x');
        const int err = files::write_all(fd, data.data(), data.size());
        written = true;
        idle.join();
        sigset_t pending;
        ::sigpending(&pending);
        if (sigismember(&pending, SIGXFSZ)) return 5;  // drained, not left for later
        return err == EFBIG ? 0 : 6;
    });
    EXPECT_EQ(rc, 0) << "153 = killed by SIGXFSZ";
    EXPECT_EQ(files::write_error_text(EFBIG), "the file would exceed the file size limit (ulimit -f)");
}

TEST(FileSignals, WriteIntoAClosedPipeFailsWithEpipeAndTheProcessLives) {
    const int rc = in_child([] {
        if (std::signal(SIGPIPE, SIG_DFL) != SIG_DFL) return 3;
        int p[2];
        if (::pipe(p) != 0) return 4;
        ::close(p[0]);
        return files::write_all(p[1], "abc", 3) == EPIPE ? 0 : 5;
    });
    EXPECT_EQ(rc, 0) << "141 = killed by SIGPIPE";
}

TEST(FileSignals, GuardLeavesTheThreadsOwnMaskAndPendingSignalsAlone) {
    const int rc = in_child([] {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGXFSZ);
        ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
        ::raise(SIGXFSZ);  // pending, the host's business
        { files::FileSizeSignalGuard guard; }
        sigset_t mask, pending;
        ::pthread_sigmask(SIG_BLOCK, nullptr, &mask);
        ::sigpending(&pending);
        if (!sigismember(&mask, SIGXFSZ)) return 3;
        if (!sigismember(&pending, SIGXFSZ)) return 4;
        if (sigismember(&mask, SIGPIPE)) return 5;  // unblocked again
        return 0;
    });
    EXPECT_EQ(rc, 0);
}

// ---- temporary files

TEST(TempFiles, NamesAreShortAndRecognised) {
    const std::string n = files::temporary_name();
    EXPECT_LE(n.size(), 45u);
    long pid = 0;
    EXPECT_TRUE(files::is_temporary_name(n, &pid));
    EXPECT_EQ(pid, static_cast<long>(::getpid()));
    EXPECT_FALSE(files::is_temporary_name(".jitexpr-12-0123456789abcdeg.tmp"));
    EXPECT_FALSE(files::is_temporary_name(".jitexpr--0123456789abcdef.tmp"));
    EXPECT_FALSE(files::is_temporary_name("x.npy.tmp.123.0123456789abcdef"));
    EXPECT_NE(files::temporary_name(), files::temporary_name());
}

TEST(TempFiles, UncommittedFileIsRemovedCommittedOneRenamed) {
    TempDir tmp;
    const int dirfd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
    {
        int err = 0;
        auto t = files::TempFile::create(dirfd, &err);
        ASSERT_TRUE(t) << std::strerror(err);
        EXPECT_EQ(temporaries_in(tmp.path()).size(), 1u);
    }
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
    {
        int err = 0;
        auto t = files::TempFile::create(dirfd, &err);
        ASSERT_TRUE(t);
        ASSERT_EQ(files::write_all(t->fd(), "abc", 3), 0);
        ASSERT_EQ(t->commit("done"), 0);
    }
    EXPECT_EQ(read_file(tmp / "done"), "abc");
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
    ::close(dirfd);
}

TEST(TempFiles, SignalCleanupRemovesFilesInProgress) {
    TempDir tmp;
    const int rc = in_child([&] {
        const int dirfd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
        int err = 0;
        auto a = files::TempFile::create(dirfd, &err);
        auto b = files::TempFile::create(dirfd, &err);
        if (!a || !b || temporaries_in(tmp.path()).size() != 2) return 3;
        files::remove_temporaries_for_signal();  // what the CLI's SIGINT/SIGTERM handler calls
        ::_exit(temporaries_in(tmp.path()).empty() ? 0 : 4);
    });
    EXPECT_EQ(rc, 0);
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

TEST(TempFiles, StaleFilesAreOnlyThoseOfWritersThatAreGone) {
    TempDir tmp;
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    write_file(tmp / (".jitexpr-" + std::to_string(dead) + "-0123456789abcdef.tmp"), "x");
    write_file(tmp / "user.tmp", "x");
    write_file(tmp / ".jitexpr-notes.tmp", "x");
    const int dirfd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
    int err = 0;
    auto live = files::TempFile::create(dirfd, &err);  // locked by this live process
    ASSERT_TRUE(live);
    const auto removed = files::remove_stale_temporaries(dirfd);
    EXPECT_EQ(removed.size(), 1u);
    EXPECT_TRUE(fs::exists(tmp / "user.tmp"));
    EXPECT_TRUE(fs::exists(tmp / ".jitexpr-notes.tmp"));
    EXPECT_TRUE(fs::exists(tmp / live->name()));
    ::close(dirfd);
}

// ---- user paths: writing

TEST(UserPaths, NewFileIsCreatedWithTheUmasksMode) {
    TempDir tmp;
    const mode_t old = ::umask(022);
    files::write_file(tmp / "new", {"ab", "cd"});
    ::umask(old);
    EXPECT_EQ(read_file(tmp / "new"), "abcd");
    EXPECT_EQ(mode_of(tmp / "new") & 0777, 0644u);
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

TEST(UserPaths, ReplacedFileKeepsItsMode) {
    TempDir tmp;
    write_file(tmp / "f", "old");
    ASSERT_EQ(::chmod((tmp / "f").c_str(), 0600), 0);
    files::write_file(tmp / "f", {"new"});
    EXPECT_EQ(read_file(tmp / "f"), "new");
    EXPECT_EQ(mode_of(tmp / "f") & 07777, 0600u);
    ASSERT_EQ(::chmod((tmp / "f").c_str(), 0751), 0);
    files::write_file(tmp / "f", {"newer"});
    EXPECT_EQ(mode_of(tmp / "f") & 07777, 0751u);
}

TEST(UserPaths, ReplacementIsANewInodeSoOtherHardLinksKeepTheOldContent) {
    TempDir tmp;
    write_file(tmp / "f", "old");
    fs::create_hard_link(tmp / "f", tmp / "g");
    files::write_file(tmp / "f", {"new"});
    EXPECT_EQ(read_file(tmp / "f"), "new");
    EXPECT_EQ(read_file(tmp / "g"), "old");
}

TEST(UserPaths, SymbolicLinkIsWrittenThroughToItsFinalTarget) {
    TempDir tmp;
    fs::create_directories(tmp / "real");
    write_file(tmp / "real/data", "old");
    ASSERT_EQ(::chmod((tmp / "real/data").c_str(), 0640), 0);
    fs::create_symlink("real/data", tmp / "hop");   // relative
    fs::create_symlink(tmp / "hop", tmp / "link");  // absolute, to another link
    files::write_file(tmp / "link", {"new"});
    EXPECT_TRUE(fs::is_symlink(tmp / "link"));
    EXPECT_TRUE(fs::is_symlink(tmp / "hop"));
    EXPECT_EQ(read_file(tmp / "real/data"), "new");
    EXPECT_EQ(mode_of(tmp / "real/data") & 0777, 0640u);
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
    EXPECT_TRUE(temporaries_in(tmp / "real").empty());
}

TEST(UserPaths, DanglingSymbolicLinkCreatesItsTarget) {
    TempDir tmp;
    fs::create_symlink("made", tmp / "link");
    files::write_file(tmp / "link", {"x"});
    EXPECT_TRUE(fs::is_symlink(tmp / "link"));
    EXPECT_EQ(read_file(tmp / "made"), "x");
}

TEST(UserPaths, NameOf255BytesCanBeSaved) {
    TempDir tmp;
    const std::string name(255, 'n');
    files::write_file(tmp / name, {"x"});
    EXPECT_EQ(read_file(tmp / name), "x");
    write_file(tmp / name, "old");
    files::write_file(tmp / name, {"y"});
    EXPECT_EQ(read_file(tmp / name), "y");
}

TEST(UserPaths, FifoIsWrittenAsAStreamAndStaysAFifo) {
    TempDir tmp;
    const std::string fifo = tmp / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string got;
    std::thread reader([&] { got = read_file(fifo); });
    files::write_file(fifo, {"hello ", "fifo"});
    reader.join();
    EXPECT_EQ(got, "hello fifo");
    EXPECT_TRUE(S_ISFIFO(mode_of(fifo)));
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

TEST(UserPaths, PipeThroughProcFdIsWrittenAsAStream) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    files::write_file("/dev/fd/" + std::to_string(p[1]), {"through /dev/fd"});
    ::close(p[1]);
    char buf[64] = {};
    const auto n = ::read(p[0], buf, sizeof buf);
    ::close(p[0]);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "through /dev/fd");
}

TEST(UserPaths, RegularFileThroughProcFdIsAppendedNotReplaced) {
    TempDir tmp;
    write_file(tmp / "out", "before:");
    const int fd = ::open((tmp / "out").c_str(), O_WRONLY | O_APPEND);
    struct stat before {};
    ::fstat(fd, &before);
    files::write_file("/proc/self/fd/" + std::to_string(fd), {"after"});
    ::close(fd);
    EXPECT_EQ(read_file(tmp / "out"), "before:after");
    struct stat now {};
    ::stat((tmp / "out").c_str(), &now);
    EXPECT_EQ(now.st_ino, before.st_ino) << "the redirection's file is the same file";
}

class CharDevice : public ::testing::Test {
protected:
    // A copy of /dev/null (1,3) or /dev/full (1,7) in a temporary folder.
    std::string make(const char* name, unsigned minor) {
        const std::string p = tmp / name;
        if (::mknod(p.c_str(), S_IFCHR | 0666, ::makedev(1, minor)) != 0) return {};
        return p;
    }
    TempDir tmp;
};

TEST_F(CharDevice, NullDeviceIsWrittenAndStaysADevice) {
    const std::string null = make("null", 3);
    if (null.empty()) GTEST_SKIP() << "mknod is not allowed here: " << std::strerror(errno);
    files::write_file(null, {"discarded"});
    EXPECT_TRUE(S_ISCHR(mode_of(null))) << "the device must not be replaced by a file";
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

TEST_F(CharDevice, FullDeviceGivesAClearErrorAndStaysADevice) {
    const std::string full = make("full", 7);
    if (full.empty()) GTEST_SKIP() << "mknod is not allowed here: " << std::strerror(errno);
    try {
        files::write_file(full, {"x"});
        ADD_FAILURE() << "no error";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(S_ISCHR(mode_of(full)));
}

TEST(UserPaths, DirectoryAndSocketAreRefused) {
    TempDir tmp;
    fs::create_directories(tmp / "dir");
    EXPECT_THROW(files::write_file(tmp / "dir", {"x"}), jit::IOError);
    EXPECT_TRUE(fs::is_directory(tmp / "dir"));
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string sock = tmp / "sock";
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    try {
        files::write_file(sock, {"x"});
        ADD_FAILURE() << "no error";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("is a socket"), std::string::npos) << e.what();
    }
    EXPECT_THROW(files::open_for_reading(sock), jit::IOError);
    ::close(s);
}

TEST(UserPaths, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
    TempDir tmp;
    write_file(tmp / "f", "old");
    const int rc = in_child([&] {
        rlimit small{1024, 1024};
        ::setrlimit(RLIMIT_FSIZE, &small);
        try {
            files::write_file(tmp / "f", {std::string(64 * 1024, 'x')});
        } catch (const jit::IOError& e) {
            return std::string(e.what()).find("file size limit") != std::string::npos ? 0 : 3;
        }
        return 4;
    });
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_file(tmp / "f"), "old");
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

TEST(UserPaths, SaveRemovesTemporaryFilesOfAKilledSave) {
    TempDir tmp;
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int dirfd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
        int err = 0;
        auto t = files::TempFile::create(dirfd, &err);
        (void)files::write_all(t->fd(), "partial", 7);
        ::raise(SIGKILL);
    }
    ::waitpid(pid, nullptr, 0);
    ASSERT_EQ(temporaries_in(tmp.path()).size(), 1u);
    files::write_file(tmp / "next", {"x"});
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}

// ---- user paths: reading

TEST(UserPaths, ReadingTellsStreamsFromFiles) {
    TempDir tmp;
    write_file(tmp / "f", "12345");
    auto f = files::open_for_reading(tmp / "f");
    EXPECT_FALSE(f.stream);
    EXPECT_EQ(f.size, 5u);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    auto s = files::open_for_reading("/dev/fd/" + std::to_string(p[0]));
    EXPECT_TRUE(s.stream);
    ::close(p[0]);
    ::close(p[1]);
    fs::create_directories(tmp / "d");
    try {
        files::open_for_reading(tmp / "d");
        ADD_FAILURE() << "no error";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
}

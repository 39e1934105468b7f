// One of several processes filling the same disk cache at once (started by test_race.cpp).
// Usage: cache_race_helper DIR ID ROUNDS START_FD MAX_BYTES: starts once START_FD (the read end
// of a pipe) reaches its end, that is once the test has started every helper and closed the
// write end. Exits 0 when every read returned the right bytes and nothing was corrupt or failed
// to write; otherwise prints why and exits 1.
#include "race_common.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s DIR ID ROUNDS START_FD MAX_BYTES\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    const int id = std::atoi(argv[2]);
    const int rounds = std::atoi(argv[3]);
    const int start_fd = std::atoi(argv[4]);

    jit::cache::DiskCacheOptions options;
    options.dir = dir;
    options.use_environment = false;
    options.max_bytes = std::strtoull(argv[5], nullptr, 10);
    options.on_warning = [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); };

    // Start together, so the processes really overlap (directory creation included): when the
    // last helper has started, however long a loaded machine took to start them all.
    for (char c = 0;;) {
        const ssize_t r = ::read(start_fd, &c, 1);
        if (r == 0) break;
        if (r < 0 && errno != EINTR) {
            std::fprintf(stderr, "process %d: cannot read the start pipe: %s\n", id, std::strerror(errno));
            return 2;
        }
    }
    ::close(start_fd);

    try {
        jit::cache::DiskCache cache(options);
        if (!cache.enabled()) {
            std::fprintf(stderr, "process %d: disk cache off: %s\n", id, cache.disabled_reason().c_str());
            return 1;
        }
        auto use = [&](const std::string& key) {
            const std::string want = cache_race::payload_for(key);
            if (auto got = cache.get(key)) {
                if (*got != want) {
                    std::fprintf(stderr, "process %d: wrong bytes for %s\n", id, key.c_str());
                    return false;
                }
                return true;
            }
            if (!cache.put(key, want)) {
                std::fprintf(stderr, "process %d: put failed for %s\n", id, key.c_str());
                return false;
            }
            // Another process may evict it at once; a present entry must be right.
            if (auto again = cache.get(key); again && *again != want) {
                std::fprintf(stderr, "process %d: wrong bytes after put for %s\n", id, key.c_str());
                return false;
            }
            return true;
        };
        for (int r = 0; r < rounds; ++r) {
            if (!use(cache_race::shared_key(r % 8))) return 1;
            if (!use(cache_race::own_key(id, r))) return 1;
        }
        auto s = cache.stats();
        if (s.corrupt_removed != 0 || s.write_failures != 0) {
            std::fprintf(stderr, "process %d: %llu corrupt, %llu failed writes\n", id,
                         static_cast<unsigned long long>(s.corrupt_removed),
                         static_cast<unsigned long long>(s.write_failures));
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d: exception: %s\n", id, e.what());
        return 1;
    }
    return 0;
}

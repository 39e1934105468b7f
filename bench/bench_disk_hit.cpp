// What a disk-cache hit costs on the host, by the checksum algorithm of the entry: DiskCache::get
// (open, read, check, touch) of one entry, for CUBIN-sized payloads, entries written with
// SHA-256 (format 2's algorithm, id 1) and with XXH3-128 (id 2, the default when built with
// xxhash.h), read in the same run, interleaved; plus each checksum alone over the same bytes.
//   bench_disk_hit [--reps N] [--dir DIR]      (DIR: where the temporary cache goes; default /tmp)
// Prints one line per size: p50 of N reps (each the mean of 200 gets), and the ratio.
#include "backend/cache/cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using jit::cache::DiskCache;
using jit::cache::DiskCacheOptions;

double p50(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class F>
double us_per_call(int calls, F&& f) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 15;
    std::string base = std::filesystem::temp_directory_path().string();
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--dir")) base = argv[i + 1];
    }
    const std::string dir = fmt::format("{}/jitexpr-bench-disk-hit-{}", base, ::getpid());
    const bool have_xxh3 = DiskCache::default_checksum() == 2;
    DiskCacheOptions o;
    o.dir = dir;
    o.use_environment = false;
    o.fsync = false;
    o.checksum = 1;
    DiskCache sha(o);
    o.checksum = have_xxh3 ? 2 : 1;
    DiskCache xxh(o);
    if (!sha.enabled()) {
        std::fprintf(stderr, "bench_disk_hit: no disk cache at %s: %s\n", dir.c_str(), sha.disabled_reason().c_str());
        return 1;
    }
    std::printf("disk-cache hit, DiskCache::get of one entry (open, read, checksum, touch), warm page cache\n");
    std::printf("p50 of %d reps of 200 gets; checksum alone over key+payload in the same run\n", reps);
    std::printf("%-9s %14s %14s %8s %16s\n", "payload", "SHA-256 get", have_xxh3 ? "XXH3-128 get" : "(no xxhash)",
                "ratio", "SHA-256 alone");
    std::mt19937_64 rng(42);
    int failures = 0;
    for (std::size_t kib : {20, 50, 100, 200}) {
        std::string payload(kib * 1024, '\0');
        for (char& c : payload) c = static_cast<char>(rng());
        const std::string ks = jit::cache::digest("sha-" + std::to_string(kib));
        const std::string kx = jit::cache::digest("xxh-" + std::to_string(kib));
        sha.put(ks, payload);
        xxh.put(kx, payload);
        std::vector<double> ts, tx, talone;
        for (int r = 0; r < reps; ++r) {
            ts.push_back(us_per_call(200, [&] {
                if (!sha.get(ks)) ++failures;
            }));
            tx.push_back(us_per_call(200, [&] {
                if (!xxh.get(kx)) ++failures;
            }));
            talone.push_back(us_per_call(200, [&] {
                auto d = jit::cache::Sha256().update(payload).finish();
                if (d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 0) std::fputc(' ', stderr);
            }));
        }
        const double s = p50(ts), x = p50(tx);
        std::printf("%4zu KiB %11.1f us %11.1f us %7.2fx %13.1f us\n", kib, s, x, s / x, p50(talone));
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (failures) {
        std::fprintf(stderr, "bench_disk_hit: %d gets missed\n", failures);
        return 1;
    }
    return 0;
}

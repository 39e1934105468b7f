// jitexpr — the disk cache of compiled kernels as a user manages it (`jitexpr cache
// stats|clear|verify`; docs/cache.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jit {

struct DiskCacheReport {
    bool enabled = false;
    std::string disabled_reason;  // why, when not enabled
    std::string directory;
    std::uint64_t entries = 0;             // stats: files in the cache; clear: files there before
    std::uint64_t bytes = 0;               // stats: their total size
    std::uint64_t checked = 0, valid = 0;  // verify
    std::uint64_t removed = 0;             // clear: entries removed; verify: damaged entries and stale temporaries
    std::uint64_t temporaries = 0;         // clear: stale temporary files removed
    std::uint64_t old_format_removed = 0;  // clear: files of the previous formats (v1, v2) removed
    std::vector<std::string> problems;     // verify: each file removed, and why
    // Files found in the cache that are not jitexpr's (or not readable by this build): named,
    // with why, and left in place. Only files jitexpr wrote are ever removed.
    std::vector<std::string> left;
    // clear, verify: files of jitexpr's (verify: damaged ones) that could not be removed (a
    // folder without write permission), with why. `jitexpr cache` then exits 1.
    std::vector<std::string> failed;
};

// `dir` empty: the runtime's default ($JITEXPR_CACHE_DIR, else $XDG_CACHE_HOME/jitexpr, else
// ~/.cache/jitexpr; JITEXPR_DISK_CACHE=0 disables it).
DiskCacheReport disk_cache_stats(const std::string& dir = {});
// Removes every entry jitexpr wrote; anything else is named in `left` and kept.
DiskCacheReport clear_disk_cache(const std::string& dir = {});
// Checks every entry and removes those that are damaged.
DiskCacheReport verify_disk_cache(const std::string& dir = {});

// The checksum an entry file of format 3 holds (docs/cache.md) over `covered` (its bytes 0..31,
// then its key, then its payload) for checksum algorithm `algorithm` (1: SHA-256, 32 bytes;
// 2: XXH3-128, 16 bytes), computed as the cache computes it: for tools that read entries
// without the cache (the Python package's precompiled bundles). Empty when this build does not
// compute that algorithm.
std::string disk_cache_checksum(int algorithm, std::string_view covered);
// The algorithm new entries get here: 2 when built with xxhash.h, else 1.
int disk_cache_default_checksum();

}  // namespace jit

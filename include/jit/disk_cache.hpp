// jitexpr — the disk cache of compiled kernels as a user manages it (`jitexpr cache
// stats|clear|verify`; docs/cache.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jit {

struct DiskCacheReport {
    bool enabled = false;
    std::string disabled_reason;  // why, when not enabled
    std::string directory;
    std::uint64_t entries = 0;    // stats: files in the cache; clear: files there before
    std::uint64_t bytes = 0;      // stats: their total size
    std::uint64_t checked = 0, valid = 0, removed = 0;  // verify
    std::vector<std::string> problems;                  // verify: each file removed, and why
};

// `dir` empty: the runtime's default ($JITEXPR_CACHE_DIR, else $XDG_CACHE_HOME/jitexpr, else
// ~/.cache/jitexpr; JITEXPR_DISK_CACHE=0 disables it).
DiskCacheReport disk_cache_stats(const std::string& dir = {});
// Removes every entry.
DiskCacheReport clear_disk_cache(const std::string& dir = {});
// Checks every entry and removes those that are damaged.
DiskCacheReport verify_disk_cache(const std::string& dir = {});

}  // namespace jit

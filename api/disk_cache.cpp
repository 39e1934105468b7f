// The disk cache as a user manages it (include/jit/disk_cache.hpp), over backend/cache.
#include <jit/disk_cache.hpp>

#include "backend/cache/cache.hpp"

namespace jit {

namespace {

cache::DiskCache open_cache(const std::string& dir) {
    cache::DiskCacheOptions o;
    o.dir = dir;
    return cache::DiskCache(o);
}

DiskCacheReport report_of(const cache::DiskCache& disk) {
    DiskCacheReport r;
    r.enabled = disk.enabled();
    r.disabled_reason = r.enabled ? std::string() : disk.disabled_reason();
    r.directory = disk.directory();
    return r;
}

}  // namespace

DiskCacheReport disk_cache_stats(const std::string& dir) {
    cache::DiskCache disk = open_cache(dir);
    DiskCacheReport r = report_of(disk);
    if (!r.enabled) return r;
    const cache::DiskStats st = disk.stats();
    r.entries = st.entries;
    r.bytes = st.bytes;
    return r;
}

DiskCacheReport clear_disk_cache(const std::string& dir) {
    cache::DiskCache disk = open_cache(dir);
    DiskCacheReport r = report_of(disk);
    if (!r.enabled) return r;
    r.entries = disk.stats().entries;
    const cache::ClearReport c = disk.clear();
    r.removed = c.removed;
    r.temporaries = c.temporaries;
    r.old_format_removed = c.old_format_removed;
    r.left = c.left;
    r.failed = c.failed;
    return r;
}

DiskCacheReport verify_disk_cache(const std::string& dir) {
    cache::DiskCache disk = open_cache(dir);
    DiskCacheReport r = report_of(disk);
    if (!r.enabled) return r;
    const cache::VerifyReport v = disk.verify();
    r.checked = v.checked;
    r.valid = v.valid;
    r.removed = v.removed;
    r.problems = v.problems;
    r.left = v.left;
    r.failed = v.failed;
    return r;
}

std::string disk_cache_checksum(int algorithm, std::string_view covered) {
    if (algorithm < 1 || algorithm > 255) return {};
    return cache::DiskCache::checksum(static_cast<std::uint8_t>(algorithm), covered);
}

int disk_cache_default_checksum() { return cache::DiskCache::default_checksum(); }

}  // namespace jit

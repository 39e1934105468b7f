// What the race helper writes for a key, so the test and the helper agree on every payload.
#pragma once

#include "backend/cache/cache.hpp"

#include <string>

namespace cache_race {

inline std::string shared_key(int i) { return jit::cache::digest("shared-" + std::to_string(i)); }
inline std::string own_key(int process, int round) {
    return jit::cache::digest("own-" + std::to_string(process) + "-" + std::to_string(round));
}

// 1..4 KiB derived from the key, so a payload under the wrong name or torn shows.
inline std::string payload_for(const std::string& key) {
    std::string out;
    std::size_t size = 1024 + (static_cast<unsigned char>(key[0]) * 13 + static_cast<unsigned char>(key[1])) % 3072;
    std::string block = jit::cache::digest(key);
    while (out.size() < size) out += block;
    out.resize(size);
    return out;
}

}  // namespace cache_race

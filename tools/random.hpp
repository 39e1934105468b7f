// The generator behind rand() and randn(): xoshiro256** (Blackman and Vigna, 2018) with its
// state filled from the seed by splitmix64. Documented in docs/cli.md so that results can be
// reproduced elsewhere:
//   uniform(): the top 53 bits of the next output times 2^-53, in [0, 1);
//   normal():  Box-Muller on two uniforms u1, u2: sqrt(-2 ln(1 - u1)) * cos(2 pi u2), then
//              the paired sine value on the next call.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace jit::cli {

class Xoshiro256 {
public:
    explicit Xoshiro256(std::uint64_t seed) {
        std::uint64_t x = seed;
        for (auto& word : s_) word = splitmix64(x);
    }

    std::uint64_t next() {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    double normal() {
        if (have_spare_) {
            have_spare_ = false;
            return spare_;
        }
        const double u1 = uniform(), u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 is in (0, 1]
        const double a = 2.0 * std::numbers::pi * u2;
        spare_ = r * std::sin(a);
        have_spare_ = true;
        return r * std::cos(a);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& x) {
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    std::uint64_t s_[4];
    bool have_spare_ = false;
    double spare_ = 0;
};

}  // namespace jit::cli

// dsl/semantics.h's find_in_registers (the register-resident row search chosen on the GPU with
// -DJX_FIND_REGS) against a plain search, on the host: every alignment, rows of 1 to 60 bytes
// ending exactly at the end of their buffer (so the sanitizer builds see any read past the
// row), needles taken from the row or made up, zero and high bytes.
#include "dsl/semantics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace {

int plain_find(const std::uint8_t* h, int n, const std::uint8_t* s, int m) {
    for (int i = 0; i + m <= n; ++i) {
        int k = 0;
        while (k < m && h[i + k] == s[k]) ++k;
        if (k == m) return i;
    }
    return -1;
}

TEST(FindInRegisters, AgreesWithAPlainSearchAtEveryAlignmentAndLength) {
    std::mt19937 rng(20261207);
    int found = 0, cases = 0;
    for (int n = 1; n <= 4 * jx::str::kRegRowWords - 4; ++n)
        for (int align = 0; align < 4; ++align)
            for (int trial = 0; trial < 60; ++trial) {
                // The row ends at the buffer's end; 4 + align bytes before it (the aligned word
                // holding its first byte lies inside the buffer, as in a device allocation).
                const std::size_t size = 4 + static_cast<std::size_t>(align) + static_cast<std::size_t>(n);
                std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[size]);
                const int alphabet = trial % 3 == 0 ? 2 : trial % 3 == 1 ? 4 : 256;  // many near-misses
                for (std::size_t i = 0; i < size; ++i)
                    buf[i] = static_cast<std::uint8_t>(alphabet == 256 ? rng() : (rng() % alphabet) * 0x7F);
                const std::uint8_t* h = buf.get() + 4 + align;
                ASSERT_EQ(reinterpret_cast<std::uintptr_t>(h) & 3u, static_cast<std::uintptr_t>(align));
                const int m = 1 + static_cast<int>(rng() % std::min(n, 9));
                std::vector<std::uint8_t> needle(static_cast<std::size_t>(m));
                if (trial % 2 == 0) {  // from the row: found somewhere
                    const int at = static_cast<int>(rng() % static_cast<unsigned>(n - m + 1));
                    for (int k = 0; k < m; ++k) needle[static_cast<std::size_t>(k)] = h[at + k];
                } else {
                    for (auto& b : needle)
                        b = static_cast<std::uint8_t>(alphabet == 256 ? rng() : (rng() % alphabet) * 0x7F);
                }
                const int want = plain_find(h, n, needle.data(), m);
                ASSERT_EQ(jx::str::find_in_registers(h, n, needle.data(), m), want)
                    << "row of " << n << " bytes at alignment " << align << ", needle of " << m;
                found += want >= 0;
                ++cases;
            }
    EXPECT_GT(found, cases / 3);
}

}  // namespace

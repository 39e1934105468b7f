// The block-wide contains of dsl/semantics.h (str::contains_share), which the GPU's Flat kernels
// use for contains(Arrow column, constant): run here on the host, each thread's share one after
// another, and compared row by row with the one-row str::contains over random columns: rows
// from empty to hundreds of bytes, needles of every short length, matches across row and chunk
// boundaries, data at every alignment, sliced offsets, int32 and int64 offsets.
#include "dsl/semantics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

struct Column {
    std::vector<std::uint8_t> storage;  // the data, `shift` bytes into an aligned buffer
    std::size_t shift = 0;
    std::vector<std::int64_t> offsets;  // rows + 1, starting at `first`
    const std::uint8_t* data() const { return storage.data() + shift; }
};

// Rows drawn from a small alphabet so that the needle's first bytes turn up often; some rows
// hold the needle, some only its start at the row's end (the rest in the next row).
Column random_column(std::mt19937& rng, std::size_t rows, const std::string& needle, std::size_t max_len,
                     std::size_t shift, std::int64_t first) {
    Column c;
    c.shift = shift;
    std::string bytes(static_cast<std::size_t>(first), 'z');
    c.offsets.push_back(first);
    std::uniform_int_distribution<std::size_t> len(0, max_len);
    std::uniform_int_distribution<int> pick(0, 9);
    const std::string alphabet = needle.empty() ? std::string("ab") : needle.substr(0, 2) + "xy";
    for (std::size_t r = 0; r < rows; ++r) {
        std::string row;
        const std::size_t n = len(rng);
        for (std::size_t k = 0; k < n; ++k) row += alphabet[rng() % alphabet.size()];
        const int p = pick(rng);
        if (p == 0 && !needle.empty()) row.insert(row.empty() ? 0 : rng() % row.size(), needle);
        else if (p == 1 && needle.size() > 1) row += needle.substr(0, needle.size() - 1);  // cut at the row's end
        else if (p == 2) row.clear();
        bytes += row;
        c.offsets.push_back(static_cast<std::int64_t>(bytes.size()));
    }
    // 16-byte aligned storage (a vector of 16-byte blocks), the data starting `shift` bytes in.
    c.storage.resize(shift + bytes.size() + 16);
    std::copy(bytes.begin(), bytes.end(), c.storage.begin() + static_cast<std::ptrdiff_t>(shift));
    return c;
}

template <class O>
void expect_block_search_matches_rows(const Column& c, const std::string& needle, std::int64_t block,
                                      const std::string& what) {
    std::vector<O> o(c.offsets.begin(), c.offsets.end());
    const jx::col_utf8<O> col{o.data(), c.data()};
    const jx::s8 s{reinterpret_cast<const jx::u8*>(needle.data()), static_cast<jx::i64>(needle.size())};
    const std::int64_t n = static_cast<std::int64_t>(o.size()) - 1;
    for (std::int64_t row0 = 0; row0 < n; row0 += block) {
        const std::int64_t rows = std::min(block, n - row0);
        std::vector<jx::u8> hit(static_cast<std::size_t>(block), 0);
        for (std::int64_t t = 0; t < block; ++t) jx::str::contains_share(col, s, row0, rows, t, block, hit.data());
        for (std::int64_t r = 0; r < rows; ++r) {
            const bool expected = jx::str::contains(col[row0 + r], s);
            ASSERT_EQ(hit[static_cast<std::size_t>(r)] != 0, expected)
                << what << ": row " << row0 + r << " ('"
                << std::string(reinterpret_cast<const char*>(col[row0 + r].p),
                               static_cast<std::size_t>(col[row0 + r].n))
                << "'), needle '" << needle << "'";
        }
        for (std::int64_t r = rows; r < block; ++r) ASSERT_EQ(hit[static_cast<std::size_t>(r)], 0) << what;
    }
}

TEST(BlockContains, EveryRowAgreesWithTheOneRowSearch) {
    std::mt19937 rng(20261207);
    const std::vector<std::string> needles = {"",       "n",    "ne",       "nee",
                                              "needle", "aaaa", "abababab", "a long needle over more than one chunk"};
    for (const std::string& needle : needles)
        for (const std::size_t max_len : {0u, 3u, 14u, 40u, 300u})
            for (const std::size_t shift : {0u, 1u, 7u, 15u})
                for (const std::int64_t block : {1, 32, 256}) {
                    const Column c = random_column(rng, 700, needle, max_len, shift, 0);
                    const std::string what = "max_len " + std::to_string(max_len) + " shift " + std::to_string(shift) +
                                             " block " + std::to_string(block);
                    expect_block_search_matches_rows<std::int32_t>(c, needle, block, what);
                    expect_block_search_matches_rows<std::int64_t>(c, needle, block, what + " (int64 offsets)");
                }
}

TEST(BlockContains, ASlicedColumnWhoseOffsetsStartPastZero) {
    std::mt19937 rng(7);
    for (const std::int64_t first : {1, 5, 16, 33}) {
        const Column c = random_column(rng, 500, "needle", 30, 3, first);
        expect_block_search_matches_rows<std::int32_t>(c, "needle", 256, "first " + std::to_string(first));
    }
}

TEST(BlockContains, ANeedleAcrossTwoRowsIsInNeither) {
    // "nee" ends row 0 and "dle" starts row 1: the bytes hold "needle", no row does.
    const std::string bytes = "xxneedlexx";
    std::vector<std::int32_t> o = {0, 5, 10};
    const jx::col_utf8<std::int32_t> col{o.data(), reinterpret_cast<const jx::u8*>(bytes.data())};
    const jx::s8 s{reinterpret_cast<const jx::u8*>("needle"), 6};
    std::vector<jx::u8> hit(4, 0);
    for (int t = 0; t < 4; ++t) jx::str::contains_share(col, s, 0, 2, t, 4, hit.data());
    EXPECT_EQ(hit, (std::vector<jx::u8>{0, 0, 0, 0}));
}

TEST(BlockContains, NeedleBytesOfZeroAndHighBytes) {
    // Bytes outside the block's range read as zero in a partial chunk: a needle starting with a
    // zero byte must not match them, and bytes >= 0x80 compare unsigned.
    std::string bytes("a\0b\xff\xfe", 5);
    bytes += std::string(40, '\0');
    std::vector<std::int32_t> o = {0, 3, 5, 5, 45};
    const jx::col_utf8<std::int32_t> col{o.data(), reinterpret_cast<const jx::u8*>(bytes.data())};
    for (const std::string& needle : {std::string("\0b", 2), std::string("\xff\xfe"), std::string("\0\0\0", 3)}) {
        const jx::s8 s{reinterpret_cast<const jx::u8*>(needle.data()), static_cast<jx::i64>(needle.size())};
        std::vector<jx::u8> hit(8, 0);
        for (int t = 0; t < 8; ++t) jx::str::contains_share(col, s, 1, 3, t, 8, hit.data());
        for (int r = 0; r < 3; ++r)
            EXPECT_EQ(hit[static_cast<std::size_t>(r)] != 0, jx::str::contains(col[1 + r], s)) << r;
    }
}

}  // namespace

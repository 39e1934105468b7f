// String predicates on CUDA against the CPU backend (issue 32): S, U and Arrow columns (int32
// and int64 offsets) copied to the device (Array::to moves a column's offsets and bytes), every
// string op against literals and columns, results as masks, in where and in reductions, strided
// and broadcast views, a selection, sizes of one element to many blocks, rows of a few bytes to
// thousands (a long row per thread), needles longer than the rows. Exact: the results are bools
// and integers, bit for bit the CPU's. Skips without a device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace jit;

namespace {

std::vector<unsigned char> bytes(const Array& a) {
    std::vector<unsigned char> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}

// Random words over a small alphabet (so that needles match) with UTF-8 of 2, 3 and 4 bytes.
std::vector<std::string> words(std::size_t n, std::size_t max_len, unsigned seed) {
    static const char* const kPieces[] = {"a", "b", "ab", "x", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "q"};
    std::mt19937 rng(seed);
    std::vector<std::string> out(n);
    for (auto& w : out) {
        const std::size_t len = rng() % (max_len + 1);
        while (w.size() < len) w += kPieces[rng() % 8];
    }
    return out;
}

struct Columns {
    std::vector<std::int32_t> off32;
    std::vector<std::int64_t> off64;
    std::string chars;
    std::vector<unsigned char> fixed;  // S of `width`
    std::vector<char32_t> ucs4;        // U of `width` code points
    Array utf8, large, s, u;
};

// The same words as an Arrow string and large_string column, an S array (bytes) and a U array.
std::unique_ptr<Columns> columns(const std::vector<std::string>& w) {
    auto c = std::make_unique<Columns>();
    c->off32.push_back(0);
    c->off64.push_back(0);
    std::size_t width = 1, cps = 1;
    std::vector<std::u32string> points;
    for (const auto& s : w) {
        c->chars += s;
        c->off32.push_back(static_cast<std::int32_t>(c->chars.size()));
        c->off64.push_back(static_cast<std::int64_t>(c->chars.size()));
        width = std::max(width, s.size());
        std::u32string p;
        for (std::size_t i = 0; i < s.size();) {
            const auto b = static_cast<unsigned char>(s[i]);
            const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
            char32_t cp = len == 1 ? b : b & (0x3F >> (len - 1));
            for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
            p += cp;
            i += len;
        }
        cps = std::max(cps, p.size());
        points.push_back(p);
    }
    const auto n = static_cast<std::int64_t>(w.size());
    c->utf8 = Array::view_utf8(c->off32.data(), 4, c->chars.data(), c->chars.size(), n, Backend::Cpu);
    c->large = Array::view_utf8(c->off64.data(), 8, c->chars.data(), c->chars.size(), n, Backend::Cpu);
    c->fixed.assign(w.size() * width, 0);
    for (std::size_t i = 0; i < w.size(); ++i) std::memcpy(c->fixed.data() + i * width, w[i].data(), w[i].size());
    c->s = Array::view(static_cast<const void*>(c->fixed.data()), DType::Bytes, width, {n}, {}, Backend::Cpu);
    c->ucs4.assign(w.size() * cps, 0);
    for (std::size_t i = 0; i < w.size(); ++i)
        std::memcpy(c->ucs4.data() + i * cps, points[i].data(), points[i].size() * 4);
    c->u = Array::view(static_cast<const void*>(c->ucs4.data()), DType::Str, cps * 4, {n}, {}, Backend::Cpu);
    return c;
}

class StringsGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
        RuntimeOptions g = RuntimeOptions::from_environment();  // JITEXPR_NVRTC_OPTIONS: kernel variants
        g.backend = Backend::Cuda;
        g.disk_cache = false;
        gpu_ = std::make_unique<Runtime>(g);
        RuntimeOptions c;
        c.backend = Backend::Cpu;
        c.disk_cache = false;
        cpu_ = std::make_unique<Runtime>(c);
    }
    // `text` over host arrays on the CPU and over device copies on CUDA: equal dtype, shape, bytes.
    void same(const std::string& text, const Environment& host) { same_on(*gpu_, text, host); }
    void same_on(Runtime& gpu, const std::string& text, const Environment& host) {
        SCOPED_TRACE(text);
        Environment dev;
        for (const auto& [n, v] : host) dev.insert_or_assign(n, v.is_array() ? Arg(v.array().to(Backend::Cuda)) : v);
        Environment h = host;
        const Array want = cpu_->run(text, h);
        const Array got = gpu.run(text, dev);
        ASSERT_EQ(got.backend(), Backend::Cuda);
        EXPECT_EQ(got.dtype(), want.dtype());
        EXPECT_EQ(got.shape(), want.shape());
        EXPECT_EQ(bytes(got), bytes(want));
    }
    std::unique_ptr<Runtime> gpu_, cpu_;
};

const char* const kPrograms[] = {
    "t == 'ab'",
    "t != l",
    "t < 'b\\u00e9'",
    "u >= t",
    "s > b'ab'",
    "contains(t, 'a\\u00e9')",
    "contains(l, '\\U0001F600x')",
    "contains(s, b'xq')",
    "contains(u, t)",
    "startswith(t, 'ab') | endswith(u, '\\u20ac')",
    "find(t, 'x') + find(u, 'b') + find(l, u)",
    "str_len(t) * 2 + str_len(s) + str_len(u)",
    "sum(contains(t, 'b'))",
    "contains(t, '') | contains(l, 'a')",             // the block search: an empty needle, two columns
    "sum(contains(l, 'ab')) + sum(contains(t, ''))",  // and in a full reduction's loop
    "argmax(contains(t, 'ba'))",
    "sum(where(t == u, str_len(l), -1))",
    "contains(t, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')",
    "x[startswith(l, 'a')]",
    "cumsum(endswith(s, b'b'))",
};

}  // namespace

TEST_F(StringsGpu, EveryOpAgainstTheCpuOverManySizes) {
    for (std::size_t n : {1u, 7u, 256u, 1000u, 100003u}) {
        const auto c = columns(words(n, 12, static_cast<unsigned>(n)));
        std::vector<float> xs(n);
        for (std::size_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 17);
        const Array x = Array::from(xs, {}, Backend::Cpu);
        Environment env{{"t", Arg(c->utf8)}, {"l", Arg(c->large)}, {"s", Arg(c->s)}, {"u", Arg(c->u)}, {"x", Arg(x)}};
        for (const char* text : kPrograms) same(text, env);
    }
}

// The programs above as the CPU reference runs them, without a device: a program the CPU refuses
// would only be found on a GPU machine.
TEST(StringsGpuPrograms, EveryProgramRunsOnTheCpu) {
    const auto c = columns(words(300, 12, 5));
    const Array x = Array::from(std::vector<float>(300, 1.5f), {}, Backend::Cpu);
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    Runtime cpu(o);
    for (const char* text : kPrograms) {
        Environment env{{"t", Arg(c->utf8)}, {"l", Arg(c->large)}, {"s", Arg(c->s)}, {"u", Arg(c->u)}, {"x", Arg(x)}};
        EXPECT_NO_THROW((void)cpu.run(text, env)) << text;
    }
}

TEST_F(StringsGpu, LongRowsAndStridedViews) {
    const auto c = columns(words(3000, 2000, 7));  // rows up to thousands of bytes, one per thread
    Environment env{{"t", Arg(c->utf8)}, {"u", Arg(c->u)}, {"s", Arg(c->s)}};
    same("contains(t, 'qqqa')", env);
    same("find(u, 'b\\u00e9x')", env);
    same("endswith(s, b'ab')", env);
    // A reversed view, every other row, and a column against a row of a 2-d broadcast.
    same("t[::-1] == 'a'", env);
    same("contains(t[::2], 'x')", env);
    const Array m = Array::from(std::vector<std::int64_t>{1, 2}, {2, 1}, Backend::Cpu);
    Environment env2{{"t", Arg(c->utf8)}, {"m", Arg(m)}};
    same("str_len(t) * m", env2);
}

TEST_F(StringsGpu, SearchesOverBlocksOfShortAndLongRowsAndASlicedColumn) {
    // Blocks of a launch (256 rows) of short and of long rows in turn, every byte alignment of a
    // block's first row, and a column whose offsets start past 0 (an Arrow slice).
    std::vector<std::string> w = words(256 * 9 + 77, 12, 11);
    const std::vector<std::string> longer = words(256 * 9 + 77, 160, 12);
    for (std::size_t i = 0; i < w.size(); ++i)
        if ((i / 256) % 3 == 1) w[i] = longer[i];
    const auto c = columns(w);
    Environment env{{"t", Arg(c->utf8)}, {"l", Arg(c->large)}};
    same("contains(t, 'ab')", env);
    same("find(l, 'x\u00e9') + str_len(t)", env);
    same("contains(t, l)", env);
    const std::int64_t skip = 37;
    const auto rows = static_cast<std::int64_t>(w.size()) - skip;
    const Array sliced =
        Array::view_utf8(c->off32.data() + skip, 4, c->chars.data(), c->chars.size(), rows, Backend::Cpu);
    Environment env2{{"t", Arg(sliced)}};
    same("contains(t, 'b\u20ac') | (str_len(t) > 9)", env2);
}

TEST_F(StringsGpu, ANeedleAcrossTwoRowsIsInNeither) {
    // Rows end to end in memory: a needle that starts in one row and ends in the next is in
    // neither, one that ends at a row's last byte is in it. Rows of 0 to 10 bytes in every
    // phase against a warp's 32 lanes, a partial last warp (33 rows, 1005), and an S array whose
    // elements fill its width (end to end too, no NULs between them).
    std::vector<std::string> w;
    for (int i = 0; i < 1005; ++i) {
        static const char* const kRows[] = {"ne", "edle", "needle", "", "xneedl", "e", "n", "eedlen", "needleneed"};
        w.push_back(kRows[(i * 7 + i / 32) % 9]);
    }
    for (std::size_t n : {33u, 64u, 1005u}) {
        const auto c = columns(std::vector<std::string>(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n)));
        Environment env{{"t", Arg(c->utf8)}, {"l", Arg(c->large)}, {"s", Arg(c->s)}};
        same("contains(t, 'needle')", env);
        same("contains(l, 'le') | contains(t, 'en')", env);
        same("sum(contains(t, 'dlen'))", env);
        same("contains(s, b'needle')", env);
    }
    std::string full;
    for (int i = 0; i < 100; ++i) full += i % 3 == 0 ? "ab" : "ba";
    const auto n = static_cast<std::int64_t>(full.size() / 2);
    const Array s = Array::view(static_cast<const void*>(full.data()), DType::Bytes, 2, {n}, {}, Backend::Cpu);
    Environment env{{"s", Arg(s)}};
    same("contains(s, b'ab')", env);
    same("contains(s, b'aa') | contains(s, b'b')", env);
}

TEST_F(StringsGpu, AWarpSearchesItsRowsTogetherForNeedlesOfEveryLength) {
    // contains() of one-byte units searched a warp's rows together where they lie in order with
    // small gaps (dsl/semantics.h, warp_contains; -DJX_CONTAINS_WARP), against the CPU, and the
    // default row-a-thread search likewise: rows of 0 to 40 bytes and, in some warps, of
    // hundreds (many 512-byte steps), over two letters so that needles of 1 to 17 bytes (17: the
    // row-a-thread search) match often; the column sliced past its first 1 to 16 rows (its first
    // row at other byte alignments); every other row; an S array with gaps under and over 64 bytes.
    RuntimeOptions o = RuntimeOptions::from_environment();
    o.backend = Backend::Cuda;
    o.disk_cache = false;
    o.nvrtc_options.push_back("-DJX_CONTAINS_WARP");
    Runtime warp(o);
    auto both = [&](const std::string& text, const Environment& env) {
        same(text, env);
        same_on(warp, text, env);
    };
    std::mt19937 rng(21);
    std::vector<std::string> w(4096 + 45);
    for (std::size_t i = 0; i < w.size(); ++i) {
        const std::size_t len = (i / 32) % 7 == 3 ? rng() % 700 : rng() % 41;
        while (w[i].size() < len) w[i] += (rng() % 3 == 0) ? 'b' : 'a';
    }
    const auto c = columns(w);
    Environment env{{"t", Arg(c->utf8)}, {"l", Arg(c->large)}};
    const std::string needle = "abaabaaabaaaabaab";
    for (std::size_t m = 1; m <= needle.size(); ++m) {
        const std::string text = "contains(t, '" + needle.substr(0, m) + "')";
        both(text, env);
        both("contains(l[::2], '" + needle.substr(0, m) + "')", env);
    }
    for (std::int64_t skip = 1; skip <= 16; ++skip) {
        const auto rows = static_cast<std::int64_t>(w.size()) - skip;
        const Array sliced =
            Array::view_utf8(c->off32.data() + skip, 4, c->chars.data(), c->chars.size(), rows, Backend::Cpu);
        Environment env2{{"t", Arg(sliced)}};
        both("contains(t, 'aab')", env2);
        both("sum(contains(t, 'baa'))", env2);
    }
    for (std::size_t width : {8u, 100u}) {
        std::vector<unsigned char> fixed(w.size() * width, 0);
        for (std::size_t i = 0; i < w.size(); ++i)
            std::memcpy(fixed.data() + i * width, w[i].data(), std::min(width, w[i].size()));
        const Array s = Array::view(static_cast<const void*>(fixed.data()), DType::Bytes, width,
                                    {static_cast<std::int64_t>(w.size())}, {}, Backend::Cpu);
        Environment env3{{"s", Arg(s)}};
        both("contains(s, b'ab')", env3);
        both("contains(s, b'aaaaab')", env3);
    }
}

TEST_F(StringsGpu, ANewNeedleCompilesNoNewKernel) {
    const auto c = columns(words(5000, 12, 3));
    Environment dev{{"t", Arg(c->utf8.to(Backend::Cuda))}};
    gpu_->run("contains(t, 'ab')", dev);
    const auto before = gpu_->stats();
    gpu_->run("contains(t, 'xq\\u00e9')", dev);
    const auto after = gpu_->stats();
    EXPECT_EQ(after.compiles, before.compiles);
}

TEST_F(StringsGpu, HostColumnsStreamInChunksOrGoWhole) {
    // Host S and U arrays on a CUDA runtime under a small device-memory limit: streamed in
    // chunks of rows like numbers (their rows are their width times their elements); a sum of a
    // predicate combines across chunks. An Arrow column is not cut (no fixed row size): it goes
    // to the device whole (Array::to copies its offsets and bytes), and the answer is the same.
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.disk_cache = false;
    o.device_memory_limit = std::size_t{8} << 20;
    Runtime limited(o);
    const auto c = columns(words(400'000, 12, 9));
    Environment host{{"s", Arg(c->s)}, {"u", Arg(c->u)}};
    Timing t;
    CallOptions co;
    co.timing = &t;
    for (const char* text : {"contains(s, b'ab') | (u > 'b')", "sum(endswith(u, 'a'))", "str_len(s) + find(u, 'x')"}) {
        SCOPED_TRACE(text);
        Environment h = host, h2 = host;
        const Array got = limited.run(text, h, co);
        ASSERT_TRUE(t.streamed) << t.placement;
        EXPECT_GT(t.stream_chunks, 1u);
        const Array want = cpu_->run(text, h2);
        EXPECT_EQ(bytes(got.to(Backend::Cpu)), bytes(want));
    }
    Environment arrow{{"t", Arg(c->utf8)}};
    Environment arrow2 = arrow;
    const Array got = limited.run("contains(t, 'ab')", arrow, co);
    EXPECT_FALSE(t.streamed) << t.placement;
    EXPECT_EQ(bytes(got.to(Backend::Cpu)), bytes(cpu_->run("contains(t, 'ab')", arrow2)));
}

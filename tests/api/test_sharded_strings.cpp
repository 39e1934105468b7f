// String columns through jit::Sharded on CPU shards (issue 32, chunked paths): NumPy's fixed-width
// S and U arrays and Arrow UTF-8 columns split by rows, evaluated shard by shard, and gathered back
// into one array: fixed-width rows concatenated (widened to the widest shard, as np.concatenate
// widens S3 and S5 to S5), an Arrow column's bytes concatenated with its offsets rebased.
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace jit;

namespace {

RuntimeOptions cpu_options() {
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    return o;
}

const std::vector<std::string> kWords{"apple", "banana", "", "app", "cherry", "b\xc3\xa9ta", "apple"};

// A fixed-width array (S: bytes, U: one code unit a byte here, widened to UCS-4) of `width`
// characters, each value NUL-padded as NumPy stores it.
Array fixed(DType t, const std::vector<std::string>& v, std::size_t width, Shape shape = {}) {
    const std::size_t unit = t == DType::Str ? 4 : 1;
    if (shape.empty()) shape = {static_cast<std::int64_t>(v.size())};
    Array a = Array::empty(t, width * unit, shape, Backend::Cpu);
    auto* p = static_cast<unsigned char*>(a.data());
    std::memset(p, 0, a.nbytes());
    for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t k = 0; k < std::min(width, v[i].size()); ++k) {
            const std::uint32_t c = static_cast<unsigned char>(v[i][k]);
            std::memcpy(p + (i * width + k) * unit, &c, unit);
        }
    return a;
}

// The values of a host fixed-width array, trailing NULs cut, one byte a code unit.
std::vector<std::string> fixed_values(const Array& a) {
    const std::size_t unit = a.dtype() == DType::Str ? 4 : 1;
    const std::size_t w = a.itemsize();
    std::vector<unsigned char> raw(a.nbytes());
    a.copy_to_host(raw.data());
    std::vector<std::string> out;
    for (std::int64_t i = 0; i < a.size(); ++i) {
        std::string s;
        for (std::size_t k = 0; k < w / unit; ++k) {
            std::uint32_t c = 0;
            std::memcpy(&c, raw.data() + static_cast<std::size_t>(i) * w + k * unit, unit);
            s.push_back(static_cast<char>(c));
        }
        while (!s.empty() && s.back() == '\0') s.pop_back();
        out.push_back(s);
    }
    return out;
}

// An Arrow string column over buffers that `keep` holds.
struct Utf8Column {
    std::vector<std::int64_t> off64;
    std::vector<std::int32_t> off32;
    std::string chars;
    Array array;
};
Utf8Column utf8(const std::vector<std::string>& v, bool large = false) {
    Utf8Column c;
    c.off64.push_back(0);
    for (const auto& s : v) {
        c.chars += s;
        c.off64.push_back(static_cast<std::int64_t>(c.chars.size()));
    }
    for (auto o : c.off64) c.off32.push_back(static_cast<std::int32_t>(o));
    const void* offsets = large ? static_cast<const void*>(c.off64.data()) : static_cast<const void*>(c.off32.data());
    c.array = Array::view_utf8(offsets, large ? 8 : 4, c.chars.data(), c.chars.size(),
                               static_cast<std::int64_t>(v.size()), Backend::Cpu);
    return c;
}

// The rows of a host Arrow string column that is contiguous, and its first offset.
std::vector<std::string> utf8_values(const Array& a, std::int64_t* first_offset = nullptr) {
    EXPECT_EQ(a.dtype(), DType::Utf8);
    EXPECT_EQ(a.backend(), Backend::Cpu);
    EXPECT_TRUE(a.is_contiguous());
    const std::size_t w = a.itemsize();
    auto off = [&](std::int64_t k) -> std::int64_t {
        const char* p = static_cast<const char*>(a.data()) + k * static_cast<std::int64_t>(w);
        if (w == 4) {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    };
    if (first_offset) *first_offset = off(0);
    std::vector<std::string> out;
    const auto* chars = static_cast<const char*>(a.chars());
    for (std::int64_t i = 0; i < a.size(); ++i) {
        EXPECT_LE(off(i), off(i + 1));
        EXPECT_LE(static_cast<std::size_t>(off(i + 1)), a.chars_bytes());
        out.emplace_back(chars + off(i), static_cast<std::size_t>(off(i + 1) - off(i)));
    }
    return out;
}

}  // namespace

TEST(ShardedStrings, GatherOfSplitBytesAndStr) {
    // Before: gather() asked Array::empty for a string array without its width and threw.
    for (const DType t : {DType::Bytes, DType::Str}) {
        const Array s = fixed(t, kWords, 8);
        const Sharded parts = Sharded::split(s, {0, 0, 0}, Backend::Cpu);
        ASSERT_EQ(parts.shards().size(), 3u);
        const Array g = parts.gather();
        EXPECT_EQ(g.dtype(), t);
        EXPECT_EQ(g.itemsize(), s.itemsize());
        EXPECT_EQ(g.shape(), s.shape());
        EXPECT_EQ(g.backend(), Backend::Cpu);
        EXPECT_EQ(fixed_values(g), fixed_values(s));
    }
}

TEST(ShardedStrings, GatherOfTwoDimensionalAndStridedShards) {
    // Rows of a 2-D U array, and shards that are strided views (every other row of a whole).
    const std::vector<std::string> v{"a", "bb", "ccc", "dddd", "e", "ff", "g", "hh"};
    const Array u = fixed(DType::Str, v, 4, {4, 2});
    const Array g = Sharded::split(u, {0, 0}, Backend::Cpu).gather();
    EXPECT_EQ(g.shape(), (Shape{4, 2}));
    EXPECT_EQ(fixed_values(g), v);
    const Array b = fixed(DType::Bytes, v, 4);
    const Sharded strided = Sharded::from_shards({b.slice(0, 0, 4, 2), b.slice(0, 4, 8, 2)});
    EXPECT_EQ(fixed_values(strided.gather()), (std::vector<std::string>{"a", "ccc", "e", "g"}));
}

TEST(ShardedStrings, GatherWidensToTheWidestShard) {
    // Shards of S3 and S5 (as from_shards takes them) gather into S5, as np.concatenate does.
    const Array a = fixed(DType::Bytes, {"abc", "de"}, 3);
    const Array b = fixed(DType::Bytes, {"fghij", "k", ""}, 5);
    const Array g = Sharded::from_shards({a, b}).gather();
    EXPECT_EQ(g.itemsize(), 5u);
    EXPECT_EQ(fixed_values(g), (std::vector<std::string>{"abc", "de", "fghij", "k", ""}));
    const Array u = fixed(DType::Str, {"xy"}, 2);
    const Array w = fixed(DType::Str, {"uvw", "z"}, 3);
    const Array gu = Sharded::from_shards({w, u}).gather();
    EXPECT_EQ(gu.itemsize(), 12u);
    EXPECT_EQ(fixed_values(gu), (std::vector<std::string>{"uvw", "z", "xy"}));
}

TEST(ShardedStrings, GatherOfSplitArrowColumnRebasesOffsets) {
    for (const bool large : {false, true}) {
        const Utf8Column c = utf8(kWords, large);
        const Sharded parts = Sharded::split(c.array, {0, 0, 0}, Backend::Cpu);
        const Array g = parts.gather();
        EXPECT_EQ(g.itemsize(), large ? 8u : 4u);
        EXPECT_EQ(g.shape(), (Shape{7}));
        std::int64_t first = -1;
        EXPECT_EQ(utf8_values(g, &first), kWords);
        EXPECT_EQ(first, 0);
        EXPECT_EQ(g.chars_bytes(), c.chars.size());
        // The gathered column is an input like any other.
        Runtime rt(cpu_options());
        Environment env{{"t", Arg(g)}};
        EXPECT_EQ(rt.run("t == 'apple'", env).to_vector<std::uint8_t>(),
                  (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 1}));
    }
}

TEST(ShardedStrings, GatherOfArrowShardsThatAreSlicesAndOfMixedOffsetWidths) {
    // Shards that are views into one long column (offsets not from 0), one of them empty, and an
    // int32 shard next to an int64 one: gathered into large_string.
    const Utf8Column c = utf8(kWords);
    const Utf8Column big = utf8({"xyz", "w"}, /*large=*/true);
    const Sharded s = Sharded::from_shards({c.array.slice(0, 3, 6), c.array.slice(0, 6, 6), big.array});
    const Array g = s.gather();
    EXPECT_EQ(g.itemsize(), 8u);
    EXPECT_EQ(utf8_values(g), (std::vector<std::string>{"app", "cherry", "b\xc3\xa9ta", "xyz", "w"}));
    EXPECT_EQ(g.chars_bytes(), 3u + 6u + 5u + 3u + 1u);
}

TEST(ShardedStrings, EvalOverSplitStringInputsGathersResults) {
    // A program over split S, U and Arrow columns: a split bool result gathered, a combined count.
    ShardedRuntime rt({0, 0, 0}, cpu_options());
    const Utf8Column c = utf8(kWords);
    for (const Array& col : {fixed(DType::Bytes, kWords, 8), fixed(DType::Str, kWords, 8), c.array}) {
        const bool bytes = col.dtype() == DType::Bytes;
        ShardedEnvironment env{{"t", Sharded::split(col, {0, 0, 0}, Backend::Cpu)}};
        const Sharded eq = rt.eval(bytes ? "t == b'apple'" : "t == 'apple'", env);
        EXPECT_EQ(eq.kind(), Sharded::Kind::Split);
        EXPECT_EQ(eq.gather().to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 1}));
        EXPECT_EQ(
            rt.eval(bytes ? "sum(contains(t, b'an'))" : "sum(contains(t, 'an'))", env).whole().item<std::int64_t>(), 1);
        // The input itself, gathered back, is the whole column again.
        const Array back = std::get<Sharded>(env.at("t")).gather();
        if (col.dtype() == DType::Utf8) EXPECT_EQ(utf8_values(back), kWords);
        else EXPECT_EQ(fixed_values(back), fixed_values(col));
    }
}

TEST(ShardedStrings, GatherOfReplicatedStrings) {
    const Utf8Column c = utf8(kWords);
    EXPECT_EQ(utf8_values(Sharded::replicate(c.array, {0, 0}, Backend::Cpu).gather()), kWords);
    const Array s = fixed(DType::Bytes, kWords, 8);
    EXPECT_EQ(fixed_values(Sharded::replicate(s, {0, 0}, Backend::Cpu).gather()), fixed_values(s));
}

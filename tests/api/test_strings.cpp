// String columns at the C++ entry points on the CPU backend (issue 32): NumPy's fixed-width S
// (bytes) and U (UCS-4) arrays and Arrow's variable-length UTF-8 columns (Array::view_utf8),
// compared with literals and with each other, contains/startswith/endswith/find/str_len, and
// their results used as masks, in where and in reductions. Expected values are NumPy 2's
// (np.strings and the comparison ufuncs) for the same data; tests/python/test_strings.py compares
// with NumPy and numexpr over random data.
#include <jit/check.hpp>
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include "dsl/plan.hpp"
#include "dsl/verify.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

// An S array of `width` (each string NUL-padded), as NumPy stores np.array([...], dtype=f'S{width}').
Array bytes_array(const std::vector<std::string>& v, std::size_t width) {
    Array a = Array::empty(DType::Bytes, width, {static_cast<std::int64_t>(v.size())}, Backend::Cpu);
    auto* p = static_cast<char*>(a.data());
    std::memset(p, 0, a.nbytes());
    for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(p + i * width, v[i].data(), std::min(width, v[i].size()));
    return a;
}

// A U array of `chars` code points per element, from code point lists.
Array str_array(const std::vector<std::u32string>& v, std::size_t chars) {
    Array a = Array::empty(DType::Str, chars * 4, {static_cast<std::int64_t>(v.size())}, Backend::Cpu);
    auto* p = static_cast<char32_t*>(a.data());
    std::memset(p, 0, a.nbytes());
    for (std::size_t i = 0; i < v.size(); ++i)
        std::memcpy(p + i * chars, v[i].data(), std::min(chars, v[i].size()) * 4);
    return a;
}

// An Arrow string column (UTF-8, int32 or int64 offsets) of `v`; the buffers live in `keep`.
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

std::vector<std::uint8_t> bools(const Array& a) { return a.to_vector<std::uint8_t>(); }
std::vector<std::int64_t> ints(const Array& a) { return a.to_vector<std::int64_t>(); }

const std::vector<std::string> kWords{"apple", "banana", "", "app", "cherry", "b\xc3\xa9ta", "apple"};

}  // namespace

TEST(Strings, BytesCompareWithLiteral) {
    const Array s = bytes_array(kWords, 8);
    Environment env{{"s", Arg(s)}};
    EXPECT_EQ(bools(cpu().run("s == b'apple'", env)), (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(bools(cpu().run("s != b'apple'", env)), (std::vector<std::uint8_t>{0, 1, 1, 1, 1, 1, 0}));
    // Lexicographic by unsigned byte, a prefix first ("" < "app" < "apple" < "b\xc3..." < "banana").
    EXPECT_EQ(bools(cpu().run("s < b'apple'", env)), (std::vector<std::uint8_t>{0, 0, 1, 1, 0, 0, 0}));
    EXPECT_EQ(bools(cpu().run("s >= b'b'", env)), (std::vector<std::uint8_t>{0, 1, 0, 0, 1, 1, 0}));
    EXPECT_EQ(bools(cpu().run("b'b' <= s", env)), (std::vector<std::uint8_t>{0, 1, 0, 0, 1, 1, 0}));
    EXPECT_EQ(bools(cpu().run("s > b'banana'", env)), (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 1, 0}));
}

TEST(Strings, TrailingNulsDoNotCount) {
    // An S3 element "ab" is "ab\0"; NumPy's value is b"ab", and a literal's NULs at the end go too.
    const Array s = bytes_array({"ab", std::string("a\0b", 3), ""}, 3);
    Environment env{{"s", Arg(s)}};
    EXPECT_EQ(bools(cpu().run("s == b'ab'", env)), (std::vector<std::uint8_t>{1, 0, 0}));
    EXPECT_EQ(bools(cpu().run("s == b'ab\\x00'", env)), (std::vector<std::uint8_t>{1, 0, 0}));
    EXPECT_EQ(ints(cpu().run("str_len(s)", env)), (std::vector<std::int64_t>{2, 3, 0}));
    // A needle of NULs only is empty: found at 0 (np.strings.find(a, b'\0') is 0 everywhere).
    EXPECT_EQ(ints(cpu().run("find(s, b'\\x00')", env)), (std::vector<std::int64_t>{0, 0, 0}));
    // An inner NUL counts: "a\0b" contains "\0b".
    EXPECT_EQ(bools(cpu().run("contains(s, b'\\x00b')", env)), (std::vector<std::uint8_t>{0, 1, 0}));
}

TEST(Strings, Functions) {
    const Array s = bytes_array(kWords, 8);
    Environment env{{"s", Arg(s)}};
    EXPECT_EQ(bools(cpu().run("contains(s, b'an')", env)), (std::vector<std::uint8_t>{0, 1, 0, 0, 0, 0, 0}));
    EXPECT_EQ(bools(cpu().run("contains(s, b'')", env)), (std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1, 1}));
    EXPECT_EQ(bools(cpu().run("startswith(s, b'app')", env)), (std::vector<std::uint8_t>{1, 0, 0, 1, 0, 0, 1}));
    EXPECT_EQ(bools(cpu().run("endswith(s, b'rry')", env)), (std::vector<std::uint8_t>{0, 0, 0, 0, 1, 0, 0}));
    EXPECT_EQ(ints(cpu().run("find(s, b'a')", env)), (std::vector<std::int64_t>{0, 1, -1, 0, -1, 4, 0}));
    // Bytes count bytes: "b\xc3\xa9ta" is 5 of them.
    EXPECT_EQ(ints(cpu().run("str_len(s)", env)), (std::vector<std::int64_t>{5, 6, 0, 3, 6, 5, 5}));
}

TEST(Strings, StrArraysCountCodePoints) {
    const Array u = str_array({U"apple", U"b\u00e9ta", U"", U"\U0001F600x"}, 6);
    Environment env{{"u", Arg(u)}};
    EXPECT_EQ(bools(cpu().run("u == 'b\u00e9ta'", env)), (std::vector<std::uint8_t>{0, 1, 0, 0}));
    EXPECT_EQ(bools(cpu().run("u == 'b\\xe9ta'", env)), (std::vector<std::uint8_t>{0, 1, 0, 0}));
    EXPECT_EQ(ints(cpu().run("str_len(u)", env)), (std::vector<std::int64_t>{5, 4, 0, 2}));
    EXPECT_EQ(ints(cpu().run("find(u, 'ta')", env)), (std::vector<std::int64_t>{-1, 2, -1, -1}));
    EXPECT_EQ(ints(cpu().run("find(u, 'x')", env)), (std::vector<std::int64_t>{-1, -1, -1, 1}));
    // Code point order: U+1F600 sorts after every BMP letter.
    EXPECT_EQ(bools(cpu().run("u > 'z'", env)), (std::vector<std::uint8_t>{0, 0, 0, 1}));
}

TEST(Strings, ArrowColumns) {
    for (bool large : {false, true}) {
        const Utf8Column c = utf8(kWords, large);
        Environment env{{"s", Arg(c.array)}};
        EXPECT_EQ(bools(cpu().run("s == 'apple'", env)), (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 1}));
        EXPECT_EQ(bools(cpu().run("contains(s, 'an')", env)), (std::vector<std::uint8_t>{0, 1, 0, 0, 0, 0, 0}));
        // A match across two rows ("apple" + "banana") is no match.
        EXPECT_EQ(bools(cpu().run("contains(s, 'eb')", env)), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0}));
        EXPECT_EQ(bools(cpu().run("contains(s, 'pp')", env)), (std::vector<std::uint8_t>{1, 0, 0, 1, 0, 0, 1}));
        // UTF-8 counts code points: "b\xc3\xa9ta" has 4, and its "t" is at 2.
        EXPECT_EQ(ints(cpu().run("str_len(s)", env)), (std::vector<std::int64_t>{5, 6, 0, 3, 6, 4, 5}));
        EXPECT_EQ(ints(cpu().run("find(s, 't')", env)), (std::vector<std::int64_t>{-1, -1, -1, -1, -1, 2, -1}));
        EXPECT_EQ(bools(cpu().run("s < 'b'", env)), (std::vector<std::uint8_t>{1, 0, 1, 1, 0, 0, 1}));
    }
}

TEST(Strings, ColumnAgainstColumn) {
    const Array a = bytes_array({"x", "yy", "z", ""}, 2);
    const Array b = bytes_array({"x", "y", "zzz", ""}, 3);
    Environment env{{"a", Arg(a)}, {"b", Arg(b)}};
    EXPECT_EQ(bools(cpu().run("a == b", env)), (std::vector<std::uint8_t>{1, 0, 0, 1}));
    EXPECT_EQ(bools(cpu().run("a < b", env)), (std::vector<std::uint8_t>{0, 0, 1, 0}));
    EXPECT_EQ(bools(cpu().run("contains(b, a)", env)), (std::vector<std::uint8_t>{1, 0, 1, 1}));
    // A U array against an Arrow column: code point by code point.
    const Array u = str_array({U"b\u00e9ta", U"a", U"\U0001F600", U"zz"}, 2);
    const Utf8Column c = utf8({"b\xc3\xa9ta", "b", "\xf0\x9f\x98\x80", "z"});
    Environment env2{{"u", Arg(u)}, {"c", Arg(c.array)}};
    // (u is U2: "b\u00e9ta" is cut to "b\u00e9" when stored, as NumPy does)
    EXPECT_EQ(bools(cpu().run("u == c", env2)), (std::vector<std::uint8_t>{0, 0, 1, 0}));
    EXPECT_EQ(bools(cpu().run("startswith(c, u)", env2)), (std::vector<std::uint8_t>{1, 0, 1, 0}));
    EXPECT_EQ(bools(cpu().run("u < c", env2)), (std::vector<std::uint8_t>{1, 1, 0, 0}));
    EXPECT_EQ(ints(cpu().run("find(c, u)", env2)), (std::vector<std::int64_t>{0, -1, 0, -1}));
}

TEST(Strings, UsedAsBoolsAndInts) {
    const Array s = bytes_array(kWords, 8);
    const Array x = Array::from(std::vector<double>{1, 2, 3, 4, 5, 6, 7}, {}, Backend::Cpu);
    Environment env{{"s", Arg(s)}, {"x", Arg(x)}};
    EXPECT_EQ(cpu().run("sum(contains(s, b'p'))", env).item<std::int64_t>(), 3);
    EXPECT_EQ(cpu().run("sum(x[s == b'apple'])", env).item<double>(), 8.0);
    EXPECT_EQ(cpu().run("x[startswith(s, b'b')]", env).to_vector<double>(), (std::vector<double>{2, 6}));
    EXPECT_EQ(cpu().run("where(s == b'', -1.0, x * 2)", env).to_vector<double>(),
              (std::vector<double>{2, 4, -1, 8, 10, 12, 14}));
    EXPECT_EQ(cpu().run("sum(str_len(s) * (x > 2))", env).item<std::int64_t>(), 3 + 6 + 5 + 5);
    // A selection of strings read by a string function: contains over the selected rows.
    EXPECT_EQ(bools(cpu().run("contains(s[x > 4], b'e')", env)), (std::vector<std::uint8_t>{1, 0, 1}));
    // One program, one pass: the mask and the numbers are fused into the same stage.
    EXPECT_EQ(cpu().run("sum(where(s == b'apple', x, 0.0)) + mean(x)", env).item<double>(), 8.0 + 4.0);
}

TEST(Strings, StridedAndBroadcast) {
    const Array s = bytes_array({"a", "b", "c", "d", "e", "f"}, 1).reshape({2, 3});
    Environment env{{"s", Arg(s)}, {"t", Arg(s.transpose())}};
    EXPECT_EQ(bools(cpu().run("t == b'b'", env)), (std::vector<std::uint8_t>{0, 0, 1, 0, 0, 0}));
    EXPECT_EQ(bools(cpu().run("s[:, 1:] > b'c'", env)), (std::vector<std::uint8_t>{0, 0, 1, 1}));
    const Utf8Column c = utf8({"a", "bb", "ccc"});
    const Array m = Array::from(std::vector<std::int64_t>{1, 2}, {2, 1}, Backend::Cpu);
    Environment env2{{"c", Arg(c.array)}, {"m", Arg(m)}};
    // (2, 1) against (3,): the column broadcast along a new first axis, read through its offsets.
    EXPECT_EQ(ints(cpu().run("str_len(c) * m", env2)), (std::vector<std::int64_t>{1, 2, 3, 2, 4, 6}));
    EXPECT_EQ(bools(cpu().run("c[::-1] == 'a'", env2)), (std::vector<std::uint8_t>{0, 0, 1}));
}

TEST(Strings, LiteralsAlone) {
    EXPECT_TRUE(eval("'abc' < 'abd'", Named{}).item<bool>());
    EXPECT_TRUE(eval("contains(b'haystack', b'st')", Named{}).item<bool>());
    EXPECT_EQ(eval("find('h\u00e9llo', 'l')", Named{}).item<std::int64_t>(), 2);
    EXPECT_EQ(eval("str_len('ab\\x00')", Named{}).item<std::int64_t>(), 2);
}

TEST(Strings, Refusals) {
    const Array s = bytes_array(kWords, 8);
    const Array u = str_array({U"a"}, 1);
    const Array x = Array::from(std::vector<double>{1, 2, 3, 4, 5, 6, 7}, {}, Backend::Cpu);
    Environment env{{"s", Arg(s)}, {"u", Arg(u)}, {"x", Arg(x)}};
    auto type_error = [&](const std::string& text, const std::string& words) {
        try {
            cpu().run(text, env);
            ADD_FAILURE() << text << ": no error";
        } catch (const TypeError& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << text << ": " << e.what();
        }
    };
    type_error("s == 'apple'", "does not mix bytes and str");
    type_error("u == b'a'", "does not mix bytes and str");
    type_error("contains(s, u)", "does not mix bytes and str");
    type_error("s == 1", "takes strings on both sides");
    type_error("s + b'x'", "no string-valued result");
    type_error("s", "the program's value would be strings");
    type_error("t = s", "'t' would hold strings");
    type_error("where(x > 1, s, s)", "where() is not supported for strings");
    type_error("int64(s)", "do not convert to int64");
    type_error("sum(s)", "not supported for strings");
    type_error("-s", "unary '-'");
    type_error("contains(x, 1.0)", "takes strings");
    type_error("str_len(x)", "takes strings");
    type_error("s[x > 1]", "would be strings");
}

TEST(Strings, PlansVerify) {
    // Every plan of a string program passes ir::verify (dsl::plan runs it in debug builds only).
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = DType::Utf8;
    b.itemsize = 4;
    b.shape = {5};
    b.strides = {1};
    dsl::Bindings bs;
    bs.lookup = [&b](std::string_view n) -> const dsl::Binding* { return n == "s" ? &b : nullptr; };
    for (const char* text : {"s == 'x'", "contains(s, 'a') & (str_len(s) > 2)", "sum(find(s, 'q'))", "s < s"}) {
        const ir::Plan p = dsl::plan(text, bs, dsl::Limits{});
        EXPECT_NO_THROW(ir::verify(p.program, p.schedule)) << text;
        EXPECT_FALSE(p.program.canonical().empty());
    }
}

TEST(Strings, ArrayWidthsAndBadInput) {
    const Array s = bytes_array({"abc"}, 5);
    EXPECT_EQ(s.itemsize(), 5u);
    EXPECT_EQ(s.nbytes(), 5u);
    EXPECT_EQ(s.describe(), "S5 (1,) on cpu");
    EXPECT_EQ(str_array({U"a"}, 3).describe(), "U3 (1,) on cpu");
    EXPECT_THROW(Array::empty(DType::Bytes, 0, {3}, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::empty(DType::Str, 6, {3}, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::empty(DType::Bytes, {3}, Backend::Cpu), ArgumentError);
    char buf[4] = {};
    EXPECT_THROW(Array::view(buf, DType::Bytes, 0, {2}, {}, Backend::Cpu), ArgumentError);
    // Offsets that decrease, or that point past the data buffer: refused before anything reads.
    const std::int32_t down[] = {0, 3, 2};
    const std::int32_t past[] = {0, 2, 9};
    const std::int32_t negative[] = {-1, 2, 3};
    const char chars[] = "abcd";
    EXPECT_THROW(Array::view_utf8(down, 4, chars, 4, 2, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::view_utf8(past, 4, chars, 4, 2, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::view_utf8(negative, 4, chars, 4, 2, Backend::Cpu), ArgumentError);
    EXPECT_THROW(Array::view_utf8(past, 2, chars, 4, 2, Backend::Cpu), ArgumentError);
    // A copy of a slice of a column holds only its own rows, offsets from 0.
    const Utf8Column c = utf8({"ab", "cde", "f", "gh"});
    const Array part = c.array.slice(0, 1, 3).to(Backend::Cpu);
    EXPECT_EQ(part.chars_bytes(), 4u);
    Environment env{{"p", Arg(part)}};
    EXPECT_EQ(bools(cpu().run("p == 'cde'", env)), (std::vector<std::uint8_t>{1, 0}));
    const Array every_other = c.array.slice(0, 0, 4, 2).contiguous();
    Environment env2{{"p", Arg(every_other)}};
    EXPECT_EQ(bools(cpu().run("p == 'f'", env2)), (std::vector<std::uint8_t>{0, 1}));
    EXPECT_THROW(c.array.copy_to_host(buf), ArgumentError);
}

TEST(Strings, RowSplitsOfStringColumns) {
    // S and U arrays split into rows as numbers do (a row is its elements times the width); an
    // Arrow column is read whole by no part: refused, saying why.
    Specs s{{"s", ValueSpec::strings(DType::Bytes, 12, {1000, 3})},
            {"u", ValueSpec::strings(DType::Str, 20, {1000, 3})},
            {"x", ValueSpec::array(DType::Float32, {1000, 3})}};
    const CheckedProgram c = check("sum(where(contains(s, b'a') & (u > 'm'), x, 0))", s);
    ASSERT_TRUE(c.rows.splits) << c.rows.why_not;
    std::map<std::string, std::size_t> row_bytes;
    for (const auto& in : c.rows.inputs) row_bytes[in.name] = in.row_bytes;
    EXPECT_EQ(row_bytes["s"], 3u * 12);
    EXPECT_EQ(row_bytes["u"], 3u * 20);
    EXPECT_EQ(row_bytes["x"], 3u * 4);
    Specs t{{"t", ValueSpec::strings(DType::Utf8, 4, {1000})}};
    const CheckedProgram d = check("t == 'x'", t);
    EXPECT_FALSE(d.rows.splits);
    EXPECT_NE(d.rows.why_not.find("'t' is an Arrow string column"), std::string::npos) << d.rows.why_not;
}

TEST(Strings, ShardedRowsOfSAndUAndArrowColumns) {
    // Sharded::split cuts S and U arrays into blocks of rows (views), an Arrow column too (each
    // block a copy of its rows, offsets rebased: Array::to); the program's value is the whole's.
    const Array s = bytes_array(kWords, 8);
    const Utf8Column c = utf8(kWords);
    const Array x = Array::from(std::vector<double>{1, 2, 3, 4, 5, 6, 7}, {}, Backend::Cpu);
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    ShardedRuntime rt({0, 0, 0}, o);
    ShardedEnvironment env{{"s", Sharded::split(s, {0, 0, 0}, Backend::Cpu)},
                           {"x", Sharded::split(x, {0, 0, 0}, Backend::Cpu)}};
    EXPECT_EQ(rt.eval("sum(where(startswith(s, b'a'), x, 0))", env).whole().item<double>(), 1 + 4 + 7);
    const Sharded parts = Sharded::split(c.array, {0, 0, 0}, Backend::Cpu);
    ASSERT_EQ(parts.shards().size(), 3u);
    std::vector<std::uint8_t> got;
    for (const Array& p : parts.shards()) {
        Environment e{{"t", Arg(p)}};
        for (auto b : bools(cpu().run("t == 'apple'", e))) got.push_back(b);
    }
    EXPECT_EQ(got, (std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 1}));
}

// Strings read nothing out of bounds: S, U and Arrow columns whose buffers are allocated to the
// exact byte (no NUL after the last element, no slack after the data buffer), every string op
// over them with needles shorter than, as long as and longer than the rows, and Arrow columns
// with malformed offsets refused before any byte is read. Run it in the sanitizer build, where
// AddressSanitizer reports a read one byte past any of these buffers:
//   BUILD_DIR=build-asan SANITIZE=1 WERROR=0 GPU_TESTS=0 BENCH=0 scripts/test.sh (or configure
//   that build and `cmake --build build-asan --target test_string_bounds`)
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
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

// `bytes` in a heap block of exactly that size (ASan's redzone starts at its end).
std::shared_ptr<unsigned char[]> exact(const std::string& bytes) {
    std::shared_ptr<unsigned char[]> p(new unsigned char[std::max<std::size_t>(bytes.size(), 1)]);
    std::memcpy(p.get(), bytes.data(), bytes.size());
    return p;
}

const char* const kPrograms[] = {
    "s == n",         "s != n",           "s < n",          "s >= n",         "n > s",
    "contains(s, n)", "startswith(s, n)", "endswith(s, n)", "find(s, n) + 1", "str_len(s) + str_len(n)",
    "contains(n, s)", "find(n, s) + 1",   "endswith(n, s)", "s == s",         "contains(s, s)",
};

// Every program over column `s` (and its reverse, a strided view) against the needles.
void run_all(const Array& s, const std::vector<Array>& needles) {
    for (const Array& n : needles)
        for (const char* text : kPrograms) {
            Environment env{{"s", Arg(s)}, {"n", Arg(n)}};
            const Array r = cpu().run(text, env);
            EXPECT_EQ(r.size(), s.size()) << text;
            Environment rev{{"s", Arg(s.slice(0, -1, -s.size() - 1, -1))}, {"n", Arg(n)}};
            EXPECT_EQ(cpu().run(text, rev).size(), s.size()) << text;
        }
}

}  // namespace

TEST(StringBounds, FixedWidthColumnsEndingAtTheirLastByte) {
    // S4: rows filling their width (no NUL), partly NUL, all NUL; the buffer ends at the last byte.
    const std::string sdata = std::string("abcd") + std::string("ab\0\0", 4) + std::string("\0\0\0\0", 4) + "dcba";
    auto sbuf = exact(sdata);
    const Array s = Array::view(static_cast<const void*>(sbuf.get()), DType::Bytes, 4, {4}, {}, Backend::Cpu);
    std::vector<Array> needles;
    for (const std::string& n : std::vector<std::string>{"", "a", "cd", "abcd", "abcde", "dcbaabcd"}) {
        auto buf = exact(n.empty() ? std::string(1, '\0') : n);
        needles.push_back(Array::view(static_cast<const void*>(buf.get()), DType::Bytes,
                                      std::max<std::size_t>(n.size(), 1), {}, {}, Backend::Cpu, 0,
                                      std::shared_ptr<void>(buf, buf.get())));
    }
    run_all(s, needles);
    // U2: code points, the last one ending the buffer.
    const std::u32string udata =
        U"ab"
        U"c" +
        std::u32string(1, U'\0') + U"\U0001F600z";
    auto ubuf = exact(std::string(reinterpret_cast<const char*>(udata.data()), udata.size() * 4));
    const Array u = Array::view(static_cast<const void*>(ubuf.get()), DType::Str, 8, {3}, {}, Backend::Cpu);
    std::vector<Array> uneedles;
    for (const std::u32string& n : std::vector<std::u32string>{U"b", U"\U0001F600z", U"abc"}) {
        auto buf = exact(std::string(reinterpret_cast<const char*>(n.data()), n.size() * 4));
        uneedles.push_back(Array::view(static_cast<const void*>(buf.get()), DType::Str, n.size() * 4, {}, {},
                                       Backend::Cpu, 0, std::shared_ptr<void>(buf, buf.get())));
    }
    run_all(u, uneedles);
}

TEST(StringBounds, ArrowColumnsEndingAtTheirLastByte) {
    // UTF-8 rows, the last one a 4-byte sequence ending the data buffer; a U needle decodes them.
    const std::string chars =
        "ab\xc3\xa9"
        "cd"
        ""
        "\xf0\x9f\x98\x80";
    for (bool large : {false, true}) {
        auto cbuf = exact(chars);
        const std::vector<std::int64_t> off{0, 2, 4, 6, 6, 10};
        std::shared_ptr<unsigned char[]> obuf;
        if (large) {
            obuf = exact(std::string(reinterpret_cast<const char*>(off.data()), off.size() * 8));
        } else {
            std::vector<std::int32_t> o32(off.begin(), off.end());
            obuf = exact(std::string(reinterpret_cast<const char*>(o32.data()), o32.size() * 4));
        }
        const Array s = Array::view_utf8(obuf.get(), large ? 8 : 4, cbuf.get(), chars.size(), 5, Backend::Cpu, 0,
                                         std::shared_ptr<void>(cbuf, cbuf.get()));
        std::vector<Array> needles;
        for (const std::u32string& n : std::vector<std::u32string>{U"", U"\u00e9", U"\U0001F600", U"cd\U0001F600x"}) {
            auto buf = exact(n.empty() ? std::string(4, '\0')
                                       : std::string(reinterpret_cast<const char*>(n.data()), n.size() * 4));
            needles.push_back(Array::view(static_cast<const void*>(buf.get()), DType::Str,
                                          std::max<std::size_t>(n.size(), 1) * 4, {}, {}, Backend::Cpu, 0,
                                          std::shared_ptr<void>(buf, buf.get())));
        }
        run_all(s, needles);
        // The same column against itself and against literals (the block search of contains).
        for (const char* text :
             {"contains(s, '\\U0001F600')", "contains(s, 'b\\u00e9c')", "s == 'cd'", "find(s, 'd')"}) {
            Environment env{{"s", Arg(s)}};
            EXPECT_EQ(cpu().run(text, env).size(), 5) << text;
        }
    }
}

TEST(StringBounds, MalformedOffsetsAreRefusedBeforeAnyByteIsRead) {
    // A data buffer of 4 bytes; offsets that would read past it or backwards.
    auto cbuf = exact("abcd");
    const std::vector<std::vector<std::int32_t>> bad{{0, 2, 5}, {0, 3, 1}, {-2, 1, 2}, {0, 2, 2147483647}};
    for (const auto& o : bad) {
        auto obuf = exact(std::string(reinterpret_cast<const char*>(o.data()), o.size() * 4));
        EXPECT_THROW(Array::view_utf8(obuf.get(), 4, cbuf.get(), 4, 2, Backend::Cpu), ArgumentError);
    }
    // Through the Arrow C data interface: decreasing and negative offsets refused, nothing
    // consumed. (The interface gives no size for the data buffer: the last offset is taken for
    // it, so {0, 2, 5} over these 4 bytes is a column of 5 bytes as far as anyone can tell; only
    // a caller who knows the size can refuse it, as view_utf8 does above. docs/embedding.md says
    // so.)
    for (const auto& o : {bad[1], bad[2]}) {
        auto obuf = exact(std::string(reinterpret_cast<const char*>(o.data()), o.size() * 4));
        const void* buffers[3] = {nullptr, obuf.get(), cbuf.get()};
        ArrowArray a{};
        a.length = 2;
        a.n_buffers = 3;
        a.buffers = buffers;
        a.release = [](ArrowArray* x) { x->release = nullptr; };
        ArrowSchema sc{};
        sc.format = "u";
        sc.release = [](ArrowSchema* x) { x->release = nullptr; };
        EXPECT_THROW(jit::view_arrow(&sc, &a), ArgumentError);
        EXPECT_NE(a.release, nullptr);
    }
}

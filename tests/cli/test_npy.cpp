// .npy parsing and serialising, in memory and through files (CPU arrays).
#include <jit/error.hpp>
#include <jit/npy.hpp>
#include <jit/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;

// A whole .npy file: version 1.0 prelude + `dict` padded to 64 bytes + `data`.
std::string npy_v1(std::string dict, std::string_view data) {
    std::size_t total = 10 + dict.size() + 1;
    dict.append((total + 63) / 64 * 64 - total, ' ');
    dict += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(dict.size() & 0xFF);
    out += static_cast<char>(dict.size() >> 8);
    return out + dict + std::string(data);
}

std::string npy_v2(int major, const std::string& dict, std::string_view data) {
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\x00';
    const std::size_t n = dict.size();
    for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + dict + std::string(data);
}

template <class T>
std::string raw(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string io_error_message(std::string_view bytes) {
    try {
        jit::parse_npy(bytes, Backend::Cpu, "bad.npy");
    } catch (const jit::IOError& e) {
        return e.what();
    }
    return "(no IOError)";
}

// The folders tmp_path made, removed when the program ends.
std::vector<std::filesystem::path>& test_folders() {
    static std::vector<std::filesystem::path> folders;
    return folders;
}

struct RemoveTestFolders : ::testing::Environment {
    void TearDown() override {
        std::error_code ec;
        for (const auto& d : test_folders()) std::filesystem::remove_all(d, ec);
    }
};
[[maybe_unused]] const ::testing::Environment* const kRemoveTestFolders =
    ::testing::AddGlobalTestEnvironment(new RemoveTestFolders);

// A file in a folder of the running test's own. Tests run at once (ctest -j runs each TEST as a
// process of its own, and two CI runs may share /tmp): the process id and the test's full name
// keep them apart, and the folder is emptied when the test first asks for it (a leftover of a
// killed run whose process id came back).
std::string tmp_path(const std::string& leaf) {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test = std::string(info->test_suite_name()) + "." + info->name();
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("jitexpr_npy_test_" + std::to_string(::getpid()) + "_" + test);
    static std::set<std::string> made;
    if (made.insert(test).second) {
        std::filesystem::remove_all(dir);
        test_folders().push_back(dir);
    }
    std::filesystem::create_directories(dir);
    return (dir / leaf).string();
}

TEST(NpyParse, ReadsLittleEndianFloat32Vector) {
    std::vector<float> v{1.5f, -2.0f, 3.25f};
    Array a = jit::parse_npy(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", raw(v)), Backend::Cpu);
    EXPECT_EQ(a.dtype(), DType::Float32);
    EXPECT_EQ(a.shape(), (jit::Shape{3}));
    EXPECT_EQ(a.to_vector<float>(), v);
}

TEST(NpyParse, SwapsBigEndianInt32) {
    std::string data("\x00\x00\x00\x01\xff\xff\xff\xfe", 8);
    Array a = jit::parse_npy(npy_v1("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data), Backend::Cpu);
    EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -2}));
}

TEST(NpyParse, SwapsEachHalfOfBigEndianComplex) {
    // complex64 (1 + 2j): two big-endian float32s.
    std::string data("\x3f\x80\x00\x00\x40\x00\x00\x00", 8);
    Array a = jit::parse_npy(npy_v1("{'descr': '>c8', 'fortran_order': False, 'shape': (), }", data), Backend::Cpu);
    EXPECT_EQ(a.ndim(), 0);
    EXPECT_EQ(a.to_vector<std::complex<float>>(), (std::vector<std::complex<float>>{{1.0f, 2.0f}}));
}

TEST(NpyParse, ConvertsFortranOrderToC) {
    // Shape (2, 3) in column-major order: columns (0, 3), (1, 4), (2, 5).
    std::vector<std::int16_t> f{0, 3, 1, 4, 2, 5};
    Array a =
        jit::parse_npy(npy_v1("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", raw(f)), Backend::Cpu);
    EXPECT_EQ(a.shape(), (jit::Shape{2, 3}));
    EXPECT_EQ(a.to_vector<std::int16_t>(), (std::vector<std::int16_t>{0, 1, 2, 3, 4, 5}));
}

TEST(NpyParse, ConvertsThreeDimensionalFortranOrderToC) {
    // C index (i, j, k) of shape (2, 2, 2) holds 4i + 2j + k; Fortran position i + 2j + 4k.
    std::vector<std::uint8_t> f(8);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            for (int k = 0; k < 2; ++k)
                f[static_cast<std::size_t>(i + 2 * j + 4 * k)] = static_cast<std::uint8_t>(4 * i + 2 * j + k);
    Array a =
        jit::parse_npy(npy_v1("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2, 2), }", raw(f)), Backend::Cpu);
    EXPECT_EQ(a.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(NpyParse, AcceptsVersion2And3Headers) {
    std::vector<double> v{0.5};
    const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)}\n";
    EXPECT_EQ(jit::parse_npy(npy_v2(2, dict, raw(v)), Backend::Cpu).to_vector<double>(), v);
    EXPECT_EQ(jit::parse_npy(npy_v2(3, dict, raw(v)), Backend::Cpu).to_vector<double>(), v);
}

TEST(NpyParse, AcceptsKeysInAnyOrderWithDoubleQuotes) {
    std::vector<std::int64_t> v{7, 8};
    Array a =
        jit::parse_npy(npy_v1("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<i8\"}", raw(v)), Backend::Cpu);
    EXPECT_EQ(a.to_vector<std::int64_t>(), v);
}

TEST(NpyParse, NormalisesBoolBytesToZeroOrOne) {
    Array a = jit::parse_npy(
        npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x02\x01", 3)),
        Backend::Cpu);
    std::vector<unsigned char> out(3);
    a.copy_to_host(out.data());
    EXPECT_EQ(out, (std::vector<unsigned char>{0, 1, 1}));
}

TEST(NpyParse, ReadsEmptyArray) {
    Array a = jit::parse_npy(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", ""), Backend::Cpu);
    EXPECT_EQ(a.shape(), (jit::Shape{0, 3}));
    EXPECT_EQ(a.size(), 0);
}

TEST(NpyParse, ReadsDatesAndDurationsOfTheirUnit) {
    const std::vector<std::int64_t> v{19783, std::numeric_limits<std::int64_t>::min(), -1};
    Array a =
        jit::parse_npy(npy_v1("{'descr': '<M8[D]', 'fortran_order': False, 'shape': (3,), }", raw(v)), Backend::Cpu);
    EXPECT_EQ(a.dtype(), DType::DateTime64_D);
    EXPECT_EQ(a.to_vector<std::int64_t>(), v);
    Array b =
        jit::parse_npy(npy_v1("{'descr': '<m8[ps]', 'fortran_order': False, 'shape': (3,), }", raw(v)), Backend::Cpu);
    EXPECT_EQ(b.dtype(), DType::TimeDelta64_ps);
    std::string big(8, '\0');
    big[7] = 5;  // 5, big-endian
    Array c = jit::parse_npy(npy_v1("{'descr': '>m8[s]', 'fortran_order': False, 'shape': (), }", big), Backend::Cpu);
    EXPECT_EQ(c.dtype(), DType::TimeDelta64_s);
    EXPECT_EQ(c.item<std::int64_t>(), 5);
}

TEST(NpySerialise, WritesNumPysDescrOfADate) {
    const std::int64_t v = 7;
    for (const auto& [t, descr] :
         {std::pair{DType::DateTime64_ns, "'<M8[ns]'"}, std::pair{DType::TimeDelta64_Y, "'<m8[Y]'"},
          std::pair{DType::DateTime64_as, "'<M8[as]'"}}) {
        const std::string bytes = jit::to_npy_bytes(Array::from_host(&v, t, {}, Backend::Cpu));
        EXPECT_NE(bytes.find(std::string("'descr': ") + descr), std::string::npos) << bytes;
        EXPECT_EQ(jit::parse_npy(bytes, Backend::Cpu).dtype(), t);
    }
}

TEST(NpyParse, ReadsBfloat16Descr) {
    std::vector<std::uint16_t> bits{0x3F80, 0xC000};  // 1.0, -2.0
    Array a = jit::parse_npy(npy_v1("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (2,), }", raw(bits)),
                             Backend::Cpu);
    EXPECT_EQ(a.dtype(), DType::BFloat16);
    std::vector<std::uint16_t> out(2);
    a.copy_to_host(out.data());
    EXPECT_EQ(out, bits);
}

TEST(NpyParseErrors, RejectsBadMagic) {
    EXPECT_NE(io_error_message(std::string("\x93NUMPZ\x01\x00\x00\x00", 10)).find("magic"), std::string::npos);
}

TEST(NpyParseErrors, RejectsUnknownVersion) {
    std::string bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "abcd");
    bytes[6] = '\x04';
    EXPECT_NE(io_error_message(bytes).find("version 4.0"), std::string::npos);
}

TEST(NpyParseErrors, MessageNamesTheFile) { EXPECT_EQ(io_error_message("short").rfind("bad.npy: ", 0), 0u); }

TEST(NpyParseErrors, RejectsHeaderLongerThanTheFile) {
    std::string bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "");
    EXPECT_NE(io_error_message(bytes.substr(0, 30)).find("ends inside the .npy header"), std::string::npos);
}

TEST(NpyParseErrors, RejectsTruncatedData) {
    std::string bytes = npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(12, '\0'));
    EXPECT_NE(io_error_message(bytes).find("truncated"), std::string::npos);
}

TEST(NpyParseErrors, RejectsUnsupportedDescr) {
    // (S and U of no width, or of no number; datetime64 of no unit, of a multiple of one, or of a
    // unit NumPy lacks too)
    for (const char* d : {"<Ux", "|S-1", "<S1.5", "|O", "<M8", "<m8[5s]", "<M8[q]", "|M8[s]", "<f16", "|V8", "<f3",
                          "bf16", "<bfloat16"}) {
        std::string msg = io_error_message(npy_v1(
            std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (), }", std::string(16, '\0')));
        EXPECT_NE(msg.find("unsupported dtype descr"), std::string::npos) << d << ": " << msg;
    }
}

TEST(NpyParse, ReadsFixedWidthStringsOfEitherByteOrder) {
    // S3 (bytes, NUL-padded) and U2 little- and big-endian (UCS-4 code points).
    jit::Array s =
        jit::parse_npy(npy_v1("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", std::string("ab\0xyz", 6)),
                       jit::Backend::Cpu, "s.npy");
    EXPECT_EQ(s.dtype(), jit::DType::Bytes);
    EXPECT_EQ(s.itemsize(), 3u);
    EXPECT_EQ(jit::to_npy_bytes(s).substr(0, 40).find("'descr': '|S3'") != std::string::npos, true);
    const std::string le = raw(std::vector<std::uint32_t>{0x61, 0xf8, 0x1F600, 0});
    std::string be = le;
    for (std::size_t i = 0; i < be.size(); i += 4)
        std::reverse(be.begin() + static_cast<std::ptrdiff_t>(i), be.begin() + static_cast<std::ptrdiff_t>(i) + 4);
    for (const auto& [descr, data] : {std::pair<std::string, std::string>{"<U2", le}, {">U2", be}}) {
        jit::Array u = jit::parse_npy(
            npy_v1("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }", data), jit::Backend::Cpu);
        EXPECT_EQ(u.dtype(), jit::DType::Str);
        EXPECT_EQ(u.itemsize(), 8u);
        std::vector<std::uint32_t> got(4);
        u.copy_to_host(got.data());
        EXPECT_EQ(got, (std::vector<std::uint32_t>{0x61, 0xf8, 0x1F600, 0})) << descr;
        EXPECT_NE(jit::to_npy_bytes(u).find("'descr': '<U2'"), std::string::npos);
    }
    // A string of width 0 holds nothing: an error that says so.
    EXPECT_NE(io_error_message(npy_v1("{'descr': '|S0', 'fortran_order': False, 'shape': (2,), }", "")).find("width 0"),
              std::string::npos);
}

TEST(NpyParseErrors, RejectsStructuredDescr) {
    std::string msg =
        io_error_message(npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (), }", "xxxx"));
    EXPECT_NE(msg.find("structured"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsMissingKey) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'shape': (1,), }", "xxxx"));
    EXPECT_NE(msg.find("'fortran_order' is missing"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsExtraKey) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "xxxx"));
    EXPECT_NE(msg.find("unexpected key 'x'"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsDuplicateKey) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "xxxx"));
    EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsUnclosedDictionary) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", "xxxx"));
    EXPECT_NE(msg.find("malformed .npy header"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsTextAfterDictionary) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "xxxx"));
    EXPECT_NE(msg.find("after the dictionary"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsNonBooleanFortranOrder) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "xxxx"));
    EXPECT_NE(msg.find("True or False"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsParenthesisedIntegerAsShape) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "xxxx"));
    EXPECT_NE(msg.find("must be a tuple"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsNegativeDimension) {
    std::string msg = io_error_message(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "xxxx"));
    EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsShapeWhoseSizeOverflows) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "xxxx"));
    EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

TEST(NpyParseErrors, RejectsDimensionBeyondInt64) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}", ""));
    EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

TEST(NpyParseErrors, DimensionsOfTwoToThe64AndMoreDoNotWrap) {
    // 2^64 + 3 once loaded as (3,), 2^64 as 0.
    for (const char* shape : {"(18446744073709551619,)", "(18446744073709551616, 3)", "(9223372036854775808,)",
                              "(184467440737095516190,)"}) {
        std::string msg = io_error_message(
            npy_v1(std::string("{'descr': '|u1', 'fortran_order': False, 'shape': ") + shape + "}", "xyz"));
        EXPECT_NE(msg.find("a dimension of the shape is too large"), std::string::npos) << shape << ": " << msg;
    }
}

TEST(NpyParse, LargestInt64DimensionIsStillADimension) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '|u1', 'fortran_order': False, 'shape': (9223372036854775807,)}", "x"));
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;  // parsed, then found short
}

TEST(NpyParseErrors, RejectsMoreThanEightDimensions) {
    std::string msg =
        io_error_message(npy_v1("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}", "x"));
    EXPECT_NE(msg.find("more than 8 dimensions"), std::string::npos) << msg;
}

TEST(NpySerialise, HeaderIsPaddedTo64BytesAndEndsWithNewline) {
    Array a = Array::from(std::vector<float>{1, 2, 3}, {}, Backend::Cpu);
    std::string bytes = jit::to_npy_bytes(a);
    ASSERT_GE(bytes.size(), 10u);
    const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    EXPECT_EQ(bytes.size(), 10 + header_len + 12);
    EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (3,), "), std::string::npos);
}

TEST(NpySerialise, RoundTripsEveryDtype) {
    for (int t = 0; t < jit::kNumDTypes; ++t) {
        const DType dt = static_cast<DType>(t);
        const std::size_t isz = jit::itemsize(dt);
        std::vector<unsigned char> data(6 * isz);
        for (std::size_t i = 0; i < data.size(); ++i)
            data[i] = static_cast<unsigned char>(dt == DType::Bool ? i % 2 : i * 37 + 1);
        Array a = Array::from_host(data.data(), dt, {2, 3}, Backend::Cpu);
        Array b = jit::parse_npy(jit::to_npy_bytes(a), Backend::Cpu);
        EXPECT_EQ(b.dtype(), dt) << jit::dtype_name(dt);
        EXPECT_EQ(b.shape(), (jit::Shape{2, 3}));
        std::vector<unsigned char> out(data.size());
        b.copy_to_host(out.data());
        EXPECT_EQ(out, data) << jit::dtype_name(dt);
    }
}

TEST(NpySerialise, RoundTripsZeroDimensionalArray) {
    const double v = 2.5;
    Array a = Array::from_host(&v, DType::Float64, {}, Backend::Cpu);
    Array b = jit::parse_npy(jit::to_npy_bytes(a), Backend::Cpu);
    EXPECT_EQ(b.ndim(), 0);
    EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{2.5}));
}

TEST(NpyFiles, SaveThenLoadRoundTrips) {
    const std::string path = tmp_path("a.npy");
    Array a = Array::from(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {3, 2}, Backend::Cpu);
    jit::save_npy(path, a);
    Array b = jit::load_npy(path, Backend::Cpu);
    EXPECT_EQ(b.shape(), (jit::Shape{3, 2}));
    EXPECT_EQ(b.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyFiles, SaveLeavesNoTemporaryFile) {
    const std::string path = tmp_path("b.npy");
    jit::save_npy(path, Array::from(std::vector<float>{1}, {}, Backend::Cpu));
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
        (void)e;
        ++files;
    }
    EXPECT_EQ(files, 1);
}

TEST(NpyFiles, SaveIntoMissingFolderThrowsAndCreatesNothing) {
    const std::string path = tmp_path("missing") + "/c.npy";
    EXPECT_THROW(jit::save_npy(path, Array::from(std::vector<float>{1}, {}, Backend::Cpu)), jit::IOError);
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(path).parent_path()));
}

TEST(NpyFiles, LoadMissingFileNamesIt) {
    const std::string path = tmp_path("nope.npy");
    try {
        jit::load_npy(path, Backend::Cpu);
        FAIL() << "no IOError";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    }
}

TEST(NpyFiles, LoadShortFileSaysItIsShorterThanItsData) {
    const std::string path = tmp_path("short.npy");
    {
        std::ofstream f(path, std::ios::binary);
        f << npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }", std::string(40, '\0'));
    }
    try {
        jit::load_npy(path, Backend::Cpu);
        FAIL() << "no IOError";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("shorter than its data"), std::string::npos) << e.what();
    }
}

TEST(NpyFiles, TruncatedFileClaimingTerabytesIsShortNotOutOfMemory) {
    // The header claims 8 TiB: no machine has that, so allocating first would fail.
    const std::string path = tmp_path("huge.npy");
    {
        std::ofstream f(path, std::ios::binary);
        f << npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(8, '\0'));
    }
    try {
        jit::load_npy(path, Backend::Cpu);
        FAIL() << "no IOError";
    } catch (const jit::IOError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(path), std::string::npos) << m;
        EXPECT_NE(m.find("needs 8796093022208 bytes after the header, 8 present"), std::string::npos) << m;
    }
}

TEST(NpyFiles, LoadsFromAPipe) {
    Array a = Array::from(std::vector<std::int16_t>{7, 8, 9}, {}, Backend::Cpu);
    const std::string bytes = jit::to_npy_bytes(a);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    std::thread writer([&] {
        for (char c : bytes) (void)!::write(p[1], &c, 1);  // byte by byte: short reads everywhere
        ::close(p[1]);
    });
    Array b = jit::load_npy("/dev/fd/" + std::to_string(p[0]), Backend::Cpu);
    writer.join();
    ::close(p[0]);
    EXPECT_EQ(b.to_vector<std::int16_t>(), (std::vector<std::int16_t>{7, 8, 9}));
}

TEST(NpyFiles, ShortStreamClaimingTerabytesIsShortNotOutOfMemory) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    const std::string bytes =
        npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(16, '\0'));
    ASSERT_EQ(::write(p[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(p[1]);
    try {
        jit::load_npy("/dev/fd/" + std::to_string(p[0]), Backend::Cpu);
        FAIL() << "no IOError";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("16 present"), std::string::npos) << e.what();
    }
    ::close(p[0]);
}

TEST(NpyFiles, LoadingADirectorySaysSo) {
    const std::string dir = tmp_path("adir");
    std::filesystem::create_directories(dir);
    try {
        jit::load_npy(dir, Backend::Cpu);
        FAIL() << "no IOError";
    } catch (const jit::IOError& e) {
        EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
}

TEST(NpyFiles, SaveThroughASymbolicLinkKeepsTheLinkAndTheMode) {
    const std::string target = tmp_path("target.npy"), link = tmp_path("link.npy");
    jit::save_npy(target, Array::from(std::vector<float>{1}, {}, Backend::Cpu));
    ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
    std::filesystem::create_symlink(target, link);
    jit::save_npy(link, Array::from(std::vector<float>{2, 3}, {}, Backend::Cpu));
    EXPECT_TRUE(std::filesystem::is_symlink(link));
    EXPECT_EQ(jit::load_npy(target, Backend::Cpu).to_vector<float>(), (std::vector<float>{2, 3}));
    struct stat st {};
    ::stat(target.c_str(), &st);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(NpyFiles, LoadFileEndingInsideHeaderThrows) {
    const std::string path = tmp_path("cut.npy");
    {
        std::ofstream f(path, std::ios::binary);
        f << npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "").substr(0, 20);
    }
    EXPECT_THROW(jit::load_npy(path, Backend::Cpu), jit::IOError);
}

}  // namespace

TEST(NpyFiles, LoadWithACancelledTokenThrowsCancelled) {
    const std::string p = tmp_path("c.npy");
    jit::save_npy(p, Array::from(std::vector<float>{1, 2}));
    jit::CallOptions o;
    o.cancel.emplace();
    o.cancel->cancel();
    EXPECT_THROW(jit::load_npy(p, Backend::Cpu, o), jit::CancelledError);
}

TEST(NpyFiles, SaveStoppedByItsTokenLeavesTheFileAsItWasAndNoTemporary) {
    const std::string p = tmp_path("keep.npy");
    jit::save_npy(p, Array::from(std::vector<float>{1, 2}));
    jit::CallOptions o;
    o.cancel.emplace([] { return true; });  // the first poll stops it
    o.cancel->cancel();
    EXPECT_THROW(jit::save_npy(p, Array::from(std::vector<float>(1 << 20, 3.0f)), o), jit::CancelledError);
    EXPECT_EQ(jit::load_npy(p, Backend::Cpu).to_vector<float>(), (std::vector<float>{1, 2}));
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(p).parent_path())) {
        (void)e;
        ++files;
    }
    EXPECT_EQ(files, 1);
}

TEST(NpyFiles, ProgressCountsTheBytesOfTheData) {
    // Progress comes every ~100 ms at most: a poll function (every ~20 ms) that sleeps makes
    // the load of a few chunks last long enough for reports, whatever the disk's speed.
    const std::string p = tmp_path("big.npy");
    const std::size_t n = std::size_t{12} << 20;  // 48 MiB of float32: three 16 MiB chunks
    jit::save_npy(p, Array::from(std::vector<float>(n, 1.0f)));
    jit::CallOptions o;
    o.cancel.emplace([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        return false;
    });
    std::uint64_t total = 0, done = 0;
    o.progress = [&](const jit::Progress& pr) {
        EXPECT_EQ(pr.phase, jit::Progress::Phase::Load);
        EXPECT_EQ(pr.unit, jit::Progress::Unit::Bytes);
        total = pr.total;
        done = pr.done;
    };
    EXPECT_EQ(jit::load_npy(p, Backend::Cpu, o).size(), static_cast<std::int64_t>(n));
    EXPECT_EQ(total, n * 4);
    EXPECT_GT(done, 0u);
    EXPECT_LE(done, total);
}

// A FIFO waits for its other end like any reader or writer; a stop ends the wait, whichever
// thread asks for it (the call looks at its token about every 20 ms while it waits).
namespace {

// Runs `call` with options `o` and stops it from another thread once it waits: the token's poll
// function counts the call's ticks (one as it starts, then one about every 20 ms of its wait), so
// a third tick says it is in its wait, however slowly a loaded machine got it there. The stop
// must then end the call; within 10 s of the stop (it is seen within ~20 ms: the bound is only
// for a call that never looks, on a loaded machine under a sanitizer).
template <class F>
void expect_stopped_while_waiting(F&& call, jit::CallOptions& o) {
    std::atomic<int> ticks{0};
    std::atomic<bool> ended{false};
    o.cancel.emplace([&ticks] {
        ++ticks;
        return false;
    });
    const jit::CancelToken token = *o.cancel;
    std::chrono::steady_clock::time_point asked{};
    std::thread stopper([&] {
        while (ticks.load() < 3 && !ended.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        asked = std::chrono::steady_clock::now();
        token.cancel();
    });
    EXPECT_THROW(call(), jit::CancelledError);
    const auto returned = std::chrono::steady_clock::now();
    ended = true;
    stopper.join();
    EXPECT_GE(ticks.load(), 3) << "the call ended before it waited";
    EXPECT_LT(std::chrono::duration<double>(returned - asked).count(), 10.0);
}

std::string make_fifo(const std::string& leaf) {
    const std::string p = tmp_path(leaf);
    std::filesystem::remove(p);
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    return p;
}

}  // namespace

TEST(NpyFifo, LoadWaitingForAWriterEndsOnAStop) {
    const std::string p = make_fifo("in.fifo");
    jit::CallOptions o;
    expect_stopped_while_waiting([&] { (void)jit::load_npy(p, Backend::Cpu, o); }, o);
}

TEST(NpyFifo, SaveWaitingForAReaderEndsOnAStop) {
    const std::string p = make_fifo("out.fifo");
    jit::CallOptions o;
    expect_stopped_while_waiting([&] { jit::save_npy(p, Array::from(std::vector<float>{1}, {}, Backend::Cpu), o); }, o);
}

TEST(NpyFifo, SaveToAReaderThatReadsNothingEndsOnAStop) {
    const std::string p = make_fifo("stuck.fifo");
    // A reader that has the FIFO open before the save starts and never reads: the pipe fills after
    // 64 KiB. (Opened here, not blocking in a thread: a reader thread's blocking open could come
    // after the stop, and then it would wait for a writer forever.)
    const int reader = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    jit::CallOptions o;
    expect_stopped_while_waiting(
        [&] { jit::save_npy(p, Array::from(std::vector<float>(1 << 20, 1.0f), {}, Backend::Cpu), o); }, o);
    ::close(reader);
}

TEST(NpyFifo, LoadAndSaveThroughAFifoWithOptions) {
    const std::string p = make_fifo("both.fifo");
    jit::CallOptions o;
    o.cancel.emplace();
    Array got;
    std::thread reader([&] { got = jit::load_npy(p, Backend::Cpu, o); });
    jit::save_npy(p, Array::from(std::vector<std::int32_t>(100000, 7), {}, Backend::Cpu), o);
    reader.join();
    EXPECT_EQ(got.size(), 100000);
    EXPECT_EQ(got.to_vector<std::int32_t>().back(), 7);
}

// Inputs the fuzz targets found (fuzz/), kept as unit tests once fixed. Each names the target
// and what went wrong.
#include <jit/error.hpp>
#include <jit/npy.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using namespace jit;

namespace {

// A version 1.0 .npy file: magic, version, header length, the header padded to 64 bytes.
std::string npy_v1(std::string dict, std::string_view data) {
    std::string header = std::move(dict);
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string f("\x93NUMPY\x01\x00", 8);
    f += static_cast<char>(header.size() & 0xFF);
    f += static_cast<char>(header.size() >> 8);
    return f + header + std::string(data);
}

// fuzz_npy: an empty shape whose other extents multiply past int64 passed the size check (the
// zero made the size 0) and then overflowed computing the strides (UBSan: signed overflow in
// contiguous_strides). NumPy refuses the shape ("array is too big"); so does jitexpr now.
TEST(FuzzNpy, EmptyShapeWhoseOtherExtentsOverflowIsAnIOError) {
    const std::string file =
        npy_v1("{'descr': '>i2', 'fortran_order': False, 'shape': (0,6666019081,8,6666019081,82) }", "");
    try {
        parse_npy(file, Backend::Cpu, "found.npy");
        FAIL() << "accepted";
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
    }
}

TEST(FuzzNpy, EmptyShapeWithLargeButFittingExtentsLoads) {
    const Array a =
        parse_npy(npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1000000000000), }", ""), Backend::Cpu);
    EXPECT_EQ(a.size(), 0);
    EXPECT_EQ(a.shape(), (Shape{0, 1000000000000}));
}

}  // namespace

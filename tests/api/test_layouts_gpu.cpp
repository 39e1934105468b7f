// Every layout class of the CUDA kernels (contiguous rows with broadcasts, column-and-row
// broadcasts, transposed inputs through shared-memory tiles, negative and misaligned strides,
// strided outputs) gives bit for bit the CPU backend's result. Skips, saying why, without a GPU.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

using namespace jit;

namespace {

Runtime& runtime(Backend b) {
    static Runtime cpu([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    static Runtime gpu([] {
        RuntimeOptions o;
        o.backend = Backend::Cuda;
        o.disk_cache = false;
        o.tiered_compile = false;  // the kernels with vector paths from the first eval
        return o;
    }());
    return b == Backend::Cpu ? cpu : gpu;
}

#define REQUIRE_GPU()                                                          \
    do {                                                                       \
        std::string why;                                                       \
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

using View = std::function<Array(const Array&)>;

// A base array of `n` elements of `t` on `backend` (same values on every backend), then a view.
struct Operand {
    DType dtype;
    std::int64_t n;
    View view;
};

Array make(const Operand& o, Backend backend, int salt) {
    std::vector<double> v(static_cast<std::size_t>(o.n));
    for (std::int64_t i = 0; i < o.n; ++i)
        v[static_cast<std::size_t>(i)] = static_cast<double>((i * 37 + salt * 11) % 101) / 8.0 - 6.0;
    Array base64 = Array::from(v, {}, Backend::Cpu);
    Array base = runtime(Backend::Cpu).eval(std::string(dtype_name(o.dtype)) + "(x)", {base64});
    if (backend == Backend::Cuda) base = base.to(Backend::Cuda);
    return o.view(base);
}

std::vector<unsigned char> bytes_of(const Array& a) {
    std::vector<unsigned char> out(a.nbytes());
    if (!out.empty()) a.copy_to_host(out.data());
    return out;
}

void expect_same(const std::string& text, const std::vector<Operand>& operands) {
    std::vector<Arg> cpu_args, gpu_args;
    for (std::size_t i = 0; i < operands.size(); ++i) {
        cpu_args.emplace_back(make(operands[i], Backend::Cpu, static_cast<int>(i)));
        gpu_args.emplace_back(make(operands[i], Backend::Cuda, static_cast<int>(i)));
    }
    Array want = runtime(Backend::Cpu).eval(text, cpu_args);
    Array got = runtime(Backend::Cuda).eval(text, gpu_args);
    ASSERT_EQ(got.backend(), Backend::Cuda);
    ASSERT_EQ(got.shape(), want.shape()) << text;
    ASSERT_EQ(got.dtype(), want.dtype()) << text;
    // A new result's layout is the backends' common rule (run/order.hpp), not the kernel's.
    EXPECT_EQ(got.strides(), want.strides()) << text;
    EXPECT_TRUE(bytes_of(got) == bytes_of(want)) << text << ": CUDA and CPU results differ for " << got.describe();
}

View reshaped(Shape s) {
    return [s](const Array& a) { return a.reshape(s); };
}
View transposed(Shape s) {
    return [s](const Array& a) { return a.reshape(s).transpose(); };
}

const std::pair<std::int64_t, std::int64_t> kShapes[] = {{1, 1},       {3, 5},  {33, 65}, {64, 4096},
                                                         {1000, 1023}, {1, 40}, {40, 1}};

// Flat kernels: the vectors, the scalar tail taken by the threads past them (every remainder of
// the widths 8, 4 and 2), and the scalar path of a view one element off the alignment.
TEST(GpuLayouts, FlatVectorsTailsAndMisalignedViewsMatchCpu) {
    REQUIRE_GPU();
    View whole = [](const Array& a) { return a; };
    for (DType t : {DType::Float16, DType::Float32, DType::Float64}) {
        for (std::int64_t n : {1LL, 3LL, 8LL, 9LL, 15LL, 1023LL, 4097LL, (1LL << 20) + 7}) {
            expect_same("x * 2 + y", {{t, n, whole}, {t, n, whole}});
            View shifted = [n](const Array& a) { return a.slice(0, 1, n + 1); };
            expect_same("x * 2 + y", {{t, n + 1, shifted}, {t, n, whole}});
        }
    }
}

TEST(GpuLayouts, ColumnPlusRowMatchesCpu) {
    REQUIRE_GPU();
    for (auto [m, n] : kShapes) {
        SCOPED_TRACE(testing::Message() << m << " x " << n);
        expect_same("x + y*2", {{DType::Float32, m, reshaped({m, 1})}, {DType::Float32, n, reshaped({1, n})}});
        expect_same("x*y - 1", {{DType::Float16, m, reshaped({m, 1})}, {DType::Float64, n, reshaped({1, n})}});
    }
}

TEST(GpuLayouts, MatrixPlusRowMatchesCpu) {
    REQUIRE_GPU();
    for (auto [m, n] : kShapes) {
        SCOPED_TRACE(testing::Message() << m << " x " << n);
        expect_same("a + r", {{DType::Float32, m * n, reshaped({m, n})}, {DType::Float32, n, reshaped({n})}});
        expect_same("a * r", {{DType::Int8, m * n, reshaped({m, n})}, {DType::Int8, n, reshaped({n})}});
    }
}

TEST(GpuLayouts, TransposedInputMatchesCpu) {
    REQUIRE_GPU();
    for (auto [m, n] : kShapes) {
        SCOPED_TRACE(testing::Message() << m << " x " << n);
        expect_same("x*2 + 1", {{DType::Float32, m * n, transposed({n, m})}});
        expect_same("x + y", {{DType::Float64, m * n, transposed({n, m})}, {DType::Float64, m * n, reshaped({m, n})}});
        expect_same("x * y",
                    {{DType::BFloat16, m * n, transposed({n, m})}, {DType::Float16, m * n, transposed({n, m})}});
        // The tiles: a transposed input beside a C-ordered one (all in one order run contiguous).
        expect_same("x * y", {{DType::BFloat16, m * n, transposed({n, m})}, {DType::Float16, m * n, reshaped({m, n})}});
    }
}

TEST(GpuLayouts, TransposedComplexAndBoolMatchCpu) {
    REQUIRE_GPU();
    expect_same("x * y", {{DType::Complex128, 70 * 90, transposed({90, 70})},
                          {DType::Complex128, 70 * 90, transposed({90, 70})}});
    expect_same("where(c, x, -x)",
                {{DType::Bool, 45 * 77, transposed({77, 45})}, {DType::Float32, 45 * 77, transposed({77, 45})}});
    // The same through the tiles (one operand C-ordered).
    expect_same("x * y",
                {{DType::Complex128, 70 * 90, transposed({90, 70})}, {DType::Complex128, 70 * 90, reshaped({70, 90})}});
    expect_same("where(c, x, -x)",
                {{DType::Bool, 45 * 77, transposed({77, 45})}, {DType::Float32, 45 * 77, reshaped({45, 77})}});
}

TEST(GpuLayouts, TransposedUnderBroadcastOuterAxisMatchesCpu) {
    REQUIRE_GPU();
    const std::int64_t m = 37, n = 70;
    expect_same("x + y", {{DType::Float32, m * n,
                           [=](const Array& a) {
                               return a.reshape({n, m}).transpose().broadcast_to({3, m, n});
                           }},
                          {DType::Float32, 3 * m * n, reshaped({3, m, n})}});
}

TEST(GpuLayouts, VectorTilesMatchCpuAndFallBackWhenMisaligned) {
    REQUIRE_GPU();
    const std::int64_t m = 64, n = 128;
    // Aligned: 16-byte vectors for 2-, 4- and 8-byte elements, and under a broadcast outer axis.
    // Each transposed input has a C-ordered one beside it: arrays all in one other order run
    // as contiguous ones, without tiles (run/order.hpp).
    expect_same("x * y", {{DType::Float16, m * n, transposed({n, m})}, {DType::Float16, m * n, reshaped({m, n})}});
    expect_same("x - y", {{DType::Int64, m * n, transposed({n, m})}, {DType::Int64, m * n, reshaped({m, n})}});
    expect_same("x + y", {{DType::Float32, m * n,
                           [=](const Array& a) {
                               return a.reshape({n, m}).transpose().broadcast_to({3, m, n});
                           }},
                          {DType::Float32, 3 * m * n, reshaped({3, m, n})}});
    // A row stride that is not a multiple of the width, and a pointer off by one element.
    expect_same("x * 2", {{DType::Float32, (m + 1) * n, [=](const Array& a) {
                               return a.reshape({n, m + 1}).slice(1, 0, m).transpose();
                           }}});
    expect_same("x * y", {{DType::Float32, m * n + 1,
                           [=](const Array& a) {
                               return a.slice(0, 1, m * n + 1).reshape({n, m}).transpose();
                           }},
                          {DType::Float32, m * n, reshaped({m, n})}});
    // All in Fortran order, one pointer off by one element: contiguous kernels' scalar path.
    expect_same("x * y", {{DType::Float32, m * n + 1,
                           [=](const Array& a) {
                               return a.slice(0, 1, m * n + 1).reshape({n, m}).transpose();
                           }},
                          {DType::Float32, m * n, transposed({n, m})}});
}

TEST(GpuLayouts, ReversedAndSteppedViewsMatchCpu) {
    REQUIRE_GPU();
    const std::int64_t m = 50, n = 66;
    auto rev_rows = [=](const Array& a) { return a.reshape({m, n}).slice(0, m - 1, -m - 1, -1); };
    auto rev_cols = [=](const Array& a) { return a.reshape({m, n}).slice(1, n - 1, -n - 1, -1); };
    auto stepped = [=](const Array& a) { return a.reshape({m, n}).slice(1, 0, n, 2); };
    auto offset = [=](const Array& a) { return a.reshape({m, n}).slice(1, 1, n - 1); };
    expect_same("x - y", {{DType::Float32, m * n, rev_rows}, {DType::Float32, m * n, rev_cols}});
    expect_same("x * 3", {{DType::Float16, m * n, stepped}});
    expect_same("x + y", {{DType::Float32, m * n, offset}, {DType::Float32, n - 2, reshaped({n - 2})}});
    expect_same("x + y", {{DType::Float64, m * n, rev_cols}, {DType::Float64, m, reshaped({m, 1})}});
}

// Slices the program takes (a[1:], m[::-1, ::2], m[:, 0], new axes): views of the bound
// arrays at an offset, with negative, stepped and zero strides, large enough for every kernel kind.
TEST(GpuLayouts, SlicesInTheTextMatchCpu) {
    REQUIRE_GPU();
    View whole = [](const Array& a) { return a; };
    for (auto [m, n] : kShapes) {
        SCOPED_TRACE(testing::Message() << m << " x " << n);
        for (DType t : {DType::Float32, DType::Float64, DType::Int8, DType::Float16}) {
            const Operand mat{t, m * n, reshaped({m, n})};
            expect_same("x[1:] - x[:-1]", {mat});
            expect_same("x[::-1, ::2] * 2", {mat});
            expect_same("x[:, 0] + x[:, -1]", {mat});
            expect_same("x[None, 1:, ::-1] + x[:1, None, :]", {mat});
            expect_same("(x * 3)[::-1]", {mat});
        }
        // Reductions of integers: exact, so the same bits on both backends.
        const Operand ints{DType::Int32, m * n, reshaped({m, n})};
        expect_same("sum(x[1:] * x[:-1])", {ints});
        expect_same("sum(x[:, ::-1], axis=0)", {ints});
        expect_same("sum(x, axis=1)[::-1] + x[:, 0]", {ints});
        expect_same("x[1:] - x[:-1]", {{DType::Float32, m * n, whole}});
    }
}

TEST(GpuLayouts, WritingAReversedSliceIntoItsOwnArrayMatchesCpu) {
    REQUIRE_GPU();
    std::vector<double> v(4099);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    Array gpu = Array::from(v, {}, Backend::Cpu).to(Backend::Cuda);
    Environment env{{"a", Arg(gpu)}};
    runtime(Backend::Cuda).run("a = a[::-1] + 0.5", env);
    const std::vector<double> got = gpu.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], v[v.size() - 1 - i] + 0.5) << i;
}

TEST(GpuLayouts, TransposedOutputTakesTheGeneralVariant) {
    REQUIRE_GPU();
    const std::int64_t m = 45, n = 70;
    Array a_cpu = make({DType::Float32, m * n, reshaped({m, n})}, Backend::Cpu, 1);
    Array a_gpu = make({DType::Float32, m * n, reshaped({m, n})}, Backend::Cuda, 1);
    Array r_cpu = make({DType::Float32, n, reshaped({n})}, Backend::Cpu, 2);
    Array r_gpu = make({DType::Float32, n, reshaped({n})}, Backend::Cuda, 2);
    Array c_cpu = Array::zeros(DType::Float32, {n, m}, Backend::Cpu).transpose();
    Array c_gpu = Array::zeros(DType::Float32, {n, m}, Backend::Cuda).transpose();
    Environment env_cpu{{"a", a_cpu}, {"r", r_cpu}, {"c", c_cpu}};
    Environment env_gpu{{"a", a_gpu}, {"r", r_gpu}, {"c", c_gpu}};
    runtime(Backend::Cpu).run("c = a + r", env_cpu);
    runtime(Backend::Cuda).run("c = a + r", env_gpu);
    EXPECT_TRUE(bytes_of(c_gpu) == bytes_of(c_cpu));
}

// ---- copies between layouts through the CUDA device's own kernel (backend/cuda/copy.cpp)

// An array of `dtype` on `b` whose bytes count up, each element distinct.
Array counting_bytes(DType dtype, Shape shape, Backend b) {
    Array h = Array::empty(dtype, std::move(shape), Backend::Cpu);
    auto* p = static_cast<unsigned char*>(h.data());
    for (std::size_t i = 0; i < h.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 7 + 1);
    return b == Backend::Cpu ? h : h.to(b);
}

std::vector<unsigned char> host_bytes(const Array& a) {
    std::vector<unsigned char> v(a.nbytes());
    a.copy_to_host(v.data());
    return v;
}

TEST(GpuCopies, ContiguousOfEveryViewAndElementSizeMatchesCpu) {
    REQUIRE_GPU();
    const std::function<Array(const Array&)> views[] = {
        [](const Array& a) { return a.transpose(); },
        [](const Array& a) { return a.slice(1, 0, 65, 2); },
        [](const Array& a) { return a.slice(0, 6, -8, -1); },
        [](const Array& a) { return a.slice(2, 1, 3); },
        [](const Array& a) {
            return a.slice(0, 0, 1).broadcast_to({4, 7, 65, 5});
        },
    };
    for (DType t : {DType::Bool, DType::Int16, DType::Float32, DType::Float64, DType::Complex64, DType::Complex128}) {
        const Array h = counting_bytes(t, {7, 65, 5}, Backend::Cpu);
        const Array d = counting_bytes(t, {7, 65, 5}, Backend::Cuda);
        for (const auto& view : views) {
            const Array vh = view(h), vd = view(d);
            ASSERT_FALSE(vd.is_contiguous());
            const Array cd = vd.contiguous();
            EXPECT_EQ(cd.backend(), Backend::Cuda);
            EXPECT_TRUE(cd.is_contiguous());
            EXPECT_TRUE(host_bytes(cd) == host_bytes(vh.contiguous())) << dtype_name(t) << " " << vd.describe();
            EXPECT_TRUE(host_bytes(vd) == host_bytes(vh)) << dtype_name(t) << " " << vd.describe();
            EXPECT_TRUE(host_bytes(vd.to(Backend::Cpu)) == host_bytes(vh)) << dtype_name(t);
        }
    }
}

TEST(GpuCopies, AMisalignedComplexViewCopiesInNarrowerWords) {
    REQUIRE_GPU();
    // complex128 elements at an offset of 8 bytes from a 16-byte boundary (a view of float64
    // memory): the copy uses 8-byte words.
    const Array h = counting_bytes(DType::Float64, {2 * 40 + 1}, Backend::Cpu);
    const Array d = h.to(Backend::Cuda);
    auto as_complex = [](const Array& a) {
        return Array::view(static_cast<char*>(a.data()) + 8, DType::Complex128, {8, 5}, {1, 8}, a.backend(),
                           a.storage());
    };
    EXPECT_TRUE(host_bytes(as_complex(d).contiguous()) == host_bytes(as_complex(h).contiguous()));
}

TEST(GpuCopies, InPlaceResultIsCopiedBackThroughATransposedTarget) {
    REQUIRE_GPU();
    const std::int64_t m = 33, n = 70;
    Array base_cpu = make({DType::Float32, m * n, reshaped({m, n})}, Backend::Cpu, 3);
    Array base_gpu = make({DType::Float32, m * n, reshaped({m, n})}, Backend::Cuda, 3);
    Environment env_cpu{{"a", base_cpu.transpose()}};
    Environment env_gpu{{"a", base_gpu.transpose()}};
    // The stage writing `a` also stores `b`: a fresh result, then the copy into a's strides.
    runtime(Backend::Cpu).run("b = a + 0; a = a * 10", env_cpu);
    runtime(Backend::Cuda).run("b = a + 0; a = a * 10", env_gpu);
    EXPECT_TRUE(bytes_of(base_gpu) == bytes_of(base_cpu));
    EXPECT_EQ(env_gpu.at("a").array().data(), base_gpu.data());
    EXPECT_TRUE(bytes_of(env_gpu.at("b").array()) == bytes_of(env_cpu.at("b").array()));
}

}  // namespace

// The whole pipeline on the GPU: text -> kernel -> NVRTC -> driver -> launch, checked against a
// host computation. Skips, saying why, where there is no CUDA driver or device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>

using namespace jit;

namespace {
Runtime& gpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cuda;
        return o;
    }());
    return rt;
}
#define REQUIRE_GPU()                                                          \
    do {                                                                       \
        std::string why;                                                       \
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

template <class T>
void check_axpb(std::int64_t n) {
    std::vector<T> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        a[static_cast<std::size_t>(i)] = static_cast<T>((i * 7919) % 1000 - 500);
        b[static_cast<std::size_t>(i)] = static_cast<T>((i * 104729) % 777);
    }
    Array da = Array::from(a, {}, Backend::Cuda), db = Array::from(b, {}, Backend::Cuda);
    Array c = gpu().eval("c = a*2 + b", {da, db});
    ASSERT_EQ(c.backend(), Backend::Cuda);
    ASSERT_EQ(c.size(), n);
    std::vector<T> h = c.to_vector<T>();
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (h[k] != static_cast<T>(a[k] * T(2) + b[k])) ++bad;
    }
    EXPECT_EQ(bad, 0) << "n = " << n;
}
}  // namespace

TEST(GpuPipeline, AxpbFloat32Sizes) {
    REQUIRE_GPU();
    for (std::int64_t n : {0LL, 1LL, 1000LL, (1LL << 20) + 3}) check_axpb<float>(n);
}

TEST(GpuPipeline, AxpbFloat32TwoToThe28) {
    REQUIRE_GPU();
    check_axpb<float>(1LL << 28);
}

TEST(GpuPipeline, AxpbEveryBasicDtype) {
    REQUIRE_GPU();
    check_axpb<double>(100003);
    check_axpb<std::int32_t>(100003);
    check_axpb<std::int64_t>(100003);
}

TEST(GpuPipeline, SecondEvalIsACacheHitWithoutNvrtc) {
    REQUIRE_GPU();
    Array a = Array::from(std::vector<float>(1000, 1.f), {}, Backend::Cuda);
    Array b = Array::from(std::vector<float>(1000, 2.f), {}, Backend::Cuda);
    gpu().eval("z = a*3 - b", {a, b});
    gpu().wait_for_compiles();  // the background half of a tiered compile counts as a compile
    const CacheStats s1 = gpu().stats();
    gpu().eval("z = a*3 - b", {a, b});
    const CacheStats s2 = gpu().stats();
    EXPECT_EQ(s2.hits, s1.hits + 1);
    EXPECT_EQ(s2.misses, s1.misses);
    EXPECT_EQ(s2.compiles, s1.compiles);
}

TEST(GpuPipeline, EvalReusesTheBlockOfAFreedResult) {
    REQUIRE_GPU();
    Array a = Array::from(std::vector<float>(4099, 1.f), {}, Backend::Cuda);
    Array b = Array::from(std::vector<float>(4099, 2.f), {}, Backend::Cuda);
    const void* first = nullptr;
    {
        Array r = gpu().eval("a*5 + b", {a, b});
        first = r.data();
    }
    EXPECT_GE(cuda::kept_device_bytes(), 4099 * sizeof(float));
    Array r2 = gpu().eval("a*5 - b", {a, b});
    EXPECT_EQ(r2.data(), first);
    EXPECT_EQ(r2.to_vector<float>(), std::vector<float>(4099, 3.f));
    cuda::release_kept_device_memory();
    EXPECT_EQ(cuda::kept_device_bytes(), 0u);
}

TEST(GpuPipeline, ReusedBlockWaitsForAKernelOfABlockingStream) {
    REQUIRE_GPU();
    // A slow read of `x` on a stream of our own, then `x` is dropped and its block handed to an
    // eval on the legacy stream: that eval must not overwrite it before the read is done.
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "CUDA runtime sees no device";
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking: the legacy stream waits for it
    const std::int64_t n = 1 << 22;
    Array a = Array::from(std::vector<float>(static_cast<std::size_t>(n), 1.f), {}, Backend::Cuda);
    Array out = Array::zeros(DType::Float32, {n}, Backend::Cuda);
    {
        Array x = gpu().eval("a*7", {a});  // legacy stream, completes in order
        cuda::synchronize();
        Environment rd{{"x", Arg(x)}, {"out", Arg(out)}};
        // Many dependent passes over x on stream s: long enough to still run below.
        gpu().run("out = sin(sin(sin(sin(sin(sin(x)))))) + x", rd, s);
    }                                      // x freed here while the kernel on s may still read it
    Array y = gpu().eval("a*0 - 1", {a});  // may take x's block: ordered after s's kernel
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    std::vector<float> h = out.to_vector<float>();
    const float want = std::sin(std::sin(std::sin(std::sin(std::sin(std::sin(7.f)))))) + 7.f;
    std::int64_t bad = 0;
    for (float v : h) bad += std::fabs(v - want) > 1e-4f;
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(y.to_vector<float>(), std::vector<float>(static_cast<std::size_t>(n), -1.f));
    cudaStreamDestroy(s);
}

TEST(GpuPipeline, TieredCompileRunsScalarKernelsFirstThenTheFullOnes) {
    REQUIRE_GPU();
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.disk_cache = false;
    o.tiered_compile = true;
    Runtime rt(o);
    const std::int64_t n = 100003;
    std::vector<float> ha(static_cast<std::size_t>(n)), hb(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        ha[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f;
        hb[static_cast<std::size_t>(i)] = static_cast<float>(i % 13);
    }
    Array a = Array::from(ha, {}, Backend::Cuda), b = Array::from(hb, {}, Backend::Cuda);
    rt.wait_for_compiles();
    const cuda::TierStats before = cuda::tier_stats();
    // A text no other test compiles: its kernels are in no cache.
    const std::vector<float> first = rt.eval("sin(a)*1.75 + b*b", {a, b}).to_vector<float>();
    EXPECT_EQ(cuda::tier_stats().started, before.started + 1);
    rt.wait_for_compiles();
    const cuda::TierStats after = cuda::tier_stats();
    EXPECT_EQ(after.upgraded, before.upgraded + 1);
    EXPECT_EQ(after.failed, before.failed);
    EXPECT_NE(rt.source("r = sin(a)*1.75 + b*b",
                        [&] {
                            Environment e{{"a", a}, {"b", b}};
                            return e;
                        }())
                  .find("jx_vec<"),
              std::string::npos);
    const std::vector<float> second = rt.eval("sin(a)*1.75 + b*b", {a, b}).to_vector<float>();
    EXPECT_EQ(first, second);  // scalar and vector kernels compute each element alike
    for (std::size_t i = 0; i < second.size(); i += 997) {
        const float want = std::sin(ha[i]) * 1.75f + hb[i] * hb[i];
        EXPECT_NEAR(second[i], want, 1e-5f * std::max(1.f, std::fabs(want))) << i;
    }
}

TEST(GpuPipeline, TieredCompileIsSkippedWhenTheFullKernelsAreOnDisk) {
    REQUIRE_GPU();
    const std::string dir = testing::TempDir() + "jitexpr-tiered-" + std::to_string(::getpid());
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.cache_dir = dir;
    o.tiered_compile = true;
    Array a = Array::from(std::vector<float>(5000, 2.f), {}, Backend::Cuda);
    {
        Runtime first(o);
        (void)first.eval("tanh(a)*3.5 - a", {a});
        first.wait_for_compiles();  // the full kernel is on disk now
    }
    const cuda::TierStats before = cuda::tier_stats();
    Runtime second(o);  // a module cache of its own: only the disk has the kernel
    const std::vector<float> r = second.eval("tanh(a)*3.5 - a", {a}).to_vector<float>();
    EXPECT_EQ(cuda::tier_stats().started, before.started);
    EXPECT_TRUE(second.stats().disk_hits >= 1);
    EXPECT_FLOAT_EQ(r[0], std::tanh(2.f) * 3.5f - 2.f);
    std::filesystem::remove_all(dir);
}

TEST(GpuPipeline, AFirstTiersOwnKernelsAreNotWrittenToDisk) {
    REQUIRE_GPU();
    const std::string dir = testing::TempDir() + "jitexpr-tier-files-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.cache_dir = dir;
    o.tiered_compile = true;
    Array a = Array::from(std::vector<float>(5000, 2.f), {}, Backend::Cuda);
    {
        Runtime rt(o);
        const cuda::TierStats before = cuda::tier_stats();
        EXPECT_FLOAT_EQ(rt.eval("a*3.25 - 1", {a}).to_vector<float>()[0], 5.5f);
        rt.wait_for_compiles();
        EXPECT_EQ(cuda::tier_stats().started, before.started + 1);  // it did start on a first tier
    }
    // The full kernel alone: the first tier's kernel stayed in memory.
    int files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".bin") ++files;
    EXPECT_EQ(files, 1);
    std::filesystem::remove_all(dir);
}

// The first tier's PTX kernels (codegen/ptx.cpp) against the NVRTC kernels, byte for byte, on
// values that tell implementations apart: signed zeros, NaN, infinities, denormals, values that
// saturate casts, integer extremes.
namespace {
Array special(DType t, std::int64_t n, int salt) {
    static const double fv[] = {0.0,
                                -0.0,
                                1.5,
                                -2.25,
                                NAN,
                                INFINITY,
                                -INFINITY,
                                3e38,
                                -3e38,
                                1e-45,
                                2147483648.0,
                                -2147483649.0,
                                7.5,
                                -0.5,
                                0.5,
                                2.5,
                                1e300,
                                -1e-310,
                                9.2233720368547758e18};
    static const long long iv[] = {
        0, 1, -1, -2147483648LL, 2147483647LL, 12345, -77, 9223372036854775807LL, (-9223372036854775807LL - 1), 3, -3};
    const std::size_t m = static_cast<std::size_t>(n);
    auto pick = [&](std::size_t k, std::size_t len) { return (k * 7 + static_cast<std::size_t>(salt) * 3) % len; };
    switch (t) {
        case DType::Float32: {
            std::vector<float> v(m);
            for (std::size_t k = 0; k < m; ++k) v[k] = static_cast<float>(fv[pick(k, std::size(fv))]);
            return Array::from(v, {}, Backend::Cuda);
        }
        case DType::Float64: {
            std::vector<double> v(m);
            for (std::size_t k = 0; k < m; ++k) v[k] = fv[pick(k, std::size(fv))];
            return Array::from(v, {}, Backend::Cuda);
        }
        case DType::Int32: {
            std::vector<std::int32_t> v(m);
            for (std::size_t k = 0; k < m; ++k) v[k] = static_cast<std::int32_t>(iv[pick(k, std::size(iv))]);
            return Array::from(v, {}, Backend::Cuda);
        }
        case DType::Int64: {
            std::vector<std::int64_t> v(m);
            for (std::size_t k = 0; k < m; ++k) v[k] = iv[pick(k, std::size(iv))];
            return Array::from(v, {}, Backend::Cuda);
        }
        default: {
            std::vector<std::uint8_t> v(m);
            for (std::size_t k = 0; k < m; ++k) v[k] = static_cast<std::uint8_t>(pick(k, 3) == 0);
            return Array::from_host(v.data(), DType::Bool, {n}, Backend::Cuda);
        }
    }
}

std::vector<std::uint8_t> bytes_of(const Array& a) {
    std::vector<std::uint8_t> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}
// The first tier's result `x` against the NVRTC kernels' `y`: the first element that differs,
// with the inputs there, in hex.
void expect_same_bytes(const Array& x, const Array& y, const std::vector<Arg>& args, int index) {
    const std::vector<std::uint8_t> bx = bytes_of(x), by = bytes_of(y);
    EXPECT_EQ(bx.size(), by.size());
    const std::size_t width = itemsize(x.dtype());
    for (std::size_t e = 0; e * width < std::min(bx.size(), by.size()); ++e) {
        if (std::memcmp(&bx[e * width], &by[e * width], width) == 0) continue;
        auto hex = [](const std::uint8_t* p, std::size_t len) {
            std::string h;
            for (std::size_t i = len; i-- > 0;) h += fmt::format("{:02x}", p[i]);
            return h;
        };
        std::string in;
        for (const Arg& arg : args) {
            const Array& a = arg.array();
            const std::vector<std::uint8_t> ba = bytes_of(a);
            const std::size_t aw = itemsize(a.dtype());
            in += ' ';
            in += hex(&ba[e * aw], aw);
        }
        ADD_FAILURE() << "case " << index << ": element " << e << " is 0x" << hex(&bx[e * width], width)
                      << " (first tier) and 0x" << hex(&by[e * width], width) << " (NVRTC); inputs" << in;
        return;
    }
}

}  // namespace

TEST(GpuPtxTier, FirstEvalsMatchTheNvrtcKernelsByteForByte) {
    REQUIRE_GPU();
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    RuntimeOptions t;
    t.backend = Backend::Cuda;
    t.disk_cache = false;
    t.tiered_compile = true;
    RuntimeOptions w = t;
    w.tiered_compile = false;
    const DType F32 = DType::Float32, F64 = DType::Float64, I32 = DType::Int32, I64 = DType::Int64, B = DType::Bool;
    struct Case {
        const char* text;
        std::vector<DType> args;
    };
    const Case cases[] = {
        {"a*2 + b", {F32, F32}},
        {"a*2 + b", {F64, F64}},
        {"a*2 + b", {I32, I32}},
        {"a*2 + b", {I64, I64}},
        {"a/b - a*a", {F32, F32}},
        {"a/b", {I32, I64}},
        {"-a + abs(b) + square(a)", {I64, I64}},
        {"-a + abs(b) + square(a)", {F64, F64}},
        {"where(a > b, a, -b)", {F32, F32}},
        {"where(c, a, b)", {B, I32, I32}},
        {"maximum(a, b) + minimum(a, b)*3", {F32, F32}},
        {"maximum(a, b) - minimum(a, b)", {I64, I64}},
        {"clip(a, -1, 1)", {F64}},
        {"sqrt(abs(a)) + floor(b) - ceil(a) + trunc(b) + rint(a) + round(b)", {F32, F32}},
        {"(a < b) & (b != 0) | ~(a == b) ^ (a >= b)", {F32, F32}},
        {"(a <= b) | (a > b) | (a != b)", {I32, I64}},
        {"isnan(a) | isinf(b) | signbit(a) | isfinite(b)", {F32, F64}},
        {"(a & b) | (a ^ ~b)", {I32, I32}},
        {"int32(a) + int64(b)", {F32, F64}},
        {"float32(a) + float64(b)", {I64, I32}},
        {"float32(a) * 2", {F64}},
        {"bool(a) | bool(b)", {F32, I64}},
        {"int32(a)", {I64}},
        {"(c and d) or not c", {B, B}},
        {"c + d", {B, B}},
        // Ops computed by linked device functions.
        {"where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", {F32, F32}},
        {"cbrt(a) + erf(b) - log(abs(a))", {F32, F32}},
        {"tanh(a) + log1p(abs(b)) + arctan2(a, b) + hypot(a, b)", {F64, F64}},
        {"expm1(a) * cos(b)", {F64, F64}},
        {"a // b + a % b", {I32, I32}},
        {"a // b - a % b", {I64, I64}},
        {"a % b + a // b", {F64, F64}},
        {"a ** b", {F32, F32}},
        {"a ** 3 + b ** 2", {I64, I64}},
    };
    const std::int64_t n = 4099;
    const cuda::TierStats before = cuda::tier_stats();
    int index = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        std::vector<Arg> args;
        for (std::size_t k = 0; k < c.args.size(); ++k) args.emplace_back(special(c.args[k], n, static_cast<int>(k)));
        Runtime tiered(t), whole(w);  // module caches of their own: the first eval is tier 1
        const Array x = tiered.eval(c.text, args);
        const Array y = whole.eval(c.text, args);
        expect_same_bytes(x, y, args, index);
        tiered.wait_for_compiles();
        ++index;
    }
    EXPECT_GE(cuda::tier_stats().ptx_kernels, before.ptx_kernels + std::size(cases));
}

// The device-function cases once the machine has built the device libraries (a disk cache
// where a first program started their build): the first tier links the libraries' functions,
// compiling none on its own, and still gives the NVRTC kernels' bits.
TEST(GpuPtxTier, KernelsLinkedWithTheDeviceLibrariesMatchTheNvrtcKernelsByteForByte) {
    REQUIRE_GPU();
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    const std::string dir = testing::TempDir() + "jitexpr-libraries-" + std::to_string(::getpid());
    RuntimeOptions t;
    t.backend = Backend::Cuda;
    t.cache_dir = dir;
    t.tiered_compile = true;
    RuntimeOptions w = t;
    w.disk_cache = false;
    w.tiered_compile = false;
    const DType F32 = DType::Float32, F64 = DType::Float64, I32 = DType::Int32, I64 = DType::Int64;
    {
        Runtime first(t);
        (void)first.eval("sin(a) + 1", {special(F32, 4099, 0)});  // calls a device function
        first.wait_for_compiles();                                // the libraries' build with it
    }
    struct Case {
        const char* text;
        std::vector<DType> args;
    };
    const Case cases[] = {
        {"where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", {F32, F32}},
        {"cbrt(a) + erf(b) - log(abs(a)) + a / b", {F32, F32}},
        {"tanh(a) + log1p(abs(b)) + arctan2(a, b) + hypot(a, b)", {F64, F64}},
        {"expm1(a) * cos(b) + sqrt(abs(a)) / b", {F64, F64}},
        {"a // b + a % b", {I32, I32}},
        {"a // b - a % b + a ** 3", {I64, I64}},
        {"float_power(a, b) + ldexp(a, 3)", {F64, F64}},
    };
    const std::int64_t n = 4099;
    int index = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        std::vector<Arg> args;
        for (std::size_t k = 0; k < c.args.size(); ++k) args.emplace_back(special(c.args[k], n, static_cast<int>(k)));
        Runtime tiered(t), whole(w);
        const Array x = tiered.eval(c.text, args);
        const Array y = whole.eval(c.text, args);
        expect_same_bytes(x, y, args, index);
        tiered.wait_for_compiles();
        // The PTX kernel and the full kernel: no device function compiled on its own.
        EXPECT_EQ(tiered.stats().compiles, 2u);
        ++index;
    }
    std::filesystem::remove_all(dir);
}

// Full reductions written as PTX (issue 33, item 3) against the NVRTC kernels, byte for byte:
// every accumulator over each dtype it takes, on values whose sums round (another order of
// folding gives other bits), over grids of one block, of hundreds, and at the grid's cap (each
// thread then folds many groups), with a tail past the last whole group; an empty operand; and
// a reduction feeding an element-wise stage.
TEST(GpuPtxTier, FullReductionsMatchTheNvrtcKernelsByteForByte) {
    REQUIRE_GPU();
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    RuntimeOptions t;
    t.backend = Backend::Cuda;
    t.disk_cache = false;
    t.tiered_compile = true;
    RuntimeOptions w = t;
    w.tiered_compile = false;
    auto floats = [](std::int64_t n, int salt) {
        std::vector<float> v(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
            v[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + salt) % 97) * 0.1f + 0.013f;
        return Array::from(v, {}, Backend::Cuda);
    };
    auto doubles = [](std::int64_t n) {
        std::vector<double> v(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(i % 89) * 0.01 + 1e-9;
        return Array::from(v, {}, Backend::Cuda);
    };
    auto ints = [](std::int64_t n) {
        std::vector<std::int32_t> v(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
            v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7919) % 2001 - 1000);
        return Array::from(v, {}, Backend::Cuda);
    };
    const std::int64_t n = 100003;  // hundreds of blocks, not a whole number of groups
    const Array a = floats(n, 0), b = floats(n, 5), d = doubles(n), i = ints(n);
    const Array small = floats(77, 1), big = floats((1 << 22) + 3, 2), one = floats(1, 3);
    const Array empty = Array::from(std::vector<float>{}, {}, Backend::Cuda);  // z: e is Euler's number
    struct Case {
        const char* text;
        std::vector<Arg> args;
    };
    const Case cases[] = {
        {"sum(a*b)", {a, b}},
        {"sum(a*2 + b)", {small, small}},
        {"sum(a*1.5)", {big}},
        {"sum(d*3)", {d}},
        {"prod(d*1e-6 + 1)", {d}},
        {"mean(a)", {a}},
        {"mean(d)", {d}},
        {"mean(i)", {i}},
        {"sum(i)", {i}},
        {"prod(i)", {i}},
        {"min(a - b)", {a, b}},
        {"max(d)", {d}},
        {"min(i)", {i}},
        {"max(i)", {i}},
        {"any(a > 9.6)", {a}},
        {"all(a > 0)", {a}},
        {"sum(a > 5)", {a}},
        {"sum(a * x)", {a, one}},
        {"sum(a * s)", {a, Arg(2.5)}},
        {"sum(z)", {empty}},
        {"mean(z)", {empty}},
        {"a - mean(b)*3", {small, a}},
    };
    const cuda::TierStats before = cuda::tier_stats();
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        Runtime tiered(t), whole(w);  // module caches of their own: the first eval is tier 1
        const std::vector<std::uint8_t> first = bytes_of(tiered.eval(c.text, c.args));
        EXPECT_EQ(bytes_of(whole.eval(c.text, c.args)), first);
        tiered.wait_for_compiles();
        EXPECT_EQ(bytes_of(tiered.eval(c.text, c.args)), first);
    }
    // Each program's reduction was a PTX kernel (the empty ones may not be tiered).
    EXPECT_GE(cuda::tier_stats().ptx_kernels, before.ptx_kernels + std::size(cases) - 2);
}

// A full reduction folds each thread's elements in one order whatever reads them: the first
// tier's scalar kernel, the final kernel's vectors, or element by element where a view is not
// aligned for vectors. Sums of values that round (so that another order gives other bits).
TEST(GpuPipeline, FullReductionsGiveTheSameBitsInEveryTierAndAlignment) {
    REQUIRE_GPU();
    RuntimeOptions t;
    t.backend = Backend::Cuda;
    t.disk_cache = false;
    t.tiered_compile = true;
    RuntimeOptions w = t;
    w.tiered_compile = false;
    const std::int64_t n = 100003;  // not a whole number of vectors: a tail too
    std::vector<float> fa(static_cast<std::size_t>(n)), fb(static_cast<std::size_t>(n));
    std::vector<double> da(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        fa[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.1f + 0.013f;
        fb[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) * 0.37f - 1.1f;
        da[static_cast<std::size_t>(i)] = static_cast<double>(i % 89) * 0.01 + 1e-9;
    }
    const Array a = Array::from(fa, {}, Backend::Cuda), b = Array::from(fb, {}, Backend::Cuda);
    const Array d = Array::from(da, {}, Backend::Cuda);
    struct Case {
        const char* text;
        std::vector<Arg> args;
    };
    const Case cases[] = {{"sum(a*b)", {a, b}}, {"mean(a)", {a}}, {"sum(d*3)", {d}}, {"min(a - b)", {a, b}}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        Runtime tiered(t), whole(w);  // module caches of their own: the first eval is tier 1
        const std::vector<std::uint8_t> first = bytes_of(tiered.eval(c.text, c.args));
        EXPECT_EQ(bytes_of(whole.eval(c.text, c.args)), first);
        tiered.wait_for_compiles();
        EXPECT_EQ(bytes_of(tiered.eval(c.text, c.args)), first);
    }
    // a[1:] is 4 bytes past a 16-byte boundary: element by element, against its aligned copy.
    Runtime rt(w);
    const Array shifted = rt.eval("a[1:] * 1", {a});
    EXPECT_EQ(bytes_of(rt.eval("sum(a[1:] * b[1:])", {a, b})),
              bytes_of(rt.eval("sum(s * t)", {shifted, rt.eval("b[1:] * 1", {b})})));
}

TEST(GpuPipeline, CudaMallocPointersWorkThroughTheDriverPath) {
    REQUIRE_GPU();
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "CUDA runtime sees no device";
    const int n = 4096;
    float *pa = nullptr, *pb = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&pa), n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&pb), n * sizeof(float)), cudaSuccess);
    std::vector<float> ha(n), hb(n);
    for (int i = 0; i < n; ++i) ha[i] = static_cast<float>(i), hb[i] = 0.5f;
    ASSERT_EQ(cudaMemcpy(pa, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(pb, hb.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    Array a = Array::view(pa, DType::Float32, {n}, {1}, Backend::Cuda);
    Array b = Array::view(pb, DType::Float32, {n}, {1}, Backend::Cuda);
    Array c = gpu().eval("a*2 + b", {a, b});
    auto hc = c.to_vector<float>();
    for (int i = 0; i < n; ++i) ASSERT_EQ(hc[i], 2.0f * i + 0.5f) << i;
    // In place into the runtime API's memory.
    Environment env{{"a", Arg(a)}, {"b", Arg(b)}};
    gpu().run("a = a + b", env);
    ASSERT_EQ(cudaMemcpy(ha.data(), pa, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < n; ++i) ASSERT_EQ(ha[i], i + 0.5f) << i;
    cudaFree(pa);
    cudaFree(pb);
}

TEST(GpuPipeline, ReductionMatchesHost) {
    REQUIRE_GPU();
    const int n = (1 << 20) + 17;
    std::vector<float> p(n), q(n);
    double ref = 0;
    for (int i = 0; i < n; ++i) {
        p[i] = static_cast<float>((i % 13) - 6) * 0.25f;
        q[i] = static_cast<float>((i % 7) + 1);
        ref += static_cast<double>(p[i]) * q[i];
    }
    Array dp = Array::from(p, {}, Backend::Cuda), dq = Array::from(q, {}, Backend::Cuda);
    Array s = gpu().eval("sum(p * q)", {dp, dq});
    EXPECT_NEAR(s.to_vector<float>()[0], ref, std::fabs(ref) * 1e-5 + 1e-3);
}

// The fuzzer's float16 findings (FuzzFindings in test_language_regressions) on CUDA: a float16
// chain is rounded where a reduction, scan or order statistic reads it, so 30000 ** e is inf and
// prod over [0, inf] is NaN, as in NumPy and on the CPU.
TEST(GpuPipeline, AFloat16ValueEnteringAReductionOrScanIsRoundedFirst) {
    REQUIRE_GPU();
    Environment env{{"x", Arg(Array::from(std::vector<float>{0.0f, 30000.0f}, {}, Backend::Cuda))},
                    {"b", Arg(Array::from(std::vector<std::int8_t>{4, -1, 33, -7}, {}, Backend::Cuda))}};
    gpu().run("a = float16(x)", env);
    auto values = [&](const char* text) {
        const Array r = gpu().run(text, env);
        EXPECT_EQ(r.backend(), Backend::Cuda) << text;
        return r.to_vector<double>();
    };
    EXPECT_TRUE(std::isnan(values("float64(prod(a ** e))").at(0)));
    const std::vector<double> c = values("float64(cumprod(a ** e))");
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0], 0.0);
    EXPECT_TRUE(std::isnan(c[1]));
    EXPECT_TRUE(std::isnan(values("float64(nancumprod(a ** e))").at(1)));
    EXPECT_TRUE(std::isnan(values("float64(quantile(exp(b), 0.9))").at(0)));
    EXPECT_TRUE(std::isinf(values("float64(sum(a ** e))").at(0)));
    // and where a comparison, predicate or step reads it (fuzzer seed 53)
    EXPECT_EQ(values("float64(isinf(a ** e))"), (std::vector<double>{0.0, 1.0}));
    EXPECT_EQ(values("float64(a ** e == a ** e + 1)"), (std::vector<double>{0.0, 1.0}));
}

TEST(GpuPipeline, GeneratedSourceHoldsNoUserNames) {
    REQUIRE_GPU();
    Array a = Array::from(std::vector<float>(8, 1.f), {}, Backend::Cuda);
    Environment env{{"secret_name", Arg(a)}};
    const std::string src = gpu().source("secret_name * 2", env);
    EXPECT_EQ(src.find("secret_name"), std::string::npos);
    EXPECT_NE(src.find("extern \"C\""), std::string::npos);
}

namespace {
// Device memory from the runtime API, freed at scope exit.
struct DeviceBuffer {
    float* p = nullptr;
    explicit DeviceBuffer(std::size_t n) {
        if (cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)) != cudaSuccess) p = nullptr;
    }
    ~DeviceBuffer() { cudaFree(p); }
};
}  // namespace

TEST(GpuPipeline, EvalIntoOwnArraysCapturesIntoACudaGraph) {
    REQUIRE_GPU();
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "CUDA runtime sees no device";
    const int n = 1 << 16;
    DeviceBuffer a(n), b(n), c(n), s(1);
    ASSERT_TRUE(a.p && b.p && c.p && s.p);
    std::vector<float> ha(n), hb(n);
    for (int i = 0; i < n; ++i) ha[i] = static_cast<float>(i % 100), hb[i] = 0.25f;
    ASSERT_EQ(cudaMemcpy(a.p, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b.p, hb.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    Environment env{{"a", Arg(Array::view(a.p, DType::Float32, {n}, {1}, Backend::Cuda))},
                    {"b", Arg(Array::view(b.p, DType::Float32, {n}, {1}, Backend::Cuda))},
                    {"c", Arg(Array::view(c.p, DType::Float32, {n}, {1}, Backend::Cuda))},
                    {"s", Arg(Array::view(s.p, DType::Float32, {}, {}, Backend::Cuda))}};
    const char* text = "c = c + a*2 + b\ns = sum(c)";
    // Once outside the capture: compiles, loads and makes this stream's workspace; the
    // background half of the tiered compile must not load modules during the capture.
    ASSERT_EQ(cudaMemsetAsync(c.p, 0, n * sizeof(float), stream), cudaSuccess);
    gpu().run(text, env, stream);
    gpu().wait_for_compiles();
    ASSERT_EQ(cudaMemsetAsync(c.p, 0, n * sizeof(float), stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    gpu().run(text, env, stream);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    const int replays = 3;
    for (int r = 0; r < replays; ++r) ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

    std::vector<float> hc(n);
    float hs = 0;
    ASSERT_EQ(cudaMemcpy(hc.data(), c.p, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&hs, s.p, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    double want_sum = 0;
    for (int i = 0; i < n; ++i) {
        const float want = replays * (2.0f * ha[i] + 0.25f);
        ASSERT_EQ(hc[i], want) << i;
        want_sum += want;
    }
    EXPECT_NEAR(hs, want_sum, want_sum * 1e-5);  // the last replay's sum over c
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

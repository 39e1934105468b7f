// Dates and durations on CUDA against the CPU backend, bit for bit: device arrays of
// datetime64/timedelta64 (relabelled int64 memory), host arrays streamed through the GPU in
// chunks, a selection, reductions, and the dtypes of the results. The lowering is the same int64
// work on both backends, so every count must be equal. Skips without a device.
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace jit;

namespace {

Array dates(DType t, std::int64_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = static_cast<std::int64_t>(rng() % 4'000'000'000ULL) - 2'000'000'000LL;
    for (std::size_t i = 0; i < v.size(); i += 97) v[i] = kNaT;
    Array a = Array::empty(t, {n}, Backend::Cpu);
    std::copy(v.begin(), v.end(), static_cast<std::int64_t*>(a.data()));
    return a;
}

class DatesGpu : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
        RuntimeOptions g;
        g.backend = Backend::Cuda;
        g.disk_cache = false;
        gpu_ = std::make_unique<Runtime>(g);
        RuntimeOptions c;
        c.backend = Backend::Cpu;
        c.disk_cache = false;
        cpu_ = std::make_unique<Runtime>(c);
    }
    void same(const std::string& text, const Environment& host, bool on_device) {
        SCOPED_TRACE(text);
        Environment dev;
        for (const auto& [n, v] : host) dev.insert_or_assign(n, on_device ? Arg(v.array().to(Backend::Cuda)) : v);
        Environment h = host;
        const Array want = cpu_->run(text, h);
        const Array got = gpu_->run(text, dev);
        ASSERT_EQ(got.dtype(), want.dtype());
        ASSERT_EQ(got.shape(), want.shape());
        EXPECT_EQ(got.to_vector<std::int64_t>(), want.to_vector<std::int64_t>());
    }
    std::unique_ptr<Runtime> gpu_, cpu_;
};

TEST_F(DatesGpu, DeviceArraysGiveTheCpusCounts) {
    const Environment env{{"a", dates(DType::DateTime64_ms, 100'003, 1)},
                          {"b", dates(DType::DateTime64_s, 100'003, 2)},
                          {"t", dates(DType::TimeDelta64_us, 100'003, 3)}};
    for (const char* text : {"a - b", "a + t", "a < b", "a != b", "(a - b) // t", "maximum(a, b)", "isnat(t)",
                             "datetime64(a, 'M')", "t * 1.5", "t / 7", "where(a > b, a, b)", "max(a)", "sum(t)",
                             "mean(t)", "min(b)", "a[a > datetime64('1970-01-01')]"})
        same(text, env, true);
}

TEST_F(DatesGpu, TextComparedWithADateIsReadAsADate) {
    // `a < '1970-01-10'` is `a < datetime64('1970-01-10')`: the same constant on both backends.
    const Environment env{{"a", dates(DType::DateTime64_ms, 100'003, 6)}};
    for (const char* text : {"a < '1970-01-10'", "'1970-01-10T12' >= a", "a == '1970-01-01T00:00:00.000'", "a != 'NaT'",
                             "where(a > '1969-12-25', a, datetime64('2000-01-01'))"})
        same(text, env, true);
}

TEST_F(DatesGpu, HostArraysStreamedThroughTheGpuGiveTheCpusCounts) {
    // Large enough to be streamed in chunks (docs/api.md, host data on a CUDA runtime).
    const Environment env{{"a", dates(DType::DateTime64_ns, 1 << 24, 4)},
                          {"t", dates(DType::TimeDelta64_ns, 1 << 24, 5)}};
    same("a + t", env, false);
    same("a > datetime64('1970-01-01T00:00:01')", env, false);
}

}  // namespace

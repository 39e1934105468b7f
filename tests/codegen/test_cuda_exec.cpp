// The CUDA executor runs generated kernels and matches host computations. Needs a GPU: every
// test skips when jit::cuda::available() is false.
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "dsl/semantics.h"
#include "tests/codegen/programs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

namespace {

using namespace jit;
using jxtest::Builder;

#define REQUIRE_GPU()                                                   \
    do {                                                                \
        std::string why;                                                \
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA: " << why; \
    } while (0)

const std::int64_t kSizes[] = {0, 1, 1000, (1 << 20) + 3};

template <class T>
std::vector<T> ramp(std::int64_t n, double scale, double offset) {
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        v[static_cast<std::size_t>(i)] = static_cast<T>(std::fmod(i * scale, 97.0) + offset);
    return v;
}

struct Run {
    std::shared_ptr<detail::Prepared> prepared;
    std::vector<Array> outputs;
};

Run run(const Builder& b, const std::vector<Array>& inputs, const std::vector<ir::Value>& scalars = {},
        std::vector<Array> outputs = {}) {
    auto backend = cuda::make_cuda_backend();
    Run r;
    r.prepared = backend->prepare(b.plan(backend->limits()), {});
    if (outputs.empty())
        for (const auto& o : b.p.outputs)
            outputs.push_back(Array::empty(b.node(o.node).dtype, b.node(o.node).shape, Backend::Cuda));
    detail::RunArgs args;
    args.inputs = inputs;
    args.scalars = scalars;
    args.outputs = outputs;
    r.prepared->run(args);
    cuda::synchronize();
    r.outputs = outputs;
    return r;
}

template <class T>
Array dev(const std::vector<T>& v, Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(v.size())};
    return Array::from_host(v.data(), dtype_of_v<T>, shape, Backend::Cuda);
}

TEST(CudaExec, AxpbFloat32MatchesHost) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        auto a = ramp<float>(n, 0.37, -20), y = ramp<float>(n, 1.1, 3);
        auto r = run(jxtest::axpb(DType::Float32, n), {dev(a), dev(y)});
        auto c = r.outputs[0].to_vector<float>();
        ASSERT_EQ(c.size(), a.size());
        for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], a[i] * 2.0f + y[i]) << "n=" << n << " i=" << i;
    }
}

TEST(CudaExec, AxpbInt64MatchesHost) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        auto a = ramp<std::int64_t>(n, 3, -40), y = ramp<std::int64_t>(n, 7, 5);
        auto c = run(jxtest::axpb(DType::Int64, n), {dev(a), dev(y)}).outputs[0].to_vector<std::int64_t>();
        for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], a[i] * 2 + y[i]) << "n=" << n;
    }
}

TEST(CudaExec, AxpbFloat16RoundsOnceOnStore) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        std::vector<std::uint16_t> a(static_cast<std::size_t>(n)), y(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            a[i] = jx::float_to_half(static_cast<float>(i % 101) * 0.3f - 7.0f);
            y[i] = jx::float_to_half(static_cast<float>(i % 13) * 1.7f);
        }
        Array da = Array::from_host(a.data(), DType::Float16, {n}, Backend::Cuda);
        Array dy = Array::from_host(y.data(), DType::Float16, {n}, Backend::Cuda);
        auto out = run(jxtest::axpb(DType::Float16, n), {da, dy}).outputs[0];
        std::vector<std::uint16_t> c(a.size());
        out.copy_to_host(c.data());
        for (std::size_t i = 0; i < c.size(); ++i)
            ASSERT_EQ(c[i], jx::float_to_half(jx::half_to_float(a[i]) * 2.0f + jx::half_to_float(y[i]))) << "n=" << n;
    }
}

TEST(CudaExec, MisalignedInputTakesScalarPathAndMatches) {
    REQUIRE_GPU();
    const std::int64_t n = 1003;
    auto a = ramp<float>(n + 1, 0.5, 1), y = ramp<float>(n, 0.25, 2);
    Array da = dev(a).slice(0, 1, n + 1);  // 4 bytes past a 16-byte boundary
    auto c = run(jxtest::axpb(DType::Float32, n), {da, dev(y)}).outputs[0].to_vector<float>();
    for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(c[static_cast<std::size_t>(i)],
                  a[static_cast<std::size_t>(i + 1)] * 2.0f + y[static_cast<std::size_t>(i)]);
}

TEST(CudaExec, WhereSineMatchesHost) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        auto a = ramp<double>(n, 0.77, -40), y = ramp<double>(n, 0.1, 0);
        auto c = run(jxtest::where_sin(DType::Float64, n), {dev(a), dev(y)}).outputs[0].to_vector<double>();
        for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], a[i] > 0 ? std::sin(a[i]) : y[i], 1e-15);
    }
}

TEST(CudaExec, RowBroadcastMatchesHost) {
    REQUIRE_GPU();
    for (auto rows : {std::int64_t{1}, std::int64_t{37}, std::int64_t{1025}}) {
        const std::int64_t cols = 45;
        auto a = ramp<float>(rows * cols, 0.3, 0), r = ramp<float>(cols, 1.3, -5);
        auto c = run(jxtest::broadcast_add(DType::Float32, rows, cols), {dev(a, {rows, cols}), dev(r)})
                     .outputs[0]
                     .to_vector<float>();
        for (std::int64_t i = 0; i < rows * cols; ++i)
            ASSERT_EQ(c[static_cast<std::size_t>(i)],
                      a[static_cast<std::size_t>(i)] + r[static_cast<std::size_t>(i % cols)]);
    }
}

TEST(CudaExec, TransposedInputMatchesHost) {
    REQUIRE_GPU();
    const std::int64_t rows = 33, cols = 65;
    auto base = ramp<float>(rows * cols, 0.9, 1);   // (cols, rows) C order
    Array t = dev(base, {cols, rows}).transpose();  // (rows, cols), strides (1, rows)
    auto c = run(jxtest::transposed_scale(DType::Float32, rows, cols), {t}).outputs[0].to_vector<float>();
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
            ASSERT_EQ(c[static_cast<std::size_t>(i * cols + j)], base[static_cast<std::size_t>(j * rows + i)] * 3.0f);
}

TEST(CudaExec, StridedOutputUsesTheStridedVariant) {
    REQUIRE_GPU();
    const std::int64_t rows = 40, cols = 50;
    auto a = ramp<float>(rows * cols, 0.3, 0), y = ramp<float>(rows * cols, 0.7, 1);
    Builder b;
    auto x = b.input(DType::Float32, {rows, cols});
    auto z = b.input(DType::Float32, {rows, cols});
    b.output(b.op(ir::Op::Add, DType::Float32, {x, z}));
    Array out = Array::empty(DType::Float32, {cols, rows}, Backend::Cuda).transpose();
    auto r = run(b, {dev(a, {rows, cols}), dev(y, {rows, cols})}, {}, {out});
    auto c = r.outputs[0].to_vector<float>();  // C order of the (rows, cols) view
    for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], a[i] + y[i]);
}

TEST(CudaExec, FullSumMatchesHostAndIsDeterministic) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        auto a = ramp<float>(n, 0.013, -0.5);
        ir::Value x = ir::Value::of_float(1.5);
        auto r1 = run(jxtest::sum_scaled(DType::Float32, n), {dev(a)}, {x});
        double expect = 0;
        for (float v : a) expect += static_cast<double>(v * 1.5f);
        float got = r1.outputs[0].to_vector<float>()[0];
        EXPECT_NEAR(got, expect, 1e-4 * (1 + std::abs(expect))) << "n=" << n;
        // Same program, same data: the same bits on every run (fixed combine order).
        for (int k = 0; k < 3; ++k) {
            detail::RunArgs args;
            std::vector<Array> ins{dev(a)};
            std::vector<ir::Value> sc{x};
            args.inputs = ins;
            args.scalars = sc;
            args.outputs = r1.outputs;
            r1.prepared->run(args);
            cuda::synchronize();
            float again = r1.outputs[0].to_vector<float>()[0];
            EXPECT_EQ(std::memcmp(&again, &got, sizeof got), 0);
        }
    }
}

TEST(CudaExec, MeanReadBackThroughTemporary) {
    REQUIRE_GPU();
    for (auto n : kSizes) {
        auto a = ramp<double>(n, 0.31, -3);
        auto c = run(jxtest::centered(DType::Float64, n), {dev(a)}).outputs[0].to_vector<double>();
        double mean = n ? std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(n) : 0.0;
        for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], a[i] - mean, 1e-9);
    }
}

TEST(CudaExec, SumOverLastAxisMatchesHost) {
    REQUIRE_GPU();
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {40, 70}, {1000, 1049}, {3, 0}}) {
        auto a = ramp<float>(rows * cols, 0.5, -10);
        auto c = run(jxtest::reduce_axis(ir::Op::Sum, 1, DType::Float32, rows, cols), {dev(a, {rows, cols})})
                     .outputs[0]
                     .to_vector<float>();
        ASSERT_EQ(c.size(), static_cast<std::size_t>(rows));
        for (std::int64_t i = 0; i < rows; ++i) {
            double s = 0;
            for (std::int64_t j = 0; j < cols; ++j) s += a[static_cast<std::size_t>(i * cols + j)];
            ASSERT_NEAR(c[static_cast<std::size_t>(i)], s, 1e-3 * (1 + std::abs(s)));
        }
    }
}

TEST(CudaExec, MaxOverFirstAxisMatchesHost) {
    REQUIRE_GPU();
    const std::int64_t rows = 300, cols = 77;
    auto a = ramp<float>(rows * cols, 1.37, -50);
    auto c = run(jxtest::reduce_axis(ir::Op::ReduceMax, 0, DType::Float32, rows, cols), {dev(a, {rows, cols})})
                 .outputs[0]
                 .to_vector<float>();
    for (std::int64_t j = 0; j < cols; ++j) {
        float m = -INFINITY;
        for (std::int64_t i = 0; i < rows; ++i) m = std::max(m, a[static_cast<std::size_t>(i * cols + j)]);
        ASSERT_EQ(c[static_cast<std::size_t>(j)], m);
    }
}

TEST(CudaExec, SecondPrepareHitsTheModuleCache) {
    REQUIRE_GPU();
    auto backend = cuda::make_cuda_backend();
    auto b1 = jxtest::axpb(DType::Float32, 10);
    auto b2 = jxtest::axpb(DType::Float32, 20);  // another size: the same kernel
    backend->prepare(b1.plan(backend->limits()), {});
    auto p2 = backend->prepare(b2.plan(backend->limits()), {});
    EXPECT_TRUE(p2->info().module_cache_hit);
}

TEST(CudaExec, WrongInputCountIsArgumentError) {
    REQUIRE_GPU();
    auto backend = cuda::make_cuda_backend();
    auto b = jxtest::axpb(DType::Float32, 10);
    auto p = backend->prepare(b.plan(backend->limits()), {});
    detail::RunArgs args;
    EXPECT_THROW(p->run(args), ArgumentError);
}

}  // namespace

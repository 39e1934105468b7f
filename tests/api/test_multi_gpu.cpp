// Several GPUs in one process: a runtime per device, arrays that stay on their device, peer
// copies only when asked, two runtimes on two devices from two threads, and sharded evaluation
// equal to one device's. Tests that need two devices skip with a message on a one-GPU machine;
// the ones that need one run there (device 0 named explicitly, a device index the machine lacks,
// shards over the list {0, 0}).
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;
using jit::Sharded;

int cuda_devices() {
    const jit::CudaInfo info = jit::cuda_info();
    return info.available ? static_cast<int>(info.devices.size()) : 0;
}

#define NEED_DEVICES(n)                                                                                        \
    do {                                                                                                       \
        const int have = cuda_devices();                                                                       \
        if (have < (n))                                                                                        \
            GTEST_SKIP() << "needs " << (n) << " CUDA device" << ((n) > 1 ? "s" : "") << ", this machine has " \
                         << have;                                                                              \
    } while (0)

jit::RuntimeOptions on(int device) {
    jit::RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.device = device;
    o.disk_cache = false;
    return o;
}

std::vector<float> ramp(std::size_t n, int mod, int offset = 0) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % mod) + offset);
    return v;
}

TEST(MultiGpu, DeviceZeroNamedExplicitlyEvaluatesThere) {
    NEED_DEVICES(1);
    jit::Runtime rt(on(0));
    EXPECT_EQ(rt.device(), 0);
    Array a = Array::from(ramp(1000, 7), {}, Backend::Cuda, 0);
    Array c = rt.eval("a * 2 + 1", {a});
    EXPECT_EQ(c.backend(), Backend::Cuda);
    EXPECT_EQ(c.device(), 0);
    EXPECT_EQ(c.to_vector<float>()[5], 11.0f);
}

TEST(MultiGpu, ADeviceTheMachineLacksIsAnArgumentErrorNamingTheCount) {
    NEED_DEVICES(1);
    const int n = cuda_devices();
    try {
        jit::Runtime rt(on(n));
        ADD_FAILURE() << "a runtime on device " << n << " was made";
    } catch (const jit::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("no CUDA device " + std::to_string(n)), std::string::npos) << e.what();
    }
    EXPECT_THROW(Array::empty(DType::Float32, {4}, Backend::Cuda, n), jit::ArgumentError);
    EXPECT_THROW(Array::empty(DType::Float32, {4}, Backend::Cuda, 1000), jit::ArgumentError);
}

TEST(MultiGpu, AViewOnAnotherDeviceIsRefusedByTheRuntime) {
    NEED_DEVICES(1);
    jit::Runtime rt(on(0));
    Array a = Array::from(ramp(16, 5), {}, Backend::Cuda, 0);
    Array elsewhere = Array::view(a.data(), DType::Float32, {16}, {}, Backend::Cuda, 7, a.storage());
    EXPECT_THROW(rt.eval("a + 1", {elsewhere}), jit::DeviceMismatchError);
    Array host = Array::from(ramp(16, 5), {}, Backend::Cpu);
    EXPECT_THROW(rt.eval("a + b", {a, host}), jit::DeviceMismatchError);
}

TEST(MultiGpu, ShardsOverOneDeviceListedTwiceEqualOneEvaluation) {
    NEED_DEVICES(1);
    jit::Runtime one(on(0));
    jit::ShardedRuntime rt({0, 0}, on(0));
    const std::int64_t rows = 4097, cols = 33;
    Array a = Array::from(ramp(static_cast<std::size_t>(rows * cols), 9, -4), {rows, cols}, Backend::Cpu);
    Array b = Array::from(ramp(static_cast<std::size_t>(rows * cols), 5, 1), {rows, cols}, Backend::Cpu);
    Array r = Array::from(ramp(static_cast<std::size_t>(cols), 3, 1), {cols}, Backend::Cpu);
    Sharded sa = Sharded::split(a, {0, 0}), sb = Sharded::split(b, {0, 0}), sr = Sharded::replicate(r, {0, 0});
    Array da = a.to(Backend::Cuda, 0), db = b.to(Backend::Cuda, 0), dr = r.to(Backend::Cuda, 0);
    EXPECT_EQ(rt.eval("c = a*2 + b", {{"a", sa}, {"b", sb}}).gather().to_vector<float>(),
              one.eval("a*2 + b", {da, db}).to_vector<float>());
    EXPECT_EQ(rt.eval("a * r", {{"a", sa}, {"r", sr}}).gather().to_vector<float>(),
              one.eval("a * r", {da, dr}).to_vector<float>());
    EXPECT_EQ(rt.eval("sum(a*b)", {{"a", sa}, {"b", sb}}).whole().to_vector<float>(),
              one.eval("sum(a*b)", {da, db}).to_vector<float>());
}

TEST(MultiGpu, APeerCopyMovesAnArrayBetweenDevices) {
    NEED_DEVICES(2);
    Array a = Array::from(ramp(1 << 20, 11), {}, Backend::Cuda, 0);
    Array b = a.to(Backend::Cuda, 1);
    EXPECT_EQ(b.device(), 1);
    EXPECT_EQ(b.place(), "cuda:1");
    EXPECT_EQ(b.to_vector<float>(), a.to_vector<float>());
    EXPECT_EQ(b.slice(0, 0, 1000, 3).contiguous().device(), 1);  // a strided copy stays on its device
}

TEST(MultiGpu, AnArrayOnTheOtherDeviceIsADeviceMismatchUntilCopied) {
    NEED_DEVICES(2);
    jit::Runtime rt0(on(0));
    Array a1 = Array::from(ramp(64, 5), {}, Backend::Cuda, 1);
    try {
        rt0.eval("a + 1", {a1});
        ADD_FAILURE() << "no error";
    } catch (const jit::DeviceMismatchError& e) {
        EXPECT_NE(std::string(e.what()).find("'a' is on cuda:1 but this runtime evaluates on cuda:0"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(rt0.eval("a + 1", {a1.to(Backend::Cuda, 0)}).to_vector<float>()[2], 3.0f);
    Array a0 = Array::from(ramp(64, 5), {}, Backend::Cuda, 0);
    EXPECT_THROW(rt0.eval("a + b", {a0, a1}), jit::DeviceMismatchError);
}

TEST(MultiGpu, TwoRuntimesOnTwoDevicesFromTwoThreadsAreCorrect) {
    NEED_DEVICES(2);
    std::atomic<int> wrong{0};
    auto work = [&](int device) {
        jit::Runtime rt(on(device));
        Array a = Array::from(ramp(1 << 18, 13, device), {}, Backend::Cuda, device);
        Array b = Array::from(ramp(1 << 18, 7), {}, Backend::Cuda, device);
        for (int it = 0; it < 200; ++it) {
            Array c = rt.eval("a * 2 + b", {a, b});
            if (c.device() != device) ++wrong;
            if (it % 50 == 0) {
                const auto v = c.to_vector<float>();
                for (std::size_t i = 0; i < v.size(); i += 997)
                    if (v[i] != static_cast<float>(static_cast<int>(i % 13) + device) * 2 + static_cast<float>(i % 7))
                        ++wrong;
            }
        }
        const Array s = rt.eval("sum(a)", {a});
        if (s.device() != device) ++wrong;
    };
    std::thread t0(work, 0), t1(work, 1);
    t0.join();
    t1.join();
    EXPECT_EQ(wrong.load(), 0);
}

TEST(MultiGpu, ShardedOverTwoDevicesEqualsOneDevice) {
    NEED_DEVICES(2);
    jit::Runtime one(on(0));
    jit::ShardedRuntime rt({0, 1}, on(0));
    const std::int64_t rows = 1 << 12, cols = 257;
    Array a = Array::from(ramp(static_cast<std::size_t>(rows * cols), 9, -4), {rows, cols}, Backend::Cpu);
    Array b = Array::from(ramp(static_cast<std::size_t>(rows * cols), 5, 1), {rows, cols}, Backend::Cpu);
    Array r = Array::from(ramp(static_cast<std::size_t>(cols), 3, 1), {1, cols}, Backend::Cpu);
    Sharded sa = Sharded::split(a, {0, 1}), sb = Sharded::split(b, {0, 1}), sr = Sharded::replicate(r, {0, 1});
    EXPECT_EQ(sa.shards()[1].device(), 1);
    Array da = a.to(Backend::Cuda, 0), db = b.to(Backend::Cuda, 0), dr = r.to(Backend::Cuda, 0);
    Sharded c = rt.eval("c = a*2 + b", {{"a", sa}, {"b", sb}});
    EXPECT_EQ(c.shards()[0].device(), 0);
    EXPECT_EQ(c.shards()[1].device(), 1);
    EXPECT_EQ(c.gather().to_vector<float>(), one.eval("a*2 + b", {da, db}).to_vector<float>());
    EXPECT_EQ(rt.eval("a + r", {{"a", sa}, {"r", sr}}).gather().to_vector<float>(),
              one.eval("a + r", {da, dr}).to_vector<float>());
    EXPECT_EQ(rt.eval("sum(a*b)", {{"a", sa}, {"b", sb}}).whole().to_vector<float>(),
              one.eval("sum(a*b)", {da, db}).to_vector<float>());
}

}  // namespace

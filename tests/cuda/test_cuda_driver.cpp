// The driver path on a real device: memory, modules, launch, errors. Skips without a device.
#include "backend/cuda/cuda.hpp"
#include "tests/cuda/kernels.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace cuda = jit::cuda;

class CudaDriver : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }

    static cuda::CompileOptions for_device() {
        const auto& info = cuda::device_info(0);
        cuda::CompileOptions o;
        o.cc_major = info.cc_major;
        o.cc_minor = info.cc_minor;
        return o;
    }

    static cuda::ModulePtr axpb_module() {
        return cuda::Module::load(cuda::compile(jit::test::kAxpbSource, "axpb.cu", for_device()));
    }
};

// Device buffer freed at scope exit.
struct DeviceBuffer {
    explicit DeviceBuffer(std::size_t bytes) : ptr(cuda::alloc(bytes)) {}
    ~DeviceBuffer() { cuda::free(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* ptr;
};

// Runs axpb on n elements of device memory with 256-thread blocks.
void launch_axpb(void* function, void* a, void* b, void* c, unsigned n, void* stream = nullptr) {
    cuda::LaunchConfig config;
    config.block[0] = 256;
    config.grid[0] = (n + 255) / 256;
    config.stream = stream;
    void* args[] = {&a, &b, &c, &n};
    cuda::launch(function, config, args);
}

TEST_F(CudaDriver, DeviceInfoDescribesDevice0) {
    const auto& info = cuda::device_info(0);
    EXPECT_EQ(info.ordinal, 0);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.cc_major, 5);
    EXPECT_GT(info.sm_count, 0);
    EXPECT_GE(info.max_threads_per_block, 256);
    EXPECT_GE(info.max_threads_per_sm, info.max_threads_per_block);
    EXPECT_GT(info.total_memory, std::size_t{1} << 30);
    EXPECT_GT(info.l2_bytes, 0u);
    EXPECT_GE(info.driver_version, 11030);
}

TEST_F(CudaDriver, DeviceInfoRejectsAnOrdinalOutOfRange) {
    EXPECT_THROW(cuda::device_info(100000), jit::ArgumentError);
}

TEST_F(CudaDriver, AllocCopyRoundTripKeepsBytes) {
    std::vector<std::uint32_t> in(4099), out(in.size(), 0);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i * 2654435761u);
    DeviceBuffer buf(in.size() * sizeof in[0]);
    cuda::copy_to_device(buf.ptr, in.data(), in.size() * sizeof in[0]);
    cuda::copy_to_host(out.data(), buf.ptr, out.size() * sizeof out[0]);
    EXPECT_EQ(in, out);
}

// Sizes around the staging threshold (4 MiB) and chunk (8 MiB), odd sizes, several chunks, and a
// copy at an offset into the device buffer: every byte survives both directions.
TEST_F(CudaDriver, StagedCopiesOfPageableMemoryKeepEveryByte) {
    ::setenv("JITEXPR_STAGING", "1", 1);  // read at the first staged copy of the process
    const std::size_t sizes[] = {(4u << 20) - 1, 4u << 20, (8u << 20) + 5, (37u << 20) + 3};
    for (std::size_t bytes : sizes) {
        SCOPED_TRACE(bytes);
        std::vector<unsigned char> in(bytes), out(bytes, 0);
        for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
        DeviceBuffer buf(bytes + 64);
        void* at = static_cast<unsigned char*>(buf.ptr) + 64;
        cuda::copy_to_device(at, in.data(), bytes);
        cuda::copy_to_host(out.data(), at, bytes);
        ASSERT_TRUE(in == out);
    }
}

TEST_F(CudaDriver, RegisteredCopiesOfPageableMemoryKeepEveryByte) {
    ::setenv("JITEXPR_STAGING", "register", 1);
    const std::size_t sizes[] = {(4u << 20) + 1, (37u << 20) + 3};
    for (std::size_t bytes : sizes) {
        SCOPED_TRACE(bytes);
        std::vector<unsigned char> in(bytes), out(bytes, 0);
        for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>((i * 2654435761u) >> 11);
        DeviceBuffer buf(bytes + 64);
        void* at = static_cast<unsigned char*>(buf.ptr) + 64;
        cuda::copy_to_device(at, in.data() + 1, bytes - 1);  // not page-aligned
        cuda::copy_to_host(out.data() + 1, at, bytes - 1);
        ASSERT_TRUE(std::equal(in.begin() + 1, in.end(), out.begin() + 1));
    }
    ::setenv("JITEXPR_STAGING", "1", 1);
}

TEST_F(CudaDriver, ConcurrentLargeCopiesFromThreadsKeepEveryByte) {
    ::setenv("JITEXPR_STAGING", "1", 1);
    const std::size_t bytes = (20u << 20) + 7;
    std::vector<std::thread> threads;
    std::vector<int> ok(6, 0);
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            std::vector<unsigned char> in(bytes), out(bytes, 0);
            for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 31 + t * 7);
            DeviceBuffer buf(bytes);
            for (int r = 0; r < 3; ++r) {
                cuda::copy_to_device(buf.ptr, in.data(), bytes);
                cuda::copy_to_host(out.data(), buf.ptr, bytes);
                if (in != out) return;
            }
            ok[t] = 1;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, std::vector<int>(6, 1));
}

TEST_F(CudaDriver, MemsetFillsEveryByte) {
    std::vector<unsigned char> out(1000, 0);
    DeviceBuffer buf(out.size());
    cuda::memset(buf.ptr, 0xAB, out.size());
    cuda::copy_to_host(out.data(), buf.ptr, out.size());
    EXPECT_EQ(out, std::vector<unsigned char>(out.size(), 0xAB));
}

TEST_F(CudaDriver, CopyDeviceCopiesBetweenBuffers) {
    std::vector<int> in = {1, 2, 3, 4, 5, 6, 7}, out(in.size(), 0);
    DeviceBuffer src(in.size() * sizeof(int)), dst(in.size() * sizeof(int));
    cuda::copy_to_device(src.ptr, in.data(), in.size() * sizeof(int));
    cuda::copy_device(dst.ptr, src.ptr, in.size() * sizeof(int));
    cuda::synchronize();
    cuda::copy_to_host(out.data(), dst.ptr, out.size() * sizeof(int));
    EXPECT_EQ(in, out);
}

TEST_F(CudaDriver, StorageOwnsDeviceMemory) {
    auto storage = cuda::make_storage(4096);
    ASSERT_NE(storage, nullptr);
    EXPECT_EQ(storage->backend(), jit::Backend::Cuda);
    EXPECT_EQ(storage->bytes(), 4096u);
    ASSERT_NE(storage->data(), nullptr);
    EXPECT_TRUE(cuda::is_device_pointer(storage->data()));
}

TEST_F(CudaDriver, ZeroByteStorageAllocatesNothing) {
    auto storage = cuda::make_storage(0);
    EXPECT_EQ(storage->data(), nullptr);
    EXPECT_EQ(storage->bytes(), 0u);
}

TEST_F(CudaDriver, HostMemoryIsNotADevicePointer) {
    std::vector<float> host(16);
    EXPECT_FALSE(cuda::is_device_pointer(host.data()));
    EXPECT_FALSE(cuda::is_device_pointer(nullptr));
}

TEST_F(CudaDriver, LoadedKernelComputesAxpb) {
    auto module = axpb_module();
    void* f = module->function("axpb");
    const unsigned n = 1000;  // not a multiple of the block size
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (unsigned i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i) * 0.5f;
        b[i] = 3.0f - static_cast<float>(i);
    }
    DeviceBuffer da(n * sizeof(float)), db(n * sizeof(float)), dc(n * sizeof(float));
    cuda::copy_to_device(da.ptr, a.data(), n * sizeof(float));
    cuda::copy_to_device(db.ptr, b.data(), n * sizeof(float));
    launch_axpb(f, da.ptr, db.ptr, dc.ptr, n);
    cuda::synchronize();
    cuda::copy_to_host(c.data(), dc.ptr, n * sizeof(float));
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] * 2.0f + b[i]) << "at " << i;
}

TEST_F(CudaDriver, MissingKernelThrowsCudaErrorNotFound) {
    auto module = axpb_module();
    try {
        module->function("no_such_kernel");
        FAIL() << "expected CudaError";
    } catch (const jit::CudaError& e) {
        EXPECT_EQ(e.result_name(), "CUDA_ERROR_NOT_FOUND");
        EXPECT_EQ(e.call(), "cuModuleGetFunction");
        EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
    }
}

TEST_F(CudaDriver, OutOfMemoryThrowsCudaErrorAndLaterAllocWorks) {
    const std::size_t petabyte = std::size_t{1} << 50;
    try {
        void* p = cuda::alloc(petabyte);
        cuda::free(p);
        FAIL() << "a 1 PiB allocation succeeded";
    } catch (const jit::CudaError& e) {
        EXPECT_EQ(e.result(), 2);  // CUDA_ERROR_OUT_OF_MEMORY
        EXPECT_EQ(e.result_name(), "CUDA_ERROR_OUT_OF_MEMORY");
        EXPECT_FALSE(e.sticky());
        EXPECT_NE(std::string(e.what()).find("free arrays or use smaller inputs"), std::string::npos) << e.what();
    }
    DeviceBuffer small(1024);
    EXPECT_NE(small.ptr, nullptr);
}

TEST_F(CudaDriver, OversizedBlockThrowsAndContextStaysUsable) {
    auto module = axpb_module();
    void* f = module->function("axpb");
    cuda::LaunchConfig config;
    config.block[0] = 4096;  // above every device's 1024-thread limit
    void* p = nullptr;
    unsigned n = 0;
    void* args[] = {&p, &p, &p, &n};
    try {
        cuda::launch(f, config, args);
        FAIL() << "expected CudaError";
    } catch (const jit::CudaError& e) {
        EXPECT_EQ(e.call(), "cuLaunchKernel");
        EXPECT_FALSE(e.sticky());
    }
    std::vector<float> one = {1.0f}, two = {2.0f}, out = {0.0f};
    DeviceBuffer da(4), db(4), dc(4);
    cuda::copy_to_device(da.ptr, one.data(), 4);
    cuda::copy_to_device(db.ptr, two.data(), 4);
    launch_axpb(f, da.ptr, db.ptr, dc.ptr, 1);
    cuda::copy_to_host(out.data(), dc.ptr, 4);
    EXPECT_EQ(out[0], 4.0f);
}

TEST_F(CudaDriver, OccupancyAndAttributesDescribeTheKernel) {
    auto module = axpb_module();
    void* f = module->function("axpb");
    EXPECT_GE(cuda::max_active_blocks_per_sm(f, 256), 1);
    const auto attrs = cuda::function_attributes(f);
    const auto& info = cuda::device_info(0);
    EXPECT_GE(attrs.max_threads_per_block, 256);
    EXPECT_GT(attrs.registers, 0);
    EXPECT_EQ(attrs.binary_version, info.cc_major * 10 + info.cc_minor);
}

TEST_F(CudaDriver, OtherThreadsUseTheSameContext) {
    // Memory allocated on this thread, kernel launched and results read on another: each entry
    // point makes the primary context current on its thread.
    auto module = axpb_module();
    void* f = module->function("axpb");
    std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, c(3, 0.0f);
    DeviceBuffer da(12), db(12), dc(12);
    cuda::copy_to_device(da.ptr, a.data(), 12);
    cuda::copy_to_device(db.ptr, b.data(), 12);
    std::string error;
    std::thread worker([&] {
        try {
            launch_axpb(f, da.ptr, db.ptr, dc.ptr, 3);
            cuda::copy_to_host(c.data(), dc.ptr, 12);
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    worker.join();
    EXPECT_EQ(error, "");
    EXPECT_EQ(c, (std::vector<float>{12, 24, 36}));
}

TEST_F(CudaDriver, ModuleOutlivesItsImage) {
    cuda::ModulePtr module;
    {
        auto image = cuda::compile(jit::test::kAxpbSource, "axpb.cu", for_device());
        module = cuda::Module::load(image);
    }
    EXPECT_NE(module->function("axpb"), nullptr);
}

}  // namespace

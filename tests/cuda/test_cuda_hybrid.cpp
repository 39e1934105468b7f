// Memory and streams from the CUDA runtime API work with the driver path: both live in device
// 0's primary context. Skips when the runtime finds no device or the driver path is unavailable.
#include "backend/cuda/cuda.hpp"
#include "tests/cuda/kernels.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

namespace cuda = jit::cuda;

class CudaHybrid : public ::testing::Test {
protected:
    void SetUp() override {
        int count = 0;
        cudaError_t err = cudaGetDeviceCount(&count);
        if (err != cudaSuccess || count == 0) {
            GTEST_SKIP() << "the CUDA runtime finds no device: " << cudaGetErrorString(err);
        }
        std::string why;
        if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device for the driver path: " << why;
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
};

// cudaMalloc'ed memory, freed at scope exit.
struct RuntimeBuffer {
    explicit RuntimeBuffer(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess); }
    ~RuntimeBuffer() { cudaFree(ptr); }
    RuntimeBuffer(const RuntimeBuffer&) = delete;
    RuntimeBuffer& operator=(const RuntimeBuffer&) = delete;
    void* ptr = nullptr;
};

TEST_F(CudaHybrid, RuntimePointerIsADevicePointer) {
    RuntimeBuffer buf(256);
    ASSERT_NE(buf.ptr, nullptr);
    EXPECT_TRUE(cuda::is_device_pointer(buf.ptr));
}

TEST_F(CudaHybrid, PinnedHostMemoryIsNotADevicePointer) {
    void* pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, 256), cudaSuccess);
    EXPECT_FALSE(cuda::is_device_pointer(pinned));
    cudaFreeHost(pinned);
}

TEST_F(CudaHybrid, DriverKernelRunsOnRuntimeMemoryAndStream) {
    const auto& info = cuda::device_info(0);
    cuda::CompileOptions options;
    options.cc_major = info.cc_major;
    options.cc_minor = info.cc_minor;
    auto module = cuda::Module::load(cuda::compile(jit::test::kAxpbSource, "axpb.cu", options));
    void* f = module->function("axpb");

    unsigned n = 777;
    std::vector<float> a(n), b(n), c(n, 0.0f);
    for (unsigned i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i);
        b[i] = 0.25f * static_cast<float>(i);
    }
    RuntimeBuffer da(n * sizeof(float)), db(n * sizeof(float)), dc(n * sizeof(float));
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    // Inputs written by the runtime, one through the driver path.
    ASSERT_EQ(cudaMemcpy(da.ptr, a.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    cuda::copy_to_device(db.ptr, b.data(), n * sizeof(float), stream);

    cuda::LaunchConfig config;
    config.block[0] = 128;
    config.grid[0] = (n + 127) / 128;
    config.stream = stream;  // a cudaStream_t is a CUstream
    void* args[] = {&da.ptr, &db.ptr, &dc.ptr, &n};
    cuda::launch(f, config, args);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(c.data(), dc.ptr, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaStreamDestroy(stream);
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] * 2.0f + b[i]) << "at " << i;
}

}  // namespace

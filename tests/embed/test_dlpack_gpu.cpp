// DLPack tensors in cudaMalloc memory (as PyTorch or CuPy would export them), through the C++
// and C APIs. Skips, saying why, where there is no CUDA driver or device.
#include <jit/c_api.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <vector>

namespace {

#define REQUIRE_GPU()                                                               \
    do {                                                                            \
        std::string why;                                                            \
        if (!jit::cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

// A float32 vector in device memory, exported the way a foreign producer does it; the
// deleter frees the memory and counts.
struct DeviceTensor {
    DLManagedTensor managed{};
    std::int64_t shape[1]{};
    int* deleted = nullptr;
};

DLManagedTensor* device_tensor(const std::vector<float>& v, int* deleted) {
    auto* d = new DeviceTensor;
    d->shape[0] = static_cast<std::int64_t>(v.size());
    d->deleted = deleted;
    void* p = nullptr;
    if (cudaMalloc(&p, v.size() * sizeof(float)) != cudaSuccess) {
        delete d;
        return nullptr;
    }
    cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
    DLTensor& t = d->managed.dl_tensor;
    t.data = p;
    t.device = {kDLCUDA, 0};
    t.ndim = 1;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = d->shape;
    t.strides = nullptr;
    d->managed.manager_ctx = d;
    d->managed.deleter = [](DLManagedTensor* self) {
        auto* dt = static_cast<DeviceTensor*>(self->manager_ctx);
        cudaFree(self->dl_tensor.data);
        if (dt->deleted) ++*dt->deleted;
        delete dt;
    };
    return &d->managed;
}

std::vector<float> read_device(const DLTensor& t, std::size_t n) {
    std::vector<float> out(n);
    cudaMemcpy(out.data(), static_cast<const char*>(t.data) + t.byte_offset, n * sizeof(float), cudaMemcpyDeviceToHost);
    return out;
}

}  // namespace

TEST(GpuDLPack, ImportsDeviceMemoryEvaluatesAndExports) {
    REQUIRE_GPU();
    int deleted = 0;
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cuda;
    jit::Runtime rt(o);
    DLManagedTensor* out = nullptr;
    {
        jit::Array a = jit::from_dlpack(device_tensor({1, 2, 3}, &deleted));
        jit::Array b = jit::from_dlpack(device_tensor({4, 5, 6}, &deleted));
        ASSERT_EQ(a.backend(), jit::Backend::Cuda);
        jit::Array c = rt.eval("c = a * 2 + b", {a, b});
        out = jit::to_dlpack(c);
        jit::cuda::synchronize();
    }
    EXPECT_EQ(deleted, 2);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(out->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(read_device(out->dl_tensor, 3), (std::vector<float>{6, 9, 12}));
    out->deleter(out);
}

TEST(GpuDLPack, CApiResultIsReadyWhenTheCallReturns) {
    REQUIRE_GPU();
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CUDA);
    ASSERT_NE(rt, nullptr) << jitexpr_last_error();
    int deleted = 0;
    std::vector<float> big(1 << 20, 1.5f);
    DLManagedTensor* a = device_tensor(big, &deleted);
    ASSERT_NE(a, nullptr);
    DLManagedTensor* args[] = {a};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_dlpack(rt, "a * 4", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    a->deleter(a);  // borrowed: the caller may free its tensor as soon as the call returns
    EXPECT_EQ(deleted, 1);
    const std::vector<float> r = read_device(out->dl_tensor, big.size());
    std::size_t bad = 0;
    for (float v : r) bad += v != 6.0f;
    EXPECT_EQ(bad, 0u);
    out->deleter(out);
    jitexpr_runtime_destroy(rt);
}

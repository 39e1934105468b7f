// A program that owns its buffers and lends them to jitexpr: with a CUDA device it allocates
// them with cudaMalloc and runs on its own stream; without one it says so and uses host buffers
// on the CPU backend. Results are written into the program's own output buffer.
#include <jit/jit.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool check(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "runtime_app: %s: %s\n", call, cudaGetErrorString(e));
    return false;
}

// y = a * x + b over n elements, into `y`.
const char* kProgram = "y = a * x + b";

bool verify(const std::vector<float>& x, const std::vector<float>& y, float a, float b) {
    for (std::size_t i = 0; i < x.size(); ++i)
        if (y[i] != a * x[i] + b) {
            std::fprintf(stderr, "runtime_app: y[%zu] = %g, expected %g\n", i, y[i], a * x[i] + b);
            return false;
        }
    return true;
}

int run_cuda(jit::Runtime& rt, const std::vector<float>& x, float a, float b) {
    const std::size_t n = x.size(), bytes = n * sizeof(float);
    cudaStream_t stream = nullptr;
    void *dx = nullptr, *dy = nullptr;
    if (!check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !check(cudaMalloc(&dx, bytes), "cudaMalloc") || !check(cudaMalloc(&dy, bytes), "cudaMalloc"))
        return 1;
    int rc = 1;
    try {
        check(cudaMemcpyAsync(dx, x.data(), bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
        // Views: jitexpr reads and writes the program's memory, and owns none of it.
        const jit::Shape shape{static_cast<std::int64_t>(n)};
        jit::Environment env{
            {"x", jit::Array::view(dx, jit::DType::Float32, shape, {}, jit::Backend::Cuda)},
            {"y", jit::Array::view(dy, jit::DType::Float32, shape, {}, jit::Backend::Cuda)},
            {"a", a},
            {"b", b},
        };
        rt.run(kProgram, env, stream);  // queued on the program's stream, after the copy
        std::vector<float> y(n);
        check(cudaMemcpyAsync(y.data(), dy, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        if (verify(x, y, a, b)) {
            std::printf("runtime_app: CUDA: y = %g * x + %g over %zu elements on the program's stream: ok\n", a, b, n);
            rc = 0;
        }
    } catch (const jit::Error& e) {
        std::fprintf(stderr, "runtime_app: %s\n", e.what());
    }
    cudaFree(dx);
    cudaFree(dy);
    cudaStreamDestroy(stream);
    return rc;
}

int run_cpu(jit::Runtime& rt, const std::vector<float>& x, float a, float b) {
    std::vector<float> xs = x, y(x.size());
    const jit::Shape shape{static_cast<std::int64_t>(x.size())};
    jit::Environment env{
        {"x", jit::Array::view(xs.data(), jit::DType::Float32, shape, {}, jit::Backend::Cpu)},
        {"y", jit::Array::view(y.data(), jit::DType::Float32, shape, {}, jit::Backend::Cpu)},
        {"a", a},
        {"b", b},
    };
    rt.run(kProgram, env);
    if (!verify(x, y, a, b)) return 1;
    std::printf("runtime_app: CPU: y = %g * x + %g over %zu elements in the program's buffer: ok\n", a, b, x.size());
    return 0;
}

}  // namespace

int main() {
    std::vector<float> x(100000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) * 0.5f;
    const float a = 3.0f, b = -1.0f;
    try {
        jit::RuntimeOptions options = jit::RuntimeOptions::from_environment();
        jit::Runtime rt(options);
        if (rt.backend() == jit::Backend::Cuda) return run_cuda(rt, x, a, b);
        std::printf("runtime_app: no CUDA device (%s): falling back to the CPU backend\n",
                    rt.fallback_reason().empty() ? "CPU backend requested" : rt.fallback_reason().c_str());
        return run_cpu(rt, x, a, b);
    } catch (const jit::Error& e) {
        std::fprintf(stderr, "runtime_app: %s\n", e.what());
        return 1;
    }
}

// jitexpr — loading compiled images as modules, looking kernels up, launching them.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <cstdint>

namespace jit::cuda {
namespace {

using detail::api;
using detail::check;

CUmodule as_module(void* h) { return static_cast<CUmodule>(h); }
CUfunction as_function(void* f) { return static_cast<CUfunction>(f); }

bool is_image_mismatch(CUresult r) {
    return r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX ||
           r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

}  // namespace

ModulePtr Module::load(const Image& image) {
    const auto& d = api();
    if (image.data.empty()) throw InternalError("Module::load: the image is empty");

    // The object exists (and owns nothing) before the driver hands out a handle, so nothing can
    // throw between loading and ownership.
    std::shared_ptr<Module> module(new Module());

    // The driver writes PTX JIT errors here. A CUBIN is bytes; PTX must end in NUL, which
    // std::string::data() guarantees.
    char error_log[8192] = {};
    CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof error_log - 1))};
    CUmodule handle = nullptr;
    CUresult r = d.ModuleLoadDataEx(&handle, image.data.data(), 2, keys, values);
    if (r != CUDA_SUCCESS) {
        const DeviceInfo& dev = device_info();
        std::string hint = fmt::format("loading {} for {} on device {} ({}, sm_{}{})", image.is_cubin ? "CUBIN" : "PTX",
                                       image.arch, current_device(), dev.name, dev.cc_major, dev.cc_minor);
        if (is_image_mismatch(r)) {
            hint += fmt::format(
                "; the driver supports CUDA {} and the image comes from NVRTC {}: the driver may "
                "be too old for this toolkit, or the image may target another GPU",
                version_text(detail::driver_version()), version_text(nvrtc_version()));
        }
        if (error_log[0]) hint += fmt::format("; JIT log: {}", error_log);
        check(r, "cuModuleLoadDataEx", std::move(hint));
    }
    module->handle_ = handle;
    module->device_ = current_device();
    return module;
}

Module::~Module() {
    if (!handle_) return;
    // May run on any thread, and during static destruction: report, never throw. Unloaded in the
    // context it was loaded into.
    DeviceScope scope(device_);
    if (const auto* d = detail::api_noexcept()) detail::report(d->ModuleUnload(as_module(handle_)), "cuModuleUnload");
}

void* Module::function(const std::string& name) const {
    const auto& d = api();
    CUfunction f = nullptr;
    CUresult r = d.ModuleGetFunction(&f, as_module(handle_), name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
        check(r, "cuModuleGetFunction",
              fmt::format("the module has no kernel named '{}' (kernels must be extern \"C\" __global__)", name));
    }
    check(r, "cuModuleGetFunction");
    return f;
}

void launch(void* function, const LaunchConfig& c, void** args) {
    const auto& d = api();
    if (!function) throw InternalError("cuda::launch: null kernel");
    CUresult r = d.LaunchKernel(as_function(function), c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                                c.block[2], c.shared_bytes, static_cast<CUstream>(c.stream), args, nullptr);
    if (r != CUDA_SUCCESS) {
        check(r, "cuLaunchKernel",
              fmt::format("grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory", c.grid[0],
                          c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.shared_bytes));
    }
}

int max_active_blocks_per_sm(void* function, int block_size, std::size_t shared_bytes) {
    const auto& d = api();
    int blocks = 0;
    check(d.OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, as_function(function), block_size, shared_bytes),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    return blocks;
}

FunctionAttributes function_attributes(void* function) {
    const auto& d = api();
    FunctionAttributes a;
    const struct {
        CUfunction_attribute attr;
        int* out;
    } attrs[] = {
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a.max_threads_per_block},
        {CU_FUNC_ATTRIBUTE_NUM_REGS, &a.registers},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &a.static_shared_bytes},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &a.local_bytes},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, &a.ptx_version},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, &a.binary_version},
    };
    for (const auto& x : attrs) check(d.FuncGetAttribute(x.out, x.attr, as_function(function)), "cuFuncGetAttribute");
    return a;
}

}  // namespace jit::cuda

// jitexpr — internal to backend/cuda: the table of driver entry points resolved from libcuda at
// run time, and the helpers every driver call goes through. Nothing outside backend/cuda includes
// this header (it brings in cuda.h).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace jit::cuda::detail {

// Each entry is resolved with cuGetProcAddress at the CUDA version written in its type, so the
// ABI of the pointer matches the typedef even on a newer driver (cuCtxSynchronize, for example,
// gained a context argument in 13.0). Members drop the `cu` prefix because cuda.h #defines many
// of the plain names (cuMemAlloc -> cuMemAlloc_v2).
struct Driver {
    PFN_cuGetErrorName_v6000 GetErrorName = nullptr;
    PFN_cuGetErrorString_v6000 GetErrorString = nullptr;
    PFN_cuInit_v2000 Init = nullptr;
    PFN_cuDriverGetVersion_v2020 DriverGetVersion = nullptr;
    PFN_cuDeviceGet_v2000 DeviceGet = nullptr;
    PFN_cuDeviceGetCount_v2000 DeviceGetCount = nullptr;
    PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute = nullptr;
    PFN_cuDeviceGetName_v2000 DeviceGetName = nullptr;
    PFN_cuDeviceTotalMem_v3020 DeviceTotalMem = nullptr;
    PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain = nullptr;
    PFN_cuCtxSetCurrent_v4000 CtxSetCurrent = nullptr;
    PFN_cuCtxSynchronize_v2000 CtxSynchronize = nullptr;
    PFN_cuMemAlloc_v3020 MemAlloc = nullptr;
    PFN_cuMemFree_v3020 MemFree = nullptr;
    PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync = nullptr;
    PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync = nullptr;
    PFN_cuMemcpyDtoDAsync_v3020 MemcpyDtoDAsync = nullptr;
    PFN_cuMemsetD8Async_v3020 MemsetD8Async = nullptr;
    PFN_cuStreamSynchronize_v2000 StreamSynchronize = nullptr;
    PFN_cuPointerGetAttribute_v4000 PointerGetAttribute = nullptr;
    PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx = nullptr;
    PFN_cuModuleUnload_v2000 ModuleUnload = nullptr;
    PFN_cuModuleGetFunction_v2000 ModuleGetFunction = nullptr;
    PFN_cuLaunchKernel_v4000 LaunchKernel = nullptr;
    PFN_cuFuncGetAttribute_v2020 FuncGetAttribute = nullptr;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 OccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
    // Stream-ordered allocation (CUDA 11.2+); null on older drivers, where plain cuMemAlloc is used.
    PFN_cuMemPoolCreate_v11020 MemPoolCreate = nullptr;
    PFN_cuMemPoolSetAttribute_v11020 MemPoolSetAttribute = nullptr;
    PFN_cuMemPoolTrimTo_v11020 MemPoolTrimTo = nullptr;
    PFN_cuMemAllocFromPoolAsync_v11020 MemAllocFromPoolAsync = nullptr;
    PFN_cuMemFreeAsync_v11020 MemFreeAsync = nullptr;
    // Pinned staging buffers for pageable host copies (memory.cpp); null: copies go direct.
    PFN_cuMemHostAlloc_v2020 MemHostAlloc = nullptr;
    PFN_cuMemFreeHost_v2000 MemFreeHost = nullptr;
    PFN_cuEventCreate_v2000 EventCreate = nullptr;
    PFN_cuEventRecord_v2000 EventRecord = nullptr;
    PFN_cuEventSynchronize_v2000 EventSynchronize = nullptr;
    PFN_cuEventDestroy_v4000 EventDestroy = nullptr;
    // Waiting on a kernel while the host polls for cancellation (events.cpp); null: not offered.
    PFN_cuEventQuery_v2000 EventQuery = nullptr;
    // Page-locking the caller's memory for one copy (JITEXPR_STAGING=register); null: not offered.
    PFN_cuMemHostRegister_v6050 MemHostRegister = nullptr;
    PFN_cuMemHostUnregister_v4000 MemHostUnregister = nullptr;
    // Copies between the memory of two devices (Array::to across devices); null: through the host.
    PFN_cuMemcpyPeerAsync_v4000 MemcpyPeerAsync = nullptr;
    // The streamed pipeline for host data (stream.cpp): streams of its own, ordered by events,
    // and the free device memory it may plan with. Null when any is missing (then host data is
    // not streamed: it is copied whole).
    PFN_cuStreamCreate_v2000 StreamCreate = nullptr;
    PFN_cuStreamDestroy_v4000 StreamDestroy = nullptr;
    PFN_cuStreamWaitEvent_v3020 StreamWaitEvent = nullptr;
    PFN_cuMemGetInfo_v3020 MemGetInfo = nullptr;
};

// The driver, loaded and initialised once, with the primary context of the calling thread's
// current device (cuda::current_device(): the innermost DeviceScope's, else 0) current on it. Throws NoDeviceError (with the reason) when CUDA is not available, CudaError
// when the context cannot be made current.
const Driver& api();

// The same for destructors and free(): nullptr when CUDA is unavailable or the context cannot be
// made current (the failure is reported on stderr). Never throws.
const Driver* api_noexcept() noexcept;

// "CUDA_ERROR_OUT_OF_MEMORY"; "CUDA_ERROR_<n>" when the driver does not know the value.
std::string error_name(CUresult result);
// The driver's sentence for the value ("out of memory"), or empty.
std::string error_string(CUresult result);

// True for errors after which the context cannot be used again (illegal address, ...).
bool is_sticky(CUresult result);

// What to tell the user about `result` in general: "free arrays or use smaller inputs" for out of
// memory, that the context is lost for sticky errors, else the driver's sentence.
std::string default_hint(CUresult result);

// Throws CudaError(result, name, call, hint) unless result is CUDA_SUCCESS. The hint is `hint`
// (what was being done, when given) followed by default_hint(result).
void check(CUresult result, const char* call, std::string hint = {});

// For noexcept paths: prints "jitexpr: <call> failed: <name> (<sentence>)" on stderr. Results that
// only mean the process is exiting (CUDA_ERROR_DEINITIALIZED) are not printed.
void report(CUresult result, const char* call) noexcept;

// The primary context of the calling thread's current device (valid once api() succeeded).
CUcontext primary_context();
// The innermost DeviceScope's ordinal on this thread, -1 when none is open (then device 0).
int thread_device() noexcept;
void set_thread_device(int ordinal) noexcept;
// cuDriverGetVersion (e.g. 13000), 0 when the driver did not load.
int driver_version();
// The same from libcuda.so.1 without loading the driver for use (no cuInit, no context): what
// the search for NVRTC and nvJitLink weighs wheels against. 0 when there is no driver.
int installed_driver_version();

inline CUdeviceptr to_device_ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace jit::cuda::detail

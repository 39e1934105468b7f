// A stand-in for NVIDIA's libcuda.so.1, for the tests that check when jitexpr starts the CUDA
// driver (tests/api/test_lazy_cuda.cpp, tests/cli/test_lazy_cuda.py, tests/python/test_lazy_cuda.py).
// It is built into a folder of its own in the build tree (tests/cuda/fake_driver/), which a test
// puts first on LD_LIBRARY_PATH; nothing installs it and no package carries it.
//
// It answers what backend/cuda/driver.cpp asks when it loads the driver: cuGetProcAddress_v2 (and
// cuDriverGetVersion, which it reads with dlsym), cuInit, the driver's version, one device (its
// name, attributes and memory) and its primary context, and appends one line per call to the file
// named by JITEXPR_FAKE_CUDA_LOG ("loaded" when the library is opened, then the entry point's
// name), so that a test reads whether the driver was loaded, initialised and a context made. Every
// other entry point the loader asks for is handed out as a function that writes "NAME
// unsupported" and returns CUDA_ERROR_NOT_SUPPORTED, so work on the device fails with a CudaError.
//
// Without JITEXPR_FAKE_CUDA_LOG it is no driver at all: cuInit fails, saying where the library
// comes from, so that it is never taken for a GPU outside its tests.
#include <cuda.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#define JX_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr CUresult kOutsideTests = CUDA_ERROR_NOT_INITIALIZED;

const char* log_path() {
    const char* p = std::getenv("JITEXPR_FAKE_CUDA_LOG");
    return p && *p ? p : nullptr;
}

// One line, appended in a single write (O_APPEND), so lines of several threads or processes
// never mix.
void note(const std::string& what) {
    const char* path = log_path();
    if (!path) return;
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const std::string line = what + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
}

__attribute__((constructor)) void on_load() { note("loaded"); }

int g_context_storage = 0;  // the primary context's handle points here

CUresult fake_GetErrorName(CUresult r, const char** name) {
    switch (r) {
        case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
        case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
        default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult fake_GetErrorString(CUresult r, const char** text) {
    switch (r) {
        case CUDA_ERROR_NOT_SUPPORTED:
            *text = "operation not supported (jitexpr's test driver, tests/cuda/fake_libcuda.cpp)";
            return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_INITIALIZED:
            *text =
                "this libcuda.so.1 is jitexpr's test driver (tests/cuda/fake_libcuda.cpp), not NVIDIA's: "
                "it works only in the tests that set JITEXPR_FAKE_CUDA_LOG";
            return CUDA_SUCCESS;
        default: *text = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult fake_Init(unsigned int) {
    note("cuInit");
    return log_path() ? CUDA_SUCCESS : kOutsideTests;
}

CUresult fake_DriverGetVersion(int* version) {
    note("cuDriverGetVersion");
    *version = 13000;
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetCount(int* count) {
    note("cuDeviceGetCount");
    *count = log_path() ? 1 : 0;
    return log_path() ? CUDA_SUCCESS : kOutsideTests;
}

CUresult fake_DeviceGet(CUdevice* device, int ordinal) {
    note("cuDeviceGet");
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetName(char* name, int len, CUdevice) {
    note("cuDeviceGetName");
    std::strncpy(name, "jitexpr test driver device", static_cast<std::size_t>(len));
    if (len > 0) name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
    note("cuDeviceGetAttribute");
    switch (attribute) {
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 << 20; break;
        default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult fake_DeviceTotalMem(std::size_t* bytes, CUdevice) {
    note("cuDeviceTotalMem");
    *bytes = std::size_t{80} << 30;
    return CUDA_SUCCESS;
}

CUresult fake_DevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
    note("cuDevicePrimaryCtxRetain");
    *context = reinterpret_cast<CUcontext>(&g_context_storage);
    return CUDA_SUCCESS;
}

CUresult fake_CtxSetCurrent(CUcontext) {
    note("cuCtxSetCurrent");
    return CUDA_SUCCESS;
}

// Every other entry point: a function of its own per name (so that its line names it), from a
// pool of slots given out in the order the names are asked for.
constexpr int kSlots = 128;
std::mutex g_slots_mutex;
std::string g_slot_names[kSlots];
std::atomic<int> g_slots_used{0};

template <int I>
CUresult unsupported() {
    note(g_slot_names[I] + " unsupported");
    return CUDA_ERROR_NOT_SUPPORTED;
}

template <int... I>
constexpr auto make_slots(std::integer_sequence<int, I...>) {
    return std::array<void*, sizeof...(I)>{reinterpret_cast<void*>(&unsupported<I>)...};
}

void* unsupported_entry(const char* symbol) {
    static const auto slots = make_slots(std::make_integer_sequence<int, kSlots>{});
    std::lock_guard<std::mutex> lock(g_slots_mutex);
    const int used = g_slots_used.load();
    for (int i = 0; i < used; ++i)
        if (g_slot_names[i] == symbol) return slots[static_cast<std::size_t>(i)];
    if (used == kSlots) return nullptr;
    g_slot_names[used] = symbol;
    g_slots_used.store(used + 1);
    return slots[static_cast<std::size_t>(used)];
}

struct Entry {
    const char* name;
    void* fn;
};

void* entry_point(const char* symbol) {
    static const Entry entries[] = {
        {"cuGetErrorName", reinterpret_cast<void*>(&fake_GetErrorName)},
        {"cuGetErrorString", reinterpret_cast<void*>(&fake_GetErrorString)},
        {"cuInit", reinterpret_cast<void*>(&fake_Init)},
        {"cuDriverGetVersion", reinterpret_cast<void*>(&fake_DriverGetVersion)},
        {"cuDeviceGetCount", reinterpret_cast<void*>(&fake_DeviceGetCount)},
        {"cuDeviceGet", reinterpret_cast<void*>(&fake_DeviceGet)},
        {"cuDeviceGetName", reinterpret_cast<void*>(&fake_DeviceGetName)},
        {"cuDeviceGetAttribute", reinterpret_cast<void*>(&fake_DeviceGetAttribute)},
        {"cuDeviceTotalMem", reinterpret_cast<void*>(&fake_DeviceTotalMem)},
        {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&fake_DevicePrimaryCtxRetain)},
        {"cuCtxSetCurrent", reinterpret_cast<void*>(&fake_CtxSetCurrent)},
    };
    for (const Entry& e : entries)
        if (std::strcmp(e.name, symbol) == 0) return e.fn;
    return unsupported_entry(symbol);
}

}  // namespace

JX_FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                            CUdriverProcAddressQueryResult* status) {
    *pfn = symbol ? entry_point(symbol) : nullptr;
    if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

JX_FAKE_EXPORT CUresult cuDriverGetVersion(int* version) { return fake_DriverGetVersion(version); }

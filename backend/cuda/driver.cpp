// jitexpr — loading libcuda at run time, device queries, the primary context, driver errors.
//
// No target links libcuda: it is opened with dlopen, and every entry point comes from
// cuGetProcAddress, so binaries start (and the CPU backend works) on machines without a driver.
#include "backend/cuda/driver.hpp"
#include "backend/cuda/cuda.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

namespace jit::cuda {
namespace detail {
namespace {

// Everything learnt while loading the driver. Allocated once and never destroyed: modules and
// device memory owned by static objects (caches) may be released during static destruction, in
// any order, and they still need the entry points.
struct State {
    std::once_flag once;
    bool ok = false;
    std::string why;  // the sentence available() gives when !ok
    Driver d;
    int driver_version = 0;
    std::vector<DeviceInfo> devices;
    CUdevice device0 = 0;
    // The primary context of each device, retained at the first use of the device and
    // deliberately never released: arrays and cached modules may outlive any point where we
    // could release it (static destructors run in an unknown order, and the CUDA runtime shares
    // the context), and releasing it first would turn their cuMemFree/cuModuleUnload into
    // errors. The driver destroys them at process exit. Device 0's is retained when the driver
    // loads (available() promises a usable device); the others on demand, under `retain`.
    std::atomic<CUcontext> contexts[kMaxDevices] = {};
    std::mutex retain;
};

State& state() {
    static State* s = new State;
    return *s;
}

// The two signatures cuGetProcAddress has had: 11.3 (four arguments) and 12.0 (symbolStatus).
struct ProcLookup {
    PFN_cuGetProcAddress_v12000 v2 = nullptr;
    PFN_cuGetProcAddress_v11030 v1 = nullptr;

    void* find(const char* symbol, int version) const {
        void* fn = nullptr;
        CUresult r = CUDA_ERROR_NOT_FOUND;
        // Legacy default stream semantics, as the CUDA runtime uses unless told otherwise, so a
        // null stream means the same thing on both paths.
        if (v2) {
            CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            r = v2(symbol, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
            if (status != CU_GET_PROC_ADDRESS_SUCCESS) fn = nullptr;
        } else if (v1) {
            r = v1(symbol, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        }
        return r == CUDA_SUCCESS ? fn : nullptr;
    }
};

// Resolves `fn` as `symbol` at `version`; on failure records why and returns false.
template <class Fn>
bool resolve(const ProcLookup& lookup, Fn& fn, const char* symbol, int version, std::string& why) {
    fn = reinterpret_cast<Fn>(lookup.find(symbol, version));
    if (!fn) {
        why = fmt::format(
            "the CUDA driver is too old for jitexpr: it has no {} (CUDA {}.{} API); "
            "update the NVIDIA driver",
            symbol, version / 1000, version % 1000 / 10);
        return false;
    }
    return true;
}

std::string result_text(CUresult r) {
    std::string name = error_name(r);
    std::string text = error_string(r);
    return text.empty() ? name : fmt::format("{} ({})", name, text);
}

bool load_entry_points(State& s, const ProcLookup& lookup) {
    Driver& d = s.d;
    std::string& why = s.why;
#define JITEXPR_RESOLVE(member, version) \
    if (!resolve(lookup, d.member, "cu" #member, version, why)) return false
    JITEXPR_RESOLVE(GetErrorName, 6000);
    JITEXPR_RESOLVE(GetErrorString, 6000);
    JITEXPR_RESOLVE(Init, 2000);
    JITEXPR_RESOLVE(DriverGetVersion, 2020);
    JITEXPR_RESOLVE(DeviceGet, 2000);
    JITEXPR_RESOLVE(DeviceGetCount, 2000);
    JITEXPR_RESOLVE(DeviceGetAttribute, 2000);
    JITEXPR_RESOLVE(DeviceGetName, 2000);
    JITEXPR_RESOLVE(DeviceTotalMem, 3020);
    JITEXPR_RESOLVE(DevicePrimaryCtxRetain, 7000);
    JITEXPR_RESOLVE(CtxSetCurrent, 4000);
    JITEXPR_RESOLVE(CtxSynchronize, 2000);
    JITEXPR_RESOLVE(MemAlloc, 3020);
    JITEXPR_RESOLVE(MemFree, 3020);
    JITEXPR_RESOLVE(MemcpyHtoDAsync, 3020);
    JITEXPR_RESOLVE(MemcpyDtoHAsync, 3020);
    JITEXPR_RESOLVE(MemcpyDtoDAsync, 3020);
    JITEXPR_RESOLVE(MemsetD8Async, 3020);
    JITEXPR_RESOLVE(StreamSynchronize, 2000);
    JITEXPR_RESOLVE(PointerGetAttribute, 4000);
    JITEXPR_RESOLVE(ModuleLoadDataEx, 2010);
    JITEXPR_RESOLVE(ModuleUnload, 2000);
    JITEXPR_RESOLVE(ModuleGetFunction, 2000);
    JITEXPR_RESOLVE(LaunchKernel, 4000);
    JITEXPR_RESOLVE(FuncGetAttribute, 2020);
    JITEXPR_RESOLVE(OccupancyMaxActiveBlocksPerMultiprocessor, 6050);
#undef JITEXPR_RESOLVE
    // Optional: the stream-ordered allocator. Missing on drivers older than 11.2.
    std::string ignored;
    const bool pools = resolve(lookup, d.MemPoolCreate, "cuMemPoolCreate", 11020, ignored) &&
                       resolve(lookup, d.MemPoolSetAttribute, "cuMemPoolSetAttribute", 11020, ignored) &&
                       resolve(lookup, d.MemPoolTrimTo, "cuMemPoolTrimTo", 11020, ignored) &&
                       resolve(lookup, d.MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, ignored) &&
                       resolve(lookup, d.MemFreeAsync, "cuMemFreeAsync", 11020, ignored);
    if (!pools) d.MemPoolCreate = nullptr;
    // Optional: what staging host copies through pinned buffers needs.
    const bool staging = resolve(lookup, d.MemHostAlloc, "cuMemHostAlloc", 2020, ignored) &&
                         resolve(lookup, d.MemFreeHost, "cuMemFreeHost", 2000, ignored) &&
                         resolve(lookup, d.EventCreate, "cuEventCreate", 2000, ignored) &&
                         resolve(lookup, d.EventRecord, "cuEventRecord", 2000, ignored) &&
                         resolve(lookup, d.EventSynchronize, "cuEventSynchronize", 2000, ignored) &&
                         resolve(lookup, d.EventDestroy, "cuEventDestroy", 4000, ignored);
    if (!staging) d.MemHostAlloc = nullptr;
    if (!(d.EventCreate && d.EventRecord && d.EventDestroy &&
          resolve(lookup, d.EventQuery, "cuEventQuery", 2000, ignored)))
        d.EventQuery = nullptr;
    if (!resolve(lookup, d.MemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, ignored)) d.MemcpyPeerAsync = nullptr;
    if (!(resolve(lookup, d.MemHostRegister, "cuMemHostRegister", 6050, ignored) &&
          resolve(lookup, d.MemHostUnregister, "cuMemHostUnregister", 4000, ignored)))
        d.MemHostRegister = nullptr;
    if (!(d.MemHostAlloc && d.EventQuery && resolve(lookup, d.StreamCreate, "cuStreamCreate", 2000, ignored) &&
          resolve(lookup, d.StreamDestroy, "cuStreamDestroy", 4000, ignored) &&
          resolve(lookup, d.StreamWaitEvent, "cuStreamWaitEvent", 3020, ignored) &&
          resolve(lookup, d.MemGetInfo, "cuMemGetInfo", 3020, ignored)))
        d.StreamCreate = nullptr;
    return true;
}

// Fills `info` for device `ordinal`; returns the failing call's result.
CUresult query_device(const Driver& d, int ordinal, DeviceInfo& info, const char*& call) {
    CUdevice dev = 0;
    call = "cuDeviceGet";
    if (CUresult r = d.DeviceGet(&dev, ordinal); r != CUDA_SUCCESS) return r;
    info.ordinal = ordinal;
    char name[256] = {};
    call = "cuDeviceGetName";
    if (CUresult r = d.DeviceGetName(name, static_cast<int>(sizeof name) - 1, dev); r != CUDA_SUCCESS) return r;
    info.name = name;
    call = "cuDeviceGetAttribute";
    const struct {
        CUdevice_attribute attr;
        int* out;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.sm_count},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &info.max_threads_per_sm},
    };
    for (const auto& a : attrs) {
        if (CUresult r = d.DeviceGetAttribute(a.out, a.attr, dev); r != CUDA_SUCCESS) return r;
    }
    int l2 = 0;
    if (CUresult r = d.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev); r != CUDA_SUCCESS) return r;
    info.l2_bytes = static_cast<std::size_t>(l2);
    call = "cuDeviceTotalMem";
    std::size_t total = 0;
    if (CUresult r = d.DeviceTotalMem(&total, dev); r != CUDA_SUCCESS) return r;
    info.total_memory = total;
    return CUDA_SUCCESS;
}

void load(State& s) {
    // RTLD_LOCAL: the driver's symbols are reached only through cuGetProcAddress. The handle is
    // never closed (the driver stays loaded for the life of the process).
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* err = dlerror();
        s.why = fmt::format("no CUDA driver: libcuda.so.1 could not be loaded ({})", err ? err : "unknown reason");
        return;
    }
    ProcLookup lookup;
    lookup.v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!lookup.v2) lookup.v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(lib, "cuGetProcAddress"));
    if (!lookup.v2 && !lookup.v1) {
        s.why =
            "the CUDA driver is too old for jitexpr: libcuda.so.1 has no cuGetProcAddress "
            "(driver for CUDA 11.3 or newer needed)";
        return;
    }
    if (!load_entry_points(s, lookup)) return;
    const Driver& d = s.d;

    if (CUresult r = d.Init(0); r != CUDA_SUCCESS) {
        s.why = fmt::format("the CUDA driver could not be initialised: cuInit returned {}", result_text(r));
        return;
    }
    if (CUresult r = d.DriverGetVersion(&s.driver_version); r != CUDA_SUCCESS) {
        s.why = fmt::format("the CUDA driver did not report its version: {}", result_text(r));
        return;
    }
    int count = 0;
    if (CUresult r = d.DeviceGetCount(&count); r != CUDA_SUCCESS) {
        s.why = fmt::format("the CUDA driver could not count devices: cuDeviceGetCount returned {}", result_text(r));
        return;
    }
    if (count <= 0) {
        s.why = "the CUDA driver is loaded but reports no CUDA device";
        return;
    }
    s.devices.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const char* call = "";
        if (CUresult r = query_device(d, i, s.devices[static_cast<std::size_t>(i)], call); r != CUDA_SUCCESS) {
            s.why = fmt::format("CUDA device {} could not be queried: {} returned {}", i, call, result_text(r));
            return;
        }
        s.devices[static_cast<std::size_t>(i)].driver_version = s.driver_version;
    }
    if (CUresult r = d.DeviceGet(&s.device0, 0); r != CUDA_SUCCESS) {
        s.why = fmt::format("CUDA device 0 could not be opened: cuDeviceGet returned {}", result_text(r));
        return;
    }
    CUcontext c0 = nullptr;
    if (CUresult r = d.DevicePrimaryCtxRetain(&c0, s.device0); r != CUDA_SUCCESS) {
        s.why = fmt::format("CUDA device 0 ({}) has no usable context: cuDevicePrimaryCtxRetain returned {}",
                            s.devices[0].name, result_text(r));
        return;
    }
    s.contexts[0].store(c0, std::memory_order_release);
    s.ok = true;
}

State& loaded() {
    State& s = state();
    std::call_once(s.once, [&s] { load(s); });
    return s;
}

// The device whose primary context was last made current on this thread by api() (-1: none
// yet), and the device the calling code asks for (DeviceScope).
thread_local int t_context_device = -1;
thread_local int t_device = -1;  // -1: no DeviceScope is open (device 0)

// The primary context of `ordinal`, retained at its first use. Throws ArgumentError for an
// ordinal the machine does not have, CudaError when the driver refuses the context.
CUcontext context_of(State& s, int ordinal) {
    if (ordinal >= 0 && ordinal < kMaxDevices)
        if (CUcontext c = s.contexts[ordinal].load(std::memory_order_acquire)) return c;
    const int n = static_cast<int>(s.devices.size());
    if (ordinal < 0 || ordinal >= n || ordinal >= kMaxDevices)
        throw ArgumentError(
            fmt::format("no CUDA device {}: this machine has {} (ordinals 0 to {})", ordinal, n, n - 1));
    std::lock_guard<std::mutex> lock(s.retain);
    if (CUcontext c = s.contexts[ordinal].load(std::memory_order_acquire)) return c;
    CUdevice dev = 0;
    check(s.d.DeviceGet(&dev, ordinal), "cuDeviceGet");
    CUcontext c = nullptr;
    check(s.d.DevicePrimaryCtxRetain(&c, dev), "cuDevicePrimaryCtxRetain",
          fmt::format("the primary context of CUDA device {} ({})", ordinal,
                      s.devices[static_cast<std::size_t>(ordinal)].name));
    s.contexts[ordinal].store(c, std::memory_order_release);
    return c;
}

// The first sticky error any driver call returned, and that call (a string literal). From then on
// the context is unusable: api() refuses all further work with this error instead of letting
// each call fail on its own, and api_noexcept() makes no more driver calls (frees are lost with
// the context anyway, and reporting each one would only repeat the error).
std::atomic<int> g_lost_result{CUDA_SUCCESS};
std::atomic<const char*> g_lost_call{nullptr};

void note_if_sticky(CUresult result, const char* call) noexcept {
    if (!is_sticky(result)) return;
    int expected = CUDA_SUCCESS;
    if (g_lost_result.compare_exchange_strong(expected, static_cast<int>(result))) g_lost_call.store(call);
}

CUresult lost_result() noexcept { return static_cast<CUresult>(g_lost_result.load(std::memory_order_relaxed)); }

}  // namespace

std::string error_name(CUresult result) {
    const State& s = state();
    const char* name = nullptr;
    if (s.d.GetErrorName && s.d.GetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
    return fmt::format("CUDA_ERROR_{}", static_cast<int>(result));
}

std::string error_string(CUresult result) {
    const State& s = state();
    const char* text = nullptr;
    if (s.d.GetErrorString && s.d.GetErrorString(result, &text) == CUDA_SUCCESS && text) return text;
    return {};
}

bool is_sticky(CUresult result) {
    switch (result) {
        case CUDA_ERROR_ECC_UNCORRECTABLE:
        case CUDA_ERROR_CONTAINED:
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_TENSOR_MEMORY_LEAK: return true;
        default: return false;
    }
}

std::string default_hint(CUresult result) {
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return "free arrays or use smaller inputs";
    if (is_sticky(result)) return "the CUDA context is unusable after this error; restart the process";
    if (result == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
        return "the kernel needs more registers or shared memory than blocks of this size can have; "
               "use smaller blocks";
    }
    return error_string(result);
}

void check(CUresult result, const char* call, std::string hint) {
    if (result == CUDA_SUCCESS) return;
    note_if_sticky(result, call);
    std::string general = default_hint(result);
    if (hint.empty()) {
        hint = std::move(general);
    } else if (!general.empty()) {
        hint += "; " + general;
    }
    throw CudaError(static_cast<int>(result), error_name(result), call, std::move(hint));
}

void report(CUresult result, const char* call) noexcept {
    if (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED) return;
    note_if_sticky(result, call);
    try {
        std::string text = error_string(result);
        std::fprintf(stderr, "jitexpr: %s failed: %s%s%s%s\n", call, error_name(result).c_str(),
                     text.empty() ? "" : " (", text.c_str(), text.empty() ? "" : ")");
    } catch (...) {
        std::fprintf(stderr, "jitexpr: %s failed: CUDA error %d\n", call, static_cast<int>(result));
    }
}

const Driver& api() {
    State& s = loaded();
    if (!s.ok) throw NoDeviceError(s.why);
    if (const CUresult lost = lost_result(); lost != CUDA_SUCCESS) {
        const char* first = g_lost_call.load();
        throw CudaError(static_cast<int>(lost), error_name(lost), "jitexpr (refusing CUDA work)",
                        fmt::format("an earlier {} failed with this error ({}); the CUDA context is unusable after "
                                    "it; restart the process",
                                    first ? first : "CUDA call", error_string(lost)));
    }
    if (const int dev = t_device < 0 ? 0 : t_device; t_context_device != dev) {
        check(s.d.CtxSetCurrent(context_of(s, dev)), "cuCtxSetCurrent");
        t_context_device = dev;
    }
    return s.d;
}

const Driver* api_noexcept() noexcept {
    State* s = nullptr;
    try {
        s = &loaded();
    } catch (...) {  // call_once may throw std::system_error
        return nullptr;
    }
    if (!s->ok || lost_result() != CUDA_SUCCESS) return nullptr;
    if (const int dev = t_device < 0 ? 0 : t_device; t_context_device != dev) {
        CUcontext c = dev < kMaxDevices ? s->contexts[dev].load(std::memory_order_acquire) : nullptr;
        if (!c) return nullptr;  // a device never used: nothing of it to free
        CUresult r = s->d.CtxSetCurrent(c);
        if (r != CUDA_SUCCESS) {
            report(r, "cuCtxSetCurrent");
            return nullptr;
        }
        t_context_device = dev;
    }
    return &s->d;
}

CUcontext primary_context() {
    State& s = state();
    const int dev = t_device < 0 ? 0 : t_device;
    return dev < kMaxDevices ? s.contexts[dev].load(std::memory_order_acquire) : nullptr;
}

int thread_device() noexcept { return t_device; }
void set_thread_device(int ordinal) noexcept { t_device = ordinal; }

int driver_version() { return loaded().driver_version; }

int installed_driver_version() {
    // cuDriverGetVersion may be called before cuInit; the plain export is the one entry point
    // resolved with dlsym (cuGetProcAddress wants an initialised driver). The handle is kept, as
    // load()'s: the same library.
    static const int version = [] {
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return 0;
        using GetVersion = CUresult (*)(int*);
        auto get = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion"));
        int v = 0;
        return get && get(&v) == CUDA_SUCCESS ? v : 0;
    }();
    return version;
}

}  // namespace detail

int driver_version() { return detail::driver_version(); }

bool available(std::string* why) {
    const auto& s = detail::loaded();
    if (!s.ok && why) *why = s.why;
    return s.ok;
}

int device_count() {
    const auto& s = detail::loaded();
    return s.ok ? static_cast<int>(s.devices.size()) : 0;
}

int current_device() noexcept { return std::max(0, detail::thread_device()); }
int scoped_device() noexcept { return detail::thread_device(); }

DeviceScope::DeviceScope(int ordinal) noexcept : previous_(detail::thread_device()) {
    detail::set_thread_device(ordinal);
}
DeviceScope::~DeviceScope() { detail::set_thread_device(previous_); }

const DeviceInfo& device_info(int ordinal) {
    if (ordinal == kCurrentDevice) ordinal = current_device();
    if (const auto& st = detail::loaded(); !st.ok) throw NoDeviceError(st.why);
    const auto& devices = detail::loaded().devices;
    if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices.size()) {
        throw ArgumentError(fmt::format("no CUDA device {}: this machine has {} (ordinals 0 to {})", ordinal,
                                        devices.size(), devices.size() - 1));
    }
    return devices[static_cast<std::size_t>(ordinal)];
}

}  // namespace jit::cuda

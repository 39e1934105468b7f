// jitexpr — the CUDA layer as the rest of jitexpr sees it: no cuda.h or nvrtc.h types here.
//
// libcuda is opened at run time (dlopen "libcuda.so.1" + cuGetProcAddress), so every binary
// starts on a machine with no driver; available() says why CUDA cannot be used.
// Everything runs in the primary context of the device (shared with the CUDA runtime API, so
// cudaMalloc pointers work), made current on the calling thread by each entry point.
#pragma once

#include <jit/array.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jit::detail {
class CallControl;  // backend/call_control.hpp
}

namespace jit::cuda {

// ---- driver and device
// True when libcuda loads, cuInit succeeds and there is at least one device. Cheap after the
// first call. On false, `why` gets a sentence ("no CUDA driver: libcuda.so.1 not found").
bool available(std::string* why = nullptr);

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;  // compute capability
    int sm_count = 0;
    int max_threads_per_block = 0;
    int max_threads_per_sm = 0;
    std::size_t total_memory = 0;
    std::size_t l2_bytes = 0;
    int driver_version = 0;  // e.g. 13000
};
// The most devices jitexpr uses in one process.
inline constexpr int kMaxDevices = 64;
inline constexpr int kCurrentDevice = -1;
// How many CUDA devices the driver shows (0 when !available()).
int device_count();
// Every entry point below works on the calling thread's current device: the ordinal of the
// innermost DeviceScope alive on the thread, else 0. A runtime opens a scope for its device
// around each call, and so do the threads it starts (compiles, tier upgrades); device state
// (primary context, memory pool, kept blocks, staging buffers, loaded modules) is per device.
int current_device() noexcept;
// The innermost DeviceScope's ordinal, -1 when none is open on this thread.
int scoped_device() noexcept;
class DeviceScope {
public:
    explicit DeviceScope(int ordinal) noexcept;  // an ordinal the machine lacks fails at the first driver call
    ~DeviceScope();
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    int previous_;
};
// Throws NoDeviceError if !available(), ArgumentError for an ordinal the machine does not have.
// kCurrentDevice: current_device().
const DeviceInfo& device_info(int ordinal = kCurrentDevice);
// The CUDA version the driver supports (13000 for 13.0); 0 when no driver loaded. Tries to load
// it (as available() does).
int driver_version();

// ---- memory (of the current device's primary context)
// Copies from or to host memory are complete when they return (the host buffer may be reused or
// read at once); device-to-device copies and memset are only queued on the stream.
void* alloc(std::size_t bytes);  // throws CudaError (CUDA_ERROR_OUT_OF_MEMORY, ...)
// The same for jitexpr's own work (a program's workspace): a full device is an OutOfMemoryError
// for `what_for` with the bytes asked and the device's free memory; other failures CudaErrors.
void* alloc_for(std::size_t bytes, std::string_view what_for);
void free(void* ptr) noexcept;  // reports but never throws
// With a `control` (a call that can be stopped or watched), a large copy goes in pieces (the
// staging chunks, else 64 MiB) with the control ticked and its progress counted in bytes between
// them; on a stop request it waits for the piece in flight and throws CancelledError, `dst` then
// holding only a prefix: callers give it memory that no one else sees yet.
void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream = nullptr,
                    jit::detail::CallControl* control = nullptr);
void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream = nullptr,
                  jit::detail::CallControl* control = nullptr);
void copy_device(void* dst, const void* src, std::size_t bytes, void* stream = nullptr);
void memset(void* dst, int value, std::size_t bytes, void* stream = nullptr);
void synchronize(void* stream = nullptr);  // the stream, or the whole context when null
// A marker in a stream, to learn without blocking in the driver when the work queued before it
// is done (the executor polls for cancellation while it waits). Not copyable; null when the
// driver has no events (then nothing here is called).
class Event {
public:
    static bool supported();
    Event();  // throws CudaError
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    void record(void* stream);
    bool done() const;  // throws CudaError for a failure of the work before it
private:
    void* handle_ = nullptr;
};
// True if `ptr` is device memory (or managed) of the current device.
bool is_device_pointer(const void* ptr);
// The ordinal of the device whose memory `ptr` is; -1 for host memory (pageable, pinned or
// registered) and for managed memory, which every device may touch.
int pointer_device(const void* ptr);
// Copies `bytes` from the memory of device `src_device` to that of `dst_device` (a peer copy,
// or through the host when the driver has none); complete when it returns.
void copy_peer(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes);

// Device memory of the current device as Array storage (freed when the last array lets go).
std::shared_ptr<Storage> make_storage(std::size_t bytes);
// The same for memory whose first user is the legacy default stream (an eval without a stream):
// may reuse a block that an array freed, without a driver call. Freed blocks are kept on the
// host up to a bound; the pool gets them back when an allocation fails or on request.
std::shared_ptr<Storage> make_storage_for_default_stream(std::size_t bytes);
std::size_t kept_device_bytes();    // bytes of freed blocks of the current device kept for reuse
void release_kept_device_memory();  // gives them back to its pool

// ---- compilation (NVRTC)
struct CompileOptions {
    int cc_major = 9, cc_minor = 0;  // target arch (sm_XY)
    bool fast_math = false;
    bool line_info = false;
    std::vector<std::string> extra;  // more NVRTC options
};
struct Image {
    std::string data;  // CUBIN bytes, or PTX text when is_cubin is false
    bool is_cubin = true;
    std::string arch;     // "sm_90" or "compute_90"
    std::string options;  // the options used, space-separated
    std::string log;      // NVRTC log (warnings)
    double compile_ms = 0;
};
// Compiles `source` to CUBIN for the arch (to PTX for the highest virtual arch NVRTC knows when
// it does not know that one). Throws CompileError with log, options and source on failure.
// `relocatable`: as relocatable device code (-rdc=true), for linking into PTX kernels.
Image compile(const std::string& source, const std::string& name, const CompileOptions& options,
              bool relocatable = false);
// PTX text (codegen::emit_ptx) to CUBIN for sm_<cc_major><cc_minor> with nvJitLink, linked with
// the relocatable images in `link` (the device functions it calls); throws CompileError (with
// the assembler's log). Needs no driver.
Image assemble_ptx(const std::string& ptx, const std::string& name, const CompileOptions& options,
                   const std::vector<const Image*>& link = {});
bool ptx_assembler_available();         // false when built without nvJitLink
void warm_up_ptx_assembler() noexcept;  // loads nvJitLink's assembler (warm_up_nvrtc's thread calls it)
int nvrtc_version();                    // e.g. 13000 (major*1000 + minor*10); read from the file names
                                        // when they tell, so it does not load NVRTC; 0 without NVRTC
std::vector<int> nvrtc_archs();         // e.g. {75, 80, 86, 89, 90, 100, 120}
void warm_up_nvrtc();                   // starts NVRTC and nvJitLink in a background thread (their first
                                        // call in a process is slow: the libraries start)

// Where NVRTC or nvJitLink was found (toolkit.cpp opens them at run time, at the first compile).
struct LibraryStatus {
    bool found = false;   // located, or loaded by the dynamic loader's search
    bool loaded = false;  // loaded in this process, every entry point resolved
    std::string path;     // the file
    std::string how;      // "JITEXPR_NVRTC", "the system toolkit", "an NVIDIA wheel", "the dynamic loader"
    int version = 0;      // major*1000 + minor*10 when known
    std::string error;    // why it was not found or did not load ("" otherwise)
    struct Skipped {
        std::string path, reason;
    };
    std::vector<Skipped> skipped;  // NVIDIA wheels' copies passed over (wrong CUDA major), and why
};
// `load`: load it now if it is not yet (to say whether it loads).
LibraryStatus nvrtc_status(bool load);
LibraryStatus nvjitlink_status(bool load);

// Everything found of CUDA at once (jit::cuda_info): whether it can be used (and why not), the
// driver's version, every device, and NVRTC and nvJitLink (`load_compilers`: loaded now if not
// yet, to say whether they load).
struct Found {
    bool available = false;
    std::string reason;      // when not available
    int driver_version = 0;  // 0 when no driver loaded
    std::vector<DeviceInfo> devices;
    LibraryStatus nvrtc, nvjitlink;
};
Found found(bool load_compilers);

// ---- modules and launch
class Module;
using ModulePtr = std::shared_ptr<const Module>;
class Module {
public:
    // Loads a CUBIN or PTX image into the current device's primary context (unloaded there).
    static ModulePtr load(const Image& image);
    ~Module();
    Module(const Module&) = delete;  // owns the CUmodule: one unload
    Module& operator=(const Module&) = delete;
    // Opaque CUfunction for `name`; throws CudaError if absent.
    void* function(const std::string& name) const;

    int device() const { return device_; }

private:
    Module() = default;
    void* handle_ = nullptr;
    int device_ = 0;
};

struct LaunchConfig {
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_bytes = 0;
    void* stream = nullptr;  // CUstream
};
// `args` is the driver's array of pointers to each argument's storage.
void launch(void* function, const LaunchConfig& config, void** args);

// Occupancy helper: blocks of `block_size` threads that fit on one SM for `function`.
int max_active_blocks_per_sm(void* function, int block_size, std::size_t shared_bytes = 0);

// What the driver says about a loaded kernel (cuFuncGetAttribute).
struct FunctionAttributes {
    int max_threads_per_block = 0;  // the most threads a block of this kernel may have
    int registers = 0;              // per thread
    int static_shared_bytes = 0;
    int local_bytes = 0;     // per thread (spills, local arrays)
    int ptx_version = 0;     // e.g. 90 for compute_90
    int binary_version = 0;  // e.g. 90 for sm_90
};
FunctionAttributes function_attributes(void* function);

}  // namespace jit::cuda

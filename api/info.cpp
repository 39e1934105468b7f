// jitexpr::cuda_info: what was found of the driver, the devices, NVRTC and nvJitLink.
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include "backend/cuda/cuda.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace jit {

namespace {
CudaLibraryInfo library_info(const cuda::LibraryStatus& s) {
    CudaLibraryInfo i;
    i.found = s.found;
    i.loaded = s.loaded;
    i.path = s.path;
    i.source = s.how;
    i.version = s.version;
    i.error = s.error;
    for (const auto& k : s.skipped) i.skipped.push_back({k.path, k.reason});
    return i;
}
}  // namespace

std::string CudaDeviceInfo::describe() const {
    return fmt::format("{} (sm_{}{}, {:.0f} GB)", name, cc_major, cc_minor, static_cast<double>(memory) / 1e9);
}

CudaInfo cuda_info(bool load_compilers) {
    const auto found = cuda::found(load_compilers);
    CudaInfo info;
    info.available = found.available;
    info.reason = found.reason;
    info.driver_version = found.driver_version;
    for (const auto& dev : found.devices) {
        CudaDeviceInfo di;
        di.name = dev.name;
        di.cc_major = dev.cc_major;
        di.cc_minor = dev.cc_minor;
        di.sm_count = dev.sm_count;
        di.memory = dev.total_memory;
        info.devices.push_back(std::move(di));
    }
    info.nvrtc = library_info(found.nvrtc);
    info.nvjitlink = library_info(found.nvjitlink);
    return info;
}

SystemInfo system_info() {
    SystemInfo si;
    si.hardware_threads = std::max(1u, std::thread::hardware_concurrency());
    // Compilers found, not loaded: a REPL banner or --version must not map NVRTC or nvJitLink in
    // a process that may never compile (NVRTC's version comes from its file names).
    si.cuda = cuda_info(/*load_compilers=*/false);
    return si;
}

}  // namespace jit

// jitexpr — internal to backend/cuda (and the tests that call NVRTC directly): NVRTC and
// nvJitLink opened at run time, like libcuda. No target links either library, so every binary
// and the Python module start (and run on the CPU) on a machine without the CUDA toolkit, and a
// process whose kernels all come from the disk cache never maps them.
//
// Where they are looked for, first match wins:
//   1. $JITEXPR_NVRTC / $JITEXPR_NVJITLINK: the library file, or a folder holding it. When set,
//      nothing else is searched (a wrong value is reported, never silently replaced);
//   2. the system toolkit: $LD_LIBRARY_PATH, $CUDA_HOME and $CUDA_PATH (lib64, lib), /usr/local/cuda
//      (lib64, targets/<arch>-linux/lib), the folders of /etc/ld.so.conf, the system library folders;
//   3. NVIDIA's wheels (nvidia-cuda-nvrtc, nvidia-nvjitlink, their -cu12 forms): every
//      nvidia/*/lib beside the folder of the binary or module that holds jitexpr (site-packages
//      for the Python package); the newest usable major among all of them (CUDA 13's
//      nvidia/cu13/lib before CUDA 12's nvidia/cuda_nvrtc/lib). A wheel's library is skipped,
//      the reason kept (Located::skipped), when jitexpr does not use its major (11: only 12
//      and 13 are) or when it is newer than the driver's CUDA major (a CUDA 13 NVRTC under a
//      CUDA 12 driver: its kernels would not load; an older major runs on a newer driver);
//   4. the dynamic loader by name (libnvrtc.so.13, .12): RUNPATHs and ld.so.cache.
// In each folder the newest major version is taken (.so.13, then .so.12, then the plain .so).
// NVRTC loads its builtins library (libnvrtc-builtins.so.X.Y) by name; jitexpr loads the one
// beside the NVRTC it chose first, so that it resolves whatever the loader's own path.
#pragma once

#include <nvrtc.h>
#if JITEXPR_HAVE_NVJITLINK
#include <nvJitLink.h>
#endif

#include <string>
#include <vector>

namespace jit::cuda::detail {

// The NVRTC entry points jitexpr calls. Members drop the `nvrtc` prefix.
struct Nvrtc {
    decltype(&::nvrtcVersion) Version = nullptr;
    decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
    decltype(&::nvrtcGetNumSupportedArchs) GetNumSupportedArchs = nullptr;
    decltype(&::nvrtcGetSupportedArchs) GetSupportedArchs = nullptr;
    decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
    decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
    decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
    decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
    decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
    decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
    decltype(&::nvrtcGetPTX) GetPTX = nullptr;
    decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
    decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
};

#if JITEXPR_HAVE_NVJITLINK
// The nvJitLink entry points (the header's inline wrappers call versioned symbols; the library
// also exports the plain names, which are what is resolved).
struct NvJitLink {
    decltype(&::nvJitLinkCreate) Create = nullptr;
    decltype(&::nvJitLinkDestroy) Destroy = nullptr;
    decltype(&::nvJitLinkAddData) AddData = nullptr;
    decltype(&::nvJitLinkComplete) Complete = nullptr;
    decltype(&::nvJitLinkGetLinkedCubinSize) GetLinkedCubinSize = nullptr;
    decltype(&::nvJitLinkGetLinkedCubin) GetLinkedCubin = nullptr;
    decltype(&::nvJitLinkGetErrorLogSize) GetErrorLogSize = nullptr;
    decltype(&::nvJitLinkGetErrorLog) GetErrorLog = nullptr;
};
#else
struct NvJitLink {};
#endif

// NVRTC, loaded on the first call. Throws NoDeviceError saying what was searched when it cannot
// be found or loaded.
const Nvrtc& nvrtc();
// nvJitLink, the same way; also throws when jitexpr was built without its header.
const NvJitLink& nvjitlink();

// A library file that was looked at and passed over, and why.
struct Skipped {
    std::string path;
    std::string reason;
};

// Where a library was found (without loading it) or why not.
struct Located {
    bool found = false;
    std::string path;              // the file to dlopen (or a bare soname for the loader's search)
    int version = 0;               // major*1000 + minor*10 read from the file names, 0 if unknown
    std::string why;               // !found: what was searched
    std::string how;               // found: "JITEXPR_NVRTC", "system toolkit", "NVIDIA wheel", "loader"
    std::vector<Skipped> skipped;  // NVIDIA wheels' copies of the wrong major (step 3), found or not
};

// What to look for: the stem ("libnvrtc.so"), its environment variable, and the label for
// messages ("NVRTC"); the majors tried in each folder, newest first.
struct LibrarySpec {
    const char* label;
    const char* env;
    const char* stem;
    std::vector<int> majors;
    bool builtins;  // NVRTC: its version (and preload) comes from libnvrtc-builtins.so.X.Y
};
const LibrarySpec& nvrtc_spec();
const LibrarySpec& nvjitlink_spec();

// The search itself over explicit folders (the steps of the header comment, as folders), for
// the tests. `env_value` is the environment variable's value (empty: unset); `driver_version`
// the CUDA version the driver supports (cuDriverGetVersion: 12040), 0 when there is no driver
// (then no wheel is skipped for being newer than it).
Located locate_in(const LibrarySpec& spec, const std::string& env_value, const std::vector<std::string>& system_dirs,
                  const std::vector<std::string>& wheel_dirs, int driver_version = 0);

// The folders of steps 2 and 3 on this machine.
std::vector<std::string> system_library_dirs();
std::vector<std::string> wheel_library_dirs();

// The search for this process (done once; nothing is loaded).
const Located& located_nvrtc();
const Located& located_nvjitlink();

// Whether each is loaded in this process now, and the error of a failed load ("" when loaded or
// not tried).
bool nvrtc_loaded();
bool nvjitlink_loaded();
std::string nvrtc_error();
std::string nvjitlink_error();

}  // namespace jit::cuda::detail

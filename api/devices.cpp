// Connects the backends to the value type: core::Array reaches CUDA memory through the device
// backend/cuda registers, and Backend::Auto means the default runtime's backend. Runs before
// main(); the library's link interface names jit_devices_registered (api/CMakeLists.txt), so
// this object is linked into every program that links jitexpr, whatever else it uses.
#include <jit/runtime.hpp>

#include "backend/cuda/copy.hpp"
#include "backend/cuda/cuda.hpp"
#include "core/device.hpp"

namespace jit {
namespace {

Backend default_backend() { return Runtime::default_runtime().backend(); }

// The device a CUDA array gets when none is named: the innermost cuda::DeviceScope's (a
// runtime's call, the threads it starts), else the default runtime's (JITEXPR_DEVICE), so that
// arrays made for jit::eval are where it evaluates.
int current_cuda_device() {
    if (const int d = cuda::scoped_device(); d >= 0) return d;
    const Runtime& rt = Runtime::default_runtime();
    return rt.backend() == Backend::Cuda ? rt.device() : 0;
}

struct Registration {
    Registration() {
        cuda::register_device();
        core::set_default_backend(&default_backend);
        core::set_current_device(Backend::Cuda, &current_cuda_device);
    }
};
const Registration registration;

}  // namespace
}  // namespace jit

extern "C" {
// Referenced by the link option of the jitexpr target: keeps this object in every link.
extern const int jit_devices_registered;
const int jit_devices_registered = 1;
}

// jitexpr — host arrays copied whole to the device, the program run there, the results copied
// back (see ways.hpp).
#include "run/ways.hpp"

#include "backend/cuda/cuda.hpp"
#include "core/device.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jit::run {

namespace {

// A host array's C-contiguous copy on CUDA device `device`; with a control, copied in pieces that
// a stop request ends between (the copy is then dropped: no one has seen it).
Array copy_to_cuda(const Array& host, int device, detail::CallControl* control) {
    // (strings through Array::to: their width, and an Arrow column's offsets and bytes)
    if (!control || is_string(host.dtype())) return host.to(Backend::Cuda, device);
    const Array h = host.contiguous();
    Array d = Array::empty(h.dtype(), h.shape(), Backend::Cuda, device);
    cuda::copy_to_device(d.data(), h.data(), h.nbytes(), nullptr, control);
    return d;
}

// The same from CUDA to a new host array.
Array copy_to_cpu(const Array& dev, detail::CallControl* control) {
    if (!control) return dev.to(Backend::Cpu);
    const Array d = dev.contiguous();
    Array h = Array::empty(d.dtype(), d.shape(), Backend::Cpu);
    cuda::DeviceScope scope(d.device());
    cuda::copy_to_host(h.data(), d.data(), d.nbytes(), nullptr, control);
    return h;
}

}  // namespace

Array copied(const Decision& d, Programs& programs, std::span<const std::string> names,
             std::span<const std::string> targets, int device, Environment& env, const Call& call) {
    if (d.way == Way::TooLarge)
        throw OutOfMemoryError(
            d.in_bytes + d.out_bytes, d.budget,
            fmt::format("evaluating on CUDA a program over host arrays that cannot be streamed ({}); "
                        "raise the device memory limit (JITEXPR_DEVICE_MEMORY) or use the CPU backend",
                        d.why));
    detail::CallControl* const control = call.control;
    // The program's names on the device; the results back on the host. A stop request is
    // honoured between the pieces of the copies both ways and between kernels; whenever it
    // comes, the caller's host arrays are untouched and nothing is bound: the results come back
    // into new host arrays, and only once all of them are back are in-place targets written
    // (host copies, not stopped) and new names bound.
    std::uint64_t in_bytes = 0;
    for (const std::string& n : names) {
        auto it = env.find(n);
        if (it != env.end() && it->second.is_array() && it->second.array().backend() == Backend::Cpu)
            in_bytes += it->second.array().nbytes();
    }
    if (control) control->begin(Progress::Phase::Run, Progress::Unit::Bytes, in_bytes);
    Environment dev_env;
    for (const std::string& n : names) {
        auto it = env.find(n);
        if (it == env.end()) continue;
        if (it->second.is_array() && it->second.array().backend() == Backend::Cpu) {
            // A copy of a read-only array is read-only too: the copy back would write the original.
            Array copy = copy_to_cuda(it->second.array(), device, control);
            dev_env.insert_or_assign(n, Arg(it->second.array().read_only() ? copy.as_read_only() : copy));
        } else {
            dev_env.insert_or_assign(n, it->second);
        }
    }
    Array r;
    try {
        if (control) control->check();  // cancelled while the copies went in
        const std::shared_ptr<const Entry> e = programs.entry(dev_env, /*timed=*/true);
        Call on_device = call;
        on_device.write_back = true;
        r = direct(*e, dev_env, on_device);
    } catch (const CancelledError&) {
        throw CancelledError();  // only device copies were written: the host arrays are untouched
    }
    // Every assigned array back to the host first (stoppable: nothing of the caller's is written yet).
    struct Back {
        std::string name;
        Array device, host;
    };
    std::vector<Back> back;
    std::uint64_t out_bytes = 0;
    for (const std::string& t : targets) {
        auto dv = dev_env.find(t);
        if (dv == dev_env.end() || !dv->second.is_array()) continue;
        back.push_back({t, dv->second.array(), Array()});
        out_bytes += dv->second.array().nbytes();
    }
    const bool result_is_target = r.defined() && std::any_of(back.begin(), back.end(), [&](const Back& b) {
                                      return r.storage() == b.device.storage() && r.offset() == b.device.offset();
                                  });
    if (r.defined() && !result_is_target) out_bytes += r.nbytes();
    if (call.stream)
        cuda::synchronize(call.stream);  // the program ran on the caller's stream; the copies use the default one
    if (control) control->begin(Progress::Phase::Run, Progress::Unit::Bytes, out_bytes);
    for (Back& b : back) b.host = copy_to_cpu(b.device, control);
    Array result;
    if (r.defined() && !result_is_target) result = copy_to_cpu(r, control);
    // Complete: now into the caller's arrays and names.
    for (Back& b : back) {
        Array h = b.host;
        auto hv = env.find(b.name);
        if (hv != env.end() && hv->second.is_array() && hv->second.array().backend() == Backend::Cpu &&
            hv->second.array().dtype() == h.dtype() && hv->second.array().shape() == h.shape()) {
            core::copy(hv->second.array(), h);  // in place, as on the device
            h = hv->second.array();
        } else if (call.write_back) {
            env.insert_or_assign(b.name, Arg(h));
        }
        if (r.defined() && r.storage() == b.device.storage() && r.offset() == b.device.offset()) result = h;
    }
    return result;
}

}  // namespace jit::run

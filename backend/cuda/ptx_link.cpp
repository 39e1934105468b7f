// jitexpr — PTX written by codegen/ptx.cpp assembled to CUBIN with nvJitLink: no NVRTC, no
// driver (so `precompile --arch` can do it too). nvJitLink is opened at run time (toolkit.cpp);
// without it (or without its header at build time) the PTX tier is off and
// ptx_assembler_available() says so.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/toolkit.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <string>

namespace jit::cuda {

bool ptx_assembler_available() {
    if (JITEXPR_HAVE_NVJITLINK == 0) return false;
    try {
        (void)detail::nvjitlink();
        return true;
    } catch (const NoDeviceError&) {
        return false;
    }
}

void warm_up_ptx_assembler() noexcept {
    if (!ptx_assembler_available()) return;
    // The first nvJitLink call of a process loads its assembler, which takes long next to an
    // assembly; a kernel that does nothing pays for it.
    static const char* const ptx =
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry jitexpr_warm_up()\n{\n    ret;\n}\n";
    try {
        CompileOptions o;
        o.cc_major = 8;
        o.cc_minor = 0;
        (void)assemble_ptx(ptx, "jitexpr_warm_up.ptx", o);
    } catch (...) {
        // A warm-up that fails only means the first real assembly pays the start.
    }
}

Image assemble_ptx(const std::string& ptx, const std::string& name, const CompileOptions& options,
                   const std::vector<const Image*>& link) {
    const auto start = std::chrono::steady_clock::now();
    Image image;
    image.arch = fmt::format("sm_{}{}", options.cc_major, options.cc_minor);
    image.options = "nvJitLink -arch=" + image.arch;
    if (!link.empty()) image.options += fmt::format(" (+{} relocatable)", link.size());
#if JITEXPR_HAVE_NVJITLINK
    const detail::NvJitLink& api = detail::nvjitlink();
    const std::string arch = "-arch=" + image.arch;
    const char* argv[] = {arch.c_str()};
    nvJitLinkHandle h = nullptr;
    nvJitLinkResult r = api.Create(&h, 1, argv);
    struct Guard {
        const detail::NvJitLink& api;
        nvJitLinkHandle& h;
        ~Guard() {
            if (h) api.Destroy(&h);
        }
    } guard{api, h};
    auto log = [&] {
        std::size_t n = 0;
        if (!h || api.GetErrorLogSize(h, &n) != NVJITLINK_SUCCESS || n == 0) return std::string();
        std::string s(n, '\0');
        api.GetErrorLog(h, s.data());
        while (!s.empty() && s.back() == '\0') s.pop_back();
        return s;
    };
    if (r == NVJITLINK_SUCCESS) r = api.AddData(h, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), name.c_str());
    for (std::size_t i = 0; i < link.size() && r == NVJITLINK_SUCCESS; ++i) {
        const std::string object = fmt::format("{}.link{}", name, i);
        r = api.AddData(h, link[i]->is_cubin ? NVJITLINK_INPUT_CUBIN : NVJITLINK_INPUT_PTX, link[i]->data.data(),
                        link[i]->data.size(), object.c_str());
    }
    if (r == NVJITLINK_SUCCESS) r = api.Complete(h);
    if (r != NVJITLINK_SUCCESS)
        throw CompileError(
            fmt::format("nvJitLink could not assemble {} for {} (error {})", name, image.arch, static_cast<int>(r)),
            log(), image.options, ptx);
    std::size_t size = 0;
    if (api.GetLinkedCubinSize(h, &size) != NVJITLINK_SUCCESS || size == 0)
        throw CompileError(fmt::format("nvJitLink assembled {} but returned no CUBIN", name), log(), image.options,
                           ptx);
    image.data.resize(size);
    if (api.GetLinkedCubin(h, image.data.data()) != NVJITLINK_SUCCESS)
        throw CompileError(fmt::format("nvJitLink assembled {} but returned no CUBIN", name), log(), image.options,
                           ptx);
    image.log = log();
#else
    (void)link;
    throw CompileError(fmt::format("cannot assemble {}: jitexpr was built without nvJitLink", name), {}, image.options,
                       ptx);
#endif
    image.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return image;
}

}  // namespace jit::cuda

// libFuzzer target: the PTX first tier. Program text through dsl::plan (the fixed bindings of
// fuzz_pipeline) and cuda::build_kernels' first tier for sm_90; every Flat kernel written as PTX
// must assemble with nvJitLink, linked with the device functions it calls (compiled once per
// process by NVRTC, as the module cache does), and keep the parameters of the kernel it stands
// for. A rejected PTX text, an InternalError, any other exception, a crash or a sanitizer
// report is a finding. (The runtime falls back to NVRTC when PTX does not assemble; this target
// is how such PTX is found before a user meets the fallback.)
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "tests/hardening/pipeline.hpp"

#include <jit/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const jxharden::FrontResult r = jxharden::run_front(text);
        // The first tier as NVRTC kernels, and as the runtime builds it for sm_90 (PTX where it can).
        const jit::codegen::Emitted nvrtc = jit::cuda::build_kernels(r, {}, jit::cuda::Tier::ScalarOnly);
        jit::cuda::KernelOptions ko;
        ko.ptx_sm = 90;
        const jit::codegen::Emitted first = jit::cuda::build_kernels(r, ko, jit::cuda::Tier::ScalarOnly);
        if (first.kernels.size() != nvrtc.kernels.size()) {
            std::fprintf(stderr, "fuzz_ptx: %zu PTX-tier kernels for %zu scalar-only ones\n", first.kernels.size(),
                         nvrtc.kernels.size());
            std::abort();
        }
        jit::cuda::CompileOptions co;
        co.cc_major = 9;
        co.cc_minor = 0;
        for (std::size_t i = 0; i < first.kernels.size(); ++i) {
            const jit::codegen::KernelSource& k = nvrtc.kernels[i];
            const jit::codegen::KernelSource* p = &first.kernels[i];
            if (!p->ptx) continue;
            if (p->params.size() != k.params.size() || p->entries != k.entries) {
                std::fprintf(stderr, "fuzz_ptx: kernel %s: parameters or entries changed\n", k.name.c_str());
                std::abort();
            }
            if (!jit::cuda::ptx_assembler_available()) continue;
            static jit::cuda::ModuleCache functions;  // device functions compiled once, kept
            try {
                (void)functions.build(*p, co);
            } catch (const jit::CompileError& e) {
                std::fprintf(stderr, "fuzz_ptx: nvJitLink rejected the PTX of %s: %s\n%s\n%s\n", k.name.c_str(),
                             e.what(), e.log().c_str(), p->source.c_str());
                std::abort();
            }
        }
    } catch (const jit::InternalError& e) {
        std::fprintf(stderr, "fuzz_ptx: internal error escaped: %s\n", e.what());
        std::abort();
    } catch (const jit::SourceError&) {
        // Syntax, name, type, shape and value errors: the expected way to reject a text.
    }
    return 0;
}

// libFuzzer target: program text through the whole front half — dsl::plan against a fixed set
// of bound names of several dtypes and shapes (parse, lower, schedule within the CUDA stage
// limits), and cuda::build_kernels in both layouts. Any input may fail, but only with a user error
// (jit::SourceError and friends); an InternalError, any other exception, a crash or a
// sanitizer report is a finding.
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
        // What the executor relies on: one kernel per stage, keys that hash the source.
        for (const auto& e : r.emitted) {
            if (e.kernels.size() != r.schedule.stages.size()) {
                std::fprintf(stderr, "fuzz_pipeline: %zu kernels for %zu stages\n", e.kernels.size(),
                             r.schedule.stages.size());
                std::abort();
            }
            for (const auto& k : e.kernels) {
                if (k.hash != jit::codegen::source_hash(k.source) || k.entries.empty()) {
                    std::fprintf(stderr, "fuzz_pipeline: kernel %s: bad hash or no entry points\n", k.name.c_str());
                    std::abort();
                }
            }
        }
    } catch (const jit::InternalError& e) {
        std::fprintf(stderr, "fuzz_pipeline: internal error escaped: %s\n", e.what());
        std::abort();
    } catch (const jit::SourceError&) {
        // Syntax, name, type, shape and value errors: the expected way to reject a text.
    }
    return 0;
}

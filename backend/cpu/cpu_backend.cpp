// jitexpr — the CPU backend (see cpu_backend.hpp).
//
// The files of the backend: plan.hpp and planner.cpp (a stage as a block program), prepared.hpp
// (the prepared program), space.cpp (run-time iteration spaces), scans.cpp (scan kernels), bind.cpp
// (a stage bound to a run's memory), run.cpp (running it); this file chooses the block kernels
// and is the backend.
#include "backend/cpu/cpu_backend.hpp"

#include "backend/cpu/kernels.hpp"
#include "backend/cpu/prepared.hpp"
#include "backend/cpu/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#if defined(JX_CPU_HAVE_AVX2)
#include <cpuid.h>
#endif

namespace jit::cpu {

const KernelTable& kernels() {
    static const KernelTable* chosen = [] {
        const char* env = std::getenv("JITEXPR_CPU_KERNELS");
        const bool force_base = env && std::string(env) == "base";
#if defined(JX_CPU_HAVE_AVX2)
        __builtin_cpu_init();
        // F16C through CPUID (leaf 1, ECX bit 29): clang before 15 has no "f16c" for
        // __builtin_cpu_supports.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
        if (!force_base && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)
            return kernels_avx2();
#else
        (void)force_base;
#endif
        return &kernels_base();
    }();
    return *chosen;
}

const char* kernels_name() { return kernels().name; }

#if !defined(JX_CPU_HAVE_AVX2)
const KernelTable* kernels_avx2() { return nullptr; }
#endif

}  // namespace jit::cpu

namespace jit::cpu::impl {

// GCC 12 at -O3 warns of an overlapping copy inside std::string's assignment of a literal here (a
// false positive, GCC bug 105329) since this function left the larger translation unit it was in.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
std::vector<detail::KernelReport> CpuPrepared::reports() const {
    std::vector<detail::KernelReport> out;
    const bool avx2 = std::string_view(kt_.name) == "avx2";
    auto instructions = [&](const StagePlan& sp) {
        int fused = 0;
        for (const Instr& ins : sp.code) fused += ins.inner.valid() ? 1 : 0;
        return fmt::format("{} instruction{} per block of {} elements ({} fused pair{}), kernels {}", sp.code.size(),
                           sp.code.size() == 1 ? "" : "s", kBlock, fused, fused == 1 ? "" : "s", kt_.name);
    };
    for (std::size_t k = 0; k < plans_.size(); ++k) {
        const StagePlan& sp = plans_[k];
        detail::KernelReport r;
        r.stage = static_cast<int>(k);
        r.kind = sp.is_select()                        ? "select rows"
                 : sp.kind == ir::Stage::Kind::Reduce  ? (sp.root().axis >= 0 ? "reduce-axis blocks" : "reduce blocks")
                 : sp.kind == ir::Stage::Kind::Compact ? "compact blocks"
                 : sp.kind == ir::Stage::Kind::Scan    ? (sp.root().axis >= 0 ? "scan rows" : "scan in order")
                                                       : "blocks";
        r.index = "64-bit";
        // The widest value the stage holds in registers decides the lanes of its loops.
        std::size_t widest = 1;
        for (const StorePlan& st : sp.stores) widest = std::max(widest, itemsize(st.dtype));
        for (const LoadPlan& lp : sp.loads) widest = std::max(widest, itemsize(lp.dtype));
        for (const ReducePlan& rp : sp.reduces) widest = std::max(widest, itemsize(rp.dtype));
        r.vector =
            avx2 ? fmt::format("AVX2, 256-bit ({} lanes of {} bytes)", 32 / std::min<std::size_t>(widest, 32), widest)
                 : std::string("portable loops (as the compiler vectorises them)");
        // The operand's instructions run over blocks; the scan itself goes element after element.
        if (sp.kind == ir::Stage::Kind::Scan) r.vector += "; the scan itself in order, one element after another";
        r.tier = "-";
        r.cache = "nothing to compile (block kernels built in)";
        const int pass = pass_of_[k];
        if (pass >= 0 && shape_size(sp.shape) > kBlock) {
            // One block program for the pass: its instructions are shown at its first stage.
            const StagePlan& pp = passes_[static_cast<std::size_t>(pass)];
            if (static_cast<int>(k) == pp.first_stage)
                r.detail = fmt::format("stages {}-{} run in one pass: {}; a value they share is computed once",
                                       pp.first_stage, pp.end_stage - 1, instructions(pp));
            else
                r.detail = fmt::format("in the pass of stages {}-{} (its instructions at stage {})", pp.first_stage,
                                       pp.end_stage - 1, pp.first_stage);
            r.pass = pp.first_stage;
        } else {
            r.detail = instructions(sp);
        }
        if (sp.kind == ir::Stage::Kind::Compact)
            r.detail += fmt::format(
                "; two passes: the mask's true elements counted per block ({} instruction{}), the result "
                "allocated for their total, then each block's selected values written at its offset (C order)",
                count_plans_[k].code.size(), count_plans_[k].code.size() == 1 ? "" : "s");
        out.push_back(std::move(r));
    }
    return out;
}
#pragma GCC diagnostic pop

}  // namespace jit::cpu::impl

namespace jit::cpu {
namespace {

using impl::CpuPrepared;

class CpuBackend final : public detail::BackendImpl {
public:
    explicit CpuBackend(int threads) : pool_(threads) {}
    Backend kind() const override { return Backend::Cpu; }
    std::string setup_note() const override { return pool_.note(); }
    // Stages of any size: a stage is a sequence of block instructions, whose cost is linear.
    dsl::Limits limits() const override { return {}; }
    std::shared_ptr<detail::Prepared> prepare(const ir::Plan& plan, const detail::PrepareOptions&) override {
        return std::make_shared<CpuPrepared>(plan.program, plan.schedule, &pool_);
    }
    std::vector<detail::KernelReport> explain(const ir::Plan& plan, const detail::PrepareOptions&) const override {
        // The same planning as prepare(), which builds nothing that needs compiling.
        return CpuPrepared(plan.program, plan.schedule, const_cast<ThreadPool*>(&pool_)).reports();
    }

private:
    ThreadPool pool_;
};

}  // namespace
}  // namespace jit::cpu

namespace jit::detail {
std::unique_ptr<BackendImpl> make_cpu_backend(int threads) { return std::make_unique<cpu::CpuBackend>(threads); }
}  // namespace jit::detail

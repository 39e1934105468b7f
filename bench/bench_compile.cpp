// Compile latency: what a new expression costs, and what it costs once compiled.
//
//   bench_compile [--count N] [--reps R] [--arch sm_XY] [--skip-options] [--dump DIR [--text EXPR]] [--first-constant K]
//   bench_compile --first-emit [TEXT]      (see first_emit)
//
// --dump DIR writes the kernel sources of part 1 to DIR (kNNN-M.cu, and the first tier's PTX
// kernels as kNNN-M.ptx) and exits: input for
// timing NVRTC outside this program; with --text EXPR, the kernels of that one expression over
// float32 arrays a and b instead.
//
// 1. compile only (no GPU needed): N distinct expressions (default 60) parsed, checked, emitted
//    and compiled by NVRTC to CUBIN for the arch (default: the device's, else sm_90), with the
//    trimmed semantics (default) and with the whole of dsl/semantics.h, alternating, each
//    the best of R compiles (default 2); p50/p99 per expression. Then the NVRTC option choices on a subset, called directly.
// 2. GPU (skipped without a device):
//    a. compile + load: N new expressions through jit::Runtime (disk cache off), first eval;
//       texts distinct from part 1's, so that no source is compiled twice in the process
//    b. disk hit in a fresh process: this program re-runs itself as a child with a disk cache
//       the parent filled; the child times its first eval of a kernel (key -> launchable
//       function: parse, check, emit, disk read, module load, launch)
//    c. memory hit: host time per eval of `a*2+b` on 1024 float32 elements already compiled
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"
#include "host_cost.hpp"

#include <fmt/format.h>
#include "backend/cuda/toolkit.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace jit;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of this thread (user + system), milliseconds: tells compiling from waiting.
double thread_cpu_ms() {
    rusage u{};
    ::getrusage(RUSAGE_THREAD, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

struct Percentiles {
    double p50 = 0, p99 = 0, min = 0, max = 0;
};
Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
        return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
    };
    p.p50 = at(0.5);
    p.p99 = at(0.99);
    p.min = v.front();
    p.max = v.back();
    return p;
}
void report(const std::string& what, const std::vector<double>& ms) {
    const Percentiles p = percentiles(ms);
    std::printf("%-58s n=%-4zu p50 %8.2f ms  p99 %8.2f ms  (min %.2f, max %.2f)\n", what.c_str(), ms.size(), p.p50,
                p.p99, p.min, p.max);
}

// N distinct expressions over arrays a and b (distinct ops, dtypes or constants: distinct kernels).
struct Expr {
    std::string text;
    DType dtype;
};
std::vector<Expr> expressions(int count, int first_constant = 2) {
    const char* forms[] = {"a*{c}+b",        "sin(a)+{c}*b",        "sqrt(abs(a))*{c}+b", "where(a > {c}, a, b)",
                           "exp(a)-b*{c}",   "a/(b+{c})",           "maximum(a, b)*{c}",  "tanh(a)+b*{c}",
                           "a*a+b*{c}",      "log1p(abs(a))-{c}*b", "cos(a)*cos(b)+{c}",  "hypot(a, b)*{c}",
                           "floor(a*{c})-b", "minimum(a*{c}, b)",   "sum(a*{c}+b)",       "a - mean(b)*{c}"};
    const DType dtypes[] = {DType::Float32, DType::Float64};
    std::vector<Expr> out;
    for (int c = first_constant; static_cast<int>(out.size()) < count; ++c)
        for (DType t : dtypes)
            for (const char* f : forms) {
                if (static_cast<int>(out.size()) >= count) break;
                std::string s = f;
                s.replace(s.find("{c}"), 3, std::to_string(c));
                out.push_back({s, t});
            }
    return out;
}

// `a` and `b` bound to C-contiguous arrays of `n` elements of `dtype`, nothing else.
dsl::Bindings bindings_ab(DType dtype, std::int64_t n) {
    auto b = std::make_shared<dsl::Binding>();
    b->kind = dsl::Binding::Kind::Array;
    b->dtype = dtype;
    b->shape = {n};
    b->strides = {1};
    dsl::Bindings r;
    r.lookup = [b](std::string_view name) -> const dsl::Binding* {
        return name == "a" || name == "b" ? b.get() : nullptr;
    };
    return r;
}

std::vector<codegen::KernelSource> emit(const Expr& e, std::int64_t n, bool full_semantics,
                                        const std::string& prefix = "", bool scalar_only = false) {
    const std::string text = prefix + e.text;
    const ir::Plan p = dsl::plan(text, bindings_ab(e.dtype, n), cuda::limits());
    // codegen::emit directly, not cuda::build_kernels: this measures the emitter's options.
    codegen::EmitOptions eo;
    eo.full_semantics = full_semantics;
    eo.scalar_only = scalar_only;
    return codegen::emit(p.program, p.schedule, eo).kernels;
}

// NVRTC called directly with `options`: milliseconds to CUBIN (or PTX for compute_XY).
double nvrtc_ms(const std::string& source, const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    const bool ptx = std::any_of(options.begin(), options.end(),
                                 [](const std::string& o) { return o.find("compute_") != std::string::npos; });
    const cuda::detail::Nvrtc& nv = cuda::detail::nvrtc();
    const auto t0 = Clock::now();
    nvrtcProgram prog = nullptr;
    if (nv.CreateProgram(&prog, source.c_str(), "bench.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return -1;
    nvrtcResult r = nv.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
    std::size_t size = 0;
    if (r == NVRTC_SUCCESS) r = ptx ? nv.GetPTXSize(prog, &size) : nv.GetCUBINSize(prog, &size);
    nv.DestroyProgram(&prog);
    return r == NVRTC_SUCCESS ? ms_since(t0) : -1;
}

int child_disk_hit(const std::string& dir, const std::string& text) {
    RuntimeOptions o;
    o.backend = Backend::Cuda;
    o.cache_dir = dir;
    Runtime rt(o);
    Environment env;
    const Array a = Array::from(std::vector<float>(1024, 1.0f), {}, Backend::Cuda);
    env.insert_or_assign("a", a);
    env.insert_or_assign("b", a);
    Timing t;
    const auto t0 = Clock::now();
    (void)rt.run("r = " + text, env, nullptr, &t);
    cuda::synchronize();
    const double ms = ms_since(t0);
    // The wall time, then where it went: parse + check, emit (the kernels' source, to find their
    // keys), reading the disk cache and loading the modules, the run (launch to completion).
    std::printf("%.4f %.4f %d %.4f %.4f %.4f\n", ms, t.load_ms, t.module_cache_hit ? 1 : 0, t.parse_ms + t.check_ms,
                t.emit_ms, t.run_ms);
    return 0;
}

// --first-emit [TEXT]: a fresh process's first plan and emit of TEXT (float32 a and b of 1024
// elements; default `r = a*2+b`), as a disk hit's child does them before it reads the cache,
// then the same again (warm). No GPU, no NVRTC: run it in a loop of fresh processes for medians.
int first_emit(const std::string& text) {
    for (const char* round : {"first", "again"}) {
        const auto t0 = Clock::now();
        const ir::Plan p = dsl::plan(text, bindings_ab(DType::Float32, 1024), cuda::limits());
        const double plan_ms = ms_since(t0);
        const auto t1 = Clock::now();
        const auto kernels = codegen::emit(p.program, p.schedule, codegen::EmitOptions{}).kernels;
        std::printf("%s: plan %.4f ms, emit %.4f ms (%zu kernels)\n", round, plan_ms, ms_since(t1), kernels.size());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int count = 60;
    int reps = 2;  // each compile-only figure is the best of this many
    std::string arch;
    bool skip_options = false;
    std::string dump;
    std::string dump_text;      // --dump with --text: that expression's kernels (float32 a and b)
    int first_constant = 1000;  // part 2a's texts: change it to compile texts this machine has never seen
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--count" && i + 1 < argc) count = std::max(1, std::atoi(argv[++i]));
        else if (a == "--arch" && i + 1 < argc) arch = argv[++i];
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--skip-options") skip_options = true;
        else if (a == "--dump" && i + 1 < argc) dump = argv[++i];
        else if (a == "--text" && i + 1 < argc) dump_text = argv[++i];
        else if (a == "--first-constant" && i + 1 < argc) first_constant = std::max(2, std::atoi(argv[++i]));
        else if (a == "--child-disk-hit" && i + 2 < argc) return child_disk_hit(argv[i + 1], argv[i + 2]);
        else if (a == "--first-emit") return first_emit(i + 1 < argc ? argv[i + 1] : "r = a*2+b");
        else {
            std::fprintf(stderr,
                         "usage: bench_compile [--count N] [--reps R] [--arch sm_XY] [--skip-options] [--dump DIR "
                         "[--text EXPR]] [--first-constant K]\n");
            return 2;
        }
    }
    if (!dump.empty()) {
        std::filesystem::create_directories(dump);
        int i = 0;
        const std::vector<Expr> list =
            dump_text.empty() ? expressions(count) : std::vector<Expr>{{dump_text, DType::Float32}};
        for (const Expr& e : list) {
            int j = 0;
            std::vector<codegen::KernelSource> ks;
            try {
                ks = emit(e, 1 << 20, false);
            } catch (const Error& err) {  // a --text that is not a program over float32 a and b
                std::fprintf(stderr, "bench_compile: %s\n", err.what());
                return 2;
            }
            // The first tier's PTX kernels too (kNNN-M.ptx), where codegen/ptx.cpp writes them.
            const ir::Plan p = dsl::plan(e.text, bindings_ab(e.dtype, 1 << 20), cuda::limits());
            cuda::KernelOptions ko;
            ko.ptx_sm = 90;
            std::vector<codegen::KernelSource> tier1 = cuda::build_kernels(p, ko, cuda::Tier::ScalarOnly).kernels;
            std::vector<codegen::KernelSource> links;  // the device functions they call (kNNN-M.fn.cu)
            for (auto& k : tier1)
                if (k.ptx) {
                    for (const auto& f : k.links) links.push_back(f);
                    ks.push_back(std::move(k));
                }
            for (const auto& f : links) {
                const std::string path = fmt::format("{}/k{:03}-{}.fn.cu", dump, i, j++);
                FILE* fp = std::fopen(path.c_str(), "wb");
                if (!fp) return 1;
                std::fwrite(f.source.data(), 1, f.source.size(), fp);
                std::fclose(fp);
            }
            for (const auto& k : ks) {
                const std::string path = fmt::format("{}/k{:03}-{}.{}", dump, i, j++, k.ptx ? "ptx" : "cu");
                FILE* f = std::fopen(path.c_str(), "wb");
                if (!f) return 1;
                std::fwrite(k.source.data(), 1, k.source.size(), f);
                std::fclose(f);
            }
            ++i;
        }
        return 0;
    }
    std::string why;
    const bool gpu = cuda::available(&why);
    cuda::CompileOptions co;
    if (!arch.empty()) {
        const int v = std::atoi(arch.substr(arch.find('_') + 1).c_str());
        co.cc_major = v / 10;
        co.cc_minor = v % 10;
    } else if (gpu) {
        co.cc_major = cuda::device_info().cc_major;
        co.cc_minor = cuda::device_info().cc_minor;
    }
    std::printf("bench_compile: NVRTC %d, target sm_%d%d, %s\n", cuda::nvrtc_version(), co.cc_major, co.cc_minor,
                gpu ? cuda::device_info().name.c_str() : ("no GPU: " + why).c_str());

    // NVRTC's first call loads the library (~hundreds of ms): not what a new kernel costs.
    (void)nvrtc_ms("extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }",
                   {"-std=c++17", "--gpu-architecture=sm_90"});

    const std::vector<Expr> exprs = expressions(count);
    // ---- 1. compile only. Trimmed and whole semantics alternate per expression, each the best of
    // `reps` compiles: on a loaded machine that compares the two under the same load.
    {
        std::vector<double> trimmed, whole, as_runtime, cpu, tier1, tier1_cpu;
        std::size_t bytes[2] = {0, 0}, kernels = 0;
        for (const Expr& e : exprs) {
            // As the runtime's part 2a emits it (an assignment, 1024 elements) and as here.
            const auto kt = emit(e, 1 << 20, false), kw = emit(e, 1 << 20, true), kr = emit(e, 1024, false, "r = ");
            const auto ks = emit(e, 1 << 20, false, "", true);
            double best[3] = {1e300, 1e300, 1e300}, best_cpu = 1e300, best_tier1 = 1e300, best_tier1_cpu = 1e300;
            for (int r = 0; r < reps; ++r) {
                double ms[3] = {0, 0, 0};
                const double c0 = thread_cpu_ms();
                for (const auto& k : kt) ms[0] += cuda::compile(k.source, k.name, co).compile_ms;
                best_cpu = std::min(best_cpu, thread_cpu_ms() - c0);
                const double c1 = thread_cpu_ms();
                double t1 = 0;
                for (const auto& k : ks) t1 += cuda::compile(k.source, k.name, co).compile_ms;
                best_tier1 = std::min(best_tier1, t1);
                best_tier1_cpu = std::min(best_tier1_cpu, thread_cpu_ms() - c1);
                for (const auto& k : kw) ms[1] += cuda::compile(k.source, k.name, co).compile_ms;
                for (const auto& k : kr) ms[2] += cuda::compile(k.source, k.name, co).compile_ms;
                for (int i = 0; i < 3; ++i) best[i] = std::min(best[i], ms[i]);
            }
            for (const auto& k : kt) bytes[0] += k.source.size();
            for (const auto& k : kw) bytes[1] += k.source.size();
            kernels += kt.size();
            trimmed.push_back(best[0]);
            whole.push_back(best[1]);
            as_runtime.push_back(best[2]);
            cpu.push_back(best_cpu);
            tier1.push_back(best_tier1);
            tier1_cpu.push_back(best_tier1_cpu);
        }
        report(fmt::format("compile only, CUBIN, trimmed semantics ({} B/kernel)",
                           bytes[0] / std::max<std::size_t>(kernels, 1)),
               trimmed);
        report("  the same, thread CPU time", cpu);
        report("compile only, CUBIN, scalar-only (tier 1 of a tiered compile)", tier1);
        report("  the same, thread CPU time", tier1_cpu);
        // Tier 1 written as PTX and assembled by nvJitLink, for the expressions it covers; the
        // device functions the kernels call are compiled once first (as a machine does once:
        // the disk cache keeps them) and reported apart.
        if (cuda::ptx_assembler_available()) {
            // The same kernels linked with the device libraries instead (codegen::device_libraries:
            // every function the PTX tier calls, one NVRTC run per dtype group, which a machine
            // builds once and keeps in its disk cache; here an image store in memory).
            std::map<std::string, std::string> kept;
            cuda::ImageStore store;
            store.get = [&kept](const std::string& key) -> std::optional<std::string> {
                auto it = kept.find(key);
                return it == kept.end() ? std::nullopt : std::optional<std::string>(it->second);
            };
            store.put = [&kept](const std::string& key, const std::string& image) { kept[key] = image; };
            cuda::ModuleCache library_cache;
            library_cache.set_image_store(store);
            const auto l0 = Clock::now();
            const std::size_t built = library_cache.build_libraries(co);
            const double library_ms = ms_since(l0);

            std::vector<double> ptx_ms, lib_ms;
            std::vector<std::string> ptx_texts;
            cuda::ModuleCache functions;
            const int sm = co.cc_major * 10 + co.cc_minor;
            for (const Expr& e : exprs) {
                const ir::Plan p = dsl::plan(e.text, bindings_ab(e.dtype, 1 << 20), cuda::limits());
                cuda::KernelOptions ko;
                ko.ptx_sm = sm;
                std::vector<codegen::KernelSource> ks = cuda::build_kernels(p, ko, cuda::Tier::ScalarOnly).kernels;
                // Only expressions whose every kernel is PTX.
                if (std::any_of(ks.begin(), ks.end(), [](const codegen::KernelSource& k) { return !k.ptx; })) continue;
                for (const auto& k : ks)  // the functions it calls, compiled once (not the kernel:
                    for (const auto& f : k.links) (void)functions.device_function(f, co);  // NVRTC-like caches)
                double best = 1e300, best_lib = 1e300;
                std::string parts;                // each kernel's kind, PTX bytes and time in the best repetition
                for (int r = 0; r < reps; ++r) {  // the two linkings interleaved
                    double t = 0, t_lib = 0;
                    std::string these;
                    for (const auto& k : ks) {
                        const double ms = functions.build(k, co).compile_ms;
                        t += ms;
                        these +=
                            fmt::format(" kind{}:{}B:{:.1f}ms", static_cast<int>(k.launch.kind), k.source.size(), ms);
                        t_lib += library_cache.build(k, co).compile_ms;
                    }
                    if (t < best) parts = these;
                    best = std::min(best, t);
                    best_lib = std::min(best_lib, t_lib);
                }
                ptx_ms.push_back(best);
                lib_ms.push_back(best_lib);
                ptx_texts.push_back(fmt::format("{} ({};{})", e.text, dtype_name(e.dtype), parts));
            }
            report(
                fmt::format("compile only, PTX tier 1 (nvJitLink), {} of {} expressions", ptx_ms.size(), exprs.size()),
                ptx_ms);
            std::vector<std::size_t> order(ptx_ms.size());
            for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
            std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return ptx_ms[x] > ptx_ms[y]; });
            for (std::size_t k = 0; k < std::min<std::size_t>(order.size(), 6); ++k)
                std::printf("  slowest %zu: %.2f ms  %s\n", k + 1, ptx_ms[order[k]], ptx_texts[order[k]].c_str());
            const auto fs = functions.stats();
            std::printf("  device functions they call: %llu compiled by NVRTC once, %.1f ms in all (%.1f ms each)\n",
                        static_cast<unsigned long long>(fs.compiles), fs.compile_ms,
                        fs.compiles ? fs.compile_ms / static_cast<double>(fs.compiles) : 0.0);
            report("compile only, PTX tier 1 linked with the device libraries", lib_ms);
            std::size_t in_libraries = 0, library_bytes = 0;
            for (const auto& l : codegen::device_libraries()) in_libraries += l.entries.size();
            for (const auto& kv : kept) library_bytes += kv.second.size();
            std::printf("  device libraries: %zu built by NVRTC in %.1f ms (%zu functions, %zu KB of CUBIN)\n", built,
                        library_ms, in_libraries, library_bytes / 1024);
        }
        report(fmt::format("compile only, CUBIN, whole semantics ({} B/kernel)",
                           bytes[1] / std::max<std::size_t>(kernels, 1)),
               whole);
        report("compile only, CUBIN, emitted as the runtime does (r = ...)", as_runtime);
    }
    if (!skip_options) {
        const std::string sm = fmt::format("--gpu-architecture=sm_{}{}", co.cc_major, co.cc_minor);
        const std::string compute = fmt::format("--gpu-architecture=compute_{}{}", co.cc_major, co.cc_minor);
        const std::vector<std::pair<std::string, std::vector<std::string>>> variants = {
            {"jitexpr's: CUBIN -default-device --minimal",
             {"-std=c++17", sm, "-default-device", "--minimal", "--fmad=false"}},
            {"CUBIN, no --minimal", {"-std=c++17", sm, "-default-device", "--fmad=false"}},
            {"CUBIN, no -default-device", {"-std=c++17", sm, "--minimal", "--fmad=false"}},
            {"CUBIN, neither", {"-std=c++17", sm, "--fmad=false"}},
            {"CUBIN, --Ofast-compile=min",
             {"-std=c++17", sm, "-default-device", "--minimal", "--fmad=false", "--Ofast-compile=min"}},
            {"CUBIN, --Ofast-compile=mid",
             {"-std=c++17", sm, "-default-device", "--minimal", "--fmad=false", "--Ofast-compile=mid"}},
            {"CUBIN, --Ofast-compile=max",
             {"-std=c++17", sm, "-default-device", "--minimal", "--fmad=false", "--Ofast-compile=max"}},
            {"PTX (compute_XY; the driver JIT then adds its own time)",
             {"-std=c++17", compute, "-default-device", "--minimal", "--fmad=false"}},
        };
        const std::size_t subset = std::min<std::size_t>(exprs.size(), 20);
        for (const auto& [name, options] : variants) {
            std::vector<double> ms;
            for (std::size_t i = 0; i < subset; ++i) {
                double best = 1e300;
                for (int r = 0; r < reps; ++r) {
                    double t = 0;
                    for (const auto& k : emit(exprs[i], 1 << 20, false)) t += nvrtc_ms(k.source, options);
                    best = std::min(best, t);
                }
                ms.push_back(best);
            }
            report("options: " + name, ms);
        }
    }

    if (!gpu) {
        std::printf("GPU parts skipped: %s\n", why.c_str());
        return 0;
    }
    // ---- 2a. compile + load through the runtime, disk cache off: tiered (the default: first-tier
    // kernels, PTX where codegen/ptx.cpp writes them, the full ones in the background) and not
    // tiered, each on texts of its own. The device functions PTX kernels call are compiled on
    // their first use here (with the disk cache on, a machine compiles each once).
    {
        RuntimeOptions o = RuntimeOptions::from_environment();  // JITEXPR_NVRTC_OPTIONS for experiments
        o.backend = Backend::Cuda;
        o.disk_cache = false;
        o.tiered_compile = true;
        Runtime rt(o);
        RuntimeOptions flat_o = o;
        flat_o.tiered_compile = false;
        Runtime rt_whole(flat_o);
        Array warm = Array::from(std::vector<float>(1024, 1.0f), {}, Backend::Cuda);
        (void)rt.eval("a*1+b", {warm, warm});  // NVRTC and the context started
        rt.wait_for_compiles();
        cuda::synchronize();
        // 2a': tiered on a machine that has built the device libraries (codegen::device_libraries,
        // one NVRTC run per dtype group, kept in the disk cache): its first program that calls a
        // device function starts their build in the background. Each run of this benchmark builds
        // them afresh in a disk cache of its own, timed here.
        const std::string lib_dir =
            (std::filesystem::temp_directory_path() / fmt::format("jitexpr-bench-lib-{}", ::getpid())).string();
        RuntimeOptions lib_o = o;
        lib_o.disk_cache = true;
        lib_o.cache_dir = lib_dir;
        std::optional<Runtime> rt_lib;  // made after the other two ran: NVRTC has seen none of their sources
        // Texts part 1 never compiled (other constants): NVRTC must not have seen these sources
        // in this process (the same source compiles several times faster the second time).
        for (int mode = 0; mode < 3; ++mode) {  // tiered, not tiered, tiered with the libraries
            const bool tiered = mode != 1;
            if (mode == 2) {
                rt_lib.emplace(lib_o);
                const auto t0 = Clock::now();
                (void)rt_lib->eval("sin(a) + 1", {warm});
                rt_lib->wait_for_compiles();
                std::printf("%-58s %.1f ms (a first eval, its tiers and the libraries' build)\n",
                            "GPU: device libraries built", ms_since(t0));
            }
            Runtime& r = mode == 0 ? rt : mode == 1 ? rt_whole : *rt_lib;
            std::vector<double> wall, compile_load, final_wall;
            for (const Expr& e : expressions(count, first_constant + 500 * mode)) {
                Environment env;
                const Array x = e.dtype == DType::Float32
                                    ? Array::from(std::vector<float>(1024, 0.5f), {}, Backend::Cuda)
                                    : Array::from(std::vector<double>(1024, 0.5), {}, Backend::Cuda);
                env.insert_or_assign("a", x);
                env.insert_or_assign("b", x);
                Timing t;
                const auto t0 = Clock::now();
                (void)r.run("r = " + e.text, env, nullptr, &t);
                cuda::synchronize();
                wall.push_back(ms_since(t0));
                compile_load.push_back(t.compile_ms + t.load_ms);
                r.wait_for_compiles();  // the next text starts with nothing in the background
                final_wall.push_back(ms_since(t0));
            }
            const std::string how = mode == 0 ? "tiered" : mode == 1 ? "not tiered" : "tiered, device libraries built";
            report("GPU: new expression, first eval (wall), " + how, wall);
            if (tiered) {  // the slowest first evals, to say what the p99 is made of
                const std::vector<Expr> texts = expressions(count, first_constant + 500 * mode);
                std::vector<std::size_t> order(wall.size());
                for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
                std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return wall[x] > wall[y]; });
                for (std::size_t k = 0; k < std::min<std::size_t>(order.size(), 6); ++k)
                    std::printf("  slowest %zu: %.2f ms  %s (%s), the %zuth expression\n", k + 1, wall[order[k]],
                                texts[order[k]].text.c_str(), dtype_name(texts[order[k]].dtype).data(), order[k] + 1);
            }
            report("GPU: new expression, NVRTC + module load, " + how, compile_load);
            if (tiered) report("GPU: new expression, until the final kernels run, " + how, final_wall);
        }
        {
            std::error_code ec;
            std::filesystem::remove_all(lib_dir, ec);
        }

        // ---- 2c. memory hit
        Array a = Array::from(std::vector<float>(1024, 1.0f), {}, Backend::Cuda);
        Array b = Array::from(std::vector<float>(1024, 2.0f), {}, Backend::Cuda);
        (void)rt.eval("a*2+b", {a, b});
        rt.wait_for_compiles();
        cuda::synchronize();
        // Measured as bench_gpu's BM_HostOverhead* (bench/host_cost.hpp): batches of 200 calls,
        // synchronised between batches, so the two benchmarks report the same quantity.
        const auto sync = [] { cuda::synchronize(); };
        const bench::HostCost text = bench::host_cost([&] { (void)rt.eval("a*2+b", {a, b}); }, sync);
        std::printf("%-58s p50 %8.2f us  p99 %8.2f us  (host time per call, 30 x %d calls)\n",
                    "GPU: memory hit, eval(a*2+b), n=1024 float32", text.p50_us, text.p99_us, bench::kHostCostBatch);
        Kernel k = compile("a*2+b", rt);
        const std::vector<Arg> args{a, b};
        const bench::HostCost kernel = bench::host_cost([&] { (void)k.call(args); }, sync);
        std::printf("%-58s p50 %8.2f us  p99 %8.2f us  (host time per call, 30 x %d calls)\n",
                    "GPU: memory hit, Kernel::call(a, b), n=1024 float32", kernel.p50_us, kernel.p99_us,
                    bench::kHostCostBatch);
    }
    // ---- 2b. disk hit in a fresh process
    {
        const std::string dir =
            (std::filesystem::temp_directory_path() / fmt::format("jitexpr-bench-{}", ::getpid())).string();
        std::vector<double> wall, load, front, emit, run;
        int hits = 0;
        const std::size_t m = std::min<std::size_t>(exprs.size(), 10);
        for (std::size_t i = 0; i < m; ++i) {
            const std::string text = exprs[i].text;
            for (int pass = 0; pass < 2; ++pass) {  // the first fills the cache, the second hits it
                const std::string cmd = fmt::format("'{}' --child-disk-hit '{}' '{}'", argv[0], dir, text);
                FILE* f = ::popen(cmd.c_str(), "r");
                if (!f) break;
                double ms = 0, lms = 0, fms = 0, ems = 0, rms = 0;
                int hit = 0;
                const int got = std::fscanf(f, "%lf %lf %d %lf %lf %lf", &ms, &lms, &hit, &fms, &ems, &rms);
                ::pclose(f);
                if (pass == 1 && got == 6) {
                    wall.push_back(ms);
                    load.push_back(lms);
                    front.push_back(fms);
                    emit.push_back(ems);
                    run.push_back(rms);
                    hits += hit;
                }
            }
        }
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        report(fmt::format("GPU: disk hit in a fresh process, first eval ({} of {} hit)", hits, wall.size()), wall);
        report("GPU: disk hit, reading the cache and loading the modules", load);
        report("GPU: disk hit, parse and check", front);
        report("GPU: disk hit, emit (the kernels' source and keys)", emit);
        report("GPU: disk hit, run (launch to completion)", run);
    }
    return 0;
}

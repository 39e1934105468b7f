// The latency of stopping a call: the time from CancelToken::cancel() to the CancelledError
// reaching the caller, for long CPU statements (several thread counts and expressions) and, with
// a device, for a CUDA program of many kernels (one kernel's time is printed next to it).
// A plain program (the tests only assert a generous bound; the figures are here).
//   bench_cancel [--trials N] [--gpu-only | --cpu-only]
#include <jit/jit.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
    double median = 0, p90 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)], v.back()};
}

// Runs `text` on `rt` from this thread, cancels it from another `after_ms` into the run, and
// returns the time from cancel() to the return of the call (negative: the call was not stopped).
double one_trial(jit::Runtime& rt, const std::string& text, jit::Environment env, double after_ms) {
    jit::CancelToken stop;
    jit::CallOptions o;
    o.cancel = stop;
    std::atomic<std::int64_t> cancelled_at{0};
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(after_ms));
        cancelled_at = Clock::now().time_since_epoch().count();
        stop.cancel();
    });
    bool stopped = false;
    try {
        rt.run(text, env, o);
    } catch (const jit::CancelledError&) {
        stopped = true;
    }
    const auto returned = Clock::now();
    canceller.join();
    if (!stopped) return -1;
    return ms(returned - Clock::time_point(Clock::duration(cancelled_at.load())));
}

void cpu(int trials) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    struct Case {
        const char* name;
        const char* text;
    };
    const Case cases[] = {
        {"sum over 10^10 broadcast elements", "s = sum(a + b)"},
        {"transcendental, 10^10 elements", "s = sum(sin(a + b) * exp(-(a + b)))"},
    };
    for (unsigned threads : {1u, hw}) {
        jit::RuntimeOptions ro;
        ro.backend = jit::Backend::Cpu;
        ro.disk_cache = false;
        ro.cpu_threads = static_cast<int>(threads);
        jit::Runtime rt(ro);
        jit::Environment env{
            {"a", jit::Arg(jit::Array::zeros(jit::DType::Float64, {10000, 1}, jit::Backend::Cpu))},
            {"b", jit::Arg(jit::Array::zeros(jit::DType::Float64, {1000000}, jit::Backend::Cpu))},
        };
        for (const Case& c : cases) {
            std::vector<double> v;
            for (int t = 0; t < trials; ++t) {
                const double l = one_trial(rt, c.text, env, 200 + 37 * t);
                if (l >= 0) v.push_back(l);
            }
            if (v.empty()) {
                std::printf("cpu %2u threads  %-40s not stopped\n", threads, c.name);
                continue;
            }
            const Stats s = stats(v);
            std::printf(
                "cpu %2u threads  %-40s cancel -> return: median %.3f ms, p90 %.3f ms, max %.3f ms (%zu trials)\n",
                threads, c.name, s.median, s.p90, s.max, v.size());
        }
    }
}

void gpu(int trials) {
    jit::RuntimeOptions ro;
    ro.backend = jit::Backend::Cuda;
    ro.disk_cache = false;
    ro.tiered_compile = false;
    std::unique_ptr<jit::Runtime> rt;
    try {
        rt = std::make_unique<jit::Runtime>(ro);
    } catch (const jit::NoDeviceError& e) {
        std::printf("cuda: skipped (%s)\n", e.what());
        return;
    }
    // 200 reductions over one 4 GiB float32 array: 200 kernels of about one pass over it each.
    const int k = 200;
    std::string text;
    jit::Environment env;
    env.insert_or_assign("x",
                         jit::Arg(jit::Array::zeros(jit::DType::Float32, {std::int64_t{1} << 30}, jit::Backend::Cuda)));
    for (int i = 0; i < k; ++i) {
        text += fmt::format("s{} = sum(x * c{})\n", i, i);
        env.insert_or_assign(fmt::format("c{}", i), jit::Arg(0.5 + i));
    }
    jit::Environment warm = env;
    rt->run(text, warm);  // compiles
    rt->run("s = sum(x)", warm);
    jit::Environment w2 = env;
    const auto t0 = Clock::now();
    rt->run(text, w2);
    // The values are on the device: reading one waits for the whole program.
    (void)w2.at(fmt::format("s{}", k - 1)).array().to_vector<float>();
    const double whole = ms(Clock::now() - t0);
    std::vector<double> v;
    for (int t = 0; t < trials; ++t) {
        const double l = one_trial(*rt, text, env, whole * (0.2 + 0.6 * t / std::max(1, trials - 1)));
        if (l >= 0) v.push_back(l);
    }
    if (v.empty()) {
        std::printf("cuda: not stopped in any trial (whole program %.2f ms)\n", whole);
        return;
    }
    const Stats s = stats(v);
    std::printf(
        "cuda %d kernels over 4 GiB: whole %.2f ms, one kernel %.3f ms; cancel -> return: median %.3f ms, "
        "p90 %.3f ms, max %.3f ms (%zu trials)\n",
        k, whole, whole / k, s.median, s.p90, s.max, v.size());
}

}  // namespace

int main(int argc, char** argv) {
    int trials = 9;
    bool do_cpu = true, do_gpu = true;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) trials = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--gpu-only")) do_cpu = false;
        else if (!std::strcmp(argv[i], "--cpu-only")) do_gpu = false;
        else {
            std::fprintf(stderr, "usage: bench_cancel [--trials N] [--gpu-only | --cpu-only]\n");
            return 2;
        }
    }
    if (do_cpu) cpu(trials);
    if (do_gpu) gpu(trials);
    return 0;
}

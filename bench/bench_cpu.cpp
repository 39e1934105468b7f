// CPU backend throughput through the public API (text -> runtime -> CPU backend) at 2^24
// elements, the result written into an existing array as numexpr's out= does. Compare with
// bench/cpu_peers.py (numexpr and NumPy on the same work, same thread count); bench/cpu_compare.py
// runs both in one call and prints the ratios.
// Reported: bytes moved (inputs read + output written) per second, as "bytes_per_second".
// Threads: JITEXPR_THREADS (0 or unset: every core).
#include <jit/jit.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;

constexpr std::int64_t kN = std::int64_t{1} << 24;

jit::Runtime& runtime() {
    static jit::Runtime rt([] {
        jit::RuntimeOptions o = jit::RuntimeOptions::from_environment();
        o.backend = Backend::Cpu;
        return o;
    }());
    return rt;
}

Array filled(DType t, double base) {
    Array a = Array::empty(t, {kN}, Backend::Cpu);
    if (t == DType::Float32) {
        auto* p = static_cast<float*>(a.data());
        for (std::int64_t i = 0; i < kN; ++i) p[i] = static_cast<float>(base + 1e-7 * double(i % 1000003));
    } else {
        auto* p = static_cast<double*>(a.data());
        for (std::int64_t i = 0; i < kN; ++i) p[i] = base + 1e-7 * double(i % 1000003);
    }
    return a;
}

Array filled16() {
    std::vector<float> v(16, 1.5f);
    return Array::from(v, {}, Backend::Cpu);
}

// Runs `c = <expr>` with c an existing array of the inputs' dtype.
void run_text(benchmark::State& state, const std::string& expr, DType t,
              std::vector<std::pair<std::string, double>> inputs) {
    jit::Environment env;
    std::int64_t bytes = kN * static_cast<std::int64_t>(jit::itemsize(t));
    for (const auto& [name, base] : inputs) {
        env.insert_or_assign(name, jit::Arg(filled(t, base)));
        bytes += kN * static_cast<std::int64_t>(jit::itemsize(t));
    }
    env.insert_or_assign("c", jit::Arg(Array::empty(t, {kN}, Backend::Cpu)));
    const std::string text = "c = " + expr;
    runtime().run(text, env);  // prepare once
    for (auto _ : state) {
        runtime().run(text, env);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_AxpyLike(benchmark::State& state, DType t) { run_text(state, "a*2 + b", t, {{"a", 0.5}, {"b", 1.5}}); }
BENCHMARK_CAPTURE(BM_AxpyLike, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AxpyLike, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same into a new output each call, as `c = f(a, b)` in a loop of the caller's: the previous
// result is dropped only after the next one exists (so the freed block of the call before is the
// one reused). Compare with BM_AxpyLike (out=) in the same run: issue 21 wants <= 1.1x.
void BM_AxpyLikeNewOutput(benchmark::State& state, DType t) {
    jit::Environment env{{"a", jit::Arg(filled(t, 0.5))}, {"b", jit::Arg(filled(t, 1.5))}};
    const std::vector<jit::Arg> args{env.at("a"), env.at("b")};
    jit::Kernel k = jit::compile("a*2 + b", runtime());
    Array held = k.call(args);
    for (auto _ : state) {
        Array next = k.call(args);
        held = std::move(next);  // the previous result goes now
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 3 * kN * static_cast<std::int64_t>(jit::itemsize(t)));
}
BENCHMARK_CAPTURE(BM_AxpyLikeNewOutput, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// numexpr's own benchmark expression
void BM_Polynomial(benchmark::State& state, DType t) {
    run_text(state, "((.25*a + .75)*a - 1.5)*a - 2", t, {{"a", 0.1}});
}
BENCHMARK_CAPTURE(BM_Polynomial, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Polynomial, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WhereTranscendental(benchmark::State& state, DType t) {
    run_text(state, "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", t, {{"a", 0.0}, {"b", 0.3}});
}
BENCHMARK_CAPTURE(BM_WhereTranscendental, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WhereTranscendental, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// Host cost of one eval of a cached program on tiny arrays (16 elements): the runtime's hot path.
void BM_HostOverheadPerEval(benchmark::State& state) {
    Array a = filled16(), b = filled16();
    jit::Kernel k = jit::compile("a*2 + b", runtime());
    std::vector<jit::Arg> args{a, b};
    for (int i = 0; i < 100; ++i) k.call(args);
    for (auto _ : state) benchmark::DoNotOptimize(k.call(args));
}
BENCHMARK(BM_HostOverheadPerEval);

// Baseline: memcpy of one 2^24 float32 array (bytes read + written).
void BM_Memcpy(benchmark::State& state) {
    std::vector<float> src(static_cast<std::size_t>(kN), 1.0f), dst(static_cast<std::size_t>(kN));
    for (auto _ : state) {
        std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 2 * kN * 4);
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

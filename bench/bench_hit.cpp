// The memory-hit path of the runtime on the CPU backend: host cost of an eval (or run) of a
// program already prepared, on arrays of 16 elements, from 1 to 4 threads sharing one runtime.
// What it measures is the fixed cost around the work: finding the parsed text and the prepared
// program (the front and entry caches), binding, allocating the result, launching the stages.
//   bench_hit [--benchmark_repetitions=5 ...]
#include <jit/jit.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;

jit::Runtime& runtime() {
    static jit::Runtime rt([] {
        jit::RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        o.cpu_threads = 1;  // the work is 16 elements: no thread pool in the measurement
        return o;
    }());
    return rt;
}

Array small(float v) { return Array::from(std::vector<float>(16, v), {}, Backend::Cpu); }

// eval("a*2 + b", a, b): parse and prepare once, then every call is a memory hit.
void BM_EvalHit(benchmark::State& state) {
    const Array a = small(1.5f), b = small(2.5f);
    runtime().eval("a*2 + b", {a, b});
    for (auto _ : state) benchmark::DoNotOptimize(runtime().eval("a*2 + b", {a, b}));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvalHit)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// run("c = a*2 + b", env) into an existing c, with `extra` other variables in the environment.
void BM_RunHit(benchmark::State& state) {
    jit::Environment env{{"a", small(1.5f)}, {"b", small(2.5f)}, {"c", small(0.f)}};
    for (std::int64_t i = 0; i < state.range(0); ++i) {
        std::string name = "v";
        name += std::to_string(i);
        env.emplace(std::move(name), jit::Arg(1.0));
    }
    runtime().run("c = a*2 + b", env);
    for (auto _ : state) benchmark::DoNotOptimize(runtime().run("c = a*2 + b", env));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RunHit)->Arg(0)->Arg(10000)->UseRealTime();

// What one jitexpr.evaluate("a*2+b", a=a, b=b) of the Python package asks of the C++ runtime:
// run() of the expression over an environment of two float32 arrays of n elements, a new
// result each call (bench/python_host.py --peers puts the Python figures beside these).
Array filled(std::int64_t n, float v) {
    return Array::from(std::vector<float>(static_cast<std::size_t>(n), v), {}, Backend::Cpu);
}

void BM_RunExprHit(benchmark::State& state) {
    jit::Environment env{{"a", filled(state.range(0), 1.5f)}, {"b", filled(state.range(0), 2.5f)}};
    runtime().run("a*2+b", env);
    for (auto _ : state) benchmark::DoNotOptimize(runtime().run("a*2+b", env));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RunExprHit)->Arg(1)->Arg(16)->Arg(1024)->UseRealTime();

// The same into an existing array (jitexpr.evaluate(..., out=out)).
void BM_RunIntoHit(benchmark::State& state) {
    jit::Environment env{{"a", filled(state.range(0), 1.5f)}, {"b", filled(state.range(0), 2.5f)}};
    const Array out = filled(state.range(0), 0.f);
    runtime().run_into("a*2+b", env, out);
    for (auto _ : state) benchmark::DoNotOptimize(runtime().run_into("a*2+b", env, out));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RunIntoHit)->Arg(1)->Arg(16)->Arg(1024)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

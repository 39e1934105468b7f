// CPU backend throughput through the public API (text -> runtime -> CPU backend) at 2^24
// elements, the result written into an existing array as numexpr's out= does. Compare with
// bench/cpu_peers.py (numexpr and NumPy on the same work, same thread count); bench/cpu_compare.py
// runs both in one call and prints the ratios.
// Reported: bytes moved (inputs read + output written) per second, as "bytes_per_second".
// Threads: JITEXPR_THREADS (0 or unset: every core).
#include <jit/jit.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
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

Array filled(DType t, double base, std::int64_t n = kN) {
    Array a = Array::empty(t, {n}, Backend::Cpu);
    if (t == DType::Float32) {
        auto* p = static_cast<float*>(a.data());
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(base + 1e-7 * double(i % 1000003));
    } else {
        auto* p = static_cast<double*>(a.data());
        for (std::int64_t i = 0; i < n; ++i) p[i] = base + 1e-7 * double(i % 1000003);
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
void new_output_loop(benchmark::State& state, DType t, std::int64_t n) {
    const std::vector<jit::Arg> args{jit::Arg(filled(t, 0.5, n)), jit::Arg(filled(t, 1.5, n))};
    jit::Kernel k = jit::compile("a*2 + b", runtime());
    Array held = k.call(args);
    for (auto _ : state) {
        Array next = k.call(args);
        held = std::move(next);  // the previous result goes now
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 3 * n * static_cast<std::int64_t>(jit::itemsize(t)));
}
void BM_AxpyLikeNewOutput(benchmark::State& state, DType t) { new_output_loop(state, t, kN); }
BENCHMARK_CAPTURE(BM_AxpyLikeNewOutput, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// The pair at 2^log2n float64 elements (the argument): issue 21 measured 2^23, new output
// against out= in one run.
void BM_AxpyLikeOutAt(benchmark::State& state) {
    const std::int64_t n = std::int64_t{1} << state.range(0);
    jit::Environment env{{"a", jit::Arg(filled(DType::Float64, 0.5, n))},
                         {"b", jit::Arg(filled(DType::Float64, 1.5, n))},
                         {"c", jit::Arg(Array::empty(DType::Float64, {n}, Backend::Cpu))}};
    runtime().run("c = a*2 + b", env);  // prepare once
    for (auto _ : state) {
        runtime().run("c = a*2 + b", env);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 3 * n * 8);
}
BENCHMARK(BM_AxpyLikeOutAt)->Arg(23)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AxpyLikeNewOutputAt(benchmark::State& state) {
    new_output_loop(state, DType::Float64, std::int64_t{1} << state.range(0));
}
BENCHMARK(BM_AxpyLikeNewOutputAt)->Arg(23)->Unit(benchmark::kMillisecond)->UseRealTime();

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

// Several outputs from shared intermediates, and a sum over one of them:
//   x = a*b; y = x + c; z = x * d; s = sum(y)
// one pass (Schedule::passes) in which a*b is computed once per element. y and z are written in
// place (existing arrays). Bytes: a, b, c, d read, y, z written. BM_SharedSubexpressionLoop is
// the same work as one hand-written loop (one thread), bench/cpu_peers.py has numexpr and NumPy.
constexpr const char* kShared = "x = a*b\ny = x + c\nz = x * d\ns = sum(y)";

void BM_SharedSubexpression(benchmark::State& state) {
    jit::Environment env;
    for (const auto& [name, base] : {std::pair{"a", 0.5}, {"b", 1.5}, {"c", 0.25}, {"d", 2.0}})
        env.insert_or_assign(name, jit::Arg(filled(DType::Float64, base)));
    for (const char* name : {"x", "y", "z"})
        env.insert_or_assign(name, jit::Arg(Array::empty(DType::Float64, {kN}, Backend::Cpu)));
    runtime().run(kShared, env);  // prepare once
    for (auto _ : state) {
        runtime().run(kShared, env);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 7 * kN * 8);  // x is an output too
}
BENCHMARK(BM_SharedSubexpression)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SharedSubexpressionLoop(benchmark::State& state) {
    const Array a = filled(DType::Float64, 0.5), b = filled(DType::Float64, 1.5), c = filled(DType::Float64, 0.25),
                d = filled(DType::Float64, 2.0);
    Array x = Array::empty(DType::Float64, {kN}, Backend::Cpu), y = Array::empty(DType::Float64, {kN}, Backend::Cpu),
          z = Array::empty(DType::Float64, {kN}, Backend::Cpu);
    const auto *pa = static_cast<const double*>(a.data()), *pb = static_cast<const double*>(b.data()),
               *pc = static_cast<const double*>(c.data()), *pd = static_cast<const double*>(d.data());
    auto *px = static_cast<double*>(x.data()), *py = static_cast<double*>(y.data()),
         *pz = static_cast<double*>(z.data());
    for (double* q : {px, py, pz}) std::fill(q, q + kN, 0.0);  // touched once, as the outputs of jitexpr's warm-up run
    for (auto _ : state) {
        double s = 0;
        for (std::int64_t i = 0; i < kN; ++i) {
            const double xi = pa[i] * pb[i], yi = xi + pc[i];
            px[i] = xi;
            py[i] = yi;
            pz[i] = xi * pd[i];
            s += yi;
        }
        benchmark::DoNotOptimize(s);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * 7 * kN * 8);
}
BENCHMARK(BM_SharedSubexpressionLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

// examples/analytics.cpp's program on 2^22 rows, its two columns written in place, against the
// example's own loop (one thread) writing into existing columns. Bytes: the five columns read
// (4 float64, 1 int32) and two float64 columns written.
constexpr std::int64_t kRows = std::int64_t{1} << 22;
constexpr const char* kAnalytics = R"(
speed = distance / (duration / 3600)
tip_pct = where(fare > 0, tip / fare * 100, 0)
mean_long_speed = sum(where(distance > 5, speed, 0)) / sum(distance > 5)
mean_group_tip = sum(where(passengers >= 3, tip_pct, 0)) / sum(passengers >= 3)
)";

struct Table {
    std::vector<double> distance, duration, fare, tip;
    std::vector<std::int32_t> passengers;
    Table() : distance(kRows), duration(kRows), fare(kRows), tip(kRows), passengers(kRows) {
        for (std::int64_t i = 0; i < kRows; ++i) {
            const auto k = static_cast<std::size_t>(i);
            distance[k] = 0.1 + double(i % 977) * 0.013;
            duration[k] = 60 + double(i % 613) * 3.0;
            fare[k] = i % 50 == 0 ? 0.0 : 3.0 + distance[k] * 2.5;
            tip[k] = i % 3 == 0 ? 0.0 : fare[k] * 0.15;
            passengers[k] = static_cast<std::int32_t>(1 + i % 6);
        }
    }
};
const Table& table() {
    static const Table t;
    return t;
}
constexpr std::int64_t kAnalyticsBytes = kRows * (4 * 8 + 4 + 2 * 8);

void BM_Analytics(benchmark::State& state) {
    const Table& t = table();
    jit::Environment env{{"distance", Array::from(t.distance)},
                         {"duration", Array::from(t.duration)},
                         {"fare", Array::from(t.fare)},
                         {"tip", Array::from(t.tip)},
                         {"passengers", Array::from(t.passengers)}};
    runtime().run(kAnalytics, env);  // prepare; speed and tip_pct now exist and are written in place
    for (auto _ : state) {
        runtime().run(kAnalytics, env);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kAnalyticsBytes);
}
BENCHMARK(BM_Analytics)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AnalyticsLoop(benchmark::State& state) {
    const Table& t = table();
    std::vector<double> speed(kRows), tip_pct(kRows);
    for (auto _ : state) {
        double long_sum = 0, group_sum = 0;
        std::int64_t long_count = 0, group_count = 0;
        for (std::size_t i = 0; i < static_cast<std::size_t>(kRows); ++i) {
            const double v = t.distance[i] / (t.duration[i] / 3600);
            const double p = t.fare[i] > 0 ? t.tip[i] / t.fare[i] * 100 : 0;
            speed[i] = v;
            tip_pct[i] = p;
            if (t.distance[i] > 5) long_sum += v, ++long_count;
            if (t.passengers[i] >= 3) group_sum += p, ++group_count;
        }
        benchmark::DoNotOptimize(long_sum / double(long_count) + group_sum / double(group_count));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kAnalyticsBytes);
}
BENCHMARK(BM_AnalyticsLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

// Host cost of one eval of a cached program on tiny arrays (16 elements): the runtime's hot path.
void BM_HostOverheadPerEval(benchmark::State& state) {
    Array a = filled16(), b = filled16();
    jit::Kernel k = jit::compile("a*2 + b", runtime());
    std::vector<jit::Arg> args{a, b};
    for (int i = 0; i < 100; ++i) k.call(args);
    for (auto _ : state) benchmark::DoNotOptimize(k.call(args));
}
BENCHMARK(BM_HostOverheadPerEval);

// The same call through Runtime::eval with the text, and through run() into an existing array:
// the rows bench_gpu's Host* rows have on CUDA, here with the CPU backend's kernels.
void BM_HostOverheadEvalText(benchmark::State& state) {
    Array a = filled16(), b = filled16();
    for (int i = 0; i < 100; ++i) runtime().eval("a*2+b", {a, b});
    for (auto _ : state) benchmark::DoNotOptimize(runtime().eval("a*2+b", {a, b}));
}
BENCHMARK(BM_HostOverheadEvalText);

void BM_HostOverheadInto(benchmark::State& state) {
    jit::Environment env{{"a", filled16()}, {"b", filled16()}, {"c", filled16()}};
    for (int i = 0; i < 100; ++i) runtime().run("c = a*2 + b", env);
    for (auto _ : state) runtime().run("c = a*2 + b", env);
}
BENCHMARK(BM_HostOverheadInto);

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

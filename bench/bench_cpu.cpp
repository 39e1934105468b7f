// CPU backend throughput on hand-built programs at 2^24 elements (compare with
// bench/cpu_peers.py: numexpr and NumPy on the same work, same thread count).
// Reported: bytes moved (inputs read + output written) per second, as "bytes_per_second".
// Threads: JITEXPR_THREADS (0 or unset: every core).
#include "backend/cpu/cpu_backend.hpp"
#include "tests/cpu/program_builder.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;
namespace ir = jit::ir;
using jxtest::Builder;

constexpr std::int64_t kN = std::int64_t{1} << 24;

jit::detail::BackendImpl& backend() {
    static auto b = [] {
        const char* t = std::getenv("JITEXPR_THREADS");
        return jit::detail::make_cpu_backend(t ? std::atoi(t) : 0);
    }();
    return *b;
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

void run_program(benchmark::State& state, Builder& b, std::vector<Array> inputs) {
    const ir::Schedule s = ir::schedule(b.p);
    auto prepared = backend().prepare(b.p, s, {});
    std::vector<Array> outputs{b.make_output(0)};
    jit::detail::RunArgs args;
    args.inputs = inputs;
    args.outputs = outputs;
    for (auto _ : state) {
        prepared->run(args);
        benchmark::ClobberMemory();
    }
    std::int64_t bytes = outputs[0].nbytes();
    for (const auto& a : inputs) bytes += static_cast<std::int64_t>(a.nbytes());
    state.SetBytesProcessed(state.iterations() * bytes);
}

// c = a*2 + b
void BM_AxpyLike(benchmark::State& state, DType t) {
    Builder b;
    int a = b.input(t, {kN}), c = b.input(t, {kN});
    b.output(b.same(ir::Op::Add, {b.same(ir::Op::Mul, {a, b.fconst(2.0, t)}), c}));
    run_program(state, b, {filled(t, 0.5), filled(t, 1.5)});
}
BENCHMARK_CAPTURE(BM_AxpyLike, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AxpyLike, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// ((.25*a + .75)*a - 1.5)*a - 2
void BM_Polynomial(benchmark::State& state, DType t) {
    Builder b;
    int a = b.input(t, {kN});
    int x = b.same(ir::Op::Add, {b.same(ir::Op::Mul, {b.fconst(0.25, t), a}), b.fconst(0.75, t)});
    x = b.same(ir::Op::Sub, {b.same(ir::Op::Mul, {x, a}), b.fconst(1.5, t)});
    x = b.same(ir::Op::Sub, {b.same(ir::Op::Mul, {x, a}), b.fconst(2.0, t)});
    b.output(x);
    run_program(state, b, {filled(t, 0.1)});
}
BENCHMARK_CAPTURE(BM_Polynomial, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Polynomial, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

// where(a > 0.5, sin(a)*b + exp(-b), a*a - b)
void BM_WhereTranscendental(benchmark::State& state, DType t) {
    Builder b;
    int a = b.input(t, {kN}), c = b.input(t, {kN});
    int cond = b.op(ir::Op::Gt, DType::Bool, {a, b.fconst(0.5, t)});
    int yes = b.same(ir::Op::Add, {b.same(ir::Op::Mul, {b.same(ir::Op::Sin, {a}), c}),
                                   b.same(ir::Op::Exp, {b.same(ir::Op::Neg, {c})})});
    int no = b.same(ir::Op::Sub, {b.same(ir::Op::Mul, {a, a}), c});
    b.output(b.same(ir::Op::Where, {cond, yes, no}));
    run_program(state, b, {filled(t, 0.0), filled(t, 0.3)});
}
BENCHMARK_CAPTURE(BM_WhereTranscendental, f32, DType::Float32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WhereTranscendental, f64, DType::Float64)->Unit(benchmark::kMillisecond)->UseRealTime();

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

// GPU benchmarks: jitexpr's generated kernels next to a hand-written reference kernel and a
// device copy, in one process. Effective bandwidth = bytes the work must move / time.
// Needs a CUDA device (CONTRIBUTING.md, "GPU runs"); without one it says why and exits with 1.
#include <jit/jit.hpp>

#include "backend/backend.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "dsl/plan.hpp"
#include "host_cost.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

using namespace jit;

namespace {

Runtime& gpu() {
    static Runtime rt([] {
        RuntimeOptions o = RuntimeOptions::from_environment();  // JITEXPR_NVRTC_OPTIONS for experiments
        o.backend = Backend::Cuda;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

// Random device arrays, made once per (dtype, n) and kept.
Array device_random(DType t, std::int64_t n, int salt) {
    static std::map<std::tuple<int, std::int64_t, int>, Array> keep;
    auto key = std::make_tuple(static_cast<int>(t), n, salt);
    if (auto it = keep.find(key); it != keep.end()) return it->second;
    std::mt19937_64 rng(1234 + salt);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = u(rng);
    Array a64 = Array::from(v, {}, Backend::Cuda);
    Array a = a64;
    if (t != DType::Float64) a = gpu().eval(std::string(dtype_name(t)) + (is_float(t) ? "(x)" : "(x * 100)"), {a64});
    keep.emplace(key, a);
    return a;
}

// Times `fn` with the device synchronised around a batch of launches.
template <class F>
void time_device(benchmark::State& state, double bytes, F&& fn) {
    fn();
    cuda::synchronize();
    for (auto _ : state) {
        const int reps = 10;
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) fn();
        cuda::synchronize();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        state.SetIterationTime(s);
    }
    state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- references: a device copy and hand-written float4 kernels compiled by NVRTC with
// jitexpr's options (exact: no contraction into FMA)
const char* kReference = R"(
extern "C" __global__ void ref_axpb_f4(const float4* __restrict__ a, const float4* __restrict__ b,
                                       float4* __restrict__ c, unsigned n4) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x * 2.f + y.x, x.y * 2.f + y.y, x.z * 2.f + y.z, x.w * 2.f + y.w);
    }
}
// The parameters of jitexpr's flat kernel for a*2+b (tests/codegen/golden/axpb_float32.cu): three
// arrays, the element count and the vector flag, for a bare launch with the same argument list.
extern "C" __global__ void ref_axpb_flat(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, const long long n, const int vectors) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (vectors && i < n / 4) {
        const float4 x = reinterpret_cast<const float4*>(a)[i], y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x * 2.f + y.x, x.y * 2.f + y.y, x.z * 2.f + y.z, x.w * 2.f + y.w);
    } else if (!vectors && i < n) {
        c[i] = a[i] * 2.f + b[i];
    }
}
__device__ __forceinline__ float ref_where1(float a, float b) {
    return a > 0.5f ? sinf(a) * b + expf(-b) : a * a - b;
}
extern "C" __global__ void ref_where_f4(const float4* __restrict__ a, const float4* __restrict__ b,
                                        float4* __restrict__ c, unsigned n4) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(ref_where1(x.x, y.x), ref_where1(x.y, y.y), ref_where1(x.z, y.z), ref_where1(x.w, y.w));
    }
}
)";

void* reference_kernel(const char* name = "ref_axpb_f4") {
    static cuda::ModulePtr mod = [] {
        cuda::CompileOptions o;
        o.cc_major = cuda::device_info().cc_major;
        o.cc_minor = cuda::device_info().cc_minor;
        return cuda::Module::load(cuda::compile(kReference, "reference.cu", o));
    }();
    return mod->function(name);
}

void BM_DeviceCopy(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    Array a = device_random(DType::Float32, n, 1);
    Array c = Array::empty(DType::Float32, {n}, Backend::Cuda);
    time_device(state, 2.0 * n * 4, [&] { cuda::copy_device(c.data(), a.data(), static_cast<std::size_t>(n) * 4); });
}

// A hand-written kernel of kReference over float4 views of a and b into c, a thread per float4.
void run_reference(benchmark::State& state, const char* kernel) {
    const std::int64_t n = state.range(0);
    Array a = device_random(DType::Float32, n, 1), b = device_random(DType::Float32, n, 2);
    Array c = Array::empty(DType::Float32, {n}, Backend::Cuda);
    void* f = reference_kernel(kernel);
    unsigned n4 = static_cast<unsigned>(n / 4);
    void *pa = a.data(), *pb = b.data(), *pc = c.data();
    void* args[] = {&pa, &pb, &pc, &n4};
    cuda::LaunchConfig cfg;
    cfg.block[0] = 256;
    cfg.grid[0] = (n4 + 255) / 256;
    time_device(state, 3.0 * n * 4, [&] { cuda::launch(f, cfg, args); });
}

void BM_ReferenceAxpbFloat4(benchmark::State& state) { run_reference(state, "ref_axpb_f4"); }

// The transcendental expression of BM_Transcendental, hand-written with float4 loads.
void BM_ReferenceTranscendental(benchmark::State& state) { run_reference(state, "ref_where_f4"); }

// ---- jitexpr
// A first call compiles; waiting for the background half of a tiered compile means the final
// kernels (with vector paths) are what is measured.
void run_expr(benchmark::State& state, const std::string& text, std::vector<Arg> args, double bytes) {
    Kernel k = compile(text, gpu());
    (void)k.call(args);
    gpu().wait_for_compiles();
    time_device(state, bytes, [&] { benchmark::DoNotOptimize(k.call(args)); });
}

// The same with the result written into an existing array (no allocation at all).
void run_into(benchmark::State& state, const std::string& text, Environment env, double bytes) {
    Runtime& rt = gpu();
    rt.run(text, env);
    rt.wait_for_compiles();
    time_device(state, bytes, [&] { rt.run(text, env); });
}

void BM_AxpbInto(benchmark::State& state, DType t) {
    const std::int64_t n = state.range(0);
    Environment env{
        {"a", device_random(t, n, 1)}, {"b", device_random(t, n, 2)}, {"c", Array::empty(t, {n}, Backend::Cuda)}};
    run_into(state, "c = a*2 + b", env, 3.0 * n * itemsize(t));
}

void BM_Axpb(benchmark::State& state, DType t) {
    const std::int64_t n = state.range(0);
    run_expr(state, "a*2 + b", {device_random(t, n, 1), device_random(t, n, 2)}, 3.0 * n * itemsize(t));
}

void BM_Transcendental(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    run_expr(state, "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)",
             {device_random(DType::Float32, n, 1), device_random(DType::Float32, n, 2)}, 3.0 * n * 4);
}

void BM_TranscendentalInto(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    Environment env{{"a", device_random(DType::Float32, n, 1)},
                    {"b", device_random(DType::Float32, n, 2)},
                    {"c", Array::empty(DType::Float32, {n}, Backend::Cuda)}};
    run_into(state, "c = where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", env, 3.0 * n * 4);
}

void BM_BroadcastColumnRow(benchmark::State& state) {
    const std::int64_t m = state.range(0);  // (m x 1) + (1 x m): output bytes count
    Array col = device_random(DType::Float32, m, 1).reshape({m, 1});
    Array row = device_random(DType::Float32, m, 2).reshape({1, m});
    run_expr(state, "x + y*2", {col, row}, 4.0 * m * m);  // as ../shared/anchors/peers_h200.py
}

void BM_StridedTranspose(benchmark::State& state) {
    const std::int64_t m = state.range(0);  // a transposed m x m input, as the peers script
    Array a = device_random(DType::Float32, m * m, 1).reshape({m, m}).transpose();
    run_expr(state, "x*2 + 1", {a}, 2.0 * m * m * 4);
}

void BM_SumOfProduct(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    run_expr(state, "sum(a * b)", {device_random(DType::Float32, n, 1), device_random(DType::Float32, n, 2)},
             2.0 * n * 4);
}

// ---- dates (issue 32: date arithmetic at the memory limit, like other element-wise work)
// datetime64[s] timestamps over about three years from late 2023, made on the device.
Array device_dates(std::int64_t n, int salt) {
    static std::map<std::pair<std::int64_t, int>, Array> keep;
    if (auto it = keep.find({n, salt}); it != keep.end()) return it->second;
    Array a =
        gpu().eval("datetime64(int64(x * 100000000.0) + 1700000000, 's')", {device_random(DType::Float64, n, salt)});
    keep.emplace(std::make_pair(n, salt), a);
    return a;
}

// A timestamp shifted by a duration: 8 bytes read and 8 written per element.
void BM_DatesShift(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    run_expr(state, "ts + timedelta64(5, 'm')", {device_dates(n, 1)}, 16.0 * n);
}

// A filter: 8 bytes read and a bool written.
void BM_DatesFilter(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    run_expr(state, "ts > datetime64('2025-01-01')", {device_dates(n, 1)}, 9.0 * n);
}

// Two columns' difference against a duration: 16 bytes read and a bool written.
void BM_DatesWithin(benchmark::State& state) {
    const std::int64_t n = state.range(0);
    run_expr(state, "(t1 - t0) < timedelta64(30, 'D')", {device_dates(n, 1), device_dates(n, 2)}, 17.0 * n);
}

// Host cost of one call, measured as bench_compile and bench_hit measure it (bench/host_cost.hpp):
// each benchmark iteration is a batch of kHostCostBatch calls timed on the host, then a
// synchronisation outside the timing; the reported time is per call. The *Sustained variants
// are the plain loop this benchmark used before (no synchronisation: the launch queue fills and
// each call waits for the GPU), kept to show the difference.
// Each iteration times a batch of kHostCostBatch calls and reports the time of one, so Google
// Benchmark's minimum time would be reached only after 200 times as much wall time (minutes):
// a fixed number of batches instead (100,000 calls, a second or two).
constexpr int kHostBatches = 500;

// The time of a row is the mean over batches; its counters p50_us and p99_us are the figures
// bench_compile and bench/python_gpu.py report (bench::percentiles_of).
template <class Call>
void host_batches(benchmark::State& state, Call&& call) {
    for (int i = 0; i < 2; ++i) (void)bench::time_batch_us(call);  // warm
    cuda::synchronize();
    std::vector<double> per_call;
    per_call.reserve(kHostBatches);
    for (auto _ : state) {
        const double us = bench::time_batch_us(call);
        state.SetIterationTime(us * 1e-6);  // per call
        per_call.push_back(us);
        cuda::synchronize();
    }
    const bench::HostCost c = bench::percentiles_of(std::move(per_call));
    state.counters["p50_us"] = c.p50_us;
    state.counters["p99_us"] = c.p99_us;
}

struct AxpbArgs {
    Array a = device_random(DType::Float32, 1024, 1), b = device_random(DType::Float32, 1024, 2);
    Array c = Array::empty(DType::Float32, {1024}, Backend::Cuda);
};

// eval(a*2 + b) into a new output: a Kernel (compile() once, then call), as a user would.
void BM_HostOverheadPerEval(benchmark::State& state) {
    AxpbArgs x;
    Kernel k = compile("a*2 + b", gpu());
    std::vector<Arg> args{x.a, x.b};
    (void)k.call(args);
    gpu().wait_for_compiles();
    host_batches(state, [&] { benchmark::DoNotOptimize(k.call(args)); });
}

// The same through Runtime::eval with the text (bench_compile's call).
void BM_HostOverheadEvalText(benchmark::State& state) {
    AxpbArgs x;
    (void)gpu().eval("a*2+b", {x.a, x.b});
    gpu().wait_for_compiles();
    host_batches(state, [&] { benchmark::DoNotOptimize(gpu().eval("a*2+b", {x.a, x.b})); });
}

// The same work into an existing output (no allocation, no free): what the launch path costs.
void BM_HostOverheadInto(benchmark::State& state) {
    AxpbArgs x;
    Environment env{{"a", x.a}, {"b", x.b}, {"c", x.c}};
    Runtime& rt = gpu();
    rt.run("c = a*2 + b", env);
    rt.wait_for_compiles();
    host_batches(state, [&] { rt.run("c = a*2 + b", env); });
}

// The floor: cuLaunchKernel of the hand-written kernel on the same data.
struct BareLaunch {
    AxpbArgs x;
    void* f = reference_kernel();
    unsigned n4 = 256;
    void *pa = x.a.data(), *pb = x.b.data(), *pc = x.c.data();
    void* args[4] = {&pa, &pb, &pc, &n4};
    cuda::LaunchConfig cfg;
    BareLaunch() {
        cfg.block[0] = 256;
        cfg.grid[0] = 1;
    }
    void operator()() { cuda::launch(f, cfg, args); }
};

void BM_HostBareLaunch(benchmark::State& state) {
    BareLaunch launch;
    host_batches(state, launch);
}

// The same floor with the argument list of jitexpr's own kernel for the call (three pointers, a
// 64-bit count, a flag) and its grid: what cuLaunchKernel of that kernel costs by itself.
void BM_HostBareLaunchFlatSignature(benchmark::State& state) {
    AxpbArgs x;
    void* f = reference_kernel("ref_axpb_flat");
    void *pa = x.a.data(), *pb = x.b.data(), *pc = x.c.data();
    long long n = 1024;
    int vectors = 1;
    void* args[5] = {&pa, &pb, &pc, &n, &vectors};
    cuda::LaunchConfig cfg;
    cfg.block[0] = 256;
    cfg.grid[0] = 4;
    host_batches(state, [&] { cuda::launch(f, cfg, args); });
}

void BM_HostSustainedPerEval(benchmark::State& state) {
    AxpbArgs x;
    Kernel k = compile("a*2 + b", gpu());
    std::vector<Arg> args{x.a, x.b};
    (void)k.call(args);
    gpu().wait_for_compiles();
    cuda::synchronize();
    for (auto _ : state) benchmark::DoNotOptimize(k.call(args));
    cuda::synchronize();
}

void BM_HostSustainedBareLaunch(benchmark::State& state) {
    BareLaunch launch;
    cuda::synchronize();
    for (auto _ : state) launch();
    cuda::synchronize();
}

// Host (pageable std::vector) to device and back through cuda::copy_to_device/copy_to_host:
// staged through pinned buffers from 4 MiB (the default), or the path JITEXPR_STAGING names
// (direct: the driver's own; register: page-locked in place).
void BM_HostToDevice(benchmark::State& state) {
    const std::size_t bytes = static_cast<std::size_t>(state.range(0));
    std::vector<unsigned char> host(bytes, 1);
    void* dev = cuda::alloc(bytes);
    for (auto _ : state) cuda::copy_to_device(dev, host.data(), bytes);
    cuda::free(dev);
    state.counters["GB/s"] =
        benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DeviceToHost(benchmark::State& state) {
    const std::size_t bytes = static_cast<std::size_t>(state.range(0));
    std::vector<unsigned char> host(bytes, 1);
    void* dev = cuda::alloc(bytes);
    cuda::memset(dev, 0, bytes);
    for (auto _ : state) cuda::copy_to_host(host.data(), dev, bytes);
    cuda::free(dev);
    state.counters["GB/s"] =
        benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}

// Threads per block, swept for the layout classes: the data to choose launch shapes per device
// from (the runtime uses 256). Program as the runtime lowers it, prepared by a CUDA backend
// with the given block, run on the benchmark's own arrays.
void run_with_block(benchmark::State& state, const std::string& text, const std::vector<Array>& inputs, double bytes) {
    const int block = static_cast<int>(state.range(0));
    std::map<std::string, dsl::Binding> env;
    const char* names[] = {"a", "b", "c"};
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        dsl::Binding bnd;
        bnd.kind = dsl::Binding::Kind::Array;
        bnd.dtype = inputs[i].dtype();
        bnd.shape = inputs[i].shape();
        bnd.strides = inputs[i].strides();
        env.emplace(names[i], bnd);
    }
    cuda::ExecutorOptions eo;
    eo.block = block;
    auto backend = cuda::make_cuda_backend(eo);
    const ir::Plan plan = dsl::plan(text, dsl::bindings_of(env), backend->limits());
    const ir::Program& p = plan.program;
    auto prepared = backend->prepare(plan, {});
    std::vector<Array> ins;
    for (const auto& decl : p.inputs)
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (decl.name == names[i]) ins.push_back(inputs[i]);
    std::vector<Array> outs;
    for (const auto& o : p.outputs)
        outs.push_back(Array::empty(p.node(o.node).dtype, p.node(o.node).shape, Backend::Cuda));
    detail::RunArgs ra;
    ra.inputs = ins;
    ra.outputs = outs;
    time_device(state, bytes, [&] { prepared->run(ra); });
}

void BM_BlockAxpb(benchmark::State& state) {
    const std::int64_t n = std::int64_t{1} << 28;
    run_with_block(state, "a*2 + b", {device_random(DType::Float32, n, 1), device_random(DType::Float32, n, 2)},
                   3.0 * n * 4);
}

void BM_BlockTranscendental(benchmark::State& state) {
    const std::int64_t n = std::int64_t{1} << 28;
    run_with_block(state, "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)",
                   {device_random(DType::Float32, n, 1), device_random(DType::Float32, n, 2)}, 3.0 * n * 4);
}

void BM_BlockBroadcast(benchmark::State& state) {
    const std::int64_t m = 16384;
    run_with_block(
        state, "a + b*2",
        {device_random(DType::Float32, m, 1).reshape({m, 1}), device_random(DType::Float32, m, 2).reshape({1, m})},
        4.0 * m * m);
}

void BM_BlockSum(benchmark::State& state) {
    const std::int64_t n = std::int64_t{1} << 28;
    run_with_block(state, "sum(a * b)", {device_random(DType::Float32, n, 1), device_random(DType::Float32, n, 2)},
                   2.0 * n * 4);
}

void blocks(benchmark::internal::Benchmark* b) {
    for (int t : {64, 128, 256, 512, 1024}) b->Arg(t);
}

void sizes(benchmark::internal::Benchmark* b) {
    for (int p = 10; p <= 28; p += 2) b->Arg(std::int64_t{1} << p);
}

}  // namespace

BENCHMARK(BM_DeviceCopy)->Apply(sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReferenceAxpbFloat4)->Apply(sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Axpb, float32, DType::Float32)->Apply(sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Axpb, float64, DType::Float64)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Axpb, float16, DType::Float16)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Axpb, int32, DType::Int32)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AxpbInto, float32, DType::Float32)->Apply(sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AxpbInto, float64, DType::Float64)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AxpbInto, float16, DType::Float16)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AxpbInto, int32, DType::Int32)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReferenceTranscendental)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Transcendental)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TranscendentalInto)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BroadcastColumnRow)->Arg(16384)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StridedTranspose)->Arg(16384)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SumOfProduct)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DatesShift)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DatesFilter)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DatesWithin)->Arg(1 << 28)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostOverheadPerEval)->UseManualTime()->Iterations(kHostBatches)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostOverheadEvalText)->UseManualTime()->Iterations(kHostBatches)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostOverheadInto)->UseManualTime()->Iterations(kHostBatches)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostBareLaunch)->UseManualTime()->Iterations(kHostBatches)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostBareLaunchFlatSignature)->UseManualTime()->Iterations(kHostBatches)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostSustainedPerEval)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostSustainedBareLaunch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockAxpb)->Apply(blocks)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockTranscendental)->Apply(blocks)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockBroadcast)->Apply(blocks)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BlockSum)->Apply(blocks)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostToDevice)->Arg(1 << 20)->Arg(256 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeviceToHost)->Arg(1 << 20)->Arg(256 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    std::string why;
    if (!cuda::available(&why)) {
        std::fprintf(stderr, "bench_gpu: no CUDA device: %s\n", why.c_str());
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

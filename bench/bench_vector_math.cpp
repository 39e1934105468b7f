// What a vector function of libmvec costs called through the pointer dlsym found
// (JITEXPR_LIBMVEC=DYNAMIC, the wheels) against the call the linker bound (ON): the AVX2 loop of
// each of the 50 functions over one block in L1, both tables in one process (the linked build's
// and the dynamic copy of backend/cpu/CMakeLists.txt), alternated, least CPU time of each side.
//   bench_vector_math [--rounds 15] [--reps 2000]
// Prints ns per vector call (8 floats or 4 doubles) of each side and their ratio.
#include "backend/cpu/kernels.hpp"
#include "backend/cpu/vector_math.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string_view>
#include <vector>

namespace jit::cpu::libmvec_dynamic {
const KernelTable* kernels_avx2();
VectorMath vector_math_avx2();
}  // namespace jit::cpu::libmvec_dynamic

namespace {

using jit::DType;
namespace ir = jit::ir;

struct Fn {
    ir::Op op;
    const char* name;
    double lo, hi;  // the arguments: uniform in [lo, hi), inside the function's domain
};
constexpr Fn kFns[] = {
    {ir::Op::Sin, "sin", -5, 5},       {ir::Op::Cos, "cos", -5, 5},       {ir::Op::Tan, "tan", -1.5, 1.5},
    {ir::Op::Arcsin, "asin", -1, 1},   {ir::Op::Arccos, "acos", -1, 1},   {ir::Op::Arctan, "atan", -5, 5},
    {ir::Op::Sinh, "sinh", -5, 5},     {ir::Op::Cosh, "cosh", -5, 5},     {ir::Op::Tanh, "tanh", -5, 5},
    {ir::Op::Arcsinh, "asinh", -5, 5}, {ir::Op::Arccosh, "acosh", 1, 6},  {ir::Op::Arctanh, "atanh", -1, 1},
    {ir::Op::Log, "log", 0.01, 5},     {ir::Op::Log1p, "log1p", -0.9, 5}, {ir::Op::Log10, "log10", 0.01, 5},
    {ir::Op::Log2, "log2", 0.01, 5},   {ir::Op::Exp, "exp", -5, 5},       {ir::Op::Expm1, "expm1", -5, 5},
    {ir::Op::Exp2, "exp2", -5, 5},     {ir::Op::Cbrt, "cbrt", -5, 5},     {ir::Op::Erf, "erf", -3, 3},
    {ir::Op::Erfc, "erfc", -3, 3},     {ir::Op::Arctan2, "atan2", -5, 5}, {ir::Op::Hypot, "hypot", -5, 5},
    {ir::Op::Pow, "pow", 0.1, 3},
};

double thread_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

template <class T>
void measure(const Fn& f, DType dt, const jit::cpu::KernelTable& linked, const jit::cpu::KernelTable& dynamic,
             int rounds, int reps, std::vector<double>& ratios) {
    const std::int64_t n = jit::cpu::kBlock;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(f.lo, f.hi);
    std::vector<T> a(static_cast<std::size_t>(n)), b(a.size()), o(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(u(rng)), b[i] = static_cast<T>(u(rng));
    const void* in[2] = {a.data(), b.data()};
    const auto l = linked.op[static_cast<int>(f.op)][static_cast<int>(dt)];
    const auto d = dynamic.op[static_cast<int>(f.op)][static_cast<int>(dt)];
    double best[2] = {1e300, 1e300};
    for (int r = 0; r < rounds; ++r)
        for (int side = 0; side < 2; ++side) {
            const auto fn = side == 0 ? l : d;
            const double t0 = thread_ns();
            for (int k = 0; k < reps; ++k) fn(in, o.data(), n);
            best[side] = std::min(best[side], thread_ns() - t0);
        }
    const double calls = static_cast<double>(reps) * static_cast<double>(n) / (32.0 / sizeof(T));
    const double ln = best[0] / calls, dn = best[1] / calls;
    ratios.push_back(dn / ln);
    fmt::print("{:<7} {:<8} {:>9.2f} {:>9.2f} {:>7.3f}\n", f.name, dt == DType::Float32 ? "float32" : "float64", ln, dn,
               dn / ln);
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 15, reps = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string_view(argv[i]) == "--rounds") rounds = std::atoi(argv[i + 1]);
        else if (std::string_view(argv[i]) == "--reps") reps = std::atoi(argv[i + 1]);
    }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fmt::print("bench_vector_math: this CPU has no AVX2\n");
        return 0;
    }
    const jit::cpu::VectorMath lv = jit::cpu::vector_math_avx2(), dv = jit::cpu::libmvec_dynamic::vector_math_avx2();
    fmt::print("linked table: {} ({} of {} functions); dynamic table: {} ({} of {})\n", lv.mode, lv.resolved, lv.known,
               dv.mode, dv.resolved, dv.known);
    if (std::string_view(lv.mode) != "linked" || dv.resolved != dv.known) {
        fmt::print("bench_vector_math: needs the linked build and a libmvec with every function\n");
        return 1;
    }
    fmt::print("{} rounds of {} calls of each loop over {} elements, least thread CPU time per vector call (ns)\n",
               rounds, reps, jit::cpu::kBlock);
    fmt::print("{:<7} {:<8} {:>9} {:>9} {:>7}\n", "fn", "dtype", "linked", "dynamic", "ratio");
    const auto& linked = *jit::cpu::kernels_avx2();
    const auto& dynamic = *jit::cpu::libmvec_dynamic::kernels_avx2();
    std::vector<double> ratios;
    for (const Fn& f : kFns) {
        measure<float>(f, DType::Float32, linked, dynamic, rounds, reps, ratios);
        measure<double>(f, DType::Float64, linked, dynamic, rounds, reps, ratios);
    }
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    std::sort(ratios.begin(), ratios.end());
    fmt::print("dynamic / linked over {} functions: geometric mean {:.4f}, min {:.3f}, median {:.3f}, max {:.3f}\n",
               ratios.size(), std::exp(log_sum / static_cast<double>(ratios.size())), ratios.front(),
               ratios[ratios.size() / 2], ratios.back());
    return 0;
}

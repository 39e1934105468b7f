// Differential tests against NumPy 2: every operator and function x every dtype, with NaN, +-inf,
// +-0, integer extremes, zero divisors, broadcasting and strided views. gen_cases.py computes the
// expected arrays with NumPy; this evaluates each expression with jitexpr on each backend and
// compares: equal dtype and shape, equal values for integer and bool results and exact ops,
// within the case's ULP bound for floating results, and the same rejections.
#include <jit/jit.hpp>
#include <jit/npy.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <typeinfo>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace jit;

namespace {

struct Case {
    std::string expr;
    double ulps = 0;
    std::string expected;  // file, or ERROR:Kind
    std::vector<std::pair<std::string, std::string>> inputs;
};

const fs::path& case_dir() {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("jitexpr_diff_" + std::to_string(::getpid()));
        fs::create_directories(d);
        const std::string cmd = "python3 \"" + std::string(JITEXPR_SOURCE_DIR) + "/tests/diff/gen_cases.py\" \"" +
                                d.string() + "\" > \"" + (d / "gen.log").string() + "\" 2>&1";
        if (std::system(cmd.c_str()) != 0) {
            std::ifstream log(d / "gen.log");
            std::stringstream ss;
            ss << log.rdbuf();
            throw std::runtime_error(
                "gen_cases.py failed (python3 with NumPy 2 is needed; scripts/install-deps.sh "
                "installs it):\n" +
                ss.str());
        }
        return d;
    }();
    return dir;
}

std::vector<Case> load_cases() {
    std::vector<Case> cases;
    std::ifstream in(case_dir() / "cases.tsv");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string part;
        while (std::getline(ss, part, '\t')) f.push_back(part);
        Case c;
        c.expr = f.at(0);
        c.ulps = std::stod(f.at(1));
        c.expected = f.at(2);
        std::stringstream ins(f.size() > 3 ? f[3] : "");
        while (ins >> part) {
            auto eq = part.find('=');
            c.inputs.emplace_back(part.substr(0, eq), part.substr(eq + 1));
        }
        cases.push_back(std::move(c));
    }
    return cases;
}

double half_to_double(std::uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    double v;
    if (exp == 0) v = std::ldexp(man, -24);
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = std::ldexp(man + 1024, exp - 25);
    return sign ? -v : v;
}

// Element k of a host C-contiguous array as (re, im) doubles, or exact integer as int128-ish.
struct Elem {
    double re = 0, im = 0;
    long double exact = 0;  // integers and bool
};

Elem element(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    const unsigned char* p = bytes.data() + k * itemsize(t);
    Elem e;
    auto get = [&](auto tag) {
        decltype(tag) v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case DType::Bool: e.exact = *p ? 1 : 0; break;
        case DType::Int8: e.exact = get(std::int8_t{}); break;
        case DType::Int16: e.exact = get(std::int16_t{}); break;
        case DType::Int32: e.exact = get(std::int32_t{}); break;
        case DType::Int64: e.exact = get(std::int64_t{}); break;
        case DType::UInt8: e.exact = get(std::uint8_t{}); break;
        case DType::UInt16: e.exact = get(std::uint16_t{}); break;
        case DType::UInt32: e.exact = get(std::uint32_t{}); break;
        case DType::UInt64: e.exact = get(std::uint64_t{}); break;
        case DType::Float16: e.re = half_to_double(get(std::uint16_t{})); break;
        case DType::BFloat16: {
            std::uint32_t b = static_cast<std::uint32_t>(get(std::uint16_t{})) << 16;
            float f;
            std::memcpy(&f, &b, 4);
            e.re = f;
            break;
        }
        case DType::Float32: e.re = get(float{}); break;
        case DType::Float64: e.re = get(double{}); break;
        case DType::Complex64: {
            auto c = get(std::complex<float>{});
            e.re = c.real(), e.im = c.imag();
            break;
        }
        case DType::Complex128: {
            auto c = get(std::complex<double>{});
            e.re = c.real(), e.im = c.imag();
            break;
        }
            JIT_TEMPORAL_CASES e.exact = get(std::int64_t{});
            break;  // a date's count: exact
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;  // (no case computes strings)
    }
    return e;
}

double epsilon_of(DType t) {
    switch (t) {
        case DType::Float16: return std::ldexp(1.0, -10);
        case DType::BFloat16: return std::ldexp(1.0, -7);
        case DType::Float32:
        case DType::Complex64: return std::ldexp(1.0, -23);
        default: return std::ldexp(1.0, -52);
    }
}

double min_normal_of(DType t) {
    switch (t) {
        case DType::Float16: return std::ldexp(1.0, -14);
        case DType::Float32:
        case DType::Complex64:
        case DType::BFloat16: return std::ldexp(1.0, -126);
        default: return std::ldexp(1.0, -1022);
    }
}

// `scale` is the magnitude the rounding error is relative to: |ref| for real results, the
// largest component for complex ones (cancellation in one part is bounded by the whole).
bool close(double got, double ref, double ulps, DType t, double scale) {
    if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
    if (std::isinf(ref) || std::isinf(got)) return got == ref;
    if (got == ref) return true;
    if (ulps == 0) return false;
    const double eps = epsilon_of(t);
    const double spacing = std::max(std::max(std::fabs(ref), scale), min_normal_of(t)) * eps;
    // Below 1 in magnitude (results near a function's zeros, where relative bounds mean
    // nothing after cancellation) the bound is absolute: ulps * epsilon.
    return std::fabs(got - ref) <= ulps * std::max(spacing, eps);
}

std::vector<unsigned char> host_bytes(const Array& a) {
    std::vector<unsigned char> b(a.nbytes());
    a.copy_to_host(b.data());
    return b;
}

// A view of `a` with the same values but non-contiguous memory: every other element of a
// buffer twice the size (1-D and higher: the last axis interleaved).
Array strided_copy(const Array& a, Backend backend) {
    if (a.ndim() == 0 || a.size() < 2) return a;
    Shape big = a.shape();
    big.back() *= 2;
    const std::size_t isz = itemsize(a.dtype());
    std::vector<unsigned char> src = host_bytes(a), dst(src.size() * 2, 0xCD);
    for (std::size_t k = 0; k < static_cast<std::size_t>(a.size()); ++k)
        std::memcpy(&dst[2 * k * isz], &src[k * isz], isz);
    Array b = Array::from_host(dst.data(), a.dtype(), big, backend);
    return b.slice(-1, 0, big.back(), 2);
}

// CUDA combines a scan over every element in blocks of the array, not left to right (the order
// docs/language.md states): where a complex running product overflows, a part that NumPy's order
// leaves infinite can be NaN. For those scans on CUDA an element NumPy gives as non-finite must be
// non-finite; every finite element is compared as usual.
bool block_order_product_scan(const Runtime& rt, const Case& c) {
    if (rt.backend() != Backend::Cuda) return false;
    const bool product = c.expr.rfind("cumprod(", 0) == 0 || c.expr.rfind("nancumprod(", 0) == 0;
    const bool all = c.expr.find("axis=") == std::string::npos || c.expr.find("axis=None") != std::string::npos;
    return product && all;
}

std::string check_case(Runtime& rt, const Case& c, bool strided) {
    Environment env;
    for (const auto& [name, file] : c.inputs) {
        Array a = load_npy((case_dir() / file).string(), rt.backend());
        if (strided) a = strided_copy(a, rt.backend());
        env.insert_or_assign(name, Arg(a));
    }
    Array got;
    try {
        got = rt.run(c.expr, env);
    } catch (const Error& e) {
        const std::string kind = typeid(e).name();
        if (c.expected.rfind("ERROR:", 0) == 0) {
            const std::string want = c.expected.substr(6);
            if (kind.find(want) != std::string::npos) return {};
            return "expected " + want + ", got: " + e.what();
        }
        return std::string("unexpected error: ") + e.what();
    }
    if (c.expected.rfind("ERROR:", 0) == 0)
        return "NumPy rejects this (" + c.expected.substr(6) + ") but jitexpr accepted it";
    const Array want = load_npy((case_dir() / c.expected).string(), Backend::Cpu);
    if (got.dtype() != want.dtype())
        return "dtype " + std::string(dtype_name(got.dtype())) + ", NumPy gives " +
               std::string(dtype_name(want.dtype()));
    if (got.shape() != want.shape())
        return "shape " + shape_to_string(got.shape()) + ", NumPy gives " + shape_to_string(want.shape());
    const auto gb = host_bytes(got), wb = host_bytes(want);
    int bad = 0;
    std::string detail;
    for (std::size_t k = 0; k < static_cast<std::size_t>(want.size()); ++k) {
        const Elem g = element(gb, got.dtype(), k), w = element(wb, want.dtype(), k);
        bool ok;
        if (!is_inexact(want.dtype())) ok = g.exact == w.exact;
        else {
            const double scale = is_complex(want.dtype()) && std::isfinite(w.re) && std::isfinite(w.im)
                                     ? std::max(std::fabs(w.re), std::fabs(w.im))
                                     : 0.0;
            ok = close(g.re, w.re, c.ulps, want.dtype(), scale) && close(g.im, w.im, c.ulps, want.dtype(), scale);
            if (!ok && is_complex(want.dtype()) && block_order_product_scan(rt, c) &&
                !(std::isfinite(w.re) && std::isfinite(w.im)))
                ok = !(std::isfinite(g.re) && std::isfinite(g.im));
        }
        if (!ok && bad++ < 3) {
            std::ostringstream os;
            os.precision(17);
            os << " [" << k << "] got " << (is_inexact(want.dtype()) ? g.re : static_cast<double>(g.exact));
            if (is_complex(want.dtype())) os << "+" << g.im << "j";
            os << " want " << (is_inexact(want.dtype()) ? w.re : static_cast<double>(w.exact));
            if (is_complex(want.dtype())) os << "+" << w.im << "j";
            detail += os.str();
        }
    }
    if (bad) return std::to_string(bad) + " of " + std::to_string(want.size()) + " elements differ:" + detail;
    return {};
}

std::string input_dtypes(const Case& c) {
    std::string r;
    for (const auto& [name, file] : c.inputs) {
        const Array a = load_npy((case_dir() / file).string(), Backend::Cpu);
        r += (r.empty() ? "" : ", ") + name + ": " + std::string(dtype_name(a.dtype())) + " " +
             shape_to_string(a.shape());
    }
    return r;
}

void run_all(Backend backend) {
    RuntimeOptions o = RuntimeOptions::from_environment();
    o.backend = backend;
    o.disk_cache = false;
    Runtime rt(o);
    auto cases = load_cases();
    ASSERT_GT(cases.size(), 500u);
    // JITEXPR_DIFF_SHARD=i/n keeps every n-th case from the i-th: a sample of every kind of
    // case for runs that cannot afford them all (scripts/gpu-sanitize.sh runs 0/16 under memcheck).
    if (const char* shard = std::getenv("JITEXPR_DIFF_SHARD"); shard && *shard) {
        unsigned i = 0, n = 0;
        ASSERT_EQ(std::sscanf(shard, "%u/%u", &i, &n), 2) << "JITEXPR_DIFF_SHARD takes i/n, not " << shard;
        ASSERT_TRUE(n > 0 && i < n) << "JITEXPR_DIFF_SHARD " << shard;
        std::vector<Case> kept;
        for (std::size_t k = i; k < cases.size(); k += n) kept.push_back(std::move(cases[k]));
        cases = std::move(kept);
    }
    // Cases run on several threads sharing the runtime (on CUDA each new program compiles:
    // NVRTC scales across threads); failures are reported in case order afterwards.
    std::vector<std::string> errors(cases.size() * 2);
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < cases.size();) {
            const Case& c = cases[i];
            for (int strided = 0; strided < 2; ++strided) {
                try {
                    errors[2 * i + static_cast<std::size_t>(strided)] = check_case(rt, c, strided != 0);
                } catch (const std::exception& e) {
                    errors[2 * i + static_cast<std::size_t>(strided)] = std::string("exception: ") + e.what();
                }
                if (c.expected.rfind("ERROR:", 0) == 0) break;
            }
        }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
    int failures = 0;
    for (std::size_t i = 0; i < errors.size(); ++i) {
        if (errors[i].empty()) continue;
        ++failures;
        const Case& c = cases[i / 2];
        ADD_FAILURE() << c.expr << "  (" << input_dtypes(c) << (i % 2 ? ", strided" : "") << "): " << errors[i];
    }
    EXPECT_EQ(failures, 0);
}

}  // namespace

#ifdef JITEXPR_DIFF_CUDA
TEST(DifferentialNumPy, CudaBackendAgrees) {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    run_all(Backend::Cuda);
}
#else
TEST(DifferentialNumPy, CpuBackendAgrees) { run_all(Backend::Cpu); }
#endif

// Golden kernels of the statistics (their CUDA source, no GPU needed): argmin's two passes (a
// min, then ArgFirst folding positions) along an axis and over every element, and var's two
// passes with the mean kept with its reduced axis; and every statistic's kernels compile to
// CUBIN for sm_90 with NVRTC (the toolkit's library, no GPU or driver).
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace {

using namespace jit;
namespace cg = jit::codegen;

cg::Emitted emitted(const std::string& text, const Shape& shape, DType t = DType::Float32) {
    dsl::Binding a;
    a.kind = dsl::Binding::Kind::Array;
    a.dtype = t;
    a.shape = shape;
    a.strides = contiguous_strides(shape);
    const auto m = syntax::parse(text);
    const ir::Program p = dsl::lower(
        m, text, [&](std::string_view n) -> const dsl::Binding* { return n == "a" ? &a : nullptr; },
        std::vector<std::string>{"a"});
    return cg::emit(p, ir::schedule(p), {});
}

std::string kernels_of(const std::string& text, const Shape& shape) {
    const cg::Emitted e = emitted(text, shape);
    std::string s;
    for (const auto& k : e.kernels) s += "// ==== stage " + std::to_string(k.stage) + "\n" + k.body;
    return s;
}

// Compares with tests/codegen/golden/<name>.cu; JITEXPR_UPDATE_GOLDEN=1 rewrites the file.
void expect_golden(const std::string& name, const std::string& actual) {
    const std::string path = std::string(JITEXPR_TEST_DATA) + "/golden/" + name + ".cu";
    const char* update = std::getenv("JITEXPR_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
        std::ofstream(path, std::ios::binary) << actual;
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing golden file " << path << " (run with JITEXPR_UPDATE_GOLDEN=1)";
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), actual) << "generated kernel differs from " << path
                                << " (if intended, rerun with JITEXPR_UPDATE_GOLDEN=1)";
}

}  // namespace

TEST(CodegenGoldenStatistics, ArgminAlongTheLastAxis) {
    expect_golden("argmin_axis1", kernels_of("argmin(a * 2, axis=1)", {64, 100}));
}
TEST(CodegenGoldenStatistics, ArgmaxOverEveryElement) { expect_golden("argmax_all", kernels_of("argmax(a)", {1000})); }
TEST(CodegenGoldenStatistics, VarianceAlongTheFirstAxisKeepingIt) {
    expect_golden("var_axis0_keepdims", kernels_of("var(a, axis=0, keepdims=True)", {100, 64}));
}

TEST(NvrtcCompilesStatistics, EveryStatisticsKernelCompilesToCubin) {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    // Each statistic along an axis (keeping it) and over every element (or a tuple of axes), the
    // dtypes taking turns (float32, float16, int32, float64, uint8): every kernel kind and
    // accumulator the statistics produce, in few compiles.
    const DType dtypes[] = {DType::Float32, DType::Float16, DType::Int32, DType::Float64, DType::UInt8};
    int turn = 0;
    for (const char* f : {"argmin", "argmax", "var", "std", "nanvar", "nanmean", "nanmin", "nansum", "count_nonzero",
                          "ptp", "average", "sum", "any"})
        for (const char* form : {", axis=-1, keepdims=True", ""}) {
            const DType t = dtypes[turn++ % 5];
            if (std::string(f) == "ptp" && t == DType::UInt8) continue;
            const std::string text = std::string(f) + "(a * 3" + form + ")";
            const cg::Emitted e = emitted(text, {40, 30, 2}, t);
            for (const auto& k : e.kernels) {
                try {
                    const cuda::Image img = cuda::compile(k.source, k.name, co);
                    EXPECT_TRUE(img.is_cubin) << text;
                } catch (const CompileError& err) {
                    ADD_FAILURE() << text << " " << dtype_name(t) << ": NVRTC rejected stage " << k.stage << ":\n"
                                  << err.log() << "\n"
                                  << k.body;
                }
            }
        }
}

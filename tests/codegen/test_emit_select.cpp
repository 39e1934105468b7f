// Select kernels (the order statistics: median, percentile, quantile and their nan* forms):
// golden CUDA source for a median fused with its operand's expression along an axis and for
// percentiles of a tuple of q over two axes; and every order statistic x dtype x axis form
// compiles to CUBIN for sm_90 with NVRTC (the toolkit's library, no GPU or driver).
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
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

TEST(CodegenGoldenSelect, MedianFusedWithItsOperandAlongTheLastAxis) {
    expect_golden("median_axis1", kernels_of("median(a * 2 + 1, axis=1)", {64, 100}));
}
TEST(CodegenGoldenSelect, PercentilesOfATupleOverTwoAxes) {
    expect_golden("percentile_tuple_axes02", kernels_of("nanpercentile(a, (5, 50, 95), axis=(0, 2))", {4, 8, 16}));
}

TEST(CodegenSelect, TheStatisticIsOneSelectKernelAndItsValueACopy) {
    const cg::Emitted e = emitted("median(a, axis=0)", {10, 3});
    ASSERT_EQ(e.kernels.size(), 2u);
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Select);
    EXPECT_EQ(e.kernels[0].launch.select_axes, 1u);
    EXPECT_NE(e.kernels[1].launch.kind, cg::KernelKind::Select);
}

TEST(NvrtcCompilesSelect, EveryOrderStatisticKernelCompilesToCubin) {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    struct Case {
        const char* call;
        std::vector<DType> dtypes;
    };
    // Every dtype once and every form of the statistic (median, the nan* forms, linear
    // interpolation, a tuple of q, an integer q's element), the axis forms taking turns: few
    // compiles (NVRTC takes about a second each), every code path of the kernel.
    const Case cases[] = {{"median(a{})", {DType::Float32, DType::Bool, DType::Complex128, DType::UInt64}},
                          {"nanmedian(a{})", {DType::Float16, DType::Complex64, DType::Int16}},
                          {"percentile(a, 30{})", {DType::Int8, DType::BFloat16}},
                          {"quantile(a, (0.0, 0.5, 1.0){})", {DType::Float64, DType::UInt16}},
                          {"nanquantile(a * 2, 0.75{})", {DType::Int64, DType::Float32}},
                          {"quantile(a, (0, 1){})", {DType::Bool, DType::Int32}}};
    const char* forms[] = {"", ", axis=1", ", axis=(0, 2), keepdims=True"};
    int turn = 0;
    for (const Case& c : cases)
        for (const DType t : c.dtypes) {
            std::string text = c.call;
            text.replace(text.find("{}"), 2, forms[turn++ % 3]);
            const cg::Emitted e = emitted(text, {3, 5, 7}, t);
            for (const auto& k : e.kernels) {
                if (k.launch.kind != cg::KernelKind::Select) continue;  // the copy is an ordinary kernel
                try {
                    const cuda::Image img = cuda::compile(k.source, k.name, co);
                    EXPECT_FALSE(img.data.empty());
                } catch (const CompileError& err) {
                    ADD_FAILURE() << text << " on " << dtype_name(t) << ": NVRTC rejected stage " << k.stage << ":\n"
                                  << err.log() << "\n"
                                  << k.body;
                }
            }
        }
}

// Golden kernels of the scans (their CUDA source, no GPU needed): a scan along the last axis (a
// block per row), along the first (a thread per row), over every element (the two-phase
// kernel) with its producer fused and its consumer in a later stage; and every scan kernel, in
// every dtype a scan computes in, contiguous and strided, compiles to CUBIN for sm_90 with
// NVRTC (the toolkit's library, no GPU or driver).
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

cg::Emitted emitted(const std::string& text, const Shape& shape, DType t = DType::Float32, bool strided = false) {
    dsl::Binding a;
    a.kind = dsl::Binding::Kind::Array;
    a.dtype = t;
    a.shape = shape;
    a.strides = contiguous_strides(shape);
    const auto m = syntax::parse(text);
    const ir::Program p = dsl::lower(
        m, text, [&](std::string_view n) -> const dsl::Binding* { return n == "a" ? &a : nullptr; },
        std::vector<std::string>{"a"});
    cg::EmitOptions o;
    o.force_strided = strided;
    return cg::emit(p, ir::schedule(p), o);
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

TEST(CodegenGoldenScans, CumsumAlongTheLastAxisIsABlockPerRow) {
    expect_golden("cumsum_axis1", kernels_of("cumsum(a * 2 + 1, axis=1)", {64, 1000}));
}
TEST(CodegenGoldenScans, CumprodAlongTheFirstAxisIsAThreadPerRow) {
    expect_golden("cumprod_axis0", kernels_of("cumprod(a, axis=0)", {100, 64}));
}
TEST(CodegenGoldenScans, CumsumOfEveryElementIsTwoPhasesThenItsConsumer) {
    expect_golden("cumsum_all_divided", kernels_of("cumsum(a - 1) / 1000", {1000}));
}

TEST(CodegenScans, KernelKindsAndLaunch) {
    const auto all = emitted("cumsum(a)", {10, 20}).kernels.at(0);
    EXPECT_EQ(all.launch.kind, cg::KernelKind::ScanAll);
    EXPECT_GT(all.launch.workspace_bytes(), 0u);
    bool phase = false;
    for (const auto& p : all.params) phase = phase || p.kind == cg::Param::Kind::Phase;
    EXPECT_TRUE(phase);
    const auto rows = emitted("cumsum(a, axis=1)", {10, 200}).kernels.at(0);
    EXPECT_EQ(rows.launch.kind, cg::KernelKind::ScanAxis);
    EXPECT_TRUE(rows.launch.block_per_row);
    EXPECT_EQ(rows.launch.workspace_bytes(), 0u);
    EXPECT_FALSE(emitted("cumsum(a, axis=0)", {10, 20}).kernels.at(0).launch.block_per_row);
    EXPECT_FALSE(emitted("cumsum(a, axis=1)", {1000, 7}).kernels.at(0).launch.block_per_row);  // short rows
}

TEST(CodegenScans, Float16StepsAreRoundedToFloat16) {
    const auto k = emitted("cumsum(a, axis=1)", {10, 20}, DType::Float16).kernels.at(0);
    EXPECT_NE(k.body.find("jx::round_f16(v)"), std::string::npos) << k.body;
    const auto f = emitted("cumsum(a, axis=1)", {10, 20}, DType::Float32).kernels.at(0);
    EXPECT_EQ(f.body.find("round_f16"), std::string::npos) << f.body;
}

TEST(NvrtcCompilesScans, EveryScanKernelCompilesToCubin) {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    // Each kernel form with the dtypes taking turns: every dtype a scan computes in (int64,
    // uint64, the floats, complex), from inputs that are widened or not, contiguous or strided.
    const DType dtypes[] = {DType::Float32, DType::Int8,    DType::UInt16,    DType::Float16,    DType::BFloat16,
                            DType::Float64, DType::Int64,   DType::Complex64, DType::Complex128, DType::UInt64,
                            DType::Bool,    DType::Float32, DType::Int32};
    int turn = 0;
    for (const char* f : {"cumsum", "cumprod", "nancumsum", "nancumprod"})
        for (const char* form : {"", ", axis=-1", ", axis=0"})
            for (bool strided : {false, true}) {
                const DType t = dtypes[turn++ % std::size(dtypes)];
                const std::string text = std::string(f) + "(a" + form + ")";
                const cg::Emitted e = emitted(text, {40, 3, 50}, t, strided);
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

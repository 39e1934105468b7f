// Compaction kernels (boolean-mask selection, b[m]) without a GPU: the golden CUDA source of the
// two entry points (jx_count, jx_scatter), that every selection compiles to CUBIN for sm_90 with
// NVRTC (the toolkit's library, no driver), and that a reduction of a selection emits no
// compaction kernel at all (a masked reduction). Running them is tests/api/test_mask_gpu.cpp.
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

// `text` over arrays a and b of dtype t and shape `shape`, and a bool m of shape `ms`.
cg::Emitted emitted(const std::string& text, const Shape& shape, DType t = DType::Float32, Shape ms = {}) {
    dsl::Binding a, m;
    a.kind = m.kind = dsl::Binding::Kind::Array;
    a.dtype = t;
    a.shape = shape;
    a.strides = contiguous_strides(shape);
    m.dtype = DType::Bool;
    m.shape = ms.empty() ? shape : ms;
    m.strides = contiguous_strides(m.shape);
    const auto mod = syntax::parse(text);
    const ir::Program p = dsl::lower(
        mod, text,
        [&](std::string_view n) -> const dsl::Binding* {
            if (n == "a" || n == "b") return &a;
            return n == "m" ? &m : nullptr;
        },
        std::vector<std::string>{"a", "b", "m"});
    return cg::emit(p, ir::schedule(p), {});
}

std::string kernels_of(const cg::Emitted& e) {
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

TEST(CodegenGoldenCompact, SelectionByAPredicate) {
    const cg::Emitted e = emitted("b[(a > 0) & (b < 1)]", {1000});
    ASSERT_EQ(e.kernels.size(), 1u);
    const cg::KernelSource& k = e.kernels[0];
    EXPECT_EQ(k.launch.kind, cg::KernelKind::Compact);
    ASSERT_EQ(k.entries.size(), 2u);
    EXPECT_EQ(k.entries[cg::kCompactCount], "jx_count");
    EXPECT_EQ(k.entries[cg::kCompactScatter], "jx_scatter");
    EXPECT_GT(k.launch.workspace_bytes(), static_cast<std::size_t>(k.launch.max_blocks) * 8);
    expect_golden("compact_predicate", kernels_of(e));
}

TEST(CodegenGoldenCompact, RowsOfAMatrixAndTwoSelectionsByOneMask) {
    const cg::Emitted e = emitted("x = a[m]\ny = (a * 2)[m]", {64, 3}, DType::Float16, {64});
    ASSERT_EQ(e.kernels.size(), 1u);  // one pass for both
    expect_golden("compact_rows_half", kernels_of(e));
}

TEST(CodegenCompact, AReductionOfASelectionEmitsNoCompaction) {
    for (const char* text : {"sum(b[a > 0])", "mean(a[m])", "max(a[m])", "var(b[a > 0])"}) {
        SCOPED_TRACE(text);
        for (const auto& k : emitted(text, {100}).kernels) EXPECT_NE(k.launch.kind, cg::KernelKind::Compact);
    }
}

TEST(NvrtcCompilesCompact, EverySelectionCompilesToCubin) {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    struct Case {
        const char* text;
        DType t;
        Shape s, ms;
    };
    const Case cases[] = {
        {"a[a > 0]", DType::Float32, {1000}, {}}, {"b[(a > 0) & (b < 1)] * 2", DType::Float64, {17, 5}, {}},
        {"a[m]", DType::Int8, {40, 30, 2}, {40}}, {"x = a[m]\ny = a[m] + b[m]", DType::Complex128, {9}, {}},
        {"a[a != 0]", DType::Bool, {33}, {}},     {"(a + 1)[m]", DType::Float16, {8, 8}, {8, 8}},
        {"a[m]", DType::UInt64, {3, 4}, {3}}};
    for (const Case& c : cases) {
        const cg::Emitted e = emitted(c.text, c.s, c.t, c.ms);
        for (const auto& k : e.kernels) {
            try {
                const cuda::Image img = cuda::compile(k.source, k.name, co);
                EXPECT_TRUE(img.is_cubin) << c.text;
            } catch (const CompileError& err) {
                ADD_FAILURE() << c.text << " " << dtype_name(c.t) << ": NVRTC rejected stage " << k.stage << ":\n"
                              << err.log() << "\n"
                              << k.body;
            }
        }
    }
}

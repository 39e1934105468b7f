// String kernels without a GPU (issue 32): the golden CUDA source of string predicates over S, U
// and Arrow columns (element-wise, a reduction, a strided view, a selection), that each compiles
// to CUBIN for sm_90 with NVRTC (the toolkit's library, no driver), that a needle is a kernel
// parameter (its bytes never in the source: a new needle compiles no new kernel), and that the
// first tier's PTX writer leaves string programs to NVRTC. Running them is
// tests/api/test_strings_gpu.cpp.
#include "backend/cuda/cuda.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace {

using namespace jit;
namespace cg = jit::codegen;

// Bindings: s an S8 column, u a U4 column, t an Arrow string column (int32 offsets), l a
// large_string one, x float32; each of shape `shape` (C order) unless `strides` says otherwise.
ir::Plan plan_of(const std::string& text, const Shape& shape = {1000}, Strides strides = {}) {
    std::map<std::string, dsl::Binding, std::less<>> b;
    auto add = [&](const char* name, DType t, std::size_t item) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = t;
        x.itemsize = item;
        x.shape = shape;
        x.strides = strides.empty() ? contiguous_strides(shape) : strides;
        b.emplace(name, x);
    };
    add("s", DType::Bytes, 8);
    add("u", DType::Str, 16);
    add("t", DType::Utf8, 4);
    add("l", DType::Utf8, 8);
    add("x", DType::Float32, 4);
    dsl::Bindings bs;
    bs.lookup = [&b](std::string_view n) -> const dsl::Binding* {
        auto it = b.find(n);
        return it == b.end() ? nullptr : &it->second;
    };
    return dsl::plan(text, bs, dsl::Limits{});
}

cg::Emitted emitted(const std::string& text, const Shape& shape = {1000}, Strides strides = {},
                    cg::EmitOptions o = {}) {
    const ir::Plan p = plan_of(text, shape, std::move(strides));
    return cg::emit(p.program, p.schedule, o);
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

void expect_compiles(const cg::Emitted& e) {
    ASSERT_FALSE(e.kernels.empty());
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    for (const auto& k : e.kernels) {
        try {
            cuda::Image img = cuda::compile(k.source, k.name, co);
            EXPECT_TRUE(img.is_cubin);
            EXPECT_FALSE(img.data.empty());
        } catch (const CompileError& err) {
            ADD_FAILURE() << "NVRTC rejected stage " << k.stage << ":\n" << err.log() << "\n" << k.body;
        }
    }
}

}  // namespace

TEST(CodegenGoldenStrings, ContainsOverAnArrowColumn) {
    const cg::Emitted e = emitted("contains(t, 'needle')");
    ASSERT_EQ(e.kernels.size(), 1u);
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::Flat);
    EXPECT_EQ(e.kernels[0].launch.vec, 1);  // strings are read through their accessor
    expect_golden("strings_contains_arrow", kernels_of(e));
}

TEST(CodegenGoldenStrings, FusedWithNumbersAndAReduction) {
    // A mask of S and U predicates, a where over numbers and its sum: one kernel.
    const cg::Emitted e = emitted("sum(where((s == b'oslo') | startswith(u, 'ab'), x * 2, 0))");
    ASSERT_EQ(e.kernels.size(), 1u);
    EXPECT_EQ(e.kernels[0].launch.kind, cg::KernelKind::ReduceAll);
    expect_golden("strings_sum_where", kernels_of(e));
}

TEST(CodegenGoldenStrings, StridedLargeStringsAndASelection) {
    const cg::Emitted strided = emitted("find(l, 'q') + str_len(l)", {20, 30}, {1, 20});
    ASSERT_EQ(strided.kernels.size(), 1u);
    EXPECT_NE(strided.kernels[0].launch.kind, cg::KernelKind::Tiled);  // never staged through shared memory
    const cg::Emitted selected = emitted("x[endswith(s, b'x') & (t < u)]");
    ASSERT_EQ(selected.kernels.size(), 1u);
    EXPECT_EQ(selected.kernels[0].launch.kind, cg::KernelKind::Compact);
    expect_golden("strings_strided_and_selected", kernels_of(strided) + kernels_of(selected));
}

TEST(CodegenStrings, EveryKindCompilesToCubin) {
    expect_compiles(emitted("contains(t, 'needle')"));
    expect_compiles(emitted("(s == b'a') & (u != 'b') & (t >= 'c') & (l < 'd') & (u == t) & (t < u)"));
    expect_compiles(emitted("find(s, b'x') + find(u, 'y') + find(t, 'z') + find(l, u) + find(u, t)"));
    expect_compiles(emitted("str_len(s) + str_len(u) + str_len(t) + str_len(l)"));
    expect_compiles(emitted("startswith(t, u) | endswith(u, l) | contains(u, t)"));
    expect_compiles(emitted("sum(contains(s, b'x'))"));
    expect_compiles(emitted("sum(str_len(t), axis=1)", {10, 100}));
    expect_compiles(emitted("x[t == 'x']"));
    expect_compiles(emitted("cumsum(s > b'm')"));
    expect_compiles(emitted("median(where(contains(t, 'a'), x, 0))"));
    expect_compiles(emitted("find(l, 'q') + str_len(l)", {20, 30}, {1, 20}));
    cg::EmitOptions strided;
    strided.force_strided = true;
    expect_compiles(emitted("contains(t, 'needle') & (s < b'm')", {1000}, {}, strided));
    cg::EmitOptions scalar;
    scalar.scalar_only = true;
    expect_compiles(emitted("x * (u == 'a')", {1000}, {}, scalar));
}

TEST(CodegenStrings, ANeedleIsAParameterNotText) {
    // The needle's bytes never reach the source, and another needle gives the same kernel.
    const cg::Emitted a = emitted("contains(t, 'needle_text_aaaa') | (s == b'zz_marker')");
    const cg::Emitted b = emitted("contains(t, 'other') | (s == b'qq')");
    ASSERT_EQ(a.kernels.size(), 1u);
    EXPECT_EQ(a.kernels[0].source.find("needle_text_aaaa"), std::string::npos);
    EXPECT_EQ(a.kernels[0].source.find("zz_marker"), std::string::npos);
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.kernels[0].source, b.kernels[0].source);
    int texts = 0;
    for (const cg::Param& p : a.kernels[0].params) texts += p.kind == cg::Param::Kind::Text;
    EXPECT_EQ(texts, 2);
    // A needle of hostile text (quotes, a comment's end, a directive) is data all the same.
    const cg::Emitted h = emitted("contains(t, '\"); } #include <x> /* */ \\n __global__')");
    EXPECT_EQ(h.key, emitted("contains(t, 'n')").key);
}

TEST(CodegenStrings, ThePtxTierLeavesStringsToNvrtc) {
    cg::EmitOptions scalar;
    scalar.scalar_only = true;
    const cg::Emitted e = emitted("x * (t == 'a')", {1000}, {}, scalar);
    ASSERT_EQ(e.kernels.size(), 1u);
    const ir::Plan p = plan_of("x * (t == 'a')");
    EXPECT_FALSE(cg::emit_ptx(p.program, e.kernels[0], 90).has_value());
}

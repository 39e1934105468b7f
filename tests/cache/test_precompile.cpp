// `jitexpr precompile` stores kernels under exactly the keys the runtime will look up, and the
// keys name what a kernel computes, not what its variables are called or what scalars hold.
// NVRTC only: no GPU or driver needed.
#include "backend/cache/cache.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"
#include "layout_programs.hpp"
#include "test_dir.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace jit;

dsl::Binding array(DType t, Shape shape) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = t;
    b.strides = contiguous_strides(shape);
    b.shape = std::move(shape);
    return b;
}

dsl::Binding scalar(DType t) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Scalar;
    b.dtype = t;
    return b;
}

// The kernels the CUDA backend prepares first for a program (dsl::plan within the CUDA limits,
// cuda::build_kernels' full tier with 256-thread blocks), and the module cache's text key per
// kernel. Every name of `env` is bound, as in a runtime whose environment holds them (an
// assigned name that is bound is written in place).
std::vector<codegen::KernelSource> kernels(const std::string& text, const std::map<std::string, dsl::Binding>& env) {
    const ir::Plan p = dsl::plan(text, dsl::bindings_of(env), cuda::limits());
    return cuda::build_kernels(p, {}, cuda::Tier::Full).kernels;
}

std::vector<std::string> keys(const std::string& text, const std::map<std::string, dsl::Binding>& env, int major = 9,
                              int minor = 0) {
    cuda::CompileOptions co;
    co.cc_major = major;
    co.cc_minor = minor;
    std::vector<std::string> out;
    for (const auto& k : kernels(text, env)) out.push_back(cuda::ModuleCache::disk_key(k, co));
    return out;
}

// Runs the jitexpr tool with `args`: its exit status (-1 if it did not exit) and what it printed.
// Under ASan the tool is leak-checked like every other process (cmake/sanitizer_options.cpp
// says why its exit-time tracer once crashed here).
struct ToolRun {
    int rc = -1;
    std::string output;
};
ToolRun run_tool(const std::string& args) {
    const std::string cmd = std::string(JITEXPR_TOOL) + " " + args + " 2>&1";
    ToolRun r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
    const int status = ::pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

// The disk cache `jitexpr precompile --cache-dir dir` filled, read without the environment.
cache::DiskCache open_disk(const std::string& dir) {
    cache::DiskCacheOptions o;
    o.dir = dir;
    o.use_environment = false;
    return cache::DiskCache(o);
}

// Writes `programs` to dir/programs.txt and precompiles it for sm_90 into dir/cache; the exit status.
int precompile_sm90(const TempDir& dir, const std::string& programs) {
    {
        std::ofstream f(dir / "programs.txt");
        f << programs;
    }
    const ToolRun r = run_tool("precompile " + dir / "programs.txt" + " --arch sm_90 --cache-dir " + dir / "cache");
    if (r.rc != 0) ADD_FAILURE() << "jitexpr precompile exited " << r.rc << ":\n" << r.output;
    return r.rc;
}

TEST(Precompile, StoresEveryKernelUnderTheKeyTheRuntimeLooksUp) {
    TempDir dir;
    const std::string cache_dir = dir / "cache";
    ASSERT_EQ(precompile_sm90(dir,
                              "# two programs\n"
                              "c = a*2 + b ; a: float32[N], b: float32[N]\n"
                              "\n"
                              "m = x - mean(x, axis=0) ; x: float64[100, 7]\n"),
              0);

    // The symbolic N: any size gives the same kernels, so the runtime's key for 1000 elements.
    std::vector<std::string> expected =
        keys("c = a*2 + b", {{"a", array(DType::Float32, {1000})}, {"b", array(DType::Float32, {1000})}});
    const auto second = keys("m = x - mean(x, axis=0)", {{"x", array(DType::Float64, {100, 7})}});
    ASSERT_EQ(second.size(), 2u);  // the reduction, then the subtraction
    expected.insert(expected.end(), second.begin(), second.end());

    cache::DiskCache disk = open_disk(cache_dir);
    EXPECT_EQ(disk.entries().size(), expected.size());
    for (const auto& k : expected) {
        auto bytes = disk.get(cache::digest(k));
        ASSERT_TRUE(bytes.has_value()) << k;
        EXPECT_EQ(bytes->front(), 'C') << "a CUBIN image for sm_90";
    }
}

TEST(Precompile, TransposedDeclarationStoresTheContiguousKernelTheRuntimeLooksUp) {
    TempDir dir;
    const std::string cache_dir = dir / "cache";
    ASSERT_EQ(precompile_sm90(dir, "y = x*2 + 1 ; x: float32[N, M].T\n"), 0);
    // The runtime runs a.transpose() of a C-contiguous (300, 1000) array, its only array, seen
    // in its memory's order (run/order.hpp): the program over a C-contiguous (300, 1000) one.
    const auto k = kernels("y = x*2 + 1", {{"x", array(DType::Float32, {300, 1000})}});
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].launch.kind, codegen::KernelKind::Flat);
    const auto expected = keys("y = x*2 + 1", {{"x", array(DType::Float32, {300, 1000})}});
    cache::DiskCache disk = open_disk(cache_dir);
    ASSERT_EQ(disk.entries().size(), 1u);
    EXPECT_TRUE(disk.get(cache::digest(expected[0])).has_value());
}

TEST(Precompile, TransposedBesideACOrderedDeclarationStoresTheTiledKernelTheRuntimeLooksUp) {
    TempDir dir;
    const std::string cache_dir = dir / "cache";
    ASSERT_EQ(precompile_sm90(dir, "y = x*2 + z ; x: float32[N, M].T, z: float32[N, M]\n"), 0);
    // What the runtime sees for a.transpose() of a C-contiguous (300, 1000) array beside a
    // C-contiguous (1000, 300) one.
    dsl::Binding x = array(DType::Float32, {1000, 300});
    x.strides = {1, 1000};
    const std::map<std::string, dsl::Binding> env{{"x", x}, {"z", array(DType::Float32, {1000, 300})}};
    const auto k = kernels("y = x*2 + z", env);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].launch.kind, codegen::KernelKind::Tiled);
    const auto expected = keys("y = x*2 + z", env);
    cache::DiskCache disk = open_disk(cache_dir);
    ASSERT_EQ(disk.entries().size(), 1u);
    EXPECT_TRUE(disk.get(cache::digest(expected[0])).has_value());
}

TEST(Precompile, SteppedAndReversedViewsStoreTheKernelsTheRuntimeLooksUp) {
    TempDir dir;
    const std::string cache_dir = dir / "cache";
    ASSERT_EQ(precompile_sm90(dir,
                              "y = x*2 + 1 ; x: float32[N, M][:, ::2]\n"
                              "y = x - 1 ; x: float64[N, M][::-1]\n"),
              0);
    // What the runtime sees for a[:, ::2] of a C-contiguous (1000, 300) float32 array and
    // a[::-1] of a (40, 70) float64 one.
    dsl::Binding stepped = array(DType::Float32, {1000, 150});
    stepped.strides = {300, 2};
    dsl::Binding reversed = array(DType::Float64, {40, 70});
    reversed.strides = {-70, 1};
    cache::DiskCache disk = open_disk(cache_dir);
    for (const auto& [text, x] :
         {std::pair{std::string("y = x*2 + 1"), stepped}, std::pair{std::string("y = x - 1"), reversed}}) {
        const auto k = kernels(text, {{"x", x}});
        ASSERT_EQ(k.size(), 1u);
        EXPECT_EQ(k[0].launch.kind, codegen::KernelKind::Strided) << text;
        const auto expected = keys(text, {{"x", x}});
        EXPECT_TRUE(disk.get(cache::digest(expected[0])).has_value()) << text;
    }
    EXPECT_EQ(disk.entries().size(), 2u);
}

TEST(Precompile, ADeclaredNonContiguousTargetStoresTheKernelThatWritesInPlace) {
    TempDir dir;
    const std::string cache_dir = dir / "cache";
    ASSERT_EQ(precompile_sm90(dir, "c = a + 1 ; a: float32[N, M], c: float32[N, M].T\n"), 0);
    // What the runtime sees for run("c = a + 1", env) with a C-contiguous (1000, 300) `a` and
    // `c` the transpose of a (300, 1000) array: `c` is written in place through its strides.
    dsl::Binding a = array(DType::Float32, {1000, 300});
    dsl::Binding c = array(DType::Float32, {1000, 300});
    c.strides = {1, 1000};
    const auto expected = keys("c = a + 1", {{"a", a}, {"c", c}});
    ASSERT_EQ(expected.size(), 1u);
    EXPECT_NE(expected, keys("c = a + 1", {{"a", a}, {"c", array(DType::Float32, {1000, 300})}}));
    cache::DiskCache disk = open_disk(cache_dir);
    EXPECT_TRUE(disk.get(cache::digest(expected[0])).has_value());
}

// Precompile and preparation emit through cuda::build_kernels; precompile asks its store for the
// keys of the kernels preparation loads first, for every layout class (the GPU side of this is
// ModuleCacheGpu.PreparationFindsEveryKernelPrecompileStored).
TEST(Precompile, AsksForTheKeysOfTheKernelsPreparationLoadsForEveryLayoutClass) {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    std::set<codegen::KernelKind> kinds;
    for (const auto& lp : jxtest::layout_programs()) {
        const ir::Plan plan = dsl::plan(lp.text, dsl::bindings_of(lp.env), cuda::limits());
        std::vector<std::string> prepared;
        for (const auto& k : cuda::build_kernels(plan, {}, cuda::Tier::Full).kernels) {
            prepared.push_back(cuda::ModuleCache::disk_key(k, co));
            kinds.insert(k.launch.kind);
        }
        // precompile asks from its worker threads, one at a time but in no fixed order; what it
        // reports is in the kernels' order.
        std::multiset<std::string> asked;
        cuda::ImageStore store;
        store.get = [&](const std::string& key) -> std::optional<std::string> {
            asked.insert(key);
            return std::string("Cimage");  // present: nothing is compiled
        };
        const auto out = cuda::precompile(plan, co, store);
        std::vector<std::string> reported;
        for (const auto& k : out) reported.push_back(k.disk_key);
        EXPECT_EQ(asked, std::multiset<std::string>(prepared.begin(), prepared.end())) << lp.text;
        EXPECT_EQ(reported, prepared) << lp.text;
    }
    EXPECT_EQ(kinds, (std::set<codegen::KernelKind>{codegen::KernelKind::Flat, codegen::KernelKind::Strided,
                                                    codegen::KernelKind::Tiled, codegen::KernelKind::ReduceAll,
                                                    codegen::KernelKind::ReduceAxis}));
}

TEST(Precompile, RejectsAStepOfZeroAndTooManySlices) {
    TempDir dir;
    for (const char* decl :
         {"x: float32[N][::0]", "x: float32[N][:, :]", "x: float32[N][1:2]", "x: float32[N, M][::2].T"}) {
        {
            std::ofstream f(dir / "bad.txt");
            f << "y = x + 1 ; " << decl << "\n";
        }
        const ToolRun r = run_tool("precompile " + dir / "bad.txt" + " --arch sm_90 --cache-dir " + (dir / "c"));
        EXPECT_EQ(r.rc, 1) << decl << "\n" << r.output;
    }
}

TEST(Precompile, RejectsAMalformedDeclarationWithItsLine) {
    TempDir dir;
    {
        std::ofstream f(dir / "bad.txt");
        f << "c = a + 1 ; a: float32[N]\nd = a + 1 ; a: notatype[3]\n";
    }
    EXPECT_EQ(run_tool("precompile " + dir / "bad.txt" + " --arch sm_90 --cache-dir " + dir / "cache").rc, 1);
    EXPECT_EQ(run_tool("precompile").rc, 2);
}

// What `cd DIR && jitexpr ARGS` prints to stdout and stderr, and its exit status.
std::pair<std::string, int> tool_output(const TempDir& dir, const std::string& args) {
    const std::string cmd = "cd " + dir / "" + " && " + std::string(JITEXPR_TOOL) + " " + args + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (f && std::fgets(buf, sizeof buf, f)) out += buf;
    const int status = f ? pclose(f) : -1;
    return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(Precompile, AProgramThatDoesNotCheckStoresNothingAndQuotesItsLineOfTheFile) {
    // The documented behaviour (docs/cache.md): every line is checked before anything is
    // compiled, so the good lines before the bad one are not stored either.
    TempDir dir;
    {
        std::ofstream f(dir / "pre.txt");
        f << "c = a*2 + b ; a: float32[N], b: float32[N]\n"
             "# a comment\n"
             "c = a + q ; a: float32[N]\n";
    }
    const auto [out, rc] = tool_output(dir, "precompile pre.txt --arch sm_90 --cache-dir cache");
    EXPECT_EQ(rc, 1);
    std::ifstream golden(std::string(JITEXPR_TEST_DATA) + "/golden/precompile_unknown_name.expect");
    std::stringstream want;
    want << golden.rdbuf();
    EXPECT_EQ(out, want.str());
    EXPECT_TRUE(open_disk(dir / "cache").entries().empty());
}

TEST(KernelKeys, RenamedVariablesGiveTheSameSourceAndKey) {
    const auto a = kernels("x*2+y", {{"x", array(DType::Float32, {64})}, {"y", array(DType::Float32, {64})}});
    const auto b = kernels("a*2+b", {{"a", array(DType::Float32, {64})}, {"b", array(DType::Float32, {64})}});
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(a[0].source, b[0].source);
    EXPECT_EQ(keys("x*2+y", {{"x", array(DType::Float32, {64})}, {"y", array(DType::Float32, {64})}}),
              keys("a*2+b", {{"a", array(DType::Float32, {64})}, {"b", array(DType::Float32, {64})}}));
}

TEST(KernelKeys, ArraySizeWithinALayoutClassDoesNotChangeTheKey) {
    EXPECT_EQ(keys("x*2+y", {{"x", array(DType::Float32, {64})}, {"y", array(DType::Float32, {64})}}),
              keys("x*2+y", {{"x", array(DType::Float32, {100000})}, {"y", array(DType::Float32, {100000})}}));
}

TEST(KernelKeys, ARuntimeScalarIsAParameterNotPartOfTheKey) {
    // The scalar's value is given at launch; only its (weak) type reaches the program.
    const std::map<std::string, dsl::Binding> env = {{"x", array(DType::Float32, {64})}, {"s", scalar(DType::Float64)}};
    const auto k = kernels("x*s", env);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(keys("x*s", env), keys("x*t", {{"x", array(DType::Float32, {64})}, {"t", scalar(DType::Float64)}}));
    bool scalar_param = false;
    for (const auto& p : k[0].params) scalar_param = scalar_param || p.kind == codegen::Param::Kind::Scalar;
    EXPECT_TRUE(scalar_param) << "the scalar's value is a kernel parameter";
}

TEST(KernelKeys, DifferentDtypesOrArchsGiveDifferentKeys) {
    const auto f32 = keys("x*2+y", {{"x", array(DType::Float32, {64})}, {"y", array(DType::Float32, {64})}});
    const auto f64 = keys("x*2+y", {{"x", array(DType::Float64, {64})}, {"y", array(DType::Float64, {64})}});
    const auto sm80 = keys("x*2+y", {{"x", array(DType::Float32, {64})}, {"y", array(DType::Float32, {64})}}, 8, 0);
    EXPECT_NE(f32, f64);
    EXPECT_NE(f32, sm80);
}

// ---- the memory level of the module cache is bounded (no device needed: a failed compile is
// not cached, and the bound is read back from the stats)
TEST(ModuleCacheBound, CapacityComesFromTheConstructorAndCanChange) {
    cuda::ModuleCache cache(3);
    EXPECT_EQ(cache.stats().capacity, 3u);
    cache.set_capacity(1);
    EXPECT_EQ(cache.stats().capacity, 1u);
    EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ModuleCacheBound, AFailedCompileIsNotCachedAndIsRetried) {
    cuda::ModuleCache cache(4);
    codegen::KernelSource k;
    k.name = "jx_broken";
    k.source = "this is not CUDA";
    k.hash = codegen::source_hash(k.source);
    cuda::CompileOptions co;
    EXPECT_THROW(cache.get(k, co), CompileError);
    EXPECT_THROW(cache.get(k, co), CompileError);
    EXPECT_EQ(cache.stats().entries, 0u);
    EXPECT_EQ(cache.stats().compiles, 0u);
}

}  // namespace

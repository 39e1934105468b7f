// Flat kernels written as PTX (codegen/ptx.cpp): which programs get one, and that nvJitLink
// assembles every one to CUBIN for sm_90, linked with the device functions it calls (no GPU or
// driver needed). Whether they compute what
// the NVRTC kernels compute is GpuPtxTier.* (tests/api/test_pipeline_gpu.cpp) on a GPU.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "backend/cuda/tiers.hpp"
#include "codegen/codegen.hpp"
#include "dsl/plan.hpp"

#include <gtest/gtest.h>

#include <pthread.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace jit;
namespace cg = jit::codegen;

// The program as the runtime lowers it for 1-D arrays of `n` elements (a `float`/`int`/`bool`
// scalar where the dtype says so), and its scalar-only kernels (the first tier).
struct Lowered {
    ir::Program program;
    std::vector<cg::KernelSource> kernels;
};
Lowered lower(const std::string& text, const std::map<std::string, dsl::Binding>& env) {
    const ir::Plan plan = dsl::plan(text, dsl::bindings_of(env), cuda::limits());
    Lowered l;
    l.program = plan.program;
    l.kernels = cuda::build_kernels(plan, {}, cuda::Tier::ScalarOnly).kernels;
    return l;
}

dsl::Binding array(DType t, std::int64_t n) {
    dsl::Binding b;
    b.kind = dsl::Binding::Kind::Array;
    b.dtype = t;
    b.shape = {n};
    b.strides = {1};
    return b;
}

Lowered lower(const std::string& text, const std::map<std::string, DType>& vars, std::int64_t n = 1000,
              const std::map<std::string, DType>& scalars = {}) {
    std::map<std::string, dsl::Binding> env;
    for (const auto& [name, t] : vars) env[name] = array(t, n);
    for (const auto& [name, t] : scalars) {
        dsl::Binding b;
        b.kind = dsl::Binding::Kind::Scalar;
        b.dtype = t;
        env[name] = b;
    }
    return lower(text, env);
}

std::optional<cg::KernelSource> ptx_of(const std::string& text, const std::map<std::string, DType>& vars,
                                       const std::map<std::string, DType>& scalars = {}) {
    const Lowered l = lower(text, vars, 1000, scalars);
    if (l.kernels.size() != 1) return std::nullopt;
    return cg::emit_ptx(l.program, l.kernels[0], 90);
}

cuda::CompileOptions sm90() {
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    return co;
}

// Assembled (and linked with the device functions it calls) as the module cache does.
void expect_assembles(const cg::KernelSource& k, cuda::ModuleCache* cache = nullptr) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    cuda::ModuleCache own;
    try {
        const cuda::Image img = (cache ? *cache : own).build(k, sm90());
        EXPECT_TRUE(img.is_cubin);
        EXPECT_FALSE(img.data.empty());
    } catch (const CompileError& e) {
        ADD_FAILURE() << e.what() << "\n" << e.log() << "\n" << k.source;
    }
}

const DType F32 = DType::Float32, F64 = DType::Float64, I32 = DType::Int32, I64 = DType::Int64, B = DType::Bool;

struct Case {
    const char* text;
    std::map<std::string, DType> vars;
    std::map<std::string, DType> scalars;
};

// Programs the PTX tier covers: every op and cast it writes, each dtype it takes.
const std::vector<Case>& covered() {
    static const std::vector<Case> c = {
        {"a*2 + b", {{"a", F32}, {"b", F32}}, {}},
        {"a*2 + b", {{"a", F64}, {"b", F64}}, {}},
        {"a*2 + b", {{"a", I32}, {"b", I32}}, {}},
        {"a*2 + b", {{"a", I64}, {"b", I64}}, {}},
        {"a/b - a*a", {{"a", F32}, {"b", F32}}, {}},
        {"a/b", {{"a", I32}, {"b", I64}}, {}},  // true division: both cast to float64
        {"-a + abs(b) + square(a)", {{"a", I64}, {"b", I64}}, {}},
        {"-a + abs(b) + square(a)", {{"a", F64}, {"b", F64}}, {}},
        {"where(a > b, a, -b)", {{"a", F32}, {"b", F32}}, {}},
        {"where(c, a, b)", {{"a", I32}, {"b", I32}, {"c", B}}, {}},
        {"where(c, a, b)", {{"a", B}, {"b", B}, {"c", B}}, {}},
        {"maximum(a, b) + minimum(a, b)*3", {{"a", F32}, {"b", F32}}, {}},
        {"maximum(a, b) - minimum(a, b)", {{"a", I64}, {"b", I64}}, {}},
        {"maximum(a, b) | minimum(a, b)", {{"a", B}, {"b", B}}, {}},
        {"clip(a, -1, 1)", {{"a", F64}}, {}},
        {"sqrt(abs(a)) + floor(b) - ceil(a) + trunc(b) + rint(a) + round(b)", {{"a", F32}, {"b", F32}}, {}},
        {"sqrt(a) + floor(a)", {{"a", F64}}, {}},
        {"(a < b) & (b != 0) | ~(a == b) ^ (a >= b)", {{"a", F32}, {"b", F32}}, {}},
        {"(a <= b) | (a > b) | (a != b)", {{"a", I32}, {"b", I64}}, {}},
        {"(c == d) | (c != d)", {{"c", B}, {"d", B}}, {}},
        {"isnan(a) | isinf(b) | signbit(a) | isfinite(b)", {{"a", F32}, {"b", F64}}, {}},
        {"(a & b) | (a ^ ~b)", {{"a", I32}, {"b", I32}}, {}},
        {"(c and d) or not c", {{"c", B}, {"d", B}}, {}},
        {"c + d", {{"c", B}, {"d", B}}, {}},
        {"int32(a) + int64(b)", {{"a", F32}, {"b", F64}}, {}},
        {"float32(a) + float64(b)", {{"a", I64}, {"b", I32}}, {}},
        {"float32(a) * 2", {{"a", F64}}, {}},
        {"bool(a) | bool(b)", {{"a", F32}, {"b", I64}}, {}},
        {"int32(c) + float64(d)", {{"c", B}, {"d", B}}, {}},
        {"int32(a)", {{"a", I64}}, {}},
        {"a * s + t", {{"a", F32}}, {{"s", F64}, {"t", DType::Int64}}},
        {"where(s, a, 0)", {{"a", I64}}, {{"s", B}}},
        {"x = a*2\ny = x + b\nx - y", {{"a", F32}, {"b", F32}}, {}},
    };
    return c;
}

TEST(PtxTier, CoveredProgramsGetAPtxKernelThatAssembles) {
    for (const Case& c : covered()) {
        SCOPED_TRACE(c.text);
        const Lowered l = lower(c.text, c.vars, 1000, c.scalars);
        ASSERT_FALSE(l.kernels.empty());
        for (const auto& k : l.kernels) {
            auto p = cg::emit_ptx(l.program, k, 90);
            ASSERT_TRUE(p.has_value()) << k.body;
            EXPECT_TRUE(p->ptx);
            EXPECT_EQ(p->params.size(), k.params.size());
            EXPECT_EQ(p->entries, k.entries);
            EXPECT_NE(p->hash, k.hash);
            expect_assembles(*p);
        }
    }
}

// uint64 against signed integers compares exactly (issue 16): lowered to a sign test and a
// uint64 comparison, which both tiers must compile: NVRTC always, the PTX tier where it covers
// the program.
TEST(MixedSignComparison, KernelsCompileWithNvrtcAndAssembleAsPtx) {
    const std::map<std::string, DType> vars{{"a", DType::UInt64}, {"b", DType::Int64}, {"c", DType::Int32}};
    for (const char* text : {"(a < b) | (a == b) | (b >= a)", "(a != c) & (c > a)", "where(a <= b, a, b)"}) {
        SCOPED_TRACE(text);
        const Lowered l = lower(text, vars, 1000);
        ASSERT_FALSE(l.kernels.empty());
        for (const auto& k : l.kernels) {
            try {
                const cuda::Image img = cuda::compile(k.source, k.name, sm90());
                EXPECT_FALSE(img.data.empty());
            } catch (const CompileError& e) {
                ADD_FAILURE() << e.log() << "\n" << k.body;
            }
            if (auto p = cg::emit_ptx(l.program, k, 90)) expect_assembles(*p);
        }
        for (const ir::Node& n : l.program.nodes) {  // no comparison rounds through float64
            if (ir::info(n.op).rule == ir::Rule::Compare && n.kind == ir::NodeKind::Op) {
                EXPECT_NE(l.program.node(n.args[0]).dtype, DType::Float64) << ir::dump(l.program);
            }
        }
    }
}

TEST(PtxTier, ABroadcastElementIsReadOnceBeforeTheLoop) {
    const Lowered l = lower("a + b", {{"a", array(F32, 1000)}, {"b", array(F32, 1)}});
    ASSERT_EQ(l.kernels.size(), 1u);
    auto x = cg::emit_ptx(l.program, l.kernels[0], 90);
    ASSERT_TRUE(x.has_value());
    const std::string& s = x->source;
    const auto loop = s.find("$Lloop:");
    ASSERT_NE(loop, std::string::npos);
    // Two loads in all: the broadcast one before the loop, a's inside it.
    EXPECT_EQ(s.find("ld.global.f32", loop), s.rfind("ld.global.f32"));
    EXPECT_LT(s.find("ld.global.f32"), loop);
    expect_assembles(*x);
}

TEST(PtxTier, ArithmeticIsRoundedExplicitlySoNothingIsContracted) {
    auto k = ptx_of("a*b + c", {{"a", F32}, {"b", F32}, {"c", F32}});
    ASSERT_TRUE(k.has_value());
    EXPECT_NE(k->source.find("mul.rn.f32"), std::string::npos);
    EXPECT_NE(k->source.find("add.rn.f32"), std::string::npos);
    EXPECT_EQ(k->source.find("fma"), std::string::npos);
}

// Found on the H200 by GpuPtxTier: a 64-bit cvt.rzi gives the most negative value for NaN, and
// a float negation feeding an integer-typed select lost a NaN's sign.
TEST(PtxTier, FloatToIntegerCastsTestForNaN) {
    auto k = ptx_of("int64(a)", {{"a", F64}});
    ASSERT_TRUE(k.has_value());
    const auto cvt = k->source.find("cvt.rzi.s64.f64");
    ASSERT_NE(cvt, std::string::npos);
    EXPECT_NE(k->source.find("setp.nan.f64", cvt), std::string::npos);
    expect_assembles(*k);
}

TEST(PtxTier, FloatSelectsAreTypedAsFloats) {
    auto k = ptx_of("where(a > b, a, -b) + maximum(a, b)", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(k.has_value());
    EXPECT_NE(k->source.find("selp.f32"), std::string::npos);
    EXPECT_EQ(k->source.find("selp.b32"), std::string::npos);
}

TEST(PtxTier, OpsWithoutExactInstructionsCallLinkedDeviceFunctions) {
    const Case calls[] = {
        {"sin(a)", {{"a", F32}}, {}},
        {"where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", {{"a", F32}, {"b", F32}}, {}},
        {"tanh(a) + log1p(abs(b)) + arctan2(a, b) + hypot(a, b)", {{"a", F64}, {"b", F64}}, {}},
        {"a // b + a % b", {{"a", I32}, {"b", I32}}, {}},
        {"a // b + a % b", {{"a", I64}, {"b", I64}}, {}},
        {"a % b", {{"a", F64}, {"b", F64}}, {}},
        {"a ** b", {{"a", F32}, {"b", F32}}, {}},
        {"a ** 3", {{"a", I64}}, {}},
        {"a / b + sqrt(a)", {{"a", F32}, {"b", F32}}, {}},  // IEEE div and sqrt: see the next test
        {"sqrt(a) / b", {{"a", F64}, {"b", F64}}, {}},
    };
    cuda::ModuleCache cache;
    for (const Case& c : calls) {
        SCOPED_TRACE(c.text);
        auto k = ptx_of(c.text, c.vars, c.scalars);
        ASSERT_TRUE(k.has_value());
        ASSERT_FALSE(k->links.empty());
        for (const auto& f : k->links) {
            EXPECT_TRUE(f.relocatable);
            EXPECT_EQ(f.entries.size(), 1u);
            EXPECT_NE(k->source.find("call (jxr), " + f.entries[0] + ","), std::string::npos);
            EXPECT_NE(k->source.find("// links " + f.entries[0] + " " + f.key), std::string::npos);
            EXPECT_NE(f.source.find("return jx::op::"), std::string::npos);
        }
        expect_assembles(*k, &cache);
    }
}

// ptxas writes div.rn and sqrt.rn out with their slow paths, several milliseconds of assembly
// for every kernel that has one; a call of the (once compiled) device function costs far less.
// So does a mean's final division. A group's count is a shift, not a 64-bit division.
TEST(PtxTier, DivisionSquareRootAndAMeansCountAreCallsOrShiftsNotInlineRoutines) {
    for (const char* text : {"a / b", "sqrt(a) + b", "mean(a * b)", "sum(a * b)"})
        for (const DType t : {F32, F64}) {
            SCOPED_TRACE(std::string(text) + " " + std::string(dtype_name(t)));
            auto k = ptx_of(text, {{"a", t}, {"b", t}});
            ASSERT_TRUE(k.has_value());
            EXPECT_EQ(k->source.find("div."), std::string::npos);
            EXPECT_EQ(k->source.find("sqrt."), std::string::npos);
        }
    auto m = ptx_of("mean(a)", {{"a", F32}});
    ASSERT_TRUE(m.has_value());
    ASSERT_EQ(m->links.size(), 1u);
    // The mean's division: all of warp 0 calls it (call.uni, cheaper for ptxas); an element's
    // division is a plain call, as a Flat kernel's last warp may be partly out of range.
    EXPECT_NE(m->source.find("call.uni (jxr), " + m->links[0].entries[0] + ","), std::string::npos);
    auto d = ptx_of("a / b", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(d.has_value());
    EXPECT_NE(d->source.find("call (jxr), "), std::string::npos);
    EXPECT_EQ(d->source.find("call.uni"), std::string::npos);
}

TEST(PtxTier, ADeviceFunctionIsCompiledOnceForEveryKernelThatCallsIt) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    auto x = ptx_of("sin(a) * 2", {{"a", F32}});
    auto y = ptx_of("sin(a) + b", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(x && y);
    ASSERT_EQ(x->links.size(), 1u);
    EXPECT_EQ(x->links[0].key, y->links[0].key);
    std::map<std::string, std::string> disk;
    cuda::ImageStore store;
    store.get = [&disk](const std::string& key) -> std::optional<std::string> {
        auto it = disk.find(key);
        if (it == disk.end()) return std::nullopt;
        return it->second;
    };
    store.put = [&disk](const std::string& key, const std::string& bytes) { disk[key] = bytes; };
    cuda::ModuleCache first;
    first.set_image_store(store);
    first.build(*x, sm90());
    first.build(*y, sm90());
    EXPECT_EQ(first.stats().compiles, 1u);  // the function; the kernels are only assembled
    EXPECT_EQ(disk.size(), 1u);
    EXPECT_NE(disk.begin()->first.find("|rdc=1"), std::string::npos);
    // A later process finds it in the image store.
    cuda::ModuleCache second;
    second.set_image_store(store);
    second.build(*y, sm90());
    EXPECT_EQ(second.stats().compiles, 0u);
    EXPECT_EQ(second.stats().disk_hits, 1u);
}

TEST(PtxTier, ADeviceFunctionBuiltForALaterStoreIsWrittenByAnotherThreadBeforeTheWaitReturns) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    auto x = ptx_of("sin(a) * 3", {{"a", F32}});
    ASSERT_TRUE(x.has_value());
    ASSERT_EQ(x->links.size(), 1u);
    std::mutex m;
    std::map<std::string, std::thread::id> writer;  // key -> the thread that wrote it
    cuda::ImageStore store;
    store.get = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    store.put = [&](const std::string& key, const std::string&) {
        std::lock_guard<std::mutex> lock(m);
        writer[key] = std::this_thread::get_id();
    };
    cuda::ModuleCache cache;
    cache.set_image_store(store);
    (void)cache.build(*x, sm90(), cuda::ModuleCache::Store::Later);
    cuda::tiers().wait();  // what Runtime::wait_for_compiles and exit wait for
    std::lock_guard<std::mutex> lock(m);
    ASSERT_EQ(writer.size(), 1u);
    EXPECT_NE(writer.begin()->first.find("|rdc=1"), std::string::npos);
    EXPECT_NE(writer.begin()->second, std::this_thread::get_id());
}

TEST(PtxTier, ADeviceFunctionBuiltForAKernelKeptInMemoryOnlyIsStillStored) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    auto x = ptx_of("cos(a) * 3", {{"a", F32}});
    ASSERT_TRUE(x.has_value());
    std::mutex m;
    std::map<std::string, std::string> disk;
    cuda::ImageStore store;
    store.get = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    store.put = [&](const std::string& key, const std::string& bytes) {
        std::lock_guard<std::mutex> lock(m);
        disk[key] = bytes;
    };
    cuda::ModuleCache cache;
    cache.set_image_store(store);
    (void)cache.build(*x, sm90(), cuda::ModuleCache::Store::No);
    cuda::tiers().wait();
    std::lock_guard<std::mutex> lock(m);
    ASSERT_EQ(disk.size(), 1u);  // the function (later kernels call it), not the kernel
    EXPECT_NE(disk.begin()->first.find("|rdc=1"), std::string::npos);
}

TEST(PtxTier, EveryDeviceFunctionOfASingleOpProgramIsInADeviceLibrary) {
    // Each op the grammar spells, over arrays of each dtype the PTX tier takes: whatever its
    // first-tier kernel calls must be prebuilt in one of the libraries.
    int calls = 0;
    for (const ir::OpInfo& o : ir::op_table()) {
        if (o.names.empty() && o.token.empty()) continue;
        if (o.kind != ir::OpKind::Operator && o.kind != ir::OpKind::Function) continue;
        const std::string name(ir::spelling(o.op));
        std::string text;
        if (!o.token.empty()) text = o.arity == 1 ? name + "a" : "a " + name + " b";
        else text = name + (o.arity == 1 ? "(a)" : o.arity == 2 ? "(a, b)" : "(a, b, c)");
        for (DType t : {F32, F64, I32, I64}) {
            std::vector<cg::KernelSource> kernels;
            ir::Program program;
            try {
                Lowered l = lower(text, {{"a", t}, {"b", t}, {"c", t}});
                kernels = std::move(l.kernels);
                program = std::move(l.program);
            } catch (const Error&) {
                continue;  // not defined for this dtype
            }
            for (const auto& k : kernels) {
                auto ptx = cg::emit_ptx(program, k, 90);
                if (!ptx) continue;
                for (const auto& f : ptx->links) {
                    ++calls;
                    EXPECT_GE(cg::device_library_of(f.entries[0]), 0) << f.entries[0] << " of " << text;
                }
            }
        }
    }
    EXPECT_GT(calls, 100);
}

TEST(PtxTier, EveryDeviceLibraryFunctionIsTheDeviceFunctionItself) {
    const auto& libs = cg::device_libraries();
    ASSERT_EQ(libs.size(), 3u);
    std::size_t functions = 0;
    for (std::size_t g = 0; g < libs.size(); ++g) {
        EXPECT_TRUE(libs[g].relocatable);
        for (const auto& symbol : libs[g].entries) {
            ++functions;
            EXPECT_EQ(cg::device_library_of(symbol), static_cast<int>(g)) << symbol;
        }
    }
    EXPECT_GT(functions, 100u);
    const auto sin32 = cg::device_function(ir::Op::Sin, {F32}, F32);
    ASSERT_TRUE(sin32.has_value());
    EXPECT_NE(libs[0].source.find(sin32->body), std::string::npos);
    EXPECT_EQ(cg::device_library_of("jxl_Sin_f32_f32"), 0);
    EXPECT_EQ(cg::device_library_of("jxl_Sin_f64_f64"), 1);
    EXPECT_EQ(cg::device_library_of("jxl_Gcd_i64_i64_i64"), 2);
    EXPECT_EQ(cg::device_library_of("jxl_FloatPower_f32_f32_f32"), -1);  // float32 is promoted first
}

TEST(PtxTier, OnceTheDeviceLibrariesAreBuiltAKernelCompilesNoDeviceFunction) {
    if (!cuda::ptx_assembler_available()) GTEST_SKIP() << "built without nvJitLink";
    auto x = ptx_of("sin(a) / b + hypot(a, b)", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(x.has_value());
    ASSERT_EQ(x->links.size(), 3u);
    std::map<std::string, std::string> disk;
    cuda::ImageStore store;
    store.get = [&disk](const std::string& key) -> std::optional<std::string> {
        auto it = disk.find(key);
        if (it == disk.end()) return std::nullopt;
        return it->second;
    };
    store.put = [&disk](const std::string& key, const std::string& bytes) { disk[key] = bytes; };
    cuda::ModuleCache first;
    EXPECT_FALSE(first.claim_library_build(sm90()));  // no store: nothing would keep them
    first.set_image_store(store);
    ASSERT_TRUE(first.claim_library_build(sm90()));
    EXPECT_FALSE(first.claim_library_build(sm90()));  // once
    EXPECT_EQ(first.build_libraries(sm90()), 3u);
    EXPECT_EQ(disk.size(), 3u);
    EXPECT_EQ(first.build_libraries(sm90()), 0u);  // all built
    const cuda::Image img = first.build(*x, sm90());
    EXPECT_TRUE(img.is_cubin);
    EXPECT_EQ(first.stats().compiles, 0u);
    EXPECT_EQ(first.stats().library_compiles, 3u);
    // A later process reads the libraries its kernels call from the store, and has nothing to claim.
    cuda::ModuleCache second;
    second.set_image_store(store);
    (void)second.build(*x, sm90());
    EXPECT_EQ(second.stats().compiles, 0u);
    EXPECT_EQ(second.stats().library_loads, 1u);  // the float32 group only
    EXPECT_FALSE(second.claim_library_build(sm90()));
    EXPECT_EQ(disk.size(), 3u);
}

TEST(PtxTier, DeviceFunctionsAreForInt32Int64Float32AndFloat64Only) {
    EXPECT_TRUE(cg::device_function(ir::Op::Sin, {F64}, F64).has_value());
    EXPECT_FALSE(cg::device_function(ir::Op::Sin, {DType::Float16}, DType::Float16).has_value());
    EXPECT_FALSE(cg::device_function(ir::Op::Sin, {DType::Complex64}, DType::Complex64).has_value());
    EXPECT_FALSE(cg::device_function(ir::Op::Eq, {B, B}, B).has_value());
    EXPECT_FALSE(cg::device_function(ir::Op::Sin, {}, F32).has_value());
    // The symbol is made of the op and the dtypes only.
    EXPECT_EQ(cg::device_function(ir::Op::Arctan2, {F32, F32}, F32)->entries[0], "jxl_Arctan2_f32_f32_f32");
}

TEST(PtxTier, OtherProgramsKeepNvrtc) {
    EXPECT_FALSE(ptx_of("a + 1", {{"a", DType::Float16}}).has_value());
    EXPECT_FALSE(ptx_of("a + 1", {{"a", DType::UInt8}}).has_value());
    EXPECT_FALSE(ptx_of("a * 2", {{"a", DType::Complex64}}).has_value());
    // Reductions along an axis, and a positional full reduction (argmin's first-true search).
    dsl::Binding m = array(F32, 0);
    m.shape = {40, 25};
    m.strides = {25, 1};
    const Lowered axis = lower("sum(a, axis=1)", {{"a", m}});
    for (const auto& k : axis.kernels) EXPECT_FALSE(cg::emit_ptx(axis.program, k, 90).has_value());
    const Lowered arg = lower("argmin(a)", {{"a", F32}});
    int first_true = 0;  // argmin is a min, then the first element equal to it: that one keeps NVRTC
    for (const auto& k : arg.kernels) {
        for (const auto& p : k.params) {
            if (p.written && ir::info(arg.program.node(p.array.node()).op).rule == ir::Rule::ArgFirst) {
                ++first_true;
                EXPECT_FALSE(cg::emit_ptx(arg.program, k, 90).has_value());
            }
        }
    }
    EXPECT_EQ(first_true, 1);
    // A full reduction of a strided (transposed) operand: its reads need the layout.
    dsl::Binding t = array(F32, 0);
    t.shape = {40, 25};
    t.strides = {1, 40};
    const Lowered strided = lower("sum(a * 2)", {{"a", t}});
    ASSERT_EQ(strided.kernels.size(), 1u);
    EXPECT_FALSE(cg::emit_ptx(strided.program, strided.kernels[0], 90).has_value());
    EXPECT_FALSE(ptx_of("sum(a)", {{"a", DType::Float16}}).has_value());
    // Targets outside sm_70..sm_90.
    const Lowered l = lower("a + 1", {{"a", F32}});
    EXPECT_FALSE(cg::emit_ptx(l.program, l.kernels.at(0), 100).has_value());
    EXPECT_TRUE(cg::emit_ptx(l.program, l.kernels.at(0), 80).has_value());
}

void expect_golden(const std::string& name, const cg::KernelSource& k) {
    const std::string path = std::string(JITEXPR_SOURCE_DIR) + "/tests/codegen/golden/" + name;
    if (const char* u = std::getenv("JITEXPR_UPDATE_GOLDEN"); u && std::string(u) == "1")
        std::ofstream(path) << k.source;
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing " << path << " (JITEXPR_UPDATE_GOLDEN=1 writes it)";
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(k.source, ss.str());
}

// Full reductions (issue 33, item 3: no first eval waits for NVRTC): each accumulator over each
// dtype it takes, mean's division, bool operands, a broadcast element, a scalar, and a reduction
// feeding an element-wise stage. Every kernel is PTX and assembles.
TEST(PtxTier, FullReductionsGetAPtxKernelThatAssembles) {
    const Case cases[] = {
        {"sum(a*b)", {{"a", F32}, {"b", F32}}, {}},
        {"sum(a*2 + b)", {{"a", F64}, {"b", F64}}, {}},
        {"sum(i)", {{"i", I32}}, {}},
        {"sum(i)", {{"i", I64}}, {}},
        {"prod(a)", {{"a", F64}}, {}},
        {"prod(i)", {{"i", I32}}, {}},
        {"min(a - b)", {{"a", F32}, {"b", F32}}, {}},
        {"max(a)", {{"a", F64}}, {}},
        {"min(i)", {{"i", I32}}, {}},
        {"max(i)", {{"i", I64}}, {}},
        {"min(c)", {{"c", B}}, {}},
        {"mean(a)", {{"a", F32}}, {}},
        {"mean(i)", {{"i", I32}}, {}},
        {"any(a > b)", {{"a", F32}, {"b", F32}}, {}},
        {"all(c)", {{"c", B}}, {}},
        {"sum(c)", {{"c", B}}, {}},
        {"sum(a * s)", {{"a", F32}}, {{"s", F32}}},
        {"sum(sin(a))", {{"a", F32}}, {}},
        {"a - mean(b)*3", {{"a", F32}, {"b", F32}}, {}},
    };
    cuda::ModuleCache cache;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        const Lowered l = lower(c.text, c.vars, 1000, c.scalars);
        ASSERT_FALSE(l.kernels.empty());
        int reductions = 0;
        for (const auto& k : l.kernels) {
            reductions += k.launch.kind == cg::KernelKind::ReduceAll;
            auto p = cg::emit_ptx(l.program, k, 90);
            ASSERT_TRUE(p.has_value()) << k.body;
            EXPECT_EQ(p->params.size(), k.params.size());
            EXPECT_EQ(p->launch.workspace_bytes(), k.launch.workspace_bytes());
            expect_assembles(*p, &cache);
        }
        EXPECT_EQ(reductions, 1);
    }
}

// The order of folding is the C++ kernel's: groups of launch.group consecutive elements (16 bytes
// of the widest operand), then the tail; the partials through the ticket; a broadcast element
// read once.
TEST(PtxTier, AFullReductionFoldsInGroupsOfItsVectorWidth) {
    const Lowered l = lower("sum(a * b)", {{"a", array(F32, 1000)}, {"b", array(F32, 1)}});
    ASSERT_EQ(l.kernels.size(), 1u);
    EXPECT_EQ(l.kernels[0].launch.group, 4);
    auto p = cg::emit_ptx(l.program, l.kernels[0], 90);
    ASSERT_TRUE(p.has_value());
    const std::string& s = p->source;
    EXPECT_NE(s.find("shr.u64 %rdG, %rdN, 2;"), std::string::npos);  // n / 4
    EXPECT_NE(s.find("atom.global.add.u32"), std::string::npos);
    EXPECT_NE(s.find("ld.global.cg.f32"), std::string::npos);
    EXPECT_LT(s.find("ld.global.f32"), s.find("$Lgroup:"));  // b's one element, before the loops
    const Lowered d = lower("sum(a)", {{"a", F64}});
    EXPECT_EQ(d.kernels.at(0).launch.group, 2);
}

TEST(PtxTier, SumOfProductsFloat32MatchesItsGoldenFile) {
    auto k = ptx_of("sum(a*b)", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(k.has_value());
    expect_golden("sum_product_float32.ptx", *k);
}

TEST(PtxTier, AxpbFloat32MatchesItsGoldenFile) {
    auto k = ptx_of("a*2 + b", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(k.has_value());
    expect_golden("axpb_float32.ptx", *k);
}

TEST(PtxTier, WhereSinExpFloat32MatchesItsGoldenFile) {
    auto k = ptx_of("where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", {{"a", F32}, {"b", F32}});
    ASSERT_TRUE(k.has_value());
    expect_golden("where_sin_exp_float32.ptx", *k);
}

}  // namespace

// The PTX writer follows a stage's nodes by recursion, one level per node of a chain (a stage
// holds up to cuda::kMaxStageNodes of them): on a stack of its own when the caller's is short,
// so that a long sum compiled on a small thread (a Python thread after threading.stack_size())
// cannot overflow it. Issue 34, item 2.
TEST(PtxTier, ALongChainIsWrittenOnASmallThread) {
    std::string text = "a";
    for (int i = 0; i < 2000; ++i) text += " + a";  // a stage of about 2,000 nodes, near the limit
    Lowered l;
    std::optional<cg::KernelSource> p;
    std::vector<unsigned char> stack(64 << 10);
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstack(&attr, stack.data(), stack.size()), 0);
    struct Job {
        const std::string* text;
        Lowered* l;
        std::optional<cg::KernelSource>* p;
    } job{&text, &l, &p};
    pthread_t th;
    ASSERT_EQ(pthread_create(
                  &th, &attr,
                  [](void* v) -> void* {
                      auto* j = static_cast<Job*>(v);
                      *j->l = lower(*j->text, {{"a", DType::Float32}});  // the plan and the CUDA C++ too
                      if (j->l->kernels.size() == 1) *j->p = cg::emit_ptx(j->l->program, j->l->kernels[0], 90);
                      return nullptr;
                  },
                  &job),
              0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
    ASSERT_EQ(l.kernels.size(), 1u);
    ASSERT_TRUE(p.has_value());
    EXPECT_NE(p->source.find("add.rn.f32"), std::string::npos);
}

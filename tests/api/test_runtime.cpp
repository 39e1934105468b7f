// The public API on the CPU backend: eval, compile, run with an environment, in-place writes,
// errors, the front cache.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

using namespace jit;

namespace {
Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}
Array host(std::vector<float> v) { return Array::from(v, {}, Backend::Cpu); }
}  // namespace

TEST(RuntimeOptions, NvrtcOptionsFromTheEnvironmentAreSplitAtWhiteSpace) {
    ::setenv("JITEXPR_NVRTC_OPTIONS", "  --Ofast-compile=max\t-lineinfo ", 1);
    const RuntimeOptions o = RuntimeOptions::from_environment();
    ::unsetenv("JITEXPR_NVRTC_OPTIONS");
    EXPECT_EQ(o.nvrtc_options, (std::vector<std::string>{"--Ofast-compile=max", "-lineinfo"}));
    EXPECT_TRUE(RuntimeOptions::from_environment().nvrtc_options.empty());
}

TEST(RuntimeOptions, TieredCompileIsOnByDefaultAndOffThroughTheEnvironment) {
    EXPECT_TRUE(RuntimeOptions{}.tiered_compile);
    ::setenv("JITEXPR_TIERED", "0", 1);
    EXPECT_FALSE(RuntimeOptions::from_environment().tiered_compile);
    ::setenv("JITEXPR_TIERED", "1", 1);
    EXPECT_TRUE(RuntimeOptions::from_environment().tiered_compile);
    ::unsetenv("JITEXPR_TIERED");
    EXPECT_TRUE(RuntimeOptions::from_environment().tiered_compile);
}

TEST(Eval, AxpbOnCpu) {
    Array a = host({1, 2, 3}), b = host({10, 20, 30});
    Array c = cpu().eval("c = a * 2 + b", {a, b});
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{12, 24, 36}));
    EXPECT_EQ(c.dtype(), DType::Float32);
}

TEST(Eval, BindsInOrderOfFirstAppearance) {
    Array a = host({1, 2}), b = host({5, 7});
    Array c = cpu().eval("b - a", {a, b});  // b appears first: b := a, a := b
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{-4, -5}));
}

TEST(Eval, WrongArgumentCountIsArgumentError) { EXPECT_THROW(cpu().eval("a + b", {host({1})}), ArgumentError); }

TEST(Eval, ScalarArgumentIsWeakAndDoesNotRecompile) {
    Array a = host({1, 2});
    Array r1 = cpu().eval("a * x", {a, 2.0});
    const auto misses = cpu().stats().misses;
    Array r2 = cpu().eval("a * x", {a, 3.0});
    EXPECT_EQ(r1.dtype(), DType::Float32);
    EXPECT_EQ(r2.to_vector<float>(), (std::vector<float>{3, 6}));
    EXPECT_EQ(cpu().stats().misses, misses);
}

TEST(Eval, SecondEvalIsACacheHit) {
    Array a = host({1, 2, 3}), b = host({1, 1, 1});
    cpu().eval("q = a * 7 - b", {a, b});
    const auto before = cpu().stats();
    cpu().eval("q = a * 7 - b", {a, b});
    const auto after = cpu().stats();
    EXPECT_EQ(after.hits, before.hits + 1);
    EXPECT_EQ(after.misses, before.misses);
}

TEST(Eval, ZeroLengthArrays) {
    Array a = host({}), b = host({});
    Array c = cpu().eval("a * 2 + b", {a, b});
    EXPECT_EQ(c.size(), 0);
}

TEST(Run, AssignsNewNamesIntoTheEnvironment) {
    Environment env{{"a", Arg(host({1, 2}))}};
    cpu().run("t = a + 1; u = t * t", env);
    ASSERT_TRUE(env.count("u"));
    EXPECT_EQ(env.at("u").array().to_vector<float>(), (std::vector<float>{4, 9}));
}

TEST(Run, AssignmentToExistingArrayWritesInPlace) {
    Array a = host({1, 2, 3});
    Environment env{{"a", Arg(a)}};
    cpu().run("a = a * 2", env);
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 4, 6}));
    EXPECT_EQ(env.at("a").array().data(), a.data());
}

TEST(Run, ReductionIntoAnExistingArrayWritesInPlace) {
    Array x = host({1, 2, 3, 4});
    Array s = Array::zeros(DType::Float32, {}, Backend::Cpu);
    Array m = Array::zeros(DType::Float32, {2}, Backend::Cpu);
    Environment env{{"x", Arg(x)}, {"s", Arg(s)}, {"m", Arg(m)}};
    Array x2 = x.reshape({2, 2});
    env.insert_or_assign("y", Arg(x2));
    cpu().run("s = sum(x * 2)\nm = max(y, axis=1)", env);
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{20}));
    EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 4}));
    EXPECT_EQ(env.at("s").array().data(), s.data());
    EXPECT_EQ(env.at("m").array().data(), m.data());
}

TEST(Run, ReductionOfTheArrayItReplacesIsCorrect) {
    const float five = 5;
    Array s = Array::from_host(&five, DType::Float32, {}, Backend::Cpu);  // 0-d, as the sum: written in place
    Array x = host({1, 2, 3});
    Environment env{{"s", Arg(s)}, {"x", Arg(x)}};
    cpu().run("s = sum(x + s)", env);
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{21}));
}

TEST(Run, InPlaceWhenTheArrayIsReadWithBroadcasting) {
    // a (2,2) = a + a.T-like read through another output: forces the copy-back path.
    Array a = Array::from(std::vector<float>{1, 2, 3, 4}, {2, 2}, Backend::Cpu);
    Environment env{{"a", Arg(a)}};
    cpu().run("b = a + 0; a = a * 10", env);
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{10, 20, 30, 40}));
    EXPECT_EQ(env.at("b").array().to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Run, AnArrayAssignedInPlaceKeepsItsOldValueForAnotherShapesStatement) {
    // z (3, 4) is computed from x + 1 again in its own stage; x must not be overwritten first.
    Array x = Array::from(std::vector<double>{0, 1, 2, 3}, {}, Backend::Cpu);
    Array col = Array::from(std::vector<double>{1, 10, 100}, {3, 1}, Backend::Cpu);
    Environment env{{"x", Arg(x)}, {"col", Arg(col)}};
    cpu().run("x = x + 1; z = x * col", env);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(env.at("z").array().to_vector<double>(),
              (std::vector<double>{1, 2, 3, 4, 10, 20, 30, 40, 100, 200, 300, 400}));
}

CallOptions strict() {
    CallOptions o;
    o.strict_in_place = true;
    return o;
}

TEST(Run, StrictInPlaceTypeErrorLeavesTheArrayUntouched) {
    Array a = Array::from(std::vector<std::int32_t>{1, 2}, {}, Backend::Cpu);
    Environment env{{"a", Arg(a)}};
    EXPECT_THROW(cpu().run("a = a * 2.5", env, strict()), TypeError);
    EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2}));
    EXPECT_EQ(env.at("a").array().data(), a.data());
}

TEST(Run, AValueOfAnotherDtypeRebindsTheNameAndLeavesTheArray) {
    Array a = Array::from(std::vector<std::int32_t>{1, 2}, {}, Backend::Cpu);
    Environment env{{"a", Arg(a)}};
    cpu().run("a = a + 1.5", env);
    EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2}));
    EXPECT_EQ(env.at("a").array().dtype(), DType::Float64);
    EXPECT_EQ(env.at("a").array().to_vector<double>(), (std::vector<double>{2.5, 3.5}));
}

TEST(Run, AReductionOfTheArrayRebindsItToAZeroDimensionalValue) {
    Array x = Array::from(std::vector<double>{0, 1, 2, 3, 4, 5, 6}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    Array r = cpu().run("x = sum(x)", env);
    EXPECT_EQ(env.at("x").array().ndim(), 0);
    EXPECT_EQ(env.at("x").array().item<double>(), 21);
    EXPECT_EQ(r.item<double>(), 21);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(Run, AShorterSliceRebindsTheName) {
    Array x = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    cpu().run("x = x[1:]", env);
    EXPECT_EQ(env.at("x").array().to_vector<double>(), (std::vector<double>{2, 3}));
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Run, ARebindingAfterAnInPlaceStatementLeavesTheArrayAsItWas) {
    // Only the last value of a name is its output: the first statement's write never happens.
    Array x = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    cpu().run("x = x * 2; x = sum(x)", env);
    EXPECT_EQ(env.at("x").array().item<double>(), 12);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Run, StatementsAfterARebindingReadTheNewValue) {
    Array x = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    cpu().run("x = sum(x); y = x + 1; x = x * 2", env);
    EXPECT_EQ(env.at("x").array().item<double>(), 12);
    EXPECT_EQ(env.at("y").array().item<double>(), 7);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Run, StrictInPlaceBroadcastsAReductionIntoTheArray) {
    Array x = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    cpu().run("x = sum(x)", env, strict());
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{6, 6, 6}));
    EXPECT_EQ(env.at("x").array().data(), x.data());
}

TEST(Run, StrictInPlaceKeepsTheShapeError) {
    Array x = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    Environment env{{"x", Arg(x)}};
    EXPECT_THROW(cpu().run("x = x[1:]", env, strict()), ShapeError);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Run, StrictAndLooseCallsOfOneTextDoNotShareAPreparedProgram) {
    Array x = Array::from(std::vector<double>{1, 2}, {}, Backend::Cpu);
    Environment loose{{"x", Arg(x)}};
    cpu().run("x = sum(x) + 0", loose);
    Environment env{{"x", Arg(x)}};
    cpu().run("x = sum(x) + 0", env, strict());
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{3, 3}));
}

// ---- read-only arrays: never written, refused before the call

const double kConst[3] = {1, 2, 3};

Array read_only_view() { return Array::view(static_cast<const void*>(kConst), DType::Float64, {3}, {}, Backend::Cpu); }

TEST(ReadOnly, AViewOfConstMemoryIsReadOnlyAndSoAreItsViews) {
    const Array a = read_only_view();
    EXPECT_TRUE(a.read_only());
    EXPECT_TRUE(a.slice(0, 1, 3).read_only());
    EXPECT_TRUE(a.reshape({3, 1}).transpose().broadcast_to({2, 3}).read_only());
    EXPECT_FALSE(a.to(Backend::Cpu).read_only()) << "a copy is new memory";
    const double* typed = kConst;  // any const pointer picks the read-only view
    EXPECT_TRUE(Array::view(typed, DType::Float64, {3}, {}, Backend::Cpu, 0).read_only());
    double mine[3] = {1, 2, 3};
    EXPECT_FALSE(Array::view(mine, DType::Float64, {3}, {}, Backend::Cpu).read_only());
    EXPECT_TRUE(Array::view(mine, DType::Float64, {3}, {}, Backend::Cpu).as_read_only().read_only());
}

TEST(ReadOnly, RunRefusesAnAssignmentIntoAReadOnlyArrayWithACaret) {
    Environment env{{"x", Arg(read_only_view())}};
    try {
        cpu().run("y = 1; x = x + 1", env);
        FAIL();
    } catch (const ReadOnlyError& e) {
        EXPECT_NE(std::string(e.what()).find("'x' is read-only"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("line 1: y = 1; x = x + 1\n" + std::string(15, ' ') + "^"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(kConst[0], 1);
    EXPECT_FALSE(env.count("y")) << "nothing is bound: refused before the call";
}

TEST(ReadOnly, StrictRunRefusesToo) {
    Environment env{{"x", Arg(read_only_view())}};
    EXPECT_THROW(cpu().run("x = sum(x)", env, strict()), ReadOnlyError);
    EXPECT_EQ(kConst[0], 1);
}

TEST(ReadOnly, AValueOfAnotherShapeRebindsAReadOnlyName) {
    Environment env{{"x", Arg(read_only_view())}};
    cpu().run("x = sum(x)", env);
    EXPECT_EQ(env.at("x").array().item<double>(), 6);
    EXPECT_FALSE(env.at("x").array().read_only());
}

TEST(ReadOnly, EvalAndKernelCallsRefuseToWriteIntoAReadOnlyArray) {
    EXPECT_THROW(cpu().eval("x = x * 2", {{"x", read_only_view()}}), ReadOnlyError);
    EXPECT_THROW(cpu().eval("x = x * 2", std::vector<Arg>{read_only_view()}), ReadOnlyError);
    const Kernel k = compile("y = y + 1", cpu());
    EXPECT_THROW(k({{"y", read_only_view()}}), ReadOnlyError);
    EXPECT_EQ(kConst[0], 1);
    EXPECT_EQ(cpu().eval("x * 2", {{"x", read_only_view()}}).to_vector<double>(), (std::vector<double>{2, 4, 6}))
        << "reading is fine";
}

TEST(ReadOnly, RunIntoRefusesAReadOnlyOut) {
    Environment env{{"a", Arg(host({1, 2, 3}))}};
    try {
        cpu().run_into("a * 2", env, read_only_view());
        FAIL();
    } catch (const ReadOnlyError& e) {
        EXPECT_NE(std::string(e.what()).find("out= is read-only"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kConst[0], 1);
}

TEST(ReadOnly, AReadOnlyArrayIsReadAsAnInputOfRunInto) {
    Array out = Array::zeros(DType::Float64, {3}, Backend::Cpu);
    Environment env{{"a", Arg(read_only_view())}};
    cpu().run_into("a * 2", env, out);
    EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{2, 4, 6}));
}

TEST(Run, ErrorMessageHasCaret) {
    Environment env{{"a", Arg(host({1}))}};
    try {
        cpu().run("c = a + bb", env);
        FAIL();
    } catch (const NameError& e) {
        EXPECT_NE(std::string(e.what()).find("line 1: c = a + bb\n                ^^"), std::string::npos) << e.what();
    }
}

TEST(Run, ReductionFusedWithElementwise) {
    Environment env{{"p", Arg(host({1, 2, 3}))}, {"q", Arg(host({4, 5, 6}))}};
    Array s = cpu().run("sum(p * q)", env);
    EXPECT_EQ(s.ndim(), 0);
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{32}));
}

TEST(Run, ArrayOnOtherBackendIsArgumentError) {
    // A CUDA array cannot be made without a device; a CPU array on a CPU runtime is fine, so
    // check the message path with a CPU runtime and a view flagged as CUDA memory.
    float x = 1;
    Array v = Array::view(&x, DType::Float32, {1}, {1}, Backend::Cuda);
    Environment env{{"a", Arg(v)}};
    EXPECT_THROW(cpu().run("a + 1", env), ArgumentError);
}

TEST(Run, StridedInputView) {
    Array base = host({0, 1, 2, 3, 4, 5, 6, 7});
    Array odd = base.slice(0, 1, 8, 2);
    Environment env{{"a", Arg(odd)}};
    Array r = cpu().run("a * 10", env);
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{10, 30, 50, 70}));
}

TEST(Compile, KernelParametersAreKnownUpFront) {
    Kernel k = compile("c = a * x + b", cpu());
    EXPECT_EQ(k.parameters(), (std::vector<std::string>{"a", "x", "b"}));
    Array r = k(host({1, 2}), 3.0, host({1, 1}));
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 7}));
}

TEST(Compile, SyntaxErrorIsThrownAtCompile) { EXPECT_THROW(compile("c = a +", cpu()), ParseError); }

TEST(Threads, ManyThreadsShareOneRuntime) {
    Array a = host({1, 2, 3, 4});
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (int t = 0; t < 8; ++t)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                Array r = cpu().eval("a * x", {a, static_cast<double>(t)});
                if (r.to_vector<float>()[3] != 4.0f * t) ++bad;
            }
        });
    for (auto& th : ts) th.join();
    EXPECT_EQ(bad.load(), 0);
}

// ---- run_into: numexpr's and NumPy's out=

TEST(RunInto, WritesTheLastValueInPlaceAndReturnsOut) {
    Array a = host({1, 2, 3});
    Array out = Array::empty(DType::Float32, {3}, Backend::Cpu);
    Environment env{{"a", a}};
    Array r = cpu().run_into("t = a * 2; t + 1", env, out);
    EXPECT_EQ(r.data(), out.data());
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{3, 5, 7}));
    EXPECT_EQ(env.count("t"), 1u);      // earlier assignments are written back, as run() does
    EXPECT_EQ(env.count("(out)"), 0u);  // the out binding is the call's own
}

TEST(RunInto, CastsWithinAKindAndRefusesAcrossKindsWithACaret) {
    Environment env{{"a", Array::from(std::vector<double>{1.5, 2.5}, {}, Backend::Cpu)}};
    Array f32 = Array::empty(DType::Float32, {2}, Backend::Cpu);
    cpu().run_into("a * 2", env, f32);
    EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{3, 5}));
    Array i32 = Array::empty(DType::Int32, {2}, Backend::Cpu);
    try {
        cpu().run_into("a * 2", env, i32);
        FAIL() << "expected TypeError";
    } catch (const TypeError& e) {
        EXPECT_EQ(e.span().begin, 0u);
        EXPECT_EQ(e.span().end, 5u);
    }
}

TEST(RunInto, ShapesMustFitOut) {
    Environment env{{"a", host({1, 2, 3})}};
    Array out = Array::empty(DType::Float32, {4}, Backend::Cpu);
    EXPECT_THROW(cpu().run_into("a * 2", env, out), ShapeError);
    Array wide = Array::empty(DType::Float32, {2, 3}, Backend::Cpu);
    cpu().run_into("a * 2", env, wide);  // broadcast to out's shape, as an in-place assignment is
    EXPECT_EQ(wide.to_vector<float>(), (std::vector<float>{2, 4, 6, 2, 4, 6}));
}

TEST(RunInto, OutMayBeAnInputOfTheProgram) {
    Array a = host({1, 2, 3});
    Environment env{{"a", a}, {"b", host({10, 20, 30})}};
    cpu().run_into("a + b", env, a);
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{11, 22, 33}));
}

TEST(RunInto, AnAssignmentAsTheLastStatementIsRefused) {
    Environment env{{"a", host({1})}};
    Array out = Array::empty(DType::Float32, {1}, Backend::Cpu);
    EXPECT_THROW(cpu().run_into("c = a * 2", env, out), ArgumentError);
    EXPECT_THROW(cpu().run_into("", env, out), ArgumentError);
}

TEST(RunInto, AndRunOfTheSameTextKeepSeparatePreparedPrograms) {
    Environment env{{"a", host({1, 2})}};
    Array out = Array::empty(DType::Float32, {2}, Backend::Cpu);
    Array fresh = cpu().run("a * 3", env);
    cpu().run_into("a * 3", env, out);
    Array again = cpu().run("a * 3", env);
    EXPECT_NE(again.data(), out.data());
    EXPECT_EQ(again.to_vector<float>(), out.to_vector<float>());
    EXPECT_EQ(fresh.to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(Targets, NamesTheAssignedNamesInOrder) {
    EXPECT_EQ(jit::targets("t = a * 2; c = t + b; t = c"), (std::vector<std::string>{"t", "c"}));
    EXPECT_TRUE(jit::targets("a + b").empty());
}

TEST(Synchronize, IsANoOpOnTheCpu) {
    cpu().synchronize();
    SUCCEED();
}

// The CPU backend runs a statement's column and the sums over the same rows in one pass
// (CpuPrepared's stage groups): each value must be the one its stage computes alone, bit for
// bit (same blocks, same combining order), at a size that is not a multiple of the block, and
// again when the column is overwritten in place on the second run.
TEST(CpuStageGroups, ColumnsAndSumsOfOneIterationSpaceMatchEachStageAlone) {
    const std::int64_t n = 512 * 97 + 13;  // past the one-thread threshold too
    std::vector<double> dist(n), dur(n);
    std::vector<std::int32_t> pax(n);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.1, 12.0);
    for (std::int64_t i = 0; i < n; ++i) {
        dist[i] = u(rng);
        dur[i] = 60 + 100 * u(rng);
        pax[i] = static_cast<std::int32_t>(rng() % 5);
    }
    const char* program =
        "speed = distance / (duration / 3600)\n"
        "s1 = sum(where(distance > 5, speed, 0))\n"
        "s2 = sum(distance > 5)\n"
        "m = mean(where(passengers >= 3, speed, 1))\n";
    Environment env{{"distance", Array::from(dist, {}, Backend::Cpu)},
                    {"duration", Array::from(dur, {}, Backend::Cpu)},
                    {"passengers", Array::from(pax, {}, Backend::Cpu)}};
    const Array s1 = cpu().eval("sum(where(distance > 5, distance / (duration / 3600), 0))",
                                {env.at("distance"), env.at("duration")});
    const Array s2 = cpu().eval("sum(distance > 5)", {env.at("distance")});
    const Array m = cpu().eval("mean(where(passengers >= 3, distance / (duration / 3600), 1))",
                               {env.at("passengers"), env.at("distance"), env.at("duration")});
    const Array speed = cpu().eval("distance / (duration / 3600)", {env.at("distance"), env.at("duration")});
    for (int pass = 0; pass < 2; ++pass) {  // the second: speed is bound, so written in place
        SCOPED_TRACE(pass);
        cpu().run(program, env);
        EXPECT_EQ(env.at("speed").array().to_vector<double>(), speed.to_vector<double>());
        EXPECT_EQ(env.at("s1").array().to_vector<double>(), s1.to_vector<double>());
        EXPECT_EQ(env.at("s2").array().to_vector<std::int64_t>(), s2.to_vector<std::int64_t>());
        EXPECT_EQ(env.at("m").array().to_vector<double>(), m.to_vector<double>());
    }
}

namespace {

// A pass of several stages computes the values they share once per element (backend/cpu's pass
// plans): every output and every reduction must still be bit for bit what each computes alone,
// for sums, means, extrema, arg-extrema and any, at a size that is not a multiple of the block,
// and again when the columns are overwritten in place on the second run.
TEST(CpuPasses, SharedValuesOfAPassGiveWhatEachStageGivesAlone) {
    const std::int64_t n = 512 * 41 + 7;
    std::vector<double> av(n), bv(n), cv(n), dv(n);
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> u(-2.0, 3.0);
    for (std::int64_t i = 0; i < n; ++i) av[i] = u(rng), bv[i] = u(rng), cv[i] = u(rng), dv[i] = u(rng);
    Environment env{{"a", Array::from(av, {}, Backend::Cpu)},
                    {"b", Array::from(bv, {}, Backend::Cpu)},
                    {"c", Array::from(cv, {}, Backend::Cpu)},
                    {"d", Array::from(dv, {}, Backend::Cpu)}};
    const char* program =
        "x = a * b\n"
        "y = x + c\n"
        "z = x * d\n"
        "s = sum(y)\n"
        "mx = max(z)\n"
        "k = argmax(y)\n"
        "q = any(z > 3)\n"
        "mu = mean(x * 0.5 + 1)\n";
    const Array x = cpu().eval("a * b", {env.at("a"), env.at("b")});
    const Array y = cpu().eval("a * b + c", {env.at("a"), env.at("b"), env.at("c")});
    const Array z = cpu().eval("a * b * d", {env.at("a"), env.at("b"), env.at("d")});
    const Array s = cpu().eval("sum(a * b + c)", {env.at("a"), env.at("b"), env.at("c")});
    const Array mx = cpu().eval("max(a * b * d)", {env.at("a"), env.at("b"), env.at("d")});
    const Array k = cpu().eval("argmax(a * b + c)", {env.at("a"), env.at("b"), env.at("c")});
    const Array q = cpu().eval("any(a * b * d > 3)", {env.at("a"), env.at("b"), env.at("d")});
    const Array mu = cpu().eval("mean(a * b * 0.5 + 1)", {env.at("a"), env.at("b")});
    for (int pass = 0; pass < 2; ++pass) {  // the second: x, y, z are bound, so written in place
        SCOPED_TRACE(pass);
        cpu().run(program, env);
        EXPECT_EQ(env.at("x").array().to_vector<double>(), x.to_vector<double>());
        EXPECT_EQ(env.at("y").array().to_vector<double>(), y.to_vector<double>());
        EXPECT_EQ(env.at("z").array().to_vector<double>(), z.to_vector<double>());
        EXPECT_EQ(env.at("s").array().to_vector<double>(), s.to_vector<double>());
        EXPECT_EQ(env.at("mx").array().to_vector<double>(), mx.to_vector<double>());
        EXPECT_EQ(env.at("k").array().to_vector<std::int64_t>(), k.to_vector<std::int64_t>());
        EXPECT_EQ(env.at("q").array().to_vector<std::uint8_t>(), q.to_vector<std::uint8_t>());
        EXPECT_EQ(env.at("mu").array().to_vector<double>(), mu.to_vector<double>());
    }
}

// The columns a pass stores are written into the arrays the names hold from the second run on
// (no fresh memory to fault in, no copy back), as for a single stage.
TEST(CpuPasses, ColumnsOfAPassAreWrittenInPlaceOnTheSecondRun) {
    const std::int64_t n = 1 << 16;
    std::vector<double> d(n, 3.0), t(n, 60.0);
    Environment env{{"distance", Array::from(d, {}, Backend::Cpu)}, {"duration", Array::from(t, {}, Backend::Cpu)}};
    const char* program =
        "speed = distance / (duration / 3600)\n"
        "twice = distance * 2\n"
        "s = sum(where(distance > 5, speed, 0))\n";
    cpu().run(program, env);
    const void* speed = env.at("speed").array().data();
    const void* twice = env.at("twice").array().data();
    cpu().run(program, env);
    EXPECT_EQ(env.at("speed").array().data(), speed);
    EXPECT_EQ(env.at("twice").array().data(), twice);
    EXPECT_EQ(env.at("speed").array().to_vector<double>(), std::vector<double>(n, 180.0));
}

}  // namespace

namespace {

// A program mixing a mask selection, a cumsum and a median with element-wise stages and sums
// that share passes: each gives NumPy's answer (integer-valued doubles, so every sum is exact in
// any order and the reference loops below are NumPy's results), over several blocks.
TEST(CpuPasses, ASelectionAScanAndAMedianBesideSharedPassesGiveNumPysAnswers) {
    const std::int64_t n = 512 * 9 + 5;
    std::vector<double> xv(n);
    for (std::int64_t i = 0; i < n; ++i) xv[i] = static_cast<double>((i * 7919) % 2001 - 1000);
    Environment env{{"x", Array::from(xv, {}, Backend::Cpu)}};
    cpu().run(
        "s = sum(x); t = max(x); c = cumsum(x); k = min(x); u = sum(x * x); md = median(x); y = x * 2 + s;"
        "sel = x[x > 0]; w = x * x - 1",
        env);
    double s = 0, t = xv[0], k = xv[0], u = 0;
    std::vector<double> c(n), y(n), w(n), sel;
    for (std::int64_t i = 0; i < n; ++i) {
        s += xv[i];
        t = std::max(t, xv[i]);
        k = std::min(k, xv[i]);
        u += xv[i] * xv[i];
        c[i] = s;
        w[i] = xv[i] * xv[i] - 1;
        if (xv[i] > 0) sel.push_back(xv[i]);
    }
    for (std::int64_t i = 0; i < n; ++i) y[i] = xv[i] * 2 + s;
    std::vector<double> sorted = xv;
    std::sort(sorted.begin(), sorted.end());
    const double md = (n % 2 == 1) ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    EXPECT_EQ(env.at("s").array().to_vector<double>(), std::vector<double>{s});
    EXPECT_EQ(env.at("t").array().to_vector<double>(), std::vector<double>{t});
    EXPECT_EQ(env.at("k").array().to_vector<double>(), std::vector<double>{k});
    EXPECT_EQ(env.at("u").array().to_vector<double>(), std::vector<double>{u});
    EXPECT_EQ(env.at("md").array().to_vector<double>(), std::vector<double>{md});
    EXPECT_EQ(env.at("c").array().to_vector<double>(), c);
    EXPECT_EQ(env.at("y").array().to_vector<double>(), y);
    EXPECT_EQ(env.at("w").array().to_vector<double>(), w);
    EXPECT_EQ(env.at("sel").array().to_vector<double>(), sel);
}

}  // namespace

// A Timing passed to call after call describes the last call alone: nothing of an earlier call
// (its placement, its streaming, its cache state) stays in it.
TEST(Timing, AReusedTimingHoldsOnlyTheLastCall) {
    Runtime& rt = cpu();
    Timing t;
    t.streamed = true;
    t.stream_chunks = 7;
    t.placement = "cuda, streamed: from an earlier call";
    t.cache_hit = true;
    CallOptions o;
    o.timing = &t;
    Environment env{{"a", Arg(host({1, 2}))}};
    rt.run("b = a * 3.5 + 0.25", env, o);
    EXPECT_FALSE(t.streamed);
    EXPECT_EQ(t.stream_chunks, 0u);
    EXPECT_EQ(t.placement, "");
    EXPECT_FALSE(t.cache_hit);  // the first call of this text: a miss
    EXPECT_GT(t.parse_ms, 0.0);
    t.placement = "stale";
    rt.eval("a * 3.5 + 0.25", Named{{"a", Arg(host({1, 2}))}}, o);
    EXPECT_EQ(t.placement, "");
}

// The nesting limit holds on any thread (issue 17, item 7): a program nested as deeply as the
// parser allows (syntax::kMaxNesting) parses, lowers and runs on a thread with a 256 KiB stack
// (a Python thread after threading.stack_size(256 * 1024)) or 128 KiB (musl's default), because
// the parser and the lowering move to a stack of jitexpr's own when the caller's is short.
#include "core/stack.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"
#include "tests/support/small_stack.hpp"

#include <jit/c_api.h>
#include <jit/dlpack.h>
#include <jit/check.hpp>
#include <jit/interop.hpp>
#include <jit/jit.hpp>
#include <jit/language.hpp>

#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

using namespace jit;

namespace {

std::string repeat(std::string_view s, int n) {
    std::string r;
    for (int i = 0; i < n; ++i) r += s;
    return r;
}

// Programs at the nesting limit, one per kind of nesting.
std::string parens(int depth) { return "c = " + repeat("(", depth) + "a + 1" + repeat(")", depth); }
std::string calls(int depth) { return "c = " + repeat("abs(", depth) + "a" + repeat(")", depth); }
std::string unary(int depth) { return "c = " + repeat("-", depth) + "a"; }

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        o.cpu_threads = 1;
        return o;
    }());
    return rt;
}

using jit::testing::on_stack;

Environment env_a() { return Environment{{"a", Arg(Array::from(std::vector<float>{1, -2, 3}, {}, Backend::Cpu))}}; }

void expect_runs(const std::string& text, float want0) {
    Environment env = env_a();
    cpu().run(text, env);
    EXPECT_EQ(env.at("c").array().to_vector<float>().at(0), want0) << text.substr(0, 40);
}

TEST(SmallStack, NestingLimitRunsOnA256KiBThread) {
    on_stack(256 << 10, [] {
        expect_runs(parens(syntax::kMaxNesting), 2.0f);
        expect_runs(calls(syntax::kMaxNesting), 1.0f);
        expect_runs(unary(syntax::kMaxNesting), 1.0f);  // an even count of minus signs
    });
}

TEST(SmallStack, NestingLimitRunsOnA128KiBThread) {
    on_stack(128 << 10, [] { expect_runs(parens(syntax::kMaxNesting), 2.0f); });
}

TEST(SmallStack, NestingErrorComesBackFromTheParsersOwnStack) {
    on_stack(256 << 10, [] {
        Environment env = env_a();
        try {
            cpu().run(parens(syntax::kMaxNesting + 1), env);
            ADD_FAILURE() << "no error";
        } catch (const ParseError& e) {
            EXPECT_NE(std::string(e.what()).find("nested too deeply"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find('^'), std::string::npos) << e.what();
        }
    });
}

// The main thread's floor is computed without /proc/self/maps (a fresh process's first eval
// paid ~0.1 ms for glibc's reading of it); it must be the floor glibc reports, within a page
// for where the executable's name ends.
TEST(SmallStack, TheMainThreadsFloorIsTheOneGlibcReports) {
    if (::getpid() != static_cast<pid_t>(::syscall(SYS_gettid))) GTEST_SKIP() << "not on the main thread";
    pthread_attr_t attr;
    ASSERT_EQ(pthread_getattr_np(pthread_self(), &attr), 0);
    void* addr = nullptr;
    std::size_t size = 0;
    ASSERT_EQ(pthread_attr_getstack(&attr, &addr, &size), 0);
    pthread_attr_destroy(&attr);
    const auto glibc = reinterpret_cast<std::uintptr_t>(addr) + 4096;
    const std::uintptr_t ours = core::stack_floor_of_this_thread();
    ASSERT_NE(ours, 0u);
    EXPECT_LE(ours > glibc ? ours - glibc : glibc - ours, 4096u) << std::hex << ours << " " << glibc;
    EXPECT_GT(core::stack_left(), 0u);
}

TEST(SmallStack, ALargeStackRunsTheParserInPlace) {
    if (core::stack_left() < core::kFrontStackBytes)
        GTEST_SKIP() << "this build asks for more stack than the main thread has left (" << core::stack_left()
                     << " bytes)";
    const std::size_t before = core::own_stack_runs();
    const syntax::Module m = syntax::parse(parens(syntax::kMaxNesting));
    EXPECT_EQ(m.statements.size(), 1u);
    EXPECT_EQ(core::own_stack_runs(), before) << "the main thread's stack is large enough";
}

TEST(SmallStack, ASmallStackMovesTheParserToItsOwn) {
    const std::size_t before = core::own_stack_runs();
    on_stack(256 << 10, [] { EXPECT_EQ(syntax::parse(parens(syntax::kMaxNesting)).statements.size(), 1u); });
    EXPECT_GT(core::own_stack_runs(), before);
}

// The stack the parser and the lowering ask for is at least twice what they use at the limit,
// so that a grammar or lowering change that needs more fails here, not on a user's thread.
TEST(SmallStack, FrontAtTheLimitUsesUnderHalfTheStackItAsksFor) {
    for (const std::string& text :
         {parens(syntax::kMaxNesting), calls(syntax::kMaxNesting), unary(syntax::kMaxNesting)}) {
        std::size_t used = 0;
        const std::size_t before = core::own_stack_runs();
        // A thread with exactly the stack the parser asks for (plus the test's frames): it runs
        // in place, on memory the test can inspect.
        on_stack(
            core::kFrontStackBytes + (64 << 10),
            [&] {
                const syntax::Module m = syntax::parse(text);
                const Environment env = env_a();
                dsl::Binding b{dsl::Binding::Kind::Array, DType::Float32, {3}, {1}};
                const dsl::Lookup lookup = [&](std::string_view name) -> const dsl::Binding* {
                    return name == "a" ? &b : nullptr;
                };
                const ir::Program p = dsl::lower(m, text, lookup, std::vector<std::string>{"a"});
                EXPECT_FALSE(p.nodes.empty());
            },
            &used);
        EXPECT_EQ(core::own_stack_runs(), before) << "ran in place";
        EXPECT_LT(used, core::kFrontStackBytes / 2) << text.substr(0, 20) << ": " << used << " bytes of stack";
    }
}

}  // namespace

// ---- issue 34, item 2: every public entry point takes the deepest text on a 32 KiB thread

namespace deep {

// The deepest text of each kind of nesting the language accepts, over `a` (float32, 3 elements).
std::vector<std::string> texts() {
    const int n = syntax::kMaxNesting;
    std::vector<std::string> out{parens(n), calls(n), unary(n)};
    for (const char* f : {"sin(", "sum(", "cumsum(", "float32("})
        out.push_back("c = " + repeat(f, n) + "a" + repeat(")", n));
    out.push_back("c = " + repeat("where(a > 0, ", n) + "a" + repeat(", a)", n));
    out.push_back("c = a" + repeat(" + a", 5000));  // flat text, a deep chain of nodes
    return out;
}

// 32 KiB; AddressSanitizer's frames are several times larger, so its build gets 128 KiB.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kSmall = 128 << 10;
#else
constexpr std::size_t kSmall = 32 << 10;
#endif

}  // namespace deep

TEST(SmallStack, DeepestTextsRunThroughRunAndEvalOnA32KiBThread) {
    for (const std::string& text : deep::texts()) {
        on_stack(deep::kSmall, [&] {
            Environment env = env_a();
            cpu().run(text, env);
            EXPECT_EQ(env.at("c").array().ndim() <= 1, true) << text.substr(0, 20);
            const Array a = Array::from(std::vector<float>{1, -2, 3}, {}, Backend::Cpu);
            const Array r = cpu().eval(text.substr(4), {{"a", Arg(a)}});  // the expression alone
            EXPECT_TRUE(r.defined()) << text.substr(0, 20);
        });
    }
}

TEST(SmallStack, DeepestTextsCheckExplainAndParseOnA32KiBThread) {
    for (const std::string& text : deep::texts()) {
        on_stack(deep::kSmall, [&] {
            const Specs specs{{"a", ValueSpec::array(DType::Float32, {3})}};
            EXPECT_EQ(check(text, specs).assigned.size(), 1u) << text.substr(0, 20);
            EXPECT_EQ(outline(text).statements.size(), 1u);
            EXPECT_EQ(parameters(text), std::vector<std::string>{"a"});
            EXPECT_EQ(targets(text), std::vector<std::string>{"c"});
            const parsed::Module m = parsed::parse(text);  // and destroyed on this thread
            EXPECT_EQ(m.statements.size(), 1u);
            Environment env = env_a();
            EXPECT_FALSE(cpu().explain(text, env).empty());
        });
    }
}

TEST(SmallStack, DeepestLiteralFoldsOnA32KiBThread) {
    const int n = syntax::kMaxNesting;
    on_stack(deep::kSmall, [&] {
        const auto f = fold_literal(repeat("-(", n / 2) + "1" + repeat(")", n / 2));  // two levels each
        ASSERT_TRUE(f.has_value());
        EXPECT_EQ(f->i, 1);  // an even count of minus signs
    });
}

TEST(SmallStack, DeepestTextsRunThroughTheCApiOnA32KiBThread) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr) << jitexpr_last_error();
    for (const std::string& text : deep::texts()) {
        on_stack(deep::kSmall, [&] {
            DLManagedTensor* a = to_dlpack(Array::from(std::vector<float>{1, -2, 3}, {}, Backend::Cpu));
            jitexpr_arg arg{};
            arg.kind = JITEXPR_ARG_TENSOR;
            arg.value.tensor = a;
            DLManagedTensor* out = nullptr;
            const std::string expr = text.substr(4);
            EXPECT_EQ(jitexpr_eval(rt, expr.c_str(), 1, &arg, &out), JITEXPR_OK) << jitexpr_last_error();
            if (out) out->deleter(out);
            a->deleter(a);
        });
    }
    jitexpr_runtime_destroy(rt);
}

TEST(SmallStack, ACachedDeepProgramIsDroppedOnA32KiBThread) {
    // The runtime keeps the parsed text; the runtime's end (and an eviction) frees it on
    // whatever thread that happens.
    on_stack(deep::kSmall, [&] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        o.cpu_threads = 1;
        Runtime rt(o);
        for (const std::string& text : deep::texts()) {
            Environment env = env_a();
            rt.run(text, env);
        }
    });
}

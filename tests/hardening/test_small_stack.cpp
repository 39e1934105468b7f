// The nesting limit holds on any thread (issue 17, item 7): a program nested as deeply as the
// parser allows (syntax::kMaxNesting) parses, lowers and runs on a thread with a 256 KiB stack
// (a Python thread after threading.stack_size(256 * 1024)) or 128 KiB (musl's default), because
// the parser and the lowering move to a stack of jitexpr's own when the caller's is short.
#include "core/stack.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/syntax.hpp"

#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <pthread.h>

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

// Runs fn on a new thread with a stack of `bytes` (in memory of our own, so that the test can
// also see how much of it was written: `used`, when given, gets the bytes below the top that fn's
// frames reached).
template <class F>
void on_stack(std::size_t bytes, F fn, std::size_t* used = nullptr) {
    struct Job {
        F* fn;
        std::exception_ptr error;
    } job{&fn, nullptr};
    std::vector<unsigned char> stack(bytes, 0xA5);
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstack(&attr, stack.data(), stack.size()), 0);
    pthread_t th;
    auto body = [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
            (*j->fn)();
        } catch (...) {
            j->error = std::current_exception();
        }
        return nullptr;
    };
    ASSERT_EQ(pthread_create(&th, &attr, body, &job), 0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
    if (used) {
        const auto first = std::find_if(stack.begin(), stack.end(), [](unsigned char c) { return c != 0xA5; });
        *used = static_cast<std::size_t>(stack.end() - first);
    }
    if (job.error) std::rethrow_exception(job.error);
}

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

// Hostile program text, end to end: through jit::Runtime on the CPU backend (a correct result or
// a clear, typed jit::Error) and through the code generator (the CUDA source never carries the
// user's bytes: names, comments and strings stay out; numbers are re-printed, not copied).
#include "tests/hardening/pipeline.hpp"

#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <pthread.h>

#include <cmath>
#include <exception>
#include <string>
#include <vector>

using namespace jit;

namespace {

Runtime& cpu() {
    static Runtime rt([] {
        RuntimeOptions o;
        o.backend = Backend::Cpu;
        o.disk_cache = false;
        o.cpu_threads = 2;
        return o;
    }());
    return rt;
}

const std::vector<float> kA = {1, 2, -3, 0.5f};
const std::vector<double> kB = {10, 20, 30, 40};

Environment env_ab() {
    return Environment{{"a", Arg(Array::from(kA, {}, Backend::Cpu))}, {"b", Arg(Array::from(kB, {}, Backend::Cpu))}};
}

std::string repeat(std::string_view s, std::size_t n) {
    std::string r;
    r.reserve(s.size() * n);
    for (std::size_t i = 0; i < n; ++i) r += s;
    return r;
}

// What jitexpr prints must not drive a terminal: no control bytes but newline and tab.
::testing::AssertionResult printable(const std::string& message) {
    for (unsigned char c : message)
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
            return ::testing::AssertionFailure() << "control byte 0x" << std::hex << int(c) << " in: " << message;
    return ::testing::AssertionSuccess();
}

// The text fails with exactly error type E, both through the runtime and through the front
// half; the message is printable and its span lies inside the text. Returns the message.
template <class E>
std::string expect_error(std::string_view text) {
    std::string message;
    Environment env = env_ab();
    try {
        cpu().run(text, env);
        ADD_FAILURE() << "no error for the text";
    } catch (const E& e) {
        message = e.what();
        EXPECT_TRUE(printable(message));
        if constexpr (std::is_base_of_v<SourceError, E>) {
            EXPECT_LE(e.span().begin, e.span().end);
            EXPECT_LE(e.span().end, text.size());
            EXPECT_FALSE(e.message().empty());
        }
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong error type: " << e.what();
    }
    try {
        jxharden::run_front(text);
        ADD_FAILURE() << "the front half accepted the text";
    } catch (const E&) {
    } catch (const std::exception& e) {
        ADD_FAILURE() << "front half: wrong error type: " << e.what();
    }
    return message;
}

// Evaluates on the CPU with a and b bound; returns the environment afterwards.
Environment run_ab(std::string_view text) {
    Environment env = env_ab();
    cpu().run(text, env);
    return env;
}

std::vector<float> floats(const Environment& env, const char* name) { return env.at(name).array().to_vector<float>(); }

std::vector<float> map_a(float (*f)(float)) {
    std::vector<float> r;
    for (float v : kA) r.push_back(f(v));
    return r;
}

// Runs `fn` on a thread with a 2 MiB stack (a quarter of the usual main-thread stack), so that
// recursion over a long input fails here in every build type, not only where frames are large.
template <class F>
void on_small_stack(F fn) {
    struct Job {
        F* fn;
        std::exception_ptr error;
    } job{&fn, nullptr};
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, std::size_t{2} << 20), 0);
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
    if (job.error) std::rethrow_exception(job.error);
}

// None of `fragments` occurs in any byte handed to NVRTC for `text`.
void expect_source_free_of(std::string_view text, const std::vector<std::string>& fragments) {
    const std::string src = jxharden::all_sources(jxharden::run_front(text));
    ASSERT_FALSE(src.empty());
    for (const std::string& f : fragments) EXPECT_EQ(src.find(f), std::string::npos) << "found in source: " << f;
}

// ---- comments may hold anything, and none of it reaches the source --------------------------

TEST(HostileComment, IncludeDirectiveInCommentIsIgnored) {
    const std::string text = "c = a + 1  # #include <stdio.h>\n";
    EXPECT_EQ(floats(run_ab(text), "c"), map_a([](float v) { return v + 1; }));
    expect_source_free_of(text, {"stdio", "#include <stdio.h>"});
}

TEST(HostileComment, WholeLineIncludeIsAComment) {
    const std::string text = "#include \"/etc/passwd\"\nc = a";
    EXPECT_EQ(floats(run_ab(text), "c"), kA);
    expect_source_free_of(text, {"/etc/passwd", "passwd"});
}

TEST(HostileComment, CommentTerminatorsAndCodeInCommentAreIgnored) {
    const std::string text = "c = a * 2 # */ } extern \"C\" __global__ void pwn_kernel() { __asm__(\"trap;\"); /*\n";
    EXPECT_EQ(floats(run_ab(text), "c"), map_a([](float v) { return v * 2; }));
    expect_source_free_of(text, {"pwn_kernel", "__asm__", "trap;", "*/ }"});
}

TEST(HostileComment, BackslashNewlineDoesNotContinueAComment) {
    // In C a backslash-newline would splice the next line into a // comment.
    const std::string text = "c = a # splice me \\\nd = a * 3";
    const Environment env = run_ab(text);
    EXPECT_EQ(floats(env, "c"), kA);
    EXPECT_EQ(floats(env, "d"), map_a([](float v) { return v * 3; }));
    expect_source_free_of(text, {"splice me"});
}

TEST(HostileComment, NulAndEscapeBytesInCommentAreIgnored) {
    static const char kText[] = "c = a - 1 # \0\x1b[2J\x7f after nul\n";
    const std::string text(kText, sizeof kText - 1);
    EXPECT_EQ(floats(run_ab(text), "c"), map_a([](float v) { return v - 1; }));
    expect_source_free_of(text, {"after nul", "\x1b[2J"});
}

// ---- C and CUDA syntax outside comments is a syntax error ----------------------------------

TEST(HostileSyntax, BlockCommentOpenerIsASyntaxError) { expect_error<ParseError>("c = a /* 2 */ + b"); }

TEST(HostileSyntax, BlockCommentCloserIsASyntaxError) { expect_error<ParseError>("c = a */ 2"); }

TEST(HostileSyntax, AStringAddedToANumberIsATypeError) {
    // A string literal is data: it never becomes kernel source, and arithmetic on it is refused.
    expect_error<TypeError>("c = a + \"1\"");
}

TEST(HostileSyntax, ExternCIsASyntaxError) { expect_error<ParseError>("extern \"C\" __global__ void f() {}"); }

TEST(HostileSyntax, AsmWithStringIsANameError) {
    const std::string m = expect_error<NameError>("c = __asm__(\"trap;\")");
    EXPECT_NE(m.find("unknown"), std::string::npos) << m;
}

TEST(HostileSyntax, AsmAsAFunctionIsANameError) {
    const std::string m = expect_error<NameError>("c = __asm__(a)");
    EXPECT_NE(m.find("unknown"), std::string::npos) << m;
}

TEST(HostileSyntax, BackslashNewlineIsASyntaxError) { expect_error<ParseError>("c = a + \\\n1"); }

TEST(HostileSyntax, PreprocessorDirectiveAfterCodeIsAComment) {
    // '#' always starts a comment: "c = a" is the whole statement.
    EXPECT_EQ(floats(run_ab("c = a #define a b"), "c"), kA);
}

TEST(HostileSyntax, DoubleSlashIsFloorDivision) {
    EXPECT_EQ(floats(run_ab("c = a // 2"), "c"), map_a([](float v) { return std::floor(v / 2); }));
}

// ---- bytes outside ASCII and control bytes ----------------------------------------------------

TEST(HostileBytes, UnicodeLookAlikesAreSyntaxErrorsNamingTheCharacter) {
    struct Case {
        const char* text;
        const char* says;
    };
    const Case cases[] = {
        {"c = a \xE2\x88\x92 b", "U+2212 (looks like '-'"},  // minus sign
        {"c = a \xC3\x97 b", "U+00D7 (looks like '*'"},      // multiplication sign
        {"c = a \xEF\xBC\x8B b", "U+FF0B (looks like '+'"},  // fullwidth plus
        {"c\xEF\xBC\x9D a", "U+FF1D (looks like '='"},       // fullwidth equals
        {"c = \xD0\xB0 + 1", "U+0430"},                      // Cyrillic a
        {"c = a\xC2\xA0+ 1", "U+00A0 (looks like a space"},  // no-break space
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        const std::string m = expect_error<ParseError>(c.text);
        EXPECT_NE(m.find(c.says), std::string::npos) << m;
    }
}

TEST(HostileBytes, InvalidUtf8IsASyntaxError) {
    const std::string m = expect_error<ParseError>("c = a + \xFF\xFE");
    EXPECT_NE(m.find("not valid UTF-8"), std::string::npos) << m;
}

TEST(HostileBytes, NulByteIsASyntaxErrorAndIsNotEchoed) {
    const std::string text("c = a\0 + 1", 10);
    const std::string m = expect_error<ParseError>(text);
    EXPECT_NE(m.find("control character 0x00"), std::string::npos) << m;
    EXPECT_EQ(m.find('\0'), std::string::npos);
}

TEST(HostileBytes, TerminalEscapeIsASyntaxErrorAndIsNotEchoed) {
    const std::string m = expect_error<ParseError>("c = a + \x1b]0;owned\x07 1");
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
}

// ---- size and depth limits ---------------------------------------------------------------------

TEST(HostileSize, MegabyteIdentifierIsAClearError) {
    // The text is within the size limit; the name is not.
    const std::string text = "c = " + repeat("x", (std::size_t{1} << 20) - 8);
    ASSERT_LE(text.size(), syntax::kMaxTextBytes);
    const std::string m = expect_error<ParseError>(text);
    EXPECT_NE(m.find("identifier too long"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileSize, TextOverOneMegabyteIsAClearError) {
    const std::string m = expect_error<ParseError>("c = a + " + repeat("1 + ", 300000) + "1");
    EXPECT_NE(m.find("program too large"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileSize, LongestAllowedNameEvaluatesAndStaysOutOfTheSource) {
    const std::string name = "n" + repeat("q", syntax::kMaxIdentifier - 1);
    const std::string text = "c = " + name + " * 2";
    Environment env{{name, Arg(Array::from(kA, {}, Backend::Cpu))}};
    cpu().run(text, env);
    EXPECT_EQ(env.at("c").array().to_vector<float>(), map_a([](float v) { return v * 2; }));
    auto bindings = jxharden::fixed_bindings();
    bindings[name] = bindings.at("a");
    const std::string src = jxharden::all_sources(jxharden::run_front(text, bindings));
    EXPECT_EQ(src.find(name), std::string::npos);
}

TEST(HostileSize, HundredThousandTermSumIsCorrect) {
    const std::string text = "c = a" + repeat(" + a", 99999);
    on_small_stack([&] { EXPECT_EQ(floats(run_ab(text), "c"), map_a([](float v) { return v * 100000; })); });
}

TEST(HostileSize, HundredThousandTermSumEmitsOnASmallStack) {
    const std::string text = "c = a" + repeat(" + a", 99999);
    on_small_stack([&] {
        // No stage limit: one stage of 100,000 nodes, which the emitter walks without recursion.
        const auto r = jxharden::run_front(text, jxharden::fixed_bindings(), dsl::Limits{});
        ASSERT_EQ(r.emitted.size(), 2u);
        EXPECT_EQ(r.emitted[0].kernels.size(), 1u);
    });
}

TEST(HostileSize, HundredThousandTermPowerChainIsCorrect) {
    // Right-associative: folded from the right without recursion. 1 ** anything == 1.
    const std::string text = "c = o" + repeat(" ** o", 99999);
    on_small_stack([&] {
        Environment env{{"o", Arg(Array::from(std::vector<double>{1, 1, 1}, {}, Backend::Cpu))}};
        cpu().run(text, env);
        EXPECT_EQ(env.at("c").array().to_vector<double>(), (std::vector<double>{1, 1, 1}));
        auto bindings = jxharden::fixed_bindings();
        bindings["o"] = bindings.at("b");
        EXPECT_NO_THROW(jxharden::run_front(text, bindings));
    });
}

TEST(HostileSize, TenThousandStatementChainIsCorrect) {
    const std::string text = "c = a\n" + repeat("c = c + 1\n", 10000);
    on_small_stack([&] {
        EXPECT_EQ(floats(run_ab(text), "c"), map_a([](float v) { return v + 10000; }));
        EXPECT_NO_THROW(jxharden::run_front(text));
    });
}

TEST(HostileDepth, TenThousandNestedParenthesesIsAClearError) {
    const std::string m = expect_error<ParseError>("c = " + repeat("(", 10000) + "a" + repeat(")", 10000));
    EXPECT_NE(m.find("nested too deeply"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileDepth, TenThousandUnclosedParenthesesIsAClearError) {
    const std::string m = expect_error<ParseError>("c = " + repeat("(", 10000) + "a");
    EXPECT_NE(m.find("nested too deeply"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileDepth, TenThousandNestedCallsIsAClearError) {
    const std::string m = expect_error<ParseError>("c = " + repeat("sin(", 10000) + "a" + repeat(")", 10000));
    EXPECT_NE(m.find("nested too deeply"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileDepth, TenThousandPrefixOperatorsOfEachKindAreClearErrors) {
    for (const char* op : {"- ", "+", "~", "not "}) {
        SCOPED_TRACE(op);
        const std::string m = expect_error<ParseError>("c = " + repeat(op, 10000) + "i");
        EXPECT_NE(m.find("nested too deeply"), std::string::npos) << m.substr(0, 200);
    }
}

TEST(HostileDepth, TenThousandTernariesIsAClearError) {
    const std::string m = expect_error<ParseError>("c = " + repeat("a > 0 ? a : ", 10000) + "a");
    EXPECT_NE(m.find("nested too deeply"), std::string::npos) << m.substr(0, 200);
}

TEST(HostileDepth, ShortUnaryChainIsCorrect) {
    EXPECT_EQ(floats(run_ab("c = - - - - a"), "c"), kA);
    EXPECT_EQ(floats(run_ab("c = - - - a"), "c"), map_a([](float v) { return -v; }));
}

TEST(HostileDepth, UnaryChainAtTheNestingLimitIsCorrect) {
    // kMaxNesting is even: the signs cancel.
    static_assert(syntax::kMaxNesting % 2 == 0);
    const std::string text = "c = " + repeat("- ", syntax::kMaxNesting) + "a";
    EXPECT_EQ(floats(run_ab(text), "c"), kA);
    EXPECT_NO_THROW(jxharden::run_front(text));
}

TEST(HostileDepth, UnaryChainPastTheNestingLimitIsAClearError) {
    expect_error<ParseError>("c = " + repeat("- ", syntax::kMaxNesting + 1) + "a");
}

// ---- what reaches the generated source -------------------------------------------------------

TEST(HostileSource, UserNamesNeverReachTheSource) {
    // The same program under plain names and under names that are C/CUDA keywords, directives
    // and jitexpr's own generated identifiers gives byte-identical kernels.
    const auto& fixed = jxharden::fixed_bindings();
    std::map<std::string, dsl::Binding, std::less<>> plain{
        {"p", fixed.at("c")}, {"r", fixed.at("b")}, {"s", fixed.at("x")}};
    std::map<std::string, dsl::Binding, std::less<>> nasty{
        {"__asm__", fixed.at("c")}, {"include", fixed.at("b")}, {"jx_compute", fixed.at("x")}};
    const std::string a = jxharden::all_sources(jxharden::run_front("q = p * s + r; v = sum(q, axis=1)", plain));
    const std::string b = jxharden::all_sources(
        jxharden::run_front("__global__ = __asm__ * jx_compute + include; threadIdx = sum(__global__, axis=1)", nasty));
    EXPECT_EQ(a, b);
    EXPECT_EQ(b.find("__asm__"), std::string::npos);
}

TEST(HostileSource, CudaKeywordsAsNamesEvaluate) {
    Environment env{{"__asm__", Arg(Array::from(kA, {}, Backend::Cpu))}, {"extern", Arg(2.0)}};
    cpu().run("__global__ = __asm__ * extern; include = __global__ + 1", env);
    EXPECT_EQ(env.at("__global__").array().to_vector<float>(), map_a([](float v) { return v * 2; }));
    EXPECT_EQ(env.at("include").array().to_vector<float>(), map_a([](float v) { return v * 2 + 1; }));
}

TEST(HostileSource, NumbersAreRePrintedNotCopied) {
    const std::string literal = "0.100000000000000000000000000000000000000000000000001";
    const std::string text = "c = b + " + literal + " + 0x0001234567";
    expect_source_free_of(text, {literal, "0x0001234567"});
    const Environment env = run_ab(text);
    const auto c = env.at("c").array().to_vector<double>();
    for (std::size_t k = 0; k < kB.size(); ++k) EXPECT_EQ(c[k], kB[k] + 0.1 + 19088743.0);
}

TEST(HostileSource, CommentsAndSpacingDoNotChangeTheSource) {
    const std::string plain = jxharden::all_sources(jxharden::run_front("c = a*2+b"));
    const std::string noisy = jxharden::all_sources(
        jxharden::run_front("# header */ #include <x>\n  c   =  (a * 2)  +\tb  ;;  # end /* \\\n\n"));
    EXPECT_EQ(plain, noisy);
}

}  // namespace

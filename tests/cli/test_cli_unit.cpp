// The CLI's parts on their own: argument parsing, statement splitting, value printing,
// 16-bit float conversions, the random generator, completion candidates.
#include "cli.hpp"
#include "format.hpp"
#include "host_values.hpp"
#include "interrupt.hpp"
#include "progress.hpp"
#include "random.hpp"
#include "repl.hpp"
#include "session.hpp"
#include "statements.hpp"

#include "tests/support/small_stack.hpp"

#include <jit/error.hpp>
#include <jit/language.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using jit::Array;
using jit::Backend;
using jit::DType;
using namespace jit::cli;

// ---- arguments

TEST(CliArgs, CollectsOptionsInOrder) {
    CliOptions o = parse_args(
        {"--backend", "cpu", "--load", "a=a.npy", "-e", "b = a", "-ec = b", "script.jx", "--save=c=out.npy", "-v"});
    EXPECT_EQ(o.mode, CliOptions::Mode::Run);
    EXPECT_EQ(o.backend, Backend::Cpu);
    ASSERT_EQ(o.loads.size(), 1u);
    EXPECT_EQ(o.loads[0].name, "a");
    EXPECT_EQ(o.loads[0].file, "a.npy");
    EXPECT_EQ(o.exprs, (std::vector<std::string>{"b = a", "c = b"}));
    EXPECT_EQ(o.script, "script.jx");
    ASSERT_EQ(o.saves.size(), 1u);
    EXPECT_EQ(o.saves[0].file, "out.npy");
    EXPECT_TRUE(o.verbose);
}

TEST(CliArgs, DashIsStandardInput) { EXPECT_EQ(parse_args({"-"}).script, "-"); }

TEST(CliArgs, DoubleDashEndsOptions) { EXPECT_EQ(parse_args({"--", "-weird.jx"}).script, "-weird.jx"); }

TEST(CliArgs, UnknownOptionIsUsageError) { EXPECT_THROW(parse_args({"--nope"}), UsageError); }

TEST(CliArgs, MissingValueIsUsageError) {
    EXPECT_THROW(parse_args({"-e"}), UsageError);
    EXPECT_THROW(parse_args({"--load"}), UsageError);
}

TEST(CliArgs, TwoScriptsAreUsageError) { EXPECT_THROW(parse_args({"a.jx", "b.jx"}), UsageError); }

TEST(CliArgs, BadNameFileIsUsageError) {
    EXPECT_THROW(parse_name_file("x", "--save"), UsageError);
    EXPECT_THROW(parse_name_file("=f.npy", "--save"), UsageError);
    EXPECT_THROW(parse_name_file("2x=f.npy", "--save"), UsageError);
    EXPECT_THROW(parse_name_file("x=", "--save"), UsageError);
}

TEST(CliArgs, NameFileKeepsEqualsInTheFileName) {
    NameFile nf = parse_name_file("x=a=b.npy", "--load");
    EXPECT_EQ(nf.name, "x");
    EXPECT_EQ(nf.file, "a=b.npy");
}

TEST(CliArgs, CacheSubcommand) {
    CliOptions o = parse_args({"cache", "verify"});
    EXPECT_EQ(o.mode, CliOptions::Mode::Cache);
    EXPECT_EQ(o.cache_command, "verify");
    EXPECT_THROW(parse_args({"cache", "shrink"}), UsageError);
    EXPECT_THROW(parse_args({"cache"}), UsageError);
}

TEST(CliArgs, HelpAndVersion) {
    EXPECT_EQ(parse_args({"--help"}).mode, CliOptions::Mode::Help);
    EXPECT_EQ(parse_args({"--version"}).mode, CliOptions::Mode::Version);
}

// ---- statements

std::vector<std::string> texts(std::string_view program) {
    std::vector<std::string> out;
    for (const Chunk& c : split_statements(program)) out.push_back(c.text);
    return out;
}

TEST(CliStatements, SplitsOnSemicolonsAndNewlines) {
    EXPECT_EQ(texts("a = 1; b = 2\nc = 3"), (std::vector<std::string>{"a = 1", " b = 2", "c = 3"}));
}

TEST(CliStatements, KeepsOffsets) {
    auto chunks = split_statements("a = 1\n\n  b = 2");
    ASSERT_EQ(chunks.size(), 2u);
    EXPECT_EQ(chunks[1].offset, 7u);
    EXPECT_EQ(chunks[1].text, "  b = 2");
}

TEST(CliStatements, BlanksComments) {
    EXPECT_EQ(texts("a = 1  # one; two\n"), (std::vector<std::string>{"a = 1            "}));
}

TEST(CliStatements, JoinsLinesInsideBrackets) {
    EXPECT_EQ(texts("a = (1 +\n 2)\nb"), (std::vector<std::string>{"a = (1 +  2)", "b"}));
}

TEST(CliStatements, JoinsLinesEndingWithOperatorOrBackslash) {
    EXPECT_EQ(texts("a = 1 +\n2\nb = 3 \\\n+ 4"), (std::vector<std::string>{"a = 1 + 2", "b = 3   + 4"}));
}

TEST(CliStatements, SemicolonInsideStringDoesNotSplit) {
    EXPECT_EQ(texts("save(x, \"a;b.npy\")"), (std::vector<std::string>{"save(x, \"a;b.npy\")"}));
}

TEST(CliStatements, UnclosedStringIsParseError) {
    EXPECT_THROW(split_statements("x = load(\"a.npy)\ny"), jit::ParseError);
}

TEST(CliStatements, NeedsMoreInputWhileOpen) {
    EXPECT_TRUE(needs_more_input("a = (1 +"));
    EXPECT_TRUE(needs_more_input("a = 1 +"));
    EXPECT_TRUE(needs_more_input("a = 1 \\"));
    EXPECT_TRUE(needs_more_input("x = a and"));
    EXPECT_FALSE(needs_more_input("a = (1 + 2)"));
    EXPECT_FALSE(needs_more_input("a = 1  # comment +"));
}

// ---- printing

TEST(CliFormat, Float32VectorAlignsDecimalPoints) {
    Array a = Array::from(std::vector<float>{1.0f, 2.5f, -3.25f}, {}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([ 1.  ,  2.5 , -3.25], dtype=float32)  # shape (3,)");
}

TEST(CliFormat, FloatsUseShortestRoundTripDigitsOfTheirDtype) {
    Array f = Array::from(std::vector<float>{0.1f}, {}, Backend::Cpu);
    Array d = Array::from(std::vector<double>{0.1 + 0.2}, {}, Backend::Cpu);
    EXPECT_EQ(format_array(f), "array([0.1], dtype=float32)  # shape (1,)");
    EXPECT_EQ(format_array(d), "array([0.30000000000000004], dtype=float64)  # shape (1,)");
}

TEST(CliFormat, SmallAndLargeMagnitudesUseScientificNotation) {
    Array a = Array::from(std::vector<double>{1e-7, 1.5, 1e10}, {}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([1.0e-07, 1.5e+00, 1.0e+10], dtype=float64)  # shape (3,)");
}

TEST(CliFormat, NonFiniteValues) {
    Array a = Array::from(std::vector<double>{NAN, -INFINITY, 1.0}, {}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([ nan, -inf,   1.], dtype=float64)  # shape (3,)");
}

TEST(CliFormat, IntegersRightAligned) {
    Array a = Array::from(std::vector<std::int32_t>{1, -20, 300, 4, 5, 6}, {2, 3}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([[  1, -20, 300],\n       [  4,   5,   6]], dtype=int32)  # shape (2, 3)");
}

TEST(CliFormat, ThreeDimensionalBlocksSeparatedByBlankLine) {
    Array a = Array::from(std::vector<std::int8_t>{0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, Backend::Cpu);
    EXPECT_EQ(format_array(a),
              "array([[[0, 1],\n        [2, 3]],\n\n       [[4, 5],\n        [6, 7]]], dtype=int8)  # shape (2, 2, 2)");
}

TEST(CliFormat, BoolAsTrueFalse) {
    bool v[3] = {true, false, true};
    Array a = Array::from_host(v, DType::Bool, {3}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([ True, False,  True], dtype=bool)  # shape (3,)");
}

TEST(CliFormat, Complex) {
    Array a = Array::from(std::vector<std::complex<double>>{{1, 2}, {3, -4}}, {}, Backend::Cpu);
    EXPECT_EQ(format_array(a), "array([1.+2.j, 3.-4.j], dtype=complex128)  # shape (2,)");
}

TEST(CliFormat, ZeroDimensional) {
    const double v = 2.5;
    EXPECT_EQ(format_array(Array::from_host(&v, DType::Float64, {}, Backend::Cpu)),
              "array(2.5, dtype=float64)  # shape ()");
}

TEST(CliFormat, Empty) {
    EXPECT_EQ(format_array(Array::zeros(DType::Int64, {0, 2}, Backend::Cpu)), "array([], dtype=int64)  # shape (0, 2)");
}

TEST(CliFormat, SummarisesAboveThreshold) {
    std::vector<std::int64_t> v(1001);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i);
    EXPECT_EQ(format_array(Array::from(v, {}, Backend::Cpu)),
              "array([   0,    1,    2, ...,  998,  999, 1000], dtype=int64)  # shape (1001,)");
}

TEST(CliFormat, DoesNotSummariseAtThreshold) {
    std::vector<std::int64_t> v(1000, 7);
    EXPECT_EQ(format_array(Array::from(v, {}, Backend::Cpu)).find("..."), std::string::npos);
}

TEST(CliFormat, WrapsLongRowsAt75Columns) {
    std::vector<double> v(30, 0.125);
    std::string s = format_array(Array::from(v, {}, Backend::Cpu));
    std::size_t start = 0;
    while (start < s.size()) {
        std::size_t end = s.find('\n', start);
        if (end == std::string::npos) break;  // the last line carries the dtype suffix
        EXPECT_LE(end - start, 75u);
        start = end + 1;
    }
    EXPECT_NE(s.find("\n       0.125"), std::string::npos) << s;
}

TEST(CliFormat, Float16ShortestDigits) {
    std::uint16_t h[2] = {double_to_half(0.1), double_to_half(-2.0)};
    EXPECT_EQ(format_array(Array::from_host(h, DType::Float16, {2}, Backend::Cpu)),
              "array([ 0.1, -2. ], dtype=float16)  # shape (2,)");
}

// ---- 16-bit floats

TEST(CliHostValues, HalfRoundsToNearestEven) {
    EXPECT_EQ(double_to_half(1.0), 0x3C00);
    EXPECT_EQ(double_to_half(65504.0), 0x7BFF);
    EXPECT_EQ(double_to_half(65520.0), 0x7C00);        // rounds up to infinity
    EXPECT_EQ(double_to_half(1.0 + 0x1p-11), 0x3C00);  // halfway: to even
    EXPECT_EQ(double_to_half(1.0 + 3 * 0x1p-11), 0x3C02);
    EXPECT_EQ(double_to_half(0x1p-24), 0x0001);  // smallest subnormal
    EXPECT_EQ(double_to_half(-0.0), 0x8000);
    EXPECT_TRUE(std::isnan(half_to_double(double_to_half(NAN))));
}

TEST(CliHostValues, HalfRoundTripsEveryPattern) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const double v = half_to_double(bits);
        if (std::isnan(v)) continue;
        ASSERT_EQ(double_to_half(v), bits) << b;
    }
}

TEST(CliHostValues, Bfloat16) {
    EXPECT_EQ(double_to_bfloat16(1.0), 0x3F80);
    EXPECT_EQ(double_to_bfloat16(-2.0), 0xC000);
    EXPECT_EQ(bfloat16_to_double(0x4049), 3.140625);
    EXPECT_EQ(double_to_bfloat16(3.14159), 0x4049);
}

TEST(CliHostValues, FloatToIntegerSaturates) {
    std::int8_t v = 0;
    store(&v, DType::Int8, Number::of_float(1e9));
    EXPECT_EQ(v, 127);
    store(&v, DType::Int8, Number::of_float(-2.7));
    EXPECT_EQ(v, -2);
}

// ---- random

TEST(CliRandom, SameSeedSameSequence) {
    Xoshiro256 a(42), b(42), c(43);
    for (int i = 0; i < 10; ++i) {
        const auto x = a.next();
        EXPECT_EQ(x, b.next());
        EXPECT_NE(x, c.next());
    }
}

TEST(CliRandom, UniformInUnitInterval) {
    Xoshiro256 r(1);
    for (int i = 0; i < 10000; ++i) {
        const double u = r.uniform();
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
}

// ---- completion

TEST(CliCompletion, OffersVariablesFunctionsAndCommands) {
    jit::RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    Session s(o);
    s.env().insert_or_assign("velocity", jit::Arg(1.0));
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
        return std::find(v.begin(), v.end(), x) != v.end();
    };
    EXPECT_TRUE(has(completions(s, "y = ", "vel"), "velocity"));
    EXPECT_TRUE(has(completions(s, "y = ", "arcs"), "arcsin"));
    EXPECT_TRUE(has(completions(s, "y = ", "asi"), "asin"));
    EXPECT_TRUE(has(completions(s, "", "lin"), "linspace"));
    EXPECT_EQ(completions(s, "", ":ti"), (std::vector<std::string>{":time"}));
    EXPECT_EQ(completions(s, ":backend ", "c"), (std::vector<std::string>{"cpu", "cuda"}));
}

// ---- a small stack (issue 34, item 2)

std::string repeat(std::string_view s, int n) {
    std::string r;
    for (int i = 0; i < n; ++i) r += s;
    return r;
}

// The deepest statements the language accepts, constructors among them (nested constructors
// and constructors around runtime calls recurse through the session's own walks), run by a
// session on a thread with a 32 KiB stack.
TEST(CliSmallStack, DeepestStatementsRunOnA32KiBThread) {
    constexpr int n = 200;  // syntax::kMaxNesting
    const std::vector<std::pair<std::string, double>> cases{
        {"x = arange(3.0); y = " + repeat("sin(", n - 1) + "x" + repeat(")", n - 1) + "; sum(y * 0) + 1", 1.0},
        {"x = arange(3.0); y = " + repeat("abs(", n - 1) + "x" + repeat(")", n - 1) + "; sum(y)", 3.0},
        {"y = " + repeat("full(1, ", n) + "1" + repeat(")", n) + "; sum(y)", 1.0},
        {"y = " + repeat("sum(arange(", n / 2) + "3" + repeat("))", n / 2) + "; y", 3.0},
        {repeat("sum(", n - 1) + "zeros(2) + 1" + repeat(")", n - 1), 2.0},
    };
    for (const auto& [text, want] : cases) {
#if defined(__SANITIZE_ADDRESS__)
        constexpr std::size_t kSmall = 128 << 10;  // AddressSanitizer's frames are several times larger
#else
        constexpr std::size_t kSmall = 32 << 10;
#endif
        jit::testing::on_stack(kSmall, [&, &text = text, &want = want] {
            jit::RuntimeOptions o;
            o.backend = Backend::Cpu;
            o.disk_cache = false;
            o.cpu_threads = 1;
            Session s(o);
            double got = -1;
            s.run(text, [&](const Array& a) { got = a.item<double>(); });
            EXPECT_EQ(got, want) << text.substr(0, 40);
            EXPECT_FALSE(s.explain("z = " + repeat("(", n) + "1" + repeat(")", n)).empty());
        });
    }
}

}  // namespace

// ---- long work (issue 23)

TEST(Interrupted, SaysWhichArraysMayBePartlyWritten) {
    EXPECT_EQ(jit::cli::interrupted_text(jit::CancelledError()), "interrupted");
    EXPECT_EQ(jit::cli::interrupted_text(jit::CancelledError({"x"})),
              "interrupted; x may be partly written (it was being written in place)");
    EXPECT_EQ(jit::cli::interrupted_text(jit::CancelledError({"x", "y", "z"})),
              "interrupted; x, y and z may be partly written (they were being written in place)");
}

TEST(ProgressText, ElementsWithRateAndTimeLeft) {
    jit::Progress p;
    p.phase = jit::Progress::Phase::Run;
    p.unit = jit::Progress::Unit::Elements;
    p.done = 2500000000;
    p.total = 10000000000;
    p.elapsed_s = 2.5;
    EXPECT_EQ(jit::cli::ProgressLine::text(p), "running: 2.5G of 10.0G elements (25%), 1.0G elements/s, 8 s left");
}

TEST(ProgressText, BytesOfAFileAndKernelsOfACompile) {
    jit::Progress p;
    p.phase = jit::Progress::Phase::Save;
    p.unit = jit::Progress::Unit::Bytes;
    p.done = std::uint64_t{3} << 30;
    p.total = std::uint64_t{12} << 30;
    p.elapsed_s = 3;
    EXPECT_EQ(jit::cli::ProgressLine::text(p), "saving: 3.0 GiB of 12.0 GiB (25%), 1.0 GiB/s, 9 s left");
    jit::Progress k;
    k.phase = jit::Progress::Phase::Compile;
    k.unit = jit::Progress::Unit::Kernels;
    k.done = 3;
    k.total = 7;
    EXPECT_EQ(jit::cli::ProgressLine::text(k), "compiling: 3 of 7 kernels");
}

TEST(ProgressLine, OffWhenNotATerminalUnlessForced) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    EXPECT_FALSE(jit::cli::ProgressLine(jit::cli::ProgressLine::Mode::Auto, fds[1]).enabled());
    EXPECT_TRUE(jit::cli::ProgressLine(jit::cli::ProgressLine::Mode::On, fds[1]).enabled());
    EXPECT_FALSE(jit::cli::ProgressLine(jit::cli::ProgressLine::Mode::Off, fds[1]).enabled());
    ::close(fds[0]);
    ::close(fds[1]);
}

TEST(CliArgs, EveryOptionOfTheTableParses) {
    for (const jit::cli::OptionDoc& d : jit::cli::option_docs()) {
        const std::string flags = d.flags;
        const std::string name = flags.substr(flags.rfind(", ") == std::string::npos ? 0 : flags.rfind(", ") + 2);
        const std::string opt = name.substr(0, name.find(' '));
        const bool takes_value = name.find(' ') != std::string::npos;
        std::vector<std::string> args{opt};
        if (takes_value) {
            const std::string arg = name.substr(name.find(' ') + 1);
            args.push_back(arg == "B"           ? "cpu"
                           : arg == "N"         ? "2"
                           : arg == "on|off"    ? "off"
                           : arg == "MODE"      ? "direct"
                           : arg == "KIND"      ? "base"
                           : arg == "NAME=FILE" ? "x=x.npy"
                           : arg == "SIZE"      ? "4GiB"
                           : arg == "GBS"       ? "20"
                           : arg == "OPTIONS"   ? "--Ofast-compile=max"
                                                : "value");
        }
        EXPECT_NO_THROW(jit::cli::parse_args(args)) << opt;
    }
}

TEST(CliArgs, ThreadsAndTimeAndQuiet) {
    const jit::cli::CliOptions o = jit::cli::parse_args({"-t", "3", "--time", "-q", "--progress", "-e", "1"});
    EXPECT_EQ(o.threads, 3);
    EXPECT_TRUE(o.time);
    EXPECT_TRUE(o.quiet);
    EXPECT_TRUE(o.progress);
    EXPECT_EQ(jit::cli::parse_args({"--threads=5000"}).threads, 1024);  // the documented clamp
    EXPECT_THROW(jit::cli::parse_args({"--threads", "many"}), jit::cli::UsageError);
    EXPECT_THROW(jit::cli::parse_args({"--tiered", "maybe"}), jit::cli::UsageError);
}

TEST(CliArgs, DeviceIsAnOrdinalThatReachesTheRuntimeOptions) {
    EXPECT_EQ(jit::cli::runtime_options(jit::cli::parse_args({"--device", "1", "-e", "1"})).device, 1);
    EXPECT_EQ(jit::cli::parse_args({"--device=0"}).device, 0);
    for (const char* bad : {"-1", "one", "1.0", ""})
        EXPECT_THROW(jit::cli::parse_args({"--device", bad}), jit::cli::UsageError) << bad;
}

TEST(CliArgs, OptionsReachTheRuntimeOptions) {
    const jit::cli::CliOptions o =
        jit::cli::parse_args({"--threads", "2", "--no-disk-cache", "--fast-math", "--tiered", "off", "--cache-dir",
                              "/tmp/c", "--nvrtc-options", "-lineinfo --Ofast-compile=max", "--show-kernels"});
    const jit::RuntimeOptions r = jit::cli::runtime_options(o);
    EXPECT_EQ(r.cpu_threads, 2);
    EXPECT_FALSE(r.disk_cache);
    EXPECT_TRUE(r.fast_math);
    EXPECT_FALSE(r.tiered_compile);
    EXPECT_EQ(r.cache_dir, "/tmp/c");
    EXPECT_EQ(r.nvrtc_options, (std::vector<std::string>{"-lineinfo", "--Ofast-compile=max"}));
    EXPECT_TRUE(r.show_kernels);
}

TEST(Banner, EveryLineFitsEightyColumns) {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Auto;
    o.disk_cache = false;
    jit::cli::Session s(o);
    const std::string b = jit::cli::banner_text(s);
    std::size_t start = 0;
    for (std::size_t nl; (nl = b.find('\n', start)) != std::string::npos; start = nl + 1)
        EXPECT_LE(nl - start, 80u) << b.substr(start, nl - start);
}

TEST(CliReference, HelpManPageAndDocsNameEveryOptionAndCommand) {
    const std::string help = jit::cli::usage_text(), man = jit::cli::man_page(), md = jit::cli::markdown_reference();
    auto roff = [](std::string s) {
        std::string out;
        for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
        return out;
    };
    for (const jit::cli::OptionDoc& d : jit::cli::option_docs()) {
        EXPECT_NE(help.find(d.flags), std::string::npos) << d.flags;
        EXPECT_NE(man.find(".B " + roff(d.flags) + "\n"), std::string::npos) << d.flags;
        std::string cell;  // a table cell: '|' escaped
        for (char ch : d.flags) cell += ch == '|' ? std::string("\\|") : std::string(1, ch);
        EXPECT_NE(md.find("`" + cell + "`"), std::string::npos) << d.flags;
        if (!d.env.empty()) {
            EXPECT_NE(help.find(d.env), std::string::npos) << d.env;
            EXPECT_NE(man.find(roff(d.env)), std::string::npos) << d.env;
        }
    }
    for (const jit::cli::CommandDoc& c : jit::cli::repl_command_docs()) {
        EXPECT_NE(help.find(c.name), std::string::npos) << c.name;
        EXPECT_NE(man.find(".B " + roff(c.name) + "\n"), std::string::npos) << c.name;
    }
}

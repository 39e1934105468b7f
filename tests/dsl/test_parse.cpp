// Parser: the tree shape for every construct, the spans, and the limits.
#include "dsl/syntax.hpp"
#include "tests/dsl/parse_dump.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace {

using jit::ParseError;
using jit::SourceSpan;
using jit::syntax::Expr;
using jit::syntax::ExprKind;
using jit::syntax::Module;
using jit::syntax::parse;
using jit::syntax::testing::dump;
using jit::syntax::testing::spellings;

// The single statement's expression, rendered.
std::string tree(const std::string& text) {
    Module m = parse(text);
    EXPECT_EQ(m.statements.size(), 1u) << text;
    return m.statements.empty() ? "" : dump(*m.statements[0].value);
}

// The single statement's expression node.
const Expr& only_expr(const Module& m) {
    EXPECT_EQ(m.statements.size(), 1u);
    return *m.statements.at(0).value;
}

std::string slice(const std::string& text, SourceSpan s) { return text.substr(s.begin, s.end - s.begin); }

// The ParseError's bare message for `text` ("" when it parses).
std::string error_of(const std::string& text) {
    try {
        parse(text);
    } catch (const ParseError& e) {
        return e.message();
    }
    return "";
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

const std::string kTooDeep = "expression nested too deeply (more than 200 levels)";

// ---- literals --------------------------------------------------------------------------------

TEST(ParseLiteral, DecimalIntegerKeepsValueAndText) {
    Module m = parse("12345");
    const Expr& e = only_expr(m);
    EXPECT_EQ(e.kind, ExprKind::Int);
    EXPECT_EQ(e.int_value, 12345u);
    EXPECT_EQ(e.text, "12345");
}

TEST(ParseLiteral, HexIntegerInEitherCase) {
    EXPECT_EQ(only_expr(parse("0x1F")).int_value, 31u);
    EXPECT_EQ(only_expr(parse("0XfF")).int_value, 255u);
    EXPECT_EQ(only_expr(parse("0x1F")).text, "0x1F");
}

TEST(ParseLiteral, LargestUint64Fits) {
    EXPECT_EQ(only_expr(parse("18446744073709551615")).int_value, std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(only_expr(parse("0xFFFFFFFFFFFFFFFF")).int_value, std::numeric_limits<std::uint64_t>::max());
}

TEST(ParseLiteral, IntegerPastUint64IsKeptAsTextForExactArithmetic) {
    // Python integers have no bound: lowering folds 18446744073709551616 // 2 exactly and
    // rejects a literal only where it must become an integer dtype.
    const auto m = parse("18446744073709551616");
    EXPECT_TRUE(only_expr(m).int_big);
    EXPECT_EQ(only_expr(m).text, "18446744073709551616");
    EXPECT_TRUE(only_expr(parse("0x10000000000000000")).int_big);
    EXPECT_FALSE(only_expr(parse("18446744073709551615")).int_big);
}

TEST(ParseLiteral, IntegerOfMoreThan2000DigitsIsAnError) {
    EXPECT_EQ(error_of(std::string(2001, '7')), "integer literal too long (more than 2000 digits)");
    EXPECT_EQ(only_expr(parse(std::string(2000, '7'))).text.size(), 2000u);
}

TEST(ParseLiteral, FloatForms) {
    struct Case {
        const char* text;
        double value;
    } cases[] = {{"1.", 1.0},         {".5", 0.5},    {"1.25", 1.25}, {"1e-3", 1e-3},
                 {"2.5E+10", 2.5e10}, {"3e2", 300.0}, {"1.e2", 100.0}};
    for (const Case& c : cases) {
        Module m = parse(c.text);
        const Expr& e = only_expr(m);
        EXPECT_EQ(e.kind, ExprKind::Float) << c.text;
        EXPECT_EQ(e.float_value, c.value) << c.text;
        EXPECT_EQ(e.text, c.text);
    }
}

TEST(ParseLiteral, FloatRoundTripsExactly) {
    EXPECT_EQ(only_expr(parse("0.1")).float_value, 0.1);
    EXPECT_EQ(only_expr(parse("2.2250738585072014e-308")).float_value, 2.2250738585072014e-308);
    EXPECT_EQ(only_expr(parse("1.7976931348623157e308")).float_value, std::numeric_limits<double>::max());
}

TEST(ParseLiteral, FloatUnderflowRoundsToZeroAndOverflowIsInfinityAsInPython) {
    EXPECT_EQ(only_expr(parse("1e-400")).float_value, 0.0);
    EXPECT_EQ(only_expr(parse("1e400")).float_value, std::numeric_limits<double>::infinity());
    EXPECT_EQ(only_expr(parse("1e400j")).float_value, std::numeric_limits<double>::infinity());
}

TEST(ParseLiteral, PythonsBinaryOctalAndUnderscoredNumbers) {
    struct Case {
        const char* text;
        std::uint64_t value;
    } ints[] = {{"0b1011", 11},
                {"0B1010_1010", 170},
                {"0o777", 511},
                {"0O7_7", 63},
                {"0x_ff", 255},
                {"1_000_000", 1000000},
                {"0b"
                 "1111111111111111111111111111111111111111111111111111111111111111",
                 ~0ULL}};
    for (const Case& c : ints) {
        Module m = parse(c.text);
        EXPECT_EQ(only_expr(m).kind, ExprKind::Int) << c.text;
        EXPECT_EQ(only_expr(m).int_value, c.value) << c.text;
    }
    EXPECT_EQ(only_expr(parse("1_0.2_5e1_0")).float_value, 10.25e10);
    EXPECT_EQ(only_expr(parse("1_5j")).float_value, 15.0);
    EXPECT_TRUE(only_expr(parse("0b1"
                                "0000000000000000000000000000000000000000000000000000000000000000"))
                    .int_big);
    for (const char* bad : {"0b2", "0o8", "1__0", "1_", "0x", "0b", "1_.5", "1e_5"})
        EXPECT_NE(error_of(bad), "") << bad;
}

TEST(ParseLiteral, ImaginaryLiteralsAsPythonWritesThem) {
    struct Case {
        const char* text;
        double imag;
    } cases[] = {{"1j", 1.0},   {"3J", 3.0},     {"2.5e-3j", 2.5e-3},
                 {"0j", 0.0},   {".5j", 0.5},    {"1.j", 1.0},
                 {"007j", 7.0}, {"1E2J", 100.0}, {"123456789012345678901234567890j", 1.2345678901234568e29}};
    for (const Case& c : cases) {
        Module m = parse(c.text);
        const Expr& e = only_expr(m);
        EXPECT_EQ(e.kind, ExprKind::Imag) << c.text;
        EXPECT_EQ(e.float_value, c.imag) << c.text;
        EXPECT_EQ(e.text, c.text);
    }
}

TEST(ParseLiteral, ImaginaryLiteralInAnExpression) {
    EXPECT_EQ(dump(only_expr(parse("a + 2j*b"))), "(a + (2j * b))");
    EXPECT_EQ(dump(only_expr(parse("-1j"))), "(- 1j)");
}

TEST(ParseLiteral, MalformedImaginaryLiteralsAreErrors) {
    EXPECT_EQ(error_of("0x1j"), "invalid number literal '0x1j'");
    EXPECT_EQ(error_of("1jj"), "invalid number literal '1jj'");
    EXPECT_EQ(error_of("2jx"), "invalid number literal '2jx'");
}

TEST(ParseLiteral, TrueAndFalseAreBools) {
    Module mt = parse("True");
    const Expr& t = only_expr(mt);
    EXPECT_EQ(t.kind, ExprKind::Bool);
    EXPECT_TRUE(t.bool_value);
    Module mf = parse("False");
    const Expr& f = only_expr(mf);
    EXPECT_EQ(f.kind, ExprKind::Bool);
    EXPECT_FALSE(f.bool_value);
}

TEST(ParseLiteral, KeywordPrefixedWordsAreNames) {
    for (const char* w : {"Truex", "notx", "and_", "or2", "true", "None"}) {
        Module m = parse(w);
        const Expr& e = only_expr(m);
        EXPECT_EQ(e.kind, ExprKind::Name) << w;
        EXPECT_EQ(e.text, w);
    }
}

TEST(ParseLiteral, NumberGluedToLettersIsAnError) {
    EXPECT_EQ(error_of("12abc"), "invalid number literal '12abc'");
    EXPECT_EQ(error_of("1.5.2"), "invalid number literal '1.5.2'");
    EXPECT_EQ(error_of("0x1G"), "invalid number literal '0x1G'");
}

// ---- string literals ---------------------------------------------------------------------------

// The single statement's string value and kind.
std::pair<ExprKind, std::string> string_of(const std::string& text) {
    Module m = parse(text);
    const Expr& e = only_expr(m);
    return {e.kind, e.text};
}

TEST(ParseString, SingleAndDoubleQuotesGiveTheSameValue) {
    EXPECT_EQ(string_of("'abc'"), std::make_pair(ExprKind::Str, std::string("abc")));
    EXPECT_EQ(string_of("\"abc\""), std::make_pair(ExprKind::Str, std::string("abc")));
    EXPECT_EQ(string_of("''"), std::make_pair(ExprKind::Str, std::string()));
}

TEST(ParseString, BytesPrefixInEitherCaseMakesBytes) {
    EXPECT_EQ(string_of("b'ab'"), std::make_pair(ExprKind::Bytes, std::string("ab")));
    EXPECT_EQ(string_of("B\"ab\""), std::make_pair(ExprKind::Bytes, std::string("ab")));
    EXPECT_EQ(string_of("u'ab'"), std::make_pair(ExprKind::Str, std::string("ab")));
}

TEST(ParseString, EscapesAreReadAsPythonReadsThem) {
    EXPECT_EQ(string_of(R"('a\'b\"c\\d')").second, "a'b\"c\\d");
    EXPECT_EQ(string_of(R"('\n\t\r\a\b\f\v')").second, "\n\t\r\a\b\f\v");
    EXPECT_EQ(string_of(R"('\x41\101\0')").second, std::string("AA\0", 3));
    EXPECT_EQ(string_of(R"('\u00e9\U0001F600')").second, "\xC3\xA9\xF0\x9F\x98\x80");
    EXPECT_EQ(string_of(R"(b'\xff\377')").second, "\xFF\xFF");
}

TEST(ParseString, AnUnknownEscapeKeepsItsBackslash) {
    EXPECT_EQ(string_of(R"('\d\q')").second, "\\d\\q");
    EXPECT_EQ(string_of(R"(b'\u00e9')").second, "\\u00e9");  // not an escape in bytes
}

TEST(ParseString, RawStringsKeepBackslashes) {
    EXPECT_EQ(string_of(R"(r'\d+\'')").second, "\\d+\\'");
    EXPECT_EQ(string_of(R"(rb'\x41')"), std::make_pair(ExprKind::Bytes, std::string("\\x41")));
    EXPECT_EQ(string_of(R"(BR'\n')"), std::make_pair(ExprKind::Bytes, std::string("\\n")));
}

TEST(ParseString, TripleQuotedStringsSpanLines) {
    EXPECT_EQ(string_of("'''a\nb'c'''").second, "a\nb'c");
    EXPECT_EQ(string_of("\"\"\"\"\"\"").second, "");
}

TEST(ParseString, AdjacentLiteralsAreJoined) {
    EXPECT_EQ(string_of("'ab' \"cd\"").second, "abcd");
    EXPECT_EQ(string_of("('ab'\n 'cd')").second, "abcd");
    EXPECT_EQ(string_of("b'a' b'b'"), std::make_pair(ExprKind::Bytes, std::string("ab")));
}

TEST(ParseString, NonAsciiTextIsKeptAsUtf8) { EXPECT_EQ(string_of("'Z\xC3\xBCrich'").second, "Z\xC3\xBCrich"); }

TEST(ParseString, HashAndSeparatorsInsideAreText) {
    Module m = parse("x = 'a # b; c'\ny = 1");
    ASSERT_EQ(m.statements.size(), 2u);
    EXPECT_EQ(m.statements[0].value->text, "a # b; c");
}

TEST(ParseString, BracketsInsideDoNotCount) { EXPECT_EQ(tree("f('(((', ']')"), "f('(((', ']')"); }

TEST(ParseString, ComparedLikeAnyOperand) {
    EXPECT_EQ(tree("s == 'Oslo'"), "(s == 'Oslo')");
    EXPECT_EQ(tree("contains(s, b'inc')"), "contains(s, b'inc')");
}

TEST(ParseString, SpanCoversQuotesAndPrefix) {
    const std::string text = "s == rb'x' b'y'";
    Module m = parse(text);
    EXPECT_EQ(slice(text, only_expr(m).operands.at(1)->span), "rb'x' b'y'");
}

TEST(ParseString, UnterminatedStringIsAnErrorAtItsQuote) {
    EXPECT_EQ(error_of("s == 'abc"), "unterminated string literal");
    EXPECT_EQ(error_of("s == 'abc\n'"), "unterminated string literal");
    EXPECT_EQ(error_of("s == '''abc"), "unterminated triple-quoted string literal");
    EXPECT_EQ(error_of(R"(s == 'abc\')"), "unterminated string literal");
}

TEST(ParseString, BadEscapesAreErrors) {
    EXPECT_EQ(error_of(R"('\x4')"), "truncated \\xXX escape in a string literal (2 hexadecimal digits)");
    EXPECT_EQ(error_of(R"('\u12')"), "truncated \\uXXXX escape in a string literal (4 hexadecimal digits)");
    EXPECT_EQ(error_of(R"('\U00110000')"), "illegal Unicode character: past U+10FFFF");
    EXPECT_EQ(error_of(R"('\ud800')"), "a lone surrogate (U+D800) cannot be in a jitexpr string");
    EXPECT_EQ(error_of(R"('\N{DASH}')"), "\\N{...} escapes are not supported: write the character itself, or \\uXXXX");
    EXPECT_EQ(error_of(R"(b'\777')"), "octal escape past \\377 in a bytes literal (a byte is at most 255)");
}

TEST(ParseString, BytesTakeAsciiOnly) {
    EXPECT_EQ(error_of("b'Z\xC3\xBCrich'"), "bytes can only contain ASCII literal characters: write others as \\xNN");
}

TEST(ParseString, BytesBesideStrIsAnError) {
    EXPECT_EQ(error_of("'a' b'b'"), "cannot mix bytes and str literals (b'...' beside '...')");
}

TEST(ParseString, InvalidUtf8InsideIsAnError) {
    EXPECT_EQ(error_of("'a\xFF'"), "unexpected byte 0xFF (the text is not valid UTF-8)");
}

TEST(ParseString, ControlBytesInsideAreErrors) {
    EXPECT_EQ(error_of(std::string("'a\0b'", 5)),
              "control character 0x00 in a string literal: write it as the escape \\x00");
    EXPECT_EQ(error_of("b'\x1b[2J'"), "control character 0x1B in a bytes literal: write it as the escape \\x1b");
    EXPECT_EQ(string_of("'a\tb'").second, "a\tb");
}

TEST(ParseString, APrefixGluedToANameIsNotAPrefix) {
    // `ab'x'` is the name ab followed by a string: no operator between them.
    EXPECT_NE(error_of("ab'x'"), "");
    EXPECT_EQ(tree("b"), "b");  // b, r and u alone stay names
}

TEST(ParseString, AStringCannotBeAssignedTo) { EXPECT_EQ(error_of("'a' = 1"), "cannot assign to a literal"); }

// ---- precedence: each level binds tighter than the one below it --------------------------------

TEST(ParsePrecedence, TernaryBelowOr) { EXPECT_EQ(tree("a or b ? c : d"), "((a or b) ? c : d)"); }
TEST(ParsePrecedence, OrBelowAnd) { EXPECT_EQ(tree("a or b and c"), "(a or (b and c))"); }
TEST(ParsePrecedence, AndBelowNot) { EXPECT_EQ(tree("not a and b"), "((not a) and b)"); }
TEST(ParsePrecedence, NotBelowComparison) { EXPECT_EQ(tree("not a < b"), "(not (a < b))"); }
TEST(ParsePrecedence, ComparisonBelowBitOr) { EXPECT_EQ(tree("a < b | c"), "(a < (b | c))"); }
TEST(ParsePrecedence, BitOrBelowXor) { EXPECT_EQ(tree("a | b ^ c"), "(a | (b ^ c))"); }
TEST(ParsePrecedence, XorBelowBitAnd) { EXPECT_EQ(tree("a ^ b & c"), "(a ^ (b & c))"); }
TEST(ParsePrecedence, BitAndBelowShift) { EXPECT_EQ(tree("a & b << c"), "(a & (b << c))"); }
TEST(ParsePrecedence, ShiftBelowAdditive) { EXPECT_EQ(tree("a >> b - c"), "(a >> (b - c))"); }
TEST(ParsePrecedence, AdditiveBelowMultiplicative) { EXPECT_EQ(tree("a + b // c"), "(a + (b // c))"); }
TEST(ParsePrecedence, MultiplicativeBelowUnary) { EXPECT_EQ(tree("a % -b"), "(a % (- b))"); }
TEST(ParsePrecedence, UnaryBelowPower) { EXPECT_EQ(tree("-a ** 2"), "(- (a ** 2))"); }

TEST(ParsePrecedence, AllLevelsInOneExpression) {
    EXPECT_EQ(tree("a | b ^ c & d << e + f * g ** h"), "(a | (b ^ (c & (d << (e + (f * (g ** h)))))))");
}

TEST(ParsePrecedence, ParenthesesOverride) { EXPECT_EQ(tree("(a + b) * c"), "((a + b) * c)"); }

TEST(ParsePrecedence, ParenthesizedChainIsNotMergedIntoItsParent) { EXPECT_EQ(tree("(a + b) + c"), "((a + b) + c)"); }

TEST(ParsePrecedence, LevelsAlternatingInOneList) {
    EXPECT_EQ(tree("a * b + c * d - e"), "((a * b) + (c * d) - e)");
    EXPECT_EQ(tree("a + b < c * d == e or f and g"), "(((a + b) < (c * d) == e) or (f and g))");
}

TEST(ParsePrecedence, NotCoversTheComparisonAfterIt) {
    EXPECT_EQ(tree("not a + b < c and d"), "((not ((a + b) < c)) and d)");
    EXPECT_EQ(tree("a and not b or not not c"), "((a and (not b)) or (not (not c)))");
}

TEST(ParsePrecedence, NotAfterAComparisonIsAnError) {
    EXPECT_EQ(error_of("a < not b"), "expected an operand after '<' (put 'not ...' in parentheses)");
    EXPECT_EQ(tree("a < (not b)"), "(a < (not b))");
}

TEST(ParsePrecedence, SameLevelOperatorsShareOneChain) {
    EXPECT_EQ(tree("a * b / c // d % e"), "(a * b / c // d % e)");
    EXPECT_EQ(tree("a << b >> c"), "(a << b >> c)");
}

// ---- associativity ---------------------------------------------------------------------------

TEST(ParseAssociativity, SubtractionIsOneFlatChain) {
    Module m = parse("a-b-c");
    const Expr& e = only_expr(m);
    ASSERT_EQ(e.kind, ExprKind::Chain);
    EXPECT_EQ(e.operands.size(), 3u);
    EXPECT_EQ(spellings(e), (std::vector<std::string>{"-", "-"}));
}

TEST(ParseAssociativity, PowerIsOneFlatChain) {
    Module m = parse("a**b**c");
    const Expr& e = only_expr(m);
    ASSERT_EQ(e.kind, ExprKind::Chain);
    EXPECT_EQ(e.operands.size(), 3u);
    EXPECT_EQ(spellings(e), (std::vector<std::string>{"**", "**"}));
}

TEST(ParseAssociativity, TernaryNestsToTheRight) { EXPECT_EQ(tree("a ? b : c ? d : e"), "(a ? b : (c ? d : e))"); }

TEST(ParseAssociativity, TernaryMiddleMayBeATernary) { EXPECT_EQ(tree("a ? b ? c : d : e"), "(a ? (b ? c : d) : e)"); }

// ---- unary operators -------------------------------------------------------------------------

TEST(ParseUnary, NestedUnariesAreNestedNodes) {
    EXPECT_EQ(tree("--a"), "(- (- a))");
    EXPECT_EQ(tree("~-+a"), "(~ (- (+ a)))");
    EXPECT_EQ(tree("not not a"), "(not (not a))");
}

TEST(ParseUnary, PowerRightOperandMayCarryAUnary) { EXPECT_EQ(tree("a ** -b"), "(a ** (- b))"); }

TEST(ParseUnary, UnaryInsidePowerChainAppliesToTheRest) {
    EXPECT_EQ(tree("a ** -b ** c"), "(a ** (- (b ** c)))");
    EXPECT_EQ(tree("a ** b ** -c ** d ** e"), "(a ** b ** (- (c ** d ** e)))");
}

TEST(ParseUnary, NotCannotFollowArithmeticUnary) { EXPECT_EQ(error_of("-not a"), "expected an operand after '-'"); }

TEST(ParseUnary, MissingOperandAfterSpacedOperatorNamesTheOperator) {
    EXPECT_EQ(error_of("a ** not b"), "expected an operand after '**'");
    EXPECT_EQ(error_of("a + * b"), "expected an operand after '+'");
    EXPECT_EQ(error_of("(a +\n )"), "expected an operand after '+'");
}

// ---- comparisons -----------------------------------------------------------------------------

TEST(ParseComparison, AllSixFormOneChain) {
    Module m = parse("a < b <= c == d != e >= f > g");
    const Expr& e = only_expr(m);
    ASSERT_EQ(e.kind, ExprKind::Chain);
    EXPECT_EQ(e.operands.size(), 7u);
    EXPECT_EQ(spellings(e), (std::vector<std::string>{"<", "<=", "==", "!=", ">=", ">"}));
}

TEST(ParseComparison, LogicalOperatorsFormTheirOwnChains) {
    EXPECT_EQ(tree("a and b and c or d or e"), "((a and b and c) or d or e)");
}

// ---- calls -----------------------------------------------------------------------------------

TEST(ParseCall, PositionalThenKeywordArguments) {
    Module m = parse("sum(a + 1, b, axis=1)");
    const Expr& e = only_expr(m);
    ASSERT_EQ(e.kind, ExprKind::Call);
    EXPECT_EQ(e.text, "sum");
    ASSERT_EQ(e.operands.size(), 2u);
    EXPECT_EQ(dump(*e.operands[0]), "(a + 1)");
    ASSERT_EQ(e.keywords.size(), 1u);
    EXPECT_EQ(e.keywords[0].name, "axis");
    EXPECT_EQ(dump(*e.keywords[0].value), "1");
}

TEST(ParseCall, NoArguments) {
    Module m = parse("f()");
    const Expr& e = only_expr(m);
    EXPECT_EQ(e.kind, ExprKind::Call);
    EXPECT_TRUE(e.operands.empty());
}

TEST(ParseCall, OneTrailingCommaAllowed) { EXPECT_EQ(tree("f(a, b,)"), "f(a, b)"); }

TEST(ParseCall, KeywordValueMayBeAComparison) { EXPECT_EQ(tree("f(a == b, k=c == d)"), "f((a == b), k=(c == d))"); }

TEST(ParseCall, NestedCalls) { EXPECT_EQ(tree("where(a > 0, sqrt(a), -a)"), "where((a > 0), sqrt(a), (- a))"); }

TEST(ParseCall, PositionalAfterKeywordIsAnError) {
    EXPECT_EQ(error_of("sum(axis=1, a)"), "positional argument follows keyword argument");
}

TEST(ParseCall, RepeatedKeywordIsAnError) {
    EXPECT_EQ(error_of("sum(a, axis=1, axis=0)"), "keyword argument 'axis' repeated");
}

// ---- statements ------------------------------------------------------------------------------

TEST(ParseStatement, SemicolonsAndNewlinesSeparate) {
    EXPECT_EQ(dump(parse("a = 1; b = a + 1\nc = b")), "a = 1; b = (a + 1); c = b");
}

TEST(ParseStatement, BlankStatementsCommentsAndTrailingSemicolon) {
    EXPECT_EQ(dump(parse("\n# header\n\n;; a = 1 ; # note\n\r\n   b = 2;\n")), "a = 1; b = 2");
}

TEST(ParseStatement, EmptyTextHasNoStatements) {
    EXPECT_TRUE(parse("").statements.empty());
    EXPECT_TRUE(parse("  # only a comment\n\n").statements.empty());
}

TEST(ParseStatement, BareExpressionHasNoTarget) {
    Module m = parse("a + 1");
    EXPECT_TRUE(m.statements.at(0).target.empty());
}

TEST(ParseStatement, EqualityIsNotAnAssignment) { EXPECT_EQ(dump(parse("a == b")), "(a == b)"); }

TEST(ParseStatement, NewlinesInsideParenthesesAndCallsAreBlanks) {
    EXPECT_EQ(dump(parse("c = (a +\n  b) * f(x,\n  # comment\n  axis=1\n)\nd = c")),
              "c = ((a + b) * f(x, axis=1)); d = c");
}

TEST(ParseStatement, NewlineOutsideParenthesesEndsTheStatement) {
    EXPECT_EQ(error_of("c = a +\n b"), "expected an operand after '+'");
}

TEST(ParseStatement, CommentMayContainAnyBytes) {
    EXPECT_EQ(dump(parse("a = 1  # − ＊ $ @ \x01\nb = 2")), "a = 1; b = 2");
}

// ---- spans -----------------------------------------------------------------------------------

TEST(ParseSpan, AssignmentPieces) {
    const std::string text = "c = a*2 + b";
    Module m = parse(text);
    const auto& st = m.statements.at(0);
    EXPECT_EQ(st.target, "c");
    EXPECT_EQ(slice(text, st.target_span), "c");
    EXPECT_EQ(slice(text, st.span), "c = a*2 + b");
    const Expr& sum = *st.value;
    EXPECT_EQ(sum.span.begin, 4u);
    EXPECT_EQ(sum.span.end, 11u);
    EXPECT_EQ(slice(text, sum.op_spans.at(0)), "+");
    const Expr& product = *sum.operands.at(0);
    EXPECT_EQ(slice(text, product.span), "a*2");
    const Expr& two = *product.operands.at(1);
    EXPECT_EQ(two.span.begin, 6u);
    EXPECT_EQ(two.span.end, 7u);
    EXPECT_EQ(slice(text, sum.operands.at(1)->span), "b");
}

TEST(ParseSpan, ChainStartingWithAGroupIncludesTheParenthesis) {
    const std::string text = "(a + b) * c";
    Module m = parse(text);
    const Expr& e = only_expr(m);
    EXPECT_EQ(slice(text, e.span), "(a + b) * c");
    EXPECT_EQ(slice(text, e.operands.at(0)->span), "a + b");
}

TEST(ParseSpan, CallNameKeywordAndUnary) {
    const std::string text = "y = -sum( x ,axis = 1 )";
    Module m = parse(text);
    const Expr& neg = only_expr(m);
    EXPECT_EQ(slice(text, neg.span), "-sum( x ,axis = 1 )");
    EXPECT_EQ(slice(text, neg.op_spans.at(0)), "-");
    const Expr& call = *neg.operands.at(0);
    EXPECT_EQ(slice(text, call.span), "sum( x ,axis = 1 )");
    EXPECT_EQ(slice(text, call.name_span), "sum");
    EXPECT_EQ(slice(text, call.operands.at(0)->span), "x");
    EXPECT_EQ(slice(text, call.keywords.at(0).name_span), "axis");
    EXPECT_EQ(slice(text, call.keywords.at(0).value->span), "1");
}

TEST(ParseSpan, TernaryAndInnerTernaries) {
    const std::string text = "a ? b : c ? d : e";
    Module m = parse(text);
    const Expr& outer = only_expr(m);
    EXPECT_EQ(slice(text, outer.span), text);
    EXPECT_EQ(slice(text, outer.operands.at(2)->span), "c ? d : e");
}

TEST(ParseSpan, PowerRunAfterUnary) {
    const std::string text = "a ** -(b) ** c";
    Module m = parse(text);
    const Expr& e = only_expr(m);
    const Expr& neg = *e.operands.at(1);
    EXPECT_EQ(slice(text, neg.span), "-(b) ** c");
    EXPECT_EQ(slice(text, neg.operands.at(0)->span), "(b) ** c");
}

TEST(ParseSpan, StatementsOnLaterLines) {
    const std::string text = "a = 1\n  bb = a  # x\n";
    Module m = parse(text);
    EXPECT_EQ(slice(text, m.statements.at(1).span), "bb = a");
    EXPECT_EQ(slice(text, m.statements.at(1).value->span), "a");
}

TEST(ParseSpan, ErrorSpanIsTheOffendingToken) {
    try {
        parse("c = a +* b");
        FAIL() << "no error";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.span().begin, 7u);
        EXPECT_EQ(e.span().end, 8u);
    }
}

// ---- limits ----------------------------------------------------------------------------------

TEST(ParseLimit, HundredThousandTermSumIsOneChain) {
    std::string text = "a";
    text.reserve(200000);
    for (int i = 1; i < 100000; ++i) text += "+a";
    Module m = parse(text);
    const Expr& e = only_expr(m);
    ASSERT_EQ(e.kind, ExprKind::Chain);
    EXPECT_EQ(e.operands.size(), 100000u);
    EXPECT_EQ(e.ops.size(), 99999u);
    EXPECT_EQ(e.operands.back()->span.begin, 199998u);
}

TEST(ParseLimit, TwoHundredNestedParenthesesParse) { EXPECT_EQ(tree(repeat("(", 200) + "a" + repeat(")", 200)), "a"); }

TEST(ParseLimit, TwoHundredOneNestedParenthesesAreAnError) {
    EXPECT_EQ(error_of(repeat("(", 201) + "a" + repeat(")", 201)), kTooDeep);
}

TEST(ParseLimit, TenThousandNestedParenthesesAreAnError) {
    EXPECT_EQ(error_of(repeat("(", 10000) + "a" + repeat(")", 10000)), kTooDeep);
}

TEST(ParseLimit, DeepCallsAreAnError) { EXPECT_EQ(error_of(repeat("f(", 300) + "a" + repeat(")", 300)), kTooDeep); }

TEST(ParseLimit, TwoHundredUnaryOperatorsParse) { EXPECT_NO_THROW(parse(repeat("-", 200) + "a")); }

TEST(ParseLimit, TenThousandUnaryOperatorsAreAnError) { EXPECT_EQ(error_of(repeat("-", 10000) + "a"), kTooDeep); }

TEST(ParseLimit, UnariesAndParenthesesCountTogether) {
    EXPECT_EQ(error_of(repeat("-(", 101) + "a" + repeat(")", 101)), kTooDeep);
    EXPECT_NO_THROW(parse(repeat("-(", 100) + "a" + repeat(")", 100)));
}

TEST(ParseLimit, DeepTernaryMiddlesAreAnError) {
    EXPECT_EQ(error_of(repeat("a ? ", 5000) + "b" + repeat(" : c", 5000)), kTooDeep);
}

TEST(ParseLimit, LongTernaryElseChainIsAnError) {
    EXPECT_EQ(error_of(repeat("a ? b : ", 5000) + "c"), kTooDeep);
    EXPECT_NO_THROW(parse(repeat("a ? b : ", 200) + "c"));
}

TEST(ParseLimit, IdentifierOfMaximumLengthParses) {
    const std::string name(256, 'x');
    EXPECT_EQ(tree(name + " + 1"), "(" + name + " + 1)");
}

TEST(ParseLimit, IdentifierPastMaximumLengthIsAnError) {
    EXPECT_EQ(error_of("a + " + std::string(257, 'x')),
              "identifier too long (257 characters; at most 256 are allowed)");
    EXPECT_EQ(error_of(std::string(257, 'x') + " = 1"),
              "identifier too long (257 characters; at most 256 are allowed)");
}

TEST(ParseLimit, TextPastMaximumSizeIsAnError) {
    std::string text(jit::syntax::kMaxTextBytes + 1, ' ');
    EXPECT_NE(error_of(text).find("program too large"), std::string::npos);
}

// ---- the op table ----------------------------------------------------------------------------

TEST(ParseOpTable, EveryOperatorTokenParses) {
    struct Op {
        const char* token;
        int arity;
    };
    const Op ops[] = {
#define JIT_OP(Id, Kind, Arity, Rule, Token, ...) {Token, Arity},
#include "dsl/ops.def"
#undef JIT_OP
    };
    int checked = 0;
    for (const Op& op : ops) {
        const std::string token = op.token;
        if (token.empty()) continue;
        const std::string text = op.arity == 1 ? token + " a" : "a " + token + " b";
        const std::string want = op.arity == 1 ? "(" + token + " a)" : "(a " + token + " b)";
        EXPECT_EQ(tree(text), want) << text;
        ++checked;
    }
    EXPECT_GT(checked, 20);
}

// The parser reads its operators from the table: each token, in each place, is that row's op.
TEST(ParseOpTable, EachOperatorTokenGivesItsRowsOp) {
    for (const jit::ir::OpInfo& i : jit::ir::op_table()) {
        if (i.kind != jit::ir::OpKind::Operator) continue;
        const std::string token(i.token);
        const std::string text = i.arity == 1 ? token + " a" : "a " + token + " b";
        Module m = parse(text);
        const Expr& e = only_expr(m);
        ASSERT_EQ(e.ops.size(), 1u) << text;
        EXPECT_EQ(e.ops[0], i.op) << text << " gives " << jit::ir::info(e.ops[0]).id;
        EXPECT_EQ(e.kind, i.arity == 1 ? ExprKind::Unary : ExprKind::Chain) << text;
    }
}

// Binding strengths come from the table: of two binary operators the one of higher Prec
// groups first, whichever comes first in the text.
TEST(ParseOpTable, PrecedenceFollowsTheTable) {
    for (const jit::ir::OpInfo& x : jit::ir::op_table())
        for (const jit::ir::OpInfo& y : jit::ir::op_table()) {
            if (!jit::ir::is_binary_operator(x) || !jit::ir::is_binary_operator(y) || x.prec >= y.prec) continue;
            const std::string lo(x.token), hi(y.token);
            EXPECT_EQ(tree("a " + lo + " b " + hi + " c"), "(a " + lo + " (b " + hi + " c))") << lo << " " << hi;
            EXPECT_EQ(tree("a " + hi + " b " + lo + " c"), "((a " + hi + " b) " + lo + " c)") << hi << " " << lo;
        }
}

// ---- subscripts ------------------------------------------------------------------------------

TEST(ParseSubscript, SlicesIndicesEllipsisAndNone) {
    EXPECT_EQ(tree("a[1:] - a[:-1]"), "(a[1:] - a[:(- 1)])");
    EXPECT_EQ(tree("x[::2]"), "x[::2]");
    EXPECT_EQ(tree("x[::-1]"), "x[::(- 1)]");
    EXPECT_EQ(tree("m[:, 0]"), "m[:, 0]");
    EXPECT_EQ(tree("a[None, :]"), "a[None, :]");
    EXPECT_EQ(tree("a[..., 0]"), "a[..., 0]");
    EXPECT_EQ(tree("a[1:2:3]"), "a[1:2:3]");
    EXPECT_EQ(tree("a[1,]"), "a[1]");
}

TEST(ParseSubscript, BindsTighterThanUnaryAndPower) {
    EXPECT_EQ(tree("-a[0]"), "(- a[0])");
    EXPECT_EQ(tree("a[0]**2"), "(a[0] ** 2)");
    EXPECT_EQ(tree("2**a[0]"), "(2 ** a[0])");
    EXPECT_EQ(tree("m[1][2:]"), "m[1][2:]");
}

TEST(ParseSubscript, AppliesToCallsAndGroups) {
    EXPECT_EQ(tree("(a + b)[1:]"), "(a + b)[1:]");
    EXPECT_EQ(tree("sin(a)[0]"), "sin(a)[0]");
    EXPECT_EQ(tree("sum(a[1:] * b[:-1])"), "sum((a[1:] * b[:(- 1)]))");
}

TEST(ParseSubscript, NewlinesInsideBracketsAreBlanks) { EXPECT_EQ(tree("m[\n 1,\n 2]"), "m[1, 2]"); }

TEST(ParseSubscript, SpansCoverTheBracketsAndEachItem) {
    const std::string text = "y = m[1:, ...]";
    const Module m = parse(text);
    const Expr& e = *m.statements.at(0).value;
    ASSERT_EQ(e.kind, ExprKind::Subscript);
    EXPECT_EQ(slice(text, e.span), "m[1:, ...]");
    ASSERT_EQ(e.index.size(), 2u);
    EXPECT_EQ(slice(text, e.index[0].span), "1:");
    EXPECT_EQ(slice(text, e.index[1].span), "...");
}

TEST(ParseAttribute, RealAndImagAreTheirFunctions) {
    EXPECT_EQ(tree("(a - 10).real"), "real((a - 10))");
    EXPECT_EQ(tree("z.imag * 2"), "(imag(z) * 2)");
    EXPECT_EQ(tree("-m[0].real ** 2"), "(- (real(m[0]) ** 2))");
    EXPECT_EQ(tree("z . real"), "real(z)");
}

TEST(ParseAttribute, SpansCoverTheOperandAndTheName) {
    const std::string text = "y = (a + 1).imag";
    const Module m = parse(text);
    const Expr& e = *m.statements.at(0).value;
    ASSERT_EQ(e.kind, ExprKind::Call);
    EXPECT_EQ(slice(text, e.span), "(a + 1).imag");
    EXPECT_EQ(slice(text, e.name_span), "imag");
}

TEST(ParseAttribute, OtherNamesAndAMissingNameAreErrors) {
    EXPECT_EQ(error_of("a.size"), "unknown attribute '.size' (the attributes are .real and .imag)");
    EXPECT_EQ(error_of("a."), "expected an attribute name after '.' (.real or .imag)");
    EXPECT_EQ(error_of("a.(1)"), "expected an attribute name after '.' (.real or .imag)");
    try {
        parse("x + a.size");
        FAIL() << "no ParseError";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.span().begin, 6u);
        EXPECT_EQ(e.span().end, 10u);
    }
}

TEST(ParseSubscript, MalformedSubscriptsAreErrors) {
    EXPECT_EQ(error_of("a[]"), "expected an index");
    EXPECT_EQ(error_of("a[1,,2]"), "expected an index");
    EXPECT_EQ(error_of("a[1:2:3:4]"), "a slice has at most two ':' (start:stop:step)");
    EXPECT_EQ(error_of("a[...:2]"), "'...' stands alone in an index");
    EXPECT_NE(error_of("a[1"), "");
    EXPECT_NE(error_of("a[1)"), "");
}

TEST(ParseSubscript, NestingCountsBrackets) {
    EXPECT_EQ(error_of("a" + repeat("[0]", 201)), kTooDeep);
    EXPECT_EQ(error_of(repeat("a[", 201) + "0" + repeat("]", 201)), kTooDeep);
}

}  // namespace

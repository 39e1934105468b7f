// Trimmed semantics: a kernel embeds only the sections of dsl/semantics.h it needs. These
// tests check that the markers cover every op, that the selection is what a kernel's ops and
// dtypes ask for, and that every op compiles under NVRTC (to PTX, no GPU) for every operand type
// it accepts with nothing but the sections chosen for it.
#include "codegen/codegen.hpp"
#include "dsl/semantics.h"
#include "programs.hpp"

#include "backend/cuda/toolkit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace jit;
using codegen::SemanticsNeeds;

bool has(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(SemanticsSections, EveryOpOfTheTableIsClaimedByASection) {
    for (const ir::OpInfo& o : ir::op_table()) {
        if (o.finish == ir::Finish::Lowered) continue;  // statistics that lowering expands: no kernel holds them
        // A scan's kernel runs its accumulator's functor (jx::red::Sum for cumsum): that one's section.
        const ir::Op op = o.kind == ir::OpKind::Scan ? o.accumulate : o.op;
        EXPECT_FALSE(codegen::semantics_section_of(op).empty())
            << "op " << o.id << " has no `// @ops` line in dsl/semantics.h: kernels using it embed the whole file";
    }
}

TEST(SemanticsSections, ArithmeticOnFloatsNeedsOnlyBaseAndArith) {
    SemanticsNeeds n;
    n.ops = {ir::Op::Add, ir::Op::Mul};
    EXPECT_EQ(codegen::semantics_sections(n), (std::vector<std::string>{"base", "arith"}));
}

TEST(SemanticsSections, ComplexAndHalfValuesBringTheirSections) {
    SemanticsNeeds n;
    n.ops = {ir::Op::Add};
    n.complex = true;
    n.half = true;
    const auto s = codegen::semantics_sections(n);
    EXPECT_TRUE(has(s, "complex"));
    EXPECT_TRUE(has(s, "half"));
    EXPECT_FALSE(has(s, "transcendental"));
}

TEST(SemanticsSections, ReductionsBringWhatTheirCombineStepsCall) {
    SemanticsNeeds n;
    n.ops = {ir::Op::ReduceMax};
    const auto s = codegen::semantics_sections(n);
    EXPECT_TRUE(has(s, "reduce"));
    EXPECT_TRUE(has(s, "select"));  // Maximum
    EXPECT_TRUE(has(s, "arith"));   // Sum's Add, Mean's Div
}

TEST(SemanticsSections, SectionsComeOutInFileOrderWithoutMarkerLines) {
    SemanticsNeeds n;
    n.ops = {ir::Op::Sin};
    const std::string text = codegen::semantics_for(n);
    EXPECT_EQ(text.find("// @section"), std::string::npos);
    EXPECT_EQ(text.find("// @ops"), std::string::npos);
    const auto ns_op = text.find("namespace op {");
    const auto sin = text.find("JX_FLOAT_UNARY(Sin");
    const auto ns_end = text.find("}  // namespace op");
    ASSERT_NE(sin, std::string::npos);
    EXPECT_LT(ns_op, sin);
    EXPECT_LT(sin, ns_end);
    EXPECT_EQ(text.find("half_to_float"), std::string::npos);
}

// Every section chosen gives the file as a reader splits it a line at a time: from the first
// @section on, less the lines whose first non-blank text is a directive marker (a "// @" after
// code, or an '@' elsewhere, is text). The parse looks only at lines holding an '@'.
TEST(SemanticsSections, EverySectionTogetherIsTheFileLessItsMarkerLines) {
    SemanticsNeeds all;
    all.complex = all.half = all.strings = true;
    for (const ir::OpInfo& i : ir::op_table()) all.ops.push_back(i.op);
    std::string expected;
    bool started = false;
    std::istringstream in{std::string(codegen::semantics_source())};
    for (std::string line; std::getline(in, line);) {
        const auto first = line.find_first_not_of(" \t");
        const bool marker = first != std::string::npos && line.compare(first, 4, "// @") == 0;
        std::istringstream words(marker ? line.substr(first + 4) : std::string());
        std::string directive;
        words >> directive;
        const bool directive_line =
            marker && (directive == "section" || directive == "needs" || directive == "ops" || directive == "dtypes");
        if (directive_line && directive == "section") started = true;
        if (started && !directive_line) expected += line + "\n";
    }
    std::string got = codegen::semantics_for(all);
    if (!codegen::semantics_source().ends_with('\n') && !got.empty()) got += '\n';  // getline's last line
    EXPECT_EQ(got, expected);
}

TEST(SemanticsSections, FlatFloatKernelEmbedsLessThanTheWholeFile) {
    auto b = jxtest::axpb(DType::Float32);
    const auto trimmed = codegen::emit(b.p, b.schedule()).kernels.at(0).source;
    codegen::EmitOptions full;
    full.full_semantics = true;
    const auto whole = codegen::emit(b.p, b.schedule(), full).kernels.at(0).source;
    EXPECT_NE(whole.find(codegen::semantics_source()), std::string::npos);
    EXPECT_LT(trimmed.size() * 2, whole.size());
    EXPECT_EQ(trimmed.find("csqrt"), std::string::npos);
    EXPECT_EQ(trimmed.find("struct ReduceMin"), std::string::npos);
}

TEST(SemanticsSections, HalfKernelEmbedsTheHalfConversions) {
    auto b = jxtest::axpb(DType::Float16);
    const auto src = codegen::emit(b.p, b.schedule()).kernels.at(0).source;
    EXPECT_NE(src.find("half_to_float(u16 h)"), std::string::npos);
}

// ---- every op with only its sections compiles under NVRTC

template <class T>
struct spell;
#define JX_SPELL(T, S, CPLX)                   \
    template <>                                \
    struct spell<T> {                          \
        static constexpr const char* name = S; \
        static constexpr bool complex = CPLX;  \
    };
JX_SPELL(bool, "bool", false)
JX_SPELL(jx::i8, "jx::i8", false)
JX_SPELL(jx::i16, "jx::i16", false)
JX_SPELL(jx::i32, "jx::i32", false)
JX_SPELL(jx::i64, "jx::i64", false)
JX_SPELL(jx::u8, "jx::u8", false)
JX_SPELL(jx::u16, "jx::u16", false)
JX_SPELL(jx::u32, "jx::u32", false)
JX_SPELL(jx::u64, "jx::u64", false)
JX_SPELL(float, "float", false)
JX_SPELL(double, "double", false)
JX_SPELL(jx::c64, "jx::c64", true)
JX_SPELL(jx::c128, "jx::c128", true)
#undef JX_SPELL

template <class... T>
struct type_list {};
using AllTypes = type_list<bool, jx::i8, jx::i16, jx::i32, jx::i64, jx::u8, jx::u16, jx::u32, jx::u64, float, double,
                           jx::c64, jx::c128>;

// Calls grouped by the section list their needs select: one NVRTC compile per group.
struct Group {
    SemanticsNeeds needs;
    std::string calls;
    int count = 0;
};
using Groups = std::map<std::string, Group>;

void add_call(Groups& groups, const SemanticsNeeds& needs, const std::string& expr) {
    std::string key;
    for (const auto& s : codegen::semantics_sections(needs)) key += s + " ";
    Group& g = groups[key];
    g.needs = needs;
    g.calls += "    st(out, " + std::to_string(g.count++) + ", " + expr + ");\n";
}

#define JX_PROBE(Id, Arity)                                                                       \
    struct Probe_##Id {                                                                           \
        static constexpr const char* name = #Id;                                                  \
        static constexpr ir::Op op = ir::Op::Id;                                                  \
        static constexpr int arity = Arity;                                                       \
        template <class T>                                                                        \
        static constexpr bool same_args = (Arity == 1 && requires(T x) { jx::op::Id(x); }) ||     \
                                          (Arity == 2 && requires(T x) { jx::op::Id(x, x); }) ||  \
                                          (Arity == 3 && requires(T x) { jx::op::Id(x, x, x); }); \
        template <class T>                                                                        \
        static constexpr bool cond_first = Arity == 3 && requires(T x, bool c) {                  \
            jx::op::Id(c, x, x);                                                                  \
        };                                                                                        \
    };
#define JX_PROBE_Operator(Id, Arity) JX_PROBE(Id, Arity)
#define JX_PROBE_Function(Id, Arity) JX_PROBE(Id, Arity)
#define JX_PROBE_Result(Id, Arity) JX_PROBE_Function(Id, Arity)
#define JX_PROBE_Reduction(Id, Arity)
#define JX_PROBE_Scan(Id, Arity)
#define JIT_OP(Id, Kind, Arity, ...) JX_PROBE_##Kind(Id, Arity)
#include "dsl/ops.def"
#undef JIT_OP

template <class P, class T>
void op_calls(Groups& groups) {
    const std::string t = spell<T>::name;
    std::string args;
    if constexpr (P::template same_args<T>) {
        for (int k = 0; k < P::arity; ++k)
            args += (k ? ", " : "") + std::string("ld<") + t + ">(in, " + std::to_string(k) + ")";
    } else if constexpr (P::template cond_first<T>) {
        args = "ld<bool>(in, 0), ld<" + t + ">(in, 1), ld<" + t + ">(in, 2)";
    } else {
        return;
    }
    SemanticsNeeds n;
    n.ops = {P::op};
    n.complex = spell<T>::complex;
    add_call(groups, n, std::string("jx::op::") + P::name + "(" + args + ")");
}
template <class P, class... T>
void op_calls_all(Groups& groups, type_list<T...>) {
    (op_calls<P, T>(groups), ...);
}

template <class T>
void reduction_calls(Groups& groups) {
    const std::string t = spell<T>::name;
    const std::pair<const char*, ir::Op> reds[] = {{"Sum", ir::Op::Sum},
                                                   {"Prod", ir::Op::Prod},
                                                   {"ReduceMin", ir::Op::ReduceMin},
                                                   {"ReduceMax", ir::Op::ReduceMax},
                                                   {"Mean", ir::Op::Mean}};
    for (const auto& [r, op] : reds) {
        SemanticsNeeds n;
        n.ops = {op};
        n.complex = spell<T>::complex;
        const std::string f = std::string("jx::red::") + r + "<" + t + ">";
        add_call(groups, n, f + "::combine(" + f + "::identity(), ld<" + t + ">(in, 0))");
    }
}
template <class... T>
void reduction_calls_all(Groups& groups, type_list<T...>) {
    (reduction_calls<T>(groups), ...);
}

Groups every_call() {
    Groups groups;
#define JX_CALLS_Operator(Id) op_calls_all<Probe_##Id>(groups, AllTypes{});
#define JX_CALLS_Function(Id) op_calls_all<Probe_##Id>(groups, AllTypes{});
#define JX_CALLS_Result(Id) JX_CALLS_Function(Id)
#define JX_CALLS_Reduction(Id)
#define JX_CALLS_Scan(Id)
#define JIT_OP(Id, Kind, ...) JX_CALLS_##Kind(Id)
#include "dsl/ops.def"
#undef JIT_OP
    reduction_calls_all(groups, AllTypes{});
    for (const ir::Op op : {ir::Op::Any, ir::Op::All}) {
        SemanticsNeeds n;
        n.ops = {op};
        const std::string f = op == ir::Op::Any ? "jx::red::Any<>" : "jx::red::All<>";
        add_call(groups, n, f + "::combine(" + f + "::identity(), ld<bool>(in, 0))");
    }
    // Casts between every pair of register types: in base (complex ones with the complex section).
    const char* types[] = {"bool", "jx::i8", "jx::u64", "float", "double", "jx::c64", "jx::c128"};
    for (const char* to : types)
        for (const char* from : types) {
            SemanticsNeeds n;
            n.complex = std::string(to).find("jx::c") == 0 || std::string(from).find("jx::c") == 0;
            add_call(groups, n, std::string("jx::cast<") + to + ">(ld<" + from + ">(in, 0))");
        }
    // What the emitter calls for 16-bit floats.
    SemanticsNeeds h;
    h.half = true;
    for (const char* e : {"jx::round_f16(ld<double>(in, 0))", "jx::round_bf16(ld<jx::i32>(in, 0))",
                          "jx::float_to_half(ld<float>(in, 0))", "jx::half_to_float(ld<jx::u16>(in, 0))",
                          "jx::float_to_bf16(ld<float>(in, 0))", "jx::bf16_to_float(ld<jx::u16>(in, 0))"})
        add_call(groups, h, e);
    h.ops = {ir::Op::Nextafter};
    add_call(groups, h, "jx::nextafter_f16(ld<float>(in, 0), ld<float>(in, 1))");
    add_call(groups, h, "jx::nextafter_bf16(ld<float>(in, 0), ld<float>(in, 1))");
    return groups;
}

std::string compile_log(const std::string& src, bool* ok) {
    const jit::cuda::detail::Nvrtc& nv = jit::cuda::detail::nvrtc();
    nvrtcProgram prog = nullptr;
    *ok = false;
    if (nv.CreateProgram(&prog, src.c_str(), "sections_check.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        return "nvrtcCreateProgram failed";
    struct Destroy {
        const jit::cuda::detail::Nvrtc& nv;
        nvrtcProgram* p;
        ~Destroy() { nv.DestroyProgram(p); }
    } destroy{nv, &prog};
    // PTX is enough: the question is whether the front end finds every name.
    const char* opts[] = {"--gpu-architecture=compute_90", "-std=c++17", "-default-device", "--minimal"};
    nvrtcResult rc = nv.CompileProgram(prog, 4, opts);
    std::size_t log_size = 0;
    nv.GetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nv.GetProgramLog(prog, log.data());
    *ok = rc == NVRTC_SUCCESS;
    return log;
}

TEST(SemanticsSections, EveryOpCompilesWithOnlyItsSections) {
    const Groups groups = every_call();
    int calls = 0;
    for (const auto& [key, g] : groups) calls += g.count;
    ASSERT_GT(calls, 500);
    for (const auto& [key, g] : groups) {
        std::ostringstream os;
        os << "#define JX_CUDA 1\n"
           << codegen::semantics_for(g.needs) << "\n"
           << "template <class T> __device__ T ld(const char* in, int k) { return *(const T*)(in + 16 * k); }\n"
              "template <class T> __device__ void st(char* out, int k, T v) { *(T*)(out + 16 * k) = v; }\n"
              "extern \"C\" __global__ void jx_sections(const char* in, char* out) {\n"
           << g.calls << "}\n";
        bool ok = false;
        const std::string log = compile_log(os.str(), &ok);
        EXPECT_TRUE(ok) << "sections: " << key << "\n" << log;
    }
}

}  // namespace

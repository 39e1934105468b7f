// dsl/semantics.h must compile under NVRTC (JX_CUDA, no system headers): this test embeds
// its text in a kernel that instantiates every jx::op for every operand type the host build
// accepts (detected here with `requires`), every cast and every reduction step, and compiles
// it to CUBIN for sm_90. No GPU is needed.
#include "dsl/semantics.h"

#include "backend/cuda/toolkit.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Register types by their spelling in generated code.
struct TypeName {
    const char* name;
};

template <class T>
struct spell;
#define JX_SPELL(T, S)                         \
    template <>                                \
    struct spell<T> {                          \
        static constexpr const char* name = S; \
    };
JX_SPELL(bool, "bool")
JX_SPELL(jx::i8, "jx::i8")
JX_SPELL(jx::i16, "jx::i16")
JX_SPELL(jx::i32, "jx::i32")
JX_SPELL(jx::i64, "jx::i64")
JX_SPELL(jx::u8, "jx::u8")
JX_SPELL(jx::u16, "jx::u16")
JX_SPELL(jx::u32, "jx::u32")
JX_SPELL(jx::u64, "jx::u64")
JX_SPELL(float, "float")
JX_SPELL(double, "double")
JX_SPELL(jx::c64, "jx::c64")
JX_SPELL(jx::c128, "jx::c128")
JX_SPELL(jx::sb, "jx::sb")
JX_SPELL(jx::su, "jx::su")
JX_SPELL(jx::s8, "jx::s8")
#undef JX_SPELL

template <class... T>
struct type_list {};
using AllTypes = type_list<bool, jx::i8, jx::i16, jx::i32, jx::i64, jx::u8, jx::u16, jx::u32, jx::u64, float, double,
                           jx::c64, jx::c128>;
// The string values (the comparisons and the string functions take them; casts and reductions do not).
using StringTypes = type_list<jx::sb, jx::su, jx::s8>;

// One probe per element-wise op of ops.def: which argument lists jx::op::<Id> accepts.
#define JX_PROBE_Operator(Id, Arity) JX_PROBE(Id, Arity)
#define JX_PROBE_Function(Id, Arity) JX_PROBE(Id, Arity)
#define JX_PROBE_Result(Id, Arity) JX_PROBE_Function(Id, Arity)
#define JX_PROBE_Reduction(Id, Arity)
#define JX_PROBE_Scan(Id, Arity)
#define JX_PROBE(Id, Arity)                                                                       \
    struct Probe_##Id {                                                                           \
        static constexpr const char* name = #Id;                                                  \
        static constexpr int arity = Arity;                                                       \
        template <class T>                                                                        \
        static constexpr bool same_args = (Arity == 1 && requires(T x) { jx::op::Id(x); }) ||     \
                                          (Arity == 2 && requires(T x) { jx::op::Id(x, x); }) ||  \
                                          (Arity == 3 && requires(T x) { jx::op::Id(x, x, x); }); \
        template <class T>                                                                        \
        static constexpr bool cond_first = Arity == 3 && requires(T x, bool c) {                  \
            jx::op::Id(c, x, x);                                                                  \
        };                                                                                        \
        template <class A, class B>                                                               \
        static constexpr bool mixed = Arity == 2 && requires(A x, B y) {                          \
            jx::op::Id(x, y);                                                                     \
        };                                                                                        \
    };
#define JIT_OP(Id, Kind, Arity, ...) JX_PROBE_##Kind(Id, Arity)
#include "dsl/ops.def"
#undef JIT_OP

template <class P, class T>
void emit_calls(std::ostream& os, int& count) {
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
    os << "    st(out, " << count++ << ", jx::op::" << P::name << "(" << args << "));\n";
}

template <class P, class... T>
void emit_op(std::ostream& os, int& count, type_list<T...>) {
    (emit_calls<P, T>(os, count), ...);
}

// A U string against an Arrow one, both ways round.
template <class P>
void emit_mixed_strings(std::ostream& os, int& count) {
    if constexpr (P::template mixed<jx::su, jx::s8>)
        os << "    st(out, " << count++ << ", jx::op::" << P::name << "(ld<jx::su>(in, 0), ld<jx::s8>(in, 1)));\n";
    if constexpr (P::template mixed<jx::s8, jx::su>)
        os << "    st(out, " << count++ << ", jx::op::" << P::name << "(ld<jx::s8>(in, 0), ld<jx::su>(in, 1)));\n";
}

template <class To, class... From>
void emit_casts_to(std::ostream& os, int& count, type_list<From...>) {
    ((os << "    st(out, " << count++ << ", jx::cast<" << spell<To>::name << ">(ld<" << spell<From>::name
         << ">(in, 0)));\n"),
     ...);
}
template <class... To>
void emit_casts(std::ostream& os, int& count, type_list<To...> all) {
    (emit_casts_to<To>(os, count, all), ...);
}

template <class... T>
void emit_reductions(std::ostream& os, int& count, type_list<T...>) {
    auto one = [&](const char* t, bool orderable) {
        std::string ts = t;
        for (const char* r : {"Sum", "Prod", "ReduceMin", "ReduceMax"}) {
            if (std::string(r) != "Sum" && std::string(r) != "Prod" && !orderable) continue;
            os << "    st(out, " << count++ << ", jx::red::" << r << "<" << ts << ">::combine(jx::red::" << r << "<"
               << ts << ">::identity(), ld<" << ts << ">(in, 0)));\n";
        }
    };
    (one(spell<T>::name, true), ...);
    os << "    st(out, " << count++ << ", jx::red::Any<>::combine(jx::red::Any<>::identity(), ld<bool>(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::red::All<>::combine(jx::red::All<>::identity(), ld<bool>(in, 0)));\n";
}

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Every call in kernels of kCallsPerKernel calls each: ptxas's time grows faster than a kernel's
// size (one kernel of all the calls took 29 s to assemble), and each call is checked all the same.
constexpr int kCallsPerKernel = 48;

std::string kernel_source(int* calls) {
    std::ostringstream os;  // the calls, one per line
    int count = 0;
#define JX_EMIT_Operator(Id)                       \
    emit_op<Probe_##Id>(os, count, AllTypes{});    \
    emit_op<Probe_##Id>(os, count, StringTypes{}); \
    emit_mixed_strings<Probe_##Id>(os, count);
#define JX_EMIT_Function(Id) JX_EMIT_Operator(Id)
#define JX_EMIT_Result(Id) JX_EMIT_Function(Id)
#define JX_EMIT_Reduction(Id)
#define JX_EMIT_Scan(Id)
#define JIT_OP(Id, Kind, ...) JX_EMIT_##Kind(Id)
#include "dsl/ops.def"
#undef JIT_OP
    emit_casts(os, count, AllTypes{});
    emit_reductions(os, count, AllTypes{});
    for (const char* f : {"jx::round_f16", "jx::round_bf16"})
        for (const char* t : {"float", "double", "bool", "jx::i32", "jx::u64", "jx::c128"})
            os << "    st(out, " << count++ << ", " << f << "(ld<" << t << ">(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::float_to_half(ld<float>(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::half_to_float(ld<jx::u16>(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::float_to_bf16(ld<float>(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::bf16_to_float(ld<jx::u16>(in, 0)));\n";
    os << "    st(out, " << count++ << ", jx::nextafter_f16(ld<float>(in, 0), ld<float>(in, 1)));\n";
    os << "    st(out, " << count++ << ", jx::nextafter_bf16(ld<float>(in, 0), ld<float>(in, 1)));\n";
    *calls = count;

    std::ostringstream src;
    src << "#define JX_CUDA 1\n" << read_file(JITEXPR_SOURCE_DIR "/dsl/semantics.h") << "\n";
    src << "template <class T> __device__ T ld(const char* in, int k) { return *(const T*)(in + 16 * k); }\n"
           "template <class T> __device__ void st(char* out, int k, T v) { *(T*)(out + 16 * k) = v; }\n";
    std::istringstream lines(os.str());
    int in_kernel = 0, kernels = 0;
    for (std::string line; std::getline(lines, line);) {
        if (in_kernel == 0)
            src << "extern \"C\" __global__ void jx_every_op_" << kernels++ << "(const char* in, char* out) {\n";
        src << line << "\n";
        if (++in_kernel == kCallsPerKernel) {
            src << "}\n";
            in_kernel = 0;
        }
    }
    if (in_kernel) src << "}\n";
    return src.str();
}

// `src` compiles to CUBIN for sm_90 under NVRTC with `extra` options besides the runtime's.
void compiles_for_sm90(const std::string& src, const std::vector<const char*>& extra) {
    const jit::cuda::detail::Nvrtc& nv = jit::cuda::detail::nvrtc();
    nvrtcProgram prog = nullptr;
    ASSERT_EQ(nv.CreateProgram(&prog, src.c_str(), "semantics_check.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    struct Destroy {
        const jit::cuda::detail::Nvrtc& nv;
        nvrtcProgram* p;
        ~Destroy() { nv.DestroyProgram(p); }
    } destroy{nv, &prog};
    std::vector<const char*> opts = {"-arch=sm_90", "-std=c++17", "-default-device"};
    opts.insert(opts.end(), extra.begin(), extra.end());
    nvrtcResult rc = nv.CompileProgram(prog, static_cast<int>(opts.size()), opts.data());
    std::size_t log_size = 0;
    nv.GetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nv.GetProgramLog(prog, log.data());
    ASSERT_EQ(rc, NVRTC_SUCCESS) << nv.GetErrorString(rc) << "\n" << log;
    std::size_t cubin = 0;
    ASSERT_EQ(nv.GetCUBINSize(prog, &cubin), NVRTC_SUCCESS);
    EXPECT_GT(cubin, 0u);
}

TEST(SemanticsNvrtc, EveryOpCompilesToCubinForSm90) {
    int calls = 0;
    const std::string src = kernel_source(&calls);
    // Sanity: every element-wise op appears for at least one type (an op without any overload
    // would be a hole in semantics.h).
    int missing = 0;
#define JX_CHECK_Operator(Id) JX_CHECK(Id)
#define JX_CHECK_Function(Id) JX_CHECK(Id)
#define JX_CHECK_Result(Id) JX_CHECK_Function(Id)
#define JX_CHECK_Reduction(Id)
#define JX_CHECK_Scan(Id)
#define JX_CHECK(Id)                                                 \
    if (src.find("jx::op::" #Id "(") == std::string::npos) {         \
        ADD_FAILURE() << "no jx::op::" #Id " overload for any type"; \
        ++missing;                                                   \
    }
#define JIT_OP(Id, Kind, ...) JX_CHECK_##Kind(Id)
#include "dsl/ops.def"
#undef JIT_OP
    ASSERT_EQ(missing, 0);
    ASSERT_GT(calls, 500);

    compiles_for_sm90(src, {});
}

// contains()'s warp search (dsl/semantics.h, warp_contains) is compiled only with
// -DJX_CONTAINS_WARP (and its experiment -DJX_CONTAINS_WHOLE_BLOCKS): over an Arrow column and an S array, in a kernel as codegen writes them.
TEST(SemanticsNvrtc, TheWarpSearchOfContainsCompilesToCubinForSm90) {
    const std::string src =
        "#define JX_CUDA 1\n" + read_file(JITEXPR_SOURCE_DIR "/dsl/semantics.h") +
        "\nextern \"C\" __global__ void jx_contains(const jx::col_s8 t, const jx::col_sb s, const jx::s8 n8,\n"
        "        const jx::sb nb, bool* out, const long long count) {\n"
        "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < count) out[i] = jx::op::Contains(t[i], n8) && jx::op::Contains(s[i], nb);\n"
        "}\n";
    compiles_for_sm90(src, {"-DJX_CONTAINS_WARP"});
    compiles_for_sm90(src, {"-DJX_CONTAINS_WARP", "-DJX_CONTAINS_WHOLE_BLOCKS"});  // its edges loaded whole
}

}  // namespace

// The C API (include/jit/c_api.h) on the CPU backend.
#include <jit/c_api.h>
#include <jit/interop.hpp>

#include <gtest/gtest.h>

#include "test_util.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>

using namespace embed_test;

namespace {

struct RuntimeDeleter {
    void operator()(jitexpr_runtime* rt) const { jitexpr_runtime_destroy(rt); }
};
using RuntimePtr = std::unique_ptr<jitexpr_runtime, RuntimeDeleter>;

RuntimePtr cpu_runtime() {
    RuntimePtr rt(jitexpr_runtime_create(JITEXPR_BACKEND_CPU));
    EXPECT_NE(rt, nullptr) << jitexpr_last_error();
    return rt;
}

struct TensorDeleter {
    void operator()(DLManagedTensor* t) const {
        if (t && t->deleter) t->deleter(t);
    }
};
using TensorPtr = std::unique_ptr<DLManagedTensor, TensorDeleter>;

template <class T>
std::vector<T> values(const DLManagedTensor* t) {
    const DLTensor& d = t->dl_tensor;
    std::int64_t n = 1;
    for (int k = 0; k < d.ndim; ++k) n *= d.shape[k];
    std::vector<T> out(static_cast<std::size_t>(n));
    // Results are C-contiguous: strides are checked where it matters.
    std::memcpy(out.data(), static_cast<const char*>(d.data) + d.byte_offset, out.size() * sizeof(T));
    return out;
}

template <class T>
void host_tensor(HostTensor& h, std::vector<T> v) {
    fill(h, jit::to_dlpack_dtype(jit::dtype_of_v<T>), {static_cast<std::int64_t>(v.size())}, as_bytes(v));
}

}  // namespace

TEST(CApi, ParseErrorGivesItsCodeAndACaretMessage) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a, b;
    host_tensor(a, std::vector<float>{1});
    host_tensor(b, std::vector<float>{2});
    DLManagedTensor* args[] = {&a.managed, &b.managed};
    DLManagedTensor* out = reinterpret_cast<DLManagedTensor*>(&a);  // must be reset to NULL
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "c = a +* b", 2, args, &out), JITEXPR_ERROR_PARSE);
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_PARSE);
    const std::string msg = jitexpr_last_error();
    EXPECT_EQ(msg.rfind("syntax error", 0), 0u) << msg;
    EXPECT_NE(msg.find("line 1: c = a +* b\n"), std::string::npos) << msg;
    EXPECT_NE(msg.find('^'), std::string::npos) << msg;
    EXPECT_STREQ(jitexpr_status_name(JITEXPR_ERROR_PARSE), "parse");
}

TEST(CApi, DatesTravelAsInt64TensorsWithADTypeCode) {
    RuntimePtr rt = cpu_runtime();
    HostTensor ts;
    host_tensor(ts, std::vector<std::int64_t>{0, jit::kNaT, 3600});
    jitexpr_arg a{};
    a.kind = JITEXPR_ARG_TENSOR_TEMPORAL;
    a.value.temporal.tensor = &ts.managed;
    a.value.temporal.dtype = JITEXPR_DATETIME64_s;
    DLManagedTensor* raw = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "a + timedelta64(1, 'h')", 1, &a, &raw), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr out(raw);
    EXPECT_EQ(out->dl_tensor.dtype.code, kDLInt);
    EXPECT_EQ(out->dl_tensor.dtype.bits, 64);
    EXPECT_EQ(jitexpr_last_result_dtype(), JITEXPR_DATETIME64_s);
    EXPECT_STREQ(jitexpr_dtype_name(jitexpr_last_result_dtype()), "datetime64[s]");
    EXPECT_EQ(values<std::int64_t>(out.get()), (std::vector<std::int64_t>{3600, jit::kNaT, 7200}));
    // A number afterwards: the code says so.
    ASSERT_EQ(jitexpr_eval(rt.get(), "a < datetime64('1970-01-01T00:30')", 1, &a, &raw), JITEXPR_OK);
    TensorPtr flags(raw);
    EXPECT_EQ(jitexpr_last_result_dtype(), JITEXPR_DTYPE_NUMERIC);
    EXPECT_EQ(values<std::uint8_t>(flags.get()), (std::vector<std::uint8_t>{1, 0, 0}));
}

TEST(CApi, ATemporalArgumentOfAnotherDTypeOrCodeIsAnArgumentError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor f;
    host_tensor(f, std::vector<double>{1.0});
    jitexpr_arg a{};
    a.kind = JITEXPR_ARG_TENSOR_TEMPORAL;
    a.value.temporal.tensor = &f.managed;
    a.value.temporal.dtype = JITEXPR_TIMEDELTA64_ns;
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval(rt.get(), "a", 1, &a, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_NE(std::string(jitexpr_last_error()).find("int64 counts"), std::string::npos) << jitexpr_last_error();
    HostTensor i;
    host_tensor(i, std::vector<std::int64_t>{1});
    a.value.temporal.tensor = &i.managed;
    for (const int bad : {0, 32, 46, 255, -1}) {
        a.value.temporal.dtype = bad;
        EXPECT_EQ(jitexpr_eval(rt.get(), "a", 1, &a, &out), JITEXPR_ERROR_ARGUMENT) << bad;
    }
    EXPECT_STREQ(jitexpr_dtype_name(46), "?");
    EXPECT_STREQ(jitexpr_dtype_name(JITEXPR_DTYPE_NUMERIC), "numeric");
}

TEST(CApi, CompileReportsSyntaxErrorsAndReturnsNull) {
    RuntimePtr rt = cpu_runtime();
    EXPECT_EQ(jitexpr_compile(rt.get(), "c = a +"), nullptr);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_PARSE);
}

TEST(CApi, UnknownFunctionIsANameError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1});
    DLManagedTensor* args[] = {&a.managed};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "c = a + sine(a)", 1, args, &out), JITEXPR_ERROR_NAME);
    EXPECT_NE(std::string(jitexpr_last_error()).find("sine"), std::string::npos) << jitexpr_last_error();
}

TEST(CApi, WrongArgumentCountIsAnArgumentError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1});
    DLManagedTensor* args[] = {&a.managed};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "a + b", 1, args, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_NE(std::string(jitexpr_last_error()).find("2 variables"), std::string::npos) << jitexpr_last_error();
}

TEST(CApi, NullPointersAreArgumentErrors) {
    RuntimePtr rt = cpu_runtime();
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(nullptr, "1", 0, nullptr, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "1", 0, nullptr, nullptr), JITEXPR_ERROR_ARGUMENT);
    jitexpr_arg null_tensor{};
    null_tensor.kind = JITEXPR_ARG_TENSOR;
    EXPECT_EQ(jitexpr_eval(rt.get(), "a + 1", 1, &null_tensor, &out), JITEXPR_ERROR_ARGUMENT);
}

TEST(CApi, DeviceTensorOnTheCpuRuntimeIsAnArgumentError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1});
    a.managed.dl_tensor.device = {kDLCUDA, 0};
    DLManagedTensor* args[] = {&a.managed};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "a + 1", 1, args, &out), JITEXPR_ERROR_ARGUMENT);
}

TEST(CApi, ATensorOfCudaDeviceOneNamesItsDeviceInTheError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1});
    a.managed.dl_tensor.device = {kDLCUDA, 1};  // never read: the runtime refuses it first
    DLManagedTensor* args[] = {&a.managed};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "a + 1", 1, args, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_NE(std::string(jitexpr_last_error()).find("'a' is on cuda:1"), std::string::npos) << jitexpr_last_error();
}

TEST(CApi, RuntimeOnADeviceChecksTheOrdinal) {
    RuntimePtr rt(jitexpr_runtime_create_on(JITEXPR_BACKEND_CPU, 0));
    ASSERT_NE(rt, nullptr) << jitexpr_last_error();
    EXPECT_EQ(jitexpr_runtime_device(rt.get()), 0);
    EXPECT_EQ(jitexpr_runtime_device(nullptr), -1);
    EXPECT_EQ(jitexpr_runtime_create_on(JITEXPR_BACKEND_CPU, 1), nullptr);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_ARGUMENT);
    EXPECT_NE(std::string(jitexpr_last_error()).find("one device"), std::string::npos) << jitexpr_last_error();
    EXPECT_EQ(jitexpr_runtime_create_on(JITEXPR_BACKEND_CPU, -2), nullptr);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_ARGUMENT);
}

TEST(CApi, UnknownBackendIsRefused) {
    EXPECT_EQ(jitexpr_runtime_create(7), nullptr);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_ARGUMENT);
}

TEST(CApi, CudaRuntimeIsCreatedOrReportsNoDevice) {
    RuntimePtr rt(jitexpr_runtime_create(JITEXPR_BACKEND_CUDA));
    if (rt) {
        EXPECT_EQ(jitexpr_runtime_backend(rt.get()), JITEXPR_BACKEND_CUDA);
    } else {
        EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_NO_DEVICE);
        EXPECT_STRNE(jitexpr_last_error(), "");
    }
}

TEST(CApi, LastErrorIsPerThread) {
    RuntimePtr rt = cpu_runtime();
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_dlpack(rt.get(), "(", 0, nullptr, &out), JITEXPR_ERROR_PARSE);
    std::string other;
    int other_code = -1;
    std::thread([&] {
        other = jitexpr_last_error();
        other_code = jitexpr_last_error_code();
    }).join();
    EXPECT_EQ(other, "");
    EXPECT_EQ(other_code, JITEXPR_OK);
    EXPECT_EQ(jitexpr_last_error_code(), JITEXPR_ERROR_PARSE);
}

TEST(CApi, EvaluatesTensorsAndReturnsAnOwnedResult) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a, b;
    host_tensor(a, std::vector<float>{1, 2, 3});
    host_tensor(b, std::vector<float>{4, 5, 6});
    DLManagedTensor* args[] = {&a.managed, &b.managed};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_dlpack(rt.get(), "c = a * 2 + b", 2, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr c(out);
    EXPECT_EQ(c->dl_tensor.device.device_type, kDLCPU);
    EXPECT_EQ(c->dl_tensor.dtype.code, kDLFloat);
    EXPECT_EQ(c->dl_tensor.dtype.bits, 32);
    EXPECT_EQ(values<float>(c.get()), (std::vector<float>{6, 9, 12}));
}

TEST(CApi, ScalarArgumentsAreWeaklyTyped) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1, 2});
    jitexpr_arg args[3]{};
    args[0].kind = JITEXPR_ARG_TENSOR;
    args[0].value.tensor = &a.managed;
    args[1].kind = JITEXPR_ARG_FLOAT;
    args[1].value.f = 0.5;
    args[2].kind = JITEXPR_ARG_INT;
    args[2].value.i = 3;
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "a * x + k", 3, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(r->dl_tensor.dtype.bits, 32);  // float32, not float64
    EXPECT_EQ(values<float>(r.get()), (std::vector<float>{3.5f, 4.0f}));
}

TEST(CApi, ResultSharingAnArgumentsMemoryIsCopied) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<std::int32_t>{1, 2, 3});
    DLManagedTensor* args[] = {&a.managed};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_dlpack(rt.get(), "a = a + 1", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_NE(r->dl_tensor.data, a.managed.dl_tensor.data);
    EXPECT_EQ(values<std::int32_t>(r.get()), (std::vector<std::int32_t>{2, 3, 4}));
}

TEST(CApi, KernelIsParsedOnceAndCalledMany) {
    RuntimePtr rt = cpu_runtime();
    jitexpr_kernel* k = jitexpr_compile(rt.get(), "y = a * b - a");
    ASSERT_NE(k, nullptr) << jitexpr_last_error();
    ASSERT_EQ(jitexpr_kernel_num_params(k), 2u);
    EXPECT_STREQ(jitexpr_kernel_param_name(k, 0), "a");
    EXPECT_STREQ(jitexpr_kernel_param_name(k, 1), "b");
    EXPECT_EQ(jitexpr_kernel_param_name(k, 2), nullptr);
    for (std::int64_t m = 1; m <= 3; ++m) {
        HostTensor a, b;
        host_tensor(a, std::vector<std::int64_t>{1, 2});
        host_tensor(b, std::vector<std::int64_t>{m, m});
        DLManagedTensor* args[] = {&a.managed, &b.managed};
        DLManagedTensor* out = nullptr;
        ASSERT_EQ(jitexpr_kernel_call_dlpack(k, 2, args, &out), JITEXPR_OK) << jitexpr_last_error();
        TensorPtr r(out);
        EXPECT_EQ(values<std::int64_t>(r.get()), (std::vector<std::int64_t>{m - 1, 2 * m - 2}));
    }
    jitexpr_kernel_free(k);
}

TEST(CApi, EveryDTypeRoundTripsThroughEval) {
    RuntimePtr rt = cpu_runtime();
    for (jit::DType t : kAllDTypes) {
        SCOPED_TRACE(std::string(jit::dtype_name(t)));
        HostTensor x;
        const std::vector<std::byte> bytes = sample(t, 7);
        fill(x, jit::to_dlpack_dtype(t), {7}, bytes);
        DLManagedTensor* args[] = {&x.managed};
        DLManagedTensor* out = nullptr;
        ASSERT_EQ(jitexpr_eval_dlpack(rt.get(), "copy(x)", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
        TensorPtr r(out);
        const DLDataType want = jit::to_dlpack_dtype(t);
        EXPECT_EQ(r->dl_tensor.dtype.code, want.code);
        EXPECT_EQ(r->dl_tensor.dtype.bits, want.bits);
        ASSERT_EQ(r->dl_tensor.ndim, 1);
        EXPECT_EQ(r->dl_tensor.shape[0], 7);
        std::vector<std::byte> got(bytes.size());
        std::memcpy(got.data(), static_cast<const char*>(r->dl_tensor.data) + r->dl_tensor.byte_offset, got.size());
        EXPECT_EQ(got, bytes);
    }
}

// 16 threads x 200 evaluations of a mix of programs through one runtime: every result is
// right, and each distinct program (text + argument dtypes/shapes) is prepared exactly once.
TEST(CApiThreads, SixteenThreadsShareOneRuntime) {
    RuntimePtr rt = cpu_runtime();
    constexpr int kThreads = 16, kEvals = 200, kN = 64;
    std::vector<float> af(kN), bf(kN);
    std::vector<std::int32_t> ai(kN), bi(kN);
    std::vector<double> ad(kN);
    for (int i = 0; i < kN; ++i) {
        af[i] = static_cast<float>(i) * 0.5f;
        bf[i] = static_cast<float>(kN - i);
        ai[i] = i - 10;
        bi[i] = 3 * i + 1;
        ad[i] = i * 0.25;
    }
    HostTensor taf, tbf, tai, tbi, tad;
    host_tensor(taf, af);
    host_tensor(tbf, bf);
    host_tensor(tai, ai);
    host_tensor(tbi, bi);
    host_tensor(tad, ad);
    // Expected values are exact in every dtype used.
    struct Case {
        const char* text;
        std::vector<DLManagedTensor*> args;
        std::function<bool(const DLManagedTensor*)> check;
    };
    const std::vector<Case> cases = {
        {"a * 2 + b",
         {&taf.managed, &tbf.managed},
         [&](const DLManagedTensor* r) {
             auto v = values<float>(r);
             for (int i = 0; i < kN; ++i)
                 if (v[i] != af[i] * 2 + bf[i]) return false;
             return r->dl_tensor.dtype.code == kDLFloat && r->dl_tensor.dtype.bits == 32;
         }},
        {"a * 2 + b",
         {&tai.managed, &tbi.managed},
         [&](const DLManagedTensor* r) {
             auto v = values<std::int32_t>(r);
             for (int i = 0; i < kN; ++i)
                 if (v[i] != ai[i] * 2 + bi[i]) return false;
             return r->dl_tensor.dtype.code == kDLInt;
         }},
        {"where(i > 0, i, -i) - j",
         {&tai.managed, &tbi.managed},
         [&](const DLManagedTensor* r) {
             auto v = values<std::int32_t>(r);
             for (int i = 0; i < kN; ++i)
                 if (v[i] != (ai[i] > 0 ? ai[i] : -ai[i]) - bi[i]) return false;
             return true;
         }},
        {"d * d + x",
         {&tad.managed, &taf.managed},
         [&](const DLManagedTensor* r) {
             auto v = values<double>(r);
             for (int i = 0; i < kN; ++i)
                 if (v[i] != ad[i] * ad[i] + static_cast<double>(af[i])) return false;
             return r->dl_tensor.dtype.bits == 64;
         }},
        {"sum(x)",
         {&tbf.managed},
         [&](const DLManagedTensor* r) {
             float want = 0;
             for (int i = 0; i < kN; ++i) want += bf[i];
             return r->dl_tensor.ndim == 0 && values<float>(r)[0] == want;
         }},
    };
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int e = 0; e < kEvals; ++e) {
                const Case& c = cases[static_cast<std::size_t>(t + e) % cases.size()];
                DLManagedTensor* out = nullptr;
                if (jitexpr_eval_dlpack(rt.get(), c.text, c.args.size(), c.args.data(), &out) != JITEXPR_OK || !out) {
                    ++failures;
                    continue;
                }
                TensorPtr r(out);
                if (!c.check(r.get())) ++failures;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    jitexpr_stats s{};
    ASSERT_EQ(jitexpr_runtime_stats(rt.get(), &s), JITEXPR_OK);
    EXPECT_EQ(s.misses, cases.size());
    EXPECT_EQ(s.entries, cases.size());
    EXPECT_EQ(s.hits + s.misses, static_cast<std::uint64_t>(kThreads * kEvals));
}

// ---- cancellation

namespace {
// A reduction over 10^10 broadcast elements of two small tensors: many seconds unless stopped.
struct Endless {
    HostTensor a, b;
    Endless() {
        fill(a, jit::to_dlpack_dtype(jit::DType::Float64), {10000, 1}, as_bytes(std::vector<double>(10000, 0.0)));
        host_tensor(b, std::vector<double>(1000000, 0.0));
    }
};
}  // namespace

TEST(CApi, CancelledTokenFailsTheCallWithTheCancelledStatus) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<float>{1, 2});
    jitexpr_arg args[1] = {};
    args[0].kind = JITEXPR_ARG_TENSOR;
    args[0].value.tensor = &a.managed;
    jitexpr_cancel_token* tok = jitexpr_cancel_token_create(nullptr, nullptr);
    ASSERT_NE(tok, nullptr);
    jitexpr_cancel_token_cancel(tok);
    EXPECT_EQ(jitexpr_cancel_token_cancelled(tok), 1);
    jitexpr_call_options o = {};
    o.size = sizeof o;
    o.cancel = tok;
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_with(rt.get(), "a * 2", 1, args, &out, &o), JITEXPR_ERROR_CANCELLED);
    EXPECT_EQ(out, nullptr);
    EXPECT_STREQ(jitexpr_status_name(JITEXPR_ERROR_CANCELLED), "cancelled");
    EXPECT_STREQ(jitexpr_last_error(), "cancelled");
    jitexpr_cancel_token_reset(tok);
    ASSERT_EQ(jitexpr_eval_with(rt.get(), "a * 2", 1, args, &out, &o), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(values<float>(out), (std::vector<float>{2, 4}));
    jitexpr_cancel_token_destroy(tok);
}

TEST(CApi, PollCallbackStopsALongCall) {
    RuntimePtr rt = cpu_runtime();
    Endless e;
    DLManagedTensor* args[] = {&e.a.managed, &e.b.managed};
    std::vector<jitexpr_arg> a(2);
    for (int i = 0; i < 2; ++i) {
        a[i].kind = JITEXPR_ARG_TENSOR;
        a[i].value.tensor = args[i];
    }
    int polls = 0;
    jitexpr_cancel_token* tok =
        jitexpr_cancel_token_create([](void* user) { return ++*static_cast<int*>(user) >= 2 ? 1 : 0; }, &polls);
    jitexpr_call_options o = {};
    o.size = sizeof o;
    o.cancel = tok;
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_with(rt.get(), "sum(a + b)", 2, a.data(), &out, &o), JITEXPR_ERROR_CANCELLED);
    EXPECT_GE(polls, 2);
    jitexpr_cancel_token_destroy(tok);
}

TEST(CApi, CancelFromAnotherThreadStopsTheCallsInFlight) {
    RuntimePtr rt = cpu_runtime();
    Endless e;
    DLManagedTensor* args[] = {&e.a.managed, &e.b.managed};
    std::atomic<bool> done{false};
    std::thread canceller([&] {
        // Until the call has ended: a cancel before the call started would not stop it.
        while (!done) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            EXPECT_EQ(jitexpr_cancel(rt.get()), JITEXPR_OK);
        }
    });
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_dlpack(rt.get(), "sum(a + b)", 2, args, &out), JITEXPR_ERROR_CANCELLED);
    done = true;
    canceller.join();
    EXPECT_EQ(jitexpr_cancel(nullptr), JITEXPR_ERROR_ARGUMENT);
}

TEST(CApi, CallOptionsWithoutSizeAreRejected) {
    RuntimePtr rt = cpu_runtime();
    jitexpr_call_options o = {};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_with(rt.get(), "1 + 1", 0, nullptr, &out, &o), JITEXPR_ERROR_ARGUMENT);
}

// ---- issue 16 through the C API: named binding, named constants, exact literals and comparisons

namespace {

jitexpr_arg tensor_arg(const DLManagedTensor* t) {
    jitexpr_arg a{};
    a.kind = JITEXPR_ARG_TENSOR;
    a.value.tensor = t;
    return a;
}

jitexpr_arg float_arg(double f) {
    jitexpr_arg a{};
    a.kind = JITEXPR_ARG_FLOAT;
    a.value.f = f;
    return a;
}

}  // namespace

TEST(CApiNamed, BindsByNameNotByOrderOfAppearance) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a, b;
    host_tensor(a, std::vector<float>{1, 2});
    host_tensor(b, std::vector<float>{10, 20});
    const char* names[] = {"a", "b"};
    const jitexpr_arg args[] = {tensor_arg(&a.managed), tensor_arg(&b.managed)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_named(rt.get(), "b*2 + a", 2, names, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(values<float>(out), (std::vector<float>{21, 42}));
}

TEST(CApiNamed, ANameBoundByNameShadowsTheConstant) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<double>{0, 1, 2});
    for (const char* name : {"pi", "e", "inf", "nan"}) {
        SCOPED_TRACE(name);
        const std::string text = std::string(name) + " * 2";
        const char* names[] = {name};
        const jitexpr_arg args[] = {tensor_arg(&x.managed)};
        DLManagedTensor* out = nullptr;
        ASSERT_EQ(jitexpr_eval_named(rt.get(), text.c_str(), 1, names, args, &out), JITEXPR_OK) << jitexpr_last_error();
        TensorPtr r(out);
        EXPECT_EQ(values<double>(out), (std::vector<double>{0, 2, 4}));
        jitexpr_kernel* k = jitexpr_compile(rt.get(), text.c_str());
        ASSERT_NE(k, nullptr);
        EXPECT_EQ(jitexpr_kernel_num_params(k), 0u);  // positionally it is the constant
        DLManagedTensor* kout = nullptr;
        ASSERT_EQ(jitexpr_kernel_call_named(k, 1, names, args, &kout), JITEXPR_OK) << jitexpr_last_error();
        TensorPtr kr(kout);
        EXPECT_EQ(values<double>(kout), (std::vector<double>{0, 2, 4}));
        jitexpr_kernel_free(k);
    }
}

TEST(CApiNamed, PositionalBindingKeepsTheConstant) {
    RuntimePtr rt = cpu_runtime();
    HostTensor r;
    host_tensor(r, std::vector<double>{1});
    const jitexpr_arg args[] = {tensor_arg(&r.managed)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "2*pi*r", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr t(out);
    EXPECT_DOUBLE_EQ(values<double>(out)[0], 2 * 3.141592653589793);
}

TEST(CApiNamed, AnUnusedOrRepeatedNameIsAnArgumentError) {
    RuntimePtr rt = cpu_runtime();
    const char* names[] = {"a", "a"};
    const jitexpr_arg args[] = {float_arg(1), float_arg(2)};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "a + 1", 2, names, args, &out), JITEXPR_ERROR_ARGUMENT);
    const char* other[] = {"b"};
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "a + 1", 1, other, args, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "a + 1", 1, nullptr, args, &out), JITEXPR_ERROR_ARGUMENT);
    const char* null_name[] = {nullptr};
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "a + 1", 1, null_name, args, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_EQ(out, nullptr);
}

TEST(CApiLanguage, LiteralOutOfBoundsAfterExactArithmeticIsAValueError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor u;
    host_tensor(u, std::vector<std::uint8_t>{1, 2});
    const jitexpr_arg args[] = {tensor_arg(&u.managed)};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval(rt.get(), "u + 2**8", 1, args, &out), JITEXPR_ERROR_VALUE);
    EXPECT_NE(std::string(jitexpr_last_error()).find("integer 256 is out of bounds for uint8\nline 1: u + 2**8\n"),
              std::string::npos)
        << jitexpr_last_error();
    EXPECT_EQ(jitexpr_eval(rt.get(), "2**64", 0, nullptr, &out), JITEXPR_ERROR_VALUE);
}

TEST(CApiLanguage, WhereOfLiteralsIsTypedAndUint64ComparesExactly) {
    RuntimePtr rt = cpu_runtime();
    HostTensor i, a, b;
    host_tensor(i, std::vector<std::int8_t>{0, 1, 2});
    host_tensor(a, std::vector<std::uint64_t>{(1ull << 63) + 8});
    host_tensor(b, std::vector<std::int64_t>{0x7fffffffffffffffll});
    DLManagedTensor* out = nullptr;
    const jitexpr_arg iarg[] = {tensor_arg(&i.managed)};
    ASSERT_EQ(jitexpr_eval(rt.get(), "i + where(i > 0, 1000, 1)", 1, iarg, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr w(out);
    EXPECT_EQ(out->dl_tensor.dtype.bits, 64);
    EXPECT_EQ(values<std::int64_t>(out), (std::vector<std::int64_t>{1, 1001, 1002}));
    const jitexpr_arg ab[] = {tensor_arg(&a.managed), tensor_arg(&b.managed)};
    DLManagedTensor* eq = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "a == b", 2, ab, &eq), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr e(eq);
    EXPECT_EQ(values<std::uint8_t>(eq), (std::vector<std::uint8_t>{0}));
}

TEST(CApiLanguage, SlicesAreViewsAndAnIndexPastTheEndIsAnIndexError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a;
    host_tensor(a, std::vector<std::int64_t>{1, 4, 9, 16});
    const jitexpr_arg args[] = {tensor_arg(&a.managed)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "a[1:] - a[:-1]", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr d(out);
    EXPECT_EQ(values<std::int64_t>(out), (std::vector<std::int64_t>{3, 5, 7}));
    DLManagedTensor* bad = nullptr;
    EXPECT_EQ(jitexpr_eval(rt.get(), "a[4]", 1, args, &bad), JITEXPR_ERROR_INDEX);
    EXPECT_EQ(bad, nullptr);
    EXPECT_NE(std::string(jitexpr_last_error()).find("index 4 is out of bounds for axis 0 with size 4\nline 1: a[4]\n"),
              std::string::npos)
        << jitexpr_last_error();
    EXPECT_STREQ(jitexpr_status_name(JITEXPR_ERROR_INDEX), "index");
}

TEST(CApiLanguage, AMaskSelectsWithTheDatasLengthAndAMismatchIsAnIndexError) {
    RuntimePtr rt = cpu_runtime();
    HostTensor a, m;
    host_tensor(a, std::vector<std::int64_t>{1, -4, 9, -16, 25});
    host_tensor(m, std::vector<std::int64_t>{1, 0, 1});
    const jitexpr_arg args[] = {tensor_arg(&a.managed)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "a[a > 0] * 2", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr d(out);
    ASSERT_EQ(out->dl_tensor.ndim, 1);
    EXPECT_EQ(out->dl_tensor.shape[0], 3);
    EXPECT_EQ(values<std::int64_t>(out), (std::vector<std::int64_t>{2, 18, 50}));
    const jitexpr_arg am[] = {tensor_arg(&a.managed), tensor_arg(&m.managed)};
    DLManagedTensor* bad = nullptr;
    EXPECT_EQ(jitexpr_eval(rt.get(), "a[m > 0]", 2, am, &bad), JITEXPR_ERROR_INDEX);
    EXPECT_EQ(bad, nullptr);
    EXPECT_NE(std::string(jitexpr_last_error()).find("boolean index did not match indexed array along axis 0"),
              std::string::npos)
        << jitexpr_last_error();
    EXPECT_EQ(jitexpr_eval(rt.get(), "min(a[a > 100])", 1, args, &bad), JITEXPR_ERROR_VALUE);
}

TEST(CApiLanguage, AByteOrderMarkIsSkippedAndErrorsPointAtTheirColumn) {
    RuntimePtr rt = cpu_runtime();
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(),
                           "\xEF\xBB\xBF"
                           "2 + 1",
                           0, nullptr, &out),
              JITEXPR_OK)
        << jitexpr_last_error();
    TensorPtr t(out);
    EXPECT_EQ(jitexpr_eval_named(rt.get(),
                                 "\xEF\xBB\xBF"
                                 "q + 1",
                                 0, nullptr, nullptr, &out),
              JITEXPR_ERROR_NAME);
    EXPECT_EQ(std::string(jitexpr_last_error()), "name error: unknown name 'q'\nline 1: q + 1\n        ^");
    EXPECT_EQ(jitexpr_eval(rt.get(),
                           "\xEF\xBB\xBF"
                           "1 +* 2",
                           0, nullptr, &out),
              JITEXPR_ERROR_PARSE);
    EXPECT_EQ(std::string(jitexpr_last_error()),
              "syntax error: expected an operand after '+'\nline 1: 1 +* 2\n           ^");
}

// Issue 17 item 4: destroying a runtime while other threads are inside jitexpr_eval waits for
// them; none deadlocks, crashes or sees a destroyed thread pool, and each call either completes
// with the right values or is refused cleanly. Many rounds, since the bug was a race.
TEST(CApiThreads, DestroyWaitsForTheCallsInFlight) {
    constexpr int kRounds = 30, kThreads = 6, kN = 400000;
    std::vector<double> a(kN, 1.5);
    HostTensor ta;
    host_tensor(ta, a);
    const double want = std::sin(1.5) * 2 + std::sqrt(1.5);
    for (int round = 0; round < kRounds; ++round) {
        jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
        ASSERT_NE(rt, nullptr) << jitexpr_last_error();
        std::atomic<int> started{0}, ok{0}, refused{0}, wrong{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&] {
                DLManagedTensor* args[1] = {&ta.managed};
                DLManagedTensor* out = nullptr;
                started.fetch_add(1);
                const int rc = jitexpr_eval_dlpack(rt, "sin(a) * 2 + sqrt(a)", 1, args, &out);
                if (rc == JITEXPR_OK && out) {
                    const std::vector<double> v = values<double>(out);
                    (std::abs(v[0] - want) < 1e-12 && std::abs(v[kN - 1] - want) < 1e-12 ? ok : wrong).fetch_add(1);
                    out->deleter(out);
                } else if (rc == JITEXPR_ERROR_ARGUMENT && std::strstr(jitexpr_last_error(), "being destroyed")) {
                    refused.fetch_add(1);
                } else {
                    wrong.fetch_add(1);
                }
            });
        }
        // Every thread is about to call (the call itself takes milliseconds): destroy now, while
        // they are inside it.
        while (started.load() < kThreads) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        jitexpr_runtime_destroy(rt);
        for (auto& th : threads) th.join();
        EXPECT_EQ(wrong.load(), 0) << "round " << round;
        EXPECT_EQ(ok.load() + refused.load(), kThreads) << "round " << round;
    }
}

// ---- read-only tensors and the assignment rule

namespace {
// A DLPack 1.x view of `h`'s memory, flagged read-only when asked (the caller keeps h alive).
DLManagedTensorVersioned versioned(HostTensor& h, bool read_only) {
    DLManagedTensorVersioned v{};
    v.version = DLPackVersion{1, 0};
    v.dl_tensor = h.managed.dl_tensor;
    v.flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    return v;
}
jitexpr_arg versioned_arg(const DLManagedTensorVersioned* t) {
    jitexpr_arg a{};
    a.kind = JITEXPR_ARG_TENSOR_VERSIONED;
    a.value.tensor_versioned = t;
    return a;
}
std::vector<float> floats_of(const HostTensor& h) {
    std::vector<float> v(h.bytes.size() / sizeof(float));
    std::memcpy(v.data(), h.bytes.data(), h.bytes.size());
    return v;
}
}  // namespace

TEST(CApiReadOnly, AnAssignmentIntoAReadOnlyTensorIsRefusedBeforeTheCall) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<float>{1, 2});
    const DLManagedTensorVersioned v = versioned(x, true);
    const char* names[] = {"x"};
    const jitexpr_arg args[] = {versioned_arg(&v)};
    DLManagedTensor* out = nullptr;
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "x = x + 1", 1, names, args, &out), JITEXPR_ERROR_READ_ONLY);
    EXPECT_EQ(out, nullptr);
    const std::string msg = jitexpr_last_error();
    EXPECT_NE(msg.find("'x' is read-only"), std::string::npos) << msg;
    EXPECT_NE(msg.find('^'), std::string::npos) << msg;
    EXPECT_STREQ(jitexpr_status_name(JITEXPR_ERROR_READ_ONLY), "read-only");
    EXPECT_EQ(floats_of(x), (std::vector<float>{1, 2}));
    EXPECT_EQ(jitexpr_eval(rt.get(), "x = x * 3", 1, args, &out), JITEXPR_ERROR_READ_ONLY) << "positional too";
    jitexpr_kernel* k = jitexpr_compile(rt.get(), "x = x - 1");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(jitexpr_kernel_call(k, 1, args, &out), JITEXPR_ERROR_READ_ONLY) << "and a kernel call";
    jitexpr_kernel_free(k);
    EXPECT_EQ(floats_of(x), (std::vector<float>{1, 2}));
}

TEST(CApiReadOnly, AReadOnlyTensorIsRead) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<float>{1, 2});
    const DLManagedTensorVersioned v = versioned(x, true);
    const jitexpr_arg args[] = {versioned_arg(&v)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "y = x * 2", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(values<float>(out), (std::vector<float>{2, 4}));
}

TEST(CApiReadOnly, AnUnflaggedVersionedTensorIsWrittenInPlace) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<float>{1, 2});
    const DLManagedTensorVersioned v = versioned(x, false);
    const jitexpr_arg args[] = {versioned_arg(&v)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "x = x + 1", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(floats_of(x), (std::vector<float>{2, 3}));
}

TEST(CApiAssign, AValueOfAnotherShapeIsReturnedAndTheTensorIsUntouched) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<float>{1, 2, 3});
    const jitexpr_arg args[] = {tensor_arg(&x.managed)};
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval(rt.get(), "x = sum(x)", 1, args, &out), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(out->dl_tensor.ndim, 0);
    EXPECT_EQ(values<float>(out), (std::vector<float>{6}));
    EXPECT_EQ(floats_of(x), (std::vector<float>{1, 2, 3}));
}

TEST(CApiAssign, StrictInPlaceBroadcastsIntoTheTensorAndKeepsTheErrors) {
    RuntimePtr rt = cpu_runtime();
    HostTensor x;
    host_tensor(x, std::vector<float>{1, 2, 3});
    const jitexpr_arg args[] = {tensor_arg(&x.managed)};
    jitexpr_call_options o{};
    o.size = sizeof o;
    o.strict_in_place = 1;
    DLManagedTensor* out = nullptr;
    ASSERT_EQ(jitexpr_eval_with(rt.get(), "x = sum(x)", 1, args, &out, &o), JITEXPR_OK) << jitexpr_last_error();
    TensorPtr r(out);
    EXPECT_EQ(floats_of(x), (std::vector<float>{6, 6, 6}));
    DLManagedTensor* out2 = nullptr;
    EXPECT_EQ(jitexpr_eval_with(rt.get(), "x = x[1:]", 1, args, &out2, &o), JITEXPR_ERROR_SHAPE);
    EXPECT_EQ(floats_of(x), (std::vector<float>{6, 6, 6}));
}

TEST(CApiReadOnly, AnArrowColumnAssignedIsRefused) {
    RuntimePtr rt = cpu_runtime();
    const std::vector<float> data{1, 2};
    const void* buffers[2] = {nullptr, data.data()};
    ArrowSchema schema{};
    schema.format = "f";
    schema.name = "";
    ArrowArray array{};
    array.length = 2;
    array.n_buffers = 2;
    array.buffers = buffers;
    const ArrowSchema* schemas[] = {&schema};
    const ArrowArray* arrays[] = {&array};
    ArrowArray out{};
    ArrowSchema out_schema{};
    EXPECT_EQ(jitexpr_eval_arrow(rt.get(), "x = x + 1; x", 1, schemas, arrays, &out, &out_schema),
              JITEXPR_ERROR_ARGUMENT)
        << jitexpr_last_error();
    EXPECT_EQ(data, (std::vector<float>{1, 2}));
}

// ---- fixed-width string arrays (NumPy's S and U layout): JITEXPR_ARG_STRINGS

TEST(CApiStrings, SAndUArraysAreComparedAndSearched) {
    RuntimePtr rt = cpu_runtime();
    const char s_data[] = "oslo\0\0bergenoslo\0\0";  // S6: oslo, bergen, oslo
    const std::int64_t shape[] = {3};
    jitexpr_strings s{s_data, JITEXPR_STRINGS_BYTES, 1, 6, shape, nullptr};
    const char32_t u_data[] = {U'o', U's', U'\0', U'\u00f8', U'x', U'\0'};  // U3: "os", "\u00f8x"
    const std::int64_t ushape[] = {2};
    jitexpr_strings u{u_data, JITEXPR_STRINGS_UCS4, 1, 12, ushape, nullptr};
    auto arg = [](const jitexpr_strings* x) {
        jitexpr_arg a{};
        a.kind = JITEXPR_ARG_STRINGS;
        a.value.strings = x;
        return a;
    };
    DLManagedTensor* out = nullptr;
    jitexpr_arg sa[] = {arg(&s)};
    ASSERT_EQ(jitexpr_eval(rt.get(), "(s == b'oslo') & startswith(s, b'os')", 1, sa, &out), JITEXPR_OK)
        << jitexpr_last_error();
    ASSERT_EQ(out->dl_tensor.shape[0], 3);
    const auto* b = static_cast<const std::uint8_t*>(out->dl_tensor.data);
    EXPECT_EQ(std::vector<std::uint8_t>(b, b + 3), (std::vector<std::uint8_t>{1, 0, 1}));
    out->deleter(out);
    jitexpr_arg ua[] = {arg(&u)};
    ASSERT_EQ(jitexpr_eval(rt.get(), "find(u, '\\u00f8') + str_len(u)", 1, ua, &out), JITEXPR_OK)
        << jitexpr_last_error();
    const auto* i = static_cast<const std::int64_t*>(out->dl_tensor.data);
    EXPECT_EQ(std::vector<std::int64_t>(i, i + 2), (std::vector<std::int64_t>{1, 2}));
    out->deleter(out);
    // bytes against str: NumPy's TypeError; a string-valued result: refused too.
    jitexpr_arg both[] = {arg(&s), arg(&u)};
    const char* names[] = {"s", "u"};
    EXPECT_EQ(jitexpr_eval_named(rt.get(), "s[:2] == u", 2, names, both, &out), JITEXPR_ERROR_TYPE);
    EXPECT_NE(std::string(jitexpr_last_error()).find("does not mix bytes and str"), std::string::npos)
        << jitexpr_last_error();
    EXPECT_EQ(jitexpr_eval(rt.get(), "s", 1, sa, &out), JITEXPR_ERROR_TYPE);
    // An itemsize of 0, or of a part of a code point, is an argument error.
    jitexpr_strings bad = s;
    bad.itemsize = 0;
    jitexpr_arg badarg[] = {arg(&bad)};
    EXPECT_EQ(jitexpr_eval(rt.get(), "s == b''", 1, badarg, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_NE(std::string(jitexpr_last_error()).find("itemsize 0"), std::string::npos) << jitexpr_last_error();
    jitexpr_strings odd = u;
    odd.itemsize = 6;
    jitexpr_arg oddarg[] = {arg(&odd)};
    EXPECT_EQ(jitexpr_eval(rt.get(), "u == 'a'", 1, oddarg, &out), JITEXPR_ERROR_ARGUMENT);
    EXPECT_EQ(out, nullptr);
}

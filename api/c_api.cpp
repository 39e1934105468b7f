// The C API (include/jit/c_api.h) over the C++ API: every exception is caught here and turned
// into a status code and a per-thread message.
#include <jit/c_api.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

struct jitexpr_runtime {
    jit::Runtime runtime;
    explicit jitexpr_runtime(jit::RuntimeOptions o) : runtime(std::move(o)) {}

    // Calls in flight, so that destroy waits for them (issue 17 item 4: destroying a runtime
    // that other threads are evaluating on must not tear its thread pool down under them).
    std::mutex mutex;
    std::condition_variable idle;
    int in_flight = 0;
    bool closing = false;
};

struct jitexpr_cancel_token {
    jit::CancelToken token;
};

struct jitexpr_kernel {
    jit::Kernel kernel;
    jitexpr_runtime* rt;
};

namespace {

struct LastError {
    int code = JITEXPR_OK;
    std::string message;
};

LastError& last_error() {
    thread_local LastError e;
    return e;
}

// The jitexpr_dtype of this thread's last result (jitexpr_last_result_dtype).
int& last_result_dtype() {
    thread_local int d = JITEXPR_DTYPE_NUMERIC;
    return d;
}

static_assert(JITEXPR_DATETIME64_s == static_cast<int>(jit::DType::DateTime64_s) &&
                  JITEXPR_TIMEDELTA64_as == static_cast<int>(jit::DType::TimeDelta64_as) &&
                  JITEXPR_DATETIME64_Y == static_cast<int>(jit::DType::DateTime64_Y),
              "jitexpr_dtype's codes are jit::DType's values");

// A date or duration dtype of a C code (not the generic units), or nullopt.
std::optional<jit::DType> temporal_dtype(int code) {
    const auto t = static_cast<jit::DType>(code);
    if (code < 0 || code > 255 || !jit::is_temporal(t) || jit::time_unit(t) == jit::TimeUnit::Generic)
        return std::nullopt;
    return t;
}

// Marks a call in flight on `rt` for its scope; throws ArgumentError once destroy has begun.
class InFlight {
public:
    explicit InFlight(jitexpr_runtime* rt) : rt_(rt) {
        std::lock_guard<std::mutex> lock(rt_->mutex);
        if (rt_->closing) throw jit::ArgumentError("the runtime is being destroyed");
        ++rt_->in_flight;
    }
    ~InFlight() {
        std::lock_guard<std::mutex> lock(rt_->mutex);
        if (--rt_->in_flight == 0) rt_->idle.notify_all();
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

private:
    jitexpr_runtime* rt_;
};

int fail(int code, const char* what) noexcept {
    LastError& e = last_error();
    e.code = code;
    try {
        e.message = what;
    } catch (...) {
        e.message.clear();  // no memory for the message: the code still tells the kind
    }
    return code;
}

// Runs `f` and maps whatever it throws to a status and this thread's message; nothing escapes.
template <class F>
int guarded(F&& f) noexcept {
    try {
        f();
        return JITEXPR_OK;
    } catch (const jit::ParseError& e) {
        return fail(JITEXPR_ERROR_PARSE, e.what());
    } catch (const jit::NameError& e) {
        return fail(JITEXPR_ERROR_NAME, e.what());
    } catch (const jit::TypeError& e) {
        return fail(JITEXPR_ERROR_TYPE, e.what());
    } catch (const jit::ShapeError& e) {
        return fail(JITEXPR_ERROR_SHAPE, e.what());
    } catch (const jit::ValueError& e) {
        return fail(JITEXPR_ERROR_VALUE, e.what());
    } catch (const jit::IndexError& e) {
        return fail(JITEXPR_ERROR_INDEX, e.what());
    } catch (const jit::ReadOnlyError& e) {
        return fail(JITEXPR_ERROR_READ_ONLY, e.what());
    } catch (const jit::ArgumentError& e) {
        return fail(JITEXPR_ERROR_ARGUMENT, e.what());
    } catch (const jit::IOError& e) {
        return fail(JITEXPR_ERROR_IO, e.what());
    } catch (const jit::CompileError& e) {
        return fail(JITEXPR_ERROR_COMPILE, e.what());
    } catch (const jit::CudaError& e) {
        return fail(JITEXPR_ERROR_CUDA, e.what());
    } catch (const jit::NoDeviceError& e) {
        return fail(JITEXPR_ERROR_NO_DEVICE, e.what());
    } catch (const jit::CancelledError& e) {
        return fail(JITEXPR_ERROR_CANCELLED, e.what());
    } catch (const jit::InternalError& e) {
        return fail(JITEXPR_ERROR_INTERNAL, e.what());
    } catch (const jit::OutOfMemoryError& e) {
        return fail(JITEXPR_ERROR_OUT_OF_MEMORY, e.what());
    } catch (const std::bad_alloc&) {
        return fail(JITEXPR_ERROR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(JITEXPR_ERROR_UNKNOWN, e.what());
    } catch (...) {
        return fail(JITEXPR_ERROR_UNKNOWN, "unknown exception");
    }
}

jit::Arg to_arg(const jitexpr_arg& a, std::size_t index) {
    switch (a.kind) {
        case JITEXPR_ARG_TENSOR:
            if (!a.value.tensor) throw jit::ArgumentError(fmt::format("argument {}: null tensor", index));
            return jit::Arg(jit::view_dlpack(a.value.tensor->dl_tensor));
        case JITEXPR_ARG_TENSOR_VERSIONED:
            if (!a.value.tensor_versioned) throw jit::ArgumentError(fmt::format("argument {}: null tensor", index));
            return jit::Arg(jit::view_dlpack_versioned(*a.value.tensor_versioned));
        case JITEXPR_ARG_TENSOR_TEMPORAL: {
            if (!a.value.temporal.tensor) throw jit::ArgumentError(fmt::format("argument {}: null tensor", index));
            const auto t = temporal_dtype(a.value.temporal.dtype);
            if (!t)
                throw jit::ArgumentError(fmt::format("argument {}: {} is not a jitexpr_dtype of a date or duration",
                                                     index, a.value.temporal.dtype));
            const jit::Array counts = jit::view_dlpack(a.value.temporal.tensor->dl_tensor);
            if (counts.dtype() != jit::DType::Int64)
                throw jit::ArgumentError(fmt::format("argument {}: a {} tensor holds int64 counts, not {}", index,
                                                     jit::dtype_name(*t), jit::dtype_name(counts.dtype())));
            return jit::Arg(jit::Array::view(counts.data(), *t, counts.shape(), counts.strides(), counts.backend(),
                                             counts.device()));
        }
        case JITEXPR_ARG_BOOL: return jit::Arg(a.value.b != 0);
        case JITEXPR_ARG_INT: return jit::Arg(static_cast<long long>(a.value.i));
        case JITEXPR_ARG_FLOAT: return jit::Arg(a.value.f);
        case JITEXPR_ARG_COMPLEX: return jit::Arg(std::complex<double>(a.value.c[0], a.value.c[1]));
        case JITEXPR_ARG_STRINGS: {
            const jitexpr_strings* s = a.value.strings;
            if (!s) throw jit::ArgumentError(fmt::format("argument {}: null strings", index));
            if (s->kind != JITEXPR_STRINGS_BYTES && s->kind != JITEXPR_STRINGS_UCS4)
                throw jit::ArgumentError(fmt::format("argument {}: unknown strings kind {}", index, s->kind));
            if (s->ndim < 0 || s->ndim > jit::kMaxDims || (s->ndim > 0 && !s->shape) || s->itemsize < 0)
                throw jit::ArgumentError(
                    fmt::format("argument {}: strings of {} dimensions, itemsize {}", index, s->ndim, s->itemsize));
            jit::Shape shape(s->shape, s->shape + s->ndim);
            jit::Strides strides = s->strides ? jit::Strides(s->strides, s->strides + s->ndim) : jit::Strides{};
            if (!s->data && jit::shape_size(shape) > 0)
                throw jit::ArgumentError(fmt::format("argument {}: null strings data", index));
            return jit::Arg(jit::Array::view(
                s->data, s->kind == JITEXPR_STRINGS_UCS4 ? jit::DType::Str : jit::DType::Bytes,
                static_cast<std::size_t>(s->itemsize), std::move(shape), std::move(strides), jit::Backend::Cpu));
        }
    }
    throw jit::ArgumentError(fmt::format("argument {}: unknown kind {}", index, a.kind));
}

std::vector<jit::Arg> to_args(std::size_t n, const jitexpr_arg* args) {
    if (n > 0 && !args) throw jit::ArgumentError("null argument array");
    std::vector<jit::Arg> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(to_arg(args[i], i));
    return v;
}

jit::Environment to_named(std::size_t n, const char* const* names, const jitexpr_arg* args) {
    if (n > 0 && (!names || !args)) throw jit::ArgumentError("null name or argument array");
    jit::Environment env;
    for (std::size_t i = 0; i < n; ++i) {
        if (!names[i]) throw jit::ArgumentError(fmt::format("argument {}: null name", i));
        if (!env.emplace(names[i], to_arg(args[i], i)).second)
            throw jit::ArgumentError(fmt::format("argument {}: '{}' is bound twice", i, jit::printable_name(names[i])));
    }
    return env;
}

// The values of a named binding, for export_result's check of shared memory.
std::vector<jit::Arg> values_of(const jit::Environment& env) {
    std::vector<jit::Arg> v;
    v.reserve(env.size());
    for (const auto& [n, a] : env) v.push_back(a);
    return v;
}

std::vector<jitexpr_arg> tensor_args(std::size_t n, DLManagedTensor* const* args) {
    if (n > 0 && !args) throw jit::ArgumentError("null argument array");
    std::vector<jitexpr_arg> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i].kind = JITEXPR_ARG_TENSOR;
        v[i].value.tensor = args[i];
    }
    return v;
}

// Exports the result. Arguments are borrowed views that own nothing: a result sharing memory
// with one (the program returns an argument, or assigns into it) is copied, so that the
// exported tensor never outlives memory it does not own.
DLManagedTensor* export_result(const jit::Array& r, const std::vector<jit::Arg>& args, const jit::Runtime& rt) {
    last_result_dtype() = r.defined() && jit::is_temporal(r.dtype()) ? static_cast<int>(r.dtype())
                                                                     : static_cast<int>(JITEXPR_DTYPE_NUMERIC);
    if (!r.defined()) return nullptr;
    rt.synchronize();  // on the runtime's device
    for (const jit::Arg& a : args)
        if (a.is_array() && a.array().storage() == r.storage()) {
            jit::Array copy = r.to(r.backend(), r.device());
            rt.synchronize();
            return jit::to_dlpack(copy);
        }
    return jit::to_dlpack(r);
}

// The C options as C++ ones; fields past `size` are left at their defaults.
jit::CallOptions call_options(const jitexpr_call_options* o) {
    jit::CallOptions co;
    if (!o) return co;
    if (o->size < sizeof(std::size_t)) throw jit::ArgumentError("jitexpr_call_options.size is not set (use sizeof)");
    auto has = [&](std::size_t end) { return o->size >= end; };
    if (has(offsetof(jitexpr_call_options, cancel) + sizeof o->cancel) && o->cancel) co.cancel = o->cancel->token;
    if (has(offsetof(jitexpr_call_options, stream) + sizeof o->stream)) co.stream = o->stream;
    if (has(offsetof(jitexpr_call_options, strict_in_place) + sizeof o->strict_in_place))
        co.strict_in_place = o->strict_in_place != 0;
    return co;
}

int check_out(DLManagedTensor** out) {
    if (!out) return fail(JITEXPR_ERROR_ARGUMENT, "null output pointer");
    *out = nullptr;
    return JITEXPR_OK;
}

}  // namespace

extern "C" {

const char* jitexpr_last_error(void) { return last_error().message.c_str(); }
int jitexpr_last_error_code(void) { return last_error().code; }

const char* jitexpr_status_name(int status) {
    switch (status) {
        case JITEXPR_OK: return "ok";
        case JITEXPR_ERROR_PARSE: return "parse";
        case JITEXPR_ERROR_NAME: return "name";
        case JITEXPR_ERROR_TYPE: return "type";
        case JITEXPR_ERROR_SHAPE: return "shape";
        case JITEXPR_ERROR_VALUE: return "value";
        case JITEXPR_ERROR_INDEX: return "index";
        case JITEXPR_ERROR_ARGUMENT: return "argument";
        case JITEXPR_ERROR_IO: return "io";
        case JITEXPR_ERROR_COMPILE: return "compile";
        case JITEXPR_ERROR_CUDA: return "cuda";
        case JITEXPR_ERROR_NO_DEVICE: return "no device";
        case JITEXPR_ERROR_INTERNAL: return "internal";
        case JITEXPR_ERROR_OUT_OF_MEMORY: return "out of memory";
        case JITEXPR_ERROR_UNKNOWN: return "unknown";
        case JITEXPR_ERROR_CANCELLED: return "cancelled";
        case JITEXPR_ERROR_READ_ONLY: return "read-only";
    }
    return "?";
}

const char* jitexpr_version(void) { return JITEXPR_VERSION; }

const char* jitexpr_dtype_name(int dtype) {
    if (dtype == JITEXPR_DTYPE_NUMERIC) return "numeric";
    const auto t = temporal_dtype(dtype);
    return t ? jit::dtype_name(*t).data() : "?";  // the names are NUL-terminated literals
}

int jitexpr_last_result_dtype(void) { return last_result_dtype(); }

jitexpr_runtime* jitexpr_runtime_create(int backend) { return jitexpr_runtime_create_on(backend, -1); }

jitexpr_runtime* jitexpr_runtime_create_on(int backend, int device) {
    jitexpr_runtime* rt = nullptr;
    guarded([&] {
        jit::RuntimeOptions o = jit::RuntimeOptions::from_environment();
        if (device < -1)
            throw jit::ArgumentError(
                fmt::format("device {}: use a device ordinal from 0, or -1 for the environment's "
                            "(JITEXPR_DEVICE, else 0)",
                            device));
        if (device >= 0) o.device = device;
        switch (backend) {
            case JITEXPR_BACKEND_AUTO: break;
            case JITEXPR_BACKEND_CPU: o.backend = jit::Backend::Cpu; break;
            case JITEXPR_BACKEND_CUDA: o.backend = jit::Backend::Cuda; break;
            default: throw jit::ArgumentError(fmt::format("unknown backend {} (0 auto, 1 cpu, 2 cuda)", backend));
        }
        rt = new jitexpr_runtime(std::move(o));
    });
    return rt;
}

void jitexpr_runtime_destroy(jitexpr_runtime* rt) {
    if (!rt) return;
    {
        std::unique_lock<std::mutex> lock(rt->mutex);
        rt->closing = true;  // calls that start from now fail with JITEXPR_ERROR_ARGUMENT
        rt->idle.wait(lock, [rt] { return rt->in_flight == 0; });
    }
    delete rt;
}

int jitexpr_runtime_backend(const jitexpr_runtime* rt) {
    if (!rt) return -1;
    return rt->runtime.backend() == jit::Backend::Cuda ? JITEXPR_BACKEND_CUDA : JITEXPR_BACKEND_CPU;
}

int jitexpr_runtime_device(const jitexpr_runtime* rt) {
    if (!rt) return -1;
    return rt->runtime.device();
}

int jitexpr_runtime_stats(const jitexpr_runtime* rt, jitexpr_stats* out) {
    if (!rt || !out) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_runtime_stats: null runtime or output");
    return guarded([&] {
        InFlight busy(const_cast<jitexpr_runtime*>(rt));
        const jit::CacheStats s = rt->runtime.stats();
        out->hits = s.hits;
        out->misses = s.misses;
        out->compiles = s.compiles;
        out->disk_hits = s.disk_hits;
        out->entries = s.entries;
        out->compile_ms = s.compile_ms;
    });
}

jitexpr_cancel_token* jitexpr_cancel_token_create(int (*poll)(void* user), void* user) {
    jitexpr_cancel_token* t = nullptr;
    guarded([&] {
        if (poll) t = new jitexpr_cancel_token{jit::CancelToken([poll, user] { return poll(user) != 0; })};
        else t = new jitexpr_cancel_token{jit::CancelToken()};
    });
    return t;
}

void jitexpr_cancel_token_destroy(jitexpr_cancel_token* token) { delete token; }

void jitexpr_cancel_token_cancel(jitexpr_cancel_token* token) {
    if (token) token->token.cancel();
}

int jitexpr_cancel_token_cancelled(const jitexpr_cancel_token* token) {
    return token && token->token.cancelled() ? 1 : 0;
}

void jitexpr_cancel_token_reset(jitexpr_cancel_token* token) {
    if (token) token->token.reset();
}

int jitexpr_cancel(jitexpr_runtime* rt) {
    if (!rt) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_cancel: null runtime");
    rt->runtime.cancel();
    return JITEXPR_OK;
}

int jitexpr_eval_with(jitexpr_runtime* rt, const char* text, size_t n_args, const jitexpr_arg* args,
                      DLManagedTensor** out, const jitexpr_call_options* options) {
    if (int rc = check_out(out)) return rc;
    if (!rt || !text) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_eval: null runtime or text");
    return guarded([&] {
        const jit::CallOptions co = call_options(options);
        InFlight busy(rt);
        const std::vector<jit::Arg> a = to_args(n_args, args);
        const jit::Array r = rt->runtime.eval(text, a, co);
        *out = export_result(r, a, rt->runtime);
    });
}

int jitexpr_eval(jitexpr_runtime* rt, const char* text, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out) {
    return jitexpr_eval_with(rt, text, n_args, args, out, nullptr);
}

int jitexpr_eval_named_with(jitexpr_runtime* rt, const char* text, size_t n_args, const char* const* names,
                            const jitexpr_arg* args, DLManagedTensor** out, const jitexpr_call_options* options) {
    if (int rc = check_out(out)) return rc;
    if (!rt || !text) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_eval_named: null runtime or text");
    return guarded([&] {
        const jit::CallOptions co = call_options(options);
        const jit::Environment env = to_named(n_args, names, args);
        const jit::Array r = rt->runtime.eval(text, jit::Named(env), co);
        *out = export_result(r, values_of(env), rt->runtime);
    });
}

int jitexpr_eval_named(jitexpr_runtime* rt, const char* text, size_t n_args, const char* const* names,
                       const jitexpr_arg* args, DLManagedTensor** out) {
    return jitexpr_eval_named_with(rt, text, n_args, names, args, out, nullptr);
}

int jitexpr_eval_dlpack(jitexpr_runtime* rt, const char* text, size_t n_args, DLManagedTensor* const* args,
                        DLManagedTensor** out) {
    if (int rc = check_out(out)) return rc;
    std::vector<jitexpr_arg> a;
    if (int rc = guarded([&] { a = tensor_args(n_args, args); })) return rc;
    return jitexpr_eval(rt, text, n_args, a.data(), out);
}

jitexpr_kernel* jitexpr_compile(jitexpr_runtime* rt, const char* text) {
    if (!rt || !text) {
        fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_compile: null runtime or text");
        return nullptr;
    }
    jitexpr_kernel* k = nullptr;
    guarded([&] {
        InFlight busy(rt);
        k = new jitexpr_kernel{jit::compile(text, rt->runtime), rt};
    });
    return k;
}

void jitexpr_kernel_free(jitexpr_kernel* k) { delete k; }

size_t jitexpr_kernel_num_params(const jitexpr_kernel* k) { return k ? k->kernel.parameters().size() : 0; }

const char* jitexpr_kernel_param_name(const jitexpr_kernel* k, size_t i) {
    if (!k || i >= k->kernel.parameters().size()) return nullptr;
    return k->kernel.parameters()[i].c_str();
}

int jitexpr_kernel_call_with(const jitexpr_kernel* k, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out,
                             const jitexpr_call_options* options) {
    if (int rc = check_out(out)) return rc;
    if (!k) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_kernel_call: null kernel");
    return guarded([&] {
        const jit::CallOptions co = call_options(options);
        InFlight busy(k->rt);
        const std::vector<jit::Arg> a = to_args(n_args, args);
        const jit::Array r = k->kernel.call(a, co);
        *out = export_result(r, a, k->rt->runtime);
    });
}

int jitexpr_kernel_call(const jitexpr_kernel* k, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out) {
    return jitexpr_kernel_call_with(k, n_args, args, out, nullptr);
}

int jitexpr_kernel_call_named_with(const jitexpr_kernel* k, size_t n_args, const char* const* names,
                                   const jitexpr_arg* args, DLManagedTensor** out,
                                   const jitexpr_call_options* options) {
    if (int rc = check_out(out)) return rc;
    if (!k) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_kernel_call_named: null kernel");
    return guarded([&] {
        const jit::CallOptions co = call_options(options);
        const jit::Environment env = to_named(n_args, names, args);
        const jit::Array r = k->kernel.call(jit::Named(env), co);
        *out = export_result(r, values_of(env), k->rt->runtime);
    });
}

int jitexpr_kernel_call_named(const jitexpr_kernel* k, size_t n_args, const char* const* names, const jitexpr_arg* args,
                              DLManagedTensor** out) {
    return jitexpr_kernel_call_named_with(k, n_args, names, args, out, nullptr);
}

int jitexpr_kernel_call_dlpack(const jitexpr_kernel* k, size_t n_args, DLManagedTensor* const* args,
                               DLManagedTensor** out) {
    if (int rc = check_out(out)) return rc;
    std::vector<jitexpr_arg> a;
    if (int rc = guarded([&] { a = tensor_args(n_args, args); })) return rc;
    return jitexpr_kernel_call(k, n_args, a.data(), out);
}

int jitexpr_eval_arrow(jitexpr_runtime* rt, const char* text, size_t n_columns, const ArrowSchema* const* schemas,
                       const ArrowArray* const* arrays, ArrowArray* out_array, ArrowSchema* out_schema) {
    if (out_array) out_array->release = nullptr;
    if (out_schema) out_schema->release = nullptr;
    if (!out_array || !out_schema)
        return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_eval_arrow: null output array or schema");
    if (!rt || !text) return fail(JITEXPR_ERROR_ARGUMENT, "jitexpr_eval_arrow: null runtime or text");
    return guarded([&] {
        InFlight busy(rt);
        if (n_columns > 0 && (!schemas || !arrays))
            throw jit::ArgumentError("jitexpr_eval_arrow: null schema or array list");
        std::vector<jit::ArrowColumn> cols;
        cols.reserve(n_columns);
        for (std::size_t i = 0; i < n_columns; ++i) {
            try {
                cols.push_back(jit::view_arrow(schemas[i], arrays[i]));
            } catch (const jit::ArgumentError& e) {
                throw jit::ArgumentError(fmt::format("column {}: {}", i, e.what()));
            }
        }
        jit::ArrowColumn r = jit::eval_arrow(text, cols, rt->runtime);
        rt->runtime.synchronize();
        // The columns are borrowed views owning nothing: a result sharing memory with one is
        // copied, so that the exported array never outlives memory it does not own.
        for (const jit::ArrowColumn& c : cols)
            if (c.values.storage() == r.values.storage()) r.values = r.values.to(jit::Backend::Cpu);
        jit::to_arrow(r, out_array, out_schema);
    });
}

}  // extern "C"

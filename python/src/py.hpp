// The Python extension's private header: what its files share (python/src/*.cpp; the module
// itself is module.cpp). Not installed, not for other code.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL jitexpr_ARRAY_API
#ifndef JITEXPR_PY_MODULE_TU
#define NO_IMPORT_ARRAY  // module.cpp imports NumPy's C API; the other files use its table
#endif
#include <numpy/arrayobject.h>

#include <jit/check.hpp>
#include <jit/disk_cache.hpp>
#include <jit/error.hpp>
#include <jit/interop.hpp>
#include <jit/jit.hpp>
#include <jit/language.hpp>
#include <jit/runtime.hpp>
#if JITEXPR_PY_HAVE_CANCEL
#include <jit/cancel.hpp>
#endif

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace jitexpr_py {

struct ErrorTypes;
struct Tensor;
struct PyRuntime;
enum class Place : std::uint8_t;
struct Bound;
struct Names;
struct CupyApi;
struct TorchApi;
struct OutRates;
struct Call;
struct Scratch;
struct Keywords;
struct BindSpec;
struct CallArgs;
struct OwnKeywords;

// (name, value) pairs, borrowed from the caller's dict or from what evaluate_named bound.
using Items = std::vector<std::pair<nb::handle, nb::handle>>;

#if JITEXPR_PY_HAVE_CANCEL
using Token = jit::CancelToken;
#else
struct Token {};
#endif

// Defined in the file of their section (the comment above each prototype group names it).
extern ErrorTypes g_errors;
extern std::atomic<long> g_live_results;
extern std::mutex g_defaults_mutex;
extern std::shared_ptr<PyRuntime> g_cpu;
extern std::map<int, std::shared_ptr<PyRuntime>> g_cuda;
extern int g_cpu_threads;
extern PyObject* g_names_of;
extern PyObject* g_texts;
// The most texts whose names (or numexpr checks) are kept: the dicts are cleared when full.
constexpr Py_ssize_t kMaxTexts = 4096;
extern PyObject* g_to_library;
extern const char* const kEvaluateDoc;
extern const char* const kKernelCallDoc;
extern PyMethodDef g_evaluate_def;
extern PyObject* g_numexpr_checked;
extern const char* const kNumexprEvaluateDoc;
extern PyMethodDef g_numexpr_evaluate_def;

// errors.cpp
void raise_source(PyObject* type, const jit::SourceError& e);
void translate(const std::exception_ptr& p, void*);

// values.cpp
std::optional<jit::DType> dtype_of_descr(PyArray_Descr* d);
int npy_type_of(jit::DType t);
// A new reference to the NumPy dtype of t (datetime64 and timedelta64 with their unit).
PyArray_Descr* descr_of(jit::DType t);
void free_result_capsule(PyObject* capsule) noexcept;
nb::object numpy_of(const jit::Array& r);
nb::tuple dlpack_device(const Tensor& t);
jit::RuntimeOptions options_for(jit::Backend backend, int threads, int device = -1);
std::shared_ptr<PyRuntime> default_runtime(jit::Backend b, int device = -1);
int current_device_of_libraries();

// inputs.cpp
PyObject* interned(const char* s);
Names& names();
bool surely_absent(PyObject* obj, PyObject* name);
bool has_attr(PyObject* obj, PyObject* name);
bool declares_attr(PyObject* obj, PyObject* name);
nb::object get_attr_or_null(PyObject* obj, PyObject* name);
std::string module_of(nb::handle obj);
std::string fmt_name(const std::string& name);
std::string descr_name(PyArray_Descr* d);
void check_out_object(nb::handle out);
jit::Array view_numpy(PyArrayObject* a, const std::string& name);
PyObject* imported_module(const char* name);
PyObject* attr_or_null(PyObject* o, const char* name);
const CupyApi* cupy_api();
const TorchApi* torch_api();
std::uintptr_t current_stream_of(const std::string& library);
nb::object dlpack_stream_arg(std::uintptr_t stream);
jit::Array import_dlpack(nb::handle obj, const std::string& name, Bound& b, std::uintptr_t stream, bool have_stream);
jit::DType dtype_of_typestr(const std::string& ts, const std::string& name);
nb::handle cai_item(nb::dict cai, PyObject* key, bool required);
jit::Array import_cai(nb::handle obj, nb::handle interface, const std::string& name, Bound& b);
bool import_torch_cuda(PyObject* o, Bound& b, jit::Array& out);
bool import_cupy(PyObject* o, Bound& b, jit::Array& out);
nb::object cupy_of(const jit::Array& r);
nb::object torch_of(const jit::Array& r);
jit::ArrowColumn join_chunks(const std::vector<jit::ArrowColumn>& chunks, jit::DType dtype);
jit::ArrowColumn import_arrow(nb::handle obj, const std::string& name);
void bind_value(nb::handle obj, const std::string& name, Bound& b, std::vector<nb::object>& hold, std::uintptr_t stream,
                bool have_stream);
std::string place_text(const Bound& b);
[[noreturn]] void type_error(const std::string& msg);
[[noreturn]] void raise_as(PyObject* type, PyObject* fallback, const std::string& msg);
[[noreturn]] void read_only_error(const std::string& msg);

// evaluate.cpp
jit::Backend parse_backend(const std::string& s);
jit::Array run_with(jit::Runtime& rt, std::string_view text, jit::Environment& env, void* stream, const Token* token,
                    bool strict = false);
jit::Array run_into_with(jit::Runtime& rt, std::string_view text, jit::Environment& env, const jit::Array& out,
                         void* stream, const Token* token, bool atomic);
OutRates& out_rates();
bool predicted_long(std::string_view text, std::int64_t n);
void note_rate(std::string_view text, std::int64_t n, double ms, bool through_temporary);
std::string device_text(const jit::Array& a);
Items items_of(nb::dict names);
void prepare(Call& c, const Items& names, nb::handle backend_arg, nb::handle stream_arg, nb::handle runtime_arg,
             nb::handle device_arg = nb::none());
std::shared_ptr<jit::Storage> storage_of(const jit::Arg& a);
nb::object to_python(const jit::Array& r0, const Call& c);
nb::object evaluate_items(std::string_view text, const Items& names, nb::handle out, nb::handle backend,
                          nb::handle stream, nb::handle runtime, bool as_tensor, nb::handle device, Scratch& sc);
nb::object evaluate(const std::string& text, nb::dict names, nb::handle out, nb::handle backend, nb::handle stream,
                    nb::handle runtime, bool as_tensor, nb::handle device);
nb::object names_of(PyObject* text);
nb::object lookup(PyObject* mapping, PyObject* name, bool by_getitem = false);
bool is_constant_name(PyObject* n);
nb::object frame_above(int depth);
void bind_names(PyObject* text, const BindSpec& spec, Items& items, std::vector<nb::object>& keep,
                std::vector<PyObject*>& missing);
std::string dtype_str(PyObject* dtype);
void check_signature(const Items& items, nb::dict signature);
nb::object evaluate_keywords(nb::handle text, nb::handle local_dict, nb::handle out, nb::handle backend,
                             nb::handle stream, nb::handle device, int depth, const Keywords& names,
                             nb::handle signature);
nb::object evaluate_named(nb::handle text, nb::handle local_dict, nb::handle out, nb::handle backend, nb::handle stream,
                          nb::handle device, int depth, nb::dict names, nb::handle signature);
PyObject* raise_current() noexcept;
const OwnKeywords& own_keywords();
bool same_name(PyObject* a, PyObject* b);
bool parse_call(const char* fname, bool kernel, PyObject* const* args, Py_ssize_t nargs, PyObject* const* kwvalues,
                PyObject* kwnames, CallArgs& c);
PyObject* result_to_python(nb::object r);
PyObject* py_evaluate(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept;
PyObject* py_kernel_call(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept;
// jitexpr.Kernel's base class (a new reference): instances are called by vectorcall.
PyObject* make_kernel_base();
void call_by_vectorcall(PyObject* cls, PyObject* base);

// numexpr.cpp
std::string numexpr_text(std::string_view text);
bool numexpr_negative_axis(std::string_view text);
bool numexpr_word_char(char c);
bool numexpr_forbidden(std::string_view text);
bool numexpr_boolean_word(std::string_view text);
bool numexpr_sanitize(PyObject* sanitize);
nb::object numexpr_check_text(PyObject* ex, bool sanitize = true);
void numexpr_take_values(Items& items, std::vector<nb::object>& keep);
nb::object numexpr_constant_result(nb::object r);
PyObject* numexpr_retype_error();
void numexpr_check_context(PyObject* const* names, PyObject* const* values, Py_ssize_t count);
PyObject* numexpr_last_key();
nb::object numexpr_out_ref(nb::handle out);
void numexpr_keep_last(nb::handle ex, nb::handle out_ref, nb::handle order, nb::handle casting);
nb::object numexpr_last();
nb::dict numexpr_bind(nb::handle ex, nb::handle local_dict, nb::handle global_dict, int depth);
PyObject* const* numexpr_param_names();
PyObject* py_numexpr_evaluate(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept;

// export.cpp
void dlpack_capsule_destructor(PyObject* capsule) noexcept;
nb::dict run_program(const std::string& text, nb::dict names, nb::handle backend, nb::handle stream, nb::handle runtime,
                     nb::handle device, bool strict);
std::string explain_program(const std::string& text, nb::dict names, nb::handle backend, nb::handle device,
                            double bandwidth);
std::shared_ptr<jit::Runtime> cuda_runtime(int device = -1);
nb::object tensor_dlpack(Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy);
const char* typestr_of(jit::DType d);
nb::dict tensor_cai(const Tensor& t);
jit::ArrowColumn column_of(const Tensor& t);
void arrow_schema_capsule_destructor(PyObject* capsule) noexcept;
void arrow_array_capsule_destructor(PyObject* capsule) noexcept;
nb::tuple tensor_arrow_array(const Tensor& t, nb::handle requested_schema);
int stream_get_schema(ArrowArrayStream* s, ArrowSchema* out);
int stream_get_next(ArrowArrayStream* s, ArrowArray* out);
const char* stream_last_error(ArrowArrayStream* s);
void stream_release(ArrowArrayStream* s);
void arrow_stream_capsule_destructor(PyObject* capsule) noexcept;
nb::object tensor_arrow_stream(const Tensor& t, nb::handle requested_schema);
nb::object tensor_numpy(const Tensor& t);
nb::object tensor_to(nb::handle self, const std::string& where);
nb::dict library_dict(const jit::CudaLibraryInfo& l);
nb::dict cuda_info(bool load);
nb::dict stats_dict(const jit::CacheStats& s);
nb::dict check_program(const std::string& text, nb::dict specs);
nb::dict outline_program(const std::string& text);
void raise_source_error(const std::string& kind, const std::string& message, const std::string& text, std::size_t begin,
                        std::size_t end);

// The Python exception classes (python/jitexpr/_errors.py), handed over at import.
struct ErrorTypes {
    PyObject* parse = nullptr;            // ParseError(Error, SyntaxError)
    PyObject* name = nullptr;             // NameError(Error, NameError)
    PyObject* type = nullptr;             // TypeError(Error, TypeError)
    PyObject* shape = nullptr;            // ShapeError(Error, ValueError)
    PyObject* value = nullptr;            // ValueError(Error, ValueError)
    PyObject* index = nullptr;            // IndexError(Error, IndexError)
    PyObject* read_only = nullptr;        // ReadOnlyError(Error, ValueError)
    PyObject* out_of_memory = nullptr;    // OutOfMemoryError(Error, MemoryError)
    PyObject* argument = nullptr;         // ArgumentError(Error, ValueError)
    PyObject* device_mismatch = nullptr;  // DeviceMismatchError(ArgumentError)
    PyObject* io = nullptr;               // IOError(Error, OSError)
    PyObject* compile = nullptr;          // CompileError(Error, RuntimeError)
    PyObject* cuda = nullptr;             // CudaError(Error, RuntimeError)
    PyObject* no_device = nullptr;        // NoDeviceError(Error, RuntimeError)
    PyObject* internal = nullptr;         // InternalError(Error, RuntimeError)
    PyObject* cancelled = nullptr;        // CancelledError(Error, KeyboardInterrupt-free base)
    PyObject* base = nullptr;             // Error(Exception)
    PyObject* overflow = nullptr;         // OverflowError(ValueError, OverflowError): NumPy's, and past int64
    PyObject* not_implemented = nullptr;  // NotImplementedError(Error, NotImplementedError): the drop-in's
    PyObject* zero_division = nullptr;    // ZeroDivisionError(ValueError, ZeroDivisionError)
};

// A jitexpr array handed to Python when it cannot (or should not) be a NumPy array: CUDA
// results, bfloat16, or when asked for. Exports DLPack (the whole protocol), the CUDA array
// interface v3 and, for 1-D host arrays, the Arrow PyCapsule interface; `.numpy()` for host data.
struct Tensor {
    jit::Array array;
    std::optional<jit::Array> validity;  // Arrow results: true where valid
    std::int64_t null_count = 0;
    // The stream the work writing the array was queued on (0: the legacy default stream).
    std::uintptr_t stream = 0;
};

// A jit::Runtime shared with the calls in flight: close() lets go of it, and the runtime is
// destroyed when the last call using it returns (issue 17 item 4: closing while other threads
// evaluate neither deadlocks nor crashes; later calls fail cleanly).
struct PyRuntime {
    mutable std::mutex m;
    std::shared_ptr<jit::Runtime> rt;

    explicit PyRuntime(const jit::RuntimeOptions& o) : rt(std::make_shared<jit::Runtime>(o)) {}
    // The backend it evaluates on, and why not CUDA under auto. Asked of the runtime at the first
    // use, not when it is made: under auto that starts the CUDA driver, which a runtime made and
    // never asked (or closed first) does not pay. Kept, so that a closed runtime still says.
    jit::Backend backend() const { return known().first; }
    std::string fallback() const { return known().second; }
    std::shared_ptr<jit::Runtime> get() const {
        std::lock_guard lock(m);
        if (!rt) throw jit::ArgumentError("this jitexpr Runtime is closed");
        return rt;
    }
    void close() {
        std::shared_ptr<jit::Runtime> last;
        {
            std::lock_guard lock(m);
            last = std::move(rt);
        }
        nb::gil_scoped_release release;  // the pool's threads are joined here when this is the last user
        last.reset();
    }
    bool closed() const {
        std::lock_guard lock(m);
        return !rt;
    }

private:
    mutable std::optional<std::pair<jit::Backend, std::string>> known_;
    const std::pair<jit::Backend, std::string>& known() const {
        std::lock_guard lock(m);
        if (!known_) {
            if (!rt) throw jit::ArgumentError("this jitexpr Runtime is closed");
            known_.emplace(rt->backend(), rt->fallback_reason());
        }
        return *known_;
    }
};

enum class Place : std::uint8_t { Scalar, Host, Device };

struct Bound {
    jit::Arg arg{false};
    Place place = Place::Scalar;
    std::optional<jit::Array> validity;  // Arrow columns with nulls
    bool arrow = false;
    std::string library;        // device inputs: "cupy", "torch", ... (module of the type)
    std::uintptr_t stream = 0;  // __cuda_array_interface__'s stream, when it gives one
    // The producer says the memory must not be written (NumPy's writeable flag, a read-only
    // buffer, DLPack's read-only flag, CAI's data[1], Arrow): arg's array is read-only too, so
    // the runtime refuses every write into it (jit::ReadOnlyError) before the call.
    bool read_only = false;
    bool moved = false;  // arg is a copy on another backend or device (backend=, device=)
};

struct Names {
    PyObject* arrow_array = interned("__arrow_c_array__");
    PyObject* arrow_stream = interned("__arrow_c_stream__");
    PyObject* cai = interned("__cuda_array_interface__");
    PyObject* dlpack = interned("__dlpack__");
    PyObject* dlpack_device = interned("__dlpack_device__");
    PyObject* typestr = interned("typestr");
    PyObject* shape = interned("shape");
    PyObject* strides = interned("strides");
    PyObject* data = interned("data");
    PyObject* mask = interned("mask");
    PyObject* stream = interned("stream");
    PyObject* device = interned("device");
    PyObject* id = interned("id");
    PyObject* index = interned("index");
    PyObject* module = interned("__module__");
    PyObject* f_locals = interned("f_locals");
    PyObject* f_globals = interned("f_globals");
};

// What jitexpr uses of CuPy, looked up once CuPy is imported: the array type (read through its
// attributes rather than the __cuda_array_interface__ dict it builds per access, 0.8 us on the
// H200), the current stream's getter, and the classes that wrap memory CuPy does not own (a
// result handed back as a cupy.ndarray without the DLPack exchange of cupy.from_dlpack, 4.1 us).
// A member left null (another CuPy whose names differ) means the general way for that step.
struct CupyApi {
    PyObject* ndarray = nullptr;             // cupy.ndarray
    PyObject* get_current_stream = nullptr;  // cupy.cuda.get_current_stream
    PyObject* unowned_memory = nullptr;      // cupy.cuda.UnownedMemory
    PyObject* memory_pointer = nullptr;      // cupy.cuda.MemoryPointer
    PyObject* from_dlpack = nullptr;         // cupy.from_dlpack
    // cupy_backends.cuda.stream's C function get_current_stream_ptr, from the module's
    // __pyx_capi__ (how Cython modules hand each other their C functions), taken only under the
    // signature "intptr_t (void)": CuPy's current stream without making or reading a Stream object
    // (0.05 us against get_current_stream().ptr's 0.4 us on an H100 host).
    std::intptr_t (*current_stream_ptr)() = nullptr;
};

// What jitexpr uses of PyTorch, looked up once torch is imported, as CupyApi: the tensor type,
// the dtype objects, the strided layout, and the raw current stream's getters.
struct TorchApi {
    PyObject* tensor = nullptr;                            // torch.Tensor
    PyObject* strided = nullptr;                           // torch.strided
    PyObject* raw_stream = nullptr;                        // torch._C._cuda_getCurrentRawStream
    PyObject* get_device = nullptr;                        // torch._C._cuda_getDevice
    std::vector<std::pair<PyObject*, jit::DType>> dtypes;  // torch.float32 -> Float32, ...
};

template <class T>
inline T* capsule_pointer(nb::handle capsule, const char* name, const std::string& what) {
    void* p = PyCapsule_GetPointer(capsule.ptr(), name);
    if (!p) {
        PyErr_Clear();
        type_error(what + ": expected a PyCapsule named '" + name + "'");
    }
    return static_cast<T*>(p);
}

// Runs `work` (a call into the runtime) with the GIL released. A Ctrl-C meanwhile becomes the
// KeyboardInterrupt it would have been: with jitexpr's cancel token, the call stops at its next
// safe point (the poll takes the GIL and runs Python's signal handlers, every ~20 ms); the
// exception is raised once the call has returned.

#if JITEXPR_PY_HAVE_CANCEL
// When the call in flight on this thread first polled (CallToken resets it).
inline thread_local std::chrono::steady_clock::time_point t_first_poll;

// The runtime polls at a call's first safe point and then about every 20 ms. The first poll of
// a call only notes the time: taking the GIL would cost a short call a large part of its time,
// and its signals are checked once it returns (call_released); the next, ~20 ms on, runs
// Python's signal handlers.
inline bool poll_signals() {
    const auto now = std::chrono::steady_clock::now();
    if (t_first_poll == std::chrono::steady_clock::time_point{}) t_first_poll = now;
    if (now - t_first_poll < std::chrono::milliseconds(10)) return false;
    nb::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;  // leaves KeyboardInterrupt set on this thread
}

// The token of the call in flight on this thread: made once per thread and reset per call (a
// token's shared state and poll function are allocations a call need not pay for). A call made
// while another is in flight on the same thread (from a signal handler the poll runs, or a
// finaliser) gets a token of its own.
struct TokenSlot {
    std::optional<jit::CancelToken> token;
    bool busy = false;
};

class CallToken {
public:
    CallToken() {
        t_first_poll = {};  // a nested call starts it again: that only delays the next poll
        thread_local TokenSlot slot;
        if (!slot.busy) {
            if (!slot.token) slot.token.emplace(&poll_signals);
            slot.token->reset();
            slot.busy = true;
            slot_ = &slot;
            token_ = &*slot.token;
        } else {
            own_.emplace(&poll_signals);
            token_ = &*own_;
        }
    }
    ~CallToken() {
        if (slot_) slot_->busy = false;
    }
    CallToken(const CallToken&) = delete;
    CallToken& operator=(const CallToken&) = delete;
    const jit::CancelToken* get() const { return token_; }

private:
    TokenSlot* slot_ = nullptr;
    std::optional<jit::CancelToken> own_;
    const jit::CancelToken* token_ = nullptr;
};
#endif

template <class Work>
jit::Array call_released(Work&& work) {
    jit::Array r;
#if JITEXPR_PY_HAVE_CANCEL
    CallToken call_token;
    const jit::CancelToken& token = *call_token.get();
    try {
        nb::gil_scoped_release release;
        r = work(&token);
    } catch (const jit::CancelledError&) {
        if (PyErr_Occurred()) throw nb::python_error();
        throw;
    }
    // The poll ran Python's handler (KeyboardInterrupt is set on this thread) after the call's
    // last safe point, so the call finished: the interrupt is raised all the same. Returning the
    // result instead lost it, since the next lookup that clears a failed attribute probe cleared
    // it too (a Ctrl-C during a loop of short calls then went unseen).
    if (PyErr_Occurred()) throw nb::python_error();
#else
    {
        nb::gil_scoped_release release;
        r = work(static_cast<const Token*>(nullptr));
    }
#endif
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    return r;
}

struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct OutRates {
    std::mutex m;
    std::unordered_map<std::string, double, TextHash, std::equal_to<>> ns_per_element;
};

struct Call {
    std::vector<std::pair<std::string, Bound>> bound;
    std::vector<nb::object> hold;
    jit::Backend backend = jit::Backend::Cpu;
    std::shared_ptr<PyRuntime> runtime;
    std::uintptr_t stream = 0;
    std::string library;  // of the first device (or Arrow) input
    bool any_arrow = false;
    bool any_validity = false;
    // `stream` is the current stream of `library` (asked for this call): a result handed to that
    // library is used after our work on it without a wait.
    bool library_stream = false;
};

// What one evaluate call works in: the bindings, the objects held for the call, the
// environment handed to the runtime. One per thread, kept from call to call so that a call over
// the same names allocates nothing here (the vectors keep their capacity, the environment its
// nodes); everything it refers to is let go of when the call ends, so that no thread keeps the
// caller's arrays (or results) alive. A call made while another is in flight on the same thread
// (from a signal handler, a finaliser, a __dlpack__ of the caller's) gets a fresh one.
struct Scratch {
    Items items;
    std::vector<nb::object> keep;
    std::vector<PyObject*> missing;
    Call call;
    jit::Environment env;
    bool busy = false;

    // Names of `call.bound` only, in the environment: stale names of another program are
    // dropped (a stale binding would change the program), the others rebound in place.
    jit::Environment& bind_env() {
        for (auto it = env.begin(); it != env.end();) {
            bool used = false;
            for (const auto& nb_ : call.bound)
                if (nb_.first == it->first) {
                    used = true;
                    break;
                }
            it = used ? std::next(it) : env.erase(it);
        }
        for (auto& [n, b] : call.bound) {
            if (auto it = env.find(n); it != env.end()) it->second = b.arg;
            else env.emplace(n, b.arg);
        }
        return env;
    }
    void release() {
        for (auto& kv : env) kv.second = jit::Arg(false);
        call.bound.clear();
        call.runtime.reset();
        call.stream = 0;
        call.library.clear();
        call.any_arrow = call.any_validity = call.library_stream = false;
        call.backend = jit::Backend::Cpu;
        items.clear();
        missing.clear();
        // Letting go of objects may run Python code (finalisers) that evaluates: such a call,
        // made while this Scratch is still busy, works in one of its own.
        call.hold.clear();
        keep.clear();
    }
};

// The thread's Scratch for the length of one call (or a fresh one for a nested call).
class ScratchLease {
public:
    ScratchLease() {
        thread_local Scratch mine;
        if (!mine.busy) {
            mine.busy = true;
            s_ = &mine;
        } else {
            own_ = std::make_unique<Scratch>();
            s_ = own_.get();
        }
    }
    ~ScratchLease() {
        s_->release();
        s_->busy = false;
    }
    ScratchLease(const ScratchLease&) = delete;
    ScratchLease& operator=(const ScratchLease&) = delete;
    Scratch& operator*() const { return *s_; }
    Scratch* operator->() const { return s_; }

private:
    Scratch* s_ = nullptr;
    std::unique_ptr<Scratch> own_;
};

// The variables a call gives by keyword: a dict (Kernel calls, evaluate_named), or the keywords
// of a vectorcall (jitexpr.evaluate), less the ones that are the function's own (`skip`).
struct Keywords {
    PyObject* dict = nullptr;
    PyObject* const* values = nullptr;
    PyObject* kwnames = nullptr;
    const bool* skip = nullptr;
    Py_ssize_t count = 0;
    bool any = false;

    // The value given for `name` (borrowed), or null.
    PyObject* get(PyObject* name) const {
        if (dict) {
            PyObject* v = PyDict_GetItemWithError(dict, name);
            if (!v && PyErr_Occurred()) throw nb::python_error();
            return v;
        }
        for (Py_ssize_t i = 0; i < count; ++i)  // call sites' keywords are interned, as the names are
            if (!skip[i] && PyTuple_GET_ITEM(kwnames, i) == name) return values[i];
        for (Py_ssize_t i = 0; i < count; ++i) {  // keywords from a ** of some other strings
            PyObject* k = PyTuple_GET_ITEM(kwnames, i);
            if (!skip[i] && !PyUnicode_CHECK_INTERNED(k) && PyUnicode_Compare(k, name) == 0) return values[i];
        }
        return nullptr;
    }
};

// Where a call's names come from, and what a name bound nowhere means (bind_names).
struct BindSpec {
    const Keywords* keywords = nullptr;  // jitexpr.evaluate's **names (null: none)
    nb::handle local_dict;               // None: the frame's locals
    nb::handle global_dict;              // None: the frame's globals
    int depth = 0;                       // the frame: `depth` levels above the innermost Python frame
    // numexpr's rules (jitexpr.numexpr): a parameter bound nowhere is a KeyError naming it, and a
    // mapping other than a dict is read by mapping[name] alone (a KeyError: not there).
    bool numexpr = false;
};

// The keyword arguments that are evaluate's own (interned, compared by pointer first).
struct OwnKeywords {
    PyObject* local_dict = interned("local_dict");
    PyObject* out = interned("out");
    PyObject* backend = interned("backend");
    PyObject* stream = interned("stream");
    PyObject* device = interned("device");
    PyObject* frame_depth = interned("_frame_depth");
};

// The arguments of a vectorcall of evaluate or of a Kernel: the keywords that are the function's
// own taken out, the others left in `kw` as variables.
struct CallArgs {
    PyObject* local_dict = Py_None;
    PyObject *out = Py_None, *backend = Py_None, *stream = Py_None, *device = Py_None;
    long frame_depth = 1;
    Keywords kw;
    static constexpr Py_ssize_t kInline = 32;
    bool skip_inline[kInline];
    std::unique_ptr<bool[]> skip_heap;
};

// numexpr.evaluate's parameters, in its order (all of them may be given by position).
enum NeParam { kNeEx, kNeLocal, kNeGlobal, kNeOut, kNeOrder, kNeCasting, kNeSanitize, kNeDepth, kNeNoCache, kNeCount };

struct NumexprParams {
    PyObject* names[kNeCount] = {interned("ex"),       interned("local_dict"),   interned("global_dict"),
                                 interned("out"),      interned("order"),        interned("casting"),
                                 interned("sanitize"), interned("_frame_depth"), interned("disable_cache")};
};

// A one-chunk ArrowArrayStream over a column.
struct StreamState {
    jit::ArrowColumn column;
    bool given = false;
    std::string error;
};

}  // namespace jitexpr_py

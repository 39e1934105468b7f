// jitexpr._jitexpr — the Python extension: jitexpr's public C++ API (include/jit/) for Python.
//
// What it does and Python does not: turning Python values into jit::Arg without copying
// (NumPy arrays through NumPy's C API, DLPack capsules, __cuda_array_interface__, Arrow C data),
// evaluating with the GIL released, and handing results back as NumPy arrays that own jitexpr's
// memory through a capsule, or as Tensor objects that export DLPack, the CUDA array interface
// and the Arrow PyCapsule interface. Names are always bound by name (jit::Environment): the
// Python layer (python/jitexpr/) resolves them from frames, dicts and keywords.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL jitexpr_ARRAY_API
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
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace jitexpr_py {

// ------------------------------------------------------------------------------- errors

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
ErrorTypes g_errors;

// Raises the Python class for `e` with its message, and for source errors the bare message,
// the text and the span (attributes message, source, span).
void raise_source(PyObject* type, const jit::SourceError& e) {
    nb::object t = nb::borrow(type ? type : PyExc_RuntimeError);
    nb::object exc = t(nb::str(e.what()));
    try {
        exc.attr("message") = nb::str(e.message().c_str());
        exc.attr("source") = nb::str(e.source().c_str());
        exc.attr("span") = nb::make_tuple(e.span().begin, e.span().end);
        exc.attr("kind") = nb::str(e.kind().c_str());
    } catch (...) {}
    PyErr_SetObject(t.ptr(), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
    try {
        std::rethrow_exception(p);
    } catch (const jit::ParseError& e) {
        raise_source(g_errors.parse, e);
    } catch (const jit::NameError& e) {
        raise_source(g_errors.name, e);
    } catch (const jit::TypeError& e) {
        raise_source(g_errors.type, e);
    } catch (const jit::ShapeError& e) {
        raise_source(g_errors.shape, e);
    } catch (const jit::ValueError& e) {
        // An integer that its dtype cannot hold ("integer 2**40 is out of bounds for int32") is
        // NumPy's OverflowError: jitexpr.OverflowError, a jitexpr.ValueError too.
        // Literal arithmetic Python refuses ("division by zero", folded as Python folds it) is
        // Python's ZeroDivisionError: jitexpr.ZeroDivisionError, a jitexpr.ValueError too.
        const std::string& m = e.message();
        const bool overflow = m.rfind("integer ", 0) == 0 && m.find(" is out of bounds for ") != std::string::npos;
        const bool by_zero = m.size() >= 8 && m.compare(m.size() - 8, 8, " by zero") == 0;
        PyObject* t = overflow ? g_errors.overflow : by_zero ? g_errors.zero_division : nullptr;
        raise_source(t ? t : g_errors.value, e);
    } catch (const jit::IndexError& e) {
        raise_source(g_errors.index, e);
    } catch (const jit::ReadOnlyError& e) {
        raise_source(g_errors.read_only ? g_errors.read_only : g_errors.value, e);
    } catch (const jit::SourceError& e) {
        raise_source(g_errors.base, e);
#if JITEXPR_PY_HAVE_CANCEL
    } catch (const jit::CancelledError& e) {
        PyErr_SetString(g_errors.cancelled ? g_errors.cancelled : PyExc_RuntimeError, e.what());
#endif
    } catch (const jit::DeviceMismatchError& e) {
        PyObject* t = g_errors.device_mismatch ? g_errors.device_mismatch : g_errors.argument;
        PyErr_SetString(t ? t : PyExc_ValueError, e.what());
    } catch (const jit::ArgumentError& e) {
        PyErr_SetString(g_errors.argument ? g_errors.argument : PyExc_ValueError, e.what());
    } catch (const jit::IOError& e) {
        PyErr_SetString(g_errors.io ? g_errors.io : PyExc_OSError, e.what());
    } catch (const jit::CompileError& e) {
        PyErr_SetString(g_errors.compile ? g_errors.compile : PyExc_RuntimeError, e.what());
    } catch (const jit::CudaError& e) {
        PyErr_SetString(g_errors.cuda ? g_errors.cuda : PyExc_RuntimeError, e.what());
    } catch (const jit::NoDeviceError& e) {
        PyErr_SetString(g_errors.no_device ? g_errors.no_device : PyExc_RuntimeError, e.what());
    } catch (const jit::InternalError& e) {
        PyErr_SetString(g_errors.internal ? g_errors.internal : PyExc_RuntimeError, e.what());
    } catch (const jit::OutOfMemoryError& e) {
        // The bytes asked and available as attributes too, beside the message and its caret.
        nb::object t = nb::borrow(g_errors.out_of_memory ? g_errors.out_of_memory : PyExc_MemoryError);
        nb::object exc = t(nb::str(e.what()));
        try {
            exc.attr("requested") = nb::int_(e.requested());
            exc.attr("available") = nb::int_(e.available());
        } catch (...) {}
        PyErr_SetObject(t.ptr(), exc.ptr());
    } catch (const jit::Error& e) {
        PyErr_SetString(g_errors.base ? g_errors.base : PyExc_RuntimeError, e.what());
    } catch (const std::bad_alloc&) {
        // Memory that could not be had where no jitexpr error says how much (a container's).
        PyErr_SetString(g_errors.out_of_memory ? g_errors.out_of_memory : PyExc_MemoryError,
                        "out of memory: jitexpr could not allocate what the call needs");
    } catch (const nb::cast_error&) {
        // A value of another type than the one read (from a protocol object, an argument):
        // jitexpr's TypeError, not nanobind's "std::bad_cast".
        PyErr_SetString(g_errors.type ? g_errors.type : PyExc_TypeError,
                        "a value given to jitexpr (an argument, or what an array protocol returned) is not of "
                        "the type it must be");
    } catch (const nb::python_error&) {
        throw;  // a Python exception already: nanobind restores it
    } catch (const nb::builtin_exception&) {
        throw;  // nanobind's own, raised as the built-in it names
    } catch (const std::out_of_range& e) {
        PyErr_SetString(g_errors.index ? g_errors.index : PyExc_IndexError, e.what());
    } catch (const std::overflow_error& e) {
        PyErr_SetString(g_errors.overflow ? g_errors.overflow : PyExc_OverflowError, e.what());
    } catch (const std::logic_error& e) {  // domain_error, invalid_argument, length_error
        PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError, e.what());
    } catch (const std::range_error& e) {
        PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError, e.what());
    } catch (const std::exception& e) {
        PyErr_SetString(g_errors.internal ? g_errors.internal : PyExc_RuntimeError,
                        (std::string("internal error: ") + e.what()).c_str());
    }
}

// ------------------------------------------------------------------------------- dtypes

std::optional<jit::DType> dtype_of_descr(PyArray_Descr* d) {
    const char kind = d->kind;
    const auto size = PyDataType_ELSIZE(d);
    switch (kind) {
        case 'b': return size == 1 ? std::optional(jit::DType::Bool) : std::nullopt;
        case 'i':
            switch (size) {
                case 1: return jit::DType::Int8;
                case 2: return jit::DType::Int16;
                case 4: return jit::DType::Int32;
                case 8: return jit::DType::Int64;
            }
            break;
        case 'u':
            switch (size) {
                case 1: return jit::DType::UInt8;
                case 2: return jit::DType::UInt16;
                case 4: return jit::DType::UInt32;
                case 8: return jit::DType::UInt64;
            }
            break;
        case 'f':
            switch (size) {
                case 2: return jit::DType::Float16;
                case 4: return jit::DType::Float32;
                case 8: return jit::DType::Float64;
            }
            break;
        case 'c':
            switch (size) {
                case 8: return jit::DType::Complex64;
                case 16: return jit::DType::Complex128;
            }
            break;
        case 'V':  // ml_dtypes' bfloat16 registers as a 2-byte type named (ml_dtypes.)bfloat16
            if (size == 2 && d->typeobj) {
                const std::string_view name = d->typeobj->tp_name;
                const std::string_view base =
                    name.substr(name.rfind('.') == std::string_view::npos ? 0 : name.rfind('.') + 1);
                if (base == "bfloat16") return jit::DType::BFloat16;
            }
            break;
    }
    return std::nullopt;
}

int npy_type_of(jit::DType t) {
    switch (t) {
        case jit::DType::Bool: return NPY_BOOL;
        case jit::DType::Int8: return NPY_INT8;
        case jit::DType::Int16: return NPY_INT16;
        case jit::DType::Int32: return NPY_INT32;
        case jit::DType::Int64: return NPY_INT64;
        case jit::DType::UInt8: return NPY_UINT8;
        case jit::DType::UInt16: return NPY_UINT16;
        case jit::DType::UInt32: return NPY_UINT32;
        case jit::DType::UInt64: return NPY_UINT64;
        case jit::DType::Float16: return NPY_FLOAT16;
        case jit::DType::Float32: return NPY_FLOAT32;
        case jit::DType::Float64: return NPY_FLOAT64;
        case jit::DType::Complex64: return NPY_COMPLEX64;
        case jit::DType::Complex128: return NPY_COMPLEX128;
        case jit::DType::BFloat16: return -1;  // NumPy has none
    }
    return -1;
}

// ------------------------------------------------------------------------------- results

// Live result capsules: the tests check that each is freed exactly once.
std::atomic<long> g_live_results{0};

void free_result_capsule(PyObject* capsule) noexcept {
    auto* a = static_cast<jit::Array*>(PyCapsule_GetPointer(capsule, "jitexpr.array"));
    if (!a) {
        PyErr_Clear();
        return;
    }
    delete a;
    g_live_results.fetch_sub(1, std::memory_order_relaxed);
}

// A NumPy array over a host result, owning it through a capsule (no copy).
nb::object numpy_of(const jit::Array& r) {
    const int type = npy_type_of(r.dtype());
    if (type < 0) throw jit::ArgumentError("a bfloat16 result has no NumPy dtype; ask for float32(...)");
    const int nd = r.ndim();
    npy_intp dims[jit::kMaxDims], strides[jit::kMaxDims];
    const auto item = static_cast<npy_intp>(jit::itemsize(r.dtype()));
    for (int k = 0; k < nd; ++k) {
        dims[k] = static_cast<npy_intp>(r.shape()[static_cast<std::size_t>(k)]);
        strides[k] = static_cast<npy_intp>(r.strides()[static_cast<std::size_t>(k)]) * item;
    }
    auto* held = new jit::Array(r);
    PyObject* capsule = PyCapsule_New(held, "jitexpr.array", &free_result_capsule);
    if (!capsule) {
        delete held;
        throw nb::python_error();
    }
    g_live_results.fetch_add(1, std::memory_order_relaxed);
    PyArray_Descr* descr = PyArray_DescrFromType(type);  // a new reference, stolen below
    PyObject* arr =
        PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, strides, r.data(), NPY_ARRAY_WRITEABLE, nullptr);
    if (!arr) {
        Py_DECREF(capsule);
        throw nb::python_error();
    }
    if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), capsule) < 0) {  // steals capsule
        Py_DECREF(arr);
        throw nb::python_error();
    }
    return nb::steal(arr);
}

// ------------------------------------------------------------------------------- Tensor

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

nb::tuple dlpack_device(const Tensor& t) {
    const bool cuda = t.array.backend() == jit::Backend::Cuda;
    return nb::make_tuple(cuda ? 2 : 1, t.array.device());  // (kDLCUDA | kDLCPU, ordinal)
}

// ------------------------------------------------------------------------------- runtimes

// A jit::Runtime shared with the calls in flight: close() lets go of it, and the runtime is
// destroyed when the last call using it returns (issue 17 item 4: closing while other threads
// evaluate neither deadlocks nor crashes; later calls fail cleanly).
struct PyRuntime {
    mutable std::mutex m;
    std::shared_ptr<jit::Runtime> rt;
    jit::Backend backend = jit::Backend::Cpu;
    std::string fallback;

    explicit PyRuntime(const jit::RuntimeOptions& o) : rt(std::make_shared<jit::Runtime>(o)) {
        backend = rt->backend();
        fallback = rt->fallback_reason();
    }
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
};

jit::RuntimeOptions options_for(jit::Backend backend, int threads, int device = -1) {
    jit::RuntimeOptions o = jit::RuntimeOptions::from_environment();
    o.backend = backend;
    if (threads > 0) o.cpu_threads = threads;
    if (device >= 0) o.device = device;
    if (backend == jit::Backend::Cpu) o.device = 0;
    return o;
}

// The runtimes jitexpr.evaluate uses: one for host data, one per CUDA device (made on first use).
std::mutex g_defaults_mutex;
std::shared_ptr<PyRuntime> g_cpu;
std::map<int, std::shared_ptr<PyRuntime>> g_cuda;
int g_cpu_threads = 0;

// `device` -1: the environment's (JITEXPR_DEVICE, else 0).
std::shared_ptr<PyRuntime> default_runtime(jit::Backend b, int device = -1) {
    std::lock_guard lock(g_defaults_mutex);
    if (b == jit::Backend::Cuda && device < 0) device = jit::RuntimeOptions::from_environment().device;
    std::shared_ptr<PyRuntime>& slot = b == jit::Backend::Cuda ? g_cuda[device] : g_cpu;
    if (!slot) slot = std::make_shared<PyRuntime>(options_for(b, b == jit::Backend::Cpu ? g_cpu_threads : 0, device));
    return slot;
}

// The current CUDA device of the libraries the caller uses (CuPy's, else PyTorch's, when
// imported), else -1.
int current_device_of_libraries() {
    try {
        nb::dict sys_modules = nb::borrow<nb::dict>(PyImport_GetModuleDict());
        if (sys_modules.contains("cupy"))
            return nb::cast<int>(sys_modules["cupy"].attr("cuda").attr("Device")().attr("id"));
        if (sys_modules.contains("torch")) {
            nb::object cuda = sys_modules["torch"].attr("cuda");
            if (nb::cast<bool>(cuda.attr("is_initialized")())) return nb::cast<int>(cuda.attr("current_device")());
        }
    } catch (const nb::python_error&) {}
    return -1;
}

// ------------------------------------------------------------------------------- inputs

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

// Interned attribute and key names, made once (a lookup with a C string makes a str each time).
PyObject* interned(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);
    if (!o) throw nb::python_error();
    return o;  // kept for the life of the process
}
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
Names& names() {
    static Names* n = new Names;  // never destroyed: used until the interpreter ends
    return *n;
}

// True when `obj` plainly has no attribute `name`, found without raising and clearing an
// AttributeError: its type has the generic attribute lookup (no __getattr__/__getattribute__ of
// its own), no class of its MRO defines the name, and the instance's __dict__ (if any) does not
// hold it. False means "ask Python" (a property may still raise).
bool surely_absent(PyObject* obj, PyObject* name) {
    PyTypeObject* t = Py_TYPE(obj);
    if (t->tp_getattro != PyObject_GenericGetAttr || _PyType_Lookup(t, name)) return false;
    bool has_dict = t->tp_dictoffset != 0;
#ifdef Py_TPFLAGS_MANAGED_DICT
    has_dict = has_dict || (t->tp_flags & Py_TPFLAGS_MANAGED_DICT) != 0;
#endif
    if (!has_dict) return true;
    PyObject* d = PyObject_GenericGetDict(obj, nullptr);
    if (!d) {
        PyErr_Clear();
        return false;
    }
    const int r = PyDict_Check(d) ? PyDict_Contains(d, name) : -1;
    Py_DECREF(d);
    if (r < 0) PyErr_Clear();
    return r == 0;
}

// hasattr(obj, name).
bool has_attr(PyObject* obj, PyObject* name) {
    if (surely_absent(obj, name)) return false;
    const int r = PyObject_HasAttr(obj, name);  // clears what getattr raised, as hasattr does
    return r == 1;
}

// getattr(obj, name), or a null object where has_attr would say no (any error getattr raised
// is cleared, as PyObject_HasAttr clears it: a property that raises means "no such attribute").
nb::object get_attr_or_null(PyObject* obj, PyObject* name) {
    if (surely_absent(obj, name)) return {};
    PyObject* r = PyObject_GetAttr(obj, name);
    if (!r) {
        PyErr_Clear();
        return {};
    }
    return nb::steal(r);
}

std::string module_of(nb::handle obj) {
    PyObject* m = PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())), names().module);
    if (!m) {
        PyErr_Clear();
        return {};
    }
    std::string out;
    if (PyUnicode_Check(m)) {
        const char* c = PyUnicode_AsUTF8(m);
        if (c) out = c;
    }
    Py_DECREF(m);
    const auto dot = out.find('.');
    return dot == std::string::npos ? out : out.substr(0, dot);
}

std::string fmt_name(const std::string& name) { return name.empty() ? std::string("the value") : "'" + name + "'"; }

std::string descr_name(PyArray_Descr* d) {
    PyObject* r = PyObject_Str(reinterpret_cast<PyObject*>(d));
    if (!r) {
        PyErr_Clear();
        return "?";
    }
    std::string out = PyUnicode_Check(r) && PyUnicode_AsUTF8(r) ? PyUnicode_AsUTF8(r) : "?";
    Py_DECREF(r);
    return out;
}

// jitexpr.TypeError (a TypeError too).
[[noreturn]] void type_error(const std::string& msg) {
    PyErr_SetString(g_errors.type ? g_errors.type : PyExc_TypeError, msg.c_str());
    throw nb::python_error();
}

// Raises jitexpr's class `type` (python/jitexpr/_errors.py; `fallback` before they are handed
// over) with `msg`.
[[noreturn]] void raise_as(PyObject* type, PyObject* fallback, const std::string& msg) {
    PyErr_SetString(type ? type : fallback, msg.c_str());
    throw nb::python_error();
}

[[noreturn]] void read_only_error(const std::string& msg) { raise_as(g_errors.read_only, PyExc_ValueError, msg); }

// out= of evaluate, a Kernel call and the numexpr drop-in, before anything runs: an array the
// call can write into (a NumPy array, a writable buffer, an object of the DLPack or CUDA array
// interface protocols, a torch tensor), never something NumPy would convert into a temporary
// (a list, a scalar), which would take the result and be thrown away.
void check_out_object(nb::handle out) {
    PyObject* o = out.ptr();
    if (PyArray_Check(o)) {
        if (!PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(o)))
            read_only_error(
                "out= is read-only (its flags.writeable is False): jitexpr does not write into it; "
                "pass a writable array");
        return;
    }
    const Names& k = names();
    if (!PyArray_IsScalar(o, Generic) && !PyBool_Check(o) && !PyLong_Check(o) && !PyFloat_Check(o) &&
        !PyComplex_Check(o)) {
        if (has_attr(o, k.cai) || (has_attr(o, k.dlpack) && has_attr(o, k.dlpack_device)) ||
            has_attr(o, k.arrow_array) || has_attr(o, k.arrow_stream))
            return;  // read-only-ness from the protocol, when it is bound
        if (PyObject_CheckBuffer(o)) {
            Py_buffer view;
            if (PyObject_GetBuffer(o, &view, PyBUF_WRITABLE) != 0) {
                PyErr_Clear();
                read_only_error(std::string("out= is a read-only buffer (") + Py_TYPE(o)->tp_name +
                                "): jitexpr does not write into it; pass a writable array");
            }
            PyBuffer_Release(&view);
            return;
        }
    }
    raise_as(g_errors.type, PyExc_TypeError,
             std::string("out= must be an array (a NumPy array, a writable buffer, or an object of the DLPack "
                         "or CUDA array interface), not ") +
                 Py_TYPE(o)->tp_name);
}

// A NumPy array, viewed in place (the caller keeps the object alive for the call).
jit::Array view_numpy(PyArrayObject* a, const std::string& name) {
    PyArray_Descr* d = PyArray_DESCR(a);
    const std::optional<jit::DType> dt = dtype_of_descr(d);
    if (!dt) type_error(fmt_name(name) + " has NumPy dtype " + descr_name(d) + ", which jitexpr does not take");
    if (PyArray_ISBYTESWAPPED(a))
        type_error(fmt_name(name) +
                   " is in non-native byte order; convert it with .astype(its dtype.newbyteorder('='))");
    const int nd = PyArray_NDIM(a);
    if (nd > jit::kMaxDims)
        type_error(fmt_name(name) + " has " + std::to_string(nd) + " dimensions; jitexpr arrays have at most 8");
    jit::Shape shape(static_cast<std::size_t>(nd));
    jit::Strides strides(static_cast<std::size_t>(nd));
    const npy_intp item = static_cast<npy_intp>(jit::itemsize(*dt));
    for (int k = 0; k < nd; ++k) {
        shape[static_cast<std::size_t>(k)] = PyArray_DIM(a, k);
        const npy_intp st = PyArray_STRIDE(a, k);
        if (st % item != 0)
            type_error(fmt_name(name) + " has a stride that is not a whole number of elements; pass a copy");
        strides[static_cast<std::size_t>(k)] = st / item;
    }
    return jit::Array::view(PyArray_DATA(a), *dt, std::move(shape), std::move(strides), jit::Backend::Cpu);
}

// --- DLPack in

// The stream a CUDA input of `library` is being produced on: the library's current stream
// (CuPy, PyTorch); 0 (the legacy default stream) when the library has no such notion.
// sys.modules[name] (borrowed), or null when it is not imported.
PyObject* imported_module(const char* name) {
    PyObject* m = PyDict_GetItemString(PyImport_GetModuleDict(), name);  // borrowed, no error set
    return m;
}

std::uintptr_t current_stream_of(const std::string& library) {
    try {
        if (library == "cupy") {
            if (PyObject* cupy = imported_module("cupy"))
                return nb::cast<std::uintptr_t>(nb::handle(cupy).attr("cuda").attr("get_current_stream")().attr("ptr"));
        } else if (library == "torch") {
            if (PyObject* torch = imported_module("torch")) {
                // torch.cuda.current_stream().cuda_stream without building a Stream object: the
                // raw stream of the current device (what torch's own kernels use, Inductor's call).
                nb::handle t(torch);
                nb::object c = t.attr("_C");
                if (nb::hasattr(c, "_cuda_getCurrentRawStream") && nb::hasattr(c, "_cuda_getDevice"))
                    return nb::cast<std::uintptr_t>(c.attr("_cuda_getCurrentRawStream")(c.attr("_cuda_getDevice")()));
                return nb::cast<std::uintptr_t>(t.attr("cuda").attr("current_stream")().attr("cuda_stream"));
            }
        }
    } catch (const nb::python_error&) {}
    return 0;
}

// DLPack's stream argument for a CUDA consumer on `stream` (1: the legacy default stream).
nb::object dlpack_stream_arg(std::uintptr_t stream) { return nb::int_(stream == 0 ? 1 : stream); }

jit::Array import_dlpack(nb::handle obj, const std::string& name, Bound& b, std::uintptr_t stream, bool have_stream) {
    int dev_type = 1;
    try {
        nb::tuple dev = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
        if (dev.size() != 2) throw nb::cast_error();  // (device type, device id)
        dev_type = nb::cast<int>(dev[0]);
    } catch (const nb::python_error&) {
        PyErr_Clear();
    }
    const bool cuda = dev_type == 2 || dev_type == 13;
    nb::object capsule;
    nb::dict kwargs;
    if (cuda) kwargs["stream"] = dlpack_stream_arg(have_stream ? stream : current_stream_of(b.library));
    kwargs["max_version"] = nb::make_tuple(1, 0);
    try {
        capsule = obj.attr("__dlpack__")(**kwargs);
    } catch (const nb::python_error& e) {
        if (!e.matches(PyExc_TypeError)) throw;
        // A producer of DLPack before 1.0: no max_version keyword.
        nb::dict old;
        if (cuda) old["stream"] = kwargs["stream"];
        capsule = obj.attr("__dlpack__")(**old);
    }
    PyObject* c = capsule.ptr();
    if (PyCapsule_IsValid(c, "dltensor_versioned")) {
        auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
        jit::Array a = jit::from_dlpack_versioned(t);  // owns t from here; read-only when flagged so
        PyCapsule_SetName(c, "used_dltensor_versioned");
        b.read_only = a.read_only();
        return a;
    }
    if (PyCapsule_IsValid(c, "dltensor")) {
        auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
        jit::Array a = jit::from_dlpack(t);
        PyCapsule_SetName(c, "used_dltensor");
        return a;
    }
    type_error(fmt_name(name) + ": __dlpack__ returned no DLPack capsule");
}

// --- __cuda_array_interface__ (v3)

jit::DType dtype_of_typestr(const std::string& ts, const std::string& name) {
    if (ts.size() < 3) type_error(fmt_name(name) + ": __cuda_array_interface__ typestr '" + ts + "' is not understood");
    if (ts[0] == '>') type_error(fmt_name(name) + " is big-endian; jitexpr takes native byte order");
    const char kind = ts[1];
    const int size = std::atoi(ts.c_str() + 2);
    using D = jit::DType;
    switch (kind) {
        case 'b':
            if (size == 1) return D::Bool;
            break;
        case 'i':
            if (size == 1) return D::Int8;
            if (size == 2) return D::Int16;
            if (size == 4) return D::Int32;
            if (size == 8) return D::Int64;
            break;
        case 'u':
            if (size == 1) return D::UInt8;
            if (size == 2) return D::UInt16;
            if (size == 4) return D::UInt32;
            if (size == 8) return D::UInt64;
            break;
        case 'f':
            if (size == 2) return D::Float16;
            if (size == 4) return D::Float32;
            if (size == 8) return D::Float64;
            break;
        case 'c':
            if (size == 8) return D::Complex64;
            if (size == 16) return D::Complex128;
            break;
    }
    type_error(fmt_name(name) + ": __cuda_array_interface__ typestr '" + ts + "' has no jitexpr dtype");
}

// cai[key] of the interface's dict, or null for get(). A required key that is missing is a
// cast error: bind_value's TypeError then says what version 3 of the interface holds.
nb::handle cai_item(nb::dict cai, PyObject* key, bool required) {
    PyObject* v = PyDict_GetItemWithError(cai.ptr(), key);  // borrowed
    if (!v) {
        if (PyErr_Occurred()) throw nb::python_error();
        if (required) throw nb::cast_error();
    }
    return v;
}

// `interface`: obj.__cuda_array_interface__, already fetched.
jit::Array import_cai(nb::handle obj, nb::handle interface, const std::string& name, Bound& b) {
    const Names& k = names();
    nb::dict cai = nb::cast<nb::dict>(interface);
    const jit::DType dt = dtype_of_typestr(nb::cast<std::string>(cai_item(cai, k.typestr, true)), name);
    nb::tuple shape_t = nb::cast<nb::tuple>(cai_item(cai, k.shape, true));
    jit::Shape shape;
    shape.reserve(shape_t.size());
    for (auto e : shape_t) shape.push_back(nb::cast<std::int64_t>(e));
    jit::Strides strides;
    if (nb::handle st_t = cai_item(cai, k.strides, false); st_t.is_valid() && !st_t.is_none()) {
        const auto item = static_cast<std::int64_t>(jit::itemsize(dt));
        for (auto e : nb::cast<nb::tuple>(st_t)) {
            const auto st = nb::cast<std::int64_t>(e);
            if (st % item != 0) type_error(fmt_name(name) + " has a stride that is not a whole number of elements");
            strides.push_back(st / item);
        }
    } else {
        strides = jit::contiguous_strides(shape);
    }
    nb::tuple data = nb::cast<nb::tuple>(cai_item(cai, k.data, true));
    if (data.size() != 2) throw nb::cast_error();  // (pointer, read-only)
    const auto ptr = nb::cast<std::uintptr_t>(data[0]);
    b.read_only = nb::cast<bool>(data[1]);
    if (nb::handle m = cai_item(cai, k.mask, false); m.is_valid() && !m.is_none())
        type_error(fmt_name(name) + " has a __cuda_array_interface__ mask; jitexpr takes unmasked arrays");
    if (nb::handle st = cai_item(cai, k.stream, false); st.is_valid() && !st.is_none())
        b.stream = nb::cast<std::uintptr_t>(st);
    // The object keeps the memory: it is held (with the GIL taken to let go of it) as long as
    // any array refers to it.
    PyObject* owner = obj.ptr();
    Py_INCREF(owner);
    std::shared_ptr<void> keep(owner, [](void* p) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_DECREF(static_cast<PyObject*>(p));
        PyGILState_Release(g);
    });
    // The interface has no device field: the producer's own (CuPy's .device.id, PyTorch's
    // .device.index), else the pointer's device as the default runtime sees it.
    int device = jit::Array::kDefaultDevice;
    try {
        nb::object d = obj.attr(k.device);
        if (has_attr(d.ptr(), k.id)) device = nb::cast<int>(d.attr(k.id));
        else if (has_attr(d.ptr(), k.index) && !d.attr(k.index).is_none()) device = nb::cast<int>(d.attr(k.index));
    } catch (const nb::python_error&) {
        PyErr_Clear();
    } catch (const nb::cast_error&) {}
    jit::Array a = jit::Array::view(reinterpret_cast<void*>(ptr), dt, std::move(shape), std::move(strides),
                                    jit::Backend::Cuda, device, std::move(keep));
    if (b.read_only) return a.as_read_only();
    return a;
}

// --- PyTorch CUDA tensors, read directly

// A CUDA torch.Tensor (the exact type: no subclass, whose __torch_function__ could change what
// its attributes say), strided, not requiring grad, of a dtype the CUDA array interface has: the
// same view as its __cuda_array_interface__ gives, read from the tensor's C attributes
// (data_ptr(), shape, stride(), dtype, get_device()) instead of the dict that torch's Python
// property builds per access. False (nothing bound) for anything else, which then goes the
// interface's way, with its errors.
bool import_torch_cuda(PyObject* o, Bound& b, jit::Array& out) {
    PyObject* torch = imported_module("torch");
    if (!torch) return false;
    nb::handle t(torch);
    try {
        nb::object tensor_type = t.attr("Tensor");
        if (reinterpret_cast<PyObject*>(Py_TYPE(o)) != tensor_type.ptr()) return false;
        nb::handle x(o);
        if (x.attr("is_cuda").ptr() != Py_True || x.attr("requires_grad").ptr() != Py_False) return false;
        if (!x.attr("layout").is(t.attr("strided"))) return false;
        nb::object dt = x.attr("dtype");
        static const std::pair<const char*, jit::DType> kDTypes[] = {{"bool", jit::DType::Bool},
                                                                     {"int8", jit::DType::Int8},
                                                                     {"int16", jit::DType::Int16},
                                                                     {"int32", jit::DType::Int32},
                                                                     {"int64", jit::DType::Int64},
                                                                     {"uint8", jit::DType::UInt8},
                                                                     {"float16", jit::DType::Float16},
                                                                     {"float32", jit::DType::Float32},
                                                                     {"float64", jit::DType::Float64},
                                                                     {"complex64", jit::DType::Complex64},
                                                                     {"complex128", jit::DType::Complex128}};
        std::optional<jit::DType> d;
        for (const auto& [n, v] : kDTypes)
            if (PyObject* td = PyObject_GetAttrString(torch, n)) {
                const bool same = td == dt.ptr();
                Py_DECREF(td);
                if (same) {
                    d = v;
                    break;
                }
            } else {
                PyErr_Clear();
            }
        if (!d) return false;
        nb::tuple shape_t = nb::borrow<nb::tuple>(x.attr("shape"));
        jit::Shape shape;
        shape.reserve(shape_t.size());
        bool empty = false;
        for (auto e : shape_t) {
            shape.push_back(nb::cast<std::int64_t>(e));
            empty = empty || shape.back() == 0;
        }
        if (shape.size() > static_cast<std::size_t>(jit::kMaxDims)) return false;  // the interface's error
        jit::Strides strides;
        if (nb::cast<bool>(x.attr("is_contiguous")())) {
            strides = jit::contiguous_strides(shape);
        } else {
            for (auto e : nb::cast<nb::tuple>(x.attr("stride")())) strides.push_back(nb::cast<std::int64_t>(e));
        }
        const std::uintptr_t ptr = empty ? 0 : nb::cast<std::uintptr_t>(x.attr("data_ptr")());
        const int device = nb::cast<int>(x.attr("get_device")());
        Py_INCREF(o);
        std::shared_ptr<void> keep(o, [](void* p) {
            PyGILState_STATE g = PyGILState_Ensure();
            Py_DECREF(static_cast<PyObject*>(p));
            PyGILState_Release(g);
        });
        out = jit::Array::view(reinterpret_cast<void*>(ptr), *d, std::move(shape), std::move(strides),
                               jit::Backend::Cuda, device, std::move(keep));
        b.read_only = false;
        return true;
    } catch (const nb::python_error&) {
        return false;  // the interface's way says what is wrong
    } catch (const nb::cast_error&) {
        return false;
    }
}

// --- Arrow PyCapsule interface in

template <class T>
T* capsule_pointer(nb::handle capsule, const char* name, const std::string& what) {
    void* p = PyCapsule_GetPointer(capsule.ptr(), name);
    if (!p) {
        PyErr_Clear();
        type_error(what + ": expected a PyCapsule named '" + name + "'");
    }
    return static_cast<T*>(p);
}

// Chunks of one column, joined (a copy: Arrow chunks are separate buffers).
jit::ArrowColumn join_chunks(const std::vector<jit::ArrowColumn>& chunks, jit::DType dtype) {
    if (chunks.size() == 1) return chunks[0];
    std::int64_t n = 0;
    bool nulls = false;
    for (const auto& c : chunks) {
        n += c.values.size();
        nulls = nulls || c.validity.has_value();
    }
    jit::ArrowColumn out;
    out.values = jit::Array::empty(dtype, {n}, jit::Backend::Cpu);
    if (nulls) out.validity = jit::Array::empty(jit::DType::Bool, {n}, jit::Backend::Cpu);
    const std::size_t item = jit::itemsize(dtype);
    std::int64_t at = 0;
    out.null_count = 0;
    for (const auto& c : chunks) {
        const std::int64_t len = c.values.size();
        if (len > 0) c.values.contiguous().copy_to_host(static_cast<std::byte*>(out.values.data()) + at * item);
        if (nulls) {
            auto* v = static_cast<std::uint8_t*>(out.validity->data()) + at;
            if (c.validity) c.validity->contiguous().copy_to_host(v);
            else std::memset(v, 1, static_cast<std::size_t>(len));
        }
        out.null_count += c.null_count > 0 ? c.null_count : 0;
        at += len;
    }
    return out;
}

jit::ArrowColumn import_arrow(nb::handle obj, const std::string& name) {
    const std::string what = fmt_name(name);
    if (nb::hasattr(obj, "__arrow_c_array__")) {
        nb::tuple pair = nb::cast<nb::tuple>(obj.attr("__arrow_c_array__")());
        if (pair.size() != 2) throw nb::cast_error();  // (schema, array)
        auto* schema = capsule_pointer<ArrowSchema>(pair[0], "arrow_schema", what);
        auto* array = capsule_pointer<ArrowArray>(pair[1], "arrow_array", what);
        return jit::from_arrow(schema, array);  // moves the array; the capsules release the rest
    }
    nb::object capsule = obj.attr("__arrow_c_stream__")();
    auto* stream = capsule_pointer<ArrowArrayStream>(capsule, "arrow_array_stream", what);
    ArrowSchema schema{};
    if (int rc = stream->get_schema(stream, &schema); rc != 0) {
        const char* e = stream->get_last_error ? stream->get_last_error(stream) : nullptr;
        throw jit::ArgumentError(what + ": the Arrow stream gave no schema (" + (e ? e : std::to_string(rc)) + ")");
    }
    struct ReleaseSchema {
        ArrowSchema& s;
        ~ReleaseSchema() {
            if (s.release) s.release(&s);
        }
    } release_schema{schema};
    const std::optional<jit::DType> dtype = schema.format ? jit::from_arrow_format(schema.format) : std::nullopt;
    std::vector<jit::ArrowColumn> chunks;
    for (;;) {
        ArrowArray chunk{};
        if (int rc = stream->get_next(stream, &chunk); rc != 0) {
            const char* e = stream->get_last_error ? stream->get_last_error(stream) : nullptr;
            throw jit::ArgumentError(what + ": reading the Arrow stream failed (" + (e ? e : std::to_string(rc)) + ")");
        }
        if (!chunk.release) break;
        try {
            chunks.push_back(jit::from_arrow(&schema, &chunk));
        } catch (...) {
            if (chunk.release) chunk.release(&chunk);
            throw;
        }
    }
    if (chunks.empty()) {
        if (!dtype)
            throw jit::ArgumentError(what + ": Arrow format \"" + std::string(schema.format ? schema.format : "") +
                                     "\" is not a primitive type jitexpr supports");
        jit::ArrowColumn c;
        c.values = jit::Array::empty(*dtype, {0}, jit::Backend::Cpu);
        return c;
    }
    return join_chunks(chunks, chunks[0].values.dtype());
}

// --- any value

// Converts a Python value into `b` (no copy for arrays; `hold` keeps the objects viewed alive
// for the call). `stream`: the stream the call runs on when the caller gave one.
void bind_value(nb::handle obj, const std::string& name, Bound& b, std::vector<nb::object>& hold, std::uintptr_t stream,
                bool have_stream) {
    PyObject* o = obj.ptr();
    if (PyArray_Check(o)) {
        // NumPy arrays over read-only memory (np.frombuffer(bytes), memoryview(bytes),
        // flags.writeable = False) are not writeable: the view is read-only.
        b.read_only = !PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(o));
        jit::Array a = view_numpy(reinterpret_cast<PyArrayObject*>(o), name);
        b.arg = jit::Arg(b.read_only ? a.as_read_only() : std::move(a));
        b.place = Place::Host;
        hold.push_back(nb::borrow(obj));
        return;
    }
    if (PyArray_IsScalar(o, Generic)) {
        // NumPy scalars are strongly typed (NEP 50): a 0-d array of their dtype. (Before the
        // Python types: numpy.float64 and numpy.complex128 derive from float and complex.)
        nb::object a = nb::steal(PyArray_FromScalar(o, nullptr));
        if (!a.is_valid()) throw nb::python_error();
        bind_value(a, name, b, hold, stream, have_stream);
        b.moved = true;  // a copy: an assignment to the name gives a new value, the scalar stays
        return;
    }
    if (PyBool_Check(o)) {
        b.arg = jit::Arg(o == Py_True);
        return;
    }
    if (PyLong_Check(o)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow != 0) {
            PyErr_SetString(g_errors.overflow ? g_errors.overflow : PyExc_OverflowError,
                            (fmt_name(name) + ": Python integer out of bounds for int64").c_str());
            throw nb::python_error();
        }
        if (v == -1 && PyErr_Occurred()) throw nb::python_error();
        b.arg = jit::Arg(static_cast<long long>(v));
        return;
    }
    if (PyFloat_Check(o)) {
        b.arg = jit::Arg(PyFloat_AS_DOUBLE(o));
        return;
    }
    if (PyComplex_Check(o)) {
        b.arg = jit::Arg(std::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
        return;
    }
    if (jit::Array t; import_torch_cuda(o, b, t)) {
        b.library = "torch";
        b.arg = jit::Arg(std::move(t));
        b.place = Place::Device;
        return;
    }
    const std::string lib = module_of(obj);
    const Names& k = names();
    const bool arrow = lib != "pandas" && (has_attr(o, k.arrow_array) || has_attr(o, k.arrow_stream));
    // A producer whose protocol answers are not of the types the protocol gives (a lying or
    // broken object) is a TypeError naming the value and the protocol, not a C++ cast error.
    auto protocol_error = [&](const char* what) {
        raise_as(g_errors.type, PyExc_TypeError, fmt_name(name) + ": " + what);
    };
    if (arrow) {
        jit::ArrowColumn c;
        try {
            c = import_arrow(obj, name);
        } catch (const nb::cast_error&) {
            protocol_error(
                "__arrow_c_array__ must return a (schema, array) tuple of PyCapsules, and __arrow_c_stream__ a "
                "PyCapsule (the Arrow PyCapsule interface)");
        }
        b.arg = jit::Arg(c.values.as_read_only());  // Arrow buffers are immutable (joined chunks too)
        b.place = Place::Host;
        b.arrow = true;
        b.read_only = true;
        if (c.validity) b.validity = *c.validity;
        b.library = lib;
        return;
    }
    // Fetched once: producers make the dict on each access (CuPy, PyTorch).
    if (nb::object cai = get_attr_or_null(o, k.cai); cai.is_valid()) {
        b.library = lib;
        try {
            b.arg = jit::Arg(import_cai(obj, cai, name, b));
        } catch (const nb::cast_error&) {
            protocol_error(
                "__cuda_array_interface__ is not what version 3 describes: a dict with 'typestr' (a str), 'shape' "
                "(a tuple of ints), 'strides' (None or a tuple of ints), 'data' (an address from 0 to 2**64-1 and "
                "a bool) and 'stream' (None or an int)");
        }
        b.place = Place::Device;
        return;
    }
    if (has_attr(o, k.dlpack) && has_attr(o, k.dlpack_device)) {
        b.library = lib;
        jit::Array a;
        try {
            a = import_dlpack(obj, name, b, stream, have_stream);
        } catch (const nb::cast_error&) {
            protocol_error("__dlpack_device__ must return a (device type, device id) tuple of ints");
        }
        b.place = a.backend() == jit::Backend::Cuda ? Place::Device : Place::Host;
        b.arg = jit::Arg(std::move(a));
        return;
    }
    // Anything else NumPy can make an array of (lists, tuples, buffers): converted as NumPy would.
    nb::object a = nb::steal(PyArray_FROM_O(o));
    if (!a.is_valid()) throw nb::python_error();
    bind_value(a, name, b, hold, stream, have_stream);
    // A list or a scalar was copied into a new array: an assignment to the name returns that
    // array, not the caller's object (which is not written). A buffer is viewed: written.
    if (PyArray_CHKFLAGS(reinterpret_cast<PyArrayObject*>(a.ptr()), NPY_ARRAY_OWNDATA)) b.moved = true;
}

std::string place_text(const Bound& b) {
    if (b.place == Place::Device)
        return (b.library.empty() ? std::string("an array") : "a " + b.library + " array") + " in CUDA device memory";
    return (b.library.empty() || b.library == "numpy" ? std::string("a NumPy array") : "a " + b.library + " array") +
           " in host memory";
}

// ------------------------------------------------------------------------------- evaluation

jit::Backend parse_backend(const std::string& s) {
    if (s == "cpu") return jit::Backend::Cpu;
    if (s == "cuda" || s == "gpu") return jit::Backend::Cuda;
    if (s == "auto") return jit::Backend::Auto;
    throw jit::ArgumentError("backend must be 'cpu', 'cuda' or 'auto', not '" + s + "'");
}

// Runs `work` (a call into the runtime) with the GIL released. A Ctrl-C meanwhile becomes the
// KeyboardInterrupt it would have been: with jitexpr's cancel token, the call stops at its next
// safe point (the poll takes the GIL and runs Python's signal handlers, every ~20 ms); the
// exception is raised once the call has returned.
#if JITEXPR_PY_HAVE_CANCEL
using Token = jit::CancelToken;
#else
struct Token {};
#endif

#if JITEXPR_PY_HAVE_CANCEL
bool poll_signals() {
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

// rt->run with the cancel token when there is one; `strict`: CallOptions::strict_in_place.
jit::Array run_with(jit::Runtime& rt, std::string_view text, jit::Environment& env, void* stream, const Token* token,
                    bool strict = false) {
#if JITEXPR_PY_HAVE_CANCEL
    if (token || strict) {
        jit::CallOptions o;
        o.stream = stream;
        if (token) o.cancel = *token;
        o.strict_in_place = strict;
        return rt.run(text, env, o);
    }
#else
    (void)token;
    if (strict) {
        jit::CallOptions o;
        o.stream = stream;
        o.strict_in_place = true;
        return rt.run(text, env, o);
    }
#endif
    return rt.run(text, env, stream);
}

// rt->run_into likewise. `atomic`: out is written through a temporary and copied in only once
// the whole program has run (CallOptions::in_place_all_or_nothing), so a stopped call leaves it
// untouched; otherwise the call is not stopped (it finishes, and a Ctrl-C is raised after it).
jit::Array run_into_with(jit::Runtime& rt, std::string_view text, jit::Environment& env, const jit::Array& out,
                         void* stream, const Token* token, bool atomic) {
#if JITEXPR_PY_HAVE_CANCEL
    if (token && atomic) {
        jit::CallOptions o;
        o.stream = stream;
        o.cancel = *token;
        o.in_place_all_or_nothing = true;
        return rt.run_into(text, env, out, o);
    }
#else
    (void)token;
    (void)atomic;
#endif
    return rt.run_into(text, env, out, stream);
}

// out= and Ctrl-C: an evaluation that will take long is written into out through a temporary
// (CallOptions::in_place_all_or_nothing) and can be stopped, so out is untouched or fully
// written; one that will be quick (under kQuickMs, inside the 100 ms a Ctrl-C may take) is
// written in place, cannot be stopped, and a Ctrl-C meanwhile is raised when it ends. "Long" is
// predicted from the time per element of the text's last out= call (the temporary costs a copy,
// which for a quick call would be a large part of its time); a text not seen yet is taken as
// long from 2^22 elements on.
constexpr double kQuickMs = 80.0;
constexpr std::int64_t kUnknownLong = std::int64_t{1} << 22;

struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
struct OutRates {
    std::mutex m;
    std::unordered_map<std::string, double, TextHash, std::equal_to<>> ns_per_element;
};
OutRates& out_rates() {
    static OutRates* r = new OutRates;  // never destroyed: calls may end during interpreter exit
    return *r;
}

bool predicted_long(std::string_view text, std::int64_t n) {
    OutRates& r = out_rates();
    std::lock_guard lock(r.m);
    auto it = r.ns_per_element.find(text);
    if (it == r.ns_per_element.end()) return n >= kUnknownLong;
    return it->second * static_cast<double>(n) / 1e6 > kQuickMs;
}

void note_rate(std::string_view text, std::int64_t n, double ms, bool through_temporary) {
    if (n <= 0) return;
    // A call through a temporary also paid for its copy: count its work only (the copy moves
    // two of the bytes a streaming expression moves three or more of).
    const double ns = ms * 1e6 / static_cast<double>(n) * (through_temporary ? 0.6 : 1.0);
    OutRates& r = out_rates();
    std::lock_guard lock(r.m);
    if (r.ns_per_element.size() > 4096) r.ns_per_element.clear();
    if (auto it = r.ns_per_element.find(text); it != r.ns_per_element.end()) it->second = ns;
    else r.ns_per_element.emplace(std::string(text), ns);
}

struct Call {
    std::vector<std::pair<std::string, Bound>> bound;
    std::vector<nb::object> hold;
    jit::Backend backend = jit::Backend::Cpu;
    std::shared_ptr<PyRuntime> runtime;
    std::uintptr_t stream = 0;
    std::string library;  // of the first device (or Arrow) input
    bool any_arrow = false;
    bool any_validity = false;
};

// Binds every name, chooses where to evaluate, and moves arrays where the caller asked for it.
// "cuda:1" for an array on CUDA device 1.
std::string device_text(const jit::Array& a) {
    return a.backend() == jit::Backend::Cuda ? "cuda:" + std::to_string(a.device()) : "cpu";
}

// (name, value) pairs, borrowed from the caller's dict or from what evaluate_named bound.
using Items = std::vector<std::pair<nb::handle, nb::handle>>;

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
        call.any_arrow = call.any_validity = false;
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

Items items_of(nb::dict names) {
    Items items;
    items.reserve(names.size());
    for (auto [k, v] : names) items.emplace_back(k, v);
    return items;
}

void prepare(Call& c, const Items& names, nb::handle backend_arg, nb::handle stream_arg, nb::handle runtime_arg,
             nb::handle device_arg = nb::none()) {
    const bool have_stream = !stream_arg.is_none();
    const std::uintptr_t stream = have_stream ? nb::cast<std::uintptr_t>(stream_arg) : 0;
    c.bound.reserve(names.size());
    for (auto [k, v] : names) {
        if (!PyUnicode_Check(k.ptr())) type_error("variable names must be strings");
        c.bound.emplace_back(nb::cast<std::string>(k), Bound{});
        bind_value(v, c.bound.back().first, c.bound.back().second, c.hold, stream, have_stream);
    }
    const Bound* host = nullptr;
    const Bound* device = nullptr;
    const std::string* host_name = nullptr;
    const std::string* device_name = nullptr;
    for (const auto& [n, b] : c.bound) {
        if (b.place == Place::Host && !host) host = &b, host_name = &n;
        if (b.place == Place::Device && !device) device = &b, device_name = &n;
        c.any_arrow = c.any_arrow || b.arrow;
        c.any_validity = c.any_validity || b.validity.has_value();
        if (c.library.empty() && (b.place == Place::Device || b.arrow)) c.library = b.library;
    }
    jit::Backend requested = jit::Backend::Auto;
    if (!backend_arg.is_none()) requested = parse_backend(nb::cast<std::string>(backend_arg));
    // device=N: CUDA device N, and the request to copy what is elsewhere there.
    int asked_device = -1;
    if (!device_arg.is_none()) {
        if (PyBool_Check(device_arg.ptr()) || !PyLong_Check(device_arg.ptr()))
            throw jit::ArgumentError("device= takes a CUDA device ordinal (an int from 0) or None");
        asked_device = nb::cast<int>(device_arg);
        if (asked_device < 0)
            throw jit::ArgumentError("device=" + std::to_string(asked_device) + ": use an ordinal from 0");
        if (requested == jit::Backend::Cpu) throw jit::ArgumentError("device= names a CUDA device, but backend='cpu'");
        requested = jit::Backend::Cuda;
    }
    // Device inputs on two devices: one rule with host and device, never a silent copy.
    const Bound* other = nullptr;
    const std::string* other_name = nullptr;
    for (const auto& [n, b] : c.bound)
        if (b.place == Place::Device && device && b.arg.is_array() && device->arg.is_array() &&
            b.arg.array().device() != device->arg.array().device() && !other)
            other = &b, other_name = &n;
    if (other && asked_device < 0)
        throw jit::DeviceMismatchError("'" + *device_name + "' is on " + device_text(device->arg.array()) + " but '" +
                                       *other_name + "' is on " + device_text(other->arg.array()) +
                                       ": pass device=N to copy them to CUDA device N, or move them yourself");
    // Copies between host and device only when asked for by name: never silently.
    const bool move = requested != jit::Backend::Auto;
    if (!move && host && device)
        throw jit::DeviceMismatchError("'" + *host_name + "' is " + place_text(*host) + " but '" + *device_name +
                                       "' is " + place_text(*device) +
                                       ": pass backend='cuda' to copy the host arrays to the device "
                                       "(or backend='cpu' for the other way), or move them yourself");
    if (!runtime_arg.is_none()) {
        c.runtime = nb::cast<std::shared_ptr<PyRuntime>>(runtime_arg);
        c.backend = c.runtime->backend;
        if (requested != jit::Backend::Auto && requested != c.backend)
            throw jit::ArgumentError("backend='" + std::string(jit::backend_name(requested)) +
                                     "' but the runtime evaluates on " + std::string(jit::backend_name(c.backend)));
        if (asked_device >= 0 && asked_device != c.runtime->get()->device())
            throw jit::ArgumentError("device=" + std::to_string(asked_device) + " but the runtime evaluates on cuda:" +
                                     std::to_string(c.runtime->get()->device()));
    } else {
        c.backend = requested != jit::Backend::Auto ? requested : device ? jit::Backend::Cuda : jit::Backend::Cpu;
        // The device: the one asked for, else the device inputs', else the libraries' current one.
        int dev = asked_device;
        if (dev < 0 && device && device->arg.is_array()) dev = device->arg.array().device();
        if (dev < 0 && c.backend == jit::Backend::Cuda) dev = current_device_of_libraries();
        c.runtime = default_runtime(c.backend, dev);
    }
    const int run_device = c.backend == jit::Backend::Cuda ? c.runtime->get()->device() : 0;
    for (auto& [n, b] : c.bound) {
        if (b.place == Place::Scalar || !b.arg.is_array()) continue;
        const jit::Backend where = b.arg.array().backend();
        const bool elsewhere = where == jit::Backend::Cuda && b.arg.array().device() != run_device;
        if (where == c.backend && !elsewhere) continue;
        if (!move || (elsewhere && where == c.backend && asked_device < 0))
            throw jit::DeviceMismatchError(
                "'" + n + "' is " + place_text(b) + " (" + device_text(b.arg.array()) +
                ") but the runtime evaluates on " +
                (c.backend == jit::Backend::Cuda ? "cuda:" + std::to_string(run_device) : std::string("cpu")) +
                "; pass backend='" + std::string(jit::backend_name(where)) + "' (or device=N) or move it");
        const jit::Array copy = b.arg.array().to(c.backend, run_device);
        b.arg = jit::Arg(b.read_only ? copy.as_read_only() : copy);  // a copy of read-only memory is not written either
        b.moved = true;
        if (b.validity) b.validity = b.validity->to(c.backend, run_device);
    }
    if (c.backend == jit::Backend::Cuda) {
        if (have_stream) c.stream = stream;
        else if (device && !device->library.empty() && device->stream == 0)
            c.stream = current_stream_of(device->library);
        else if (device && device->stream > 2) c.stream = device->stream;
    }
}

std::shared_ptr<jit::Storage> storage_of(const jit::Arg& a) { return a.is_array() ? a.array().storage() : nullptr; }

// A result as Python sees it: a NumPy array for host data, else a Tensor (its library set).
nb::object to_python(const jit::Array& r0, const Call& c) {
    jit::Array r = r0;
    if (!r.defined()) return nb::none();
    // A result that is an input itself (the program `a`) views memory this call only borrows.
    for (const auto& [n, b] : c.bound)
        if (b.arg.is_array() && b.arg.array().storage() == r.storage()) {
            r = r.to(r.backend(), r.device());
            break;
        }
    if (r.backend() == jit::Backend::Cpu && r.dtype() != jit::DType::BFloat16) return numpy_of(r);
    Tensor t;
    t.array = r;
    t.stream = c.stream;
    nb::object o = nb::cast(std::move(t));
    o.attr("library") = nb::str(c.library.c_str());
    return o;
}

nb::object evaluate_items(std::string_view text, const Items& names, nb::handle out, nb::handle backend,
                          nb::handle stream, nb::handle runtime, bool as_tensor, nb::handle device, Scratch& sc) {
    Call& c = sc.call;
    prepare(c, names, backend, stream, runtime, device);
    std::shared_ptr<jit::Runtime> rt = c.runtime->get();
    jit::Environment& env = sc.bind_env();
    if (c.any_arrow) {
        if (!out.is_none())
            throw jit::ArgumentError("out= is not taken with Arrow inputs (Arrow buffers are immutable)");
        std::map<std::string, jit::Array, std::less<>> validity;
        for (auto& [n, b] : c.bound)
            if (b.validity) validity.emplace(n, *b.validity);
        jit::ArrowColumn col;
        {
            nb::gil_scoped_release release;
            col = jit::eval_arrow(text, env, validity, *rt);
        }
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
        Tensor t;
        t.array = col.values.backend() == jit::Backend::Cpu ? col.values : col.values.to(jit::Backend::Cpu);
        if (col.validity)
            t.validity =
                col.validity->backend() == jit::Backend::Cpu ? *col.validity : col.validity->to(jit::Backend::Cpu);
        t.null_count = col.null_count;
        nb::object o = nb::cast(std::move(t));
        o.attr("library") = nb::str(c.library.c_str());
        return o;
    }
    if (!out.is_none()) {
        check_out_object(out);
        Bound ob;
        bind_value(out, "out", ob, c.hold, c.stream, true);
        if (!ob.arg.is_array() || ob.place == Place::Scalar)
            raise_as(g_errors.type, PyExc_TypeError,
                     std::string("out= must be an array, not ") + Py_TYPE(out.ptr())->tp_name);
        if (ob.read_only)
            read_only_error("out= is read-only (" + place_text(ob) +
                            " that its producer marks read-only): jitexpr does not write into it; pass a writable "
                            "array");
        const jit::Array& o = ob.arg.array();
        if (o.backend() != c.backend)
            throw jit::ArgumentError("out is " + place_text(ob) + " but the evaluation runs on " +
                                     std::string(jit::backend_name(c.backend)));
        // out overlapping an input other than as the same view: evaluated apart, then copied in.
        bool overlap = false;
        for (const auto& [n, b] : c.bound) {
            if (!b.arg.is_array()) continue;
            const jit::Array& a = b.arg.array();
            const auto* lo = static_cast<const char*>(a.data());
            const auto* olo = static_cast<const char*>(o.data());
            if (a.data() == o.data() && a.shape() == o.shape() && a.strides() == o.strides() && a.dtype() == o.dtype())
                continue;
            // Conservative: the spans of memory the two can reach.
            auto span = [](const jit::Array& x, const char* base) {
                std::int64_t lo_el = 0, hi_el = 0;
                for (int k = 0; k < x.ndim(); ++k) {
                    const auto e = x.shape()[static_cast<std::size_t>(k)],
                               st = x.strides()[static_cast<std::size_t>(k)];
                    if (e == 0) return std::pair<const char*, const char*>(base, base);
                    (st < 0 ? lo_el : hi_el) += (e - 1) * st;
                }
                const auto item = static_cast<std::int64_t>(jit::itemsize(x.dtype()));
                return std::pair<const char*, const char*>(base + lo_el * item, base + (hi_el + 1) * item);
            };
            auto [alo, ahi] = span(a, lo);
            auto [blo, bhi] = span(o, olo);
            if (alo < bhi && blo < ahi && a.backend() == o.backend()) overlap = true;
        }
        void* s = reinterpret_cast<void*>(c.stream);
        const bool host = c.backend == jit::Backend::Cpu;
        const bool atomic = JITEXPR_PY_HAVE_CANCEL && host && predicted_long(text, o.size());
        const auto t0 = std::chrono::steady_clock::now();
        (void)call_released([&](const Token* token) {
            if (!overlap) return run_into_with(*rt, text, env, o, s, token, atomic);
            jit::Array tmp = run_with(*rt, text, env, s, token);
            jit::Environment copy{{"x", jit::Arg(tmp)}};
            return rt->run_into("x", copy, o, s);
        });
        if (host)
            note_rate(text, o.size(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                      atomic || overlap);
        return nb::borrow(out);
    }
    void* s = reinterpret_cast<void*>(c.stream);
    jit::Array r = call_released([&](const Token* token) { return run_with(*rt, text, env, s, token); });
    if (as_tensor && r.defined()) {
        Tensor t;
        t.array = r;
        t.stream = c.stream;
        for (const auto& [n, b] : c.bound)
            if (b.arg.is_array() && b.arg.array().storage() == r.storage()) t.array = r.to(r.backend(), r.device());
        nb::object o = nb::cast(std::move(t));
        o.attr("library") = nb::str(c.library.c_str());
        return o;
    }
    return to_python(r, c);
}

nb::object evaluate(const std::string& text, nb::dict names, nb::handle out, nb::handle backend, nb::handle stream,
                    nb::handle runtime, bool as_tensor, nb::handle device) {
    ScratchLease sc;
    for (auto [k, v] : names) sc->items.emplace_back(k, v);
    return evaluate_items(text, sc->items, out, backend, stream, runtime, as_tensor, device, *sc);
}

// ------------------------------------------------------------------------------- binding by name

// jitexpr._api._names_of: text -> (parameters, named constants it mentions), with its errors
// (handed over at import); its answers are kept here per text, as it keeps them.
PyObject* g_names_of = nullptr;
PyObject* g_texts = nullptr;  // dict: text -> (params, consts)
constexpr Py_ssize_t kMaxTexts = 4096;

// (params, consts) of `text`.
nb::object names_of(PyObject* text) {
    if (!g_texts) {
        g_texts = PyDict_New();
        if (!g_texts) throw nb::python_error();
    }
    if (PyUnicode_CheckExact(text)) {
        PyObject* hit = PyDict_GetItemWithError(g_texts, text);
        if (hit) return nb::borrow(hit);
        if (PyErr_Occurred()) throw nb::python_error();
    }
    if (!g_names_of) throw jit::InternalError("jitexpr._jitexpr: set_names_of was not called");
    // Not a str (or not seen yet): the Python function says what is wrong, or gives the names.
    PyObject* r = PyObject_CallOneArg(g_names_of, text);
    if (!r) throw nb::python_error();
    nb::object held = nb::steal(r);
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(r, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(r, 1)))
        throw jit::InternalError("jitexpr._api._names_of returned something other than two tuples");
    if (PyUnicode_CheckExact(text)) {  // (a str subclass may hash as it likes: not kept)
        // The names interned, as the keywords of a call site are: a keyword is then found by
        // its pointer (Keywords::get).
        nb::list groups;
        for (int g = 0; g < 2; ++g) {
            PyObject* names = PyTuple_GET_ITEM(r, g);
            const Py_ssize_t k = PyTuple_GET_SIZE(names);
            nb::object fresh = nb::steal(PyTuple_New(k));
            if (!fresh.is_valid()) throw nb::python_error();
            for (Py_ssize_t i = 0; i < k; ++i) {
                PyObject* n = PyTuple_GET_ITEM(names, i);
                Py_INCREF(n);
                if (PyUnicode_CheckExact(n)) PyUnicode_InternInPlace(&n);
                PyTuple_SET_ITEM(fresh.ptr(), i, n);
            }
            groups.append(fresh);
        }
        held = nb::make_tuple(groups[0], groups[1]);
        r = held.ptr();
        if (PyDict_GET_SIZE(g_texts) >= kMaxTexts) PyDict_Clear(g_texts);
        if (PyDict_SetItem(g_texts, text, r) < 0) throw nb::python_error();
    }
    return held;
}

// mapping[name] when the mapping has it, else a null object: a dict without raising KeyError;
// another mapping through `name in mapping` then mapping[name] (jitexpr's rule), or with
// `by_getitem` through mapping[name] alone, a KeyError meaning "not there" (numexpr's rule:
// a defaultdict gives its default).
nb::object lookup(PyObject* mapping, PyObject* name, bool by_getitem = false) {
    if (PyDict_CheckExact(mapping)) {
        PyObject* v = PyDict_GetItemWithError(mapping, name);
        if (!v && PyErr_Occurred()) throw nb::python_error();
        return v ? nb::borrow(v) : nb::object();
    }
    if (by_getitem) {
        PyObject* v = PyObject_GetItem(mapping, name);
        if (v) return nb::steal(v);
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) throw nb::python_error();
        PyErr_Clear();
        return {};
    }
    const int in = PySequence_Contains(mapping, name);
    if (in < 0) throw nb::python_error();
    if (in == 0) return {};
    PyObject* v = PyObject_GetItem(mapping, name);
    if (!v) throw nb::python_error();
    return nb::steal(v);
}

bool is_constant_name(PyObject* n) {
    return PyUnicode_CompareWithASCIIString(n, "pi") == 0 || PyUnicode_CompareWithASCIIString(n, "e") == 0 ||
           PyUnicode_CompareWithASCIIString(n, "inf") == 0 || PyUnicode_CompareWithASCIIString(n, "nan") == 0;
}

// The frame `depth` levels above the innermost Python frame (the Python function that called
// us): sys._getframe(depth) as seen from that function, with its error.
nb::object frame_above(int depth) {
    PyFrameObject* f = PyEval_GetFrame();  // borrowed
    if (!f) throw jit::InternalError("no Python frame");
    nb::object frame = nb::borrow(reinterpret_cast<PyObject*>(f));
    for (int i = 0; i < depth; ++i) {
        PyFrameObject* back = PyFrame_GetBack(reinterpret_cast<PyFrameObject*>(frame.ptr()));  // new reference
        if (!back) {
            PyErr_SetString(PyExc_ValueError, "call stack is not deep enough");
            throw nb::python_error();
        }
        frame = nb::steal(reinterpret_cast<PyObject*>(back));
    }
    return frame;
}

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

// The one binding of names to values, for jitexpr.evaluate, a Kernel's call and
// jitexpr.numexpr.evaluate, into `items` (the values borrowed from the dicts and frame, which
// `keep` holds): each name `text` reads, then each named constant it mentions, from the
// keywords, else local_dict; those neither gives from the frame `depth` levels up: its locals
// (unless a local_dict was given), then global_dict or else its globals. A constant's name that
// the frame (or global_dict) binds to a module or a callable is not a variable. Names bound
// nowhere are left out (the checker then reports them with a caret), except under numexpr's
// rules, where a parameter bound nowhere is numexpr's KeyError.
void bind_names(PyObject* text, const BindSpec& spec, Items& items, std::vector<nb::object>& keep,
                std::vector<PyObject*>& missing) {
    nb::object entry = names_of(text);
    keep.push_back(entry);  // holds the names (the cache may be cleared by another call)
    PyObject* groups[2] = {PyTuple_GET_ITEM(entry.ptr(), 0), PyTuple_GET_ITEM(entry.ptr(), 1)};
    const bool have_local = !spec.local_dict.is_none();
    const bool have_global = !spec.global_dict.is_none();
    const bool have_names = spec.keywords && spec.keywords->any;
    std::size_t missing_params = 0;  // `missing` starts with the parameters bound by neither
    for (PyObject* g : groups) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(g); ++i) {
            PyObject* n = PyTuple_GET_ITEM(g, i);
            PyObject* v = nullptr;
            if (have_names) v = spec.keywords->get(n);  // the call's own keywords: alive for the call
            if (!v && have_local) {
                if (nb::object got = lookup(spec.local_dict.ptr(), n, spec.numexpr); got.is_valid()) {
                    v = got.ptr();
                    keep.push_back(std::move(got));  // held: the caller's dict may change meanwhile
                }
            }
            if (v) items.emplace_back(n, v);
            else {
                missing.push_back(n);
                if (g == groups[0]) ++missing_params;
            }
        }
    }
    if (missing.empty()) return;
    // The frame's globals (unless global_dict replaces them) and locals (unless local_dict does).
    nb::object frame_globals, locals;
    if (!have_local || !have_global) {
        nb::object frame = frame_above(spec.depth);
        frame_globals = nb::steal(PyObject_GetAttr(frame.ptr(), jitexpr_py::names().f_globals));
        if (!frame_globals.is_valid()) throw nb::python_error();
        if (!have_local) {
            locals = nb::steal(PyObject_GetAttr(frame.ptr(), jitexpr_py::names().f_locals));
            if (!locals.is_valid()) throw nb::python_error();
        }
    }
    nb::object globals = have_global ? nb::borrow(spec.global_dict) : frame_globals;
    // Before Python 3.13 f_locals is a snapshot dict holding references to the caller's
    // variables: let go of them once bound (numexpr does the same), except at module level,
    // where it is the frame's globals themselves (whatever global_dict says). From 3.13 it is a
    // write-through proxy, left alone.
    struct Clear {
        nb::object& l;
        nb::object& g;
        ~Clear() {
            if (l.is_valid() && PyDict_CheckExact(l.ptr()) && l.ptr() != g.ptr()) PyDict_Clear(l.ptr());
        }
    } clear{locals, frame_globals};
    PyObject* unbound = nullptr;
    for (std::size_t k = 0; k < missing.size(); ++k) {
        PyObject* n = missing[k];
        const bool param = k < missing_params;
        nb::object v = locals.is_valid() ? lookup(locals.ptr(), n, spec.numexpr) : nb::object();
        if (!v.is_valid()) v = lookup(globals.ptr(), n, spec.numexpr);
        if (v.is_valid() && is_constant_name(n) && (PyCallable_Check(v.ptr()) || PyModule_Check(v.ptr()))) continue;
        if (!v.is_valid()) {
            // numexpr's getArguments reads its names in sorted order: its KeyError names the
            // least of those bound nowhere.
            if (spec.numexpr && param && (!unbound || PyUnicode_Compare(n, unbound) < 0)) unbound = n;
            continue;
        }
        items.emplace_back(n, v);
        keep.push_back(std::move(v));  // the snapshot of the locals is cleared below
    }
    if (unbound) {
        PyErr_SetObject(PyExc_KeyError, unbound);
        throw nb::python_error();
    }
}

// jitexpr.evaluate (and a Kernel's call) in one crossing: names bound as bind_names binds
// them, then evaluate_items. `depth`: the caller's frame, counted from the Python function
// calling this (1: its caller).
// str(dtype) per dtype object seen (NumPy's __str__ is Python code: microseconds a call).
std::string dtype_str(PyObject* dtype) {
    static PyObject* cache = PyDict_New();  // kept for the life of the process
    if (!cache) throw nb::python_error();
    PyObject* s = PyDict_GetItemWithError(cache, dtype);  // borrowed
    nb::object made;
    if (!s) {
        if (PyErr_Occurred()) throw nb::python_error();  // an unhashable dtype: asked each time
        made = nb::steal(PyObject_Str(dtype));
        if (!made.is_valid()) throw nb::python_error();
        if (PyDict_GET_SIZE(cache) < 1024 && PyDict_SetItem(cache, dtype, made.ptr()) < 0) PyErr_Clear();
        s = made.ptr();
    }
    Py_ssize_t size = 0;
    const char* c = PyUnicode_AsUTF8AndSize(s, &size);
    if (!c) throw nb::python_error();
    return std::string(c, static_cast<std::size_t>(size));
}

// A Kernel's signature ({name: dtype name}): a bound value whose dtype is another is a
// jitexpr.TypeError before anything is evaluated (scalars' "float", "int", ... are not checked).
void check_signature(const Items& items, nb::dict signature) {
    static PyObject* dtype_name = PyUnicode_InternFromString("dtype");
    for (const auto& [n, v] : items) {
        PyObject* want_o = PyDict_GetItemWithError(signature.ptr(), n.ptr());
        if (!want_o) {
            if (PyErr_Occurred()) throw nb::python_error();
            continue;
        }
        const std::string want = nb::cast<std::string>(nb::handle(want_o));
        if (want == "float" || want == "int" || want == "bool" || want == "complex") continue;
        nb::object got = get_attr_or_null(v.ptr(), dtype_name);
        if (!got.is_valid() || got.is_none()) continue;
        const std::string g = dtype_str(got.ptr());
        if (g == want) continue;
        std::string bare = g;
        for (std::size_t at; (at = bare.find("torch.")) != std::string::npos;) bare.erase(at, 6);
        if (bare == want) continue;
        PyErr_SetString(
            g_errors.type ? g_errors.type : PyExc_TypeError,
            ("'" + nb::cast<std::string>(n) + "' has dtype " + g + " but the kernel's signature says " + want).c_str());
        throw nb::python_error();
    }
}

nb::object evaluate_keywords(nb::handle text, nb::handle local_dict, nb::handle out, nb::handle backend,
                             nb::handle stream, nb::handle device, int depth, const Keywords& names,
                             nb::handle signature) {
    ScratchLease sc;
    BindSpec spec;
    spec.keywords = &names;
    spec.local_dict = local_dict;
    spec.global_dict = nb::none();
    spec.depth = depth;
    bind_names(text.ptr(), spec, sc->items, sc->keep, sc->missing);
    if (!signature.is_none()) check_signature(sc->items, nb::borrow<nb::dict>(signature));
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
    if (!utf8) throw nb::python_error();
    return evaluate_items(std::string_view(utf8, static_cast<std::size_t>(size)), sc->items, out, backend, stream,
                          nb::none(), false, device, *sc);
}

nb::object evaluate_named(nb::handle text, nb::handle local_dict, nb::handle out, nb::handle backend, nb::handle stream,
                          nb::handle device, int depth, nb::dict names, nb::handle signature) {
    Keywords kw;
    kw.dict = names.ptr();
    kw.any = PyDict_GET_SIZE(names.ptr()) > 0;
    return evaluate_keywords(text, local_dict, out, backend, stream, device, depth, kw, signature);
}

// ------------------------------------------------------------------------------- jitexpr.evaluate

// python/jitexpr/_api.py's _to_library (a Tensor result into its inputs' library), handed over at import.
PyObject* g_to_library = nullptr;

// A C++ exception as the Python error nanobind would have raised for it (this function is called
// by Python directly, not through nanobind's dispatch): jitexpr's errors through `translate`,
// nanobind's and the standard library's as nanobind's default translator maps them.
PyObject* raise_current() noexcept {
    try {
        throw;
    } catch (nb::python_error& e) {
        e.restore();
    } catch (const nb::builtin_exception& e) {
        PyObject* t = PyExc_RuntimeError;
        switch (e.type()) {
            case nb::exception_type::stop_iteration: t = PyExc_StopIteration; break;
            case nb::exception_type::index_error: t = PyExc_IndexError; break;
            case nb::exception_type::key_error: t = PyExc_KeyError; break;
            case nb::exception_type::value_error: t = PyExc_ValueError; break;
            case nb::exception_type::type_error: t = PyExc_TypeError; break;
            case nb::exception_type::buffer_error: t = PyExc_BufferError; break;
            case nb::exception_type::import_error: t = PyExc_ImportError; break;
            case nb::exception_type::attribute_error: t = PyExc_AttributeError; break;
            default: break;
        }
        PyErr_SetString(t, e.what());
    } catch (const std::exception&) {
        // jitexpr's errors, std::bad_alloc, cast errors and the standard library's: as nanobind's
        // calls translate them (every one a jitexpr.Error).
        translate(std::current_exception(), nullptr);
    } catch (...) {
        PyErr_SetString(PyExc_SystemError, "jitexpr: an unknown C++ exception");
    }
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "jitexpr: an exception that was not translated");
    return nullptr;
}

// The keyword arguments that are evaluate's own (interned, compared by pointer first).
struct OwnKeywords {
    PyObject* local_dict = interned("local_dict");
    PyObject* out = interned("out");
    PyObject* backend = interned("backend");
    PyObject* stream = interned("stream");
    PyObject* device = interned("device");
    PyObject* frame_depth = interned("_frame_depth");
};
const OwnKeywords& own_keywords() {
    static const OwnKeywords* k = new OwnKeywords;  // never destroyed: used until the interpreter ends
    return *k;
}

bool same_name(PyObject* a, PyObject* b) {
    return a == b || (!PyUnicode_CHECK_INTERNED(a) && PyUnicode_Compare(a, b) == 0);
}

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

// `kernel`: a Kernel's __call__(local_dict=None, /, *, out=None, backend=None, stream=None,
// **names), else evaluate(ex, /, local_dict=None, *, out=None, backend=None, stream=None,
// device=None, **names) (with the private _frame_depth). `args` are the positional arguments
// after `ex` (or after the kernel). False with a TypeError set when the call does not fit.
bool parse_call(const char* fname, bool kernel, PyObject* const* args, Py_ssize_t nargs, PyObject* const* kwvalues,
                PyObject* kwnames, CallArgs& c) {
    if (nargs > 1) {
        if (kernel)
            PyErr_Format(PyExc_TypeError, "%s() takes from 0 to 1 positional arguments but %zd were given", fname,
                         nargs);
        else
            PyErr_Format(PyExc_TypeError, "%s() takes from 1 to 2 positional arguments but %zd were given", fname,
                         nargs + 1);
        return false;
    }
    if (nargs == 1) c.local_dict = args[0];
    if (!kwnames) return true;
    Keywords& kw = c.kw;
    kw.kwnames = kwnames;
    kw.values = kwvalues;
    kw.count = PyTuple_GET_SIZE(kwnames);
    bool* skip = c.skip_inline;
    if (kw.count > CallArgs::kInline) {
        c.skip_heap.reset(new bool[static_cast<std::size_t>(kw.count)]);
        skip = c.skip_heap.get();
    }
    kw.skip = skip;
    const OwnKeywords& own = own_keywords();
    for (Py_ssize_t i = 0; i < kw.count; ++i) {
        PyObject* k = PyTuple_GET_ITEM(kwnames, i);
        PyObject* v = kw.values[i];
        skip[i] = true;
        if (same_name(k, own.out)) c.out = v;
        else if (same_name(k, own.backend)) c.backend = v;
        else if (same_name(k, own.stream)) c.stream = v;
        else if (!kernel && same_name(k, own.device)) c.device = v;
        else if (!kernel && same_name(k, own.local_dict)) {
            if (nargs > 0) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument 'local_dict'", fname);
                return false;
            }
            c.local_dict = v;
        } else if (!kernel && same_name(k, own.frame_depth)) {
            c.frame_depth = PyLong_AsLong(v);
            if (c.frame_depth == -1 && PyErr_Occurred()) return false;
        } else {
            skip[i] = false;
            kw.any = true;
        }
    }
    return true;
}

// A Tensor result into its inputs' library (_to_library); other results as they are.
PyObject* result_to_python(nb::object r) {
    if (g_to_library && nb::isinstance<Tensor>(r)) return PyObject_CallOneArg(g_to_library, r.ptr());
    return r.release().ptr();
}

// jitexpr.evaluate(ex, /, local_dict=None, *, out=None, backend=None, stream=None, device=None,
// **names), called by Python directly (METH_FASTCALL | METH_KEYWORDS): the keywords are read
// where the caller put them, with no dict, no Python frame and no second call in between.
// Behaves as the Python function it replaces did: the names bound as bind_names binds them
// (keywords, then local_dict or the caller's frame), Tensor results through _to_library.
PyObject* py_evaluate(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept {
    try {
        const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
        if (nargs < 1) {
            PyErr_SetString(PyExc_TypeError, "evaluate() missing 1 required positional argument: 'ex'");
            return nullptr;
        }
        CallArgs c;
        if (!parse_call("evaluate", false, args + 1, nargs - 1, args + nargs, kwnames, c)) return nullptr;
        // _frame_depth counts from evaluate itself (1: its caller); this function has no frame
        // of its own, so the caller's is the innermost.
        const int depth = c.frame_depth > 1 ? static_cast<int>(c.frame_depth - 1) : 0;
        return result_to_python(
            evaluate_keywords(args[0], c.local_dict, c.out, c.backend, c.stream, c.device, depth, c.kw, nb::none()));
    } catch (...) {
        return raise_current();
    }
}

// Kernel.__call__(self, local_dict=None, /, *, out=None, backend=None, stream=None, **names) as
// a method of the Kernel class (python/jitexpr/_api.py): its text and signature from the
// kernel's slots, then as evaluate, with the signature checked against the bound dtypes.
PyObject* py_kernel_call(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept {
    try {
        static PyObject* text_name = interned("_text");
        static PyObject* signature_name = interned("_signature");
        CallArgs c;
        const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
        if (!parse_call("__call__", true, args, nargs, args + nargs, kwnames, c)) return nullptr;
        nb::object text = nb::steal(PyObject_GetAttr(self, text_name));
        if (!text.is_valid()) return nullptr;
        nb::object signature = nb::steal(PyObject_GetAttr(self, signature_name));
        if (!signature.is_valid()) return nullptr;
        return result_to_python(
            evaluate_keywords(text, c.local_dict, c.out, c.backend, c.stream, nb::none(), 0, c.kw, signature));
    } catch (...) {
        return raise_current();
    }
}

// jitexpr.evaluate's docstring (its signature first, for inspect.signature and help()).
const char* const kEvaluateDoc =
    R"doc(evaluate(ex, /, local_dict=None, *, out=None, backend=None, stream=None, device=None, **names)
--

Evaluates the expression (or program) ``ex`` and returns its value.

Variables are bound by name: first from the keywords, then from ``local_dict`` (a mapping)
or, without one, the caller's local variables, then the caller's globals::

    c = jitexpr.evaluate("a * 2 + b")             # a, b from the caller's frame
    c = jitexpr.evaluate("a * 2 + b", a=x, b=y)   # keywords
    c = jitexpr.evaluate("a * 2 + b", {"a": x, "b": y})

``ex`` is one expression or several statements (``t = a*2; t + b``): the value of the last
one is returned. A variable named ``pi``, ``e``, ``inf`` or ``nan`` shadows the constant.
The keyword names ``out``, ``backend``, ``stream`` and ``device`` are this function's own: bind
variables of those names through ``local_dict``.

Values: NumPy arrays (any strides, 0-d), NumPy scalars (strongly typed, as in NumPy 2),
Python scalars (weakly typed: ``float32_array * 2.5`` stays float32), anything with
``__cuda_array_interface__`` or ``__dlpack__`` (CuPy, PyTorch, JAX, Numba), Arrow columns
(``__arrow_c_array__``/``__arrow_c_stream__``: pyarrow, Polars, DuckDB results; nulls
propagate) and whatever ``numpy.asarray`` takes.

Where it runs: on the CPU for host data, on CUDA for device data, on the producer's current
stream (CuPy's, PyTorch's) unless ``stream=`` (a ``cudaStream_t`` as an int) is given. Host
and device inputs together are an error unless ``backend='cuda'`` (or ``'cpu'``) asks for
the copies. The CUDA device: ``device=N`` (an ordinal; it also asks for the copies of inputs
that are elsewhere), else the device of the device inputs, else the current device of CuPy
(or PyTorch), else ``JITEXPR_DEVICE`` or 0. Device inputs on two GPUs without ``device=`` are
a DeviceMismatchError (an ArgumentError), as host and device inputs are.

Returns a NumPy array owning jitexpr's memory for host results (0-d for reductions), the
input library's array for device results (CuPy in, CuPy out), a pyarrow.Array / polars.Series
for Arrow inputs, or ``out`` itself when given: the value is written into ``out`` in place
(same-kind casting, broadcast to its shape).

Raises jitexpr.ParseError (a SyntaxError), NameError, TypeError, ShapeError (a ValueError),
ValueError, ArgumentError, with the line and a caret under the cause.
)doc";
// A Kernel's call, as the method that _api.Kernel installs as its __call__.
const char* const kKernelCallDoc =
    R"doc(__call__($self, local_dict=None, /, *, out=None, backend=None, stream=None, **names)
--

Evaluates the kernel's program: names bound as jitexpr.evaluate binds them (keywords, then
local_dict or the caller's frame); with a signature, a value of another dtype is a
jitexpr.TypeError.
)doc";
PyMethodDef g_kernel_call_def = {"__call__",
                                 reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_kernel_call)),
                                 METH_FASTCALL | METH_KEYWORDS, kKernelCallDoc};
PyMethodDef g_evaluate_def = {"evaluate", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_evaluate)),
                              METH_FASTCALL | METH_KEYWORDS, kEvaluateDoc};

// ------------------------------------------------------------------------------- jitexpr.numexpr

// jitexpr.numexpr.evaluate (python/jitexpr/numexpr/necompiler.py) is this extension's function too: the
// arguments are read from the call, the names bound by bind_names under numexpr's rules, and the
// thread's last expression (for re_evaluate) kept in the thread state's dict, so that a call
// costs what jitexpr.evaluate costs.

// The texts that passed numexpr_check (exact str only; bounded as the names cache is), each to
// the text the drop-in evaluates for it (numexpr_text).
PyObject* g_numexpr_checked = nullptr;

// The text numexpr means by `text`, where its meaning is not jitexpr's: numexpr folds constants
// with Python's arithmetic, so `~True` is -2 and `~False` -1 (NumPy's ~True is False), also
// parenthesised as pandas writes it, `~(True)`. Empty when the text is evaluated as it is.
std::string numexpr_text(std::string_view text) {
    std::string out;
    std::size_t copied = 0;
    auto blanks = [&](std::size_t k) {
        while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
        return k;
    };
    for (std::size_t i = text.find('~'); i != std::string_view::npos; i = text.find('~', i + 1)) {
        std::size_t w = blanks(i + 1);
        const bool paren = w < text.size() && text[w] == '(';
        if (paren) w = blanks(w + 1);
        const bool is_true = text.compare(w, 4, "True") == 0;
        const std::size_t len = is_true ? 4 : text.compare(w, 5, "False") == 0 ? 5 : 0;
        if (len == 0) continue;
        std::size_t end = w + len;
        if (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) continue;
        if (paren) {
            end = blanks(end);
            if (end >= text.size() || text[end] != ')') continue;
            ++end;
        }
        out.append(text.substr(copied, i - copied));
        out += is_true ? "(-2)" : "(-1)";
        copied = end;
        i = end - 1;
    }
    if (copied == 0) return {};
    out.append(text.substr(copied));
    return out;
}

// numexpr's refusal of a negative reduction axis ("sum(a, axis=-1)"), which NumPy and jitexpr
// take: a keyword axis whose value starts with '-'.
bool numexpr_negative_axis(std::string_view text) {
    for (std::size_t i = text.find("axis"); i != std::string_view::npos; i = text.find("axis", i + 1)) {
        if (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_')) continue;
        std::size_t k = i + 4;
        auto blanks = [&] {
            while (k < text.size() && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n')) ++k;
        };
        blanks();
        if (k >= text.size() || text[k] != '=' || (k + 1 < text.size() && text[k + 1] == '=')) continue;
        ++k;
        blanks();
        if (k < text.size() && text[k] == '-') return true;
    }
    return false;
}

bool numexpr_word_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '_' || u >= 0x80;  // (Python's \w: any letter of any script)
}

// What numexpr's sanitizer refuses (sanitize=True, the default; NUMEXPR_SANITIZE=0 or
// sanitize=False turn it off): looked for with the blanks taken out and '...' quotes skipped,
// a `;`, `[` or `:`, a dunder name (`__builtins__`), and an attribute other than `.real` and
// `.imag` — where a '.' followed by a letter is no part of a number (`2.e-5`, `1.5j`).
bool numexpr_forbidden(std::string_view text) {
    std::string t;
    t.reserve(text.size());
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c))) t += c;
    for (std::size_t q = t.find('\''); q != std::string::npos; q = t.find('\'', q)) {
        const std::size_t close = t.find('\'', q + 1);
        if (close == std::string::npos) break;
        t.erase(q, close - q + 1);
    }
    const std::size_t n = t.size();
    if (t.find_first_of(";[:") != std::string::npos) return true;
    auto digits = [&](std::size_t& k) {
        const std::size_t from = k;
        while (k < n && std::isdigit(static_cast<unsigned char>(t[k]))) ++k;
        return k - from;
    };
    for (std::size_t i = 0; i < n;) {
        if (!numexpr_word_char(t[i])) {
            if (t[i] == '.' && i + 1 < n && numexpr_word_char(t[i + 1])) {
                std::size_t e = i + 1;
                while (e < n && numexpr_word_char(t[e])) ++e;
                const std::string_view w(t.data() + i + 1, e - i - 1);
                if (w != "real" && w != "imag") {
                    // A number's tail: digits, an exponent (its sign ends the word), or a 'j'.
                    std::size_t k = i + 1;
                    const std::size_t before = digits(k);
                    bool number = true;
                    if (k < n && (t[k] == 'e' || t[k] == 'E')) {
                        ++k;
                        if (k < n && (t[k] == '+' || t[k] == '-')) ++k;
                        number = digits(k) > 0;
                    } else if (before == 0) {
                        number = k < n && t[k] == 'j';
                    }
                    if (number && k < n && t[k] == 'j') ++k;
                    if (!number || (k < n && numexpr_word_char(t[k]))) return true;
                }
            }
            ++i;
            continue;
        }
        std::size_t e = i;
        while (e < n && numexpr_word_char(t[e])) ++e;
        const std::string_view w(t.data() + i, e - i);
        if (w.size() >= 5 && w.substr(0, 2) == "__" && w.substr(w.size() - 2) == "__") return true;
        i = e;
    }
    return false;
}

// numexpr's TypeError for Python's boolean operators (its nodes refuse bool()), which jitexpr's
// language has as words: `(x > 1) and (x < 9)`.
bool numexpr_boolean_word(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        if (!numexpr_word_char(text[i])) {
            ++i;
            continue;
        }
        std::size_t e = i;
        while (e < text.size() && numexpr_word_char(text[e])) ++e;
        const std::string_view w = text.substr(i, e - i);
        if (w == "and" || w == "or" || w == "not") return true;
        i = e;
    }
    return false;
}

// Whether numexpr would sanitize: `sanitize` when given, else NUMEXPR_SANITIZE (read each call,
// as numexpr does; an integer, 0 for off), else on.
bool numexpr_sanitize(PyObject* sanitize) {
    if (sanitize && sanitize != Py_None) {
        const int t = PyObject_IsTrue(sanitize);
        if (t < 0) throw nb::python_error();
        return t != 0;
    }
    const char* env = std::getenv("NUMEXPR_SANITIZE");
    if (!env || !*env) return true;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    return end == env || v != 0;
}

// What numexpr refuses before parsing, and what the drop-in refuses as numexpr does: a
// non-string (ValueError), what its sanitizer refuses (ValueError: "forbidden control
// characters"), an assignment (SyntaxError), `and`/`or`/`not` (TypeError), a negative axis
// (ValueError); bad syntax is jitexpr's ParseError (a SyntaxError). Once per text (the texts
// checked with the sanitizer are kept). Returns the text to evaluate (numexpr_text's, else `ex`).
nb::object numexpr_check_text(PyObject* ex, bool sanitize = true) {
    const bool exact = PyUnicode_CheckExact(ex);
    if (exact && g_numexpr_checked) {
        if (PyObject* known = PyDict_GetItemWithError(g_numexpr_checked, ex)) return nb::borrow(known);
        if (PyErr_Occurred()) throw nb::python_error();
    }
    if (!PyUnicode_Check(ex)) {
        PyErr_SetString(PyExc_ValueError, "must specify expression as a string");
        throw nb::python_error();
    }
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(ex, &size);
    if (!utf8) throw nb::python_error();
    const std::string_view text(utf8, static_cast<std::size_t>(size));
    PyObject* value_error = g_errors.value ? g_errors.value : PyExc_ValueError;
    if (sanitize && numexpr_forbidden(text)) {
        PyErr_Format(value_error, "Expression %U has forbidden control characters.", ex);
        throw nb::python_error();
    }
    if (!jit::targets(text).empty()) {
        PyErr_Format(PyExc_SyntaxError, "invalid syntax: numexpr evaluates an expression, not an assignment: %R", ex);
        throw nb::python_error();
    }
    if (numexpr_boolean_word(text)) {
        PyErr_SetString(g_errors.type ? g_errors.type : PyExc_TypeError,
                        "You can't use Python's standard boolean operators in NumExpr expressions. You should use "
                        "their bitwise counterparts instead: '&' instead of 'and', '|' instead of 'or', and '~' "
                        "instead of 'not'.");
        throw nb::python_error();
    }
    if (numexpr_negative_axis(text)) {
        PyErr_SetString(value_error, "negative axis are not supported");
        throw nb::python_error();
    }
    const std::string meant = numexpr_text(text);
    nb::object effective = meant.empty() ? nb::borrow(ex) : nb::str(meant.data(), meant.size());
    if (!exact || !sanitize) return effective;  // (a str subclass may hash as it likes: not kept)
    if (!g_numexpr_checked) {
        g_numexpr_checked = PyDict_New();
        if (!g_numexpr_checked) throw nb::python_error();
    }
    if (PyDict_GET_SIZE(g_numexpr_checked) >= kMaxTexts) PyDict_Clear(g_numexpr_checked);
    if (PyDict_SetItem(g_numexpr_checked, ex, effective.ptr()) < 0) throw nb::python_error();
    return effective;
}

// The values as numexpr takes them, where that is not as NumPy does: uint32 computes as int64
// (numexpr has no unsigned kinds: evaluate('a') of a uint32 is int64); an object or str array is
// numexpr's ValueError; a Python int past int64 meets float arrays (and only those) as a float
// (NumPy's float64: the binding would refuse it as out of int64's range). Replacements are held
// in `keep`.
void numexpr_take_values(Items& items, std::vector<nb::object>& keep) {
    bool all_inexact = true, any_big = false, any_array = false;
    for (auto& [name, value] : items) {
        PyObject* v = value.ptr();
        PyArray_Descr* d = nullptr;
        if (PyArray_Check(v)) {
            d = PyArray_DESCR(reinterpret_cast<PyArrayObject*>(v));
        } else if (PyArray_IsScalar(v, Generic)) {
            d = PyArray_DescrFromScalar(v);
            Py_XDECREF(d);  // a borrowed view suffices: the scalar holds its dtype
        } else if (PyLong_Check(v) && !PyBool_Check(v)) {
            int overflow = 0;
            (void)PyLong_AsLongLongAndOverflow(v, &overflow);
            any_big = any_big || overflow != 0;
            continue;
        } else {
            if (!PyFloat_Check(v) && !PyComplex_Check(v)) all_inexact = false;
            continue;
        }
        if (!d) throw nb::python_error();
        const int t = d->type_num;
        if (t == NPY_OBJECT) {
            PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError, "unknown type object");
            throw nb::python_error();
        }
        if (t == NPY_UNICODE) {
            PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError,
                            "NumExpr 2 does not support Unicode as a dtype.");
            throw nb::python_error();
        }
        if (!PyTypeNum_ISFLOAT(t) && !PyTypeNum_ISCOMPLEX(t)) all_inexact = false;
        any_array = true;
        if (PyArray_Check(v)) {
            // A field of a record array strides by the record, not by its own itemsize: numexpr
            // reads it in place; jitexpr needs whole-element strides, so it gets a copy.
            auto* a = reinterpret_cast<PyArrayObject*>(v);
            bool whole = true;
            for (int k = 0; k < PyArray_NDIM(a); ++k)
                whole = whole && PyArray_STRIDE(a, k) % static_cast<npy_intp>(PyArray_ITEMSIZE(a)) == 0;
            if (!whole) {
                PyObject* c = t == NPY_UINT32 ? PyArray_FromAny(v, PyArray_DescrFromType(NPY_INT64), 0, 0,
                                                                NPY_ARRAY_FORCECAST | NPY_ARRAY_CARRAY, nullptr)
                                              : PyArray_NewCopy(a, NPY_CORDER);
                if (!c) throw nb::python_error();
                keep.push_back(nb::steal(c));
                value = keep.back();
                continue;
            }
        }
        if (t == NPY_UINT32) {
            PyObject* c = PyArray_FromAny(v, PyArray_DescrFromType(NPY_INT64), 0, 0, NPY_ARRAY_FORCECAST, nullptr);
            if (!c) throw nb::python_error();
            keep.push_back(nb::steal(c));
            value = keep.back();
        }
    }
    if (!any_big || !all_inexact || !any_array) return;
    for (auto& [name, value] : items) {
        if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) continue;
        PyObject* f = PyNumber_Float(value.ptr());
        if (!f) throw nb::python_error();
        keep.push_back(nb::steal(f));
        value = keep.back();
    }
}

// The result of an expression of constants alone as numexpr gives it: an integer is int32
// when it fits (numexpr's kind of an integer constant), else int64; evaluate('2') is int32.
nb::object numexpr_constant_result(nb::object r) {
    if (!PyArray_Check(r.ptr())) return r;
    auto* a = reinterpret_cast<PyArrayObject*>(r.ptr());
    if (PyArray_NDIM(a) != 0 || PyArray_TYPE(a) != NPY_INT64) return r;
    const auto v = *static_cast<const std::int64_t*>(PyArray_DATA(a));
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) return r;
    PyObject* c = PyArray_CastToType(a, PyArray_DescrFromType(NPY_INT32), 0);
    if (!c) throw nb::python_error();
    return nb::steal(c);
}

// The drop-in's exception for a jitexpr one, where numexpr's type differs: an operation the
// dtype lacks ("operator '~' is not supported for float64") is numexpr's NotImplementedError
// (pandas reads the type: it falls back to NumPy for bool arithmetic on that one). Called with
// the error set; leaves one set; returns nullptr.
PyObject* numexpr_retype_error() {
    if (!g_errors.not_implemented || !g_errors.type || !PyErr_ExceptionMatches(g_errors.type)) return nullptr;
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    nb::object t = nb::steal(type), v = nb::steal(value), trace = nb::steal(tb);
    bool lacks = false;
    if (v.is_valid() && PyObject_HasAttrString(v.ptr(), "message")) {
        nb::object m = nb::steal(PyObject_GetAttrString(v.ptr(), "message"));
        const char* c = m.is_valid() && PyUnicode_Check(m.ptr()) ? PyUnicode_AsUTF8(m.ptr()) : nullptr;
        lacks = c && std::string_view(c).find(" is not supported for ") != std::string_view::npos;
    }
    PyErr_Clear();
    if (!lacks) {
        PyErr_Restore(t.release().ptr(), v.release().ptr(), trace.release().ptr());
        return nullptr;
    }
    nb::object text = nb::steal(PyObject_Str(v.ptr()));
    nb::object exc =
        text.is_valid() ? nb::steal(PyObject_CallOneArg(g_errors.not_implemented, text.ptr())) : nb::object();
    if (!exc.is_valid()) {
        PyErr_Clear();
        PyErr_Restore(t.release().ptr(), v.release().ptr(), trace.release().ptr());
        return nullptr;
    }
    for (const char* a : {"message", "source", "span", "kind"}) {
        nb::object x = nb::steal(PyObject_GetAttrString(v.ptr(), a));
        if (!x.is_valid() || PyObject_SetAttrString(exc.ptr(), a, x.ptr()) < 0) PyErr_Clear();
    }
    PyErr_SetObject(g_errors.not_implemented, exc.ptr());
    return nullptr;
}

// numexpr's getContext: the keywords other than the function's own may be `optimization` and
// `truediv`, with numexpr's values; anything else is numexpr's ValueError.
void numexpr_check_context(PyObject* const* names, PyObject* const* values, Py_ssize_t count) {
    static PyObject* optimization = interned("optimization");
    static PyObject* truediv = interned("truediv");
    static PyObject* optimizations = Py_BuildValue("(sss)", "none", "moderate", "aggressive");
    static PyObject* truedivs = Py_BuildValue("(OOs)", Py_False, Py_True, "auto");
    if (!optimizations || !truedivs) throw nb::python_error();
    PyObject* unknown = nullptr;
    for (PyObject* which : {optimization, truediv}) {
        for (Py_ssize_t i = 0; i < count; ++i) {
            if (!same_name(names[i], which)) continue;
            PyObject* allowed = which == optimization ? optimizations : truedivs;
            const int ok = PySequence_Contains(allowed, values[i]);
            if (ok < 0) throw nb::python_error();
            if (ok == 0) {
                PyErr_Format(PyExc_ValueError, "'%U' must be one of %R", which, allowed);
                throw nb::python_error();
            }
        }
    }
    for (Py_ssize_t i = 0; i < count; ++i)
        if (!same_name(names[i], optimization) && !same_name(names[i], truediv)) unknown = names[i];
    if (unknown) {  // numexpr names the last one (dict.popitem)
        PyErr_Format(PyExc_ValueError, "Unknown keyword argument '%U'", unknown);
        throw nb::python_error();
    }
}

// The thread's last expression of evaluate or validate, for re_evaluate: (ex, a weak reference
// to out or None, order, casting) in the thread state's dict (dropped with the thread).
PyObject* numexpr_last_key() {
    static PyObject* k = interned("jitexpr.numexpr.last");
    return k;
}

// A weak reference to `out` (None for None): numexpr's TypeError for an out that takes none.
nb::object numexpr_out_ref(nb::handle out) {
    if (out.is_none()) return nb::none();
    PyObject* r = PyWeakref_NewRef(out.ptr(), nullptr);
    if (!r) throw nb::python_error();
    return nb::steal(r);
}

void numexpr_keep_last(nb::handle ex, nb::handle out_ref, nb::handle order, nb::handle casting) {
    PyObject* d = PyThreadState_GetDict();  // borrowed
    if (!d) throw jit::InternalError("jitexpr.numexpr: no thread state dict");
    nb::object last = nb::steal(PyTuple_Pack(4, ex.ptr(), out_ref.ptr(), order.ptr(), casting.ptr()));
    if (!last.is_valid() || PyDict_SetItem(d, numexpr_last_key(), last.ptr()) < 0) throw nb::python_error();
}

// (ex, out or None, order, casting) of the thread's last expression, or None.
nb::object numexpr_last() {
    PyObject* d = PyThreadState_GetDict();
    if (!d) return nb::none();
    PyObject* last = PyDict_GetItemWithError(d, numexpr_last_key());  // borrowed
    if (!last) {
        if (PyErr_Occurred()) throw nb::python_error();
        return nb::none();
    }
    PyObject* ref = PyTuple_GET_ITEM(last, 1);
    nb::object out = ref == Py_None ? nb::none() : nb::borrow(PyWeakref_GetObject(ref));  // None once gone
    return nb::make_tuple(nb::borrow(PyTuple_GET_ITEM(last, 0)), out, nb::borrow(PyTuple_GET_ITEM(last, 2)),
                          nb::borrow(PyTuple_GET_ITEM(last, 3)));
}

// {name: value} for validate (python/jitexpr/numexpr/necompiler.py): the names bound as evaluate binds them.
nb::dict numexpr_bind(nb::handle ex, nb::handle local_dict, nb::handle global_dict, int depth) {
    (void)numexpr_check_text(ex.ptr());
    Items items;
    std::vector<nb::object> keep;
    std::vector<PyObject*> missing;
    BindSpec spec;
    spec.local_dict = local_dict;
    spec.global_dict = global_dict;
    spec.depth = depth < 0 ? 0 : depth;
    spec.numexpr = true;
    bind_names(ex.ptr(), spec, items, keep, missing);
    nb::dict d;
    for (auto [k, v] : items) d[k] = v;
    return d;
}

// numexpr.evaluate's parameters, in its order (all of them may be given by position).
enum NeParam { kNeEx, kNeLocal, kNeGlobal, kNeOut, kNeOrder, kNeCasting, kNeSanitize, kNeDepth, kNeNoCache, kNeCount };
struct NumexprParams {
    PyObject* names[kNeCount] = {interned("ex"),       interned("local_dict"),   interned("global_dict"),
                                 interned("out"),      interned("order"),        interned("casting"),
                                 interned("sanitize"), interned("_frame_depth"), interned("disable_cache")};
};
PyObject* const* numexpr_param_names() {
    static const NumexprParams* p = new NumexprParams;  // never destroyed: used until the interpreter ends
    return p->names;
}

// jitexpr.numexpr.evaluate(ex, local_dict=None, global_dict=None, out=None, order='K',
// casting='same_kind', sanitize=None, _frame_depth=3, disable_cache=False, **kwargs), called by
// Python directly as jitexpr.evaluate is: numexpr 2.14's call, checks, frame lookup and errors.
PyObject* py_numexpr_evaluate(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) noexcept {
    try {
        const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
        if (nargs > kNeCount) {
            PyErr_Format(PyExc_TypeError, "evaluate() takes from 1 to %d positional arguments but %zd were given",
                         int(kNeCount), nargs);
            return nullptr;
        }
        PyObject* v[kNeCount] = {};
        for (Py_ssize_t i = 0; i < nargs; ++i) v[i] = args[i];
        // The keywords that are not evaluate's own (numexpr's context: optimization, truediv).
        constexpr Py_ssize_t kInline = 8;
        PyObject* extra_names_inline[kInline];
        PyObject* extra_values_inline[kInline];
        std::vector<PyObject*> extra_names_heap, extra_values_heap;
        PyObject** extra_names = extra_names_inline;
        PyObject** extra_values = extra_values_inline;
        Py_ssize_t extras = 0;
        const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        if (nkw > kInline) {
            extra_names_heap.resize(static_cast<std::size_t>(nkw));
            extra_values_heap.resize(static_cast<std::size_t>(nkw));
            extra_names = extra_names_heap.data();
            extra_values = extra_values_heap.data();
        }
        PyObject* const* params = numexpr_param_names();
        for (Py_ssize_t i = 0; i < nkw; ++i) {
            PyObject* k = PyTuple_GET_ITEM(kwnames, i);
            int which = -1;
            for (int p = 0; p < kNeCount && which < 0; ++p)
                if (k == params[p]) which = p;
            for (int p = 0; p < kNeCount && which < 0; ++p)
                if (same_name(k, params[p])) which = p;
            if (which < 0) {
                extra_names[extras] = k;
                extra_values[extras++] = args[nargs + i];
                continue;
            }
            if (v[which]) {
                PyErr_Format(PyExc_TypeError, "evaluate() got multiple values for argument '%U'", params[which]);
                return nullptr;
            }
            v[which] = args[nargs + i];
        }
        if (!v[kNeEx]) {
            PyErr_SetString(PyExc_TypeError, "evaluate() missing 1 required positional argument: 'ex'");
            return nullptr;
        }
        static PyObject* order_k = interned("K");
        static PyObject* same_kind = interned("same_kind");
        nb::handle ex = v[kNeEx];
        nb::handle local_dict = v[kNeLocal] ? v[kNeLocal] : Py_None;
        nb::handle global_dict = v[kNeGlobal] ? v[kNeGlobal] : Py_None;
        nb::handle out = v[kNeOut] ? v[kNeOut] : Py_None;
        nb::handle order_arg = v[kNeOrder] ? v[kNeOrder] : order_k;
        nb::handle casting_arg = v[kNeCasting] ? v[kNeCasting] : same_kind;
        // numexpr's validate, in its order: the text is a str, the context, the text, the names.
        if (!PyUnicode_Check(ex.ptr())) {
            PyErr_SetString(PyExc_ValueError, "must specify expression as a string");
            return nullptr;
        }
        if (extras) numexpr_check_context(extra_names, extra_values, extras);
        const nb::object meant = numexpr_check_text(ex.ptr(), numexpr_sanitize(v[kNeSanitize]));
        // _frame_depth counts as numexpr's does (3: evaluate's caller, from numexpr's getArguments
        // under validate under evaluate); this function has no frame, so the caller's is the innermost.
        long frame_depth = 3;
        if (v[kNeDepth]) {
            frame_depth = PyLong_AsLong(v[kNeDepth]);
            if (frame_depth == -1 && PyErr_Occurred()) return nullptr;
        }
        bool keep_last = true;
        if (v[kNeNoCache]) {
            const int t = PyObject_IsTrue(v[kNeNoCache]);
            if (t < 0) return nullptr;
            keep_last = t == 0;  // numexpr's disable_cache: no last expression kept
        }
        ScratchLease sc;
        BindSpec spec;
        spec.local_dict = local_dict;
        spec.global_dict = global_dict;
        spec.depth = frame_depth > 3 ? static_cast<int>(frame_depth - 3) : 0;
        spec.numexpr = true;
        bind_names(ex.ptr(), spec, sc->items, sc->keep, sc->missing);
        numexpr_take_values(sc->items, sc->keep);
        // order and casting as NumPy converts them (numexpr's errors are NumPy's).
        NPY_ORDER order = NPY_KEEPORDER;
        if (PyArray_OrderConverter(order_arg.ptr(), &order) != NPY_SUCCEED) return nullptr;
        NPY_CASTING casting = NPY_SAME_KIND_CASTING;
        if (PyArray_CastingConverter(casting_arg.ptr(), &casting) != NPY_SUCCEED) return nullptr;
        if (!out.is_none()) check_out_object(out);  // before it is kept or given to NumPy's copyto
        nb::object out_ref = keep_last ? numexpr_out_ref(out) : nb::none();
        Py_ssize_t size = 0;
        const char* utf8 = PyUnicode_AsUTF8AndSize(meant.ptr(), &size);
        if (!utf8) return nullptr;
        std::string_view text(utf8, static_cast<std::size_t>(size));
        // numexpr's unary '+' is the operand itself, bool included (NumPy and jitexpr refuse
        // +bool): where the checker refuses one, it is taken out of the text and the text checked
        // again (the checker runs before anything does).
        std::string without_plus;
        auto evaluate_text = [&](nb::handle target) {
            for (int tries = 0;; ++tries) {
                try {
                    return evaluate_items(text, sc->items, target, nb::none(), nb::none(), nb::none(), false,
                                          nb::none(), *sc);
                } catch (const jit::TypeError& e) {
                    const std::size_t at = e.span().begin;
                    if (tries >= 64 || e.message() != "unary '+' is not supported for bool" || at >= text.size() ||
                        text[at] != '+')
                        throw;
                    without_plus = std::string(text.substr(0, at)) + " " + std::string(text.substr(at + 1));
                    text = without_plus;
                }
            }
        };
        nb::object result;
        if (!out.is_none() && casting != NPY_SAME_KIND_CASTING) {
            // Other casting rules than the runtime's own: evaluated apart, then cast into out as
            // NumPy's copyto casts (its TypeError and ValueError).
            nb::object value = evaluate_text(nb::none());
            static PyObject* copyto = [] {
                nb::object np = nb::module_::import_("numpy");
                nb::object f = np.attr("copyto");
                return f.release().ptr();  // kept for the life of the process
            }();
            nb::borrow(copyto)(out, value, "casting"_a = casting_arg);
            result = nb::borrow(out);
        } else {
            PyObject* r = result_to_python(evaluate_text(out));
            if (!r) return numexpr_retype_error();
            result = nb::steal(r);
            if (out.is_none() && sc->items.empty()) result = numexpr_constant_result(std::move(result));
            if (order == NPY_FORTRANORDER && out.is_none() && PyArray_Check(r) &&
                PyArray_NDIM(reinterpret_cast<PyArrayObject*>(r)) > 1 &&
                !PyArray_IS_F_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(r))) {
                PyObject* f = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(r), NPY_FORTRANORDER);
                if (!f) return nullptr;
                result = nb::steal(f);
            }
        }
        if (keep_last) numexpr_keep_last(ex, out_ref, order_arg, casting_arg);
        return result.release().ptr();
    } catch (...) {
        raise_current();
        return numexpr_retype_error();
    }
}

const char* const kNumexprEvaluateDoc =
    R"doc(evaluate(ex, local_dict=None, global_dict=None, out=None, order='K', casting='same_kind', sanitize=None, _frame_depth=3, disable_cache=False, **kwargs)
--

Evaluates the array expression ``ex`` (numexpr.evaluate).

ex: an expression such as ``"2*a + 3*b"``; its variables come from ``local_dict`` (else the
    caller's locals), then ``global_dict`` (else the caller's globals); a variable found in
    neither is a KeyError naming it.
out: an existing array to write the result into (same-kind casting under the default
    ``casting``; its shape must hold the result).
order: 'K' (and 'C', 'A'): results are C-contiguous; 'F' gives a Fortran-ordered copy.
casting: for ``out``: 'same_kind' (default), or 'no', 'equiv', 'safe', 'unsafe' as NumPy.
sanitize: numexpr's sanitizer (None: the NUMEXPR_SANITIZE variable, on when unset): ``;``,
    ``[``, ``:``, dunder names and attributes other than .real/.imag are a ValueError. (jitexpr
    never hands the text to Python's eval; the rule is numexpr's.)
disable_cache: keeps no last expression for re_evaluate (jitexpr's caches hold no references
    to your arrays either way).
kwargs: numexpr's ``optimization`` and ``truediv``, accepted with numexpr's values; any other
    keyword is numexpr's ValueError.

Returns a NumPy array (0-d for a reduction), or ``out``.
)doc";
PyMethodDef g_numexpr_evaluate_def = {"evaluate",
                                      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_numexpr_evaluate)),
                                      METH_FASTCALL | METH_KEYWORDS, kNumexprEvaluateDoc};

// jx.run: every name the program assigns, by name.
nb::dict run_program(const std::string& text, nb::dict names, nb::handle backend, nb::handle stream, nb::handle runtime,
                     nb::handle device, bool strict) {
    Call c;
    prepare(c, items_of(names), backend, stream, runtime, device);
    if (c.any_validity)
        throw jit::ArgumentError("jitexpr.run takes no Arrow columns with nulls; use evaluate for each result");
    std::shared_ptr<jit::Runtime> rt = c.runtime->get();
    jit::Environment env;
    for (auto& [n, b] : c.bound) env.emplace(n, b.arg);
    const std::vector<std::string> assigned = jit::targets(text);
    void* s = reinterpret_cast<void*>(c.stream);
    (void)call_released([&](const Token* token) { return run_with(*rt, text, env, s, token, strict); });
    nb::dict result;
    for (const std::string& n : assigned) {
        auto it = env.find(n);
        if (it == env.end() || !it->second.is_array()) continue;
        // A name bound by the caller and written in place is the caller's own object.
        bool in_place = false;
        for (const auto& [bn, b] : c.bound)
            if (bn == n && !b.moved && b.arg.is_array() && b.arg.array().storage() == it->second.array().storage()) {
                result[n.c_str()] = names[n.c_str()];
                in_place = true;
            }
        if (!in_place) result[n.c_str()] = to_python(it->second.array(), c);
    }
    return result;
}

// What `text` becomes over `names` (Runtime::explain), without running it.
std::string explain_program(const std::string& text, nb::dict names, nb::handle backend, nb::handle device,
                            double bandwidth) {
    Call c;
    prepare(c, items_of(names), backend, nb::none(), nb::none(), device);
    std::shared_ptr<jit::Runtime> rt = c.runtime->get();
    jit::Environment env;
    for (auto& [n, b] : c.bound) env.emplace(n, b.arg);
    jit::ExplainOptions o;
    o.bandwidth_gbs = bandwidth;
    return rt->explain(text, env, o);
}

// ------------------------------------------------------------------------------- Tensor export

void dlpack_capsule_destructor(PyObject* capsule) noexcept {
    if (PyCapsule_IsValid(capsule, "dltensor")) {  // never consumed: ours to free
        auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
        if (t && t->deleter) t->deleter(t);
    } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
        if (t && t->deleter) t->deleter(t);
    }
    PyErr_Clear();
}

std::shared_ptr<jit::Runtime> cuda_runtime(int device = -1) {
    return default_runtime(jit::Backend::Cuda, device)->get();
}

// The DLPack protocol: stream (CUDA: the consumer's; our work is waited for unless it is the
// stream it was queued on, or -1), max_version (a versioned capsule from 1.0 on), dl_device
// (another device: a copy, unless copy=False), copy (True: always a copy; False: never).
nb::object tensor_dlpack(Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
    jit::Array a = t.array;
    bool copied = false;
    const bool must_copy = !copy.is_none() && nb::cast<bool>(copy);
    const bool may_copy = copy.is_none() || nb::cast<bool>(copy);
    jit::Backend target = a.backend();
    int target_device = -1;
    if (!dl_device.is_none()) {
        nb::tuple d = nb::cast<nb::tuple>(dl_device);
        const int type = nb::cast<int>(d[0]);
        const int id = nb::cast<int>(d[1]);
        if (type == 1) target = jit::Backend::Cpu;
        else if ((type == 2 || type == 13) && id >= 0) target = jit::Backend::Cuda, target_device = id;
        else {
            PyErr_SetString(PyExc_BufferError, "jitexpr exports to the host (kDLCPU) and CUDA devices (kDLCUDA) only");
            throw nb::python_error();
        }
    }
    if (target == jit::Backend::Cuda && target_device < 0) target_device = a.device();
    if (target != a.backend() || (target == jit::Backend::Cuda && target_device != a.device()) || must_copy) {
        if (!may_copy) {
            PyErr_SetString(PyExc_BufferError, "the array is on another device and copy=False forbids a copy");
            throw nb::python_error();
        }
        if (a.backend() == jit::Backend::Cuda)
            cuda_runtime(t.array.device())->synchronize(reinterpret_cast<void*>(t.stream));
        {
            nb::gil_scoped_release release;
            a = a.to(target, target == jit::Backend::Cuda ? target_device : 0);
        }
        copied = true;
    } else if (a.backend() == jit::Backend::Cuda && !stream.is_none()) {
        const long long s = nb::cast<long long>(stream);
        const std::uintptr_t want = s == 1 ? 0 : static_cast<std::uintptr_t>(s);
        if (s != -1 && want != t.stream) {
            nb::gil_scoped_release release;
            cuda_runtime(t.array.device())->synchronize(reinterpret_cast<void*>(t.stream));
        }
    } else if (a.backend() == jit::Backend::Cuda && stream.is_none() && t.stream != 0) {
        nb::gil_scoped_release release;
        cuda_runtime(t.array.device())->synchronize(reinterpret_cast<void*>(t.stream));
    }
    bool versioned = false;
    if (!max_version.is_none()) {
        nb::tuple v = nb::cast<nb::tuple>(max_version);
        versioned = nb::cast<int>(v[0]) >= 1;
    }
    PyObject* capsule = nullptr;
    if (versioned) {
        DLManagedTensorVersioned* m = jit::to_dlpack_versioned(a, copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
        capsule = PyCapsule_New(m, "dltensor_versioned", &dlpack_capsule_destructor);
        if (!capsule) m->deleter(m);
    } else {
        DLManagedTensor* m = jit::to_dlpack(a);
        capsule = PyCapsule_New(m, "dltensor", &dlpack_capsule_destructor);
        if (!capsule) m->deleter(m);
    }
    if (!capsule) throw nb::python_error();
    return nb::steal(capsule);
}

const char* typestr_of(jit::DType d) {
    switch (d) {
        case jit::DType::Bool: return "|b1";
        case jit::DType::Int8: return "|i1";
        case jit::DType::Int16: return "<i2";
        case jit::DType::Int32: return "<i4";
        case jit::DType::Int64: return "<i8";
        case jit::DType::UInt8: return "|u1";
        case jit::DType::UInt16: return "<u2";
        case jit::DType::UInt32: return "<u4";
        case jit::DType::UInt64: return "<u8";
        case jit::DType::Float16: return "<f2";
        case jit::DType::BFloat16: return "<V2";
        case jit::DType::Float32: return "<f4";
        case jit::DType::Float64: return "<f8";
        case jit::DType::Complex64: return "<c8";
        case jit::DType::Complex128: return "<c16";
    }
    return "|V1";
}

nb::dict tensor_cai(const Tensor& t) {
    if (t.array.backend() != jit::Backend::Cuda) {
        PyErr_SetString(PyExc_AttributeError, "__cuda_array_interface__: this array is in host memory");
        throw nb::python_error();
    }
    const jit::Array& a = t.array;
    nb::dict d;
    nb::list shape, strides;
    const auto item = static_cast<std::int64_t>(jit::itemsize(a.dtype()));
    for (int k = 0; k < a.ndim(); ++k) {
        shape.append(a.shape()[static_cast<std::size_t>(k)]);
        strides.append(a.strides()[static_cast<std::size_t>(k)] * item);
    }
    d["shape"] = nb::tuple(shape);
    d["strides"] = nb::tuple(strides);
    d["typestr"] = typestr_of(a.dtype());
    d["descr"] = nb::make_tuple(nb::make_tuple("", typestr_of(a.dtype())));
    d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), false);
    d["version"] = 3;
    d["stream"] = t.stream == 0 ? nb::int_(1) : nb::int_(t.stream);  // 1: the legacy default stream
    return d;
}

jit::ArrowColumn column_of(const Tensor& t) {
    if (t.array.ndim() != 1)
        throw jit::ArgumentError("the Arrow interface is for 1-D arrays; this one has shape " +
                                 jit::shape_to_string(t.array.shape()));
    jit::ArrowColumn c;
    c.values = t.array;
    c.validity = t.validity;
    c.null_count = t.null_count;
    return c;
}

void arrow_schema_capsule_destructor(PyObject* capsule) noexcept {
    auto* s = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, "arrow_schema"));
    if (s) {
        if (s->release) s->release(s);
        delete s;
    }
    PyErr_Clear();
}

void arrow_array_capsule_destructor(PyObject* capsule) noexcept {
    auto* a = static_cast<ArrowArray*>(PyCapsule_GetPointer(capsule, "arrow_array"));
    if (a) {
        if (a->release) a->release(a);
        delete a;
    }
    PyErr_Clear();
}

nb::tuple tensor_arrow_array(const Tensor& t, nb::handle requested_schema) {
    (void)requested_schema;  // the schema is the array's own (a request for another is ignored, as allowed)
    const jit::ArrowColumn c = column_of(t);
    auto schema = std::make_unique<ArrowSchema>();
    auto array = std::make_unique<ArrowArray>();
    *schema = {};
    *array = {};
    jit::to_arrow(c, array.get(), schema.get());
    PyObject* sc = PyCapsule_New(schema.get(), "arrow_schema", &arrow_schema_capsule_destructor);
    if (!sc) {
        schema->release(schema.get());
        array->release(array.get());
        throw nb::python_error();
    }
    schema.release();
    nb::object sco = nb::steal(sc);
    PyObject* ac = PyCapsule_New(array.get(), "arrow_array", &arrow_array_capsule_destructor);
    if (!ac) {
        array->release(array.get());
        throw nb::python_error();
    }
    array.release();
    return nb::make_tuple(sco, nb::steal(ac));
}

// A one-chunk ArrowArrayStream over a column.
struct StreamState {
    jit::ArrowColumn column;
    bool given = false;
    std::string error;
};

int stream_get_schema(ArrowArrayStream* s, ArrowSchema* out) {
    auto* st = static_cast<StreamState*>(s->private_data);
    try {
        ArrowArray tmp{};
        jit::to_arrow(st->column, &tmp, out);
        tmp.release(&tmp);
        return 0;
    } catch (const std::exception& e) {
        st->error = e.what();
        return 22;  // EINVAL
    }
}

int stream_get_next(ArrowArrayStream* s, ArrowArray* out) {
    auto* st = static_cast<StreamState*>(s->private_data);
    if (st->given) {
        *out = {};
        out->release = nullptr;  // the end
        return 0;
    }
    try {
        ArrowSchema tmp{};
        jit::to_arrow(st->column, out, &tmp);
        tmp.release(&tmp);
        st->given = true;
        return 0;
    } catch (const std::exception& e) {
        st->error = e.what();
        return 22;
    }
}

const char* stream_last_error(ArrowArrayStream* s) {
    auto* st = static_cast<StreamState*>(s->private_data);
    return st->error.empty() ? nullptr : st->error.c_str();
}

void stream_release(ArrowArrayStream* s) {
    delete static_cast<StreamState*>(s->private_data);
    s->private_data = nullptr;
    s->release = nullptr;
}

void arrow_stream_capsule_destructor(PyObject* capsule) noexcept {
    auto* s = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, "arrow_array_stream"));
    if (s) {
        if (s->release) s->release(s);
        delete s;
    }
    PyErr_Clear();
}

nb::object tensor_arrow_stream(const Tensor& t, nb::handle requested_schema) {
    (void)requested_schema;
    auto state = std::make_unique<StreamState>();
    state->column = column_of(t);
    {  // fails now, not in the consumer, for what has no Arrow format
        ArrowArray a{};
        ArrowSchema sc{};
        jit::to_arrow(state->column, &a, &sc);
        a.release(&a);
        sc.release(&sc);
    }
    auto* s = new ArrowArrayStream{};
    s->get_schema = &stream_get_schema;
    s->get_next = &stream_get_next;
    s->get_last_error = &stream_last_error;
    s->release = &stream_release;
    s->private_data = state.release();
    PyObject* c = PyCapsule_New(s, "arrow_array_stream", &arrow_stream_capsule_destructor);
    if (!c) {
        s->release(s);
        delete s;
        throw nb::python_error();
    }
    return nb::steal(c);
}

nb::object tensor_numpy(const Tensor& t) {
    if (t.array.backend() != jit::Backend::Cpu)
        throw jit::ArgumentError(
            "this array is in CUDA device memory; copy it with .to('cpu') or hand it to CuPy/PyTorch");
    return numpy_of(t.array);
}

// Tensor.to('cpu' | 'cuda' | 'cuda:N'): the array (and its validity) on that device, copied
// once the work that wrote it is done; the tensor itself where it is there already.
nb::object tensor_to(nb::handle self, const std::string& where) {
    const Tensor& t = nb::cast<const Tensor&>(self);
    jit::Backend backend = jit::Backend::Cpu;
    int device = 0;
    if (where == "cpu") {
        backend = jit::Backend::Cpu;
    } else if (where == "cuda" || where == "gpu") {
        backend = jit::Backend::Cuda;
        device = t.array.backend() == jit::Backend::Cuda ? t.array.device() : 0;
    } else if (where.rfind("cuda:", 0) == 0 && where.size() > 5 && where.size() <= 8 &&
               where.find_first_not_of("0123456789", 5) == std::string::npos) {
        backend = jit::Backend::Cuda;
        device = std::stoi(where.substr(5));
    } else {
        throw jit::ArgumentError("to(): the device is 'cpu', 'cuda' or 'cuda:N', not '" + where + "'");
    }
    if (t.array.backend() == backend && (backend == jit::Backend::Cpu || t.array.device() == device))
        return nb::borrow(self);
    Tensor r;
    r.null_count = t.null_count;
    std::shared_ptr<jit::Runtime> rt;
    if (t.array.backend() == jit::Backend::Cuda) rt = cuda_runtime(t.array.device());
    {
        nb::gil_scoped_release release;
        if (rt) rt->synchronize(reinterpret_cast<void*>(t.stream));
        r.array = t.array.to(backend, device);
        if (t.validity) r.validity = t.validity->to(backend, device);
    }
    return nb::cast(std::move(r));
}

// ------------------------------------------------------------------------------- info

nb::dict library_dict(const jit::CudaLibraryInfo& l) {
    nb::dict d;
    d["found"] = l.found;
    d["loaded"] = l.loaded;
    d["path"] = l.path;
    d["source"] = l.source;
    d["version"] =
        l.version ? nb::str((std::to_string(l.version / 1000) + "." + std::to_string(l.version % 1000 / 10)).c_str())
                  : nb::str("");
    d["error"] = l.error;
    return d;
}

nb::dict cuda_info(bool load) {
    jit::CudaInfo i;
    {
        nb::gil_scoped_release release;
        i = jit::cuda_info(load);
    }
    nb::dict d;
    d["available"] = i.available;
    d["reason"] = i.reason;
    d["driver_version"] =
        i.driver_version
            ? nb::str((std::to_string(i.driver_version / 1000) + "." + std::to_string(i.driver_version % 1000 / 10))
                          .c_str())
            : nb::str("");
    nb::list devs;
    for (const auto& dev : i.devices) devs.append(dev.describe());
    d["devices"] = devs;
    d["nvrtc"] = library_dict(i.nvrtc);
    d["nvjitlink"] = library_dict(i.nvjitlink);
    return d;
}

nb::dict stats_dict(const jit::CacheStats& s) {
    nb::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["compiles"] = s.compiles;
    d["compile_ms"] = s.compile_ms;
    d["disk_hits"] = s.disk_hits;
    d["entries"] = s.entries;
    return d;
}

// ------------------------------------------------------------------------------- check

// jit::check for Python: `specs` maps each name to ("array", dtype, shape) or ("scalar",
// dtype). Returns {"parameters", "assigned": [(name, dtype, shape)], "result": (name, dtype,
// shape) or None, "reduces", "scans", "rows"}. Nothing is compiled or run (jitexpr.check, jitexpr.dask).
nb::dict check_program(const std::string& text, nb::dict specs) {
    jit::Specs s;
    for (auto [k, v] : specs) {
        const std::string name = nb::cast<std::string>(k);
        nb::tuple t = nb::cast<nb::tuple>(v);
        const std::string kind = nb::cast<std::string>(t[0]);
        const std::string dt = nb::cast<std::string>(t[1]);
        const std::optional<jit::DType> d = jit::dtype_from_name(dt);
        if (!d) throw jit::ArgumentError("'" + name + "': '" + dt + "' is not a jitexpr dtype");
        if (kind == "scalar") {
            s.emplace(name, jit::ValueSpec::host_scalar(*d));
        } else {
            jit::Shape shape;
            for (auto e : nb::cast<nb::tuple>(t[2])) shape.push_back(nb::cast<std::int64_t>(e));
            if (shape.size() > static_cast<std::size_t>(jit::kMaxDims))
                throw jit::ArgumentError("'" + name + "' has " + std::to_string(shape.size()) +
                                         " dimensions; jitexpr arrays have at most 8");
            s.emplace(name, jit::ValueSpec::array(*d, std::move(shape)));
        }
    }
    jit::CheckedProgram p;
    {
        nb::gil_scoped_release release;
        p = jit::check(text, s);
    }
    auto value = [](const jit::CheckedValue& v) {
        nb::list shape;
        for (auto e : v.shape) shape.append(e);
        // A boolean-mask selection's length is the data's: NaN, as dask writes an unknown extent.
        if (v.length_from_data && !v.shape.empty()) shape[0] = nb::float_(std::numeric_limits<double>::quiet_NaN());
        return nb::make_tuple(nb::str(v.name.c_str()), nb::str(std::string(jit::dtype_name(v.dtype)).c_str()),
                              nb::tuple(shape));
    };
    nb::dict d;
    nb::list params, assigned;
    for (const auto& n : p.parameters) params.append(nb::str(n.c_str()));
    for (const auto& v : p.assigned) assigned.append(value(v));
    d["parameters"] = params;
    d["assigned"] = assigned;
    d["result"] = p.result ? nb::object(value(*p.result)) : nb::none();
    d["reduces"] = p.reduces;
    d["scans"] = p.scans;
    // How it splits into row blocks (jit::CheckedRows): {"splits", "why_not", "inputs": [(name,
    // "rows" | "whole", row bytes)], "outputs": [(name, "rows" | "combine" | "refused", the
    // reduction or why)]}.
    static constexpr const char* kHow[] = {"rows", "whole", "combine", "refused"};
    nb::list rin, rout;
    for (const auto& i : p.rows.inputs) rin.append(nb::make_tuple(i.name, kHow[static_cast<int>(i.how)], i.row_bytes));
    for (const auto& o : p.rows.outputs)
        rout.append(nb::make_tuple(o.name, kHow[static_cast<int>(o.how)],
                                   o.how == jit::CheckedRows::How::Refused ? o.why : o.reduction));
    nb::dict rows;
    rows["splits"] = p.rows.splits;
    rows["why_not"] = p.rows.why_not;
    rows["inputs"] = rin;
    rows["outputs"] = rout;
    d["rows"] = rows;
    return d;
}

// jit::outline for Python: statements and reduction calls with their byte spans.
nb::dict outline_program(const std::string& text) {
    jit::Outline o = jit::outline(text);
    auto span = [](jit::SourceSpan s) { return nb::make_tuple(s.begin, s.end); };
    nb::list statements, reductions;
    for (const auto& st : o.statements) {
        nb::list more;  // `m, e = frexp(x)`: the targets after the first
        for (const auto& t : st.more_targets) more.append(nb::str(t.c_str()));
        statements.append(
            nb::make_tuple(nb::str(st.target.c_str()), span(st.span), span(st.target_span), span(st.value_span), more));
    }
    for (const auto& r : o.reductions) {
        nb::list kw;
        for (const auto& [k, sp] : r.keywords) kw.append(nb::make_tuple(nb::str(k.c_str()), span(sp)));
        reductions.append(nb::make_tuple(nb::str(r.function.c_str()), r.statement, span(r.span), span(r.operand), kw));
    }
    nb::list subscripts;  // (statement, span, base span, index span,
                          //  [(kind, span, value, start, stop, step, constant)])
    for (const auto& sub : o.subscripts) {
        static constexpr const char* kKinds[] = {"integer", "slice", "ellipsis", "newaxis", "array"};
        auto part = [](const std::optional<std::int64_t>& v) { return v ? nb::object(nb::int_(*v)) : nb::none(); };
        nb::list items;
        for (const auto& it : sub.items) {
            const bool integer = it.kind == jit::OutlineIndexItem::Kind::Integer;
            items.append(nb::make_tuple(nb::str(kKinds[static_cast<int>(it.kind)]), span(it.span),
                                        integer ? nb::object(nb::int_(it.value)) : nb::none(), part(it.start),
                                        part(it.stop), part(it.step), it.constant));
        }
        subscripts.append(nb::make_tuple(sub.statement, span(sub.span), span(sub.base), span(sub.index), items));
    }
    nb::dict d;
    d["statements"] = statements;
    d["reductions"] = reductions;
    d["subscripts"] = subscripts;
    return d;
}

// Raises the jitexpr error of `kind` ("value", "shape", "type", "index") for a cause that Python
// found in the text (jitexpr.dask: what it cannot put in a graph), with the caret as the
// library's own errors have it. Byte offsets.
void raise_source_error(const std::string& kind, const std::string& message, const std::string& text, std::size_t begin,
                        std::size_t end) {
    const jit::SourceSpan span{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
    if (kind == "shape") throw jit::ShapeError(message, text, span);
    if (kind == "type") throw jit::TypeError(message, text, span);
    if (kind == "index") throw jit::IndexError(message, text, span);
    throw jit::ValueError(message, text, span);
}

}  // namespace jitexpr_py

// ------------------------------------------------------------------------------- the module

NB_MODULE(_jitexpr, m) {
    using namespace jitexpr_py;
    if (_import_array() < 0) throw nb::python_error();
    nb::register_exception_translator(&translate);

    m.doc() = "jitexpr's extension module (use the jitexpr package, not this module)";
    m.attr("__version__") = JITEXPR_VERSION;
    // Whether Ctrl-C stops a call in flight (built with jitexpr's cancel token).
    m.attr("HAVE_CANCEL") = JITEXPR_PY_HAVE_CANCEL != 0;
    // Whether the compiler that built this module had a shared libstdc++ to link (a toolchain
    // with only the static one leaves a private, hidden copy in the module).
#ifndef JITEXPR_PY_SHARED_LIBSTDCXX
#define JITEXPR_PY_SHARED_LIBSTDCXX 1
#endif
    m.attr("_BUILT_WITH_SHARED_LIBSTDCXX") = JITEXPR_PY_SHARED_LIBSTDCXX != 0;

    nb::class_<PyRuntime>(m, "Runtime")
        .def(
            "__init__",
            [](PyRuntime* self, const std::string& backend, int threads, nb::handle cache_dir, bool disk_cache,
               bool fast_math, bool tiered) {
                jit::RuntimeOptions o = options_for(parse_backend(backend), threads);
                if (!cache_dir.is_none()) o.cache_dir = nb::cast<std::string>(cache_dir);
                o.disk_cache = disk_cache;
                o.fast_math = fast_math;
                o.tiered_compile = tiered;
                nb::gil_scoped_release release;
                new (self) PyRuntime(o);
            },
            "backend"_a = "auto", "threads"_a = 0, "cache_dir"_a = nb::none(), "disk_cache"_a = true,
            "fast_math"_a = false, "tiered"_a = true)
        .def_prop_ro("backend", [](const PyRuntime& r) { return std::string(jit::backend_name(r.backend)); })
        .def_prop_ro("fallback_reason", [](const PyRuntime& r) { return r.fallback; })
        .def_prop_ro("setup_note", [](const PyRuntime& r) { return r.get()->setup_note(); })
        .def_prop_ro("closed", &PyRuntime::closed)
        .def_prop_ro("threads", [](const PyRuntime& r) { return r.get()->options().cpu_threads; })
        .def("close", &PyRuntime::close)
        .def("stats", [](const PyRuntime& r) { return stats_dict(r.get()->stats()); })
        .def("clear_cache", [](const PyRuntime& r) { r.get()->clear_memory_cache(); })
        .def("wait_for_compiles",
             [](const PyRuntime& r) {
                 auto rt = r.get();
                 nb::gil_scoped_release release;
                 rt->wait_for_compiles();
             })
        .def(
            "synchronize",
            [](const PyRuntime& r, nb::handle stream) {
                auto rt = r.get();
                const std::uintptr_t s = stream.is_none() ? 0 : nb::cast<std::uintptr_t>(stream);
                nb::gil_scoped_release release;
                rt->synchronize(reinterpret_cast<void*>(s));
            },
            "stream"_a = nb::none());

    nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr())
        .def("__dlpack__", &tensor_dlpack, "stream"_a = nb::none(), "max_version"_a = nb::none(),
             "dl_device"_a = nb::none(), "copy"_a = nb::none())
        .def("__dlpack_device__", &dlpack_device)
        .def_prop_ro("__cuda_array_interface__", &tensor_cai)
        .def("__arrow_c_array__", &tensor_arrow_array, "requested_schema"_a = nb::none())
        .def("__arrow_c_stream__", &tensor_arrow_stream, "requested_schema"_a = nb::none())
        .def("numpy", &tensor_numpy)
        .def("to", &tensor_to, "device"_a)
        .def_prop_ro("shape",
                     [](const Tensor& t) {
                         nb::list l;
                         for (auto e : t.array.shape()) l.append(e);
                         return nb::tuple(l);
                     })
        .def_prop_ro("dtype", [](const Tensor& t) { return std::string(jit::dtype_name(t.array.dtype())); })
        .def_prop_ro("device", [](const Tensor& t) { return std::string(jit::backend_name(t.array.backend())); })
        .def_prop_ro("stream", [](const Tensor& t) { return t.stream; })
        .def_prop_ro("null_count",
                     [](const Tensor& t) -> nb::object {
                         if (!t.validity) return nb::int_(0);
                         if (t.null_count >= 0) return nb::int_(t.null_count);
                         const jit::Array h = t.validity->contiguous();
                         const auto* v = static_cast<const std::uint8_t*>(h.data());
                         std::int64_t n = 0;
                         for (std::int64_t i = 0; i < h.size(); ++i) n += v[i] ? 0 : 1;
                         return nb::int_(n);
                     })
        .def("validity",
             [](const Tensor& t) -> nb::object {
                 if (!t.validity) return nb::none();
                 return numpy_of(*t.validity);
             })
        .def("__repr__", [](const Tensor& t) { return "jitexpr.Tensor(" + t.array.describe() + ")"; });

    m.def("evaluate", &evaluate, "text"_a, "names"_a, "out"_a = nb::none(), "backend"_a = nb::none(),
          "stream"_a = nb::none(), "runtime"_a = nb::none(), "as_tensor"_a = false, "device"_a = nb::none());
    m.def("evaluate_named", &evaluate_named, "text"_a, "local_dict"_a.none(), "out"_a.none(), "backend"_a.none(),
          "stream"_a.none(), "device"_a.none(), "depth"_a, "names"_a, "signature"_a.none() = nb::none());
    {
        // jitexpr.evaluate: a plain CPython function (see py_evaluate), named as the package's.
        nb::object module_name = nb::str("jitexpr");
        PyObject* f = PyCFunction_NewEx(&g_evaluate_def, nullptr, module_name.ptr());
        if (!f) throw nb::python_error();
        m.attr("evaluate_fast") = nb::steal(f);
    }
    {
        // jitexpr.numexpr.evaluate: as jitexpr.evaluate (see py_numexpr_evaluate).
        nb::object module_name = nb::str("jitexpr.numexpr");
        PyObject* f = PyCFunction_NewEx(&g_numexpr_evaluate_def, nullptr, module_name.ptr());
        if (!f) throw nb::python_error();
        m.attr("numexpr_evaluate") = nb::steal(f);
    }
    m.def(
        "numexpr_check",
        [](nb::handle ex, nb::dict kwargs) {  // ex: any object (a non-str is numexpr's ValueError)
            if (!PyUnicode_Check(ex.ptr())) {
                PyErr_SetString(PyExc_ValueError, "must specify expression as a string");
                throw nb::python_error();
            }
            std::vector<PyObject*> names, values;
            for (auto [k, v] : kwargs) names.push_back(k.ptr()), values.push_back(v.ptr());
            if (!names.empty())
                numexpr_check_context(names.data(), values.data(), static_cast<Py_ssize_t>(names.size()));
            (void)numexpr_check_text(ex.ptr());
        },
        "ex"_a.none(), "kwargs"_a);
    m.def("numexpr_bind", &numexpr_bind, "ex"_a.none(), "local_dict"_a.none(), "global_dict"_a.none(), "depth"_a);
    m.def("numexpr_last", &numexpr_last);
    m.def(
        "numexpr_keep_last",
        [](nb::handle ex, nb::handle out, nb::handle order, nb::handle casting) {
            numexpr_keep_last(ex, numexpr_out_ref(out), order, casting);
        },
        "ex"_a.none(), "out"_a.none(), "order"_a.none(), "casting"_a.none());
    // Kernel.__call__ (a method descriptor of the Kernel class, which must be a type).
    m.def("kernel_call_method", [](nb::handle cls) {
        if (!PyType_Check(cls.ptr())) type_error("kernel_call_method takes a class");
        PyObject* d = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &g_kernel_call_def);
        if (!d) throw nb::python_error();
        return nb::steal(d);
    });
    m.def("set_to_library", [](nb::handle f) {
        Py_XINCREF(f.ptr());
        g_to_library = f.ptr();  // kept for the life of the process
    });
    m.def("set_names_of", [](nb::handle f) {
        Py_XINCREF(f.ptr());
        g_names_of = f.ptr();  // kept for the life of the process
    });
    m.def("run", &run_program, "text"_a, "names"_a, "backend"_a = nb::none(), "stream"_a = nb::none(),
          "runtime"_a = nb::none(), "device"_a = nb::none(), "strict_in_place"_a = false);
    m.def("explain", &explain_program, "text"_a, "names"_a, "backend"_a = nb::none(), "device"_a = nb::none(),
          "bandwidth"_a = 0.0);
    m.def("parameters", [](const std::string& text) { return jit::parameters(text); });
    // The disk cache's own entry checksum, for jitexpr.dask.bundle (docs/cache.md).
    m.def("_cache_checksum", [](int algorithm, nb::bytes covered) {
        const std::string sum = jit::disk_cache_checksum(algorithm, std::string_view(covered.c_str(), covered.size()));
        return nb::bytes(sum.data(), sum.size());
    });
    m.def("_cache_default_checksum", &jit::disk_cache_default_checksum);
    m.def("targets", [](const std::string& text) { return jit::targets(text); });
    // The language's functions, from the op table: (kind, names, arity, doc) per entry.
    m.def("functions", [] {
        nb::list out;
        for (const jit::FunctionInfo& f : jit::functions()) {
            const char* kind = f.kind == jit::FunctionInfo::Kind::Operator   ? "operator"
                               : f.kind == jit::FunctionInfo::Kind::Function ? "function"
                               : f.kind == jit::FunctionInfo::Kind::Result   ? "result"
                               : f.kind == jit::FunctionInfo::Kind::Scan     ? "scan"
                                                                             : "reduction";
            nb::list names;
            for (const auto& n : f.names) names.append(nb::str(n.c_str()));
            out.append(nb::make_tuple(nb::str(kind), names, f.arity, nb::str(f.doc.c_str())));
        }
        return out;
    });
    m.def("check", &check_program, "text"_a, "specs"_a);
    m.def("outline", &outline_program, "text"_a);
    m.def("_source_error", &raise_source_error, "kind"_a, "message"_a, "text"_a, "begin"_a, "end"_a);
    m.def("cuda_info", &cuda_info, "load_compilers"_a = false);
    m.def("default_runtime", [](const std::string& backend) { return default_runtime(parse_backend(backend)); });
    m.def("set_cpu_threads", [](int n) {
        std::shared_ptr<PyRuntime> old;
        {
            std::lock_guard lock(g_defaults_mutex);
            g_cpu_threads = n;
            old = std::move(g_cpu);  // the next call makes the new one; calls in flight keep theirs
        }
    });
    m.def("cpu_threads", [] {
        std::lock_guard lock(g_defaults_mutex);
        return g_cpu_threads;
    });
    m.def("live_results", [] { return g_live_results.load(); });
    m.def("set_error_types", [](nb::dict d) {
        auto take = [&](const char* k, PyObject*& slot) {
            if (d.contains(k)) {
                slot = d[k].ptr();
                Py_INCREF(slot);  // kept for the life of the process
            }
        };
        take("Error", g_errors.base);
        take("ParseError", g_errors.parse);
        take("NameError", g_errors.name);
        take("TypeError", g_errors.type);
        take("ShapeError", g_errors.shape);
        take("ValueError", g_errors.value);
        take("IndexError", g_errors.index);
        take("ReadOnlyError", g_errors.read_only);
        take("OutOfMemoryError", g_errors.out_of_memory);
        take("ArgumentError", g_errors.argument);
        take("IOError", g_errors.io);
        take("CompileError", g_errors.compile);
        take("CudaError", g_errors.cuda);
        take("NoDeviceError", g_errors.no_device);
        take("DeviceMismatchError", g_errors.device_mismatch);
        take("InternalError", g_errors.internal);
        take("CancelledError", g_errors.cancelled);
        take("OverflowError", g_errors.overflow);
        take("NotImplementedError", g_errors.not_implemented);
        take("ZeroDivisionError", g_errors.zero_division);
    });
}

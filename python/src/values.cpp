// jitexpr._jitexpr: dtypes between NumPy and jitexpr, host results as NumPy arrays owning jitexpr's
// memory, and the runtimes jitexpr.evaluate uses.
#include "py.hpp"

namespace jitexpr_py {

// ------------------------------------------------------------------------------- dtypes

namespace {

std::optional<jit::TimeUnit> time_unit_of(int base) {
    switch (base) {
        case NPY_FR_Y: return jit::TimeUnit::Y;
        case NPY_FR_M: return jit::TimeUnit::M;
        case NPY_FR_W: return jit::TimeUnit::W;
        case NPY_FR_D: return jit::TimeUnit::D;
        case NPY_FR_h: return jit::TimeUnit::h;
        case NPY_FR_m: return jit::TimeUnit::m;
        case NPY_FR_s: return jit::TimeUnit::s;
        case NPY_FR_ms: return jit::TimeUnit::ms;
        case NPY_FR_us: return jit::TimeUnit::us;
        case NPY_FR_ns: return jit::TimeUnit::ns;
        case NPY_FR_ps: return jit::TimeUnit::ps;
        case NPY_FR_fs: return jit::TimeUnit::fs;
        case NPY_FR_as: return jit::TimeUnit::as;
        case NPY_FR_GENERIC: return jit::TimeUnit::Generic;  // refused, with the reason, when checked
        default: return std::nullopt;
    }
}

}  // namespace

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
        case 'M':  // datetime64 and timedelta64: the unit from the dtype's metadata
        case 'm': {
            const auto* md = reinterpret_cast<const PyArray_DatetimeDTypeMetaData*>(PyDataType_C_METADATA(d));
            if (size != 8 || !md || md->meta.num != 1) break;  // not a multiple of a unit (M8[5s])
            const auto u = time_unit_of(md->meta.base);
            if (!u) break;
            return kind == 'M' ? jit::datetime_of(*u) : jit::timedelta_of(*u);
        }
        case 'S': return jit::DType::Bytes;  // NumPy's fixed-width bytes: the width is the array's
        case 'U': return jit::DType::Str;    // UCS-4 code points
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
        case jit::DType::BFloat16:
            return -1;                                                                     // NumPy has none
            JIT_TEMPORAL_CASES return jit::is_datetime(t) ? NPY_DATETIME : NPY_TIMEDELTA;  // the unit: descr_of
        case jit::DType::Bytes:
        case jit::DType::Str:
        case jit::DType::Utf8: return -1;  // (no result is strings)
    }
    return -1;
}

PyArray_Descr* descr_of(jit::DType t) {
    if (!jit::is_temporal(t)) return PyArray_DescrFromType(npy_type_of(t));
    // NumPy's datetime64[unit] and timedelta64[unit]: made from the name once each, kept.
    static std::mutex mutex;
    static PyArray_Descr* made[2][jit::kNumTimeUnits] = {};
    std::lock_guard<std::mutex> lock(mutex);
    PyArray_Descr*& d = made[jit::is_timedelta(t) ? 1 : 0][static_cast<int>(jit::time_unit(t))];
    if (!d) {
        nb::object name = nb::str(std::string(jit::dtype_name(t)).c_str());
        if (!PyArray_DescrConverter(name.ptr(), &d)) throw nb::python_error();
    }
    Py_INCREF(d);
    return d;
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
    PyArray_Descr* descr = descr_of(r.dtype());  // a new reference, stolen below
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

nb::tuple dlpack_device(const Tensor& t) {
    const bool cuda = t.array.backend() == jit::Backend::Cuda;
    return nb::make_tuple(cuda ? 2 : 1, t.array.device());  // (kDLCUDA | kDLCPU, ordinal)
}

// ------------------------------------------------------------------------------- runtimes

jit::RuntimeOptions options_for(jit::Backend backend, int threads, int device) {
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
std::shared_ptr<PyRuntime> default_runtime(jit::Backend b, int device) {
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

}  // namespace jitexpr_py

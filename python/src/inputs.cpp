// jitexpr._jitexpr: Python values into jit::Arg without copies: NumPy arrays, DLPack, the CUDA
// array interface, CuPy and PyTorch read directly, Arrow; and CUDA results back into CuPy and
// PyTorch.
#include "py.hpp"

namespace jitexpr_py {

// ------------------------------------------------------------------------------- inputs

// Interned attribute and key names, made once (a lookup with a C string makes a str each time).
PyObject* interned(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);
    if (!o) throw nb::python_error();
    return o;  // kept for the life of the process
}
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

// The attribute `name` is a descriptor of obj's class (a property, a method) that the generic
// attribute lookup finds: found without calling it. False means "ask has_attr".
bool declares_attr(PyObject* obj, PyObject* name) {
    PyTypeObject* t = Py_TYPE(obj);
    return t->tp_getattro == PyObject_GenericGetAttr && _PyType_Lookup(t, name) != nullptr;
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
    // A cupy.ndarray (the exact type) is never read-only: bound as an input is, without asking
    // its class for the protocols.
    if (const CupyApi* api = cupy_api(); api && api->ndarray && reinterpret_cast<PyObject*>(Py_TYPE(o)) == api->ndarray)
        return;
    const Names& k = names();
    if (!PyArray_IsScalar(o, Generic) && !PyBool_Check(o) && !PyLong_Check(o) && !PyFloat_Check(o) &&
        !PyComplex_Check(o)) {
        // A class that declares the interface (CuPy's and PyTorch's are properties that build a
        // dict per access: asked for once, when out is bound).
        if (declares_attr(o, k.cai) || has_attr(o, k.cai) || (has_attr(o, k.dlpack) && has_attr(o, k.dlpack_device)) ||
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
// The layouts of the last NumPy arrays viewed (the GIL guards them). An array of a layout seen
// before is viewed by re-pointing it (Array::with_data): of the four allocations of a view of its
// own (shape, strides, their shared block, the storage) only the storage's is left.
struct NumpyLayout {
    jit::DType dtype = jit::DType::Float32;
    npy_intp item = 0;
    int nd = -1;  // -1: empty
    npy_intp dims[jit::kMaxDims] = {};
    npy_intp strides[jit::kMaxDims] = {};  // in bytes, as NumPy's
    jit::Array layout;                     // a view of this layout over no memory
};
constexpr std::size_t kNumpyLayouts = 8;
NumpyLayout g_numpy_layouts[kNumpyLayouts];
std::size_t g_numpy_layouts_next = 0;

const NumpyLayout* numpy_layout_find(PyArrayObject* a, jit::DType dt, npy_intp item, int nd) {
    const npy_intp* dims = PyArray_DIMS(a);
    const npy_intp* strides = PyArray_STRIDES(a);
    for (const NumpyLayout& l : g_numpy_layouts) {
        if (l.nd != nd || l.dtype != dt || l.item != item) continue;
        bool same = true;
        for (int k = 0; k < nd && same; ++k) same = l.dims[k] == dims[k] && l.strides[k] == strides[k];
        if (same) return &l;
    }
    return nullptr;
}

void numpy_layout_keep(PyArrayObject* a, jit::DType dt, npy_intp item, int nd, const jit::Array& view) {
    NumpyLayout& l = g_numpy_layouts[g_numpy_layouts_next++ % kNumpyLayouts];
    l.dtype = dt;
    l.item = item;
    l.nd = nd;
    for (int k = 0; k < nd; ++k) {
        l.dims[k] = PyArray_DIM(a, k);
        l.strides[k] = PyArray_STRIDE(a, k);
    }
    l.layout = view.with_data(nullptr);
}

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
    // The width of an S or U array is its own (NumPy's S5: 5 bytes); S0 and U0 hold nothing.
    const npy_intp item =
        jit::is_string(*dt) ? static_cast<npy_intp>(PyDataType_ELSIZE(d)) : static_cast<npy_intp>(jit::itemsize(*dt));
    if (item == 0)
        type_error(fmt_name(name) + " has NumPy dtype " + descr_name(d) +
                   ", of itemsize 0: it holds no string (jitexpr takes S and U arrays of width 1 and more)");
    if (const NumpyLayout* l = numpy_layout_find(a, *dt, item, nd)) return l->layout.with_data(PyArray_DATA(a));
    jit::Shape shape(static_cast<std::size_t>(nd));  // only for a layout not seen: two allocations
    jit::Strides strides(static_cast<std::size_t>(nd));
    for (int k = 0; k < nd; ++k) {
        shape[static_cast<std::size_t>(k)] = PyArray_DIM(a, k);
        const npy_intp st = PyArray_STRIDE(a, k);
        if (st % item != 0)
            type_error(fmt_name(name) + " has a stride that is not a whole number of elements; pass a copy");
        strides[static_cast<std::size_t>(k)] = st / item;
    }
    jit::Array v = jit::is_string(*dt) ? jit::Array::view(PyArray_DATA(a), *dt, static_cast<std::size_t>(item),
                                                          std::move(shape), std::move(strides), jit::Backend::Cpu)
                                       : jit::Array::view(PyArray_DATA(a), *dt, std::move(shape), std::move(strides),
                                                          jit::Backend::Cpu);
    numpy_layout_keep(a, *dt, item, nd, v);
    return v;
}

// --- DLPack in

// sys.modules[name] (borrowed), or null when it is not imported.
PyObject* imported_module(const char* name) {
    PyObject* m = PyDict_GetItemString(PyImport_GetModuleDict(), name);  // borrowed, no error set
    return m;
}

PyObject* attr_or_null(PyObject* o, const char* name) {
    if (!o) return nullptr;
    PyObject* r = PyObject_GetAttrString(o, name);
    if (!r) PyErr_Clear();
    return r;
}

// Null until CuPy is imported (by the caller: jitexpr never imports it for a lookup).
const CupyApi* cupy_api() {
    static CupyApi api;
    static bool made = false;
    if (made) return &api;
    PyObject* cupy = imported_module("cupy");
    if (!cupy) return nullptr;
    made = true;  // kept for the life of the process, as the module is
    api.ndarray = attr_or_null(cupy, "ndarray");
    if (api.ndarray && !PyType_Check(api.ndarray)) Py_CLEAR(api.ndarray);
    PyObject* cuda = attr_or_null(cupy, "cuda");
    api.get_current_stream = attr_or_null(cuda, "get_current_stream");
    api.unowned_memory = attr_or_null(cuda, "UnownedMemory");
    api.memory_pointer = attr_or_null(cuda, "MemoryPointer");
    api.from_dlpack = attr_or_null(cupy, "from_dlpack");
    Py_XDECREF(cuda);
    if (PyObject* capi = attr_or_null(imported_module("cupy_backends.cuda.stream"), "__pyx_capi__")) {
        static const char* const kSignature = "intptr_t (void)";
        PyObject* f = PyDict_Check(capi) ? PyDict_GetItemString(capi, "get_current_stream_ptr") : nullptr;  // borrowed
        if (f && PyCapsule_IsValid(f, kSignature))
            api.current_stream_ptr = reinterpret_cast<std::intptr_t (*)()>(PyCapsule_GetPointer(f, kSignature));
        Py_DECREF(capi);
    }
    return &api;
}

const TorchApi* torch_api() {
    static TorchApi api;
    static bool made = false;
    if (made) return &api;
    PyObject* torch = imported_module("torch");
    if (!torch) return nullptr;
    made = true;  // kept for the life of the process, as the module is
    api.tensor = attr_or_null(torch, "Tensor");
    api.strided = attr_or_null(torch, "strided");
    PyObject* c = attr_or_null(torch, "_C");
    api.raw_stream = attr_or_null(c, "_cuda_getCurrentRawStream");
    api.get_device = attr_or_null(c, "_cuda_getDevice");
    Py_XDECREF(c);
    static const std::pair<const char*, jit::DType> kDTypes[] = {
        {"float32", jit::DType::Float32},     {"float16", jit::DType::Float16},      {"float64", jit::DType::Float64},
        {"int32", jit::DType::Int32},         {"int64", jit::DType::Int64},          {"bool", jit::DType::Bool},
        {"int8", jit::DType::Int8},           {"int16", jit::DType::Int16},          {"uint8", jit::DType::UInt8},
        {"complex64", jit::DType::Complex64}, {"complex128", jit::DType::Complex128}};
    for (const auto& [n, d] : kDTypes)
        if (PyObject* o = attr_or_null(torch, n)) api.dtypes.emplace_back(o, d);
    return &api;
}

// The stream a CUDA input of `library` is being produced on: the library's current stream
// (CuPy, PyTorch); 0 (the legacy default stream) when the library has no such notion.
std::uintptr_t current_stream_of(const std::string& library) {
    try {
        if (library == "cupy") {
            static PyObject* ptr_name = interned("ptr");
            const CupyApi* api = cupy_api();
            if (api && api->current_stream_ptr) {
                // A Cython C function that may fail (CuPy's first call on a thread asks the
                // runtime for the devices): its error is Python's; the Python-level way below then
                // meets the same error.
                const std::intptr_t p = api->current_stream_ptr();
                if (!PyErr_Occurred()) return static_cast<std::uintptr_t>(p);
                PyErr_Clear();
            }
            if (api && api->get_current_stream) {
                PyObject* st = PyObject_CallNoArgs(api->get_current_stream);
                if (!st) throw nb::python_error();
                return nb::cast<std::uintptr_t>(nb::steal(st).attr(ptr_name));
            }
        } else if (library == "torch") {
            if (PyObject* torch = imported_module("torch")) {
                // torch.cuda.current_stream().cuda_stream without building a Stream object: the
                // raw stream of the current device (what torch's own kernels use, Inductor's call).
                const TorchApi* api = torch_api();
                if (api && api->raw_stream && api->get_device) {
                    nb::object dev = nb::steal(PyObject_CallNoArgs(api->get_device));
                    if (!dev.is_valid()) throw nb::python_error();
                    nb::object st = nb::steal(PyObject_CallOneArg(api->raw_stream, dev.ptr()));
                    if (!st.is_valid()) throw nb::python_error();
                    return nb::cast<std::uintptr_t>(st);
                }
                nb::handle t(torch);
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
    const TorchApi* api = torch_api();
    if (!api || !api->tensor || reinterpret_cast<PyObject*>(Py_TYPE(o)) != api->tensor) return false;
    static PyObject* is_cuda = interned("is_cuda");
    static PyObject* requires_grad = interned("requires_grad");
    static PyObject* layout = interned("layout");
    static PyObject* dtype_name = interned("dtype");
    try {
        nb::handle x(o);
        if (x.attr(is_cuda).ptr() != Py_True || x.attr(requires_grad).ptr() != Py_False) return false;
        if (!api->strided || !x.attr(layout).is(nb::handle(api->strided))) return false;
        nb::object dt = x.attr(dtype_name);
        std::optional<jit::DType> d;
        for (const auto& [obj, v] : api->dtypes)
            if (obj == dt.ptr()) {
                d = v;
                break;
            }
        if (!d) return false;
        static PyObject* is_contiguous = interned("is_contiguous");
        static PyObject* stride = interned("stride");
        static PyObject* data_ptr = interned("data_ptr");
        static PyObject* get_device = interned("get_device");
        auto call = [o](PyObject* method) {
            nb::object r = nb::steal(PyObject_CallMethodNoArgs(o, method));
            if (!r.is_valid()) throw nb::python_error();
            return r;
        };
        nb::object shape_o = x.attr(names().shape);
        if (!PyTuple_Check(shape_o.ptr())) return false;  // torch.Size is a tuple
        const Py_ssize_t nd = PyTuple_GET_SIZE(shape_o.ptr());
        if (nd > jit::kMaxDims) return false;  // the interface's error
        jit::Shape shape(static_cast<std::size_t>(nd));
        bool empty = false;
        for (Py_ssize_t i = 0; i < nd; ++i) {
            shape[static_cast<std::size_t>(i)] = nb::cast<std::int64_t>(nb::handle(PyTuple_GET_ITEM(shape_o.ptr(), i)));
            empty = empty || shape[static_cast<std::size_t>(i)] == 0;
        }
        jit::Strides strides;
        if (call(is_contiguous).ptr() == Py_True) {
            strides = jit::contiguous_strides(shape);
        } else {
            for (auto e : nb::cast<nb::tuple>(call(stride))) strides.push_back(nb::cast<std::int64_t>(e));
        }
        const std::uintptr_t ptr = empty ? 0 : nb::cast<std::uintptr_t>(call(data_ptr));
        const int device = nb::cast<int>(call(get_device));
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

// --- CuPy arrays, read directly

// A cupy.ndarray (the exact type: a subclass may answer its attributes differently) of a dtype
// jitexpr has, as the view its __cuda_array_interface__ describes: data.ptr, data.device_id,
// shape, strides (bytes) and dtype read from the array. CuPy's arrays are never read-only, and
// its interface's stream is CuPy's current stream, which the call asks CuPy for (prepare). False
// (nothing bound) for anything else, which then goes the interface's way, with its errors.
// What import_cupy read of a CuPy array, kept under a weak reference to the array (whose callback
// drops it when the array goes: nothing is held past it). A cupy.ndarray's memory (`data`),
// dtype and strides cannot be set (AttributeError); its shape can (a.shape = ...: a reshape in
// place, which sets its strides too), so an entry is taken only while the shape read now is the
// one kept, and, for an array that was not C-contiguous, its strides too. A C-contiguous array
// whose shape is set to its own shape keeps C-contiguous strides, so for one of those the shape
// is the whole check (one attribute read a call; CuPy's `_c_contiguous` was a second). The GIL
// guards the entries.
struct CupyCacheEntry {
    PyObject* ref = nullptr;  // a weak reference to the cupy.ndarray
    jit::DType dtype = jit::DType::Float32;
    jit::Shape shape;
    jit::Strides strides;
    bool c_contiguous = false;
    std::uintptr_t ptr = 0;
    int device = 0;
    jit::Array layout;  // a view of the array's layout over no memory, re-pointed each call
};
constexpr std::size_t kCupyCacheEntries = 16;
CupyCacheEntry g_cupy_cache[kCupyCacheEntries];
std::size_t g_cupy_cache_next = 0;

PyObject* cupy_cache_drop(PyObject*, PyObject* ref) {
    for (CupyCacheEntry& e : g_cupy_cache)
        if (e.ref == ref) {
            Py_CLEAR(e.ref);
            e.shape.clear();
            e.strides.clear();
            e.layout = jit::Array();
        }
    Py_RETURN_NONE;
}
PyMethodDef g_cupy_cache_drop_def = {"_cupy_cache_drop", &cupy_cache_drop, METH_O, nullptr};

// The shape tuple `shape_o` (of ints) equals `shape`.
bool same_shape(PyObject* shape_o, const jit::Shape& shape) {
    if (!PyTuple_Check(shape_o) || PyTuple_GET_SIZE(shape_o) != static_cast<Py_ssize_t>(shape.size())) return false;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        PyObject* e = PyTuple_GET_ITEM(shape_o, static_cast<Py_ssize_t>(i));
        if (!PyLong_Check(e)) return false;
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(e, &overflow);
        if (overflow != 0 || v != shape[i]) return false;
    }
    return true;
}

// The kept entry of `o` that still describes it, or null.
const CupyCacheEntry* cupy_cache_find(PyObject* o) {
    for (const CupyCacheEntry& e : g_cupy_cache) {
        if (!e.ref || PyWeakref_GetObject(e.ref) != o) continue;
        nb::object shape_o = nb::steal(PyObject_GetAttr(o, names().shape));
        if (!shape_o.is_valid()) {
            PyErr_Clear();
            return nullptr;
        }
        if (!same_shape(shape_o.ptr(), e.shape)) return nullptr;
        if (e.c_contiguous) return &e;
        nb::object strides_o = nb::steal(PyObject_GetAttr(o, names().strides));
        if (!strides_o.is_valid()) {
            PyErr_Clear();
            return nullptr;
        }
        const auto item = static_cast<std::int64_t>(jit::itemsize(e.dtype));
        jit::Shape bytes(e.strides.size());
        for (std::size_t i = 0; i < e.strides.size(); ++i) bytes[i] = e.strides[i] * item;
        return same_shape(strides_o.ptr(), bytes) ? &e : nullptr;
    }
    return nullptr;
}

void cupy_cache_keep(PyObject* o, const CupyCacheEntry& read) {
    static PyObject* drop = PyCFunction_New(&g_cupy_cache_drop_def, nullptr);  // kept for the process
    if (!drop) {
        PyErr_Clear();
        return;
    }
    for (CupyCacheEntry& e : g_cupy_cache)  // a stale entry of the same array is replaced
        if (e.ref && PyWeakref_GetObject(e.ref) == o) {
            PyObject* ref = e.ref;
            e = read;
            e.ref = ref;
            return;
        }
    PyObject* ref = PyWeakref_NewRef(o, drop);
    if (!ref) {
        PyErr_Clear();
        return;
    }
    CupyCacheEntry& e = g_cupy_cache[g_cupy_cache_next++ % kCupyCacheEntries];
    Py_XDECREF(e.ref);
    e = read;
    e.ref = ref;
}

// The view of `o` that an entry describes, holding `o` for the call's arrays.
jit::Array cupy_view(PyObject* o, const CupyCacheEntry& e) {
    Py_INCREF(o);
    std::shared_ptr<void> keep(o, [](void* p) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_DECREF(static_cast<PyObject*>(p));
        PyGILState_Release(g);
    });
    // A kept layout is re-pointed (no allocation for the dimensions); the first read makes one.
    if (e.layout.defined()) return e.layout.with_data(reinterpret_cast<void*>(e.ptr), std::move(keep));
    return jit::Array::view(reinterpret_cast<void*>(e.ptr), e.dtype, e.shape, e.strides, jit::Backend::Cuda, e.device,
                            std::move(keep));
}

bool import_cupy(PyObject* o, Bound& b, jit::Array& out) {
    const CupyApi* api = cupy_api();
    if (!api || !api->ndarray || reinterpret_cast<PyObject*>(Py_TYPE(o)) != api->ndarray) return false;
    static PyObject* dtype_name = interned("dtype");
    static PyObject* ptr_name = interned("ptr");
    static PyObject* device_id_name = interned("device_id");
    const Names& k = names();
    if (const CupyCacheEntry* e = cupy_cache_find(o)) {
        out = cupy_view(o, *e);
        b.read_only = false;
        b.stream = 0;
        return true;
    }
    try {
        nb::handle x(o);
        nb::object dt = x.attr(dtype_name);
        if (!PyArray_DescrCheck(dt.ptr())) return false;
        auto* descr = reinterpret_cast<PyArray_Descr*>(dt.ptr());
        if (descr->byteorder == '>') return false;
        const std::optional<jit::DType> d = dtype_of_descr(descr);
        if (!d || *d == jit::DType::BFloat16) return false;
        nb::object shape_o = x.attr(k.shape);
        nb::object strides_o = x.attr(k.strides);
        if (!PyTuple_Check(shape_o.ptr()) || !PyTuple_Check(strides_o.ptr())) return false;
        const Py_ssize_t nd = PyTuple_GET_SIZE(shape_o.ptr());
        if (nd > jit::kMaxDims || PyTuple_GET_SIZE(strides_o.ptr()) != nd) return false;
        const auto item = static_cast<std::int64_t>(jit::itemsize(*d));
        jit::Shape shape(static_cast<std::size_t>(nd));
        jit::Strides strides(static_cast<std::size_t>(nd));
        for (Py_ssize_t i = 0; i < nd; ++i) {
            shape[static_cast<std::size_t>(i)] = nb::cast<std::int64_t>(nb::handle(PyTuple_GET_ITEM(shape_o.ptr(), i)));
            const auto st = nb::cast<std::int64_t>(nb::handle(PyTuple_GET_ITEM(strides_o.ptr(), i)));
            if (st % item != 0) return false;  // the interface's way says what is wrong
            strides[static_cast<std::size_t>(i)] = st / item;
        }
        nb::object data = x.attr(k.data);
        CupyCacheEntry read;
        read.ptr = nb::cast<std::uintptr_t>(data.attr(ptr_name));
        read.device = nb::cast<int>(data.attr(device_id_name));
        read.dtype = *d;
        read.c_contiguous = strides == jit::contiguous_strides(shape);
        read.shape = std::move(shape);
        read.strides = std::move(strides);
        out = cupy_view(o, read);
        read.layout = out.with_data(nullptr);
        cupy_cache_keep(o, read);
        b.read_only = false;
        b.stream = 0;
        return true;
    } catch (const nb::python_error&) {
        return false;
    } catch (const nb::cast_error&) {
        return false;
    }
}

// A CUDA result as a cupy.ndarray over jitexpr's memory (held, and counted among the live
// results, as NumPy results are), for a result written on CuPy's current stream, where CuPy's
// next work on it is queued after ours: a DLPack capsule handed to cupy.from_dlpack, which takes
// a capsule as it is (no stream exchange), or else CuPy's memory, pointer and array objects made
// here. A null object where this way does not apply (negative strides, a dtype CuPy lacks,
// CuPy's classes not found): the caller goes through the Tensor's __dlpack__.
nb::object cupy_of(const jit::Array& r) {
    const CupyApi* api = cupy_api();
    if (!api || !api->ndarray) return {};
    const int type = npy_type_of(r.dtype());
    if (type < 0 || jit::is_temporal(r.dtype()) || r.backend() != jit::Backend::Cuda) return {};
    for (int i = 0; i < r.ndim(); ++i)
        if (r.strides()[static_cast<std::size_t>(i)] < 0) return {};
    if (api->from_dlpack) {
        // A DLPack capsule of the result, taken by CuPy's own import (a capsule has no stream
        // handshake: the result was written on CuPy's current stream). One call into CuPy, whose
        // Cython makes the memory, pointer and array objects, instead of three from here.
        // The tensor holds the result, counted among the live results as a NumPy result's capsule is.
        struct Held {
            DLManagedTensor m{};
            jit::Array array;
            std::int64_t shape[jit::kMaxDims] = {}, strides[jit::kMaxDims] = {};
        };
        auto* h = new Held;
        h->array = r;
        DLTensor& t = h->m.dl_tensor;
        t.data = r.data();
        t.device = {kDLCUDA, r.device()};
        t.ndim = r.ndim();
        t.dtype = jit::to_dlpack_dtype(r.dtype());
        for (int i = 0; i < r.ndim(); ++i) {
            h->shape[i] = r.shape()[static_cast<std::size_t>(i)];
            h->strides[i] = r.strides()[static_cast<std::size_t>(i)];
        }
        t.shape = h->shape;
        t.strides = h->strides;
        t.byte_offset = 0;
        h->m.manager_ctx = h;
        h->m.deleter = [](DLManagedTensor* m) {
            delete static_cast<Held*>(m->manager_ctx);
            g_live_results.fetch_sub(1, std::memory_order_relaxed);
        };
        g_live_results.fetch_add(1, std::memory_order_relaxed);
        PyObject* capsule = PyCapsule_New(&h->m, "dltensor", &dlpack_capsule_destructor);
        if (!capsule) {
            h->m.deleter(&h->m);
            throw nb::python_error();
        }
        nb::object held = nb::steal(capsule);
        nb::object arr = nb::steal(PyObject_CallOneArg(api->from_dlpack, capsule));
        if (arr.is_valid()) return arr;
        PyErr_Clear();  // a CuPy whose import lacks this dtype (bool before DLPack 0.8): the objects made here
    }
    if (!api->unowned_memory || !api->memory_pointer) return {};
    const auto item = static_cast<std::int64_t>(jit::itemsize(r.dtype()));
    std::int64_t span = 1;  // elements from the first to one past the last
    const int nd = r.ndim();
    nb::object shape = nb::steal(PyTuple_New(nd));
    nb::object strides = nb::steal(PyTuple_New(nd));
    if (!shape.is_valid() || !strides.is_valid()) throw nb::python_error();
    bool empty = false;
    for (int i = 0; i < nd; ++i) {
        const std::int64_t e = r.shape()[static_cast<std::size_t>(i)], st = r.strides()[static_cast<std::size_t>(i)];
        if (st < 0) return {};
        empty = empty || e == 0;
        if (e > 0) span += (e - 1) * st;
        PyObject* eo = PyLong_FromLongLong(e);
        PyObject* so = PyLong_FromLongLong(st * item);
        if (!eo || !so) {
            Py_XDECREF(eo);
            Py_XDECREF(so);
            throw nb::python_error();
        }
        PyTuple_SET_ITEM(shape.ptr(), i, eo);
        PyTuple_SET_ITEM(strides.ptr(), i, so);
    }
    const std::int64_t bytes = empty ? 0 : span * item;
    auto* held = new jit::Array(r);
    PyObject* capsule = PyCapsule_New(held, "jitexpr.array", &free_result_capsule);
    if (!capsule) {
        delete held;
        throw nb::python_error();
    }
    g_live_results.fetch_add(1, std::memory_order_relaxed);
    nb::object owner = nb::steal(capsule);
    nb::object mem = nb::steal(PyObject_CallFunction(
        api->unowned_memory, "KLOi", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(r.data())),
        static_cast<long long>(bytes), owner.ptr(), r.device()));
    if (!mem.is_valid()) throw nb::python_error();
    nb::object memptr = nb::steal(PyObject_CallFunction(api->memory_pointer, "Oi", mem.ptr(), 0));
    if (!memptr.is_valid()) throw nb::python_error();
    PyArray_Descr* descr = PyArray_DescrFromType(type);
    nb::object dtype = nb::steal(reinterpret_cast<PyObject*>(descr));
    PyObject* args[] = {shape.ptr(), dtype.ptr(), memptr.ptr(), strides.ptr()};
    nb::object arr = nb::steal(PyObject_Vectorcall(api->ndarray, args, 4, nullptr));
    if (!arr.is_valid()) throw nb::python_error();
    return arr;
}

// A CUDA result as a torch.Tensor through torch's DLPack import of a capsule of ours, for a
// result written on torch's current stream (what _to_library does, without its Python steps and
// the stream handshake that stream makes a no-op). A null object where torch lacks the import.
nb::object torch_of(const jit::Array& r) {
    static PyObject* from_dlpack = [] {
        PyObject* c = attr_or_null(imported_module("torch"), "_C");
        PyObject* f = attr_or_null(c, "_from_dlpack");
        Py_XDECREF(c);
        return f;  // kept for the life of the process (null: not found, the general way)
    }();
    if (!from_dlpack || r.backend() != jit::Backend::Cuda) return {};
    DLManagedTensor* m = jit::to_dlpack(r);
    PyObject* capsule = PyCapsule_New(m, "dltensor", &dlpack_capsule_destructor);
    if (!capsule) {
        m->deleter(m);
        throw nb::python_error();
    }
    nb::object held = nb::steal(capsule);
    nb::object t = nb::steal(PyObject_CallOneArg(from_dlpack, capsule));
    if (!t.is_valid()) throw nb::python_error();
    return t;
}

// --- Arrow PyCapsule interface in

// Chunks of a string column, joined: offsets rebased onto one data buffer (a copy).
jit::Array join_string_chunks(const std::vector<jit::ArrowColumn>& chunks) {
    std::size_t width = 4, bytes = 0;
    std::int64_t n = 0;
    for (const auto& c : chunks) {
        width = std::max(width, c.values.itemsize());
        bytes += c.values.to(jit::Backend::Cpu).chars_bytes();
        n += c.values.size();
    }
    if (width == 4 && bytes > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) width = 8;
    struct Buffers {
        std::vector<unsigned char> offsets;
        std::string chars;
    };
    auto b = std::make_shared<Buffers>();
    b->offsets.resize(static_cast<std::size_t>(n + 1) * width);
    b->chars.reserve(bytes);
    std::int64_t row = 0;
    auto put = [&](std::int64_t v) {
        if (width == 8) std::memcpy(b->offsets.data() + row * 8, &v, 8);
        else {
            const auto v32 = static_cast<std::int32_t>(v);
            std::memcpy(b->offsets.data() + row * 4, &v32, 4);
        }
    };
    for (const auto& c : chunks) {
        const jit::Array h = c.values.to(jit::Backend::Cpu);  // rows alone, offsets from 0
        const std::size_t w = h.itemsize();
        for (std::int64_t i = 0; i < h.size(); ++i, ++row) {
            std::int64_t o = 0;
            if (w == 8) std::memcpy(&o, static_cast<const char*>(h.data()) + i * 8, 8);
            else {
                std::int32_t o32;
                std::memcpy(&o32, static_cast<const char*>(h.data()) + i * 4, 4);
                o = o32;
            }
            put(static_cast<std::int64_t>(b->chars.size()) + o);
        }
        b->chars.append(static_cast<const char*>(h.chars()), h.chars_bytes());
    }
    put(static_cast<std::int64_t>(b->chars.size()));
    const void* offsets = b->offsets.data();
    const char* chars = b->chars.data();
    const std::size_t size = b->chars.size();
    return jit::Array::view_utf8(offsets, width, chars, size, n, jit::Backend::Cpu, 0, b);
}

// Chunks of one column, joined (a copy: Arrow chunks are separate buffers).
jit::ArrowColumn join_chunks(const std::vector<jit::ArrowColumn>& chunks, jit::DType dtype) {
    if (chunks.size() == 1) return chunks[0];
    if (dtype == jit::DType::Utf8) {
        jit::ArrowColumn out;
        out.values = join_string_chunks(chunks);
        bool nulls = false;
        for (const auto& c : chunks) nulls = nulls || c.validity.has_value();
        out.null_count = 0;
        if (nulls) {
            out.validity = jit::Array::empty(jit::DType::Bool, {out.values.size()}, jit::Backend::Cpu);
            std::int64_t at = 0;
            for (const auto& c : chunks) {
                auto* v = static_cast<std::uint8_t*>(out.validity->data()) + at;
                if (c.validity) c.validity->contiguous().copy_to_host(v);
                else std::memset(v, 1, static_cast<std::size_t>(c.values.size()));
                out.null_count += c.null_count > 0 ? c.null_count : 0;
                at += c.values.size();
            }
        }
        return out;
    }
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
        if (*dtype == jit::DType::Utf8) {
            static const std::int64_t kZero = 0;
            c.values = jit::Array::view_utf8(&kZero, 8, nullptr, 0, 0, jit::Backend::Cpu);
        } else {
            c.values = jit::Array::empty(*dtype, {0}, jit::Backend::Cpu);
        }
        return c;
    }
    return join_chunks(chunks, chunks[0].values.dtype());
}

// --- imported Arrow string columns, by the pyarrow object they came from

// Importing a string column checks its offsets and that its bytes are UTF-8: a pass over all of
// them. A pyarrow Array or ChunkedArray is immutable, so the column imported from one stays right
// while the object lives: the last few are kept, each under a weak reference to its object whose
// callback drops it when the object goes (nothing is held past the object). The GIL guards them.
struct ArrowCacheEntry {
    PyObject* ref = nullptr;  // a weak reference to the pyarrow object
    jit::ArrowColumn column;
};
constexpr std::size_t kArrowCacheEntries = 8;
ArrowCacheEntry g_arrow_cache[kArrowCacheEntries];
std::size_t g_arrow_cache_next = 0;

PyObject* arrow_cache_drop(PyObject*, PyObject* ref) {
    for (ArrowCacheEntry& e : g_arrow_cache)
        if (e.ref == ref) {
            e.column = {};
            Py_CLEAR(e.ref);
        }
    Py_RETURN_NONE;
}
PyMethodDef g_arrow_cache_drop_def = {"_arrow_cache_drop", &arrow_cache_drop, METH_O, nullptr};

bool arrow_cache_find(PyObject* o, jit::ArrowColumn& out) {
    for (const ArrowCacheEntry& e : g_arrow_cache)
        if (e.ref && PyWeakref_GetObject(e.ref) == o) {
            out = e.column;
            return true;
        }
    return false;
}

void arrow_cache_keep(PyObject* o, const jit::ArrowColumn& c) {
    static PyObject* drop = PyCFunction_New(&g_arrow_cache_drop_def, nullptr);  // kept for the process
    if (!drop) {
        PyErr_Clear();
        return;
    }
    PyObject* ref = PyWeakref_NewRef(o, drop);
    if (!ref) {  // an object without weak references: not kept
        PyErr_Clear();
        return;
    }
    ArrowCacheEntry& e = g_arrow_cache[g_arrow_cache_next++ % kArrowCacheEntries];
    Py_XDECREF(e.ref);
    e.ref = ref;
    e.column = c;
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
    if (jit::Array t; import_cupy(o, b, t)) {
        b.library = "cupy";
        b.arg = jit::Arg(std::move(t));
        b.place = Place::Device;
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
    // pandas objects are taken as NumPy takes them (their numbers as arrays), except a column of
    // pandas' string dtype, which NumPy would make an object array of: its Arrow data, with its
    // missing values as nulls.
    auto pandas_strings = [&] {
        nb::object dt = get_attr_or_null(o, interned("dtype"));
        return dt.is_valid() && std::string_view(Py_TYPE(dt.ptr())->tp_name) == "StringDtype";
    };
    const bool arrow =
        (lib != "pandas" || pandas_strings()) && (has_attr(o, k.arrow_array) || has_attr(o, k.arrow_stream));
    // A producer whose protocol answers are not of the types the protocol gives (a lying or
    // broken object) is a TypeError naming the value and the protocol, not a C++ cast error.
    auto protocol_error = [&](const char* what) {
        raise_as(g_errors.type, PyExc_TypeError, fmt_name(name) + ": " + what);
    };
    if (arrow) {
        jit::ArrowColumn c;
        try {
            // A pyarrow string column imported before is taken as imported then (its offsets and
            // UTF-8 checked once: pyarrow's arrays are immutable while they live).
            if (lib == "pyarrow" && arrow_cache_find(o, c)) {
            } else {
                c = import_arrow(obj, name);
                if (lib == "pyarrow" && c.values.dtype() == jit::DType::Utf8) arrow_cache_keep(o, c);
            }
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

}  // namespace jitexpr_py

// jitexpr._jitexpr — the Python extension: jitexpr's public C++ API (include/jit/) for Python.
//
// What it does and Python does not: turning Python values into jit::Arg without copying
// (NumPy arrays through NumPy's C API, DLPack capsules, __cuda_array_interface__, Arrow C data),
// evaluating with the GIL released, and handing results back as NumPy arrays that own jitexpr's
// memory through a capsule, or as Tensor objects that export DLPack, the CUDA array interface
// and the Arrow PyCapsule interface. Names are always bound by name (jit::Environment): the
// Python layer (python/jitexpr/) resolves them from frames, dicts and keywords.
#define JITEXPR_PY_MODULE_TU  // the file that imports NumPy's C API
#include "py.hpp"

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
        .def_prop_ro("backend",
                     [](const PyRuntime& r) {
                         nb::gil_scoped_release release;  // under auto, the first ask starts CUDA
                         return std::string(jit::backend_name(r.backend()));
                     })
        .def_prop_ro("fallback_reason",
                     [](const PyRuntime& r) {
                         nb::gil_scoped_release release;
                         return r.fallback();
                     })
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
    // jitexpr.Kernel's base: a kernel's call is a vectorcall (python/src/evaluate.cpp).
    m.attr("KernelBase") = nb::steal(make_kernel_base());
    m.def("call_by_vectorcall", [m](nb::handle cls) { call_by_vectorcall(cls.ptr(), m.attr("KernelBase").ptr()); });
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

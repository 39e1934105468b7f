// jitexpr._jitexpr: One evaluation: binding names (keywords, dicts, the caller's frame), choosing
// where it runs, running with the GIL released and stoppable, and jitexpr.evaluate /
// Kernel.__call__ as vectorcall functions.
#include "py.hpp"

#if PY_VERSION_HEX >= 0x030C0000
#define JX_T_PYSSIZET Py_T_PYSSIZET
#define JX_READONLY Py_READONLY
#else
#include <structmember.h>
#define JX_T_PYSSIZET T_PYSSIZET
#define JX_READONLY READONLY
#endif

namespace jitexpr_py {

// ------------------------------------------------------------------------------- evaluation

jit::Backend parse_backend(const std::string& s) {
    if (s == "cpu") return jit::Backend::Cpu;
    if (s == "cuda" || s == "gpu") return jit::Backend::Cuda;
    if (s == "auto") return jit::Backend::Auto;
    throw jit::ArgumentError("backend must be 'cpu', 'cuda' or 'auto', not '" + s + "'");
}

// rt->run with the cancel token when there is one; `strict`: CallOptions::strict_in_place.
jit::Array run_with(jit::Runtime& rt, std::string_view text, jit::Environment& env, void* stream, const Token* token,
                    bool strict) {
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

// Binds every name, chooses where to evaluate, and moves arrays where the caller asked for it.
// "cuda:1" for an array on CUDA device 1.
std::string device_text(const jit::Array& a) {
    return a.backend() == jit::Backend::Cuda ? "cuda:" + std::to_string(a.device()) : "cpu";
}

Items items_of(nb::dict names) {
    Items items;
    items.reserve(names.size());
    for (auto [k, v] : names) items.emplace_back(k, v);
    return items;
}

void prepare(Call& c, const Items& names, nb::handle backend_arg, nb::handle stream_arg, nb::handle runtime_arg,
             nb::handle device_arg) {
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
        c.backend = c.runtime->backend();
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
        else if (device && !device->library.empty() && device->stream == 0) {
            c.stream = current_stream_of(device->library);
            c.library_stream = device->library == c.library;
        } else if (device && device->stream > 2) c.stream = device->stream;
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
    // CuPy in, CuPy out; torch in, torch out: made here when the result was written on the
    // library's current stream (else _to_library's DLPack exchange waits for it where needed).
    if (c.library_stream && c.library == "cupy")
        if (nb::object o = cupy_of(r); o.is_valid()) return o;
    if (c.library_stream && c.library == "torch")
        if (nb::object o = torch_of(r); o.is_valid()) return o;
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
        const auto t0 = host ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
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
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(r, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(r, 1)) || !PyTuple_Check(PyTuple_GET_ITEM(r, 2)))
        throw jit::InternalError("jitexpr._api._names_of returned something other than three tuples");
    if (PyUnicode_CheckExact(text)) {  // (a str subclass may hash as it likes: not kept)
        // The names interned, as the keywords of a call site are: a keyword is then found by
        // its pointer (Keywords::get).
        nb::list groups;
        for (int g = 0; g < 3; ++g) {
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
        held = nb::make_tuple(groups[0], groups[1], groups[2]);
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
nb::object lookup(PyObject* mapping, PyObject* name, bool by_getitem) {
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
    // The names the text only assigns, from the keywords or local_dict alone (never the frame):
    // a bound array of the value's dtype and shape is written in place.
    PyObject* targets = PyTuple_GET_ITEM(entry.ptr(), 2);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(targets); ++i) {
        PyObject* n = PyTuple_GET_ITEM(targets, i);
        PyObject* v = have_names ? spec.keywords->get(n) : nullptr;
        if (!v && have_local) {
            if (nb::object got = lookup(spec.local_dict.ptr(), n, spec.numexpr); got.is_valid()) {
                v = got.ptr();
                keep.push_back(std::move(got));
            }
        }
        if (v) items.emplace_back(n, v);
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
        // "str" / "bytes": a string column of any width ('<U6', '|S4').
        if (g.size() > 1 && ((want == "str" && g[1] == 'U') || (want == "bytes" && g[1] == 'S'))) continue;
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

const OwnKeywords& own_keywords() {
    static const OwnKeywords* k = new OwnKeywords;  // never destroyed: used until the interpreter ends
    return *k;
}

bool same_name(PyObject* a, PyObject* b) {
    return a == b || (!PyUnicode_CHECK_INTERNED(a) && PyUnicode_Compare(a, b) == 0);
}

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

// ------------------------------------------------------------------------------- Kernel's base

// jitexpr.Kernel's base class: calling a kernel is a vectorcall into py_kernel_call. A Python
// class with a __call__ method is called through the interpreter's generic slot, which packs
// the keywords into a dict, looks the method up and unpacks the dict again (0.4 us a call on
// the development machine); this type's instances carry the vectorcall entry instead. Its
// __call__ is the method descriptor (METH_COEXIST: in place of the slot's wrapper), so
// Kernel.__call__ keeps its signature; call_by_vectorcall gives the class statement's Kernel
// the base's call back.
struct KernelBase {
    PyObject_HEAD vectorcallfunc vectorcall;
};

PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
    return py_kernel_call(self, args, static_cast<Py_ssize_t>(nargsf), kwnames);
}

PyObject* kernel_base_new(PyTypeObject* type, PyObject*, PyObject*) {
    PyObject* self = type->tp_alloc(type, 0);
    if (self) reinterpret_cast<KernelBase*>(self)->vectorcall = &kernel_vectorcall;
    return self;
}

// A heap type's instances hold a reference to their type: the base's dealloc gives it back
// (the interpreter's dealloc of a subclass leaves that to a heap base).
void kernel_base_dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    type->tp_free(self);
    Py_DECREF(type);
}

// A class statement's subclass of KernelBase (jitexpr.Kernel) is called through the
// interpreter's generic slot, since the __call__ it inherits is a method, not the slot's
// wrapper (and 3.10, 3.11 never pass the vectorcall flag on to it): this gives it the base's
// call back, the vectorcall, when its __call__ is still the base's.
void call_by_vectorcall(PyObject* cls, PyObject* base) {
    if (!PyType_Check(cls) ||
        !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), reinterpret_cast<PyTypeObject*>(base)))
        type_error("call_by_vectorcall takes a subclass of KernelBase");
    static PyObject* call_name = interned("__call__");
    nb::object mine = nb::steal(PyObject_GetAttr(cls, call_name));
    nb::object theirs = nb::steal(PyObject_GetAttr(base, call_name));
    if (!mine.is_valid() || !theirs.is_valid()) throw nb::python_error();
    if (!mine.is(theirs)) type_error("call_by_vectorcall: the class has a __call__ of its own");
    auto* type = reinterpret_cast<PyTypeObject*>(cls);
    type->tp_call = &PyVectorcall_Call;
    type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    PyType_Modified(type);
}

PyObject* make_kernel_base() {
    static PyMethodDef methods[] = {
        {"__call__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_kernel_call)),
         METH_FASTCALL | METH_KEYWORDS | METH_COEXIST, kKernelCallDoc},
        {nullptr, nullptr, 0, nullptr}};
    static PyMemberDef members[] = {{"__vectorcalloffset__", JX_T_PYSSIZET,
                                     static_cast<Py_ssize_t>(offsetof(KernelBase, vectorcall)), JX_READONLY, nullptr},
                                    {nullptr, 0, 0, 0, nullptr}};
    static PyType_Slot slots[] = {{Py_tp_new, reinterpret_cast<void*>(&kernel_base_new)},
                                  {Py_tp_dealloc, reinterpret_cast<void*>(&kernel_base_dealloc)},
                                  {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
                                  {Py_tp_methods, methods},
                                  {Py_tp_members, members},
                                  {Py_tp_doc, const_cast<char*>("jitexpr.Kernel's base: the call of a kernel")},
                                  {0, nullptr}};
    static PyType_Spec spec = {"jitexpr._jitexpr.KernelBase", static_cast<int>(sizeof(KernelBase)), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL, slots};
    PyObject* type = PyType_FromSpec(&spec);
    if (!type) throw nb::python_error();
    return type;
}
PyMethodDef g_evaluate_def = {"evaluate", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_evaluate)),
                              METH_FASTCALL | METH_KEYWORDS, kEvaluateDoc};

}  // namespace jitexpr_py

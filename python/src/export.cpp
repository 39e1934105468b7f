// jitexpr._jitexpr: jx.run and explain, the Tensor type's exports (DLPack, the CUDA array
// interface, the Arrow PyCapsule interface), info() and check().
#include "py.hpp"

namespace jitexpr_py {

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

std::shared_ptr<jit::Runtime> cuda_runtime(int device) { return default_runtime(jit::Backend::Cuda, device)->get(); }

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
    nb::list skipped;  // NVIDIA wheels passed over, and why (a CUDA major the driver cannot run)
    for (const auto& k : l.skipped) {
        nb::dict e;
        e["path"] = k.path;
        e["reason"] = k.reason;
        skipped.append(e);
    }
    d["skipped"] = skipped;
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
        std::optional<jit::DType> d = jit::dtype_from_name(dt);
        // NumPy's names of its string dtypes: S5 is 'bytes40', U3 'str96' (bits).
        std::size_t string_bytes = 0;
        for (const auto& [prefix, t] : {std::pair<std::string_view, jit::DType>{"bytes", jit::DType::Bytes},
                                        std::pair<std::string_view, jit::DType>{"str", jit::DType::Str}})
            if (!d && dt.size() > prefix.size() && std::string_view(dt).substr(0, prefix.size()) == prefix &&
                std::all_of(dt.begin() + static_cast<std::ptrdiff_t>(prefix.size()), dt.end(),
                            [](char c) { return c >= '0' && c <= '9'; }) &&
                dt.size() - prefix.size() < 12) {
                string_bytes = std::stoull(dt.substr(prefix.size())) / 8;
                d = t;
            }
        // Arrow's string columns (jitexpr.dask's frames): 'string' and 'large_string' (offset widths 4, 8).
        if (!d && (dt == "string" || dt == "large_string")) {
            d = jit::DType::Utf8;
            string_bytes = dt == "string" ? 4 : 8;
        }
        if (!d) throw jit::ArgumentError("'" + name + "': '" + dt + "' is not a jitexpr dtype");
        if (kind == "scalar") {
            s.emplace(name, jit::ValueSpec::host_scalar(*d));
        } else {
            jit::Shape shape;
            for (auto e : nb::cast<nb::tuple>(t[2])) shape.push_back(nb::cast<std::int64_t>(e));
            if (shape.size() > static_cast<std::size_t>(jit::kMaxDims))
                throw jit::ArgumentError("'" + name + "' has " + std::to_string(shape.size()) +
                                         " dimensions; jitexpr arrays have at most 8");
            s.emplace(name, string_bytes ? jit::ValueSpec::strings(*d, string_bytes, std::move(shape))
                                         : jit::ValueSpec::array(*d, std::move(shape)));
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

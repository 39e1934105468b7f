// jitexpr._jitexpr: jitexpr.numexpr.evaluate: numexpr's rules (its text, its names, its errors)
// over the same evaluation.
#include "py.hpp"

namespace jitexpr_py {

// ------------------------------------------------------------------------------- jitexpr.numexpr

// jitexpr.numexpr.evaluate (python/jitexpr/numexpr/necompiler.py) is this extension's function too: the
// arguments are read from the call, the names bound by bind_names under numexpr's rules, and the
// thread's last expression (for re_evaluate) kept in the thread state's dict, so that a call
// costs what jitexpr.evaluate costs.

// The texts that passed numexpr_check (exact str only; bounded as the names cache is), each to
// the text the drop-in evaluates for it (numexpr_text).
PyObject* g_numexpr_checked = nullptr;

// numexpr's string literals are bytes ('abc' is b'abc': numexpr encodes it as ASCII): each str
// literal of `text` written as a bytes one (a 'b' before its prefix and quote). Tokenized as
// Python's tokenizer does (prefixes, escapes, triple quotes). Empty when there is none.
std::string numexpr_bytes_literals(std::string_view text) {
    std::string out;
    std::size_t copied = 0;
    bool changed = false;
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '#') {  // a comment runs to the end of its line
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (text[i] != '\'' && text[i] != '"') continue;
        // The prefix: up to two letters of r, b, u, f right before the quote, after no word char.
        std::size_t start = i;
        while (start > 0 && i - start < 2 && std::strchr("rRbBuUfF", text[start - 1])) --start;
        if (start > 0 && word(text[start - 1])) start = i;  // (part of a name: no prefix)
        const std::string_view prefix = text.substr(start, i - start);
        const bool bytes = prefix.find_first_of("bB") != std::string_view::npos;
        // Its end, as the tokenizer finds it.
        const char q = text[i];
        const bool triple = text.compare(i, 3, std::string(3, q)) == 0;
        std::size_t k = i + (triple ? 3 : 1);
        while (k < text.size()) {
            if (text[k] == '\\') k += 2;
            else if (triple ? text.compare(k, 3, std::string(3, q)) == 0 : text[k] == q) break;
            else ++k;
        }
        const std::size_t end = std::min(text.size(), k + (triple ? 3 : 1));
        // (a literal of other than ASCII stays text: numexpr cannot encode it either)
        const bool ascii =
            std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.begin() + static_cast<std::ptrdiff_t>(end),
                        [](char c) { return static_cast<unsigned char>(c) < 0x80; });
        if (!bytes && ascii) {
            changed = true;
            out.append(text.substr(copied, start - copied));
            out += 'b';
            for (char c : prefix)  // (a u prefix cannot join a b: u'x' is 'x' anyway)
                if (c != 'u' && c != 'U') out += c;
            copied = i;
        }
        i = end - 1;
    }
    if (!changed) return {};
    out.append(text.substr(copied));
    return out;
}

// The text numexpr means by `text`, where its meaning is not jitexpr's: numexpr folds constants
// with Python's arithmetic, so `~True` is -2 and `~False` -1 (NumPy's ~True is False), also
// parenthesised as pandas writes it, `~(True)`; its str literals are bytes. Empty when the text
// is evaluated as it is.
std::string numexpr_text(std::string_view original) {
    const std::string literals = numexpr_bytes_literals(original);
    const std::string_view text = literals.empty() ? original : std::string_view(literals);
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
    if (copied == 0) return literals;
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

// numexpr's min(x, k) and max(x, k) reduce x along axis k (its signature is min(var, axis=None)),
// where jitexpr's two-argument min/max are the element-wise minimum/maximum: each such call with
// a second positional argument gets `axis=` before it. Quoted text is skipped. Empty when no
// call changes.
std::string numexpr_min_max_axes(std::string_view text) {
    std::vector<std::size_t> at;  // where "axis=" goes
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    auto skip_quote = [&](std::size_t i) {  // i at a quote: the index after its closing quote
        const char q = text[i];
        for (++i; i < text.size() && text[i] != q; ++i)
            if (text[i] == '\\') ++i;
        return i + 1;
    };
    for (std::size_t i = 0; i + 3 < text.size(); ++i) {
        if (text[i] == '\'' || text[i] == '"') {
            i = skip_quote(i) - 1;
            continue;
        }
        if ((text.compare(i, 3, "min") != 0 && text.compare(i, 3, "max") != 0) ||
            (i > 0 && (ident(text[i - 1]) || text[i - 1] == '.')))
            continue;
        std::size_t k = i + 3;
        while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
        if (k >= text.size() || text[k] != '(') continue;
        // The call's top-level commas, up to its closing parenthesis.
        int depth = 0;
        std::vector<std::size_t> commas;
        bool keyword = false;
        std::size_t j = k;
        for (; j < text.size(); ++j) {
            const char c = text[j];
            if (c == '\'' || c == '"') {
                j = skip_quote(j) - 1;
                continue;
            }
            if (c == '(' || c == '[') ++depth;
            else if (c == ')' || c == ']') {
                if (--depth == 0) break;
            } else if (depth == 1 && c == ',') commas.push_back(j);
            else if (depth == 1 && c == '=' && !commas.empty() && text[j + 1] != '=' && text[j - 1] != '=' &&
                     text[j - 1] != '!' && text[j - 1] != '<' && text[j - 1] != '>')
                keyword = true;
        }
        if (j >= text.size() || commas.size() != 1 || keyword) continue;
        std::size_t arg = commas[0] + 1;
        while (arg < j && (text[arg] == ' ' || text[arg] == '\t')) ++arg;
        if (arg < j) at.push_back(arg);
    }
    if (at.empty()) return {};
    std::string out;
    std::size_t copied = 0;
    for (const std::size_t a : at) {
        out.append(text.substr(copied, a - copied));
        out += "axis=";
        copied = a;
    }
    out.append(text.substr(copied));
    return out;
}

// What numexpr refuses before parsing, and what the drop-in refuses as numexpr does: a
// non-string (ValueError), what its sanitizer refuses (ValueError: "forbidden control
// characters"), an assignment (SyntaxError), `and`/`or`/`not` (TypeError), a negative axis
// (ValueError); bad syntax is jitexpr's ParseError (a SyntaxError). Once per text (the texts
// checked with the sanitizer are kept). Returns the text to evaluate (numexpr_text's, else `ex`).
nb::object numexpr_check_text(PyObject* ex, bool sanitize) {
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
    // One expression, as numexpr's compile() of it in "eval" mode takes: no second statement
    // (`a\n+ b` is not `+b`), not nothing.
    if (jit::outline(text).statements.size() != 1) {
        PyErr_Format(PyExc_SyntaxError, "invalid syntax: numexpr evaluates one expression: %R", ex);
        throw nb::python_error();
    }
    std::string meant = numexpr_text(text);
    if (std::string axes = numexpr_min_max_axes(meant.empty() ? text : std::string_view(meant)); !axes.empty())
        meant = std::move(axes);
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
        } else if (PyUnicode_Check(v)) {
            // numexpr makes an array of a str value: Unicode, which it does not take
            PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError,
                            "NumExpr 2 does not support Unicode as a dtype.");
            throw nb::python_error();
        } else if (PyLong_Check(v) && !PyBool_Check(v)) {
            int overflow = 0;
            (void)PyLong_AsLongLongAndOverflow(v, &overflow);
            any_big = any_big || overflow != 0;
            continue;
        } else if (PyFloat_Check(v) || PyComplex_Check(v) || PyBool_Check(v)) {
            if (!PyFloat_Check(v) && !PyComplex_Check(v)) all_inexact = false;
            continue;
        } else if (v == Py_None || PyDict_Check(v) || PyAnySet_Check(v) || PyCallable_Check(v) || PyModule_Check(v)) {
            // What NumPy makes an object array of (numexpr's asarray of each variable): its error.
            PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError, "unknown type object");
            throw nb::python_error();
        } else {
            all_inexact = false;
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
        // numexpr's kinds: uint32 is int64, long double float64 and its complex complex128.
        const int to = t == NPY_UINT32        ? NPY_INT64
                       : t == NPY_LONGDOUBLE  ? NPY_DOUBLE
                       : t == NPY_CLONGDOUBLE ? NPY_CDOUBLE
                                              : -1;
        if (to >= 0) {
            PyObject* c = PyArray_FromAny(v, PyArray_DescrFromType(to), 0, 0, NPY_ARRAY_FORCECAST, nullptr);
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
        // numexpr's out= of a reduction of every element must hold one element (it is not filled
        // with the value): a top-level reduction without an axis.
        if (!out.is_none() && PyArray_Check(out.ptr()) &&
            PyArray_SIZE(reinterpret_cast<PyArrayObject*>(out.ptr())) != 1) {
            Py_ssize_t n = 0;
            const char* u = PyUnicode_AsUTF8AndSize(meant.ptr(), &n);
            if (!u) return nullptr;
            const jit::Outline o = jit::outline(std::string_view(u, static_cast<std::size_t>(n)));
            for (const jit::OutlineReduction& r : o.reductions)
                if (!o.statements.empty() && r.span.begin == o.statements.back().value_span.begin &&
                    r.span.end == o.statements.back().value_span.end && r.keywords.empty()) {
                    PyErr_SetString(g_errors.value ? g_errors.value : PyExc_ValueError,
                                    "out argument must have size 1 for a full reduction");
                    return nullptr;
                }
        }
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
        // numexpr's evaluate('s') of a bytes array is a copy of it (jitexpr computes no string-valued
        // result; numexpr's machine copies).
        // (a bytes value is a 0-d array of its bytes, all of them kept: numexpr's test_null_chars)
        const auto bytes_array = [](nb::handle v) -> nb::object {
            if (PyBytes_Check(v.ptr()) || PyArray_IsScalar(v.ptr(), String)) return nb::steal(PyArray_FROM_O(v.ptr()));
            if (PyArray_Check(v.ptr()) && PyArray_TYPE(reinterpret_cast<PyArrayObject*>(v.ptr())) == NPY_STRING)
                return nb::borrow(v);
            return nb::object();
        };
        if (nb::object single =
                sc->items.size() == 1 && out.is_none() ? bytes_array(sc->items[0].second) : nb::object();
            single.is_valid()) {
            Py_ssize_t n = 0;
            const char* name = PyUnicode_AsUTF8AndSize(sc->items[0].first.ptr(), &n);
            std::string_view t = text;
            while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
            if (name && t == std::string_view(name, static_cast<std::size_t>(n))) {
                PyObject* copy = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(single.ptr()), NPY_CORDER);
                if (!copy) return nullptr;
                if (keep_last) numexpr_keep_last(ex, out_ref, order_arg, casting_arg);
                return copy;
            }
        }
        // A string operation jitexpr's checker refuses is numexpr's NotImplementedError naming the
        // opcode its machine lacks ('add_sss', 'ge_bsi'), where numexpr's typing finds none.
        auto numexpr_string_error = [&]() -> bool {
            bool strings = text.find_first_of("'\"") != std::string_view::npos;
            for (const auto& [name, value] : sc->items)
                strings = strings || (PyArray_Check(value.ptr()) &&
                                      PyArray_TYPE(reinterpret_cast<PyArrayObject*>(value.ptr())) == NPY_STRING);
            if (!strings) return false;
            static PyObject* opcode_error = [] {
                nb::object m = nb::module_::import_("jitexpr.numexpr.necompiler");
                nb::object f = m.attr("_opcode_error");
                return f.release().ptr();  // kept for the life of the process
            }();
            nb::dict names;
            for (const auto& [name, value] : sc->items) names[name] = value;
            nb::object e = nb::borrow(opcode_error)(nb::str(text.data(), text.size()), names);
            if (e.is_none()) return false;
            // numexpr's NotImplementedError, ValueError (a str constant's UnicodeEncodeError among
            // them) or TypeError, as jitexpr's error of that built-in.
            PyObject* type = nullptr;
            if (PyErr_GivenExceptionMatches(e.ptr(), PyExc_NotImplementedError))
                type = g_errors.not_implemented ? g_errors.not_implemented : PyExc_NotImplementedError;
            else if (PyErr_GivenExceptionMatches(e.ptr(), PyExc_ValueError))
                type = g_errors.value ? g_errors.value : PyExc_ValueError;
            else type = g_errors.type ? g_errors.type : PyExc_TypeError;
            nb::object msg = nb::steal(PyObject_Str(e.ptr()));
            if (!msg.is_valid()) return false;
            PyErr_SetObject(type, msg.ptr());
            return true;
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
            PyObject* r = nullptr;
            try {
                r = result_to_python(evaluate_text(out));
            } catch (const jit::TypeError&) {
                if (numexpr_string_error()) return nullptr;
                throw;
            }
            if (!r) return numexpr_retype_error();
            result = nb::steal(r);
            if (out.is_none() && sc->items.empty()) result = numexpr_constant_result(std::move(result));
            // 'K' and 'A' keep the result as the runtime made it: in the inputs' axis order when
            // they share one (an element-wise expression), else C order, as numexpr's are.
            if (out.is_none() && PyArray_Check(r) && PyArray_NDIM(reinterpret_cast<PyArrayObject*>(r)) > 1) {
                auto* ra = reinterpret_cast<PyArrayObject*>(r);
                const bool f_asked = order == NPY_FORTRANORDER && !PyArray_IS_F_CONTIGUOUS(ra);
                const bool c_asked = order == NPY_CORDER && !PyArray_IS_C_CONTIGUOUS(ra);
                if (f_asked || c_asked) {
                    PyObject* copy = PyArray_NewCopy(ra, f_asked ? NPY_FORTRANORDER : NPY_CORDER);
                    if (!copy) return nullptr;
                    result = nb::steal(copy);
                }
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
order: 'K' (default) and 'A': the inputs' layout when they all share one and the expression
    works element by element (Fortran-ordered inputs give a Fortran-ordered result), else
    C-contiguous; 'C' C-contiguous; 'F' Fortran-ordered (a copy when the result is not).
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

}  // namespace jitexpr_py

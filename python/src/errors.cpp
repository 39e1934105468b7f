// jitexpr._jitexpr: Python's exception types for jitexpr's errors: the translation of every C++
// error into the jitexpr.Error subclass (and built-in) a Python user expects.
#include "py.hpp"

namespace jitexpr_py {

// ------------------------------------------------------------------------------- errors

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
        const bool by_zero = (m.size() >= 8 && m.compare(m.size() - 8, 8, " by zero") == 0) ||
                             m.rfind("0.0 cannot be raised to a negative", 0) == 0;  // Python's for 0 ** -1
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

}  // namespace jitexpr_py

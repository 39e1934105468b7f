"""jitexpr from Python through its C API (libjitexpr_c.so) with ctypes: no compiled extension.

    import numpy as np
    import jitexpr_ctypes as jx

    rt = jx.Runtime("cpu")                        # "auto", "cpu" or "cuda"
    a = np.arange(4, dtype=np.float32)
    c = np.from_dlpack(rt.eval("a * 2 + b", a, 1.5))   # torch.from_dlpack(...) for CUDA results
    k = rt.compile("sqrt(x * x + y * y)")         # parsed once, called many times
    r = k(a, a).numpy()

Arguments are bound by position to the names in order of first appearance (as jit::eval) and
are either objects with ``__dlpack__`` (NumPy >= 2 arrays, PyTorch/CuPy tensors, ...) or Python
scalars (bool, int, float, complex: weakly typed, float32 array * 2.5 stays float32). Tensors
must be on the runtime's backend: host memory for "cpu", CUDA device 0 for "cuda".

Inputs are borrowed for the length of the call only: the binding takes the DLPack capsule,
marks it consumed ("used_dltensor") as the protocol requires, and calls the tensor's deleter
when the call returns. CUDA inputs are requested on the legacy default stream (stream=1),
the stream jitexpr launches on, so the producer orders its pending work before ours.

Results are `Tensor` objects owning one DLPack tensor (``DLManagedTensor*``) from the C API:
hand them to ``numpy.from_dlpack`` / ``torch.from_dlpack`` / ``cupy.from_dlpack`` (no copy;
CUDA results are complete when the call returns, so no stream is waited on), or call
``.numpy()`` / ``.torch()``. A result owns its memory: it outlives the runtime that made it.

The library is found from the ``library=`` argument, else the ``JITEXPR_C_LIBRARY`` environment
variable, else ``libjitexpr_c.so`` on the loader's search path.

Errors raise `JitexprError` with ``.status`` (the jitexpr_status code), ``.kind`` ("parse",
"type", ...) and ``.message`` (jitexpr_last_error(): the whole text, with the caret line for
errors in the program text).
"""

import ctypes
import numbers
import os
import sys
import threading
import weakref

__all__ = ["JitexprError", "Runtime", "Kernel", "Tensor", "load_library", "version"]

# --- DLPack structures (DLPack 1.x layout; DLManagedTensor is the legacy, unversioned one) -----

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

_DTYPE_NAMES = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
    (4, 16): "bfloat16", (5, 64): "complex64", (5, 128): "complex128", (6, 8): "bool",
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# A deleter: void (*)(DLManagedTensor*) or void (*)(DLManagedTensorVersioned*).
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _call_deleter(address, struct):
    fn = struct.from_address(address).deleter
    if fn:
        _Deleter(fn)(address)


# --- The Python C API through ctypes ---------------------------------------------------------

def _pyapi(name, restype, argtypes):
    # A private function object per use, so that our argtypes never change ctypes.pythonapi's.
    f = ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))
    return f


_capsule_is_valid = _pyapi("PyCapsule_IsValid", ctypes.c_int, [ctypes.py_object, ctypes.c_char_p])
_capsule_get_pointer = _pyapi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p])
_capsule_set_name = _pyapi("PyCapsule_SetName", ctypes.c_int, [ctypes.py_object, ctypes.c_void_p])
_capsule_new = _pyapi("PyCapsule_New", ctypes.py_object, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p])


def _static_name(text):
    """A NUL-terminated copy of `text` that is never freed: capsule names are stored by pointer
    (not copied) and must stay valid for as long as any capsule may carry them, which can be
    after this module is torn down at exit."""
    raw_malloc = _pyapi("PyMem_RawMalloc", ctypes.c_void_p, [ctypes.c_size_t])
    p = raw_malloc(len(text) + 1)
    if not p:
        raise MemoryError
    ctypes.memmove(p, text + b"\0", len(text) + 1)
    return p


_NAME_DLTENSOR = _static_name(b"dltensor")
_NAME_USED = _static_name(b"used_dltensor")
_NAME_USED_VERSIONED = _static_name(b"used_dltensor_versioned")


def _make_capsule_destructor():
    # Runs when a "dltensor" capsule made by Tensor.__dlpack__ is freed: if no consumer took the
    # tensor (the name is still "dltensor"), its deleter is called here. Everything it needs is
    # bound now, so it works during interpreter shutdown when module globals are gone. (Like
    # every ctypes destructor, it is Python code: a capsule freed while an exception unwinds
    # its frame reports the exception as unraisable. Consumers take capsules at once.)
    is_valid = _pyapi("PyCapsule_IsValid", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p])
    get_pointer = _pyapi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p])
    call_deleter, managed = _call_deleter, DLManagedTensor

    def destructor(capsule):
        if is_valid(capsule, b"dltensor"):
            p = get_pointer(capsule, b"dltensor")
            if p:
                call_deleter(p, managed)

    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(destructor)
    # The callback's code must outlive every capsule, even past this module's teardown: keep
    # one reference forever.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(fn))
    return fn


_capsule_destructor = _make_capsule_destructor()
_capsule_destructor_address = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value

# --- The C API -------------------------------------------------------------------------------

_OK = 0
_ARG_TENSOR, _ARG_BOOL, _ARG_INT, _ARG_FLOAT, _ARG_COMPLEX = range(5)
_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}
_BACKEND_NAMES = {1: "cpu", 2: "cuda"}


class _ArgValue(ctypes.Union):
    _fields_ = [
        ("tensor", ctypes.c_void_p),
        ("b", ctypes.c_int32),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
        ("c", ctypes.c_double * 2),
    ]


class _Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("value", _ArgValue)]


class _Stats(ctypes.Structure):
    _fields_ = [
        ("hits", ctypes.c_uint64),
        ("misses", ctypes.c_uint64),
        ("compiles", ctypes.c_uint64),
        ("disk_hits", ctypes.c_uint64),
        ("entries", ctypes.c_uint64),
        ("compile_ms", ctypes.c_double),
    ]


_PROTOTYPES = {
    "jitexpr_last_error": (ctypes.c_char_p, []),
    "jitexpr_last_error_code": (ctypes.c_int, []),
    "jitexpr_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "jitexpr_version": (ctypes.c_char_p, []),
    "jitexpr_runtime_create": (ctypes.c_void_p, [ctypes.c_int]),
    "jitexpr_runtime_destroy": (None, [ctypes.c_void_p]),
    "jitexpr_runtime_backend": (ctypes.c_int, [ctypes.c_void_p]),
    "jitexpr_runtime_stats": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_Stats)]),
    "jitexpr_eval": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_Arg),
                                    ctypes.POINTER(ctypes.c_void_p)]),
    "jitexpr_compile": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]),
    "jitexpr_kernel_free": (None, [ctypes.c_void_p]),
    "jitexpr_kernel_num_params": (ctypes.c_size_t, [ctypes.c_void_p]),
    "jitexpr_kernel_param_name": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
    "jitexpr_kernel_call": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(_Arg),
                                           ctypes.POINTER(ctypes.c_void_p)]),
    "jitexpr_eval_named": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_Arg),
                                          ctypes.POINTER(ctypes.c_void_p)]),
    "jitexpr_kernel_call_named": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                                 ctypes.POINTER(_Arg), ctypes.POINTER(ctypes.c_void_p)]),
}

_libraries = {}
_libraries_lock = threading.Lock()


def load_library(path=None):
    """Loads libjitexpr_c (once per path) and declares its prototypes. `path` defaults to
    $JITEXPR_C_LIBRARY, then to "libjitexpr_c.so" on the loader's search path."""
    path = path or os.environ.get("JITEXPR_C_LIBRARY") or "libjitexpr_c.so"
    path = os.fspath(path)
    with _libraries_lock:
        lib = _libraries.get(path)
        if lib is None:
            try:
                lib = ctypes.CDLL(path)  # CDLL: the GIL is released during every call
            except OSError as e:
                raise OSError(f"jitexpr: cannot load the C library {path!r} ({e}); pass library= or set "
                              f"JITEXPR_C_LIBRARY") from e
            for name, (restype, argtypes) in _PROTOTYPES.items():
                f = getattr(lib, name)
                f.restype, f.argtypes = restype, argtypes
            _libraries[path] = lib
        return lib


def version(library=None):
    """The C library's version string."""
    return load_library(library).jitexpr_version().decode()


class JitexprError(Exception):
    """A failed C API call: `.status` (jitexpr_status), `.kind` (its name: "parse", "name",
    "type", "shape", "value", "argument", "no device", ...), `.message` (the library's message,
    with the caret line for errors in the program text)."""

    def __init__(self, status, kind, message):
        super().__init__(f"jitexpr {kind} error: {message}")
        self.status = status
        self.kind = kind
        self.message = message


def _error(lib, status=None):
    # The last error is per thread, and ctypes calls run on the calling thread: read right away.
    if status is None:
        status = lib.jitexpr_last_error_code()
    return JitexprError(status, lib.jitexpr_status_name(status).decode(), lib.jitexpr_last_error().decode())


# --- Inputs: DLPack capsules consumed for the length of one call ----------------------------


class _Borrowed:
    """One input tensor taken from a producer: owns the producer's DLManagedTensor(Versioned)
    until release(), and offers a DLManagedTensor* for the C API (which borrows it)."""

    __slots__ = ("_address", "_struct", "_legacy_view", "pointer")

    def __init__(self, obj):
        self._address = None
        kwargs = {}
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else None
        if device is not None and int(device[0]) == kDLCUDA:
            # The stream jitexpr will read on: the legacy default stream (1 in the protocol).
            kwargs["stream"] = 1
        try:
            capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:  # a producer older than DLPack 1.0's max_version
            capsule = obj.__dlpack__(**kwargs)
        if _capsule_is_valid(capsule, b"dltensor_versioned"):
            p = _capsule_get_pointer(capsule, b"dltensor_versioned")
            versioned = DLManagedTensorVersioned.from_address(p)
            if versioned.version.major != 1:
                # Not consumed: the capsule's own destructor gives it back to the producer.
                raise BufferError(f"DLPack version {versioned.version.major}.{versioned.version.minor} "
                                  f"is not supported (1.x is)")
            _capsule_set_name(capsule, _NAME_USED_VERSIONED)
            self._address, self._struct = p, DLManagedTensorVersioned
            # The C API takes the legacy struct and only reads its DLTensor: a copy of that,
            # with no deleter (the versioned tensor's own deleter runs in release()).
            self._legacy_view = DLManagedTensor(dl_tensor=versioned.dl_tensor)
            self.pointer = ctypes.addressof(self._legacy_view)
        elif _capsule_is_valid(capsule, b"dltensor"):
            p = _capsule_get_pointer(capsule, b"dltensor")
            _capsule_set_name(capsule, _NAME_USED)
            self._address, self._struct = p, DLManagedTensor
            self._legacy_view = None
            self.pointer = p
        else:
            raise TypeError(f"{type(obj).__name__}.__dlpack__() did not return a DLPack capsule")

    def release(self):
        if self._address is not None:
            address, self._address = self._address, None
            _call_deleter(address, self._struct)


def _is_numpy_scalar(a):
    numpy = sys.modules.get("numpy")  # never imported here: only if the caller uses NumPy
    return numpy is not None and isinstance(a, numpy.generic) and not hasattr(a, "__dlpack__")


def _marshal(args, borrowed):
    """jitexpr_arg[] for `args`; tensors taken are appended to `borrowed` (released by the caller)."""
    out = (_Arg * max(len(args), 1))()
    for i, a in enumerate(args):
        slot = out[i]
        if _is_numpy_scalar(a):
            # NumPy scalars are typed (np.float64(2) * float32 array is float64, as in NumPy):
            # passed as 0-d arrays, not as weakly typed Python scalars.
            a = sys.modules["numpy"].asarray(a)
        if hasattr(a, "__dlpack__"):
            b = _Borrowed(a)
            borrowed.append(b)
            slot.kind, slot.value.tensor = _ARG_TENSOR, b.pointer
        elif isinstance(a, bool):
            slot.kind, slot.value.b = _ARG_BOOL, int(a)
        elif isinstance(a, numbers.Integral):
            if not -(1 << 63) <= int(a) < (1 << 63):
                raise OverflowError(f"argument {i}: {a} does not fit in int64")
            slot.kind, slot.value.i = _ARG_INT, int(a)
        elif isinstance(a, numbers.Real):
            slot.kind, slot.value.f = _ARG_FLOAT, float(a)
        elif isinstance(a, numbers.Complex):
            z = complex(a)
            slot.kind = _ARG_COMPLEX
            slot.value.c[0], slot.value.c[1] = z.real, z.imag
        else:
            raise TypeError(f"argument {i}: {type(a).__name__} is neither a DLPack tensor (__dlpack__) "
                            f"nor a bool, int, float or complex")
    return out


# --- Results ---------------------------------------------------------------------------------


class Tensor:
    """A result: one DLPack tensor owned by this object until exported with __dlpack__ (once).
    Pass it to numpy.from_dlpack, torch.from_dlpack, cupy.from_dlpack, ... (no copy)."""

    def __init__(self, address):
        self._address = address
        t = DLManagedTensor.from_address(address).dl_tensor
        self.device = (int(t.device.device_type), int(t.device.device_id))
        self.dtype = _DTYPE_NAMES.get((t.dtype.code, t.dtype.bits), f"(code {t.dtype.code}, bits {t.dtype.bits})")
        self.shape = tuple(t.shape[k] for k in range(t.ndim))
        self.strides = tuple(t.strides[k] for k in range(t.ndim)) if t.strides else None  # elements
        # Address of element (0, ..., 0): what the consumer's data pointer will be.
        self.data_ptr = (t.data or 0) + t.byte_offset

    def __repr__(self):
        state = "exported" if self._address is None else "owned"
        return f"<jitexpr Tensor {self.dtype}{list(self.shape)} device={self.device} {state}>"

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # The work writing the tensor is complete (the C API synchronises before returning), so
        # there is nothing for the consumer's `stream` to wait on. A legacy capsule whatever
        # max_version says (the protocol allows it; consumers check the name).
        if self._address is None:
            raise BufferError("this jitexpr result was already exported through __dlpack__ (once only)")
        if dl_device is not None and (int(dl_device[0]), int(dl_device[1])) != self.device:
            raise BufferError(f"jitexpr result on device {self.device}, {tuple(dl_device)} asked for; "
                              f"copy it with the consumer's library")
        if copy:
            raise BufferError("jitexpr results are exported without a copy (copy=True is not supported)")
        capsule = _capsule_new(self._address, _NAME_DLTENSOR, _capsule_destructor_address)
        self._address = None
        return capsule

    def numpy(self):
        import numpy
        return numpy.from_dlpack(self)

    def torch(self):
        import torch
        return torch.from_dlpack(self)

    def close(self, _call_deleter=_call_deleter, _struct=DLManagedTensor):
        """Frees the tensor now if it was not exported (later, garbage collection does)."""
        # (Bound as defaults: results freed at interpreter exit, after this module's globals.)
        if self._address is not None:
            address, self._address = self._address, None
            _call_deleter(address, _struct)

    def __del__(self):
        self.close()


# --- Runtimes and kernels --------------------------------------------------------------------


def _run(lib, args, invoke):
    """Marshals `args`, calls invoke(cargs, out) -> status, releases the inputs, and wraps the
    result."""
    borrowed = []
    out = ctypes.c_void_p()
    try:
        cargs = _marshal(args, borrowed)
        rc = invoke(cargs, ctypes.byref(out))
    finally:
        # Results never share memory with inputs (the C API copies such results), so the
        # producers may free them now.
        for b in borrowed:
            b.release()
    if rc != _OK:
        raise _error(lib, rc)
    return Tensor(out.value) if out.value else None


def _names(names):
    """char*[] for the keyword names (kept alive by the returned tuple)."""
    encoded = [n.encode() for n in names]
    arr = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
    return arr, encoded


def _split(args, names):
    if args and names:
        raise TypeError("bind arguments by position or by name, not both")
    return list(names.values()) if names else list(args)


def _encode(text):
    if not isinstance(text, str):
        raise TypeError(f"program text must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError("program text contains a NUL character")
    return text.encode()


class Runtime:
    """A jitexpr runtime (jitexpr_runtime*): a backend and its caches of prepared programs.
    `backend` is "auto" (CUDA when a device is present, else the CPU), "cpu" or "cuda".
    Safe to use from many threads (the GIL is released during evaluation)."""

    def __init__(self, backend="auto", library=None):
        if backend not in _BACKENDS:
            raise ValueError(f"backend {backend!r}: expected one of {', '.join(_BACKENDS)}")
        self._lib = load_library(library)
        self._handle = None
        handle = self._lib.jitexpr_runtime_create(_BACKENDS[backend])
        if not handle:
            raise _error(self._lib)
        self._handle = handle
        self._kernels = weakref.WeakSet()
        self.backend = _BACKEND_NAMES[self._lib.jitexpr_runtime_backend(handle)]

    def _checked(self):
        if self._handle is None:
            raise ValueError("this jitexpr Runtime is closed")
        return self._handle

    def eval(self, text, *args, **names):
        """Evaluates `text` with `args` bound by position, or with `names` bound by name
        (rt.eval("b*2 + a", a=x, b=y); a name bound so shadows a named constant such as pi);
        returns the value of the last statement as a Tensor (None if it has none)."""
        handle, lib, data = self._checked(), self._lib, _encode(text)
        values = _split(args, names)
        if names:
            cnames, _keep = _names(names)
            return _run(lib, values, lambda cargs, out: lib.jitexpr_eval_named(handle, data, len(values), cnames,
                                                                               cargs, out))
        return _run(lib, values, lambda cargs, out: lib.jitexpr_eval(handle, data, len(values), cargs, out))

    def compile(self, text):
        """Parses `text` once (syntax and name errors are raised here) into a callable Kernel."""
        handle = self._checked()
        k = self._lib.jitexpr_compile(handle, _encode(text))
        if not k:
            raise _error(self._lib)
        kernel = Kernel(self, k)
        self._kernels.add(kernel)
        return kernel

    def stats(self):
        """The cache counters: hits, misses, compiles, disk_hits, entries, compile_ms."""
        s = _Stats()
        rc = self._lib.jitexpr_runtime_stats(self._checked(), ctypes.byref(s))
        if rc != _OK:
            raise _error(self._lib, rc)
        return {name: getattr(s, name) for name, _ in _Stats._fields_}

    def close(self):
        """Frees the runtime and its kernels now; results already returned stay valid."""
        if self._handle is not None:
            for k in list(self._kernels):
                k.close()
            handle, self._handle = self._handle, None
            self._lib.jitexpr_runtime_destroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()


class Kernel:
    """A program parsed once (jitexpr_kernel*); call it with arguments as Runtime.eval.
    It keeps its runtime alive."""

    def __init__(self, runtime, handle):
        self._runtime = runtime
        self._handle = handle
        lib = runtime._lib
        self.params = tuple(lib.jitexpr_kernel_param_name(handle, i).decode()
                            for i in range(lib.jitexpr_kernel_num_params(handle)))

    def __call__(self, *args, **names):
        if self._handle is None:
            raise ValueError("this jitexpr Kernel is closed")
        handle, lib = self._handle, self._runtime._lib
        values = _split(args, names)
        if names:
            cnames, _keep = _names(names)
            return _run(lib, values, lambda cargs, out: lib.jitexpr_kernel_call_named(handle, len(values), cnames,
                                                                                      cargs, out))
        return _run(lib, values, lambda cargs, out: lib.jitexpr_kernel_call(handle, len(values), cargs, out))

    def close(self):
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._runtime._kernels.discard(self)
            self._runtime._lib.jitexpr_kernel_free(handle)

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

"""A small ctypes binding of the C API (include/jit/c_api.h) for the soak: runtimes, named
evaluation with call options, kernels, cancel tokens, and results read back as bytes.

Only what the soak needs. Inputs are NumPy arrays (any layout, borrowed by DLPack descriptors
that point into them), bfloat16 bits as uint16 arrays (described as kDLBfloat), or Python
bool/int/float/complex host scalars. A result is (dtype name, shape, C-order bytes); a failure
is (status, message).
"""
import ctypes
import math

import numpy as np

# jitexpr_status values (c_api.h)
OK = 0
CANCELLED = 14

BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA = 0, 1, 2

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_MANAGED = 1, 2, 13
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_COMPLEX, _KDL_BOOL = 0, 1, 2, 4, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _ArgValue(ctypes.Union):
    _fields_ = [("tensor", ctypes.POINTER(DLManagedTensor)), ("b", ctypes.c_int32), ("i", ctypes.c_int64),
                ("f", ctypes.c_double), ("c", ctypes.c_double * 2)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("value", _ArgValue)]


class Stats(ctypes.Structure):
    _fields_ = [("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64), ("compiles", ctypes.c_uint64),
                ("disk_hits", ctypes.c_uint64), ("entries", ctypes.c_uint64), ("compile_ms", ctypes.c_double)]


class CallOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("cancel", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


_ARG_TENSOR, _ARG_BOOL, _ARG_INT, _ARG_FLOAT, _ARG_COMPLEX = 0, 1, 2, 3, 4

# (DLPack code, bits) -> dtype name, and back
_DTYPES = {(_KDL_BOOL, 8): "bool", (_KDL_INT, 8): "int8", (_KDL_INT, 16): "int16", (_KDL_INT, 32): "int32",
           (_KDL_INT, 64): "int64", (_KDL_UINT, 8): "uint8", (_KDL_UINT, 16): "uint16", (_KDL_UINT, 32): "uint32",
           (_KDL_UINT, 64): "uint64", (_KDL_FLOAT, 16): "float16", (_KDL_BFLOAT, 16): "bfloat16",
           (_KDL_FLOAT, 32): "float32", (_KDL_FLOAT, 64): "float64", (_KDL_COMPLEX, 64): "complex64",
           (_KDL_COMPLEX, 128): "complex128"}
_CODES = {v: k for k, v in _DTYPES.items()}


class Library:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        P, vp, sz, cp, i = ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int
        sig = {
            "jitexpr_last_error": (cp, []),
            "jitexpr_last_error_code": (i, []),
            "jitexpr_status_name": (cp, [i]),
            "jitexpr_runtime_create": (vp, [i]),
            "jitexpr_runtime_destroy": (None, [vp]),
            "jitexpr_runtime_backend": (i, [vp]),
            "jitexpr_runtime_stats": (i, [vp, P(Stats)]),
            "jitexpr_eval_named_with": (i, [vp, cp, sz, P(cp), P(Arg), P(P(DLManagedTensor)), P(CallOptions)]),
            "jitexpr_cancel": (i, [vp]),
            "jitexpr_cancel_token_create": (vp, [vp, vp]),
            "jitexpr_cancel_token_destroy": (None, [vp]),
            "jitexpr_cancel_token_cancel": (None, [vp]),
            "jitexpr_cancel_token_reset": (None, [vp]),
            "jitexpr_compile": (vp, [vp, cp]),
            "jitexpr_kernel_free": (None, [vp]),
            "jitexpr_kernel_call_named_with": (i, [vp, sz, P(cp), P(Arg), P(P(DLManagedTensor)),
                                                   P(CallOptions)]),
        }
        for name, (res, args) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        self.lib = lib

    def error(self):
        return self.lib.jitexpr_last_error().decode("utf-8", "replace")

    def status_name(self, status):
        return self.lib.jitexpr_status_name(status).decode()


class Cuda:
    """Device memory for a CUDA runtime's arguments (the C API copies nothing between devices)
    and copies of its results, through the driver API in the primary context of device 0, the
    one jitexpr's runtime uses. Arguments are managed memory (kDLCUDAManaged), filled from the
    host."""

    def __init__(self):
        cu = ctypes.CDLL("libcuda.so.1")
        self.cu = cu
        self._check(cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self._check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self._check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        cu.cuMemAllocManaged.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint]
        cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        cu.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]

    @staticmethod
    def _check(r, what):
        if r != 0:
            raise RuntimeError(f"{what} returned CUDA error {r}")

    def upload(self, host):
        """Managed memory holding a copy of `host` (bytes)."""
        self._check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        p = ctypes.c_uint64()
        self._check(self.cu.cuMemAllocManaged(ctypes.byref(p), max(len(host), 1), 1), "cuMemAllocManaged")
        ctypes.memmove(p.value, host, len(host))
        return p.value

    def download(self, ptr, n):
        self._check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        buf = ctypes.create_string_buffer(n)
        self._check(self.cu.cuMemcpyDtoH_v2(buf, ptr, n), "cuMemcpyDtoH")
        return buf.raw


def span(arr):
    """(the bytes an array's elements span, the first element's offset in them)."""
    if arr.size == 0:
        return b"\0" * arr.itemsize, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    return ctypes.string_at(arr.ctypes.data + lo, hi - lo + arr.itemsize), -lo


class Bound:
    """A program's arguments as C API values, built once and passed again and again (the C API
    borrows them). Holds the arrays the descriptors point into; with `cuda`, their copies in
    device memory."""

    def __init__(self, names, cuda=None):
        self.cuda = cuda
        n = len(names)
        self.n = n
        self.names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k in names])
        self.args = (Arg * max(n, 1))()
        self._keep = []
        for j, (k, v) in enumerate(names.items()):
            a = self.args[j]
            if isinstance(v, tuple) and v[0] == "bfloat16":
                a.kind, a.value.tensor = _ARG_TENSOR, self._tensor(v[1], "bfloat16")
            elif isinstance(v, np.ndarray):
                a.kind, a.value.tensor = _ARG_TENSOR, self._tensor(v, v.dtype.name)
            elif isinstance(v, bool):
                a.kind, a.value.b = _ARG_BOOL, int(v)
            elif isinstance(v, int):
                a.kind, a.value.i = _ARG_INT, v
            elif isinstance(v, float):
                a.kind, a.value.f = _ARG_FLOAT, v
            elif isinstance(v, complex):
                a.kind = _ARG_COMPLEX
                a.value.c[0], a.value.c[1] = v.real, v.imag
            else:
                raise TypeError(f"cannot bind {k} = {v!r}")

    def _tensor(self, arr, dtype):
        code, bits = _CODES[dtype]
        nd = arr.ndim
        shape = (ctypes.c_int64 * max(nd, 1))(*arr.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*[s // arr.itemsize for s in arr.strides])
        m = DLManagedTensor()
        t = m.dl_tensor
        # An empty array's pointer may be anything; the library reads no element of it.
        if self.cuda:
            raw, first = span(arr)
            t.data = self.cuda.upload(raw) + first
            t.device = DLDevice(_KDL_CUDA_MANAGED, 0)
        else:
            t.data = arr.ctypes.data
            t.device = DLDevice(_KDL_CPU, 0)
        t.ndim = nd
        t.dtype = DLDataType(code, bits, 1)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0
        self._keep += [arr, shape, strides, m]
        return ctypes.pointer(m)


def read_result(out, cuda=None):
    """(dtype, shape, C-order bytes) of a result tensor (in host memory, or on the device with
    `cuda`), which is then released."""
    try:
        on_device = out.contents.dl_tensor.device.device_type in (_KDL_CUDA, _KDL_CUDA_MANAGED)
        if on_device and not cuda:
            raise RuntimeError("a result in device memory, and no CUDA driver to copy it with")
        read = (lambda p, n: cuda.download(p, n)) if on_device else ctypes.string_at
        t = out.contents.dl_tensor
        dtype = _DTYPES[(t.dtype.code, t.dtype.bits)]
        shape = tuple(t.shape[k] for k in range(t.ndim))
        n = math.prod(shape)
        item = t.dtype.bits // 8
        if n == 0:
            return dtype, shape, b""
        strides = tuple(t.strides[k] for k in range(t.ndim)) if t.strides else None
        base = t.data + t.byte_offset
        contiguous = strides is None or all(
            shape[k] == 1 or strides[k] == math.prod(shape[k + 1:]) for k in range(len(shape)))
        if contiguous:
            return dtype, shape, read(base, n * item)
        # A strided result: the span its elements cover, viewed with its strides, copied in C order.
        lo = sum(min(0, (shape[k] - 1) * strides[k]) for k in range(len(shape)))
        hi = sum(max(0, (shape[k] - 1) * strides[k]) for k in range(len(shape)))
        raw = np.frombuffer(read(base + lo * item, (hi - lo + 1) * item), dtype=f"V{item}")
        view = np.lib.stride_tricks.as_strided(raw[-lo:], shape, [s * item for s in strides])
        return dtype, shape, np.ascontiguousarray(view).tobytes()
    finally:
        if out.contents.deleter:
            out.contents.deleter(out)


class Runtime:
    def __init__(self, library, backend=BACKEND_AUTO, cuda=None):
        self.L = library
        self.cuda = cuda  # for results in device memory
        self.ptr = library.lib.jitexpr_runtime_create(backend)
        if not self.ptr:
            raise RuntimeError("jitexpr_runtime_create: " + library.error())

    def backend(self):
        return self.L.lib.jitexpr_runtime_backend(self.ptr)

    def stats(self):
        s = Stats()
        if self.L.lib.jitexpr_runtime_stats(self.ptr, ctypes.byref(s)) != OK:
            raise RuntimeError("jitexpr_runtime_stats: " + self.L.error())
        return {k: getattr(s, k) for k, _ in Stats._fields_}

    def eval(self, text, bound, token=None):
        """('ok', dtype, shape, bytes) or ('error', status, message)."""
        out = ctypes.POINTER(DLManagedTensor)()
        opts = CallOptions(ctypes.sizeof(CallOptions), token, None) if token else None
        st = self.L.lib.jitexpr_eval_named_with(self.ptr, text.encode(), bound.n, bound.names, bound.args,
                                                ctypes.byref(out), ctypes.byref(opts) if opts else None)
        return self._answer(st, out)

    def _answer(self, st, out):
        if st != OK:
            return ("error", st, self.L.error())
        if not out:
            return ("none",)
        return ("ok",) + read_result(out, self.cuda)

    def compile(self, text):
        k = self.L.lib.jitexpr_compile(self.ptr, text.encode())
        if not k:
            return None, ("error", self.L.lib.jitexpr_last_error_code(), self.L.error())
        return k, None

    def call_kernel(self, kernel, bound, token=None):
        out = ctypes.POINTER(DLManagedTensor)()
        opts = CallOptions(ctypes.sizeof(CallOptions), token, None) if token else None
        st = self.L.lib.jitexpr_kernel_call_named_with(kernel, bound.n, bound.names, bound.args, ctypes.byref(out),
                                                       ctypes.byref(opts) if opts else None)
        return self._answer(st, out)

    def free_kernel(self, kernel):
        self.L.lib.jitexpr_kernel_free(kernel)

    def cancel(self):
        return self.L.lib.jitexpr_cancel(self.ptr)

    def close(self):
        if self.ptr:
            self.L.lib.jitexpr_runtime_destroy(self.ptr)
            self.ptr = None

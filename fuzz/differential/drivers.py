"""How the differential fuzzer reaches jitexpr: one small class per interface, all with

    driver.run(text, names) -> (dtype_name, numpy array)   or raises DriverError(kind, message)

`names` maps each variable of `text` to a NumPy array (any layout), a BF16 (bfloat16 bits, which
NumPy has no dtype for) or a Python bool/int/float/complex (a weakly typed host scalar, when the
driver has `host_scalars`). The result of a bfloat16 program comes back as its uint16 bits.
`kind` is jitexpr's error kind: "parse", "name", "type", "shape", "value", "argument", ...

Today: the C API through the ctypes binding (python/jitexpr_ctypes.py), and the CLI with .npy
files. The Python package (issue 19) will be a third class of the same shape.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class DriverError(Exception):
    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message


class BF16:
    """A bfloat16 array as its bits (uint16), in any layout."""

    def __init__(self, bits):
        self.bits = bits

    @property
    def shape(self):
        return self.bits.shape


# --- the C API through ctypes ------------------------------------------------------------------

_KDL_BFLOAT = 4


class _Bf16Producer:
    """A DLPack producer for BF16: NumPy's capsule of the uint16 bits, retyped as kDLBfloat."""

    def __init__(self, bits, jx):
        self.bits, self.jx = bits, jx

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        capsule = self.bits.__dlpack__(**kwargs)
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        name = api.PyCapsule_GetName(capsule)
        ptr = api.PyCapsule_GetPointer(capsule, name)
        managed = (self.jx.DLManagedTensorVersioned if name == b"dltensor_versioned" else self.jx.DLManagedTensor)
        t = managed.from_address(ptr).dl_tensor
        t.dtype.code, t.dtype.bits, t.dtype.lanes = _KDL_BFLOAT, 16, 1
        return capsule


class CtypesDriver:
    """jitexpr_eval_named through python/jitexpr_ctypes.py on the CPU backend."""

    name = "ctypes"
    host_scalars = True
    strided = True

    def __init__(self, library, backend="cpu"):
        sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
        import jitexpr_ctypes as jx
        self.jx = jx
        self.rt = jx.Runtime(backend, library=library)

    def run(self, text, names):
        args = {k: (_Bf16Producer(v.bits, self.jx) if isinstance(v, BF16) else v) for k, v in names.items()}
        try:
            t = self.rt.eval(text, **args)
        except self.jx.JitexprError as e:
            raise DriverError(e.kind, e.message) from None
        if t is None:
            raise DriverError("none", "the program gave no value")
        try:
            if t.dtype == "bfloat16":
                n = int(np.prod(t.shape))
                raw = ctypes.string_at(t.data_ptr, 2 * n) if n else b""
                return "bfloat16", np.frombuffer(raw, dtype=np.uint16).reshape(t.shape).copy()
            a = np.from_dlpack(t)
            return a.dtype.name, np.array(a, copy=True)
        finally:
            t.close()

    def close(self):
        self.rt.close()


# --- the CLI with .npy files -------------------------------------------------------------------


def _save_bf16(path, bits):
    """A .npy file of dtype 'bfloat16' (the descr jitexpr reads and writes)."""
    bits = np.array(bits, order="C")
    header = "{'descr': 'bfloat16', 'fortran_order': False, 'shape': %s, }" % (repr(tuple(bits.shape)),)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(bits.astype("<u2").tobytes())


def _load_npy(path):
    with open(path, "rb") as f:
        head = f.read(10)
        hlen = int.from_bytes(head[8:10], "little")
        header = f.read(hlen).decode("latin1")
    if "'bfloat16'" in header:
        shape = eval(header[header.index("'shape':") + 8:].split(")")[0] + ")")
        data = np.fromfile(path, dtype="<u2", offset=10 + hlen)
        return "bfloat16", data.reshape(shape)
    a = np.load(path)
    return a.dtype.name, a


class CliDriver:
    """The jitexpr binary: --load NAME=FILE.npy, -e 'r = TEXT', --save r=FILE.npy. No host
    scalars (every loaded name is an array) and no strided inputs (.npy files are contiguous)."""

    name = "cli"
    host_scalars = False
    strided = False

    def __init__(self, binary):
        self.binary = binary
        self.dir = tempfile.TemporaryDirectory(prefix="jitexpr_fuzz_")

    def run(self, text, names):
        args = [self.binary]
        for k, v in names.items():
            path = os.path.join(self.dir.name, k + ".npy")
            if isinstance(v, BF16):
                _save_bf16(path, v.bits)
            elif isinstance(v, np.ndarray):
                np.save(path, np.array(v, order="C"))
            else:
                raise ValueError("the CLI driver binds arrays only")
            args += ["--load", f"{k}={path}"]
        out = os.path.join(self.dir.name, "out.npy")
        if os.path.exists(out):
            os.remove(out)
        args += ["-e", "_r = " + text.replace("\n", " "), "--save", f"_r={out}"]
        env = dict(os.environ, JITEXPR_BACKEND="cpu", JITEXPR_DISK_CACHE="0")
        p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        if p.returncode != 0:
            first = p.stderr.split("\n", 1)[0]
            # "jitexpr: -e: name error: ..." -> "name"
            rest = first.split(": ", 2)[-1]
            kind = rest.split(" error", 1)[0] if " error" in rest else "other"
            raise DriverError(kind, p.stderr)
        return _load_npy(out)

    def close(self):
        self.dir.cleanup()

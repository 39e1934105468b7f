"""How the differential fuzzer reaches jitexpr: one small class per interface, all with

    driver.run(text, names) -> (dtype_name, numpy array)   or raises DriverError(kind, message)

`names` maps each variable of `text` to a NumPy array (any layout), a BF16 (bfloat16 bits, which
NumPy has no dtype for) or a Python bool/int/float/complex (a weakly typed host scalar, when the
driver has `host_scalars`). The result of a bfloat16 program comes back as its uint16 bits.
`kind` is jitexpr's error kind: "parse", "name", "type", "shape", "value", "argument", ...

Two drivers: the Python package (jitexpr.evaluate, installed with `pip install .`) and the CLI
with .npy files.
"""
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


# --- the Python package -----------------------------------------------------------------------

_KINDS = {"ParseError": "parse", "NameError": "name", "TypeError": "type", "ShapeError": "shape",
          "ValueError": "value", "ArgumentError": "argument", "IndexError": "index",
          "OverflowError": "value", "ZeroDivisionError": "value"}  # (ValueErrors too)


class PythonDriver:
    """jitexpr.evaluate(text, names) on the chosen backend (the CPU by default): the installed Python package (issue 19),
    bound by name as a Python user binds (a bound `pi` shadows the constant). bfloat16 travels as
    ml_dtypes.bfloat16 arrays, the type the package reads and writes."""

    name = "python"
    host_scalars = True
    strided = True

    def __init__(self, backend="cpu"):
        import jitexpr
        import ml_dtypes
        self.jx, self.bf16, self.backend = jitexpr, ml_dtypes.bfloat16, backend

    def run(self, text, names):
        args = {k: (v.bits.view(self.bf16) if isinstance(v, BF16) else v) for k, v in names.items()}
        try:
            r = self.jx.evaluate(text, args, backend=self.backend)
        except self.jx.Error as e:
            kind = _KINDS.get(type(e).__name__, type(e).__name__)
            raise DriverError(kind, str(e)) from None
        if r is None:
            raise DriverError("none", "the program gave no value")
        if getattr(r, "dtype", None) == "bfloat16":
            # A bfloat16 result has no NumPy array (it comes as a jitexpr Tensor): its float32
            # conversion is exact, and rounds back to the same bits.
            f = self._host(self.jx.evaluate(f"float32({text})", args, backend=self.backend))
            return "bfloat16", np.array(f.astype(self.bf16).view(np.uint16), copy=True)
        r = self._host(r)
        return r.dtype.name, np.array(r, copy=True)

    def _host(self, r):
        """A result as a NumPy array: a CUDA result (a jitexpr Tensor) copied to the host."""
        if isinstance(r, self.jx.Tensor):
            return r.to("cpu").numpy()
        return np.asarray(r)

    def close(self):
        pass


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

    def __init__(self, binary, backend="cpu"):
        self.binary, self.backend = binary, backend
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
        env = dict(os.environ, JITEXPR_BACKEND=self.backend, JITEXPR_DISK_CACHE="0")
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

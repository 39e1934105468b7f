"""jitexpr: array expressions compiled at run time — NumPy 2's semantics, numexpr's convenience,
on the CPU or an NVIDIA GPU, with no copies in or out.

    import numpy as np, jitexpr as jx
    a = np.arange(1e6); b = np.ones(1e6)
    c = jx.evaluate("a * 2 + b")                 # names from the caller's frame (or keywords)
    jx.evaluate("a * 2 + b", out=c)              # in place
    r = jx.run("t = a * 2; s = sum(t * b)")      # {'t': ..., 's': ...}
    k = jx.compile("where(x > t, x, 0)", {"x": "float32", "t": float})

    import jitexpr.numexpr as ne                 # numexpr's API, drop-in

CuPy, PyTorch and Numba arrays are evaluated on their GPU, on their current stream, and come
back as arrays of their library; Arrow columns (pyarrow, Polars, DuckDB) with their nulls. See
docs/python.md. ``jitexpr.info()`` says what was found of CUDA and why it is or is not in use;
without a driver or toolkit everything runs on the CPU.
"""

from . import _jitexpr
from ._errors import (ArgumentError, CancelledError, CompileError, CudaError, DeviceMismatchError,  # noqa: F401
                      Error, IndexError, InternalError, IOError, NameError, NoDeviceError, OutOfMemoryError, ParseError,
                      ShapeError, TypeError, ValueError)
from . import _errors as _errors_module

_jitexpr.set_error_types({name: getattr(_errors_module, name) for name in _errors_module.__all__})

from ._api import (Kernel, Runtime, Tensor, compile, cuda_available, evaluate, explain, get_num_threads,  # noqa: E402,F401
                   info, parameters, precompile, run, set_num_threads, stats)
from ._check import ProgramInfo, ValueInfo, check  # noqa: E402,F401

__version__ = _jitexpr.__version__


def functions():
    """The language's operators, functions and reductions, in the op table's order: a list of
    (kind, names, arity, doc), kind "operator", "function", "reduction", "scan" or "result" (one result of
    a function of several, such as frexp: its rows are adjacent, in the order of the targets of
    `m, e = frexp(x)`); names is what a program calls it by (empty for operators without one)."""
    return [(k, list(n), a, d) for k, n, a, d in _jitexpr.functions()]


__all__ = [
    "evaluate", "run", "explain", "compile", "Kernel", "precompile", "info", "cuda_available", "stats",
    "set_num_threads", "get_num_threads", "parameters", "functions", "Runtime", "Tensor", "check", "ProgramInfo", "ValueInfo",
    "Error", "ParseError", "NameError", "TypeError", "ShapeError", "ValueError", "IndexError", "ArgumentError",
    "IOError", "DeviceMismatchError", "CompileError", "CudaError", "NoDeviceError", "InternalError", "CancelledError",
    "OutOfMemoryError",
]


def __getattr__(name):
    # jitexpr.numexpr on first use (importing it is cheap, but install() is its business).
    if name in ("numexpr", "dask"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'jitexpr' has no attribute {name!r}")
